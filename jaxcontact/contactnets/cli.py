"""``jaxcontact contactnets``: ``train`` and ``evaluate`` (one JSON object with the metrics)."""

from __future__ import annotations

import json
import sys


def _train(args) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    from .data import load_tosses
    from .train import TrainConfig, train

    data = load_tosses(args.data)
    cfg = TrainConfig(batch_size=args.batch_size, max_steps=args.max_steps, max_epochs=args.max_epochs,
                      patience=args.patience, lr=args.lr, schedule=args.schedule, inner_iters=args.inner_iters,
                      deep_features=args.deep_features)
    train(args.variant, data, args.tosses, args.seed, args.out, cfg, progress=not args.no_progress,
          log=lambda *a: print(*a, file=sys.stderr))
    return 0


def _evaluate(args) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    from .data import load_tosses
    from .evaluate import metrics, rollout_tosses
    from .train import check_compatible, load_checkpoint, sim_model_params

    meta, theta = load_checkpoint(args.checkpoint)
    data = load_tosses(args.data)
    check_compatible(meta, data)
    model, params = sim_model_params(meta, theta)
    pred = rollout_tosses(model, params, data, progress=not args.no_progress and not args.json)
    m = metrics(pred, data)
    used = set(meta.get("train_toss_ids", [])) | set(meta.get("val_toss_ids", []))
    held = [i for i, t in enumerate(data.toss_ids) if int(t) not in used]
    if 0 < len(held) < data.n_tosses and data.source == meta.get("data_source"):
        sub = data.subset(held)
        hm = metrics(pred[held][:, : int(sub.lengths.max())], sub)
        m["held_out"] = {k: hm[k] for k in ("pos_error", "rot_error_deg", "penetration", "n_tosses")}
    m["variant"] = meta["variant"]
    per = m.pop("per_toss")
    if args.plot:
        from .plots import plot_rollout

        plot_rollout(pred[args.plot_toss], data.states[args.plot_toss], data, args.plot,
                     title=f"{meta['variant']} rollout vs real toss {int(data.toss_ids[args.plot_toss])}")
        m["plot"] = args.plot
    if args.json:
        print(json.dumps(m))
    else:
        for k in ("pos_error", "rot_error_deg", "penetration", "n_tosses", "n_diverged"):
            print(f"{k:14s} {m[k]}")
        if "held_out" in m:
            print("held out:", m["held_out"])
    if args.per_toss:
        with open(args.per_toss, "w") as f:
            json.dump(per, f)
    return 0


def register(sub) -> None:
    from .train import DEEP_FEATURES, TrainConfig  # numpy only at import time

    d = TrainConfig()
    p = sub.add_parser("contactnets", help="ContactNets: learn contact geometry/friction from cube tosses")
    s = p.add_subparsers(dest="contactnets_command", required=True)
    t = s.add_parser("train", help="train one variant and write a checkpoint directory")
    t.add_argument("--variant", choices=("polytope", "deep", "e2e", "lcp"), default="polytope")
    t.add_argument("--data", default=None, help="toss .npz (default: the bundled subset of the real cube tosses)")
    t.add_argument("--tosses", type=int, default=16, help="tosses used (train + validation split)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True, help="checkpoint directory")
    t.add_argument("--batch-size", type=int, default=d.batch_size)
    # the command line trains longer than TrainConfig()'s quick library default (600 steps, patience 12)
    t.add_argument("--max-steps", type=int, default=3000)
    t.add_argument("--max-epochs", type=int, default=d.max_epochs)
    t.add_argument("--patience", type=int, default=20, help="validation rounds without improvement before stopping")
    t.add_argument("--lr", type=float, default=None)
    t.add_argument("--schedule", choices=("cosine", "constant"), default=d.schedule,
                   help="learning-rate schedule over --max-steps")
    t.add_argument("--inner-iters", type=int, default=d.inner_iters,
                   help="iterations of the inner convex program's solver (ContactNets loss)")
    t.add_argument("--deep-features", choices=DEEP_FEATURES, default=d.deep_features,
                   help="deep only, the network's input: pR position and rotation (the paper), zR height and rotation, "
                        "p position, vertex each contact's world point (one network shared by the contacts)")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=_train)
    e = s.add_parser("evaluate", help="roll out a checkpoint on every toss of a file; eq. 18-19 metrics")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--data", default=None, help="toss .npz (default: the bundled subset)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--plot", default=None, help="PNG: rollout against the real toss (--plot-toss)")
    e.add_argument("--plot-toss", type=int, default=0)
    e.add_argument("--per-toss", default=None, help="write per-toss metrics to this JSON file")
    e.add_argument("--no-progress", action="store_true")
    e.set_defaults(func=_evaluate)
