"""Fast hits on and off on the slow scenes: the 5-box stack and the 16-box heap (seed 3) of
``benchmarks.same_physics``, 200 steps each in float64, bitwise or how far apart, and the time of a
second (compiled) run of each, side by side in one process::

    python -m benchmarks.fast_hits_scenes
"""
import dataclasses
import time

import jax
import numpy as np


def main():
    jax.config.update("jax_enable_x64", True)
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


if __name__ == "__main__":
    main()
