"""Programs compiled, and compile seconds, by the users' commands (issue 49).

Each ``jaxcontact`` command runs in a fresh Python process, in-process there
(``jaxcontact.cli.main``), with ``jax.monitoring`` listeners on JAX's compile events:

* ``/jax/core/compile/backend_compile_duration`` — one event per program XLA compiles (a
  program is counted whether or not it would have come from the persistent cache; here the cache
  is off), its seconds summed as *backend* seconds;
* ``/jax/core/compile/jaxpr_trace_duration`` and ``.../jaxpr_to_mlir_module_duration`` — tracing
  and lowering, summed as *trace* and *lower* seconds.

A user's first run: the persistent compilation cache off (``JAX_ENABLE_COMPILATION_CACHE=false``,
no cache directory) and ``XLA_FLAGS`` unset (the tests' LLVM level 0 is not a user's setting).
The names of the compiled programs (the jitted function's name) are counted too, so that the
functions compiled most often can be found (``--names`` prints the top ones).

    python -m benchmarks compile_count                      # the four commands below
    python -m benchmarks compile_count --only impacts       # one of them
    python -m benchmarks compile_count --tag after          # results/compile_count_after.{json,md}
    python -m benchmarks compile_count --run -- simulate --scene stack:2 --steps 10 --out /tmp/s.npz

Commands (``JOBS``; run in a temporary directory; the real data from ``$JAXCONTACT_SHARED`` or
``../shared``): the README's main job (``contactnets train --tosses 16 --seed 0`` then
``contactnets evaluate``), ``impacts evaluate`` on the real planar impacts (split 0.3, seed 0),
``dacm train`` on a small ``dacm generate`` file, and ``simulate --scene heap:16``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BACKEND = "/jax/core/compile/backend_compile_duration"
TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"


def _impacts_dir() -> Path:
    shared = os.environ.get("JAXCONTACT_SHARED")
    root = Path(shared) if shared else REPO.parent / "shared"
    return root / "data" / "planar_impacts"


# name -> list of steps; each step is (argv of `jaxcontact`, measured?) — unmeasured steps prepare
# the inputs (the impacts split, the dacm data file) and are not counted
JOBS = {
    "contactnets": [
        (["contactnets", "train", "--tosses", "16", "--seed", "0", "--out", "out/cn"], True),
        (["contactnets", "evaluate", "--checkpoint", "out/cn"], True),
    ],
    "impacts": [
        (["impacts", "split", "--data", "{impacts}/impacts.npz", "--test-fraction", "0.3", "--seed", "0",
          "--out-dir", "split"], False),
        (["impacts", "evaluate", "--train", "split/train.npz", "--test", "split/test.npz", "--json"], True),
    ],
    "dacm": [
        (["dacm", "generate", "--throws", "12", "--steps", "300", "--seed", "0", "--out", "box.npz",
          "--no-progress"], False),
        (["dacm", "train", "--data", "box.npz", "--out", "ck", "--clf-epochs", "5", "--reg-epochs", "10",
          "--time-budget", "0", "--no-progress"], True),
    ],
    "simulate": [
        (["simulate", "--scene", "heap:16", "--out", "heap.npz", "--no-progress"], True),
    ],
}


def _user_env() -> dict:
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_in_process(argv: list[str], out_json: str | None) -> int:
    """Run ``jaxcontact argv`` here with the listeners; write the counts to ``out_json``."""
    import jax
    from jax import monitoring

    jax.config.update("jax_enable_compilation_cache", False)
    seconds = collections.Counter()
    programs = collections.Counter()
    names = collections.defaultdict(float)

    def on_duration(event, duration, **kw):
        if event == BACKEND:
            programs["backend"] += 1
            seconds["backend"] += duration
            programs["name:" + str(kw.get("fun_name", "?"))] += 1
            names[kw.get("fun_name", "?")] += duration
        elif event == TRACE:
            seconds["trace"] += duration
            programs["traces"] += 1
        elif event == LOWER:
            seconds["lower"] += duration

    monitoring.register_event_duration_secs_listener(on_duration)
    from jaxcontact.cli import main

    t0 = time.perf_counter()
    rc = main(argv)
    wall = time.perf_counter() - t0
    by_name = sorted(((k[5:], n, names[k[5:]]) for k, n in programs.items() if k.startswith("name:")),
                     key=lambda r: (-r[1], -r[2]))
    result = {"argv": argv, "rc": rc, "wall_s": wall, "programs": programs["backend"],
              "backend_s": seconds["backend"], "trace_s": seconds["trace"], "lower_s": seconds["lower"],
              "traces": programs["traces"],
              "by_name": [{"name": a, "programs": n, "backend_s": s} for a, n, s in by_name]}
    if out_json:
        Path(out_json).write_text(json.dumps(result, indent=1))
    return rc


def run_job(name: str, workdir: Path) -> list[dict]:
    rows = []
    for argv, measured in JOBS[name]:
        argv = [a.format(impacts=_impacts_dir()) for a in argv]
        if not measured:
            r = subprocess.run([sys.executable, "-m", "jaxcontact.cli", *argv], cwd=workdir, env=_user_env(),
                               capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"{' '.join(argv)} failed:\n{r.stderr[-2000:]}")
            continue
        counts = workdir / f"counts_{len(rows)}.json"
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "benchmarks", "compile_count", "--run", "--counts", str(counts),
                            "--", *argv], cwd=workdir, env=_user_env(), capture_output=True, text=True)
        process_wall = time.perf_counter() - t0
        if r.returncode:
            raise SystemExit(f"{' '.join(argv)} failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
        row = json.loads(counts.read_text())
        row["process_wall_s"] = process_wall
        row["command"] = "jaxcontact " + " ".join(argv)
        row["stdout"] = r.stdout
        rows.append(row)
    return rows


def _md(result: dict) -> str:
    from .common import md_machine

    lines = ["# Programs compiled by the users' commands", "",
             md_machine(result["machine"]), "",
             "First run: persistent compilation cache off, `XLA_FLAGS` unset (JAX's defaults). Each command a "
             "fresh process; programs = XLA backend compiles; seconds summed over the process (trace, lower, "
             "backend); wall = the command inside the process (`jaxcontact.cli.main`), process = with Python "
             "and imports.", "",
             "| job | command | programs | backend s | trace s | lower s | wall s | process s |",
             "|---|---|---|---|---|---|---|---|"]
    for job, rows in result["jobs"].items():
        for r in rows:
            lines.append(f"| {job} | `{r['command']}` | {r['programs']} | {r['backend_s']:.1f} | {r['trace_s']:.1f} | "
                         f"{r['lower_s']:.1f} | {r['wall_s']:.1f} | {r['process_wall_s']:.1f} |")
    lines += ["", "Most compiled functions per command (programs, backend s):", ""]
    for job, rows in result["jobs"].items():
        for r in rows:
            top = ", ".join(f"{b['name']} {b['programs']} ({b['backend_s']:.1f} s)" for b in r["by_name"][:12])
            lines.append(f"- `{r['command']}`: {top}")
    return "\n".join(lines) + "\n"


def _write(result: dict, results) -> None:
    """``results`` (``runner.Results``, tagged): this run's jobs, and the other jobs' rows already there."""
    out = dict(result)
    kept = results.load().get("jobs", {})  # a run of some jobs replaces those jobs' rows and keeps the others
    out["jobs"] = {**{k: v for k, v in kept.items() if k not in result["jobs"]}, **result["jobs"]}
    out.pop("provenance", None)
    results.write(out, _md(out))


def arguments(p):
    p.add_argument("--tag", default="", help="suffix of the results files (compile_count_<tag>.*)")
    p.add_argument("--names", type=int, default=15, help="print the N most compiled function names per command")
    p.add_argument("--run", action="store_true", help="run one jaxcontact command (after --) in this process")
    p.add_argument("--counts", default=None, help=argparse.SUPPRESS)
    p.add_argument("rest", nargs=argparse.REMAINDER)


def prepare(args, results) -> bool:
    """``--run -- ARGS``: one ``jaxcontact ARGS`` measured in this process (the jobs' child, or by hand); the
    run ends here (True)."""
    if not args.run:
        return False
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    if args.counts:
        rc = run_in_process(rest, args.counts)
    else:
        with tempfile.TemporaryDirectory() as d:
            rc = run_in_process(rest, str(Path(d) / "c.json"))
            row = json.loads((Path(d) / "c.json").read_text())
        print(f"{row['programs']} programs, backend {row['backend_s']:.1f} s, trace {row['trace_s']:.1f} s, "
              f"lower {row['lower_s']:.1f} s, wall {row['wall_s']:.1f} s", file=sys.stderr)
        for b in row["by_name"][:args.names]:
            print(f"  {b['programs']:4d} {b['backend_s']:7.2f} s  {b['name']}", file=sys.stderr)
    if rc:
        raise SystemExit(rc)
    return True


def run(args, results) -> None:
    """``python -m benchmarks compile_count [--only JOB,...] [--tag T]``: each job's rows into ``results`` (tagged)."""
    from .common import machine_info

    if args.rest:
        raise SystemExit(f"unrecognized arguments: {' '.join(args.rest)} (a jaxcontact command goes after --run --)")
    jobs = [j for j in args.only.split(",") if j]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        raise SystemExit(f"--only: unknown job {unknown[0]!r} (jobs: {', '.join(JOBS)})")
    results = results.tagged(args.tag)
    result = {"machine": machine_info("benchmarks.compile_count", command=args.command), "jobs": {}}
    for job in jobs:
        with tempfile.TemporaryDirectory() as d:
            rows = run_job(job, Path(d))
        for r in rows:
            r["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            r["git_commit"] = result["machine"].get("git_commit")
        result["jobs"][job] = rows
        for r in rows:
            print(f"{job}: {r['command']}\n  {r['programs']} programs, backend {r['backend_s']:.1f} s, trace "
                  f"{r['trace_s']:.1f} s, lower {r['lower_s']:.1f} s, wall {r['wall_s']:.1f} s "
                  f"(process {r['process_wall_s']:.1f} s)", flush=True)
            for b in r["by_name"][:args.names]:
                print(f"    {b['programs']:4d} {b['backend_s']:7.2f} s  {b['name']}", flush=True)
        _write(result, results)  # after every job: a later failure keeps the rows measured


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
