"""Fixed tendons (issue 63, item 3: MuJoCo's ``<tendon><fixed>``, ``worlds.tendons``): a length
L = Σ c_i q_i over joints whose range limit is two one-sided rows of the contact problem, whose
spring and damper join the joints' passive forces, and whose friction loss is a bounded row. Two
rotors on vertical hinges (gravity exerts no torque) coupled by L = q₀ − q₁: the spring oscillates
at √(2k/I), the limit stops the relative turn without bounce (momentum shared, as a perfectly
inelastic stop), the damper decays the relative rate as implicit Euler; refusals eagerly and under
``jit``."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.types import Flags, Ground, State
from jaxcontact.validation import rule_names
from jaxcontact.worlds import joints as J
from jaxcontact.worlds import tendons as T

H = 0.002
I_ROTOR = 2.0 * (0.2 ** 2 + 0.2 ** 2) / 12  # a 0.2 × 0.2 × 0.05 m plate of 2 kg about its short axis


def rotors(omega0=2.0, dtype=jnp.float64, **fields):
    """Two plates on vertical hinges to the world 1 m apart, coupled by the tendon L = q₀ − q₁ with
    ``fields`` (``TendonParams``'s; a ``range`` makes it limited); the first spins at ``omega0``."""
    tendons = T.Tendons(joints=((0, 1),), limited=("range" in fields,))
    scene, body = worlds.make_scene([shapes.box((0.2, 0.2, 0.05), 2.0)] * 2, ground=False, pairs=[],
                                    joints=J.Joints(parent=(-1, -1), child=(0, 1), tendons=tendons))
    f = lambda x: jnp.asarray(x, dtype)
    z = f([[0.0, 0.0, 1.0]] * 2)
    tp = T.TendonParams(coef=f([[1.0, -1.0]]), **{k: f(v) for k, v in fields.items()})
    jp = J.JointParams(anchor_parent=f([[0, 0, 0.5], [1.0, 0, 0.5]]), anchor_child=f(np.zeros((2, 3))), axis_parent=z,
                       axis_child=z, reference=f([[1.0, 0, 0, 0]] * 2), tendons=tp)
    cast = lambda tree: jax.tree_util.tree_map(lambda x: f(x) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x,
                                               tree)
    params = J.JointedParams(body=cast(body), ground=cast(Ground.flat()), law=cast(jc.CoulombLCP.init_params(mu=0.3)),
                             joints=jp)
    s = State(pos=f([[0, 0, 0.5], [1.0, 0, 0.5]]), quat=f([[1.0, 0, 0, 0]] * 2), vel=f(np.zeros((2, 3))),
              omega=f([[0, 0, omega0], [0, 0, 0.0]]))
    return worlds.model(dt=H), scene, params, s


def coordinates(scene, params, traj):
    return np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj), float)


STEPS = 400  # one compiled program for the spring, dead band, damper and friction-loss tests


def passive(k=0.0, band=(0.0, 0.0), b=0.0, loss=0.0):
    """The rotors with every passive field of the tendon set (one pytree structure, so one program):
    (traj, info, scene, params) after ``STEPS`` steps."""
    model, scene, params, s = rotors(stiffness=[k], springlength=[band], damping=[b], frictionloss=[loss])
    traj, info = worlds.rollout(model, scene, params, s, STEPS)
    return traj, info, scene, params


def test_a_tendon_spring_oscillates_at_its_analytic_frequency():
    """k = 2 N·m/rad on L = q₀ − q₁ (dead band [0, 0]): I q̈₀ = −k L, I q̈₁ = k L, so L oscillates at
    ω = √(2k/I) (period 0.3628 s) and the mean rate stays ω₀/2 (the spring is internal). Measured
    from L's zero crossings (interpolated) over 0.8 s: within 0.5 %; no step flagged."""
    k = 2.0
    traj, info, scene, params = passive(k=k)
    q = coordinates(scene, params, traj)
    L = q[1:, 0] - q[1:, 1]  # L starts at 0: skip it
    i = np.flatnonzero(np.sign(L[1:]) != np.sign(L[:-1]))
    cross = (i + L[i] / (L[i] - L[i + 1])) * H
    period = 2 * np.mean(np.diff(cross))
    assert len(cross) >= 3 and period == pytest.approx(2 * np.pi / np.sqrt(2 * k / I_ROTOR), rel=5e-3)
    np.testing.assert_allclose(np.asarray(traj.omega[:, :, 2]).sum(axis=1), 2.0, rtol=1e-9)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


def test_a_tendon_spring_s_dead_band_exerts_no_force_inside_it():
    """With the dead band [−1, 1] rad the relative turn up to 0.8 rad (2 rad/s for 0.4 s) is free;
    beyond 1 rad the spring pulls it back."""
    traj, *_ = passive(k=2.0, band=(-1.0, 1.0))
    w = np.asarray(traj.omega[:, 0, 2])
    np.testing.assert_allclose(w[:201], 2.0, rtol=1e-12)
    assert w[-1] < 1.99


@pytest.mark.parametrize("dtype,tol", [(jnp.float64, 2e-6), (jnp.float32, 1e-4)])
def test_a_tendon_limit_stops_the_coupled_joints_without_bounce(dtype, tol):
    """L = q₀ − q₁ ≤ 0.3 rad: the spinning plate turns freely until L reaches 0.3 rad (0.15 s), then
    the limit's impulse makes the two turn together at ω₀/2 (angular momentum kept, no bounce: L̇
    stays ≤ 1e-6 rad/s after the hit) and L stays at its limit within ``tol``."""
    model, scene, params, s = rotors(dtype=dtype, range=[[-0.3, 0.3]])
    traj, info = worlds.rollout(model, scene, params, s, 300)
    q = coordinates(scene, params, traj)
    L = q[:, 0] - q[:, 1]
    w = np.asarray(traj.omega[:, :, 2], float)
    assert L.max() < 0.3 + tol
    hit = int(np.argmax(w[:, 1] > 0.5))  # the step the limit's impulse turns the second plate
    assert abs(hit * H - 0.15) <= 2 * H
    np.testing.assert_allclose(w[hit + 2:], 1.0, atol=10 * tol)
    assert np.all(w[hit + 2:, 0] - w[hit + 2:, 1] < 10 * tol)
    np.testing.assert_allclose(L[hit + 2:], 0.3, atol=tol)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


@pytest.mark.slow
def test_the_final_length_s_gradient_along_the_tendon_limit_is_one():
    """Stopped on its limit, the tendon's final length follows the limit: d L_final / d upper = 1
    through the limit's rows, jax.grad against central differences (float64)."""
    model, scene, params, s = rotors(range=[[-0.3, 0.3]])

    def final_length(upper):
        tp = params.joints.tendons.replace(range=jnp.stack([jnp.array([-0.3]), upper[None]], axis=1))
        p = params.replace(joints=params.joints.replace(tendons=tp))
        traj, _ = worlds.rollout(model, scene, p, s, 120, output="final")
        q = J.coordinates(scene.joints, p.joints, traj)[0]
        return q[0] - q[1]

    g = float(jax.grad(final_length)(jnp.asarray(0.2)))
    e = 1e-4
    fd = (float(final_length(jnp.asarray(0.2 + e))) - float(final_length(jnp.asarray(0.2 - e)))) / (2 * e)
    assert g == pytest.approx(fd, rel=1e-3) and g == pytest.approx(1.0, rel=1e-2)


def test_a_tendon_damper_is_implicit_euler_on_the_relative_rate():
    """b = 0.05 N·m·s/rad on L = q₀ − q₁: the relative rate decays by I/(I + 2 h b) a step exactly
    (the two plates' reduced inertia I/2), the mean rate kept."""
    b = 0.05
    traj, *_ = passive(b=b)
    w = np.asarray(traj.omega[:, :, 2], float)
    ratio = (I_ROTOR / (I_ROTOR + 2 * H * b)) ** np.arange(STEPS + 1)
    np.testing.assert_allclose(w[:, 0] - w[:, 1], 2.0 * ratio, rtol=1e-9)
    np.testing.assert_allclose(w.sum(axis=1), 2.0, rtol=1e-9)


def test_a_tendon_friction_loss_stops_the_relative_turn_at_the_analytic_time():
    """Friction loss 0.1 N·m on L = q₀ − q₁: the relative rate falls by 2 h loss/I a step (each plate
    loses loss·h/I), so it stops at t = ω₀ I/(2 loss) = 0.1333 s, within one step."""
    traj, info, *_ = passive(loss=0.1)
    w = np.asarray(traj.omega[:, :, 2], float)
    rel = w[:, 0] - w[:, 1]
    stop = int(np.argmax(rel < 1e-6)) * H
    assert stop == pytest.approx(2.0 * I_ROTOR / (2 * 0.1), abs=H)
    np.testing.assert_allclose(w[-1], 1.0, atol=1e-6)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


def test_a_motor_on_a_tendon_drives_its_joints_through_the_coefficients():
    """An actuator index J + t drives tendon t (``Joints.actuated``): a motor of gear 2 and control 0.05
    on L = q₀ − q₁ exerts 2·0.05 N·m on q₀ and −0.1 on q₁, so from rest ω₀ = −ω₁ = 0.1 n h / I exactly."""
    from jaxcontact.worlds import actuation as A

    _, scene, params, s = rotors(omega0=0.0)
    joints = dataclasses.replace(scene.joints, actuated=(2,), force_limited=(False,))
    scene = dataclasses.replace(scene, joints=joints)
    params = params.replace(joints=params.joints.replace(actuators=A.motor(1, gear=2.0, ctrl=0.05)))
    traj, info = worlds.rollout(worlds.model(dt=H), scene, params, s, 50)
    w = np.asarray(traj.omega[:, :, 2], float)
    n = np.arange(51)
    np.testing.assert_allclose(w[:, 0], 0.1 * n * H / I_ROTOR, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w[:, 1], -0.1 * n * H / I_ROTOR, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match=r"Joints\.actuated: a joint index \(0 … 1; J \+ t: tendon t\)"):
        dataclasses.replace(scene.joints, actuated=(3,), force_limited=(False,))


def test_bad_tendons_are_refused_eagerly_and_flagged_under_jit():
    with pytest.raises(ValueError, match=r"Tendons\.joints\[0\]: tendon 0 names joint 1 twice"):
        T.Tendons(joints=((1, 0, 1),))
    with pytest.raises(ValueError, match=r"names joint 1 twice"):  # static: the same refusal while tracing
        jax.jit(lambda: J.Joints(parent=(-1, -1), child=(0, 1), tendons=T.Tendons(joints=((1, 0, 1),))) and 0)()
    with pytest.raises(ValueError, match=r"Joints\.tendons"):
        J.Joints(parent=(-1,), child=(0,), tendons=T.Tendons(joints=((0, 1),)))
    model, scene, params, s = rotors(damping=[0.1])
    bad = params.replace(joints=params.joints.replace(tendons=params.joints.tendons.replace(damping=jnp.array([-0.1]))))
    with pytest.raises(ValueError, match=r"params\.joints\.tendons\.damping: expected \(1,\) finite values >= 0"):
        worlds.rollout(model, scene, bad, s, 5)
    _, info = jax.jit(lambda p: worlds.rollout(model, scene, p, s, 5))(bad)
    assert np.all(np.asarray(info.flags) & int(Flags.INVALID_INPUT))
    assert any("tendons" in r for r in rule_names(int(np.asarray(info.invalid)[0])))
    with pytest.raises(ValueError, match=r"params\.joints\.tendons\.range is None but tendons are limited"):
        _, sc, p, st = rotors(range=[[-0.3, 0.3]])
        worlds.rollout(model, sc, p.replace(joints=p.joints.replace(tendons=p.joints.tendons.replace(range=None))), st, 5)
    with pytest.raises(ValueError, match=r"params\.joints\.tendons\.springlength is None"):
        worlds.rollout(model, scene, params.replace(joints=params.joints.replace(
            tendons=params.joints.tendons.replace(stiffness=jnp.array([1.0])))), s, 5)
