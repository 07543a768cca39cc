"""Gradient modes: the relaxed implicit derivative of hard contact (``CoulombLCP(gradient="relaxed")``,
``solvers.relaxed``) and randomized smoothing (``jaxcontact.randomized_smoothing``) — maths against closed forms
and finite differences, the exact limit, unchanged forward values, and transforms."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact.randomized_smoothing import randomized_jacobian, randomized_value_and_grad
from jaxcontact.solvers import (DenseLCP, LCPSettings, RelaxedGradient, RowStructure, regularized, relaxed_gradient,
                                relaxed_solution, solve_lcp)

TIGHT = LCPSettings(tol=1e-12, max_iter=2000)


def _relaxed_z(A, b, c, rows, s, newton_iters=6):
    z = solve_lcp(A, b, c, rows, TIGHT).z
    lcp = DenseLCP(A=regularized(jnp.asarray(A), TIGHT.regularization), b=b, coupling=c, z0=None, rows=rows)
    return relaxed_gradient(z, lcp, jnp.ones(b.shape[0], bool), RelaxedGradient(s, newton_iters))


def _two_contacts():
    """Contact 0 sticking with a clear normal force, contact 1 separating: no mode at a switch."""
    rng = np.random.default_rng(0)
    J = rng.normal(size=(6, 6))
    A = J @ J.T / 6 + 0.5 * np.eye(6)
    b = np.array([-1.0, 0.3, -0.2, 0.5, 0.1, 0.2])
    c = np.array([0, 0.5, 0.5, 0, 0.5, 0.5])
    return A, b, c, RowStructure.contacts(2, 2)


@pytest.mark.slow
def test_relaxed_derivative_tends_to_the_exact_one_as_the_scale_goes_to_zero():
    A, b, c, rows = _two_contacts()
    Je = jax.jacrev(lambda bb: solve_lcp(A, bb, c, rows, TIGHT).z)(b)
    errs = [float(jnp.abs(jax.jacrev(lambda bb: _relaxed_z(A, bb, c, rows, s))(b) - Je).max())
            for s in (1e-1, 1e-2, 1e-3, 1e-4)]
    assert errs[0] > 1e-2  # a real relaxation at a large scale
    assert all(e1 < 0.1 * e0 for e0, e1 in zip(errs, errs[1:])), errs  # κ = s²: error ∝ s²
    assert errs[-1] < 1e-6 * float(jnp.abs(Je).max()), errs


def test_relaxed_derivative_of_one_contact_matches_the_closed_form_and_finite_differences():
    # one normal row, A = a: hard z = max(0, −b/a); relaxed (a z)(a z + b) = κ, so
    # a z_κ = (−b + √(b² + 4κ))/2 and dz_κ/db = (b/√(b² + 4κ) − 1)/(2a).
    a, s = 2.0, 0.05
    rows = RowStructure(lo0=np.zeros(1), hi0=np.array([np.inf]), parent=np.zeros(1, int),
                        is_friction=np.zeros(1, bool))
    A = jnp.array([[a]])
    c = jnp.zeros(1)
    for b in (-0.3, -0.02, 0.0, 0.03, 0.4):  # pressing, near the switch, at it, just separating, separated
        bb = jnp.array([b])
        z = _relaxed_z(A, bb, c, rows, s, newton_iters=20)
        assert float(z[0]) == max(0.0, -b / float(regularized(A, TIGHT.regularization)[0, 0]))  # value: hard
        g = float(jax.grad(lambda x: _relaxed_z(A, x, c, rows, s, newton_iters=20)[0])(bb)[0])
        closed = (b / np.sqrt(b * b + 4 * s * s) - 1) / (2 * a)
        assert abs(g - closed) < 1e-5, (b, g, closed)
        # finite differences of the relaxed solution's value (the smoothed map itself)
        zk = lambda x: float(relaxed_solution(jnp.zeros(1), DenseLCP(A=regularized(A, TIGHT.regularization),
                                                                     b=jnp.array([x]), coupling=c, z0=None, rows=rows),
                                              jnp.ones(1, bool), RelaxedGradient(s, 30))[0])
        fd = (zk(b + 1e-6) - zk(b - 1e-6)) / 2e-6
        assert abs(g - fd) < 1e-5, (b, g, fd)


def _throw_setup(gradient="exact", ell=1e-3):
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-10, max_iter=200), restitution_target="position",
                        gradient=gradient, smoothing_length=ell)
    model = jc.Model(law=law, dt=0.002, max_contacts=4)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(3, 0.01),
                       law=law.init_params(mu=0.3, restitution=0.2))
    s0 = jc.states.random_throws(jax.random.PRNGKey(3), 2, ranges={"height": (0.0, 0.02)}, clearance=0.08)
    s0 = s0.replace(pos=s0.pos + jnp.array([0.0, 0.0, 0.01]))
    return model, params, s0


@pytest.mark.slow
def test_forward_values_are_bit_identical_across_modes_and_gradients_work_under_jit_vmap_grad():
    outs, grads = [], []
    for mode in ("exact", "relaxed"):
        model, params, s0 = _throw_setup(mode)

        @jax.jit
        def loss(p):
            traj = jax.vmap(lambda s: jc.rollout(model, p, s, 60, output="trajectory"))(s0)
            return jnp.sum(traj.pos[:, -1]), traj.to_array()

        (v, traj), g = jax.value_and_grad(loss, has_aux=True)(params)
        outs.append(np.asarray(traj))
        flat = jax.flatten_util.ravel_pytree(g)[0]
        assert np.isfinite(float(v)) and np.all(np.isfinite(np.asarray(flat))) and float(jnp.abs(flat).max()) > 0
        grads.append(g)
    assert outs[0].shape[:2] == (2, 61) and np.ptp(outs[0][:, :, 2]) > 0.01  # two throws that move
    assert np.array_equal(outs[0], outs[1])  # the forward pass is the same hard contact
    assert not np.allclose(grads[0].ground.height, grads[1].ground.height)  # but the derivative differs


@pytest.mark.slow
def test_relaxed_rollout_gradient_tends_to_the_exact_one_on_a_sliding_box():
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-12, max_iter=300))
    body = jc.shapes.box(0.1, 0.37)
    s0 = jc.make_state(pos=[0, 0, 0.05], vel=[1.2, 0.3, 0])

    def loss(mu, law):
        params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=mu))
        final = jc.rollout(jc.Model(law=law, dt=0.002), params, s0, 80, output="final")
        return final.pos[0] + 2.0 * final.pos[1]

    ge = float(jax.grad(loss)(0.25, law))
    gr = float(jax.grad(loss)(0.25, dataclasses.replace(law, gradient="relaxed", smoothing_length=1e-10)))
    assert abs(gr - ge) < 1e-4 * abs(ge), (ge, gr)


def test_a_bad_gradient_mode_raises_a_clear_error():
    with pytest.raises(ValueError, match="CoulombLCP.gradient must be one of"):
        jc.CoulombLCP(gradient="smooth")
    with pytest.raises(ValueError, match="randomized_value_and_grad"):
        jc.CoulombLCP(gradient="randomized")
    with pytest.raises(ValueError, match="smoothing_length"):
        jc.CoulombLCP(gradient="relaxed", smoothing_length=0.0)
    with pytest.raises(ValueError, match="velocity_scale"):
        RelaxedGradient(-1.0)


def test_randomized_smoothing_estimates_the_gradient_of_the_smoothed_loss():
    # relu: L_σ'(x) = Φ(x/σ); antithetic pairs, 20 000 samples: standard error < 0.01
    sigma = 0.1
    vg = jax.jit(randomized_value_and_grad(lambda x: jnp.maximum(x, 0.0), sigma, 20000, batch_size=5000))
    for x in (-0.1, 0.0, 0.05):
        v, g = vg(jnp.asarray(x), jax.random.PRNGKey(1))
        assert float(v) == max(x, 0.0)
        phi = 0.5 * (1 + jax.scipy.special.erf(x / sigma / np.sqrt(2)))
        assert abs(float(g) - float(phi)) < 0.02, (x, g, phi)
    # a quadratic in a pytree: smoothing does not move the gradient; per-leaf σ, σ = 0 keeps a leaf fixed
    W = jnp.array([[2.0, 0.5], [0.5, 1.0]])
    f = lambda p: 0.5 * p["a"] @ W @ p["a"] + 3.0 * p["b"]
    x = {"a": jnp.array([0.3, -0.2]), "b": jnp.asarray(1.0)}
    _, g = randomized_value_and_grad(f, {"a": 0.01, "b": 0.0}, 4000)(x, jax.random.PRNGKey(2))
    assert np.allclose(g["a"], W @ x["a"], atol=0.03) and float(g["b"]) == 0.0
    # standard error of each entry ≈ 3·√(2/n) = 0.02 at n = 40 000
    _, J = randomized_jacobian(lambda v: jnp.stack([v @ v, v[0] * 3.0]), 1e-3, 40000)(x["a"], jax.random.PRNGKey(3))
    assert np.allclose(J, np.array([2 * x["a"], [3.0, 0.0]]), atol=0.1), J


def _jagged(x):
    """A 2-residual least-squares problem with minimum 0 at x = (1, −0.5), overlaid with ripples of
    period 2π·1e-3 and slope 3 that make many small local minima (a hard-contact loss in miniature)."""
    x = np.asarray(x, float)
    return np.array([x[0] - 1.0, 2.0 * (x[1] + 0.5)]) + 3e-3 * np.sin(x / 1e-3)


def _jagged_jac(x):
    x = np.asarray(x, float)
    return _jagged(x), np.diag([1.0, 2.0]) + np.diag(3.0 * np.cos(x / 1e-3))


def test_lm_on_the_sample_average_smoothed_loss_steps_over_small_minima_that_stop_plain_lm():
    from jaxcontact.sysid import optim

    x0, best = np.array([0.9, -0.4]), np.array([1.0, -0.5])
    plain = optim.levenberg_marquardt(_jagged_jac, _jagged, x0, max_iter=200)
    assert np.abs(plain.x - best).max() > 0.05  # stuck in a ripple far from the minimum
    for seed in range(3):  # the fixed perturbations average the ripples down (≈ 1/√(2N)): not a lucky draw
        res_s, rj_s = optim.smoothed_least_squares(_jagged, _jagged_jac, 2, sigma=5e-3, pairs=32, seed=seed)
        smooth = optim.levenberg_marquardt(rj_s, res_s, x0, max_iter=200)
        assert np.abs(smooth.x - best).max() < 5e-3  # within a ripple or two of the minimum
        polish = optim.levenberg_marquardt(_jagged_jac, _jagged, smooth.x, max_iter=200)
        assert np.abs(polish.x - best).max() < 5e-3 and polish.loss <= float(np.sum(_jagged(smooth.x) ** 2))


def test_smoothed_least_squares_stacks_exact_jacobians_dense_and_block():
    from jaxcontact.sysid import optim

    rng = np.random.default_rng(1)
    W, m, ng, nl = 3, 4, 2, 1
    A, B = rng.normal(size=(W, m, ng)), rng.normal(size=(W, m, nl))

    def res(z):
        x, d = z[:ng], z[ng:].reshape(W, nl)
        return (np.tanh(np.einsum("wmi,i->wm", A, x)) + np.einsum("wmi,wi->wm", B, d) ** 2).reshape(-1)

    def jac_blocks(z):
        x, d = z[:ng], z[ng:].reshape(W, nl)
        u = np.einsum("wmi,i->wm", A, x)
        return (1 - np.tanh(u) ** 2)[:, :, None] * A, 2 * np.einsum("wmi,wi->wm", B, d)[:, :, None] * B

    def dense(z):
        Jg, Jl = jac_blocks(z)
        J = np.zeros((W * m, ng + W * nl))
        J[:, :ng] = Jg.reshape(W * m, ng)
        for w in range(W):
            J[w * m:(w + 1) * m, ng + w * nl: ng + (w + 1) * nl] = Jl[w]
        return res(z), J

    block = lambda z: (res(z), optim.BlockJacobian(res(z), *jac_blocks(z)))
    z = rng.normal(size=ng + W * nl)
    rs, rjd = optim.smoothed_least_squares(res, dense, ng, sigma=0.1, pairs=3, seed=2)
    _, rjb = optim.smoothed_least_squares(res, block, ng, sigma=0.1, pairs=3, seed=2)
    r, J = rjd(z)
    np.testing.assert_allclose(r, rs(z), rtol=0, atol=1e-14)
    fd = np.stack([(rs(z + 1e-6 * e) - rs(z - 1e-6 * e)) / 2e-6 for e in np.eye(len(z))], axis=1)
    np.testing.assert_allclose(J, fd, atol=1e-7)  # the stacked Jacobian is the smoothed residuals'
    rb, Jb = rjb(z)
    assert np.isclose(rb @ rb, r @ r)  # the same residuals, grouped by window
    damp = np.full(len(z), 0.3)
    np.testing.assert_allclose(Jb.solve(damp), optim.DenseJacobian(r, J).solve(damp), atol=1e-10)
    with pytest.raises(ValueError, match="pairs"):
        optim.smoothed_least_squares(res, dense, ng, sigma=0.1, pairs=0)
    with pytest.raises(ValueError, match="sigma"):
        optim.smoothed_least_squares(res, dense, ng, sigma=0.0)
