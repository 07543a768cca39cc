"""Actuators on joints (issue 63, item 2): motors, position and velocity servos, MuJoCo's general
affine form, ranges, the implicit velocity bias (``worlds.actuation``), from MJCF and back, against
closed forms, MuJoCo C and central differences.

The rotor: a 0.1 m box of 0.5 kg hinged to the world about the vertical axis through its centre, no
ground, I = m (0.1² + 0.1²)/12 about the axis."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.types import Flags, Ground, State
from jaxcontact.worlds import actuation as A
from jaxcontact.worlds import joints as J

MASS, SIZE, H = 0.5, 0.1, 0.002
I_ZZ = MASS * (SIZE ** 2 + SIZE ** 2) / 12


def rotor(ap, force_limited=(False,)):
    scene, body = worlds.make_scene([shapes.box(SIZE, MASS)], ground=False,
                                    joints=J.Joints(parent=(-1,), child=(0,), actuated=(0,), force_limited=force_limited))
    axis = jnp.array([[0.0, 0.0, 1.0]])
    jp = J.JointParams(anchor_parent=jnp.array([[0.0, 0.0, 0.5]]), anchor_child=jnp.zeros((1, 3)), axis_parent=axis,
                       axis_child=axis, reference=jnp.array([[1.0, 0, 0, 0]]), actuators=ap)
    params = J.JointedParams(body=body, ground=Ground.flat(), law=jc.CoulombLCP.init_params(mu=0.3), joints=jp)
    s = State(pos=jnp.array([[0.0, 0.0, 0.5]]), quat=jnp.array([[1.0, 0, 0, 0]]), vel=jnp.zeros((1, 3)),
              omega=jnp.zeros((1, 3)))
    return worlds.model(dt=H), scene, params, s


def angles(scene, params, traj):
    return np.asarray(jax.vmap(lambda x: J.coordinates(scene.joints, params.joints, x)[0][0])(traj))


def test_a_motor_spins_the_rotor_at_gear_times_control_over_inertia_within_its_ranges():
    """ω_n = n h g u / I exactly; a control beyond ``ctrlrange`` acts as its bound, a force beyond
    ``forcerange`` (a force-limited actuator, taken explicitly) as its bound."""
    model, scene, params, s = rotor(A.motor(1, gear=2.0, ctrl=0.01))
    traj, info = worlds.rollout(model, scene, params, s, 100)
    np.testing.assert_allclose(np.asarray(traj.omega[:, 0, 2]), np.arange(101) * H * 2.0 * 0.01 / I_ZZ, rtol=1e-9)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0
    clipped = A.motor(1, gear=2.0, ctrl=5.0).replace(ctrlrange=jnp.array([[-0.01, 0.01]]))
    w = np.asarray(worlds.rollout(model, scene, params.replace(joints=params.joints.replace(actuators=clipped)), s,
                                  50)[0].omega[-1, 0, 2])
    assert w == pytest.approx(50 * H * 2.0 * 0.01 / I_ZZ, rel=1e-9)
    model, scene, params, s = rotor(A.motor(1, gear=1.0, ctrl=1.0).replace(forcerange=jnp.array([[-0.003, 0.003]])),
                                    force_limited=(True,))
    w = np.asarray(worlds.rollout(model, scene, params, s, 50)[0].omega[-1, 0, 2])
    assert w == pytest.approx(50 * H * 0.003 / I_ZZ, rel=1e-9)


@pytest.mark.parametrize("kp", [0.5, 2e3])
def test_a_critically_damped_position_servo_reaches_its_target_without_overshoot(kp):
    """kv = 2√(kp I): q → u as 1 − (1 + ωt) e^(−ωt), ω = √(kp/I) (kp 0.5: within 5e-3 at 0.1 s and
    0.3 s, the step's error), no overshoot beyond 1 %, settled at u within 1e-6 after 2 s; kp 2e3 at
    the same 2 ms step (ω h = 3.1, h kv/I = 6.2: the servo's damping taken explicitly would diverge)
    stays stable and settles too (the velocity bias is implicit; the kp term stays explicit, as in
    MuJoCo's implicit integrators, so it is stable up to (ω h)² < 4 + 4 ω h), its first step landing
    33 % past the target (a step longer than the response: the discretisation, not the servo)."""
    kv = 2 * np.sqrt(kp * I_ZZ)
    model, scene, params, s = rotor(A.position_servo(1, kp, kv, ctrl=1.0))
    traj, info = worlds.rollout(model, scene, params, s, 1000)
    q = angles(scene, params, traj)
    assert np.all(np.isfinite(q)) and q.max() < (1.01 if kp < 1 else 1.34)
    assert q[-1] == pytest.approx(1.0, abs=1e-6)
    if kp < 1:
        w = np.sqrt(kp / I_ZZ)
        for k in (50, 150):
            t = k * H
            assert q[k] == pytest.approx(1 - (1 + w * t) * np.exp(-w * t), abs=5e-3)
    else:  # one step covers the response: the first lands 33 % past, then it closes in without oscillating away
        assert np.all(np.abs(q[20:] - 1.0) < 1e-3)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0


def test_a_velocity_servo_is_implicit_euler_toward_its_target_rate():
    """kv (u − q̇), taken implicitly: ω_{k+1} = (I ω_k + h kv u)/(I + h kv) exactly."""
    kv, u = 0.01, 3.0
    model, scene, params, s = rotor(A.velocity_servo(1, kv, ctrl=u))
    w = np.asarray(worlds.rollout(model, scene, params, s, 200)[0].omega[:, 0, 2])
    expect = [0.0]
    for _ in range(200):
        expect.append((I_ZZ * expect[-1] + H * kv * u) / (I_ZZ + H * kv))
    np.testing.assert_allclose(w, expect, rtol=1e-9, atol=1e-12)


def test_the_final_angle_s_gradient_with_respect_to_the_control_matches_central_differences():
    model, scene, params, s = rotor(A.position_servo(1, 0.5, 0.02, ctrl=0.7))

    def final(u):
        p = params.replace(joints=params.joints.replace(actuators=params.joints.actuators.replace(ctrl=u[None])))
        out, _ = worlds.rollout(model, scene, p, s, 150, output="final")
        return J.coordinates(scene.joints, p.joints, out)[0][0]

    g = float(jax.grad(final)(jnp.asarray(0.7)))
    e = 1e-5
    fd = (float(final(jnp.asarray(0.7 + e))) - float(final(jnp.asarray(0.7 - e)))) / (2 * e)
    assert g == pytest.approx(fd, rel=1e-6) and g > 0.1


ARM = """<mujoco model="servoed arm">
  <option timestep="0.002" integrator="implicitfast"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.02" mass="0.3"/>
        <body name="tip" pos="0.25 0 0">
          <joint name="reach" type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.03" mass="0.1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="s" joint="shoulder" kp="20" kv="1" ctrlrange="-1 1"/>
    <motor name="e" joint="elbow" gear="2" ctrlrange="-0.5 0.5" forcerange="-0.4 0.4"/>
    <velocity name="r" joint="reach" kv="5"/>
  </actuator>
  <keyframe><key name="go" ctrl="0.5 0.3 0.2"/></keyframe>
</mujoco>"""


@pytest.mark.parametrize("key", [None, "go"])
def test_a_servoed_arm_from_mjcf_follows_mujoco_c_and_writes_back(key):
    """A shoulder position servo, an elbow motor (force-limited) and a velocity-servoed slide at the
    tip, from rest, zero controls (None) and the keyframe's: the tip within 10 mm of MuJoCo C's
    (``implicitfast``, as the file says) over 100 steps, measured 2 mm; ``to_mjcf`` writes the
    actuators and the controls back, and MuJoCo runs the written file as the original."""
    mujoco = pytest.importorskip("mujoco")
    from jaxcontact.worlds import mjcf

    scene, params, state, model = mjcf.from_mjcf(ARM, keyframe=key)
    assert scene.joints.actuated == (0, 1, 2) and scene.joints.force_limited == (False, True, False)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    m = mujoco.MjModel.from_xml_string(ARM)
    d = mujoco.MjData(m)
    if key:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    for _ in range(100):
        mujoco.mj_step(m, d)
    tip = np.asarray(traj.pos[-1, 2])
    assert np.linalg.norm(tip - d.xipos[3]) < 10e-3
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0
    xml = mjcf.to_mjcf(scene, params, state, model, option={"integrator": "implicitfast"})
    assert xml.count("<general ") == 3
    m2 = mujoco.MjModel.from_xml_string(xml)
    d2 = mujoco.MjData(m2)
    mujoco.mj_resetDataKeyframe(m2, d2, 0)
    np.testing.assert_allclose(d2.ctrl, np.asarray(params.joints.actuators.ctrl), atol=1e-12)
    for _ in range(100):
        mujoco.mj_step(m2, d2)
    np.testing.assert_allclose(d2.xipos[3], d.xipos[3], atol=1e-6)


def test_unsupported_actuators_and_bad_values_are_refused_by_name_and_flagged_under_jit():
    mujoco = pytest.importorskip("mujoco")
    from jaxcontact.worlds import mjcf

    site = ARM.replace('<velocity name="r" joint="reach" kv="5"/>', '<general name="t" site="grip"/>').replace(
        '<geom type="sphere" size="0.03" mass="0.1"/>', '<geom type="sphere" size="0.03" mass="0.1"/><site name="grip"/>')
    with pytest.raises(ValueError, match="actuator 't': a site transmission"):  # a fixed tendon's loads
        mjcf.from_mjcf(site)
    filtered = ARM.replace('<motor name="e" joint="elbow" gear="2"', '<general name="e" joint="elbow" dyntype="filter" '
                           'dynprm="0.1" gear="2"')
    with pytest.raises(ValueError, match="actuator 'e': activation dynamics mjDYN_FILTER"):
        mjcf.from_mjcf(filtered)
    del mujoco
    model, scene, params, s = rotor(A.motor(1, ctrl=0.1))
    bad = params.replace(joints=params.joints.replace(actuators=params.joints.actuators.replace(ctrl=jnp.array([jnp.nan]))))
    with pytest.raises(ValueError, match="params.joints.actuators.ctrl: must be finite"):
        worlds.rollout(model, scene, bad, s, 2)
    _, info = jax.jit(lambda p: worlds.rollout(model, scene, p, s, 1))(bad)  # the rule, not the NaN it makes
    assert int(np.asarray(info.flags)[0]) & Flags.INVALID_INPUT
    unmarked = params.joints.actuators.replace(forcerange=jnp.array([[-0.1, 0.1]]))  # force_limited says no
    bad = params.replace(joints=params.joints.replace(actuators=unmarked))
    with pytest.raises(ValueError, match=r"forcerange\[0\]: a finite force range .* would be ignored"):
        worlds.rollout(model, scene, bad, s, 2)
    _, info = jax.jit(lambda p: worlds.rollout(model, scene, p, s, 1))(bad)
    assert int(np.asarray(info.flags)[0]) & Flags.INVALID_INPUT
    with pytest.raises(ValueError, match="go together"):
        worlds.rollout(model, scene, params.replace(joints=params.joints.replace(actuators=None)), s, 2)


def test_per_step_controls_drive_the_actuators_with_gradients_and_batches():
    """``rollout(..., controls)`` of a world with actuators takes (n_steps, A): a motor pushed +u for
    50 steps and −u for 50 returns to rest exactly; d(final ω)/d(u_k) = g h / I for every step
    (central differences agree); a batch of two opposite programs mirrors; per-body wrenches are
    refused by name there."""
    model, scene, params, s = rotor(A.motor(1, gear=1.0, ctrl=0.0))
    u = jnp.concatenate([jnp.full((50, 1), 0.01), jnp.full((50, 1), -0.01)])
    traj, info = worlds.rollout(model, scene, params, s, 100, u)
    w = np.asarray(traj.omega[:, 0, 2])
    assert w[50] == pytest.approx(50 * H * 0.01 / I_ZZ, rel=1e-9) and abs(w[100]) < 1e-12
    final = lambda u: worlds.rollout(model, scene, params, s, 100, u, output="final")[0].omega[0, 2]
    g = np.asarray(jax.grad(final)(u))
    np.testing.assert_allclose(g, H / I_ZZ, rtol=1e-9)
    e = 1e-4
    bump = jnp.zeros_like(u).at[30, 0].set(e)
    assert (float(final(u + bump)) - float(final(u - bump))) / (2 * e) == pytest.approx(g[30, 0], rel=1e-6)
    both = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), s)
    out, _ = worlds.batch_rollout(model, scene, params, both, 60, jnp.stack([u[:60], -u[:60]]), output="final")
    assert float(out.omega[0, 0, 2]) == pytest.approx(-float(out.omega[1, 0, 2]), rel=1e-12)
    with pytest.raises(ValueError, match="1 actuators.*expected shape \\(10, 1\\)"):
        worlds.rollout(model, scene, params, s, 10, jnp.zeros((10, 1, 6)))


def test_simulate_mjcf_controls_runs_the_arm_and_refuses_bad_files(tmp_path, capsys):
    """``jaxcontact simulate --mjcf FILE --controls U.npy``: the arm under a control program (chunks of
    the rollout continued) ends where one rollout with the same controls does; a file of the wrong
    shape, with a NaN, of strings, or for a world without actuators is refused in one line, exit 2."""
    pytest.importorskip("mujoco")
    from jaxcontact.cli import main
    from jaxcontact.worlds import mjcf

    xml = tmp_path / "arm.xml"
    xml.write_text(ARM)
    steps = 150
    u = np.stack([np.linspace(-0.5, 0.5, steps), np.full(steps, 0.2), np.full(steps, -0.1)], axis=1)
    np.save(tmp_path / "u.npy", u)
    out = tmp_path / "o.npz"
    assert main(["simulate", "--mjcf", str(xml), "--controls", str(tmp_path / "u.npy"), "--steps", str(steps),
                 "--out", str(out), "--no-progress"]) == 0
    scene, params, state, model = mjcf.from_mjcf(ARM)
    traj, _ = worlds.rollout(model, scene, params, state, steps, jnp.asarray(u))
    np.testing.assert_allclose(np.load(out)["states"][0, -1, :, :3], np.asarray(traj.pos[-1]), atol=1e-6)
    capsys.readouterr()
    bad = {"shape": u[:, :2], "nan": np.where(np.arange(steps)[:, None] == 3, np.nan, u), "text": np.array(["a"] * 3)}
    for name, arr in bad.items():
        np.save(tmp_path / f"{name}.npy", arr)
    plain = tmp_path / "plain.xml"
    plain.write_text('<mujoco><worldbody><body><freejoint/><geom type="box" size=".05 .05 .05"/></body></worldbody>'
                     '</mujoco>')
    for xml_path, name, words in ((xml, "shape", f"expected shape ({steps}, 3)"), (xml, "nan", "NaN or infinite"),
                                  (xml, "text", "expected numbers"), (plain, "shape", "no actuators")):
        assert main(["simulate", "--mjcf", str(xml_path), "--controls", str(tmp_path / f"{name}.npy"), "--steps",
                     str(steps), "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
