"""Where the time of a box-throw rollout goes, and how far a solver change moves the final states.

Two parts, both on the throughput benchmark's workload (``common.box_workload``: 0.1 m cube, μ 0.18,
h = 2 ms, PGS tol 1e-6, max_contacts 4):

* **time** (float32, ``--batch`` bodies × ``--steps`` steps, best of ``--repeats``): µs per
  body-step of ``batch_rollout`` with the default law; with ``NoContact`` (free motion: gravity,
  gyroscopic term, integration); with one fixed PGS sweep (free motion + contact candidates,
  Delassus matrix, right-hand side, one sweep, impulse); with the opt-in warm start on (where the
  code has it); with the eager input validation on; and with the rollout's flag ``Summary``
  (``with_info=True``). Differences of these give the parts:
  free motion · contact problem + first sweep · further sweeps · validation · flags.
  The PGS sweep statistics of the same rollout (``--stats-batch`` bodies): mean sweeps per
  body-step, and the mean over steps of the maximum in each chunk of ``CPU_CHUNK`` bodies (what
  a plain ``vmap`` of the solver loop costs: every body waits for the slowest of its chunk).
* **accuracy** (float64, ``--accuracy-throws``): final positions of the PGS solver, cold and
  warm-started, against the converged solution of the same regularised LCP (Newton on the relaxed
  problem at κ = 1e-18 (m/s)², itself checked against κ = 1e-16).
* **finals** (float64, ``--finals`` throws): the final states are saved (``--save``) and compared
  with a file saved by another version of the code (``--compare``): the distribution of the
  position, orientation and velocity differences.

Only public API is used, so the same file measures an older checkout too (``--label before``:
copied into that checkout, run there as a module, ``python -m`` importing that checkout's
``jaxcontact``)::

    git worktree add /tmp/before e53ae26
    cp benchmarks/breakdown.py benchmarks/common.py /tmp/before/benchmarks/
    (cd /tmp/before && python -m benchmarks breakdown --label before --save /tmp/finals_before.npz --out-dir $OLDPWD/benchmarks/results)
    python -m benchmarks breakdown --label after --compare /tmp/finals_before.npz

Writes ``benchmarks/results/breakdown_<label>.json`` and rewrites ``breakdown.md`` from every
``breakdown_*.json`` present.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

from . import common


def arguments(p):
    """breakdown's own options (shared: ``--steps``, ``--seed``, ``--out``)."""
    p.add_argument("--label", default="after", help="name of this measurement (file breakdown_<label>.json)")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--stats-batch", type=int, default=1024)
    p.add_argument("--chunks", default="", help="also time the default at these batch_rollout chunk sizes (comma list)")
    p.add_argument("--finals", type=int, default=1000, help="float64 throws for the final-state comparison (0: none)")
    p.add_argument("--save", default=None, help="save the float64 final states here (.npz)")
    p.add_argument("--compare", default=None, help="compare the float64 final states with these .npz (comma list)")
    p.add_argument("--finals-tol", type=float, default=1e-6, help="PGS tolerance of the final-state rollouts")
    p.add_argument("--finals-max-iter", type=int, default=100, help="PGS sweep cap of the final-state rollouts")
    p.add_argument("--accuracy-throws", type=int, default=40,
                   help="float64 throws for the accuracy check against the converged Newton solution (0: none)")


def time_parts(args) -> dict:
    import jax
    import jaxcontact as jc

    model, params = common.box_workload()
    states = common.throws(args.batch, args.seed)
    n = args.batch * args.steps

    def rate(model, params=params, **kw):
        kw.setdefault("validate", False)
        f = lambda: jax.block_until_ready(jc.batch_rollout(model, params, states, args.steps, **kw))
        return 1e6 * common.timed(f, args.repeats)["best_s"] / n

    law = model.law
    us = {"default": rate(model)}
    us["no_contact"] = rate(dataclasses.replace(model, law=jc.NoContact()))
    fixed1 = dataclasses.replace(law, solver=dataclasses.replace(law.solver, max_iter=1, fixed_iterations=True))
    us["one_fixed_sweep"] = rate(dataclasses.replace(model, law=fixed1))
    if hasattr(law.solver, "warm_start"):
        warm = dataclasses.replace(law, solver=dataclasses.replace(law.solver, warm_start=True))
        us["warm_start_on"] = rate(dataclasses.replace(model, law=warm))
    us["validate"] = rate(model, validate=True)
    chunks = {int(c): rate(model, chunk_size=int(c)) for c in args.chunks.split(",") if c.strip()}
    us["summary"] = rate(model, with_info=True)
    parts = {
        "free_motion": us["no_contact"],
        "contact_problem_and_first_sweep": us["one_fixed_sweep"] - us["no_contact"],
        "further_sweeps": us["default"] - us["one_fixed_sweep"],
        "eager_validation": us["validate"] - us["default"],
        "flag_summary": us["summary"] - us["default"],
    }
    return {"batch": args.batch, "steps": args.steps, "us_per_body_step": us, "parts_us_per_body_step": parts,
            "rate_default": 1e6 / us["default"], "rate_by_chunk": {c: 1e6 / v for c, v in chunks.items()}}


def sweep_stats(args) -> dict:
    import jax
    import jaxcontact as jc
    from jaxcontact.dynamics import CPU_CHUNK

    model, params = common.box_workload()
    states = common.throws(args.stats_batch, args.seed)
    _, info = jc.batch_rollout(model, params, states, args.steps, output="trajectory", with_info=True)
    it = np.asarray(jax.device_get(info.iterations))
    B = it.shape[0] - it.shape[0] % CPU_CHUNK or it.shape[0]
    chunk = min(CPU_CHUNK, B)
    chunk_max = it[:B].reshape(B // chunk, chunk, -1).max(1)
    out = {"batch": args.stats_batch, "chunk": chunk, "mean_sweeps_per_body_step": float(it.mean()),
           "mean_chunk_max_sweeps": float(chunk_max.mean()), "fraction_at_cap": float((it >= model.law.solver.max_iter).mean())}
    if "warm_start" in {f.name for f in dataclasses.fields(jc.LCPSettings)}:
        law = model.law
        warm = dataclasses.replace(model, law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, warm_start=True)))
        _, info = jc.batch_rollout(warm, params, states, args.steps, output="trajectory", with_info=True)
        out["mean_sweeps_per_body_step_warm_start"] = float(np.asarray(jax.device_get(info.iterations)).mean())
    return out


def finals(args):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxcontact as jc

    model, params = common.box_workload(tol=args.finals_tol, max_iter=args.finals_max_iter)
    params = jax.tree_util.tree_map(lambda x: jax.numpy.asarray(x, jax.numpy.float64)
                                    if jax.numpy.issubdtype(jax.numpy.asarray(x).dtype, jax.numpy.floating) else x, params)
    states = jax.tree_util.tree_map(lambda x: x.astype(np.float64), common.throws(args.finals, args.seed))
    fin = jc.batch_rollout(model, params, states, args.steps)
    return {k: np.asarray(getattr(fin, k)) for k in ("pos", "quat", "vel", "omega")}


def accuracy(args) -> dict:
    """Final positions (float64) of the PGS solver, cold and warm-started, against the converged
    solution of the same regularised LCP: Newton on the relaxed problem (``RelaxedCoulomb``) at
    κ = 1e-18 (m/s)², checked against κ = 1e-16."""
    import jax
    import jaxcontact as jc
    from jaxcontact.laws.relaxed import RelaxedCoulomb

    jax.config.update("jax_enable_x64", True)
    idx = np.linspace(0, args.finals - 1, args.accuracy_throws).astype(int) if args.finals else np.arange(args.accuracy_throws)
    states = jax.tree_util.tree_map(lambda x: x.astype(np.float64)[idx], common.throws(max(args.finals, args.accuracy_throws), args.seed))
    model, params = common.box_workload()
    params = jax.tree_util.tree_map(lambda x: np.asarray(x, np.float64) if np.issubdtype(np.asarray(x).dtype, np.floating) else x,
                                    params)
    laws = {"newton_kappa_1e-16": RelaxedCoulomb(kappa=1e-16, newton_iters=60),
            "reference": RelaxedCoulomb(kappa=1e-18, newton_iters=80),
            "pgs_cold": jc.CoulombLCP(solver=jc.LCPSettings())}
    if "warm_start" in {f.name for f in dataclasses.fields(jc.LCPSettings)}:
        laws["pgs_cold"] = jc.CoulombLCP(solver=jc.LCPSettings(warm_start=False))
        laws["pgs_warm_start"] = jc.CoulombLCP(solver=jc.LCPSettings(warm_start=True))
    pos = {k: np.asarray(jc.batch_rollout(dataclasses.replace(model, law=law), params, states, args.steps).pos)
           for k, law in laws.items()}
    out = {"throws": len(idx), "steps": args.steps, "reference": "RelaxedCoulomb(kappa=1e-18, newton_iters=80)"}
    for k in laws:
        if k != "reference":
            d = np.linalg.norm(pos[k] - pos["reference"], axis=-1)
            out[k] = {"median_m": float(np.median(d)), "p90_m": float(np.percentile(d, 90)), "max_m": float(d.max())}
    return out


def compare(a: dict, b: dict) -> dict:
    def dist(x):
        q = np.percentile(x, [50, 90, 99])
        return {"median": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "max": float(x.max())}

    # rotation angle of q_a* ⊗ q_b, by atan2 (arccos of the dot product loses 1e-8 rad to round-off)
    qa, qb = a["quat"], b["quat"]
    w = np.sum(qa * qb, -1)
    vec = qa[:, :1] * qb[:, 1:] - qb[:, :1] * qa[:, 1:] - np.cross(qa[:, 1:], qb[:, 1:])
    angle = 2 * np.arctan2(np.linalg.norm(vec, axis=-1), np.abs(w))
    out = {"n": int(a["pos"].shape[0]),
           "position_m": dist(np.linalg.norm(a["pos"] - b["pos"], axis=-1)),
           "orientation_rad": dist(angle),
           "velocity_m_s": dist(np.linalg.norm(a["vel"] - b["vel"], axis=-1)),
           "angular_velocity_rad_s": dist(np.linalg.norm(a["omega"] - b["omega"], axis=-1))}
    for t in (1e-9, 1e-6, 1e-3):
        out[f"fraction_position_within_{t:g}_m"] = float(np.mean(np.linalg.norm(a["pos"] - b["pos"], axis=-1) <= t))
    return out


def markdown(results: list[dict]) -> str:
    f = common.fmt
    lines = ["# Where the time goes (box throws)", "",
             "From `python -m benchmarks breakdown` (module docstring: what each part is, and how the "
             "'before' row was measured on an older checkout). µs per body-step, float32.", ""]
    names = ["free_motion", "contact_problem_and_first_sweep", "further_sweeps", "eager_validation", "flag_summary"]
    rows = []
    for r in results:
        t = r.get("time")
        if not t:
            continue
        p = t["parts_us_per_body_step"]
        rows.append([r["label"], r["jaxcontact"], t["batch"], f(t["us_per_body_step"]["default"]), f(t["rate_default"])]
                    + [f(p[k]) for k in names] + [f(t["us_per_body_step"].get("warm_start_on"))])
    lines += [common.md_table(["code", "jaxcontact", "batch", "µs / body-step", "box-steps/s", "free motion",
                               "contact problem + 1st sweep", "further sweeps", "eager validation", "flag Summary",
                               "µs / body-step, warm start on"], rows), ""]
    for r in results:
        if r.get("time", {}).get("rate_by_chunk"):
            lines += [f"`{r['label']}`: box-steps/s by `batch_rollout` chunk size (batch {r['time']['batch']}): "
                      + ", ".join(f"{c}: {f(v)}" for c, v in r["time"]["rate_by_chunk"].items()) + ".", ""]
    srows = [[r["label"], s["batch"], s["chunk"], f(s["mean_sweeps_per_body_step"]), f(s["mean_chunk_max_sweeps"]),
              f(s["fraction_at_cap"]), f(s.get("mean_sweeps_per_body_step_warm_start"))]
             for r in results if (s := r.get("sweeps"))]
    if srows:
        lines += ["PGS sweeps of the same rollout:", "",
                  common.md_table(["code", "batch", "chunk", "mean sweeps / body-step",
                                   "mean over steps of the chunk's max", "body-steps at the cap",
                                   "mean sweeps / body-step, warm start on"], srows), ""]
    for r in results:
        for c in r.get("compare") or []:
            lines += [f"Final states (float64, {c['n']} throws): `{r['label']}` (PGS tol {r['finals_solver']['tol']:g}) "
                      f"against `{c['file']}`:", "",
                      common.md_table(["quantity", "median", "p90", "p99", "max"],
                                      [[k, f(c[k]["median"]), f(c[k]["p90"]), f(c[k]["p99"]), f(c[k]["max"])]
                                       for k in ("position_m", "orientation_rad", "velocity_m_s", "angular_velocity_rad_s")]),
                      "", "Fraction of throws whose final positions agree within 1e-9 / 1e-6 / 1e-3 m: "
                      + " / ".join(f(c[f"fraction_position_within_{t:g}_m"]) for t in (1e-9, 1e-6, 1e-3)) + ".", ""]
    arows = [[r["label"], k, f(v["median_m"]), f(v["p90_m"]), f(v["max_m"])]
             for r in results if r.get("accuracy") for k, v in r["accuracy"].items() if isinstance(v, dict)]
    if arows:
        a = next(r["accuracy"] for r in results if r.get("accuracy"))
        lines += [f"Accuracy: final positions (float64, {a['throws']} throws, {a['steps']} steps) against the converged "
                  f"solution of the same regularised LCP, {a['reference']} (m):", "",
                  common.md_table(["code", "solver", "median", "p90", "max"], arows), ""]
    for r in results:
        lines.append(f"- `{r['label']}`: `{common.current_command(r['machine']['command'])}` ({r['machine']['date']}, "
                     f"jaxcontact at {r['jaxcontact']})")
    return "\n".join(lines) + "\n"


def run(args, results):
    """``python -m benchmarks breakdown --label L``: ``<name>_<label>.json``, and ``<name>.md`` of every label's."""
    import jaxcontact as jc

    out = {"label": args.label, "jaxcontact": str(Path(jc.__file__).resolve().parents[1]),
           "machine": common.machine_info("benchmarks.breakdown", command=args.command)}
    if args.batch:
        print(f"[time] batch {args.batch}, {args.steps} steps", file=sys.stderr, flush=True)
        out["time"] = time_parts(args)
        print(json.dumps(out["time"]["us_per_body_step"]), file=sys.stderr, flush=True)
    if args.stats_batch:
        out["sweeps"] = sweep_stats(args)
    if args.finals:
        print(f"[finals] {args.finals} throws, float64", file=sys.stderr, flush=True)
        fin = finals(args)
        if args.save:
            np.savez(args.save, **fin)
        out["finals_solver"] = {"tol": args.finals_tol, "max_iter": args.finals_max_iter}
        out["compare"] = [dict(compare(fin, dict(np.load(path))), file=Path(path).name)
                          for path in (args.compare.split(",") if args.compare else [])]
    if args.accuracy_throws:
        print(f"[accuracy] {args.accuracy_throws} throws against the Newton reference", file=sys.stderr, flush=True)
        out["accuracy"] = accuracy(args)
    results.tagged(args.label).write(out)
    runs = [json.loads(p.read_text()) for p in sorted(results.folder.glob(f"{results.stem}_*.json"))]
    runs.sort(key=lambda r: r["label"] != "before")
    results.md.write_text(markdown(runs))
    print(markdown(runs))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
