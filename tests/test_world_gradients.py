"""Gradients through worlds against central differences (issue 60, part 4; docs/gradients.md,
"Through worlds at the defaults"; ``python -m benchmarks.world_gradients``).

Box A slides into box B 5 mm ahead (``scenes.cradle(2, gap=0.005, ε=0)``, the law's μ on the ground
and between the boxes), 300 steps of 2 ms, float64; the loss is box B's final x and θ = (A's speed,
μ). The rollout tests compile one gradient program and one batched forward program each."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import worlds
from jaxcontact.solvers import LCPSettings
from jaxcontact.worlds import scenes

STEPS = 300
EPS = 1e-5
CONVERGED = dict(tol=1e-10, max_iter=20000)  # the reference rollout: at the 1,000-sweep cap 1e-10 stops part-way
POLISH = dict(  # the polish measured in benchmarks.world_gradients
    gradient_newton=8, gradient_tol=1e-10, gradient_max_iter=5000)


def _push(law):
    model = worlds.model(law=law, dt=0.002)
    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)

    def loss(theta):
        s = s0.replace(vel=s0.vel.at[0, 0].set(theta[0]))
        p = params.replace(law=jc.CoulombLCP.init_params(mu=theta[1]))
        final, _ = worlds.rollout(model, scene, p, s, STEPS, output="final")
        return final.pos[1, 0]

    return loss


def _with(**changes):
    law = scenes.DEFAULT_LAW
    return dataclasses.replace(law, solver=dataclasses.replace(law.solver, **changes))


def _central(loss, thetas, eps):
    """Central differences (n, k) of ``loss`` at each of ``thetas`` (n, k) along each axis, the 2nk
    rollouts in one batch."""
    n, k = thetas.shape
    steps = eps * np.eye(k)
    points = np.concatenate([(thetas[:, None] + sign * steps).reshape(-1, k) for sign in (1, -1)])
    values = np.asarray(jax.jit(jax.vmap(loss))(jnp.asarray(points)))
    return ((values[: n * k] - values[n * k:]) / (2 * eps)).reshape(n, k)


@pytest.mark.slow
def test_push_gradient_at_the_defaults_matches_central_differences_of_the_converged_rollout():
    """The default world law (tolerance 1e-7 m/s, warm start): d(B's final x)/d(A's speed, μ) at
    1.5 m/s, μ 0.3 within 1e-3 of central differences (eps 1e-5) of the same rollout solved to
    1e-10 m/s with up to 20,000 sweeps (measured 1.4e-8 and 2.6e-8 off: 0.127022 / −0.316563). With
    the 1,000-sweep cap the reference itself stopped part-way since worlds keep 8 ground contacts
    (d/dspeed 0.125605, 1.1 % off: the strict xfail this test was). One program for the gradient,
    one for the 4 rollouts of the differences. Under Coulomb's disc the converged rollout's final x
    has steps of about 6e-9 m in the speed where its sweep count changes (eps 2e-5 reads 0.12732,
    1e-5 0.12762, 1e-6 0.12407), so the differences take eps 1e-4, where such a step is 2e-4 of
    the slope (0.12702248; 3e-6 gives the same)."""
    theta = np.array([1.5, 0.3])
    grad = np.asarray(jax.jit(jax.grad(_push(scenes.DEFAULT_LAW)))(jnp.asarray(theta)))
    fd = _central(_push(_with(**CONVERGED)), theta[None], 1e-4)[0]
    np.testing.assert_allclose(grad, fd, rtol=1e-3)
    assert grad[0] > 0 and grad[1] < 0  # faster pusher: further; more friction: shorter


@pytest.mark.slow
def test_polished_push_gradient_is_the_converged_one():
    """At 1.0 m/s, μ 0.5 the default law's derivative, taken at the warm-started solve's inexact
    solutions, is 5.4e-3 off the converged rollout's; polished first (``LCPSettings.gradient_newton``,
    ``gradient_tol``) it is within 1e-3 of the central differences of the rollout solved to 1e-10
    with up to 20,000 sweeps (``CONVERGED``; passes at the default 1e-7, 34 s on the loaded 2 cores:
    ``-m slow``). 56 s on the shared 2 cores (two gradient programs) when measured at 1e-5."""
    theta = np.array([1.0, 0.5])
    grad = np.asarray(jax.jit(jax.grad(_push(_with(**POLISH))))(jnp.asarray(theta)))
    fd = _central(_push(_with(**CONVERGED)), theta[None], EPS)[0]
    np.testing.assert_allclose(grad, fd, rtol=1e-3)
    # the unpolished default (then 1e-5) was 5.4e-3 off here with 4 ground contacts a box; with 8 (issue 61 part 3)
    # 5.7e-4 against the capped 1e-10 reference (the 1.1e-2 at 1.5 m/s was that reference's, not the gradient's)


def test_polish_leaves_the_value_and_moves_the_derivative_to_the_fixed_point():
    """One dense LCP whose projected Gauss–Seidel iterate at a loose tolerance is far from its
    solution (two nearly parallel rows): under ``jax.value_and_grad`` the polished solve returns
    the unpolished value bit for bit, and its derivative is that of the solution solved to 1e-14
    (the unpolished one is not)."""
    from jaxcontact.solvers import RowStructure, solve_lcp

    A = jnp.array([[1.0, 0.999], [0.999, 1.0]])
    rows = RowStructure.contacts(2, 0)
    loose = LCPSettings(tol=1e-3, regularization=0.0)

    def solve(settings):
        return lambda b: jnp.sum(solve_lcp(A, b, jnp.zeros(2), rows, settings).z * jnp.array([1.0, 2.0]))

    b = jnp.array([-0.998, -1.0])  # the solution (0, 1); the sweeps creep towards it from (0.998, 0.003)
    v0, g0 = jax.value_and_grad(solve(loose))(b)
    v1, g1 = jax.value_and_grad(solve(dataclasses.replace(loose, **POLISH)))(b)
    _, g_exact = jax.value_and_grad(solve(LCPSettings(tol=1e-14, max_iter=100000, regularization=0.0)))(b)
    assert float(v1) == float(v0)
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g_exact), rtol=1e-6)
    assert not np.allclose(np.asarray(g0), np.asarray(g_exact), rtol=1e-3)


def test_gradient_settings_are_checked():
    for kw, msg in [(dict(gradient_tol=0.0), "gradient_tol must be positive or None"),
                    (dict(gradient_newton=-1), "gradient_newton must be >= 0"),
                    (dict(gradient_max_iter=0), "gradient_max_iter must be >= 1")]:
        with pytest.raises(ValueError, match=msg):
            LCPSettings(**kw)


def test_polish_in_velocity_form_gives_the_converged_derivative():
    """The velocity-form solve (``solve_body_lcp``, a world's problem above 64 rows) with its sweeps
    stopped early (3 sweeps) and polished: the value is the 3 sweeps' bit for bit, the derivative
    with respect to the free velocities that of the solve to 1e-12 (1e-6); unpolished it is not."""
    from jaxcontact.solvers import solve_body_lcp

    rng = np.random.default_rng(0)
    N, C = 4, 12
    bodies = np.stack([rng.integers(-1, N, C), rng.integers(0, N, C)], axis=1)
    bodies[:, 0] = np.where(bodies[:, 0] == bodies[:, 1], -1, bodies[:, 0])
    rows = rng.normal(size=(C, 2, 3, 6)) * (bodies[:, 0] >= 0)[:, None, None, None].repeat(2, 1)
    rows[:, 1] = rng.normal(size=(C, 3, 6))
    L = rng.normal(size=(N, 6, 6)) * 0.3 + 2 * np.eye(6)
    Minv = jnp.asarray(np.einsum("nij,nkj->nik", L, L) / 6)
    bias = np.zeros((C, 3))
    bias[:, 0] = rng.normal(size=C) * 0.3 - 0.2
    coupling = jnp.asarray(np.broadcast_to(rng.uniform(0.2, 0.9, size=(C, 1)), (C, 3)).copy())
    v_free = jnp.asarray(rng.normal(size=(N, 6)) * 0.5)
    g = jnp.asarray(rng.normal(size=(C, 3)))
    valid = jnp.ones(C, bool)

    def solve(settings):
        return lambda v: jnp.sum(g * solve_body_lcp(jnp.asarray(rows), jnp.asarray(bodies), Minv, v, jnp.asarray(bias),
                                                    coupling, valid, settings=settings).z)

    loose = LCPSettings(tol=1e-3, max_iter=3)
    v0, g0 = jax.value_and_grad(solve(loose))(v_free)
    v1, g1 = jax.value_and_grad(solve(dataclasses.replace(loose, **POLISH)))(v_free)
    _, g_exact = jax.value_and_grad(solve(LCPSettings(tol=1e-12, max_iter=5000)))(v_free)
    assert float(v1) == float(v0)
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g_exact), rtol=1e-6, atol=1e-9)
    assert not np.allclose(np.asarray(g0), np.asarray(g_exact), rtol=1e-3, atol=1e-6)


def _one_body_problem(v_free, C=2):
    """A body on the ground with ``C`` contacts whose rows are the world axes (normal z, tangents x,
    y), identity mobility, at zero distance (target 0): J v is the body's linear velocity."""
    from jaxcontact.solvers import BodyProblem

    rows = np.zeros((C, 2, 3, 6))
    rows[:, 1, 0, 2] = rows[:, 1, 1, 0] = rows[:, 1, 2, 1] = 1.0
    return BodyProblem(rows=jnp.asarray(rows), bodies=jnp.asarray([[-1, 0]] * C, jnp.int32), mobility=jnp.eye(6)[None],
                       v_free=jnp.asarray(v_free, jnp.float64)[None], phi=jnp.zeros(C), valid=jnp.ones(C, bool),
                       target=jnp.zeros(C))


@pytest.mark.parametrize("zt, slip, cone, expected", [
    ((1.0, 1.0), 0.0, "box", True),      # both contacts at the bound, no slip: about to slide (or to stick)
    ((1.0, 1.0), -0.5, "box", False),    # sliding: the derivative is the sliding branch's
    ((0.5, 0.5), 0.0, "box", False),     # sticking inside the cone
    ((1.0, 0.2), 0.0, "box", False),     # one corner at its bound, the manifold still sticks (redundant friction)
    ((1.0, -1.0), 0.0, "box", False),    # both at their bounds, cancelling: no net friction (a resting float32 pyramid)
    ((1.0, 1.0), 0.0, "elliptic", True),
])
def test_degenerate_is_a_saturated_manifold_without_slip(zt, slip, cone, expected):
    """``solvers.degenerate`` on a body resting on two contacts with normal impulse 1 each and
    friction μ·zt along x: the velocities after the impulse are exactly (slip, 0, 0), so the
    stick/slip event is decided by the manifold's net friction and the slip alone."""
    from jaxcontact.solvers import degenerate

    mu = 0.4
    z = np.zeros((2, 3))
    z[:, 0] = 1.0
    if cone == "box":
        z[:, 1] = mu * np.asarray(zt)
    else:  # the pair's norm at μ z_n, split between the tangents
        z[:, 1] = z[:, 2] = mu * np.asarray(zt) / np.sqrt(2)
    push = z[:, 1:].sum(0)
    v_free = [slip - push[0], -push[1], -2.0, 0.0, 0.0, 0.0]  # the normal rows end at gap velocity 0
    prob = _one_body_problem(v_free)
    assert bool(degenerate(prob, jnp.asarray(z), mu, cone=cone)) is expected
    assert bool(jax.jit(lambda zz: degenerate(prob, zz, mu, cone=cone))(jnp.asarray(z))) is expected
    if cone == "elliptic" and expected:  # the box cone's bound is per row: μ/√2 each is inside it
        assert not bool(degenerate(prob, jnp.asarray(z), mu, cone="box"))


def test_degenerate_flag_on_a_train_not_on_a_push():
    """``Flags.DEGENERATE`` at the default law: set on the 3-box trains with per-body friction
    (0.4, 0.5, 0.3) and (0.5, 0.4, 0.3) of ``benchmarks.world_gradients`` (no converged derivative; measured at steps 3
    and 4 of the first's impacts and step 6 of the second's, their trajectories at friction ± 1e-5
    parting at steps 6 and 7), not on the push at 1.5 m/s whose
    gradient matches (the test above); the report names it."""
    from jaxcontact.types import Flags

    D = int(Flags.DEGENERATE)
    model = worlds.model(law=_with(cone="box"), dt=0.002)  # the square: see the disc's below
    scene, params, s0 = scenes.cradle(3, gap=0.005, speed=1.5, restitution=0.0)
    params = params.replace(law=jc.CoulombLCP.init_params(mu=0.3))
    train = params.replace(body=params.body.replace(friction=jnp.array([0.4, 0.5, 0.3])))
    _, info = worlds.rollout(model, scene, train, s0, 20)
    flagged = np.nonzero(np.asarray(info.flags) & D)[0]
    assert 0 < len(flagged) <= 8 and flagged.min() < 10, flagged
    assert "degenerate" in jc.diagnostics.report(info)
    other = params.replace(body=params.body.replace(friction=jnp.array([0.5, 0.4, 0.3])))  # measured: step 6
    _, info = worlds.rollout(model, scene, other, s0, 20)
    assert np.any(np.asarray(info.flags) & D)
    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.5, restitution=0.0)
    _, info = worlds.rollout(model, scene, params.replace(law=jc.CoulombLCP.init_params(mu=0.3)), s0, 300)
    assert not np.any(np.asarray(info.flags) & D)


@pytest.mark.xfail(strict=True, reason="issue 61, open: under Coulomb's disc (the default) the train with per-body "
                   "friction (0.5, 0.4, 0.3) still has no converged derivative (d/dfriction1 -0.0490 against central "
                   "-0.2816, python -m benchmarks.world_gradients --only train) but entry.degenerate does not flag it: "
                   "the pair manifold reaches 0.96 of its disc, not the bound within 1 %, while the slip starts")
def test_degenerate_flag_on_the_disc_train():
    from jaxcontact.types import Flags

    model = worlds.model(dt=0.002)
    scene, params, s0 = scenes.cradle(3, gap=0.005, speed=1.5, restitution=0.0)
    params = params.replace(law=jc.CoulombLCP.init_params(mu=0.3))
    other = params.replace(body=params.body.replace(friction=jnp.array([0.5, 0.4, 0.3])))
    _, info = worlds.rollout(model, scene, other, s0, 20)
    assert np.any(np.asarray(info.flags) & int(Flags.DEGENERATE))
