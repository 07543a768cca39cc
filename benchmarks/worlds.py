"""Worlds of many bodies against MuJoCo C (and MJX), measured in one module: the 10-box stack
standing for 10 s, cross-checks on the same scenes with stated tolerances, and the heap's speed.

    python -m benchmarks worlds                       # every part
    python -m benchmarks worlds --only stack          # parts: stack, pyramid, collision, heapcheck, mjspeed, heapspeed, mjx, mjcf
    python -m benchmarks worlds --only crosscheck     # = collision,heapcheck
    python -m benchmarks worlds --only heapcheck --heap-seed-start 3 --heap-seeds 3   # 3 more jaxcontact seeds
    python -m benchmarks worlds --render              # the .md again from the .json

The parts are workloads declared in ``benchmarks/runner.py`` (``WORLDS_PARTS``), each run by its
``part_<name>``. Each part writes its own section of ``benchmarks/results/worlds.json`` (with the command, date and
commit of the run that made it) and leaves the other sections as they are; the ``.md`` is rendered
from the whole file.

* **stack** — ten 0.1 m, 0.37 kg boxes built at rest, face to face on the ground, μ = 0.5, 2 ms
  steps, for 10 s. jaxcontact: ``worlds.scenes.stack`` with the default world law
  (``worlds.DEFAULT_LAW``), float64 and float32. MuJoCo C: the same boxes on free joints,
  pyramidal cone (and elliptic, its default), its default solver, ``mujoco.rollout`` on 1 thread.
* **collision** — a box sliding at 1 m/s into an identical resting box, 5 mm ahead, on a
  frictionless ground (``scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)``), 1 s:
  both boxes' velocities after the impact and the momentum, against the analytic common velocity
  and MuJoCo C (frictionless: ``condim=1``; MuJoCo has no restitution coefficient, so its contact
  damping ratio is swept: 1 is its default).
* **heapcheck** — 16 boxes dropped from a loose grid (``scenes.heap(16, key)``, spacing 0.18 m, more
  than a box's diagonal, so no two boxes start inside each other) and left to settle
  for 2 s, the same initial poses and velocities in MuJoCo C (free joints; both store quaternions
  w, x, y, z and the free joint's angular velocity in the body frame, as ``State.omega``): the
  heap's centre-of-mass height and the number of boxes resting on the ground, over seeds
  (MuJoCo also with the two-box check's damping ratio 4, to show how much its own answer moves).
* **mjspeed** — the heap, 1,000 steps, 64 and 256 worlds in MuJoCo C (``mujoco.rollout`` on 1
  thread; on 2 threads through a persistent ``rollout.Rollout(nthread=2)`` pool).
* **heapspeed** — the same in jaxcontact float32 (``worlds.batch_rollout(..., output="final")``: compile time,
  memory per world from XLA's memory analysis, box-steps/s measured on short windows and
  extrapolated where a full run would take hours, labelled so), and where jaxcontact's time goes
  (collision, problem assembly, solve, timed apart under ``jit`` on a settled heap; sweeps per step).
* **mjcf** — the three scenes of ``jaxcontact/data/scenes`` (the 10-box stack, the 4-3-2-1
  pyramid, two hinged links with a box dropped on them), each file loaded by ``worlds.from_mjcf``
  and by MuJoCo C, run for 1 s from MuJoCo's reset state (float64): every body's centre of mass
  and orientation compared every 50 steps, within ``MJCF_POS_TOL`` and ``MJCF_ANGLE_TOL``.
* **mjx** — the same heap in MJX (``jit`` of a ``lax.scan`` over ``vmap(mjx.step)``), 64 and 256
  worlds, 1,000 steps, in a child process killed after ``--mjx-timeout`` seconds (300).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .common import cast_floats, machine_info, md_machine, md_table
from .common import (HEAP_SPACING, heap_states, heap_stats, mjx_child, mujoco_boxes_xml, mujoco_heap, mujoco_heap_speed,
                     mujoco_initial_states, run_mjx, to_mujoco)
from .common import stage_times as stage_times_of_step
from .runner import run_info

SIZE, MASS, MU, DT = 0.1, 0.37, 0.5, 0.002

# tolerances of the cross-checks (why: docs/worlds.md and the .md these write)
ANALYTIC_TOL = 1e-4  # m/s: jaxcontact's two boxes against the analytic common velocity v/2
MJ_COLLISION_TOL = 0.01  # m/s (1 % of the approach speed): jaxcontact against MuJoCo's overdamped contact
MJ_COLLISION_DAMPING = 4.0  # MuJoCo's damping ratio for that check (its default 1 bounces back, ε ≈ 0.12)
MOMENTUM_TOL = 1e-6  # relative
HEAP_SIGMAS = 2.0  # the heap statistics agree within this many standard errors of their difference
HEAP_FLOOR = 0.002  # m: and never tighter than this on the centre-of-mass height (MuJoCo's soft contacts sink mm)
# the mjcf part: jaxcontact and MuJoCo C on the same file, every body's centre of mass and orientation
MJCF_FILES = ("stack10.xml", "pyramid4.xml", "hinged_links.xml")  # jaxcontact/data/scenes
MJCF_SECONDS = 1.0
MJCF_POS_TOL = 0.005  # m: MuJoCo's soft contacts let bodies sink mm (its 10-box stack's top 1.6 mm in 1 s); at the
# end of the run, and during it plus MuJoCo's deepest contact penetration of the run (an impact sinks a body into
# MuJoCo's soft contact by up to that depth, where jaxcontact's hard contact stops it)
MJCF_ANGLE_TOL = 0.05  # rad


# ------------------------------------------------------------------------------------ MuJoCo models

# ------------------------------------------------------------------------------------ the stack

def mujoco_stack_xml(n: int, cone: str) -> str:
    """``scenes.stack(n)`` as MJCF (``worlds.to_mjcf``) with MuJoCo's ``cone``."""
    from jaxcontact.worlds import model as world_model, scenes, to_mjcf

    return to_mjcf(*scenes.stack(n, mu=MU), world_model(dt=DT), option={"cone": cone})


def mujoco_stack(n: int, seconds: float, cone: str, batch: int):
    import mujoco
    from mujoco import rollout

    model = mujoco.MjModel.from_xml_string(mujoco_stack_xml(n, cone))
    data = mujoco.MjData(model)
    steps = int(round(seconds / DT))
    state0 = np.zeros(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(model, data, state0, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    init = np.tile(state0, (batch, 1))
    # FULLPHYSICS layout: time, qpos (7 per free body), ...; rollout uses ``data`` as scratch
    top0 = state0[1 + 7 * (n - 1): 1 + 7 * (n - 1) + 3].copy()
    t = time.perf_counter()
    states, _ = rollout.rollout(model, data, init, nstep=steps)
    wall = time.perf_counter() - t
    top = states[0, -1, 1 + 7 * (n - 1): 1 + 7 * (n - 1) + 3]
    return {"top_moved_m": float(np.linalg.norm(top - top0)), "top_sink_m": float(top0[2] - top[2]),
            "box_steps_per_s": n * steps * batch / wall, "wall_s": wall, "worlds": batch, "steps": steps}


def jaxcontact_stack(n: int, seconds: float, dtype: str, batch: int):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    scene, params, s = scenes.stack(n)
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype), t)
    params, s = cast(params), cast(s)
    model = worlds.model()
    steps = int(round(seconds / DT))
    t = time.perf_counter()
    final, summary = worlds.rollout(model, scene, params, s, steps, output="final")
    jax.block_until_ready(final)
    first = time.perf_counter() - t
    t = time.perf_counter()
    final, summary = worlds.rollout(model, scene, params, s, steps, output="final")
    jax.block_until_ready(final)
    wall = time.perf_counter() - t
    out = {"top_moved_m": float(jnp.linalg.norm(final.pos[-1] - s.pos[-1])),
           "top_sink_m": float(s.pos[-1, 2] - final.pos[-1, 2]), "flags": int(summary.flags),
           "compile_s": first - wall, "box_steps_per_s": n * steps / wall, "wall_s": wall, "worlds": 1,
           "steps": steps}
    # contact-solver sweeps per step over the first 500 steps (a trajectory rollout keeps every step's info)
    _, infos = worlds.rollout(model, scene, params, s, min(steps, 500))
    it = np.asarray(infos.iterations)
    out["sweeps"] = {"steps": int(it.size), "mean": float(it.mean()), "median": float(np.median(it)),
                     "p90": float(np.percentile(it, 90)), "max": int(it.max())}
    if batch > 1:
        states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), s)
        short = min(steps, 500)
        run = lambda: worlds.batch_rollout(model, scene, params, states, short, output="final")
        jax.block_until_ready(run())
        t = time.perf_counter()
        jax.block_until_ready(run())
        wb = time.perf_counter() - t
        out["batch"] = {"worlds": batch, "steps": short, "box_steps_per_s": n * short * batch / wb, "wall_s": wb}
    return out


# ------------------------------------------------------------------------------------ the pyramid

def run_pyramid(levels: int, seconds: float):
    """The ``levels``-row pyramid (4-3-2-1: 10 boxes) built at rest, for ``seconds``: how far the
    top box moves in jaxcontact (float64, float32) and MuJoCo C (pyramidal and elliptic cones)."""
    import jax
    import mujoco
    from mujoco import rollout

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    steps = int(round(seconds / DT))
    scene, params, s = scenes.pyramid(levels)
    out = {"levels": levels, "boxes": scene.num_bodies, "seconds": seconds, "steps": steps}
    for dtype in ("float64", "float32"):
        p, s0 = cast_floats(params, dtype), cast_floats(s, dtype)
        t = time.perf_counter()
        final, summary = worlds.rollout(worlds.model(), scene, p, s0, steps, output="final")
        jax.block_until_ready(final)
        top = np.asarray(final.pos[-1], np.float64) - np.asarray(s0.pos[-1], np.float64)
        out[f"jaxcontact_{dtype}"] = {"top_moved_m": float(np.linalg.norm(top)), "top_sink_m": float(-top[2]),
                                      "flags": int(summary.flags), "wall_s": time.perf_counter() - t}
        print(dtype, out[f"jaxcontact_{dtype}"], flush=True)
    one = jax.tree_util.tree_map(lambda x: np.asarray(x)[None], s)
    for cone in ("pyramidal", "elliptic"):
        m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(scene.num_bodies, MU, cone))
        qpos, qvel = to_mujoco(one)
        res, _ = rollout.rollout(m, mujoco.MjData(m), mujoco_initial_states(m, qpos, qvel), nstep=steps)
        n = scene.num_bodies
        top = res[0, -1, 1 + 7 * (n - 1): 1 + 7 * (n - 1) + 3] - qpos[0, 7 * (n - 1): 7 * (n - 1) + 3]
        out[f"mujoco_{cone}"] = {"top_moved_m": float(np.linalg.norm(top)), "top_sink_m": float(-top[2])}
        print(cone, out[f"mujoco_{cone}"], flush=True)
    return out


def render_pyramid(py):
    rows = [[name, f"{1e3 * py[name]['top_moved_m']:.3f}", f"{1e3 * py[name]['top_sink_m']:.3f}",
             _flag_names(py[name]["flags"]) if "flags" in py[name] else "—"]
            for name in ("jaxcontact_float64", "jaxcontact_float32", "mujoco_pyramidal", "mujoco_elliptic")]
    ok = py["jaxcontact_float64"]["top_moved_m"] <= 1e-4 and py["jaxcontact_float32"]["top_moved_m"] <= 1e-3
    return [f"## The {py['boxes']}-box pyramid ({'-'.join(str(py['levels'] - r) for r in range(py['levels']))}) "
            f"for {py['seconds']:g} s", "",
            md_table(["engine", "top box moved (mm)", "sank (mm)", "flags"], rows), "",
            f"The issue's bounds (≤ 0.1 mm in float64, ≤ 1 mm in float32): {_verdict(ok)}."]


# ------------------------------------------------------------------------------------ two-box collision

def jaxcontact_collision(dtype: str, steps: int):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    scene, params, s = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)
    params, s = cast_floats(params, dtype), cast_floats(s, dtype)
    traj, infos = worlds.rollout(worlds.model(), scene, params, s, steps)
    vel = np.asarray(traj.vel, np.float64)  # (steps + 1, 2, 3)
    p = MASS * vel[:, :, 0].sum(axis=1)
    p0 = MASS * 1.0
    gap = np.asarray(traj.pos[:, 1, 0] - traj.pos[:, 0, 0], np.float64) - SIZE
    return {"v": [float(vel[-1, 0, 0]), float(vel[-1, 1, 0])], "momentum_rel_err": float(np.max(np.abs(p - p0)) / p0),
            "min_gap_m": float(gap.min()), "final_gap_m": float(gap[-1]), "flags": int(np.bitwise_or.reduce(np.asarray(infos.flags))),
            "dtype": dtype, "steps": steps}


def mujoco_collision(damping: float, steps: int):
    import mujoco

    solref = None if damping == 1.0 else (0.02, damping)
    m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(2, 0.0, condim=1, solref=solref))
    d = mujoco.MjData(m)
    d.qpos[:] = [0, 0, SIZE / 2, 1, 0, 0, 0, SIZE + 0.005, 0, SIZE / 2, 1, 0, 0, 0]
    d.qvel[:] = 0.0
    d.qvel[0] = 1.0
    p0 = MASS * 1.0
    perr, min_gap = 0.0, np.inf
    for _ in range(steps):
        mujoco.mj_step(m, d)
        perr = max(perr, abs(MASS * (d.qvel[0] + d.qvel[6]) - p0) / p0)
        min_gap = min(min_gap, d.qpos[7] - d.qpos[0] - SIZE)
    v = [float(d.qvel[0]), float(d.qvel[6])]
    return {"solref": [float(x) for x in m.geom_solref[0]], "solimp": [float(x) for x in m.geom_solimp[0]], "v": v,
            "effective_restitution": (v[1] - v[0]) / 1.0, "momentum_rel_err": float(perr), "min_gap_m": float(min_gap),
            "final_gap_m": float(d.qpos[7] - d.qpos[0] - SIZE), "steps": steps}


def run_collision(steps: int = 100):
    res = {"scene": "scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0): 0.1 m, 0.37 kg boxes, mu = 0",
           "steps": steps, "dt": DT, "analytic_v": [0.5, 0.5], "tolerances": {
               "analytic_m_per_s": ANALYTIC_TOL, "mujoco_m_per_s": MJ_COLLISION_TOL,
               "mujoco_damping_ratio": MJ_COLLISION_DAMPING, "momentum_rel": MOMENTUM_TOL}}
    for dtype in ("float64", "float32"):
        res[f"jaxcontact_{dtype}"] = jaxcontact_collision(dtype, steps)
        print("collision", dtype, res[f"jaxcontact_{dtype}"], flush=True)
    res["mujoco"] = {f"{d:g}": mujoco_collision(d, steps) for d in (1.0, 2.0, 4.0, 8.0)}
    print("collision mujoco", res["mujoco"], flush=True)
    return res


COLLISION_NOTE = (
    "MuJoCo has no restitution coefficient: its contact is a spring-damper (solref: time constant, damping ratio; "
    "solimp: impedance), and with its defaults (0.02 s, 1: critical damping) the boxes part at 0.12 m/s, an effective "
    "ε of 0.12, after overlapping by 6.5 mm. An inelastic impact is the limit of a large damping ratio; the sweep shows "
    "MuJoCo's answer approaching the common velocity 0.5 m/s as the damping ratio grows (1, 2, 4, 8), with the time "
    f"constant left at its default. The check takes damping ratio {MJ_COLLISION_DAMPING:g}, where MuJoCo's separating "
    f"speed is about 1 % of the approach speed, and a tolerance of {MJ_COLLISION_TOL:g} m/s (1 % of the approach speed): "
    "it asks whether the two engines agree on the inelastic impact to the resolution MuJoCo's soft contact allows. "
    "Momentum along x is conserved by both (no friction, contact normals along x).")


def collision_checks(res):
    """[(check, measured, tolerance, PASS/FAIL)] of the two-box collision."""
    rows = []
    mj = res["mujoco"][f"{MJ_COLLISION_DAMPING:g}"]
    for dtype in ("float64", "float32"):
        r = res[f"jaxcontact_{dtype}"]
        dv = max(abs(v - 0.5) for v in r["v"])
        rows.append((f"two boxes, jaxcontact {dtype} vs analytic 0.5 / 0.5 m/s", f"max |Δv| {dv:.2e} m/s",
                     f"≤ {ANALYTIC_TOL:g} m/s", dv <= ANALYTIC_TOL))
        dm = max(abs(a - b) for a, b in zip(r["v"], mj["v"]))
        rows.append((f"two boxes, jaxcontact {dtype} vs MuJoCo C (solref 0.02 {MJ_COLLISION_DAMPING:g})",
                     f"max |Δv| {dm:.4f} m/s", f"≤ {MJ_COLLISION_TOL:g} m/s", dm <= MJ_COLLISION_TOL))
        rows.append((f"two boxes, momentum, jaxcontact {dtype}", f"{r['momentum_rel_err']:.1e}", f"≤ {MOMENTUM_TOL:g}",
                     r["momentum_rel_err"] <= MOMENTUM_TOL))
    worst = max(v["momentum_rel_err"] for v in res["mujoco"].values())
    rows.append(("two boxes, momentum, MuJoCo C (every damping ratio)", f"{worst:.1e}", f"≤ {MOMENTUM_TOL:g}",
                 worst <= MOMENTUM_TOL))
    return rows


# ------------------------------------------------------------------------------------ the heap

def initial_overlaps(scene, params, state):
    """(pairs whose manifold starts below zero distance, deepest (m)) of one world's state."""
    from jaxcontact import worlds

    con = worlds.collide(worlds.model(), scene, params, state)
    # the narrow phase's slots (every pair, or the broad phase's kept ones; a skipped pair is apart)
    phi = np.asarray(con.phi[con.num_ground:]).reshape(-1, scene.slot_contacts)
    valid = np.asarray(con.valid[con.num_ground:]).reshape(-1, scene.slot_contacts)
    d = np.where(valid, phi, np.inf).min(axis=1)
    return int(np.sum(d < 0)), float(min(d.min(), 0.0))


def jaxcontact_heap(scene, params, states, steps: int, dtype: str):
    """One ``worlds.rollout`` per seed (a batch would make every world wait for the slowest's sweeps)."""
    import jax

    from jaxcontact import worlds
    from jaxcontact.types import Flags

    model = worlds.model()
    params = cast_floats(params, dtype)
    z, speed, per = [], [], []
    for w in range(states.pos.shape[0]):
        s = cast_floats(jax.tree_util.tree_map(lambda x: x[w], states), dtype)
        t = time.perf_counter()
        traj, infos = worlds.rollout(model, scene, params, s, steps)
        jax.block_until_ready(traj)
        wall = time.perf_counter() - t
        it = np.asarray(infos.iterations)
        last_phi = float(np.asarray(infos.phi_ground[-1]).min())  # the deepest vertex against the ground
        z.append(np.asarray(traj.pos[-1, :, 2]))
        speed.append(np.linalg.norm(np.asarray(traj.vel[-1]), axis=-1))
        fl = np.asarray(infos.flags)
        per.append({"wall_s": wall, "flags": int(np.bitwise_or.reduce(fl)),
                    "flagged_steps": {f.name: int(np.sum((fl & int(f)) != 0)) for f in (Flags.PENETRATION, Flags.SOLVER)},
                    "sweeps": {"mean": float(it.mean()), "median": float(np.median(it)),
                               "p90": float(np.percentile(it, 90)), "max": int(it.max())},
                    "deepest_ground_final_m": last_phi})
        print("heap jaxcontact", dtype, w, per[-1], float(z[-1].mean()), flush=True)
    res = heap_stats(np.stack(z), np.stack(speed))
    res.update({"dtype": dtype, "worlds": len(per), "steps": steps, "per_world": per,
                "note": "wall_s of the first world includes compiling"})
    return res


def run_heapcheck(seconds: float, jax_seeds: int, mj_seeds: int, dtype: str, spacing: float, seed_start: int = 0,
                  previous=None):
    """The heap in MuJoCo C (seeds 0..mj_seeds − 1; default contact, and the two-box check's damping
    ratio 4) and in jaxcontact (seeds seed_start..seed_start + jax_seeds − 1, appended to
    ``previous``'s seeds 0..seed_start − 1 when seed_start > 0)."""
    steps = int(round(seconds / DT))
    mine = list(range(seed_start, seed_start + jax_seeds))
    scene, params, states = heap_states(list(range(max(mine[-1] + 1, mj_seeds))), spacing)
    import jax

    one = lambda w: jax.tree_util.tree_map(lambda x: x[w], states)
    old = None
    if seed_start:
        old = (previous or {}).get(f"jaxcontact_{dtype}")
        if (old is None or old["worlds"] != seed_start or previous["steps"] != steps
                or previous["spacing_m"] != spacing):
            raise SystemExit(f"--heap-seed-start {seed_start}: the results file has no jaxcontact {dtype} heap of seeds "
                             f"0..{seed_start - 1} with {steps} steps and spacing {spacing} to append to")
    res = {"boxes": 16, "seconds": seconds, "steps": steps, "spacing_m": spacing, "seeds_jaxcontact": seed_start + jax_seeds,
           "seeds_mujoco": mj_seeds,
           "initial_overlaps": (previous["initial_overlaps"] if old else []) + [initial_overlaps(scene, params, one(w)) for w in mine],
           "tolerances": {"sigmas": HEAP_SIGMAS, "com_floor_m": HEAP_FLOOR}}
    for cone in ("pyramidal", "elliptic"):
        res[f"mujoco_{cone}"] = mujoco_heap(jax.tree_util.tree_map(lambda x: x[:mj_seeds], states), steps, cone)
        print("heap mujoco", cone, np.mean(res[f"mujoco_{cone}"]["com_height_m"]), flush=True)
        res[f"mujoco_{cone}_damping4"] = mujoco_heap(jax.tree_util.tree_map(lambda x: x[:mj_seeds], states), steps, cone,
                                                     (0.02, MJ_COLLISION_DAMPING))
    jx = jaxcontact_heap(scene, params, jax.tree_util.tree_map(lambda x: x[seed_start:seed_start + jax_seeds], states),
                         steps, dtype)
    if old:
        for k in ("com_height_m", "on_ground", "max_speed_m_per_s", "heights_m", "per_world"):
            jx[k] = old[k] + jx[k]
        jx["worlds"] = len(jx["per_world"])
    res[f"jaxcontact_{dtype}"] = jx
    res["jaxcontact_dtype"] = dtype
    return res


def _agree(a, b, floor=0.0):
    """(|mean a − mean b|, tolerance): HEAP_SIGMAS standard errors of the difference of the means,
    with the two samples' pooled spread (the outcome of one drop is chaotic: its spread over seeds
    is the scale), never below ``floor``."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = len(a), len(b)
    pooled = np.sqrt(((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / max(na + nb - 2, 1))
    return abs(a.mean() - b.mean()), max(floor, HEAP_SIGMAS * pooled * np.sqrt(1 / na + 1 / nb))


def heap_checks(res):
    rows = []
    jx = res[f"jaxcontact_{res['jaxcontact_dtype']}"]
    for cone in ("pyramidal", "elliptic"):
        mj = res[f"mujoco_{cone}"]
        d, tol = _agree(jx["com_height_m"], mj["com_height_m"], HEAP_FLOOR)
        rows.append((f"heap, centre-of-mass height after {res['seconds']:g} s, jaxcontact {jx['dtype']} "
                     f"({jx['worlds']} seeds) vs MuJoCo C {cone} ({mj['worlds']} seeds)",
                     f"{1e3 * np.mean(jx['com_height_m']):.1f} vs {1e3 * np.mean(mj['com_height_m']):.1f} mm (Δ {1e3 * d:.1f} mm)",
                     f"≤ {1e3 * tol:.1f} mm", d <= tol))
        d, tol = _agree(jx["on_ground"], mj["on_ground"])
        rows.append((f"heap, boxes on the ground, jaxcontact vs MuJoCo C {cone}",
                     f"{np.mean(jx['on_ground']):.2f} vs {np.mean(mj['on_ground']):.2f} (Δ {d:.2f})", f"≤ {tol:.2f}", d <= tol))
    for name in (f"jaxcontact_{res['jaxcontact_dtype']}", "mujoco_pyramidal", "mujoco_elliptic"):
        v = max(res[name]["max_speed_m_per_s"])
        rows.append((f"heap settled after {res['seconds']:g} s, {name}: fastest box", f"{1e3 * v:.2f} mm/s", "≤ 10 mm/s", v <= 0.01))
    return rows


# ------------------------------------------------------------------------------------ heap speed

def _jit_batch(model, scene, steps):
    import jax

    from jaxcontact import worlds

    return jax.jit(lambda p, s: worlds.batch_rollout(model, scene, p, s, steps, output="final"))


def _aot(fn, *args):
    """(compiled, seconds to lower and compile, XLA memory analysis in bytes)."""
    t = time.perf_counter()
    compiled = fn.lower(*args).compile()
    c = time.perf_counter() - t
    ma = compiled.memory_analysis()
    mem = None if ma is None else {k: int(getattr(ma, k)) for k in (
        "argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes", "generated_code_size_in_bytes")}
    return compiled, c, mem


def _tile(state, W):
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W,) + x.shape), state)


def jaxcontact_heap_speed(scene, params, drops, steps: int, windows, window_steps: int, compile_batches):
    """The float32 heap: one world dropped for ``steps`` steps, measured (its trajectory gives the
    sweeps per step and the settled state); short windows of ``window_steps`` steps at ``windows``
    worlds from the settled heap; compile time and memory per world at
    ``compile_batches`` worlds (lowered and compiled, not run)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    model = worlds.model()
    params = cast_floats(params, "float32")
    drops = cast_floats(drops, "float32")
    n = drops.pos.shape[1]
    first = jax.tree_util.tree_map(lambda x: x[0], drops)
    res = {"engine": "jaxcontact float32", "steps": steps}
    full = jax.jit(lambda p, s: worlds.rollout(model, scene, p, s, steps))
    compiled, c, mem = _aot(full, params, first)
    t = time.perf_counter()
    traj, infos = jax.block_until_ready(compiled(params, first))
    wall = time.perf_counter() - t
    it = np.asarray(infos.iterations)
    settled = jax.tree_util.tree_map(lambda x: x[-1], traj)
    res["one_world_full"] = {
        "method": "worlds.rollout (trajectory: the sweeps per step), 1 world, jit-compiled ahead", "worlds": 1,
        "steps": steps, "wall_s": wall, "compile_s": c, "box_steps_per_s": n * steps / wall, "world_steps_per_s": steps / wall,
        "flags": int(np.bitwise_or.reduce(np.asarray(infos.flags))), "measured": True,
        "sweeps": {"mean": float(it.mean()), "median": float(np.median(it)), "p90": float(np.percentile(it, 90)),
                   "max": int(it.max()), "per_100_steps_mean": [float(x) for x in it.reshape(-1, 100).mean(1)] if steps % 100 == 0 else None},
        "final_com_height_m": float(np.asarray(settled.pos[:, 2]).mean()),
        "final_max_speed_m_per_s": float(np.linalg.norm(np.asarray(settled.vel), axis=-1).max())}
    print("heapspeed jaxcontact full", res["one_world_full"], flush=True)
    res["windows"] = []
    for W in windows:
        for start, states in (("settled", _tile(settled, W)),):
            compiled, c, mem = _aot(_jit_batch(model, scene, window_steps), params, states)
            times = []
            for _ in range(2):
                t = time.perf_counter()
                jax.block_until_ready(compiled(params, states))
                times.append(time.perf_counter() - t)
            best = min(times)
            row = {"worlds": W, "start": start, "steps": window_steps, "wall_s": best, "times_s": times, "compile_s": c,
                   "box_steps_per_s": W * n * window_steps / best, "world_steps_per_s": W * window_steps / best, "memory": mem}
            res["windows"].append(row)
            print("heapspeed window", row, flush=True)
    res["compiled"] = []
    for W in compile_batches:
        states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x[:1], (W,) + x.shape[1:]), drops)
        _, c, mem = _aot(_jit_batch(model, scene, steps), params, states)
        row = {"worlds": W, "steps": steps, "compile_s": c, "memory": mem,
               "memory_per_world_bytes": None if mem is None else
               (mem["argument_size_in_bytes"] + mem["output_size_in_bytes"] + mem["temp_size_in_bytes"]) / W}
        res["compiled"].append(row)
        print("heapspeed compiled", row, flush=True)
    res["stages"] = stage_times(model, scene, params, settled)
    return res


def stage_times(model, scene, params, state, repeats: int = 5):
    """Where a settled heap's step goes (1 world, float32, best of ``repeats``), timed on the engine's own
    stages (``common.stage_times``: each named stage of ``pipeline.step_stages`` compiled alone, in the
    step's order, on the step's own inputs): cold (the law's initial warm start: zero impulses) at
    ``state``, and warm-started at the next state from that step's impulses; the collision alone
    (``contacts.collide``, the first part of the contact stage); the sweeps of both solves; one step of
    a 10-step ``worlds.rollout`` from ``state``."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    control = jnp.zeros((scene.num_bodies, 6), state.pos.dtype)
    cold, (nxt, info_cold, warm) = stage_times_of_step(model, scene, params, state, control, None, repeats)
    warm_t, (_, info_warm, _) = stage_times_of_step(model, scene, params, nxt, control, warm, repeats)
    collide = jax.jit(lambda p, s: worlds.collide(model, scene, p, s))
    con = jax.block_until_ready(collide(params, state))
    t_col = _best(lambda: collide(params, state), repeats)
    window = jax.jit(lambda p, s: _warm_window(model, scene, p, s))
    jax.block_until_ready(window(params, state))
    t_step = _best(lambda: window(params, state), repeats)
    return {"contacts": int(con.phi.shape[0]), "valid_contacts": int(np.sum(np.asarray(con.valid))),
            "stages_cold_s": cold, "stages_warm_s": warm_t, "collide_s": t_col,
            "sweeps_cold": int(info_cold.iterations), "sweeps_warm": int(info_warm.iterations),
            "residual_warm": float(info_warm.residual), "rollout_step_s": t_step / 10,
            "note": "stages_*: pipeline.step_stages's own stages, each jitted alone (common.stage_times); "
                    "rollout_step_s: a 10-step worlds.rollout from this state (warm-started), per step"}


def _best(fn, repeats):
    import jax

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return min(times)


def _warm_window(model, scene, params, state):
    from jaxcontact import worlds

    return worlds.rollout(model, scene, params, state, 10, output="final")[0]


# ------------------------------------------------------------------------------------ MJX

# ------------------------------------------------------------------------------------ report

def _flag_names(bits: int) -> str:
    from jaxcontact.types import Flags

    return "+".join(f.name for f in Flags if bits & int(f)) or "none"


def _verdict(ok):
    return "PASS" if ok else "FAIL"


def _run_line(name, run):
    return f"- {name}: `{run['command']}` — {run['date']} (git {run.get('git_commit')}), load average at start {run.get('load_average_at_start')}"


def _stack_checks(st):
    rows = []
    for dtype, bound in (("float64", 1e-4), ("float32", 1e-3)):
        r = st.get(f"jaxcontact_{dtype}")
        if r:
            rows.append((f"stack of {st['boxes']}, {st['seconds']:g} s, jaxcontact {dtype}: top box moved (the issue's bound)",
                         f"{1e3 * r['top_moved_m']:.3f} mm", f"≤ {1e3 * bound:g} mm", r["top_moved_m"] <= bound))
    mj = st.get("mujoco_pyramidal")
    for dtype in ("float64", "float32"):
        r = st.get(f"jaxcontact_{dtype}")
        if r and mj:
            rows.append((f"stack, jaxcontact {dtype} no less steady than MuJoCo C (pyramidal)",
                         f"{1e3 * r['top_moved_m']:.3f} vs {1e3 * mj['top_moved_m']:.3f} mm", "≤ MuJoCo's",
                         r["top_moved_m"] <= mj["top_moved_m"]))
    return rows


def render(res) -> str:
    out = ["# Worlds of many bodies against MuJoCo C and MJX", ""]
    runs = []
    if "stack" in res:
        runs.append(("stack", res["stack"].get("run") or res["machine"]))
    for part in ("pyramid", "collision", "heapcheck", "mjspeed", "heapspeed", "mjx", "mjcf") + tuple(k for k in res if k.startswith("mjx_")):
        if part in res:
            runs += [(f"{part} (earlier seeds)", r) for r in res[part].get("earlier_runs", [])]
            runs.append((part, res[part]["run"]))
    out += ["Each part below was made by its own command (the same module):", ""]
    out += [_run_line(p, r) for p, r in runs]
    if "machine" in res:
        machine = md_machine(res["machine"]).split("\n", 2)[2]  # the machine and versions (each part has its load above)
        out += ["", machine.split("; load average at start")[0] + machine[machine.index("\n"):]]
    checks = []
    if "collision" in res:
        checks += collision_checks(res["collision"])
    if "heapcheck" in res:
        checks += heap_checks(res["heapcheck"])
    if "stack" in res:
        checks += _stack_checks(res["stack"])
    if checks:
        out += ["", "## Cross-checks", "", md_table(["check", "measured", "tolerance", "verdict"],
                                                   [(a, b, c, _verdict(d)) for a, b, c, d in checks])]
    if "collision" in res:
        c = res["collision"]
        rows = [[f"jaxcontact {d} (ε = 0)", f"{c[f'jaxcontact_{d}']['v'][0]:.4f}", f"{c[f'jaxcontact_{d}']['v'][1]:.4f}",
                 f"{c[f'jaxcontact_{d}']['v'][1] - c[f'jaxcontact_{d}']['v'][0]:.4f}",
                 f"{max(0.0, -1e3 * c[f'jaxcontact_{d}']['min_gap_m']):.3f}", f"{1e3 * c[f'jaxcontact_{d}']['final_gap_m']:.2f}",
                 f"{c[f'jaxcontact_{d}']['momentum_rel_err']:.1e}"]
                for d in ("float64", "float32")]
        for k, r in c["mujoco"].items():
            rows.append([f"MuJoCo C, solref {r['solref'][0]:g} {r['solref'][1]:g}" + (" (default)" if k == "1" else ""),
                         f"{r['v'][0]:.4f}", f"{r['v'][1]:.4f}", f"{r['effective_restitution']:.4f}",
                         f"{max(0.0, -1e3 * r['min_gap_m']):.3f}", f"{1e3 * r['final_gap_m']:.2f}", f"{r['momentum_rel_err']:.1e}"])
        out += ["", f"## Two boxes: {c['scene']}, {c['steps']} steps", "", COLLISION_NOTE, "",
                md_table(["engine", "striker (m/s)", "struck (m/s)", "separating speed (m/s) = ε × 1 m/s",
                          "deepest overlap (mm)", "gap at the end (mm)", "momentum error (rel.)"], rows)]
    if "heapcheck" in res:
        h = res["heapcheck"]
        rows = []
        names = [f"jaxcontact_{h['jaxcontact_dtype']}", "mujoco_pyramidal", "mujoco_elliptic",
                 "mujoco_pyramidal_damping4", "mujoco_elliptic_damping4"]
        for name in [x for x in names if x in h]:
            r = h[name]
            com = 1e3 * np.asarray(r["com_height_m"])
            label = name if "solref" not in r else f"{name} (solref {r['solref'][0]:g} {r['solref'][1]:g})"
            rows.append([label, r["worlds"], f"{com.mean():.1f} ± {com.std(ddof=1):.1f}",
                         " ".join(f"{x:.1f}" for x in com[:h["seeds_jaxcontact"]]),
                         f"{np.mean(r['on_ground']):.2f} ± {np.std(r['on_ground'], ddof=1):.2f}",
                         f"{1e3 * max(r['max_speed_m_per_s']):.2f}",
                         f"{sum(p['wall_s'] for p in r['per_world']):.0f}" if "per_world" in r else f"{r['wall_s']:.2f}"])
        ov = h["initial_overlaps"]
        jx = h[f"jaxcontact_{h['jaxcontact_dtype']}"]
        sw = [p["sweeps"] for p in jx["per_world"]]
        fs = [p["flagged_steps"] for p in jx["per_world"] if "flagged_steps" in p]
        out += ["", f"## The heap: 16 boxes dropped, settled for {h['seconds']:g} s ({h['steps']} steps)", "",
                f"`scenes.heap(16, PRNGKey(seed), spacing={h['spacing_m']:g})`, seeds 0–{h['seeds_mujoco'] - 1} in MuJoCo C, "
                f"0–{h['seeds_jaxcontact'] - 1} in jaxcontact (the same initial poses and velocities). Pairs overlapping at the "
                f"start: {', '.join(str(o[0]) for o in ov)} (`scenes.heap` refuses a spacing below the box diagonal, "
                f"0.173 m, at which randomly turned boxes could start inside each other).", "",
                md_table(["engine", "seeds", "centre-of-mass height (mm), mean ± sd", "per seed, the jaxcontact seeds (mm)",
                          "boxes on the ground (centre < 0.1 m)", "fastest box at the end (mm/s)", "wall (s)"], rows), "",
                f"jaxcontact's sweeps per step over the drop: mean {', '.join('%.0f' % s['mean'] for s in sw)}, "
                f"median {', '.join('%.0f' % s['median'] for s in sw)}, max {', '.join(str(s['max']) for s in sw)} (per seed); "
                f"flags {', '.join(_flag_names(p['flags']) for p in jx['per_world'])}"
                + (f" (steps flagged, seeds {len(jx['per_world']) - len(fs)}–{len(jx['per_world']) - 1}: "
                   + "; ".join(", ".join(f"{k} {v}" for k, v in x.items()) for x in fs) + ")" if fs else "")
                + "; the first seed's wall time includes compiling."]
    if {"heapspeed", "mjx", "mjspeed"} & set(res):
        out += ["", *render_speed(res.get("heapspeed"), [res[k] for k in res if k == "mjx" or k.startswith("mjx_")],
                                  res.get("mjspeed"))]
    if "stack" in res:
        out += ["", *render_stack(res["stack"])]
    if "pyramid" in res:
        out += ["", *render_pyramid(res["pyramid"])]
    if "mjcf" in res:
        out += ["", render_mjcf(res["mjcf"])]
    return "\n".join(out) + "\n"


def render_speed(sp, mjx, mjs=None):
    out = ["## Heap speed: 16 boxes, 1,000 steps", ""]
    rows = []
    mj_rows = (mjs or {}).get("runs") or (sp or {}).get("mujoco") or []
    for r in mj_rows:
        rows.append([r["engine"], r["worlds"], r["threads"], f"{r['wall_s']:.2f}", f"{r['box_steps_per_s']:,.0f}",
                     f"{r['world_steps_per_s']:,.0f}", "0", f"{r['memory_per_world_bytes'] / 1e6:.2f} MB (its output)", "measured"])
    if sp:
        steps = sp["steps"]
        j = sp["jaxcontact"]
        f = j["one_world_full"]
        rows.append(["jaxcontact float32, the whole drop", 1, "XLA (2 cores)", f"{f['wall_s']:.1f}", f"{f['box_steps_per_s']:,.0f}",
                     f"{f['world_steps_per_s']:.2f}", f"{f['compile_s']:.1f}", "—", "measured"])
        for w in j["windows"]:
            mem = w["memory"]
            per = (mem["argument_size_in_bytes"] + mem["output_size_in_bytes"] + mem["temp_size_in_bytes"]) / w["worlds"] if mem else None
            rows.append([f"jaxcontact float32, {w['steps']} steps from the {w['start']} heap", w["worlds"], "XLA (2 cores)",
                         f"{w['wall_s']:.2f}", f"{w['box_steps_per_s']:,.0f}", f"{w['world_steps_per_s']:.2f}",
                         f"{w['compile_s']:.1f}", f"{per / 1e6:.1f} MB" if per else "—", "measured"])
        for m in j.get("measured_batches", []):
            mem = m["memory"]
            per = (mem["argument_size_in_bytes"] + mem["output_size_in_bytes"] + mem["temp_size_in_bytes"]) / m["worlds"] if mem else None
            rows.append([f"jaxcontact float32, {m['steps']} steps, {m['worlds']} different drops", m["worlds"], "XLA (2 cores)",
                         f"{m['wall_s']:.1f}", f"{m['box_steps_per_s']:,.0f}", f"{m['world_steps_per_s']:.2f}",
                         f"{m['compile_s']:.1f}", f"{per / 1e6:.2f} MB" if per else "—", "measured"])
        for m in j.get("sharded_batches", []):
            rows.append([f"jaxcontact float32, {m['steps']} steps, {m['worlds']} different drops, sharded", m["worlds"],
                         "2 XLA devices (2 cores)", f"{m['wall_s']:.1f}", f"{m['box_steps_per_s']:,.0f}",
                         f"{m['world_steps_per_s']:.2f}", f"{m['compile_s']:.1f}", "—", "measured"])
        measured = {m["worlds"] for m in j.get("measured_batches", [])}
        for e in j["extrapolated"]:
            if measured:  # a measured batch of different drops replaces the windows' extrapolation
                rows.append([f"jaxcontact float32, {steps} steps", e["worlds"], "XLA (2 cores)", "not run", "—", "—",
                             f"{e['compile_s']:.1f} (compiled, not run)",
                             f"{e['memory_per_world_bytes'] / 1e6:.2f} MB" if e["memory_per_world_bytes"] else "—",
                             "compiled" if e["worlds"] not in measured else "compiled (the measured row above ran it)"])
                continue
            rows.append([f"jaxcontact float32, {steps} steps (**extrapolated**)", e["worlds"], "XLA (2 cores)",
                         f"{e['wall_s']:,.0f}", f"{e['box_steps_per_s']:,.0f}", f"{e['world_steps_per_s']:.2f}",
                         f"{e['compile_s']:.1f} (compiled, not run)",
                         f"{e['memory_per_world_bytes'] / 1e6:.1f} MB" if e["memory_per_world_bytes"] else "—", "extrapolated"])
    for mj in mjx or []:
        for r in mj["runs"]:
            st = r["stages"]
            comp = f"{st['compiled']['compile_s']:.1f}" if "compiled" in st else "—"
            if r["finished"]:
                d = st["done"]
                rows.append([f"MJX {mj.get('version', '')} ({st['start']['dtype']}), {r['steps']} steps", r["worlds"], "XLA (2 cores)",
                             f"{d['wall_s']:.1f}", f"{d['box_steps_per_s']:,.0f}", f"{d['world_steps_per_s']:,.0f}", comp, "—",
                             "measured" if r["steps"] == 1000 else f"measured on the first {r['steps']} steps"])
            else:
                rows.append([f"MJX {mj.get('version', '')}, {r['steps']} steps", r["worlds"], "XLA (2 cores)", r["reason"], "—", "—", comp, "—",
                             f"killed after {r['elapsed_s']:.0f} s"])
    out.append(md_table(["engine", "worlds", "threads", "wall (s)", "box-steps/s", "world-steps/s", "compile (s)",
                         "memory per world", "how"], rows))
    if sp:
        j = sp["jaxcontact"]
        if j.get("measured_batches"):
            m = j["measured_batches"][0]
            out += ["", f"The measured batch runs {m['worlds']} different drops (seeds 0–{m['worlds'] - 1}) for {m['steps']} steps in "
                    f"one `batch_rollout(..., output=\"final\")` call; flags raised (over its drops and steps): "
                    f"{_flag_names(m['flags'])}. The 1-world and window rows are the single drop "
                    "and copies of its settled heap (every copy needs the same sweeps, so the windows' batching gain does "
                    "not carry over to different drops). Compile time and memory per world at the other batches are "
                    "measured from the lowered and compiled program (XLA's memory analysis: arguments + outputs + "
                    "temporaries, over the worlds).", ""]
        else:
            out += ["", j["extrapolation_note"], ""]
        sp_ = j.get("split")
        if sp_:
            r = sp_["rows"]
            d, o, nc = (r[k]["us_per_world_step"] for k in ("default", "one_sweep", "no_contact"))
            out += [f"### Where a batch's time goes ({sp_['worlds']} drops, the first {sp_['steps']} steps, float32, 1 XLA device)", "",
                    md_table(["variant", "µs per world-step", "what it isolates"],
                             [["`NoContact`", f"{nc:.0f}", "broad and narrow phase, free motion, integration, checks"],
                              ["one fixed sweep", f"{o:.0f}", f"+ {o - nc:.0f}: problem assembly, restitution/softness, the solve's set-up, one sweep, the residual"],
                              ["default (to tolerance)", f"{d:.0f}", f"+ {d - o:.0f}: the further sweeps (the fused kernel)"]]), ""]
        s = j["stages"]
        f = j["one_world_full"]["sweeps"]
        if "stages_cold_s" in s:  # the engine's own stages (pipeline.STAGES), timed by common.stage_times
            cold, warm = s["stages_cold_s"], s["stages_warm_s"]
            srows = [[f"`{k}`" + (f" (of it `contacts.collide`: {1e3 * s['collide_s']:.1f})" if k == "contact" else ""),
                      f"{1e3 * cold[k]:.2f}", f"{1e3 * warm[k]:.2f}"] for k in cold if k != "step"]
            srows += [["sum of the stages", f"{1e3 * sum(v for k, v in cold.items() if k != 'step'):.1f}",
                       f"{1e3 * sum(v for k, v in warm.items() if k != 'step'):.1f}"],
                      ["the whole step (`pipeline.step_stages`, one program)", f"{1e3 * cold['step']:.1f}", f"{1e3 * warm['step']:.1f}"],
                      ["sweeps", str(s["sweeps_cold"]), str(s["sweeps_warm"])],
                      ["one step of a 10-step `worlds.rollout` from this state", f"{1e3 * s['rollout_step_s']:.1f}", ""]]
            out += ["### Where jaxcontact's time goes (1 world, float32, a settled heap, each of the step's own stages "
                    "jitted alone, best of 5)", "",
                    f"{s['contacts']} contact slots ({s['valid_contacts']} within the margin); cold: the law's initial warm "
                    "start (zero impulses); warm: the next step from this one's impulses.", "",
                    md_table(["stage (`pipeline.STAGES`)", "ms, cold", "ms, warm-started"], srows), "",
                    f"Sweeps per step over the whole float32 drop (1 world, {j['one_world_full']['steps']} steps): mean "
                    f"{f['mean']:.0f}, median {f['median']:.0f}, p90 {f['p90']:.0f}, max {f['max']}"
                    + (f"; mean per 100 steps: {', '.join('%.0f' % x for x in f['per_100_steps_mean'])}"
                       if f.get("per_100_steps_mean") else "")
                    + f". Flags raised over that drop: {_flag_names(j['one_world_full']['flags'])}."]
            return out
        tot = s["collide_s"] + s["free_velocity_and_mass_s"] + s["assembly_s"] + s["solve_warm_s"]
        srows = [["collision (`worlds.collide`: 16 bodies × ground, 120 pairs' manifolds)", f"{1e3 * s['collide_s']:.1f}"],
                 ["free velocities and inverse masses", f"{1e3 * s['free_velocity_and_mass_s']:.2f}"],
                 [f"problem assembly (`contact.body_problem`: {s['rows']} rows on their bodies, A not formed; target, softening)",
                  f"{1e3 * s['assembly_s']:.1f}"],
                 [f"solve, warm-started (`solvers.solve_contact`: {s['sweeps_warm']} sweeps)", f"{1e3 * s['solve_warm_s']:.1f}"],
                 [f"solve, cold ({s['sweeps_cold']} sweeps)", f"{1e3 * s['solve_cold_s']:.1f}"],
                 ["sum of the stages (warm solve)", f"{1e3 * tot:.1f}"],
                 ["one step of a 10-step `worlds.rollout` from this state", f"{1e3 * s['rollout_step_s']:.1f}"]]
        out += ["### Where jaxcontact's time goes (1 world, float32, a settled heap, each stage jitted, best of 5)", "",
                f"{s['contacts']} contact slots ({s['valid_contacts']} within the margin), {s['rows']} rows.", "",
                md_table(["stage", "ms per step"], srows), "",
                f"Sweeps per step over the whole float32 drop (1 world, {j['one_world_full']['steps']} steps): mean {f['mean']:.0f}, "
                f"median {f['median']:.0f}, p90 {f['p90']:.0f}, max {f['max']}"
                + (f"; mean per 100 steps: {', '.join('%.0f' % x for x in f['per_100_steps_mean'])}" if f.get("per_100_steps_mean") else "")
                + f". Flags raised over that drop: {_flag_names(j['one_world_full']['flags'])}."]
    return out


def render_stack(st):
    rows = []
    for name in ("jaxcontact_float64", "jaxcontact_float32", "mujoco_pyramidal", "mujoco_elliptic"):
        r = st[name]
        sw = r.get("sweeps")
        rows.append([name, f"{1e3 * r['top_moved_m']:.3f}", f"{1e3 * r['top_sink_m']:.3f}",
                     f"{r['box_steps_per_s']:.0f}", f"{r.get('compile_s', 0):.1f}",
                     f"{sw['mean']:.1f} / {sw['median']:.0f} / {sw['max']}" if sw else "—"])
    b = st["jaxcontact_float32"].get("batch")
    mb = st["mujoco_pyramidal_batch"]
    return [f"## The {st['boxes']}-box stack for {st['seconds']:g} s", "",
            md_table(["engine", "top box moved (mm)", "sank (mm)", "box-steps/s (1 world)", "first call minus second (s)",
                      "sweeps per step, first 500 (mean / median / max)"], rows),
            (f"\nBatched, 500 steps (1 s for MuJoCo): jaxcontact float32 {b['worlds']} worlds "
             f"{b['box_steps_per_s']:.0f} box-steps/s; MuJoCo C pyramidal {mb['worlds']} worlds on 1 thread "
             f"{mb['box_steps_per_s']:.0f} box-steps/s." if b else "")]


# ------------------------------------------------------------------------------------ the MJCF files

def _angle(q1, q2):
    """Angles (rad) between unit quaternions (..., 4)."""
    d = np.abs(np.sum(np.asarray(q1) * np.asarray(q2), axis=-1))
    return 2 * np.arccos(np.clip(d, -1.0, 1.0))


def run_mjcf_files(seconds: float = MJCF_SECONDS, every: int = 50):
    """Each of ``MJCF_FILES`` in jaxcontact (``worlds.from_mjcf``, float64, its own timestep and
    friction) and MuJoCo C (``mj_step`` on the file's model), both from MuJoCo's reset state: the
    largest difference of any body's centre of mass (m) and orientation (rad) at every ``every``
    steps and at the end, MuJoCo's deepest contact penetration, the top body's sink in each, the wall
    times. Passes when the end is within ``MJCF_POS_TOL``, the whole run within it plus MuJoCo's
    deepest penetration, and every angle within ``MJCF_ANGLE_TOL``."""
    from importlib.resources import files

    import jax
    import mujoco

    from jaxcontact import worlds

    out = {"seconds": seconds, "pos_tol_m": MJCF_POS_TOL, "angle_tol_rad": MJCF_ANGLE_TOL, "files": {}}
    for name in MJCF_FILES:
        path = str(files("jaxcontact") / "data" / "scenes" / name)
        scene, params, state, model = worlds.from_mjcf(path)
        steps = int(round(seconds / model.dt))
        t = time.perf_counter()
        traj, infos = worlds.rollout(model, scene, params, state, steps)
        jax.block_until_ready(traj)
        jc_wall = time.perf_counter() - t
        m = mujoco.MjModel.from_xml_path(path)
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        pos, quat = [d.xipos[1:].copy()], [d.xquat[1:].copy()]
        depth = 0.0
        t = time.perf_counter()
        for k in range(steps):
            mujoco.mj_step(m, d)
            if d.ncon:
                depth = max(depth, -float(np.min(d.contact.dist[:d.ncon])))
            if (k + 1) % every == 0:
                pos.append(d.xipos[1:].copy())
                quat.append(d.xquat[1:].copy())
        mj_wall = time.perf_counter() - t
        idx = np.arange(0, steps + 1, every)
        jp, jq = np.asarray(traj.pos)[idx], np.asarray(traj.quat)[idx]
        dp = np.linalg.norm(jp - np.stack(pos), axis=-1)
        da = _angle(jq, np.stack(quat))
        top = int(np.argmax(np.asarray(state.pos)[:, 2]))
        row = {"bodies": scene.num_bodies, "steps": steps, "dt": model.dt,
               "max_pos_diff_m": float(dp.max()), "final_pos_diff_m": float(dp[-1].max()),
               "worst_body": int(np.unravel_index(np.argmax(dp), dp.shape)[1]),
               "max_angle_diff_rad": float(da.max()), "mujoco_deepest_penetration_m": depth,
               "top_body": top, "top_sink_jaxcontact_m": float(jp[0, top, 2] - jp[-1, top, 2]),
               "top_sink_mujoco_m": float(pos[0][top, 2] - pos[-1][top, 2]),
               "flags": int(np.bitwise_or.reduce(np.asarray(infos.flags).reshape(-1))),
               "jaxcontact_wall_s": jc_wall, "mujoco_wall_s": mj_wall}
        row["pass"] = (row["final_pos_diff_m"] <= MJCF_POS_TOL and row["max_pos_diff_m"] <= MJCF_POS_TOL + depth
                       and row["max_angle_diff_rad"] <= MJCF_ANGLE_TOL)
        out["files"][name] = row
        print("mjcf", name, row, flush=True)
    return out


def render_mjcf(r):
    out = ["## The same MJCF files in jaxcontact and MuJoCo C (`--only mjcf`)", "",
           f"Each file of `jaxcontact/data/scenes` loaded by `worlds.from_mjcf` and by MuJoCo C, {r['seconds']:g} s "
           "from MuJoCo's reset state, float64; every body's centre of mass and orientation compared every 50 steps. "
           f"Tolerances: {r['pos_tol_m'] * 1e3:g} mm at the end; during the run {r['pos_tol_m'] * 1e3:g} mm plus "
           "MuJoCo's deepest contact penetration of the run (its soft contacts let an impact sink a body millimetres "
           f"where jaxcontact's hard contacts stop it); {r['angle_tol_rad']:g} rad throughout.", ""]
    rows = [[name, str(f["bodies"]), f"{f['final_pos_diff_m'] * 1e3:.3f} mm",
             f"{f['max_pos_diff_m'] * 1e3:.3f} mm (body {f['worst_body']})",
             f"{f['mujoco_deepest_penetration_m'] * 1e3:.3f} mm",
             f"{f['max_angle_diff_rad']:.2e}", f"{f['top_sink_jaxcontact_m'] * 1e3:.3f} mm",
             f"{f['top_sink_mujoco_m'] * 1e3:.3f} mm", _flag_names(f["flags"]),
             f"{f['jaxcontact_wall_s']:.1f} s / {f['mujoco_wall_s']:.2f} s", _verdict(f["pass"])]
            for name, f in r["files"].items()]
    out += md_table(["file", "bodies", "centre-of-mass difference at the end", "largest during the run",
                     "MuJoCo's deepest penetration", "largest angle (rad)",
                     "top body falls (jaxcontact)", "(MuJoCo)", "jaxcontact flags", "wall: jaxcontact (compile incl.) / MuJoCo",
                     "verdict"], rows).split("\n")
    return "\n".join(out + [""])


# ------------------------------------------------------------------------------------ main

def _ints(s):
    return [int(x) for x in str(s).split(",") if x]


def run_mjspeed(args):
    """MuJoCo C's heap speed: ``--speed-batches`` worlds (seeds 0..W − 1), 1 and 2 threads."""
    import jax

    _, _, drops = heap_states(list(range(max(_ints(args.speed_batches)))), args.spacing)
    res = {"runs": [], "steps": args.speed_steps, "spacing_m": args.spacing}
    for W in _ints(args.speed_batches):
        for threads in (1, 2):
            r = mujoco_heap_speed(jax.tree_util.tree_map(lambda x: x[:W], drops), args.speed_steps, threads)
            res["runs"].append(r)
            print("mjspeed", {k: v for k, v in r.items() if k != "times_s"}, flush=True)
    return res


def run_heapspeed(args):
    import jax

    scene, params, drops = heap_states(list(range(max(_ints(args.windows)))), args.spacing)
    n = drops.pos.shape[1]
    res = {}
    j = jaxcontact_heap_speed(scene, params, jax.tree_util.tree_map(lambda x: x[:max(_ints(args.windows))], drops),
                              args.speed_steps, _ints(args.windows), args.window_steps, _ints(args.speed_batches))
    # extrapolation: the measured whole drop of one world, times W, times the batching gain measured
    # on the settled windows (box-steps/s at the largest window batch over that at 1 world)
    settled = {w["worlds"]: w for w in j["windows"] if w["start"] == "settled"}
    wmax = max(settled)
    gain = settled[wmax]["world_steps_per_s"] / settled[min(settled)]["world_steps_per_s"]
    full = j["one_world_full"]
    j["extrapolated"] = []
    for row in j["compiled"]:
        W = row["worlds"]
        rate = full["world_steps_per_s"] * gain
        j["extrapolated"].append({"worlds": W, "steps": args.speed_steps, "world_steps_per_s": rate,
                                  "box_steps_per_s": rate * n, "wall_s": W * args.speed_steps / rate,
                                  "compile_s": row["compile_s"], "memory_per_world_bytes": row["memory_per_world_bytes"]})
    j["batching_gain"] = gain
    j["extrapolation_note"] = (
        f"**Extrapolated rows**: not run (a run would take the time in their wall column). They take the measured whole "
        f"drop of one world ({full['wall_s']:.0f} s for {full['steps']} steps, {full['world_steps_per_s']:.2f} world-steps/s) "
        f"times the batching gain measured on {settled[wmax]['steps']}-step windows of the settled heap: {gain:.2f}× the "
        f"world-steps/s at {wmax} worlds as at {min(settled)} (the windows' worlds are copies of one settled heap, so they "
        f"need the same sweeps; the rows of different drops, where measured, are the ones to read). "
        f"Their compile time and memory per world are measured: the {args.speed_steps}-step `batch_rollout` lowered and "
        f"compiled at that batch (XLA's memory analysis: arguments + outputs + temporaries, over the worlds).")
    j["measured_batches"] = [measured_batch(scene, params, args.spacing, W, args.speed_steps)
                             for W in _ints(args.measure_batches)] if args.measure_batches else []
    j["sharded_batches"] = [sharded_batch(W, args.speed_steps, args.spacing) for W in _ints(args.sharded_batches)]
    j["split"] = batch_split(scene, params, args.spacing, _ints(args.measure_batches)[0] if args.measure_batches else 64,
                             args.split_steps)
    res["jaxcontact"] = j
    res["steps"] = args.speed_steps
    res["spacing_m"] = args.spacing
    return res


def sharded_child(worlds_: int, steps: int, spacing: float):
    """In a child process started with two XLA host devices: the measured batch through
    ``worlds.sharded_batch_rollout`` (half the worlds on each core; the fused kernel on one thread
    per device); prints one JSON line."""
    import jax

    from jaxcontact import worlds

    model = worlds.model()
    scene, params, drops = heap_states(list(range(worlds_)), spacing)
    p32, drops = cast_floats(params, "float32"), cast_floats(drops, "float32")
    run = lambda: worlds.sharded_batch_rollout(model, scene, p32, drops, steps, output="final")
    t = time.perf_counter()
    jax.block_until_ready(run())
    first = time.perf_counter() - t
    t = time.perf_counter()
    final, summary = jax.block_until_ready(run())
    wall = time.perf_counter() - t
    n = drops.pos.shape[1]
    print(json.dumps({"worlds": worlds_, "steps": steps, "wall_s": wall, "compile_s": max(first - wall, 0.0),
                      "devices": [str(d) for d in jax.devices()], "box_steps_per_s": worlds_ * n * steps / wall,
                      "world_steps_per_s": worlds_ * steps / wall,
                      "flags": int(np.bitwise_or.reduce(np.asarray(summary.flags).reshape(-1))),
                      "final_com_height_m": float(np.asarray(final.pos[..., 2]).mean()), "measured": True}), flush=True)


def sharded_batch(worlds_: int, steps: int, spacing: float):
    """``sharded_child`` in a child process (``XLA_FLAGS=--xla_force_host_platform_device_count=2``,
    ``JAXCONTACT_THREADS=1``): jaxcontact on both cores, as MuJoCo's 2-thread pool."""
    import os

    env = {**os.environ, "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip(),
           "JAXCONTACT_THREADS": "1"}
    cmd = [sys.executable, "-m", "benchmarks", "worlds", "--sharded-child", str(worlds_), "--speed-steps", str(steps),
           "--spacing", str(spacing)]
    r = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"sharded child failed: {r.stderr.strip()[-800:]}")
    row = json.loads(r.stdout.strip().splitlines()[-1])
    print("heapspeed sharded batch", row, flush=True)
    return row


def batch_split(scene, params, spacing: float, worlds_: int, steps: int):
    """Where a batch's time goes: the measured batch's first ``steps`` steps (the drop and its
    landing) with the default law, with exactly one sweep per step (``fixed_iterations``: collision,
    assembly, the solve's set-up and one sweep), and with ``NoContact`` (collision, free motion,
    integration and checks, no contact problem). Seconds and µs per world-step."""
    import dataclasses

    import jax

    from jaxcontact import worlds
    from jaxcontact.laws import NoContact

    base = worlds.model()
    one = dataclasses.replace(base.law, solver=dataclasses.replace(base.law.solver, max_iter=1, fixed_iterations=True))
    _, _, drops = heap_states(list(range(worlds_)), spacing)
    p32, drops = cast_floats(params, "float32"), cast_floats(drops, "float32")
    out = {"worlds": worlds_, "steps": steps, "rows": {}}
    for name, model in (("default", base), ("one_sweep", worlds.model(law=one)), ("no_contact", worlds.model(law=NoContact()))):
        compiled, _, _ = _aot(_jit_batch(model, scene, steps), p32, drops)
        jax.block_until_ready(compiled(p32, drops))
        t = time.perf_counter()
        jax.block_until_ready(compiled(p32, drops))
        wall = time.perf_counter() - t
        out["rows"][name] = {"wall_s": wall, "us_per_world_step": 1e6 * wall / (worlds_ * steps)}
    print("heapspeed split", out, flush=True)
    return out


def measured_batch(scene, params, spacing: float, worlds_: int, steps: int):
    """The float32 heap run for real: ``worlds_`` different drops (seeds 0..W−1), ``steps`` steps,
    ``worlds.batch_rollout(..., output="final")`` compiled ahead, one timed call."""
    import jax

    from jaxcontact import worlds

    model = worlds.model()
    _, _, drops = heap_states(list(range(worlds_)), spacing)
    p32, drops = cast_floats(params, "float32"), cast_floats(drops, "float32")
    compiled, c, mem = _aot(_jit_batch(model, scene, steps), p32, drops)
    t = time.perf_counter()
    final, summary = jax.block_until_ready(compiled(p32, drops))
    wall = time.perf_counter() - t
    n = drops.pos.shape[1]
    row = {"worlds": worlds_, "steps": steps, "wall_s": wall, "compile_s": c, "memory": mem,
           "box_steps_per_s": worlds_ * n * steps / wall, "world_steps_per_s": worlds_ * steps / wall,
           "flags": int(np.bitwise_or.reduce(np.asarray(summary.flags).reshape(-1))),
           "final_com_height_m": float(np.asarray(final.pos[..., 2]).mean()), "measured": True}
    print("heapspeed measured batch", row, flush=True)
    return row


def arguments(ap):
    """worlds' own options (the runner adds ``--out``, ``--name``, ``--only``)."""
    ap.add_argument("--boxes", type=int, default=10, help="stack: boxes")
    ap.add_argument("--seconds", type=float, default=10.0, help="stack: seconds")
    ap.add_argument("--batch", type=int, default=8, help="stack: worlds in the batched speed run (500 steps)")
    ap.add_argument("--collision-steps", type=int, default=500, help="collision: steps (MuJoCo's overdamped contacts take ~0.5 s to let go)")
    ap.add_argument("--heap-seconds", type=float, default=2.0)
    ap.add_argument("--heap-seeds", type=int, default=3, help="heapcheck: jaxcontact seeds (one rollout each)")
    ap.add_argument("--heap-seed-start", type=int, default=0,
                    help="heapcheck: first jaxcontact seed; > 0 appends to the results file's seeds 0..start − 1")
    ap.add_argument("--heap-mujoco-seeds", type=int, default=16)
    ap.add_argument("--heap-dtype", default="float64")
    ap.add_argument("--spacing", type=float, default=HEAP_SPACING, help="heap: grid spacing (m)")
    ap.add_argument("--speed-steps", type=int, default=1000)
    ap.add_argument("--speed-batches", default="64,256")
    ap.add_argument("--windows", default="1,4,16", help="heapspeed: jaxcontact's measured batch sizes")
    ap.add_argument("--window-steps", type=int, default=10)
    ap.add_argument("--measure-batches", default="64,256",
                    help="heapspeed: batches of different drops run for --speed-steps steps and timed ('' for none)")
    ap.add_argument("--sharded-batches", default="64,256", help="heapspeed: measured batches on both cores ('' for none)")
    ap.add_argument("--split-steps", type=int, default=400, help="heapspeed: steps of the time split (the drop and landing)")
    ap.add_argument("--sharded-child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mjx-batches", default="64,256")
    ap.add_argument("--mjx-timeout", type=float, default=300.0)
    ap.add_argument("--mjx-child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--progress", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--render", action="store_true", help="only write the .md again from the .json")


def prepare(args, out) -> bool:
    """Before the parts: ``--render`` (the .md again), a child process's own entry (MJX, sharded), or
    float64 on; True ends the run here."""
    if args.render:
        res = out.load()
        out.md.write_text(render(res))
        print(render(res))
        return True
    if args.mjx_child is not None:
        mjx_child(args.mjx_child, args.speed_steps, args.spacing, args.progress)
        return True
    if args.sharded_child is not None:
        sharded_child(args.sharded_child, args.speed_steps, args.spacing)
        return True
    import jax

    jax.config.update("jax_enable_x64", True)
    return False


# the parts (declared in benchmarks/runner.py, WORLDS_PARTS): each adds its section to ``res``


def part_stack(args, res):
    res["machine"] = machine_info("benchmarks.worlds", command=args.command)
    st = {"boxes": args.boxes, "seconds": args.seconds, "dt": DT, "mu": MU, "run": run_info()}
    for cone in ("pyramidal", "elliptic"):
        st[f"mujoco_{cone}"] = mujoco_stack(args.boxes, args.seconds, cone, 1)
        print(cone, st[f"mujoco_{cone}"], flush=True)
    st["mujoco_pyramidal_batch"] = mujoco_stack(args.boxes, min(args.seconds, 1.0), "pyramidal", args.batch)
    for dtype in ("float64", "float32"):
        st[f"jaxcontact_{dtype}"] = jaxcontact_stack(args.boxes, args.seconds, dtype, args.batch if dtype == "float32" else 1)
        print(dtype, st[f"jaxcontact_{dtype}"], flush=True)
    res["stack"] = st


def part_pyramid(args, res):
    res["pyramid"] = {**run_pyramid(4, args.seconds), "run": run_info()}


def part_collision(args, res):
    res["collision"] = {**run_collision(args.collision_steps), "run": run_info()}


def part_heapcheck(args, res):
    run = run_info()
    prev = res.get("heapcheck") if args.heap_seed_start else None
    res["heapcheck"] = {**run_heapcheck(args.heap_seconds, args.heap_seeds, args.heap_mujoco_seeds,
                                        args.heap_dtype, args.spacing, args.heap_seed_start, prev), "run": run}
    if prev:
        res["heapcheck"]["earlier_runs"] = prev.get("earlier_runs", []) + [prev["run"]]


def part_mjspeed(args, res):
    res["mjspeed"] = {**run_mjspeed(args), "run": run_info()}
    if "heapspeed" in res:
        res["heapspeed"].pop("mujoco", None)  # an earlier layout kept MuJoCo's speed there


def part_heapspeed(args, res):
    res["heapspeed"] = {**run_heapspeed(args), "run": run_info()}


def part_mjcf(args, res):
    res["mjcf"] = {**run_mjcf_files(), "run": run_info()}


def part_mjx(args, res):
    from importlib.metadata import version

    run = run_info()
    # a shorter run (--speed-steps below 1,000: a rate where the full run does not finish) is kept beside it
    key = "mjx" if args.speed_steps == 1000 else f"mjx_{args.speed_steps}_steps"
    res[key] = {**run_mjx(_ints(args.mjx_batches), args.speed_steps, args.mjx_timeout, args.spacing),
                "version": version("mujoco-mjx"), "run": run}


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
