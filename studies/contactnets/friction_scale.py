"""Is the learned polytope's friction the gap to the tuned LCP? A one-parameter rollout calibration.

    python -m studies.contactnets friction-scale CHECKPOINT [CHECKPOINT ...] [--scales 0.8,0.9,...] [--work DIR]

For each checkpoint of ``python -m studies.contactnets study`` (polytope, deep or lcp; names are
looked up in ``--work``, default ``work/contactnets``):

* its friction level: the learned tangent functions' scale (row norms of the polytope's ``tangents``,
  the lumped μ) or the LCP's identified μ;
* the travel bias of its test rollouts (the study's 48 held-out tosses): the final horizontal
  position error projected on the real toss's direction of travel after its first contact (the
  first sample whose lowest true corner is within 0.05 half-widths of the table), in block widths —
  positive = the model slides/tumbles too far;
* a calibration of one friction factor s (the tangents, or μ, times s) by full rollouts of the
  checkpoint's own training and validation tosses (at most 64, never the test tosses): the s of
  ``--scales`` with the lowest position error + rotation error (radians), and the test errors with
  it against s = 1.

Writes studies/contactnets/results/contactnets_friction_scale.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from jaxcontact.contactnets.evaluate import lowest_corner

from ..common import command_line, in_work
from .common import RESULTS, WORK, cube_test_split, cube_tosses_path


def main(argv=None, prog="studies.contactnets friction-scale") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoints", nargs="+", help="study checkpoints (names are looked up in --work)")
    ap.add_argument("--work", default=WORK, help="the study's --work directory (default %(default)s)")
    ap.add_argument("--data", default=str(cube_tosses_path()))
    ap.add_argument("--scales", default="0.8,0.9,1.0,1.1,1.2,1.3,1.4,1.6")
    ap.add_argument("--max-train", type=int, default=64, help="training/validation tosses rolled out per scale")
    ap.add_argument("--out", default=str(RESULTS / "contactnets_friction_scale.json"))
    args = ap.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.contactnets.train import load_checkpoint, sim_model_params

    data = load_tosses(args.data)
    test, _ = cube_test_split(data)
    scales = [float(s) for s in args.scales.split(",")]
    true, mask = test.padded()
    L = test.lengths
    rows = np.arange(test.n_tosses)
    low = lowest_corner(true, test.vertices)
    first = np.argmax((low < 0.05) & mask, axis=1)  # first contact sample of each test toss
    p_first, p_end = true[rows, first, :2], true[rows, L - 1, :2]
    travel = (p_end - p_first) / np.linalg.norm(p_end - p_first, axis=1, keepdims=True)

    def travel_bias(pred):
        err = (pred[rows, L - 1, :2] - p_end) / test.width
        return float(np.mean(np.sum(err * travel, axis=1)))

    def poly_of(meta, law):  # the polytope part of a learned law: its tangents are the lumped friction
        return law if meta["variant"] == "polytope" else law.poly

    def with_scale(meta, params, s):
        law = params.law
        if meta["variant"] == "lcp":
            return params.replace(law=law.replace(mu=law.mu * s))
        # deep: the polytope part's tangents (the network's φ_t is left as learned)
        poly = poly_of(meta, law).replace(tangents=poly_of(meta, law).tangents * s)
        return params.replace(law=poly if meta["variant"] == "polytope" else law.replace(poly=poly))

    ids = {int(t): k for k, t in enumerate(data.toss_ids)}
    out = {"command": command_line(prog, argv), "scales": scales,
           "n_test": test.n_tosses, "runs": []}
    t0 = time.perf_counter()
    for ck in (in_work(c, args.work) for c in args.checkpoints):
        meta, theta = load_checkpoint(ck)
        if meta["variant"] not in ("polytope", "deep", "lcp"):
            raise ValueError(f"{ck}: no friction to scale in a {meta['variant']} model (polytope, deep or lcp)")
        model, params = sim_model_params(meta, theta)
        if meta["variant"] == "lcp":
            friction = [float(np.asarray(params.law.mu).reshape(-1)[0])]
        else:
            friction = np.linalg.norm(np.asarray(poly_of(meta, params.law).tangents), axis=1).tolist()
        own = sorted(ids[t] for t in meta["train_toss_ids"] + meta["val_toss_ids"])
        if len(own) > args.max_train:
            own = sorted(np.random.default_rng(0).choice(own, args.max_train, replace=False).tolist())
        fit = data.subset(own)
        scored = []
        for s in scales:
            m = metrics(rollout_tosses(model, with_scale(meta, params, s), fit), fit)
            scored.append({"scale": s, "pos_error": m["pos_error"], "rot_error_deg": m["rot_error_deg"],
                           "score": m["pos_error"] + np.radians(m["rot_error_deg"])})
        best = min(scored, key=lambda r: r["score"])["scale"]
        test_rows = {}
        for s in sorted({1.0, best}):
            pred = rollout_tosses(model, with_scale(meta, params, s), test)
            m = metrics(pred, test)
            test_rows[str(s)] = {"pos_error": m["pos_error"], "rot_error_deg": m["rot_error_deg"],
                                 "penetration": m["penetration"], "travel_bias": travel_bias(pred)}
        run = {"checkpoint": str(ck), "variant": meta["variant"], "n_tosses": meta["n_tosses"], "seed": meta["seed"],
               "friction": friction, "own_tosses_rolled_out": len(own), "own_rollouts": scored, "chosen_scale": best,
               "test": test_rows}
        out["runs"].append(run)
        t1, tb = test_rows["1.0"], test_rows[str(best)]
        print(f"{Path(ck).name}: friction {np.round(friction, 3).tolist()} travel bias {t1['travel_bias']:+.3f}; "
              f"s={best}: test {t1['pos_error']:.3f} / {t1['rot_error_deg']:.1f} -> {tb['pos_error']:.3f} / "
              f"{tb['rot_error_deg']:.1f} (bias {tb['travel_bias']:+.3f})", flush=True)
    out["seconds"] = time.perf_counter() - t0
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0

