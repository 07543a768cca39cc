"""The side-by-side scenes (experiments.peer_scenes, run by benchmarks.side_by_side): one world each, three engines."""

import math

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the side-by-side scenes compile through MuJoCo "
                             "(pip install -e '.[mjcf]')")

from experiments import peer_scenes as sbs  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402


@pytest.mark.parametrize("name", list(sbs.SCENES))
def test_each_scene_loads_alike_in_jaxcontact_and_mujoco(name):
    scene = sbs.SCENES[name]()
    text = sbs.mjcf_text(scene)
    m = mujoco.MjModel.from_xml_string(text)
    sc, params, state, model = mjcf.from_mjcf(text, keyframe="initial")
    moving = sbs.moving(scene)
    fixed = [g for g in scene["geoms"] if g["mass"] is None]
    assert m.nbody - 1 == len(moving)
    assert sc.num_bodies == len(moving) + len(fixed) and len(sc.fixed) == len(fixed)
    kinds = {"box": "hull", "sphere": "sphere", "capsule": "capsule", "cylinder": "cylinder"}
    for g in moving:
        i = sc.names.index(g["name"])
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, g["name"])
        assert float(params.body.mass[i]) == pytest.approx(g["mass"], rel=1e-12)
        assert float(m.body_mass[b]) == pytest.approx(g["mass"], rel=1e-12)
        assert (sc.shapes or ("hull",) * sc.num_bodies)[i] == kinds[g["kind"]]
        np.testing.assert_allclose(np.asarray(state.pos[i]), g["pos"], atol=1e-12)
        np.testing.assert_allclose(np.asarray(state.vel[i]), g["vel"], atol=1e-12)
    geom_types = sorted(mujoco.mjtGeom(t).name for t in m.geom_type)
    want = sorted(["mjGEOM_PLANE"] + [f"mjGEOM_{g['kind'].upper()}" for g in scene["geoms"]])
    assert geom_types == want


def test_the_ramp_starts_on_the_board_and_the_table_is_below_its_end():
    scene = sbs.ramp_scene()
    board, table, ball = scene["geoms"]
    end = sbs.along(sbs.RAMP_HALF[0], sbs.RAMP_HALF[2])
    assert end[2] - sbs.TABLE_TOP == pytest.approx(0.098, abs=2e-3)
    assert table["pos"][0] - table["size"][0] > end[0]
    # the ball touches the board's top face (1e-4 above it)
    n = np.array([math.sin(sbs.RAMP_ANGLE), 0.0, math.cos(sbs.RAMP_ANGLE)])
    gap = (np.array(ball["pos"]) - np.array(board["pos"])) @ n - sbs.RAMP_HALF[2] - sbs.BALL_R
    assert gap == pytest.approx(1e-4, abs=1e-12)


def test_bullet_builds_the_same_masses_inertias_and_friction():
    pb = pytest.importorskip("pybullet", reason="Bullet is a [bench] extra (pip install -e '.[bench]')")
    scene = sbs.dominoes_scene()
    client, cid, ids = sbs.bullet_world(scene)
    try:
        m = mujoco.MjModel.from_xml_string(sbs.mjcf_text(scene))
        for g, b in zip(sbs.moving(scene), ids):
            info = pb.getDynamicsInfo(b, -1, physicsClientId=cid)
            body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, g["name"])
            assert info[0] == pytest.approx(g["mass"])
            np.testing.assert_allclose(info[2], m.body_inertia[body], rtol=1e-6)
            assert info[1] ** 2 == pytest.approx(scene["mu"])   # the pair's product is μ
            lin, ang = pb.getBaseVelocity(b, physicsClientId=cid)
            np.testing.assert_allclose(lin, g["vel"], atol=1e-12)
    finally:
        pb.disconnect(physicsClientId=cid)


def test_measures_read_a_known_trajectory():
    """The ramp's leave/land detection on a hand-made ballistic path, and the domino count on poses."""
    scene = sbs.ramp_scene()
    T = 100
    t = np.arange(T + 1) * sbs.DT
    end = sbs.along(sbs.RAMP_HALF[0], 0.0)[0]
    x = end - 0.05 + 1.0 * t
    vz = np.where(np.arange(T + 1) < 60, -sbs.G * t, 0.0)
    pos = np.stack([x, 0 * x, 0.3 + 0 * x], -1)[:, None]
    vel = np.stack([np.ones_like(x), 0 * x, vz], -1)[:, None]
    m = sbs.measure_ramp(scene, {"pos": pos, "vel": vel})
    assert m["leave_time_s"] == pytest.approx(0.052, abs=1e-12)     # x passes the end after 0.05 s
    assert m["land_time_s"] == pytest.approx(60 * sbs.DT)
    assert m["land_speed_m_s"] == pytest.approx(math.hypot(1.0, sbs.G * 59 * sbs.DT))
    rot = np.tile(np.eye(3), (2, 6, 1, 1))
    rot[-1, :2] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]   # two dominoes lying (their z axis horizontal)
    out = {"rot": rot, "pos": np.zeros((2, 6, 3))}
    assert sbs.measure_dominoes(sbs.dominoes_scene(), out)["fallen"] == 2
