"""``jaxcontact sysid``: identify physical parameters from trajectories (or the synthetic case).

    jaxcontact sysid --data FILE.npz --params mu,restitution,ground --json
    jaxcontact sysid --synthetic --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _jsonable(x):
    import numpy as np

    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


def _units(length: str, mass: str = "kg") -> dict:
    """Units of the reported values; ``length`` is the data's length unit."""
    return {"mu": "dimensionless", "mu_aniso": "dimensionless", "restitution": "dimensionless",
            "ground": length, "ground_normal": "unit vector", "vertices": f"{length} (body frame)", "mass": mass,
            "inertia": f"{mass} {length}^2", "loss": f"{length}^2 (mean squared window residual)",
            "rms_residual": length, "wall_time_s": "s", "total_time_s": "s", "noise_m": "m",
            "sample_period_s": "s", "substeps": "engine steps per sample",
            "errors": "relative (fraction of the true value); ground: absolute, in the length unit"}


def _parse_init(text: str) -> dict:
    out = {}
    for item in filter(None, (text or "").split(",")):
        if "=" not in item:
            raise ValueError(f"--init: expected name=value, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = float(v)
    return out


def _initial_params(data, law, init: dict):
    from .core import default_params
    from .params import SCALARS, canonical, with_scalar

    p = default_params(data, law)
    for k, v in init.items():
        c = canonical([k])[0]
        if c not in SCALARS:
            raise ValueError(f"--init: {k!r} cannot be set from the command line (scalars: {', '.join(SCALARS)})")
        p = with_scalar(p, c, v)
    return p


def _run_data(args, log) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    from ..laws import CoulombLCP
    from ..laws.relaxed import RelaxedCoulomb
    from ..solvers import LCPSettings
    from . import core, data as sdata

    try:
        data = sdata.load(args.data, sample_period=args.sample_period)
    except sdata.MissingSamplePeriod:
        raise ValueError(f"--sample-period is required: the file {args.data} records no sample period (no 'dt' "
                         "or 'sample_period'; the time between two rows, in s)") from None
    if args.max_trajectories:
        data = data.subset(range(min(args.max_trajectories, len(data))))
    substeps = sdata.substeps_for(data, args.substeps, "--substeps")
    if args.window is None:  # the default; an explicit 0 never gets here (cliargs.positive_int)
        args.window = 4
    check_memory_for_data(data, args.window, substeps, args.stride or args.window)
    law = (RelaxedCoulomb(args.kappa, cone=args.cone) if args.kappa > 0
           else CoulombLCP(solver=LCPSettings(tol=1e-9, max_iter=200, cone=args.cone)))
    init = {"mu": 0.5, "restitution": 0.5, "ground": 0.0}
    init.update(_parse_init(args.init))
    params0 = _initial_params(data, law, init)
    prob = core.Problem.build(data, args.params, params0, law=law, window=args.window, substeps=substeps,
                              stride=args.stride, starts=args.starts or ())
    how = ("recorded in the data" if data.substeps is not None
           else "given" if args.substeps is not None else "default for measured data")
    log(f"{data.source}: {len(data)} trajectories sampled every {data.dt:g} s, {prob.num_windows} contact windows "
        f"of {args.window} samples ({substeps} engine steps per sample, {how}), fitting "
        f"{', '.join(prob.spec.names)} by {args.method}"
        + (f", window starts fitted ({'+'.join(prob.starts)})" if prob.starts else ""))
    try:
        res = core.fit(prob, args.method, progress=not args.no_progress, max_iter=args.max_iter)
    except core.optim.FitError as err:
        log(f"jaxcontact: error: {err}")
        out = {"error": str(err), "best_so_far": err.result.summary()}
        return out
    out = {"data": data.source, "trajectories": len(data), "sample_period_s": data.dt, "substeps": substeps,
           **res.summary()}
    lu = data.nominal.get("length_unit_m") if data.nominal else None
    out["units"] = _units("m" if lu in (None, 1.0) else f"data length unit ({lu} m)")
    if data.nominal:
        out["nominal_in_data"] = data.nominal
    if data.truth:
        out["errors"] = core.errors(res.values, data.truth)
    if args.plot:
        out["plot"] = str(args.plot)
        out["_plot"] = lambda: _plot([(args.method, res.history)], args.plot, data.truth or None)
    return out


def _plot(histories, path, truth):
    from .plots import plot_history

    plot_history(histories, path, truth=truth)


def _run_synthetic(args, log) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    from . import core, synthetic as syn

    from .schedule import SCHEDULES

    if args.schedule != "default" and args.known_vertices:
        raise ValueError(f"--schedule {args.schedule} fits the vertices; it cannot be combined with --known-vertices")
    if args.substeps is not None and args.substeps != syn.SAMPLE_EVERY:
        raise ValueError(f"--substeps {args.substeps} contradicts the synthetic data: sampled every "
                         f"{syn.SAMPLE_EVERY} engine steps (leave --substeps out)")
    check_memory_for_synthetic(args.throws, args.steps)
    schedule = SCHEDULES[args.schedule] if args.schedule != "default" else None
    t0 = time.perf_counter()
    law = syn.synthetic_law(args.restitution_target, cone=args.cone)
    data = syn.make_synthetic(n_throws=args.throws, steps=args.steps, seed=args.seed, noise=args.noise, law=law)
    log(f"synthetic: {args.throws} throws x {args.steps} steps, noise {args.noise} m, restitution target "
        f"{args.restitution_target}; truth mu={syn.TRUTH['mu']}, restitution={syn.TRUTH['restitution']}, "
        f"ground={syn.TRUTH['ground']}, vertices 10% off the cube")
    method = None if args.method == "lm" else args.method
    rec = syn.recover(data, schedule=schedule, law=law, method=method, progress=not args.no_progress, log=log,
                      max_iter=args.max_iter, known_vertices=args.known_vertices, starts=args.starts)
    res = rec["result"]
    errs = core.errors(res.values, data.truth)
    out = {"synthetic": True, "throws": args.throws, "steps": args.steps, "noise_m": args.noise,
           "restitution_target": args.restitution_target, "known_vertices": args.known_vertices,
           "schedule": args.schedule, "truth": _jsonable(data.truth), "start": syn.START,
           "values": res.values, "loss": res.loss, "errors": errs,
           "within_tolerance": core.within_tolerance(errs), "rollouts": rec["rollouts"],
           "wall_time_s": rec["wall_time_s"], "stages": rec["stages"],
           "total_time_s": time.perf_counter() - t0, "units": _units("m")}
    if args.plot:
        hist = [(label, h) for label, h in rec["histories"] if h]
        if hist:
            out["plot"] = str(args.plot)
            out["_plot"] = lambda: _plot(hist, args.plot, _jsonable(data.truth))
    return out


# bytes a fit needs per engine step of a window (the reverse-mode tape of the rollout: states,
# contact Jacobians and the LCP of up to 4 contacts in float64, and the Jacobian's copies): measured
# 9.6-10.8 kB (peak RSS of `sysid --params mu --max-iter 1` on 10 windows of 4 samples at --substeps
# 50, 500, 2000: +195 MB for 18 000 more window steps, +578 MB for 60 000 more), rounded up
BYTES_PER_WINDOW_STEP = 12 * 1024


def check_memory_for_data(data, window: int, substeps: int, stride: int) -> None:
    """``MemoryError`` before fitting if the windows' rollouts (every window of ``window`` samples,
    ``substeps`` engine steps each, differentiated in reverse mode) cannot fit in memory."""
    from ..cliargs import check_memory

    windows = sum(max(0, (len(t) - 1 - window) // stride + 1) for t in data.trajs)
    steps = windows * window * substeps
    check_memory(steps * BYTES_PER_WINDOW_STEP,
                 f"sysid: {windows} windows x {window} samples x {substeps} engine steps", 
                 "use a smaller --substeps or --window, a larger --stride or fewer --max-trajectories")


def check_memory_for_synthetic(throws: int, steps: int) -> None:
    """``MemoryError`` before simulating if the synthetic throws and their windows cannot fit."""
    from ..cliargs import check_memory

    check_memory(throws * (steps + 1) * (2 * 13 * 8 + 2 * BYTES_PER_WINDOW_STEP),
                 f"sysid --synthetic --throws {throws} --steps {steps}", "use fewer --throws or --steps")


def run(args: argparse.Namespace) -> int:
    from ..cliargs import optional_outputs

    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    if args.synthetic == bool(args.data):
        raise ValueError("give exactly one of --data FILE.npz or --synthetic")
    if args.synthetic and args.sample_period is not None:
        from .synthetic import DT, SAMPLE_EVERY

        raise ValueError(f"--sample-period is the sample period of a --data file; the synthetic data are sampled "
                         f"every {DT * SAMPLE_EVERY:g} s")
    out = _run_synthetic(args, log) if args.synthetic else _run_data(args, log)
    plot = out.pop("_plot", None)
    out = _jsonable(out)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k in ("values", "loss", "errors", "nominal_in_data", "rollouts", "wall_time_s", "plot", "error"):
            if k in out:
                print(f"{k}: {out[k]}")
        if "units" in out:
            print("units:", {k: v for k, v in out["units"].items() if k in ("mu", "restitution", "ground", "vertices",
                                                                         "mass", "loss")})
    # the result is out: now the optional figure (a failure there is one line and exit status 2)
    failed = optional_outputs(*([("--plot", plot)] if plot else []))
    return failed or (1 if "error" in out else 0)


def register(sub) -> None:
    from ..cliargs import nonnegative_float, output_figure, positive_float, positive_int, seed

    p = sub.add_parser(
        "sysid", help="identify friction, restitution, ground, mass, geometry from trajectories",
        description="Fits physical parameters by short-window multiple shooting. Lengths are in the data's unit (m for "
                    "simulate files; toss files may set length_unit_m), time in s. The defaults are the best measured "
                    "configuration (docs/sysid.md: Levenberg-Marquardt; with --synthetic the staged schedule and the "
                    "position bounce target). This family follows no paper's setup, so there is no --preset.")
    p.add_argument("--data", default=None,
                   help="trajectories .npz (toss format with 'lengths', or simulate format; default: none, give "
                        "--data or --synthetic)")
    p.add_argument("--synthetic", action="store_true", help="run the synthetic recovery (hidden truth)")
    p.add_argument("--params", default="mu,restitution,ground",
                   help="comma-separated: mu, mu_aniso, restitution, mass, inertia, ground, ground_normal, vertices")
    p.add_argument("--init", default="",
                   help="initial guesses, e.g. mu=0.5,restitution=0.5,ground=0 (the defaults; ground in length units)")
    p.add_argument("--method", choices=("lm", "adam", "nelder-mead"), default="lm",
                   help="lm: Levenberg-Marquardt (best measured); adam; nelder-mead: derivative-free baseline")
    p.add_argument("--window", type=positive_int, default=None,
                   help="samples per window (multiple shooting; default 4, 5 with --synthetic) (samples)")
    p.add_argument("--substeps", type=positive_int, default=None,
                   help="engine steps per sample (steps); default: the data's own when the file records its engine "
                        "step (jaxcontact simulate: 1; --synthetic: 5), and a different value is refused; for "
                        "measured data (no engine step recorded) 4")
    p.add_argument("--sample-period", type=positive_float, default=None,
                   help="time between two samples of --data (s); default: the file's 'dt' (required for a file that "
                        "records none; a different value is refused)")
    p.add_argument("--stride", type=positive_int, default=None, help="samples between window starts (default: window) (samples)")
    p.add_argument("--starts", default=None,
                   help="window start-state components fitted per window, comma-separated from pos, vel, rot, angvel "
                        "(for noisy observations; default: none with --data, the schedule's with --synthetic; "
                        "'' for none)")
    p.add_argument("--kappa", type=nonnegative_float, default=0.0,
                   help="> 0: fit with the smoothed law (relaxation kappa, (m/s)^2 in SI data); 0: the hard LCP law")
    p.add_argument("--max-iter", type=positive_int, default=None,
                   help="cap on optimiser iterations (iterations; default: the method's or the schedule's own)")
    p.add_argument("--max-trajectories", type=positive_int, default=None,
                   help="use only the first N trajectories (trajectories; default: all)")
    p.add_argument("--throws", type=positive_int, default=20, help="--synthetic: number of throws (throws)")
    p.add_argument("--steps", type=positive_int, default=400, help="--synthetic: engine steps per throw (steps of 2 ms)")
    p.add_argument("--noise", type=nonnegative_float, default=0.0, help="--synthetic: position noise std (m)")
    p.add_argument("--seed", type=seed, default=0, help="--synthetic: seed of the throws and the noise (integer)")
    p.add_argument("--known-vertices", action="store_true",
                   help="--synthetic: take the true vertex set as known, fit mu, restitution, ground (reduced case)")
    p.add_argument("--schedule", choices=("default", "grid", "noisy", "random_start", "random_start_noisy"),
                   default="default",
                   help="--synthetic: the named schedule sysid.SCHEDULES[NAME]: default (sysid.DEFAULT_SCHEDULE, "
                        "which is random_start_noisy; with --known-vertices the known-geometry schedule), grid (the "
                        "earlier default: a (mu, restitution) grid, for a start near the truth on noise-free "
                        "throws, a fifth of the default's rollouts), noisy (overlapping windows, its last stage ended by the smoothed-loss polish and "
                        "least-trimmed-squares reselection), random_start (a start far from the truth, noise-free "
                        "throws), random_start_noisy (random_start's global stages, then noisy's last stage); "
                        "when each is the better choice and what it costs: docs/sysid.md")
    p.add_argument("--cone", choices=("elliptic", "box"), default="elliptic",
                   help="the fitted law's friction set (and --synthetic's data's): elliptic, Coulomb's disc, or box, the "
                        "square of the ContactNets and dacm presets (default: elliptic, the engine's; docs/sysid.md)")
    p.add_argument("--restitution-target", choices=("position", "velocity"), default="position",
                   help="--synthetic: the CoulombLCP bounce target of the data and the fit (docs/sysid.md)")
    p.add_argument("--plot", type=output_figure, default=None,
                   help='PNG of the loss and the parameters over iterations (needs pip install "jaxcontact[plot]"; '
                        "default: no figure)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)
