"""System identification from random starts, per gradient mode (issue 23).

Noise-free synthetic throws (``sysid.synthetic.make_synthetic``: 0.1 m, 0.37 kg box with a vertex
set 10 % off the cube, μ = 0.27, ε = 0.1, ground 13 mm, position-consistent restitution target,
h = 2 ms, sampled at 100 Hz). Every start draws μ ~ U(0.05, 1.0), ε ~ U(0, 0.8), the ground height
~ truth + U(−2, 2) cm and every vertex coordinate ~ truth × (1 + U(−0.2, 0.2)), then runs *plain*
Levenberg–Marquardt (``sysid.fit(method="lm")``: no kinematic stage, no grid, no scans, no staged
schedule, no fitted window starts) on μ, ε, ground height and the 24 vertex coordinates with the
windowed loss of ``sysid.Problem`` (5-sample windows, 5 engine steps per sample).

A start *recovers* when μ and ε are within 1 % (relative), every vertex within 1 % (worst
relative vertex error, as ``sysid.errors``) and the ground height within 1 mm (1 % of the 0.1 m
body size). Rollouts count window simulations: one per window per loss evaluation and per
Jacobian for the exact and relaxed modes, 2·N + 1 per window per Jacobian for the randomized one
(N antithetic pairs).

Modes: ``exact``; ``relaxed:ELL`` (``CoulombLCP(gradient="relaxed", smoothing_length=ELL)``, ELL in
metres); ``randomized:ELL:N`` (LM with the antithetic randomized-smoothing Jacobian of the residuals,
``jaxcontact.randomized_smoothing.randomized_jacobian``, σ = ELL / body size in the scaled unconstrained
coordinates of ``sysid.ParamSpec`` — ELL on lengths, ELL/0.1 m relative on μ and ε at unit slope —
and N pairs; forward exact).

Recipes around a mode (not gradient modes; they ask what plain LM still lacks): ``geometry+MODE``
runs ``sysid.kinematic.fit_geometry`` on the ground and the vertices from the random start first
(no rollouts; the random μ and ε are kept); ``MODE+trim`` then runs LM again (half the iterations)
with the 10 % windows of largest residual dropped (``schedule.trim_windows``); ``+trim+polish``
finishes with LM on all windows (half the iterations); ``+smooth=SIGMA:PAIRS`` then runs LM on the
sample-average smoothed loss (``sysid.optim.smoothed_least_squares``: PAIRS antithetic pairs of
fixed Gaussian perturbations of scale SIGMA in the scaled coordinates, 30 % of the iterations) and
LM on the hard loss again (half), and keeps that only where it lowers the hard loss;
``+smooth=S1/S2/...:PAIRS`` runs one such cycle per σ in order (``schedule.smooth_polish`` with a
sequence: a continuation). ``+retrim`` last (repeated: one round each; ``schedule.trim_polish``):
LM with the 10 % windows of largest residual at the end point dropped, then LM on all windows
(half the iterations each), kept only where it lowers the hard loss (near the truth the windows
left with most of the misfit are those whose contact mode differs from the data's). A leading
``reflect+`` fits ε in the reflected coordinate (``Problem.build(restitution_coordinate="reflect")``:
slope ±1 up to both bounds) instead of the sigmoid, in every stage. No grid and no scans in any of them.
``schedule:NAME`` runs the library's ``sysid.NAME_SCHEDULE`` through ``sysid.staged_fit`` (its own
windows, chosen from the parameters after its geometry stage; NAME one of ``sysid.SCHEDULES``,
``schedule:default`` the default, ``random_start_noisy``): ``schedule:random_start`` is the
recipe ``reflect+geometry+exact+trim+polish+retrim`` as the library ships it.

    python -m benchmarks sysid_random_starts --modes exact,relaxed:1e-4 --starts 50 --data-seed 1
    python -m benchmarks sysid_random_starts --diagnose 3 --data-seed 1 --start-seed 200   # one start's landscape
    python -m benchmarks sysid_random_starts --merge OTHER.json   # add another run's modes to --out
    python -m benchmarks sysid_random_starts --modes MODE --start-list 5,7,0 --out PART.json   # exactly these starts, in order
    python -m benchmarks sysid_random_starts --modes P+smooth=1e-3/1e-3/1e-3:4 --continue-from RUN.json   # only the new cycle
    python -m benchmarks sysid_random_starts --check-grammar   # the mode grammar on known cases (seconds)
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

NAMES = ("mu", "restitution", "ground", "vertices")


def parse_mode(spec: str) -> dict:
    core, k = strip_retrims(spec)
    if k:  # last, k times: trimmed LM with the worst windows at the end point, then LM; kept if better
        return dict(parse_mode(core), name=spec, retrim=k)
    if "+smooth=" in spec:  # finally LM on the smoothed loss (optim.smoothed_least_squares), then exact LM
        head, _, tail = spec.partition("+smooth=")
        try:
            sigma, pairs = tail.split(":")
            sigmas = [float(v) for v in sigma.split("/")]
            smooth = {"sigma": sigmas[0] if len(sigmas) == 1 else tuple(sigmas), "pairs": int(pairs)}
        except ValueError:
            raise SystemExit(f"bad mode {spec!r}: +smooth=SIGMA:PAIRS or +smooth=SIGMA1/SIGMA2/...:PAIRS at the end") from None
        return dict(parse_mode(head), name=spec, smooth=smooth)
    if spec.startswith("reflect+"):  # ε in the reflected coordinate (no flat ends) throughout
        return dict(parse_mode(spec[len("reflect+"):]), name=spec, reflect=True)
    if spec.startswith("geometry+"):  # the kinematic geometry stage first, then the mode's plain LM
        return dict(parse_mode(spec[len("geometry+"):]), name=spec, geometry=True)
    if "+polish" in spec:  # then LM once more on all windows (after +trim), +polish=MODE: with MODE's Jacobian
        head, _, tail = spec.partition("+polish")
        polish = parse_mode(tail[1:]) if tail.startswith("=") else parse_mode("exact")
        if tail and not tail.startswith("="):
            raise SystemExit(f"bad mode {spec!r}: +polish or +polish=MODE at the end")
        return dict(parse_mode(head), name=spec, polish=polish)
    if spec.endswith("+trim"):  # then LM again with the 10 % worst windows dropped (schedule.trim_windows)
        return dict(parse_mode(spec[: -len("+trim")]), name=spec, trim=0.1)
    parts = spec.split(":")
    if parts[0] == "schedule" and len(parts) == 2:  # a library schedule through sysid.staged_fit
        from jaxcontact.sysid import schedule

        name = parts[1].upper() + "_SCHEDULE"
        if not isinstance(getattr(schedule, name, None), tuple):
            raise SystemExit(f"bad mode {spec!r}: no sysid.{name}")
        return {"name": spec, "kind": "schedule", "schedule": name}
    if parts[0] == "exact" and len(parts) == 1:
        return {"name": spec, "kind": "exact"}
    if parts[0] == "relaxed" and len(parts) == 2:
        return {"name": spec, "kind": "relaxed", "length": float(parts[1])}
    if parts[0] == "adaptive" and len(parts) == 1:
        return {"name": spec, "kind": "adaptive"}
    if parts[0] == "randomized" and len(parts) == 3:
        return {"name": spec, "kind": "randomized", "length": float(parts[1]), "pairs": int(parts[2])}
    raise SystemExit(f"bad mode {spec!r}: exact, relaxed:ELL, adaptive or randomized:ELL:N, each optionally "
                     "prefixed by geometry+ (and reflect+ before that), or schedule:NAME")


def random_start(rng, truth, template):
    import jax.numpy as jnp

    from jaxcontact.types import Ground

    V = np.asarray(truth["vertices"]) * (1.0 + rng.uniform(-0.2, 0.2, size=np.shape(truth["vertices"])))
    mu, eps = rng.uniform(0.05, 1.0), rng.uniform(0.0, 0.8)
    eps = max(eps, 1e-3)  # the sigmoid coordinate needs ε inside (0, 1)
    h = float(truth["ground"]) + rng.uniform(-0.02, 0.02)
    law = template.law.replace(mu=jnp.full_like(template.law.mu, mu), restitution=jnp.asarray(eps))
    return template.replace(body=template.body.replace(vertices=jnp.asarray(V)), ground=Ground.flat(3, h), law=law)


def recovered(values, truth, rel=0.01, ground_abs=0.001):
    from jaxcontact.sysid import errors

    e = errors(values, truth)
    ok = (e["mu"]["rel"] <= rel and e["restitution"]["rel"] <= rel and e["vertices"]["rel"] <= rel
          and e["ground"]["abs"] <= ground_abs)
    return bool(ok), e


def randomized_problem_jac(prob, length, pairs, seed):
    """res_jac(x) -> (r, J) with J the antithetic randomized-smoothing Jacobian (and the count)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact.randomized_smoothing import randomized_jacobian

    sigma = length / prob.spec.length
    key = [jax.random.PRNGKey(seed)]
    est = jax.jit(randomized_jacobian(prob.residuals, sigma, pairs, batch_size=max(1, min(pairs, 8))))

    def res_jac(x):
        key[0], k = jax.random.split(key[0])
        r, J = est(jnp.asarray(x), k)
        return np.asarray(r), np.asarray(J)

    return res_jac


LEVELS = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5)


CONE = None
"""``--cone``: the friction set of the data's and the fit's law (None: ``synthetic_law()``'s, the default disc)."""


def with_cone(law):
    """``law`` with its solver's cone set to ``CONE`` (unchanged when None)."""
    return law if CONE is None else dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=CONE))


def build_problems(data, mode):
    """The mode's Problem(s), built once (same windows, chosen from the nominal start, for every
    start; one compilation per law). adaptive: one per level of ``LEVELS`` and the exact one."""
    from jaxcontact.sysid import Problem
    from jaxcontact.sysid.synthetic import SAMPLE_EVERY, start_params, synthetic_law

    law = with_cone(synthetic_law())
    p0 = start_params(law)
    coord = "reflect" if mode.get("reflect") else "sigmoid"
    build = lambda lw: Problem.build(data, NAMES, p0, law=lw, window=5, substeps=SAMPLE_EVERY,
                                     restitution_coordinate=coord)
    if mode["kind"] == "relaxed":
        return {"main": build(dataclasses.replace(law, gradient="relaxed", smoothing_length=mode["length"]))}
    probs = {"main": build(law)}
    pm = mode.get("polish")
    if pm and pm["kind"] == "relaxed":
        probs["polish"] = probs["main"].with_law(dataclasses.replace(law, gradient="relaxed", smoothing_length=pm["length"]))
    if mode["kind"] == "adaptive":
        for ell in LEVELS:
            probs[ell] = probs["main"].with_law(dataclasses.replace(law, gradient="relaxed", smoothing_length=ell))
    return probs


def adaptive_res_jac(probs, counter):
    """The Jacobian of the relaxed mode at ℓ = the largest level ≤ the current RMS residual (m),
    the exact one below the smallest level: the smoothing follows the misfit."""
    def res_jac(x):
        r = np.asarray(probs["main"].residuals(x))
        rms = float(np.sqrt(r @ r))  # the window weights make ‖r‖² the mean square residual (m²)
        ell = next((lv for lv in LEVELS if lv <= rms), None)
        counter.append(ell)
        prob = probs["main"] if ell is None else probs[ell]
        return prob.residuals_and_jacobian(x)

    return res_jac


def run_start(probs, mode, p0, max_iter, seed):
    from jaxcontact.sysid import FitResult, kinematic, optim

    prob = probs["main"]
    t0 = time.perf_counter()
    if mode["kind"] == "schedule":  # the library's staged fit, its own windows and stages
        from jaxcontact.sysid import schedule, staged_fit
        from jaxcontact.sysid.synthetic import SAMPLE_EVERY, synthetic_law

        try:
            out = staged_fit(prob.data, p0, with_cone(synthetic_law()), getattr(schedule, mode["schedule"]), substeps=SAMPLE_EVERY)
        except optim.FitError as err:
            return None, None, float("nan"), None, f"FitError: {err}", time.perf_counter() - t0, prob.num_windows, [], None
        r = out["result"]
        return (dict(r.values), out["rollouts"], float(r.loss), sum(st["iterations"] for st in out["stages"]),
                r.message, time.perf_counter() - t0, r.num_windows, [], np.asarray(r.x, float).tolist())
    if mode.get("geometry"):  # no rollouts: the supported-sample and no-penetration conditions
        p0 = kinematic.fit_geometry(prob.data, p0, ("ground", "vertices"), max_iter=100)["params"].replace(law=p0.law)
    x0 = np.concatenate([prob.spec.pack(p0), np.zeros(prob.size - prob.spec.size)])
    levels = []
    try:
        if mode["kind"] == "randomized":
            rj = randomized_problem_jac(prob, mode["length"], mode["pairs"], seed)
            per_jac = 2 * mode["pairs"] + 1
        elif mode["kind"] == "adaptive":
            rj, per_jac = adaptive_res_jac(probs, levels), 2
        else:
            rj, per_jac = prob.residuals_and_jacobian, 1
        r = optim.levenberg_marquardt(rj, prob.residuals, x0, max_iter=max_iter)
        rollouts = (r.loss_evals + r.grad_evals * per_jac) * prob.num_windows
        its = r.iterations
        if mode.get("trim"):
            if mode["kind"] != "exact":
                raise SystemExit("+trim is measured with the exact mode only")
            from jaxcontact.sysid.schedule import trim_windows

            pt, _ = trim_windows(prob, r.x, mode["trim"])
            r = optim.levenberg_marquardt(pt.residuals_and_jacobian, pt.residuals, r.x, max_iter=max_iter // 2)
            rollouts += (r.loss_evals + r.grad_evals) * prob.num_windows
            its += r.iterations
        if mode.get("polish"):
            pm = mode["polish"]
            if pm["kind"] == "randomized":
                rj, per = randomized_problem_jac(prob, pm["length"], pm["pairs"], seed), 2 * pm["pairs"] + 1
            elif pm["kind"] == "relaxed":
                rj, per = probs["polish"].residuals_and_jacobian, 1
            else:
                rj, per = prob.residuals_and_jacobian, 1
            r = optim.levenberg_marquardt(rj, prob.residuals, r.x, max_iter=max_iter // 2)
            rollouts += (r.loss_evals + r.grad_evals * per) * prob.num_windows
            its += r.iterations
        # the trimmed LM's loss is on fewer windows; the later stages compare on all of them
        loss = float(r.loss) if (mode.get("polish") or not mode.get("trim")) else float(prob.loss(r.x))
        res = finish(prob, mode, FitResult.at(prob, r.x, loss, message=r.message), 0, 0, max_iter, seed)
        x, loss, msg = np.asarray(res.x), float(res.loss), res.message
        rollouts, its = rollouts + res.rollouts, its + res.iterations
        values = prob.spec.flat_values(x[: prob.spec.size])
        x = np.asarray(x, float).tolist()
    except optim.FitError as err:
        values, rollouts, loss, its, msg, x = None, None, float("nan"), None, f"FitError: {err}", None
    return values, rollouts, loss, its, msg, time.perf_counter() - t0, prob.num_windows, levels, x


def strip_retrims(spec: str) -> tuple[str, int]:
    """(the mode without its trailing ``+retrim`` rounds, how many there were)."""
    k = 0
    while spec.endswith("+retrim"):
        spec, k = spec[: -len("+retrim")], k + 1
    return spec, k


def finish(prob, mode, res, cycles_done: int, retrims_done: int, max_iter: int, seed: int):
    """The smoothed cycles of ``mode`` after the first ``cycles_done`` (``schedule.smooth_polish``:
    smoothed LM, 30 % of the iterations, then hard LM, half; cycle j with the perturbation seed
    seed + 1000 j, as ``smooth_polish`` seeds a sequence), then its ``+retrim`` rounds after the
    first ``retrims_done`` (``schedule.trim_polish``: the ``RETRIM_FRACTION`` worst windows at the
    point reached dropped, half the iterations each), from the ``FitResult`` ``res`` (its loss on
    all windows). Each stage is kept only where it lowers the hard loss. Returns the FitResult
    with the added work counted on top of ``res``'s."""
    from jaxcontact.sysid.schedule import RETRIM_FRACTION, smooth_polish, trim_polish

    sm = mode.get("smooth")
    sigmas = np.atleast_1d(sm["sigma"]) if sm else ()
    for j in range(cycles_done, len(sigmas)):
        res, _ = smooth_polish(prob, res, float(sigmas[j]), sm["pairs"], max_iter=max_iter * 3 // 10,
                               polish_iter=max_iter // 2, seed=seed + 1000 * j)
    for _ in range(retrims_done, mode.get("retrim", 0)):
        res, _ = trim_polish(prob, res, RETRIM_FRACTION, max_iter // 2)
    return res


def base_mode(spec: str, names) -> tuple[str, int, int] | None:
    """The mode among ``names`` that ``spec`` extends by further stages, with the smoothed cycles and
    the ``+retrim`` rounds it already ran: for ``P+smooth=S1/S2:N+retrim+retrim`` the first present of
    the same with one round, with none, ``P+smooth=S1:N`` and ``P`` (None if none is)."""
    core, k = strip_retrims(spec)
    for j in range(k - 1, -1, -1):
        if core + "+retrim" * j in names:
            return core + "+retrim" * j, n_cycles(core), j
    head, sep, tail = core.partition("+smooth=")
    if not sep:
        return None
    sigma, _, pairs = tail.partition(":")
    cycles = sigma.split("/")
    for m in range(len(cycles) - 1, -1, -1):
        name = f"{head}+smooth={'/'.join(cycles[:m])}:{pairs}" if m else head
        if name in names:
            return name, m, 0
    return None


def n_cycles(spec: str) -> int:
    """How many smoothed cycles the mode runs."""
    head, sep, tail = strip_retrims(spec)[0].partition("+smooth=")
    return len(tail.partition(":")[0].split("/")) if sep else 0


def continue_start(probs, mode, row, done, done_retrims, max_iter, seed):
    """The remaining smoothed cycles of ``mode`` (those after the first ``done``), then its remaining
    ``+retrim`` rounds (after the first ``done_retrims``), from the end point
    ``row["x"]`` of a run of its base mode on the same start: cycle j with the perturbation seed
    ``seed + 1000 j``, as ``schedule.smooth_polish`` seeds a sequence, so the result is the one a
    run of the whole mode gives (``finish``). Work and wall time add to the row's. Same returns as
    run_start."""
    from jaxcontact.sysid import FitResult

    prob = probs["main"]
    if row.get("x") is None:  # the base run failed (FitError): so does this one
        return None, None, float("nan"), None, row["message"], row["wall_s"], prob.num_windows, [], None
    t0 = time.perf_counter()
    n = prob.spec.size
    res = FitResult.at(prob, row["x"], message=row["message"])
    if not np.isclose(res.loss, row["loss"], rtol=1e-6, atol=0.0):
        raise SystemExit(f"start {row['start']}: the loss at the stored end point is {res.loss:.6e}, the run recorded "
                         f"{row['loss']:.6e}: not the same data or code")
    res = finish(prob, mode, res, done, done_retrims, max_iter, seed)
    x, rollouts, its = np.asarray(res.x), res.rollouts, res.iterations
    values = prob.spec.flat_values(x[:n])
    wall = row["wall_s"] + time.perf_counter() - t0
    return (values, row["rollouts"] + rollouts, float(res.loss), row["iterations"] + its, res.message,
            wall, prob.num_windows, [], np.asarray(x, float).tolist())


def rigid_residual(V, Vt) -> tuple[float, float]:
    """(max vertex error (m) after the best rotation + translation of V onto Vt, that rotation (deg))."""
    mc, tc = V.mean(0), Vt.mean(0)
    U, _, Wt = np.linalg.svd((V - mc).T @ (Vt - tc))
    R = Wt.T @ np.diag([1.0, 1.0, np.sign(np.linalg.det(Wt.T @ U.T))]) @ U.T
    err = np.abs((V - mc) @ R.T + tc - Vt).max()
    return float(err), float(np.degrees(np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))))


def diagnose(a, k):
    """Fit start k with the exact mode, then: the loss on the segment from the fit to the truth
    (a barrier is a rise above the fit's loss), the vertex error left after the best rigid
    alignment (is the fit's vertex set a moved copy of the truth, or another shape?), and how
    much of each Jacobian column's squared norm its largest window holds at the truth."""
    import jax
    import jax.numpy as jnp

    from jaxcontact.sysid import optim
    from jaxcontact.sysid.synthetic import make_synthetic, start_params, synthetic_law, truth_params

    data = make_synthetic(n_throws=a.throws, steps=a.steps, seed=a.data_seed, law=with_cone(synthetic_law()))
    truth = data.truth
    prob = build_problems(data, parse_mode("exact"))["main"]
    p0 = random_start(np.random.default_rng([a.start_seed, k]), truth, start_params())
    x0 = prob.spec.pack(p0)
    r = optim.levenberg_marquardt(prob.residuals_and_jacobian, prob.residuals, x0, max_iter=a.max_iter)
    x1, xt = np.asarray(r.x), prob.spec.pack(truth_params(truth))
    ts = np.linspace(0.0, 1.0, 41)
    line = np.asarray(jax.jit(jax.vmap(lambda t: jnp.sum(prob.residuals(x1 + t * (xt - x1)) ** 2)))(jnp.asarray(ts)))
    Vt = np.asarray(truth["vertices"])
    V0, V1 = np.asarray(p0.body.vertices), np.asarray(prob.spec.flat_values(x1)["vertices"])
    _, J = prob.residuals_and_jacobian(xt)
    cn = np.sum(np.asarray(J).reshape(prob.num_windows, -1, prob.spec.size) ** 2, axis=1)
    share = cn.max(0) / np.maximum(cn.sum(0), 1e-300)
    ok, e = recovered(prob.spec.flat_values(x1), truth)
    rig0, rig1 = rigid_residual(V0, Vt), rigid_residual(V1, Vt)
    out = {"command": a.command, "start": k,
           "recovered": ok, "errors": e, "fit_loss": float(r.loss), "message": r.message, "iterations": r.iterations,
           "segment_to_truth": {"t": ts.tolist(), "loss": line.tolist(),
                                "max_rise_over_fit_loss": float(line.max() / line[0] - 1.0),
                                "t_of_max": float(ts[int(np.argmax(line))])},
           "vertices_after_rigid_alignment_m": {"start": rig0[0], "fit": rig1[0]},
           "rigid_rotation_deg": {"start": rig0[1], "fit": rig1[1]},
           "largest_window_share_of_jacobian_column_at_truth": {"median": float(np.median(share)),
                                                                "max": float(share.max()),
                                                                "columns_over_0.9": int((share > 0.9).sum())}}
    return out


def check_grammar() -> int:
    """Check the mode grammar (``parse_mode``, ``start_order``, ``base_mode``: pure Python, no
    compilation) on known cases; ``--check-grammar`` runs it (tests/test_benchmark_modes.py).
    Returns the number of checks; an AssertionError names the first one that fails."""
    import re

    n = 0

    def check(ok, what):
        nonlocal n
        assert ok, what
        n += 1

    def refused(fn, arg, match, *rest):
        try:
            fn(arg, *rest)
        except SystemExit as err:
            check(re.search(match, str(err)) is not None, f"{arg!r}: {err}")
        else:
            raise AssertionError(f"{arg!r} was accepted")

    # recipes parse into their stages
    m = parse_mode("geometry+exact+trim+polish+smooth=1e-3:4")
    check((m["kind"], m["geometry"], m["trim"], m["polish"]["kind"]) == ("exact", True, 0.1, "exact"), m)
    check(m["smooth"] == {"sigma": 1e-3, "pairs": 4}, m)
    c = parse_mode("geometry+exact+trim+polish+smooth=3e-3/1e-3:8")
    check(c["smooth"] == {"sigma": (3e-3, 1e-3), "pairs": 8}, c)
    check(parse_mode("randomized:1e-3:16") == {"name": "randomized:1e-3:16", "kind": "randomized",
                                               "length": 1e-3, "pairs": 16}, "randomized")
    r = parse_mode("reflect+geometry+exact+trim+polish+smooth=1e-3:4+retrim")  # ε reflected in every stage
    check(r["reflect"] and r["geometry"] and r["retrim"] == 1 and r["smooth"] == {"sigma": 1e-3, "pairs": 4}, r)
    check("reflect" not in m, m)
    check(parse_mode("schedule:random_start") == {"name": "schedule:random_start", "kind": "schedule",
                                                  "schedule": "RANDOM_START_SCHEDULE"}, "schedule")
    for bad in ("exact+smooth=1e-3", "exact+smooth=a/b:4", "relaxed", "exact+polishX", "reflect+", "schedule:nope"):
        refused(parse_mode, bad, "bad mode")
    # a start list runs exactly the given starts, in order
    check(start_order("5,7,0", 1, 0, [50]) == [[5, 7, 0]], "start list")
    check(start_order(None, 2, 25, [2, 3]) == [[25, 26], [25, 26, 27]], "first start")
    for bad in ("", "3,3", "-1,2"):
        refused(start_order, bad, "start-list", 1, 0, [50])
    refused(start_order, "1,2", "one mode", 2, 0, [50, 50])
    # --continue-from finds the mode a longer continuation extends
    names = {"g+exact+trim+polish", "g+exact+trim+polish+smooth=1e-3:4", "g+exact+trim+polish+smooth=1e-3/1e-3:4"}
    cases = [("g+exact+trim+polish+smooth=1e-3/1e-3/1e-3:4", names, ("g+exact+trim+polish+smooth=1e-3/1e-3:4", 2, 0)),
             ("g+exact+trim+polish+smooth=1e-3/3e-3:4", names, ("g+exact+trim+polish+smooth=1e-3:4", 1, 0)),
             ("g+exact+trim+polish+smooth=3e-3:4", names, ("g+exact+trim+polish", 0, 0)),
             # other pairs, another head, or no smoothing: nothing to continue
             ("g+exact+trim+polish+smooth=1e-3/1e-3:8", names - {"g+exact+trim+polish"}, None),
             ("h+exact+smooth=1e-3:4", names, None),
             ("g+exact+trim+polish", names, None),
             # +retrim rounds (last): from the mode with fewer rounds, else from a shorter one
             ("g+exact+trim+polish+smooth=1e-3/1e-3:4+retrim", names, ("g+exact+trim+polish+smooth=1e-3/1e-3:4", 2, 0)),
             ("g+exact+trim+polish+retrim", names, ("g+exact+trim+polish", 0, 0)),
             ("g+exact+trim+polish+smooth=1e-3/3e-3:4+retrim", names, ("g+exact+trim+polish+smooth=1e-3:4", 1, 0)),
             ("g+exact+trim+polish+retrim+retrim+retrim", names | {"g+exact+trim+polish+retrim"},
              ("g+exact+trim+polish+retrim", 0, 1))]
    for spec, have, want in cases:
        got = base_mode(spec, have)
        check(got == want, f"base_mode({spec!r}) = {got}, not {want}")
    m = parse_mode("geometry+exact+trim+polish+smooth=1e-3/1e-3:4+retrim+retrim")
    check(m["retrim"] == 2 and m["smooth"] == {"sigma": (1e-3, 1e-3), "pairs": 4} and m["trim"] == 0.1, m)
    check("retrim" not in parse_mode("geometry+exact+trim+polish"), "no retrim")
    return n


def arguments(ap):
    """sysid_random_starts' own options (shared: ``--steps`` per throw, ``--out`` the results' JSON or folder)."""
    ap.add_argument("--modes", default="exact,relaxed:1e-4", help="comma-separated modes (module doc)")
    ap.add_argument("--starts", default="50", help="starts per mode: one number, or one per mode (comma-separated)")
    ap.add_argument("--throws", type=int, default=20)
    ap.add_argument("--data-seed", type=int, default=1, help="throw seed (0 = validation, 1 = report)")
    ap.add_argument("--start-seed", type=int, default=100)
    ap.add_argument("--first-start", type=int, default=0, help="index of the first start (to split a run)")
    ap.add_argument("--start-list", default=None, metavar="K,K,...",
                    help="run exactly these start indices, in this order (instead of --starts/--first-start; "
                         "one mode only)")
    ap.add_argument("--continue-from", default=None, metavar="FILE",
                    help="run only the stages the mode (one mode) adds to a mode recorded in FILE: further smoothed "
                         "cycles (P+smooth=S1/.../Sk:N over P+smooth=S1/.../Sm:N, m < k) and/or +retrim rounds, from "
                         "its end points (same data, seeds and --max-iter): the same result as running the whole mode")
    ap.add_argument("--max-iter", type=int, default=100, help="LM iterations per start")
    ap.add_argument("--default", default=None, help="the mode reported as the default")
    ap.add_argument("--recommended", default=None,
                    help="the recipe reported as the recommended one (a mode present in the results)")
    ap.add_argument("--resume", action="store_true", help="keep finished starts of the --out file")
    ap.add_argument("--diagnose", type=int, default=None, metavar="K",
                    help="only diagnose start K with the exact mode (diagnose()); writes --out")
    ap.add_argument("--merge", default=None, metavar="FILE",
                    help="add the runs of another results file (same data and seeds) to --out, keeping its command")
    ap.add_argument("--cone", choices=["elliptic", "box"], default=None,
                    help="the friction set of the data's and the fit's law (default: the law's, the disc)")
    ap.add_argument("--check-grammar", action="store_true",
                    help="check the mode grammar on known cases (check_grammar; no compilation) and exit")


def run(a, results):
    """``python -m benchmarks sysid_random_starts``: the starts of each mode into ``results``, written as they go."""
    global CONE
    CONE = a.cone
    if a.check_grammar:
        print(f"mode grammar: {check_grammar()} checks passed")
        return 0

    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.sysid.synthetic import make_synthetic, start_params, synthetic_law

    if a.diagnose is not None:
        out = diagnose(a, a.diagnose)
        results.write(out)
        print(json.dumps({k: v for k, v in out.items() if k != "segment_to_truth"}, indent=1))
        print("segment max rise over the fit's loss:", out["segment_to_truth"]["max_rise_over_fit_loss"])
        return
    if a.merge is not None:
        other, doc = json.loads(Path(a.merge).read_text()), results.load()
        if other["data"] != doc["data"]:
            raise SystemExit(f"{a.merge}: other data ({other['data']}) than {results.json} ({doc['data']})")
        doc.setdefault("merged", []).append({"command": other["command"], "modes": list(other["runs"])})
        for name, rows in other["runs"].items():  # a mode's starts split over runs are joined
            mine = doc["runs"].setdefault(name, [])
            seen = {r["start"] for r in mine}
            mine += [r for r in rows if r["start"] not in seen]
            mine.sort(key=lambda r: r["start"])
        summarize(doc, a.default, a.recommended)
        results.write(doc, render(doc))
        print(render(doc))
        return
    modes = [parse_mode(m) for m in a.modes.split(",")]
    starts = [int(s) for s in a.starts.split(",")]
    starts = starts * len(modes) if len(starts) == 1 else starts
    order = start_order(a.start_list, len(modes), a.first_start, starts)
    data = make_synthetic(n_throws=a.throws, steps=a.steps, seed=a.data_seed, law=with_cone(synthetic_law()))
    truth = data.truth
    doc = results.load() if a.resume else {}
    doc.update({
        "command": a.command,
        "data": {"throws": a.throws, "steps": a.steps, "data_seed": a.data_seed, "noise": 0.0, "source": data.source},
        "criterion": "mu, restitution within 1 % relative; worst vertex within 1 % relative; ground within 1 mm "
                     "(1 % of the 0.1 m body size)",
        "optimizer": f"plain Levenberg-Marquardt (sysid.optim.levenberg_marquardt), max_iter {a.max_iter}, no fitted window starts",
    })
    runs = doc.setdefault("runs", {})
    base = None
    if a.continue_from is not None:
        prev = json.loads(Path(a.continue_from).read_text())
        if len(modes) != 1:
            raise SystemExit("--continue-from: give one mode")
        if prev["data"] != doc["data"] or prev["optimizer"] != doc["optimizer"]:
            raise SystemExit(f"--continue-from: {a.continue_from} has other data or optimizer settings")
        found = base_mode(modes[0]["name"], prev["runs"])
        if found is None:
            raise SystemExit(f"--continue-from: no mode in {a.continue_from} that {modes[0]['name']!r} extends by "
                             "smoothed cycles or +retrim rounds")
        base = {"name": found[0], "done": found[1], "done_retrims": found[2], "rows": {r["start"]: r for r in prev["runs"][found[0]]}}
        doc["continued_from"] = {"file": a.continue_from, "mode": found[0], "command": prev["command"]}
    for mode, ks in zip(modes, order):
        rows = runs.setdefault(mode["name"], [])
        probs = build_problems(data, mode)
        done = {r["start"] for r in rows}
        for k in ks:
            if k in done:
                continue
            rng = np.random.default_rng([a.start_seed, k])
            p0 = random_start(rng, truth, start_params())
            if base is not None:
                if k not in base["rows"]:
                    raise SystemExit(f"--continue-from: start {k} is not in {a.continue_from}")
                values, rollouts, loss, its, msg, wall, nwin, levels, x = continue_start(
                    probs, mode, base["rows"][k], base["done"], base["done_retrims"], a.max_iter, a.start_seed + k)
            else:
                values, rollouts, loss, its, msg, wall, nwin, levels, x = run_start(probs, mode, p0, a.max_iter,
                                                                                    a.start_seed + k)
            ok, e = recovered(values, truth) if values is not None else (False, None)
            rows.append({"start": k, "recovered": ok, "errors": e, "rollouts": rollouts, "loss": loss, "iterations": its,
                         "message": msg, "wall_s": wall, "windows": nwin,
                         "levels": [None if lv is None else float(lv) for lv in levels],
                         "start_values": {"mu": float(p0.law.mu[0]), "restitution": float(p0.law.restitution),
                                          "ground": float(p0.ground.height)},
                         "x": x})  # the end point (scaled unconstrained coordinates of sysid.ParamSpec)
            print(f"{mode['name']:>22} start {k:2d}: {'OK ' if ok else 'no '} loss {loss:.3e} it {its} "
                  f"rollouts {rollouts} {wall:.0f} s  {msg}", flush=True)
            summarize(doc, a.default)
            results.write(doc)
    summarize(doc, a.default, a.recommended)
    results.write(doc, render(doc))
    print(render(doc))


def start_order(start_list, n_modes, first_start, starts):
    """The start indices each mode runs, in order: ``start_list`` ("5,7,0") for a single mode, else
    ``first_start`` .. ``first_start + n - 1`` per mode."""
    if start_list is None:
        return [list(range(first_start, first_start + n)) for n in starts]
    if n_modes != 1:
        raise SystemExit("--start-list: give one mode")
    ks = [int(k) for k in start_list.split(",") if k.strip()]
    if not ks or min(ks) < 0 or len(set(ks)) != len(ks):
        raise SystemExit(f"--start-list: distinct indices >= 0, got {start_list!r}")
    return [ks]


def render(doc) -> str:
    """Markdown summary of a results file."""
    lines = [f"# System identification from random starts ({doc['data']['throws']} noise-free throws, "
             f"data seed {doc['data']['data_seed']})", "", f"Command: `{doc['command']}`", ""]
    for m in doc.get("merged", []):
        lines += [f"Runs of {', '.join(m['modes'])} merged from: `{m['command']}`", ""]
    lines += [f"Criterion: {doc['criterion']}. Optimizer: {doc['optimizer']}.", "",
             "| mode | starts | recovered | mean rollouts | median final loss (m²) | median μ err | median ε err | "
             "median ground err (mm) | median worst-vertex err | mean wall s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, rows in doc["runs"].items():
        rs = doc["random_starts"][name]
        ok = [r for r in rows if r["errors"] is not None]
        med = lambda f: float(np.median([f(r) for r in ok])) if ok else float("nan")
        lines.append(
            f"| {name}{' (default)' if doc['random_starts'].get('default') == name else ''}"
            f"{' (recommended)' if doc['random_starts'].get('recommended') == name else ''} | {rs['n_starts']} | "
            f"{rs['fraction_recovered']:.0%} | {rs['mean_rollouts']:.0f} | {med(lambda r: r['loss']):.2e} | "
            f"{med(lambda r: r['errors']['mu']['rel']):.2%} | {med(lambda r: r['errors']['restitution']['rel']):.2%} | "
            f"{med(lambda r: r['errors']['ground']['abs']) * 1e3:.2f} | {med(lambda r: r['errors']['vertices']['rel']):.2%} | "
            f"{rs['mean_wall_s']:.0f} |")
    return "\n".join(lines) + "\n"


def summarize(doc, default, recommended=None):
    """doc["random_starts"]: per mode fraction_recovered, mean_rollouts, n_starts, mean_wall_s;
    "default" (the default gradient mode) and "recommended" (the recipe around it that the docs
    recommend), given here or kept from the file."""
    rs = {}
    for name, rows in doc["runs"].items():
        ok = [r["recovered"] for r in rows]
        ro = [r["rollouts"] for r in rows if r["rollouts"] is not None]
        rs[name] = {"fraction_recovered": float(np.mean(ok)) if ok else None,
                    "mean_rollouts": float(np.mean(ro)) if ro else None, "n_starts": len(rows),
                    "mean_wall_s": float(np.mean([r["wall_s"] for r in rows])) if rows else None}
    if default is not None:
        rs["default"] = default
    elif "default" in doc.get("random_starts", {}):
        rs["default"] = doc["random_starts"]["default"]
    if recommended is not None:
        if recommended not in doc["runs"]:
            raise SystemExit(f"--recommended {recommended!r}: no such mode in the results")
        rs["recommended"] = recommended
    elif "recommended" in doc.get("random_starts", {}):
        rs["recommended"] = doc["random_starts"]["recommended"]
    rs["about"] = ("default: the library's default gradient mode, alone in plain LM; every recipe here uses it. "
                   "recommended: the recipe the docs recommend for random starts (schedule:random_start is "
                   "sysid.RANDOM_START_SCHEDULE through sysid.staged_fit)")
    doc["random_starts"] = rs


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
