"""The billiards shot's gradient against central differences, under the disc and the square.

    python -m benchmarks billiards_gradient      # writes results/billiards_gradient.{json,md} (a minute or two)

``worlds.billiards``: the pusher's launch velocity v = (vx, vy) and the loss |struck box's rest
(x, y) − target|² after 500 steps (``billiards.objective``: ``jax.value_and_grad`` through the
world's default law, the velocity form's implicit derivative), at two launch velocities near the
optimum (where the gradient descent of ``python -m studies.worlds --optimizer sgd`` ends: (2.2408,
0.155) under the disc, (2.2421, 0.200) under the square), each under the default law (Coulomb's
disc) and the same law with ``cone="box"``. Central differences at eps 1e-4, 1e-5, 1e-6 m/s of the
same compiled forward (the value half of the same batched call).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from . import common

POINTS = ((2.2408, 0.155), (2.2421, 0.200))
EPS = (1e-4, 1e-5, 1e-6)


def measure() -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from jaxcontact.worlds import billiards

    model, scene, params, state = billiards.world()
    out = {}
    for cone in ("elliptic", "box"):
        law = model.law
        m = dataclasses.replace(model, law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=cone)))
        vg = billiards.objective(m, scene, params, state)
        rows = []
        for v in POINTS:
            v = jnp.array(v)
            pts = [v] + [v + s * jnp.zeros(2).at[k].set(e) for k in range(2) for e in EPS for s in (1, -1)]
            val, g = vg(jnp.stack(pts))
            val = np.asarray(val)
            fd = np.array([(val[1 + 2 * i] - val[2 + 2 * i]) / (2 * e) for i, e in enumerate(EPS * 2)]).reshape(2, len(EPS))
            rows.append({"v": np.asarray(v).tolist(), "loss": float(val[0]), "grad": np.asarray(g[0]).tolist(),
                         "central": fd.tolist()})
            common.log(f"{cone} v {np.asarray(v)}: grad {np.asarray(g[0])} central {fd[:, 1]}")
        out[cone] = rows
    return out


def markdown(res) -> str:
    md = ["# The billiards shot's gradient against central differences (disc and square)", "",
          f"From `{res['machine']['command']}`. Loss |struck box's rest (x, y) − target|² (m²); d/dvx, d/dvy in m²/(m/s); "
          "central differences at eps 1e-4, 1e-5, 1e-6 m/s.", "",
          "| cone | v (m/s) | error (mm) | d/dvx: jax.grad | central | rel. | d/dvy: jax.grad | central | rel. |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for cone in ("elliptic", "box"):
        for r in res[cone]:
            g, c = r["grad"], r["central"]
            rel = [abs(g[k] - c[k][1]) / max(abs(c[k][1]), 1e-30) for k in range(2)]
            md.append(f"| {cone} | ({r['v'][0]}, {r['v'][1]}) | {1e3 * np.sqrt(r['loss']):.2f} | {g[0]:.4e} | "
                      f"{', '.join(f'{x:.4e}' for x in c[0])} | {rel[0]:.2g} | {g[1]:.4e} | "
                      f"{', '.join(f'{x:.4e}' for x in c[1])} | {rel[1]:.2g} |")
    md += ["", common.md_machine(res["machine"])]
    return "\n".join(md)


def run(args, out):
    """``python -m benchmarks billiards_gradient``: ``out`` (``runner.Results``) gets the JSON and the .md."""
    import jax

    jax.config.update("jax_enable_x64", True)  # before machine_info, which records it
    res = {"machine": common.machine_info("benchmarks.billiards_gradient", command=args.command)}
    res.update(measure())
    out.write(res, markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
