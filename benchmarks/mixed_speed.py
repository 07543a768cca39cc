"""Heaps of round and mixed bodies against MuJoCo C, both on both cores, in one run (issue 62 item 9).

    python -m benchmarks mixed_speed                       # about 10 min on 2 cores
    python -m benchmarks mixed_speed --worlds 64 --steps 200 --name mixed_speed_quick

Three heaps (``experiments.peer_scenes.heap_scene``: layers of a 4 × 4 grid 0.1 m apart dropped on
the open floor, μ 0.5, each world its own random orientations and ±5 mm jitter, seeds 0 … W − 1):
16 boxes (the reference), 64 spheres, and 16 mixed bodies (4 boxes, 4 spheres, 4 capsules, 4
cylinders). Each heap runs ``--worlds`` worlds × ``--steps`` steps:

- jaxcontact: ``worlds.sharded_batch_rollout(..., output="final")`` over two CPU devices (this
  run sets ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` and ``JAXCONTACT_THREADS=1``
  before JAX starts: one core per device, as MuJoCo's two threads), float32, the defaults, compiled
  ahead (compile time reported apart), one timed call; with ``--broad-phase heap`` (the default)
  the scene as ``simulate --mjcf`` runs a loaded file (``worlds.scenes.heap_broad_phase``): more
  than 3N pairs get ``Scene.max_pairs`` = 3N per group of pairs (the 64 spheres' 2,016 pairs, the
  boxes' 120), and a table whose groups hold more than 3N slots together (the mixed heap: 16
  groups of at most 10 pairs) 3N slots across them (``Scene.max_slots``); ``group``: ``max_pairs``
  alone (the design before ``max_slots``); ``none``: every pair of the table every step (the first
  measurement's setting). Several, comma-separated, run each beside the others against the same
  MuJoCo run; ``--fast-hits`` turns ``Scene.fast_hits`` on, a design's suffix ``+fast`` on it alone
  (``--broad-phase heap,heap+fast``: its cost in one run); ``--compile world`` (the default) compiles
  with the options a world's eager entry points use on a CPU (``worlds.pipeline.compiler_options()``:
  no YNNPACK fusions), ``xla`` with XLA's defaults (the design before; ``--compile world,xla``: both);
- MuJoCo C 4: ``mujoco.rollout.Rollout(nthread=2)`` on the same worlds (the MJCF of the scene, each
  world's qpos), its defaults (pyramidal cone, Newton, float64), best of two timed calls after a
  warm-up.

Reported: body-steps/s of each, the ratio MuJoCo / jaxcontact ("× behind"), the mean final height
of the bodies in each (a sanity check that both ran the same heap), and jaxcontact's flags.
Writes ``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import numpy as np

from .common import BROAD_PHASES, HEAPS, broad_phased, fmt, heap_worlds, machine_info, md_machine, md_table

COMPILES = ("world", "xla")


def run_jaxcontact(text, qpos, steps, broad_phase="heap", fast_hits=False, compile_with="world"):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.types import State
    from jaxcontact.worlds import mjcf, pipeline

    scene, params, _, model = mjcf.from_mjcf(text, dtype=jnp.float32)
    scene = dataclasses.replace(broad_phased(scene, broad_phase), fast_hits=fast_hits)
    W, n = qpos.shape[0], qpos.shape[1] // 7
    q = qpos.reshape(W, n, 7).astype(np.float32)
    states = State(pos=jnp.asarray(q[..., :3]), quat=jnp.asarray(q[..., 3:]), vel=jnp.zeros((W, n, 3), jnp.float32),
                   omega=jnp.zeros((W, n, 3), jnp.float32))
    fn = jax.jit(lambda p, s: worlds.sharded_batch_rollout(model, scene, p, s, steps, output="final"))
    t = time.perf_counter()
    compiled = fn.lower(params, states).compile(pipeline.compiler_options() if compile_with == "world" else None)
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    final, summary = jax.block_until_ready(compiled(params, states))
    wall = time.perf_counter() - t
    return {"wall_s": wall, "compile_s": compile_s, "body_steps_per_s": W * n * steps / wall,
            "mean_final_height_m": float(np.asarray(final.pos[..., 2]).mean()),
            "flags": int(np.bitwise_or.reduce(np.asarray(summary.flags).reshape(-1))),
            "devices": len(jax.devices()), "max_pairs": scene.max_pairs, "max_slots": scene.max_slots,
            "slots": scene.num_pair_slots, "broad_phase": broad_phase, "fast_hits": scene.fast_hits,
            "compile": compile_with}


def run_mujoco(text, qpos, steps, threads=2):
    import mujoco
    from mujoco import rollout

    from .common import mujoco_initial_states

    m = mujoco.MjModel.from_xml_string(text)
    init = mujoco_initial_states(m, qpos, np.zeros((qpos.shape[0], m.nv)))  # at rest
    out = np.zeros((qpos.shape[0], steps, init.shape[1]))
    datas = [mujoco.MjData(m) for _ in range(threads)]
    times = []
    with rollout.Rollout(nthread=threads) as pool:
        for _ in range(3):
            t = time.perf_counter()
            pool.rollout(m, datas, init, nstep=steps, state=out)
            times.append(time.perf_counter() - t)
    best = min(times[1:])
    n = qpos.shape[1] // 7
    z = out[:, -1, 1:1 + m.nq].reshape(qpos.shape[0], n, 7)[:, :, 2]
    return {"wall_s": best, "times_s": times, "body_steps_per_s": qpos.shape[0] * n * steps / best,
            "mean_final_height_m": float(z.mean()), "threads": threads}


def arguments(ap):
    ap.add_argument("--broad-phase", default="heap",
                    help="comma-separated, each run beside the others: heap (more than 3N pairs get max_pairs = 3N "
                         "and 3N slots across the groups, as simulate --mjcf), group (max_pairs alone: the design "
                         "before max_slots), none (every pair); a suffix +fast: with Scene.fast_hits (default: "
                         "%(default)s)")
    ap.add_argument("--fast-hits", action="store_true", help="Scene.fast_hits on (off by default)")
    ap.add_argument("--compile", default="world",
                    help="comma-separated, each run beside the others: world (XLA's options of a world's eager entry "
                         "points on a CPU, worlds.pipeline.CPU_COMPILER_OPTIONS: no YNNPACK fusions), xla (XLA's "
                         "defaults: the design before) (default: %(default)s)")


def run(args, out):
    """``python -m benchmarks mixed_speed``: ``out`` (``runner.Results``) gets the .json (after each heap and
    design) and .md. Two CPU devices: the flags are set here, before JAX starts its CPU backend (the runner
    and ``common`` import no JAX), and checked."""
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    os.environ["JAXCONTACT_THREADS"] = "1"
    import jax

    if len(jax.devices("cpu")) != 2:
        raise RuntimeError(f"mixed_speed runs on two CPU devices; JAX started before XLA_FLAGS was set and has "
                           f"{jax.devices('cpu')}")
    for h in args.only.split(","):
        if h not in HEAPS:
            raise SystemExit(f"--only: unknown heap {h!r} (one of {', '.join(HEAPS)})")
    for b in args.broad_phase.split(","):
        if b.removesuffix("+fast") not in BROAD_PHASES:
            raise SystemExit(f"--broad-phase: unknown {b!r} (one of {', '.join(BROAD_PHASES)})")
    for c in args.compile.split(","):
        if c not in COMPILES:
            raise SystemExit(f"--compile: unknown {c!r} (one of {', '.join(COMPILES)})")
    args.worlds = int(args.worlds)
    designs = [(b, c) for b in args.broad_phase.split(",") for c in args.compile.split(",")]
    res = {"machine": machine_info("benchmarks.mixed_speed", command=args.command), "worlds": args.worlds,
           "steps": args.steps, "broad_phase": args.broad_phase, "fast_hits": args.fast_hits, "compile": args.compile, "heaps": {}}
    for h in args.only.split(","):
        kinds, n = HEAPS[h]
        text, qpos, _ = heap_worlds(kinds, n, args.worlds)
        mj = run_mujoco(text, qpos, args.steps)
        print(f"{h}: mujoco {mj}", flush=True)
        for b, c in designs:
            jc = run_jaxcontact(text, qpos, args.steps, b.removesuffix("+fast"), args.fast_hits or b.endswith("+fast"), c)
            print(f"{h}: jaxcontact {jc}", flush=True)
            key = h if len(designs) == 1 else f"{h} ({b}, {c})"
            res["heaps"][key] = {"bodies": n, "jaxcontact": jc, "mujoco": mj,
                                 "behind": mj["body_steps_per_s"] / jc["body_steps_per_s"]}
            out.write(res)
    rows = [[h, r["bodies"], fmt(r["jaxcontact"]["body_steps_per_s"]), fmt(r["mujoco"]["body_steps_per_s"]),
             f"{r['behind']:.2f}×", fmt(r["jaxcontact"]["compile_s"]), fmt(r["jaxcontact"]["mean_final_height_m"]),
             fmt(r["mujoco"]["mean_final_height_m"]), r["jaxcontact"]["flags"], r["jaxcontact"].get("max_pairs"),
             r["jaxcontact"].get("slots")]
            for h, r in res["heaps"].items()]
    md = ["# Heaps of round and mixed bodies against MuJoCo C, both cores", "", md_machine(res["machine"]), "",
          f"{args.worlds} worlds × {args.steps} steps of 2 ms each; jaxcontact float32 on two CPU devices, MuJoCo C "
          f"with two threads (module docstring); broad phase: {args.broad_phase}; fast_hits: {args.fast_hits}; "
          f"compile: {args.compile}.", "",
          md_table(["heap", "bodies", "jaxcontact body-steps/s", "MuJoCo C body-steps/s", "MuJoCo / jaxcontact",
                    "compile (s)", "mean final z, jaxcontact (m)", "mean final z, MuJoCo (m)", "flags", "max_pairs",
                    "pair slots"],
                   rows)]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json} and {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
