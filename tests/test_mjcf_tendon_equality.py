"""MuJoCo's tendon equalities from MJCF (``<equality><tendon>``: L₁ − L₁⁰ = p(L₂ − L₂⁰) over fixed tendons,
``tendons.Tendons.equal``): a bilateral row of the joints' system, against MuJoCo C; written back with
the polynomial moved to the written file's reference lengths; bad coefficients refused and flagged."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.types import Flags
from jaxcontact.worlds import joints as world_joints
from jaxcontact.worlds.tendons import Tendons

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

# two hinged links and a slider: link a's angle tied to link b's and the slider's by a quadratic (two tendons),
# the slider held 5 cm up by a one-tendon equality; the keyframe starts a off the relation by 12 mrad
XML = """<mujoco><option timestep="0.002"/>
  <worldbody>
    <body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".02" mass="1" contype="0" conaffinity="0"/></body>
    <body name="b" pos="0.6 0 1"><joint name="jb" type="hinge" axis="0 1 0" damping=".05"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass=".5" contype="0" conaffinity="0"/></body>
    <body name="c" pos="1.2 0 1"><joint name="jc" type="slide" axis="0 0 1"/>
      <geom type="box" size=".05 .05 .05" mass=".3" contype="0" conaffinity="0"/></body>
  </worldbody>
  <tendon><fixed name="ta"><joint joint="ja" coef="1"/></fixed>
    <fixed name="tb"><joint joint="jb" coef="1"/><joint joint="jc" coef="-2"/></fixed>
    <fixed name="tc"><joint joint="jc" coef="1"/></fixed></tendon>
  <equality><tendon tendon1="ta" tendon2="tb" polycoef="0 0.5 0.3 0 0" solref="0.004 1"/>
    <tendon tendon1="tc" polycoef="0.05 0 0 0 0" solref="0.004 1" active="ACTIVE"/></equality>
  <keyframe><key qpos="0.065 0.2 0.05" qvel="2 0 0"/></keyframe></mujoco>"""


def relation(scene, params, state):
    """Both equalities' errors at ``state``: a − 0.5 x − 0.3 x² with x = b − 2c, and c − 0.05."""
    q = np.asarray(world_joints.coordinates(scene.joints, params.joints, state)[0])
    x = q[1] - 2 * q[2]
    return np.array([q[0] - 0.5 * x - 0.3 * x * x, q[2] - 0.05])


def test_tendon_equalities_follow_mujoco_c_and_write_back():
    """Over 200 steps from a start 12 mrad off the relation, the bodies follow MuJoCo C within 0.5 mm
    (MuJoCo's equality is soft, ours a row with the joints' Baumgarte pull) and the relations hold to
    1e-4 at the end; without the equalities the same start ends more than 10 mm from MuJoCo's. The
    written file holds the same relations (MuJoCo's errors at its start equal the original's) and reads
    back to the same world (1e-12)."""
    m = mujoco.MjModel.from_xml_string(XML.replace("ACTIVE", "true"))
    d = mjcf.mujoco_data(m, keyframe=0)
    start = d.efc_pos[:d.nefc].copy()
    ref, _ = mjcf.mujoco_trajectory(m, d, 200)
    scene, params, state, model = mjcf.from_mujoco(m, keyframe=0)
    assert scene.joints.tendons.equal == ((0, 1), (2, -1))
    np.testing.assert_allclose(relation(scene, params, state), [0.012, 0.0], atol=1e-12)
    traj, info = worlds.rollout(model, scene, params, state, 200)
    assert not np.any(np.asarray(info.flags))
    assert np.max(np.abs(np.asarray(traj.pos) - ref)) < 5e-4
    last = jax.tree_util.tree_map(lambda x: x[-1], traj)
    assert np.max(np.abs(relation(scene, params, last))) < 1e-4
    free = mjcf.from_mujoco(mujoco.MjModel.from_xml_string(XML.replace("ACTIVE", "false").replace(
        'polycoef="0 0.5 0.3 0 0"', 'polycoef="0 0.5 0.3 0 0" active="false"')), keyframe=0)
    loose, _ = worlds.rollout(free[3], free[0], free[1], free[2], 200)
    assert np.max(np.abs(np.asarray(loose.pos[-1]) - ref[-1])) > 1e-2
    text = mjcf.to_mjcf(scene, params, state, model)
    mm = mujoco.MjModel.from_xml_string(text)
    dd = mjcf.mujoco_data(mm, keyframe=0)
    np.testing.assert_allclose(dd.efc_pos[:dd.nefc], start, atol=1e-12)
    back = mjcf.from_mjcf(text, keyframe="initial")
    again, _ = worlds.rollout(back[3], back[0], back[1], back[2], 200)
    np.testing.assert_allclose(np.asarray(again.pos), np.asarray(traj.pos), atol=1e-12)


def test_bad_tendon_equality_coefficients_are_refused_and_flagged_under_jit():
    """A non-finite polynomial coefficient: refused by name eagerly, ``Flags.INVALID_INPUT`` under ``jit``;
    an equality naming a tendon twice is refused by ``Tendons``."""
    scene, params, state, model = mjcf.from_mjcf(XML.replace("ACTIVE", "true"), keyframe=0)
    tp = params.joints.tendons
    bad = params.replace(joints=params.joints.replace(tendons=tp.replace(polycoef=tp.polycoef.at[0, 1].set(jnp.nan))))
    with pytest.raises(ValueError, match="params.joints.tendons.polycoef"):
        worlds.rollout(model, scene, bad, state, 2)
    step = jax.jit(lambda p: worlds.step_with_info(model, scene, p, state)[1].flags)
    assert int(step(bad)) & int(Flags.INVALID_INPUT) and not int(step(params))
    with pytest.raises(ValueError, match="Tendons.equal"):
        Tendons(joints=((0,), (1,)), equal=((1, 1),))


# a tendon actuator in a world whose jointless, massive "weight" is welded to its link by rows: the
# actuator's index (J + t) counts the weld among the world's joints
WELDED = """<mujoco><option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 0 1"/>
      <geom type="box" size=".2 .02 .02" pos=".2 0 0" mass="1" contype="0" conaffinity="0"/>
      <body name="weight" pos=".4 0 0"><geom type="sphere" size=".05" mass="2" contype="0" conaffinity="0"/></body></body>
    <body name="b" pos="1 0 1"><joint name="jb" type="hinge" axis="0 0 1"/>
      <geom type="box" size=".2 .02 .02" pos=".2 0 0" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="ja" coef="1"/><joint joint="jb" coef="-1"/></fixed></tendon>
  <actuator><motor tendon="t" gear="2"/></actuator>
  <keyframe><key ctrl="0.5"/></keyframe></mujoco>"""


def test_a_tendon_actuator_beside_a_welded_body_drives_its_tendon():
    """The motor on tendon t drives index J + t of ``Joints.actuated`` (J the hinges and the weld): the
    two links turn opposite ways as in MuJoCo C (0.1 mm over 100 steps, the weld held by rows)."""
    m = mujoco.MjModel.from_xml_string(WELDED)
    d = mjcf.mujoco_data(m, keyframe=0)
    scene, params, state, model = mjcf.from_mujoco(m, keyframe=0)
    assert scene.joints.kinds.count("welded") == 1 and scene.joints.actuated == (scene.joints.num_joints,)
    ref, _ = mjcf.mujoco_trajectory(m, d, 100)
    traj, _ = worlds.rollout(model, scene, params, state, 100)
    assert np.max(np.abs(ref[-1] - ref[0])) > 0.05
    np.testing.assert_allclose(np.asarray(traj.pos), ref, atol=1e-4)
