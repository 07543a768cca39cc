"""Gradients through a robot arm pushing a box (issue 63, item 6): d(box's final position)/d(controls)
against central differences, per control step, at the defaults and with the solver's polish set
otherwise, side by side.

    python -m benchmarks arm_push_gradient            # about 15 min on 2 cores, loaded

The world: ``jaxcontact/data/scenes/arm_push.xml`` (two links on position servos about vertical
axes, 3 cm above the floor, sweeping a 6 cm box of 0.2 kg across it; h = 4 ms), 100 steps, float64,
the controls held at (0.6, 0) rad. For control steps k (the shoulder's target at step k) the reverse
mode Jacobian column d(box x, y at the end)/d u_k against central differences (step 1e-5; the
differences agree from 1e-3 to 1e-7), and the same for the arm alone (the file without the box).
The cases (``LCPSettings`` of the world's law, ``worlds.DEFAULT_LAW``, replaced): ``box, defaults``
(a stalled solve polished in the forward, ``stall_active_set=3``, nothing polished under
differentiation alone, ``forward_active_set=0``); ``box, before`` (the defaults until issue 63's
robots2 part: ``stall_active_set=0, forward_active_set=None``, one active-set round on every solve
under differentiation only); ``box, no polish`` (``stall_active_set=0, forward_active_set=0``);
``box, every solve polished`` (``forward_active_set=1``: one round on every solve, in the forward);
and the arm alone at the defaults. Each case also reports the forward rollout's CPU seconds (one
compiled call, ``time.process_time``), the sweeps at the cap and the largest residual.
Writes ``benchmarks/results/arm_push_gradient.{json,md}``.
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from .common import SCENES_DIR, fmt, machine_info, md_machine, md_table

SCENE = SCENES_DIR / "arm_push.xml"
STEPS = 100
KS = (5, 30, 45, 60, 90)


def columns(text: str, body: int, settings: dict, eps: float = 1e-5):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import mjcf

    scene, params, state, model = mjcf.from_mjcf(text)
    if settings:
        law = model.law
        model = dataclasses.replace(model, law=dataclasses.replace(law, solver=dataclasses.replace(law.solver,
                                                                                                     **settings)))
    u0 = jnp.tile(jnp.array([[0.6, 0.0]]), (STEPS, 1))

    def final(u):
        out, _ = worlds.rollout(model, scene, params, state, STEPS, u, output="final")
        return out.pos[body, :2]

    fwd = jax.jit(lambda u: worlds.rollout(model, scene, params, state, STEPS, u)[1])
    info = jax.block_until_ready(fwd(u0))
    t = time.process_time()
    info = jax.block_until_ready(fwd(u0))
    forward = {"cpu_s": time.process_time() - t, "steps_at_cap": int(np.sum(np.asarray(info.iterations) >= 1000)),
               "max_residual": float(np.max(np.asarray(info.residual)))}
    final = jax.jit(final)
    jac = np.asarray(jax.jit(jax.jacrev(final))(u0))
    rows = []
    for k in KS:
        bump = jnp.zeros_like(u0).at[k, 0].set(eps)
        fd = np.asarray((final(u0 + bump) - final(u0 - bump)) / (2 * eps))
        ad = jac[:, k, 0]
        rows.append({"k": k, "ad": ad.tolist(), "fd": fd.tolist(), **forward,
                     "rel_error": float(np.linalg.norm(ad - fd) / max(np.linalg.norm(fd), 1e-300))})
        print(settings, body, rows[-1], flush=True)
    return rows


def run(args, out):
    """``python -m benchmarks arm_push_gradient``: every case into ``out`` (``runner.Results``)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    text = SCENE.read_text()
    i = text.index('    <body name="box"')
    arm_only = text[:i] + text[text.index("</body>", i) + len("</body>\n"):]
    res = {"machine": machine_info("benchmarks.arm_push_gradient", command=args.command), "steps": STEPS, "cases": {}}
    for name, body, settings in (("box, defaults", 2, {}),
                                 ("box, before", 2, {"stall_active_set": 0, "forward_active_set": None}),
                                 ("box, no polish", 2, {"stall_active_set": 0, "forward_active_set": 0}),
                                 ("box, every solve polished", 2, {"forward_active_set": 1}),
                                 ("arm alone (lower link), defaults", 1, {})):
        res["cases"][name] = columns(text if body == 2 else arm_only, body, settings)
        out.write(res)
    table = [[case, r["k"], fmt(r["ad"][0]) + ", " + fmt(r["ad"][1]), fmt(r["fd"][0]) + ", " + fmt(r["fd"][1]),
              fmt(r["rel_error"]), fmt(r["cpu_s"]), r["steps_at_cap"], fmt(r["max_residual"])]
             for case, rows in res["cases"].items() for r in rows]
    md = ["# Gradients through an arm pushing a box", "", md_machine(res["machine"]), "",
          "d(final x, y)/d(u_k) of the shoulder's control at step k, reverse mode against central differences "
          "(module docstring); the forward rollout's CPU seconds, its steps at the 1,000-sweep cap and its largest "
          "residual (m/s) per case.", "",
          md_table(["case", "k", "reverse mode", "central differences", "relative error", "forward CPU s",
                    "steps at the cap", "max residual"], table)]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json}, {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
