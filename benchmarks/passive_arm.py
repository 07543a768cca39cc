"""A damped, sprung two-link arm (the MJCF of ``tests/test_joint_passive.py``) against MuJoCo C: the
bodies' centres and the hinge angles after 100 and 1,000 steps from the file's keyframe, float64.

    python -m benchmarks.passive_arm            # a few seconds

Prints and writes ``benchmarks/results/passive_arm.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxcontact import worlds  # noqa: E402
from jaxcontact.worlds import joints, mjcf  # noqa: E402

ARM = (Path(__file__).resolve().parents[1] / "tests" / "test_joint_passive.py").read_text().split('ARM = """')[1].split('"""')[0]


def run(args, out) -> int:
    """``python -m benchmarks passive_arm``: ``out`` (``runner.Results``) gets the .md."""
    import mujoco

    scene, params, state, model = mjcf.from_mjcf(ARM, keyframe="k", dtype=jnp.float64)
    rows = []
    for steps in (100, 1000):
        traj, _ = worlds.rollout(model, scene, params, state, steps)
        m = mujoco.MjModel.from_xml_string(ARM)
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        for _ in range(steps):
            mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)
        q, _ = joints.coordinates(scene.joints, params.joints, jax.tree_util.tree_map(lambda x: x[-1], traj))
        dx = float(np.abs(np.asarray(traj.pos[-1]) - d.xipos[1:]).max())
        dq = float(np.abs(np.asarray(q) - d.qpos).max())
        rows.append(f"| {steps} | {dx * 1e3:.3f} mm | {dq:.2e} rad | {np.round(np.asarray(q), 5).tolist()} | "
                    f"{np.round(d.qpos, 5).tolist()} |")
    lines = ["# A damped, sprung two-link arm against MuJoCo C", "", "`python -m benchmarks passive_arm` (float64; "
             "the arm of tests/test_joint_passive.py: damping, armature, springs, keyframe q = (0.4, −0.7), "
             "q̇ = (1.5, −2))", "", "| steps | max centre difference | max angle difference | q here | q MuJoCo |",
             "| --- | --- | --- | --- | --- |", *rows, ""]
    print("\n".join(lines))
    out.md.parent.mkdir(parents=True, exist_ok=True)
    out.md.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
