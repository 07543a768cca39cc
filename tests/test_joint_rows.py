"""Ball joints, a body's composite joints, welded bodies and connect/weld equalities in worlds
(issue 63, items 1 and 3): rows of their own count per joint group (``joints.Joints.groups``),
eliminated with the hinges by the same Schur complement; from MJCF against MuJoCo C and closed
forms, and refused by name where they are not supported."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.rotations import quat_to_mat
from jaxcontact.worlds import joints as J

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

G = 9.81
SCENES = Path(__file__).resolve().parents[1] / "jaxcontact" / "data" / "scenes"


def ball_xml(dt=0.001, extra="", key='qpos="0.9238795 0.3826834 0 0" qvel="0 1.5 2.0"'):
    """A 0.4 m box of 1 kg hanging from a ball joint at (0, 0, 1), tilted 45° about x and spun."""
    return f"""<mujoco><option timestep="{dt}"/>
<worldbody><body name="bob" pos="0 0 1"><joint name="ball" type="ball" pos="0 0 0" {extra}/>
<geom type="box" size="0.03 0.03 0.2" pos="0 0 -0.2" mass="1"/></body></worldbody>
<keyframe><key name="k" {key}/></keyframe></mujoco>"""


UNIVERSAL = (SCENES / "universal_joint.xml").read_text()

PLANAR = (SCENES / "planar_body.xml").read_text()


def mujoco_run(xml, steps):
    """MuJoCo C from keyframe 0: (xipos (steps + 1, nbody − 1, 3), qpos (steps + 1, nq)), positions
    after each step (``mj_kinematics``: ``mj_step`` leaves the previous ones)."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mjcf.mujoco_data(m, keyframe=0)
    return mjcf.mujoco_trajectory(m, d, steps)


def flags(info):
    return int(np.bitwise_or.reduce(np.asarray(info.flags)))


def test_a_ball_pendulum_follows_mujoco_c_with_damping_and_armature():
    """A ball joint's 3 rows: off-plane release with spin, damping and armature on its 3 dofs (MuJoCo's
    per-dof semantics): within 10 mm of MuJoCo C over 100 steps; the coordinates read MuJoCo's qpos
    (as a rotation vector) and qvel (the child's frame)."""
    xml = (SCENES / "ball_pendulum.xml").read_text()
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k")
    assert scene.joints.kinds == ("ball",) and scene.joints.num_rows == 3 and scene.joints.num_dofs == 3
    q, qd = J.coordinates(scene.joints, params.joints, state)
    np.testing.assert_allclose(np.asarray(q), [np.pi / 4, 0, 0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(qd), [0, 1.5, 2.0], atol=1e-9)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    ref, qpos = mujoco_run(xml, 100)
    dev = np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)
    assert np.max(dev) < 2e-3, np.max(dev)  # measured 0.1 mm
    Q = J.ball_quaternion(params.joints, 0, jax.tree_util.tree_map(lambda x: x[-1, 0], traj), None)
    np.testing.assert_allclose(np.asarray(Q), qpos[-1], atol=2e-3)
    assert flags(info) == 0


def test_a_ball_spring_pulls_toward_the_balls_zero_as_in_mujoco_c():
    """A ball's stiffness (MuJoCo's spring toward qpos_spring, the identity: −k times the rotation
    vector, in the child's frame, on its three dofs): within 1 mm of MuJoCo C over 300 steps, where the
    spring moves the bob over 0.1 m (measured 0.05 mm and 0.128 m)."""
    xml = ball_xml(extra='stiffness="3" damping="0.02"')
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k")
    traj, info = worlds.rollout(model, scene, params, state, 300)
    ref, _ = mujoco_run(xml, 300)
    free, _ = mujoco_run(ball_xml(extra='damping="0.02"'), 300)
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 1e-3
    assert np.max(np.linalg.norm(free - ref, axis=-1)) > 0.1
    assert flags(info) == 0


def test_a_ball_pendulum_keeps_its_length_and_energy():
    """No damping, a small step (0.2 ms, 2 s): the pivot–centre distance stays 0.2 m to 1 µm and the
    energy (kinetic + m g z) within 1e-4 of its start (measured 6.9e-5, 0.4 µm)."""
    scene, params, state, model = mjcf.from_mjcf(ball_xml(dt=0.0002), keyframe="k")
    traj, info = worlds.rollout(model, scene, params, state, 10000)
    pos, vel, om = (np.asarray(x[:, 0]) for x in (traj.pos, traj.vel, traj.omega))
    m, I = float(params.body.mass[0]), np.asarray(params.body.inertia[0])
    E = 0.5 * m * np.sum(vel ** 2, 1) + 0.5 * np.einsum("ti,ij,tj->t", om, I, om) + m * G * pos[:, 2]
    assert np.max(np.abs(E - E[0])) / abs(E[0]) < 1e-4
    assert np.max(np.abs(np.linalg.norm(pos - [0, 0, 1], axis=1) - 0.2)) < 1e-6
    assert np.ptp(pos[:, 1]) > 0.1  # off the plane of the tilt: a spherical pendulum
    assert flags(info) == 0


def test_a_ball_cone_limit_holds_without_bounce():
    """range="0 30" (MuJoCo's cone: the turn's angle at most 30°), one one-sided row: the swing
    reaches the cone and stays on it within 0.001° (MuJoCo's limit is soft, ours hard)."""
    xml = ball_xml(extra='range="0 30" limited="true"', key='qpos="0.9914449 0.1305262 0 0" qvel="0 1.5 2.0"')
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k")
    assert scene.joints.num_limit_rows == 1
    traj, info = worlds.rollout(model, scene, params, state, 600)
    Q = np.asarray(jax.vmap(lambda s: J.ball_quaternion(params.joints, 0, jax.tree_util.tree_map(lambda x: x[0], s),
                                                        None))(traj))
    angle = np.degrees(2 * np.arctan2(np.linalg.norm(Q[:, 1:], axis=1), Q[:, 0]))
    assert angle[0] == pytest.approx(15.0, abs=1e-5)
    assert np.max(angle) < 30.001 and np.max(angle[400:]) > 29.99  # on the cone, not bounced off it
    assert flags(info) == 0


def test_a_ball_pendulum_in_float32():
    """float32: the ball's rows keep the length to 20 µm over 500 steps, no flags."""
    scene, params, state, model = mjcf.from_mjcf(ball_xml(), keyframe="k", dtype=jnp.float32)
    traj, info = worlds.rollout(model, scene, params, state, 500)
    assert traj.pos.dtype == jnp.float32
    L = np.linalg.norm(np.asarray(traj.pos[:, 0], float) - [0, 0, 1], axis=1)
    assert np.max(np.abs(L - 0.2)) < 2e-5
    assert flags(info) == 0


def test_a_universal_joint_moves_only_in_its_two_dofs_and_follows_mujoco_c():
    """Two hinges through one point (x, then y of the first's frame; a ref on the first, damping,
    armature): 4 rows (3 anchor, 1 across both axes); the pivot stays, the twist a₁·a₂ stays 0,
    and each hinge's qpos follows MuJoCo C within 1e-3 rad, the body within 10 mm, over 100 steps."""
    scene, params, state, model = mjcf.from_mjcf(UNIVERSAL, keyframe="k")
    assert scene.joints.groups == ((0, 1),) and scene.joints.num_rows == 4
    q0, qd0 = J.coordinates(scene.joints, params.joints, state)
    np.testing.assert_allclose(np.asarray(q0), [0.6, -0.4], atol=1e-9)
    np.testing.assert_allclose(np.asarray(qd0), [1.5, 2.0], atol=1e-9)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    ref, qpos = mujoco_run(UNIVERSAL, 100)
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 2e-3  # measured 0.1 mm
    q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj))
    np.testing.assert_allclose(q, qpos, atol=1e-3)
    jp = params.joints
    a1 = np.asarray(jp.axis_parent[0])  # the first axis, the world's (its parent)
    a2 = np.asarray(jax.vmap(lambda qt: quat_to_mat(qt) @ jp.axis_child[1])(traj.quat[:, 0]))
    np.testing.assert_allclose(a2 @ a1, 0.0, atol=1e-5)
    assert float(np.max(np.asarray(info.joint_error))) < 1e-5
    assert np.ptp(q[:, 0]) > 0.03 and np.ptp(q[:, 1]) > 0.1
    assert flags(info) == 0


THREE_HINGES = (SCENES / "three_hinges.xml").read_text()


def test_three_hinges_through_one_point_turn_as_a_ball_with_each_angle_its_own():
    """Three hinges through one point (x, y, z of the frames MuJoCo composes; a ref, a limit not
    reached, damping, armature): 3 anchor rows as a ball, each hinge's angle from the turn (two cones'
    intersection, ``joints.composite_coordinates``) and rate; every qpos follows MuJoCo C within 1e-3
    rad and the body within 1 mm over 100 steps (measured 2.3e-4 rad, 0.03 mm)."""
    scene, params, state, model = mjcf.from_mjcf(THREE_HINGES, keyframe="k")
    assert scene.joints.groups == ((0, 1, 2),) and scene.joints.num_rows == 3
    q0, qd0 = J.coordinates(scene.joints, params.joints, state)
    np.testing.assert_allclose(np.asarray(q0), [0.6, -0.4, 0.3], atol=1e-9)
    np.testing.assert_allclose(np.asarray(qd0), [1.5, 2.0, -1.0], atol=1e-9)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    ref, qpos = mujoco_run(THREE_HINGES, 100)
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 1e-3
    q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj))
    np.testing.assert_allclose(q, qpos, atol=1e-3)
    assert flags(info) == 0


def test_a_planar_body_of_two_slides_and_a_hinge_follows_mujoco_c():
    """MuJoCo's planar body (slide x, slide z, hinge y at an offset point; a hinged leg below): 3
    rows for the torso's group; every joint's qpos against MuJoCo C within 1e-3 over 100 steps, the
    bodies within 10 mm; the motion stays in the x–z plane."""
    scene, params, state, model = mjcf.from_mjcf(PLANAR, keyframe="k")
    assert scene.joints.groups == ((0, 1, 2), (3,)) and scene.joints.num_rows == 3 + 5
    q0, qd0 = J.coordinates(scene.joints, params.joints, state)
    np.testing.assert_allclose(np.asarray(q0), [0.1, 0.2, 0.3, -0.5], atol=1e-9)
    np.testing.assert_allclose(np.asarray(qd0), [1, 2, 3, -2], atol=1e-9)
    traj, info = worlds.rollout(model, scene, params, state, 100)
    ref, qpos = mujoco_run(PLANAR, 100)
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 2e-3
    q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj))
    np.testing.assert_allclose(q, qpos, atol=1e-3)
    np.testing.assert_allclose(np.asarray(traj.pos[:, :, 1]), 0.0, atol=1e-9)
    assert flags(info) == 0


def test_composites_and_balls_refused_by_name():
    """What is not supported is refused by name before any work: a slide after a hinge, hinges through
    two points beside a slide, four hinges on one body, two parallel hinges, a ball beside a slide, an actuator on a ball;
    and Joints refuses bad kinds eagerly."""
    cases = [
        ('<joint type="hinge" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>', "a slide after a hinge"),
        ('<joint type="slide" axis="0 0 1"/><joint type="hinge" axis="1 0 0"/><joint type="hinge" axis="0 1 0" '
         'pos="0 0 0.1"/>', "different points on one body beside other joints"),  # two alone: test_offset_hinges
        ('<joint type="hinge" axis="1 0 0"/><joint type="hinge" axis="0 1 0"/><joint type="hinge" axis="0 0 1"/>'
         '<joint type="hinge" axis="1 0 0"/>', "4 hinges"),
        ('<joint type="hinge" axis="1 0 0"/><joint type="hinge" axis="1 0 0"/>', "two parallel hinges"),
        ('<joint type="slide" axis="1 0 0"/><joint type="ball"/>', "one of them a ball"),
    ]
    for joints_xml, message in cases:
        xml = (f'<mujoco><worldbody><body name="b" pos="0 0 1">{joints_xml}'
               '<geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>')
        with pytest.raises(ValueError, match=message):
            mjcf.from_mjcf(xml)
    motor = ball_xml().replace("</mujoco>", '<actuator><motor joint="ball"/></actuator></mujoco>')
    with pytest.raises(ValueError, match="a joint transmission .*actuators drive a hinge, a slide or a fixed tendon"):
        mjcf.from_mjcf(motor)
    with pytest.raises(ValueError, match="a slide after a hinge"):
        J.Joints(parent=(-1, -1), child=(0, 0), kinds=("hinge", "slide"))
    with pytest.raises(ValueError, match="actuators drive a hinge or a slide"):
        J.Joints(parent=(-1,), child=(0,), kinds=("ball",), actuated=(0,))


FOURBAR = (SCENES / "four_bar.xml").read_text()

WELDS = (SCENES / "welds.xml").read_text()


def test_a_connect_equality_closes_a_four_bar_loop():
    """A planar four-bar of three hinged links closed by a connect (3 rows, redundant with the hinges'
    out-of-plane rows: the regularised elimination): the loop stays closed to 0.1 mm over 2 s while
    the crank swings, and the links follow MuJoCo C within 1 mm over 100 steps (measured 0.08 mm)."""
    scene, params, state, model = mjcf.from_mjcf(FOURBAR, keyframe="k")
    assert scene.joints.kinds == ("hinge", "hinge", "hinge", "connect") and scene.joints.num_rows == 18
    assert (1, 2) in scene.pairs or (1, 2) not in scene.joints.body_pairs()  # an equality keeps its bodies' contacts
    traj, info = worlds.rollout(model, scene, params, state, 2000)
    jp = params.joints
    body = lambda t, i: jax.tree_util.tree_map(lambda x: x[t, i], traj)
    gap = [float(jnp.linalg.norm(J.point_rows(jp.anchor_parent[3], jp.anchor_child[3], body(t, 2), body(t, 1))[2]))
           for t in range(0, 2001, 100)]
    assert max(gap) < 1e-4, gap  # measured 5.9e-5 m
    ref, _ = mujoco_run(FOURBAR, 100)
    assert np.max(np.linalg.norm(np.asarray(traj.pos[:101]) - ref, axis=-1)) < 1e-3
    q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, jp, s)[0])(traj))
    assert np.ptp(q[:, 0]) > 0.3  # the crank moves
    assert flags(info) == 0


def test_a_welded_child_moves_with_its_parent_and_a_weld_holds_a_box_to_the_world():
    """A jointless body inside a hinged arm (MuJoCo welds it: 6 rows here) keeps its pose in the arm to
    10 µm and the two follow MuJoCo C (which merges them) within 0.1 mm over 100 steps; a free box
    held by a weld equality to the world stays at its pose to 1 µm over 1 s (MuJoCo's soft weld lets
    it sag 31 mm in the first 100 steps)."""
    scene, params, state, model = mjcf.from_mjcf(WELDS)
    assert scene.joints.kinds == ("hinge", "welded", "weld") and scene.joints.num_rows == 5 + 6 + 6
    assert (0, 1) in scene.joints.body_pairs() and (0, 1) not in scene.pairs
    traj, info = worlds.rollout(model, scene, params, state, 1000)
    jp = params.joints
    body = lambda t, i: jax.tree_util.tree_map(lambda x: x[t, i], traj)
    for t in (0, 500, 1000):
        err = J.weld_rows(jp.anchor_parent[1], jp.anchor_child[1], jp.reference[1], body(t, 1), body(t, 0))[2]
        assert float(jnp.max(jnp.abs(err))) < 1e-5  # measured 1.6 µm (the velocity rows' drift)
    assert np.ptp(np.asarray(traj.pos[:, 0, 0])) > 0.1  # the arm swings
    ref, _ = mujoco_run(WELDS, 100)
    np.testing.assert_allclose(np.asarray(traj.pos[:101, :2]), ref[:, :2], atol=1e-4)
    np.testing.assert_allclose(np.asarray(traj.pos[:, 2]), np.broadcast_to(state.pos[2], (1001, 3)), atol=1e-6)
    np.testing.assert_allclose(np.abs(np.asarray(traj.quat[:, 2]) @ np.asarray(state.quat[2])), 1.0, atol=1e-9)
    assert np.max(np.linalg.norm(ref[:, 2] - ref[0, 2], axis=-1)) > 0.01  # MuJoCo's soft weld sags
    assert flags(info) == 0


def test_equalities_refused_by_name_and_bad_welds_eagerly_and_under_jit():
    """A joint equality and a weld without torque are refused by name before any work (a massless
    welded body loads, folded into its parent); a weld whose reference is not a unit quaternion is
    refused eagerly, and under jit the step flags it (non-finite)."""
    base = ('<mujoco><worldbody><body name="a" pos="0 0 1"><joint name="j1" type="hinge" axis="1 0 0"/>'
            '<geom type="box" size="0.1 0.1 0.1" mass="1"/><site name="s1"/></body>'
            '<body name="b" pos="0 0 2"><joint name="j2" type="hinge" axis="1 0 0"/>'
            '<geom type="box" size="0.1 0.1 0.1" mass="1"/><site name="s2"/>{inner}</body></worldbody>'
            '<equality>{eq}</equality></mujoco>')
    cases = [('<joint joint1="j1" joint2="j2"/>', "a joint equality"),
             ('<weld body1="a" body2="b" torquescale="0"/>', "torquescale 0"),
             ]
    for eq, message in cases:
        with pytest.raises(ValueError, match=message):
            mjcf.from_mjcf(base.format(eq=eq, inner=""))
    massless = base.format(eq="", inner='<body name="c" pos="0 0 0.3"><geom type="box" size="0.1 0.1 0.1" mass="0"/></body>')
    folded, *_ = mjcf.from_mjcf(massless.replace("<equality></equality>", ""))  # 'c' folds into 'b' (test_mjcf_fold)
    assert folded.names == ("a", "b") and folded.shapes == ("hull", "compound")
    scene, params, state, model = mjcf.from_mjcf(WELDS)
    bad = params.replace(joints=params.joints.replace(reference=params.joints.reference.at[2].set(jnp.nan)))
    with pytest.raises(ValueError, match=r"params\.joints\.reference: expected \(3, 4\) unit quaternions"):
        worlds.rollout(model, scene, bad, state, 3)
    _, info = jax.jit(lambda p: worlds.rollout(model, scene, p, state, 3))(bad)
    from jaxcontact.types import Flags
    assert np.all(np.asarray(info.flags) & int(Flags.NONFINITE))
    with pytest.raises(ValueError, match="weld.*has no range"):
        J.Joints(parent=(-1,), child=(0,), kinds=("weld",), limited=(True,))


@pytest.mark.parametrize("name", ["ball", "universal", "three", "planar", "fourbar", "welds"])
def test_to_mjcf_writes_balls_composites_welds_and_equalities_back(name):
    """``to_mjcf`` writes a ball, a composite's joints (axes in the body's frame, ``ref`` each joint's
    coordinate), a welded body (no joint) and the equalities (connect anchor, weld relpose): MuJoCo
    loads the file at the same poses, and ``from_mjcf`` of it gives the same kinds, groups, positions,
    velocities, coordinates and rates (a ball's coordinates start again at its written pose)."""
    xml, key = {"ball": ((SCENES / "ball_pendulum.xml").read_text(), "k"), "universal": (UNIVERSAL, "k"),
                "three": (THREE_HINGES, "k"), "planar": (PLANAR, "k"), "fourbar": (FOURBAR, "k"), "welds": (WELDS, None)}[name]
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe=key)
    out = mjcf.to_mjcf(scene, params, state, model)
    scene2, params2, state2, _ = mjcf.from_mjcf(out, keyframe="initial")
    assert scene2.joints.kinds == scene.joints.kinds and scene2.joints.groups == scene.joints.groups
    for field in ("pos", "vel", "omega"):
        np.testing.assert_allclose(np.asarray(getattr(state2, field)), np.asarray(getattr(state, field)), atol=1e-9)
    q, qd = J.coordinates(scene.joints, params.joints, state)
    q2, qd2 = J.coordinates(scene2.joints, params2.joints, state2)
    np.testing.assert_allclose(np.asarray(qd2), np.asarray(qd), atol=1e-9)
    if name in ("universal", "three", "planar"):
        np.testing.assert_allclose(np.asarray(q2), np.asarray(q), atol=1e-9)
    for f in ("damping", "armature"):
        if getattr(params.joints, f) is not None:
            np.testing.assert_allclose(np.asarray(getattr(params2.joints, f)), np.asarray(getattr(params.joints, f)))
    if name == "welds":
        assert "<weld" in out and "relpose" in out
    if name == "fourbar":
        assert "<connect" in out


@pytest.mark.slow
def test_gradients_through_loop_rows_match_central_differences():
    """d(final x)/d(an initial velocity) through 30 steps of the four-bar (hinge rows and its regularised
    loop rows) against central differences (1e-6 relative)."""
    for name, body, axis in (("four_bar", 2, 0),):
        scene, params, state, model = mjcf.from_mjcf((SCENES / f"{name}.xml").read_text(), keyframe="k")

        def final_x(x):
            traj, _ = worlds.rollout(model, scene, params, state.replace(vel=state.vel.at[body, axis].add(x)), 30)
            return traj.pos[-1, body, 0]

        g = float(jax.grad(final_x)(0.0))
        fd = float(final_x(1e-5) - final_x(-1e-5)) / 2e-5
        assert abs(g) > 1e-6 and g == pytest.approx(fd, rel=1e-6), (name, g, fd)


def test_actuators_drive_a_composites_own_joints_as_in_mujoco_c():
    """A motor on the planar body's hinge, a position servo on its z slide and a velocity servo on its x
    slide (each on its own coordinate of the group): every qpos within 2e-3 of MuJoCo C over 100 steps
    (measured 1.0e-3 on the leg's free hinge, 7e-4 on the servoed ones) and the bodies within 1 mm."""
    acts = '<motor joint="r" gear="2"/><position joint="z" kp="30" kv="3"/><velocity joint="x" kv="2"/>'
    xml = PLANAR.replace("</worldbody>", f"</worldbody><actuator>{acts}</actuator>").replace(
        'qvel="', 'ctrl="0.3 0.3 0.3" qvel="')
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k")
    assert scene.joints.actuated == (2, 1, 0) and scene.joints.groups == ((0, 1, 2), (3,))
    traj, info = worlds.rollout(model, scene, params, state, 100)
    ref, qpos = mujoco_run(xml, 100)
    assert np.max(np.linalg.norm(np.asarray(traj.pos) - ref, axis=-1)) < 1e-3
    q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj))
    np.testing.assert_allclose(q, qpos, atol=2e-3)
    assert flags(info) == 0


SITES = """<mujoco><option timestep="0.001"/>
<worldbody>{world_site}
 <body name="a" pos="0 0 1"><joint name="h" type="hinge" axis="0 1 0"/>
  <geom type="box" size="0.02 0.02 0.15" pos="0 0 -0.15" mass="0.3"/><site name="sa" pos="0 0 -0.3"/></body>
 <body name="b" pos="0.1 0 0.7"><freejoint/><geom type="box" size="0.05 0.03 0.02" mass="0.2"/>
  <site name="sb" pos="-0.1 0 0" euler="0 40 0"/></body>
 <body name="c" pos="0.3 0 1.2" euler="0 0 30"><freejoint/><geom type="box" size="0.03 0.03 0.03" mass="0.2"/>
  <site name="sc"/></body>
</worldbody>
<equality>{equalities}</equality>
<keyframe><key name="k" qvel="2 0 0 0 0 0 0 0 0 0 0 0 0"/></keyframe></mujoco>"""


@pytest.mark.slow
def test_equalities_between_sites_are_those_between_their_bodies():
    """MuJoCo's site semantics (a connect of two sites' points, a weld of two sites' frames): the same
    rows as the body equalities through the same points and orientations, so the two rollouts agree to
    1e-9 m over 200 steps, and the weld holds its box to the world."""
    on_sites = SITES.format(world_site='<site name="w" pos="0.3 0 1.2" euler="0 0 30"/>',
                            equalities='<connect site1="sa" site2="sb"/><weld site1="w" site2="sc"/>')
    on_bodies = SITES.format(world_site="", equalities='<connect body1="a" body2="b" anchor="0 0 -0.3"/><weld body1="c"/>')
    runs = []
    for xml in (on_sites, on_bodies):
        scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k")
        assert scene.joints.kinds == ("hinge", "connect", "weld")
        traj, info = worlds.rollout(model, scene, params, state, 200)
        assert flags(info) == 0
        runs.append(np.asarray(traj.pos))
    np.testing.assert_allclose(runs[0], runs[1], atol=1e-9)
    np.testing.assert_allclose(runs[0][:, 2], np.broadcast_to(runs[0][0, 2], (201, 3)), atol=1e-6)
    assert np.ptp(runs[0][:, 1, 0]) > 0.05  # the connected box swings with the arm
