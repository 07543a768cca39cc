"""Worlds of many bodies against MuJoCo C, measured in one run: the 10-box stack standing for 10 s
(how far the top box moves, float64 and float32) and its speed (box-steps/s, compile time).

    python -m benchmarks.worlds [--seconds 10] [--batch 8] [--out benchmarks/results/worlds]

The stack: ten 0.1 m, 0.37 kg boxes built at rest, face to face on the ground, μ = 0.5, 2 ms
steps. jaxcontact: ``worlds.scenes.stack`` with the default world law (``worlds.DEFAULT_LAW``).
MuJoCo C: the same boxes on free joints, pyramidal cone (and elliptic, its default), its default
solver, ``mujoco.rollout`` on 1 thread. The issue's heap of 16 boxes at 256 worlds is not run:
see docs/worlds.md for why (the dense contact problem of 120 pairs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import RESULTS_DIR, machine_info, md_machine, md_table, write_json

SIZE, MASS, MU, DT = 0.1, 0.37, 0.5, 0.002


def mujoco_stack_xml(n: int, cone: str) -> str:
    bodies = "".join(
        f'<body pos="0 0 {SIZE / 2 + SIZE * i}"><freejoint/><geom type="box" size="{SIZE / 2} {SIZE / 2} {SIZE / 2}" '
        f'mass="{MASS}" friction="{MU} 0.005 0.0001"/></body>' for i in range(n))
    return (f'<mujoco><option timestep="{DT}" cone="{cone}"/><worldbody>'
            f'<geom type="plane" size="5 5 0.1" friction="{MU} 0.005 0.0001"/>{bodies}</worldbody></mujoco>')


def mujoco_stack(n: int, seconds: float, cone: str, batch: int):
    import mujoco
    from mujoco import rollout

    model = mujoco.MjModel.from_xml_string(mujoco_stack_xml(n, cone))
    data = mujoco.MjData(model)
    steps = int(round(seconds / DT))
    state0 = np.zeros(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(model, data, state0, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    init = np.tile(state0, (batch, 1))
    # FULLPHYSICS layout: time, qpos (7 per free body), ...; rollout uses ``data`` as scratch
    top0 = state0[1 + 7 * (n - 1): 1 + 7 * (n - 1) + 3].copy()
    t = time.perf_counter()
    states, _ = rollout.rollout(model, data, init, nstep=steps)
    wall = time.perf_counter() - t
    top = states[0, -1, 1 + 7 * (n - 1): 1 + 7 * (n - 1) + 3]
    return {"top_moved_m": float(np.linalg.norm(top - top0)), "top_sink_m": float(top0[2] - top[2]),
            "box_steps_per_s": n * steps * batch / wall, "wall_s": wall, "worlds": batch, "steps": steps}


def jaxcontact_stack(n: int, seconds: float, dtype: str, batch: int):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    scene, params, s = scenes.stack(n)
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype), t)
    params, s = cast(params), cast(s)
    model = worlds.model()
    steps = int(round(seconds / DT))
    t = time.perf_counter()
    final, summary = worlds.rollout(model, scene, params, s, steps, output="final")
    jax.block_until_ready(final)
    first = time.perf_counter() - t
    t = time.perf_counter()
    final, summary = worlds.rollout(model, scene, params, s, steps, output="final")
    jax.block_until_ready(final)
    wall = time.perf_counter() - t
    out = {"top_moved_m": float(jnp.linalg.norm(final.pos[-1] - s.pos[-1])),
           "top_sink_m": float(s.pos[-1, 2] - final.pos[-1, 2]), "flags": int(summary.flags),
           "compile_s": first - wall, "box_steps_per_s": n * steps / wall, "wall_s": wall, "worlds": 1,
           "steps": steps}
    # contact-solver sweeps per step over the first 500 steps (a trajectory rollout keeps every step's info)
    _, infos = worlds.rollout(model, scene, params, s, min(steps, 500))
    it = np.asarray(infos.iterations)
    out["sweeps"] = {"steps": int(it.size), "mean": float(it.mean()), "median": float(np.median(it)),
                     "p90": float(np.percentile(it, 90)), "max": int(it.max())}
    if batch > 1:
        states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), s)
        short = min(steps, 500)
        run = lambda: worlds.batch_rollout(model, scene, params, states, short, output="final")
        jax.block_until_ready(run())
        t = time.perf_counter()
        jax.block_until_ready(run())
        wb = time.perf_counter() - t
        out["batch"] = {"worlds": batch, "steps": short, "box_steps_per_s": n * short * batch / wb, "wall_s": wb}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boxes", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--batch", type=int, default=8, help="worlds in the batched speed run (500 steps)")
    ap.add_argument("--out", default=str(RESULTS_DIR / "worlds"))
    args = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    info = machine_info("benchmarks.worlds", argv)
    res = {"machine": info, "stack": {"boxes": args.boxes, "seconds": args.seconds, "dt": DT, "mu": MU}}
    for cone in ("pyramidal", "elliptic"):
        res["stack"][f"mujoco_{cone}"] = mujoco_stack(args.boxes, args.seconds, cone, 1)
        print(cone, res["stack"][f"mujoco_{cone}"], flush=True)
    res["stack"]["mujoco_pyramidal_batch"] = mujoco_stack(args.boxes, min(args.seconds, 1.0), "pyramidal", args.batch)
    for dtype in ("float64", "float32"):
        res["stack"][f"jaxcontact_{dtype}"] = jaxcontact_stack(args.boxes, args.seconds, dtype,
                                                                args.batch if dtype == "float32" else 1)
        print(dtype, res["stack"][f"jaxcontact_{dtype}"], flush=True)
    write_json(args.out + ".json", res)
    st = res["stack"]
    rows = []
    for name in ("jaxcontact_float64", "jaxcontact_float32", "mujoco_pyramidal", "mujoco_elliptic"):
        r = st[name]
        sw = r.get("sweeps")
        rows.append([name, f"{1e3 * r['top_moved_m']:.3f}", f"{1e3 * r['top_sink_m']:.3f}",
                     f"{r['box_steps_per_s']:.0f}", f"{r.get('compile_s', 0):.1f}",
                     f"{sw['mean']:.1f} / {sw['median']:.0f} / {sw['max']}" if sw else "—"])
    b = st["jaxcontact_float32"].get("batch")
    mb = st["mujoco_pyramidal_batch"]
    text = (f"# Worlds: the {args.boxes}-box stack for {args.seconds:g} s\n\n"
            f"{md_machine(info)}\n\n"
            + md_table(["engine", "top box moved (mm)", "sank (mm)", "box-steps/s (1 world)", "first call minus second (s)",
                             "sweeps per step, first 500 (mean / median / max)"], rows)
            + (f"\n\nBatched, 500 steps (1 s for MuJoCo): jaxcontact float32 {b['worlds']} worlds "
               f"{b['box_steps_per_s']:.0f} box-steps/s; MuJoCo C pyramidal {mb['worlds']} worlds on 1 thread "
               f"{mb['box_steps_per_s']:.0f} box-steps/s.\n" if b else "\n"))
    with open(args.out + ".md", "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
