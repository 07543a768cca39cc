"""dacm step cost vs vertex count, against the Coulomb LCP law; and a 1024-body dacm rollout.

Bodies: convex hulls of 8, 64, 512 random points on a sphere of radius 0.05 m (0.37 kg), each
dropped so its lowest vertex is 1 mm above the ground, falling at 1 m/s with a spin, so every
timed step resolves contact. Laws: ``CoulombLCP`` with every vertex a contact candidate
(``max_contacts=None``: the point-contact LCP the paper contrasts with), ``CoulombLCP`` with the
8 closest candidates, and ``DACMLaw`` (Fig. 3 network sizes, untrained weights — the cost of a
trained network is the same; its frictionless LCP uses the 8 closest candidates).
Timing: ``jc.batch_rollout`` (jit of vmap of scan), warm-up call, then best of ``--repeats``.

    python -m benchmarks dacm_speed            # writes benchmarks/results/dacm_speed.json / .md

An engine benchmark (no data, no training): the step cost of the dacm law as a contact law of
the simulator. The dacm study itself is ``python -m studies.dacm`` (studies/dacm/README.md).
"""

from __future__ import annotations

import sys
import time

import jax
import numpy as np

import jaxcontact as jc
from jaxcontact import geometry, shapes
from jaxcontact.dacm import DACMLaw



def sphere_body(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(n, 3))
    p = 0.05 * p / np.linalg.norm(p, axis=1, keepdims=True)
    if n == 8:
        p = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.05 / np.sqrt(3)
    return shapes.convex_hull(p, 0.37)


def drop_states(body, B):
    key = jax.random.PRNGKey(0)
    from jaxcontact.states import random_throws

    s = random_throws(key, B)
    pts = jax.vmap(lambda st: geometry.world_points(st, body.vertices))(s)
    return s.replace(pos=s.pos.at[:, 2].add(-pts[..., 2].min(1) + 1e-3), vel=s.vel.at[:, 2].set(-1.0))


def timeit(f, repeats):
    jax.block_until_ready(f())
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f())
        best = min(best, time.perf_counter() - t0)
    return best


def arguments(p):
    p.add_argument("--vertices", default="8,64,512")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--big-batch", type=int, default=1024)
    p.add_argument("--big-steps", type=int, default=100)


def run(a, results):
    """``python -m benchmarks dacm_speed``: the step costs into ``results``."""
    res = {"device": str(jax.devices()[0]), "x64": bool(jax.config.jax_enable_x64), "batch": a.batch,
           "steps": a.steps, "per_body_step_us": {}}
    dl = DACMLaw(3)
    lp = dl.init_params()
    for n in map(int, a.vertices.split(",")):
        body = sphere_body(n)
        s0 = drop_states(body, a.batch)
        row = {"hull_vertices": int(body.num_vertices)}
        for name, law, mc, lparams in (("lcp_all_vertices", jc.CoulombLCP(), None, None),
                                       ("lcp_8_closest", jc.CoulombLCP(), 8, None),
                                       ("dacm", dl, 8, lp)):
            model = jc.Model(law=law, dt=0.002, max_contacts=mc)
            params = jc.Params(body=body, ground=jc.Ground.flat(), law=lparams if lparams is not None else law.init_params(mu=0.18))
            t = timeit(lambda: jc.batch_rollout(model, params, s0, a.steps, output="final").pos, a.repeats)
            row[name] = 1e6 * t / (a.batch * a.steps)
            print(n, name, f"{row[name]:.1f} us/body-step", file=sys.stderr, flush=True)
        res["per_body_step_us"][str(n)] = row
    # the 1024-body jitted dacm rollout (box, Fig. 3 networks)
    from jaxcontact.simulate import make_body
    from jaxcontact.states import random_throws

    body, C = make_body("box")
    model = jc.Model(law=dl, dt=0.002, max_contacts=C)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=lp)
    s0 = random_throws(jax.random.PRNGKey(1), a.big_batch)
    t0 = time.perf_counter()
    out = jax.block_until_ready(jc.batch_rollout(model, params, s0, a.big_steps, output="final").pos)
    first = time.perf_counter() - t0
    t = timeit(lambda: jc.batch_rollout(model, params, s0, a.big_steps, output="final").pos, 1)
    res["big_rollout"] = {"bodies": a.big_batch, "steps": a.big_steps, "first_call_s": round(first, 2),
                          "steady_s": round(t, 2), "body_steps_per_s": round(a.big_batch * a.big_steps / t),
                          "finite": bool(np.all(np.isfinite(np.asarray(out))))}
    print(res["big_rollout"], file=sys.stderr)
    L = ["# dacm step cost vs vertex count (benchmarks/dacm_speed.py)", "",
         f"`{a.command}` — {res['device']}, x64={res['x64']}, batch {a.batch} × {a.steps} steps, "
         "every step in contact; 2 CPU cores shared with other jobs, so absolute numbers are noisy.", "",
         "| hull vertices | LCP, all vertices (µs/body-step) | LCP, 8 closest | dacm |", "| --- | --- | --- | --- |"]
    for n, r in res["per_body_step_us"].items():
        L.append(f"| {r['hull_vertices']} | {r['lcp_all_vertices']:.1f} | {r['lcp_8_closest']:.1f} | {r['dacm']:.1f} |")
    b = res["big_rollout"]
    L += ["", f"1024-body dacm rollout (box, jit + vmap, {b['steps']} steps): first call {b['first_call_s']} s "
          f"(compiles), steady {b['steady_s']} s = {b['body_steps_per_s']} body-steps/s, finite: {b['finite']}."]
    results.write(res, "\n".join(L))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
