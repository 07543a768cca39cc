"""Where a batch of heaps spends its time: a jax.profiler trace of one compiled ``batch_rollout``
of W different 16-box drops for S steps (float32, the default model), its thunks summed by name
(the two fused kernels appear as ``ffi_call``s, named by their FFI target), the largest first.

    python -m benchmarks heap_profile --worlds 64 --steps 200

XLA's CPU runtime runs independent thunks concurrently, so the durations overlap and their sum
exceeds the wall time; read them as shares, not as a split that adds up."""

from __future__ import annotations

import collections
import gzip
import json
import re
import sys
import tempfile
import time
from pathlib import Path


def arguments(ap):
    ap.add_argument("--top", type=int, default=25, help="thunks listed")


def run(args, out):
    """``python -m benchmarks heap_profile [--worlds W] [--steps S]``: the table, printed (``out`` is None)."""
    args.worlds = int(args.worlds)

    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    keys = jnp.stack([jax.random.PRNGKey(i) for i in range(args.worlds)])
    scene, params, _ = scenes.heap(16, keys[0])
    states = jax.vmap(lambda k: scenes.heap(16, k)[2])(keys)
    f32 = lambda t: jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating)
                                           else x, t)
    params, states = f32(params), f32(states)
    model = worlds.model()
    run = jax.jit(lambda st: worlds.batch_rollout(model, scene, params, st, args.steps, output="final"))
    compiled = run.lower(states).compile()
    targets = dict(re.findall(r"%(ffi_call[.\d]*) = .*?custom_call_target=\"([a-z_0-9]+)\"", compiled.as_text()))
    jax.block_until_ready(compiled(states))
    t = time.perf_counter()
    jax.block_until_ready(compiled(states))
    wall = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        jax.profiler.start_trace(tmp)
        jax.block_until_ready(compiled(states))
        jax.profiler.stop_trace()
        trace = sorted(Path(tmp).glob("**/*.trace.json.gz"))[-1]
        events = json.load(gzip.open(trace))["traceEvents"]
    total, count = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and not e["name"].startswith(("ThunkExecutor", "$")):
            total[e["name"]] += e.get("dur", 0)
            count[e["name"]] += 1
    world_steps = args.worlds * args.steps
    print(f"{args.worlds} heaps x {args.steps} steps: {wall:.2f} s untraced, {1e6 * wall / world_steps:.0f} µs per "
          f"world-step ({16 * world_steps / wall:,.0f} box-steps/s)")
    print("µs per world-step   calls  thunk")
    for name, us in total.most_common(args.top):
        print(f"{us / world_steps:17.1f} {count[name]:7d}  {name}{' (' + targets[name] + ')' if name in targets else ''}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
