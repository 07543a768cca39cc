"""Coulomb's disc (the default ``LCPSettings.cone = "elliptic"``) against the square (``"box"``, the
friction set before issue 61), and MuJoCo C's elliptic and pyramidal cones, in one run.

* ``slides``: the issue's check: a 0.1 m box (0.37 kg) launched flat at 1.58 m/s, μ 0.5, float64,
  ``jc.batch_rollout`` at the defaults (h = 2 ms), headings 0°…90° in 5° steps: distance slid and
  heading change, against Coulomb's v²/(2μg) and the integrator's exact slide (semi-implicit Euler:
  h Σ_{k=1..N} (v − kμgh), N = ⌊v/(μgh)⌋). MuJoCo C (the same box, ``worlds.mujoco_boxes_xml``, its
  defaults: Newton, soft contacts) with ``cone="elliptic"`` and ``"pyramidal"``.
* ``rate``: before (box) and after (disc), alternated, in the same process: the one-body throw
  workload of ``benchmarks.throughput`` (``common.box_workload``, μ 0.18, ``max_contacts=4``,
  1,024 random throws, 800 steps, float64) and 64 heaps of 16 boxes (``benchmarks.worlds``'
  ``heap_states``, μ 0.5, 300 steps from the drop, float32, ``worlds.batch_rollout``), each against
  MuJoCo C on one thread in the same run (``common.bench_mujoco_c``, ``common.mujoco_heap_speed``:
  pyramidal, MuJoCo's setting that the earlier rounds compared with).

* ``cpu``: box-steps per CPU second (``time.process_time``) of the one-body throws, box, disc, the
  disc polished every solve, and MuJoCo C, alternated; ``cpu_heap``: the same for heaps of 16 boxes
  (``heap_states``, μ 0.5, float64, 32 worlds × 300 steps from the drop, ``worlds.batch_rollout`` at
  the world's default law, box and disc) against MuJoCo C's heap (``rollout.rollout``, one thread,
  its pyramidal and elliptic cones), alternated in one process.

* ``sweeps``: the sweeps a step takes, box and disc, on the same two workloads (256 of the throws,
  800 steps; 8 of the heaps, 300 steps): a count, not a timing.

    python -m benchmarks cone [--only slides,rate]     # writes benchmarks/results/cone.{json,md}
    python -m benchmarks cone --only sweeps --name cone_sweeps
    python -m benchmarks cone --only cpu_heap --rounds 3 --name cone_cpu_heap
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time

import numpy as np

from . import common

MU, V0, SIZE, MASS = 0.5, 1.58, 0.1, 0.37


def slides(steps: int = 250):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxcontact as jc

    theta = np.radians(np.arange(0.0, 90.1, 5.0))
    n = len(theta)
    states = jc.State(pos=jnp.asarray(np.stack([0 * theta, 0 * theta, np.full(n, SIZE / 2)], -1)),
                      quat=jnp.asarray(np.tile([1.0, 0, 0, 0], (n, 1))),
                      vel=jnp.asarray(np.stack([V0 * np.cos(theta), V0 * np.sin(theta), 0 * theta], -1)),
                      omega=jnp.zeros((n, 3)))
    g = 9.81
    out = {"theta_deg": np.degrees(theta).tolist(), "coulomb_m": V0**2 / (2 * MU * g),
           "integrator_m": common.DT * sum(V0 - k * MU * g * common.DT for k in range(1, math.floor(V0 / (MU * g * common.DT)) + 1))}
    for cone in ("box", "elliptic"):
        law = jc.CoulombLCP(solver=jc.LCPSettings(cone=cone))
        model = jc.Model(law=law)
        params = jc.Params(body=jc.shapes.box(SIZE, MASS), ground=jc.Ground.flat(), law=law.init_params(mu=MU))
        fin = jc.batch_rollout(model, params, states, steps)
        p = np.asarray(fin.pos)
        out[f"jaxcontact_{cone}"] = {"distance_m": np.hypot(p[:, 0], p[:, 1]).tolist(),
                                     "heading_change_deg": (np.degrees(np.arctan2(p[:, 1], p[:, 0])) - out["theta_deg"]).tolist()}
    try:
        import mujoco
        from mujoco import rollout

        from .common import mujoco_boxes_xml, mujoco_initial_states, to_mujoco
    except ImportError as e:  # pragma: no cover - mujoco is an optional peer
        out["mujoco"] = f"skipped: {e}"
        return out
    w = jax.tree_util.tree_map(lambda x: np.asarray(x)[:, None], states)
    for cone in ("elliptic", "pyramidal"):
        m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(1, MU, cone))
        init = mujoco_initial_states(m, *to_mujoco(w))
        res = np.zeros((n, steps, init.shape[1]))
        rollout.rollout(m, mujoco.MjData(m), init, nstep=steps, state=res)
        q = res[:, -1, 1:1 + m.nq]
        out[f"mujoco_{cone}"] = {"distance_m": np.hypot(q[:, 0], q[:, 1]).tolist(),
                                 "heading_change_deg": (np.degrees(np.arctan2(q[:, 1], q[:, 0])) - out["theta_deg"]).tolist()}
    out["mujoco_version"] = mujoco.__version__
    return out


def rate(repeats: int = 3, rounds: int = 2, batch: int = 1024, steps: int = 800, heaps: int = 64, heap_steps: int = 300):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxcontact as jc
    from jaxcontact import worlds

    from .common import heap_states, mujoco_heap_speed

    out = {"one_body": {"box": [], "elliptic": []}, "heap": {"box": [], "elliptic": []}}
    states = common.throws(batch, 0)
    for r in range(rounds):
        for cone in ("box", "elliptic"):
            model, params = common.box_workload()
            model = dataclasses.replace(model, law=dataclasses.replace(model.law, solver=dataclasses.replace(model.law.solver, cone=cone)))
            res = common.bench_jaxcontact(model, params, states, steps, repeats)
            res.pop("final")
            out["one_body"][cone].append(res)
            common.log(f"one body {cone} round {r}: {res['rate']:.0f} box-steps/s")
    mujoco, err = common.load_mujoco()
    if mujoco is None:
        raise SystemExit(err)
    qpos, qvel = common.to_mujoco_qpos_qvel(states)
    mj, _ = common.bench_mujoco_c(mujoco, qpos, qvel, steps, repeats, ())
    out["one_body"]["mujoco_c_1_thread"] = {k: v for k, v in mj.items() if k in ("rate", "best_s", "times_s", "method")}
    common.log(f"one body MuJoCo C: {mj['rate']:.0f}")

    scene, params, drops = heap_states(range(heaps))
    p32 = common.cast_floats(params, "float32")
    d32 = common.cast_floats(drops, "float32")
    n = drops.pos.shape[1]
    for r in range(rounds):
        for cone in ("box", "elliptic"):
            law = worlds.DEFAULT_LAW
            model = worlds.model(law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=cone)))
            run = jax.jit(lambda p, s, m=model: worlds.batch_rollout(m, scene, p, s, heap_steps, output="final"))
            t = time.perf_counter()
            fin, summary = jax.block_until_ready(run(p32, d32))
            first = time.perf_counter() - t
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                fin, summary = jax.block_until_ready(run(p32, d32))
                times.append(time.perf_counter() - t)
            best = min(times)
            row = {"worlds": heaps, "steps": heap_steps, "best_s": best, "times_s": times, "compile_s": max(first - best, 0.0),
                   "rate": heaps * n * heap_steps / best, "final_com_height_mean_m": float(np.asarray(fin.pos[..., 2]).mean()),
                   "flags": int(np.bitwise_or.reduce(np.asarray(summary.flags).ravel()))}
            out["heap"][cone].append(row)
            common.log(f"heap {cone} round {r}: {row['rate']:.0f} box-steps/s")
    mh = mujoco_heap_speed(drops, heap_steps, 1, repeats)
    out["heap"]["mujoco_c_1_thread"] = {k: mh[k] for k in ("box_steps_per_s", "wall_s", "times_s", "method", "final_com_height_mean_m")}
    common.log(f"heap MuJoCo C: {mh['box_steps_per_s']:.0f}")
    return out


def cpu(rounds: int = 3, batch: int = 256, steps: int = 400):
    """Box-steps per CPU second (``time.process_time``: all threads' CPU, so a loaded shared
    machine's other processes do not count) of one body, float64, 256 throws × 400 steps: the
    square, the disc at its defaults (its active-set polish only where differentiated), the disc
    polished in every solve (``forward_active_set=1``), and MuJoCo C (one thread), alternated."""
    import time

    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxcontact as jc


    states = common.throws(batch, 0)
    cases = {"box": {"cone": "box"}, "elliptic": {}, "elliptic, polished every solve": {"forward_active_set": 1}}
    fns = {}
    for name, kw in cases.items():
        model, params = common.box_workload()
        model = dataclasses.replace(model, law=dataclasses.replace(model.law, solver=dataclasses.replace(model.law.solver, **kw)))
        fns[name] = jax.jit(lambda s, model=model, params=params: jc.batch_rollout(model, params, s, steps, output="final"))
        jax.block_until_ready(fns[name](states))
    mujoco, err = common.load_mujoco()
    if mujoco is None:
        raise SystemExit(err)
    qpos, qvel = common.to_mujoco_qpos_qvel(states)
    out = {k: [] for k in list(cases) + ["mujoco_c_1_thread"]}
    for r in range(rounds):
        for name in cases:
            t0 = time.process_time()
            jax.block_until_ready(fns[name](states))
            out[name].append(batch * steps / (time.process_time() - t0))
            common.log(f"cpu {name} round {r}: {out[name][-1]:.0f} box-steps per CPU second")
        t0 = time.process_time()
        common.bench_mujoco_c(mujoco, qpos, qvel, steps, 1, ())
        out["mujoco_c_1_thread"].append(batch * steps / (time.process_time() - t0))
        common.log(f"cpu MuJoCo C round {r}: {out['mujoco_c_1_thread'][-1]:.0f}")
    return {"batch": batch, "steps": steps, "rates": out}


def cpu_heap(rounds: int = 3, heaps: int = 32, steps: int = 300):
    """Box-steps per CPU second (``time.process_time``, all threads) of ``heaps`` heaps of 16 boxes,
    float64, ``steps`` steps from the drop: the square and the disc (the world's default law, the
    velocity form), and MuJoCo C on one thread (``mujoco.rollout.rollout``, its defaults: Newton,
    soft contacts) with its pyramidal and elliptic cones, alternated round by round in one process
    (compilation and MuJoCo's model set-up before the clock). Also each variant's mean sweeps a step
    and final mean centre-of-mass height."""
    import time

    import jax

    jax.config.update("jax_enable_x64", True)
    import mujoco
    from mujoco import rollout as mj_rollout

    from jaxcontact import worlds

    from .common import HEAP_MU as MU_HEAP, heap_states, mujoco_boxes_xml, mujoco_initial_states, to_mujoco

    scene, params, drops = heap_states(range(heaps))
    n = drops.pos.shape[1]
    fns, extra = {}, {}
    for cone in ("box", "elliptic"):
        law = worlds.DEFAULT_LAW
        model = worlds.model(law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=cone)))
        fns[cone] = jax.jit(lambda s, m=model: worlds.batch_rollout(m, scene, params, s, steps, output="final"))
        fin, summary = jax.block_until_ready(fns[cone](drops))
        extra[cone] = {"final_com_height_mean_m": float(np.asarray(fin.pos[..., 2]).mean()),
                       "flags": int(np.bitwise_or.reduce(np.asarray(summary.flags).ravel()))}
        _, info = jax.jit(jax.vmap(lambda s, m=model: worlds.rollout(m, scene, params, s, steps)))(drops)
        extra[cone]["mean_sweeps"] = float(np.asarray(info.iterations).mean())
    mj = {}
    for cone in ("pyramidal", "elliptic"):
        m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(n, MU_HEAP, cone))
        init = mujoco_initial_states(m, *to_mujoco(drops))
        buf = np.zeros((heaps, steps, init.shape[1]))
        data = mujoco.MjData(m)
        mj[cone] = (lambda m=m, d=data, i=init, b=buf: mj_rollout.rollout(m, d, i, nstep=steps, state=b), buf)
        mj[cone][0]()
        extra[f"mujoco_c_{cone}"] = {"final_com_height_mean_m": float(buf[:, -1, 3::7][:, :n].mean())}
    names = ["box", "elliptic", "mujoco_c_pyramidal", "mujoco_c_elliptic"]
    out = {k: [] for k in names}
    for r in range(rounds):
        for cone in ("box", "elliptic"):
            t0 = time.process_time()
            jax.block_until_ready(fns[cone](drops))
            out[cone].append(heaps * n * steps / (time.process_time() - t0))
            common.log(f"cpu heap {cone} round {r}: {out[cone][-1]:.0f} box-steps per CPU second")
        for cone in ("pyramidal", "elliptic"):
            t0 = time.process_time()
            mj[cone][0]()
            out[f"mujoco_c_{cone}"].append(heaps * n * steps / (time.process_time() - t0))
            common.log(f"cpu heap MuJoCo C {cone} round {r}: {out[f'mujoco_c_{cone}'][-1]:.0f}")
    return {"heaps": heaps, "steps": steps, "rates": out, "extra": extra}


def sweeps(throws: int = 256, steps: int = 800, heaps: int = 8, heap_steps: int = 300):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxcontact as jc
    from jaxcontact import worlds

    from .common import heap_states

    out = {}
    states = common.throws(throws, 0)
    scene, params, drops = heap_states(range(heaps))
    p32, d32 = common.cast_floats(params, "float32"), common.cast_floats(drops, "float32")
    for cone in ("box", "elliptic"):
        model, bp = common.box_workload()
        model = dataclasses.replace(model, law=dataclasses.replace(model.law, solver=dataclasses.replace(model.law.solver, cone=cone)))
        _, info = jax.jit(jax.vmap(lambda s, m=model: jc.rollout(m, bp, s, steps, with_info=True)))(states)
        it = np.asarray(info.iterations)
        law = worlds.DEFAULT_LAW
        wm = worlds.model(law=dataclasses.replace(law, solver=dataclasses.replace(law.solver, cone=cone)))
        traj, winfo = jax.jit(jax.vmap(lambda s, m=wm: worlds.rollout(m, scene, p32, s, heap_steps)))(d32)
        wit = np.asarray(winfo.iterations)
        out[cone] = {"one_body": {"throws": throws, "steps": steps, "mean": float(it.mean()), "p90": float(np.percentile(it, 90)),
                                  "max": int(it.max())},
                     "heap": {"worlds": heaps, "steps": heap_steps, "mean": float(wit.mean()), "p90": float(np.percentile(wit, 90)),
                              "max": int(wit.max()), "final_com_height_mean_m": float(np.asarray(traj.pos[:, -1, :, 2]).mean())}}
        common.log(f"sweeps {cone}: {out[cone]}")
    return out


def markdown(out) -> str:
    md = ["# Coulomb's disc against the square (issue 61)", "", f"From `{out['machine']['command']}`.", ""]
    if "cpu" in out:
        c = out["cpu"]
        md += [f"## One body, box-steps per CPU second (float64, {c['batch']} throws × {c['steps']} steps; "
               "process CPU time, all threads: robust to other processes' load)", ""]
        base = float(np.median(c["rates"]["box"]))
        rows = [[k, ", ".join(f"{x:,.0f}" for x in v), f"{np.median(v):,.0f}", f"{np.median(v) / base:.3f}"]
                for k, v in c["rates"].items()]
        md += [common.md_table(["variant", "per round", "median", "median / box"], rows), ""]
    if "cpu_heap" in out:
        c = out["cpu_heap"]
        md += [f"## Heaps of 16 boxes, box-steps per CPU second (float64, {c['heaps']} worlds × {c['steps']} steps from the "
               "drop; process CPU time, all threads; MuJoCo C one thread, its defaults)", ""]
        base = float(np.median(c["rates"]["box"]))
        ex = c["extra"]
        rows = [[k, ", ".join(f"{x:,.0f}" for x in v), f"{np.median(v):,.0f}", f"{np.median(v) / base:.3f}",
                 f"{ex[k]['mean_sweeps']:.1f}" if "mean_sweeps" in ex.get(k, {}) else "—",
                 f"{ex[k]['final_com_height_mean_m']:.4f}" if k in ex else "—"]
                for k, v in c["rates"].items()]
        md += [common.md_table(["variant", "per round", "median", "median / box", "mean sweeps a step",
                                "final mean centre height (m)"], rows), ""]
    if "slides" in out:
        s = out["slides"]
        md += [f"## Slides at every heading: a 0.1 m box launched flat at {V0} m/s, μ {MU}, float64, `jc.batch_rollout` "
               "defaults (h = 2 ms)", "",
               f"Coulomb v²/(2μg) = {s['coulomb_m']:.4f} m; the integrator's exact slide (semi-implicit Euler at a constant "
               f"μg) = {s['integrator_m']:.4f} m ({100 * (s['integrator_m'] / s['coulomb_m'] - 1):+.2f} %: h v/2).", ""]
        peers = [k for k in ("jaxcontact_elliptic", "jaxcontact_box", "mujoco_elliptic", "mujoco_pyramidal") if isinstance(s.get(k), dict)]
        head = ["θ (deg)"] + [f"{k} (m, turn °)" for k in peers]
        rows = []
        for i, th in enumerate(s["theta_deg"]):
            rows.append([f"{th:.0f}"] + [f"{s[k]['distance_m'][i]:.4f} ({s[k]['heading_change_deg'][i]:+.2f})" for k in peers])
        md += [common.md_table(head, rows), ""]
        for k in peers:
            d = np.asarray(s[k]["distance_m"])
            md.append(f"- {k}: distance {d.min():.4f}–{d.max():.4f} m, worst {100 * np.max(np.abs(d / s['coulomb_m'] - 1)):.2f} % "
                      f"from Coulomb's, largest turn {np.max(np.abs(s[k]['heading_change_deg'])):.3f}°")
        md.append("")
    if "rate" in out:
        r = out["rate"]
        ob, hp = r["one_body"], r["heap"]
        best = lambda rows: max(x["rate"] for x in rows)
        md += ["## Speed, before (box) and after (disc), alternated in one process, MuJoCo C in the same run", "",
               common.md_table(["workload", "box (before), box-steps/s", "disc (after)", "after/before", "MuJoCo C, 1 thread", "behind MuJoCo (box → disc)"], [
                   ["one body, 1,024 throws × 800 steps, float64", f"{best(ob['box']):,.0f}", f"{best(ob['elliptic']):,.0f}",
                    f"{best(ob['elliptic']) / best(ob['box']):.3f}", f"{ob['mujoco_c_1_thread']['rate']:,.0f}",
                    f"{ob['mujoco_c_1_thread']['rate'] / best(ob['box']):.2f}× → {ob['mujoco_c_1_thread']['rate'] / best(ob['elliptic']):.2f}×"],
                   ["64 heaps of 16 boxes × 300 steps, float32", f"{best(hp['box']):,.0f}", f"{best(hp['elliptic']):,.0f}",
                    f"{best(hp['elliptic']) / best(hp['box']):.3f}", f"{hp['mujoco_c_1_thread']['box_steps_per_s']:,.0f}",
                    f"{hp['mujoco_c_1_thread']['box_steps_per_s'] / best(hp['box']):.2f}× → "
                    f"{hp['mujoco_c_1_thread']['box_steps_per_s'] / best(hp['elliptic']):.2f}×"]]), "",
               "Each jaxcontact rate is the best of its rounds (each round: a warm-up, then the best of the repeats); "
               f"per round: one body box {[round(x['rate']) for x in ob['box']]}, disc {[round(x['rate']) for x in ob['elliptic']]}; "
               f"heap box {[round(x['rate']) for x in hp['box']]}, disc {[round(x['rate']) for x in hp['elliptic']]}. "
               f"Heap mean centre-of-mass height after 300 steps: box {hp['box'][-1]['final_com_height_mean_m']:.4f} m, "
               f"disc {hp['elliptic'][-1]['final_com_height_mean_m']:.4f} m, MuJoCo C (pyramidal) "
               f"{hp['mujoco_c_1_thread']['final_com_height_mean_m']:.4f} m.", ""]
    if "sweeps" in out:
        sw = out["sweeps"]
        md += ["## Sweeps a step (a count: the same on any machine)", "",
               common.md_table(["workload", "cone", "mean", "p90", "max"],
                               [[w, c, f"{sw[c][k]['mean']:.2f}", f"{sw[c][k]['p90']:.0f}", str(sw[c][k]["max"])]
                                for k, w in (("one_body", f"one body, {sw['box']['one_body']['throws']} throws × {sw['box']['one_body']['steps']} steps, float64"),
                                             ("heap", f"{sw['box']['heap']['worlds']} heaps of 16 boxes × {sw['box']['heap']['steps']} steps, float32"))
                                for c in ("box", "elliptic")]), ""]
    md.append(common.md_machine(out["machine"]))
    return "\n".join(md)


PARTS = ("slides", "rate", "sweeps", "cpu", "cpu_heap")


def arguments(ap):
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)


def run(args, results):
    """``python -m benchmarks cone [--only PART,...]`` (``PARTS``): ``results`` gets the JSON and Markdown."""
    parts = args.only.split(",")
    unknown = [q for q in parts if q not in PARTS]
    if unknown:
        raise SystemExit(f"--only: unknown part {unknown[0]!r} (parts: {', '.join(PARTS)})")
    out = {"machine": common.machine_info("benchmarks.cone", command=args.command)}
    if "slides" in parts:
        out["slides"] = slides()
    if "rate" in parts:
        out["rate"] = rate(args.repeats, args.rounds)
    if "sweeps" in parts:
        out["sweeps"] = sweeps()
    if "cpu" in parts:
        out["cpu"] = cpu(args.rounds)
    if "cpu_heap" in parts:
        out["cpu_heap"] = cpu_heap(args.rounds)
    results.write(out, markdown(out))
    print(markdown(out))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
