"""ContactNets data-efficiency study (Fig. 5) and loss-gradient throughput on the real cube tosses.

    python -m studies.contactnets study [--data PATH] [--work DIR] [--speed-only]

A fixed held-out test set (48 tosses, seed 12345) is never used for training or model selection;
each model is trained on N tosses of the remaining pool (train/validation split inside, early
stopping on the validation loss) and rolled out from the first state of every test toss.
Checkpoints go to ``--work`` (default ``work/contactnets``, as ``{variant}_{tosses}_s{seed}``).
Writes studies/contactnets/results/contactnets_data_efficiency.json|png, contactnets_speed.json,
contactnets_rollout.png (``--out`` to change); ``python -m studies.contactnets report`` then writes
contactnets_data_efficiency.md. Budget (2 shared CPU cores): ``--seeds`` (default one), step caps
per variant below; a re-run replaces only the (variant, tosses, seed) rows it trains.
``--speed-only``: only the loss-and-gradient throughput benchmark (contactnets_speed.json).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from ..common import command_line
from .common import RESULTS, WORK, cube_test_split, cube_tosses_path


def speed(data, batches=(64, 256, 1024, 4096), n_single=64, seconds=1.0, rounds=3):
    """Loss-and-gradient throughput (transitions/s) of the polytope ContactNets loss, batched (one
    vmapped call per batch) versus one transition per call in a Python loop (the reference
    implementation's structure), with the same compiled function in the same run, for each inner
    solver path and dtype:

    * ``jaxopt_f64`` — jaxopt ProjectedGradient (while_loop, stopping test at tol 1e-9, autodiff
      gradient of the objective per iteration), float64: the default before the fixed-iteration path;
    * ``fista_f64`` / ``fista_f32`` — ``solvers.minimize_nonneg_qp``: the same FISTA iterates, exactly
      100 iterations in a ``lax.scan``, one stacked dense product per iteration;
    * ``fista_f32_sharded`` (when XLA exposes more than one device, ``--cpu-devices``) — ``fista_f32``
      with each batch split over the devices by ``contactnets.sharded_batch_loss``: on a CPU host,
      one device per core, so a batch uses every core while one transition per call uses one;
    * the BoxOSQP (λ, slack) form, float64, for comparison.

    The machine is shared (2 cores, other jobs running), so single and batched rates are measured
    interleaved in ``rounds`` rounds; each rate is reported as its best and its median over the
    rounds, and the speedups as best/best and median/median."""

    import jax
    import jax.numpy as jnp

    from jaxcontact.contactnets.functions import ContactFunctions, init_polytope
    from jaxcontact.contactnets.loss import LossConfig, batch_loss, reference_transition_loss, sharded_batch_loss
    from jaxcontact.contactnets.train import body_of
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.solvers import NonnegSettings, QPSettings
    from jaxcontact.types import Model

    load0 = os.getloadavg()
    xs, xns = data.transitions()
    rng = np.random.default_rng(0)
    i = rng.choice(len(xs), max(max(batches), n_single), replace=False)
    a64, b64 = jnp.asarray(xs[i]), jnp.asarray(xns[i])
    body64 = body_of(data)
    model = Model(law=CoulombLCP(), dt=data.dt, gravity=data.gravity)
    fns = ContactFunctions("polytope")
    th64 = init_polytope(jax.random.PRNGKey(0), data.vertices, data.mu_nominal)

    def cast(tree, dtype):
        return jax.tree_util.tree_map(
            lambda x: x.astype(dtype) if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating) else x, tree)

    def measure(f, th, a, b, Bs, f_batched=None):
        fb = f if f_batched is None else f_batched  # the batched calls' function (sharded path)

        def run(B, off=0):
            return jax.block_until_ready((f if B == 1 else fb)(th, a[off:off + B], b[off:off + B]))

        for B in (1, *Bs):
            run(B)  # compile
        # wall-clock rates, and CPU-time rates (process CPU seconds, all threads): the latter hardly
        # depend on what else runs on the shared cores, so their ratio is the steadier statistic
        single, batched = {"wall": [], "cpu": []}, {"wall": {B: [] for B in Bs}, "cpu": {B: [] for B in Bs}}
        for _ in range(rounds):
            t, c = time.perf_counter(), time.process_time()
            for k in range(n_single):
                run(1, k)
            single["wall"].append(n_single / (time.perf_counter() - t))
            single["cpu"].append(n_single / (time.process_time() - c))
            for B in Bs:
                t, c, r = time.perf_counter(), time.process_time(), 0
                while time.perf_counter() - t < seconds:
                    run(B)
                    r += 1
                batched["wall"][B].append(B * r / (time.perf_counter() - t))
                batched["cpu"][B].append(B * r / (time.process_time() - c))
        med = lambda v: float(np.median(v))
        res = {}
        for clock, key in (("wall", ""), ("cpu", "_cpu")):
            sg, bt = single[clock], batched[clock]
            res["one_at_a_time_transitions_per_s" + key] = {"best": max(sg), "median": med(sg)}
            res["batched_transitions_per_s" + key] = {str(B): {"best": max(v), "median": med(v)} for B, v in bt.items()}
            res["speedup_best" + key] = {str(B): max(v) / max(sg) for B, v in bt.items()}
            res["speedup_median" + key] = {str(B): med(v) / med(sg) for B, v in bt.items()}
        return res

    cfg_old = LossConfig(inner=NonnegSettings(max_iter=100, method="jaxopt"))
    cfg_new = LossConfig(inner=NonnegSettings(max_iter=100, method="fista"))
    out = {"paths": {}}
    compiled = {}  # path name -> (jitted loss and gradient, its cast inputs)
    for name, cfg, dtype in (("jaxopt_f64", cfg_old, jnp.float64), ("fista_f64", cfg_new, jnp.float64),
                             ("fista_f32", cfg_new, jnp.float32)):
        th, body, a, b = cast((th64, body64, a64, b64), dtype)
        f = jax.jit(jax.value_and_grad(lambda th, a, b, cfg=cfg, body=body: batch_loss(fns, th, model, body, a, b, cfg)[0]))
        compiled[name] = (f, (th, body, a, b))
        val, grad = f(th, a[:1], b[:1])
        r = measure(f, th, a, b, batches)
        r.update(dtype=str(val.dtype), gradient_dtype=str(jax.tree_util.tree_leaves(grad)[0].dtype),
                 inner=(f"{cfg.inner.method}: " + ("jaxopt ProjectedGradient (FISTA, Jacobi-scaled, while_loop with stopping "
                        "test at tol 1e-9)" if cfg.inner.method == "jaxopt" else "solvers.minimize_nonneg_qp (same FISTA "
                        "iterates, fixed count, lax.scan, stacked dense product)") + f", {cfg.inner.max_iter} iterations, "
                       f"{cfg.gradient} gradient"))
        out["paths"][name] = r
        print(name, json.dumps({k: r[k] for k in ("one_at_a_time_transitions_per_s", "speedup_best", "speedup_median",
                                                  "speedup_best_cpu", "speedup_median_cpu")}),
              flush=True)
    ndev = len(jax.devices())
    if ndev > 1:
        # the same float32 loss with each batch split over the CPU devices (one per core) by shard_map;
        # one transition per call cannot be split, so it runs as above on one device
        f, (th, body, a, b) = compiled["fista_f32"]
        fs = jax.jit(jax.value_and_grad(lambda th, a, b, body=body: sharded_batch_loss(fns, th, model, body, a, b, cfg_new)[0]))
        r = measure(f, th, a, b, batches, f_batched=fs)
        (v1, g1), (v2, g2) = f(th, a[:1024], b[:1024]), fs(th, a[:1024], b[:1024])
        r.update(dtype="float32", devices=ndev,
                 sharded_vs_single_device_max_rel_diff=float(max(
                     [abs(float(v2) - float(v1)) / abs(float(v1))]
                     + [float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(x))) for x, y in zip(
                         jax.tree_util.tree_leaves(g1), jax.tree_util.tree_leaves(g2))])),
                 inner=f"fista as above, each batch split over {ndev} CPU devices (contactnets.sharded_batch_loss, "
                       "shard_map); one at a time on one device")
        out["paths"]["fista_f32_sharded"] = r
        print("fista_f32_sharded", json.dumps({k: r[k] for k in ("one_at_a_time_transitions_per_s", "speedup_best",
                                                                 "speedup_median", "speedup_best_cpu")}), flush=True)
    # agreement of the loss values (batch of 256, float64 jaxopt path as the reference)
    B = min(256, len(a64))
    vals = {}
    for name, cfg, dtype in (("jaxopt_f64", cfg_old, jnp.float64), ("fista_f64", cfg_new, jnp.float64),
                             ("fista_f32", cfg_new, jnp.float32)):
        th, body, a, b = cast((th64, body64, a64[:B], b64[:B]), dtype)
        from jaxcontact.contactnets.loss import transition_loss
        vals[name] = np.asarray(jax.jit(jax.vmap(lambda x, xn, th=th, body=body, cfg=cfg: transition_loss(
            fns, th, model, body, x, xn, cfg)[0]))(a, b), np.float64)
    # a converged float64 solution (5000 iterations) as the yardstick of the 100-iteration paths' accuracy
    conv = LossConfig(inner=NonnegSettings(max_iter=5000, method="fista"))
    vals["converged_f64"] = np.asarray(jax.jit(jax.vmap(lambda x, xn: transition_loss(
        fns, th64, model, body64, x, xn, conv)[0]))(a64[:B], b64[:B]), np.float64)
    cv = vals.pop("converged_f64")
    out["loss_accuracy_vs_converged"] = {k: {"max_abs_diff_over_max_loss": float(np.max(np.abs(v - cv)) / np.max(cv)),
                                             "mean_loss_rel_diff": float(abs(v.mean() - cv.mean()) / cv.mean())}
                                         for k, v in vals.items()}
    ref = vals["jaxopt_f64"]
    out["loss_agreement"] = {k: {"max_abs_diff_over_max_loss": float(np.max(np.abs(v - ref)) / np.max(ref)),
                                 "mean_loss_rel_diff": float(abs(v.mean() - ref.mean()) / ref.mean())}
                             for k, v in vals.items() if k != "jaxopt_f64"}
    out["loss_agreement"]["transitions"] = int(B)
    # the BoxOSQP (λ, slack) form, one generic QP per transition (the reference implementation's structure)
    qcfg = LossConfig(qp=QPSettings(tol=1e-4, max_iter=300))
    g = jax.jit(jax.value_and_grad(lambda th, a, b: jnp.mean(jax.vmap(
        lambda x, xn: reference_transition_loss(fns, th, model, body64, x, xn, qcfg)[0])(a, b))))
    r = measure(g, th64, a64, b64, (64,))
    r.update(dtype="float64", qp="jaxopt BoxOSQP tol 1e-4, max 300 iterations, implicit diff of the QP solution")
    out["boxosqp_form"] = r
    best = out["paths"]["fista_f32"]
    out["fista_f32_vs_boxosqp_one_at_a_time_best"] = {
        B: v["best"] / r["one_at_a_time_transitions_per_s"]["best"] for B, v in best["batched_transitions_per_s"].items()}
    out.update(device=str(jax.devices()[0]), device_kind=jax.devices()[0].device_kind, batch_sizes=list(batches),
               n_single=n_single, rounds=rounds, seconds_per_batched_measurement=seconds,
               model="polytope ContactNets loss + gradient (value_and_grad of batch_loss, regularisers included)",
               cpu_threads_visible=os.cpu_count(), load_average_before=load0, load_average_after=os.getloadavg())
    return out


def main(argv=None, prog="studies.contactnets study") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(cube_tosses_path()))
    ap.add_argument("--sizes", default="32,256,4,16,64,8,128")
    ap.add_argument("--deep-sizes", default="32,256,4")
    ap.add_argument("--n-test", type=int, default=48)
    ap.add_argument("--seeds", default="0", help="training seeds (comma-separated); one result row per seed")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--work", default=WORK, help="checkpoints (default %(default)s)")
    ap.add_argument("--speed-only", action="store_true", help="only the loss-gradient throughput")
    ap.add_argument("--variants", default="polytope,lcp,e2e,deep",
                    help="variants to (re)run; results of other variants already in the JSON are kept")
    ap.add_argument("--skip-speed", action="store_true", help="keep the existing speed measurement")
    ap.add_argument("--speed-batches", default="64,256,1024,4096", help="batch sizes of the throughput measurement")
    ap.add_argument("--speed-rounds", type=int, default=3, help="interleaved single/batched measurement rounds")
    ap.add_argument("--cpu-devices", type=int, default=os.cpu_count() or 1,
                    help="CPU devices XLA exposes (one per core); with more than one the throughput measurement adds "
                         "batches split over them by shard_map")
    args = ap.parse_args(argv)
    command = command_line(prog, argv)
    if args.cpu_devices > 1:  # before jax is imported
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count={args.cpu_devices}").strip()

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.contactnets.plots import plot_data_efficiency, plot_rollout
    from jaxcontact.contactnets.train import TrainConfig, load_checkpoint, sim_model_params, train
    from jaxcontact.solvers import NonnegSettings

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_tosses(args.data)
    test, pool = cube_test_split(data, args.n_test)
    print(f"{data.n_tosses} tosses: test {test.n_tosses}, training pool {pool.n_tosses}", flush=True)

    if not args.skip_speed:
        sp = speed(pool, batches=tuple(int(b) for b in args.speed_batches.split(",")), rounds=args.speed_rounds)
        sp["command"] = command
        (out / "contactnets_speed.json").write_text(json.dumps(sp, indent=1))
        print("speed", sp, flush=True)
    if args.speed_only:
        return 0

    long = dict(max_epochs=1000, patience=40)  # early stopping decides; cosine schedule over max_steps
    caps = {"polytope": TrainConfig(max_steps=6000, **long), "deep": TrainConfig(max_steps=2500, **long),
            # the polytope with the parameters chosen by validation-toss rollouts (TrainConfig.select)
            "polytope_vr": TrainConfig(max_steps=6000, select="rollout", **long),
            "e2e": TrainConfig(max_steps=6000, **long), "lcp": TrainConfig(sysid_iters=15),
            # ablation of deep's network inputs (ContactFunctions.features; "deep" is the paper's "pR")
            **{f"deep_{f}": TrainConfig(max_steps=2500, deep_features=f, **long) for f in ("zR", "p", "vertex")}}
    deep = {int(n) for n in args.deep_sizes.split(",")}
    variants = args.variants.split(",")
    seeds = [int(x) for x in args.seeds.split(",")]
    runs = [(v, int(n), seed) for seed in seeds for n in args.sizes.split(",") for v in caps
            if v in variants and (not v.startswith("deep") or int(n) in deep)]
    res_path = out / "contactnets_data_efficiency.json"
    results = {"command": f"python -m {prog}", "n_test": test.n_tosses,
               "test_toss_ids": test.toss_ids.tolist(),
               "caps": {k: {"max_steps": c.max_steps, "patience": c.patience, "sysid_iters": c.sysid_iters}
                        for k, c in caps.items()},
               "results": {}}
    if res_path.exists():
        # a re-run replaces the rows of the (variant, tosses, seed) it trains and keeps all others
        old = json.loads(res_path.read_text())
        for v, byn in old["results"].items():
            for n, rows in byn.items():
                for m in rows:
                    m.setdefault("seed", old.get("seed", 0))  # older files: one seed for the whole file
                results["results"].setdefault(v, {})[n] = rows
        results["commands"] = old.get("commands", [old.get("command", "")])
    results.setdefault("commands", [])
    results["commands"].append(command)
    for v, n, seed in runs:
        ck = Path(args.work) / f"{v}_{n}_s{seed}"
        t0 = time.perf_counter()
        meta = train(v.split("_")[0], pool, n, seed, ck, caps[v], progress=False, log=lambda *a: print(*a, flush=True))
        meta, theta = load_checkpoint(ck)
        model, params = sim_model_params(meta, theta)
        pred = rollout_tosses(model, params, test)
        m = metrics(pred, test)
        m.pop("per_toss")
        m.update(seed=seed, train_time_s=meta.get("train_time_s"), steps=meta.get("steps"), best_val=meta.get("best_val"),
                 total_time_s=time.perf_counter() - t0, stopped=meta.get("stopped"),
                 inner=(f"{NonnegSettings().method} {meta['config']['inner_iters']} iterations"
                        if v.startswith(("polytope", "deep")) else None),
                 date=time.strftime("%Y-%m-%d %H:%M"))
        if v == "lcp":
            m["identified"] = meta["lcp"]
        if meta.get("select") == "rollout":
            m["selected_step"] = meta["selected_step"]
        if res_path.exists():  # rows written meanwhile by another run of this script are kept
            for vv, byn in json.loads(res_path.read_text())["results"].items():
                for nn, rows in byn.items():
                    mine = {r.get("seed") for r in results["results"].get(vv, {}).get(nn, [])}
                    extra = [r for r in rows if r.get("seed") not in mine]
                    if extra:
                        results["results"].setdefault(vv, {})[nn] = sorted(
                            results["results"].get(vv, {}).get(nn, []) + extra, key=lambda r: r["seed"])
        rows = [r for r in results["results"].setdefault(v, {}).get(str(n), []) if r.get("seed") != seed]
        results["results"][v][str(n)] = sorted(rows + [m], key=lambda r: r["seed"])
        res_path.write_text(json.dumps(results, indent=1))
        print(f"{v:9s} N={n:4d} seed {seed} pos {m['pos_error']:.3f} rot {m['rot_error_deg']:.1f} deg "
              f"pen {m['penetration']:.4f} ({m['total_time_s']:.0f} s)", flush=True)
        if v == "polytope" and n == 32 and seed == seeds[0]:
            plot_rollout(pred[0], test.states[0], test, out / "contactnets_rollout.png",
                         title=f"polytope (32 tosses) vs real toss {int(test.toss_ids[0])}")
        plot_data_efficiency({k: r for k, r in results["results"].items() if not k.startswith("deep_")},
                             out / "contactnets_data_efficiency.png")
    return 0

