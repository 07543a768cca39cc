"""Robots against MuJoCo C and MJX, in one run (issue 63, item 7): a four-legged robot on the floor and a
7-joint arm beside a box, at 1, 64 and 1,024 worlds.

    python -m benchmarks robot_speed                      # see the results file for its wall time
    python -m benchmarks robot_speed --sizes 1,4 --steps 50 --profile-steps 20 --name robot_speed_smoke

The robots (``jaxcontact/data/scenes``): ``quadruped.xml`` (gymnasium's ant in style: a sphere torso
on a free joint, four legs of a hip and an ankle hinge, capsule limbs, limits, damping, armature, eight
motors of gear 15; h = 5 ms; from its keyframe "stand", 9 cm above the floor) and ``arm7_box.xml``
(seven hinges with limits, damping and armature, capsule links, seven position servos kp 60 kv 4;
a 5 cm box on the floor beside it; h = 2 ms). Each world w gets its own controls, the same in every
engine: u[w, t, a] = amplitude · sin(2π t h / period + φ[w, a]), φ uniform from ``--seed`` (the
quadruped's amplitude 0.5 of its ±1 range, period 0.5 s; the arm's 0.6 rad about its upright pose,
period 1 s, clipped to the ranges by each engine).

Each robot runs W worlds × S steps in each engine (``--steps``, one count per size: by default 1,000
steps at 1 world, 200 at 64 and 20 at 1,024, since on the shared 2-core machine jaxcontact's
quadruped ran at about 50 world-steps/s: 1,024 × 1,000 steps would be hours):

- jaxcontact: ``worlds.from_mjcf(..., dtype=float32, max_pairs=...)`` at the defaults otherwise,
  ``worlds.sharded_batch_rollout(..., output="final")`` over two CPU devices (this process sets
  ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` and ``JAXCONTACT_THREADS=1`` before JAX
  starts, as ``benchmarks.mixed_speed``), compiled ahead (compile time apart), one timed call.
  ``max_pairs`` (``Scene.max_pairs``, the broad phase's kept pairs) is 4 for the quadruped (of its 28
  filtered pairs) and 2 for the arm (of 8): a jointed world's contact problem is solved densely, and
  every kept pair adds its manifold's rows whether touching or not (``--max-pairs 0``: the default,
  all pairs; the 1-world row below reports that too);
- MuJoCo C 4: ``mujoco.rollout.Rollout(nthread=2)``, its defaults (Euler, Newton, pyramidal cone,
  float64), best of two timed calls after a warm-up;
- MJX (``mujoco-mjx``, float32, its defaults: Newton): ``jax.jit(jax.vmap(lax.scan(mjx.step)))`` with
  the worlds sharded over the same two CPU devices (one world: one device), compiled ahead, one
  timed call. Skipped with a note when ``mujoco.mjx`` cannot be imported.

Where the time goes (jaxcontact, one world, ``--profile-steps`` steps, float32): the contact problem's
rows, the mean and largest sweeps per step and the steps at the 1,000-sweep cap (``WorldInfo``), the
step's flags, and the CPU time (the median of five rounds, the variants in turn) of the same rollout
with the solver held to one sweep
(``LCPSettings(max_iter=1, fixed_iterations=True)``): the difference is the sweeps' share; and the
same rollout with the step's linear algebra on jax's LAPACK kernels instead of ``jaxcontact.linalg``'s
loops (what the loops cost at one world, where the kernels cannot hang: no batch to share out).
``--batch-sweeps W,S``: a W-world batch's sweeps over S steps on one device (``batch_sweeps``: each
world's own against the batch's slowest, which a vmapped loop runs them all to).
Reported: world-steps/s per engine and size, the ratio to jaxcontact, compile seconds, a sanity
check that the engines ran the same motion (the mean final height of the torso, of the arm's last
link), and jaxcontact's flags. Writes ``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import numpy as np

from .common import SCENES_DIR as SCENES, fmt, machine_info, md_machine, md_table
from .common import stage_times as common_stage_times

ROBOTS = {
    # file, keyframe, amplitude, period (s), control offset, max_pairs, body whose final height is compared
    "quadruped": ("quadruped.xml", "stand", 0.5, 0.5, 0.0, 4, "torso"),
    "arm7_box": ("arm7_box.xml", None, 0.6, 1.0, 0.0, 2, "link7"),
}


def controls(m, robot: str, W: int, steps: int, seed: int) -> np.ndarray:
    """(W, steps, nu) float64 controls: per-world phases (module docstring)."""
    _, _, amp, period, offset, _, _ = ROBOTS[robot]
    phase = np.random.default_rng(seed).uniform(0, 2 * np.pi, (W, 1, m.nu))
    t = np.arange(steps)[None, :, None] * m.opt.timestep
    return offset + amp * np.sin(2 * np.pi * t / period + phase)


def mujoco_model(robot: str):
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(SCENES / ROBOTS[robot][0]))
    d = mujoco.MjData(m)
    if ROBOTS[robot][1] is not None:
        mujoco.mj_resetDataKeyframe(m, d, m.key(ROBOTS[robot][1]).id)
    else:
        mujoco.mj_resetData(m, d)
    return m, d


def run_jaxcontact(robot: str, u: np.ndarray, steps: int, max_pairs, sharded: bool = True):
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    file, key, *_, body = ROBOTS[robot]
    kw = {"max_pairs": max_pairs} if max_pairs else {}
    scene, params, state, model = worlds.from_mjcf(str(SCENES / file), keyframe=key, dtype=jnp.float32, **kw)
    W = u.shape[0]
    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W,) + x.shape), state)
    ctrl = jnp.asarray(u, jnp.float32)
    run = worlds.sharded_batch_rollout if sharded else worlds.batch_rollout
    fn = jax.jit(lambda p, s, c: run(model, scene, p, s, steps, c, output="final"))
    t = time.perf_counter()
    compiled = fn.lower(params, states, ctrl).compile()
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    final, summary = jax.block_until_ready(compiled(params, states, ctrl))
    wall = time.perf_counter() - t
    b = scene.names.index(body) if scene.names and body in scene.names else 0
    return {"wall_s": wall, "compile_s": compile_s, "world_steps_per_s": W * steps / wall,
            "mean_final_height_m": float(np.asarray(final.pos[:, b, 2]).mean()),
            "flags": int(np.bitwise_or.reduce(np.asarray(summary.flags).reshape(-1))),
            "max_pairs": max_pairs or None, "devices": len(jax.devices()) if sharded else 1}


def run_mujoco(robot: str, u: np.ndarray, steps: int, threads: int = 2):
    import mujoco
    from mujoco import rollout

    m, d = mujoco_model(robot)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.zeros(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, init, spec)
    W = u.shape[0]
    init = np.tile(init, (W, 1))
    out = np.zeros((W, steps, init.shape[1]))
    datas = [mujoco.MjData(m) for _ in range(threads)]
    times = []
    with rollout.Rollout(nthread=threads) as pool:
        for _ in range(3):
            t = time.perf_counter()
            pool.rollout(m, datas, init, np.ascontiguousarray(u), nstep=steps, state=out)
            times.append(time.perf_counter() - t)
    best = min(times[1:])
    # the compared body's height: from its qpos when free, else by forward kinematics of the last state
    body = m.body(ROBOTS[robot][6]).id
    heights = []
    for w in range(W):
        mujoco.mj_setState(m, d, out[w, -1], spec)
        mujoco.mj_kinematics(m, d)
        heights.append(d.xipos[body, 2])
    return {"wall_s": best, "times_s": times, "world_steps_per_s": W * steps / best,
            "mean_final_height_m": float(np.mean(heights)), "threads": threads}


def run_mjx(robot: str, u: np.ndarray, steps: int):
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    try:
        import mujoco
        from mujoco import mjx
    except ImportError as err:  # the optional peer
        return {"skipped": f"mujoco.mjx not importable: {err}"}
    m, d = mujoco_model(robot)
    mx = mjx.put_model(m)
    d0 = mjx.put_data(m, d)
    W = u.shape[0]

    def run(dd, uu):
        def f(c, uk):
            return mjx.step(mx, c.replace(ctrl=uk)), None

        return jax.lax.scan(f, dd, uu)[0]

    ds = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W,) + x.shape), d0)
    ctrl = jnp.asarray(u, jnp.float32)
    devices = jax.devices()
    if W % len(devices) == 0 and W >= len(devices):
        sh = NamedSharding(Mesh(np.array(devices), ("w",)), PartitionSpec("w"))
        ds, ctrl = jax.device_put((ds, ctrl), sh)
    fn = jax.jit(jax.vmap(run))
    t = time.perf_counter()
    compiled = fn.lower(ds, ctrl).compile()
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    out = jax.block_until_ready(compiled(ds, ctrl))
    wall = time.perf_counter() - t
    body = m.body(ROBOTS[robot][6]).id
    return {"wall_s": wall, "compile_s": compile_s, "world_steps_per_s": W * steps / wall,
            "mean_final_height_m": float(np.asarray(out.xipos[:, body, 2]).mean()),
            "nonfinite_worlds": int(np.sum(~np.all(np.isfinite(np.asarray(out.qpos)), axis=1))),
            "devices": len(devices) if W % len(devices) == 0 and W >= len(devices) else 1}


def profile(robot: str, u: np.ndarray, steps: int, max_pairs):
    """Where one world's step spends its time (module docstring)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import linalg, worlds

    file, key, *_ = ROBOTS[robot]
    kw = {"max_pairs": max_pairs} if max_pairs else {}
    scene, params, state, model = worlds.from_mjcf(str(SCENES / file), keyframe=key, dtype=jnp.float32, **kw)
    c = jnp.asarray(u[0, :steps], jnp.float32)
    one_sweep = dataclasses.replace(model, law=dataclasses.replace(
        model.law, solver=dataclasses.replace(model.law.solver, max_iter=1, fixed_iterations=True)))
    programs = {}
    for label, mdl, loops in (("full", model, True), ("one sweep", one_sweep, True), ("LAPACK", model, False)):
        saved = linalg.without_lapack
        if not loops:  # "LAPACK": jax's kernels (one world: no batch to share out), traced afresh
            linalg.without_lapack = lambda: False
            jax.clear_caches()
        try:
            fn = jax.jit(lambda p, s, cc, mdl=mdl: worlds.rollout(mdl, scene, p, s, steps, cc))
            compiled = fn.lower(params, state, c).compile()
        finally:
            if not loops:
                linalg.without_lapack = saved
                jax.clear_caches()  # no later trace reuses the kernels' program
        _, info = jax.block_until_ready(compiled(params, state, c))
        programs[label] = compiled
        if label == "full":
            it = np.asarray(info.iterations)
            kept = min(max_pairs or scene.num_pairs, scene.num_pairs)  # the broad phase's kept pair slots
            rows = 3 * (int(np.prod(info.phi_ground.shape[1:])) + kept * scene.slot_contacts)
            stats = {"contact_rows": rows, "joint_rows": int(info.joint_impulse.shape[-1]),
                     "mean_sweeps": float(it.mean()), "max_sweeps": int(it.max()),
                     "steps_at_cap": int(np.sum(it >= model.law.solver.max_iter)),
                     "flags": int(np.bitwise_or.reduce(np.asarray(info.flags))),
                     "steps_flagged_solver": int(np.sum((np.asarray(info.flags) & 8) > 0))}
    cpu = {label: [] for label in programs}
    for _ in range(5):  # the variants in turn, five rounds: the median CPU seconds of each (the machine's load)
        for label, compiled in programs.items():
            t = time.process_time()
            jax.block_until_ready(compiled(params, state, c))
            cpu[label].append(time.process_time() - t)
    out = {label: float(np.median(v)) for label, v in cpu.items()}
    stats.update({"steps": steps, "max_pairs": max_pairs or None, "ms_per_step": 1e3 * out["full"] / steps,
                  "ms_per_step_one_sweep": 1e3 * out["one sweep"] / steps,
                  "ms_per_step_lapack": 1e3 * out["LAPACK"] / steps,
                  "sweeps_share": 1 - out["one sweep"] / out["full"]})
    return stats


def batch_sweeps(robot: str, u: np.ndarray, steps: int, max_pairs):
    """What a batch's looped dense solve costs over its worlds' own (jaxcontact, W worlds on one device,
    float32): ``worlds.batch_rollout`` with every step's info; per step the sweeps of each world, their mean
    and their largest (a vmapped ``while_loop`` runs every world of the batch as long as its slowest)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    file, key, *_ = ROBOTS[robot]
    kw = {"max_pairs": max_pairs} if max_pairs else {}
    scene, params, state, model = worlds.from_mjcf(str(SCENES / file), keyframe=key, dtype=jnp.float32, **kw)
    W = u.shape[0]
    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W,) + x.shape), state)
    fn = jax.jit(lambda p, s, c: worlds.batch_rollout(model, scene, p, s, steps, c)[1].iterations)
    it = np.asarray(fn(params, states, jnp.asarray(u, jnp.float32)))  # (W, steps)
    mean, largest = it.mean(axis=0), it.max(axis=0)
    return {"worlds": W, "steps": steps, "mean_sweeps": float(mean.mean()), "mean_largest_sweeps": float(largest.mean()),
            "largest_sweeps": int(largest.max()), "steps_at_cap_any_world": int(np.sum(largest >= model.law.solver.max_iter)),
            "sweep_work_of_own_worlds": float(mean.sum() / largest.sum())}


def stage_times(robot: str, u: np.ndarray, steps: int, max_pairs, repeats: int = 50):
    """Where one world's step goes, stage by stage (float32, one world), at the state the rollout reached
    after ``steps`` steps (the robot moving, its contacts on), timed on the engine's own stages
    (``common.stage_times``: each named stage of ``pipeline.step_stages`` compiled alone and called
    ``repeats`` times, in the step's order on the step's own inputs, cold: no warm start; then the whole
    step), the collision alone (``contacts.collide``, the first part of the contact stage); and the
    looped sweeps visiting every row against only the coupled ones (``lcp.VISIT_COUPLED_ROWS``), the
    same rollout timed both ways. Milliseconds per call, CPU seconds of this process."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.solvers import lcp
    from jaxcontact.worlds import contacts

    file, key, *_ = ROBOTS[robot]
    kw = {"max_pairs": max_pairs} if max_pairs else {}
    scene, params, state, model = worlds.from_mjcf(str(SCENES / file), keyframe=key, dtype=jnp.float32, **kw)
    c = jnp.asarray(u[0, :steps], jnp.float32)
    s = worlds.rollout(model, scene, params, state, steps, c, output="final")[0]
    u0 = c[-1]
    times, _ = common_stage_times(model, scene, params, s, u0, None, repeats, clock=time.process_time)
    out = {("whole step" if k == "step" else f"stage: {k}"): 1e3 * v for k, v in times.items()}
    collide = jax.jit(lambda st: contacts.collide(model, scene, params, st))
    con = jax.block_until_ready(collide(s))
    t = time.process_time()
    for _ in range(repeats):
        jax.block_until_ready(collide(s))
    out["collide (of the contact stage)"] = 1e3 * (time.process_time() - t) / repeats
    out["contacts"] = int(con.phi.shape[0])
    out["contacts within reach (valid)"] = int(np.sum(np.asarray(con.valid)))
    saved = lcp.VISIT_COUPLED_ROWS
    try:
        for flag, label in ((False, "rollout, every row swept"), (True, "rollout, coupled rows swept")):
            lcp.VISIT_COUPLED_ROWS = flag
            f = jax.jit(lambda p, st, cc: worlds.rollout(model, scene, p, st, steps, cc, output="final")[0].pos)
            f = f.lower(params, state, c).compile()
            jax.block_until_ready(f(params, state, c))
            t = time.process_time()
            jax.block_until_ready(f(params, state, c))
            out[label + " (ms/step)"] = 1e3 * (time.process_time() - t) / steps
    finally:
        lcp.VISIT_COUPLED_ROWS = saved
    return out


def arguments(ap):
    """robot_speed's own options (``--steps`` here is one count per size; shared: ``--seed``, ``--out``, ``--name``)."""
    ap.add_argument("--one-device", action="store_true",
                    help="jaxcontact's worlds by worlds.batch_rollout on one CPU device (XLA's own threads) instead of "
                         "sharded over two")
    ap.add_argument("--only", default=",".join(ROBOTS), help=f"robots, comma-separated: {', '.join(ROBOTS)}")
    ap.add_argument("--sizes", default="1,64,1024", help="world counts, comma-separated")
    ap.add_argument("--steps", default="1000,200,20", help="steps at each size, comma-separated (one: all sizes)")
    ap.add_argument("--profile-steps", type=int, default=200)
    ap.add_argument("--stage-steps", type=int, default=0, help="stage times at the state after this many steps (0: none)")
    ap.add_argument("--profile-all-pairs", action="store_true", help="profile with every pair kept too")
    ap.add_argument("--batch-sweeps", default="", help="W,S: the sweeps of W worlds' batch over S steps (batch_sweeps)")
    ap.add_argument("--max-pairs", type=int, default=None, help="override both robots' max_pairs (0: all pairs)")
    ap.add_argument("--engines", default="jaxcontact,mujoco,mjx")


def run(args, out):
    """``python -m benchmarks robot_speed``: the robots' speeds into ``out``, written as they go."""
    if not args.one_device:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
        os.environ["JAXCONTACT_THREADS"] = "1"
    robots = args.only.split(",")
    for r in robots:
        if r not in ROBOTS:
            raise SystemExit(f"--only: unknown robot {r!r} (one of {', '.join(ROBOTS)})")
    sizes = [int(s) for s in args.sizes.split(",")]
    engines = [e for e in args.engines.split(",") if e]  # --engines "": the stage times alone
    steps_at = [int(s) for s in args.steps.split(",")]
    if len(steps_at) == 1:
        steps_at = steps_at * len(sizes)
    if len(steps_at) != len(sizes):
        raise SystemExit("--steps: one count, or one per size")
    res = {"machine": machine_info("benchmarks.robot_speed", command=args.command), "sizes": sizes, "steps": steps_at,
           "seed": args.seed, "robots": {}}
    for robot in robots:
        m, _ = mujoco_model(robot)
        pairs = ROBOTS[robot][5] if args.max_pairs is None else args.max_pairs
        entry = res["robots"][robot] = {"file": f"jaxcontact/data/scenes/{ROBOTS[robot][0]}", "dt": m.opt.timestep,
                                        "sizes": {}}
        for W, steps in zip(sizes, steps_at):
            u = controls(m, robot, W, steps, args.seed)
            row = entry["sizes"][str(W)] = {"worlds": W, "steps": steps}
            for eng in engines:
                fn = {"jaxcontact": lambda: run_jaxcontact(robot, u, steps, pairs, not args.one_device),
                      "mujoco": lambda: run_mujoco(robot, u, steps), "mjx": lambda: run_mjx(robot, u, steps)}[eng]
                row[eng] = fn()
                print(f"{robot} W={W} S={steps} {eng}: {row[eng]}", flush=True)
                out.write(res)
        if "jaxcontact" in engines and args.profile_steps:
            u = controls(m, robot, 1, args.profile_steps, args.seed)
            entry["profile"] = {"kept pairs": profile(robot, u, args.profile_steps, pairs)}
            if pairs and args.profile_all_pairs:
                entry["profile"]["all pairs"] = profile(robot, u, args.profile_steps, 0)
            print(f"{robot} profile: {entry['profile']}", flush=True)
        if args.batch_sweeps:
            W, S = (int(x) for x in args.batch_sweeps.split(","))
            entry["batch_sweeps"] = batch_sweeps(robot, controls(m, robot, W, S, args.seed), S, pairs)
            print(f"{robot} batch sweeps: {entry['batch_sweeps']}", flush=True)
        if args.stage_steps:
            u = controls(m, robot, 1, args.stage_steps, args.seed)
            entry["stages"] = stage_times(robot, u, args.stage_steps, pairs)
            print(f"{robot} stages: {entry['stages']}", flush=True)
        out.write(res)
    rows = []
    for robot, entry in res["robots"].items():
        for W, r in entry["sizes"].items():
            jc = r.get("jaxcontact", {})
            cells = [robot, W, r["steps"]]
            for eng in ("jaxcontact", "mujoco", "mjx"):
                e = r.get(eng)
                cells.append("—" if not e or "skipped" in e else fmt(e["world_steps_per_s"]))
            for eng in ("mujoco", "mjx"):
                e = r.get(eng)
                cells.append("—" if not (e and jc) or "skipped" in e else f"{e['world_steps_per_s'] / jc['world_steps_per_s']:.1f}×")
            cells += ["—" if not jc else fmt(jc["compile_s"]), "—" if not r.get("mjx") or "skipped" in r["mjx"]
                      else fmt(r["mjx"]["compile_s"])]
            cells += [" / ".join(fmt(r[e]["mean_final_height_m"]) if r.get(e) and "skipped" not in r[e] else "—"
                                 for e in ("jaxcontact", "mujoco", "mjx")), jc.get("flags", "—")]
            rows.append(cells)
    prof = [[robot, label, p["max_pairs"] or "all", p["contact_rows"], p["joint_rows"], fmt(p["mean_sweeps"]),
             p["max_sweeps"], p["steps_at_cap"], p["steps_flagged_solver"], fmt(p["ms_per_step"]),
             fmt(p["ms_per_step_one_sweep"]), f"{100 * p['sweeps_share']:.0f} %",
             fmt(p["ms_per_step_lapack"]) if "ms_per_step_lapack" in p else "—"]
            for robot, entry in res["robots"].items() for label, p in entry.get("profile", {}).items()]
    md = ["# Robots against MuJoCo C and MJX, both cores", "", md_machine(res["machine"]), "",
          "Each engine on two CPU cores (module docstring); world-steps/s (higher is faster), the peers' ratio to "
          "jaxcontact (above 1: the peer is faster), and the mean final height of the compared body (torso; the arm's "
          "last link) in jaxcontact / MuJoCo C / MJX.", "",
          md_table(["robot", "worlds", "steps", "jaxcontact", "MuJoCo C", "MJX", "MuJoCo / jaxcontact",
                    "MJX / jaxcontact", "compile jaxcontact (s)", "compile MJX (s)", "final height (m)",
                    "jaxcontact flags"], rows), "",
          "## Where jaxcontact's time goes (one world)", "",
          md_table(["robot", "pairs", "max_pairs", "contact rows", "joint rows", "mean sweeps", "max sweeps",
                    "steps at the cap", "steps flagged SOLVER", "CPU ms/step", "CPU ms/step at one sweep",
                    "sweeps' share", "CPU ms/step, jax's LAPACK kernels"],
                   prof)]
    sweep_rows = [[robot, b["worlds"], b["steps"], fmt(b["mean_sweeps"]), fmt(b["mean_largest_sweeps"]), b["largest_sweeps"],
                   b["steps_at_cap_any_world"], f"{100 * b['sweep_work_of_own_worlds']:.0f} %"]
                  for robot, entry in res["robots"].items() if (b := entry.get("batch_sweeps"))]
    if sweep_rows:
        md += ["", "## A batch's sweeps (one device): each world's own against the batch's slowest", "",
               md_table(["robot", "worlds", "steps", "mean sweeps (a world)", "mean of the largest (the batch)",
                         "largest", "steps at the cap in some world", "the worlds' own share of the swept work"],
                        sweep_rows)]
    stage_rows = [[robot, k, fmt(v)] for robot, entry in res["robots"].items() for k, v in entry.get("stages", {}).items()]
    if stage_rows:
        md += ["", f"## Stage times (one world, float32, at the state after {args.stage_steps} steps; CPU ms a call)", "",
               md_table(["robot", "stage", "value"], stage_rows)]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json}, {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
