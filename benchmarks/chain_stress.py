"""Random swings of the 3-link chain in float32 (or float64): how many go non-finite or gain energy.

    python -m benchmarks chain_stress [--chains 64] [--steps 400] [--dtype float32] [--seed 1]

The chain of ``chains.make_chain(pin=(0, 0, 0.45))`` (three 0.2 m links, 0.6 m long, so it strikes
the ground when it swings down) released from random joint angles (±1.5 rad about hanging) and
rates (σ = 3 rad/s), keeping only starts with every link above the ground (5 mm); one
``chains.batch_rollout``. Per chain: finite, and the largest energy above its start's (a chain
with no restitution and no drive gains none, except the few µJ of closing its joints' drift).
Writes ``results/chain_stress.json`` and ``.md`` (a run appends its row to those already there).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from experiments.provenance import stamp

GAIN = 0.01  # J: "gains energy"


def swings(chains: int, steps: int, dtype: str, seed: int):
    import jax
    import jax.numpy as jnp

    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    from jaxcontact import chains as C

    model = C.ChainModel()
    params = C.make_chain(pin=(0.0, 0.0, 0.45), dtype=getattr(jnp, dtype))
    rng = np.random.default_rng(seed)
    ang = jnp.asarray(rng.uniform(-1.5, 1.5, (8 * chains, 3)) + np.array([np.pi / 2, 0.0, 0.0]), dtype)
    rates = jnp.asarray(rng.normal(0.0, 3.0, (8 * chains, 3)), dtype)
    s0 = jax.vmap(lambda a, r: C.planar_state(params, a, r))(ang, rates)
    low = np.asarray(jax.vmap(lambda s: C.lowest_point(params, s))(s0)).min(axis=1)
    keep = np.where(low > 0.005)[0][:chains]
    s0 = jax.tree_util.tree_map(lambda x: x[keep], s0)
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = C.batch_rollout(model, params, s0, steps)
    traj = traj[0] if isinstance(traj, tuple) else traj
    E = np.asarray(jax.vmap(jax.vmap(lambda s: C.energy(model, params, s)))(traj), np.float64)
    wall = time.perf_counter() - t
    finite = np.isfinite(E).all(axis=1)
    gain = np.where(finite, np.nanmax(E - E[:, :1], axis=1), np.nan)
    return {"chains": int(len(keep)), "steps": steps, "dtype": dtype, "seed": seed,
            "non_finite": int((~finite).sum()), "gaining": int((gain[finite] > GAIN).sum()),
            "largest_gain_J": float(np.nanmax(gain)) if finite.any() else None,
            "warnings": sorted({type(w.message).__name__ for w in caught}), "wall_s": wall}


def render(res) -> str:
    out = ["# Random swings of the 3-link chain (`python -m benchmarks chain_stress`)", "",
           "| commit | dtype | chains × steps | non-finite | gaining > 0.01 J | largest gain (J) | warnings | command |",
           "|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        g = "—" if r["largest_gain_J"] is None else f"{r['largest_gain_J']:.3g}"
        out.append(f"| {r['provenance']['commit'][:7]} | {r['dtype']} | {r['chains']} × {r['steps']} | {r['non_finite']} | "
                   f"{r['gaining']} | {g} | {', '.join(r['warnings']) or '—'} | `{r['provenance']['command']}` |")
    if res.get("note"):
        out += ["", res["note"]]
    return "\n".join(out) + "\n"


def arguments(ap):
    ap.add_argument("--chains", type=int, default=64)


def run(args, out):
    """``python -m benchmarks chain_stress``: appends this run's row to ``out``'s JSON and renders the .md."""
    res = out.load() or {"runs": []}
    row = {**swings(args.chains, args.steps, args.dtype, args.seed), "provenance": stamp()}
    print(row, flush=True)
    res["runs"].append(row)
    out.write(res, render(res))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
