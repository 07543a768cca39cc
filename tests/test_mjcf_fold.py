"""Jointless bodies folded into the body they move with (``worlds.mjcf.FoldedModel``, issue 63 item 4):
a massless frame that carries geoms and sites inside an arm, and a massive jointless body under a
massless jointed frame, against MuJoCo C (which welds them: ``body_weldid``); ``to_mjcf`` writes the
folded body back as one body of several geoms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds
from jaxcontact.rotations import quat_to_mat
from jaxcontact.types import Flags
from jaxcontact.worlds import joints as J

mujoco = pytest.importorskip("mujoco")
from jaxcontact.worlds import mjcf  # noqa: E402

# a two-link arm whose elbow is a massless jointless frame (a sphere of mass 0, a site and a massless knob
# frame of its own) turned 30° about z, its forearm carrying a massless tilted box at the tip and a point
# mass of 0.3 kg (no inertia of its own), both swinging from the keyframe; a slide carriage without mass whose
# jointless child, a 2 kg crate turned 20° about x, lands on the floor on an edge after 115 steps
FOLD = """<mujoco model="folded"><option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="upper" pos="0 0 0.6">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03" mass="1"/>
      <body name="elbow" pos="0.4 0 0" euler="0 0 30">
        <geom type="sphere" size="0.05" mass="0"/>
        <site name="mark" pos="0 0 0.05"/>
        <body name="knob" pos="0 0.05 0" euler="0 0 45"><geom type="box" size="0.01 0.02 0.01" pos="0 0.01 0" mass="0"/></body>
        <body name="fore">
          <joint name="elbow" type="hinge" axis="0 1 0"/>
          <geom type="box" size="0.15 0.02 0.02" pos="0.15 0 0" mass="0.5"/>
          <body name="tip" pos="0.3 0 0" euler="0 45 0"><geom type="box" size="0.04 0.03 0.02" mass="0"/></body>
          <body name="weight" pos="0.25 0 0.01"><inertial pos="0 0 0" mass="0.3" diaginertia="0 0 0"/></body>
        </body>
      </body>
    </body>
    <body name="carriage" pos="0.9 0 0.4">
      <joint name="lift" type="slide" axis="0 0 1"/>
      <body name="crate" pos="0 0.1 0" euler="20 0 0"><geom type="box" size="0.1 0.1 0.1" mass="2"/></body>
    </body>
  </worldbody>{extra}
  <keyframe><key name="k" qvel="1.5 -2 0"/></keyframe>
</mujoco>"""


def group_com(m, d, groups):
    """MuJoCo's centre of mass of each group of bodies (``mjcf.body_groups``)."""
    return np.array([sum(m.body_mass[b] * d.xipos[b] for b in g) / sum(m.body_mass[b] for b in g) for g in groups])


def test_a_massless_jointless_frame_folds_into_its_host_and_follows_mujoco_c():
    """The elbow frame (and the knob inside it), the tip and the point mass fold into the arm's links
    (their geoms parts of the links' compounds at their composed poses: every folded geom where MuJoCo
    puts it), the crate into its massless carriage (its mass and inertia the carriage's, turned into
    the carriage's frame); the forearm's mass and inertia are its own and the point mass's about their
    common centre of mass, and its hinge hangs from the upper arm through the folded elbow's pose.
    The start's velocities are MuJoCo's at each combined centre of mass. From the keyframe's swing, the first 100 steps follow MuJoCo C within 1 mm (measured 0.30 mm); the
    crate lands on its edge at its height (to 0.1 mm after 250 steps, where MuJoCo's soft contact,
    16 mm deep at the impact, has come back to 0.08 mm of it)."""
    m = mujoco.MjModel.from_xml_string(FOLD.format(extra=""))
    scene, params, state, model = mjcf.from_mujoco(m, keyframe="k")
    assert scene.names == ("upper", "fore", "carriage") and scene.joints.kinds == ("hinge", "hinge", "slide")
    groups = mjcf.body_groups(m)
    assert groups == ((1, 2, 3), (4, 5, 6), (7, 8))
    assert scene.shapes == ("compound", "compound", "hull") and len(scene.parts[0]) == 3 and len(scene.parts[1]) == 2
    d = mjcf.mujoco_data(m, keyframe=0)
    folded = mjcf.FoldedModel(mujoco, m)
    for g in range(1, m.ngeom):  # every geom at its host's pose composed with its own: where MuJoCo puts it
        h = folded.geom_bodyid[g]
        R = d.xmat[h].reshape(3, 3)
        np.testing.assert_allclose(d.xpos[h] + R @ folded.geom_pos[g], d.geom_xpos[g], atol=1e-12)
        np.testing.assert_allclose(R @ np.asarray(quat_to_mat(jnp.asarray(folded.geom_quat[g]))), d.geom_xmat[g].reshape(3, 3),
                                   atol=1e-12)
    # the crate's mass and inertia, turned by 20° about x into the carriage's frame, are the carriage's
    R = np.asarray(quat_to_mat(jnp.asarray([np.cos(np.radians(10)), np.sin(np.radians(10)), 0.0, 0.0])))
    I_crate = 2.0 * (0.2 ** 2 + 0.2 ** 2) / 12 * np.eye(3)  # a cube: the same about any axis
    np.testing.assert_allclose(np.asarray(params.body.mass), [1.0, 0.8, 2.0], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(params.body.inertia[2]), R @ I_crate @ R.T, atol=1e-12)
    # the forearm: a 0.3 m box of 0.5 kg centred at 0.15 m and 0.3 kg at (0.25, 0, 0.01), about their centre
    c = (0.5 * np.array([0.15, 0, 0]) + 0.3 * np.array([0.25, 0, 0.01])) / 0.8
    box = 0.5 / 3 * np.diag([0.02 ** 2 + 0.02 ** 2, 0.15 ** 2 + 0.02 ** 2, 0.15 ** 2 + 0.02 ** 2])
    shift = lambda mass, r: mass * (r @ r * np.eye(3) - np.outer(r, r))
    I_fore = box + shift(0.5, np.array([0.15, 0, 0]) - c) + shift(0.3, np.array([0.25, 0, 0.01]) - c)
    np.testing.assert_allclose(np.asarray(params.body.inertia[1]), I_fore, atol=1e-12)
    np.testing.assert_allclose(np.asarray(params.joints.anchor_child[1]), -c, atol=1e-12)
    # the forearm's hinge: the elbow's anchor in the upper arm's frame (its centre of mass at 0.2 m)
    np.testing.assert_allclose(np.asarray(params.joints.anchor_parent[1]), [0.2, 0.0, 0.0], atol=1e-12)
    axis = np.asarray(params.joints.axis_parent[1])
    np.testing.assert_allclose(axis / np.linalg.norm(axis), [-np.sin(np.radians(30)), np.cos(np.radians(30)), 0.0],
                               atol=1e-12)
    v6, vel = np.zeros(6), []  # each group's centre-of-mass velocity in MuJoCo: the start's
    for grp in groups:
        vs = []
        for k in grp:
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, k, v6, 0)
            vs.append(m.body_mass[k] * v6[3:])
        vel.append(sum(vs) / sum(m.body_mass[k] for k in grp))
    np.testing.assert_allclose(np.asarray(state.vel), vel, atol=1e-12)
    assert np.linalg.norm(vel[1]) > 0.1
    traj, info = worlds.rollout(model, scene, params, state, 250)
    ref = [group_com(m, d, groups)]
    for _ in range(250):
        mujoco.mj_step(m, d)
        mujoco.mj_kinematics(m, d)
        ref.append(group_com(m, d, groups))
    err = np.linalg.norm(np.asarray(traj.pos[:101]) - np.array(ref[:101]), axis=-1)
    assert err.max() < 1e-3, err.max(axis=0)  # measured 0.30 mm
    rest = 0.1 * (np.cos(np.radians(20)) + np.sin(np.radians(20)))  # the crate on its edge
    assert abs(float(traj.pos[-1, 2, 2]) - rest) < 1e-4 and abs(ref[-1][2, 2] - rest) < 5e-4
    assert float(traj.pos[100, 2, 2]) > rest + 0.05  # still falling at step 100
    assert int(np.bitwise_or.reduce(np.asarray(info.flags[:100]))) == 0
    assert not int(np.bitwise_or.reduce(np.asarray(info.flags))) & int(Flags.NONFINITE | Flags.INVALID_INPUT)


def test_an_equality_on_a_folded_body_and_a_folded_site_name_the_host():
    """A connect equality from the folded tip (a body) to the world: its row holds the forearm (the
    tip's host) at the anchor moved into the forearm's frame; the point stays at its world position
    within 0.1 mm over 200 steps, and the arm, which it leaves no freedom, within 10 µm. The folded elbow's site is the upper arm's, at
    its pose in the arm's frame."""
    m = mujoco.MjModel.from_xml_string(FOLD.format(extra='<equality><connect body1="tip" body2="world" '
                                                         'anchor="0.02 0 0"/></equality>'))
    folded = mjcf.FoldedModel(mujoco, m)
    s = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "mark")
    assert folded.site_bodyid[s] == 1 and folded.host[3] == 1  # the knob, inside the folded elbow, too
    np.testing.assert_allclose(folded.site_pos[s], [0.4, 0.0, 0.05], atol=1e-12)
    np.testing.assert_allclose(np.abs(folded.site_quat[s] @ [np.cos(np.radians(15)), 0, 0, np.sin(np.radians(15))]), 1.0,
                               atol=1e-12)
    assert folded.kept == (1, 4, 7) and folded.folded == {2, 3, 5, 6, 8}
    scene, params, state, model = mjcf.from_mujoco(m)
    assert scene.joints.kinds[-1] == "connect" and scene.joints.child[-1] == 1 and scene.joints.parent[-1] == -1
    d = mjcf.mujoco_data(m)
    tip = d.xpos[5] + d.xmat[5].reshape(3, 3) @ [0.02, 0.0, 0.0]
    np.testing.assert_allclose(np.asarray(params.joints.anchor_parent[-1]), tip, atol=1e-12)
    traj, info = worlds.rollout(model, scene, params, state, 200)
    jp = params.joints
    body = lambda t: jax.tree_util.tree_map(lambda x: x[t, 1], traj)
    gap = [float(jnp.linalg.norm(J.point_rows(jp.anchor_parent[-1], jp.anchor_child[-1], body(t), None)[2]))
           for t in (0, 100, 200)]
    assert max(gap) < 1e-4, gap
    # the two hinges with the tip pinned leave the arm no freedom: it hangs where it is (it falls without the pin)
    assert float(jnp.max(jnp.abs(traj.pos[:, :2] - traj.pos[0, :2]))) < 1e-5


def test_to_mjcf_writes_a_folded_body_as_one_body_of_several_geoms():
    """``to_mjcf`` of the folded world: MuJoCo compiles it with the same three moving bodies (each
    host one body of its parts), masses, inertias and centres of mass, and ``from_mjcf`` of it gives
    the same world back."""
    m = mujoco.MjModel.from_xml_string(FOLD.format(extra=""))
    scene, params, state, model = mjcf.from_mujoco(m)
    xml = mjcf.to_mjcf(scene, params, state, model)
    back = mujoco.MjModel.from_xml_string(xml)
    assert back.nbody == 4 and back.ngeom == 1 + 3 + 2 + 1
    s2, p2, st2, _ = mjcf.from_mjcf(xml)
    assert s2.shapes == scene.shapes and s2.joints.kinds == scene.joints.kinds
    for a, b in ((p2.body.mass, params.body.mass), (p2.body.inertia, params.body.inertia), (st2.pos, state.pos),
                 (st2.quat, state.quat), (p2.joints.anchor_parent, params.joints.anchor_parent)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-9)
