"""Faces at rest, the two doors and the heap's cost (issues 61 and 60, part 3).

    python -m benchmarks faces                      # all three parts (about 3 min on 2 cores)
    python -m benchmarks faces --only rest,doors

- ``rest``: a box, the 8-, 12- and 24-gon prisms (``shapes.regular_prism``, radius 0.06 m) and a
  120-vertex hull with a 40-vertex bottom face, each placed at rest on its bottom face, 260 steps
  of 2 ms (μ 0.5, ``jc.Model`` defaults): the largest |v| and |ω| from 0.5 s on, per shape, as single
  bodies (``jc.batch_rollout``), a world without pairs (``make_scene(shapes, pairs=[])``, the per-body
  route) and a coupled world (one pair), float32 and float64.
- ``doors``: a box thrown from 0.3 m at 1 m/s with spin ω = (1, 2, 3) rad/s and the README's throw
  (no spin, μ 0.18), 500 steps in float64: the largest |Δpos| between ``jc.rollout`` and the
  one-body world of ``worlds.make_scene([box])``, with the same ``jc.Model`` and with ``worlds.model()``.
- ``heap``: 64 heaps of 16 boxes (``scenes.heap``), 300 steps, ``worlds.model()`` (its
  ``max_contacts`` by ``--heap-max-contacts``), float32, ``worlds.batch_rollout``: box-steps/s,
  best of 3 after a warm-up.

Prints one line per measurement and writes ``--out`` (.json). Runs on older checkouts too (the
"before" of benchmarks/results/faces.md).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .common import machine_info


def _shapes(K=128):
    from jaxcontact import shapes

    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0.0, 2 * np.pi, 40))
    bottom = np.c_[0.06 * np.cos(a), 0.06 * np.sin(a), np.zeros(40)]
    d = rng.normal(size=(80, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    d[:, 2] = np.abs(d[:, 2])
    hull = shapes.convex_hull(np.r_[bottom, d * [0.06, 0.06, 0.08]], 0.37, pad_to=K)
    prisms = [shapes.regular_prism(n, 0.06, 0.1, 0.37, pad_to=K) for n in (8, 12, 24)]
    bodies = [shapes.box(0.1, 0.37, pad_to=K)] + prisms + [hull]
    heights = [-float(np.min(np.asarray(b.vertices)[np.asarray(b.vertex_mask) > 0, 2])) for b in bodies]
    return ["box", "8-gon", "12-gon", "24-gon", "hull120"], bodies, heights


def rest(res):
    import jax
    import jax.numpy as jnp

    import jaxcontact as jc
    from jaxcontact import worlds

    names, bodies, z = _shapes()
    n = len(bodies)
    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    stack = lambda *x: jnp.stack(x)
    out = {}
    for dtype in (jnp.float32, jnp.float64):
        cast = lambda t: jax.tree_util.tree_map(
            lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x, t)
        quat = jnp.tile(jnp.array([1.0, 0, 0, 0]), (n, 1))
        params = cast(jc.Params(body=jax.tree_util.tree_map(stack, *bodies),
                                ground=jax.tree_util.tree_map(stack, *[jc.Ground.flat()] * n),
                                law=jax.tree_util.tree_map(stack, *[law.init_params(mu=0.5)] * n)))
        states = cast(jc.State(pos=jnp.array([[0.0, 0.0, h] for h in z]), quat=quat, vel=jnp.zeros((n, 3)),
                               omega=jnp.zeros((n, 3))))
        traj = jc.batch_rollout(model, params, states, 260, params_batched=True, output="trajectory")
        runs = {"single": (np.swapaxes(np.asarray(traj.vel), 0, 1), np.swapaxes(np.asarray(traj.omega), 0, 1))}
        wstate = cast(jc.State(pos=jnp.array([[0.3 * i, 0.0, h] for i, h in enumerate(z)]), quat=quat,
                               vel=jnp.zeros((n, 3)), omega=jnp.zeros((n, 3))))
        for route, pairs in (("world, per body", []), ("world, coupled", [(0, 1)])):
            scene, body = worlds.make_scene(bodies, pairs=pairs)
            wp = cast(jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=0.5)))
            tw, _ = worlds.rollout(model, scene, wp, wstate, 260)
            runs[route] = (np.asarray(tw.vel), np.asarray(tw.omega))
        for route, (v, w) in runs.items():
            vmax = np.linalg.norm(v[250:], axis=-1).max(axis=0)
            wmax = np.linalg.norm(w[250:], axis=-1).max(axis=0)
            key = f"{route}, {jnp.dtype(dtype).name}"
            out[key] = {nm: {"v_m_s": float(a), "omega_rad_s": float(b)} for nm, a, b in zip(names, vmax, wmax)}
            print(f"rest {key}: " + ", ".join(f"{nm} |v| {a:.2g} |w| {b:.2g}" for nm, a, b in zip(names, vmax, wmax)),
                  flush=True)
    res["rest"] = out


def doors(res):
    import jax
    import jax.numpy as jnp

    import jaxcontact as jc
    from jaxcontact import shapes, worlds

    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=0.002)
    box = shapes.box(0.1, 0.37)
    scene, body = worlds.make_scene([box])
    out = {}
    for name, throw in (("spin", dict(pos=[0, 0, 0.3], vel=[1.0, 0, 0], omega=[1.0, 2.0, 3.0])),
                        ("readme", dict(pos=[0, 0, 0.3], vel=[1.0, 0, 0]))):
        params = jc.Params(body=box, ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
        start = jc.make_state(**throw)
        one = jc.rollout(model, params, start, 500)
        lead = jax.tree_util.tree_map(lambda x: x[None], start)
        row = {"final_y_single_m": float(one.pos[-1, 1])}
        for label, m in (("same_model", model), ("worlds_model", worlds.model())):
            tw, _ = worlds.rollout(m, scene, params.replace(body=body), lead, 500)
            d = np.abs(np.asarray(tw.pos[:, 0]) - np.asarray(one.pos)).max(axis=1)
            row[label] = {"max_dpos_m": float(d.max()), "first_step": int(np.argmax(d > 0)) if d.max() > 0 else -1,
                          "final_y_world_m": float(tw.pos[-1, 0, 1])}
        out[name] = row
        print(f"doors {name}: {row}", flush=True)
    res["doors"] = out


def heap(res, repeats=3, max_contacts=None):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    W, N, T = 64, 16, 300
    scene, params, state = worlds.scenes.heap(N)
    params = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x,
                                    params)
    state = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), state)
    model = worlds.model() if max_contacts is None else worlds.model(max_contacts=max_contacts)
    keys = jax.random.split(jax.random.PRNGKey(1), W)
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x] * W), state)
    states = states.replace(vel=states.vel + 0.05 * jax.vmap(lambda k: jax.random.normal(k, (N, 3), jnp.float32))(keys))
    run = lambda: jax.block_until_ready(worlds.batch_rollout(model, scene, params, states, T, output="final"))
    final, _ = run()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    res["heap"] = {"max_contacts": model.max_contacts, "worlds": W, "boxes": N, "steps": T, "seconds": best, "box_steps_per_s": W * N * T / best,
                   "final_mean_z_m": float(final.pos[..., 2].mean())}
    print(f"heap: {res['heap']}", flush=True)


def arguments(ap):
    ap.add_argument("--heap-max-contacts", type=int, default=None, help="the heap's Model.max_contacts "
                    "(default: worlds.model()'s, 8)")


def run(args, out):
    """``python -m benchmarks faces``: ``out`` (``runner.Results``) gets the JSON (of the cases run)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    res = {"machine": machine_info("benchmarks.faces", command=args.command)}
    for part in args.only.split(","):
        if part == "heap":
            heap(res, max_contacts=args.heap_max_contacts)
        else:
            {"rest": rest, "doors": doors}[part](res)
    out.write(res)


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
