"""How much of a model's rollout error on the real cube tosses is sensitivity to the initial state?

For each checkpoint: its rollouts of the study's 48 held-out test tosses from each toss's first
state (eq. 18–19 against the real tosses), and the same model's rollouts from first states
perturbed by small measurement-like errors (position, a rotation about a random axis, a relative
error of every velocity component; two noise draws per level), compared with the unperturbed
rollouts by the same metrics. If perturbations of the size of tracking noise moved the rollouts
as far as the real tosses are from them, no deterministic model could do much better; if they
move them much less, the error is model error. ``--substeps``: the same models rolled out with
k engine steps of dt/k per sample (Stewart–Trinkle at a finer time step), against the real tosses.

    python -m studies.contactnets sensitivity lcp_256_s2 polytope_256_s0 [--work DIR]

(checkpoint names are looked up in ``--work``, default ``work/contactnets``, the study's work
directory). Writes studies/contactnets/results/contactnets_sensitivity.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from ..common import command_line, in_work
from .common import RESULTS, WORK, cube_test_split, cube_tosses_path

LEVELS = ((0.5, 0.5, 0.01), (1.0, 1.0, 0.02), (2.0, 2.0, 0.05))  # (mm, degrees, relative velocity error)


def perturbed(data, pos_mm, rot_deg, vel_frac, seed, unit_m):
    """``data`` with each toss's first state perturbed (position σ pos_mm, rotation angle σ rot_deg
    about a uniformly random axis, every velocity component scaled by 1 + N(0, vel_frac))."""
    from jaxcontact.rotations import quat_mul

    rng = np.random.default_rng(seed)
    states = []
    for s in data.states:
        s = np.array(s, float)
        x = s[0]
        x[:3] += rng.normal(0.0, pos_mm * 1e-3 / unit_m, 3)
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        ang = np.radians(rng.normal(0.0, rot_deg))
        dq = np.concatenate([[np.cos(ang / 2)], np.sin(ang / 2) * ax])
        x[3:7] = np.asarray(quat_mul(x[3:7], dq))  # perturbation in the body frame
        x[7:13] *= 1.0 + rng.normal(0.0, vel_frac, 6)
        states.append(s)
    return dataclasses.replace(data, states=states)


def main(argv=None, prog="studies.contactnets sensitivity") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoints", nargs="+", help="study checkpoints (names are looked up in --work)")
    ap.add_argument("--work", default=WORK, help="the study's --work directory (default %(default)s)")
    ap.add_argument("--data", default=str(cube_tosses_path()))
    ap.add_argument("--n-test", type=int, default=48, help="held-out tosses, drawn as in the study")
    ap.add_argument("--unit-m", type=float, default=0.0524, help="metres per length unit of the file")
    ap.add_argument("--substeps", default="2,4", help="engine steps per sample of the finer-step rollouts")
    ap.add_argument("--out", default=str(RESULTS / "contactnets_sensitivity.json"))
    args = ap.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.contactnets.train import load_checkpoint, sim_model_params

    data = load_tosses(args.data)
    test, _ = cube_test_split(data, args.n_test)  # the study's test split
    out = {"command": command_line(prog, argv),
           "n_test": test.n_tosses, "levels": [dict(pos_mm=a, rot_deg=b, vel_rel=c) for a, b, c in LEVELS],
           "checkpoints": {}}
    for ck in (in_work(c, args.work) for c in args.checkpoints):
        meta, theta = load_checkpoint(ck)
        model, params = sim_model_params(meta, theta)
        base = rollout_tosses(model, params, test)
        m0 = metrics(base, test)
        per = m0.pop("per_toss")
        pos, rot = np.asarray(per["pos_error"]), np.asarray(per["rot_error_deg"])
        row = {"variant": meta["variant"], "n_tosses": meta["n_tosses"], "seed": meta["seed"],
               "vs_real": dict(m0, pos_median=float(np.median(pos)), rot_median_deg=float(np.median(rot))),
               "perturbed_vs_unperturbed": []}
        ref = dataclasses.replace(test, states=[base[i, : len(s)] for i, s in enumerate(test.states)])
        for lvl in LEVELS:
            ms = [metrics(rollout_tosses(model, params, perturbed(test, *lvl, seed, args.unit_m)), ref) for seed in (0, 1)]
            row["perturbed_vs_unperturbed"].append({"pos_error": float(np.mean([m["pos_error"] for m in ms])),
                                                    "rot_error_deg": float(np.mean([m["rot_error_deg"] for m in ms]))})
        row["substeps_vs_real"] = {}
        for k in (int(x) for x in args.substeps.split(",") if x):
            mk = metrics(rollout_tosses(model, params, test, substeps=k), test)
            row["substeps_vs_real"][str(k)] = {key: mk[key] for key in ("pos_error", "rot_error_deg", "penetration")}
        out["checkpoints"][Path(ck).name] = row
        print(Path(ck).name, json.dumps({k: row[k] for k in ("vs_real", "perturbed_vs_unperturbed", "substeps_vs_real")}),
              flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0

