"""How many vertices the colliding mesh hulls of public MJCF files have, and what a hull's vertex
count costs the engine (issue 63 item 4: meshes above ``collision.MAX_HULL_VERTICES``).

    python -m benchmarks hull_sizes --root /tmp/corpus [--only SUBSTR] [--name hull_sizes]

Part 1, the corpus (``benchmarks.mjcf_census``'s, every ``*.xml`` MuJoCo compiles): for every colliding
mesh geom, its mesh's vertex count, MuJoCo's own convex hull's (``mesh_graph``: the hull MuJoCo C
collides, what MJX's ``mesh.convex`` reads) and scipy's hull of the mesh's vertices (what
``worlds.from_mujoco`` builds a body or a part from); and for every body that the loader builds as
one hull of several geoms, that hull's. Counted per distinct mesh (a mesh used by 41 files counts
once) and per file (a file's largest).

Part 2, the cost (CPU seconds, ``time.process_time``: the machine is shared): ``collision.topology``
of the largest corpus hulls, and one compiled world step of a hull of K vertices resting on the
ground under a box that rests on it (one ground body and one ``hull_hull`` pair), for K from 8 to
the largest, against the same world with the hull reduced to 128 by ``collision.reduce_hull``; the
largest surface deviation of that reduction (how far the full hull's vertices lie outside the
reduced hull, absolute and relative to the hull's size).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter

import numpy as np



def mujoco_hull_count(model, mesh: int) -> int:
    """The vertex count of MuJoCo's convex hull of ``mesh`` (``mesh_graph``: numvert first), 0 if none."""
    adr = int(model.mesh_graphadr[mesh])
    return 0 if adr < 0 else int(model.mesh_graph[adr])


def outside(points, hull_points) -> float:
    """How far (m) the farthest of ``points`` lies outside the convex hull of ``hull_points``."""
    from scipy.spatial import ConvexHull

    eq = ConvexHull(hull_points).equations
    return max(float(np.max(points @ eq[:, :3].T + eq[:, 3])), 0.0)


def corpus(root: str, only: str | None):
    import mujoco

    from .common import is_model
    from jaxcontact import collision

    meshes, files, bodies, largest = {}, {}, {}, []
    paths = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs if f.endswith(".xml"))
    paths = [p for p in paths if only is None or only in p]
    cwd = os.getcwd()
    for p in paths:
        os.chdir(root)
        try:
            if not is_model(p):
                continue
            try:
                m = mujoco.MjModel.from_xml_path(p)
            except Exception:
                continue
        finally:
            os.chdir(cwd)
        worst = 0
        for g in range(m.ngeom):
            if m.geom_type[g] != mujoco.mjtGeom.mjGEOM_MESH or not (m.geom_contype[g] or m.geom_conaffinity[g]):
                continue
            k = int(m.geom_dataid[g])
            verts = np.asarray(m.mesh_vert[m.mesh_vertadr[k]: m.mesh_vertadr[k] + m.mesh_vertnum[k]], float)
            key = (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_MESH, k) or f"#{k}", int(m.mesh_vertnum[k]))
            if key not in meshes:
                ours = len(collision.hull_corners(verts))
                meshes[key] = {"mesh": key[0], "vertices": key[1], "mujoco_hull": mujoco_hull_count(m, k),
                               "scipy_hull": ours, "size_m": float(np.max(np.linalg.norm(verts - verts.mean(0), axis=1))),
                               "files": 0, "example": p}
                if ours > 128:
                    largest.append((ours, verts))
            meshes[key]["files"] += 1
            worst = max(worst, meshes[key]["scipy_hull"])
        # a body the loader builds as one hull of several geoms (box and mesh geoms alone, no round one)
        for b in range(1, m.nbody):
            gs = [g for g in range(m.ngeom) if m.geom_bodyid[g] == b and (m.geom_contype[g] or m.geom_conaffinity[g])]
            if len(gs) == 1 and m.geom_type[gs[0]] == mujoco.mjtGeom.mjGEOM_MESH:
                n = meshes[(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_MESH, int(m.geom_dataid[gs[0]])) or
                            f"#{int(m.geom_dataid[gs[0]])}", int(m.mesh_vertnum[m.geom_dataid[gs[0]]]))]["scipy_hull"]
                bodies[n] = bodies.get(n, 0) + 1
        files[p] = worst
    return meshes, files, bodies, largest


def topology_seconds(points) -> float:
    from jaxcontact import collision

    t0 = time.process_time()
    collision.topology(points)
    return time.process_time() - t0


def step_seconds(points, steps: int = 20) -> dict:
    """CPU seconds of one compiled world step: a hull of ``points`` (scaled to a 0.1 m radius) on the
    ground with a 5 cm box resting on top (compile apart)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import collision, shapes, worlds
    from jaxcontact.types import State

    pts = np.asarray(points, float)
    pts = 0.1 * (pts - pts.mean(0)) / np.max(np.linalg.norm(pts - pts.mean(0), axis=1))
    hull = shapes.convex_hull(pts, 1.0)
    box = shapes.box(0.05, 0.2)
    t0 = time.process_time()
    scene, body = worlds.make_scene([hull, box], pairs=[(0, 1)], max_pairs=1)
    build = time.process_time() - t0
    lo = float(np.min(np.asarray(hull.vertices)[:, 2]))
    hi = float(np.max(np.asarray(hull.vertices)[:, 2]))
    state = State(pos=jnp.array([[0.0, 0.0, -lo], [0.0, 0.0, -lo + hi + 0.025]]), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)),
                  vel=jnp.zeros((2, 3)), omega=jnp.zeros((2, 3)))
    model = worlds.model(dt=0.002)
    params = worlds.default_params(body) if hasattr(worlds, "default_params") else None
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.types import Ground, Params

    params = Params(body=body, ground=Ground(normal=jnp.array([0.0, 0, 1]), height=jnp.array(0.0)),
                    law=CoulombLCP.init_params(mu=0.5))
    run = jax.jit(lambda s: worlds.rollout(model, scene, params, s, steps)[0].pos[-1])
    t0 = time.process_time()
    jax.block_until_ready(run(state))
    first = time.process_time() - t0
    t0 = time.process_time()
    out = jax.block_until_ready(run(state))
    per_step = (time.process_time() - t0) / steps
    return {"vertices": int(len(pts)), "faces": None, "make_scene_s": round(build, 3), "compile_and_first_s": round(first, 2),
            "step_ms": round(1000 * per_step, 3), "box_height_change_m": float(out[1, 2] - state.pos[1, 2])}


def file_cost(path: str, limit: int, steps: int = 50) -> dict:
    """One file loaded strictly with ``collision.MAX_HULL_VERTICES`` = ``limit`` (its exact hulls) and with
    ``approximate=True`` (hulls reduced to ``mjcf.APPROXIMATE_HULL_VERTICES``): load, compile and per-step CPU seconds (zero
    controls, MuJoCo's reset state), and how far apart the two worlds' bodies get over ``steps``."""
    import warnings

    import jax

    from jaxcontact import collision, worlds

    out, finals = {"file": os.path.relpath(path, "/tmp/corpus"), "steps": steps}, {}
    own = collision.MAX_HULL_VERTICES
    for mode, approximate, lim in (("strict", False, limit), ("approximate", True, own)):
        collision.MAX_HULL_VERTICES = lim
        try:
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scene, params, state, model = worlds.from_mjcf(path, approximate=approximate)
            load = time.process_time() - t0
            run = lambda s, n=steps: worlds.rollout(model, scene, params, s, n)[0].pos  # compiled once, then cached
            t0 = time.process_time()
            pos = jax.block_until_ready(run(state))
            first = time.process_time() - t0
            t0 = time.process_time()
            jax.block_until_ready(run(state))
            per = (time.process_time() - t0) / steps
        finally:
            collision.MAX_HULL_VERTICES = own
        finals[mode] = np.asarray(pos)
        out[mode] = {"largest_hull": int(max(scene.vertex_counts or (0,))), "padded": int(params.body.vertices.shape[1]),
                     "load_s": round(load, 2), "compile_and_first_s": round(first, 2), "step_ms": round(1000 * per, 3)}
        print(json.dumps(out[mode]), flush=True)
    out["apart_mm"] = float(1000 * np.max(np.linalg.norm(finals["strict"] - finals["approximate"], axis=-1)))
    return out


def arguments(ap):
    ap.add_argument("--root", default="/tmp/corpus")
    ap.add_argument("--only", default=None, help="only files whose path contains this")
    ap.add_argument("--no-cost", action="store_true", help="part 1 only")
    ap.add_argument("--file", action="append", help="a corpus file (relative to --root) to load and step both ways")
    ap.add_argument("--limit", type=int, default=1024, help="collision.MAX_HULL_VERTICES while measuring the cost of larger hulls")


def run(args, results):
    """``python -m benchmarks hull_sizes [--root DIR]``: the census and the costs into ``results``."""

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact import collision

    from jaxcontact.worlds.mjcf import APPROXIMATE_HULL_VERTICES as APPROX

    meshes, files, bodies, largest = corpus(os.path.abspath(args.root), args.only)
    rows = sorted(meshes.values(), key=lambda r: -r["scipy_hull"])
    over = [r for r in rows if r["scipy_hull"] > APPROX]
    out = {"command": args.command,
           "limit": collision.MAX_HULL_VERTICES, "measured_with_limit": None if args.no_cost else args.limit, "distinct_meshes": len(rows), "meshes_over_128": over,
           "files_by_largest_hull": dict(Counter(min(v // 64 * 64, 512) for v in files.values() if v)),
           "files_over_limit": sum(v > collision.MAX_HULL_VERTICES for v in files.values()),
           "histogram_meshes": dict(Counter(min(r["scipy_hull"] // 64 * 64, 512) for r in rows)),
           "mujoco_vs_scipy_max_abs_difference": max((abs(r["mujoco_hull"] - r["scipy_hull"]) for r in rows if r["mujoco_hull"]),
                                                     default=0)}
    cost = []
    if not args.no_cost:
        collision.MAX_HULL_VERTICES = args.limit  # the engine's limit raised for the measurement only
        largest.sort(key=lambda x: -x[0])
        seen = set()
        for n, verts in largest:
            if n in seen or len(seen) >= 3 or n > args.limit:
                continue
            seen.add(n)
            full = collision.hull_corners(verts)
            red = collision.reduce_hull(full, APPROX)
            size = float(np.max(np.linalg.norm(full - full.mean(0), axis=1)))
            dev = outside(full, red)
            row = {"hull_vertices": n, "topology_s": round(topology_seconds(full), 3),
                   "reduced_vertices": len(red), "reduced_topology_s": round(topology_seconds(red), 3),
                   "reduction_deviation_m": dev, "reduction_deviation_rel": dev / size,
                   "full": step_seconds(full), "reduced": step_seconds(red)}
            cost.append(row)
            print(json.dumps(row), flush=True)
        rng = np.random.default_rng(0)
        for k in (8, 32, 128, 256, 400):
            pts = rng.normal(size=(k, 3))
            pts /= np.linalg.norm(pts, axis=1, keepdims=True)
            row = {"sphere_points": k, "topology_s": round(topology_seconds(pts), 3), "step": step_seconds(pts)}
            cost.append(row)
            print(json.dumps(row), flush=True)
    out["cost"] = cost
    out["files"] = [file_cost(os.path.join(os.path.abspath(args.root), f), args.limit) for f in (args.file or [])]
    lines = [f"# Mesh hull sizes in the public corpus, and what a hull's vertex count costs", "",
             f"Command: `{out['command']}` (CPU seconds, `time.process_time`, 2 shared cores).", "",
             f"Distinct colliding meshes: {len(rows)}; above {APPROX} corners: {len(over)} (listed), above the limit of "
             f"{out['limit']}: {sum(r['scipy_hull'] > out['limit'] for r in rows)}; compiled files whose "
             f"largest colliding mesh hull is above it: {out['files_over_limit']}. MuJoCo's hull (`mesh_graph`) and scipy's "
             f"differ by at most {out['mujoco_vs_scipy_max_abs_difference']} vertices.", "",
             "| mesh | vertices | MuJoCo hull | corners (`collision.hull_corners`) | size (m) | files | example |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['mesh']} | {r['vertices']} | {r['mujoco_hull']} | {r['scipy_hull']} | {r['size_m']:.3g} | {r['files']} | "
              f"{r['example']} |" for r in over]
    lines += ["", "Distinct meshes by hull vertices (bins of 64, from): " +
              ", ".join(f"{k}: {v}" for k, v in sorted(out["histogram_meshes"].items())), "",
              "Files by their largest colliding hull (bins of 64, from): " +
              ", ".join(f"{k}: {v}" for k, v in sorted(out["files_by_largest_hull"].items()))]
    if cost:
        lines += ["", "Cost (one world: the hull on the ground under a 5 cm box; step: one compiled step of a 20-step rollout):", "",
                  "| hull | vertices | topology (s) | make_scene (s) | compile + first (s) | step (ms) |", "|---|---|---|---|---|---|"]
        for r in cost:
            if "hull_vertices" in r:
                for which in ("full", "reduced"):
                    s = r[which]
                    lines.append(f"| corpus mesh, {which} | {s['vertices']} | {r['topology_s'] if which == 'full' else r['reduced_topology_s']} | "
                                 f"{s['make_scene_s']} | {s['compile_and_first_s']} | {s['step_ms']} |")
                lines.append(f"| reduction's largest surface deviation | | {r['reduction_deviation_m'] * 1000:.3g} mm "
                             f"({100 * r['reduction_deviation_rel']:.2g} % of the hull's radius) | | | |")
            else:
                s = r["step"]
                lines.append(f"| random points on a sphere | {r['sphere_points']} | {r['topology_s']} | {s['make_scene_s']} | "
                             f"{s['compile_and_first_s']} | {s['step_ms']} |")
    if out["files"]:
        lines += ["", f"A whole file, strict (the limit raised to {args.limit}: the full hulls) against `approximate=True` "
                  f"(hulls reduced to {APPROX} by `collision.reduce_hull`, `mjcf.APPROXIMATE_HULL_VERTICES`); load, compile and step in CPU seconds, "
                  "the largest distance between the two worlds' body centres of mass over the steps:", "",
                  "| file | mode | largest hull | bodies' padded vertices | load (s) | compile + first (s) | step (ms) |",
                  "|---|---|---|---|---|---|---|"]
        for r in out["files"]:
            for mode in ("strict", "approximate"):
                x = r[mode]
                lines.append(f"| {r['file']} | {mode} | {x['largest_hull']} | {x['padded']} | {x['load_s']} | "
                             f"{x['compile_and_first_s']} | {x['step_ms']} |")
            lines.append(f"| | strict vs approximate over {r['steps']} steps | | | | | largest distance {r['apart_mm']:.3g} mm |")
    results.write(out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
