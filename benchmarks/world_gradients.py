"""Gradients through worlds at the default settings against central differences (issue 60, part 4).

    python -m benchmarks world_gradients                                   # the default law
    python -m benchmarks world_gradients --solver tol=1e-5 --tag before    # the default before issue 60 part 4
    python -m benchmarks world_gradients --solver tol=1e-5,gradient_newton=8,gradient_tol=1e-10,gradient_max_iter=5000 --tag polish
    python -m benchmarks world_gradients --solver tol=1e-9 --tag tol1e-9   # the whole solve tighter
    python -m benchmarks world_gradients --only push --timing              # + the cost of a gradient

Every case is a world of the 0.1 m, 0.37 kg boxes of ``worlds.scenes`` at h = 2 ms in float64,
rolled out by ``worlds.rollout(worlds.model(law), ..., output="final")`` with the world's default law
(``worlds.DEFAULT_LAW``: warm start, tolerance 1e-7 m/s, 1,000 sweeps; 1e-5 before issue 60 part 4)
changed only by ``--solver``
(``LCPSettings`` fields by name). Each loss is differentiated by ``jax.grad`` and by central
differences of the same compiled forward rollout at eps 1e-3, 1e-4, 1e-5 and 1e-6 (relative to the
parameter's size); the reference is the central difference at 1e-4 and the spread of the others
says whether it is stable there.

* ``push``: box A slides along x into box B 5 mm ahead (``scenes.cradle(2, gap=0.005, ε=0)``, the
  law's μ against the ground and between them), 300 steps; loss box B's final x; θ = (A's speed, μ)
  at (1.5 m/s, 0.3) and (1.0 m/s, 0.5).
* ``train``: three boxes in a row, the first pushed at 1.5 m/s (``scenes.cradle(3, gap=0.005)``), the
  law's μ 0.3 and per-body friction (0.4, 0.5, 0.3) (``body.friction``: √(μ_a μ_b) per contact),
  300 steps; loss the sum of the final x; θ = body.friction; and the same with friction (0.5, 0.4, 0.3).
* ``drop``: a box released 2 cm above a resting box, tilted 0.2 rad about y and moving at 0.3 m/s
  in x (``scenes.stack(2)``, μ 0.5), 200 steps; loss the top box's final x; θ = (its speed, μ).
* ``slide``: the top box of a 2-stack sliding at 0.6 m/s on the resting bottom one, μ 0.3, 150
  steps; loss the top box's final x + the bottom's; θ = (speed, μ).

Writes ``results/world_gradients[_TAG].json`` and ``.md``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from . import common
from .common import law_with

EPS = (1e-3, 1e-4, 1e-5, 1e-6)
REF_EPS = 1e-4
CASES = ("push", "train", "drop", "slide")


def _value(text: str):
    if text.lower() == "none":
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def cases(law):
    """{name: [(label, loss(θ) -> scalar, θ0 (k,), names of θ's entries)]} with the losses built on ``law``."""
    import jax
    import jax.numpy as jnp

    import jaxcontact as jc
    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    model = worlds.model(law=law, dt=0.002)
    out = {}

    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)

    def push(theta):
        s = s0.replace(vel=s0.vel.at[0, 0].set(theta[0]))
        p = params.replace(law=jc.CoulombLCP.init_params(mu=theta[1]))
        final, _ = worlds.rollout(model, scene, p, s, 300, output="final")
        return final.pos[1, 0]

    out["push"] = [("1.5 m/s, μ 0.3", push, np.array([1.5, 0.3]), ("speed", "mu")),
                   ("1.0 m/s, μ 0.5", push, np.array([1.0, 0.5]), ("speed", "mu"))]

    scene3, params3, s3 = scenes.cradle(3, gap=0.005, speed=1.5, restitution=0.0)
    params3 = params3.replace(law=jc.CoulombLCP.init_params(mu=0.3))

    def train(friction):
        p = params3.replace(body=params3.body.replace(friction=friction))
        final, _ = worlds.rollout(model, scene3, p, s3, 300, output="final")
        return jnp.sum(final.pos[:, 0])

    out["train"] = [("3 boxes at 1.5 m/s, μ 0.3, friction (0.4, 0.5, 0.3)", train, np.array([0.4, 0.5, 0.3]),
                     ("friction0", "friction1", "friction2")),
                    ("3 boxes at 1.5 m/s, μ 0.3, friction (0.5, 0.4, 0.3)", train, np.array([0.5, 0.4, 0.3]),
                     ("friction0", "friction1", "friction2"))]

    scene2, params2, s2 = scenes.stack(2, mu=0.5)
    tilt = 0.2
    q = jnp.array([[1.0, 0.0, 0.0, 0.0], [np.cos(tilt / 2), 0.0, np.sin(tilt / 2), 0.0]])
    lifted = s2.replace(pos=s2.pos.at[1, 2].add(0.02 + 0.05 * np.sin(tilt)), quat=q)

    def drop(theta):
        s = lifted.replace(vel=lifted.vel.at[1, 0].set(theta[0]))
        p = params2.replace(law=jc.CoulombLCP.init_params(mu=theta[1]))
        final, _ = worlds.rollout(model, scene2, p, s, 200, output="final")
        return final.pos[1, 0]

    out["drop"] = [("tilted box 2 cm onto a box, 0.3 m/s, μ 0.5", drop, np.array([0.3, 0.5]), ("speed", "mu"))]

    def slide(theta):
        s = s2.replace(vel=s2.vel.at[1, 0].set(theta[0]))
        p = params2.replace(law=jc.CoulombLCP.init_params(mu=theta[1]))
        final, _ = worlds.rollout(model, scene2, p, s, 150, output="final")
        return final.pos[1, 0] + final.pos[0, 0]

    out["slide"] = [("top box at 0.6 m/s on a box, μ 0.3", slide, np.array([0.6, 0.3]), ("speed", "mu"))]
    return out


def measure(law, only, timing: bool):
    import jax

    rows = []
    for name, items in cases(law).items():
        if name not in only:
            continue
        fns = {}
        for label, loss, theta0, names in items:
            if loss not in fns:
                fns[loss] = (jax.jit(loss), jax.jit(jax.grad(loss)))
            f, g = fns[loss]
            theta0 = np.asarray(theta0, np.float64)
            t = time.perf_counter()
            grad = np.asarray(jax.block_until_ready(g(theta0)))
            first = time.perf_counter() - t
            for i, pname in enumerate(names):
                fd = {}
                for eps in EPS:
                    e = np.zeros_like(theta0)
                    e[i] = eps * max(abs(theta0[i]), 1.0)
                    fd[eps] = float((f(theta0 + e) - f(theta0 - e)) / (2 * e[i]))
                ref = fd[REF_EPS]
                spread = max(abs(v - ref) for v in fd.values()) / max(abs(ref), 1e-12)
                rel = abs(grad[i] - ref) / max(abs(ref), 1e-12)
                rel5 = abs(grad[i] - fd[1e-5]) / max(abs(fd[1e-5]), 1e-12)
                rows.append({"case": name, "setting": label, "parameter": pname, "grad": float(grad[i]),
                             "fd": {str(k): v for k, v in fd.items()}, "fd_spread": spread, "rel_err": float(rel),
                             "rel_err_1e-5": float(rel5)})
                common.log(f"{name} [{label}] d/d{pname}: grad {grad[i]:+.6f}  fd {ref:+.6f}  rel err {rel:.2e}  "
                           f"(fd spread {spread:.1e})")
            if timing:
                rows[-1]["timing"] = time_it(f, g, theta0, first)
    return rows


def time_it(f, g, theta0, first_grad_s, repeats: int = 5):
    """Median wall seconds of the compiled forward and gradient (``repeats`` calls each)."""
    import jax

    def median(fn):
        jax.block_until_ready(fn(theta0))
        walls = []
        for _ in range(repeats):
            t = time.perf_counter()
            jax.block_until_ready(fn(theta0))
            walls.append(time.perf_counter() - t)
        return float(np.median(walls))

    out = {"forward_s": median(f), "grad_s": median(g), "grad_first_call_s": first_grad_s}
    common.log(f"  forward {out['forward_s']:.3f} s, grad {out['grad_s']:.3f} s (first call {first_grad_s:.1f} s)")
    return out


def render(result) -> str:
    lines = [f"# Gradients through worlds against central differences ({result['tag']})", "",
             f"`{result['machine']['command']}`, {result['machine']['date']}; solver "
             f"`{result['solver']}` (the world's default law `worlds.DEFAULT_LAW` with `{result['changes']}`).", "",
             "Reference: central differences of the same forward rollout at eps 1e-4 (× max(|θ|, 1)); "
             "spread: the largest relative distance of the eps 1e-3, 1e-5 and 1e-6 differences from it.", "",
             "| case | setting | d/d | jax.grad | central diff. 1e-4 | rel. error | central diff. 1e-5 | rel. error | fd spread |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in result["rows"]:
        lines.append(f"| {r['case']} | {r['setting']} | {r['parameter']} | {r['grad']:+.6f} | {r['fd'][str(REF_EPS)]:+.6f} "
                     f"| {r['rel_err']:.1e} | {r['fd']['1e-05']:+.6f} | {r['rel_err_1e-5']:.1e} | {r['fd_spread']:.1e} |")
    timed = [r for r in result["rows"] if "timing" in r]
    if timed:
        lines += ["", "| case | forward s | grad s | grad first call s (compile) |", "| --- | --- | --- | --- |"]
        for r in timed:
            t = r["timing"]
            lines.append(f"| {r['case']} | {t['forward_s']:.3f} | {t['grad_s']:.3f} | {t['grad_first_call_s']:.1f} |")
    return "\n".join(lines) + "\n"


def arguments(ap):
    ap.add_argument("--solver", default="", help="LCPSettings changes, e.g. gradient_tol=none,tol=1e-9")
    ap.add_argument("--timing", action="store_true", help="time the forward and the gradient of each case")
    ap.add_argument("--tag", default="", help="results file suffix: <name>_<tag>.json, .md")


def run(args, out):
    """``python -m benchmarks world_gradients [--only CASE,...] [--tag T]``: ``out`` (tagged) gets the results."""
    import jax

    jax.config.update("jax_enable_x64", True)
    changes = dict(kv.split("=", 1) for kv in args.solver.split(",") if kv)
    changes = {k: _value(v) for k, v in changes.items()}
    law = law_with(changes)
    only = [c for c in args.only.split(",") if c]
    bad = sorted(set(only) - set(CASES))
    if bad:
        raise SystemExit(f"--only: unknown cases {bad}; choose from {CASES}")
    rows = measure(law, only, args.timing)
    result = {"tag": args.tag or "default", "changes": changes, "solver": repr(law.solver), "rows": rows,
              "max_rel_err": max(r["rel_err"] for r in rows),
              "machine": common.machine_info("benchmarks.world_gradients", command=args.command)}
    out = out.tagged(args.tag)
    out.write(result, render(result))
    common.log(f"max relative error {result['max_rel_err']:.2e} -> {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
