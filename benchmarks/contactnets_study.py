"""ContactNets data-efficiency study (Fig. 5) and loss-gradient throughput on the real cube tosses.

    python benchmarks/contactnets_study.py [--data ../shared/data/cube_tosses/tosses.npz] [--quick]

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


def speed(data, B=64, reps=3):
    import jax
    import jax.numpy as jnp

    from jaxcontact.contactnets.functions import ContactFunctions, init_polytope
    from jaxcontact.contactnets.loss import LossConfig, batch_loss
    from jaxcontact.contactnets.train import body_of
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.solvers import QPSettings
    from jaxcontact.types import Model

    xs, xns = data.transitions()
    rng = np.random.default_rng(0)
    i = rng.choice(len(xs), B, replace=False)
    a, b = jnp.asarray(xs[i]), jnp.asarray(xns[i])
    body = body_of(data)
    model = Model(law=CoulombLCP(), dt=data.dt, gravity=data.gravity)
    fns = ContactFunctions("polytope")
    th = init_polytope(jax.random.PRNGKey(0), data.vertices, data.mu_nominal)
    cfg = LossConfig(qp=QPSettings(tol=1e-4, max_iter=300))
    f = jax.jit(jax.value_and_grad(lambda th, a, b: batch_loss(fns, th, model, body, a, b, cfg)[0]))
    jax.block_until_ready(f(th, a, b))
    jax.block_until_ready(f(th, a[:1], b[:1]))
    t = time.perf_counter()
    for _ in range(reps):
        jax.block_until_ready(f(th, a, b))
    batched = B * reps / (time.perf_counter() - t)
    t = time.perf_counter()
    for k in range(B):
        jax.block_until_ready(f(th, a[k:k + 1], b[k:k + 1]))
    single = B / (time.perf_counter() - t)
    return {"batch": B, "batched_transitions_per_s": batched, "one_at_a_time_transitions_per_s": single,
            "speedup": batched / single, "device": str(jax.devices()[0]), "dtype": "float64",
            "qp": "jaxopt BoxOSQP tol 1e-4, implicit diff; loss + gradient of the polytope model"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(REPO.parent / "shared/data/cube_tosses/tosses.npz"))
    ap.add_argument("--sizes", default="32,256,4,16,64")
    ap.add_argument("--deep-sizes", default="32,4,256")
    ap.add_argument("--n-test", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--work", default="/tmp/contactnets_study")
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

    sp = speed(pool)
    sp["command"] = "python benchmarks/contactnets_study.py"
    (out / "contactnets_speed.json").write_text(json.dumps(sp, indent=1))
    print("speed", sp, flush=True)

    caps = {"polytope": TrainConfig(max_steps=300), "deep": TrainConfig(max_steps=200),
            "e2e": TrainConfig(max_steps=1500), "lcp": TrainConfig(sysid_iters=10)}
    runs = [(v, int(n)) for n in args.sizes.split(",") for v in ("polytope", "e2e", "lcp")]
    runs += [("deep", int(n)) for n in args.deep_sizes.split(",")]
    res_path = out / "contactnets_data_efficiency.json"
    results = {"command": "python benchmarks/contactnets_study.py", "n_test": test.n_tosses,
               "test_toss_ids": test.toss_ids.tolist(), "seed": args.seed,
               "caps": {k: {"max_steps": c.max_steps, "sysid_iters": c.sysid_iters} for k, c in caps.items()},
               "results": {}}
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
        results["results"].setdefault(v, {}).setdefault(str(n), []).append(m)
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
