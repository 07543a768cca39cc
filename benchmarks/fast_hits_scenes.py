"""Fast hits on and off on the slow scenes: the 5-box stack and the 16-box heap (seed 3) of
``benchmarks.same_physics``, 200 steps each in float64, bitwise or how far apart, and the time of a
second (compiled) run of each, side by side in one process; then the cost in throughput on the
heaps of ``benchmarks.mixed_speed`` (16 boxes, 16 mixed bodies; float32, ``--worlds`` worlds ×
``--steps`` steps, ``worlds.batch_rollout(..., output="final")`` on this process's CPU), off and on
interleaved, the best of ``--repeats`` timed calls of each::

    python -m benchmarks fast_hits_scenes
    python -m benchmarks fast_hits_scenes --worlds 64 --steps 500 --repeats 3
"""
import dataclasses
import sys
import time

import jax
import numpy as np


def scenes_bitwise():
    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    model = worlds.model()
    res = {}
    for name, (scene, params, s), steps in [("stack", scenes.stack(5), 200), ("heap", scenes.heap(16, key=jax.random.PRNGKey(3)), 200)]:
        for on in (False, True):
            sc = dataclasses.replace(scene, fast_hits=on)
            f = jax.jit(lambda s, sc=sc: worlds.rollout(model, sc, params, s, steps, output="final")[0])
            out = jax.block_until_ready(f(s)); t = time.perf_counter(); out = jax.block_until_ready(f(s)); dt = time.perf_counter() - t
            res[name, on] = out
            print(name, "fast_hits", on, f"{steps} steps in {dt:.2f} s", flush=True)
        a, b = res[name, False], res[name, True]
        print(name, "bitwise" if all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b))) else
              f"max |Δpos| {np.abs(np.asarray(a.pos) - np.asarray(b.pos)).max():.3e} m", flush=True)


def heap_speed(heaps, W, steps, repeats):
    import jax.numpy as jnp

    from experiments.peer_scenes import heap_scene, mjcf_text, moving
    from jaxcontact import worlds
    from jaxcontact.types import State
    from jaxcontact.worlds import mjcf

    from .common import HEAPS

    for name in heaps:
        kinds, n = HEAPS[name]
        descs = [heap_scene(kinds, n, seed) for seed in range(W)]
        q = np.array([[x for g in moving(sc) for x in g["pos"] + g["quat"]] for sc in descs], np.float32).reshape(W, n, 7)
        scene, params, _, model = mjcf.from_mjcf(mjcf_text(descs[0]), dtype=jnp.float32)
        states = State(pos=jnp.asarray(q[..., :3]), quat=jnp.asarray(q[..., 3:]), vel=jnp.zeros((W, n, 3), jnp.float32),
                       omega=jnp.zeros((W, n, 3), jnp.float32))
        fns, times, finals = {}, {False: [], True: []}, {}
        for on in (False, True):
            sc = dataclasses.replace(scene, fast_hits=on)
            fns[on] = jax.jit(lambda p, s, sc=sc: worlds.batch_rollout(model, sc, p, s, steps, output="final")).lower(params, states).compile()
        for _ in range(repeats):
            for on in (False, True):
                t = time.perf_counter()
                finals[on], summary = jax.block_until_ready(fns[on](params, states))
                times[on].append(time.perf_counter() - t)
        for on in (False, True):
            best = min(times[on])
            print(f"{name} fast_hits {on}: {W} worlds x {steps} steps best of {repeats} {best:.2f} s "
                  f"({W * n * steps / best:,.0f} body-steps/s; all {', '.join(f'{t:.2f}' for t in times[on])} s), "
                  f"mean final height {float(np.asarray(finals[on].pos[..., 2]).mean()):.4f} m", flush=True)
        print(f"{name}: on/off time {min(times[True]) / min(times[False]):.2f}", flush=True)


PARTS = ("scenes", "speed")  # scenes: bitwise, float64; speed: float32 heaps


def arguments(ap):
    ap.add_argument("--heaps", default="boxes16,mixed16")
    ap.add_argument("--repeats", type=int, default=3)


def run(args, out):
    """``python -m benchmarks fast_hits_scenes [--only scenes,speed]``: printed (``out`` is None)."""
    parts = args.only.split(",")
    unknown = [q for q in parts if q not in PARTS]
    if unknown:
        raise SystemExit(f"--only: unknown part {unknown[0]!r} (parts: {', '.join(PARTS)})")
    if "speed" in parts:  # float32 first: x64 is process-wide
        heap_speed(args.heaps.split(","), int(args.worlds), args.steps, args.repeats)
    if "scenes" in parts:
        jax.config.update("jax_enable_x64", True)
        scenes_bitwise()


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
