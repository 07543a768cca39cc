"""Physics of the six planar impact maps, the energy ellipse and the IRB bound (no data needed)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact.impacts import ellipse as E
from jaxcontact.impacts import models as M


@pytest.fixture(autouse=True)
def _x64():
    jax.config.update("jax_enable_x64", True)
    yield


def _random_impacts(n=40, seed=0):
    """Impacts of the data set's ellipse (m=36.4 g, I=1.3468e-5) at random contact points."""
    rng = np.random.default_rng(seed)
    m, I = 0.0364, 1.3468e-5
    Minv = np.diag([1 / m, 1 / m, 1 / I])
    rx = rng.uniform(-0.035, 0.035, n)
    ry = -rng.uniform(0.02, 0.035, n)
    J = np.stack([np.stack([np.ones(n), np.zeros(n), -ry], 1),
                  np.stack([np.zeros(n), np.ones(n), rx], 1)], 1)
    v = np.stack([rng.uniform(-1, 1, n), rng.uniform(-3, -1, n), rng.uniform(-15, 15, n)], 1)
    u0 = np.einsum("nij,nj->ni", J, v)
    keep = u0[:, 1] < -0.1
    J, v, u0 = J[keep], v[keep], u0[keep]
    W = np.einsum("nij,jk,nlk->nil", J, Minv, J)
    return jnp.asarray(u0), jnp.asarray(W), jnp.asarray(J), jnp.asarray(v), jnp.asarray(Minv)


def _batch(f, u0, W, mu, eps):
    return jax.jit(jax.vmap(f, in_axes=(0, 0, None, None)))(u0, W, mu, eps)


ALL = list(M.MODELS.items()) + [("Mirtich (Coulomb)", M.mirtich_coulomb)]


@pytest.mark.parametrize("name,f", ALL)
@pytest.mark.parametrize("eps", [0.0, 0.4, 1.0])
def test_frictionless_closed_form(name, f, eps):
    u0, W, *_ = _random_impacts()
    P = _batch(f, u0, W, 0.0, eps)
    pn = -(1 + eps) * u0[:, 1] / W[:, 1, 1]
    if name == "Whittaker":  # keeps the normal impulse of the sticking solution, P_t clipped to 0
        pn = jnp.linalg.solve(W, jnp.stack([-u0[:, 0], -(1 + eps) * u0[:, 1]], 1)[..., None])[:, 1, 0]
    np.testing.assert_allclose(P[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(P[:, 1], pn, rtol=1e-7)


@pytest.mark.parametrize("name,f", [a for a in ALL if a[0] != "Mirtich"])
@pytest.mark.parametrize("mu", [0.05, 0.2, 1.0])
def test_coulomb_cone_and_no_penetration(name, f, mu):
    u0, W, *_ = _random_impacts(seed=1)
    for eps in (0.0, 0.5, 1.0):
        P = _batch(f, u0, W, mu, eps)
        assert jnp.all(P[:, 1] >= 0)
        assert jnp.all(jnp.abs(P[:, 0]) <= mu * P[:, 1] + 1e-12)
        if name != "Whittaker":  # clipping P_t at fixed P_n may penetrate (known flaw of the law)
            un_post = u0[:, 1] + jnp.einsum("nj,nj->n", W[:, 1], P)
            assert jnp.all(un_post >= -1e-12)


def test_mirtich_viscous_friction_bounded_by_slip():
    u0, W, *_ = _random_impacts(seed=2)
    mu = 0.3
    P = _batch(M.mirtich_viscous, u0, W, mu, 0.5)
    # dP_t/dp = -mu u_t and |u_t| never exceeds max(|u_t0|, |W_tn / (mu W_tt)|)
    bound = mu * jnp.maximum(jnp.abs(u0[:, 0]), jnp.abs(W[:, 0, 1] / (mu * W[:, 0, 0])))
    assert jnp.all(jnp.abs(P[:, 0]) <= bound * P[:, 1] + 1e-12)


@pytest.mark.parametrize("name,f,eps_max", [
    ("Mirtich", M.mirtich_viscous, 1.0), ("Mirtich (Coulomb)", M.mirtich_coulomb, 1.0),
    ("Wang-Mason", M.wang_mason, 1.0), ("AP Newton", M.ap_newton, 0.6),
    ("AP Poisson", M.ap_poisson, 0.6), ("Drumwright-Shell", M.drumwright_shell, 0.5)])
def test_no_energy_gain(name, f, eps_max):
    """Energetic restitution never gains energy; the Newton/Poisson laws with friction can for ε
    near 1 (a known property), but not in the identified range ε <= 0.6."""
    u0, W, *_ = _random_impacts(seed=3)
    E0 = 0.5 * jnp.einsum("ni,nij,nj->n", u0, jnp.linalg.inv(W), u0)
    for mu in (0.0, 0.1, 0.3):
        for eps in np.linspace(0, eps_max, 4):
            P = _batch(f, u0, W, mu, eps)
            dE = jax.vmap(E.energy_change)(P, u0, W)
            assert jnp.all(dE <= 1e-10 * E0)


def test_sticking_limit_closed_form():
    u0, W, *_ = _random_impacts(seed=4)
    eps = 0.5
    target = jnp.stack([jnp.zeros_like(u0[:, 0]), -eps * u0[:, 1]], 1)
    for f in (M.ap_newton, M.whittaker):
        P = _batch(f, u0, W, 50.0, eps)
        up = u0 + jnp.einsum("nij,nj->ni", W, P)
        np.testing.assert_allclose(up, target, atol=1e-10)
    # inelastic sticking: all contact velocity removed (LCP / maximum-dissipation models)
    for f in (M.ap_poisson, M.drumwright_shell):
        P = _batch(f, u0, W, 50.0, 0.0)
        up = u0 + jnp.einsum("nij,nj->ni", W, P)
        np.testing.assert_allclose(up, 0.0, atol=1e-9)


def test_not_approaching_gives_zero_impulse_without_nan():
    u0, W, *_ = _random_impacts(n=5)
    for flip in (0.0, 1.0):
        u = u0.at[:, 1].set(flip * jnp.abs(u0[:, 1]))
        for _, f in ALL:
            P = _batch(f, u, W, 0.1, 0.5)
            assert jnp.all(jnp.isfinite(P)) and jnp.all(P == 0)


def test_impact_returns_momentum_consistent_velocity():
    u0, W, J, v, Minv = _random_impacts(n=6)
    P, vp = M.impact("AP Newton", v[0], J[0], Minv, 0.1, 0.5)
    np.testing.assert_allclose(vp, v[0] + Minv @ J[0].T @ P, rtol=1e-12)


@pytest.mark.parametrize("name", ["AP Newton", "Wang-Mason", "Drumwright-Shell"])
def test_gradient_matches_finite_differences(name):
    u0, W, *_ = _random_impacts(n=8, seed=5)
    f = M.MODELS[name]

    def loss(th):
        P = jax.vmap(f, in_axes=(0, 0, None, None))(u0, W, th[0], th[1])
        return jnp.sum(P[:, 0] ** 2 + 0.3 * P[:, 1] ** 2)

    th = jnp.array([0.07, 0.55])
    g = jax.grad(loss)(th)
    h = 1e-6
    fd = jnp.array([(loss(th + h * e) - loss(th - h * e)) / (2 * h) for e in jnp.eye(2)])
    np.testing.assert_allclose(g, fd, rtol=2e-4, atol=1e-10)


def test_ellipse_boundary_has_zero_energy_change():
    u0, W, *_ = _random_impacts(n=3)
    B = E.ellipse_boundary(u0[0], W[0], n=50)
    dE = jax.vmap(lambda P: E.energy_change(P, u0[0], W[0]))(B)
    np.testing.assert_allclose(dE, 0.0, atol=1e-12 * float(jnp.abs(u0[0] @ jnp.linalg.solve(W[0], u0[0]))) + 1e-15)
    assert float(E.energy_change(jnp.zeros(2), u0[0], W[0])) == 0.0


def test_irb_recovers_feasible_impulse_and_beats_models():
    u0, W, J, v, Minv = _random_impacts(seed=6)
    rho = float(np.sqrt(1.3468e-5 / 0.0364))
    # a feasible "true" impulse: AP Newton with some parameters
    P_true = _batch(M.ap_newton, u0, W, 0.1, 0.4)
    v_post = v + jnp.einsum("jk,nlj,nl->nk", Minv, J, P_true)
    P_irb = jax.vmap(E.irb_impulse, in_axes=(0, 0, 0, None, None))(v, v_post, J, Minv, rho)
    np.testing.assert_allclose(P_irb, P_true, rtol=1e-6, atol=1e-9)
    # with an infeasible measurement, the IRB impulse is feasible and no feasible model does better
    rng = np.random.default_rng(0)
    v_post2 = v_post + jnp.asarray(rng.normal(0, 0.5, v_post.shape))
    P_irb = jax.vmap(E.irb_impulse, in_axes=(0, 0, 0, None, None))(v, v_post2, J, Minv, rho)
    assert jnp.all(jax.vmap(E.feasibility)(P_irb, u0, W))
    S = jnp.array([1.0, 1.0, rho])

    def err(P):
        return jnp.linalg.norm((v + jnp.einsum("jk,nlj,nl->nk", Minv, J, P) - v_post2) * S, axis=1)

    e_irb = err(P_irb)
    for name in ("Wang-Mason", "Mirtich", "AP Newton"):
        for mu, eps in ((0.05, 0.3), (0.2, 0.6)):
            P = _batch(M.MODELS[name], u0, W, mu, eps)
            ok = jax.vmap(E.feasibility)(P, u0, W)
            assert jnp.all(e_irb[ok] <= err(P)[ok] + 1e-9)


def test_irb_degenerate_ellipse_no_nan():
    _, _, J, v, Minv = _random_impacts(n=4)
    v0 = v.at[:, :].set(0.0)  # zero approach velocity: the ellipse collapses to a point
    P = jax.vmap(E.irb_impulse, in_axes=(0, 0, 0, None, None))(v0, v, J, Minv, 0.0192)
    assert jnp.all(jnp.isfinite(P))
    np.testing.assert_allclose(P, 0.0, atol=1e-12)
