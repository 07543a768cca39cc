"""``jaxcontact dacm {generate,train,evaluate}``.

    jaxcontact dacm generate --shape box --throws 150 --seed 0 --out data/box.npz [--anisotropic] [--slide-fraction F]
    jaxcontact dacm train --data data/box.npz --out ckpt/box [--preset best|paper] [--clf-epochs N --time-budget S ...]
    jaxcontact dacm evaluate --checkpoint ckpt/box --throws 100 --seed 1 --json [--anisotropic]
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _log(*a):
    print(*a, file=sys.stderr, flush=True)


def _x64() -> bool:
    import jax

    return bool(jax.config.jax_enable_x64)


def run_generate(args) -> int:
    from ..cliargs import check_memory, trajectory_bytes
    from . import data as D

    # the trajectories of all throws are kept (two copies while they are joined) until the
    # contact instances are extracted: refuse what cannot fit before simulating
    check_memory(trajectory_bytes(args.throws, args.steps, 13, 8 if _x64() else 4),
                 f"dacm generate --throws {args.throws} --steps {args.steps}", "use fewer --throws or --steps")
    t0 = time.perf_counter()
    d, _ = D.generate(args.shape, args.throws, args.seed, anisotropic=args.anisotropic, steps=args.steps,
                      slide_fraction=args.slide_fraction, progress=not args.no_progress)
    D.save(args.out, d)  # args.out ends in .npz (cliargs.output_npz): the file written is exactly this one
    s = D.summary(d)
    s["seconds"] = round(time.perf_counter() - t0, 1)
    _log(f"wrote {args.out}")
    print(json.dumps(s, indent=1))
    return 0


def data_record(data_path, ckpt_dir, d: dict) -> dict:
    """What a checkpoint records of its training data: never an absolute path. ``data_file`` is
    relative to the checkpoint directory; the file is identified by its SHA-256, and the seeds of its
    throws (``dacm generate --seed``; ``chain-data --seed`` for the tip throws) are kept so that
    evaluate can say whether its test throws are fresh."""
    import os
    from pathlib import Path

    from ..files import file_sha256

    h = file_sha256(data_path)
    rel = os.path.relpath(Path(data_path).resolve(), Path(ckpt_dir).resolve())
    seed = lambda k: int(d[k]) if k in d else None
    return {"data_file": Path(rel).as_posix(), "data_file_relative_to": "checkpoint directory", "data_sha256": h,
            "data_seed": seed("seed"), "data_tip_seed": seed("tip_seed"),
            "data_slide_fraction": float(d["slide_fraction"]) if "slide_fraction" in d else 0.0}


TRAIN_RECIPE_FLAGS = ("friction_target", "inputs", "max_rest_per_throw", "max_steady_per_throw", "patience",
                      "friction_head", "regressor_weight", "clf_epochs", "reg_epochs", "hidden_scale", "time_limit",
                      "symmetry")


def train_recipe(args) -> dict:
    """The recipe of ``dacm train``'s arguments: ``--preset`` with the flags given explicitly on
    top (``recipes.resolve``)."""
    from . import recipes as R

    over = {k: getattr(args, k, None) for k in TRAIN_RECIPE_FLAGS}
    if getattr(args, "time_budget", None) is not None:  # explicit total budget: no per-instance part
        over["budget"], over["budget_per_kilo"] = args.time_budget, 0.0
    return R.resolve(args.preset, **over)


def run_train(args) -> int:
    from ..checkpoint import RunDirectory, TrainingInterrupted
    from . import data as D
    from . import recipes as R
    from . import train as T

    run = RunDirectory(args.out, args.force)  # refuses a non-empty --out (without --force) before anything else
    d = D.load(args.data)
    rec = train_recipe(args)
    symmetry = R.symmetry_for(rec, int(d["dim"]), bool(d["anisotropic"]))  # refuses a bad setting before training
    hp = R.hyperparams(rec, str(d["shape"]))
    progress = not args.no_progress
    if progress:
        _log(f"dacm train: preset {args.preset} ({', '.join(f'{k}={v}' for k, v in rec.items())})")
    t0 = time.perf_counter()
    interrupted = None
    try:
        dp, pp, meta = T.train(d, hp, seed=args.seed, time_limit=rec["time_limit"], log=_log,
                               friction_target=rec["friction_target"], max_rest_per_throw=rec["max_rest_per_throw"],
                               inputs=rec["inputs"], max_steady_per_throw=rec["max_steady_per_throw"],
                               patience=rec["patience"], friction_head=rec["friction_head"],
                               regressor_weight=rec["regressor_weight"], time_budget=rec["budget"],
                               time_budget_per_kilo=rec["budget_per_kilo"], progress=progress)
    except TrainingInterrupted as err:
        if err.partial is None:
            raise
        interrupted = err
        dp, pp, meta = err.partial
    meta["train_seconds"] = round(time.perf_counter() - t0, 1)
    meta.update(data_record(args.data, args.out, d))
    meta["preset"] = args.preset
    meta["symmetry"] = symmetry
    if interrupted is not None:
        stop = meta["interrupted"]
        reached = {"network": stop["network"], "epoch": stop["epoch"],
                   "untrained_networks": len(stop["untrained_networks"])}
        T.save_checkpoint(args.out, dp, pp, meta, "interrupted", reached, run=run)
        raise TrainingInterrupted(f"{interrupted} (best-so-far checkpoint saved to {run.where()})") from None
    T.save_checkpoint(args.out, dp, pp, meta, "finished", {"networks": len(meta["report"]) * 3}, run=run)
    _log(f"wrote {run.out} ({meta['train_seconds']} s)")
    print(json.dumps(meta["report"], indent=1))
    return 0


def run_evaluate(args) -> int:
    from ..checkpoint import status_warning
    from . import evaluate as E
    from . import train as T

    dl, dp, pl, pp, meta = T.load_checkpoint(args.checkpoint)
    warning = status_warning(args.checkpoint, meta)
    if warning:
        _log(warning)
    t0 = time.perf_counter()
    res, _ = E.evaluate(dl, dp, pl, pp, meta, args.throws, args.seed,
                        anisotropic=True if args.anisotropic else None, steps=args.steps, log=_log,
                        dissipative=args.dissipative, symmetry=args.symmetry)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["checkpoint"] = str(args.checkpoint)
    if res["test_throws"]["fresh"] is False:
        _log(f"warning: --seed {args.seed} is the seed of the checkpoint's training throws: the test throws are "
             "not fresh (choose another --seed)")
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        tm, u = res["trajectory"], res["units"]
        tt = res["test_throws"]
        print(f"test throws: {tt['throws']} x {tt['steps']} steps, seed {tt['seed']}; training data seed "
              f"{tt['training_data_seed']}; fresh: {tt['fresh']}")
        print(f"{'metric':<20}{'GT mean':>10}{'PDD err':>10}{'dacm err':>10}  unit")
        for k in ("final_position", "final_orientation", "first_impulse"):
            print(f"{k:<20}{tm['gt_mean'][k]:>10.3f}{tm['pdd'][k]:>10.3f}{tm['dacm'][k]:>10.3f}  {u[k].split(' (')[0]}")
        for k, v in res["one_step"].items():
            print(k, {a: (round(b, 3) if isinstance(b, float) else b) for a, b in v.items()})
        if "anisotropic_directions" in res:
            a = res["anisotropic_directions"]
            print("directions (deg)", a["directions_deg"])
            for n in ("gt", "dacm", "pdd"):
                print(n, "(m)", [round(x, 3) for x in a[n]])
        print("out of training range:", res["out_of_range"])
    return 0


def register(sub) -> None:
    from ..cliargs import nonnegative_float, nonnegative_int, output_npz, positive_float, positive_int, unit_interval
    from ..simulate import SHAPES

    p = sub.add_parser("dacm", help="data-augmented contact model: generate data, train, evaluate")
    s = p.add_subparsers(dest="dacm_command", required=True)
    g = s.add_parser("generate", help="ground-truth contact instances from Coulomb-LCP throws")
    g.add_argument("--shape", choices=SHAPES, default="box", help="body thrown (0.1 m box, prism, link, ...)")
    g.add_argument("--anisotropic", action="store_true", help="mu = (0.75, 1.5) along world (x, y)")
    g.add_argument("--throws", type=positive_int, default=150, help="random throws simulated (throws)")
    g.add_argument("--steps", type=positive_int, default=800, help="steps per throw (steps of 0.002 s)")
    g.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the throws (integer)")
    g.add_argument("--slide-fraction", type=unit_interval, default=0.0,
                   help="share of the throws replaced by sliding throws (low, near-flat, fast horizontal "
                        "launches; 1 = only sliding throws; default 0 = the paper's random throws)")
    g.add_argument("--out", type=output_npz, required=True, help="data file to write (.npz; appended if missing)")
    g.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    g.set_defaults(func=run_generate)
    from . import recipes as R

    t = s.add_parser("train", help="train the classifiers, regressors and the PDD baseline",
                     description="Train dacm and PDD. Defaults: the best measured recipe (--preset best = default); "
                                 "--preset paper is the paper's setup (Fig. 3). Explicit flags override the preset.",
                     epilog="presets:\n  " + "\n  ".join(R.describe(n) for n in ("best", "paper")) +
                            "\n  default: the same as best")
    t.add_argument("--data", required=True, help="data file of dacm generate (.npz)")
    t.add_argument("--out", required=True,
                   help="checkpoint directory; refused if it exists and is not empty, unless --force")
    t.add_argument("--force", action="store_true",
                   help="replace an existing checkpoint in --out, once the new one is complete (until then the "
                        "new one goes to <out>.partial)")
    t.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the network initialisation and batches (integer)")
    t.add_argument("--preset", choices=tuple(R.PRESETS), default="default",
                   help="named recipe (listed below); default: best")
    t.add_argument("--no-progress", action="store_true", help="no progress bars / time estimates on stderr")
    t.add_argument("--clf-epochs", type=positive_int, default=None, help="classifier epoch cap (paper: 100)")
    t.add_argument("--reg-epochs", type=positive_int, default=None, help="regressor / PDD epoch cap (paper: 1000)")
    t.add_argument("--hidden-scale", type=positive_float, default=None, help="scale the layer widths")
    t.add_argument("--time-limit", type=nonnegative_float, default=None,
                   help="seconds per network (stop epochs early; 0: off)")
    t.add_argument("--time-budget", type=nonnegative_float, default=None,
                   help="seconds for all networks together, shared by their cost (0: off; best: grows with the "
                        "training instances, see presets)")
    t.add_argument("--symmetry", choices=("auto", "1", "2", "4"), default=None,
                   help="symmetry averaging the checkpoint's law uses (evaluate --symmetry k overrides it): auto = 4 "
                        "for isotropic 3D data, 2 anisotropic, 1 in 2D (paper: 1)")
    t.add_argument("--friction-target", choices=("absolute", "ratio"), default=None,
                   help="absolute: p_f (paper); ratio: p_f / p_n0 of the frictionless LCP (improvement)")
    t.add_argument("--max-rest-per-throw", type=nonnegative_int, default=None,
                   help="keep at most this many resting instances per throw (0: all)")
    t.add_argument("--inputs", choices=("paper", "physics", "both", "coulomb"), default=None,
                   help="dacm network inputs: paper, physics-derived (improvement), both, or "
                        "coulomb (physics + per-vertex sliding-friction inputs, second improvement)")
    t.add_argument("--max-steady-per-throw", type=nonnegative_int, default=None,
                   help="keep at most this many steady-sliding instances per throw (0: all)")
    t.add_argument("--patience", type=nonnegative_int, default=None,
                   help="early stopping: epochs without a better loss on held-out throws (0: off)")
    t.add_argument("--friction-head", choices=("plain", "residual"), default=None,
                   help="plain: the network is the friction regressor (paper); residual: a fitted sliding-"
                        "Coulomb term of the coulomb inputs plus the network (needs --inputs coulomb "
                        "--friction-target ratio; improvement)")
    t.add_argument("--regressor-weight", choices=("uniform", "pn0"), default=None,
                   help="uniform: every dynamic instance alike (paper); pn0: squared errors weighted by the "
                        "reference normal impulse, so impacts count by their impulse (needs --friction-target "
                        "ratio; improvement)")
    t.set_defaults(func=run_train)
    e = s.add_parser("evaluate", help="GT vs dacm vs PDD on fresh test throws",
                     description="Simulates fresh random test throws (--seed; a warning if it is the seed of the "
                                 "checkpoint's training data) with the ground truth, dacm and PDD. Units: final "
                                 "position m, final orientation rad, first impulse N s, time step 0.002 s.")
    e.add_argument("--checkpoint", required=True, help="checkpoint directory written by dacm train (required)")
    e.add_argument("--throws", type=positive_int, default=100, help="fresh test throws (throws)")
    e.add_argument("--steps", type=positive_int, default=800, help="steps per test throw (steps of 0.002 s)")
    e.add_argument("--seed", type=nonnegative_int, default=1,
                   help="seed of the test throws; differs from dacm generate's default 0 so that they are fresh")
    e.add_argument("--anisotropic", action="store_true", help="add the 8-direction distances (m)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--dissipative", action="store_true",
                   help="scale the learned friction so it adds no kinetic energy (improvement)")
    e.add_argument("--symmetry", type=int, choices=(1, 2, 4), default=None,
                   help="average dacm's predictions over this many rotations about the ground normal "
                        "(2: any friction pyramid, anisotropic too; 4: isotropic only; 3D) (rotations; "
                        "default: the checkpoint's setting, recorded by dacm train --symmetry)")
    e.set_defaults(func=run_evaluate)
    __import__("jaxcontact.dacm.chain_cli", fromlist=["register_chain"]).register_chain(s)  # issue 6: Algorithm 2
