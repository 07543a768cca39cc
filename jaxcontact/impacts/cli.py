"""``jaxcontact impacts`` sub-command: ``split`` and ``evaluate``."""

from __future__ import annotations

import json
import sys


def _split(args) -> int:
    from .data import split_impacts

    tr, te = split_impacts(args.data, args.test_fraction, args.seed, args.out_dir)
    print(f"wrote {tr} and {te}")
    return 0


def _public(result: dict) -> dict:
    return {k: v for k, v in result.items() if not k.startswith("_")}


# units of ``impacts evaluate``'s result (reported with it as ``units``)
UNITS = {
    "mu": "dimensionless", "eps": "dimensionless",
    "mean_velocity_error": "m/s (norm of the post-impact velocity error, angular part times rho)",
    "median_velocity_error": "m/s",
    "rho": "m (radius of gyration, scales rad/s to m/s)",
    "fraction_within_range": "fraction of test impacts", "best_percent": "% of test impacts",
    "worst_percent": "% of test impacts", "published_median_rel_diff": "dimensionless (relative)",
    "train_mean_impulse_residual": "N s", "n_train": "impacts", "n_test": "impacts", "seconds": "s",
}


def _impact_hashes(data) -> list:
    """Content id of each impact: SHA-256 (16 hex digits) of its pre/post states and Jacobian."""
    import hashlib

    import numpy as np

    rows = np.concatenate([data.v_pre, data.v_post, data.J.reshape(data.n, -1)], axis=1).astype("<f8")
    return [hashlib.sha256(np.ascontiguousarray(r).tobytes()).hexdigest()[:16] for r in rows]


def _data_identity(args, train, test) -> dict:
    """Which impacts were identified on (--train) and which held out (--test), by content, not by path."""
    from pathlib import Path

    from ..files import file_sha256

    tr, te = _impact_hashes(train), _impact_hashes(test)
    seen = set(tr)
    overlap = [i for i, h in enumerate(te) if h in seen]
    return {"train": {"file": Path(args.train).name, "sha256": file_sha256(args.train), "impacts": train.n},
            "test": {"file": Path(args.test).name, "sha256": file_sha256(args.test), "impacts": test.n},
            "held_out": "every --test impact not also in --train (matched by content hash)",
            "test_indices_also_in_train": overlap, "held_out_impacts": test.n - len(overlap)}


def _evaluate(args) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    from .data import load_impacts
    from .study import run_study

    from ..cliargs import check_memory, optional_outputs

    # the learned models' training scans keep one float64 loss per step (two models, with copies)
    check_memory(4 * 8 * args.learned_steps, f"impacts evaluate --learned-steps {args.learned_steps}",
                 "use fewer --learned-steps")
    train = load_impacts(args.train)
    test = load_impacts(args.test)
    log = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print
    result = run_study(train, test, target=args.target, seed=args.seed,
                       learned_steps=args.learned_steps, published=not args.no_published, log=log)
    if args.plots:  # written after the result is printed (cliargs.optional_outputs)
        from pathlib import Path

        from .plots import PLOT_NAMES

        result["plots"] = [str(Path(args.plots) / name) for name in PLOT_NAMES]
    pub = _public(result)
    pub["data"] = _data_identity(args, train, test)
    pub["units"] = UNITS
    if pub["data"]["test_indices_also_in_train"]:
        log(f"warning: {len(pub['data']['test_indices_also_in_train'])} test impacts are also in the training file")
    if args.json:
        print(json.dumps(pub, indent=2))
    else:
        d = pub["data"]
        print(f"identified on {d['train']['file']} ({d['train']['impacts']} impacts), evaluated on {d['test']['file']} "
              f"({d['test']['impacts']} impacts, {d['held_out_impacts']} held out)")
        print(f"{'model':18s} {'mu':>7s} {'eps':>7s} {'err m/s':>7s} {'range':>6s} {'best%':>6s} {'worst%':>6s} {'pub.rel':>8s}")
        for name, r in pub["models"].items():
            print(f"{name:18s} {r['mu']:7.4f} {r['eps']:7.4f} {r['mean_velocity_error']:7.4f} "
                  f"{r['fraction_within_range']:6.3f} {r['best_percent']:6.1f} {r['worst_percent']:6.1f} "
                  f"{r.get('published_median_rel_diff', float('nan')):8.2e}")
        print(f"IRB bound error      {pub['irb']['mean_velocity_error']:.4f} m/s")
        print(f"Best Post Hoc error  {pub['best_post_hoc']['mean_velocity_error']:.4f} m/s")
        print(f"learned ({pub['learned']['prior_model']} + MLP) error {pub['learned_mean_velocity_error']:.4f} m/s")

    def plots():
        from .plots import all_plots

        all_plots(result, test, result["_P_test"], args.plots)

    return optional_outputs(*([("--plots", plots)] if args.plots else []))


def register(subparsers) -> None:
    from ..cliargs import nonnegative_int, output_dir, positive_int, seed, unit_interval

    p = subparsers.add_parser("impacts", help="six planar rigid impact models on real impacts",
                              description="Planar impact models; velocities in m/s and rad/s, impulses in N s.")
    sub = p.add_subparsers(dest="impacts_command", required=True)

    s = sub.add_parser("split", help="random train/test split of an impacts file (same format)")
    s.add_argument("--data", required=True, help="impacts .npz file (required)")
    s.add_argument("--test-fraction", type=unit_interval, default=0.3, help="share of the impacts held out for testing (fraction)")
    s.add_argument("--seed", type=seed, default=0, help="seed of the random split (integer)")
    s.add_argument("--out-dir", type=output_dir, required=True, help="directory for train.npz and test.npz (required)")
    s.set_defaults(func=_split)

    e = sub.add_parser("evaluate", help="identify on --train, evaluate on --test",
                       description="Identifies each model on --train and evaluates on --test (held out). Reports "
                                   "mean velocity errors in m/s, which files (by name and SHA-256) were training and "
                                   "test, and test impacts also found in the training file (by content).")
    e.add_argument("--train", required=True, help="impacts .npz the models are identified on (required)")
    e.add_argument("--test", required=True, help="held-out impacts .npz the models are evaluated on (required)")
    e.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    e.add_argument("--plots", type=output_dir, default=None, metavar="DIR",
                   help='write figures into DIR (needs pip install "jaxcontact[plot]"; default: no figures)')
    e.add_argument("--target", choices=("best", "eq7"), default="best",
                   help="identification target impulse: best = feasible best-explaining impulse, eq7 = the paper's eq. 7")
    e.add_argument("--seed", type=seed, default=0, help="seed of the learned models' initialisation (integer)")
    e.add_argument("--learned-steps", type=positive_int, default=3000, help="training steps of the learned models (steps)")
    e.add_argument("--no-published", action="store_true",
                   help="skip the comparison with the published model impulses")
    e.set_defaults(func=_evaluate)
