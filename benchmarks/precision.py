"""Float32 versus float64 final states of the same random box throws.

Runs the box-throw workload (0.1 m box, 0.37 kg, μ 0.18, h = 2 ms) twice in subprocesses — once
with ``JAX_ENABLE_X64=1`` (float64, the reference) and once in float32 on the chosen platform —
and reports the distribution of final-state differences (position, orientation angle) with
the throws' impact counts, so outliers can be traced to chaotic tumbling. On a GPU machine run
``--platform gpu`` for the float32 side; the float64 reference always runs on the CPU.

    python -m benchmarks precision --throws 1000 --steps 800 --json   # → benchmarks/results/precision.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np


_WORKER = r"""
import sys, numpy as np, jax
import jaxcontact as jc
from jaxcontact.states import random_throws
n, steps, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
law = jc.CoulombLCP()
model = jc.Model(law=law, dt=0.002, max_contacts=4)
params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(0.18))
# the same throws in both precisions: drawn in float64 numpy from the seed
key_states = random_throws(jax.random.PRNGKey(seed), n)
traj, info = jc.batch_rollout(model, params, key_states, steps, output="trajectory", with_info=True)
s = traj.to_array()
np.savez(out, init=np.asarray(key_states.to_array(), np.float64), final=np.asarray(s[:, -1], np.float64),
         impacts=np.asarray((np.diff((np.asarray(info.patch_type) > 0).astype(int), axis=1) > 0).sum(1)),
         dtype=str(s.dtype), device=str(jax.devices()[0]))
"""


def run_worker(n, steps, seed, x64: bool, platform: str, out: str, init_from: str | None = None):
    env = dict(os.environ, JAX_ENABLE_X64="1" if x64 else "0", JAX_PLATFORMS=platform)
    code = _WORKER
    if init_from is not None:  # use exactly the reference's initial states (cast to float32)
        code = code.replace(
            "key_states = random_throws(jax.random.PRNGKey(seed), n)",
            f"key_states = jc.State.from_array(np.load({init_from!r})['init'].astype(np.float32))",
        )
    subprocess.run([sys.executable, "-c", code, str(n), str(steps), str(seed), out], env=env, check=True)
    return np.load(out)


def quat_angle(q1, q2):
    d = np.abs(np.sum(q1 * q2, axis=-1))
    return 2 * np.arccos(np.clip(d, 0, 1))


def arguments(ap):
    ap.add_argument("--throws", type=int, default=1000)
    ap.add_argument("--platform", default="cpu", help="JAX platform of the float32 run (cpu or gpu)")
    ap.add_argument("--json", action="store_true")


def run(args, results):
    """``python -m benchmarks precision``: ``results`` (``runner.Results``) gets the JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        ref = run_worker(args.throws, args.steps, args.seed, True, "cpu", f"{tmp}/f64.npz")
        f32 = run_worker(args.throws, args.steps, args.seed, False, args.platform, f"{tmp}/f32.npz", init_from=f"{tmp}/f64.npz")
    dpos = np.linalg.norm(ref["final"][:, :3] - f32["final"][:, :3], axis=1)
    dang = quat_angle(ref["final"][:, 3:7], f32["final"][:, 3:7])
    pct = [50, 90, 99, 100]
    imp = ref["impacts"]
    worst = np.argsort(dpos)[-5:][::-1]
    res = {
        "command": args.command,
        "throws": args.throws,
        "steps": args.steps,
        "reference": f"float64 on {ref['device']}",
        "candidate": f"{f32['dtype']} on {f32['device']}",
        "final_position_diff_m": {f"p{p}": float(np.percentile(dpos, p)) for p in pct},
        "final_angle_diff_rad": {f"p{p}": float(np.percentile(dang, p)) for p in pct},
        "fraction_within_1mm": float(np.mean(dpos < 1e-3)),
        "fraction_within_1cm": float(np.mean(dpos < 1e-2)),
        "nan_count_f32": int(np.isnan(f32["final"]).sum()),
        "impacts_median_all": float(np.median(imp)),
        "worst_throws": [{"index": int(i), "pos_diff_m": float(dpos[i]), "angle_diff_rad": float(dang[i]),
                          "impacts": int(imp[i])} for i in worst],
        "corr_posdiff_vs_impacts": float(np.corrcoef(dpos, imp)[0, 1]) if np.std(imp) > 0 else None,
    }
    results.write(res)
    print(json.dumps(res, indent=2) if args.json else
          f"f32 vs f64 final position diff p50/p90/p99/max: {[round(v, 6) for v in res['final_position_diff_m'].values()]} m")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
