"""The accelerator run (``benchmarks/gpu_run.sh`` → ``python -m benchmarks.gpu_run``) and its
accuracy check (``benchmarks.gpu_compare``) work end to end on the CPU at tiny sizes, so a lent
GPU's time is not spent finding a broken script."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # the slow tier (docs/testing.md)

REPO = Path(__file__).resolve().parents[1]


def run(*args, timeout=900):  # a guard against a hang: the smoke run took over 300 s at load average 15
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_gpu_run_smoke_and_compare_on_cpu(tmp_path):
    r = run("benchmarks.gpu_run", "--device", "cpu", "--smoke", "--out", str(tmp_path), "--phases",
            "smoke,single,worlds", "--batches", "6", "--steps", "30", "--accuracy-batch", "6")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_run.json").read_text())
    assert res["smoke"]["finite"] and res["errors"] == {}
    row = res["single"]["rows"][0]
    assert row["batch"] == 6 and row["steps"] == 30 and row["rate"] > 0 and row["nan_bodies"] == 0
    wd = res["worlds"]
    heap = [r for r in wd["heap"] if r["order"] == "colour"]  # the GPU's sweeps, here on a CPU
    assert [r["worlds"] for r in heap] == [4, 8] and all(r["box_steps_per_s"] > 0 and r["nan_worlds"] == 0 for r in heap)
    assert any(r["order"] == "sequential" for r in wd["heap"])
    st = wd["stack"]  # a batch of 3-box stacks standing
    assert st["worlds"] == 4 and st["flagged_worlds"] == 0 and st["top_moved_max_m"] < 1e-4
    assert wd["grad"]["finite"] and wd["grad"]["ratio"] > 0 and (tmp_path / "worlds_heaps.npz").exists()
    assert "| 6 | 30 |" in (tmp_path / "gpu_run.md").read_text()
    f = np.load(tmp_path / "finals.npz")
    assert f["final_pos"].shape == (6, 3) and int(f["steps"]) == 30
    # the boxes fell: 30 steps of 2 ms from rest would drop a free body g t²/2 = 1.8 cm
    assert np.all(f["final_pos"][:, 2] < f["start_pos"][:, 2] + f["start_vel"][:, 2] * 0.06)

    c = run("benchmarks.gpu_compare", "--finals", str(tmp_path / "finals.npz"), "--out-dir", str(tmp_path))
    assert c.returncode == 0, c.stderr[-3000:]
    acc = json.loads((tmp_path / "gpu_accuracy.json").read_text())
    # the "GPU" finals here came from this CPU in float32: the same computation, so no difference
    assert acc["gpu_f32_vs_cpu_f32"]["pos_m"]["max"] == 0.0
    assert acc["gpu_f32_vs_cpu_f64"]["pos_m"]["max"] < 1e-3 and acc["nan_bodies"]["cpu_f64"] == 0
