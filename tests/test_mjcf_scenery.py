"""Fixed scenery from MuJoCo files (``worlds.mjcf``; docs/worlds.md "Fixed scenery"): geoms on the
world body and bodies without a joint load as fixed bodies at MuJoCo's compiled pose with their
friction, hinges to them become hinges to the world, ``to_mjcf`` writes fixed bodies back as
bodies without a joint; the repository's example files (a ramp, a table, a walled bin) against
the hand calculation and MuJoCo C."""

from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import worlds  # noqa: E402
from jaxcontact.rotations import quat_to_mat  # noqa: E402
from jaxcontact.worlds import mjcf, scenes  # noqa: E402

SCENES = Path(__file__).resolve().parents[1] / "jaxcontact" / "data" / "scenes"


def _scene_file(name):
    return str(SCENES / name)


def _placed(state, params, i):
    """Body ``i``'s valid vertices in the world, placed by the state."""
    v = np.asarray(params.body.vertices[i])[np.asarray(params.body.vertex_mask[i]) > 0]
    return np.asarray(state.pos[i]) + v @ np.asarray(quat_to_mat(state.quat[i])).T


def _corners(m, d, g):
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    return d.geom_xpos[g] + (signs * m.geom_size[g]) @ d.geom_xmat[g].reshape(3, 3).T


def test_world_geoms_and_jointless_bodies_load_as_fixed_bodies_at_mujocos_pose():
    """The walled bin: its four wall geoms on the world body are fixed bodies 4–7 (after MuJoCo's
    bodies, named by their geoms), their corners MuJoCo's to 1e-12, at rest; no pair of two walls;
    every box with every wall and every other box; the floor is the ground. The table of
    box_on_table.xml (a body without a joint) is fixed body 0 at MuJoCo's xipos."""
    path = _scene_file("walled_bin.xml")
    scene, params, state, _ = mjcf.from_mjcf(path, dtype=jnp.float64)
    m = mujoco.MjModel.from_xml_path(path)
    d = mjcf.mujoco_data(m)
    assert scene.fixed == (4, 5, 6, 7) and scene.ground
    assert scene.names[4:] == ("wall_east", "wall_west", "wall_north", "wall_south")
    for k, i in enumerate(scene.fixed):
        g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, scene.names[i])
        np.testing.assert_allclose(_placed(state, params, i), _corners(m, d, g), atol=1e-12)
        assert not np.any(np.asarray(state.vel[i])) and not np.any(np.asarray(state.omega[i]))
    assert all(not (a in scene.fixed and b in scene.fixed) for a, b in scene.pairs)
    assert len(scene.pairs) == 4 * 4 + 6

    path = _scene_file("box_on_table.xml")
    scene, params, state, _ = mjcf.from_mjcf(path, dtype=jnp.float64)
    m = mujoco.MjModel.from_xml_path(path)
    d = mjcf.mujoco_data(m)
    assert scene.fixed == (0,) and scene.names == ("table", "box") and scene.pairs == ((0, 1),)
    np.testing.assert_allclose(np.asarray(state.pos[0]), d.xipos[1], atol=1e-12)
    np.testing.assert_allclose(_placed(state, params, 0), _corners(m, d, 0 + 1), atol=1e-12)


def test_fixed_bodies_keep_their_friction_and_hinges_to_them_become_hinges_to_the_world():
    """A ramp geom of μ 0.1 beside a box of μ 0.4: per-body friction (0.4, 0.1), and the
    FrictionRuleWarning names the pair (MuJoCo's max against the geometric mean). A door hinged
    to a frame without a joint: the frame is fixed and the hinge's parent is the world (−1), its
    anchor and axis MuJoCo's in the world."""
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1" friction="0.4 0.005 0.0001"/>
      <geom name="ramp" type="box" size="1 .3 .05" pos="0 0 1" euler="0 20 0" friction="0.1 0.005 0.0001"/>
      <body name="box" pos="0 0 1.2"><freejoint/><geom type="box" size=".05 .05 .05" friction="0.4 0.005 0.0001"/>
      </body></worldbody></mujoco>"""
    with pytest.warns(mjcf.FrictionRuleWarning, match="'box' and 'ramp'"):
        scene, params, state, _ = mjcf.from_mjcf(xml, dtype=jnp.float64)
    assert scene.fixed == (1,)
    np.testing.assert_allclose(np.asarray(params.body.friction), [0.4, 0.1])

    door = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
      <body name="frame" pos="0 0 1" euler="0 0 30"><geom type="box" size=".05 .05 1"/>
        <body name="door" pos="0.3 0 0"><joint type="hinge" pos="-0.25 0 0" axis="0 0 1"/>
          <geom type="box" size=".2 .02 .5" pos="0 0 0"/></body></body></worldbody></mujoco>"""
    scene, params, state, _ = mjcf.from_mjcf(door, dtype=jnp.float64)
    m = mujoco.MjModel.from_xml_string(door)
    d = mjcf.mujoco_data(m)
    assert scene.fixed == (0,) and scene.joints.parent == (-1,) and scene.joints.child == (1,)
    np.testing.assert_allclose(np.asarray(params.joints.anchor_parent[0]), d.xanchor[0], atol=1e-12)
    np.testing.assert_allclose(np.asarray(params.joints.axis_parent[0]), d.xaxis[0], atol=1e-12)
    assert scene.pairs == ((0, 1),)  # MuJoCo collides a body with its parent when the parent is welded to the world


def test_a_box_slides_down_the_mjcf_ramp_as_the_hand_calculation_and_mujoco_say():
    """ramp.xml (θ = 0.4 rad, μ = 0.2), 0.5 s: the box moves a t²/2 (1 + 1/T) down the slope (the
    semi-implicit Euler sum, a = g (sin θ − μ cos θ)), to 0.5 %; MuJoCo C (its default soft contact
    and pyramidal cone) moves it 0.4 % less than a t²/2 (measured: the box first sinks 0.22 mm into
    its soft contact, and the cone's pyramid is not Coulomb's disc): the two within 1.5 % (3.8 mm of
    25 cm). The ramp stays where the file puts it."""
    path = _scene_file("ramp.xml")
    scene, params, state, model = mjcf.from_mjcf(path, dtype=jnp.float64)
    T, angle = 250, 0.4
    traj, info = worlds.rollout(model, scene, params, state, T)
    down = scenes.ramp_axes(angle)[0]
    moved = float((traj.pos[-1, 0] - traj.pos[0, 0]) @ down)
    a = model.gravity * (np.sin(angle) - 0.2 * np.cos(angle))
    t = T * model.dt
    np.testing.assert_allclose(moved, 0.5 * a * t * t * (1 + 1 / T), rtol=5e-3)
    assert np.array_equal(np.asarray(traj.pos[-1, 1]), np.asarray(state.pos[1]))
    assert not np.any(np.asarray(info.flags))
    m = mujoco.MjModel.from_xml_path(path)
    d = mjcf.mujoco_data(m)
    x0 = d.xpos[1].copy()
    for _ in range(T):
        mujoco.mj_step(m, d)
    theirs = float((d.xpos[1] - x0) @ down)
    np.testing.assert_allclose(moved, theirs, rtol=1.5e-2)


def test_to_mjcf_writes_fixed_bodies_without_joints_and_reads_them_back():
    """``scenes.ramp``'s fixed ramp is written as a body without a joint (MuJoCo welds it to the
    world: one free joint in the model, the ramp's weld id 0), and reads back as fixed body 0 at the
    same pose with the same hull."""
    scene, params, state = scenes.ramp(0.3, 0.2)
    xml = mjcf.to_mjcf(scene, params, state)
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.njnt == 1 and m.body_weldid[1] == 0 and m.body_weldid[2] == 2
    back, p2, s2, _ = mjcf.from_mjcf(xml, dtype=jnp.float64)
    assert back.fixed == (0,) and back.pairs == ((0, 1),)
    np.testing.assert_allclose(np.asarray(s2.pos), np.asarray(state.pos), atol=1e-12)
    np.testing.assert_allclose(np.asarray(s2.quat), np.asarray(state.quat), atol=1e-12)
    np.testing.assert_allclose(_placed(s2, p2, 0), _placed(state, params, 0), atol=1e-12)


def test_simulate_mjcf_keeps_fixed_bodies_at_rest_in_perturbed_worlds(tmp_path, capsys):
    """``simulate --mjcf box_on_table.xml --worlds 2``: world 1's velocities are perturbed for its free
    body only (a fixed body given a velocity is refused); the table stays exactly where the file
    puts it in both worlds, every step."""
    from jaxcontact.cli import main

    out = tmp_path / "table.npz"
    assert main(["simulate", "--mjcf", _scene_file("box_on_table.xml"), "--steps", "20", "--worlds", "2",
                 "--out", str(out), "--no-progress"]) == 0
    states = np.load(out)["states"]
    assert states.shape == (2, 21, 2, 13)
    np.testing.assert_array_equal(states[:, :, 0, :3], np.broadcast_to([0.0, 0.0, 0.5], (2, 21, 3)))
    assert np.abs(states[1, -1, 1, :2] - states[0, -1, 1, :2]).max() > 1e-5  # the box's world 1 moved differently
