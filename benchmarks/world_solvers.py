"""Three ways to sweep a world's contact problem, side by side (issue "worlds at speed"):

* ``sequential`` — pure-JAX projected Gauss–Seidel in velocity form, one contact after another
  (the solver before this round; the reference);
* ``colour`` — the same sweeps graph-coloured: the manifolds coloured each step so that no two of
  one colour share a body, one vectorised update per colour over every world (pure JAX);
* ``native`` — the sequential sweeps as one fused C++ loop behind ``jax.ffi`` (``jaxcontact.native``).

    python -m benchmarks world_solvers                 # all (about 12 min on 2 cores)
    python -m benchmarks world_solvers --quick         # 1 and 16 worlds only
    python -m benchmarks world_solvers --grad 16       # jax.grad through 200 steps of 16 landing heaps

Workloads (the world's default law, 2 ms steps): the 16-box heap **landing** (the drops' states
at step 150, when the boxes hit, then ``--steps`` steps), the **settled** heap (states at step
1,000, then ``--steps`` steps) and the 10-box **stack** built at rest (its first ``--steps`` steps,
the first of which needs hundreds of sweeps). The heap states come from one float64 rollout of
the drops (seeds 0..W−1) with the native sweeps, cast to each dtype. Reported per method, dtype
and batch: ms per step, µs per box-step, box-steps/s, sweeps per step (mean over worlds and
steps, and the mean over steps of the batch's slowest world), and the largest final-position
difference from the sequential sweeps on the same worlds. Results:
``benchmarks/results/world_solvers.{json,md}``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .common import cast_floats, machine_info, md_machine, md_table


def heap_starts(W: int):
    """(scene, params, landing states, settled states) of W drops (float64)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    keys = jnp.stack([jax.random.PRNGKey(i) for i in range(W)])
    scene, params, _ = scenes.heap(16, keys[0])
    drops = jax.vmap(lambda k: scenes.heap(16, k)[2])(keys)
    model = worlds.model(sweeps="native")
    run = jax.jit(lambda s, n: worlds.batch_rollout(model, scene, params, s, n, output="final")[0], static_argnums=1)
    landing = run(drops, 150)
    settled = run(landing, 850)
    return scene, params, landing, settled


def measure(model, scene, params, states, steps: int):
    import jax

    from jaxcontact import worlds

    run = jax.jit(lambda s: worlds.batch_rollout(model, scene, params, s, steps, output="trajectory"))
    t = time.perf_counter()
    compiled = run.lower(states).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(compiled(states))
    t = time.perf_counter()
    traj, infos = jax.block_until_ready(compiled(states))
    wall = time.perf_counter() - t
    it = np.asarray(infos.iterations)  # (W, steps)
    return {"wall_s": wall, "compile_s": compile_s, "sweeps_mean": float(it.mean()),
            "sweeps_slowest_world_mean": float(it.max(axis=0).mean()), "sweeps_max": int(it.max()),
            "final_pos": np.asarray(traj.pos[:, -1]), "flags": int(np.bitwise_or.reduce(np.asarray(infos.flags).reshape(-1)))}


def grad_check(W: int, steps: int, out, command: str):
    """``jax.grad`` of the heaps' mean final height with respect to μ (and the initial velocities)
    through ``steps`` steps of W landing heaps (float32, the default sweeps), against the forward
    rollout alone: time (best of 2 after compiling) and XLA's memory analysis of both programs."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    scene, params, landing, _ = heap_starts(W)
    p32, s32 = cast_floats(params, "float32"), cast_floats(landing, "float32")
    model = worlds.model()

    def loss(mu, vel):
        p = p32.replace(law=p32.law.replace(mu=jnp.broadcast_to(mu, p32.law.mu.shape)))
        final, _ = worlds.batch_rollout(model, scene, p, s32.replace(vel=vel), steps, output="final")
        return jnp.mean(final.pos[..., 2])

    mu0 = jnp.float32(p32.law.mu[0])
    res = {"worlds": W, "steps": steps, "dtype": "float32"}
    for name, fn in (("forward", jax.jit(loss)), ("grad", jax.jit(jax.grad(loss, argnums=(0, 1))))):
        t = time.perf_counter()
        compiled = fn.lower(mu0, s32.vel).compile()
        c = time.perf_counter() - t
        ma = compiled.memory_analysis()
        times = []
        for _ in range(3):
            t = time.perf_counter()
            value = jax.block_until_ready(compiled(mu0, s32.vel))
            times.append(time.perf_counter() - t)
        res[name] = {"wall_s": min(times[1:]), "compile_s": c,
                     "temp_bytes_per_world": None if ma is None else ma.temp_size_in_bytes / W}
        if name == "grad":
            res["finite"] = bool(all(np.isfinite(np.asarray(x)).all() for x in jax.tree_util.tree_leaves(value)))
            res["dmean_height_dmu"] = float(value[0])
    res["grad_over_forward"] = res["grad"]["wall_s"] / res["forward"]["wall_s"]
    res["machine"] = machine_info("benchmarks.world_solvers", command=command)
    print({k: v for k, v in res.items() if k != "machine"}, flush=True)
    out.write(res)
    return res


def arguments(ap):
    ap.add_argument("--grad", type=int, default=0, help="only the gradient check, at this many worlds (<name>_grad.json)")
    ap.add_argument("--grad-steps", type=int, default=200)


def run(args, out):
    """``python -m benchmarks world_solvers``: the table into ``out``; ``--grad W`` the gradient check."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    if args.grad:
        return grad_check(args.grad, args.grad_steps, out.tagged("grad"), args.command)
    # float32: every method at 1 and 64 worlds, the kernel also at 256; float64: every method at 1
    # world, the kernel also at 64 (the pure-JAX sweeps of a 64-world landing take about a second a step)
    batches = {"float32": {"native": [1, 64, 256], "colour": [1, 64], "sequential": [1, 64]},
               "float64": {"native": [1, 64], "colour": [1], "sequential": [1]}}
    if args.quick:
        batches = {d: {k: [1, 16] for k in ("native", "colour", "sequential")} for d in ("float32", "float64")}
    Wmax = max(max(b) for d in batches.values() for b in d.values())
    scene, params, landing, settled = heap_starts(Wmax)
    sscene, sparams, sstate = scenes.stack(10)
    rows = []
    for dtype in ("float32", "float64"):
        for work in ("landing", "settled", "stack"):
            ref = {}
            for how in ("sequential", "colour", "native"):
                for W in batches[dtype][how]:
                    if work == "stack":
                        sc, p = sscene, cast_floats(sparams, dtype)
                        st = cast_floats(jax.tree_util.tree_map(lambda x: np.broadcast_to(x, (W,) + x.shape), sstate), dtype)
                    else:
                        sc, p = scene, cast_floats(params, dtype)
                        st = cast_floats(jax.tree_util.tree_map(lambda x: x[:W], landing if work == "landing" else settled), dtype)
                    r = measure(worlds.model(sweeps=how), sc, p, st, args.steps)
                    n = sc.num_bodies
                    fp = r.pop("final_pos")
                    if how == "sequential":
                        ref[W] = fp
                    k = max((w for w in ref if w <= W), default=None)
                    diff = float(np.abs(fp[:k] - ref[k][:k]).max()) if k else None
                    row = {"dtype": dtype, "workload": work, "sweeps": how, "worlds": W, "steps": args.steps, **r,
                           "ms_per_step": 1e3 * r["wall_s"] / args.steps, "us_per_box_step": 1e6 * r["wall_s"] / (W * n * args.steps),
                           "box_steps_per_s": W * n * args.steps / r["wall_s"], "final_pos_vs_sequential_max_m": diff}
                    rows.append(row)
                    print({k_: v for k_, v in row.items() if k_ not in ("flags",)}, flush=True)
    res = {"machine": machine_info("benchmarks.world_solvers", command=args.command), "rows": rows}
    f = lambda x, nd=3: "—" if x is None else (f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{nd}g}")
    md = ["# Three ways to sweep a world's contacts", "", md_machine(res["machine"]), "",
          md_table(["dtype", "workload", "sweeps", "worlds", "ms/step", "µs/box-step", "box-steps/s", "sweeps/step (mean)",
                    "slowest world's sweeps/step", "compile s", "final pos vs sequential (m)"],
                   [[r["dtype"], r["workload"], r["sweeps"], r["worlds"], f(r["ms_per_step"]), f(r["us_per_box_step"]),
                     f(r["box_steps_per_s"]), f(r["sweeps_mean"]), f(r["sweeps_slowest_world_mean"]), f(r["compile_s"]),
                     f(r["final_pos_vs_sequential_max_m"])] for r in rows]), ""]
    out.write(res, "\n".join(md))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
