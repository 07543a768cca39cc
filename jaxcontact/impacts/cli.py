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


def _evaluate(args) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    from .data import load_impacts
    from .study import run_study

    train = load_impacts(args.train)
    test = load_impacts(args.test)
    log = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print
    result = run_study(train, test, target=args.target, seed=args.seed,
                       learned_steps=args.learned_steps, published=not args.no_published, log=log)
    if args.plots:
        from .plots import all_plots

        paths = all_plots(result, test, result["_P_test"], args.plots)
        result["plots"] = [str(p) for p in paths]
    pub = _public(result)
    if args.json:
        print(json.dumps(pub, indent=2))
    else:
        print(f"{'model':18s} {'mu':>7s} {'eps':>7s} {'err':>7s} {'range':>6s} {'best%':>6s} {'worst%':>6s} {'pub.rel':>8s}")
        for name, r in pub["models"].items():
            print(f"{name:18s} {r['mu']:7.4f} {r['eps']:7.4f} {r['mean_velocity_error']:7.4f} "
                  f"{r['fraction_within_range']:6.3f} {r['best_percent']:6.1f} {r['worst_percent']:6.1f} "
                  f"{r.get('published_median_rel_diff', float('nan')):8.2e}")
        print(f"IRB bound error      {pub['irb']['mean_velocity_error']:.4f}")
        print(f"Best Post Hoc error  {pub['best_post_hoc']['mean_velocity_error']:.4f}")
        print(f"learned ({pub['learned']['prior_model']} + MLP) error {pub['learned_mean_velocity_error']:.4f}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("impacts", help="six planar rigid impact models on real impacts")
    sub = p.add_subparsers(dest="impacts_command", required=True)

    s = sub.add_parser("split", help="random train/test split of an impacts file (same format)")
    s.add_argument("--data", required=True, help="impacts .npz file")
    s.add_argument("--test-fraction", type=float, default=0.3)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(func=_split)

    e = sub.add_parser("evaluate", help="identify on --train, evaluate on --test")
    e.add_argument("--train", required=True)
    e.add_argument("--test", required=True)
    e.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    e.add_argument("--plots", default=None, metavar="DIR", help="write figures into DIR")
    e.add_argument("--target", choices=("best", "eq7"), default="best",
                   help="identification target impulse (default: feasible best-explaining impulse)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--learned-steps", type=int, default=3000)
    e.add_argument("--no-published", action="store_true",
                   help="skip the comparison with the published model impulses")
    e.set_defaults(func=_evaluate)
