"""Throughput of jaxcontact on the box-throw workload, against MuJoCo C and MJX, one core and all cores.

Workload: a 0.1 m cube (0.37 kg), Coulomb friction μ = 0.18, no restitution, h = 2 ms, 800 steps,
random throws (``jaxcontact.states.random_throws``: centre height U(0.3, 1.0) + 0.1 m, uniform
random orientation, horizontal velocity U(−2, 2) m/s per axis, vertical U(−1, 1) m/s, body-frame
angular velocity U(−5, 5) rad/s) onto flat ground. Each simulator gets the *same* initial states
and reports box-steps per second (batch × steps / wall time) at each batch size:

* jaxcontact: ``jc.batch_rollout`` (jitted vmap of a ``lax.scan``; final state only), hard
  contact by a PGS LCP (tol 1e-6, ≤ 100 sweeps, each step's sweeps started from zero: the default,
  ``LCPSettings.warm_start=False``),
  ``max_contacts=4`` (a box face has 4 corners,
  as MuJoCo's box–plane collider); the full ``--steps`` are timed.
* MuJoCo C: ``mujoco.rollout.rollout`` with ONE ``MjData`` (so one thread; the loop over
  ``mj_step`` runs in C, no Python per step); falls back to a Python loop over ``mj_step`` when
  ``mujoco.rollout`` is missing (then Python overhead is included, and it says so).
* All cores (``--threads``, default every core of the machine): MuJoCo C with one ``MjData`` per
  thread (``mujoco.rollout``'s thread pool), against jaxcontact's ``sharded_batch_rollout`` over
  as many XLA host devices (``--xla_force_host_platform_device_count``, in a child process, since
  the flag must be set before JAX starts). One-core and all-core pairs use the same states.
* Every peer-size measurement other than jaxcontact's one-device row runs in a child process with
  a wall-clock limit (``--peer-timeout``): a peer that cannot run a size (MJX at 4,096 on a CPU
  once sat in a futex wait for over 10 minutes) is recorded as skipped and the run goes on.
* MJX (``mujoco.mjx``, JAX implementation, same device as jaxcontact): ``jit`` of a
  ``lax.scan`` over ``vmap(mjx.step)``. MJX is slow on CPU, so it is timed on ``--mjx-windows``
  windows of ``--mjx-steps`` steps spread evenly over the rollout (the first starts from the
  throws, later ones from the MuJoCo-C state at that step, so flight and contact phases are both
  sampled); its full-rollout rate is estimated from the sum of the window times.

Timing: a warm-up call (which compiles), then the best of ``--repeats`` (≥ 2) calls, each ended by
``jax.block_until_ready``; compile time = first call − best steady call.

Also measured: jaxcontact's cost as the vertex count grows (convex hulls of 8, 64, 512 points on
a sphere of radius 0.05 m, default ``max_contacts=8``), the PGS iteration statistics of the
workload, and with ``--sweep`` a profile of solver settings (max_contacts, iteration cap, fixed
iteration counts) with their deviation from the default settings.

Usage::

    python -m benchmarks throughput                   # CPU, batches 1,64,1024,4096, 800 steps
    python -m benchmarks throughput --quick           # smoke test
    python -m benchmarks throughput --device gpu      # GPU (batches 1,024 … 1,048,576)
    python -m benchmarks throughput --json --sweep

Always writes ``benchmarks/results/throughput.json`` and ``throughput.md`` (unless ``--out DIR``; a ``--quick`` run writes to a temporary folder unless ``--out`` is given).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import sys
import time

import numpy as np

from . import common
from .common import bench_jaxcontact, bench_mujoco_c, load_mujoco, log  # noqa: F401  (cone reads them in common)

CPU_BATCHES = "1,64,1024,4096"
GPU_BATCHES = "1024,16384,131072,1048576"


def arguments(p):
    """throughput's own options (shared: ``--steps`` per rollout, ``--quick`` small batches and few steps,
    ``--device``, ``--seed``, ``--out``)."""
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--batches", default=None, help=f"comma list (default CPU {CPU_BATCHES}; GPU {GPU_BATCHES})")
    p.add_argument("--repeats", type=int, default=2, help="timed repeats after the warm-up (best is kept)")
    p.add_argument("--peers", default="jaxcontact,mujoco,mjx", help="which simulators to run")
    p.add_argument("--mjx-steps", type=int, default=50, help="steps per MJX timing window")
    p.add_argument("--mjx-windows", type=int, default=2, help="MJX windows spread over the rollout")
    p.add_argument("--mjx-batches", default=None, help="batches for MJX (default: --batches)")
    p.add_argument("--mujoco-max-batch", type=int, default=16384, help="skip MuJoCo C above this batch")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="cores for the all-cores pair: MuJoCo C threads and jaxcontact host devices "
                        "(default: every core; 1 = no all-cores pair)")
    p.add_argument("--peer-timeout", type=float, default=300.0,
                   help="wall-clock limit (s) of each peer measurement run in a child process")
    p.add_argument("--hull-vertices", default="8,64,512", help="vertex counts of the convex hulls")
    p.add_argument("--hull-batch", type=int, default=1024)
    p.add_argument("--hull-steps", type=int, default=200)
    p.add_argument("--sweep", action="store_true", help="also profile solver settings")
    p.add_argument("--sweep-batches", default="1024",
                   help="batches for --sweep, each optionally with variants: 1024,4096=fixed10+cap20 "
                        f"(keys: {', '.join(SWEEP_VARIANTS)}; default all)")


def settle_args(a):
    """The parsed options completed (the quick run's sizes, lists parsed); refused where wrong."""
    if a.repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    if a.batches is None:
        a.batches = "1,64" if a.quick else (GPU_BATCHES if a.device == "gpu" else CPU_BATCHES)
    if a.quick:
        a.steps = min(a.steps, 100)
        a.mjx_steps = min(a.mjx_steps, 20)
        a.hull_steps = min(a.hull_steps, 20)
        a.hull_batch = min(a.hull_batch, 64)
        a.hull_vertices = "8,64"
        a.sweep_batches = "64"
    ints = lambda s: [int(x) for x in str(s).split(",") if x.strip()]
    a.batches = ints(a.batches)
    a.mjx_batches = ints(a.mjx_batches) if a.mjx_batches else a.batches
    a.hull_vertices = ints(a.hull_vertices)
    sweeps = {}
    for item in a.sweep_batches.split(","):
        b, _, keys = item.partition("=")
        keys = [k for k in keys.split("+") if k] or list(SWEEP_VARIANTS)
        bad = [k for k in keys if k not in SWEEP_VARIANTS]
        if bad:
            raise SystemExit(f"--sweep-batches: unknown sweep variants {bad}")
        sweeps[int(b)] = keys
    a.sweep_batches = sweeps
    a.peers = {x.strip() for x in a.peers.split(",")}
    return a


# ------------------------------------------------------------------------------------ jaxcontact

def fibonacci_sphere(n: int, radius: float = 0.05) -> np.ndarray:
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    r = np.sqrt(1 - z * z)
    th = np.pi * (1 + 5**0.5) * i
    return radius * np.stack([r * np.cos(th), r * np.sin(th), z], -1)


def bench_hulls(args):
    import jaxcontact as jc

    rows = []
    states = common.throws(args.hull_batch, args.seed)
    for n in args.hull_vertices:
        body = jc.shapes.convex_hull(fibonacci_sphere(n), common.BOX_MASS)
        model, params = common.box_workload(max_contacts=8, body=body)
        log(f"[hull] {n} vertices ({body.num_vertices} on hull), batch {args.hull_batch}, {args.hull_steps} steps")
        r = bench_jaxcontact(model, params, states, args.hull_steps, args.repeats)
        rows.append({
            "points": n, "hull_vertices": int(body.num_vertices), "max_contacts": model.max_contacts,
            "batch": args.hull_batch, "steps": args.hull_steps, "rate": r["rate"],
            "us_per_body_step": 1e6 / r["rate"], "best_s": r["best_s"], "compile_s": r["compile_s"],
        })
        log(f"        {r['rate']:,.0f} body-steps/s")
    return rows


def iteration_stats(args, batch):
    """PGS iteration statistics of the default workload (per body-step and per vmapped step)."""
    import jax
    import jax.numpy as jnp
    import jaxcontact as jc

    model, params = common.box_workload()
    states = common.throws(batch, args.seed)
    _, info = jc.batch_rollout(model, params, states, args.steps, output="trajectory", with_info=True)
    it = np.asarray(jax.device_get(info.iterations))  # (B, steps)
    phi = np.asarray(jax.device_get(jnp.min(info.phi, -1)))
    cap = model.law.solver.max_iter
    return {
        "batch": batch, "steps": args.steps, "max_iter": cap,
        "mean_iterations_per_body_step": float(it.mean()),
        "mean_over_steps_of_batch_max_iterations": float(it.max(0).mean()),
        "fraction_body_steps_at_cap": float((it >= cap).mean()),
        "fraction_steps_some_body_at_cap": float((it.max(0) >= cap).mean()),
        "fraction_body_steps_in_contact": float((phi <= model.patch_tol).mean()),
        "mean_iterations_in_contact": float(it[phi <= model.patch_tol].mean()) if (phi <= model.patch_tol).any() else None,
    }


SWEEP_VARIANTS = {  # key: (description, box_workload settings)
    "default": ("default (C=4, tol 1e-6, cap 100, adaptive)", {}),
    "c8": ("C=8 (all box corners)", {"max_contacts": 8}),
    "cap20": ("adaptive, cap 20", {"max_iter": 20}),
    "tol1e-4": ("adaptive, tol 1e-4, cap 100", {"tol": 1e-4}),
    "fixed1": ("fixed 1 sweep", {"max_iter": 1, "fixed_iterations": True}),
    "fixed5": ("fixed 5 sweeps", {"max_iter": 5, "fixed_iterations": True}),
    "fixed10": ("fixed 10 sweeps", {"max_iter": 10, "fixed_iterations": True}),
    "fixed20": ("fixed 20 sweeps", {"max_iter": 20, "fixed_iterations": True}),
    "fixed100": ("fixed 100 sweeps", {"max_iter": 100, "fixed_iterations": True}),
}


def bench_sweep(args, reference_finals):
    import jax

    rows = []
    for batch, keys in args.sweep_batches.items():
        states = common.throws(batch, args.seed)
        ref = None
        for key in ["default"] + [k for k in keys if k != "default"]:
            name, kw = SWEEP_VARIANTS[key]
            model, params = common.box_workload(**kw)
            log(f"[sweep] batch {batch}: {name}")
            if not kw and batch in reference_finals:
                r = reference_finals[batch]
            else:
                r = bench_jaxcontact(model, params, states, args.steps, args.repeats)
            fin = np.asarray(jax.device_get(r["final"].pos))
            if not kw:
                ref = fin
            dev = np.linalg.norm(fin - ref, axis=-1) if ref is not None else None
            rows.append({
                "batch": batch, "variant": name, "settings": kw, "rate": r["rate"], "best_s": r["best_s"],
                "us_per_body_step": 1e6 / r["rate"], "compile_s": r["compile_s"],
                "final_pos_dev_max_m": None if dev is None else float(dev.max()),
                "final_pos_dev_median_m": None if dev is None else float(np.median(dev)),
                "nan_final": int(np.sum(~np.isfinite(fin).all(-1))),
            })
            log(f"        {r['rate']:,.0f} body-steps/s")
    # Linear cost model from the fixed-sweep variants: t/(body·step) = a + b·sweeps.
    fits = {}
    for batch in args.sweep_batches:
        pts = [(r["settings"]["max_iter"], r["us_per_body_step"]) for r in rows
               if r["batch"] == batch and r["settings"].get("fixed_iterations")]
        if len(pts) >= 2:
            k, t = np.array(pts, float).T
            b, a = np.polyfit(k, t, 1)
            fits[batch] = {"us_per_body_step_without_sweeps": float(a), "us_per_sweep": float(b)}
    return rows, fits


# ------------------------------------------------------------------------------------ MuJoCo

def bench_mjx(mujoco, window_starts, steps_window, total_steps, repeats, device):
    """MJX timing on windows; ``window_starts`` maps start step -> (qpos, qvel) arrays."""
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    m = mujoco.MjModel.from_xml_string(common.mujoco_xml())
    mx = mjx.put_model(m, device=device)
    d0 = mjx.make_data(mx, device=device)

    @jax.jit
    def window(qpos, qvel):
        dxs = jax.vmap(lambda qp, qv: d0.replace(qpos=qp, qvel=qv))(qpos, qvel)
        f = lambda dx, _: (jax.vmap(mjx.step, in_axes=(None, 0))(mx, dx), None)
        dxs, _ = jax.lax.scan(f, dxs, None, length=steps_window)
        return dxs.qpos

    starts = sorted(window_starts)
    res = {"windows": [], "steps_per_window": steps_window}
    dtype = d0.qpos.dtype
    compile_s = None
    total = 0.0
    for s in starts:
        qp, qv = (jax.device_put(jnp.asarray(x, dtype), device) for x in window_starts[s])
        r = common.timed(lambda: jax.block_until_ready(window(qp, qv)), repeats)
        if compile_s is None:
            compile_s = max(r["first_s"] - r["best_s"], 0.0)
        B = qp.shape[0]
        res["windows"].append({"start_step": s, "best_s": r["best_s"], "rate": B * steps_window / r["best_s"],
                               "nan": int(np.sum(~np.isfinite(np.asarray(r["out"]))))})
        total += r["best_s"]
    est = total * total_steps / (len(starts) * steps_window)
    res.update({"compile_s": compile_s, "estimated_full_rollout_s": est, "rate": B * total_steps / est,
                "impl": str(getattr(mx, "impl", "jax")), "dtype": str(dtype)})
    return res


# ------------------------------------------------------------------------------------ main

# ------------------------------------------------------------------------------------ child processes

def _child(name, kwargs, q):
    os.dup2(2, 1)  # the parent's stdout is the --json output: children print (MJX's imports do) to stderr
    try:
        q.put({"ok": globals()[name](**kwargs)})
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        q.put({"error": f"{type(err).__name__}: {err}"})


def in_child(name, kwargs, timeout_s, env=None):
    """``name(**kwargs)`` (a function of this module) in a spawned child process with ``env`` added,
    killed after ``timeout_s``; returns its result or ``{"skipped": why}``."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        proc = ctx.Process(target=_child, args=(name, kwargs, q), daemon=True)
        proc.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    t0 = time.perf_counter()
    try:
        msg = q.get(timeout=timeout_s)
    except queue.Empty:
        proc.kill()
        proc.join(10)
        return {"skipped": f"no result within --peer-timeout {timeout_s:.0f} s (killed)"}
    proc.join(30)
    if "error" in msg:
        return {"skipped": f"failed: {msg['error']}"}
    out = msg["ok"]
    if isinstance(out, dict):
        out["child_wall_s"] = time.perf_counter() - t0
    return out


def child_mujoco_c(qpos, qvel, steps, repeats, threads):
    import mujoco

    return bench_mujoco_c(mujoco, qpos, qvel, steps, repeats, [], threads=threads)[0]


def child_mjx(window_starts, steps_window, total_steps, repeats, platform):
    import jax
    import mujoco

    return bench_mjx(mujoco, window_starts, steps_window, total_steps, repeats, jax.devices(platform)[0])


def child_sharded(batch, steps, repeats, seed, devices):
    """jaxcontact's ``sharded_batch_rollout`` over ``devices`` XLA host devices (set by the parent's
    XLA_FLAGS); the all-cores row."""
    import jax
    import jaxcontact as jc  # noqa: F401
    from jaxcontact.sharding import sharded_batch_rollout

    if jax.device_count() != devices:
        raise RuntimeError(f"expected {devices} host devices, JAX has {jax.device_count()}")
    model, params = common.box_workload()
    states = common.throws(batch, seed)
    r = common.timed(lambda: jax.block_until_ready(sharded_batch_rollout(model, params, states, steps).pos), repeats)
    return {"steps": steps, "best_s": r["best_s"], "times_s": r["times_s"], "devices": devices,
            "compile_s": max(r["first_s"] - r["best_s"], 0.0), "rate": batch * steps / r["best_s"],
            "method": f"jaxcontact.sharding.sharded_batch_rollout over {devices} XLA host devices"}


def host_devices_env(n):
    flags = os.environ.get("XLA_FLAGS", "")
    return {"XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={n}".strip(), "JAX_PLATFORMS": "cpu"}


# ------------------------------------------------------------------------------------ run

def measure(args, save=lambda out: None):
    """Run all benchmarks; ``save(out)`` is called after each part (partial results survive)."""
    import jax

    info = common.machine_info("benchmarks.throughput", command=args.command)
    device = jax.devices()[0]
    log(f"JAX devices: {info['jax_devices']}")
    mujoco, mj_msg = (None, "MuJoCo peers not requested")
    if {"mujoco", "mjx"} & args.peers:
        mujoco, mj_msg = load_mujoco()
        if mj_msg:
            log("WARNING:", mj_msg)
    mjx_ok = mujoco is not None and "mjx" in args.peers
    if mjx_ok:
        try:
            from mujoco import mjx  # noqa: F401
        except Exception as err:  # noqa: BLE001
            mjx_ok = False
            mj_msg = f"mujoco.mjx not importable ({err}); MJX skipped"
            log("WARNING:", mj_msg)

    model, params = common.box_workload()
    results = []
    finals = {}
    out = {"benchmark": "throughput", "machine": info, "workload": {
        "body": "box 0.1 m, 0.37 kg", "mu": common.MU, "restitution": 0.0, "dt": common.DT,
        "steps": args.steps, "seed": args.seed,
        "jaxcontact": {"law": "CoulombLCP", "tol": 1e-6, "max_iter": 100, "max_contacts": 4,
                       "dtype": str(np.asarray(common.throws(1).pos).dtype)},
        "mujoco_xml": common.mujoco_xml(),
        "threads": args.threads, "peer_timeout_s": args.peer_timeout,
        "mjx_timing": f"{args.mjx_windows} windows of {args.mjx_steps} steps, starts spread over the rollout; "
                      f"rate = B*steps / (sum(window times) * steps / (windows*window_steps))",
    }, "results": results, "peer_messages": [mj_msg] if mj_msg and "not requested" not in mj_msg else []}

    all_batches = sorted(set(args.batches) | (set(args.mjx_batches) if mjx_ok else set()))
    for B in all_batches:
        row = {"batch": B}
        states = common.throws(B, args.seed)
        qpos, qvel = common.to_mujoco_qpos_qvel(states)
        if "jaxcontact" in args.peers and B in args.batches:
            log(f"[jaxcontact] batch {B}, {args.steps} steps")
            r = bench_jaxcontact(model, params, states, args.steps, args.repeats)
            finals[B] = r
            fin = r.pop("final")
            row["jaxcontact"] = {k: v for k, v in r.items()}
            row["jaxcontact"]["nan_final"] = int(np.sum(~np.isfinite(np.asarray(fin.pos)).all(-1)))
            row["jaxcontact"]["final_z_median"] = float(np.median(np.asarray(fin.pos)[:, 2]))
            r["final"] = fin
            log(f"        {r['rate']:,.0f} box-steps/s (compile {r['compile_s']:.1f} s)")
        win_starts = [k * args.steps // args.mjx_windows for k in range(args.mjx_windows)]
        win_starts = sorted({min(s, max(args.steps - args.mjx_steps, 0)) for s in win_starts})
        snaps = {}
        if mujoco is not None and "mujoco" in args.peers and B in args.batches:
            if B > args.mujoco_max_batch:
                row["mujoco_c"] = {"skipped": f"batch > --mujoco-max-batch {args.mujoco_max_batch}"}
            else:
                log(f"[mujoco C] batch {B}, {args.steps} steps")
                r, snaps = bench_mujoco_c(mujoco, qpos, qvel, args.steps, args.repeats, [s for s in win_starts if s > 0])
                row["mujoco_c"] = r
                log(f"        {r['rate']:,.0f} box-steps/s ({r['method']})")
        elif "mujoco" in args.peers and B in args.batches:
            row["mujoco_c"] = {"skipped": mj_msg}
        if mjx_ok and B in args.mjx_batches:
            starts = {0: (qpos[:, :7], qvel)}
            for s in win_starts:
                if s == 0:
                    continue
                if s in snaps:
                    starts[s] = snaps[s]
                else:  # no MuJoCo C run at this batch: take jaxcontact's state at that step
                    import jaxcontact as jc
                    st = jc.batch_rollout(model, params, states, s)
                    starts[s] = common.to_mujoco_qpos_qvel(st)
            log(f"[mjx] batch {B}, windows of {args.mjx_steps} steps from steps {sorted(starts)} (child process, "
                f"limit {args.peer_timeout:.0f} s)")
            r = in_child("child_mjx", dict(window_starts=starts, steps_window=args.mjx_steps, total_steps=args.steps,
                                           repeats=args.repeats, platform=device.platform), args.peer_timeout,
                         env={"JAX_PLATFORMS": device.platform if device.platform != "gpu" else "cuda"})
            row["mjx"] = r
            if "rate" in r:
                log(f"        ~{r['rate']:,.0f} box-steps/s (windows: "
                    + ", ".join(f"{w['start_step']}: {w['rate']:,.0f}" for w in r["windows"])
                    + f"; compile {r['compile_s']:.1f} s)")
            else:
                log(f"        MJX skipped: {r['skipped']}")
        elif "mjx" in args.peers and B in args.mjx_batches:
            row["mjx"] = {"skipped": mj_msg}
        if args.threads > 1 and device.platform == "cpu" and B in args.batches:
            if "jaxcontact" in args.peers:
                log(f"[jaxcontact, all cores] batch {B}, {args.threads} host devices (child process)")
                r = in_child("child_sharded", dict(batch=B, steps=args.steps, repeats=args.repeats, seed=args.seed,
                                                   devices=args.threads), args.peer_timeout,
                             env=host_devices_env(args.threads))
                row["jaxcontact_all"] = r
                log(f"        {r['rate']:,.0f} box-steps/s" if "rate" in r else f"        skipped: {r['skipped']}")
            if mujoco is not None and "mujoco" in args.peers and B <= args.mujoco_max_batch:
                log(f"[mujoco C, all cores] batch {B}, {args.threads} threads (child process)")
                r = in_child("child_mujoco_c", dict(qpos=qpos, qvel=qvel, steps=args.steps, repeats=args.repeats,
                                                    threads=args.threads), args.peer_timeout)
                row["mujoco_c_all"] = r
                log(f"        {r['rate']:,.0f} box-steps/s" if "rate" in r else f"        skipped: {r['skipped']}")
            ja, ca = row.get("jaxcontact_all", {}).get("rate"), row.get("mujoco_c_all", {}).get("rate")
            row["ratio_all_cores_vs_mujoco_c"] = ja / ca if ja and ca else None
        jr = row.get("jaxcontact", {}).get("rate")
        row["ratio_vs_mjx"] = jr / row["mjx"]["rate"] if jr and "rate" in row.get("mjx", {}) else None
        row["ratio_vs_mujoco_c"] = jr / row["mujoco_c"]["rate"] if jr and "rate" in row.get("mujoco_c", {}) else None
        results.append(row)
        save(out)

    if "jaxcontact" in args.peers and args.hull_vertices:
        out["vertex_scaling"] = bench_hulls(args)
        save(out)
    if "jaxcontact" in args.peers:
        b = 1024 if 1024 in args.batches and not args.quick else min(args.batches)
        log(f"[iterations] batch {b}")
        out["iteration_stats"] = iteration_stats(args, b)
        save(out)
    if args.sweep and "jaxcontact" in args.peers:
        out["sweep"], out["sweep_cost_model"] = bench_sweep(args, finals)
    for r in finals.values():
        r.pop("final", None)
    return out


def markdown(out) -> str:
    from jaxcontact.dynamics import CPU_CHUNK

    f = common.fmt
    m = out["machine"]
    lines = ["# jaxcontact throughput (box throws)", "", common.md_machine(m), "",
             f"Workload: {out['workload']['body']}, μ {out['workload']['mu']}, h {out['workload']['dt']} s, "
             f"{out['workload']['steps']} steps, random throws (seed {out['workload']['seed']}). "
             "Rates are box-steps per second (batch × steps / best wall time).", ""]
    rows = []
    for r in out["results"]:
        j, c, x = r.get("jaxcontact", {}), r.get("mujoco_c", {}), r.get("mjx", {})
        rows.append([r["batch"], f(j.get("rate")), f(c.get("rate", c.get("skipped"))), f(x.get("rate", x.get("skipped"))),
                     f(r["ratio_vs_mjx"]), f(r["ratio_vs_mujoco_c"]), f(j.get("compile_s")), f(x.get("compile_s"))])
    lines += [common.md_table(["batch", "jaxcontact", "MuJoCo C (1 thread)", "MJX (est.)", "jaxcontact/MJX",
                               "jaxcontact/MuJoCo C", "jaxcontact compile s", "MJX compile s"], rows), ""]
    allc = [r for r in out["results"] if "jaxcontact_all" in r or "mujoco_c_all" in r]
    if allc:
        n = out["workload"].get("threads")
        arows = []
        for r in allc:
            ja, ca = r.get("jaxcontact_all", {}), r.get("mujoco_c_all", {})
            j1, c1 = r.get("jaxcontact", {}).get("rate"), r.get("mujoco_c", {}).get("rate")
            arows.append([r["batch"], f(ja.get("rate", ja.get("skipped"))), f(ca.get("rate", ca.get("skipped"))),
                          f(r.get("ratio_all_cores_vs_mujoco_c")), f(j1), f(c1), f(r.get("ratio_vs_mujoco_c"))])
        lines += [f"All cores ({n}) against all cores, and one core against one core (same states, same run):", "",
                  common.md_table(["batch", f"jaxcontact, {n} host devices", f"MuJoCo C, {n} threads",
                                   "ratio, all cores", "jaxcontact, 1 device", "MuJoCo C, 1 thread", "ratio, one core"],
                                  arows), ""]
    mjc = next((r["mujoco_c"] for r in out["results"] if "method" in r.get("mujoco_c", {})), None)
    if mjc:
        lines.append(f"- MuJoCo C: {mjc['method']}; options {mjc['options']}.")
    xs = [r["mjx"] for r in out["results"] if "windows" in r.get("mjx", {})]
    if xs:
        lines.append(f"- MJX ({xs[0]['impl']}, {xs[0]['dtype']}): {out['workload']['mjx_timing']}. Window rates: "
                     + "; ".join(f"batch {r['batch']}: " + ", ".join(f"from step {w['start_step']} {f(w['rate'])}"
                                                                   for w in r["mjx"]["windows"])
                                 for r in out["results"] if "windows" in r.get("mjx", {})) + ".")
    lines.append("- jaxcontact: CoulombLCP, PGS tol 1e-6, cap 100 sweeps (adaptive, each step started from zero: "
                 "the default, no warm start; under vmap the unconverged tail of a batch sweeps in sub-batches), max_contacts 4, "
                 f"{out['workload']['jaxcontact']['dtype']}; `jc.batch_rollout` defaults (chunk_size='auto': "
                 f"{CPU_CHUNK} bodies per chunk on a CPU backend, the whole batch on a GPU).")
    for msg in out.get("peer_messages", []):
        lines.append(f"- NOTE: {msg}")
    lines.append("")
    if out.get("iteration_stats"):
        s = out["iteration_stats"]
        lines += ["## PGS iterations (default settings)", "",
                  common.md_table(["batch", "mean sweeps / body-step", "mean over steps of batch-max sweeps",
                                   "body-steps at cap", "steps where some body is at cap", "body-steps in contact",
                                   "mean sweeps in contact"],
                                  [[s["batch"], f(s["mean_iterations_per_body_step"]),
                                    f(s["mean_over_steps_of_batch_max_iterations"]),
                                    f(s["fraction_body_steps_at_cap"]), f(s["fraction_steps_some_body_at_cap"]),
                                    f(s["fraction_body_steps_in_contact"]), f(s["mean_iterations_in_contact"])]]), ""]
    if out.get("vertex_scaling"):
        lines += ["## Vertex count (convex hulls of points on a 0.05 m sphere, max_contacts 8)", "",
                  common.md_table(["points", "hull vertices", "batch", "steps", "body-steps/s", "µs / body-step",
                                   "compile s"],
                                  [[r["points"], r["hull_vertices"], r["batch"], r["steps"], f(r["rate"]),
                                    f(r["us_per_body_step"]), f(r["compile_s"])] for r in out["vertex_scaling"]]), ""]
    if out.get("sweep"):
        lines += ["## Solver-settings profile (jaxcontact)", "",
                  common.md_table(["batch", "variant", "body-steps/s", "µs / body-step", "final pos dev. max (m)",
                                   "final pos dev. median (m)"],
                                  [[r["batch"], r["variant"], f(r["rate"]), f(r["us_per_body_step"]),
                                    f(r["final_pos_dev_max_m"]), f(r["final_pos_dev_median_m"])]
                                   for r in out["sweep"]]), ""]
        for b, fit in out.get("sweep_cost_model", {}).items():
            lines.append(f"- Cost model at batch {b} (fit to fixed-sweep variants): "
                         f"{f(fit['us_per_body_step_without_sweeps'])} µs per body-step outside PGS + "
                         f"{f(fit['us_per_sweep'])} µs per PGS sweep.")
        lines.append("")
    return "\n".join(lines)


def run(args, results):
    """``python -m benchmarks throughput``: ``results`` written after each part (the runner chose the device)."""
    args = settle_args(args)

    def save(o):
        results.write(o, markdown(o))

    if args.json:  # stdout is the JSON alone: whatever the run prints (MJX's imports do) goes to stderr
        sys.stdout.flush()
        saved_stdout = os.dup(1)
        os.dup2(2, 1)
    try:
        out = measure(args, save)
    finally:
        if args.json:
            sys.stdout.flush()
            os.dup2(saved_stdout, 1)
            os.close(saved_stdout)
    save(out)
    if args.json:
        print(json.dumps(out, default=common.json_default))
    else:
        print(markdown(out))
    log(f"wrote {results.json} and {results.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
