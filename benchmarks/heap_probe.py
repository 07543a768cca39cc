"""Probes of why jaxcontact's settled 16-box heaps stand taller than MuJoCo C's on the same seeds
(docs/worlds.md, "The heap's settled height").

    python -m benchmarks.heap_probe --part creep      # MuJoCo C's heap after 2, 5 and 10 s
    python -m benchmarks.heap_probe --part softness   # jaxcontact's heap with Scene.softness = 0
    python -m benchmarks.heap_probe --part speculative  # jaxcontact's heap, no friction where φ > 0

``creep``: does MuJoCo's soft friction let its heap keep sinking (so that its 2 s height is a
transient)? ``softness``: does the relative diagonal on resting rows hold boxes up?
``speculative``: does friction at speculative contacts (a pair within reach, φ > 0, whose normal
acts because its gap closes this step) hold them up? This part patches
``worlds.pipeline.contact_friction`` in this process to give μ = 0 where φ > 0 (a probe, not a
setting of the library). Seeds 0–8 of
``benchmarks.worlds.heap_states`` (float64 initial states, as ``--only heapcheck``). Writes
``results/heap_probe.json`` and ``.md``, one section per part, each with its command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from .common import RESULTS_DIR, write_json

SEEDS = 9


def creep():
    from .worlds import heap_states, mujoco_heap

    _, _, states = heap_states(list(range(16)))
    rows = []
    for steps in (1000, 2500, 5000):
        for cone in ("pyramidal", "elliptic"):
            r = mujoco_heap(states, steps, cone)
            h = 1e3 * np.asarray(r["com_height_m"])
            rows.append({"steps": steps, "seconds": steps * 0.002, "cone": cone, "com_mm_mean": float(h.mean()),
                         "com_mm_sd": float(h.std(ddof=1)), "per_seed_mm": [float(x) for x in h[:SEEDS]]})
            print(rows[-1], flush=True)
    return {"rows": rows}


def softness():
    import jax

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    from .worlds import heap_states

    scene, params, states = heap_states(list(range(SEEDS)))
    model = scenes.model()
    out = {}
    for soft in (scene.softness, 0.0):
        t = time.perf_counter()
        final, _ = worlds.batch_rollout(model, dataclasses.replace(scene, softness=soft), params, states, 1000,
                                        output="final")
        z = 1e3 * np.asarray(jax.device_get(final.pos[..., 2]))
        out[f"softness_{soft:g}"] = {"com_mm_mean": float(z.mean()), "per_seed_mm": [float(x) for x in z.mean(1)],
                                     "on_ground": [int(x) for x in (z < 100).sum(1)], "wall_s": time.perf_counter() - t}
        print(soft, out[f"softness_{soft:g}"], flush=True)
    return out


def speculative():
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import materials, pipeline, scenes

    from .worlds import heap_states

    def no_speculative_friction(params, con, dtype):
        return jnp.where((con.phi > 0)[:, None], 0.0, materials.contact_friction(params, con, dtype))

    scene, params, states = heap_states(list(range(SEEDS)))
    pipeline.contact_friction = no_speculative_friction
    try:
        t = time.perf_counter()
        final, _ = worlds.batch_rollout(scenes.model(), scene, params, states, 1000, output="final")
    finally:
        pipeline.contact_friction = materials.contact_friction
    z = 1e3 * np.asarray(final.pos[..., 2])
    out = {"no_speculative_friction": {"com_mm_mean": float(z.mean()), "per_seed_mm": [float(x) for x in z.mean(1)],
                                       "on_ground": [int(x) for x in (z < 100).sum(1)], "wall_s": time.perf_counter() - t}}
    print(out, flush=True)
    return out


def render(res) -> str:
    out = ["# Probes of the heap's height gap (docs/worlds.md)", ""]
    if "creep" in res:
        c = res["creep"]
        out += [f"## MuJoCo C's heap over time: `{c['provenance']['command']}` (git {c['provenance']['commit'][:7]})", "",
                "| seconds | cone | centre-of-mass height (mm), 16 seeds | seeds 0–8 (mm) |", "|---|---|---|---|"]
        out += [f"| {r['seconds']:g} | {r['cone']} | {r['com_mm_mean']:.1f} ± {r['com_mm_sd']:.1f} | "
                f"{' '.join('%.1f' % x for x in r['per_seed_mm'])} |" for r in c["rows"]]
        out.append("")
    if "softness" in res:
        s = res["softness"]
        out += [f"## jaxcontact's heap against the softness: `{s['provenance']['command']}` (git {s['provenance']['commit'][:7]})",
                "", "| Scene.softness | centre-of-mass height (mm), seeds 0–8 | per seed (mm) | boxes on the ground |",
                "|---|---|---|---|"]
        out += [f"| {k.split('_', 1)[1]} | {v['com_mm_mean']:.1f} | {' '.join('%.1f' % x for x in v['per_seed_mm'])} | "
                f"{' '.join(str(x) for x in v['on_ground'])} |" for k, v in s.items() if k.startswith("softness_")]
        out.append("")
    if "speculative" in res:
        s = res["speculative"]
        v = s["no_speculative_friction"]
        out += [f"## jaxcontact's heap without friction at speculative contacts: `{s['provenance']['command']}` "
                f"(git {s['provenance']['commit'][:7]})", "",
                "| μ where φ > 0 | centre-of-mass height (mm), seeds 0–8 | per seed (mm) | boxes on the ground |",
                "|---|---|---|---|",
                f"| 0 | {v['com_mm_mean']:.1f} | {' '.join('%.1f' % x for x in v['per_seed_mm'])} | "
                f"{' '.join(str(x) for x in v['on_ground'])} |", ""]
    return "\n".join(out)


def main(argv=None):
    import jax

    jax.config.update("jax_enable_x64", True)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["creep", "softness", "speculative"], required=True)
    args = ap.parse_args(argv)
    from .provenance import stamp

    path = RESULTS_DIR / "heap_probe.json"
    res = json.loads(path.read_text()) if path.exists() else {}
    part = {"creep": creep, "softness": softness, "speculative": speculative}[args.part]()
    res[args.part] = {**part, "provenance": stamp()}
    write_json(path, res)
    Path(RESULTS_DIR / "heap_probe.md").write_text(render(res))


if __name__ == "__main__":
    main()
