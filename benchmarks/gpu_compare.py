"""Accuracy of a GPU run: its float32 final states against CPU float32 and CPU float64 rollouts
of the same start states (``finals.npz`` written by ``benchmarks.gpu_run``).

Box throws are chaotic where a box lands on an edge or a corner: a last-bit difference at an
impact can send it to another face. So the GPU's float32 result is judged beside the CPU's own
float32 result, both against float64: if the GPU's differences from float64 are distributed like
the CPU float32 ones, the accelerator costs no accuracy.

    python -m benchmarks gpu_compare --finals benchmarks/results/gpu/finals.npz

Writes ``benchmarks/results/gpu_accuracy.json`` and ``gpu_accuracy.md`` (unless ``--out DIR``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from . import common

FIELDS = ("pos", "quat", "vel", "omega")


def arguments(p):
    p.add_argument("--finals", required=True, help="finals.npz of a benchmarks.gpu_run run")
    p.add_argument("--run-json", default=None, help="that run's gpu_run.json (device and command; default beside --finals)")
    p.add_argument("--limit", type=int, default=None, help="compare only the first N throws")


def rollout(states: dict, steps: int, dtype) -> dict:
    """The workload's finals from ``states`` in ``dtype`` (the parameters are built in JAX's
    default float, which is ``dtype`` in each call of ``main``)."""
    import jax.numpy as jnp
    import jaxcontact as jc

    model, params = common.box_workload()
    s = jc.State(**{k: jnp.asarray(v, dtype) for k, v in states.items()})
    fin = jc.batch_rollout(model, params, s, steps, validate=False)
    return {k: np.asarray(getattr(fin, k), np.float64) for k in FIELDS}


def angle(q1, q2):
    """Rotation angle (rad) between unit quaternions (rows)."""
    q1 = q1 / np.linalg.norm(q1, axis=-1, keepdims=True)
    q2 = q2 / np.linalg.norm(q2, axis=-1, keepdims=True)
    return 2 * np.arccos(np.clip(np.abs(np.sum(q1 * q2, -1)), 0.0, 1.0))


def differences(a: dict, b: dict) -> dict:
    d_pos = np.linalg.norm(a["pos"] - b["pos"], axis=-1)
    d_ang = angle(a["quat"], b["quat"])
    q = lambda x: {f"p{p}": float(np.percentile(x, p)) for p in (50, 90, 99)} | {"max": float(x.max())}
    return {"pos_m": q(d_pos), "angle_rad": q(d_ang),
            "frac_pos_below_1mm": float((d_pos < 1e-3).mean()), "frac_pos_below_1cm": float((d_pos < 1e-2).mean())}


def run(a, results) -> int:
    """``python -m benchmarks gpu_compare --finals F``: ``results`` (default ``results/gpu_accuracy.json``, ``.md``)."""
    common.select_platform("cpu")
    import jax
    import jax.numpy as jnp

    f = np.load(a.finals)
    n = int(f["batch"]) if a.limit is None else min(a.limit, int(f["batch"]))
    steps = int(f["steps"])
    start = {k: f[f"start_{k}"][:n] for k in FIELDS}
    gpu = {k: np.asarray(f[f"final_{k}"][:n], np.float64) for k in FIELDS}
    info = common.machine_info("benchmarks.gpu_compare", command=a.command)
    run_json = Path(a.run_json) if a.run_json else Path(a.finals).with_name("gpu_run.json")
    run = None
    if run_json.is_file():
        import json

        run = json.loads(run_json.read_text()).get("env")
    t0 = time.perf_counter()
    cpu32 = rollout(start, steps, jnp.float32)
    jax.config.update("jax_enable_x64", True)
    cpu64 = rollout(start, steps, jnp.float64)
    wall = time.perf_counter() - t0
    out = {
        "benchmark": "gpu_accuracy", "machine": info, "throws": n, "steps": steps, "seed": int(f["seed"]),
        "gpu_run": None if run is None else {k: run.get(k) for k in ("device_kind", "nvidia_smi", "command", "git_commit", "versions")},
        "cpu_wall_s": wall,
        "gpu_f32_vs_cpu_f64": differences(gpu, cpu64),
        "cpu_f32_vs_cpu_f64": differences(cpu32, cpu64),
        "gpu_f32_vs_cpu_f32": differences(gpu, cpu32),
        "nan_bodies": {"gpu_f32": int((~np.isfinite(gpu["pos"]).all(-1)).sum()),
                       "cpu_f32": int((~np.isfinite(cpu32["pos"]).all(-1)).sum()),
                       "cpu_f64": int((~np.isfinite(cpu64["pos"]).all(-1)).sum())},
    }
    fm = common.fmt
    rows = [[k.replace("_", " "), fm(v["pos_m"]["p50"]), fm(v["pos_m"]["p90"]), fm(v["pos_m"]["p99"]), fm(v["pos_m"]["max"]),
             fm(v["frac_pos_below_1mm"]), fm(v["angle_rad"]["p50"]), fm(v["angle_rad"]["p99"])]
            for k, v in out.items() if k.endswith(("_f64", "_f32")) and isinstance(v, dict) and "pos_m" in v]
    md = "\n".join([
        "# GPU float32 against CPU float64 (box throws)", "",
        f"- Command: `{common.current_command(info['command'])}` (CPU part, {info['date']}, git {info.get('git_commit')})",
        f"- GPU run: {None if run is None else run.get('device_kind')}, `{None if run is None else run.get('command')}`",
        f"- {n} throws (`jaxcontact.states.random_throws`, seed {out['seed']}), {steps} steps, the box-throw workload "
        "(`benchmarks.common.box_workload`, default solver); the same float32 start states on every side.", "",
        "Final-state differences (position in m, orientation angle in rad):", "",
        common.md_table(["pair", "pos p50", "pos p90", "pos p99", "pos max", "share < 1 mm", "angle p50", "angle p99"], rows), "",
        f"NaN bodies: {out['nan_bodies']}.", ""])
    results.write(out, md)
    print(md)
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
