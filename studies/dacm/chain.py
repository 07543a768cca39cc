"""dacm Algorithm 2 on the paper's 3-link chain: trajectory errors and G evaluations.

    python -m studies.dacm chain --checkpoint CKPT [--swings 8 --steps 500] [--no-dissipative]
        [--also LABEL=CKPT ...] [--also-nondissipative] [--work DIR]

CKPT is a dacm checkpoint trained on random throws of the isolated link only, made with the
improved recipe of docs/dacm.md ("_plus"):

    jaxcontact --x64 dacm generate --shape link --throws 300 --seed 0 --out link.npz
    jaxcontact --x64 dacm train --preset paper --data link.npz --out CKPT --friction-target ratio \
        --inputs physics --max-rest-per-throw 20 --max-steady-per-throw 20 --patience 20 --time-limit 90

Ablation checkpoint with chain-like (tip-first) throws of the isolated link added to the data:

    jaxcontact --x64 dacm chain-data --data link.npz --tip-throws 150 --seed 0 --out link_tip.npz
    jaxcontact --x64 dacm train --data link_tip.npz --out CKPT_TIP ...same options...
    python -m studies.dacm chain --checkpoint CKPT --also "random + tip throws=CKPT_TIP"

(without --checkpoint the first two commands are run into ``--work``, default ``work/dacm``, as
link.npz and link_ckpt; a checkpoint name is looked up in ``--work``). The dacm law is
the checkpoint's (its inputs and friction target from meta.json) with the dissipative setting
of ``dacm evaluate --dissipative`` (``--no-dissipative`` turns it off). Two configurations of the
root finder are measured on the same swings: the initial joint force of the paper's eq. 7
("eq7") and the root of G without contact ("free", the default); PDD and the exact Coulomb law
as H for comparison. ``--also LABEL=CKPT`` adds other checkpoints' dacm (free init, same
setting) as ablation columns, ``--also-nondissipative`` the main checkpoint without the
dissipative setting. Writes studies/dacm/results/dacm_chain.json and .md. docs/chains.md has the
measured results.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

from ..common import default_work, in_work

RESULTS = Path(__file__).resolve().parent / "results"
GEN = ["--shape", "link", "--throws", "300", "--seed", "0"]
TRAIN = ["--preset", "paper", "--friction-target", "ratio", "--inputs", "physics", "--max-rest-per-throw", "20",
         "--max-steady-per-throw", "20", "--patience", "20", "--time-limit", "90"]


def ensure_checkpoint(path, work):
    if path is not None:
        return in_work(path, work), None
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    ckpt = work / "link_ckpt"
    if not (ckpt / "meta.json").is_file():
        cmd = [sys.executable, "-m", "jaxcontact.cli", "--x64", "dacm"]
        subprocess.run(cmd + ["generate", *GEN, "--out", str(work / "link.npz")], check=True)
        subprocess.run(cmd + ["train", "--data", str(work / "link.npz"), "--out", str(ckpt), *TRAIN], check=True)
    return ckpt, "generated: jaxcontact --x64 dacm generate " + " ".join(GEN) + "; dacm train " + " ".join(TRAIN)


def fmt(v, nd=4):
    return "–" if v is None else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def main(argv=None, prog="studies.dacm chain") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=None, help="a link checkpoint (a name is looked up in --work)")
    ap.add_argument("--work", default=default_work("dacm"), help="work directory (default %(default)s)")
    ap.add_argument("--swings", type=int, default=8)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-dissipative", action="store_true", help="dacm law without the dissipative setting")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=CKPT",
                    help="another checkpoint's dacm as an ablation column (free init)")
    ap.add_argument("--also-nondissipative", action="store_true",
                    help="ablation column: the main checkpoint's dacm without the dissipative setting")
    ap.add_argument("--md-only", action="store_true", help="re-render the .md from the saved .json")
    ap.add_argument("--made-by", default=None,
                    help="the commands that made a given --checkpoint (recorded; default: rebuilt from its meta.json, "
                         "which does not record --time-limit: 90 s is written)")
    args = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.dacm.chain_cli import evaluate_chain

    diss = not args.no_dissipative
    if args.md_only:  # re-render the .md from the saved .json (and the checkpoint's meta.json)
        out = json.loads((RESULTS / "dacm_chain.json").read_text())
        ckpt = out.get("checkpoint", out["runs"]["free"]["checkpoint"])
        if args.made_by:
            out["checkpoint_made_by"] = args.made_by
            (RESULTS / "dacm_chain.json").write_text(json.dumps(out, indent=1))
        return write_md(out, json.loads((Path(ckpt) / "meta.json").read_text()))
    ckpt, how = ensure_checkpoint(args.checkpoint, args.work)
    meta = json.loads((ckpt / "meta.json").read_text())
    t0 = time.perf_counter()
    runs = {}
    for init in ("free", "eq7"):
        runs[init] = evaluate_chain(ckpt, args.steps, args.swings, args.seed, init=init, dissipative=diss,
                                    pdd=(init == "free"))
    ablations = {}
    extra = [(a.split("=", 1)[0], str(in_work(a.split("=", 1)[1], args.work)), diss) for a in args.also]
    if args.also_nondissipative:
        extra.append(("not dissipative", str(ckpt), False))
    for label, path, d in extra:
        r = evaluate_chain(path, args.steps, args.swings, args.seed, init="free", dissipative=d, reference=False)
        m = json.loads((Path(path) / "meta.json").read_text())
        ablations[label] = {"checkpoint": path, "dissipative": d, "data_throws": m.get("data_throws"),
                            "train_seconds": m.get("train_seconds"), "inputs": r["inputs"],
                            "friction_target": r["friction_target"], **r["models"]["dacm"]}
    flags = (" --no-dissipative" if args.no_dissipative else "") + "".join(f" --also {shlex.quote(a)}" for a in args.also) \
        + (" --also-nondissipative" if args.also_nondissipative else "")
    out = {
        "command": f"python -m {prog} --checkpoint {ckpt} --swings {args.swings} --steps {args.steps} "
                   f"--seed {args.seed}{flags}",
        "ablations": ablations,
        "checkpoint_made_by": how or args.made_by or "given", "checkpoint_report": meta.get("report"),
        "checkpoint_train_seconds": meta.get("train_seconds"), "machine": "2 shared CPU cores (load varies)",
        "seconds": round(time.perf_counter() - t0, 1), "runs": runs,
    }
    out["checkpoint"] = str(ckpt)
    out["checkpoint_recipe"] = recipe(meta, ckpt)
    out["swings"], out["steps"], out["dissipative"] = args.swings, args.steps, diss
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dacm_chain.json").write_text(json.dumps(out, indent=1))
    return write_md(out, meta)


def recipe(meta, ckpt=None) -> str:
    """The ``dacm train`` options recorded in a checkpoint's meta.json (``data_file`` is relative to
    the checkpoint directory ``ckpt`` when the checkpoint says so)."""
    opts = [("--friction-target", "friction_target"), ("--inputs", "inputs"), ("--max-rest-per-throw", "max_rest_per_throw"),
            ("--max-steady-per-throw", "max_steady_per_throw"), ("--patience", "patience")]
    o = " ".join(f"{f} {meta[k]}" for f, k in opts if meta.get(k) is not None)
    train = f"jaxcontact --x64 dacm train --preset {meta.get('preset', 'paper')} --data {meta.get('data_file')} --out CKPT {o} --seed {meta.get('seed')} --time-limit 90"
    data = Path(str(meta.get("data_file")))
    if ckpt is not None and meta.get("data_file_relative_to") == "checkpoint directory":
        data = Path(ckpt) / data
    if not data.is_file():
        return train
    import numpy as np

    with np.load(data) as z:
        n = int(z["n_throws"]) - (int(z["tip_throws"]) if "tip_throws" in z.files else 0)
        gen = f"jaxcontact --x64 dacm generate --shape {z['shape']} --throws {n} --seed {int(z['seed'])}"
        if "tip_throws" in z.files:
            gen += (f" --out BASE; jaxcontact --x64 dacm chain-data --data BASE --tip-throws {int(z['tip_throws'])} "
                    f"--tip-steps {int(z['tip_steps'])} --seed {int(z['tip_seed'])}")
    return f"{gen} --out {data}; {train}"


def write_md(out, meta) -> int:
    runs, ablations = out["runs"], out["ablations"]
    ckpt, how = out.get("checkpoint", runs["free"]["checkpoint"]), out["checkpoint_made_by"]
    diss = out.get("dissipative", runs["free"]["dissipative"])
    swings, steps = out.get("swings", runs["free"]["swings"]), out.get("steps", runs["free"]["steps"])
    gt = runs["free"]["ground_truth"]
    lines = [
        "# dacm Algorithm 2 on the 3-link chain",
        "",
        f"Command: `{out['command'].replace('python benchmarks/dacm_chain.py', 'python -m studies.dacm chain')}` "
        f"({out['seconds']} s). Checkpoint: `{ckpt}` "
        f"(isolated link only, {meta.get('data_throws')} throws, {meta.get('train_seconds')} s of training, "
        f"friction target {meta.get('friction_target')}, inputs {meta.get('inputs', 'paper')}); "
        f"dacm law {'dissipative' if diss else 'not dissipative'}. Checkpoint made by: "
        f"{how if how != 'given' else recipe(meta, ckpt)}.",
        "",
        f"{swings} swings × {steps} steps of 2 ms: swing 0 released from horizontal at rest (the paper's), "
        "the others from random nearby configurations (joint angles ±0.3 rad, rates ±1 rad/s). Pin 0.45 m above "
        "the ground; links 0.2 × 0.05 × 0.05 m, 0.185 kg; μ = 0.18. Errors are against the ground truth (joints and "
        "Coulomb contact of every link in one LCP), averaged over swings (and steps, joints for the means).",
        "",
        f"Ground truth: first distal contact at steps {gt['first_contact_step']}, mean first impulse "
        f"{gt['first_contact_impulse_mean']:.4f} N·s, distal link in contact in {100 * gt['distal_contact_steps_fraction']:.1f} % "
        f"of the steps, upstream links never closer than {gt['upstream_min_clearance']:.3f} m to the ground "
        f"({gt['swings_with_upstream_contact']} swings with upstream contact), joint anchors at most "
        f"{1000 * gt['max_joint_separation']:.2f} mm apart.",
        "",
    ]
    keys = [
        ("joint_angle_error_mean", "joint angle error, mean (rad)"),
        ("joint_angle_error_at_first_contact_plus_50", "joint angle error, first contact + 50 steps (rad)"),
        ("joint_angle_error_final", "joint angle error, final (rad)"),
        ("distal_position_error_mean", "distal position error, mean (m)"),
        ("distal_position_error_at_first_contact_plus_50", "distal position error, first contact + 50 steps (m)"),
        ("distal_position_error_final", "distal position error, final (m)"),
        ("distal_orientation_error_mean", "distal orientation error, mean (rad)"),
        ("first_contact_impulse_error", "first contact impulse error ‖P − P_GT‖ (N·s)"),
        ("g_evaluations_mean", "G evaluations per step, mean"),
        ("g_evaluations_mean_contact_steps", "G evaluations per contact step, mean"),
        ("g_evaluations_worst", "G evaluations per step, worst"),
        ("converged_fraction", "converged steps (fraction)"),
        ("failed_steps", "failed steps"),
        ("diverged_swings", "diverged swings (excluded from the error means)"),
    ]
    cols = [("free", "exact_coulomb"), ("free", "dacm"), ("free", "pdd"), ("eq7", "exact_coulomb"), ("eq7", "dacm")]
    lines.append("| metric | " + " | ".join(f"H = {m} ({i} init)" for i, m in cols) + " |")
    lines.append("|---" * (len(cols) + 1) + "|")
    for k, label in keys:
        lines.append(f"| {label} | " + " | ".join(fmt(runs[i]["models"][m][k]) for i, m in cols) + " |")
    if ablations:
        labs = list(ablations)
        lines += ["", "Ablations (free init, H = dacm):", "",
                  "| metric | " + " | ".join(f"dacm: {a}" for a in labs) + " |", "|---" * (len(labs) + 1) + "|"]
        for k, label in keys:
            lines.append(f"| {label} | " + " | ".join(fmt(ablations[a][k]) for a in labs) + " |")
        lines.append("")
        for a in labs:
            am_path = Path(ablations[a]["checkpoint"]) / "meta.json"
            am = json.loads(am_path.read_text()) if am_path.is_file() else {}
            lines.append(f"* {a}: `{ablations[a]['checkpoint']}` ({ablations[a]['data_throws']} throws, "
                         f"{ablations[a]['train_seconds']} s of training, inputs {ablations[a]['inputs']}, "
                         f"dissipative {ablations[a]['dissipative']})" + (f": `{recipe(am)}`" if am else ""))
    lines += [
        "",
        "H = exact_coulomb is Algorithm 2 with the distal link's exact Coulomb LCP: it isolates the error of the "
        "split and of the 0.5 % root tolerance from the learned contact law's. \"free\" starts the root finder at the "
        "root of G without contact (−A⁻¹c); \"eq7\" at the paper's eq. 7 (the force stopping the upstream joint point).",
    ]
    (RESULTS / "dacm_chain.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0

