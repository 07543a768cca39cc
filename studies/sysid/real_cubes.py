"""Real cubes (issue 23): μ, ε, ground height and the 24 vertex coordinates fitted on training tosses,
bootstrap intervals, held-out rollout errors, and measurements for the fitted μ ≈ 0.12 vs the quoted 0.18.

    python -m studies.sysid.real_cubes [--tosses 20] [--bootstrap 200] [--grid 25] [--seed 0] [--substeps 4]
        [--window 4] [--iter 30] [--substep-scan 1,2,4,8] [--support-tol 0.5] [--data FILE] [--out PREFIX]

Split (the ContactNets studies' convention, ``studies.contactnets.common.cube_test_split``): the same
48 held-out tosses are never used for fitting or choosing anything; the ``--tosses`` training tosses
are drawn (``--seed``) from the remaining pool.

1. Fit: kinematic geometry stage (supported samples: velocity changes off free flight by more than
   ``--support-tol`` g·dt; default: the library's noise-aware ``kinematic.support_tolerance``,
   0.5 g·dt on these tosses), (μ, ε) grid + LM, LM on everything, trimmed LM polish
   (``sysid.staged_fit``; every LM stage fits the window start positions).
2. Bootstrap: the training tosses resampled with replacement ``--bootstrap`` times. LM refits
   warm-started at the fit did not move on this jagged loss, so each parameter's per-window loss is
   tabulated along a profile (``--grid`` points, the others held at the fit) and a resample's
   estimate is the minimiser of its count-weighted sum: conditional percentile 90 % intervals.
3. Held-out: full rollouts from each held-out toss's first state (``contactnets.evaluate.metrics``)
   and the windowed residual (observed starts), fitted parameters against the dataset's nominal
   ones (μ 0.18, ε 0.125, the file's ±1 vertices, table at 0).
4. The μ question: the μ minimising the windowed loss (observed starts) at ``--substep-scan``
   engine steps per sample, and on windows starting on a face / an edge or corner / sliding on a
   face in every sample; the data's
   free-flight gravity; the "kinematic μ" of face slides from the data alone (``sysid.kinematic.kinematic_mu``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

from ..common import command_line, cube_tosses_path, write_results

RESULTS = Path(__file__).resolve().parent / "results"
ALL = ("mu", "restitution", "ground", "vertices")
DYN = ("mu", "restitution", "ground")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def window_classes(prob, params, data, tol=0.05) -> dict:
    """Window masks by the contact at its start sample under ``params`` (the fitted geometry):
    "face" ≥ 3 vertices within ``tol`` of the ground, "edge_corner" 1–2, "air" none; and "sliding":
    every sample of the window slides flat on a face (``kinematic.face_slides`` with the data's
    vertices: the samples ``kinematic_mu`` measures μ from)."""
    V = np.asarray(params.body.vertices)
    from jaxcontact.sysid.kinematic import face_slides, vertex_heights

    wins = np.asarray(prob.windows)
    h = vertex_heights(wins[:, 0], V, float(params.ground.height))
    n = (np.abs(h) < tol).sum(-1)
    slide = np.array([face_slides(w, np.asarray(data.vertices), data.gravity, data.dt).all() for w in wins], dtype=bool)
    return {"face": n >= 3, "edge_corner": (n >= 1) & (n <= 2), "air": n == 0, "sliding": slide}


def set_scalar(params, name, v):
    """``params`` with μ, ε, the height, or "scale" (every vertex × v) set to v."""
    from jaxcontact.sysid.params import with_scalar

    if name == "scale":
        return params.replace(body=params.body.replace(vertices=params.body.vertices * v))
    return with_scalar(params, name, v)


def profile(prob, x, name, values) -> np.ndarray:
    """(len(values), windows) squared residual of each window (unweighted) with ``name`` set to each
    value and everything else (start corrections included) held at x: one forward loss per value."""
    n = prob.spec.size
    p0 = prob.spec.unpack(x[:n])
    w2 = np.asarray(prob.weights) ** 2
    out = []
    for v in values:
        xx = np.array(x, float)
        xx[:n] = prob.spec.pack(set_scalar(p0, name, v))
        r = np.asarray(prob.residuals(xx)).reshape(prob.num_windows, -1)
        out.append((r * r).sum(1) / np.where(w2 > 0, w2, 1.0))
    return np.asarray(out)


def argmin_on_grid(values, f) -> float:
    """Minimiser of f sampled at ``values``: the parabola through the best grid point and its neighbours."""
    i = int(np.clip(np.argmin(f), 1, len(f) - 2))
    c = np.polyfit(values[i - 1:i + 2], f[i - 1:i + 2], 2)
    return float(np.clip(-c[1] / (2 * c[0]), values[i - 1], values[i + 1])) if c[0] > 0 else float(values[np.argmin(f)])


def summarise(values, unit):
    V = np.asarray(values["vertices"])
    return {"mu": values["mu"], "restitution": values["restitution"], "ground_mm": values["ground"] * unit * 1e3,
            "half_width_mm": float(np.mean(np.abs(V))) * unit * 1e3, "vertices": V.tolist()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.sysid.real_cubes", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(cube_tosses_path()))
    ap.add_argument("--tosses", type=int, default=20, help="training tosses")
    ap.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples of the training tosses")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--substeps", type=int, default=4, help="engine steps per sample")
    ap.add_argument("--window", type=int, default=4, help="samples per window")
    ap.add_argument("--iter", type=int, default=30, help="LM iterations of the joint stage (the polish: half)")
    ap.add_argument("--substep-scan", default="1,2,4,8", help="substeps at which μ, ε, height are refitted ('' skips)")
    ap.add_argument("--grid", type=int, default=25, help="points of each loss profile")
    ap.add_argument("--support-tol", type=float, default=None,
                    help="kinematic stage: a sample is supported if both neighbouring velocity changes deviate from "
                         "free flight by more than this fraction of g·dt (default: kinematic.support_tolerance, "
                         "0.5 on these tosses)")
    ap.add_argument("--heldout", type=int, default=48, help="held-out tosses rolled out (of the 48)")
    ap.add_argument("--out", default=str(RESULTS / "real_cubes"), help="output prefix (.json, .md)")
    args = ap.parse_args(argv)
    cmd = command_line("studies.sysid.real_cubes", argv)

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact import sysid
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.solvers import LCPSettings
    from jaxcontact.sysid import kinematic
    from jaxcontact.sysid.schedule import Stage, trim_windows

    from ..contactnets.common import cube_test_split

    t_start = time.perf_counter()
    toss = load_tosses(args.data)
    test, pool = cube_test_split(toss)
    test = test.subset(range(min(args.heldout, test.n_tosses)))
    pick = np.sort(np.random.default_rng(args.seed).permutation(pool.n_tosses)[:args.tosses])
    train_ids = pool.toss_ids[pick]
    full = sysid.load(args.data)
    index = {int(t): i for i, t in enumerate(toss.toss_ids)}
    train = full.subset([index[int(t)] for t in train_ids])
    held = full.subset([index[int(t)] for t in test.toss_ids])
    unit = float(full.nominal["length_unit_m"])
    S, W = args.substeps, args.window
    law = CoulombLCP(solver=LCPSettings(tol=1e-9, max_iter=200))
    nominal = sysid.default_params(train, law).replace(law=law.init_params(0.18, 0.125))
    out = {"command": cmd, "data": Path(args.data).name, "train_toss_ids": train_ids.tolist(),
           "heldout_toss_ids": test.toss_ids.tolist(), "substeps": S, "window": W,
           "split": "held-out: the 48 tosses of studies.contactnets.common.cube_test_split (seed 12345); "
                    f"training: {args.tosses} tosses of the remaining pool, permutation seed {args.seed}"}
    res_path = Path(args.out)

    def save():
        out["wall_time_s"] = time.perf_counter() - t_start
        write_results(res_path, out, markdown)

    # 1. the fit
    tol = None if args.support_tol is None else args.support_tol * full.gravity * full.dt
    geo = kinematic.fit_geometry(train, nominal, ("ground", "vertices"), tol=tol)
    log(f"geometry: height {geo['values']['ground'] * unit * 1e3:.2f} mm, {geo['supported']} supported samples")
    sched = (Stage("lm", ("mu", "restitution"), window=W, max_iter=10, grid=4, starts=("pos",)),
             Stage("lm", ALL, window=W, max_iter=args.iter, starts=("pos",)),
             Stage("lm", ALL, window=W, max_iter=args.iter // 2, trim=0.1, starts=("pos",)))
    rec = sysid.staged_fit(train, geo["params"].replace(law=nominal.law), law, sched, substeps=S, log=log)
    res = rec["result"]
    fitted = rec["params"]
    out["fit"] = {**summarise(res.values, unit), "rms_residual_mm": float(np.sqrt(res.loss)) * unit * 1e3,
                  "windows": res.num_windows, "rollouts": rec["rollouts"], "wall_time_s": rec["wall_time_s"],
                  "geometry_stage": {**summarise(geo["values"] | {"mu": 0.18, "restitution": 0.125}, unit),
                                     "supported_samples": geo["supported"], "support_tol_g_dt": (args.support_tol if args.support_tol is not None
                                                                          else kinematic.support_tolerance(train) / (full.gravity * full.dt))},
                  "stages": [{k: s.get(k) for k in ("stage", "loss", "iterations", "wall_time_s", "message")}
                             | {"values": {k: v for k, v in s["values"].items() if k != "vertices"}} for s in rec["stages"]]}
    log(f"fit: {out['fit']['mu']:.4f} {out['fit']['restitution']:.4f} {out['fit']['ground_mm']:.2f} mm "
        f"half-width {out['fit']['half_width_mm']:.2f} mm ({rec['wall_time_s']:.0f} s)")
    save()

    # the full-data problem (also the bootstrap's)
    prob = sysid.Problem.build(train, ALL, fitted, law=law, window=W, substeps=S, starts=("pos",))
    x = prob.x0()  # the fitted parameters in this problem's packing, the last stage's start corrections
    x[:prob.spec.size] = prob.spec.pack(fitted)
    if res.x.size == prob.size:
        x[prob.spec.size:] = res.x[prob.spec.size:]

    # 3. held-out: full rollouts and windowed residuals
    model = dataclasses.replace(prob.loss_def.model, dt=full.dt)
    hw = sysid.Problem.build(held, ALL, nominal, law=law, window=W, substeps=S)
    out["heldout"] = {"tosses": test.n_tosses, "windows": hw.num_windows}
    for name, p in (("fitted", fitted), ("nominal", nominal)):
        t0 = time.perf_counter()
        m = metrics(rollout_tosses(model, p, test, substeps=S), test)
        rms = float(np.sqrt(hw.loss(hw.spec.pack(p)))) * unit * 1e3
        out["heldout"][name] = {"pos_error": m["pos_error"], "rot_error_deg": m["rot_error_deg"],
                                "penetration": m["penetration"], "n_diverged": m["n_diverged"],
                                "window_rms_mm": rms, "wall_time_s": time.perf_counter() - t0}
        log(f"held-out {name}: {out['heldout'][name]}")
    save()

    # 4. the μ question: data-only measurements, then μ profiles of the windowed loss (observed starts)
    mu_q = {"kinematic": kinematic.kinematic_mu(full.trajs, np.asarray(full.vertices), full.gravity, full.dt),
            "free_flight": kinematic.free_flight_gravity(full.trajs, np.asarray(full.vertices), full.dt),
            "gravity": full.gravity}
    log(f"kinematic μ: {mu_q['kinematic']}")
    mus = np.geomspace(0.07, 0.28, args.grid)
    mu_q["profile_grid"] = [float(mus[0]), float(mus[-1]), int(args.grid)]
    scan = []
    for s in [int(v) for v in args.substep_scan.split(",") if v]:
        t0 = time.perf_counter()
        ps = sysid.Problem.build(train, DYN, fitted, law=law, window=W, substeps=s)
        P = profile(ps, ps.x0(), "mu", mus)
        scan.append({"substeps": s, "mu": argmin_on_grid(mus, P.sum(1)),
                     "rms_mm": float(np.sqrt(P.sum(1).min() / (P.shape[1] * ps.loss_def.rows * 6))) * unit * 1e3,
                     "wall_time_s": time.perf_counter() - t0})
        log(f"substeps {s}: {scan[-1]}")
        if s == S:  # the same windows by the contact at their start (fitted geometry)
            cls = window_classes(ps, fitted, train)
            mu_q["by_contact"] = {k: {"windows": int(cls[k].sum()),
                                      "mu": argmin_on_grid(mus, P[:, cls[k]].sum(1)) if cls[k].any() else None}
                                  for k in ("face", "edge_corner", "air", "sliding")}
            log(f"by contact: {mu_q['by_contact']}")
        mu_q["substeps"] = scan
        out["mu_question"] = mu_q
        save()
    out["mu_question"] = mu_q
    save()

    # 2 (last). bootstrap over training tosses from per-window loss profiles at the full fit (fitted
    # start corrections held): a resample's loss is the count-weighted sum of its tosses' windows, and
    # each parameter's minimiser along its profile (the others held at the full fit) is its estimate
    live = np.asarray(trim_windows(prob, x, 0.1)[0].weights) > 0
    toss_of = prob.where[:, 0]
    v = res.values
    grids = {"mu": v["mu"] * np.linspace(0.7, 1.3, args.grid),
             "restitution": np.linspace(0.0, max(0.3, 2 * v["restitution"]), args.grid),
             "ground": v["ground"] + np.linspace(-3e-3, 3e-3, args.grid) / unit,
             "scale": np.linspace(0.97, 1.03, args.grid)}
    t0 = time.perf_counter()
    prof = {k: profile(prob, x, k, g) * live for k, g in grids.items()}
    rng = np.random.default_rng(args.seed + 1)
    est = {k: [] for k in grids}
    for b in range(args.bootstrap):
        counts = np.bincount(rng.integers(0, len(train), len(train)), minlength=len(train))[toss_of]
        for k, g in grids.items():
            est[k].append(argmin_on_grid(g, prof[k] @ counts))
    conv = {"mu": 1.0, "restitution": 1.0, "ground": unit * 1e3, "scale": 1.0}
    full_est = {k: argmin_on_grid(g, prof[k].sum(1)) * conv[k] for k, g in grids.items()}
    q = lambda a: [float(np.percentile(a, 5)), float(np.percentile(a, 95))]
    out["bootstrap"] = {"resamples": args.bootstrap, "grid_points": args.grid, "wall_time_s": time.perf_counter() - t0,
                        "profile_minimum": full_est,
                        "grids": {k: [float(g[0] * conv[k]), float(g[-1] * conv[k])] for k, g in grids.items()},
                        **{k: q(np.asarray(e) * conv[k]) for k, e in est.items()},
                        "edge_hits": {k: int(np.sum((np.asarray(e) <= grids[k][0]) | (np.asarray(e) >= grids[k][-1])))
                                      for k, e in est.items()}}
    log(f"bootstrap: {out['bootstrap']}")
    save()
    return 0


def markdown(o) -> str:
    f = o.get("fit")
    L = ["# Real cubes: fitted parameters, bootstrap intervals, held-out errors, the μ question", "",
         f"Command: `{o['command']}`", "", f"Split: {o['split']}. Engine steps per sample: {o['substeps']}, "
         f"windows of {o['window']} samples.", ""]
    if f:
        L += [f"## Fit ({len(o['train_toss_ids'])} training tosses, {f['windows']} windows, "
              f"{f['wall_time_s']:.0f} s, {f['rollouts']} window rollouts)", "",
              "| parameter | fit | 90 % bootstrap interval | nominal |", "| --- | --- | --- | --- |"]
        b = o.get("bootstrap", {})
        iv = lambda k, fmt: (f"{fmt.format(b['profile_minimum'][k])} [{fmt.format(b[k][0])}, {fmt.format(b[k][1])}]"
                             if k in b else "—")
        L += [f"| μ | {f['mu']:.4f} | {iv('mu', '{:.4f}')} | 0.18 |",
              f"| ε | {f['restitution']:.4f} | {iv('restitution', '{:.4f}')} | 0.125 |",
              f"| table height (mm) | {f['ground_mm']:.2f} | {iv('ground', '{:.2f}')} | 0 |",
              f"| half-width, mean abs vertex coordinate (mm) | {f['half_width_mm']:.2f} | — | 52.40 |",
              f"| vertex scale factor (all 24 coordinates × s) | 1 | {iv('scale', '{:.4f}')} | |",
              "", f"RMS window residual on the training windows (fitted starts, trimmed): {f['rms_residual_mm']:.3f} mm. "
              f"Geometry stage alone: height {f['geometry_stage']['ground_mm']:.2f} mm, half-width "
              f"{f['geometry_stage']['half_width_mm']:.2f} mm ({f['geometry_stage']['supported_samples']} supported samples)."]
        if b:
            L += ["", f"Bootstrap column: the minimiser of each parameter's loss profile (the others held at the fit; "
                  f"{b['grid_points']} points over {b['grids']}), and its 90 % percentile interval over {b['resamples']} "
                  f"resamples of the training tosses (minimisers at a grid end: {b['edge_hits']})."]
    h = o.get("heldout")
    if h and "fitted" in h:
        L += ["", f"## Held-out tosses ({h['tosses']} tosses, {h['windows']} windows)", "",
              "| parameters | position error (block widths) | rotation error (deg) | penetration (block widths) | "
              "window RMS (mm) |", "| --- | --- | --- | --- | --- |"]
        for k in ("fitted", "nominal"):
            r = h[k]
            L.append(f"| {k} | {r['pos_error']:.4f} | {r['rot_error_deg']:.2f} | {r['penetration']:.4f} | "
                     f"{r['window_rms_mm']:.3f} |")
    m = o.get("mu_question")
    if m:
        k = m["kinematic"]
        L += ["", "## The μ question", "",
              f"Kinematic μ (data only, {k['runs']} runs of face-sliding, {k['samples']} samples): circular "
              f"{k['mu_circular_mean']:.4f} (run median {k['mu_circular_median']:.4f}, 90 % over runs "
              f"[{k['mu_circular_90'][0]:.4f}, {k['mu_circular_90'][1]:.4f}]; with a fitted constant bias "
              f"{k['mu_circular_with_tilt']:.4f}, bias/g = ({k['tilt_accel_over_g'][0]:.4f}, {k['tilt_accel_over_g'][1]:.4f})); "
              f"pyramid factor {k['pyramid_factor_mean']:.3f}, pyramid μ of the same decelerations {k['mu_pyramid_mean']:.4f}.",
              "", f"Free-flight vertical acceleration of the data (median over {m['free_flight']['intervals']} intervals "
              f"with the lowest corner > 0.5 half-widths up): {-m['free_flight']['median_accel'][2]:.2f} units/s² "
              f"against the file's gravity {m['gravity']:.2f} (ratio {-m['free_flight']['median_accel'][2] / m['gravity']:.4f})."]
        if m.get("substeps"):
            L += ["", f"μ minimising the windowed loss (observed starts, ε and geometry at the fit; profile over "
                  f"{m['profile_grid'][2]} points in [{m['profile_grid'][0]}, {m['profile_grid'][1]}]):", "",
                  "| engine steps per sample | μ | RMS at the minimum (mm) |", "| --- | --- | --- |"]
            L += [f"| {r['substeps']} | {r['mu']:.4f} | {r['rms_mm']:.3f} |" for r in m["substeps"]]
        if m.get("by_contact"):
            L += ["", f"Same profile ({o['substeps']} steps per sample) on subsets of the windows:", "",
                  "| windows | how many | μ |", "| --- | --- | --- |"]
            label = {"face": "starting on a face", "edge_corner": "starting on an edge or corner",
                     "air": "starting in the air",
                     "sliding": "sliding flat on a face in every sample (the kinematic μ's samples)"}
            L += [f"| {label.get(k, k)} | {r['windows']} | {'—' if r['mu'] is None else format(r['mu'], '.4f')} |"
                  for k, r in m["by_contact"].items()]
    L += ["", f"Wall time {o.get('wall_time_s', 0):.0f} s."]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
