"""Validation (data seed 0, start seed 100): the recipe geometry+exact+trim+polish+smooth=1e-3:4, then
for starts it leaves, further smooth_polish cycles from its end point (issue 23, fourth session;
val8 in README.md)."""
import json, sys, time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
from benchmarks.sysid_random_starts import parse_mode, build_problems, random_start, run_start, recovered
from jaxcontact.sysid import FitResult
from jaxcontact.sysid.schedule import smooth_polish
from jaxcontact.sysid.synthetic import make_synthetic, start_params
from jaxcontact.sysid import optim

ks = [int(k) for k in sys.argv[1].split(",")]
out = sys.argv[2]
# the first runs (starts 6, 7, 10) tried these four; a third argument "S/S;S/S" names others
VARIANTS = (("3e-4", [3e-4]), ("3e-4,1e-4", [3e-4, 1e-4]), ("1e-3 seed2", [1e-3]), ("3e-3,1e-3", [3e-3, 1e-3]))
if len(sys.argv) > 3:
    VARIANTS = tuple((v.replace("/", ","), [float(x) for x in v.split("/")]) for v in sys.argv[3].split(";"))
data = make_synthetic(n_throws=20, steps=400, seed=0)
truth = data.truth
mode = parse_mode("geometry+exact+trim+polish+smooth=1e-3:4")
probs = build_problems(data, mode)
prob = probs["main"]
rows = []
def errs(x):
    v = prob.spec.flat_values(np.asarray(x)[: prob.spec.size]); ok, e = recovered(v, truth)
    # percent for mu, restitution, worst vertex; the ground in units of 10 µm (the committed JSON: mm)
    return ok, {k: round(100 * (e[k]["rel"] if k != "ground" else e[k]["abs"] * 1e3), 3) for k in e}
for k in ks:
    p0 = random_start(np.random.default_rng([100, k]), truth, start_params())
    values, rollouts, loss, its, msg, wall, nwin, levels, x = run_start(probs, mode, p0, 100, 100 + k)
    ok, e = errs(x)
    row = {"start": k, "base": {"ok": ok, "loss": loss, "err_pct": e, "rollouts": rollouts, "wall": wall}}
    print(k, row["base"], flush=True)
    if not ok:
        base = FitResult.from_optim(prob, optim.OptimResult(x=np.asarray(x), loss=loss, iterations=0, loss_evals=0,
                                                            grad_evals=0, message=msg, method="lm", history=[], wall_time=0.0))
        for name, seq in VARIANTS:
            t0 = time.time(); r = base; used = 0
            for j, sg in enumerate(seq):
                r2, kept = smooth_polish(prob, r, sg, 4, max_iter=30, polish_iter=50, seed=100 + k + 1000 * (j + 1) + (7 if "seed2" in name else 0))
                used += r2.rollouts - r.rollouts; r = r2
            ok2, e2 = errs(r.x)
            row[name] = {"ok": ok2, "loss": float(r.loss), "err_pct": e2, "rollouts": used, "wall": time.time() - t0}
            print(k, name, row[name], flush=True)
    rows.append(row)
    json.dump(rows, open(out, "w"), indent=1)
