"""Friction loss and fixed tendons from MJCF (issue 63, items 1 and 3): ``from_mjcf`` loads MuJoCo's
compiled ``dof_frictionloss``, ``wrap_prm``, ``tendon_range``, ``tendon_stiffness``/``tendon_lengthspring``,
``tendon_damping`` and ``tendon_frictionloss``; three files of our own follow MuJoCo C within 10 mm
over 100 steps from the same state (ours hard rows, MuJoCo's soft: its tendon limits give, measured
below); ``to_mjcf`` writes them back; the rest is refused by name before any work."""

import jax
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.worlds import joints as J

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

PENDULUM = """<mujoco model="pendulum with friction loss">
  <option timestep="0.002"/>
  <worldbody>
    <body name="rod" pos="0 0 1" euler="0 -60 0">
      <joint name="pivot" type="hinge" axis="0 1 0" frictionloss="0.4"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.02" mass="1"/>
    </body>
  </worldbody>
</mujoco>"""

COUPLED = """<mujoco model="two hinges coupled by a tendon">
  <option timestep="0.002"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.02" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="bend" limited="true" range="-0.3 0.3" stiffness="0.5" damping="0.01">
      <joint joint="shoulder" coef="1"/>
      <joint joint="elbow" coef="-1"/>
    </fixed>
  </tendon>
</mujoco>"""

GRIPPER = """<mujoco model="tendon gripper">
  <option timestep="0.002"/>
  <worldbody>
    <body name="hand" pos="0 0 1">
      <joint name="lift" type="slide" axis="0 0 1" stiffness="400" damping="2"/>
      <geom type="box" size="0.05 0.02 0.01" mass="0.5"/>
      <body name="left" pos="-0.02 0 -0.04">
        <joint name="left" type="slide" axis="-1 0 0" damping="0.5"/>
        <geom type="box" size="0.005 0.01 0.03" mass="0.05"/>
      </body>
      <body name="right" pos="0.02 0 -0.04">
        <joint name="right" type="slide" axis="1 0 0" damping="0.5"/>
        <geom type="box" size="0.005 0.01 0.03" mass="0.05"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="opening" limited="true" range="0 0.02" stiffness="20" springlength="0.01" frictionloss="0.2">
      <joint joint="left" coef="1"/>
      <joint joint="right" coef="1"/>
    </fixed>
  </tendon>
  <keyframe>
    <key name="open" qpos="0 0 0" qvel="0 0.5 0.4"/>
  </keyframe>
</mujoco>"""


def both(xml, keyframe=None, steps=100):
    """(scene, params, ours (steps+1, N, 3) centres of mass, our q, MuJoCo's xipos, MuJoCo's qpos, info)."""
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe=keyframe)
    traj, info = worlds.rollout(model, scene, params, state, steps)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    xs, qs = [d.xipos[1:].copy()], [d.qpos.copy()]
    for _ in range(steps):
        mujoco.mj_step(m, d)
        mujoco.mj_kinematics(m, d)  # mj_step leaves xipos at the step's start
        xs.append(d.xipos[1:].copy())
        qs.append(d.qpos.copy())
    q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj), float) \
        if params.joints.reference is not None else None
    return scene, params, np.asarray(traj.pos, float), q, np.array(xs), np.array(qs), info


def flags(info):
    return int(np.bitwise_or.reduce(np.asarray(info.flags)))


def test_a_pendulum_with_friction_loss_follows_mujoco_c():
    """Released 60° below the horizontal, gravity's torque (0.98 N·m) exceeds the loss (0.4 N·m):
    the rod swings against it. Over 100 steps its centre of mass stays within 0.1 mm of MuJoCo C's
    (measured 0.0095 mm: MuJoCo's friction-loss row is soft, ours a hard bound; while it slides both
    are at the bound)."""
    scene, params, ours, _, theirs, _, info = both(PENDULUM)
    np.testing.assert_allclose(np.asarray(params.joints.frictionloss), [0.4])
    assert np.max(np.abs(ours - theirs)) < 1e-4
    assert np.linalg.norm(ours[-1] - ours[0]) > 0.02  # it swings
    assert flags(info) == 0


def test_two_hinges_coupled_by_a_limited_tendon_follow_mujoco_c():
    """The tendon bend = shoulder − elbow, limited to ±0.3 rad, with a spring and a damper, loads with
    MuJoCo's compiled values; released horizontal, the elbow lags and the tendon reaches its limit:
    ours stops it at 0.3 rad (hard; measured max 0.3 + 6e-9), MuJoCo's soft limit gives to 0.3215.
    Centres of mass within 3 mm of MuJoCo C over 100 steps (the bar 10 mm; measured 0.82 mm)."""
    scene, params, ours, q, theirs, qs, info = both(COUPLED)
    tp = params.joints.tendons
    assert scene.joints.tendons.joints == ((0, 1),) and scene.joints.tendons.limited == (True,)
    np.testing.assert_allclose(np.asarray(tp.coef), [[1.0, -1.0]])
    np.testing.assert_allclose(np.asarray(tp.range), [[-0.3, 0.3]])
    np.testing.assert_allclose(np.asarray(tp.stiffness), [0.5])
    np.testing.assert_allclose(np.asarray(tp.damping), [0.01])
    bend, bend_mj = q[:, 0] - q[:, 1], qs[:, 0] - qs[:, 1]
    assert bend.max() < 0.3 + 1e-6 and bend_mj.max() > 0.31  # hard against soft
    assert np.max(np.abs(ours - theirs)) < 3e-3
    assert flags(info) == 0


@pytest.mark.slow
def test_a_gripper_whose_fingers_are_coupled_by_a_tendon_follows_mujoco_c_and_round_trips():
    """A hand on a vertical spring slide, two finger slides on it coupled by the tendon opening = left
    + right (range [0, 0.02] m, a spring toward 0.01 m, friction loss 0.2 N): thrown open at 0.5 and
    0.4 m/s the fingers stop at the limit (ours 0.02 m hard, MuJoCo's gives to 0.0230 m), the tendon's
    rows on three bodies (the fingers and the hand). Centres of mass within 5 mm of MuJoCo C over 100
    steps (the bar 10 mm; measured 1.5 mm: the fingers, where MuJoCo's limit gives). ``to_mjcf`` writes the tendon back: MuJoCo compiles the same values."""
    scene, params, ours, q, theirs, qs, info = both(GRIPPER, keyframe="open")
    tp = params.joints.tendons
    np.testing.assert_allclose(np.asarray(tp.springlength), [[0.01, 0.01]])
    np.testing.assert_allclose(np.asarray(tp.frictionloss), [0.2])
    opening, opening_mj = q[:, 1] + q[:, 2], qs[:, 1] + qs[:, 2]
    assert opening.max() < 0.02 + 1e-6 and opening_mj.max() > 0.0215
    assert np.max(np.abs(ours - theirs)) < 5e-3
    assert flags(info) == 0
    scene, params, state, model = mjcf.from_mjcf(GRIPPER, keyframe="open")
    xml = mjcf.to_mjcf(scene, params, state, model)
    m = mujoco.MjModel.from_xml_string(xml)
    np.testing.assert_allclose(m.tendon_range, [[0.0, 0.02]])
    np.testing.assert_allclose(m.wrap_prm, [1.0, 1.0])
    np.testing.assert_allclose(m.tendon_lengthspring, [[0.01, 0.01]])
    np.testing.assert_allclose(m.tendon_stiffness, [20.0])
    np.testing.assert_allclose(m.tendon_frictionloss, [0.2])
    scene2, params2, *_ = mjcf.from_mjcf(xml)
    assert scene2.joints.tendons == scene.joints.tendons
    for field in ("coef", "range", "stiffness", "springlength", "frictionloss"):
        np.testing.assert_allclose(np.asarray(getattr(params2.joints.tendons, field)),
                                   np.asarray(getattr(params.joints.tendons, field)), atol=1e-12)
    pend = mjcf.from_mjcf(PENDULUM)
    back = mujoco.MjModel.from_xml_string(mjcf.to_mjcf(*pend[:3], pend[3]))
    np.testing.assert_allclose(back.dof_frictionloss, [0.4])


SERVOED = """<mujoco model="actuators on tendons">
  <option timestep="0.002" integrator="implicitfast"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.5"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.02" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="bend" limited="true" range="-0.5 0.5">
      <joint joint="shoulder" coef="1"/>
      <joint joint="elbow" coef="-1"/>
    </fixed>
    <fixed name="sum">
      <joint joint="shoulder" coef="0.5"/>
      <joint joint="elbow" coef="0.5"/>
    </fixed>
  </tendon>
  <actuator>
    <position name="bender" tendon="bend" kp="5" kv="0.2"/>
    <motor name="lifter" tendon="sum" gear="2" ctrlrange="-1 1"/>
  </actuator>
  <keyframe><key name="go" ctrl="0.3 0.4"/></keyframe>
</mujoco>"""


def test_actuators_on_tendons_follow_mujoco_c_and_write_back():
    """A position servo on bend = shoulder − elbow and a motor on sum = (shoulder + elbow)/2 through a
    gear of 2 (MuJoCo's tendon transmission: length g·L, force g·f along G_T; the servo's kv implicit,
    as the file's ``implicitfast``), with the keyframe's controls: centres of mass within 1 mm of MuJoCo
    C over 100 steps (measured 0.21 mm); ``to_mjcf`` writes the actuators on their tendons back."""
    scene, params, ours, q, theirs, qs, info = both(SERVOED, keyframe="go")
    assert scene.joints.actuated == (2, 3)  # J + t: tendons 0 and 1
    assert np.max(np.abs(ours - theirs)) < 1e-3
    assert flags(info) == 0
    scene, params, state, model = mjcf.from_mjcf(SERVOED, keyframe="go")
    m = mujoco.MjModel.from_xml_string(mjcf.to_mjcf(scene, params, state, model))
    assert m.actuator_trntype.tolist() == [int(mujoco.mjtTrn.mjTRN_TENDON)] * 2 and m.actuator_trnid[:, 0].tolist() == [0, 1]
    np.testing.assert_allclose(m.actuator_gear[:, 0], [1.0, 2.0])
    np.testing.assert_allclose(m.actuator_biasprm[0, :3], [0.0, -5.0, -0.2])


SPATIAL = """<mujoco>
  <worldbody>
    <site name="top" pos="0 0 2"/>
    <body name="bob" pos="0 0 1">
      <joint name="swing" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/>
      <site name="bob" pos="0 0 0"/>
    </body>
  </worldbody>
  <tendon><spatial name="rope"><site site="top"/><site site="bob"/></spatial></tendon>
</mujoco>"""


@pytest.mark.parametrize("xml,match", [
    (SPATIAL, "tendon 'rope': a spatial tendon"),
    (COUPLED.replace('damping="0.01">', 'damping="0.01" armature="0.1">'), r"tendon 'bend': armature \(0.1\)"),
    (COUPLED.replace("</mujoco>", '<actuator><motor tendon="bend" gear="1"/></actuator></mujoco>').replace(
        'damping="0.01">', 'damping="0.01" actuatorfrclimited="true" actuatorfrcrange="-1 1">'),
     "tendon 'bend''s actuator force limit"),
    (PENDULUM.replace('<joint name="pivot" type="hinge" axis="0 1 0" frictionloss="0.4"/>',
                      '<joint name="pivot" type="free" frictionloss="0.4"/>'), "joint friction loss 0.4"),
])
def test_what_the_world_cannot_hold_is_refused_by_name(xml, match):
    with pytest.raises(ValueError, match=match):
        mjcf.from_mjcf(xml)
