"""Joint friction loss (issue 63, item 1: MuJoCo's ``frictionloss``): a bounded row of the contact
problem, |τ| ≤ frictionloss (``joints.loss_rows``, ``contacts.loss_contacts``: a contact whose
normal impulse is held at 1, ``BodyProblem.fixed_normal``, with μ = frictionloss·h). A pendulum is
held until gravity's torque exceeds the loss and slips beyond it; a spinning wheel stops at
ω₀ I / frictionloss; the final angle's derivative along the loss against its closed form and
central differences; refusals eagerly and under ``jit``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.types import Flags, Ground, State
from jaxcontact.validation import rule_names
from jaxcontact.worlds import joints as J

H = 0.002
LENGTH, MASS = 0.4, 1.0
I_HINGE = MASS * (LENGTH ** 2 + 0.04 ** 2) / 12 + MASS * (LENGTH / 2) ** 2  # the rod about its end's y axis


def cast(tree, dtype):
    f = lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x
    return jax.tree_util.tree_map(f, tree)


def pendulum(theta, loss, dtype=jnp.float64):
    """A 0.4 m rod of 1 kg hinged at its end to the world about y, at rest θ from hanging straight
    down, its hinge's friction loss ``loss`` (N·m): (model, scene, params, state)."""
    scene, body = worlds.make_scene([shapes.box((LENGTH, 0.04, 0.04), MASS)], ground=False,
                                    joints=J.Joints(parent=(-1,), child=(0,)))
    down = np.array([np.sin(theta), 0.0, -np.cos(theta)])  # hinge → centre of mass
    turn = np.pi / 2 - theta  # the rod's x axis onto ``down``, about y
    y = [[0.0, 1.0, 0.0]]
    jp = J.JointParams(anchor_parent=jnp.array([[0.0, 0.0, 1.0]]), anchor_child=jnp.array([[-LENGTH / 2, 0.0, 0.0]]),
                       axis_parent=jnp.array(y), axis_child=jnp.array(y), frictionloss=jnp.array([loss]))
    params = J.JointedParams(body=body, ground=Ground.flat(), law=jc.CoulombLCP.init_params(mu=0.3), joints=jp)
    s = State(pos=jnp.array([[0.0, 0.0, 1.0] + LENGTH / 2 * down]), quat=jnp.array([[np.cos(turn / 2), 0, np.sin(turn / 2), 0]]),
              vel=jnp.zeros((1, 3)), omega=jnp.zeros((1, 3)))
    return worlds.model(dt=H), scene, cast(params, dtype), cast(s, dtype)


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_a_pendulum_is_held_below_its_friction_loss_and_slips_above_it(dtype):
    """At θ = 0.5 rad gravity's torque about the hinge is m g (L/2) sin θ = 0.9406 N·m: a friction
    loss 1 % above it holds the rod (it moves under 1e-6 m in 0.4 s, float64; 1e-4 m float32), 1 %
    below it lets it slip (the angular rate grows as (τ − loss)/I at first: 0.18 rad/s² here), and
    no step is flagged. One compiled program for all three losses."""
    theta = 0.5
    tau = MASS * 9.81 * (LENGTH / 2) * np.sin(theta)
    model, scene, params, s = pendulum(theta, tau, dtype)
    run = jax.jit(lambda loss: worlds.rollout(model, scene, params.replace(joints=params.joints.replace(
        frictionloss=jnp.asarray([loss], dtype))), s, 200))
    held, info = run(1.01 * tau)
    assert float(np.max(np.abs(np.asarray(held.pos[-1] - s.pos)))) < (1e-6 if dtype == jnp.float64 else 1e-4)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0
    slips, info = run(0.99 * tau)
    w = np.asarray(slips.omega[:, 0, 1], float)  # positive ω_y swings it back toward hanging
    np.testing.assert_allclose(w[10] / (10 * H), 0.01 * tau / I_HINGE, rtol=0.05)
    assert float(np.max(np.abs(np.asarray(slips.pos[-1] - s.pos)))) > 1e-3
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


def wheel(loss, omega0=3.0, dtype=jnp.float64):
    """A 0.2 m × 0.2 m × 0.05 m plate of 2 kg on a vertical hinge through its centre (gravity exerts no
    torque), spinning at ``omega0``; I = m (a² + b²)/12 about the axis."""
    scene, body = worlds.make_scene([shapes.box((0.2, 0.2, 0.05), 2.0)], ground=False,
                                    joints=J.Joints(parent=(-1,), child=(0,)))
    z = jnp.array([[0.0, 0.0, 1.0]])
    jp = J.JointParams(anchor_parent=jnp.array([[0.0, 0.0, 0.5]]), anchor_child=jnp.zeros((1, 3)), axis_parent=z,
                       axis_child=z, frictionloss=jnp.asarray([loss]))
    params = J.JointedParams(body=body, ground=Ground.flat(), law=jc.CoulombLCP.init_params(mu=0.3), joints=jp)
    s = State(pos=jnp.array([[0.0, 0.0, 0.5]]), quat=jnp.array([[1.0, 0, 0, 0]]), vel=jnp.zeros((1, 3)),
              omega=jnp.array([[0.0, 0.0, omega0]]))
    return worlds.model(dt=H), scene, cast(params, dtype), cast(s, dtype)


I_WHEEL = 2.0 * (0.2 ** 2 + 0.2 ** 2) / 12


def test_a_spinning_wheel_stops_at_the_analytic_time_and_stays_stopped():
    """Friction loss 0.1 N·m on ω₀ = 3 rad/s: the rate falls by loss·h/I a step, linearly, and the
    wheel stops at t = ω₀ I/loss = 0.4 s (within one step, 0.5 %) and stays stopped (no reversal)."""
    loss = 0.1
    model, scene, params, s = wheel(loss)
    traj, info = worlds.rollout(model, scene, params, s, 300)
    w = np.asarray(traj.omega[:, 0, 2], float)
    t_stop = 3.0 * I_WHEEL / loss
    n = np.arange(301)
    # the solver's 1e-6 regularisation leaves 1e-6 of the last step's change (1.5e-8 rad/s), then decays
    np.testing.assert_allclose(w, np.maximum(3.0 - n * H * loss / I_WHEEL, 0.0), atol=2e-8)
    stopped = int(np.argmax(w < 1e-7)) * H
    assert stopped == pytest.approx(t_stop, abs=H) and t_stop == pytest.approx(0.4)
    assert np.all(np.abs(w[int(t_stop / H) + 1:]) < 2e-8)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


@pytest.mark.slow
def test_the_final_angle_s_gradient_along_the_friction_loss_is_the_closed_form():
    """While the wheel slips (100 steps, it stops at 200), θ_n = h Σ_k (ω₀ − k h loss/I), k = 1..n:
    dθ_n/d loss = −h² n(n + 1)/(2 I). jax.grad through the bounded row equals it and central differences."""
    model, scene, params, s = wheel(0.1)

    def final_angle(loss):
        p = params.replace(joints=params.joints.replace(frictionloss=loss[None]))
        traj, _ = worlds.rollout(model, scene, p, s, 100, output="final")
        q = traj.quat[0]
        return 2 * jnp.arctan2(q[3], q[0])

    g = float(jax.grad(final_angle)(jnp.asarray(0.1)))
    e = 1e-4
    fd = (float(final_angle(jnp.asarray(0.1 + e))) - float(final_angle(jnp.asarray(0.1 - e)))) / (2 * e)
    closed = -H * H * 100 * 101 / (2 * I_WHEEL)
    assert g == pytest.approx(closed, rel=1e-6) and fd == pytest.approx(closed, rel=1e-6)


def test_a_negative_friction_loss_is_refused_eagerly_and_flagged_under_jit():
    model, scene, params, s = wheel(0.05)
    bad = params.replace(joints=params.joints.replace(frictionloss=jnp.array([-0.1])))
    with pytest.raises(ValueError, match=r"params\.joints\.frictionloss: must be finite and >= 0"):
        worlds.rollout(model, scene, bad, s, 5)
    _, info = jax.jit(lambda p: worlds.rollout(model, scene, p, s, 5))(bad)
    assert np.all(np.asarray(info.flags) & int(Flags.INVALID_INPUT))
    assert any("frictionloss" in r for r in rule_names(int(np.asarray(info.invalid)[0])))
    with pytest.raises(ValueError, match=r"params\.joints\.frictionloss: expected shape \(1,\)"):
        worlds.rollout(model, scene, params.replace(joints=params.joints.replace(frictionloss=jnp.ones(2))), s, 5)


@pytest.mark.parametrize("padded,cone", [(0, "box"), (21, "box"), (0, "elliptic")])
def test_the_solver_holds_a_fixed_normal_at_one_and_refuses_other_forms_by_name(padded, cone):
    """``solve_contact`` on the wheel's loss contact (``contacts.loss_contacts``): its normal impulse
    is 1 to round-off, a fast wheel's friction impulse sits at the bound loss·h and a slow one's stops
    it (I ω below the bound), on every dense path a jointed world takes: the unrolled sweep, the looped
    one (``padded`` invalid contacts past ``SMALL_ROWS``), the elliptic cone. The relaxed Newton solve
    and the velocity form are refused by name."""
    import dataclasses

    from jaxcontact import contact
    from jaxcontact.solvers import SMALL_ROWS, Method, solve_contact, table
    from jaxcontact.worlds import contacts

    model, scene, params, s = wheel(0.1)
    rows, phi, valid, bodies, bound = contacts.loss_contacts(model, scene, params, s)
    pad = lambda x, v: jnp.concatenate([x, jnp.full((padded,) + x.shape[1:], v, x.dtype)])
    rows, phi, valid, bodies = pad(rows, 0.0), pad(phi, 0.0), pad(valid, False), pad(bodies, -1)
    I_across = 2.0 * (0.2 ** 2 + 0.05 ** 2) / 12
    minv = jnp.diag(1.0 / jnp.array([2.0, 2.0, 2.0, I_across, I_across, I_WHEEL]))
    mu = pad(jnp.stack([bound, jnp.zeros_like(bound)], axis=1), 0.0)
    settings = dataclasses.replace(model.law.solver, cone=cone)
    held = jnp.arange(1 + padded) == 0
    assert table("dense", 3 * (1 + padded), Method(settings)).sweep == ("looped" if 3 * (1 + padded) > SMALL_ROWS else "unrolled")

    @jax.jit
    def solve(spin):
        v = jnp.array([[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]) * spin
        prob = contact.body_problem(rows, bodies, phi, valid, minv, v, H).replace(fixed_normal=held)
        return solve_contact(prob.replace(mu=mu, soft=jnp.full((1 + padded,), 1e-2)), Method(settings)).z

    fast, slow = solve(3.0), solve(1e-3)
    assert float(fast[0, 0]) == pytest.approx(1.0, abs=1e-12) and float(slow[0, 0]) == pytest.approx(1.0, abs=1e-12)
    assert float(fast[0, 1]) == pytest.approx(-0.1 * H, rel=1e-12)
    assert float(slow[0, 1]) == pytest.approx(-I_WHEEL * 1e-3, rel=1e-5)  # the regularisation's 1e-6
    assert np.all(np.asarray(fast[1:]) == 0)
    prob = contact.body_problem(rows, bodies, phi, valid, minv, jnp.zeros((1, 6)), H).replace(fixed_normal=held)
    with pytest.raises(ValueError, match="fixed-normal.*relaxed law"):
        solve_contact(prob.replace(mu=mu), Method(relaxed=(1e-3, 10)))
    with pytest.raises(ValueError, match="fixed-normal.*velocity form"):
        solve_contact(prob.replace(mu=mu), Method(form="velocity"))
