"""The chain with what a user runs: `dacm generate` → `dacm train` (its defaults, or a --preset) →
`dacm chain` (its defaults), per data seed, recorded with the commands and the commit.

    python -m studies.dacm chain-defaults --runs 0:best:0,0:default:0,7:default:0 [--work DIR]

A run ``SEED:PRESET:SWINGS`` is

    jaxcontact dacm generate --shape link --throws 300 --seed SEED --out DIR/linkSEED.npz
    jaxcontact dacm train --data DIR/linkSEED.npz --out DIR/dSEED_PRESET [--preset PRESET]
    jaxcontact dacm chain --checkpoint DIR/dSEED_PRESET --seed SWINGS --json

(``default``: no ``--preset``; ``plus``: the study recipe ``_plus`` of docs/dacm.md and
docs/chains.md, ``--preset paper`` with ``PLUS_FLAGS``; no ``--x64``:
generate and train in float32 as a user runs them; ``dacm chain`` always runs in float64). A step
whose output is already in ``--work`` is not run again (the table says which). Writes
studies/dacm/results/chain_defaults.{json,md} (``--out`` prefix) after every run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from ..common import REPO, command_line, default_work, write_results

OUT = Path(__file__).resolve().parent / "results" / "chain_defaults"
METRICS = ("joint_angle_error_mean", "joint_angle_error_at_first_contact_plus_50", "joint_angle_error_final",
           "distal_position_error_mean", "distal_orientation_error_mean", "first_contact_impulse_error",
           "g_evaluations_mean", "converged_fraction")


PLUS_FLAGS = ["--preset", "paper", "--friction-target", "ratio", "--inputs", "physics", "--max-rest-per-throw", "20",
              "--max-steady-per-throw", "20", "--patience", "20", "--time-limit", "90"]


def preset_flags(preset: str) -> list[str]:
    return [] if preset == "default" else PLUS_FLAGS if preset == "plus" else ["--preset", preset]


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "jaxcontact"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    return head + (" (jaxcontact/ modified)" if dirty else "")


def parse_run(spec: str) -> tuple[int, str, int]:
    try:
        seed, preset, swings = spec.split(":")
        return int(seed), preset, int(swings)
    except ValueError:
        raise SystemExit(f"bad run {spec!r}: SEED:PRESET:SWINGS, e.g. 7:default:0") from None


def step(cmd: list[str], out: Path, capture: Path | None = None) -> dict:
    """Run ``jaxcontact`` + ``cmd`` unless ``out`` exists; the command as a user types it."""
    shown = "jaxcontact " + " ".join(cmd)
    if out.exists():
        return {"command": shown, "ran": False, "seconds": None}
    t0 = time.perf_counter()
    full = [sys.executable, "-m", "jaxcontact.cli", *cmd]
    if capture is None:
        subprocess.run(full, check=True)
    else:
        with open(capture, "w") as f:
            subprocess.run(full, check=True, stdout=f)
    return {"command": shown, "ran": True, "seconds": round(time.perf_counter() - t0, 1)}


def render(doc) -> str:
    L = ["# The chain with the default commands", "", f"Command: `{doc['command']}`", "",
         f"Commit: {doc['commit']}. Machine: {doc['machine']}.", "",
         "Each row: `dacm generate --shape link --throws 300 --seed SEED`, `dacm train` with the preset shown "
         "(default: no --preset; plus: the study recipe `_plus`, `--preset paper` with its flags), `dacm chain --checkpoint CKPT --seed SWINGS` "
         "(8 swings x 500 steps of 2 ms, free init, not dissipative; float64). Generate and train in float32 "
         "(no --x64). exact Coulomb = Algorithm 2 with the exact law as H (the split's own error).", "",
         "| data seed | train preset | recipe | swings seed | role | joint angle err mean (rad) | +50 steps | final | "
         "distal pos mean (m) | distal orient mean (rad) | first impulse err (N s) | G evals | converged | "
         "exact Coulomb joint err mean (rad) | train s |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["runs"]:
        m = r["chain"]["models"]["dacm"]
        ex = r["chain"]["models"].get("exact_coulomb", {}).get("joint_angle_error_mean")
        f = lambda v, nd=4: "–" if v is None else f"{v:.{nd}f}"
        L.append(f"| {r['data_seed']} | {r['preset']} | {r['recipe']} | {r['swings_seed']} | {r['role']} | "
                 f"**{f(m['joint_angle_error_mean'])}** | {f(m['joint_angle_error_at_first_contact_plus_50'])} | "
                 f"{f(m['joint_angle_error_final'])} | {f(m['distal_position_error_mean'])} | "
                 f"{f(m['distal_orientation_error_mean'])} | {f(m['first_contact_impulse_error'])} | "
                 f"{m['g_evaluations_mean']:.2f} | {m['converged_fraction']:.2%} | {f(ex)} | {r['train_seconds']} |")
    L += ["", "Commands (a step marked 'found' was already in the work directory and not run again by this command):", ""]
    for r in doc["runs"]:
        for k in ("generate", "train", "chain"):
            s = r["steps"][k]
            L.append(f"* `{s['command']}`" + (f" ({s['seconds']} s)" if s["ran"] else " (found)"))
    if doc.get("note"):
        L += ["", doc["note"]]
    return "\n".join(L) + "\n"


def main(argv=None, prog="studies.dacm chain-defaults") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=None, help="comma-separated SEED:PRESET:SWINGS")
    ap.add_argument("--roles", default=None, help="comma-separated role per run (e.g. validation, report)")
    ap.add_argument("--work", default=str(Path(default_work("dacm")) / "chain_defaults"))
    ap.add_argument("--out", default=str(OUT), help="results prefix (.json, .md)")
    ap.add_argument("--note", default=None, help="a closing paragraph (recorded in the .json)")
    ap.add_argument("--render-only", action="store_true", help="re-render the .md from the saved .json (with --note)")
    args = ap.parse_args(argv)
    if args.render_only:
        doc = json.loads(Path(args.out).with_suffix(".json").read_text())
        if args.note is not None:
            doc["note"] = args.note
        write_results(args.out, doc, render)
        return 0
    if not args.runs:
        ap.error("--runs is required (except with --render-only)")
    runs = [parse_run(s) for s in args.runs.split(",")]
    roles = args.roles.split(",") if args.roles else [""] * len(runs)
    if len(roles) != len(runs):
        raise SystemExit("--roles needs one role per run")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    doc = {"command": command_line(prog, argv), "commit": commit(), "machine": "2 shared CPU cores (load varies)",
           "runs": []}
    for (seed, preset, swings), role in zip(runs, roles):
        data = work / f"link{seed}.npz"
        ckpt = work / f"d{seed}_{preset}"
        chain = work / f"d{seed}_{preset}.chain_s{swings}.json"
        steps = {"generate": step(["dacm", "generate", "--shape", "link", "--throws", "300", "--seed", str(seed),
                                   "--out", str(data), "--no-progress"], data)}
        steps["train"] = step(["dacm", "train", "--data", str(data), "--out", str(ckpt), "--no-progress"]
                              + preset_flags(preset), ckpt / "meta.json")
        steps["chain"] = step(["dacm", "chain", "--checkpoint", str(ckpt), "--seed", str(swings), "--json"], chain, chain)
        meta = json.loads((ckpt / "meta.json").read_text())
        res = json.loads(chain.read_text())
        doc["runs"].append({"data_seed": seed, "preset": preset, "recipe": f"inputs {meta.get('inputs')}, {meta.get('friction_head', 'plain')} head", "swings_seed": swings,
                            "role": role, "train_seconds": meta.get("train_seconds"), "steps": steps,
                            "chain": {"ground_truth": res["ground_truth"],
                                      "models": {k: {m: v[m] for m in METRICS} for k, v in res["models"].items()}}})
        write_results(args.out, doc, render)
    print(render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
