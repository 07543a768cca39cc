"""The reverse pass of the velocity-form contact solve on a CPU: the fused adjoint kernel
(``jaxcontact.native``'s ``adjoint.cc``, ``solvers.body_lcp._native_adjoint``) solves the implicit
derivative's linear system (I − ∂T/∂z)ᵀ λ = g on the rows the projection passes through, densely in
double precision; it must give the reference's derivatives (``implicit_fixed_point``'s GMRES on the
map's products, which the ``"sequential"`` sweeps keep), on random problems with sticking, sliding
and separating contacts and through heap rollouts, in float64."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import native, worlds
from jaxcontact.solvers import LCPSettings, solve_body_lcp
from jaxcontact.worlds import scenes

jax.config.update("jax_enable_x64", True)


def random_problem(seed, N=5, C=16, anisotropic=False):
    """C contacts between N free bodies and the ground (−1), random rows and masses; the free
    velocities push most contacts together, tangentially too, so that normals are active and
    separating, friction rows stick and slide (``anisotropic``: μ₁ ≠ μ₂ at each contact, an ellipse)."""
    rng = np.random.default_rng(seed)
    bodies = np.stack([rng.integers(-1, N, C), rng.integers(0, N, C)], axis=1)
    bodies[:, 0] = np.where(bodies[:, 0] == bodies[:, 1], -1, bodies[:, 0])
    rows = rng.normal(size=(C, 2, 3, 6))
    rows[:, 0] *= (bodies[:, 0] >= 0)[:, None, None]
    L = rng.normal(size=(N, 6, 6)) * 0.3 + 2 * np.eye(6)
    Minv = np.einsum("nij,nkj->nik", L, L) / 6
    v_free = rng.normal(size=(N, 6)) * 0.5
    bias = np.zeros((C, 3))
    bias[:, 0] = rng.normal(size=C) * 0.3 - 0.2
    coupling = np.broadcast_to(rng.uniform(0.2, 0.9, size=(C, 1)), (C, 3)).copy()
    if anisotropic:
        coupling[:, 2] = rng.uniform(0.1, 0.9, size=C)
    valid = rng.uniform(size=C) < 0.9
    return dict(rows=jnp.asarray(rows), bodies=jnp.asarray(bodies), Minv=jnp.asarray(Minv), v_free=jnp.asarray(v_free),
                bias=jnp.asarray(bias), coupling=jnp.asarray(coupling), valid=jnp.asarray(valid))


def vjps(prob, sweeps, seed, cone="elliptic"):
    g = jnp.asarray(np.random.default_rng(seed + 100).normal(size=prob["bias"].shape))
    settings = LCPSettings(sweeps=sweeps, tol=1e-12, max_iter=5000, cone=cone)

    def f(rows, Minv, v_free, bias, coupling):
        return solve_body_lcp(rows, prob["bodies"], Minv, v_free, bias, coupling, prob["valid"], settings=settings).z

    z, vjp = jax.vjp(f, prob["rows"], prob["Minv"], prob["v_free"], prob["bias"], prob["coupling"])
    return z, vjp(g)


@pytest.mark.parametrize("seed,cone", [pytest.param(0, "elliptic", marks=pytest.mark.slow), (1, "elliptic"), (2, "box"),
                                       pytest.param(3, "box", marks=pytest.mark.slow)])
def test_adjoint_kernel_gives_the_reference_derivatives(seed, cone):
    assert native.available()
    prob = random_problem(seed, anisotropic=seed == 1)
    zk, gk = vjps(prob, "native", seed, cone)
    zr, gr = vjps(prob, "sequential", seed, cone)
    np.testing.assert_allclose(zk, zr, atol=1e-9)
    for a, b in zip(gk, gr):
        scale = float(jnp.max(jnp.abs(b)))
        assert scale > 0
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * scale)  # GMRES stops at 1e-10 relative


@pytest.mark.parametrize("seed,cone", [(0, "elliptic"), (1, "elliptic"), (2, "elliptic"), (0, "box"), (1, "box")])
def test_adjoint_kernel_solves_the_adjoint_system(seed, cone):
    """The kernel alone (no Krylov polish): its λ solves (I − ∂T/∂z)ᵀ λ = g, with ∂T/∂z the
    fixed-point map's Jacobian formed by JAX at the solution, for either cone (seed 1: an ellipse)."""
    from jaxcontact.solvers import body_lcp as B

    prob = random_problem(seed, anisotropic=seed == 1)
    settings = LCPSettings(tol=1e-12, max_iter=5000, cone=cone)
    valid = prob["valid"]
    z = solve_body_lcp(prob["rows"], prob["bodies"], prob["Minv"], prob["v_free"], prob["bias"], prob["coupling"],
                       valid, settings=settings).z
    C, d = z.shape
    f = valid.astype(z.dtype)
    args = (prob["rows"] * f[:, None, None, None], prob["bodies"].astype(z.dtype), prob["Minv"], prob["v_free"],
            jnp.where(valid[:, None], prob["bias"], 0.0), jnp.zeros((C, d)), prob["coupling"], f)
    T = B._fixed_point_map(settings.regularization, cone)
    g = jnp.asarray(np.random.default_rng(seed + 7).normal(size=C * d))
    lam, residual, size = B.adjoint_kernel(z.reshape(-1), args, g, settings.regularization, cone)
    J = jax.jacobian(lambda x: T(x, *args))(z.reshape(-1))
    exact = jnp.linalg.solve((jnp.eye(C * d) - J).T, g)
    assert 0 < int(size) < C * d and float(residual) < 1e-10
    np.testing.assert_allclose(lam, exact, atol=1e-9 * float(jnp.max(jnp.abs(exact))))


@pytest.mark.parametrize("cone", ["elliptic", "box"])
def test_random_problems_have_sliding_sticking_and_separating_rows(cone):
    """What the derivative tests above cover: separating contacts (no derivative), sticking ones (the
    tangents passed through) and sliding ones (the box: a row at its bound; the disc: the rank-one
    tangent block (z_n/s)(I − ûûᵀ) with z_n/s < 1) at the solutions, computed as the adjoint does."""
    from jaxcontact.solvers import body_lcp as B

    kinds = []
    for seed in range(4):
        prob = random_problem(seed)
        settings = LCPSettings(tol=1e-12, max_iter=5000, cone=cone)
        z = solve_body_lcp(prob["rows"], prob["bodies"], prob["Minv"], prob["v_free"], prob["bias"], prob["coupling"],
                           prob["valid"], settings=settings).z
        valid = prob["valid"]
        rows = prob["rows"] * valid[:, None, None, None]
        index = B.ground_index(prob["bodies"], prob["Minv"].shape[0])
        WJ, Dr, extra = B._prepare(rows, index, prob["Minv"], jnp.zeros_like(z), settings.regularization, valid)
        bias = jnp.where(valid[:, None], prob["bias"], 0.0)
        w = B._rows_times(rows, B._velocities(WJ, index, prob["v_free"], z)[index]) + bias + extra * z
        y = B._pre_projection(z, w, Dr, prob["coupling"], cone)
        P, N = B._projection_jacobians(y, z[:, 0], prob["coupling"], valid, cone)
        P, N = np.asarray(P), np.asarray(N)
        tangent = P[:, 1:, 1:]
        separating = np.all(P == 0, axis=(1, 2)) & np.asarray(valid)  # (N: its tangents' z_n derivative)
        sticking = (P[:, 0, 0] == 1) & np.all(np.isclose(tangent, np.eye(2)), axis=(1, 2))
        sliding = (P[:, 0, 0] == 1) & np.any(N[:, 1:] != 0, axis=1)
        if cone == "elliptic":  # the tangent block has rank one and trace z_n/s < 1
            tr = np.trace(tangent, axis1=1, axis2=2)
            assert np.all(np.abs(np.linalg.det(tangent[sliding])) < 1e-9) and np.all(tr[sliding] < 1)
        kinds.append([separating.sum(), sticking.sum(), sliding.sum()])
    assert np.all(np.sum(kinds, axis=0) > 0), kinds


@pytest.mark.slow
def test_heap_rollout_gradient_with_the_adjoint_kernel_is_the_references():
    """Three landing 16-box heaps, 40 steps, float64: d(mean final height)/d(μ, initial
    velocities) through the kernel's adjoint equals GMRES's (the sequential sweeps' path). Slow
    tier (about 45 s: two gradient programs of a 16-box world); the default tier checks the kernel
    directly and on random problems."""
    keys = [jax.random.PRNGKey(i) for i in range(3)]
    scene, params, _ = scenes.heap(16, keys[0])
    states = jax.vmap(lambda k: scenes.heap(16, k)[2])(jnp.stack(keys))
    model = worlds.model()
    states, _ = worlds.batch_rollout(model, scene, params, states, 150, output="final")  # landing
    out = {}
    for how in ("native", "sequential"):
        m = worlds.model(sweeps=how)

        def loss(mu, vel, m=m):
            p = params.replace(law=params.law.replace(mu=jnp.broadcast_to(mu, params.law.mu.shape)))
            final, _ = worlds.batch_rollout(m, scene, p, states.replace(vel=vel), 40, output="final")
            return jnp.mean(final.pos[..., 2])

        out[how] = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(params.law.mu[0]), states.vel)
    (mk, vk), (mr, vr) = out["native"], out["sequential"]
    assert abs(float(mr)) > 1e-4
    # Under the disc (the default) GMRES at its defaults (implicit.krylov_guarded_solve: 10 restarts, 1e-10)
    # is the looser of the two: the velocity gradients agree to 5e-7 of the largest entry (2.5e-6 at the
    # tests' LLVM level 0), and to 4e-8 with GMRES at 60 restarts and 1e-14 (measured 2026-11-29).
    np.testing.assert_allclose(mk, mr, rtol=1e-6)
    np.testing.assert_allclose(vk, vr, atol=1e-5 * float(jnp.max(jnp.abs(vr))))
