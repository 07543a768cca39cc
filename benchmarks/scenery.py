"""Fixed scenery (issue 62, items 3 and 8) against the hand calculation and MuJoCo C.

    python -m benchmarks scenery                    # about 3 min on 2 shared cores
    python -m benchmarks scenery --only ramp

- ``ramp``: a 0.1 m box on a fixed ramp (``scenes.ramp``: a 2 m board turned by θ about y), from
  rest, 0.5 s (250 steps of 2 ms), float64, for (θ, μ) in (0.4, 0.2), (0.6, 0.3), (0.3, 0.4) (the last
  sticks: tan θ < μ): the distance slid down the slope against a t²/2 (1 + 1/T) (semi-implicit
  Euler's sum, a = g (sin θ − μ cos θ)) and against MuJoCo C on ``to_mjcf``'s file of the same world
  (its defaults: soft contact, pyramidal cone; and the elliptic cone), and how deep each engine's
  box sits in the ramp at the end.
- ``table``: ``jaxcontact/data/scenes/box_on_table.xml`` (a box dropped 6 cm onto a fixed table top),
  1 s: the box's resting height above the top in both engines (MuJoCo's soft contact sinks it).
- ``bin``: ``jaxcontact/data/scenes/walled_bin.xml`` (4 boxes dropped into a bin of 4 fixed walls),
  2 s: whether every box stays inside the walls (centre within the inner faces less half a box's
  edge), the deepest penetration into a wall (from the pairs' φ) and the flags, here; the same
  file in MuJoCo: every box inside too.

Writes ``--out`` (.json) and prints one line per measurement.
"""

from __future__ import annotations

import sys

import numpy as np

from .common import SCENES_DIR, machine_info

RAMP_CASES = ((0.4, 0.2), (0.6, 0.3), (0.3, 0.4))
T_RAMP = 250


def _mujoco_slide(xml, steps, down, cone):
    import mujoco

    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.cone = cone
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    box = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "body1")
    x0 = d.xipos[box].copy()
    for _ in range(steps):
        mujoco.mj_step(m, d)
    depth = max([-c.dist for c in d.contact[: d.ncon]] + [0.0])
    return float((d.xipos[box] - x0) @ down), float(depth)


def ramp(res):
    import mujoco

    from jaxcontact import worlds
    from jaxcontact.worlds import mjcf, scenes

    model = worlds.model()
    out = []
    for angle, mu in RAMP_CASES:
        scene, params, state = scenes.ramp(angle, mu)
        traj, info = worlds.rollout(model, scene, params, state, T_RAMP)
        down, normal = scenes.ramp_axes(angle)
        moved = float((traj.pos[-1, 1] - traj.pos[0, 1]) @ down)
        a = max(model.gravity * (np.sin(angle) - mu * np.cos(angle)), 0.0)
        t = T_RAMP * model.dt
        hand = 0.5 * a * t * t * (1 + 1 / T_RAMP)
        sunk = float(-np.min(np.asarray(info.pair_phi[-1])))
        xml = mjcf.to_mjcf(scene, params, state, model)
        pyr, pyr_depth = _mujoco_slide(xml, T_RAMP, down, mujoco.mjtCone.mjCONE_PYRAMIDAL)
        ell, ell_depth = _mujoco_slide(xml, T_RAMP, down, mujoco.mjtCone.mjCONE_ELLIPTIC)
        row = {"angle": angle, "mu": mu, "sticks": bool(np.tan(angle) < mu), "slid_m": moved, "hand_m": hand,
               "mujoco_pyramidal_m": pyr, "mujoco_elliptic_m": ell, "depth_m": sunk,
               "mujoco_pyramidal_depth_m": pyr_depth, "mujoco_elliptic_depth_m": ell_depth,
               "flags": int(np.bitwise_or.reduce(np.asarray(info.flags)))}
        out.append(row)
        print(f"ramp: {row}", flush=True)
    res["ramp"] = {"steps": T_RAMP, "dt": model.dt, "cases": out}


def table(res, steps=500):
    import mujoco

    from jaxcontact import worlds
    from jaxcontact.worlds import mjcf

    path = str(SCENES_DIR / "box_on_table.xml")
    scene, params, state, model = mjcf.from_mjcf(path)
    traj, info = worlds.rollout(model, scene, params, state, steps)
    top = 0.5 + 0.02
    ours = float(traj.pos[-1, 1, 2] - top - 0.05)
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    for _ in range(steps):
        mujoco.mj_step(m, d)
    theirs = float(d.xipos[2, 2] - top - 0.05)
    res["table"] = {"steps": steps, "height_above_rest_m": ours, "mujoco_height_above_rest_m": theirs,
                    "speed_m_s": float(np.linalg.norm(traj.vel[-1, 1])),
                    "flags": int(np.bitwise_or.reduce(np.asarray(info.flags)))}
    print(f"table: {res['table']}", flush=True)


def bin_(res, steps=1000):
    import mujoco

    from jaxcontact import worlds
    from jaxcontact.worlds import mjcf

    path = str(SCENES_DIR / "walled_bin.xml")
    scene, params, state, model = mjcf.from_mjcf(path)
    traj, info = worlds.rollout(model, scene, params, state, steps)
    inner = 0.15 - 0.04
    boxes = [i for i in range(scene.num_bodies) if i not in scene.fixed]
    xy = np.abs(np.asarray(traj.pos[:, boxes, :2]))
    wall_pairs = [k for k, (a, b) in enumerate(scene.pairs) if (a in scene.fixed) != (b in scene.fixed)]
    deepest = float(max(0.0, -np.min(np.asarray(info.pair_phi)[:, wall_pairs])))
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    mj_xy = 0.0
    for _ in range(steps):
        mujoco.mj_step(m, d)
        mj_xy = max(mj_xy, float(np.max(np.abs(d.xipos[1:5, :2]))))
    res["bin"] = {"steps": steps, "largest_abs_xy_m": float(xy.max()), "inner_limit_m": inner,
                  "inside": bool(xy.max() < inner), "deepest_in_a_wall_m": deepest,
                  "final_heights_m": [float(z) for z in np.asarray(traj.pos[-1, boxes, 2])],
                  "mujoco_largest_abs_xy_m": mj_xy, "mujoco_inside": bool(mj_xy < inner),
                  "mujoco_final_heights_m": [float(z) for z in d.xipos[1:5, 2]],
                  "flags": int(np.bitwise_or.reduce(np.asarray(info.flags)))}
    print(f"bin: {res['bin']}", flush=True)


def run(args, out):
    """``python -m benchmarks scenery``: ``out`` (``runner.Results``) gets the JSON (of the cases run)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    res = {"machine": machine_info("benchmarks.scenery", command=args.command)}
    for part in args.only.split(","):
        {"ramp": ramp, "table": table, "bin": bin_}[part](res)
    out.write(res)


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
