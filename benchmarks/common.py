"""Shared helpers for the jaxcontact engine benchmarks (``python -m benchmarks.<name>`` from the
repository root): the box-throw workload, timing, machine info, and the equivalent MuJoCo / MJX
model.

The workload (the dacm paper's throwing experiment): a 0.1 m cube of 0.37 kg, Coulomb friction
μ = 0.18, no restitution, time step h = 2 ms, thrown from ``jaxcontact.states.random_throws``
(centre height U(0.3, 1.0) + 0.1 m, uniform random orientation, horizontal velocity U(−2, 2) m/s
per axis, vertical U(−1, 1) m/s, body-frame angular velocity U(−5, 5) rad/s) onto a flat ground.
"""

from __future__ import annotations

import dataclasses as _dc
import datetime as _dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from experiments.provenance import json_default, stamp, write_json  # noqa: F401  (the shared writer, re-exported)

from .runner import RESULTS_DIR  # noqa: F401  (one place: the runner's)

SCENES_DIR = Path(__file__).resolve().parents[1] / "jaxcontact" / "data" / "scenes"  # the package's MJCF scenes

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


# A body of one kind thrown onto a resting one (overlap_census, two_box_throws)
THROW_KINDS = ("box", "sphere", "capsule", "cylinder")


def throw_body(kind: str):
    from jaxcontact import shapes

    if kind == "box":
        return shapes.box((0.1,) * 3, 0.37)
    if kind == "sphere":
        return shapes.sphere(0.05, 0.37)
    if kind == "capsule":
        return shapes.capsule(0.03, 0.05, 0.37)
    if kind == "cylinder":
        return shapes.cylinder(0.05, 0.05, 0.37)
    raise ValueError(f"unknown kind {kind!r}: one of {THROW_KINDS}")


def resting_pose(kind: str):
    """(centre height, quaternion, top height) of B resting on the ground."""
    if kind == "capsule":  # lying along x: body z turned onto x
        s = np.sqrt(0.5)
        return 0.03, [s, 0.0, s, 0.0], 0.06
    return 0.05, [1.0, 0.0, 0.0, 0.0], 0.1


def reach_of(kind: str) -> float:
    return {"box": np.sqrt(3) * 0.05, "sphere": 0.05, "capsule": 0.08, "cylinder": np.sqrt(2) * 0.05}[kind]


def throws_onto(kind_a: str, kind_b: str, n: int, seed: int, dtype):
    """``n`` throws (a batched two-body ``State``) of a ``kind_a`` at a ``kind_b`` resting on the ground: A from
    up to 0.15 m above B's top, aimed at it at 0.5–3 m/s, spinning (overlap_census; two_box_throws, box on box)."""
    import jax.numpy as jnp

    from jaxcontact.types import State

    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0] *= -1
    zb, qb, top = resting_pose(kind_b)
    lift = rng.uniform(0.0, 0.15, n) + reach_of(kind_a) + 1e-3
    offset = rng.uniform(-0.08, 0.08, (n, 2))
    pos_a = np.column_stack([offset, top + lift])
    d = np.array([0.0, 0.0, top]) - pos_a
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    speed = rng.uniform(0.5, 3.0, n)
    omega_a = rng.uniform(-10, 10, (n, 3))
    pos = np.stack([pos_a, np.tile([0.0, 0.0, zb], (n, 1))], axis=1)
    quat = np.stack([q, np.tile(qb, (n, 1))], axis=1)
    vel = np.stack([d * speed[:, None], np.zeros((n, 3))], axis=1)
    omega = np.stack([omega_a, np.zeros((n, 3))], axis=1)
    cast = lambda x: jnp.asarray(x, dtype)
    return State(pos=cast(pos), quat=cast(quat), vel=cast(vel), omega=cast(omega))


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
    stages' sum exceeds ``"step"``."""
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




def bench_jaxcontact(model, params, states, steps, repeats):
    """jaxcontact's ``batch_rollout`` of the box throws timed (``timed``): best, compile, body-steps/s, finals."""
    import jax
    import jaxcontact as jc

    r = timed(lambda: jax.block_until_ready(jc.batch_rollout(model, params, states, steps)), repeats)
    b = states.pos.shape[0]
    return {
        "steps": steps,
        "best_s": r["best_s"],
        "times_s": r["times_s"],
        "compile_s": max(r["first_s"] - r["best_s"], 0.0),
        "rate": b * steps / r["best_s"],
        "final": r["out"],
    }


def load_mujoco():
    """(mujoco, None), or (None, why) where it is not importable."""
    try:
        import mujoco
    except Exception as err:  # noqa: BLE001
        return None, f"mujoco not importable ({err}); MuJoCo peers skipped"
    return mujoco, None


def bench_mujoco_c(mujoco, qpos, qvel, steps, repeats, snapshot_steps, chunk=1024, threads=1):
    """MuJoCo C rollout of all bodies on ``threads`` threads (one ``MjData`` each); also returns
    (qpos, qvel) at ``snapshot_steps``."""
    m = mujoco.MjModel.from_xml_string(mujoco_xml())
    d = mujoco.MjData(m)
    datas = d if threads == 1 else [mujoco.MjData(m) for _ in range(threads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    nstate = mujoco.mj_stateSize(m, spec)
    B = qpos.shape[0]
    init = np.zeros((B, nstate))
    for i in range(B):
        mujoco.mj_resetData(m, d)
        d.qpos[:] = qpos[i]
        d.qvel[:] = qvel[i]
        mujoco.mj_getState(m, d, init[i], spec)
    snaps = {s: (np.zeros((B, m.nq)), np.zeros((B, m.nv))) for s in snapshot_steps}
    try:
        from mujoco import rollout as mj_rollout
    except Exception:  # noqa: BLE001
        mj_rollout = None

    if mj_rollout is not None:
        method = ("mujoco.rollout.rollout, one MjData (1 thread), C loop over mj_step" if threads == 1 else
                  f"mujoco.rollout.rollout, {threads} MjData ({threads} threads, its thread pool)")
        n = min(B, chunk) if threads == 1 else B
        out = np.zeros((n, steps, nstate))

        def run():
            for s0 in range(0, B, n):
                k = min(n, B - s0)
                mj_rollout.rollout(m, datas, init[s0:s0 + k], nstep=steps, state=out[:k], skip_checks=False)
                for s, (qp, qv) in snaps.items():
                    qp[s0:s0 + k] = out[:k, s - 1, 1:1 + m.nq]
                    qv[s0:s0 + k] = out[:k, s - 1, 1 + m.nq:1 + m.nq + m.nv]
            return out
    else:
        method = "Python loop over mujoco.mj_step (includes Python call overhead per step)"

        def run():
            for i in range(B):
                mujoco.mj_setState(m, d, init[i], spec)
                for t in range(1, steps + 1):
                    mujoco.mj_step(m, d)
                    if t in snaps:
                        snaps[t][0][i] = d.qpos
                        snaps[t][1][i] = d.qvel
            return None

    r = timed(run, repeats)
    final_z = None
    if mj_rollout is not None:
        final_z = out[: min(B, chunk), -1, 3]
    return {
        "method": method, "steps": steps, "best_s": r["best_s"], "times_s": r["times_s"],
        "rate": B * steps / r["best_s"], "threads": threads, "options": {
            "cone": MJ_CONE, "solver": MJ_SOLVER, "integrator": MJ_INTEGRATOR,
            "iterations": int(m.opt.iterations), "tolerance": float(m.opt.tolerance),
        },
        "final_z_median": None if final_z is None else float(np.median(final_z)),
    }, snaps


# --------------------------------------------------------------------------------------------
# The heap of 16 boxes (``scenes.heap``) and n boxes in MuJoCo C and MJX: shared by worlds, cone,
# heap_probe, gpu_run and mixed_speed
# --------------------------------------------------------------------------------------------

HEAP_MU = 0.5  # the worlds' boxes' friction (``scenes.heap``, ``scenes.stack``)
HEAP_SPACING = 0.18  # m: more than a box's diagonal (0.173 m), so no two boxes start inside each other


def mujoco_boxes_xml(n: int, mu: float, cone: str = "pyramidal", condim: int = 3, solref=None,
                     ground: bool = True, option: str = "") -> str:
    """``n`` free 0.1 m, 0.37 kg boxes (placed by qpos) over a plane, every pair colliding, written
    by ``worlds.to_mjcf``; MuJoCo's defaults otherwise (solver Newton, 100 iterations, tolerance
    1e-8, Euler, solimp 0.9 0.95 0.001, solref 0.02 1 unless ``solref`` is given, on every geom).
    The plane gets the boxes' friction (MuJoCo takes the maximum of the two geoms'). ``option``
    adds attributes to ``<option>`` (``'impratio="10"'``, say). The same MuJoCo model as the
    hand-written XML this replaced (``tests/test_mjcf.py`` makes this same ``to_mjcf`` call, keep
    them alike, and compares it with that XML field by field)."""
    import re

    from jaxcontact import shapes
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.types import Ground, Params, State
    from jaxcontact.worlds import make_scene, model as world_model, to_mjcf

    scene, body = make_scene([shapes.box((BOX_SIZE,) * 3, BOX_MASS)] * n, pairs="all", ground=ground)
    params = Params(body=body, ground=Ground.flat(), law=CoulombLCP.init_params(mu=mu))
    pos = np.array([[0.0, 0.0, 1.0 + i] for i in range(n)])
    state = State(pos=pos, quat=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), vel=np.zeros((n, 3)), omega=np.zeros((n, 3)))
    geom = {"condim": condim, **({"solref": f"{solref[0]} {solref[1]}"} if solref is not None else {})}
    return to_mjcf(scene, params, state, world_model(dt=DT), option={"cone": cone, **dict(re.findall(r'(\w+)="([^"]*)"', option))},
                   geom=geom)


def mujoco_initial_states(model, qpos, qvel):
    """(B, nstate) MuJoCo FULLPHYSICS states from (B, nq) qpos and (B, nv) qvel."""
    import mujoco

    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    data = mujoco.MjData(model)
    out = np.zeros((qpos.shape[0], mujoco.mj_stateSize(model, spec)))
    for i in range(qpos.shape[0]):
        mujoco.mj_resetData(model, data)
        data.qpos[:] = qpos[i]
        data.qvel[:] = qvel[i]
        mujoco.mj_getState(model, data, out[i], spec)
    return out


def to_mujoco(states):
    """jaxcontact world states (B, N, …) → MuJoCo free joints (B, 7N) qpos and (B, 6N) qvel:
    position and unit quaternion (w, x, y, z); world linear and body angular velocity."""
    pos, quat = np.asarray(states.pos, np.float64), np.asarray(states.quat, np.float64)
    vel, omega = np.asarray(states.vel, np.float64), np.asarray(states.omega, np.float64)
    quat = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    B = pos.shape[0]
    return (np.concatenate([pos, quat], -1).reshape(B, -1), np.concatenate([vel, omega], -1).reshape(B, -1))


def heap_states(seeds, spacing: float = HEAP_SPACING):
    """(scene, params, states (S, 16, …)) of ``scenes.heap(16, PRNGKey(seed), spacing)`` per seed."""
    import jax
    import jax.numpy as jnp

    from jaxcontact.worlds import scenes

    scene, params, _ = scenes.heap(16, jax.random.PRNGKey(int(seeds[0])), spacing=spacing)
    keys = jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])
    states = jax.vmap(lambda k: scenes.heap(16, k, spacing=spacing)[2])(keys)
    return scene, params, states


def heap_stats(z, speed):
    """Per world: the centre-of-mass height (m), boxes whose centre is below 0.1 m (on the
    ground, maybe tilted), the fastest box (m/s)."""
    z = np.asarray(z, np.float64)
    return {"com_height_m": z.mean(axis=1).tolist(), "on_ground": (z < BOX_SIZE).sum(axis=1).tolist(),
            "max_speed_m_per_s": np.asarray(speed, np.float64).max(axis=1).tolist(),
            "heights_m": np.sort(z, axis=1).tolist()}


def mujoco_boxes_run(qpos, qvel, n: int, steps: int, cone: str = "pyramidal", solref=None, option: str = ""):
    """``n`` boxes (``mujoco_boxes_xml``) in MuJoCo C from (B, 7n) qpos and (B, 6n) qvel for
    ``steps`` steps (``mujoco.rollout``, one thread): final (B, n, 7) qpos, (B, n, 6) qvel, the
    wall time of the rollout and the model."""
    import mujoco
    from mujoco import rollout

    m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(n, HEAP_MU, cone, solref=solref, option=option))
    init = mujoco_initial_states(m, qpos, qvel)
    t = time.perf_counter()
    out, _ = rollout.rollout(m, mujoco.MjData(m), init, nstep=steps)
    wall = time.perf_counter() - t
    final = out[:, -1]
    return final[:, 1:1 + m.nq].reshape(-1, n, 7), final[:, 1 + m.nq:1 + m.nq + m.nv].reshape(-1, n, 6), wall, m


def mujoco_heap(states, steps: int, cone: str, solref=None, option: str = ""):
    n = states.pos.shape[1]
    qp, qv, wall, m = mujoco_boxes_run(*to_mujoco(states), n, steps, cone, solref=solref, option=option)
    res = heap_stats(qp[:, :, 2], np.linalg.norm(qv[:, :, :3], axis=-1))
    res.update({"cone": cone, "solref": [float(x) for x in m.geom_solref[0]], "worlds": int(qp.shape[0]), "steps": steps,
                "wall_s": wall})
    return res


def mujoco_heap_speed(states, steps: int, threads: int, repeats: int = 2):
    import mujoco
    from mujoco import rollout

    W, n = states.pos.shape[:2]
    m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(n, HEAP_MU, "pyramidal"))
    init = mujoco_initial_states(m, *to_mujoco(states))
    nstate = init.shape[1]
    out = np.zeros((W, steps, nstate))
    datas = [mujoco.MjData(m) for _ in range(threads)]
    times = []
    if threads == 1:
        run = lambda: rollout.rollout(m, datas[0], init, nstep=steps, state=out)
        for _ in range(repeats + 1):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
        method = "mujoco.rollout.rollout, one MjData (1 thread)"
    else:
        with rollout.Rollout(nthread=threads) as pool:  # one persistent pool, made before the clock starts
            for _ in range(repeats + 1):
                t = time.perf_counter()
                pool.rollout(m, datas, init, nstep=steps, state=out)
                times.append(time.perf_counter() - t)
        method = f"mujoco.rollout.Rollout(nthread={threads}) (a persistent pool), {threads} MjData"
    best = min(times[1:])
    z = out[:, -1, 1:1 + m.nq].reshape(W, n, 7)[:, :, 2]
    return {"engine": "MuJoCo C 4.0 (pyramidal cone, float64)", "method": method, "worlds": W, "steps": steps,
            "threads": threads, "wall_s": best, "times_s": times, "box_steps_per_s": W * n * steps / best,
            "world_steps_per_s": W * steps / best, "compile_s": 0.0,
            "memory_per_world_bytes": steps * nstate * 8, "memory_note":
                f"rollout's output trajectory: {nstate} float64 per step (FULLPHYSICS state); plus {m.narena} bytes of "
                "arena per MjData (one per thread)", "final_com_height_mean_m": float(z.mean()), "measured": True}


def mjx_child(worlds_: int, steps: int, spacing: float, progress: str):
    """In a child process: MJX's heap of ``worlds_`` worlds for ``steps`` steps; each stage's
    result is appended to ``progress`` as a JSON line as soon as it is known (the parent may kill
    this process at its timeout)."""
    import jax
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    def say(**kw):
        with open(progress, "a") as f:
            f.write(json.dumps(kw) + "\n")

    _, _, states = heap_states(list(range(worlds_)), spacing)
    n = states.pos.shape[1]
    qpos, qvel = to_mujoco(states)
    m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(n, HEAP_MU, "pyramidal"))
    mx = mjx.put_model(m)
    d0 = mjx.make_data(mx)
    dtype = d0.qpos.dtype

    @jax.jit
    def run(qp, qv):
        dxs = jax.vmap(lambda a, b: d0.replace(qpos=a, qvel=b))(qp, qv)
        dxs, _ = jax.lax.scan(lambda d, _: (jax.vmap(mjx.step, in_axes=(None, 0))(mx, d), None), dxs, None, length=steps)
        return dxs.qpos

    qp, qv = jnp.asarray(qpos, dtype), jnp.asarray(qvel, dtype)
    say(stage="start", dtype=str(dtype), impl=str(getattr(mx, "impl", "jax")), devices=[str(d) for d in jax.devices()])
    t = time.perf_counter()
    compiled = run.lower(qp, qv).compile()
    say(stage="compiled", compile_s=time.perf_counter() - t)
    t = time.perf_counter()
    out = np.asarray(jax.block_until_ready(compiled(qp, qv)))
    wall = time.perf_counter() - t
    z = out.reshape(worlds_, n, 7)[:, :, 2]
    say(stage="done", wall_s=wall, box_steps_per_s=worlds_ * n * steps / wall, world_steps_per_s=worlds_ * steps / wall,
        nan=int(np.sum(~np.isfinite(out))), final_com_height_mean_m=float(np.nanmean(z)))


def run_mjx(batches, steps: int, timeout: float, spacing: float):
    """MJX per batch in a child process, killed after ``timeout`` seconds (start, compile and run)."""
    import tempfile

    res = {"timeout_s": timeout, "steps": steps, "runs": []}
    for W in batches:
        with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as prog:
            cmd = [sys.executable, "-m", "benchmarks", "worlds", "--mjx-child", str(W), "--speed-steps", str(steps),
                   "--spacing", str(spacing), "--progress", prog.name]
            t = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            try:
                _, err = proc.communicate(timeout=timeout)
                finished = proc.returncode == 0
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                finished = False
            elapsed = time.perf_counter() - t
            stages = [json.loads(line) for line in open(prog.name) if line.strip()]
        row = {"worlds": W, "steps": steps, "elapsed_s": elapsed, "finished": finished,
               "stages": {s["stage"]: s for s in stages}}
        if not finished:
            row["reason"] = (f"did not finish in {timeout:g} s" if proc.returncode in (-9, None) or elapsed >= timeout
                             else f"failed (exit {proc.returncode}): {err.strip().splitlines()[-1] if err.strip() else ''}")
        res["runs"].append(row)
        print("mjx", row, flush=True)
    return res


# --------------------------------------------------------------------------------------------
# The sliding box of issue 61's cone designs (cone_derivative, cone_designs, cone_active_set, _fd)
# --------------------------------------------------------------------------------------------

SLIDE_MU, SLIDE_V0, SLIDE_SPIN = 0.5, 1.58, 6.0  # friction, launch speed (m/s), spin (rad/s)
SLIDE_HEADING = np.radians(30.0)
CONES = ("elliptic", "box")


def x64():
    """JAX with float64 on (the cone family's cases are float64)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def slide_launch(omega_z):
    """The sliding box's start (on the ground, ``SLIDE_V0`` along ``SLIDE_HEADING``, spin ``omega_z``) and the direction."""
    import jax.numpy as jnp
    import jaxcontact as jc

    u = np.array([np.cos(SLIDE_HEADING), np.sin(SLIDE_HEADING), 0.0])
    return jc.State(pos=jnp.asarray([0.0, 0.0, BOX_SIZE / 2]), quat=jnp.asarray([1.0, 0, 0, 0]),
                    vel=jnp.asarray(SLIDE_V0 * u), omega=jnp.asarray([0.0, 0.0, omega_z])), u


def scaled_mass(body, sc):
    """``body`` with its mass and inertia times ``sc``."""
    return body.replace(mass=body.mass * sc, inertia=body.inertia * sc)


def throw_mass_derivative(settings) -> dict:
    """tests/test_checks.py's throw (a tilted 0.1 m box, 40 steps, float64) under ``LCPSettings`` ``settings``:
    d(sum of final positions)/d mass by ``jax.grad`` against central differences (step 1e-6), and along
    ``with_mass`` (all masses and inertias scaled together: must be 0) (cone_derivative, cone_designs)."""
    jax = x64()
    import jax.numpy as jnp
    import jaxcontact as jc
    from jaxcontact.rotations import quat_exp, quat_mul

    box = jc.shapes.box(0.1, 0.37)
    tilt = quat_mul(quat_exp(jnp.array([0.0, 0.3, 0.0])), quat_exp(jnp.array([0.4, 0.0, 0.0])))
    s0 = jc.make_state(pos=[0, 0, 0.09], quat=tilt / jnp.linalg.norm(tilt), vel=[1.0, 0, -1.0], omega=[0, 2.0, 0])
    s0 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), s0)
    law = jc.CoulombLCP(solver=settings)
    model = jc.Model(law=law, dt=0.002)
    p = jc.Params(body=box, ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
    p = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64) if jnp.issubdtype(x.dtype, jnp.floating) else x, p)
    loss = lambda q: jnp.sum(jc.rollout(model, q, s0, 40, output="final").pos)
    g = jax.jit(jax.grad(loss))(p)
    along = float(g.body.mass + jnp.sum(g.body.inertia * box.inertia) / box.mass)
    L, e = jax.jit(loss), 1e-6
    fd = float((L(p.replace(body=p.body.replace(mass=p.body.mass + e))) -
                L(p.replace(body=p.body.replace(mass=p.body.mass - e)))) / (2 * e))
    return {"d_mass": float(g.body.mass), "d_mass_central": fd, "along_with_mass": along}


def fixed_point_map(z, A, b, mu, cone):
    """The projected-Jacobi map of ``solve_lcp`` (rows [n, t₁, t₂] per contact, A regularised),
    written here from the public ``disc_step``/``project_disc``: its Jacobian is the one the implicit
    derivative solves with."""
    import jax.numpy as jnp
    from jaxcontact.solvers.lcp import disc_step, project_disc

    d = jnp.diagonal(A).reshape(-1, 3)
    w = (A @ z + b).reshape(-1, 3)
    zc = z.reshape(-1, 3)
    zn = jnp.maximum(zc[:, 0] - w[:, 0] / d[:, 0], 0.0)
    if cone == "box":
        bound = mu * zc[:, :1]
        zt = jnp.clip(zc[:, 1:] - w[:, 1:] / d[:, 1:], -bound, bound)
    else:
        s1, s2 = disc_step(mu[:, 0], mu[:, 1], d[:, 1], d[:, 2])
        zt = jnp.stack(project_disc(zc[:, 1] - s1 * w[:, 1], zc[:, 2] - s2 * w[:, 2], mu[:, 0], mu[:, 1], zc[:, 0]), 1)
    return jnp.concatenate([zn[:, None], zt], 1).reshape(-1)


def _system(z, A, b, mu, normal, slide):
    C = len(normal)
    zc, w = z.reshape(C, 3), (A @ z + b).reshape(C, 3)
    F = np.zeros((C, 3))
    for c in range(C):
        F[c, 0] = w[c, 0] if normal[c] else zc[c, 0]
        if not normal[c]:
            F[c, 1:] = zc[c, 1:]
        elif slide[c]:
            s = np.sqrt((mu[c] * w[c, 1:]) @ (mu[c] * w[c, 1:]))
            F[c, 1:] = zc[c, 1:] + mu[c] ** 2 * zc[c, 0] * w[c, 1:] / max(s, 1e-300)
        else:
            F[c, 1:] = w[c, 1:]
    return F.reshape(-1)


def _jac(f, z, h=1e-7):
    f0 = f(z)
    return np.stack([(f(z + h * e) - f0) / h for e in np.eye(len(z))], 1)


def active_set_polish(z0, A, b, mu, T, rounds=8, tol=1e-10):
    """Issue 61 design (c), in NumPy: Newton on the active set's equations from the sweeps' ``z0`` (``T`` the
    fixed-point map), kept while the residual falls. (z, residual)."""
    res = lambda q: float(np.abs(np.diag(A) * (T(q) - q)).max())
    z, best = z0.copy(), res(z0)
    for _ in range(rounds):
        zc, w = z.reshape(-1, 3), (A @ z + b).reshape(-1, 3)
        normal = zc[:, 0] > tol * max(1.0, np.abs(zc[:, 0]).max())
        inner = np.sqrt(((zc[:, 1:] / mu) ** 2).sum(1))
        slide = inner >= zc[:, 0] * (1 - 1e-8)
        f = lambda q: _system(q, A, b, mu, normal, slide)
        for _ in range(20):
            F = f(z)
            if np.abs(F).max() < 1e-15:
                break
            z = z - np.linalg.lstsq(_jac(f, z), F, rcond=1e-12)[0]
        if res(z) < best:
            best, zbest = res(z), z.copy()
        else:
            break
    return (zbest, best) if best < res(z0) else (z0, res(z0))


# --------------------------------------------------------------------------------------------
# Worlds' laws and gradients (world_gradients, world_law_defaults; stress, adjoint)
# --------------------------------------------------------------------------------------------


def law_with(changes: dict):
    """The world's default law with ``changes`` (``LCPSettings`` fields) in its solver."""
    from jaxcontact.worlds import scenes

    law = scenes.DEFAULT_LAW
    return _dc.replace(law, solver=_dc.replace(law.solver, **changes))


def heap_height_grad(model, scene, params, steps: int):
    """state -> d(mean final centre-of-mass height)/d(initial velocities) (N, 3), through ``steps``
    steps of ``worlds.rollout`` (not jitted: the caller jits it, under whatever it patches)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    def grad(s):
        def height(vel):
            final, _ = worlds.rollout(model, scene, params, s.replace(vel=vel), steps, output="final")
            return jnp.mean(final.pos[:, 2])
        return jax.grad(height)(s.vel)

    return grad


# the heaps of round and mixed bodies (mixed_speed, round_profile, heap_cpu, fast_hits_scenes)
HEAPS = {"boxes16": (("box",), 16), "spheres64": (("sphere",), 64),
         "mixed16": (("box", "sphere", "capsule", "cylinder"), 16)}


def heap_worlds(kinds, n, W):
    """(MJCF of seed 0, per-world qpos (W, 7n), the descriptions) of W worlds of one heap."""
    from experiments.peer_scenes import heap_scene, mjcf_text, moving

    scenes = [heap_scene(kinds, n, seed) for seed in range(W)]
    qpos = np.array([[x for g in moving(sc) for x in g["pos"] + g["quat"]] for sc in scenes])
    return mjcf_text(scenes[0]), qpos, scenes


BROAD_PHASES = ("heap", "group", "none")


def broad_phased(scene, broad_phase: str):
    """``scene`` with one of ``BROAD_PHASES``: "heap" (``worlds.scenes.heap_broad_phase``: more than 3N
    pairs get ``max_pairs`` = 3N per group and, when the groups hold more than 3N slots together,
    ``max_slots`` = 3N across them), "group" (``max_pairs`` alone: the design before ``max_slots``),
    "none" (every pair)."""
    from jaxcontact.worlds.scenes import heap_broad_phase

    if broad_phase == "none":
        return scene
    scene = heap_broad_phase(scene)
    return _dc.replace(scene, max_slots=None) if broad_phase == "group" else scene


def is_model(path: str) -> bool:
    """Whether the file at ``path`` is an MJCF model (its root element ``<mujoco>``), not an include."""
    import xml.etree.ElementTree as ET

    try:
        return ET.parse(path).getroot().tag == "mujoco"
    except ET.ParseError:
        return False
