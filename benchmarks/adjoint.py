"""The velocity-form contact solver's backward pass: matrix-free (Krylov) adjoint against dense.

    python -m benchmarks adjoint [--heaps 8] [--boxes 16] [--steps 200] [--seed 2]
    python -m benchmarks adjoint --scaling 8,16,32     # scratch memory of one step's gradient

``jax.grad`` of a heap's mean final height with respect to its initial velocities, through
``worlds.rollout`` (the drop and first impacts: every step's contact problem solved by
``solvers.solve_body_lcp`` and differentiated implicitly), twice on the same heaps: with the
matrix-free adjoint solve the package uses (``solvers.krylov_guarded_solve``: restarted GMRES on
vector–Jacobian products) and with the dense one it replaced (``dense_guarded_solve``: the
(C·d)² matrix formed from C·d products, then LU), which this benchmark swaps in for its second
variant. Per dtype: the relative difference of the two gradients, how many are finite, the wall
time of a gradient (compiled; the first call's compile timed apart), and the compiled program's
scratch memory (XLA's ``memory_analysis``). Heaps are ``scenes.heap(boxes, key)`` with keys from
``--seed`` (the Krylov restart length and tolerance were chosen on heaps of seed 1; seed 2 is
fresh). Writes ``results/adjoint.json`` and ``.md``.

``--scaling N1,N2,...``: how the backward pass's memory grows with the problem. For heaps of each
size (16 N contact slots, 48 N rows), XLA's scratch memory of the compiled gradient of one
``worlds.rollout`` step, with each adjoint (compiled only, not run; the figure depends on the
shapes, not the state). Writes ``results/adjoint_scaling.json`` and ``.md``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from unittest import mock

import numpy as np

from . import common
from .common import heap_height_grad


@contextlib.contextmanager
def dense_adjoint():
    """``solve_body_lcp``'s adjoint solved densely (the package before the matrix-free adjoint)."""
    from jaxcontact.solvers import implicit

    with mock.patch.object(implicit, "krylov_guarded_solve", implicit.dense_guarded_solve):
        yield


def measure(heaps: int, boxes: int, steps: int, seed: int, dtypes):
    import jax

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    model = worlds.model()
    keys = jax.random.split(jax.random.PRNGKey(seed), heaps)
    out = {}
    for dtype in dtypes:
        cast = lambda t: common.cast_floats(t, dtype)
        scene, params, _ = scenes.heap(boxes, keys[0])
        params = cast(params)
        states = [cast(scenes.heap(boxes, k)[2]) for k in keys]

        grad = heap_height_grad(model, scene, params, steps)
        res = {}
        for name, ctx in (("krylov", contextlib.nullcontext), ("dense", dense_adjoint)):
            jax.clear_caches()  # the rollout's inner jitted step is cached by function: trace it anew under ``ctx``
            with ctx():
                t = time.perf_counter()
                compiled = jax.jit(grad).lower(states[0]).compile()
                compile_s = time.perf_counter() - t
            grads, walls = [], []
            for i, s in enumerate(states):
                t = time.perf_counter()
                grads.append(np.asarray(jax.block_until_ready(compiled(s)), np.float64))
                walls.append(time.perf_counter() - t)
                common.log(f"{dtype} {name} heap {i}: {walls[-1]:.2f} s, |g| {np.linalg.norm(grads[-1]):.6g}")
            res[name] = {"grads": np.stack(grads), "wall_s": walls, "compile_s": compile_s,
                         "scratch_bytes": int(compiled.memory_analysis().temp_size_in_bytes)}
        gk, gd = res["krylov"]["grads"], res["dense"]["grads"]
        both = np.all(np.isfinite(gk), axis=(1, 2)) & np.all(np.isfinite(gd), axis=(1, 2))
        rel = np.linalg.norm((gk - gd).reshape(heaps, -1), axis=1) / np.maximum(np.linalg.norm(gd.reshape(heaps, -1), axis=1), 1e-300)
        out[dtype] = {
            "rel_diff": {"median": float(np.median(rel[both])), "max": float(np.max(rel[both]))} if both.any() else None,
            "rel_diff_per_heap": rel.tolist(),
            "grads": {name: r["grads"].tolist() for name, r in res.items()},
            **{name: {"finite": int(np.all(np.isfinite(r["grads"]), axis=(1, 2)).sum()), "of": heaps,
                      "median_wall_s": float(np.median(r["wall_s"])), "compile_s": r["compile_s"],
                      "scratch_bytes": r["scratch_bytes"]} for name, r in res.items()}}
    if "float64" in out:  # each gradient against the float64 dense one of the same heap (the reference)
        ref = np.asarray(out["float64"]["grads"]["dense"]).reshape(heaps, -1)
        for dtype in out:
            for name, g in out[dtype]["grads"].items():
                d = np.linalg.norm(np.asarray(g).reshape(heaps, -1) - ref, axis=1) / np.linalg.norm(ref, axis=1)
                out[dtype][name]["to_float64_dense"] = {"median": float(np.median(d)), "max": float(np.max(d))}
    return out


def run_scaling(sizes, dtype: str = "float64"):
    import jax

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    model = worlds.model()
    rows = []
    for n in sizes:
        scene, params, s = scenes.heap(n, jax.random.PRNGKey(0))
        cast = lambda t: common.cast_floats(t, dtype)
        params, s = cast(params), cast(s)

        grad = heap_height_grad(model, scene, params, 1)
        slots = int(worlds.collide(model, scene, params, s).valid.shape[0])
        row = {"boxes": n, "contact_slots": slots, "rows": 3 * slots}
        for name, ctx in (("krylov", contextlib.nullcontext), ("dense", dense_adjoint)):
            jax.clear_caches()
            with ctx():
                compiled = jax.jit(grad).lower(s).compile()
            row[name] = int(compiled.memory_analysis().temp_size_in_bytes)
            common.log(f"{n} boxes {name}: {row[name] / 2**20:.1f} MiB")
        rows.append(row)
    return rows


def render_scaling(res) -> str:
    rows = [[r["boxes"], r["contact_slots"], r["rows"], f"{r['krylov'] / 2**20:.1f}", f"{r['dense'] / 2**20:.1f}",
             f"{r['rows'] ** 2 * 8 / 2**20:.1f}"] for r in res["sizes"]]
    return "\n".join([
        "# Backward pass memory against problem size: matrix-free adjoint against dense", "",
        common.md_machine(res["machine"]), "",
        "XLA's scratch memory (`memory_analysis().temp_size_in_bytes`) of the compiled `jax.grad` of one "
        f"`worlds.rollout` step of an N-box heap ({res['dtype']}), with the matrix-free (Krylov) adjoint and with "
        "the dense one it replaced. Compiled only: the figure depends on the shapes.", "",
        common.md_table(["boxes", "contact slots", "rows (3C)", "krylov (MiB)", "dense (MiB)",
                         "one (3C)² matrix (MiB)"], rows), ""])


def render(res) -> str:
    w = res["workload"]
    rows = []
    for dtype in w["dtypes"]:
        r = res[dtype]
        d = r["rel_diff"]
        for name in ("krylov", "dense"):
            x = r[name]
            rows.append([dtype, name, f"{x['finite']} of {x['of']}", f"{x['median_wall_s']:.2f}", f"{x['compile_s']:.0f}",
                         f"{x['scratch_bytes'] / 2**20:.1f}",
                         "—" if name == "dense" or d is None else f"{d['median']:.1e} / {d['max']:.1e}",
                         f"{x['to_float64_dense']['median']:.1e} / {x['to_float64_dense']['max']:.1e}" if "to_float64_dense" in x else "—"])
    speed = {dtype: res[dtype]["dense"]["median_wall_s"] / res[dtype]["krylov"]["median_wall_s"] for dtype in w["dtypes"]}
    return "\n".join([
        f"# Backward pass of the velocity-form contact solver: matrix-free adjoint against dense", "",
        common.md_machine(res["machine"]), "",
        f"`jax.grad` of the mean final height of a {w['boxes']}-box heap with respect to its initial velocities, "
        f"through {w['steps']} steps of `worlds.rollout` (the drop and first impacts), on {w['heaps']} heaps "
        f"(`scenes.heap`, keys from seed {w['seed']}; the Krylov settings were chosen on seed 1). The same heaps "
        "with each adjoint solve; `dense` is the solve the package used before (the (C·d)² matrix formed, then LU).", "",
        common.md_table(["dtype", "adjoint", "finite", "wall per gradient (s, median)", "compile (s)",
                         "scratch (MiB)", "‖g_krylov − g_dense‖ / ‖g_dense‖ (median / max)",
                         "‖g − g_float64,dense‖ / ‖g_float64,dense‖ (median / max)"], rows), "",
        "Speed-up of a gradient, dense / Krylov: " + ", ".join(f"{k} {v:.1f}×" for k, v in speed.items()) + ".",
        "The last column compares every gradient with the float64 dense one of the same heap. In float32 the "
        "trajectory itself differs (round-off in a chaotic heap), and the adjoint systems of stiff impact contacts "
        "have condition numbers up to ~10⁷ at the solver's 1e-6 relative regularisation (κ·ε ≈ 1 in float32), so "
        "neither float32 adjoint is exact; the column says whether the matrix-free one is further from the float64 "
        "gradient than the dense one.", ""])


def arguments(ap):
    ap.add_argument("--heaps", type=int, default=8)
    ap.add_argument("--boxes", type=int, default=16)
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--scaling", default="", help="comma-separated heap sizes: the memory part only (<name>_scaling)")


def run(args, out):
    """``python -m benchmarks adjoint``: ``out`` gets the two adjoints side by side; ``--scaling`` ``<name>_scaling``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.scaling:
        res = {"benchmark": "adjoint_scaling", "machine": common.machine_info("benchmarks.adjoint", command=args.command),
               "dtype": "float64", "sizes": run_scaling([int(x) for x in args.scaling.split(",")])}
        out.tagged("scaling").write(res, render_scaling(res))
        print(render_scaling(res))
        return
    dtypes = args.dtypes.split(",")
    res = {"benchmark": "adjoint", "machine": common.machine_info("benchmarks.adjoint", command=args.command),
           "workload": {"heaps": args.heaps, "boxes": args.boxes, "steps": args.steps, "seed": args.seed, "dtypes": dtypes},
           **measure(args.heaps, args.boxes, args.steps, args.seed, dtypes)}
    out.write(res, render(res))
    print(render(res))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
