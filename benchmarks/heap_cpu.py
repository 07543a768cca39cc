"""Where the heaps' steps go, in quantities a loaded machine does not move (issue 62 item 9).

    python -m benchmarks heap_cpu --worlds 64 --settle 200 --window 100 --rounds 4 --name heap_cpu

For each heap of ``benchmarks.mixed_speed`` (its scene, ``--broad-phase heap``, float32, one device,
``JAXCONTACT_THREADS=1``): ``--worlds`` worlds run ``--settle`` steps from the drop, then windows of
``--window`` steps (``pipeline.run`` vmapped, the warm start carried, as a rollout runs) are timed in
**CPU seconds** (``time.process_time``: what the process used, whatever else the machine runs), the
programs of ``--compiles`` (``COMPILES``; default ``world,xla``) alternated window by window (A B A B …,
``--rounds`` each): ``world`` (``worlds.pipeline.compiler_options()``: what a world's eager entry points
compile with on a CPU), ``xla`` (XLA's defaults), ``convex-jax`` (the convex pairs' manifold in JAX). Also per heap: the solve's sweeps per step and the valid contacts per world
at the windows' states (``WorldInfo.iterations``; ``contacts.collide``), the compiled program's size
(HLO lines, fusions, YNNPACK fusions, custom calls) and its compile time in CPU seconds; ``--trace``: each
operation's time in one more window of each (JAX's profiler), summed per stage of the step by the
operation's source (``trace``). Writes
``benchmarks/results/<name>.{json,md}``."""

from __future__ import annotations

import os
import re
import sys
import time

import numpy as np

from .common import fmt, machine_info, md_machine, md_table
from .common import HEAPS, broad_phased, heap_worlds

COMPILES = ("world", "xla", "convex-jax", "slots-full", "convex-full", "round-jax")
"""The programs compared: ``world`` (the world's compiler options, as its eager doors compile), ``xla``
(XLA's defaults), ``convex-jax`` (the world's options, traced with ``collision.CONVEX_MANIFOLD`` =
"jax": the convex pairs' manifold in JAX after the kernel's axis search, the design before), ``slots-full`` (the
world's options, traced with ``worlds.scene.SLOT_CONTACTS`` = "pair_contacts": every pair slot ``pair_contacts`` wide,
the design before), ``convex-full`` (the world's options, traced with ``collision.CONVEX_APART_EXIT`` = False: the
convex kernel's manifold on every pair, also those apart beyond the margin, the design before), ``round-jax`` (the
world's options, traced with ``collision.ROUND_KERNEL`` = False: spheres' and capsules' contacts against hulls in
the pure-JAX reference, the design before)."""


def _frames(text: str):
    """{instruction name: its innermost-first chain of (file, function)} from a compiled program's text
    (XLA's stack-frame tables)."""
    def section(name):
        m = re.search(rf"^{name}\n(.*?)(?:\n\n|\Z)", text, re.S | re.M)
        return m.group(1).splitlines() if m else []

    def table(name):
        return {int(line.split()[0]): dict(re.findall(r"(\w+)=(\d+)", line)) for line in section(name)}

    files = {int(line.split()[0]): line.split(None, 1)[1].strip('"') for line in section("FileNames")}
    funcs = {int(line.split()[0]): line.split(None, 1)[1].strip('"') for line in section("FunctionNames")}
    locs, frames = table("FileLocations"), table("StackFrames")

    def chain(fid):
        out = []
        while fid in frames:
            loc = locs.get(int(frames[fid].get("file_location_id", 0)), {})
            out.append((files.get(int(loc.get("file_name_id", 0)), "?").split("/")[-1],
                        funcs.get(int(loc.get("function_name_id", 0)), "?")))
            parent = int(frames[fid].get("parent_frame_id", 0))
            if parent in (0, fid):
                break
            fid = parent
        return out

    return {m.group(1): chain(int(m.group(2)))
            for m in re.finditer(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*?stack_frame_id=(\d+)", text, re.M)}


FILES = {"collision.py": "narrow phase (collision.py)", "narrow.cc": "narrow phase (collision.py)",
         "body_lcp.py": "solve (solvers/)", "lcp.py": "solve (solvers/)", "entry.py": "solve (solvers/)",
         "implicit.py": "solve (solvers/)", "problem.py": "solve (solvers/)", "coulomb.py": "solve (solvers/)",
         "contacts.py": "collision stage's bookkeeping (worlds/contacts.py)",
         "geometry.py": "rows, candidates, mass matrices (geometry.py)", "rotations.py": "rotations.py",
         "contact.py": "contact problem (contact.py)", "pipeline.py": "the step (pipeline.py, stages.py)",
         "stages.py": "the step (pipeline.py, stages.py)"}
"""The stage of an operation: its innermost source frame's file (XLA keeps a few frames per operation)."""


def trace(program, state, worlds, window, directory):
    """Each XLA operation's time in one call of ``program`` (JAX's profiler; CPU µs per world-step summed
    per stage by the operation's source file, ``FILES``, and how many operations ran per step): the
    profiler's own cost inflates many small operations, so read shares, not totals."""
    import glob
    import gzip
    import json
    import shutil

    import jax

    shutil.rmtree(directory, ignore_errors=True)
    with jax.profiler.trace(directory, create_perfetto_trace=True):
        jax.block_until_ready(program(state))
    events = json.load(gzip.open(glob.glob(f"{directory}/**/perfetto_trace.json.gz", recursive=True)[0]))
    events = events["traceEvents"] if isinstance(events, dict) else events
    text = program.as_text()
    frames = _frames(text)
    kernels = dict(re.findall(r'%([\w.\-]+) = .*?custom_call_target="(\w+?)_f(?:32|64)"', text))
    us, count = {}, {}
    for e in events:
        name = e.get("name", "")
        if e.get("ph") != "X" or name.startswith(("$", "end:", "Pjit", "Common")) or "Thunk" in name:
            continue
        if name.startswith(("while", "conditional", "call")):  # containers: their operations are counted
            continue
        chain = frames.get(name, ())
        stage = ("YNNPACK fusions" if name.startswith("ynn_fusion") else f"kernel {kernels[name]}" if name in kernels
                 else "no source (XLA's copies)" if not chain else FILES.get(chain[0][0], chain[0][0]))
        us[stage] = us.get(stage, 0.0) + e.get("dur", 0) / (worlds * window)
        count[stage] = count.get(stage, 0) + 1
    return {k: {"us_per_world_step": us[k], "ops_per_step": count[k] / window} for k in sorted(us, key=lambda k: -us[k])}


def _program_size(text: str) -> dict:
    ops = re.findall(r"=\s*\S+\s+([a-z\-]+)\(", text)
    return {"hlo_lines": text.count("\n"), "fusions": ops.count("fusion"), "ynn_fusions": text.count("__ynn_fusion"),
            "custom_calls": ops.count("custom-call")}


def measure(heap, worlds, settle, window, rounds, traced=False, compiles=COMPILES[:2]):
    import jax
    import jax.numpy as jnp

    from jaxcontact.types import State
    from jaxcontact.worlds import contacts, mjcf, pipeline

    kinds, n = HEAPS[heap]
    text, qpos, _ = heap_worlds(kinds, n, worlds)
    scene, params, _, model = mjcf.from_mjcf(text, dtype=jnp.float32)
    scene = broad_phased(scene, "heap")
    q = qpos.reshape(worlds, n, 7).astype(np.float32)
    state = State(pos=jnp.asarray(q[..., :3]), quat=jnp.asarray(q[..., 3:]), vel=jnp.zeros((worlds, n, 3), jnp.float32),
                  omega=jnp.zeros((worlds, n, 3), jnp.float32))

    def chunk(s, steps):
        return jax.vmap(lambda x: pipeline.run(pipeline.RolloutSpec(model, scene, steps, "final", False), params, x, None))(s)

    settled = jax.jit(chunk, static_argnums=1)(state, settle) if settle else state
    out = {"bodies": n, "slots": scene.num_pair_slots, "groups": len(scene.pair_groups()), "compile": {}}
    programs = {}
    from jaxcontact import collision
    from jaxcontact.worlds import scene as scene_module

    for c in compiles:
        t = time.process_time()
        switch, slots, apart = collision.CONVEX_MANIFOLD, scene_module.SLOT_CONTACTS, collision.CONVEX_APART_EXIT
        round_kernel = collision.ROUND_KERNEL
        collision.ROUND_KERNEL = round_kernel and c != "round-jax"
        collision.CONVEX_MANIFOLD = "jax" if c == "convex-jax" else switch
        scene_module.SLOT_CONTACTS = "pair_contacts" if c == "slots-full" else slots
        collision.CONVEX_APART_EXIT = apart and c != "convex-full"
        try:
            lowered = jax.jit(lambda s: chunk(s, window)).lower(settled)
        finally:
            collision.CONVEX_MANIFOLD, scene_module.SLOT_CONTACTS, collision.CONVEX_APART_EXIT = switch, slots, apart
            collision.ROUND_KERNEL = round_kernel
        programs[c] = lowered.compile(None if c == "xla" else pipeline.compiler_options())
        out["compile"][c] = {"cpu_s": time.process_time() - t, **_program_size(programs[c].as_text())}
    # sweeps and contacts at the windows' states (one more program, not timed)
    probe = jax.jit(jax.vmap(lambda x: pipeline.run(pipeline.RolloutSpec(model, scene, window), params, x, None)))
    traj, info = probe(settled)
    con = jax.jit(jax.vmap(jax.vmap(lambda x: contacts.collide(model, scene, params, x))))(
        jax.tree_util.tree_map(lambda a: a[:, 1:], traj))
    it = np.asarray(info.iterations)
    valid = np.asarray(con.valid)
    G = con.num_ground
    out["sweeps_per_step"] = {"mean": float(it.mean()), "median": float(np.median(it)), "max": int(it.max())}
    out["valid_contacts_per_world"] = {"ground": float(valid[..., :G].sum(-1).mean()),
                                       "pairs": float(valid[..., G:].sum(-1).mean()), "slots": int(valid.shape[-1])}
    cpu = {c: [] for c in compiles}
    s = {c: settled for c in compiles}
    for c in compiles:  # a first call of each, untimed
        s[c] = jax.block_until_ready(programs[c](s[c]))
    for _ in range(rounds):
        for c in compiles:
            t = time.process_time()
            s[c] = jax.block_until_ready(programs[c](s[c]))
            cpu[c].append(1e6 * (time.process_time() - t) / (worlds * window))
    out["cpu_us_per_world_step"] = cpu
    out["mean_final_height_m"] = {c: float(np.asarray(s[c].pos[..., 2]).mean()) for c in compiles}
    if traced:
        out["trace"] = {c: trace(programs[c], s[c], worlds, window, f"/tmp/heap_cpu_trace_{heap}_{c}") for c in compiles}
    return out


def arguments(ap):
    ap.add_argument("--settle", type=int, default=200,
                    help="steps from the drop before the windows (default: %(default)s)")
    ap.add_argument("--window", type=int, default=100, help="steps per timed window (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=4, help="timed windows of each program (default: %(default)s)")
    ap.add_argument("--compiles", default="world,xla", help=f"the programs compared, of {COMPILES} (the last is the "
                                                             "ratio's reference; default: %(default)s)")
    ap.add_argument("--trace", action="store_true", help="also each operation's time in one window (JAX's profiler), "
                                                          "summed per stage of the step")


def run(args, out):
    """``python -m benchmarks heap_cpu``: ``out`` (``runner.Results``) gets the .json (after each heap) and .md."""
    os.environ.setdefault("JAXCONTACT_THREADS", "1")
    compiles = tuple(args.compiles.split(","))
    if len(compiles) < 2 or set(compiles) - set(COMPILES):
        raise SystemExit(f"--compiles: two or more of {COMPILES}, got {args.compiles!r}")
    for h in args.only.split(","):
        if h not in HEAPS:
            raise SystemExit(f"--only: unknown heap {h!r} (one of {', '.join(HEAPS)})")
    worlds = int(args.worlds)
    ref = compiles[-1]
    res = {"machine": machine_info("benchmarks.heap_cpu", command=args.command), "worlds": worlds,
           "settle": args.settle, "window": args.window, "rounds": args.rounds, "heaps": {}}
    rows, info = [], []
    for h in args.only.split(","):
        r = measure(h, worlds, args.settle, args.window, args.rounds, args.trace, compiles)
        print(h, r, flush=True)
        res["heaps"][h] = r
        out.write(res)
        med = {c: float(np.median(r["cpu_us_per_world_step"][c])) for c in compiles}
        for c in compiles:
            p = r["compile"][c]
            rows.append([h, c, " ".join(fmt(x) for x in r["cpu_us_per_world_step"][c]), fmt(med[c]),
                         f"{med[ref] / med[c]:.2f}×", fmt(p["cpu_s"]), p["hlo_lines"], p["fusions"], p["ynn_fusions"],
                         p["custom_calls"], fmt(r["mean_final_height_m"][c])])
        v, w = r["sweeps_per_step"], r["valid_contacts_per_world"]
        info.append([h, r["slots"], r["groups"], f"{v['mean']:.1f} / {v['median']:.0f} / {v['max']}",
                     f"{w['ground']:.1f} + {w['pairs']:.1f} of {w['slots']}"])
    md = ["# Where the heaps' steps go, in CPU seconds", "", md_machine(res["machine"]), "",
          f"{worlds} worlds after {args.settle} steps, float32, one device, one kernel thread; windows of "
          f"{args.window} steps, the compiles ({', '.join(compiles)}) alternated window by window, {args.rounds} rounds (module docstring).",
          "", md_table(["heap", "compile", "CPU µs per world-step, each window", "median", f"{ref} / this",
                        "compile (CPU s)", "HLO lines", "fusions", "YNNPACK fusions", "custom calls",
                        "mean final z (m)"], rows),
          "", md_table(["heap", "pair slots", "pair groups", "sweeps per step (mean / median / max)",
                        "valid contacts per world (ground + pairs of slots)"], info)]
    for h, r in res["heaps"].items():
        for c, t in r.get("trace", {}).items():
            md += ["", f"## {h}, compile {c}: one window traced (JAX's profiler; µs per world-step, inflated by it)", "",
                   md_table(["stage (by the operation's source)", "µs per world-step", "operations per step"],
                            [[k, fmt(v["us_per_world_step"]), fmt(v["ops_per_step"])] for k, v in t.items()])]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json} and {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
