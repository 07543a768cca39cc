"""Fast hits: how often does a two-body throw start a step with the bodies inside each other, per pair of kinds?

    python -m benchmarks overlap_census                           # 1,000 throws per pair, float64
    python -m benchmarks overlap_census --throws 100 --pairs box-box,box-sphere
    python -m benchmarks overlap_census --fast-hits off            # the contacts of the current pose only

For each pair of kinds (``--kinds``, default box, sphere, capsule: every pair of them; or ``--pairs``):
body B rests on the ground at the origin (a 0.1 m box on a face, a 0.05 m sphere, a capsule of radius
0.03 m and half-length 0.05 m lying along x), body A starts above it, its bounding sphere's lowest
point 0–0.15 m above B's top (a random horizontal offset within ±0.08 m, a random orientation),
thrown at 0.5–3 m/s towards B's top centre (a random direction with a downward component) with a
random spin (each component U(−10, 10) rad/s): ``benchmarks.two_box_throws``' throws for every
kind. 250 steps of 2 ms, the world's default law (μ 0.5, no restitution), ``worlds.batch_rollout``.
Per throw: the deepest overlap of the pair at the start of any step, from the pair's signed
distance at that state (``worlds.contacts.start_overlaps``: the narrow phase at the pose itself),
and whether it hit B (a pair distance within 1 mm at some step). The target (issue 62, item 5): at
most 1 % of throws beyond 40 µm, none beyond 0.5 mm. Results: ``benchmarks/results/overlap_census.{json,md}``.
"""

from __future__ import annotations

import itertools
import sys
import time

import numpy as np

from .common import THROW_KINDS as KINDS, machine_info, md_machine, throw_body, throws_onto

TOL = 40e-6
LIMIT = 0.5e-3


def census(kind_a: str, kind_b: str, n: int, seed: int = 0, steps: int = 250, dtype=None, fast_hits: bool = True):
    """(deepest overlap (n,) m, hit (n,) bool) of ``n`` throws of ``kind_a`` onto a resting ``kind_b``."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import contacts, scenes

    dtype = dtype or jnp.float64
    scene, body = worlds.make_scene([throw_body(kind_a), throw_body(kind_b)], pairs=[(0, 1)], fast_hits=fast_hits)
    params = scenes._params(body, 0.5, 0.0)
    params = jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, params)
    model = worlds.model()
    states = throws_onto(kind_a, kind_b, n, seed, dtype)
    traj, info = worlds.batch_rollout(model, scene, params, states, steps)

    @jax.jit
    def depth(traj):
        flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), traj)
        over = jax.lax.map(lambda s: contacts.start_overlaps(model, scene, params, s)[0], flat, batch_size=1024)
        return over.reshape(traj.pos.shape[:2])

    over = np.asarray(depth(traj))
    phi = np.asarray(info.pair_phi[:, :, 0]).min(axis=-1)
    return over.max(axis=1), (phi <= 1e-3).any(axis=1)


def arguments(ap):
    ap.add_argument("--throws", type=int, default=1000)
    ap.add_argument("--kinds", default="box,sphere,capsule", help=f"comma-separated, of {KINDS}: every pair of them")
    ap.add_argument("--pairs", default=None, help="comma-separated A-B pairs (A thrown onto a resting B) instead of --kinds")
    ap.add_argument("--fast-hits", default="on", choices=["on", "off"], help="Scene.fast_hits")


def run(args, out):
    """``python -m benchmarks overlap_census``: ``out`` (``runner.Results``) gets the JSON and the .md."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if args.dtype == "float64" else jnp.float32
    if args.pairs:
        pairs = [tuple(p.split("-")) for p in args.pairs.split(",")]
    else:
        kinds = args.kinds.split(",")
        pairs = list(itertools.combinations_with_replacement(kinds, 2))
    rows = []
    for a, b in pairs:
        t0 = time.perf_counter()
        deepest, hit = census(a, b, args.throws, args.seed, args.steps, dtype, args.fast_hits == "on")
        row = {"pair": f"{a}-{b}", "throws": args.throws, "hits": int(hit.sum()),
               "beyond_40um": int((deepest > TOL).sum()), "beyond_0_5mm": int((deepest > LIMIT).sum()),
               "deepest_m": float(deepest.max()), "p99_m": float(np.percentile(deepest, 99)),
               "seconds": time.perf_counter() - t0}
        row["meets_target"] = row["beyond_40um"] <= 0.01 * args.throws and row["beyond_0_5mm"] == 0
        print(row, flush=True)
        rows.append(row)
    res = {"machine": machine_info("benchmarks.overlap_census", command=args.command), "steps": args.steps, "seed": args.seed,
           "dtype": args.dtype, "fast_hits": args.fast_hits, "pairs": rows}
    md = ["# Fast hits: overlaps at the start of a step, per pair of kinds", "", md_machine(res["machine"]), "",
          f"{args.dtype}, seed {args.seed}, {args.steps} steps of 2 ms, `Scene.fast_hits` {args.fast_hits}. "
          "Target: at most 1 % of throws beyond 40 µm, none beyond 0.5 mm.", "",
          "| A thrown onto B | throws | hits | > 40 µm | > 0.5 mm | deepest | p99 | target | s |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        md.append(f"| {r['pair']} | {r['throws']} | {r['hits']} | {r['beyond_40um']} | {r['beyond_0_5mm']} | "
                  f"{r['deepest_m'] * 1e3:.3f} mm | {r['p99_m'] * 1e3:.3f} mm | {'yes' if r['meets_target'] else 'no'} | "
                  f"{r['seconds']:.0f} |")
    out.write(res, "\n".join(md))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
