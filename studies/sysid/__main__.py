"""Synthetic recovery of issue 10, the smoothing comparison and the real cube tosses, written to
studies/sysid/results/sysid.{json,md,png} and sysid_noise.png (``--out`` to change the prefix).

    python -m studies.sysid [--throws 20] [--noise-counts 5,10,20] [--noise-max-iter K]
        [--nm-evals 150] [--smooth-throws 2] [--smooth-iter 6] [--real 6] [--real-iter 15]

Results are written after every row (``"complete": false`` until the end), so a run stopped by
hand still leaves the rows it finished.

Hidden truth: μ = 0.27, ε = 0.1, ground height 0.013 m, a vertex set 10% off the 0.1 m cube;
start: μ = 0.5, ε = 0.5, height 0, the nominal cube. Data and fit use ``CoulombLCP`` with the
position-consistent bounce target (``synthetic.synthetic_law()``; docs/sysid.md says why).
Schedule ``sysid.GRID_SCHEDULE`` (kinematic geometry, a (μ, ε) grid then LM μ+ε, LM everything,
trimmed LM polish; window start positions fitted in every LM stage; it was ``DEFAULT_SCHEDULE`` until
issue 41, the library's default is now ``random_start_noisy``), windows of 5 samples
(100 Hz) with 5 engine steps per sample. Runs, in one process:
LM noise-free on all throws, LM with 1 mm position noise on nested subsets of one noisy data set
(error vs number of throws; rollout stages optionally capped at --noise-max-iter iterations), Nelder–Mead on the same stages and loss (after the same geometry stage, a fixed
evaluation budget per stage), the hard-vs-smoothed comparison (height from below, engine-default
restitution), and μ, ε, ground on the first real tosses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxcontact import sysid  # noqa: E402
from jaxcontact.sysid import synthetic as syn  # noqa: E402
from jaxcontact.sysid.schedule import GRID_SCHEDULE, Stage, in_rollout_stages, staged_fit  # noqa: E402

from ..common import command_line, cube_tosses_path  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def _clean(stages):
    return [{k: v for k, v in s.items() if k != "values" or not isinstance(v, dict) or "vertices" not in v}
            for s in stages]


def synthetic_run(n, noise, method, args, data_all, max_iter=None, replicate=0):
    data = data_all[(noise, replicate)].subset(range(n))
    t0 = time.perf_counter()
    if method == "lm":
        rec = syn.recover(data, schedule=GRID_SCHEDULE, log=log, max_iter=max_iter)
    else:  # the same stages and loss, Nelder–Mead with a fixed budget per rollout stage
        sched = in_rollout_stages(GRID_SCHEDULE, kind="nelder-mead", max_iter=args.nm_evals, starts=())
        rec = syn.recover(data, schedule=sched, log=log)
    res = rec["result"]
    errs = sysid.errors(res.values, data.truth)
    out = {"method": method, "throws": n, "noise_m": noise, "replicate": replicate, "max_iter_cap": max_iter, "values": {k: v for k, v in res.values.items() if k != "vertices"},
           "loss": res.loss, "errors": errs, "within_tolerance": sysid.within_tolerance(errs),
           "rollouts": rec["rollouts"], "wall_time_s": rec["wall_time_s"], "total_time_s": time.perf_counter() - t0,
           "stages": _clean(rec["stages"])}
    log(f"{method} throws={n} noise={noise} replicate={replicate}: {errs} ({out['total_time_s']:.0f} s)")
    return out, rec


def smoothing_comparison(args):
    """Height from below on a small case with the engine's default (velocity) bounce target:
    hard LM vs a κ-continuation on RelaxedCoulomb then hard LM; and the position target."""
    out = []
    for target, schedule, label in [
        ("velocity", (Stage("lm", ("mu", "restitution", "ground"), max_iter=25),), "hard (velocity target)"),
        ("velocity", (Stage("lm", ("mu", "restitution", "ground"), max_iter=args.smooth_iter, kappa=1e-2),
                      Stage("lm", ("mu", "restitution", "ground"), max_iter=args.smooth_iter, kappa=1e-3),
                      Stage("lm", ("mu", "restitution", "ground"), max_iter=25)), "smoothed κ 1e-2 → 1e-3, then hard"),
        ("position", (Stage("lm", ("mu", "restitution", "ground"), max_iter=25),), "hard (position target)"),
    ]:
        law = syn.synthetic_law(target)
        data = syn.make_synthetic(n_throws=args.smooth_throws, steps=300, seed=3, law=law)
        p0 = syn.start_params(law)
        p0 = p0.replace(body=p0.body.replace(vertices=jnp.asarray(data.truth["vertices"])))  # geometry known
        t0 = time.perf_counter()
        rec = staged_fit(data, p0, law, schedule, substeps=syn.SAMPLE_EVERY, log=log)
        errs = sysid.errors(rec["result"].values, data.truth)
        r = {"label": label, "restitution_target": target, "throws": args.smooth_throws, "values": rec["result"].values,
             "loss": rec["result"].loss, "errors": errs, "within_tolerance": sysid.within_tolerance(errs),
             "rollouts": rec["rollouts"], "wall_time_s": time.perf_counter() - t0,
             "stages": [{k: s[k] for k in ("stage", "loss", "iterations", "wall_time_s", "errors", "message")} for s in rec["stages"]]}
        log(f"smoothing: {label}: {errs} ({r['wall_time_s']:.0f} s)")
        out.append(r)
    return out


def real_run(n, args, target):
    path = Path(args.real_data)
    data = sysid.load(path).subset(range(n))
    law = syn.synthetic_law(target)
    p0 = sysid.default_params(data, law).replace(law=law.init_params(0.5, 0.5))
    sched = (Stage("geometry", ("ground",), max_iter=50), Stage("lm", ("mu", "restitution", "ground"), max_iter=args.real_iter,
                                                             window=4))
    rec = staged_fit(data, p0, law, sched, substeps=4, log=log)
    res = rec["result"]
    unit = data.nominal.get("length_unit_m", 1.0)
    out = {"data": str(path), "tosses": n, "restitution_target": target, "windows": res.num_windows,
           "values": res.values, "loss": res.loss, "iterations": res.iterations, "rollouts": rec["rollouts"],
           "wall_time_s": rec["wall_time_s"], "ground_m": res.values["ground"] * unit,
           "ground_after_geometry_m": rec["stages"][0]["values"]["ground"] * unit,
           "rms_residual_m": float(np.sqrt(res.loss)) * unit,
           "nominal_in_readme": {k: data.nominal[k] for k in ("mu", "restitution") if k in data.nominal}}
    log(f"real ({n} tosses, {target}): {res.values}, rms {out['rms_residual_m'] * 1000:.2f} mm ({out['wall_time_s']:.0f} s)")
    return out


def _pct(e, k):
    if k not in e:
        return "—"
    return f"{e[k]['abs'] * 1000:.3g} mm" if k == "ground" else f"{100 * e[k]['rel']:.3g}%"


def current_command(cmd: str) -> str:
    """A command recorded as ``python benchmarks/sysid_recovery.py ...`` in today's form (same options)."""
    return cmd.replace("python benchmarks/sysid_recovery.py", "python -m studies.sysid")


def write_md(result: dict, path: str) -> None:
    status = "" if result.get("complete") else " — **partial: the run had not finished when this was written**"
    L = ["# System identification: synthetic recovery, smoothing, real tosses", "",
         f"Command: `nice -n 5 {current_command(result['command'])}` ({result['devices']}, jax {result['jax']}, 2 CPU cores shared with "
         f"other jobs; total {result['total_time_s']:.0f} s){status}. Every number below is from this one run "
         "(`sysid.json`, plots `sysid.png`, `sysid_noise.png`)"
         + (f"; rows and sections already in the earlier results (written by `{current_command(result['resumed_from'])}`) were kept, "
            "not re-run (`--resume`); the total time is this run's" if result.get("resumed_from") else "") + ".", "",
         "Truth μ 0.27, ε 0.1, ground 0.013 m, vertices 10% off the 0.1 m cube; start μ 0.5, ε 0.5, height 0, nominal "
         "cube. Data and fit: CoulombLCP with the position-consistent bounce target. Schedule `sysid.GRID_SCHEDULE` (named `DEFAULT_SCHEDULE` until issue 41). "
         "Errors: relative (μ, ε, worst vertex ‖v−v*‖/‖v*‖), absolute (height). Target: 1% / 2 mm. Rollouts: window "
         "simulations (a Jacobian counts one per window); wall: the fit stages (data generation outside, compilation "
         "of the losses inside). Noisy rows: 1 mm i.i.d. Gaussian on every observed position coordinate, nested "
         "subsets (the first N throws) of one noisy data set, LM stages capped at the 'LM cap' iterations where one is given; window start positions fitted in every LM stage (`starts=('pos',)`).", "",
         "| method | throws | noise | data seed | LM cap | μ err | ε err | height err | vertex err | within target | rollouts | wall s |",
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["runs"]:
        e = r["errors"]
        cap = r.get("max_iter_cap") or "—"
        L.append(f"| {r['method']} | {r['throws']} | {r['noise_m'] * 1000:g} mm | {r.get('replicate', 0)} | {cap} | {_pct(e, 'mu')} | "
                 f"{_pct(e, 'restitution')} | {_pct(e, 'ground')} | {_pct(e, 'vertices')} | {r['within_tolerance']} | "
                 f"{r['rollouts']} | {r['wall_time_s']:.0f} |")
    noisy = [r for r in result["runs"] if r["method"] == "lm" and r["noise_m"] > 0]
    if len({r.get("replicate", 0) for r in noisy}) > 1:
        L += ["", "Noisy rows over the data seeds (mean / worst of the seeds):", "",
              "| throws | seeds | μ err | ε err | height err | vertex err |", "| --- | --- | --- | --- | --- | --- |"]
        for n in sorted({r["throws"] for r in noisy}):
            rows = [r for r in noisy if r["throws"] == n]
            cell = []
            for k in ("mu", "restitution", "ground", "vertices"):
                v = np.array([r["errors"][k]["abs" if k == "ground" else "rel"] for r in rows])
                f = (lambda x: f"{1000 * x:.3g} mm") if k == "ground" else (lambda x: f"{100 * x:.3g}%")
                cell.append(f"{f(v.mean())} / {f(v.max())}")
            L.append(f"| {n} | {len(rows)} | " + " | ".join(cell) + " |")
    L += ["", "Stages of every run (errors after the stage):", "",
          "| run | stage | loss | it | loss evals | μ err | ε err | height err | vertex err | s |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["runs"]:
        run = f"{r['method']} {r['throws']} thr {r['noise_m'] * 1000:g} mm seed {r.get('replicate', 0)}"
        for s in r["stages"]:
            e = s.get("errors", {})
            L.append(f"| {run} | {s['stage']} | {s['loss']:.2e} | {s['iterations']} | {s.get('loss_evals', '—')} | "
                     f"{_pct(e, 'mu')} | {_pct(e, 'restitution')} | {_pct(e, 'ground')} | {_pct(e, 'vertices')} | "
                     f"{s['wall_time_s']:.0f} |")
    for r in result.get("real", []):
        v, nom = r["values"], r["nominal_in_readme"]
        L += ["", f"## Real cube tosses ({r['tosses']} tosses, {r['windows']} windows, bounce target {r['restitution_target']}, "
              f"{r['rollouts']} rollouts, {r['wall_time_s']:.0f} s)", "",
              "| | identified | dataset (`mu_nominal`, `restitution_nominal`) |", "| --- | --- | --- |",
              f"| μ | {v['mu']:.3f} | {nom.get('mu', '—')} |", f"| ε | {v['restitution']:.3f} | {nom.get('restitution', '—')} |",
              f"| ground height | {1000 * r['ground_m']:.2f} mm (kinematic stage: {1000 * r['ground_after_geometry_m']:.2f} mm) "
              "| table top at z = 0 |", "", f"RMS window residual {1000 * r['rms_residual_m']:.2f} mm, {r['iterations']} LM iterations."]
    if result.get("smoothing"):
        L += ["", f"## Hard vs smoothed: ground height from below ({result['smoothing'][0]['throws']} throws, true vertices, "
              "start μ 0.5, ε 0.5, height 0)", "",
              "| fit | data/fit bounce target | μ err | ε err | height err | loss | rollouts | wall s |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in result["smoothing"]:
            e = r["errors"]
            L.append(f"| {r['label']} | {r['restitution_target']} | {_pct(e, 'mu')} | {_pct(e, 'restitution')} | "
                     f"{_pct(e, 'ground')} | {r['loss']:.2e} | {r['rollouts']} | {r['wall_time_s']:.0f} |")
    Path(path).write_text("\n".join(L) + "\n")


def plot_noise(runs, path):
    """Error vs number of throws of the 1 mm noise rows (log-log), with the N^-1/2 slope."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    noisy = [r for r in runs if r["method"] == "lm" and r["noise_m"] > 0]
    n = np.array(sorted({r["throws"] for r in noisy}), dtype=float)
    if len(n) < 2:
        return

    def mean_err(key, fld):  # mean over the data seeds at each throw count
        return np.array([np.mean([r["errors"][key][fld] for r in noisy if r["throws"] == k]) for k in n])

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for key, lab in (("mu", "μ (rel)"), ("restitution", "ε (rel)"), ("vertices", "worst vertex (rel)")):
        ax.loglog(n, mean_err(key, "rel"), marker="o", label=lab)
    ax.loglog(n, mean_err("ground", "abs") / 0.1, marker="s", label="height / 0.1 m")
    e0 = mean_err("mu", "rel")[0]
    ax.loglog(n, e0 * np.sqrt(n[0] / n), "k:", lw=1, label="∝ N^-1/2")
    ax.axhline(0.01, color="r", lw=0.8, ls="--", label="1% target")
    ax.set_xlabel("throws")
    ax.set_ylabel("error")
    ax.set_title("1 mm position noise: error vs throws (mean over data seeds)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m studies.sysid", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--throws", type=int, default=20, help="throws of the noise-free LM and Nelder–Mead rows")
    ap.add_argument("--noise", type=float, default=0.001, help="position noise (m) of the noisy rows")
    ap.add_argument("--noise-counts", default="5,10,20", help="throw counts of the noisy rows (nested subsets)")
    ap.add_argument("--noise-replicates", type=int, default=1,
                    help="independent noisy data sets (throws and noise from seeds 0..R-1) per throw count")
    ap.add_argument("--noise-max-iter", type=int, default=None,
                    help="iteration cap of every LM stage in the noisy rows (default: the schedule's)")
    ap.add_argument("--nm-evals", type=int, default=150, help="Nelder–Mead loss evaluations per rollout stage (0: skip)")
    ap.add_argument("--smooth-throws", type=int, default=2, help="throws of the smoothing comparison (0: skip)")
    ap.add_argument("--smooth-iter", type=int, default=6, help="LM iterations of each smoothed stage")
    ap.add_argument("--real", type=int, default=6, help="real tosses used (0: skip)")
    ap.add_argument("--real-iter", type=int, default=15)
    ap.add_argument("--real-targets", default="position,velocity")
    ap.add_argument("--real-data", default=str(cube_tosses_path()))
    ap.add_argument("--out", default=str(OUT / "sysid"), help="prefix of the results files (default %(default)s)")
    ap.add_argument("--md-only", action="store_true", help="only re-render OUT.md from OUT.json (no fitting)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the synthetic rows already in OUT.json (same method, throws, noise) and run the rest")
    ap.add_argument("--fresh-runs", action="store_true",
                    help="with --resume: re-run every synthetic row (keep only the real and smoothing sections)")
    args = ap.parse_args(argv)
    if args.md_only:
        write_md(json.loads(Path(args.out + ".json").read_text()), args.out + ".md")
        return
    t0 = time.perf_counter()
    counts = [int(c) for c in args.noise_counts.split(",") if c]
    n_noisy = max(counts, default=0)
    data_all = {(0.0, 0): syn.make_synthetic(n_throws=args.throws)}
    for r in range(args.noise_replicates if counts else 0):  # replicate r: throws and noise from seed r
        data_all[(args.noise, r)] = syn.make_synthetic(n_throws=n_noisy, noise=args.noise, seed=r)
    result = {"command": command_line("studies.sysid", argv), "complete": False,
              "machine": platform.processor() or platform.machine(), "jax": jax.__version__,
              "devices": str(jax.devices()), "args": vars(args),
              "truth": {k: np.asarray(v).tolist() for k, v in data_all[(0.0, 0)].truth.items()}, "start": syn.START,
              "schedule": [dataclasses.asdict(s) for s in GRID_SCHEDULE], "runs": [], "smoothing": [], "real": []}

    def save():
        result["total_time_s"] = time.perf_counter() - t0
        Path(args.out + ".json").write_text(json.dumps(result, indent=1, default=lambda o: np.asarray(o).tolist()))
        write_md(result, args.out + ".md")

    recs = {}
    done = {}
    if args.resume and Path(args.out + ".json").exists():
        old = json.loads(Path(args.out + ".json").read_text())
        done = {} if args.fresh_runs else {(r["method"], r["throws"], r["noise_m"], r.get("replicate", 0)): r
                                           for r in old.get("runs", [])}
        result["resumed_from"] = old.get("command")
        if not args.real:
            result["real"] = old.get("real", [])
        if not args.smooth_throws:
            result["smoothing"] = old.get("smoothing", [])
    plan = [(args.throws, 0.0, "lm", None, 0)]
    if args.nm_evals:
        plan.append((args.throws, 0.0, "nelder-mead", None, 0))
    plan += [(c, args.noise, "lm", args.noise_max_iter, r) for r in range(args.noise_replicates) for c in counts]
    for n, noise, method, cap, rp in plan:
        key = (method, n, noise, rp)
        if key in done and done[key].get("max_iter_cap") == cap:
            result["runs"].append(done[key])  # kept from the earlier run of this script
            log(f"{method} throws={n} noise={noise} replicate={rp}: kept from the earlier run")
            continue
        out, rec = synthetic_run(n, noise, method, args, data_all, max_iter=cap, replicate=rp)
        result["runs"].append(out)
        recs[(n, noise, method)] = rec
        save()
        if (n, noise, method) == (args.throws, 0.0, "lm"):
            try:
                from jaxcontact.sysid.plots import plot_history

                plot_history([(lab, h) for lab, h in rec["histories"] if h], args.out + ".png",
                             truth=result["truth"], title=f"LM recovery, {args.throws} throws, no noise")
            except Exception as err:  # the plot is a convenience; the numbers are in the JSON
                log(f"plot failed: {err}")
    try:
        plot_noise(result["runs"], args.out + "_noise.png")
    except Exception as err:
        log(f"noise plot failed: {err}")
    for t in [t for t in args.real_targets.split(",") if t] if args.real else []:
        result["real"].append(real_run(args.real, args, t))
        save()
    if args.smooth_throws:
        result["smoothing"] = smoothing_comparison(args)
    result["complete"] = True
    save()
    log(f"wrote {args.out}.json ({result['total_time_s']:.0f} s)")


if __name__ == "__main__":
    main()
