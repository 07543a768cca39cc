"""Tilted planes from and to MuJoCo files (``worlds.from_mjcf``/``to_mjcf``, docs/worlds.md "Planes at any
tilt"): a plane geom that is not the floor (on the world body or a body without a joint) loads as one of the
world's ``Scene.planes`` at MuJoCo's compiled pose with its geom's μ; ``to_mjcf`` writes it back (round trip)
with the ``<pair>``s that make MuJoCo use jaxcontact's μ; a box slides down the loaded ramp in jaxcontact
and in MuJoCo C on the written file alike; a plane on a moving body is refused by name."""

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from jaxcontact import worlds  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402

ANGLE = np.radians(23.0)
RAMP = """<mujoco><option timestep="0.002"/><worldbody>
<geom name="floor" type="plane" size="0 0 1" friction="0.8"/>
<geom name="ramp" type="plane" size="0 0 1" pos="0 0 0.3" euler="0 23 0" friction="0.2"/>
<body name="stand"><geom name="wall" type="plane" size="0 0 1" pos="2 0 0" zaxis="-1 0 0" friction="0.5"/>
  <geom type="box" size="0.1 0.1 0.1" pos="3 3 0.1" friction="0.8"/></body>
<body name="box" pos="0 0 {z}" euler="0 23 0"><freejoint/><geom name="b" type="box" size="0.05 0.05 0.05" mass="1" friction="0.8"/></body>
</worldbody></mujoco>"""


def _ramp_xml():
    n = np.array([np.sin(ANGLE), 0.0, np.cos(ANGLE)])
    z = 0.3 / n[2] * n[2] + 0.05 / n[2]  # the box's centre 5 cm above the ramp through (0, 0, 0.3)
    return RAMP.format(z=z), n


def test_tilted_planes_load_at_mujocos_pose_with_their_friction_and_write_back():
    """The ramp (world body) and the wall (a jointless body's geom, beside its box: a fixed body) load as two
    planes: normals and offsets as MuJoCo's compiled geom frames (1e-12), μ 0.2 and 0.5, the floor stays the
    ground, a FrictionRuleWarning for MuJoCo's max rule; ``to_mjcf`` → ``from_mjcf`` gives them back (1e-12)
    without the warning (the written ``<pair>``s carry the planes' μ)."""
    xml, n = _ramp_xml()
    with pytest.warns(mjcf.FrictionRuleWarning, match="plane 'ramp'"):
        scene, params, state, model = worlds.from_mjcf(xml)
    assert scene.planes == 2 and scene.ground and scene.fixed == (0,)
    np.testing.assert_allclose(np.asarray(params.planes.normal), [n, [-1.0, 0.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(np.asarray(params.planes.offset), [0.3 * n[2], -2.0], atol=1e-12)
    np.testing.assert_allclose(np.asarray(params.planes.friction), [0.2, 0.5])
    text = worlds.to_mjcf(scene, params, state, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mjcf.FrictionRuleWarning)
        s2, p2, _, _ = worlds.from_mjcf(text, keyframe="initial")
    assert s2.planes == 2
    for a, b in ((p2.planes.normal, params.planes.normal), (p2.planes.offset, params.planes.offset),
                 (p2.planes.friction, params.planes.friction)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)


def test_a_box_slides_down_a_loaded_ramp_as_in_mujoco_c():
    """0.3 s on the 23° ramp of μ 0.2 (the box's 0.8: MuJoCo's max rule taken off by the written pair): the
    slide here is a t²/2 (1 + 1/T) of a = g (sin θ − μ cos θ) to 1 %, and MuJoCo C's on ``to_mjcf``'s file
    within 3 % of it (its soft contact, docs/worlds.md "Fixed scenery": 0.8 % less on a box ramp)."""
    xml, n = _ramp_xml()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mjcf.FrictionRuleWarning)
        scene, params, state, model = worlds.from_mjcf(xml)
    steps = 150
    traj, infos = worlds.rollout(model, scene, params, state, steps)
    down = np.array([np.cos(ANGLE), 0.0, -np.sin(ANGLE)])
    slid = float((np.asarray(traj.pos[-1, 1]) - np.asarray(traj.pos[0, 1])) @ down)
    a = abs(model.gravity) * (np.sin(ANGLE) - 0.2 * np.cos(ANGLE))
    t = steps * model.dt
    assert slid == pytest.approx(a * t * t / 2 * (1 + 1 / steps), rel=1e-2)
    m = mujoco.MjModel.from_xml_string(worlds.to_mjcf(scene, params, state, model))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    start = d.qpos[:3].copy()
    for _ in range(steps):
        mujoco.mj_step(m, d)
    assert float((d.qpos[:3] - start) @ down) == pytest.approx(slid, rel=3e-2)


def test_a_plane_on_a_moving_body_or_alone_on_a_jointless_body_is_refused_by_name():
    """A plane on a free body (MuJoCo's compiler refuses it, named), a plane alone on a jointless body."""
    moving = """<mujoco><worldbody><body name="paddle" pos="0 0 1"><freejoint/>
      <geom type="box" size=".1 .1 .1"/><geom name="blade" type="plane" size="1 1 1"/></body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match="plane only allowed in static bodies"):  # MuJoCo's compiler refuses it
        worlds.from_mjcf(moving)
    alone = """<mujoco><worldbody><geom type="plane" size="1 1 1"/><body name="stand" pos="0 0 0">
      <geom name="w" type="plane" size="1 1 1" zaxis="1 0 0"/></body>
      <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match="geom 'w' \\(plane\\).*a plane alone on a body without a joint"):
        worlds.from_mjcf(alone)
