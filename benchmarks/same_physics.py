"""Same physics before and after a refactor: the finals of fixed workloads, saved and compared.

Runs, in float64 on this machine's CPU:

* ``throws``: 1,000 random box throws (``states.random_throws``, seed 0), 800 steps, the default
  ``CoulombLCP`` (μ = 0.18) through ``batch_rollout``; the same with ε = 0.3 and a warm start;
  64 of them under ``RelaxedCoulomb`` (200 steps); and 256 planar throws;
* ``worlds``: a 16-box heap (200 steps), the touching 5-box cradle (100 steps), a 5-box stack
  (200 steps) through ``worlds.rollout``; a batch of 4 heaps (100 steps) through
  ``worlds.batch_rollout`` with the sequential and the coloured sweeps (their batching rule);
* ``chains``: the 3-link chain swinging onto the ground (300 steps, ``chains.rollout``).

``--out FILE.npz`` saves every final state; ``--compare OLD.npz`` also prints, per workload, the
largest difference of the positions and orientations (m, and quaternion units) from the old file,
and exits 1 when a throw moved by more than 1e-12 m. Only public entry points are called, so the
same file runs against an older checkout (``PYTHONPATH=<old tree> python benchmarks/same_physics.py
--out old.npz``: that tree's ``jaxcontact``, this file's runner)::

    python -m benchmarks same_physics --out /tmp/new.npz --compare /tmp/old.npz
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxcontact as jc  # noqa: E402
from jaxcontact import chains, shapes, worlds  # noqa: E402
from jaxcontact.states import random_throws  # noqa: E402
from jaxcontact.worlds import scenes  # noqa: E402


def _final_dict(prefix, state) -> dict:
    return {f"{prefix}.{k}": np.asarray(getattr(state, k)) for k in state.__dataclass_fields__}


def throws(n: int = 1000, steps: int = 800) -> dict:
    out = {}
    box = shapes.box((0.1, 0.1, 0.1), 0.37)
    ground = jc.Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0))
    states = random_throws(jax.random.PRNGKey(0), n)
    for name, law, lp in (
        ("default", jc.CoulombLCP(), dict(mu=0.18)),
        ("bounce_warm", jc.CoulombLCP(solver=jc.LCPSettings(warm_start=True)), dict(mu=0.3, restitution=0.3)),
    ):
        model = jc.Model(law=law)
        params = jc.Params(body=box, ground=ground, law=law.init_params(**lp))
        out.update(_final_dict(f"throws.{name}", jc.batch_rollout(model, params, states, steps)))
    law = jc.RelaxedCoulomb()
    params = jc.Params(body=box, ground=ground, law=law.init_params(mu=0.3, restitution=0.2))
    first64 = jax.tree_util.tree_map(lambda x: x[:64], states)
    out.update(_final_dict("throws.relaxed", jc.batch_rollout(jc.Model(law=law), params, first64, 200)))
    law = jc.CoulombLCP()
    planar = random_throws(jax.random.PRNGKey(1), 256, planar=True)
    params = jc.Params(body=shapes.box2d((0.1, 0.1), 0.37),
                       ground=jc.Ground(normal=jnp.array([0.0, 1.0]), height=jnp.array(0.0)),
                       law=law.init_params(mu=0.18))
    out.update(_final_dict("throws.planar", jc.batch_rollout(jc.Model(law=law), params, planar, steps)))
    return out


def world_finals() -> dict:
    out = {}
    model = worlds.model()
    for name, (scene, params, s), steps in (
        ("heap", scenes.heap(16, key=jax.random.PRNGKey(3)), 200),
        ("cradle", scenes.cradle(5, gap=0.0, speed=1.0, restitution=1.0), 100),
        ("stack", scenes.stack(5), 200),
    ):
        traj, _ = worlds.rollout(model, scene, params, s, steps)
        out.update(_final_dict(f"worlds.{name}", jax.tree_util.tree_map(lambda x: x[-1], traj)))
    for sweeps in ("sequential", "colour"):  # a batch of worlds: the sweeps' own batching rule
        scene, params, s = scenes.heap(16, key=jax.random.PRNGKey(5))
        batch = jax.tree_util.tree_map(lambda x: jnp.stack([x + 0.01 * k * (x.ndim > 1) for k in range(4)]), s)
        batch = batch.replace(quat=jnp.stack([s.quat] * 4))
        final, _ = worlds.batch_rollout(scenes.model(sweeps=sweeps), scene, params, batch, 100, output="final")
        out.update(_final_dict(f"worlds.heap_batch_{sweeps}", final))
    cm = chains.ChainModel()
    params = chains.make_chain(pin=(0.0, 0.0, 0.45))
    s0 = chains.planar_state(params, jnp.array([0.3, -0.4, 0.5]), jnp.array([1.0, 0.0, -2.0]))
    traj, _ = chains.rollout(cm, params, s0, 300)
    out.update(_final_dict("chains.swing", jax.tree_util.tree_map(lambda x: x[-1], traj)))
    return out


def compare(new: dict, old_path: str) -> bool:
    old = dict(np.load(old_path))
    ok = True
    groups = sorted({k.rsplit(".", 1)[0] for k in new})
    for g in groups:
        diffs = {}
        for field in ("pos", "quat", "angle", "vel", "omega"):
            k = f"{g}.{field}"
            if k in new and k in old:
                diffs[field] = float(np.max(np.abs(new[k] - old[k])))
        worst = max(diffs.get("pos", 0.0), diffs.get("angle", 0.0))
        flag = "bitwise" if all(v == 0 for v in diffs.values()) else f"max |Δpos| {worst:.3g} m"
        print(f"{g:28s} {flag:28s} " + " ".join(f"{f}={v:.2g}" for f, v in diffs.items()))
        ok &= worst <= 1e-12 or not g.startswith("throws")
    return ok


def arguments(ap):
    # dest "finals": the npz path, not the runner's results folder (this benchmark writes no JSON or Markdown)
    ap.add_argument("--out", dest="finals", required=True, help="npz of the finals")
    ap.add_argument("--compare", default=None, help="an earlier --out file")
    ap.add_argument("--throws", type=int, default=1000, help="box throws (default: %(default)s)")


def run(args, out):
    """``python -m benchmarks same_physics``: the finals saved to ``--out``; with ``--compare``, a throw that
    moved ends the run with exit status 1."""
    finals = {**throws(args.throws), **world_finals()}
    np.savez(args.finals, **finals)
    if args.compare and not compare(finals, args.compare):
        raise SystemExit(1)


if __name__ == "__main__":
    if __package__:  # python -m benchmarks.same_physics
        from .runner import alias

        alias(sys.modules[__name__])
    else:  # python benchmarks/same_physics.py with PYTHONPATH=<a tree>: that tree's jaxcontact (imported above),
        # this file's runner and tooling (its repository first on the path from here on)
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from benchmarks.runner import run as run_benchmark

        run_benchmark("same_physics", sys.argv[1:], sys.modules[__name__])
