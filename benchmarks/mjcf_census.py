"""A census of public MJCF files: what MuJoCo compiles, what ``worlds.from_mujoco`` loads (strict and
``approximate=True``), every refusal bucketed, and whether each loaded world follows MuJoCo C.

    python -m benchmarks mjcf_census --root /tmp/corpus [--steps 100] [--tol 0.01] [--only SUBSTR[,SUBSTR...]]
        [--constraints hard|mujoco] [--out NAME]

``--root`` holds the corpus (every ``*.xml`` below it is tried; a file whose root element is not
``<mujoco>`` is an include fragment or another XML, counted apart; so is a file MuJoCo itself cannot
compile: a missing mesh, an LFS pointer). An optional ``ROOT/SOURCES.txt`` (lines ``subdir repo
commit paths...``) names where each part of the corpus came from; the results keep it. The corpus
is not part of the repository: only this script and its results (``benchmarks/results/
mjcf_census.{json,md}``, or ``--out NAME``: the results' stem, as ``--name``; ``--out-dir`` the folder).

Per file: MuJoCo compiles it? ``from_mujoco(model)`` loads it (strict), and with ``approximate=True``?
Every problem of a refusal is bucketed by its first words with names and numbers removed
(``bucket``). For a loaded file: ``worlds.rollout`` (float64) and ``mj_step`` (MuJoCo C, the file's
own options) run ``--steps`` steps from the same state (MuJoCo's reset state, qpos0 at rest) with
zero controls, and the largest distance between a moving body's centre of mass here and MuJoCo's
(``xipos`` after each step's ``mj_kinematics``; of the bodies folded into it, ``mjcf.body_groups``,
weighted by mass) over every step is the file's deviation; it *follows* when that is within ``--tol``
(10 mm); ``--constraints mujoco`` loads every world with MuJoCo's soft constraints (``worlds.soft``). Fixed bodies (welded to the world, world-body geoms) do not move in either and are left out.

Also a feature count on every compiled model (which geoms, joints, and body layouts the files have),
so that what blocks the most files can be read before it is the first refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections import Counter

import numpy as np

from .common import is_model

PREFIX = "unsupported in a jaxcontact world: "


def bucket(problem: str) -> str:
    """A refusal's sentence reduced to what it says, without the file's names and numbers:
    ``geom 'g' (sphere) of body 'b': a geom priority (...)`` -> ``geom (sphere): a geom priority``."""
    s = problem.strip()
    if s.startswith(PREFIX):
        s = s[len(PREFIX):]
    s = re.sub(r"'[^']*'|#\d+", "", s)
    head, sep, tail = s.partition(": ")
    if sep and len(head.split()) <= 8:
        kind = head.split()[0] if head.split() else ""
        what = re.search(r"\((sphere|capsule|cylinder|ellipsoid|box|mesh|plane|hfield|sdf)\)", head)
        head = kind + (f" ({what.group(1)})" if what else "")
        s = f"{head}: {tail.split(' (')[0]}"
    else:
        s = s.split(" (")[0]
    s = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", s)
    words = s.split()
    return " ".join(words[:10])


def problems_of(err: BaseException) -> list:
    """The sentences of a loader's refusal (``_check`` joins them by ``; ``), or the error's one line."""
    text = " ".join(str(err).split())
    if isinstance(err, ValueError) and text.startswith(PREFIX):
        return split_top(text[len(PREFIX):])
    return [f"{type(err).__name__}: {text}"]


def split_top(text: str) -> list:
    """``text`` split at each ``; `` outside parentheses (a refusal's sentences hold their own)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    out.append(text[start:])
    return [p for p in out if p]


def features(mujoco, m) -> list:
    """What a compiled model holds, as short names (one each, however many times)."""
    M = mujoco
    out = set()
    colliding = (np.asarray(m.geom_contype) != 0) | (np.asarray(m.geom_conaffinity) != 0)
    for g in range(m.ngeom):
        if colliding[g]:
            out.add("geom " + M.mjtGeom(m.geom_type[g]).name[len("mjGEOM_"):].lower())
            if m.geom_priority[g]:
                out.add("geom priority")
    for t in np.asarray(m.jnt_type):
        out.add("joint " + M.mjtJoint(t).name[len("mjJNT_"):].lower())
    for b in range(1, m.nbody):
        gs = [g for g in range(m.ngeom) if m.geom_bodyid[g] == b and colliding[g]]
        moving = m.body_weldid[b] != 0
        if moving and not gs:
            out.add("moving body without a colliding geom")
        if moving and len(gs) > 1:
            out.add("moving body of several colliding geoms")
        nj = int(np.sum(np.asarray(m.jnt_bodyid) == b))
        if nj > 1:
            out.add("body of several joints")
        if nj == 0 and moving:
            out.add("jointless body welded to a moving parent")
    if m.ntendon:
        out.add("tendon")
    if m.neq:
        out.add("equality")
    if m.nu:
        out.add("actuator")
    if np.any(np.asarray(m.dof_frictionloss) != 0):
        out.add("joint friction loss")
    return sorted(out)


def follow(mujoco, m, loaded, steps: int):
    """The largest distance (m) between a moving body's centre of mass here and MuJoCo's ``xipos``
    over ``steps`` steps from MuJoCo's reset state with zero controls, the run's seconds, whether
    it stayed finite, and the centres of mass here (steps + 1, N, 3)."""
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import mjcf

    scene, params, state, model = loaded
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj, _ = worlds.rollout(model, scene, params, state, steps)
    pos = np.asarray(traj.pos)  # (steps + 1, N, 3)
    seconds = time.perf_counter() - t0
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    # world body i holds MuJoCo's bodies groups[i] (jointless ones folded into their host): their centre of mass
    groups = mjcf.body_groups(m)
    moving = [i for i, g in enumerate(groups) if m.body_weldid[g[0]] != 0 and m.body_mocapid[g[0]] < 0]
    mass = [np.asarray(m.body_mass, float)[list(groups[i])] for i in moving]
    com = lambda: np.stack([w @ d.xipos[list(groups[i])] / w.sum() for i, w in zip(moving, mass)])
    worst = float(np.max(np.linalg.norm(pos[0, moving] - com(), axis=1))) if moving else 0.0
    for k in range(steps):
        d.ctrl[:] = 0.0
        mujoco.mj_step(m, d)
        mujoco.mj_kinematics(m, d)  # mj_step leaves the positions it started from in xipos
        if moving:
            worst = max(worst, float(np.max(np.linalg.norm(pos[k + 1, moving] - com(), axis=1))))
    finite = bool(np.all(np.isfinite(pos)))
    return (worst if finite else float("inf")), seconds, bool(jnp.isfinite(jnp.asarray(worst))), pos


def mujoco_causes(mujoco, m, pos, steps: int) -> dict:
    """What sets a file's deviation apart, from MuJoCo C runs alone (cheap beside ours): ``euler_m``, ours
    against MuJoCo C with the Euler integrator where the file names another (RK4, implicit: jaxcontact's
    step is semi-implicit Euler), and ``integrator_gap_m``, MuJoCo's own two runs apart; ``limit_steps``,
    the steps at which MuJoCo has a joint or tendon limit row active; ``max_penetration_m``, MuJoCo's
    deepest contact; ``started_past_limit``, whether a limited joint starts outside its range."""
    from jaxcontact.worlds import mjcf

    groups = mjcf.body_groups(m)
    moving = [i for i, g in enumerate(groups) if m.body_weldid[g[0]] != 0 and m.body_mocapid[g[0]] < 0]
    mass = [np.asarray(m.body_mass, float)[list(groups[i])] for i in moving]

    def run(integrator):
        mm = m
        old = int(mm.opt.integrator)
        mm.opt.integrator = integrator
        d = mujoco.MjData(mm)
        mujoco.mj_forward(mm, d)
        coms, limits, pen = [], 0, 0.0
        for _ in range(steps):
            mujoco.mj_step(mm, d)
            types = np.asarray(d.efc_type[:d.nefc])
            limits += bool(np.any((types == int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT))
                                  | (types == int(mujoco.mjtConstraint.mjCNSTR_LIMIT_TENDON))))
            pen = max(pen, max([-float(c.dist) for c in d.contact[:d.ncon]], default=0.0))
            mujoco.mj_kinematics(mm, d)
            coms.append(np.stack([w @ d.xipos[list(groups[i])] / w.sum() for i, w in zip(moving, mass)])
                        if moving else np.zeros((0, 3)))
        mm.opt.integrator = old
        return np.array(coms), limits, pen

    own, limits, pen = run(int(m.opt.integrator))
    out = {"integrator": mujoco.mjtIntegrator(int(m.opt.integrator)).name[len("mjINT_"):].lower(),
           "limit_steps": int(limits), "max_penetration_m": pen}
    q = np.asarray(m.qpos0, float)
    out["started_past_limit"] = bool(any(m.jnt_limited[j] and m.jnt_type[j] in (2, 3) and not
                                         (m.jnt_range[j, 0] <= q[m.jnt_qposadr[j]] <= m.jnt_range[j, 1])
                                         for j in range(m.njnt)))
    if moving and int(m.opt.integrator) != int(mujoco.mjtIntegrator.mjINT_EULER):
        euler, _, _ = run(int(mujoco.mjtIntegrator.mjINT_EULER))
        out["euler_m"] = float(np.max(np.linalg.norm(pos[1:, moving] - euler, axis=-1)))
        out["integrator_gap_m"] = float(np.max(np.linalg.norm(own - euler, axis=-1)))
    return out


def census_file(mujoco, path: str, steps: int, tol: float, timeout: float = 300.0, constraints: str = "hard") -> dict:
    from jaxcontact import worlds

    rec = {"file": path}
    if not is_model(path):
        rec["status"] = "not a model"
        return rec
    try:
        m = mujoco.MjModel.from_xml_path(path)
    except Exception as err:  # MuJoCo cannot compile it: a missing mesh, an include, an LFS pointer
        rec["status"] = "mujoco fails"
        rec["mujoco_error"] = " ".join(str(err).split())[:300]
        return rec
    rec["status"] = "compiled"
    rec["features"] = features(mujoco, m)
    rec["nbody"] = int(m.nbody)
    for mode, approximate in (("strict", False), ("approximate", True)):
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loaded = worlds.from_mujoco(m, approximate=approximate, constraints=constraints)
        except Exception as err:
            rec[mode] = {"loads": False, "problems": problems_of(err)[:50],
                         "buckets": sorted({bucket(p) for p in problems_of(err)})}
            continue
        rec[mode] = {"loads": True, "load_s": round(time.perf_counter() - t0, 3)}
        del loaded
        if steps and (mode == "strict" or not rec["strict"]["loads"]):
            rec[mode].update(follow_in_child(path, steps, tol, approximate, timeout, constraints))
    return rec


def follow_in_child(path: str, steps: int, tol: float, approximate: bool, timeout: float,
                    constraints: str = "hard") -> dict:
    """``follow`` of one file in its own process (a compile that takes too long, or a crash, costs
    that file alone): ``deviation_m``, ``follows``, ``run_s``; or ``run_error``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    cmd = [sys.executable, "-m", "benchmarks", "mjcf_census", "--follow", os.path.abspath(path), "--steps", str(steps),
           "--constraints", constraints]
    try:
        out = subprocess.run(cmd + (["--approximate"] if approximate else []), cwd=here, env=env, capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"follows": False, "run_error": f"timed out after {timeout:g} s (compiling and running {steps} steps)"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        tail = " ".join((out.stderr or out.stdout).split()[-40:])
        return {"follows": False, "run_error": f"exit {out.returncode}: {tail[:300]}"}
    got = json.loads(lines[-1])
    if "error" in got:
        return {"follows": False, "run_error": got["error"]}
    return {"follows": bool(got["deviation_m"] <= tol)} | {k: v for k, v in got.items() if k != "error"}


def follow_main(path: str, steps: int, approximate: bool, constraints: str = "hard") -> None:
    """The child of ``follow_in_child``: one JSON line."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact import worlds
    from jaxcontact.worlds.mjcf import require_mujoco

    mujoco = require_mujoco("benchmarks.mjcf_census")
    try:
        m = mujoco.MjModel.from_xml_path(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = worlds.from_mujoco(m, approximate=approximate, constraints=constraints)
        worst, seconds, _, pos = follow(mujoco, m, loaded, steps)
        print(json.dumps({"deviation_m": worst, "run_s": round(seconds, 2)} | mujoco_causes(mujoco, m, pos, steps)))
    except Exception as err:
        print(json.dumps({"error": f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"}))


def summarise(records, sources, steps, tol, command) -> dict:
    compiled = [r for r in records if r["status"] == "compiled"]
    out = {"command": command, "sources": sources, "steps": steps, "tol_m": tol,
           "files": len(records), "not_models": sum(r["status"] == "not a model" for r in records),
           "mujoco_fails": sum(r["status"] == "mujoco fails" for r in records), "compiled": len(compiled)}
    for mode in ("strict", "approximate"):
        loads = [r for r in compiled if r[mode]["loads"]]
        out[f"{mode}_loads"] = len(loads)
        out[f"{mode}_follows"] = sum(bool(r[mode].get("follows")) for r in loads if "follows" in r[mode])
        out[f"{mode}_compared"] = sum("follows" in r[mode] for r in loads)
        per = Counter(b for r in compiled if not r[mode]["loads"] for b in r[mode]["buckets"])
        sole = Counter(r[mode]["buckets"][0] for r in compiled if not r[mode]["loads"] and len(r[mode]["buckets"]) == 1)
        out[f"{mode}_buckets"] = per.most_common()
        out[f"{mode}_sole"] = sole.most_common()
    out["features"] = Counter(f for r in compiled for f in r["features"]).most_common()
    by = {}
    for r in records:
        src = r["file"].split(os.sep)[0]
        s = by.setdefault(src, Counter())
        s["files"] += 1
        s[r["status"]] += 1
        if r["status"] == "compiled":
            s["strict loads"] += r["strict"]["loads"]
            s["approximate loads"] += r["approximate"]["loads"]
            s["strict follows"] += bool(r["strict"].get("follows"))
    out["by_source"] = {k: dict(v) for k, v in sorted(by.items())}
    return out


def markdown(summary, records) -> str:
    s = summary
    lines = ["# MJCF census (issue 62 item 8, issue 63 item 4)", "",
             f"Command: `{s['command']}` (float64; {s['steps']} steps, zero controls, from MuJoCo's reset state; "
             f"follows: every moving body's centre of mass within {s['tol_m'] * 1000:g} mm of MuJoCo C's at every step).", "",
             "Corpus (public files, extracted from `fetch`ed snapshots, not in the repository):", ""]
    for src in s["sources"]:
        lines.append(f"- `{src}`")
    lines += ["", "| | files |", "|---|---|",
              f"| `*.xml` files | {s['files']} |", f"| not a `<mujoco>` model (include fragments, other XML) | {s['not_models']} |",
              f"| MuJoCo cannot compile (missing meshes, includes of absent files: counted apart) | {s['mujoco_fails']} |",
              f"| **compiled by MuJoCo** | **{s['compiled']}** |",
              f"| loads strictly | **{s['strict_loads']}** |",
              f"| loads with `approximate=True` | {s['approximate_loads']} |",
              f"| strict loads that follow MuJoCo C ({s['strict_compared']} compared) | **{s['strict_follows']}** |",
              f"| approximate-only loads that follow MuJoCo C ({s['approximate_compared']} compared) | {s['approximate_follows']} |",
              "", "By source (compiled files):", "", "| source | files | compiled | strict loads | approximate loads | strict follows |",
              "|---|---|---|---|---|---|"]
    for src, c in s["by_source"].items():
        lines.append(f"| {src} | {c.get('files', 0)} | {c.get('compiled', 0)} | {c.get('strict loads', 0)} | "
                     f"{c.get('approximate loads', 0)} | {c.get('strict follows', 0)} |")
    for mode in ("strict", "approximate"):
        lines += ["", f"Refusals ({mode}): files of the compiled ones refused for each reason (a file has several; "
                  "later checks, e.g. a body without a colliding geom, are reached only once the first list is empty), "
                  "and files refused for that reason alone:", "", "| reason | files | only reason |", "|---|---|---|"]
        sole = dict(s[f"{mode}_sole"])
        for b, n in s[f"{mode}_buckets"]:
            lines.append(f"| {b} | {n} | {sole.get(b, 0)} |")
    lines += ["", "What the compiled files hold (files with each):", "", "| feature | files |", "|---|---|"]
    lines += [f"| {f} | {n} |" for f, n in s["features"]]
    loaded = [r for r in records if r["status"] == "compiled" and r["strict"]["loads"]]
    causes = Counter(cause(r["strict"], s["tol_m"]) for r in loaded if "deviation_m" in r["strict"]
                     and not r["strict"]["follows"])
    if causes:
        lines += ["", "Strict loads that do not follow, by the first cause that fits (`cause`):", "",
                  "| cause | files |", "|---|---|"] + [f"| {c} | {n} |" for c, n in causes.most_common()]
    mm = lambda x: "—" if x is None else f"{x * 1000:.3g}"
    if loaded:
        lines += ["", "Strict loads against MuJoCo C (MuJoCo's integrator, ours against MuJoCo with Euler where the "
                  "file names another, the steps with a MuJoCo limit row active, MuJoCo's deepest contact):", "",
                  "| file | bodies | deviation (mm) | follows | integrator | vs MuJoCo Euler (mm) | limit steps | "
                  "MuJoCo's deepest contact (mm) |", "|---|---|---|---|---|---|---|---|"]
        for r in loaded:
            x = r["strict"]
            lines.append(f"| {r['file']} | {r['nbody'] - 1} | {mm(x.get('deviation_m'))} | "
                         f"{x.get('follows', x.get('run_error', '—'))} | {x.get('integrator', '—')} | "
                         f"{mm(x.get('euler_m'))} | {x.get('limit_steps', '—')} | {mm(x.get('max_penetration_m'))} |")
    return "\n".join(lines) + "\n"


def cause(x: dict, tol: float) -> str:
    """The first of these that fits a compared file that does not follow: ``integrator`` (the file names
    RK4 or an implicit integrator and ours follows MuJoCo C with Euler), ``started past a limit``,
    ``soft limit reached`` (a MuJoCo joint or tendon limit row active on some step: its soft limit lets
    the joint pass where the hard row stops it), ``soft contact`` (MuJoCo's deepest contact at least
    half the tolerance), ``other``."""
    if x.get("euler_m") is not None and x["euler_m"] <= tol:
        return "integrator"
    if x.get("started_past_limit"):
        return "started past a limit"
    if x.get("limit_steps"):
        return "soft limit reached"
    if x.get("max_penetration_m", 0.0) >= tol / 2:
        return "soft contact"
    return "other" if "integrator" in x else "not measured (an earlier run)"


def arguments(ap):
    ap.add_argument("--root", default=None, help="the corpus: every *.xml below it")
    ap.add_argument("--steps", type=int, default=100, help="steps compared with MuJoCo C (0: load only; default: "
                                                          "%(default)s)")
    ap.add_argument("--tol", type=float, default=0.01, help="metres: a loaded file follows MuJoCo C within this "
                                                            "(default: %(default)s)")
    ap.add_argument("--only", default=None, help="only files whose path contains this (or any of A,B,...)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds for one file's comparison with MuJoCo C (default: %(default)s)")
    ap.add_argument("--merge", default=None, help="NAME,NAME,...: results of parts of one census (runs with --only, "
                    "in the results folder) merged into --out, a later part's record of a file replacing an earlier's")
    ap.add_argument("--constraints", default="hard", choices=("hard", "mujoco"),
                    help="the worlds' constraints (Scene.constraints): hard rows or MuJoCo's soft law "
                         "(default: %(default)s)")
    ap.add_argument("--follow", default=None, help=argparse.SUPPRESS)  # the child: one file's comparison
    ap.add_argument("--approximate", action="store_true", help=argparse.SUPPRESS)


def prepare(args, out) -> bool:
    """``--follow FILE``: the child of ``follow_in_child``, one file's comparison printed; the run ends here."""
    if not args.follow:
        return False
    follow_main(args.follow, args.steps, args.approximate, args.constraints)
    return True


def run(args, out):
    """``python -m benchmarks mjcf_census``: ``out`` (``runner.Results``) gets the .json and .md, every ten files
    and at the end; ``--merge`` joins earlier runs' results instead."""
    if args.merge:
        return merge(args, out, args.merge.split(","))
    if not args.root:
        raise SystemExit("python -m benchmarks mjcf_census: --root is required (the corpus)")

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.worlds.mjcf import require_mujoco

    mujoco = require_mujoco("benchmarks.mjcf_census")
    root = os.path.abspath(args.root)
    sources = []
    if os.path.isfile(os.path.join(root, "SOURCES.txt")):
        sources = [ln.strip() for ln in open(os.path.join(root, "SOURCES.txt")) if ln.strip()]
    paths = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                   if f.endswith(".xml"))
    if args.only:  # SUBSTR[,SUBSTR...]: files whose path holds any of them
        paths = [p for p in paths if any(o and o in p for o in args.only.split(","))]
    records = []
    t0 = time.perf_counter()
    cwd = os.getcwd()
    for k, p in enumerate(paths):
        os.chdir(root)  # the records name files relative to the root
        try:
            rec = census_file(mujoco, p, args.steps, args.tol, args.timeout, args.constraints)
        finally:
            os.chdir(cwd)
        records.append(rec)
        strict = rec.get("strict", {})
        if (k + 1) % 10 == 0 or k + 1 == len(paths):  # the results so far: a run stopped early keeps them
            write(out, args, args.command, records, sources, t0, done=k + 1 == len(paths))
        print(f"[{k + 1}/{len(paths)} {time.perf_counter() - t0:.0f}s] {p}: {rec['status']}"
              + (f", strict {'loads' if strict.get('loads') else 'refused'}" if strict else "")
              + (f", {strict['deviation_m'] * 1000:.3g} mm" if "deviation_m" in strict else ""), flush=True)
    summary = write(out, args, args.command, records, sources, t0, done=True)
    print(json.dumps({k: summary[k] for k in ("files", "compiled", "strict_loads", "approximate_loads",
                                              "strict_follows", "approximate_follows")}))


def merge(args, out, names) -> dict:
    """One census's results from its parts (``<name>.json`` each in the results folder, runs of the same
    corpus with ``--only``): every part's records by file, a later part's replacing an earlier's, in
    the corpus's order; the parts' commands are kept in the summary's command."""
    by_file, parts, sources, complete = {}, [], [], True
    for name in names:
        got = json.loads((out.folder / f"{name}.json").read_text())
        parts.append(got["summary"].get("command", name))
        sources = sources or got["summary"].get("sources", [])
        complete &= bool(got["summary"].get("complete", False))
        by_file.update({r["file"]: r for r in got["files"]})
    records = [by_file[k] for k in sorted(by_file)]
    command = " ; ".join(parts) + " ; merged by " + args.command
    return write(out, args, command, records, sources, time.perf_counter(), done=complete)


def write(out, args, command, records, sources, t0, done: bool) -> dict:
    """The results of ``records`` (so far, unless ``done``) to ``out`` (``runner.Results``: .json and .md)."""
    summary = summarise(records, sources, args.steps, args.tol, command)
    summary["seconds"] = round(time.perf_counter() - t0, 1)
    summary["complete"] = done
    md = markdown(summary, records)
    out.write({"summary": summary, "files": records},
              md if done else f"(partial: {len(records)} files so far)\n\n" + md)
    return summary


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
