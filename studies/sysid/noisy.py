"""The noisy synthetic recovery (1 mm position noise) with and without continuity links.

    python -m studies.sysid.noisy --seeds 0,1,2 --throws 20 --links 0,10

Data as in ``python -m studies.sysid`` (its noisy rows): ``synthetic.make_synthetic(n_throws=40,
noise=1e-3, seed=s)`` and its first ``--throws`` throws, so seed s is the data of that study's
replicate s. Each ``--links`` value c runs the ``--variant`` of ``sysid.GRID_SCHEDULE`` (named
``DEFAULT_SCHEDULE`` until issue 41; ``variant_schedule``) from the study's start with
``continuity=c`` in every rollout stage that fits window start positions (0 = the schedule as
it is). ``--reselect K``: the last stage ends with K rounds of least-trimmed-squares
reselection (``Stage.reselect``); ``--trim F``: the fraction of windows it drops (``Stage.trim``,
default the schedule's 0.1). ``--last-stage-from-truth``: only the schedule's last stage,
everything fitted, started at the truth (where the estimator lies, apart from the optimiser's
path). ``--known-vertices``: the vertex set known, every stage without it (the geometry stage fits
the height only), from the study's start. ``--from-truth``: instead, the least-squares optimum
itself — the vertex set known, LM on μ, ε and the ground height (window start positions fitted,
``--max-iter``) started at the truth.
``--schedule NAME``: instead of a variant, the library's named schedule ``sysid.SCHEDULES[NAME]``
as it ships (``default``, ``grid``, ``noisy``, ``random_start``, ``random_start_noisy``; ``default``
is ``random_start_noisy`` since issue 41, and ``grid`` the earlier default, which ``--variant
default`` also runs).
Writes studies/sysid/results/noisy.{json,md} (``--out`` prefix) after every run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

from jaxcontact import sysid  # noqa: E402
from jaxcontact.sysid import synthetic as syn  # noqa: E402
from jaxcontact.sysid.params import RESTITUTION_COORDINATES  # noqa: E402
from jaxcontact.sysid.schedule import GRID_SCHEDULE, SCHEDULES, in_rollout_stages  # noqa: E402

from ..common import command_line, write_results  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "noisy"
KEYS = ("mu", "restitution", "ground", "vertices")


VARIANTS = ("default", "untrimmed", "polish", "smooth=SIGMA")


def variant(name: str) -> str:
    """argparse type of ``--variant``: one of ``VARIANTS``, ``smooth=SIGMA`` with a positive number."""
    if name in VARIANTS[:3]:
        return name
    if name.startswith("smooth="):
        try:
            if float(name[len("smooth="):]) > 0:
                return name
        except ValueError:
            pass
    raise argparse.ArgumentTypeError(f"{name!r}: one of default, untrimmed, polish, smooth=SIGMA (SIGMA > 0)")


def variant_schedule(name: str):
    """``GRID_SCHEDULE`` (default: the schedule this study was built around, ``DEFAULT_SCHEDULE``
    until issue 41); its last stage without the trim (untrimmed); with a last
    LM stage on all windows, with the local scans, appended (polish); or its last stage followed by
    the smoothed-loss polish at σ = SIGMA, 4 pairs (``smooth=SIGMA``: ``Stage.smooth``;
    ``smooth=1e-3`` was ``sysid.NOISY_SCHEDULE`` until the ninth session of issue 23; with
    ``--stride 2 --reselect 4`` it is the present one)."""
    last = GRID_SCHEDULE[-1]
    if name.startswith("smooth="):
        return GRID_SCHEDULE[:-1] + (dataclasses.replace(last, smooth=float(name[len("smooth="):])),)
    if name == "untrimmed":
        return GRID_SCHEDULE[:-1] + (dataclasses.replace(last, trim=0.0),)
    if name == "polish":
        return GRID_SCHEDULE + (dataclasses.replace(last, trim=0.0),)
    return GRID_SCHEDULE


def linked(schedule, c: float):
    """``schedule`` with continuity ``c`` in every stage that fits window start positions."""
    return tuple(dataclasses.replace(s, continuity=c) if "pos" in s.starts else s for s in schedule)


def render(doc) -> str:
    L = ["# Noisy synthetic recovery (position noise; continuity links)", "", f"Command: `{doc['command']}`", "",
         f"{doc['throws']} throws (the first of {doc['pool']}), {doc['noise_m'] * 1e3:g} mm position noise; "
         + ("vertices known, LM on μ, ε, ground from the truth, window start positions fitted, `continuity` = links."
            if doc["setting"].startswith("from") else
            f"{doc['setting']} (`variant_schedule`) with `continuity` = links in its stages that fit window start "
            "positions."), "",
         "| links | seed | μ err | ε err | ground err | worst-vertex err | rollouts | wall s |",
         "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["runs"]:
        e = r["errors"]
        vert = f"{e['vertices']['rel']:.2%}" if "vertices" in e else "known"
        L.append(f"| {r['links']:g} | {r['seed']} | {e['mu']['rel']:.2%} | {e['restitution']['rel']:.2%} | "
                 f"{e['ground']['abs'] * 1e3:.3f} mm | {vert} | {r['rollouts']} | {r['wall_s']:.0f} |")
    L += ["", "| links | seeds | μ err mean / worst | ε err mean / worst | ground err mean / worst | worst-vertex err mean / worst |",
          "| --- | --- | --- | --- | --- | --- |"]
    for c in sorted({r["links"] for r in doc["runs"]}):
        rs = [r for r in doc["runs"] if r["links"] == c]
        cell = []
        for k in KEYS:
            if k not in rs[0]["errors"]:
                cell.append("known")
                continue
            v = np.array([r["errors"][k]["abs" if k == "ground" else "rel"] for r in rs])
            cell.append(f"{v.mean() * 1e3:.3f} / {v.max() * 1e3:.3f} mm" if k == "ground"
                        else f"{v.mean():.2%} / {v.max():.2%}")
        L.append(f"| {c:g} | {len(rs)} | " + " | ".join(cell) + " |")
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--throws", type=int, default=20)
    ap.add_argument("--pool", type=int, default=40, help="throws generated per seed (the study's data)")
    ap.add_argument("--noise", type=float, default=1e-3, help="position noise (m)")
    ap.add_argument("--links", default="0,10", help="continuity weights, comma-separated")
    ap.add_argument("--out", default=str(OUT), help="results prefix (.json, .md)")
    ap.add_argument("--variant", type=variant, default="default", help="the schedule (variant_schedule of sysid.GRID_SCHEDULE)")
    ap.add_argument("--schedule", choices=tuple(SCHEDULES), default=None,
                    help="run sysid.SCHEDULES[NAME] as it is (instead of --variant and the options that change it)")
    ap.add_argument("--restitution-coordinate", default="sigmoid", choices=RESTITUTION_COORDINATES,
                    help="ε's coordinate in every rollout stage (Stage.restitution_coordinate)")
    ap.add_argument("--reselect", type=int, default=0,
                    help="rounds of least-trimmed-squares reselection after the last stage (Stage.reselect)")
    ap.add_argument("--trim", type=float, default=None,
                    help="the fraction of windows the last stage drops (Stage.trim; default: the schedule's, 0.1)")
    ap.add_argument("--stride", type=int, default=None, help="samples between window starts in every rollout stage (Stage.stride; default: the window)")
    ap.add_argument("--known-vertices", action="store_true",
                    help="the vertex set known: the schedule's stages without the vertices, from the study's start")
    ap.add_argument("--from-truth", action="store_true", help="vertices known, LM on μ, ε, ground from the truth")
    ap.add_argument("--max-iter", type=int, default=80, help="LM iterations with --from-truth")
    ap.add_argument("--last-stage-from-truth", action="store_true",
                    help="run only the schedule's last stage (everything fitted), started at the truth")
    a = ap.parse_args(argv)
    if a.schedule and (a.variant != "default" or a.restitution_coordinate != "sigmoid" or a.reselect or a.trim is not None
                       or a.stride or a.known_vertices or a.from_truth or a.last_stage_from_truth):
        ap.error("--schedule runs a named schedule as it is: no --variant, --restitution-coordinate, --reselect, "
                 "--trim, --stride, --known-vertices, --from-truth, --last-stage-from-truth")
    out = Path(a.out)
    doc = {"command": command_line("studies.sysid.noisy", argv), "throws": a.throws, "pool": a.pool,
           "noise_m": a.noise, "setting": "from the truth, vertices known" if a.from_truth else
           f"sysid.SCHEDULES[{a.schedule!r}]" if a.schedule else f"schedule {a.variant} (a variant of sysid.GRID_SCHEDULE)",
           "runs": []}
    if a.restitution_coordinate != "sigmoid":
        doc["setting"] += f", ε coordinate {a.restitution_coordinate}"
    if a.known_vertices:
        doc["setting"] += ", vertices known (every stage without them)"
    if a.stride:
        doc["setting"] += f", window stride {a.stride}"
    if a.trim is not None:
        doc["setting"] += f", last stage trim {a.trim:g}"
    if a.reselect:
        doc["setting"] += f", last stage reselect ×{a.reselect}"
    if a.last_stage_from_truth:
        doc["setting"] += ", its last stage only, started at the truth"
    for seed in [int(s) for s in a.seeds.split(",")]:
        data = syn.make_synthetic(n_throws=a.pool, noise=a.noise, seed=seed).subset(range(a.throws))
        for c in [float(s) for s in a.links.split(",")]:
            t0 = time.perf_counter()
            if a.from_truth:
                res = sysid.fit(sysid.Problem.build(data, "mu,restitution,ground", syn.truth_params(data.truth), law=syn.synthetic_law(),
                                                    window=5, substeps=syn.SAMPLE_EVERY, starts="pos", continuity=c),
                                "lm", max_iter=a.max_iter)
                rollouts, message = res.rollouts, res.message
            else:
                if a.schedule:
                    sched = SCHEDULES[a.schedule]
                else:
                    sched = in_rollout_stages(variant_schedule(a.variant), restitution_coordinate=a.restitution_coordinate,
                                              **({"stride": a.stride} if a.stride else {}))
                    last = {"reselect": a.reselect} if a.reselect else {}
                    if a.trim is not None:
                        last["trim"] = a.trim
                    sched = sched[:-1] + (dataclasses.replace(sched[-1], **last),)
                if a.known_vertices:  # the same stages without the vertices (the geometry stage: height only)
                    sched = tuple(dataclasses.replace(st, names=tuple(n for n in st.names if n != "vertices"))
                                  for st in sched)
                if a.last_stage_from_truth:  # where the estimator itself lies: no earlier stage, no start error
                    rec = sysid.staged_fit(data, syn.truth_params(data.truth), syn.synthetic_law(), linked(sched, c)[-1:],
                                           substeps=syn.SAMPLE_EVERY)
                else:
                    rec = syn.recover(data, schedule=linked(sched, c), known_vertices=a.known_vertices)
                res, rollouts, message = rec["result"], rec["rollouts"], rec["result"].message
            errs = sysid.errors(res.values, data.truth)
            doc["runs"].append({"seed": seed, "links": c, "errors": errs, "rollouts": int(rollouts),
                                "wall_s": time.perf_counter() - t0, "message": message,
                                "values": {k: v for k, v in res.values.items() if k != "vertices"}})
            print(f"seed {seed} links {c:g}: {json.dumps({k: errs[k] for k in KEYS if k in errs})}", file=sys.stderr, flush=True)
            write_results(out, doc, render)
    print(render(doc))


if __name__ == "__main__":
    main()
