"""Worlds from MuJoCo files and back (``jaxcontact.worlds.mjcf``): the loader's frames, masses,
joints, friction and pair table against MuJoCo's own compiled model and its simulation, the
round trip through ``to_mjcf``, refusals by name, and ``simulate --mjcf``."""

import sys
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import collision, shapes, worlds  # noqa: E402
from jaxcontact.rotations import quat_to_mat  # noqa: E402
from jaxcontact.worlds import mjcf, scenes  # noqa: E402
from jaxcontact.worlds.joints import JointedParams, JointParams, Joints  # noqa: E402
from jaxcontact.worlds.scene import make_scene  # noqa: E402
from jaxcontact.types import Ground, Params, State  # noqa: E402
from jaxcontact.laws import CoulombLCP  # noqa: E402

STEPS = 150  # 0.3 s at 2 ms

# Three bodies that never touch each other (excluded pairs): a box hinged to the world at 1 m,
# starting horizontal; a tumbling box 2 m up whose frame is not at its centre of mass (geom offset),
# turned and spinning; a box sliding at 1 m/s on a ground of another friction (0.8 against 0.3).
WORLD = """
<mujoco>
  <option timestep="0.002"/>
  <default><geom friction="0.3 0.005 0.0001"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05" friction="0.8 0.005 0.0001"/>
    <body name="pendulum" pos="0.1 0 1.0">
      <joint name="pivot" type="hinge" pos="-0.1 0 0" axis="0 1 0"/>
      <geom type="box" size="0.1 0.025 0.025" mass="0.185"/>
    </body>
    <body name="tumbler" pos="1 0 2" quat="0.9 0.3 0.2 0.1">
      <freejoint/>
      <geom type="box" size="0.08 0.05 0.03" pos="0.02 -0.01 0.03" quat="0.8 0 0.6 0" mass="0.5"/>
    </body>
    <body name="slider" pos="-1 0 0.05">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="0.37"/>
    </body>
  </worldbody>
  <contact>
    <exclude body1="pendulum" body2="tumbler"/><exclude body1="pendulum" body2="slider"/>
    <exclude body1="tumbler" body2="slider"/>
  </contact>
  <keyframe>
    <key name="moving" qpos="0  1 0 2 0.9 0.3 0.2 0.1  -1 0 0.05 1 0 0 0"
         qvel="0.5  0.3 0.1 2.0 4.0 -3.0 2.0  1.0 0 0 0 0 0"/>
  </keyframe>
</mujoco>
"""


def _load_world():
    with pytest.warns(mjcf.FrictionRuleWarning, match="max"):
        return mjcf.from_mjcf(WORLD, keyframe="moving", dtype=jnp.float64)


def _mj(xml, key=None):
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, key)
    mujoco.mj_forward(m, d)
    return m, d


def test_loaded_bodies_are_mujocos_in_the_world_frame():
    """Each body's vertices, placed by the loaded state (pos, quat), are MuJoCo's geom corners in the
    world; its world-frame inertia is MuJoCo's; the state's velocity is the centre of mass's
    (MuJoCo's free joint moves the body's origin: v_com = v_o + ω × (x_com − x_o))."""
    scene, params, state, model = _load_world()
    m, d = _mj(WORLD, 0)
    assert model.dt == 0.002 and model.gravity == pytest.approx(9.81)
    assert scene.pairs == () and scene.ground and scene.joints == Joints(parent=(-1,), child=(0,))
    for i in range(3):
        b, g = i + 1, i + 1  # geom 0 is the floor
        R = np.asarray(quat_to_mat(state.quat[i]))
        mine = np.asarray(state.pos[i]) + np.asarray(params.body.vertices[i]) @ R.T
        corners = mjcf.BOX_SIGNS * m.geom_size[g]
        theirs = d.geom_xpos[g] + corners @ d.geom_xmat[g].reshape(3, 3).T
        np.testing.assert_allclose(np.sort(mine, axis=0), np.sort(theirs, axis=0), atol=1e-12)
        assert float(params.body.mass[i]) == pytest.approx(m.body_mass[b], rel=1e-12)
        Rm = d.ximat[b].reshape(3, 3)
        np.testing.assert_allclose(R @ np.asarray(params.body.inertia[i]) @ R.T,
                                   Rm @ np.diag(m.body_inertia[b]) @ Rm.T, atol=1e-15)
    # the tumbler's centre-of-mass velocity by a finite difference of MuJoCo's xipos
    d2 = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d2, 0)
    mujoco.mj_integratePos(m, d2.qpos, d2.qvel, 1e-6)
    mujoco.mj_kinematics(m, d2)
    np.testing.assert_allclose(np.asarray(state.vel[1]), (d2.xipos[2] - d.xipos[2]) / 1e-6, atol=1e-5)
    np.testing.assert_allclose(np.asarray(state.omega[1]), [4.0, -3.0, 2.0], atol=1e-12)


def test_loaded_world_moves_as_mujoco_and_slides_with_the_geometric_mean():
    """The hinged pendulum and the tumbler (no contact) follow MuJoCo C's trajectories over 0.3 s;
    the slider stops where μ = √(0.3 · 0.8) says (v²/(2μg)), not where MuJoCo's max rule (0.8) does."""
    scene, params, state, model = _load_world()
    traj, info = worlds.rollout(model, scene, params, state, STEPS)
    m, d = _mj(WORLD, 0)
    for _ in range(STEPS):
        mujoco.mj_step(m, d)
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 0]), d.xipos[1], atol=3e-3)  # pendulum swung down
    assert float(traj.pos[-1, 0, 2]) < 0.99
    # free flight: the centre of mass on jaxcontact's (semi-implicit Euler) parabola exactly; MuJoCo
    # integrates the body's origin, off the centre of mass, so its centre of mass is 2.1 mm off that
    n, h = STEPS, model.dt
    fall = state.pos[1] + state.vel[1] * n * h - np.array([0, 0, 9.81 * h * h * n * (n + 1) / 2])
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 1]), fall, atol=1e-9)
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 1]), d.xipos[2], atol=3e-3)
    mu = np.sqrt(0.3 * 0.8)
    slid = float(traj.pos[-1, 2, 0] - traj.pos[0, 2, 0])
    assert slid == pytest.approx(1.0 / (2 * mu * 9.81), abs=3e-3)
    assert abs(float(traj.vel[-1, 2, 0])) < 1e-3


def _mixed_world():
    """A box, a pentagonal prism (a mesh) and a link hinged to the world, per-body μ, moving."""
    box, prism, link = shapes.box((0.1, 0.08, 0.06), 0.4), shapes.regular_prism(5, 0.06, 0.1, 0.3), shapes.box((0.2, 0.05, 0.05), 0.185)
    bodies = [b.replace(friction=jnp.asarray(mu)) for b, mu in zip((box, prism, link), (0.4, 0.6, 0.5))]
    joints = Joints(parent=(-1,), child=(2,))
    scene, body = make_scene(bodies, pairs=[(0, 1), (1, 2)], joints=joints)
    q = np.array([0.8, 0.2, -0.4, 0.4])
    state = State(pos=jnp.array([[0.0, 0.0, 0.3], [0.3, 0.1, 0.2], [1.1, 0.0, 0.5]]),
                  quat=jnp.array([q / np.linalg.norm(q), [1.0, 0, 0, 0], [1.0, 0, 0, 0]]),
                  vel=jnp.array([[0.5, 0.0, -0.2], [0.0, 0.3, 0.0], [0.0, 0.0, -0.07]]),  # the link: ω × r
                  omega=jnp.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0], [0.0, 0.7, 0.0]]))
    jp = JointParams(anchor_parent=jnp.array([[1.0, 0.0, 0.5]]), anchor_child=jnp.array([[-0.1, 0.0, 0.0]]),
                     axis_parent=jnp.array([[0.0, 1.0, 0.0]]), axis_child=jnp.array([[0.0, 1.0, 0.0]]))
    params = JointedParams(body=body, ground=Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0)),
                           law=CoulombLCP.init_params(mu=0.7), joints=jp)
    return scene, params, state


def test_to_mjcf_round_trip_gives_the_world_back():
    """from_mjcf(to_mjcf(x)) is x: bodies (a box geom, a mesh hull), masses, inertias, per-body μ and
    the ground's, poses and (keyframe "initial") velocities, the pair table and the hinge; MuJoCo's
    own compiled model has the same masses and world inertias."""
    scene, params, state = _mixed_world()
    xml = mjcf.to_mjcf(scene, params, state)
    assert 'type="box"' in xml and 'type="mesh"' in xml and "<exclude" in xml and xml.count("<pair ") == 2 + 3
    with warnings.catch_warnings():  # its <pair>s carry jaxcontact's own mu: nothing differs from MuJoCo
        warnings.simplefilter("error", mjcf.FrictionRuleWarning)
        s2, p2, st2, model = mjcf.from_mjcf(xml, keyframe="initial")
    assert s2.pairs == scene.pairs and s2.joints == scene.joints and s2.ground
    np.testing.assert_allclose(p2.body.mass, params.body.mass, rtol=1e-12)
    np.testing.assert_allclose(p2.body.inertia, params.body.inertia, atol=1e-12)
    np.testing.assert_allclose(p2.body.friction, params.body.friction)
    np.testing.assert_allclose(p2.law.mu, params.law.mu)
    for i in range(3):  # the mesh's vertices come back in MuJoCo's order
        a = np.asarray(params.body.vertices[i])[np.asarray(params.body.vertex_mask[i]) > 0]
        b = np.asarray(p2.body.vertices[i])[np.asarray(p2.body.vertex_mask[i]) > 0]
        np.testing.assert_allclose(np.sort(b, axis=0), np.sort(a, axis=0), atol=1e-12)
    for f in ("pos", "quat", "vel"):
        np.testing.assert_allclose(getattr(st2, f), getattr(state, f), atol=1e-12)
    np.testing.assert_allclose(st2.omega, state.omega, atol=1e-12)
    for leaf_a, leaf_b in zip(jax.tree_util.tree_leaves(p2.joints), jax.tree_util.tree_leaves(params.joints)):
        np.testing.assert_allclose(leaf_a, leaf_b, atol=1e-12)
    m, d = _mj(xml)
    np.testing.assert_allclose(m.body_mass[1:], params.body.mass, rtol=1e-12)
    # without a keyframe: MuJoCo's reset state, the same poses at rest
    _, _, rest, _ = mjcf.from_mjcf(xml)
    np.testing.assert_allclose(rest.pos, state.pos, atol=1e-12)
    assert float(jnp.max(jnp.abs(rest.vel))) == 0.0


def test_the_repositorys_scene_files_are_the_builders_worlds():
    """jaxcontact/data/scenes: the stack and the pyramid load as ``scenes.stack(10)`` and
    ``scenes.pyramid(4)`` (same pair tables, bodies and poses); the hinged links as two links jointed
    to the world and each other, and a box."""
    from importlib.resources import files

    root = files("jaxcontact") / "data" / "scenes"
    for name, (scene, params, state) in (("stack10.xml", scenes.stack(10)), ("pyramid4.xml", scenes.pyramid(4))):
        s2, p2, st2, model = mjcf.from_mjcf(str(root / name))
        assert s2.pairs == scene.pairs and p2.body.friction is None
        np.testing.assert_allclose(p2.body.vertices, params.body.vertices, atol=1e-12)
        np.testing.assert_allclose(st2.pos, state.pos, atol=1e-12)
        np.testing.assert_allclose(p2.law.mu, params.law.mu)
    s, p, st, model = mjcf.from_mjcf(str(root / "hinged_links.xml"))
    assert s.joints == Joints(parent=(-1, 0), child=(0, 1)) and s.pairs == ((0, 2), (1, 2))


def test_pair_table_follows_contype_conaffinity_and_exclude():
    xml = """<mujoco><worldbody><geom type="plane" size="1 1 1" contype="1" conaffinity="1"/>
      <body name="a"><freejoint/><geom type="box" size=".05 .05 .05" contype="1" conaffinity="1"/></body>
      <body name="b" pos="1 0 0"><freejoint/><geom type="box" size=".05 .05 .05" contype="2" conaffinity="1"/></body>
      <body name="c" pos="2 0 0"><freejoint/><geom type="box" size=".05 .05 .05" contype="1" conaffinity="2"/></body>
      <body name="d" pos="3 0 0"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
      </worldbody><contact><exclude body1="a" body2="d"/></contact></mujoco>"""
    scene, *_ = mjcf.from_mjcf(xml)
    # b-a: b's type 2 & a's affinity 1 no, a's type 1 & b's affinity 1 yes; b-c: 2&2 yes; a-d excluded
    assert scene.pairs == ((0, 1), (0, 2), (1, 2), (1, 3), (2, 3))
    assert scene.ground


@pytest.mark.parametrize("snippet, words", [
    ('<body gravcomp="1"><freejoint/><geom type="cylinder" size=".05 .1"/></body>', "gravity compensation"),
    ('<body><joint type="free" frictionloss="0.1"/><geom type="box" size=".05 .05 .05"/></body>',
     "joint friction loss 0.1"),
    ('<body><joint type="slide"/><joint type="ball"/><geom type="box" size=".05 .05 .05"/></body>',
     "one of them a ball"),
    ('<body><joint type="slide"/><joint type="hinge"/><joint type="hinge" axis="1 0 0" pos=".1 0 0"/><geom type="box" '
     'size=".05 .05 .05"/></body>', "hinges through different points on one body beside other joints"),
    ('<body><joint type="free" damping="0.5"/><geom type="box" size=".05 .05 .05"/></body>',
     "joint damping 0.5 (no jaxcontact counterpart on a free joint"),
    ('<body><geom type="plane" size="1 1 .1" zaxis="0 1 1"/></body><body><freejoint/><geom type="box" '
     'size=".05 .05 .05"/></body>', "a plane alone on a body without a joint"),
])
def test_unsupported_elements_are_refused_by_name(snippet, words):
    with pytest.raises(ValueError, match="unsupported in a jaxcontact world") as e:
        mjcf.from_mjcf(f"<mujoco><worldbody>{snippet}</worldbody></mujoco>")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_tendons_tendon_actuators_and_equalities_are_refused_before_any_work():
    xml = """<mujoco><worldbody><body name="a"><joint name="h" type="hinge"/><geom type="box" size=".05 .05 .05"/>
      </body><body name="b" pos="1 0 0"><joint name="h2" type="hinge"/><geom type="box" size=".05 .05 .05"/></body>
      </worldbody><tendon><fixed name="t"><joint joint="h" coef="1"/></fixed></tendon>
      <equality><joint joint1="h" joint2="h2"/></equality><actuator><motor tendon="t"/></actuator></mujoco>"""
    with pytest.raises(ValueError, match="a joint equality"):  # fixed tendons and their actuators load
        mjcf.from_mjcf(xml)


def test_approximate_replaces_round_shapes_and_keeps_bodies_of_several_geoms_compounds():
    """approximate=True: a sphere becomes the hull of points on it (inside it, within 7 % of its
    radius: 0.935 r); two boxes of one body stay a compound of the two (as without approximate, not
    their common hull), with MuJoCo's mass of both."""
    r = 0.05
    xml = f"""<mujoco><worldbody><body><freejoint/><geom type="sphere" size="{r}" mass="1"/></body>
      <body pos="1 0 0"><freejoint/><geom type="box" size=".05 .05 .05" mass="1"/>
      <geom type="box" size=".05 .05 .05" pos=".1 0 0" mass="1"/></body></worldbody></mujoco>"""
    scene, params, state, _ = mjcf.from_mjcf(xml, approximate=True)
    v = np.asarray(params.body.vertices[0])[np.asarray(params.body.vertex_mask[0]) > 0]
    d = np.linalg.norm(v, axis=1)
    assert np.allclose(d, r) and len(v) == len(mjcf.round_points("sphere", [r]))
    from scipy.spatial import ConvexHull

    h = ConvexHull(v)
    assert -np.max(h.equations[:, 3]) > 0.93 * r  # the hull's faces are all within 7 % of the sphere
    both = np.asarray(params.body.vertices[1])[np.asarray(params.body.vertex_mask[1]) > 0]
    assert scene.shapes[1] == "compound" and len(scene.parts[1]) == 2
    assert len(both) == 16 and np.ptp(both[:, 0]) == pytest.approx(0.2)
    assert float(params.body.mass[1]) == pytest.approx(2.0)


def test_approximate_reduces_a_large_mesh_part_of_a_body_of_several_geoms():
    """A mesh of 1,100 hull vertices beside a box in one body: refused by name without approximate (the
    vertex limit), with it a compound whose mesh part keeps ``mjcf.APPROXIMATE_HULL_VERTICES`` extreme
    vertices (``collision.reduce_hull``) and whose box part is the box, MuJoCo's mass of both."""
    k = np.arange(1100) + 0.5
    z, phi = 1 - 2 * k / 1100, np.pi * (1 + 5 ** 0.5) * k
    ball = 0.05 * np.stack([np.sqrt(1 - z * z) * np.cos(phi), np.sqrt(1 - z * z) * np.sin(phi), z], axis=1)
    xml = (f'<mujoco><asset><mesh name="ball" vertex="{" ".join(map(str, ball.ravel()))}"/></asset><worldbody>'
           '<body name="rattle"><freejoint/><geom type="mesh" mesh="ball" mass="1"/>'
           '<geom type="box" size=".02 .02 .05" pos="0 0 .1" mass="0.5"/></body></worldbody></mujoco>')
    with pytest.raises(ValueError, match="'s hull has 1100 vertices, above the engine's limit of 1024"):
        mjcf.from_mjcf(xml)
    scene, params, *_ = mjcf.from_mjcf(xml, approximate=True)
    assert scene.shapes == ("compound",) and [p[0] for p in scene.parts[0]] == ["hull", "hull"]
    (_, a, b, _), (_, c, e, _) = scene.parts[0]
    assert b - a == mjcf.APPROXIMATE_HULL_VERTICES and e - c == 8
    assert float(params.body.mass[0]) == pytest.approx(1.5)


def test_friction_condim_one_is_frictionless_and_one_mu_is_exact():
    box = '<body><freejoint/><geom type="box" size=".05 .05 .05" condim="{c}" friction="{m} 0.005 0.0001"/></body>'
    plane = '<geom type="plane" size="1 1 1" condim="{c}" friction="{m} 0.005 0.0001"/>'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, p, _, _ = mjcf.from_mjcf(f"<mujoco><worldbody>{plane.format(c=1, m=0.9)}{box.format(c=1, m=0.4)}"
                                    "</worldbody></mujoco>")
        assert p.body.friction is None and np.all(np.asarray(p.law.mu) == 0)
        _, p, _, _ = mjcf.from_mjcf(f"<mujoco><worldbody>{plane.format(c=3, m=0.4)}{box.format(c=3, m=0.4)}"
                                    "</worldbody></mujoco>")
        assert p.body.friction is None and np.allclose(p.law.mu, 0.4)
        # condim 1 beside condim 3: MuJoCo's contact takes the larger, so this box slides with μ 0.4 there too
        _, p, _, _ = mjcf.from_mjcf(f"<mujoco><worldbody>{plane.format(c=3, m=0.4)}{box.format(c=1, m=0.4)}"
                                    "</worldbody></mujoco>")
        assert p.body.friction is None and np.allclose(p.law.mu, 0.4)


def test_bad_files_are_one_line_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        mjcf.from_mjcf(tmp_path / "none.xml")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body></worldbody>")
    with pytest.raises(ValueError, match="MuJoCo could not load") as e:
        mjcf.from_mjcf(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="no such keyframe"):
        mjcf.from_mjcf(str(tmp_path / "x.xml") if False else WORLD, keyframe="nope")


def test_a_missing_or_old_mujoco_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)
    with pytest.raises(mjcf.MujocoUnavailable, match=r'pip install "jaxcontact\[mjcf\]"'):
        mjcf.from_mjcf(WORLD)
    monkeypatch.setitem(sys.modules, "mujoco", types.SimpleNamespace(__version__="3.1.6"))
    with pytest.raises(mjcf.MujocoUnavailable, match=r"mujoco >= 4.0, found 3.1.6"):
        mjcf.require_mujoco()
    monkeypatch.setitem(sys.modules, "mujoco", mujoco)
    assert mjcf._version(mujoco.__version__) >= mjcf.MUJOCO_MIN_VERSION  # the one installed passes


def test_pyproject_states_the_lower_bound_the_loader_checks():
    import tomllib
    from pathlib import Path

    py = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    need = ".".join(map(str, mjcf.MUJOCO_MIN_VERSION))
    assert py["project"]["optional-dependencies"]["mjcf"] == [f"mujoco>={need}"]


def test_simulate_mjcf_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    from jaxcontact.cli import main

    out = str(tmp_path / "o.npz")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body>")
    sphere = tmp_path / "sphere.xml"
    sphere.write_text('<mujoco><worldbody><body><freejoint/><geom type="sphere" size=".1"/></body><body><freejoint/>'
                      '<geom type="cylinder" size=".1 .1"/></body></worldbody></mujoco>')
    slide = tmp_path / "slide.xml"
    slide.write_text('<mujoco><worldbody><body><joint type="slide"/><joint type="ball"/><geom type="box" size=".05 .05 .05"/></body>'
                     '</worldbody></mujoco>')
    for argv, words in ((["--mjcf", str(tmp_path / "none.xml")], "no such file"),
                        (["--mjcf", str(bad)], "MuJoCo could not load"),
                        (["--mjcf", str(slide)], "one of them a ball"),
                        (["--mjcf", str(sphere), "--mu", "0.3"], "--mu: a --mjcf world"),
                        (["--worlds", "2"], "--worlds: batches of worlds are for --mjcf"),
                        (["--animate", str(tmp_path / "a.gif")], "--animate: watches a world")):
        assert main(["simulate", *argv, "--out", out]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.slow
def test_simulate_mjcf_command_runs_batched_worlds_and_animates(tmp_path, capsys):
    """A box dropped 0.2 m onto the ground, two worlds: world 0 falls straight as the file says (its
    centre lands at rest 0.05 m up), world 1 with a perturbed velocity; the animation is written."""
    from PIL import Image

    from jaxcontact.cli import main

    xml = tmp_path / "drop.xml"
    xml.write_text('<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body pos="0 0 0.25"><freejoint/>'
                   '<geom type="box" size=".05 .05 .05" mass=".37"/></body></worldbody></mujoco>')
    out, gif = tmp_path / "drop.npz", tmp_path / "drop.gif"
    assert main(["simulate", "--mjcf", str(xml), "--steps", "150", "--worlds", "2", "--out", str(out),
                 "--animate", str(gif), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "2 worlds of 1 bodies x 151 states" in text and f"wrote {gif}" in text
    d = np.load(out)
    assert d["states"].shape == (2, 151, 1, 13) and d["flags"].shape == (2, 150)
    np.testing.assert_allclose(d["states"][0, -1, 0, :3], [0.0, 0.0, 0.05], atol=1e-3)
    assert np.abs(d["states"][1, -1, 0, :2]).max() > 1e-4  # the perturbed world moved sideways
    with Image.open(gif) as im:
        assert im.n_frames == 9  # states 0, 20, ..., 140 (25 frames/s of 2 ms steps) and the last, 150


def test_boxes_written_by_to_mjcf_are_the_hand_written_ones():
    """n free boxes over a plane written by to_mjcf (as ``benchmarks.worlds.mujoco_boxes_xml``
    writes its MuJoCo scenes: the same call) compile to the MuJoCo model of the hand-written XML the
    benchmark used before (the heap timings keep their scene): masses, inertias, box sizes,
    friction, condim, solref, cone, options and timestep."""
    import re

    from jaxcontact.types import Params
    from jaxcontact.worlds import model as world_model, to_mjcf

    SIZE, MASS = scenes.SIZE, scenes.MASS

    def mujoco_boxes_xml(n, mu, cone, condim, solref, option=""):
        scene, body = make_scene([shapes.box((SIZE,) * 3, MASS)] * n, pairs="all", ground=True)
        params = Params(body=body, ground=Ground.flat(), law=CoulombLCP.init_params(mu=mu))
        pos = np.array([[0.0, 0.0, 1.0 + i] for i in range(n)])
        state = State(pos=pos, quat=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), vel=np.zeros((n, 3)), omega=np.zeros((n, 3)))
        geom = {"condim": condim, **({"solref": f"{solref[0]} {solref[1]}"} if solref is not None else {})}
        return to_mjcf(scene, params, state, world_model(dt=0.002),
                       option={"cone": cone, **dict(re.findall(r'(\w+)="([^"]*)"', option))}, geom=geom)

    def hand(n, mu, cone, condim, solref, option):  # the XML as it was written by hand before
        sr = f' solref="{solref[0]} {solref[1]}"' if solref is not None else ""
        fr = f'friction="{mu} 0.005 0.0001" condim="{condim}"{sr}'
        h = SIZE / 2
        bodies = "".join(f'<body pos="0 0 {1 + i}"><freejoint/><geom type="box" size="{h} {h} {h}" mass="{MASS}" {fr}/>'
                         "</body>" for i in range(n))
        return (f'<mujoco><option timestep="0.002" cone="{cone}" {option}/><worldbody>'
                f'<geom type="plane" size="5 5 0.1" {fr}/>{bodies}</worldbody></mujoco>')

    for n, mu, cone, condim, solref, option in ((16, 0.5, "pyramidal", 3, None, ""),
                                                (2, 0.0, "pyramidal", 1, (0.02, 4.0), ""),
                                                (3, 0.5, "elliptic", 3, None, 'impratio="10"')):
        a = mujoco.MjModel.from_xml_string(hand(n, mu, cone, condim, solref, option))
        b = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(n, mu, cone, condim, solref, option=option))
        np.testing.assert_allclose(b.body_mass, a.body_mass, rtol=1e-15)
        np.testing.assert_allclose(b.body_inertia, a.body_inertia, rtol=1e-14)
        np.testing.assert_array_equal(b.geom_size[1:], a.geom_size[1:])  # the boxes (the plane's is drawing only)
        for f in ("geom_friction", "geom_condim", "geom_solref", "geom_solimp", "geom_type", "qpos0"):
            np.testing.assert_array_equal(getattr(b, f), getattr(a, f), err_msg=f)
        assert (b.opt.cone, b.opt.impratio, b.opt.timestep) == (a.opt.cone, a.opt.impratio, a.opt.timestep)


URDF_FLOATING = """<robot name="float">
  <link name="world"/>
  <link name="box">
    <inertial><origin xyz="0.01 0 0"/><mass value="0.37"/>
      <inertia ixx="0.000617" iyy="0.000617" izz="0.000617" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.1 0.2 0.1"/></geometry></collision>
  </link>
  <joint name="free" type="floating"><parent link="world"/><child link="box"/><origin xyz="0.1 0 0.3"/></joint>
</robot>"""

URDF_LIMITED_ARM = """<robot name="arm">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="arm"><inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/>
    </inertial><collision><geometry><box size="0.2 0.04 0.04"/></geometry></collision></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def test_urdf_through_mujocos_compiler(tmp_path):
    """A URDF file is read by MuJoCo's compiler like MJCF: a floating link is a free body with the
    file's mass, its box hull and its pose (the frame at the centre of mass, 0.01 m along x from the
    link's origin); a limited revolute joint on a link fixed to the world loads as a limited hinge
    to the world (its range in radians)."""
    path = tmp_path / "float.urdf"
    path.write_text(URDF_FLOATING)
    scene, params, state, _ = worlds.from_mjcf(str(path))
    assert scene.num_bodies == 1
    np.testing.assert_allclose(params.body.mass, [0.37], rtol=1e-6)
    np.testing.assert_allclose(state.pos[0], [0.11, 0.0, 0.3], atol=1e-9)
    verts = np.asarray(params.body.vertices[0])[np.asarray(params.body.vertex_mask[0]) > 0]
    np.testing.assert_allclose(verts.max(axis=0) - verts.min(axis=0), [0.1, 0.2, 0.1], atol=1e-9)
    arm = tmp_path / "arm.urdf"
    arm.write_text(URDF_LIMITED_ARM)
    scene, params, state, _ = worlds.from_mjcf(str(arm))
    assert scene.joints.parent == (-1,) and scene.joints.limited == (True,) and scene.fixed == (1,)  # the base, fixed
    np.testing.assert_allclose(np.asarray(params.joints.range), [[-3.0, 3.0]], atol=1e-12)


def test_what_is_not_a_file_is_refused_in_one_line(tmp_path):
    """bytes (not echoed as a file name), None, a number and a directory: one line each, naming
    what to pass instead; MJCF text as a str still loads."""
    xml = '<mujoco><worldbody><body><freejoint/><geom type="box" size=".05 .05 .05"/></body></worldbody></mujoco>'
    for source, error, words in ((xml.encode(), ValueError, "pass a file path, or the MJCF text as a str"),
                                 (None, ValueError, "got None"), (3, ValueError, "is an int (3)"),
                                 (tmp_path, IsADirectoryError, "not a file"), (str(tmp_path), IsADirectoryError, "not a file")):
        with pytest.raises(error) as e:
            mjcf.from_mjcf(source)
        msg = str(e.value)
        assert words in msg and "\n" not in msg and "<mujoco" not in msg, msg
    with pytest.raises(FileNotFoundError, match=r"\(5000 characters\)"):
        mjcf.from_mjcf("x" * 5000)  # a long str that is no XML: not echoed whole
    assert mjcf.from_mjcf(xml)[0].num_bodies == 1


KEYS = """<mujoco><worldbody><geom type="plane" size="0 0 .05"/>
  <body name="box" pos="0 0 .1"><freejoint name="lid"/><geom type="box" size=".05 .05 .05"/></body>
  <body name="arm" pos="0 1 .5"><joint name="pivot" type="hinge" axis="1 0 0"/><geom type="box" size=".2 .02 .02"/></body>
  </worldbody><keyframe>
  <key name="ok" qpos="0 0 .1 1 0 0 0 0.3" qvel="1 0 0 0 0 0 0"/>
  <key name="nan" qpos="0 0 nan 1 0 0 0 0"/>
  <key name="fast" qpos="0 0 .1 1 0 0 0 0" qvel="0 0 0 0 0 0 inf"/>
  <key name="zero" qpos="0 0 .1 0 0 0 0 0"/>
</keyframe></mujoco>"""


def test_a_keyframe_that_is_no_state_is_refused_by_name(tmp_path):
    """A NaN or infinite keyframe entry (MuJoCo only prints a warning and starts the world from it)
    and a keyframe quaternion 0 0 0 0 (MuJoCo's compiler makes it the identity) are refused by
    from_mjcf, eagerly and in one line naming the file, the keyframe, the joint and the body and
    what the entry is; the good keyframe of the same file loads, and so does ``data`` through
    from_mujoco, which refuses a NaN in it the same way."""
    path = tmp_path / "keys.xml"
    path.write_text(KEYS)
    for key, words in (("nan", ["qpos[2] is nan", "free joint 'lid' of body 'box': position z"]),
                       ("fast", ["qvel[6] is inf", "joint 'pivot' of body 'arm': angular velocity"]),
                       ("zero", ["qpos[3:7] is the quaternion 0 0 0 0 of body 'box'", "identity"])):
        with pytest.raises(ValueError, match=f"keyframe '{key}'") as e:
            mjcf.from_mjcf(path, keyframe=key)
        msg = str(e.value)
        assert str(path) in msg and all(w in msg for w in words) and "\n" not in msg, msg
    _, _, state, _ = mjcf.from_mjcf(path, keyframe="ok")
    np.testing.assert_allclose(state.vel[0], [1.0, 0.0, 0.0])
    m = mujoco.MjModel.from_xml_string(KEYS)
    d = mujoco.MjData(m)
    d.qpos[:] = m.key_qpos[0]
    d.qvel[3] = np.nan
    with pytest.raises(ValueError, match=r"data: qvel\[3\] is nan \(free joint 'lid' of body 'box': angular velocity x\)"):
        mjcf.from_mujoco(m, data=d)


def test_a_centre_of_mass_outside_the_hull_is_refused_by_name():
    """An <inertial> pos outside the body's geoms is refused by from_mjcf with the body's name from
    the file (not at rollout, with advice for Python users and no body named); one just inside loads."""
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 .05"/>
      <body name="ok" pos="1 0 .1"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
      <body name="lopsided" pos="0 0 .1"><freejoint/><inertial pos="{x} 0 0" mass="1" diaginertia=".01 .01 .01"/>
      <geom type="box" size=".05 .05 .05"/></body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match="the centre of mass of body 'lopsided'") as e:
        mjcf.from_mjcf(xml.format(x=0.2))
    assert "0.15 m outside" in str(e.value) and "\n" not in str(e.value)
    _, params, state, _ = mjcf.from_mjcf(xml.format(x=0.04))
    np.testing.assert_allclose(state.pos[1], [0.04, 0.0, 0.1], atol=1e-12)


def test_messages_use_plain_numbers_and_the_files_names():
    """Numbers as a reader writes them (no ``np.float64(...)``, ``|q| = 2`` not ``2..2``) and bodies
    by the file's names: a scene from a file keeps them (``Scene.names``) and names its bodies so
    in the start-overlap warning and the body check; the loader's own messages too."""
    from jaxcontact.eager import PenetrationWarning
    from jaxcontact.validation import validate_body, validate_state
    from jaxcontact.worlds.pipeline import warn_overlaps
    from jaxcontact.worlds.scene import check_body

    box = '<body name="{n}" pos="{x} 0 .05"><freejoint/><geom type="box" size=".05 .05 .05" {a}/></body>'
    with pytest.raises(ValueError, match=r"anisotropic friction \(0.5, 0.2\)") as e:
        mjcf.from_mjcf('<mujoco><worldbody><geom name="floor" type="plane" size="0 0 .05"/>' + box.format(n="b", x=0, a='name="g"')
                       + '</worldbody><contact><pair geom1="g" geom2="floor" friction="0.5 0.2 0.005 0.0001 0.0001"/></contact>'
                       '</mujoco>')
    assert "np." not in str(e.value)
    kept_off = mjcf.from_mjcf('<mujoco><worldbody><geom type="plane" size="0 0 .05"/>' + box.format(n="b", x=0, a="")
                              + box.format(n="floater", x=1, a='contype="2" conaffinity="2"') + "</worldbody></mujoco>")[0]
    assert kept_off.ground and kept_off.no_ground == (1,)  # MuJoCo's filter keeps it off the floor (Scene.no_ground)
    scene, params, state, model = mjcf.from_mjcf('<mujoco><worldbody><geom type="plane" size="0 0 .05"/>'
                                                 + box.format(n="left", x=0, a="") + box.format(n="right", x=0.08, a="")
                                                 + "</worldbody></mujoco>")
    assert scene.names == ("left", "right") and scene.body_name(1) == "body 'right' (1)"
    with pytest.warns(PenetrationWarning, match=r"the deepest body 'left' \(0\) and body 'right' \(1\) by 0.02 m"):
        warn_overlaps(model, scene, params, state, batched=False)
    with pytest.raises(ValueError, match=r"body 'right' \(1\) is not the hull"):
        check_body(scene, params.body.replace(vertices=params.body.vertices.at[1, 0].multiply(0.5)))
    with pytest.raises(ValueError, match=r"\|q\| = 2, tolerance") as e:
        validate_state(state.replace(quat=2 * state.quat), 3, batched=True)
    shifted = params.body.replace(vertices=params.body.vertices.at[1].add(jnp.array([0.2, 0.0, 0.0])))
    with pytest.raises(ValueError, match=r"the centre of mass of body 1 \(the body's origin, 0\) lies 0.15 m outside"):
        validate_body(shifted, batched=True)  # a world built in Python, without names, still says which body
    with pytest.raises(ValueError, match=r"the law's mu \(0.3, 0.5\) is anisotropic"):
        mjcf.to_mjcf(scene, params.replace(law=params.law.replace(mu=jnp.array([0.3, 0.5]))), state)


def test_explicit_pairs_join_the_table_and_their_friction_is_compared():
    """A <contact><pair> makes its bodies a pair of the world even where <exclude> (or the filter)
    leaves them out, as in MuJoCo; a pair whose friction is jaxcontact's √(μ_a μ_b) loads without a
    warning, one that is not warns naming both bodies by the file's names; an anisotropic pair is
    refused by its name."""
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 .05" friction="0.4"/>
      <body name="ice" pos="0 0 .05"><freejoint/><geom name="gi" type="box" size=".05 .05 .05" friction="0.1"/></body>
      <body name="rubber" pos="1 0 .05"><freejoint/><geom name="gr" type="box" size=".05 .05 .05" friction="0.9"/></body>
      </worldbody><contact><exclude body1="ice" body2="rubber"/>
      <pair name="p" geom1="gi" geom2="gr" friction="{mu} {mu2} 0.005 0.0001 0.0001"/>
      <pair geom1="floor" geom2="gi" friction="0.2 0.2 0.005 0.0001 0.0001"/>
      <pair geom1="floor" geom2="gr" friction="0.6 0.6 0.005 0.0001 0.0001"/></contact></mujoco>"""
    with warnings.catch_warnings():
        warnings.simplefilter("error", mjcf.FrictionRuleWarning)
        scene, params, _, _ = mjcf.from_mjcf(xml.format(mu=0.3, mu2=0.3))  # sqrt(0.1 0.9), sqrt(0.1 0.4), ...
    assert scene.pairs == ((0, 1),) and scene.ground
    np.testing.assert_allclose(params.body.friction, [0.1, 0.9])
    with pytest.warns(mjcf.FrictionRuleWarning, match=r"bodies 'ice' and 'rubber': 0.3 here, 0.5 in MuJoCo \(its "
                                                      r"<contact><pair>'s friction\)"):
        mjcf.from_mjcf(xml.format(mu=0.5, mu2=0.5))
    with pytest.raises(ValueError, match=r"contact pair 'p': anisotropic friction \(0.3, 0.5\)"):
        mjcf.from_mjcf(xml.format(mu=0.3, mu2=0.5))


RAMP_DEGREES = 20.0
RAMP_AGREEMENT = 1.1  # MuJoCo's slide over ours (measured 0.98 and 0.99: mj_step on the written file)


def test_to_mjcf_pairs_make_mujoco_slide_as_jaxcontact_does():
    """A 20° ramp (the ground, μ 0.5), box A (μ 0.1) 3 cm uphill of box B (μ 0.9): here A–ground is
    √(0.1 · 0.5) = 0.22 < tan 20° = 0.36, so A slides into B, which holds (√(0.9 · 0.5) = 0.67).
    MuJoCo on to_mjcf's file (mj_step) slides A as far as we do, at 0.2 s (before the hit) and at
    0.4 s (against B), within ``RAMP_AGREEMENT``; the same file without its <pair>s gives A–ground
    MuJoCo's max(0.1, 0.5) = 0.5 > 0.36, and A never moves there (under 2 mm)."""
    th = np.radians(RAMP_DEGREES)
    n, down = np.array([np.sin(th), 0.0, np.cos(th)]), np.array([np.cos(th), 0.0, -np.sin(th)])
    size, gap = 0.1, 0.03
    bodies = [shapes.box((size,) * 3, 1.0).replace(friction=jnp.asarray(mu)) for mu in (0.1, 0.9)]
    scene, body = make_scene(bodies, pairs="all", ground=True)
    params = Params(body=body, ground=Ground(normal=jnp.asarray(n), height=jnp.asarray(0.0)),
                    law=CoulombLCP.init_params(mu=0.5))
    pos = np.stack([-(size + gap) * down + size / 2 * n, size / 2 * n])
    quat = np.tile([np.cos(th / 2), 0.0, np.sin(th / 2), 0.0], (2, 1))  # the boxes' bottoms on the ramp
    state = State(pos=jnp.asarray(pos), quat=jnp.asarray(quat), vel=jnp.zeros((2, 3)), omega=jnp.zeros((2, 3)))
    model = worlds.model(dt=0.002)
    traj, _ = worlds.rollout(model, scene, params, state, 200)
    ours = (np.asarray(traj.pos[:, 0]) - pos[0]) @ down
    xml = mjcf.to_mjcf(scene, params, state, model)
    assert xml.count("<pair ") == 3

    def mujoco_slide(text):
        m = mujoco.MjModel.from_xml_string(text)
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        out = [0.0]
        for _ in range(200):
            mujoco.mj_step(m, d)
            out.append((d.xipos[1] - pos[0]) @ down)
        return np.array(out)

    theirs = mujoco_slide(xml)
    for k in (100, 200):
        assert ours[k] > 0.01 and 1 / RAMP_AGREEMENT < theirs[k] / ours[k] < RAMP_AGREEMENT, (k, ours[k], theirs[k])
    assert ours[200] > gap  # it reached B (and pushed it)
    without = mujoco_slide("\n".join(line for line in xml.splitlines() if "<pair " not in line))
    assert np.max(np.abs(without)) < 2e-3
