"""Which schedule is the default: every measurement of the named schedules (``sysid.SCHEDULES``) in
the two settings of issue 41, gathered from the results files that made them.

    python -m studies.sysid.schedule_choice \\
        --noisy validation:random_start:work/sysid/val_noisy_rs_30.json ... \\
        --random-starts validation:work/sysid/val_rs_rsn_0.json ...

``--noisy ROLE:SCHEDULE:FILE``: a ``studies.sysid.noisy`` results file (1 mm noise, 20 throws, the
issue's start) of that named schedule. ``--random-starts ROLE:FILE``: a
``benchmarks.sysid_random_starts`` results file (noise-free, random starts); every ``schedule:NAME``
mode in it is counted. ROLE says what the run was for: ``validation`` (the choice was made on
it), ``report`` (fresh seeds, run after the choice), ``earlier`` (measured before this choice, in
the repository). The targets: noisy — μ within 1 %, height within 1 mm, ε at most 4.25 % on the
mean (issue 23); random starts — μ, ε and the worst vertex within 1 %, the height within 1 mm.
Writes studies/sysid/results/schedule_choice.{json,md} (``--out`` prefix).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

import numpy as np

from ..common import REPO, command_line, write_results

OUT = Path(__file__).resolve().parent / "results" / "schedule_choice"


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()


def rel(path: str) -> str:
    p = Path(path).resolve()
    try:
        return p.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def noisy_row(role, name, path) -> dict:
    doc = json.loads(Path(path).read_text())
    runs = [r for r in doc["runs"] if r.get("links", 0) == 0]
    e = lambda k, a: np.array([r["errors"][k][a] for r in runs])
    mu, eps, h, v = e("mu", "rel"), e("restitution", "rel"), e("ground", "abs"), e("vertices", "rel")
    return {"setting": "1 mm noise", "role": role, "schedule": name, "file": rel(path), "command": doc["command"],
            "seeds": [r["seed"] for r in runs], "mu": [mu.mean(), mu.max()], "restitution": [eps.mean(), eps.max()],
            "ground_m": [h.mean(), h.max()], "vertices": [v.mean(), v.max()],
            "meets_target": bool(mu.max() <= 0.01 and h.max() <= 1e-3 and eps.mean() <= 0.0425),
            "rollouts_mean": float(np.mean([r["rollouts"] for r in runs])),
            "wall_s_mean": float(np.mean([r["wall_s"] for r in runs]))}


def random_rows(role, path) -> list:
    doc = json.loads(Path(path).read_text())
    out = []
    for mode, runs in doc["runs"].items():
        if not mode.startswith("schedule:") or not runs:
            continue
        out.append({"setting": "random starts, noise-free", "role": role, "schedule": mode.split(":", 1)[1],
                    "file": rel(path), "command": doc["command"], "data": doc.get("data"),
                    "starts": [r["start"] for r in runs], "recovered": int(sum(bool(r["recovered"]) for r in runs)),
                    "rollouts_mean": float(np.mean([r["rollouts"] for r in runs if r["rollouts"] is not None])),
                    "wall_s_mean": float(np.mean([r["wall_s"] for r in runs]))})
    return out


def render(doc) -> str:
    L = ["# Which sysid schedule is the default (issue 41)", "", f"Command: `{doc['command']}`", "",
         f"Commit: {doc['commit']}. Machine: 2 CPU cores shared with other work (wall seconds vary with the load;"
         " rollouts do not).", "",
         "## 1 mm position noise (20 throws, the issue's start; target μ ≤ 1 %, height ≤ 1 mm on every seed, "
         "ε ≤ 4.25 % on the mean)", "",
         "| schedule | role | seeds | μ err mean / worst | ε err mean / worst | height err mean / worst | "
         "worst-vertex err mean / worst | target | rollouts mean | wall s mean | file |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        if r["setting"] != "1 mm noise":
            continue
        pc = lambda a: f"{a[0]:.2%} / {a[1]:.2%}"
        L.append(f"| {r['schedule']} | {r['role']} | {','.join(map(str, r['seeds']))} | {pc(r['mu'])} | "
                 f"{pc(r['restitution'])} | {r['ground_m'][0] * 1e3:.2f} / {r['ground_m'][1] * 1e3:.2f} mm | "
                 f"{pc(r['vertices'])} | {'met' if r['meets_target'] else 'not met'} | {r['rollouts_mean']:.0f} | "
                 f"{r['wall_s_mean']:.0f} | {r['file']} |")
    L += ["", "## Random starts, noise-free (20 throws; μ ~ U(0.05, 1), ε ~ U(0, 0.8), height ±2 cm, vertices ±20 %; "
              "recovered: μ, ε, worst vertex within 1 %, height within 1 mm)", "",
          "| schedule | role | data seed / start seed | starts | recovered | rollouts mean | wall s mean | file |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        if r["setting"] == "1 mm noise":
            continue
        seed = lambda flag: (re.search(flag + r" (\d+)", r["command"]) or [None, "?"])[1]
        seeds = f"{seed('--data-seed')} / {seed('--start-seed')}"
        starts = ",".join(map(str, r["starts"])) if len(r["starts"]) <= 10 else f"{len(r['starts'])} starts"
        L.append(f"| {r['schedule']} | {r['role']} | {seeds} | {starts} | {r['recovered']} of {len(r['starts'])} | "
                 f"{r['rollouts_mean']:.0f} | {r['wall_s_mean']:.0f} | {r['file']} |")
    L += ["", "Commands of each file:", ""] + [f"* {r['file']}: `{r['command']}`" for r in doc["rows"]]
    if doc.get("note"):
        L += ["", doc["note"]]
    return "\n".join(L) + "\n"


def main(argv=None, prog="studies.sysid.schedule_choice") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0])
    ap.add_argument("--noisy", action="append", default=[], metavar="ROLE:SCHEDULE:FILE")
    ap.add_argument("--random-starts", action="append", default=[], metavar="ROLE:FILE")
    ap.add_argument("--note", default="", help="a closing paragraph for the .md")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    rows = [noisy_row(*s.split(":", 2)) for s in a.noisy]
    for s in a.random_starts:
        rows += random_rows(*s.split(":", 1))
    doc = {"command": command_line(prog, argv), "commit": commit(), "rows": rows, "note": a.note}
    write_results(a.out, doc, render)
    print(render(doc))
    return 0


if __name__ == "__main__":
    main()
