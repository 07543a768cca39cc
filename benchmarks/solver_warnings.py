"""How often the default contact solve stops at its sweep cap on random box throws, and how far
such a capped answer is from a converged one (issue 50: warnings that mean something).

``python -m benchmarks solver_warnings --seed 7 --throws 10000 --dtype float32``

The README's minimal example's setup (a 0.1 m box of 0.37 kg, ``CoulombLCP()`` with its default
``LCPSettings``, μ = 0.18, dt = 2 ms, 800 steps) on ``states.random_throws(PRNGKey(seed), n)``.
Per body it records every step whose solve used all of ``max_iter`` above ``tol`` (the old
``Flags.SOLVER`` criterion) and that step's residual; for up to ``--compare`` such steps it
reruns the step from the same state with a converged float64 solve (tol 1e-12, 200,000 sweeps)
and reports the difference of the post-step velocity (m/s) and angular velocity (rad/s), and
the velocity error at the box's corners, |Δv| + |Δω|·0.087 m (the half diagonal). It also counts
the bodies flagged by the criterion in force (``dynamics.solver_failed``) and the throughput of
the plain ``batch_rollout`` (final states, no info) of the README's 64 throws.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

HALF_DIAGONAL = 0.1 * 3 ** 0.5 / 2  # m: the 0.1 m box's corner from its centre


def arguments(ap):
    ap.add_argument("--throws", type=int, default=10000)
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--compare", type=int, default=200, help="capped steps compared with a converged solve")


def run(a, results):
    """``python -m benchmarks solver_warnings``: writes ``<out>/<name>_<dtype>.json`` and ``.md``."""
    from .common import cast_floats as cast
    from .runner import Results

    results = Results(results.folder, f"{results.stem}_{a.dtype}")
    jax.config.update("jax_enable_x64", True)
    import warnings

    import jaxcontact as jc
    from jaxcontact import dynamics
    from jaxcontact.solvers import LCPSettings
    from jaxcontact.states import random_throws

    dtype = jnp.dtype(a.dtype)

    law = jc.CoulombLCP()
    s = law.solver
    model = jc.Model(law=law, dt=0.002)
    params64 = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
    params = cast(params64, dtype)
    conv = jc.Model(law=jc.CoulombLCP(solver=LCPSettings(tol=1e-12, max_iter=200_000)), dt=0.002)
    step = jax.jit(lambda m, p, st: dynamics._step(m, p, st), static_argnums=0)

    # throughput of the README's batch (64 throws, 800 steps, final states), best of 3
    readme = cast(random_throws(jax.random.PRNGKey(0), 64), dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jax.block_until_ready(jc.batch_rollout(model, params, readme, 800))
        times = []
        for _ in range(3):
            t = time.perf_counter()
            jax.block_until_ready(jc.batch_rollout(model, params, readme, 800))
            times.append(time.perf_counter() - t)
    throughput = 64 * 800 / min(times)
    print(f"README batch: {throughput:,.0f} box-steps/s", flush=True)

    throws = cast(random_throws(jax.random.PRNGKey(a.seed), a.throws), dtype)

    @jax.jit
    def scan_chunk(states):  # per body: steps at the cap above tol, the largest residual there, flagged now
        def one(s0):
            def f(carry, _):
                st, n_cap, worst, flagged = carry
                st1, info = dynamics._step(model, params, st)
                capped = (info.iterations >= s.max_iter) & (info.residual > s.tol)
                return (st1, n_cap + capped, jnp.where(capped, jnp.maximum(worst, info.residual), worst),
                        flagged | dynamics.solver_failed(model, info)), None

            (_, n_cap, worst, flagged), _ = jax.lax.scan(
                f, (s0, jnp.zeros((), jnp.int32), jnp.zeros((), dtype), jnp.zeros((), bool)), None, length=a.steps)
            return n_cap, worst, flagged

        return jax.vmap(one)(states)

    n_cap = np.zeros(a.throws, int)
    body_max_res = np.zeros(a.throws)
    flagged_now = np.zeros(a.throws, bool)
    t0 = time.perf_counter()
    for lo in range(0, a.throws, a.chunk):
        hi = min(lo + a.chunk, a.throws)
        c, w, fl = scan_chunk(jax.tree_util.tree_map(lambda x: x[lo:hi], throws))
        n_cap[lo:hi], body_max_res[lo:hi], flagged_now[lo:hi] = np.asarray(c), np.asarray(w), np.asarray(fl)
        print(f"{hi} throws: {int((n_cap[:hi] > 0).sum())} with a capped step, {int(flagged_now[:hi].sum())} flagged "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    body_capped = n_cap > 0
    flagged = int(flagged_now.sum())

    # capped steps of the first capped bodies against a converged float64 solve
    capped_res, compared = [], []
    for b in np.flatnonzero(body_capped):
        if len(compared) >= a.compare:
            break
        s0 = jax.tree_util.tree_map(lambda x: x[b], throws)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj, infos = jc.rollout(model, params, s0, a.steps, with_info=True)
        res, it = np.asarray(infos.residual), np.asarray(infos.iterations)
        for k in np.flatnonzero((it >= s.max_iter) & (res > s.tol)):
            st = jax.tree_util.tree_map(lambda x: x[k], traj)
            mine, info = step(model, params, st)
            ref, rinfo = step(conv, params64, cast(st, jnp.float64))
            dv = float(jnp.max(jnp.abs(mine.vel - ref.vel)))
            dw = float(jnp.max(jnp.abs(mine.omega - ref.omega)))
            compared.append(dict(body=int(b), step=int(k), residual=float(info.residual), dv=dv, dw=dw,
                                 corner=dv + dw * HALF_DIAGONAL, ref_residual=float(rinfo.residual),
                                 ref_sweeps=int(rinfo.iterations)))
    capped_res = [c["residual"] for c in compared]

    # what a capped step does to the end of the throw: the capped throws again with a 100x cap (the
    # same tolerance), final positions compared (m); flagged and unflagged throws apart
    ids = np.flatnonzero(body_capped)
    final_shift = np.zeros(0)
    if ids.size:
        sub = jax.tree_util.tree_map(lambda x: x[ids], throws)
        big = jc.Model(law=jc.CoulombLCP(solver=LCPSettings(max_iter=100 * s.max_iter)), dt=0.002)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f_cap = jc.batch_rollout(model, params, sub, a.steps)
            f_big = jc.batch_rollout(big, params, sub, a.steps)
        final_shift = np.linalg.norm(np.asarray(f_cap.pos, float) - np.asarray(f_big.pos, float), axis=-1)
    shift_flagged = final_shift[flagged_now[ids]] if ids.size else final_shift
    shift_unflagged = final_shift[~flagged_now[ids]] if ids.size else final_shift

    n = a.throws
    cr = np.asarray(capped_res)
    corner = np.asarray([c["corner"] for c in compared])
    cres = np.asarray([c["residual"] for c in compared])
    ref_conv = np.asarray([c["ref_residual"] < 1e-9 for c in compared], bool)
    thresholds = [s.tol, 1e-5, 1e-4, 1e-3, 1e-2]
    out = dict(
        seed=a.seed, throws=n, steps=a.steps, dtype=a.dtype, settings=dict(tol=s.tol, max_iter=s.max_iter),
        readme_box_steps_per_s=throughput,
        bodies_with_capped_step=int(body_capped.sum()), capped_rate=float(body_capped.mean()),
        capped_steps=int(n_cap.sum()), flagged_now=flagged, flagged_rate_now=flagged / n,
        bodies_capped_above={f"{t:g}": int((body_max_res > t).sum()) for t in thresholds},
        capped_residual_quantiles_compared={q: float(np.quantile(cr, float(q))) for q in ("0.5", "0.9", "0.99", "1.0")} if cr.size else {},
        compared=len(compared), compared_reference_converged=int(ref_conv.sum()),
        corner_error_quantiles={q: float(np.quantile(corner, float(q))) for q in ("0.5", "0.9", "0.99", "1.0")} if corner.size else {},
        corner_over_residual_converged_refs={q: float(np.quantile((corner / cres)[ref_conv], float(q))) for q in ("0.5", "0.9", "1.0")} if ref_conv.any() else {},
        worst=sorted(compared, key=lambda c: -c["corner"])[:10],
        final_shift_m=dict(flagged=sorted(shift_flagged.tolist()), unflagged_max=float(shift_unflagged.max(initial=0.0)),
                           unflagged_median=float(np.median(shift_unflagged)) if shift_unflagged.size else 0.0),
    )
    lines = [f"# Solver warnings on {n:,} random throws (seed {a.seed}, {a.dtype}, {a.steps} steps)", "",
             f"- default settings: tol {s.tol:g} m/s, cap {s.max_iter} sweeps",
             f"- bodies with a step at the cap above tol: {int(body_capped.sum())} ({100 * body_capped.mean():.2f} %)",
             f"- bodies flagged by `dynamics.solver_failed` now: {flagged} ({100 * flagged / n:.2f} %)",
             "- bodies whose capped residual exceeds: " + ", ".join(f"{k} m/s: {v}" for k, v in out["bodies_capped_above"].items()),
             f"- residual of the compared capped steps, quantiles (m/s): {out['capped_residual_quantiles_compared']}",
             f"- {len(compared)} capped steps against a converged float64 solve ({int(ref_conv.sum())} of whose references converged "
             f"below 1e-9 m/s): corner velocity error quantiles (m/s) {out['corner_error_quantiles']}; "
             f"error / residual where the reference converged: {out['corner_over_residual_converged_refs']}",
             f"- final positions of the capped throws against the same throws with a {100 * s.max_iter}-sweep cap: "
             f"unflagged ({shift_unflagged.size}) median {1e3 * out['final_shift_m']['unflagged_median']:.3f} mm, "
             f"max {1e3 * out['final_shift_m']['unflagged_max']:.3f} mm; flagged ({shift_flagged.size}): "
             + ", ".join(f"{1e3 * x:.3f}" for x in shift_flagged) + " mm",
             f"- README batch (64 throws, 800 steps): {throughput:,.0f} box-steps/s"]
    results.write(out, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
