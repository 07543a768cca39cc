"""A hinge's passive forces (issue 63, item 1): damping (implicit, as MuJoCo's Euler step), a spring
(stiffness, springref) and armature, in maximal coordinates (``joints.passive_motion``), against
their closed forms, MuJoCo C through an MJCF file, central differences, and the refusals.

The scene: a 0.1 m box of 0.5 kg hinged to the world about the vertical axis through its centre,
no ground (gravity exerts no torque about the axis), so the hinge is a rotor of inertia
I = m (0.1² + 0.1²)/12 about z, plus the armature."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.types import Flags, Ground, State
from jaxcontact.validation import rule_names
from jaxcontact.worlds import joints as J

MASS, SIZE, H = 0.5, 0.1, 0.002
I_ZZ = MASS * (SIZE ** 2 + SIZE ** 2) / 12


def rotor(**passive):
    """The hinged box: (model, scene, params, state) spinning at 2 rad/s about z (0.3 rad from the
    reference orientation with a spring)."""
    scene, body = worlds.make_scene([shapes.box(SIZE, MASS)], joints=J.Joints(parent=(-1,), child=(0,)), ground=False)
    axis = jnp.array([[0.0, 0.0, 1.0]])
    fields = {k: jnp.asarray([v]) for k, v in passive.items()}
    if "stiffness" in fields:
        fields["reference"] = jnp.array([[1.0, 0.0, 0.0, 0.0]])
    jp = J.JointParams(anchor_parent=jnp.array([[0.0, 0.0, 0.5]]), anchor_child=jnp.zeros((1, 3)), axis_parent=axis,
                       axis_child=axis, **fields)
    params = J.JointedParams(body=body, ground=Ground.flat(), law=jc.CoulombLCP.init_params(mu=0.3), joints=jp)
    quat = jnp.array([[np.cos(0.15), 0.0, 0.0, np.sin(0.15)]]) if "stiffness" in fields else jnp.array([[1.0, 0, 0, 0]])
    omega = jnp.array([[0.0, 0.0, 0.0]]) if "stiffness" in fields else jnp.array([[0.0, 0.0, 2.0]])
    s = State(pos=jnp.array([[0.0, 0.0, 0.5]]), quat=quat, vel=jnp.zeros((1, 3)), omega=omega)
    return worlds.model(dt=H), scene, params, s


def spin(traj):
    return np.asarray(traj.omega[:, 0, 2])


def angle(traj):
    q = np.asarray(traj.quat[:, 0])
    return np.unwrap(2 * np.arctan2(q[:, 3], q[:, 0]))


def test_damping_is_implicit_euler_with_the_armature_in_the_inertia():
    """ω_{k+1} = ω_k (I + a)/(I + a + h b) exactly (MuJoCo's Euler step: damping implicit), so
    ω(t) → 2 exp(−b t/(I + a)) as h → 0; a stiff damper at this step (h b = 100 (I + a)) stays stable
    and never reverses."""
    b, a = 0.01, 0.002
    model, scene, params, s = rotor(damping=b, armature=a)
    traj, info = worlds.rollout(model, scene, params, s, 200)
    w = spin(traj)
    ratio = (I_ZZ + a) / (I_ZZ + a + H * b)
    np.testing.assert_allclose(w, 2.0 * ratio ** np.arange(201), rtol=1e-9)
    t = 200 * H
    # implicit Euler's error over n steps: n·x²/2 with x = h b/(I + a) = 0.0071: 0.5 %
    assert w[-1] == pytest.approx(2.0 * np.exp(-b * t / (I_ZZ + a)), rel=6e-3)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0
    # with a constant torque τ about the axis (a control): (I + a + h b) ω_{k+1} = (I + a) ω_k + h τ
    tau = 0.004
    controls = jnp.zeros((200, 1, 6)).at[:, 0, 5].set(tau)
    w = spin(worlds.rollout(model, scene, params, s, 200, controls)[0])
    expect = [2.0]
    for _ in range(200):
        expect.append(((I_ZZ + a) * expect[-1] + H * tau) / (I_ZZ + a + H * b))
    np.testing.assert_allclose(w, expect, rtol=1e-9)
    stiff = 100 * (I_ZZ + a) / H
    model, scene, params, s = rotor(damping=stiff, armature=a)
    w = spin(worlds.rollout(model, scene, params, s, 20)[0])
    assert np.all(np.isfinite(w)) and np.all(w >= 0) and np.all(np.diff(w) <= 0)
    assert w[1] == pytest.approx(2.0 / 101, rel=1e-9)


def test_a_spring_oscillates_at_its_frequency_with_the_armature():
    """A torsional spring k about the reference: q'' = −k (q − q_ref)/(I + a), period
    2π √((I + a)/k) (float64, h = 2 ms: the explicit spring's phase error is O(h ω)); released at
    q = 0.3 rad with springref 0.1 it swings about 0.1 with amplitude 0.2."""
    k, a, ref = 0.05, 0.001, 0.1
    model, scene, params, s = rotor(stiffness=k, armature=a, springref=ref)
    traj, _ = worlds.rollout(model, scene, params, s, 1000)
    q = angle(traj)
    omega = np.sqrt(k / (I_ZZ + a))
    t = np.arange(q.size) * H
    np.testing.assert_allclose(q, ref + 0.2 * np.cos(omega * t), atol=6e-3)
    y = q - ref
    i = np.nonzero(np.diff(np.sign(y)) != 0)[0]  # the rest angle crossed, each half period
    assert i.size == 3
    crossings = t[i] + H * y[i] / (y[i] - y[i + 1])  # linear interpolation between the steps
    period = crossings[2] - crossings[0]
    assert period == pytest.approx(2 * np.pi / omega, rel=1e-3)


def test_passive_coordinates_measure_the_hinge_from_its_reference():
    model, scene, params, s = rotor(stiffness=1.0)
    q, qd = J.coordinates(scene.joints, params.joints, s.replace(omega=jnp.array([[0.0, 0.0, 0.7]])))
    assert float(q[0]) == pytest.approx(0.3, abs=1e-12) and float(qd[0]) == pytest.approx(0.7, abs=1e-12)


def test_the_damping_gradient_matches_central_differences():
    def final_spin(b):
        model, scene, params, s = rotor(damping=1.0, armature=0.002)
        params = params.replace(joints=params.joints.replace(damping=jnp.reshape(b, (1,))))
        traj, _ = worlds.rollout(model, scene, params, s, 50)
        return traj.omega[-1, 0, 2]

    b = 0.02
    g = float(jax.grad(final_spin)(jnp.asarray(b)))
    eps = 1e-6
    fd = (float(final_spin(b + eps)) - float(final_spin(b - eps))) / (2 * eps)
    assert g == pytest.approx(fd, rel=1e-6)
    assert g < 0


def test_bad_passive_fields_are_refused_eagerly_and_flagged_under_jit():
    model, scene, params, s = rotor(damping=0.01)
    bad = params.replace(joints=params.joints.replace(damping=jnp.array([-0.1])))
    with pytest.raises(ValueError, match=r"params\.joints\.damping: must be finite and >= 0"):
        worlds.rollout(model, scene, bad, s, 5)
    _, info = jax.jit(lambda p: worlds.rollout(model, scene, p, s, 5))(bad)
    assert np.all(np.asarray(info.flags) & int(Flags.INVALID_INPUT))
    assert any(r.startswith("params.joints: damping, stiffness and armature must be finite and >= 0, springref finite")
               for r in rule_names(int(np.asarray(info.invalid)[0])))
    with pytest.raises(ValueError, match=r"params\.joints\.stiffness needs params\.joints\.reference"):
        worlds.rollout(model, scene, params.replace(joints=params.joints.replace(stiffness=jnp.array([1.0]))), s, 5)
    with pytest.raises(ValueError, match=r"params\.joints\.armature: expected shape \(1,\)"):
        worlds.rollout(model, scene, params.replace(joints=params.joints.replace(armature=jnp.array([1.0, 2.0]))), s, 5)


ARM = """<mujoco model="damped arm">
  <option timestep="0.002"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05" armature="0.01" stiffness="0.8" springref="20"/>
      <geom type="box" size=".15 .02 .02" pos=".15 0 0" mass="0.6"/>
      <body name="lower" pos=".3 0 0" euler="0 30 0">
        <joint name="elbow" type="hinge" axis="0 1 0" damping="0.02" armature="0.004" stiffness="0.3"/>
        <geom type="box" size=".1 .02 .02" pos=".1 0 0" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <keyframe><key name="k" qpos="0.4 -0.7" qvel="1.5 -2"/></keyframe>
</mujoco>
"""


def test_a_damped_sprung_arm_from_mjcf_follows_mujoco_and_writes_back():
    """Two hinges with MuJoCo's damping, armature and springs (one springref 20°) load with the
    compiled values, start at the keyframe's angles (``coordinates`` = MuJoCo's qpos), follow MuJoCo
    C over 100 steps (the bodies' centres within 1 mm; both integrate damping implicitly and springs
    explicitly, MuJoCo in joint coordinates, jaxcontact in maximal ones with the joint rows), and
    ``to_mjcf`` writes the same compiled values back."""
    import mujoco

    from jaxcontact.worlds import mjcf

    scene, params, state, model = mjcf.from_mjcf(ARM, keyframe="k", dtype=jnp.float64)
    m = mujoco.MjModel.from_xml_string(ARM)
    jp = params.joints
    np.testing.assert_allclose(np.asarray(jp.damping), m.dof_damping, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jp.armature), m.dof_armature, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jp.stiffness), m.jnt_stiffness, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jp.springref), m.qpos_spring, rtol=1e-12)
    assert float(jp.springref[0]) == pytest.approx(np.radians(20.0), rel=1e-12)
    q, qd = J.coordinates(scene.joints, jp, state)
    np.testing.assert_allclose(np.asarray(q), [0.4, -0.7], atol=1e-12)
    np.testing.assert_allclose(np.asarray(qd), [1.5, -2.0], atol=1e-12)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    for _ in range(100):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    np.testing.assert_allclose(np.asarray(traj.pos[-1]), d.xipos[1:], atol=1e-3)
    q_end, _ = J.coordinates(scene.joints, jp, jax.tree_util.tree_map(lambda x: x[-1], traj))
    np.testing.assert_allclose(np.asarray(q_end), d.qpos, atol=5e-3)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0
    back = mujoco.MjModel.from_xml_string(mjcf.to_mjcf(scene, params, state, model))
    for field in ("dof_damping", "dof_armature", "jnt_stiffness"):
        np.testing.assert_allclose(getattr(back, field), getattr(m, field), rtol=1e-9, err_msg=field)
    dk = mujoco.MjData(back)
    mujoco.mj_resetDataKeyframe(back, dk, 0)
    np.testing.assert_allclose(dk.qpos - back.qpos_spring, d.qpos * 0 + np.asarray(q) - m.qpos_spring, atol=1e-9)


@pytest.mark.parametrize("snippet, words", [
    ('<body><joint type="free" armature="0.01"/><geom type="box" size=".05 .05 .05"/></body>', "joint armature 0.01"),
    ('<body><joint type="free" damping="0.1"/><geom type="box" size=".05 .05 .05"/></body>', "joint damping 0.1"),
    ('<body><joint type="free" frictionloss="0.2"/><geom type="box" size=".05 .05 .05"/></body>', "friction loss 0.2"),
])
def test_what_stays_unsupported_is_refused_by_name(snippet, words):
    from jaxcontact.worlds import mjcf

    with pytest.raises(ValueError, match="unsupported in a jaxcontact world") as e:
        mjcf.from_mjcf(f"<mujoco><worldbody>{snippet}</worldbody></mujoco>")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_simulate_runs_the_damped_arm_in_chunks_as_one_rollout(tmp_path, capsys):
    """``jaxcontact simulate --mjcf`` of the damped, sprung arm: 150 steps in chunks of 100 (the
    second continued), exit 0, the states those of one unchunked rollout (the passive forces carry
    across chunks: they depend on the state alone)."""
    from jaxcontact.cli import main
    from jaxcontact.worlds import mjcf

    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    out = tmp_path / "arm.npz"
    assert main(["simulate", "--mjcf", str(path), "--keyframe", "k", "--steps", "150", "--out", str(out),
                 "--no-progress"]) == 0
    assert "2 bodies x 151 states" in capsys.readouterr().out
    cli = np.load(out)["states"][0]
    scene, params, state, model = mjcf.from_mjcf(ARM, keyframe="k", dtype=jnp.float64)
    traj, _ = worlds.rollout(model, scene, params, state, 150)
    np.testing.assert_allclose(cli[:, :, :3], np.asarray(traj.pos), atol=1e-9)
