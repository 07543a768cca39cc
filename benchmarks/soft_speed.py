"""What MuJoCo's soft constraints cost (``Scene.constraints = "mujoco"``, ``worlds.soft``): the CPU seconds
per step of one world's rollout in each mode, the same process, the modes in turn.

    python -m benchmarks soft_speed [--robots quadruped,arm7_box] [--steps 200] [--rounds 3] [--dtype float32]

The robots are ``jaxcontact/data/scenes``' quadruped (from its keyframe "stand") and 7-joint arm beside a
box (``benchmarks.robot_speed`` describes them), loaded by ``worlds.from_mjcf(..., constraints=MODE)``
with zero controls. Each mode is compiled first (apart), then timed ``--rounds`` times in turn (CPU time
of this process, ``time.process_time``, over one ``rollout(..., output="final")`` of ``--steps`` steps);
the median per step is reported, with the ratio of the soft mode to the hard one, and each mode's mean
and largest solver sweeps per step and its contact problem's rows (the pyramid makes a contact four
rows of its own). Results: ``benchmarks/results/soft_speed.{json,md}`` (or ``--name``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from .common import machine_info, md_machine, md_table

SCENES = Path(__file__).resolve().parents[1] / "jaxcontact" / "data" / "scenes"
KEYFRAMES = {"quadruped": "stand", "arm7_box": None}


def arguments(ap):
    ap.add_argument("--robots", default=",".join(KEYFRAMES), help="robots of jaxcontact/data/scenes (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per mode (default: %(default)s)")


def run(args, out):
    """``python -m benchmarks soft_speed``: ``out`` (``runner.Results``) gets the .json and .md."""
    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from jaxcontact import worlds

    dtype = jnp.float32 if args.dtype == "float32" else jnp.float64
    info = machine_info("benchmarks.soft_speed", command=args.command)
    rows, records = [], []
    for robot in args.robots.split(","):
        path = str(SCENES / f"{robot}.xml")
        loaded, runs = {}, {}
        for mode in ("hard", "mujoco"):
            scene, params, state, model = worlds.from_mjcf(path, keyframe=KEYFRAMES[robot], dtype=dtype, constraints=mode)
            run = jax.jit(lambda p, s, scene=scene, model=model: worlds.rollout(model, scene, p, s, args.steps)[1])
            t0 = time.process_time()
            infos = jax.block_until_ready(run(params, state))
            compile_s = time.process_time() - t0
            loaded[mode] = (params, state, compile_s, infos)
            runs[mode] = run
        times = {mode: [] for mode in loaded}
        for _ in range(args.rounds):
            for mode, (params, state, _, _) in loaded.items():
                t0 = time.process_time()
                jax.block_until_ready(runs[mode](params, state))
                times[mode].append((time.process_time() - t0) / args.steps)
        per = {mode: float(np.median(t)) for mode, t in times.items()}
        for mode, (params, state, compile_s, infos) in loaded.items():
            it = np.asarray(infos.iterations)
            rec = {"robot": robot, "mode": mode, "cpu_s_per_step": per[mode], "rounds": times[mode],
                   "first_call_cpu_s": compile_s, "mean_sweeps": float(it.mean()), "max_sweeps": int(it.max()),
                   "flags_steps": int(np.sum(np.asarray(infos.flags) != 0))}
            records.append(rec)
            rows.append([robot, mode, f"{per[mode] * 1e3:.3g}", f"{per[mode] / per['hard']:.2f}",
                         f"{rec['mean_sweeps']:.1f}", rec["max_sweeps"], rec["flags_steps"], f"{compile_s:.1f}"])
            print(rows[-1], flush=True)
    md = [f"# MuJoCo's soft constraints: CPU per step ({args.dtype}, one world, {args.steps} steps, median of "
          f"{args.rounds} rounds, modes in turn)", "", md_machine(info), "",
          md_table(["robot", "constraints", "CPU ms / step", "× hard", "mean sweeps", "max sweeps", "flagged steps",
                    "first call CPU s"], rows), ""]
    out.write({"machine": info, "steps": args.steps, "dtype": args.dtype, "records": records}, "\n".join(md))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
