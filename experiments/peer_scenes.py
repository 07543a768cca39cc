"""Three mixed scenes, each one description, for jaxcontact, MuJoCo C and Bullet alike
(``benchmarks.side_by_side`` runs and compares them; its docstring states the scenes, the engines'
settings and the tolerances). Here: the descriptions (``SCENES``), the MJCF text all three start
from (``mjcf_text``), the Bullet world built from the same description (``bullet_world``), one
runner per engine (``ENGINES``: positions, rotations and velocities of the moving bodies, the
deepest penetration reported) and what is measured on each scene (``MEASURES``).
"""

from __future__ import annotations

import math

import numpy as np

DT = 0.002
G = 9.81


# --------------------------------------------------------------------------------------------
# The scenes: one description each
# --------------------------------------------------------------------------------------------

def _quat_y(angle):
    return (math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0)


def _quat_x(angle):
    return (math.cos(angle / 2), math.sin(angle / 2), 0.0, 0.0)


def _random_quat(rng):
    q = rng.normal(size=4)
    return tuple(float(x) for x in q / np.linalg.norm(q))


def _geom(name, kind, size, pos, quat=(1.0, 0.0, 0.0, 0.0), mass=None, vel=(0, 0, 0), omega=(0, 0, 0)):
    """One geom of a scene: a fixed one (``mass`` None, on the world body) or a free body of one geom."""
    return {"name": name, "kind": kind, "size": tuple(float(s) for s in size), "pos": tuple(float(p) for p in pos),
            "quat": tuple(float(q) for q in quat), "mass": mass, "vel": tuple(map(float, vel)),
            "omega": tuple(map(float, omega))}


BIN_HALF = 0.12   # the inner half-width of the bin
WALL = 0.02       # the walls' half-thickness


def bin_scene(seed: int = 0):
    rng = np.random.default_rng(seed)
    o = BIN_HALF + WALL
    geoms = [_geom("wall_e", "box", (WALL, o + WALL, 0.2), (o, 0, 0.2)),
             _geom("wall_w", "box", (WALL, o + WALL, 0.2), (-o, 0, 0.2)),
             _geom("wall_n", "box", (BIN_HALF, WALL, 0.2), (0, o, 0.2)),
             _geom("wall_s", "box", (BIN_HALF, WALL, 0.2), (0, -o, 0.2))]
    shapes = [("box", (0.025, 0.025, 0.025)), ("sphere", (0.03,)), ("capsule", (0.02, 0.03)),
              ("cylinder", (0.03, 0.025))]
    for k in range(16):
        layer, cell = divmod(k, 4)
        kind, size = shapes[(k + layer) % 4]
        xy = (0.06 * (1 if cell % 2 else -1), 0.06 * (1 if cell // 2 else -1))
        geoms.append(_geom(f"{kind}{k}", kind, size, (xy[0], xy[1], 0.08 + 0.11 * layer), _random_quat(rng), mass=0.1))
    return {"name": "bin", "mu": 0.5, "steps": 1000, "geoms": geoms}


RAMP_ANGLE = 0.25
RAMP_CENTRE = (0.0, 0.0, 0.35)
RAMP_HALF = (0.25, 0.1, 0.01)
BALL_R = 0.03
TABLE_TOP = 0.2


def along(s, off):
    """A point s along the tilted board's long axis and ``off`` along its normal, from its centre."""
    c, sn = math.cos(RAMP_ANGLE), math.sin(RAMP_ANGLE)
    return (RAMP_CENTRE[0] + s * c + off * sn, 0.0, RAMP_CENTRE[2] - s * sn + off * c)


def ramp_scene():
    end = along(RAMP_HALF[0], RAMP_HALF[2])
    table_half = (0.3, 0.2, 0.05)
    geoms = [_geom("board", "box", RAMP_HALF, RAMP_CENTRE, _quat_y(RAMP_ANGLE)),
             _geom("table", "box", table_half, (end[0] + 0.05 + table_half[0], 0.0, TABLE_TOP - table_half[2])),
             _geom("ball", "sphere", (BALL_R,), along(-0.2, RAMP_HALF[2] + BALL_R + 1e-4), mass=0.1)]
    return {"name": "ramp", "mu": 0.8, "steps": 600, "geoms": geoms}


DOMINO_HALF = (0.01, 0.04, 0.06)


def dominoes_scene():
    geoms = [_geom(f"domino{k}", "box", DOMINO_HALF, (0.1 + 0.07 * k, 0.0, DOMINO_HALF[2]), mass=0.05)
             for k in range(5)]
    geoms.append(_geom("capsule", "capsule", (0.025, 0.04), (0.0, 0.0, 0.10), _quat_x(math.pi / 2), mass=0.2,
                       vel=(2.5, 0.0, 0.0)))
    return {"name": "dominoes", "mu": 0.5, "steps": 750, "geoms": geoms}


HEAP_SHAPES = {"box": ("box", (0.025, 0.025, 0.025)), "sphere": ("sphere", (0.03,)),
               "capsule": ("capsule", (0.02, 0.03)), "cylinder": ("cylinder", (0.03, 0.025))}


def heap_scene(kinds=("box",), n: int = 16, seed: int = 0, spacing: float = 0.1):
    """``n`` bodies (cycling through ``kinds``, sized as ``HEAP_SHAPES``, 0.1 kg) in layers of a
    4 × 4 grid ``spacing`` apart, the lowest 0.1 m up, random orientations and ±5 mm of sideways
    jitter from ``seed``, dropped on the open floor, μ 0.5, 1,000 steps."""
    rng = np.random.default_rng(seed)
    geoms = []
    for k in range(n):
        layer, cell = divmod(k, 16)
        kind, size = HEAP_SHAPES[kinds[k % len(kinds)]]
        x = (cell % 4 - 1.5) * spacing + rng.uniform(-0.005, 0.005)
        y = (cell // 4 - 1.5) * spacing + rng.uniform(-0.005, 0.005)
        geoms.append(_geom(f"{kind}{k}", kind, size, (x, y, 0.1 + spacing * layer), _random_quat(rng), mass=0.1))
    return {"name": f"heap of {n}", "mu": 0.5, "steps": 1000, "geoms": geoms}


SCENES = {"bin": bin_scene, "ramp": ramp_scene, "dominoes": dominoes_scene}


def mjcf_text(scene) -> str:
    """The scene as MJCF: the floor and fixed geoms on the world body, each moving geom a body on a
    free joint, its start velocity in a keyframe named ``initial``."""
    mu = scene["mu"]
    fmtv = lambda v: " ".join(f"{x:.12g}" for x in v)
    lines = [f'<mujoco model="{scene["name"]}">', f'  <option timestep="{DT}" gravity="0 0 {-G}"/>',
             f'  <default><geom friction="{mu} 0.005 0.0001"/></default>', "  <worldbody>",
             '    <geom name="floor" type="plane" size="0 0 0.05"/>']
    qpos, qvel = [], []
    for g in scene["geoms"]:
        geom = f'type="{g["kind"]}" size="{fmtv(g["size"])}"'
        if g["mass"] is None:
            lines.append(f'    <geom name="{g["name"]}" {geom} pos="{fmtv(g["pos"])}" quat="{fmtv(g["quat"])}"/>')
            continue
        lines += [f'    <body name="{g["name"]}" pos="{fmtv(g["pos"])}" quat="{fmtv(g["quat"])}">',
                  "      <freejoint/>",
                  f'      <geom {geom} mass="{g["mass"]}"/>', "    </body>"]
        qpos += list(g["pos"]) + list(g["quat"])
        qvel += list(g["vel"]) + list(_body_frame(g["quat"], g["omega"]))
    lines += ["  </worldbody>", f'  <keyframe><key name="initial" qpos="{fmtv(qpos)}" qvel="{fmtv(qvel)}"/></keyframe>',
              "</mujoco>"]
    return "\n".join(lines)


def _rot(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _body_frame(q, omega):
    """MuJoCo's free joint takes the angular velocity in the body frame."""
    return _rot(q).T @ np.asarray(omega, float)


def moving(scene):
    return [g for g in scene["geoms"] if g["mass"] is not None]


# --------------------------------------------------------------------------------------------
# The three engines: each returns positions (T+1, n, 3), rotations (T+1, n, 3, 3), velocities (T+1, n, 3)
# of the moving bodies in ``moving(scene)`` order, and the deepest penetration it reports
# --------------------------------------------------------------------------------------------

def run_jaxcontact(scene, cone=None):
    """``cone``: ``LCPSettings.cone`` of the loaded model's law (None: as loaded, the default disc)."""
    import dataclasses

    from jaxcontact import worlds
    from jaxcontact.worlds import mjcf

    sc, params, state, model = mjcf.from_mjcf(mjcf_text(scene), keyframe="initial")
    if cone is not None:
        law = model.law
        model = dataclasses.replace(model, law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=cone)))
    idx = [sc.names.index(g["name"]) for g in moving(scene)]
    traj, info = worlds.rollout(model, sc, params, state, scene["steps"])
    pos = np.asarray(traj.pos)[:, idx]
    quat = np.asarray(traj.quat)[:, idx]
    rot = np.stack([[_rot(q) for q in row] for row in quat])
    depth = float(max(0.0, -np.min(np.asarray(info.pair_phi)))) if np.size(info.pair_phi) else 0.0
    flags = int(np.bitwise_or.reduce(np.asarray(info.flags).ravel()))
    return {"pos": pos, "rot": rot, "vel": np.asarray(traj.vel)[:, idx], "depth": depth, "flags": flags}


def run_mujoco(scene, cone="pyramidal"):
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf_text(scene))
    m.opt.cone = {"pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL, "elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC}[cone]
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, g["name"]) for g in moving(scene)]
    adr = [m.jnt_dofadr[m.body_jntadr[i]] for i in ids]
    pos, rot, vel, depth = [], [], [], 0.0
    for k in range(scene["steps"] + 1):
        if k:
            mujoco.mj_step(m, d)
        pos.append(d.xpos[ids].copy())
        rot.append(d.xmat[ids].reshape(-1, 3, 3).copy())
        vel.append(np.stack([d.qvel[a:a + 3] for a in adr]))
        if d.ncon:
            depth = max(depth, float(-min(c.dist for c in d.contact[: d.ncon])))
    return {"pos": np.array(pos), "rot": np.array(rot), "vel": np.array(vel), "depth": depth}


def bullet_world(scene):
    """The scene in pybullet (``DIRECT``): the client, the moving bodies' ids (in order), the inertias used."""
    import mujoco
    import pybullet as pb

    m = mujoco.MjModel.from_xml_string(mjcf_text(scene))
    cid = pb.connect(pb.DIRECT)
    pb.setGravity(0, 0, -G, physicsClientId=cid)
    pb.setTimeStep(DT, physicsClientId=cid)
    xyzw = lambda q: (q[1], q[2], q[3], q[0])

    def shape(g):
        s = g["size"]
        if g["kind"] == "box":
            return pb.createCollisionShape(pb.GEOM_BOX, halfExtents=s, physicsClientId=cid)
        if g["kind"] == "sphere":
            return pb.createCollisionShape(pb.GEOM_SPHERE, radius=s[0], physicsClientId=cid)
        if g["kind"] == "capsule":
            return pb.createCollisionShape(pb.GEOM_CAPSULE, radius=s[0], height=2 * s[1], physicsClientId=cid)
        if g["kind"] == "cylinder":
            return pb.createCollisionShape(pb.GEOM_CYLINDER, radius=s[0], height=2 * s[1], physicsClientId=cid)
        raise ValueError(f"bullet_world: no Bullet shape for {g['kind']!r}")

    def dynamics(body, mu):
        pb.changeDynamics(body, -1, lateralFriction=mu, rollingFriction=0.0, spinningFriction=0.0, restitution=0.0,
                          linearDamping=0.0, angularDamping=0.0, physicsClientId=cid)

    each = math.sqrt(scene["mu"])   # Bullet's pair friction is the product of the two
    floor = pb.createMultiBody(0, pb.createCollisionShape(pb.GEOM_PLANE, physicsClientId=cid), physicsClientId=cid)
    dynamics(floor, each)
    ids = []
    for g in scene["geoms"]:
        if g["mass"] is None:
            b = pb.createMultiBody(0, shape(g), basePosition=g["pos"], baseOrientation=xyzw(g["quat"]),
                                   physicsClientId=cid)
            dynamics(b, each)
            continue
        b = pb.createMultiBody(g["mass"], shape(g), basePosition=g["pos"], baseOrientation=xyzw(g["quat"]),
                               physicsClientId=cid)
        body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, g["name"])
        if not np.allclose(m.body_iquat[body], (1, 0, 0, 0), atol=1e-9) or np.linalg.norm(m.body_ipos[body]) > 1e-9:
            raise ValueError(f"bullet_world: {g['name']}'s inertia is not along its geom's axes")
        pb.changeDynamics(b, -1, localInertiaDiagonal=list(m.body_inertia[body]), physicsClientId=cid)
        dynamics(b, each)
        pb.resetBaseVelocity(b, g["vel"], g["omega"], physicsClientId=cid)
        ids.append(b)
    return pb, cid, ids


def run_bullet(scene):
    pb, cid, ids = bullet_world(scene)
    pos, rot, vel, depth = [], [], [], 0.0
    try:
        for k in range(scene["steps"] + 1):
            if k:
                pb.stepSimulation(physicsClientId=cid)
            p, r, v = [], [], []
            for b in ids:
                x, q = pb.getBasePositionAndOrientation(b, physicsClientId=cid)
                lin, _ = pb.getBaseVelocity(b, physicsClientId=cid)
                p.append(x)
                r.append(np.reshape(pb.getMatrixFromQuaternion(q), (3, 3)))
                v.append(lin)
            pos.append(p), rot.append(r), vel.append(v)
            points = pb.getContactPoints(physicsClientId=cid)
            if points:
                depth = max(depth, float(-min(c[8] for c in points)))
    finally:
        pb.disconnect(physicsClientId=cid)
    return {"pos": np.array(pos), "rot": np.array(rot), "vel": np.array(vel), "depth": depth}


ENGINES = {"jaxcontact": run_jaxcontact, "jaxcontact_box": lambda s: run_jaxcontact(s, "box"), "mujoco": run_mujoco,
           "mujoco_elliptic": lambda s: run_mujoco(s, "elliptic"), "bullet": run_bullet}


# --------------------------------------------------------------------------------------------
# What is compared
# --------------------------------------------------------------------------------------------

def _lowest_half_extent(g):
    s = g["size"]
    return {"box": min(s), "sphere": s[0], "capsule": s[0], "cylinder": min(s)}[g["kind"]]


def measure_bin(scene, out):
    bodies = moving(scene)
    pos, vel = out["pos"], out["vel"]
    low = np.array([_lowest_half_extent(g) for g in bodies])
    return {"inside": bool(np.all(np.abs(pos[:, :, :2]) < BIN_HALF)),
            "largest_abs_xy_m": float(np.max(np.abs(pos[:, :, :2]))),
            "not_sunk": bool(np.all(pos[:, :, 2] >= low - 1e-3)),
            "least_height_over_half_extent_m": float(np.min(pos[:, :, 2] - low)),
            "settled": bool(np.max(np.linalg.norm(vel[-1], axis=-1)) < 0.05),
            "fastest_at_end_m_s": float(np.max(np.linalg.norm(vel[-1], axis=-1))),
            "mean_height_m": float(np.mean(pos[-1, :, 2])), "highest_m": float(np.max(pos[-1, :, 2]))}


def measure_ramp(scene, out):
    pos, vel = out["pos"][:, 0], out["vel"][:, 0]
    end = along(RAMP_HALF[0], 0.0)[0]
    leave = int(np.argmax(pos[:, 0] > end))
    vz = vel[:, 2]
    kick = np.nonzero((vz[1:] - vz[:-1] > 0.5 * G * DT) & (np.arange(1, len(vz)) > leave))[0]
    land = int(kick[0] + 1) if len(kick) else None
    drop = along(-0.2, 0.0)[2] - along(RAMP_HALF[0], 0.0)[2]
    return {"leave_time_s": leave * DT, "leave_speed_m_s": float(np.linalg.norm(vel[leave])),
            "rolling_speed_m_s": math.sqrt(10 / 7 * G * drop),
            "land_time_s": None if land is None else land * DT,
            "land_x_m": None if land is None else float(pos[land, 0]),
            "land_speed_m_s": None if land is None else float(np.linalg.norm(vel[land - 1]))}


def measure_dominoes(scene, out):
    rot = out["rot"][-1]
    up = rot[:5, 2, 2]   # each domino's own z axis, its world z component
    xs = out["pos"][-1, :5, 0]
    return {"fallen": int(np.sum(up < math.cos(math.pi / 4))), "mean_x_m": float(np.mean(xs)),
            "spread_x_m": float(np.std(xs)), "capsule_x_m": float(out["pos"][-1, 5, 0])}


MEASURES = {"bin": measure_bin, "ramp": measure_ramp, "dominoes": measure_dominoes}
