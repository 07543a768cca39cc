"""Bodies that collide with nothing (``Scene.contactless``): MuJoCo bodies without a colliding geom
(links of inertia only, or of visual geoms) load with MuJoCo's mass and inertia, move, and touch
nothing: not the ground (a link swings through the floor, as in MuJoCo), not other bodies; the
file follows MuJoCo C and writes back (``to_mjcf``)."""

import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import shapes, worlds  # noqa: E402
from jaxcontact.rotations import quat_to_mat  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402
from jaxcontact.worlds.scene import Scene, make_scene  # noqa: E402

STEPS = 100
FOLLOW = 0.01  # m: the corpus bar (issue 63): within 10 mm of MuJoCo C over 100 steps

# A two-link arm hinged 0.1 m above the floor whose links have no colliding geom (the upper a visual
# capsule, the lower an <inertial> alone): started horizontal, it swings down through the floor,
# which it does not touch in MuJoCo. A free body without a colliding geom falls through the floor;
# a box (which collides) lands on it, and the lower link sweeps through the box's place untouched.
ARM = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05"/>
    <body name="upper" pos="0 0 0.1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" contype="0" conaffinity="0" mass="0.5"/>
      <body name="lower" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <inertial pos="0.15 0 0" mass="0.3" diaginertia="0.001 0.003 0.003"/>
      </body>
    </body>
    <body name="ghost" pos="-0.5 0 0.05">
      <freejoint/>
      <inertial pos="0 0 0" mass="0.2" diaginertia="0.001 0.002 0.003"/>
      <geom type="sphere" size="0.05" contype="0" conaffinity="0" group="1"/>
    </body>
    <body name="box" pos="0.45 0 0.06">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.2"/>
    </body>
  </worldbody>
</mujoco>
"""


def _mujoco_path(xml, steps):
    m = mujoco.MjModel.from_xml_string(xml)
    return m, mjcf.mujoco_trajectory(m, mjcf.mujoco_data(m), steps)[0]


def test_bodies_without_colliding_geoms_load_move_through_the_floor_and_follow_mujoco():
    scene, params, state, model = worlds.from_mjcf(ARM, dtype=jnp.float64)
    m, theirs = _mujoco_path(ARM, STEPS)
    assert scene.contactless == (0, 1, 2) and scene.names[:3] == ("upper", "lower", "ghost")
    assert scene.pairs == ()  # the box's only candidates collide with nothing
    for i in range(3):  # MuJoCo's mass and inertia (in the body frame at the centre of mass)
        assert float(params.body.mass[i]) == pytest.approx(m.body_mass[i + 1], rel=1e-12)
        R = np.asarray(quat_to_mat(np.asarray(m.body_iquat[i + 1], float)))
        np.testing.assert_allclose(np.asarray(params.body.inertia[i]), R @ np.diag(m.body_inertia[i + 1]) @ R.T, atol=1e-15)
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    mine = np.asarray(traj.pos)
    assert np.max(np.linalg.norm(mine - theirs, axis=-1)) < FOLLOW
    # the lower link's centre of mass passes below the floor (it would rest on it if it collided),
    # and the ghost falls through it freely
    assert mine[-1, 1, 2] < -0.05 and theirs[-1, 1, 2] < -0.05
    h, n = model.dt, STEPS
    assert mine[-1, 2, 2] == pytest.approx(0.05 - 9.81 * h * h * n * (n + 1) / 2, abs=1e-9)
    # the box collides: it rests on the floor at its half height
    assert mine[-1, 3, 2] == pytest.approx(0.05, abs=2e-4)


def test_a_body_without_colliding_geom_falls_through_the_floor_on_the_per_body_route():
    """No joints and no pairs: each body's own contact solve (``pipeline``'s per-body route); the
    body that collides with nothing still falls freely, the box beside it lands."""
    xml = ARM.split('<body name="upper"')[0] + ARM[ARM.index('<body name="ghost"'):]
    scene, params, state, model = worlds.from_mjcf(xml, dtype=jnp.float64)
    assert scene.joints is None and scene.pairs == () and scene.contactless == (0,)
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    h, n = model.dt, STEPS
    assert float(traj.pos[-1, 0, 2]) == pytest.approx(0.05 - 9.81 * h * h * n * (n + 1) / 2, abs=1e-9)
    assert float(traj.pos[-1, 1, 2]) == pytest.approx(0.05, abs=2e-4)


def test_a_body_without_colliding_geom_falls_through_the_floor_beside_a_tilted_plane():
    """With a tilted plane in the world the ground and the plane are the world's surfaces
    (``contacts.surfaces``): the body that collides with nothing falls through both, the box lands."""
    ramp = '<geom name="ramp" type="plane" size="0 0 0.05" pos="0 0 -1" euler="0 5 0"/>\n    '  # far below, tilted
    xml = ARM.split('<body name="upper"')[0] + ramp + ARM[ARM.index('<body name="ghost"'):]
    scene, params, state, model = worlds.from_mjcf(xml, dtype=jnp.float64)
    assert scene.contactless == (0,) and scene.planes == 1
    traj, _ = worlds.rollout(model, scene, params, state, STEPS)
    h, n = model.dt, STEPS
    assert float(traj.pos[-1, 0, 2]) == pytest.approx(0.05 - 9.81 * h * h * n * (n + 1) / 2, abs=1e-9)
    assert float(traj.pos[-1, 1, 2]) == pytest.approx(0.05, abs=2e-4)


def test_contactless_bodies_write_back_and_are_refused_in_pairs():
    scene, params, state, model = worlds.from_mjcf(ARM, dtype=jnp.float64)
    text = mjcf.to_mjcf(scene, params, state, model)
    back = worlds.from_mjcf(text, keyframe="initial", dtype=jnp.float64)
    assert back[0].contactless == scene.contactless and back[0].pairs == scene.pairs
    for a, b in ((back[1].body.mass, params.body.mass), (back[1].body.inertia, params.body.inertia),
                 (back[2].pos, state.pos), (back[2].quat, state.quat)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)
    boxes = [shapes.box(0.1), shapes.box(0.1)]
    s, _ = make_scene(boxes, contactless=[1])
    assert s.pairs == () and list(s.contactless_bodies) == [False, True]
    with pytest.raises(ValueError, match="collides with nothing"):
        Scene(topologies=s.topologies, pairs=((0, 1),), contactless=(1,))
    with pytest.raises(ValueError, match="contactless: body 2 is out of range"):
        make_scene(boxes, contactless=[2])
    # a moving body with neither a colliding geom nor mass (MuJoCo compiles one whose welded child
    # carries the mass) is refused by name
    m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body name="a"><joint type="hinge"/><body name="b">'
                                       '<geom size="0.1"/></body></body></worldbody></mujoco>')
    with pytest.raises(ValueError, match="body 'a' has no colliding geom and no mass or inertia"):
        mjcf.inertia_box(mujoco, m, 1, "body 'a'", False)
