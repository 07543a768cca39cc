"""A ball joint's friction loss from MJCF (MuJoCo's ``dof_frictionloss`` on each of its three dofs):
three bounded rows of the contact problem (``joints.loss_dofs``), against MuJoCo C and written back."""

import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.worlds import joints as world_joints

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

# a capsule swinging and spinning on a ball joint with a friction loss of 0.2 N·m
XML = """<mujoco><option timestep="0.002"/>
  <worldbody>
    <body name="bob" pos="0 0 1"><joint name="j" type="ball" frictionloss="FL" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 .3 0 -.1" size=".03" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <keyframe><key qpos="1 0 0 0" qvel="1 2 3"/></keyframe></mujoco>"""


def run(xml, steps=300):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mjcf.mujoco_data(m, keyframe=0)
    ref, _ = mjcf.mujoco_trajectory(m, d, steps)
    return ref, mjcf.from_mujoco(m, keyframe=0)


def test_a_ball_joints_friction_loss_follows_mujoco_c_and_writes_back():
    """Over 300 steps the capsule's centre of mass follows MuJoCo C within 5 mm (MuJoCo's friction rows are
    soft), where the friction loss moves MuJoCo's own run by more than 40 mm; the loss is three rows, one per
    dof; ``to_mjcf`` writes it on the ball and reads back the same world (1e-12)."""
    ref, (scene, params, state, model) = run(XML.replace("FL", "0.2"))
    free, _ = run(XML.replace("FL", "0"))
    assert np.max(np.abs(ref - free)) > 0.04
    assert world_joints.loss_dofs(scene.joints) == ((0, 0), (0, 1), (0, 2))
    traj, info = worlds.rollout(model, scene, params, state, 300)
    assert not np.any(np.asarray(info.flags))
    assert np.max(np.abs(np.asarray(traj.pos) - ref)) < 5e-3
    text = mjcf.to_mjcf(scene, params, state, model)
    assert 'frictionloss="0.2"' in text
    back = mjcf.from_mjcf(text, keyframe="initial")
    again, _ = worlds.rollout(back[3], back[0], back[1], back[2], 300)
    np.testing.assert_allclose(np.asarray(again.pos), np.asarray(traj.pos), atol=1e-12)
