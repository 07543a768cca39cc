"""``jaxcontact contactnets``: ``train`` and ``evaluate`` (one JSON object with the metrics)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


# bytes per transition of a batch (the (x, x') pair, the loss's contact Jacobians and inner program
# for 8 vertices, the gradient's copies): measured 21 kB (peak RSS of `contactnets train --tosses 4
# --max-steps 2` at --batch-size 64 and 4096, the validation set as large as a batch: +85 MB for
# 4032 more transitions), rounded up; counted twice (a training and a validation batch)
BYTES_PER_TRANSITION = 32 * 1024


def check_memory_for_training(batch_size: int, inner_iters: int) -> None:
    """``MemoryError`` before training if a batch of ``batch_size`` transitions (the validation
    set is a whole number of batches, at least one) or the inner program's ``inner_iters``
    iteration coefficients cannot fit."""
    from ..cliargs import check_memory

    check_memory(2 * batch_size * BYTES_PER_TRANSITION + 2 * 8 * inner_iters,
                 f"contactnets train --batch-size {batch_size} --inner-iters {inner_iters}",
                 "use a smaller --batch-size or --inner-iters")


def _train(args) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    from ..checkpoint import check_output_dir
    from .data import load_tosses
    from .train import TrainConfig, train

    check_output_dir(args.out, args.force)  # before loading or training anything
    data = load_tosses(args.data)
    check_memory_for_training(args.batch_size, args.inner_iters)
    cfg = TrainConfig(batch_size=args.batch_size, max_steps=args.max_steps, max_epochs=args.max_epochs,
                      patience=args.patience, inner_iters=args.inner_iters, gradient=args.gradient,
                      smoothing_length=args.smoothing_length, **resolve_preset(args))
    train(args.variant, data, args.tosses, args.seed, args.out, cfg, progress=not args.no_progress,
          log=lambda *a: print(*a, file=sys.stderr), force=args.force)
    return 0


def _evaluate(args) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    from .data import load_tosses
    from .evaluate import UNITS, metrics, rollout_tosses, toss_roles
    from ..checkpoint import status_warning
    from ..cliargs import optional_outputs
    from .train import check_compatible, load_checkpoint, sim_model_params

    meta, theta = load_checkpoint(args.checkpoint)
    data = load_tosses(args.data)
    check_compatible(meta, data)
    if args.plot and not 0 <= args.plot_toss < data.n_tosses:  # before the rollouts
        raise ValueError(f"--plot-toss {args.plot_toss}: the toss file has {data.n_tosses} tosses, valid indices "
                         f"0..{data.n_tosses - 1}")
    warning = status_warning(args.checkpoint, meta)
    if warning:
        print(warning, file=sys.stderr)
    model, params = sim_model_params(meta, theta)
    pred = rollout_tosses(model, params, data, progress=not args.no_progress and not args.json)
    m = metrics(pred, data)
    roles = toss_roles(meta, data)
    held = roles.pop("held_out_index")
    if held:
        sub = data.subset(held)
        hm = metrics(pred[held][:, : int(sub.lengths.max())], sub)
        m["held_out"] = {k: hm[k] for k in ("pos_error", "rot_error_deg", "penetration", "n_tosses")}
    m["variant"] = meta["variant"]
    per = m.pop("per_toss")
    if args.plot:  # written after the result is printed (cliargs.optional_outputs)
        m["plot"] = args.plot
    # which tosses were seen in training, matched by content (not by the data file's path)
    m["toss_match"] = roles.pop("match")
    m.update(roles)
    m["data"] = {"file": data.source and Path(data.source).name, "sha256": data.file_sha256,
                 "same_file_as_training": bool(meta.get("data_sha256")) and meta.get("data_sha256") == data.file_sha256}
    m["units"] = dict(UNITS, block_width_file_units=data.width)
    if args.json:
        print(json.dumps(m))
    else:
        print(f"{'metric':14s} {'all tosses':>12s} {'held out':>12s}  unit")
        for k in ("pos_error", "rot_error_deg", "penetration", "n_tosses", "n_diverged"):
            h = m.get("held_out", {}).get(k, "-")
            fmt = lambda v: f"{v:12.4f}" if isinstance(v, float) else f"{v!s:>12s}"
            print(f"{k:14s} {fmt(m[k])} {fmt(h)}  {UNITS[k].split(' (')[0]}")
        print(f"tosses matched by {m['toss_match']}")
        for k in ("train_ids", "val_ids", "held_out_ids"):
            print(f"{k:14s} {m[k]}")
    def plot():
        from .plots import plot_rollout

        plot_rollout(pred[args.plot_toss], data.states[args.plot_toss], data, args.plot,
                     title=f"{meta['variant']} rollout vs real toss {int(data.toss_ids[args.plot_toss])}")

    def per_toss():
        with open(args.per_toss, "w") as f:
            json.dump(per, f)

    return optional_outputs(*([("--plot", plot)] if args.plot else []),
                            *([("--per-toss", per_toss)] if args.per_toss else []))


# Presets of ``contactnets train``. "default" is the configuration measured in docs/contactnets.md
# (and the README main job); "paper" is the paper's optimiser setup (appendix A.2), not measured
# here: its 10x smaller learning rates need about 10x more steps than our CPU budget. An explicit
# --lr / --schedule / --deep-features overrides the preset. lr None: per variant (train.py).
PRESETS = {
    "default": {"lr": None, "schedule": "cosine", "deep_features": "pR"},
    "paper": {"lr": {"polytope": 5e-4, "deep": 5e-4, "e2e": 3e-5, "lcp": None}, "schedule": "constant",
              "deep_features": "pR"},
}
PRESET_HELP = ("named configuration; 'default' (used when --preset is not given) is the measured configuration of docs/contactnets.md (learning rate 5e-3 for the geometry, "
               "5e-4 for deep's network, 1e-3 for e2e, cosine decay to 5 %% over --max-steps; deep input pR); "
               "paper: the paper's setup (constant learning rate 5e-4 for the geometry and deep's network, 3e-5 "
               "for e2e; deep input pR) -- not measured here, needs ~10x more steps (raise --max-steps). "
               "No configuration measured better than the default is known (docs/contactnets.md). "
               "--lr, --schedule, --deep-features override the preset; lcp ignores all three")


def resolve_preset(args) -> dict:
    """lr, schedule, deep_features: each explicit option, else the preset's value."""
    pre = PRESETS[args.preset]
    lr = args.lr if args.lr is not None else pre["lr"]
    if isinstance(lr, dict):
        lr = lr[args.variant]
    return {"lr": lr, "schedule": args.schedule or pre["schedule"],
            "deep_features": args.deep_features or pre["deep_features"]}


def register(sub) -> None:
    from ..cliargs import nonnegative_int, output_figure, output_file, positive_float, positive_int, seed
    from ..solvers import GRADIENT_MODES
    from .train import DEEP_FEATURES, TrainConfig  # numpy only at import time

    d = TrainConfig()
    p = sub.add_parser("contactnets", help="ContactNets: learn contact geometry/friction from cube tosses",
                       description="ContactNets on cube tosses. Lengths are in the toss file's unit (the real "
                                   "cube's half-width, 0.0524 m), time in s; metrics in block widths and degrees.")
    s = p.add_subparsers(dest="contactnets_command", required=True)
    t = s.add_parser("train", help="train one variant and write a checkpoint directory")
    t.add_argument("--variant", choices=("polytope", "deep", "e2e", "lcp"), default="polytope",
                   help="polytope/deep: ContactNets loss; e2e: end-to-end impulse network; lcp: Coulomb LCP tuned "
                        "by sysid")
    t.add_argument("--preset", choices=tuple(PRESETS), default="default", help=PRESET_HELP)
    t.add_argument("--data", default=None, help="toss .npz (default: the bundled subset of the real cube tosses)")
    t.add_argument("--tosses", type=positive_int, default=16, help="tosses used, train + validation split 70/30 (tosses)")
    t.add_argument("--seed", type=seed, default=0,
                   help="seed of the toss choice, split and initial noise (integer)")
    t.add_argument("--out", required=True,
                   help="checkpoint directory (required); refused if it exists and is not empty, unless --force")
    t.add_argument("--force", action="store_true",
                   help="replace an existing checkpoint in --out, once the new one is complete (until then it is "
                        "trained in <out>.partial)")
    t.add_argument("--batch-size", type=positive_int, default=d.batch_size,
                   help="transitions per gradient step (transitions)")
    # the command line trains longer than TrainConfig()'s quick library default (600 steps, patience 12)
    t.add_argument("--max-steps", type=positive_int, default=3000, help="cap on gradient steps (steps)")
    t.add_argument("--max-epochs", type=positive_int, default=d.max_epochs,
                   help="cap on passes over the training transitions (epochs)")
    t.add_argument("--patience", type=positive_int, default=20,
                   help=f"validation rounds (every {d.eval_every} steps, or every epoch if shorter) without improvement "
                        "before stopping (rounds)")
    t.add_argument("--lr", type=positive_float, default=None,
                   help="AdamW learning rate of the geometry or of e2e's network (dimensionless; default: from --preset)")
    t.add_argument("--schedule", choices=("cosine", "constant"), default=None,
                   help="learning-rate schedule over --max-steps (default: from --preset, cosine for 'default')")
    t.add_argument("--inner-iters", type=positive_int, default=d.inner_iters,
                   help="iterations of the inner convex program's solver (ContactNets loss; iterations)")
    t.add_argument("--deep-features", choices=DEEP_FEATURES, default=None,
                   help="deep only, the network's input: pR position and rotation (the paper), zR height and rotation, "
                        "p position, vertex each contact's world point (one network shared by the contacts) "
                        "(default: from --preset, pR for both)")
    t.add_argument("--gradient", choices=GRADIENT_MODES, default=d.gradient,
                   help="lcp only: the derivative of the engine's Coulomb LCP that its sysid fit differentiates "
                        "through (docs/gradients.md; forward values are the same); polytope/deep (their own inner "
                        "program) and e2e (no contact solve) do not differentiate through it and refuse relaxed")
    t.add_argument("--smoothing-length", type=positive_float, default=None,
                   help="smoothing length of --gradient relaxed, required with it; the bundled and shared tosses "
                        "measure lengths in cube half-widths (0.0524 m), so 1 mm is 0.019 (toss file length units)")
    t.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    t.set_defaults(func=_train)
    e = s.add_parser("evaluate", help="roll out a checkpoint on every toss of a file; eq. 18-19 metrics",
                     description="Rolls out the checkpoint from each toss's first state. Reports pos_error and "
                                 "penetration in block widths, rot_error_deg in degrees, for all tosses and for the "
                                 "held-out ones, and which toss ids were training / validation / held out "
                                 "(matched by content hash, not by the file's path).")
    e.add_argument("--checkpoint", required=True, help="checkpoint directory written by train (required)")
    e.add_argument("--data", default=None, help="toss .npz (default: the bundled subset)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--plot", type=output_figure, default=None,
                   help='PNG: rollout against the real toss --plot-toss (needs pip install "jaxcontact[plot]"; '
                        "default: no figure)")
    e.add_argument("--plot-toss", type=nonnegative_int, default=0,
                   help="index in the file of the toss drawn by --plot, checked against the file before the rollouts "
                        "(index)")
    e.add_argument("--per-toss", type=output_file, default=None,
                   help="write per-toss metrics to this JSON file (default: not written)")
    e.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    e.set_defaults(func=_evaluate)
