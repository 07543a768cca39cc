"""MuJoCo's mocap bodies (moved only by the user, through ``data.mocap_pos``) load as fixed bodies
(``Scene.fixed``) at their compiled or keyframe pose: a box dropped on a mocap table rests on it as
in MuJoCo C, and the world writes back with the table as a jointless body."""

import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import worlds  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402

STEPS = 100
FOLLOW = 0.01  # m: the corpus bar (issue 63)

# The table top is a mocap body; the keyframe moves it (mpos) to 0.25 m, where the box lands.
WORLD = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05"/>
    <body name="table" mocap="true" pos="0 0 0.2">
      <geom type="box" size="0.3 0.3 0.02"/>
    </body>
    <body name="box" pos="0.05 0 0.35">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.4"/>
    </body>
  </worldbody>
  <keyframe><key name="up" qpos="0.05 0 0.35 1 0 0 0" mpos="0 0 0.25"/></keyframe>
</mujoco>
"""


@pytest.mark.parametrize("key, top", [(None, 0.2), ("up", 0.25)])
def test_a_mocap_body_is_fixed_scenery_where_its_mocap_pose_puts_it(key, top):
    scene, params, state, model = worlds.from_mjcf(WORLD, keyframe=key, dtype=jnp.float64)
    assert scene.fixed == (0,) and scene.pairs == ((0, 1),) and scene.names == ("table", "box")
    np.testing.assert_allclose(np.asarray(state.pos[0]), [0.0, 0.0, top], atol=1e-12)
    m = mujoco.MjModel.from_xml_string(WORLD)
    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    theirs = [d.xipos[1:].copy()]
    for _ in range(STEPS):
        mujoco.mj_step(m, d)
        theirs.append(d.xipos[1:].copy())
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    mine = np.asarray(traj.pos)
    assert np.max(np.linalg.norm(mine - np.stack(theirs), axis=-1)) < FOLLOW
    np.testing.assert_array_equal(mine[:, 0], np.asarray(state.pos[0])[None].repeat(STEPS + 1, 0))  # never moved
    assert mine[-1, 1, 2] == pytest.approx(top + 0.02 + 0.05, abs=2e-4)  # the box rests on the top
    if key is None:  # written back: the table a jointless body of the world (fixed), the same world
        back = worlds.from_mjcf(mjcf.to_mjcf(scene, params, state, model), keyframe="initial", dtype=jnp.float64)
        assert back[0].fixed == (0,) and back[0].pairs == scene.pairs
        np.testing.assert_allclose(np.asarray(back[2].pos), np.asarray(state.pos), atol=1e-12)
