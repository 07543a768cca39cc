"""Shared helpers for the jaxcontact engine benchmarks (``python -m benchmarks.<name>`` from the
repository root): the box-throw workload, timing, machine info, and the equivalent MuJoCo / MJX
model.

The workload (the dacm paper's throwing experiment): a 0.1 m cube of 0.37 kg, Coulomb friction
μ = 0.18, no restitution, time step h = 2 ms, thrown from ``jaxcontact.states.random_throws``
(centre height U(0.3, 1.0) + 0.1 m, uniform random orientation, horizontal velocity U(−2, 2) m/s
per axis, vertical U(−1, 1) m/s, body-frame angular velocity U(−5, 5) rad/s) onto a flat ground.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shlex
import sys
import time
from pathlib import Path

from experiments.provenance import json_default, stamp, write_json  # noqa: F401  (the shared writer, re-exported)

RESULTS_DIR = Path(__file__).resolve().parent / "results"

stamp()  # the code's commit as this run starts (experiments.provenance)

BOX_SIZE = 0.1
BOX_MASS = 0.37
MU = 0.18
DT = 0.002


def select_platform(device: str | None) -> None:
    """Pin JAX to ``cpu`` or ``gpu`` (must run before any JAX computation)."""
    if device:
        import jax

        jax.config.update("jax_platforms", "cuda" if device == "gpu" else device)


def box_workload(max_contacts: int | None = 4, tol: float = 1e-6, max_iter: int = 100,
                 fixed_iterations: bool = False, body=None, cone: str | None = None):
    """(model, params) of the box-throw workload with the given contact-solver settings (``cone``:
    ``LCPSettings.cone``, None its default)."""
    import jaxcontact as jc

    extra = {} if cone is None else {"cone": cone}
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=tol, max_iter=max_iter, fixed_iterations=fixed_iterations, **extra))
    model = jc.Model(law=law, dt=DT, max_contacts=max_contacts)
    body = jc.shapes.box(BOX_SIZE, BOX_MASS) if body is None else body
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=MU, restitution=0.0))
    return model, params


def throws(n: int, seed: int = 0):
    """``n`` random throws (batched jaxcontact State)."""
    import jax
    from jaxcontact.states import random_throws

    return random_throws(jax.random.PRNGKey(seed), n)


def timed(fn, repeats: int = 2):
    """Run ``fn`` once as warm-up (this includes compilation) and then ``repeats`` times.

    Returns dict(first_s, best_s, times_s, out) where ``out`` is the last result. ``fn`` must
    block until its result is ready (e.g. with ``jax.block_until_ready``).
    """
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return {"first_s": first, "best_s": min(times), "times_s": times, "out": out}


def stage_times(model, scene, params, state, control, warm=None, repeats: int = 5, clock=time.perf_counter):
    """Where one step goes, timed on the engine's own stages: ``pipeline.step_stages`` run once at ``state``
    with a hook (its ``stage``) that compiles each named stage (``pipeline.STAGES``) on its own and times
    it, best of ``repeats`` calls (``clock``: ``time.perf_counter`` wall or ``time.process_time`` CPU
    seconds), in the step's own order with the step's own inputs; then the whole step compiled as one
    (``"step"``). A change to the step changes what is timed. ``control`` as ``step_stages`` takes it
    ((N, 6) zeros for a world without actuators); ``warm`` the law's warm start (None: the cold start,
    ``pipeline.initial_warm``). Returns ``({stage: seconds}, (state⁺, WorldInfo, warm⁺))``. A stage alone
    pays a dispatch and writes out all it returns, which the whole step's one program fuses away: the
    stages' sum exceeds ``"step"`` (on the 16-box heap and the 7-joint arm, about 2×)."""
    import jax

    from jaxcontact.worlds import pipeline

    if warm is None:
        warm = pipeline.initial_warm(model, scene, params, state)
    times = {}

    def best(f, *args):
        out = jax.block_until_ready(f(*args))  # compiled and run once
        seconds = []
        for _ in range(max(1, repeats)):
            t = clock()
            jax.block_until_ready(f(*args))
            seconds.append(clock() - t)
        return min(seconds), out

    def timed(name, fn, *args):
        times[name], out = best(jax.jit(fn), *args)
        return out

    out = pipeline.step_stages(model, scene, params, state, control, warm, stage=timed)
    times["step"], _ = best(jax.jit(lambda p, s, u, w: pipeline.step_stages(model, scene, p, s, u, w)),
                            params, state, control, warm)
    return times, out


def log(*a) -> None:
    """Progress to stderr (results go to stdout and the results files)."""
    print(*a, file=sys.stderr, flush=True)


def cast_floats(tree, dtype):
    """``tree`` with every floating-point leaf cast to ``dtype`` (integer leaves kept)."""
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def command_line(module: str, argv=None) -> str:
    """The command that ran ``module`` (``python -m module args...``), for the results files."""
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(["python", "-m", module] + [shlex.quote(a) for a in args])


def machine_info(module: str, argv=None, command: str | None = None) -> dict:
    """Cores, JAX devices, versions, date and the exact command line (``python -m module ...``, or
    ``command`` as given)."""
    import jax
    import numpy as np

    info = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command or command_line(module, argv),
        "host_cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "jax_devices": [str(d) for d in jax.devices()],
        "jax_default_backend": jax.default_backend(),
        "jax_x64": bool(jax.config.read("jax_enable_x64")),
        "python": platform.python_version(),
        "versions": {"jax": jax.__version__, "numpy": np.__version__},
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["host_cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    for mod in ("jaxlib", "jaxcontact", "mujoco"):
        try:
            info["versions"][mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional peers
            info["versions"][mod] = None
    try:
        from importlib.metadata import version

        info["versions"]["mujoco-mjx"] = version("mujoco-mjx")
    except Exception:  # noqa: BLE001
        info["versions"]["mujoco-mjx"] = None
    try:
        import subprocess

        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parent, check=False,
        ).stdout.strip() or None
    except Exception:  # noqa: BLE001
        info["git_commit"] = None
    return info


def md_table(headers, rows) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def current_command(cmd: str) -> str:
    """A command recorded as ``python benchmarks/<name>.py ...`` in today's form,
    ``python -m benchmarks.<name> ...`` (the options are the same)."""
    return re.sub(r"python benchmarks/(\w+)\.py", r"python -m benchmarks.\1", cmd)


def md_machine(info: dict) -> str:
    v = info["versions"]
    return "\n".join([
        f"- Command: `{current_command(info['command'])}`",
        f"- Date: {info['date']}  (git {info.get('git_commit')})",
        f"- Machine: {info['host_cpu']}, {info['cpu_count']} cores "
        f"({info['affinity_cores']} usable); load average at start {info['load_average_at_start']}",
        f"- JAX devices: {', '.join(info['jax_devices'])} (backend {info['jax_default_backend']}, x64={info['jax_x64']})",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + f", Python {info['python']}",
    ])


def fmt(x, nd=3) -> str:
    """Compact number formatting for the markdown tables."""
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    ax = abs(x)
    if ax != 0 and (ax >= 1e6 or ax < 1e-3):
        return f"{x:.{nd - 1}e}"
    if ax >= 100:
        return f"{x:,.0f}"
    return f"{x:.{nd}g}"


# --------------------------------------------------------------------------------------------
# MuJoCo / MJX equivalent of the workload
# --------------------------------------------------------------------------------------------

MJ_CONE = "pyramidal"
MJ_SOLVER = "Newton"
MJ_INTEGRATOR = "Euler"


def mujoco_xml() -> str:
    """Free 0.1 m cube (half-size 0.05, 0.37 kg) over a plane, h = 2 ms, μ = 0.18 on both geoms.

    MuJoCo combines the friction of two geoms by the maximum, so the plane also gets 0.18 (its
    default is 1). condim 3 (sliding friction only, like jaxcontact), pyramidal cone (jaxcontact's
    friction cone is pyramidal too), Newton solver with MuJoCo's default 100 iterations and
    tolerance 1e-8, Euler integrator, default soft-constraint parameters (solref/solimp).
    """
    h = BOX_SIZE / 2
    return f"""
<mujoco model="box_throw">
  <option timestep="{DT}" gravity="0 0 -9.81" cone="{MJ_CONE}" solver="{MJ_SOLVER}" integrator="{MJ_INTEGRATOR}"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="{MU} 0 0" condim="3"/>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom name="box" type="box" size="{h} {h} {h}" mass="{BOX_MASS}" friction="{MU} 0 0" condim="3"/>
    </body>
  </worldbody>
</mujoco>
"""


def to_mujoco_qpos_qvel(states):
    """jaxcontact State (batched) → MuJoCo free-joint (qpos (B,7), qvel (B,6)) as float64 numpy.

    MuJoCo's free joint: qpos = (position, quaternion w x y z); qvel = (linear velocity in the
    world frame, angular velocity in the *body* (local) frame) — exactly jaxcontact's convention
    (vel world, omega body), and the box's body origin is its centre of mass.
    """
    import numpy as np

    pos, quat = np.asarray(states.pos, np.float64), np.asarray(states.quat, np.float64)
    vel, omega = np.asarray(states.vel, np.float64), np.asarray(states.omega, np.float64)
    quat = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    return np.concatenate([pos, quat], -1), np.concatenate([vel, omega], -1)
