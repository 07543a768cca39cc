"""Where the dense solve and its unrolled sweep pay: ``solvers.DENSE_WORLD_ROWS`` and ``SMALL_ROWS``.

A world of free bodies of at most ``DENSE_WORLD_ROWS`` rows is formed densely, above it solved in
velocity form; a dense problem of at most ``SMALL_ROWS`` rows is swept unrolled (each row one vector
operation over the batch), above it in a ``fori_loop``. Three settings side by side: "before" (both
64, the package before 2026-11-28 20:10 UTC), "now" (worlds 32, unrolled 64: the defaults), "both 32"
(the unrolled sweep also capped at 32). This times, in one process and float64 on this machine's CPU,
each workload's compile and run seconds under each (the module constants patched, the compiled
programs dropped in between), and the largest difference of the final positions from "before":

* one box (8 contacts, 24 rows) and one 12-gon prism with 12 and 16 contacts (36, 48 rows):
  256 spinning throws, 800 steps (``jc.batch_rollout``);
* two boxes, A pushed into B (``scenes.cradle(2)``, 60 rows): 1 world × 1,000 steps, 64 × 1,000,
  256 × 500 (``worlds.rollout``/``batch_rollout``), and ``jax.grad`` of B's final x through 300
  steps with respect to A's speed;
* the 3-link chain swinging onto the ground (300 steps, ``chains.rollout``: a jointed world's
  full mobility, dense).

    python -m benchmarks small_rows            # about 3 minutes on 2 cores

Prints and writes ``benchmarks/results/small_rows.{json,md}`` (``--out`` another stem).
"""

from __future__ import annotations

import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxcontact as jc  # noqa: E402
from jaxcontact import chains, worlds  # noqa: E402
from jaxcontact.solvers import problem  # noqa: E402
from jaxcontact.worlds import scenes  # noqa: E402

SETTINGS = {"before": (64, 64), "now": (32, 64), "both 32": (32, 32)}  # (DENSE_WORLD_ROWS, SMALL_ROWS)


def _prism(n: int, mass: float = 0.37):
    a = np.linspace(0, 2 * np.pi, n + 1)[:-1]
    pts = [[0.05 * np.cos(t), 0.05 * np.sin(t), s] for t in a for s in (-0.05, 0.05)]
    return jc.shapes.convex_hull(jnp.asarray(pts), mass)


def _body(contacts: int, batch: int = 256, steps: int = 800):
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=0.002, max_contacts=contacts)
    body = jc.shapes.box(0.1, 0.37) if contacts == 8 else _prism(12)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=0.3))
    v = jnp.linspace(0.5, 2.0, batch)
    starts = jax.vmap(lambda x: jc.make_state(pos=jnp.array([0.0, 0.0, 0.2]), vel=jnp.stack([x, 0.3 * x, 0.0]),
                                              omega=jnp.array([1.0, 2.0, 3.0])))(v)
    return (lambda s: jc.batch_rollout(model, params, s, steps).pos[:, -1]), starts, batch * steps


def _push(batch: int, steps: int):
    model = worlds.model(dt=0.002)
    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)
    if batch == 1:
        return (lambda s: worlds.rollout(model, scene, params, s, steps, output="final")[0].pos), s0, 2 * steps
    speeds = jnp.linspace(0.5, 2.0, batch)
    states = jax.vmap(lambda x: s0.replace(vel=s0.vel.at[0, 0].set(x)))(speeds)
    return (lambda s: worlds.batch_rollout(model, scene, params, s, steps, output="final")[0].pos), states, \
        2 * batch * steps


def _push_grad(steps: int = 300):
    model = worlds.model(dt=0.002)
    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)

    def loss(v):
        return worlds.rollout(model, scene, params, s0.replace(vel=s0.vel.at[0, 0].set(v)), steps,
                              output="final")[0].pos[1, 0]

    return jax.grad(loss), jnp.asarray(1.5), steps


def _chain(steps: int = 300):
    cm = chains.ChainModel()
    params = chains.make_chain(pin=(0.0, 0.0, 0.45))
    s0 = chains.planar_state(params, jnp.array([0.3, -0.4, 0.5]), jnp.array([1.0, 0.0, -2.0]))
    return (lambda s: chains.rollout(cm, params, s, steps)[0].pos[-1]), s0, 3 * steps


WORKLOADS = {
    "box, 24 rows, 256 x 800": lambda: _body(8),
    "12-gon prism, 36 rows, 256 x 800": lambda: _body(12),
    "12-gon prism, 48 rows, 256 x 800": lambda: _body(16),
    "2-box push, 60 rows, 1 x 1000": lambda: _push(1, 1000),
    "2-box push, 60 rows, 64 x 1000": lambda: _push(64, 1000),
    "2-box push, 60 rows, 256 x 500": lambda: _push(256, 500),
    "grad of the 2-box push, 300 steps": _push_grad,
    "3-link chain, 300 steps": _chain,
}


def measure(name: str, setting: str) -> dict:
    problem.DENSE_WORLD_ROWS, problem.SMALL_ROWS = SETTINGS[setting]
    jax.clear_caches()
    fn, arg, work = WORKLOADS[name]()
    t = time.perf_counter()
    compiled = jax.jit(fn).lower(arg).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(compiled(arg))
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        out = jax.block_until_ready(compiled(arg))
        runs.append(time.perf_counter() - t)
    run_s = min(runs)
    return dict(compile_s=compile_s, run_s=run_s, per_s=work / run_s, out=np.asarray(out))


def run(args, results) -> int:
    """``python -m benchmarks small_rows`` (``--only``: comma-separated substrings of workload names):
    ``results`` (``runner.Results``) gets the JSON and the .md."""
    keep = [n for n in WORKLOADS if not args.only or any(s in n for s in args.only.split(","))]
    original = problem.DENSE_WORLD_ROWS, problem.SMALL_ROWS
    rows, res = [], {}
    try:
        for name in keep:
            r = {t: measure(name, t) for t in SETTINGS}
            base = r["before"]["out"]
            for t in SETTINGS:
                r[t]["max_diff"] = float(np.max(np.abs(r[t].pop("out") - base)))
            res[name] = r
            cells = [f"{r[t]['compile_s']:.1f}" for t in SETTINGS] + [f"{r[t]['run_s']:.3f}" for t in SETTINGS]
            cells += [f"{r[t]['max_diff']:.1e}" for t in SETTINGS if t != "before"]
            rows.append(f"| {name} | " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
    finally:
        problem.DENSE_WORLD_ROWS, problem.SMALL_ROWS = original
    heads = [f"compile s ({t})" for t in SETTINGS] + [f"run s ({t})" for t in SETTINGS] + \
        [f"max |Δ final| ({t})" for t in SETTINGS if t != "before"]
    lines = ["# The dense solve's thresholds: `DENSE_WORLD_ROWS` and `SMALL_ROWS`", "",
             "`python -m benchmarks small_rows` (float64, CPU; compile and best-of-3 run seconds in one process; "
             "settings (DENSE_WORLD_ROWS, SMALL_ROWS): " + ", ".join(f"{k} {v}" for k, v in SETTINGS.items())
             + "; the run's work, body-steps or steps, in the JSON)", "",
             "| workload | " + " | ".join(heads) + " |", "| --- " * (len(heads) + 1) + "|", *rows, ""]
    results.write(dict(results=res, settings=SETTINGS), "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
