"""Where a step of the round and mixed heaps spends its time (issue 62 item 9): stage times of one
jitted, vmapped call at a settled heap, float32, W worlds of ``benchmarks.mixed_speed``'s heaps.

    python -m benchmarks round_profile --worlds 32 --settle 300 --name round_profile

Each heap is loaded as ``mixed_speed`` loads it (``from_mjcf`` of ``experiments.peer_scenes.heap_scene``),
run ``--settle`` steps (the pile formed: its contacts are what the timed step sees), then each stage
is timed alone at that state, ``jax.vmap`` over the worlds, compiled ahead, best of ``--repeat``
calls (``--broad-phase heap``: the scene as ``mixed_speed`` runs it): the whole step (``pipeline.step_stages``), the collision stage (``contacts.collide``), its
ground contacts, its pairs (``contacts.pair_contacts``), each group of pairs of one pair of kinds
(``contacts.pair_contacts`` of the scene with that group's pairs alone: its broad phase, narrow phase and
rows), the fast pairs' separation, and the rest of the step
(step − collide: the contact problem, the solve, integration), and for a heap with cylinders the step
without the pairs that hold one (every other pair in the problem, no cap). µs per world-step; the stages run as
parts of the step are fused with it, so their sum is not the step's time exactly. Writes
``benchmarks/results/<name>.{json,md}``."""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from .common import fmt, machine_info, md_machine, md_table
from .common import BROAD_PHASES, HEAPS, broad_phased, heap_worlds


def _time(fn, *args, repeat=3):
    import jax

    compiled = jax.jit(fn).lower(*args).compile()
    jax.block_until_ready(compiled(*args))
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - t)
    return best


def profile(heap, worlds, settle, repeat, broad_phase="none", fast_hits=False):
    import jax
    import jax.numpy as jnp

    from jaxcontact import geometry
    from jaxcontact.types import State
    from jaxcontact.worlds import contacts, mjcf, pipeline

    kinds, n = HEAPS[heap]
    text, qpos, _ = heap_worlds(kinds, n, worlds)
    scene, params, _, model = mjcf.from_mjcf(text, dtype=jnp.float32)
    scene = dataclasses.replace(broad_phased(scene, broad_phase), fast_hits=fast_hits)
    q = qpos.reshape(worlds, n, 7).astype(np.float32)
    states = State(pos=jnp.asarray(q[..., :3]), quat=jnp.asarray(q[..., 3:]), vel=jnp.zeros((worlds, n, 3), jnp.float32),
                   omega=jnp.zeros((worlds, n, 3), jnp.float32))
    if settle:
        states = jax.jit(jax.vmap(lambda s: pipeline.run(
        pipeline.RolloutSpec(model, scene, settle, "final", False), params, s, None)))(states)
    v = lambda f: jax.vmap(f)
    warm = jax.vmap(lambda s: pipeline.initial_warm(model, scene, params, s))(states)
    ctrl = jnp.zeros((worlds, n, 6), jnp.float32)
    out = {}
    out["step"] = _time(v(lambda s, u, w: pipeline.step_stages(model, scene, params, s, u, w)), states, ctrl, warm, repeat=repeat)
    cyl = [i for i, k in enumerate(scene.shapes or ()) if k == "cylinder"]
    if cyl:  # the same state and step without the pairs that hold a cylinder (every other pair in the problem)
        rest = dataclasses.replace(scene, pairs=tuple(p for p in scene.pairs if p[0] not in cyl and p[1] not in cyl),
                                   max_pairs=None, max_slots=None)
        warm_r = jax.vmap(lambda s: pipeline.initial_warm(model, rest, params, s))(states)
        out["step without the pairs holding a cylinder"] = _time(v(lambda s, u, w: pipeline.step_stages(
            model, rest, params, s, u, w)), states, ctrl, warm_r, repeat=repeat)
    out["collide"] = _time(v(lambda s: contacts.collide(model, scene, params, s)), states, repeat=repeat)
    out["ground contacts"] = _time(v(lambda s: contacts.ground_contacts(model, scene, params, s)), states, repeat=repeat)
    out["pair contacts (all)"] = _time(v(lambda s: contacts.pair_contacts(model, scene, params, s)), states, repeat=repeat)
    name = lambda t: t if isinstance(t, str) else "box"
    for ta, tb, ks in scene.pair_groups():  # the engine's own pair stage on this group's pairs alone
        group = dataclasses.replace(scene, pairs=tuple(scene.pairs[k] for k in ks))
        key = f"pairs {name(ta)}–{name(tb)} ({len(ks)})"
        out[key] = _time(v(lambda s, group=group: contacts.pair_contacts(model, group, params, s)), states,
                         repeat=repeat)
    if scene.fast_hits:
        Minv = v(lambda s: jax.vmap(geometry.mass_matrix_inverse)(params.body, s))(states)
        out["separate fast pairs"] = _time(v(lambda s, M: contacts.separate_fast_pairs(
            model, scene, params, s, s, M, jnp.zeros(n, bool))), states, Minv, repeat=repeat)
    us = {k: 1e6 * t / worlds for k, t in out.items()}
    us["rest of the step (step − collide)"] = us["step"] - us["collide"]
    return us, {"pairs": scene.num_pairs, "slots": scene.num_pair_slots, "narrow slots": scene.num_narrow_slots,
                "groups": len(scene.pair_groups()), "contacts per pair": scene.slot_contacts,
                "max_pairs": scene.max_pairs, "max_slots": scene.max_slots, "fast_hits": scene.fast_hits}


def arguments(ap):
    ap.add_argument("--settle", type=int, default=300, help="steps before the timed stages (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per stage, the best kept (default: %(default)s)")
    ap.add_argument("--broad-phase", choices=BROAD_PHASES, default="none",
                    help="heap: more than 3N pairs get max_pairs = 3N and 3N slots across the groups "
                         "(worlds.scenes.heap_broad_phase); group: max_pairs alone; none: every pair")
    ap.add_argument("--fast-hits", action="store_true", help="Scene.fast_hits on")


def run(args, out):
    """``python -m benchmarks round_profile``: ``out`` (``runner.Results``) gets the .json and .md."""
    args.worlds = int(args.worlds)
    res = {"machine": machine_info("benchmarks.round_profile", command=args.command), "worlds": args.worlds, "settle": args.settle,
           "heaps": {}}
    md = ["# Where a step of the round and mixed heaps spends its time", "", md_machine(res["machine"]), "",
          f"{args.worlds} worlds, after {args.settle} steps, float32, one device; broad phase: {args.broad_phase}; "
          f"fast_hits: {args.fast_hits}; µs "
          f"per world-step, best of {args.repeat} (module docstring).", ""]
    for h in args.only.split(","):
        us, info = profile(h, args.worlds, args.settle, args.repeat, args.broad_phase, args.fast_hits)
        print(h, info, {k: round(x, 1) for k, x in us.items()}, flush=True)
        res["heaps"][h] = {"us_per_world_step": us, **info}
        out.write(res)
        md += [f"## {h}: {info['pairs']} pairs in {info['groups']} groups, {info['slots']} pair slots of "
               f"{info['contacts per pair']} contacts", "",
               md_table(["stage", "µs per world-step", "share of the step"],
                        [[k, fmt(x), f"{100 * x / us['step']:.0f} %"] for k, x in us.items()]), ""]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json} and {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
