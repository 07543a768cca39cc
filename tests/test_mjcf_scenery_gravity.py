"""Two MJCF load blockers of the public corpus (issue 63 item 4): a file of fixed scenery alone (a
world whose bodies are all held, or of no bodies at all), and gravity off the
vertical (``Model.gravity_xy``, MuJoCo's ``opt.gravity`` x and y)."""

import jax
import numpy as np
import pytest

from jaxcontact import stages, worlds
from jaxcontact.types import Model

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402


def test_a_file_of_fixed_scenery_alone_loads_and_so_does_one_of_nothing():
    """Geoms on the world body and nothing else: a world of fixed bodies that stay where they are;
    a file with only a floor, or only assets, is a world of no bodies (as MuJoCo's: nothing moves),
    which steps, batches and writes back, its states of shape (steps + 1, 0, ...)."""
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
      <geom name="table" type="box" size=".4 .3 .02" pos="0 0 .5"/>
      <geom name="post" type="cylinder" size=".02 .25" pos=".3 .2 .25"/></worldbody></mujoco>"""
    scene, params, state, model = mjcf.from_mjcf(xml)
    assert scene.num_bodies == 2 and scene.fixed == (0, 1) and scene.names == ("table", "post")
    traj, info = worlds.rollout(model, scene, params, state, 3)
    np.testing.assert_array_equal(np.asarray(traj.pos), np.broadcast_to(np.asarray(state.pos), (4, 2, 3)))
    assert not np.any(np.asarray(info.flags))
    for body in ('<geom type="plane" size="1 1 .1"/>', ""):
        xml = f'<mujoco><option timestep="0.005"/><asset><material name="m"/></asset><worldbody>{body}</worldbody></mujoco>'
        scene, params, state, model = mjcf.from_mjcf(xml)
        assert scene.num_bodies == 0 and state.pos.shape == (0, 3) and state.quat.shape == (0, 4) and model.dt == 0.005
        traj, info = worlds.rollout(model, scene, params, state, 4)
        assert traj.pos.shape == (5, 0, 3) and traj.quat.shape == (5, 0, 4) and not np.any(np.asarray(info.flags))
        states = jax.tree_util.tree_map(lambda x: np.stack([x, x, x]), state)
        btraj, binfo = worlds.batch_rollout(model, scene, params, states, 2)
        assert btraj.pos.shape == (3, 3, 0, 3) and not np.any(np.asarray(binfo.flags))
        back = mjcf.from_mjcf(mjcf.to_mjcf(scene, params, state, model), keyframe="initial")
        assert back[0].num_bodies == 0 and back[3].dt == 0.005


# a frictionless floor under gravity (3, −1, −9.81): a box slides on it with gravity's horizontal part,
# a sphere far above falls freely; MuJoCo's semi-implicit Euler and the world's give the same sums
GRAVITY = """<mujoco><option timestep="0.002" gravity="3 -1 -9.81"/>
  <worldbody><geom name="floor" type="plane" size="0 0 .1" condim="1"/>
    <body name="box" pos="0 0 .05"><freejoint/><geom type="box" size=".05 .05 .05" mass="1" condim="1"/></body>
    <body name="ball" pos="2 0 5"><freejoint/><geom type="sphere" size=".05" mass="1" condim="1"/></body>
  </worldbody></mujoco>"""


def test_gravity_off_the_vertical_follows_mujoco_c_and_writes_back():
    """``opt.gravity`` (3, −1, −9.81): the world's ``Model.gravity_xy`` is (3, −1); over 100 steps the
    free ball is where semi-implicit Euler puts it (x₀ + h² g n(n+1)/2, 1e-12 m) and where MuJoCo C
    puts it (1e-9 m); the box slides on the frictionless floor with (3, −1) as in MuJoCo C (1e-9 m)
    and stays on it (MuJoCo's soft floor lets it sink 0.17 mm); the ball's energy −m g·x + ½ m v² loses exactly
    semi-implicit Euler's m |g|² h² n / 2 (|g|² with the horizontal part); ``to_mjcf``
    writes the gravity back. ``Model.gravity_xy`` that is not two finite numbers is refused by name."""
    scene, params, state, model = mjcf.from_mjcf(GRAVITY)
    assert model.gravity_xy == (3.0, -1.0) and model.gravity == 9.81
    n, h = 100, 0.002
    traj, info = worlds.rollout(model, scene, params, state, n)
    g = np.array([3.0, -1.0, -9.81])
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 1]), [2.0, 0.0, 5.0] + h * h * g * n * (n + 1) / 2, atol=1e-12)
    m = mujoco.MjModel.from_xml_string(GRAVITY)
    ref, _ = mjcf.mujoco_trajectory(m, mjcf.mujoco_data(m), n)
    np.testing.assert_allclose(np.asarray(traj.pos[:, 1]), ref[:, 1], atol=1e-9)
    np.testing.assert_allclose(np.asarray(traj.pos[:, 0, :2]), ref[:, 0, :2], atol=1e-9)
    np.testing.assert_allclose(np.asarray(traj.pos[:, 0, 2]), ref[:, 0, 2], atol=5e-4)  # MuJoCo's soft floor: 0.17 mm
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 0, :2]), h * h * g[:2] * n * (n + 1) / 2, rtol=1e-9)
    assert abs(float(traj.pos[-1, 0, 2]) - 0.05) < 1e-6  # on the floor
    assert not np.any(np.asarray(info.flags))
    one = lambda t: (params.replace(body=jax.tree_util.tree_map(lambda x: x[1], params.body)),
                     jax.tree_util.tree_map(lambda x: x[t, 1], traj))
    e0, e1 = (float(stages.energy(model, *one(t))) for t in (0, n))
    assert abs((e1 - e0) - (-g @ g * h * h * n / 2)) < 1e-9  # semi-implicit Euler's loss: −m |g|² h² n / 2
    back = mjcf.from_mjcf(mjcf.to_mjcf(scene, params, state, model))[3]
    assert back.gravity_xy == (3.0, -1.0) and back.gravity == 9.81
    for bad in ((1.0,), (0.0, float("nan")), [0.0, 0.0]):
        with pytest.raises(ValueError, match="Model.gravity_xy must be a tuple of two finite numbers"):
            Model(law=model.law, gravity_xy=bad)
