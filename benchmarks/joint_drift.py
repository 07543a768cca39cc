"""How far a swinging chain's joints drift apart under the Baumgarte stabilisation (issue 60).

A chain of n 0.2 m links (``chains.make_chain``), pinned 2 m above the ground (it never touches
it), released from horizontal at rest and swinging for ``--seconds`` at 2 ms steps. Per step the
largest anchor separation of its joints (``WorldInfo.joint_error``: m, before the step), its
maximum over the run, and the bound the stabilisation predicts from the same run:

    e_{k+1} = (1 − β) e_k + (h²/2)·c_k,   c_k = max_j |ω_c×(ω_c×r_c) − ω_p×(ω_p×r_p)|

(the second-order term of the anchors' motion that the velocity-level rows miss: the difference
of the two anchors' centripetal accelerations, r the anchor from each body's centre in the world),
so e ≤ h²·max c / (2β). A continued rollout's start is accepted up to
``worlds.joints.drift_tolerance`` (h·2 m/s/β, 2 cm at 2 ms, β 0.2); the ratio is the margin.

    python -m benchmarks joint_drift                      # 2 and 7 links, float64 and float32, 10 s
    python -m benchmarks joint_drift --links 2 --seconds 1 --out /tmp/d.json
"""

from __future__ import annotations

import json
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxcontact import chains  # noqa: E402
from jaxcontact.rotations import quat_to_mat  # noqa: E402
from jaxcontact.worlds.joints import drift_tolerance  # noqa: E402



def centripetal_gap(params, state) -> jnp.ndarray:
    """() the largest difference of a joint's two anchors' centripetal accelerations (m/s²)."""
    out = []
    for i in range(params.num_links):
        def acc(s, r_body):
            w = quat_to_mat(s.quat) @ s.omega  # world ω
            r = quat_to_mat(s.quat) @ r_body
            return jnp.cross(w, jnp.cross(w, r))

        c = acc(chains.model.link_state(state, i), params.anchor_child[i])
        if i > 0:
            c = c - acc(chains.model.link_state(state, i - 1), params.anchor_parent[i])
        out.append(jnp.linalg.norm(c))
    return jnp.max(jnp.stack(out))


def swing(links: int, dtype: str, seconds: float, dt: float = 0.002) -> dict:
    model = chains.ChainModel(dt=dt)
    params = chains.make_chain(sizes=((0.2, 0.05, 0.05),) * links, masses=(0.185,) * links, pin=(0.0, 0.0, 2.0),
                               dtype=jnp.dtype(dtype))
    s0 = chains.horizontal_state(params)
    steps = int(round(seconds / dt))
    t0 = time.perf_counter()
    traj, info = chains.rollout(model, params, s0, steps)
    err = np.asarray(jax.block_until_ready(info.joint_error), float)
    wall = time.perf_counter() - t0
    c = np.asarray(jax.vmap(lambda s: centripetal_gap(params, s))(traj), float)
    beta = model.baumgarte
    pred = np.zeros(steps + 1)
    for k in range(steps):
        pred[k + 1] = (1 - beta) * pred[k] + 0.5 * dt**2 * c[k]
    tol = drift_tolerance(beta, dt)
    return {"links": links, "dtype": dtype, "seconds": seconds, "dt": dt, "beta": beta, "steps": steps,
            "max_drift_m": float(err.max()), "drift_at_end_m": float(err[-1]),
            "max_drift_last_second_m": float(err[-int(round(1 / dt)):].max()),
            "predicted_bound_m": float(pred.max()), "max_centripetal_gap": float(c.max()),
            "continued_tolerance_m": tol, "margin": tol / float(err.max()), "wall_s": wall,
            "finite": bool(np.all(np.isfinite(np.asarray(traj.pos))))}


def markdown(rows: list[dict], command: str) -> str:
    lines = ["# Joint drift of a swinging chain (Baumgarte β = 0.2, 2 ms steps)", "",
             f"`{command}`", "",
             "| links | dtype | seconds | max drift (m) | drift in the last second (m) | predicted bound h²·max c/(2β) (m) | "
             "max c (m/s²) | continued-start tolerance (m) | margin |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['links']} | {r['dtype']} | {r['seconds']:g} | {r['max_drift_m']:.3g} | "
                     f"{r['max_drift_last_second_m']:.3g} | {r['predicted_bound_m']:.3g} | {r['max_centripetal_gap']:.3g} | "
                     f"{r['continued_tolerance_m']:.3g} | {r['margin']:.0f}x |")
    return "\n".join(lines) + "\n"


def arguments(ap):
    ap.add_argument("--links", default="2,7", help="chain lengths, comma-separated (default: 2,7)")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--seconds", type=float, default=10.0)


def run(a, results) -> int:
    """``python -m benchmarks joint_drift``: ``results`` (``runner.Results``) gets the JSON and the .md."""
    rows = []
    for n in (int(x) for x in a.links.split(",")):
        for dt in a.dtypes.split(","):
            rows.append(swing(n, dt, a.seconds))
            print(json.dumps(rows[-1]), flush=True)
    results.write({"command": a.command, "rows": rows}, markdown(rows, a.command))
    print(markdown(rows, a.command))
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
