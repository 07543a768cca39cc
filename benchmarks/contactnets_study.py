"""ContactNets data-efficiency study (Fig. 5) and loss-gradient throughput on the real cube tosses.

    python benchmarks/contactnets_study.py [--data ../shared/data/cube_tosses/tosses.npz] [--speed-only]

A fixed held-out test set (48 tosses, seed 12345) is never used for training or model selection;
each model is trained on N tosses of the remaining pool (train/validation split inside, early
stopping on the validation loss) and rolled out from the first state of every test toss.
Writes benchmarks/results/contactnets_data_efficiency.json|png, contactnets_speed.json,
contactnets_rollout.png. Budget (2 shared CPU cores): one seed, step caps per variant below.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"


def speed(data, batches=(64, 256), n_single=64, seconds=3.0):
    """Loss-and-gradient throughput (transitions/s): batched (one vmapped call per batch) versus
    one transition per call in a Python loop (the reference implementation's structure), same
    compiled function, same run; plus the BoxOSQP (λ, slack) form for comparison."""
    import jax
    import jax.numpy as jnp

    from jaxcontact.contactnets.functions import ContactFunctions, init_polytope
    from jaxcontact.contactnets.loss import LossConfig, batch_loss, reference_transition_loss
    from jaxcontact.contactnets.train import body_of
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.solvers import QPSettings
    from jaxcontact.types import Model

    xs, xns = data.transitions()
    rng = np.random.default_rng(0)
    i = rng.choice(len(xs), max(batches), replace=False)
    a, b = jnp.asarray(xs[i]), jnp.asarray(xns[i])
    body = body_of(data)
    model = Model(law=CoulombLCP(), dt=data.dt, gravity=data.gravity)
    fns = ContactFunctions("polytope")
    th = init_polytope(jax.random.PRNGKey(0), data.vertices, data.mu_nominal)
    cfg = LossConfig()

    def rate(f, B):
        jax.block_until_ready(f(th, a[:B], b[:B]))
        t, r = time.perf_counter(), 0
        while time.perf_counter() - t < seconds:
            jax.block_until_ready(f(th, a[:B], b[:B]))
            r += 1
        return B * r / (time.perf_counter() - t)

    def single(f):
        jax.block_until_ready(f(th, a[:1], b[:1]))
        t = time.perf_counter()
        for k in range(n_single):
            jax.block_until_ready(f(th, a[k:k + 1], b[k:k + 1]))
        return n_single / (time.perf_counter() - t)

    f = jax.jit(jax.value_and_grad(lambda th, a, b: batch_loss(fns, th, model, body, a, b, cfg)[0]))
    out = {"batched_transitions_per_s": {str(B): rate(f, B) for B in batches}}
    out["one_at_a_time_transitions_per_s"] = single(f)
    out["speedup"] = {B: v / out["one_at_a_time_transitions_per_s"] for B, v in out["batched_transitions_per_s"].items()}
    qcfg = LossConfig(qp=QPSettings(tol=1e-4, max_iter=300))
    g = jax.jit(jax.value_and_grad(lambda th, a, b: jnp.mean(jax.vmap(
        lambda x, xn: reference_transition_loss(fns, th, model, body, x, xn, qcfg)[0])(a, b))))
    out["boxosqp_form"] = {"batched_transitions_per_s": rate(g, 64), "one_at_a_time_transitions_per_s": single(g),
                           "qp": "jaxopt BoxOSQP tol 1e-4, max 300 iterations, implicit diff of the QP solution"}
    out.update(device=str(jax.devices()[0]), dtype="float64",
               inner=f"jaxopt ProjectedGradient (FISTA, Jacobi-scaled), {cfg.inner.max_iter} iterations, "
                     f"{cfg.gradient} gradient; loss + gradient of the polytope model")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared/data/cube_tosses/tosses.npz"))
    ap.add_argument("--sizes", default="32,256,4,16,64,8,128")
    ap.add_argument("--deep-sizes", default="32,256,4")
    ap.add_argument("--n-test", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--work", default="/tmp/contactnets_study")
    ap.add_argument("--speed-only", action="store_true", help="only the loss-gradient throughput")
    ap.add_argument("--variants", default="polytope,lcp,e2e,deep",
                    help="variants to (re)run; results of other variants already in the JSON are kept")
    ap.add_argument("--skip-speed", action="store_true", help="keep the existing speed measurement")
    args = ap.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.contactnets.plots import plot_data_efficiency, plot_rollout
    from jaxcontact.contactnets.train import TrainConfig, load_checkpoint, sim_model_params, train

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = load_tosses(args.data)
    perm = np.random.default_rng(12345).permutation(data.n_tosses)
    test, pool = data.subset(np.sort(perm[: args.n_test])), data.subset(np.sort(perm[args.n_test:]))
    print(f"{data.n_tosses} tosses: test {test.n_tosses}, training pool {pool.n_tosses}", flush=True)

    if not args.skip_speed:
        sp = speed(pool)
        sp["command"] = "python benchmarks/contactnets_study.py" + (" --speed-only" if args.speed_only else "")
        (out / "contactnets_speed.json").write_text(json.dumps(sp, indent=1))
        print("speed", sp, flush=True)
    if args.speed_only:
        return 0

    long = dict(max_epochs=1000, patience=40)  # early stopping decides; cosine schedule over max_steps
    caps = {"polytope": TrainConfig(max_steps=6000, **long), "deep": TrainConfig(max_steps=2500, **long),
            "e2e": TrainConfig(max_steps=6000, **long), "lcp": TrainConfig(sysid_iters=15)}
    deep = {int(n) for n in args.deep_sizes.split(",")}
    variants = args.variants.split(",")
    runs = [(v, int(n)) for n in args.sizes.split(",") for v in ("polytope", "lcp", "e2e", "deep")
            if v in variants and (v != "deep" or int(n) in deep)]
    res_path = out / "contactnets_data_efficiency.json"
    results = {"command": "python benchmarks/contactnets_study.py", "n_test": test.n_tosses,
               "test_toss_ids": test.toss_ids.tolist(), "seed": args.seed,
               "caps": {k: {"max_steps": c.max_steps, "patience": c.patience, "sysid_iters": c.sysid_iters}
                        for k, c in caps.items()},
               "results": {}}
    if res_path.exists() and set(variants) != {"polytope", "lcp", "e2e", "deep"}:  # partial re-run: keep the others
        old = json.loads(res_path.read_text())
        results["results"] = {v: r for v, r in old["results"].items() if v not in variants}
        results["command"] = old.get("command", results["command"]) + f"; then --variants {args.variants}"
    for v, n in runs:
        ck = Path(args.work) / f"{v}_{n}_s{args.seed}"
        t0 = time.perf_counter()
        meta = train(v, pool, n, args.seed, ck, caps[v], progress=False, log=lambda *a: print(*a, flush=True))
        meta, theta = load_checkpoint(ck)
        model, params = sim_model_params(meta, theta)
        pred = rollout_tosses(model, params, test)
        m = metrics(pred, test)
        m.pop("per_toss")
        m.update(train_time_s=meta.get("train_time_s"), steps=meta.get("steps"), best_val=meta.get("best_val"),
                 total_time_s=time.perf_counter() - t0)
        if v == "lcp":
            m["identified"] = meta["lcp"]
        results["results"].setdefault(v, {})[str(n)] = [m]
        res_path.write_text(json.dumps(results, indent=1))
        print(f"{v:9s} N={n:4d} pos {m['pos_error']:.3f} rot {m['rot_error_deg']:.1f} deg pen {m['penetration']:.4f} "
              f"({m['total_time_s']:.0f} s)", flush=True)
        if v == "polytope" and n == 32:
            plot_rollout(pred[0], test.states[0], test, out / "contactnets_rollout.png",
                         title=f"polytope (32 tosses) vs real toss {int(test.toss_ids[0])}")
        plot_data_efficiency(results["results"], out / "contactnets_data_efficiency.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
