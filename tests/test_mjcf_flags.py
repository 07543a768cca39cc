"""MuJoCo's option flags that switch collisions off (``<flag contact="disable"/>``, ``constraint="disable"``):
a world that collides nothing, as MuJoCo's; constraints a disabled solver would drop refused by name."""

import numpy as np
import pytest

from jaxcontact import worlds

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

# a box resting on the floor, a ball inside it, a wall beside them: with contacts off all of them fall freely
XML = """<mujoco><option timestep="0.002"><flag contact="disable"/></option>
  <worldbody><geom type="plane" size="1 1 .1"/><geom type="plane" pos="1 0 0" zaxis="-1 0 0" size="1 1 .1"/>
    <body name="box" pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1" mass="1"/></body>
    <body name="ball" pos=".05 0 .1"><freejoint/><geom type="sphere" size=".05" mass=".5"/></body>
  </worldbody></mujoco>"""


def test_contacts_disabled_collide_nothing_as_mujoco_and_disabled_constraints_are_refused():
    """With MuJoCo's contacts off the world has no ground, no pairs and no tilted planes, and its bodies
    fall through the floor and each other as MuJoCo C's do (1e-9 m over 100 steps); with its constraints
    off beside a joint limit the file is refused in one line naming the flag."""
    scene, params, state, model = mjcf.from_mjcf(XML)
    assert not scene.ground and scene.pairs == () and scene.planes == 0
    m = mujoco.MjModel.from_xml_string(XML)
    d = mjcf.mujoco_data(m)
    ref, _ = mjcf.mujoco_trajectory(m, d, 100)
    traj, _ = worlds.rollout(model, scene, params, state, 100)
    assert ref[-1, 0, 2] < 0.0
    np.testing.assert_allclose(np.asarray(traj.pos), ref, atol=1e-9)
    limited = XML.replace('contact="disable"', 'constraint="disable"').replace(
        '</worldbody>', '<body name="arm" pos="0 0 2"><joint type="hinge" range="-1 1"/><geom type="capsule" '
        'fromto="0 0 0 .3 0 0" size=".02"/></body></worldbody>')
    with pytest.raises(ValueError, match="option flag constraint disabled beside joint limits") as e:
        mjcf.from_mjcf(limited)
    assert "\n" not in str(e.value)
