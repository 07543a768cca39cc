"""Device memory per body of a final-state-only rollout, from XLA's compiled memory analysis.

Compiles ``batch_rollout(..., output="final")`` of the box-throw workload at two batch sizes and
reports the bytes per body (slope between them) of arguments, outputs and temporaries, for the
default device (run on a GPU machine to measure GPU memory; the figure is what XLA allocates).

    python -m benchmarks memory --json    # writes benchmarks/results/memory.json (unless --out)

The rollout is the public ``jc.batch_rollout`` inside ``jax.jit`` (traced, so it skips input
validation), with ``chunk_size=None``: the whole batch in one vmap, as on a GPU.
"""

from __future__ import annotations

import json
import sys

import jax

import jaxcontact as jc
from jaxcontact.states import random_throws



def analysis(batch: int, steps: int, max_iter: int, fixed: bool):
    law = jc.CoulombLCP(solver=jc.LCPSettings(max_iter=max_iter, fixed_iterations=fixed))
    model = jc.Model(law=law, dt=0.002, max_contacts=4)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(0.18))
    states = random_throws(jax.random.PRNGKey(0), batch)
    rollout = jax.jit(lambda p, s: jc.batch_rollout(model, p, s, steps, output="final", chunk_size=None))
    compiled = rollout.lower(params, states).compile()
    m = compiled.memory_analysis()
    return {
        "argument": m.argument_size_in_bytes,
        "output": m.output_size_in_bytes,
        "temp": m.temp_size_in_bytes,
        "total": m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes,
    }


def arguments(ap):
    ap.add_argument("--batches", default="1024,16384")
    ap.add_argument("--json", action="store_true")


def run(args, results):
    """``python -m benchmarks memory``: ``results`` (``runner.Results``) gets the JSON."""
    b1, b2 = (int(x) for x in args.batches.split(","))
    out = {"command": args.command,
           "device": str(jax.devices()[0]), "dtype": str(jax.numpy.result_type(float)), "configs": {}}
    for name, (max_iter, fixed) in {"tolerance (max_iter 100)": (100, False), "fixed 20 sweeps": (20, True)}.items():
        a1, a2 = analysis(b1, args.steps, max_iter, fixed), analysis(b2, args.steps, max_iter, fixed)
        out["configs"][name] = {
            f"batch_{b1}": a1, f"batch_{b2}": a2,
            "bytes_per_body": {k: (a2[k] - a1[k]) / (b2 - b1) for k in a1},
        }
    results.write(out)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for name, c in out["configs"].items():
            print(f"{name}: {c['bytes_per_body']['total']:.0f} bytes per body ({out['device']})")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
