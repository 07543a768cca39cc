"""Everything an accelerator lease measures, in one process: jaxcontact on a GPU against MJX.

Run on a lent GPU machine through ``benchmarks/gpu_run.sh`` (it installs the wheels carried in
``.whl/``: jaxopt, mujoco, mujoco-mjx and what they need, which that machine lacks), or on the CPU at
tiny sizes to check that it works before device time is spent::

    benchmarks/gpu_run.sh --out "$OUT"                                  # the GPU run (one device call)
    python -m benchmarks gpu_run --device cpu --smoke --out /tmp/gpu    # CPU check, about a minute

Phases, in order of priority; each writes its part of ``OUT/gpu_run.json`` as soon as it ends, and
a phase (or a batch size) that would not fit the remaining ``--budget-s`` is skipped and says so:

1. ``smoke``   a 4-body, 20-step rollout on the device (the run stops here if jaxcontact fails);
2. ``single``  the box-throw workload of ``benchmarks.throughput`` (0.1 m cube, 0.37 kg, μ 0.18,
   h = 2 ms, ``--steps`` steps, ``jc.batch_rollout`` final state, default ``CoulombLCP``: hard
   contact, PGS to tol 1e-6, ≤ 100 sweeps) at each of ``--batches``: box-steps/s, compile time, peak
   device memory per body (``memory_stats``), solver warnings, NaN count. The finals of
   ``--accuracy-batch`` are saved with their start states (``finals.npz``) for the CPU float64
   comparison (``python -m benchmarks.gpu_compare``);
3. ``mjx``     MJX (``mujoco.mjx``, float32) on the same throws at ``--mjx-batches``: ``jit`` of a
   ``lax.scan`` over ``vmap(mjx.step)`` of ``--mjx-chunk`` steps, called ``steps / chunk`` times
   (the first, compiling call is timed apart);
4. ``split``   where the time goes at ``--split-batch``: the default solver, fixed sweep counts
   (cost per sweep, cost without sweeps) and no contact at all (``NoContact``), ``--split-steps``;
5. ``stress``  ``benchmarks.stress`` (10,000 bodies, degenerate and extreme states) on the device:
   NaN and silent-NaN counts (``stress.json``);
6. ``contactnets`` the polytope ContactNets loss and gradient (bilevel, FISTA inner programs,
   float32) batched over transitions of the bundled tosses at ``--cn-batches``, against one
   transition per call;
7. ``worlds``  the 10-box stack of ``benchmarks.worlds`` in float32, 64 and 1,024 worlds, 500 steps.

The last lines printed are a short table (a device call returns the end of its output).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

from . import common
from .common import log

GPU = dict(batches="1024,16384,131072,1048576", mjx_batches="1024,16384,131072", accuracy_batch=16384,
           split_batch=131072, split_steps=200, stress_throws=10000, stress_chunk=10000,
           cn_batches="1024,16384,131072", steps=800, consistency="131072,1048576,200")
SMOKE = dict(batches="8,32", mjx_batches="8", accuracy_batch=32, split_batch=32, split_steps=20,
             stress_throws=40, stress_chunk=40, cn_batches="4,16", steps=40, consistency="8,64,20")
PHASES = ("smoke", "single", "mjx", "consistency", "split", "stress", "contactnets", "worlds")




def arguments(p):
    """gpu_run's own options (the shared ones: ``--out`` the run's folder, required; ``--device`` gpu; ``--seed``;
    ``--steps``, default 800 or the smoke's 40)."""
    p.add_argument("--smoke", action="store_true", help="tiny sizes (a CPU check of the whole run)")
    p.add_argument("--budget-s", type=float, default=500.0, help="wall-clock budget of the whole run")
    p.add_argument("--phases", default=",".join(PHASES), help=f"comma list out of {','.join(PHASES)}")
    p.add_argument("--commit", default=None, help="the code's commit (the device copy may have no .git)")
    for k, v in GPU.items():
        if k != "steps":  # shared
            p.add_argument("--" + k.replace("_", "-"), type=type(v), default=None)
    p.add_argument("--mjx-chunk", type=int, default=100, help="MJX steps per compiled call")
    p.add_argument("--world-batches", default="1024,4096,16384,65536", help="worlds per heap batch")
    p.add_argument("--world-steps", type=int, default=1000, help="steps of each heap batch")
    p.add_argument("--world-seeds", type=int, default=256, help="distinct heaps, tiled to each batch")


def settle_args(a):
    """The parsed options completed: the sizes of a GPU run or of the smoke run where not given; refused where
    inconsistent."""
    for k, v in (SMOKE if a.smoke else GPU).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    ints = lambda s: [int(x) for x in str(s).split(",") if x.strip()]
    a.batches, a.mjx_batches, a.cn_batches = ints(a.batches), ints(a.mjx_batches), ints(a.cn_batches)
    a.phases = [x.strip() for x in a.phases.split(",") if x.strip()]
    bad = [x for x in a.phases if x not in PHASES]
    if bad:
        raise SystemExit(f"--phases: unknown phases {bad}; choose from {PHASES}")
    a.mjx_chunk = min(a.mjx_chunk, a.steps)
    if a.steps % a.mjx_chunk:
        raise SystemExit("--steps must be a multiple of --mjx-chunk")
    return a


class Clock:
    def __init__(self, budget_s: float):
        self.t0, self.budget = time.perf_counter(), budget_s

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.t0)


def memory():
    """(bytes in use, peak bytes in use) of the default device, or (None, None) where unknown."""
    import jax

    try:
        s = jax.devices()[0].memory_stats() or {}
    except Exception:  # noqa: BLE001 - CPU backends may not report
        s = {}
    return s.get("bytes_in_use"), s.get("peak_bytes_in_use")


def block(x):
    import jax

    return jax.block_until_ready(x)


# --------------------------------------------------------------------------------------- phases

def phase_env(a):
    import jax

    info = common.machine_info("benchmarks.gpu_run", command=a.command)
    if a.commit:
        info["git_commit"] = a.commit
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as err:  # noqa: BLE001
        info["nvidia_smi"] = f"not available ({type(err).__name__})"
    info["device_kind"] = jax.devices()[0].device_kind
    from importlib.metadata import version

    for mod in ("jaxopt", "flax", "optax", "jax-cuda13-plugin", "jax-cuda12-plugin"):
        try:
            info["versions"][mod] = version(mod)
        except Exception:  # noqa: BLE001 - not installed
            info["versions"][mod] = None
    return info


def phase_smoke(a, clock):
    import jax
    import jaxcontact as jc

    model, params = common.box_workload()
    st = common.throws(4, a.seed)
    t0 = time.perf_counter()
    fin = block(jc.batch_rollout(model, params, st, 20))
    return {"platform": jax.devices()[0].platform, "wall_s": time.perf_counter() - t0,
            "final_z": np.asarray(fin.pos[:, 2]).tolist(), "finite": bool(np.isfinite(np.asarray(fin.pos)).all())}


def _rollout_timed(model, params, states, steps, repeats):
    """warm-up (compiles) + ``repeats`` timed calls of the public ``jc.batch_rollout``."""
    import jaxcontact as jc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = common.timed(lambda: block(jc.batch_rollout(model, params, states, steps)), repeats)
    msgs = sorted({f"{w.category.__name__}: {str(w.message)[:300]}" for w in caught})
    return r, msgs


def phase_single(a, clock, out_dir, reserve_s):
    import jax

    model, params = common.box_workload()
    rows, cost = [], None  # cost: seconds per body-step of the previous batch (an upper bound at a larger one)
    for B in a.batches:
        repeats = 2 if B <= 131072 else 1
        steps = a.steps
        compile_guess = 30.0 if a.device == "gpu" else 10.0
        if cost is not None:
            need = lambda s: cost * B * s * (1 + repeats) + compile_guess
            if need(steps) > clock.left() - reserve_s:
                repeats = 1
            if need(steps) > clock.left() - reserve_s:
                steps = max(a.mjx_chunk, int(steps // 4))
            if need(steps) > clock.left() - reserve_s:
                rows.append({"batch": B, "skipped": f"predicted {need(steps):.0f} s > {clock.left() - reserve_s:.0f} s left"})
                log(f"[single] batch {B}: skipped ({rows[-1]['skipped']})")
                continue
        in_use0, _ = memory()
        states = block(common.throws(B, a.seed))
        log(f"[single] batch {B}, {steps} steps, {repeats} timed repeat(s)")
        try:
            r, msgs = _rollout_timed(model, params, states, steps, repeats)
        except Exception as err:  # noqa: BLE001 - e.g. out of memory at the largest batch
            rows.append({"batch": B, "error": f"{type(err).__name__}: {str(err)[:400]}"})
            log(f"[single] batch {B}: {rows[-1]['error']}")
            break
        in_use1, peak = memory()
        fin = r["out"]
        pos = np.asarray(jax.device_get(fin.pos))
        row = {
            "batch": B, "steps": steps, "repeats": repeats, "best_s": r["best_s"], "times_s": r["times_s"],
            "first_s": r["first_s"], "compile_s": max(r["first_s"] - r["best_s"], 0.0),
            "rate": B * steps / r["best_s"], "nan_bodies": int((~np.isfinite(pos).all(-1)).sum()),
            "final_z_median": float(np.median(pos[:, 2])), "warnings": msgs,
            "bytes_in_use_before": in_use0, "peak_bytes_in_use": peak,
            "peak_bytes_per_body": None if peak is None or in_use0 is None else (peak - in_use0) / B,
        }
        rows.append(row)
        cost = r["best_s"] / (B * steps)
        log(f"         {row['rate']:,.0f} box-steps/s, compile {row['compile_s']:.1f} s, "
            f"peak/body {row['peak_bytes_per_body']}, NaN {row['nan_bodies']}, {len(msgs)} warning kinds")
        if B == a.accuracy_batch:
            np.savez_compressed(Path(out_dir) / "finals.npz", steps=steps, seed=a.seed, batch=B,
                                **{f"start_{k}": np.asarray(getattr(states, k)) for k in ("pos", "quat", "vel", "omega")},
                                **{f"final_{k}": np.asarray(getattr(fin, k)) for k in ("pos", "quat", "vel", "omega")})
        del states, fin, r
    return {"workload": "box 0.1 m, 0.37 kg, mu 0.18, h 0.002 s, CoulombLCP() defaults (PGS tol 1e-6, cap 100), "
                        "max_contacts 4, jc.batch_rollout final state (validate=True, chunk_size='auto')",
            "rows": rows}


def phase_mjx(a, clock, reserve_s):
    import jax
    import jax.numpy as jnp
    import mujoco
    from mujoco import mjx

    m = mujoco.MjModel.from_xml_string(common.mujoco_xml())
    mx = mjx.put_model(m)
    d0 = mjx.make_data(mx)
    K = a.mjx_chunk
    vstep = jax.vmap(mjx.step, in_axes=(None, 0))

    @jax.jit
    def chunk(dxs):
        return jax.lax.scan(lambda d, _: (vstep(mx, d), None), dxs, None, length=K)[0]

    rows = []
    for B in a.mjx_batches:
        if clock.left() - reserve_s < 20:
            rows.append({"batch": B, "skipped": f"{clock.left() - reserve_s:.0f} s left"})
            log(f"[mjx] batch {B}: skipped")
            continue
        qpos, qvel = common.to_mujoco_qpos_qvel(common.throws(B, a.seed))
        dtype = d0.qpos.dtype
        log(f"[mjx] batch {B}")
        try:
            in_use0, _ = memory()
            dxs = block(jax.vmap(lambda qp, qv: d0.replace(qpos=qp, qvel=qv))(jnp.asarray(qpos, dtype), jnp.asarray(qvel, dtype)))
            t0 = time.perf_counter()
            block(chunk(dxs))
            first = time.perf_counter() - t0
            # a probe of one more call predicts the full rollout (flight-heavy, so a lower bound)
            t0 = time.perf_counter()
            block(chunk(dxs).qpos)
            probe = time.perf_counter() - t0
            if probe * a.steps / K * 1.5 > clock.left() - reserve_s:
                rows.append({"batch": B, "skipped": f"predicted {probe * a.steps / K * 1.5:.0f} s > "
                                                     f"{clock.left() - reserve_s:.0f} s left",
                             "first_chunk_rate": B * K / probe})
                log(f"[mjx] batch {B}: skipped ({rows[-1]['skipped']})")
                continue
            t0 = time.perf_counter()
            d = dxs
            for _ in range(a.steps // K):
                d = chunk(d)
            block(d.qpos)
            full = time.perf_counter() - t0
            _, peak = memory()
        except Exception as err:  # noqa: BLE001
            rows.append({"batch": B, "error": f"{type(err).__name__}: {str(err)[:400]}"})
            log(f"[mjx] batch {B}: {rows[-1]['error']}")
            break
        qp = np.asarray(d.qpos)
        rows.append({"batch": B, "steps": a.steps, "best_s": full, "rate": B * a.steps / full,
                     "compile_s": max(first - full * K / a.steps, 0.0), "nan_bodies": int((~np.isfinite(qp).all(-1)).sum()),
                     "final_z_median": float(np.median(qp[:, 2])),
                     "peak_bytes_per_body": None if peak is None or in_use0 is None else (peak - in_use0) / B})
        log(f"         {rows[-1]['rate']:,.0f} box-steps/s, compile {rows[-1]['compile_s']:.1f} s")
        del dxs, d
    return {"impl": str(getattr(mx, "impl", "jax")), "dtype": str(d0.qpos.dtype), "steps_per_call": K,
            "options": {"cone": common.MJ_CONE, "solver": common.MJ_SOLVER, "integrator": common.MJ_INTEGRATOR,
                        "iterations": int(m.opt.iterations), "tolerance": float(m.opt.tolerance)},
            "rows": rows}


def phase_consistency(a):
    """The same bodies in a small and in a large batch (the first ``n`` of the large one): the
    batched solver's sub-batch path must give each body the same steps, so the same failure flags
    and, up to rounding, the same final states."""
    import jax
    import jaxcontact as jc

    n, big, steps = (int(x) for x in a.consistency.split(","))
    model, params = common.box_workload()
    states = block(common.throws(big, a.seed))
    res = {"small_batch": n, "large_batch": big, "steps": steps}
    fins = {}
    for name, st in (("small", jax.tree_util.tree_map(lambda x: x[:n], states)), ("large", states)):
        fin, summ = jc.batch_rollout(model, params, st, steps, with_info=True, validate=False)
        first = np.asarray(summ.first_step)[:, 3]  # Flags.SOLVER's first step per body (-1: none)
        fins[name] = np.asarray(fin.pos)[:n]
        res[f"solver_flagged_{name}"] = {"first_n": int((first[:n] >= 0).sum()), "all": int((first >= 0).sum())}
        log(f"[consistency] {name} batch: solver-flagged {res[f'solver_flagged_{name}']}")
    d = np.linalg.norm(fins["small"] - fins["large"], axis=-1)
    res.update(final_pos_diff_max_m=float(d.max()), bodies_differing_over_1e_4_m=int((d > 1e-4).sum()))
    return res


def phase_split(a, clock, reserve_s):
    import jaxcontact as jc

    B, steps = a.split_batch, a.split_steps
    states = block(common.throws(B, a.seed))
    variants = [("default (adaptive, tol 1e-6, cap 100)", {}),
                ("fixed 10 sweeps", {"max_iter": 10, "fixed_iterations": True}),
                ("fixed 40 sweeps", {"max_iter": 40, "fixed_iterations": True}),
                ("no contact (NoContact law: integration only)", None)]
    import jax
    from jaxcontact.worlds import pipeline

    variants.insert(1, ("default, products at JAX's default precision (TF32 on GPUs; before full_precision)", "tf32"))
    rows = []
    for name, kw in variants:
        if clock.left() - reserve_s < 20:
            rows.append({"variant": name, "skipped": "out of budget"})
            continue
        if kw is None:
            law = jc.NoContact()
            model = jc.Model(law=law, dt=common.DT, max_contacts=4)
            params = jc.Params(body=jc.shapes.box(common.BOX_SIZE, common.BOX_MASS), ground=jc.Ground.flat(),
                               law=law.init_params())
        else:
            model, params = common.box_workload(**({} if kw == "tf32" else kw))
        log(f"[split] {name}")
        if kw == "tf32":  # the step without its full_precision wrapper, traced afresh
            jax.clear_caches()
            pipeline.step_stages, full = pipeline.step_stages.__wrapped__, pipeline.step_stages
            try:
                r, msgs = _rollout_timed(model, params, states, steps, 2)
            finally:
                pipeline.step_stages = full
                jax.clear_caches()
        else:
            r, msgs = _rollout_timed(model, params, states, steps, 2)
        rows.append({"variant": name, "settings": kw, "batch": B, "steps": steps, "best_s": r["best_s"],
                     "rate": B * steps / r["best_s"], "ns_per_body_step": 1e9 * r["best_s"] / (B * steps),
                     "compile_s": max(r["first_s"] - r["best_s"], 0.0), "warnings": msgs})
        log(f"         {rows[-1]['rate']:,.0f} box-steps/s")
    fx = {r["settings"]["max_iter"]: r["ns_per_body_step"] for r in rows
          if isinstance(r.get("settings"), dict) and r["settings"].get("fixed_iterations") and "ns_per_body_step" in r}
    fit = None
    if len(fx) == 2:
        (k1, t1), (k2, t2) = sorted(fx.items())
        per = (t2 - t1) / (k2 - k1)
        fit = {"ns_per_sweep_per_body": per, "ns_per_body_step_without_sweeps": t1 - per * k1}
    return {"rows": rows, "linear_fit": fit}


def phase_stress(a, out_dir):
    from .runner import Results, run as run_benchmark

    # the stress benchmark itself, through the runner (it writes stress.json and .md in out_dir)
    run_benchmark("stress", ["--throws", str(a.stress_throws), "--steps", str(a.steps), "--chunk",
                             str(a.stress_chunk), "--out-dir", str(out_dir)])
    res = json.loads((Path(out_dir) / "stress.json").read_text())
    res.pop("provenance", None)
    if a.provenance:
        res["provenance"] = a.provenance
    Results(out_dir, "stress").write(res)
    by = res["by_category"]
    return {"throws": a.stress_throws, "steps": a.steps, "wall_s": res["wall_s"],
            "nan_bodies": {k: v["nan_bodies"] for k, v in by.items()},
            "silent_nan_bodies": res["overall"]["silent_nan_bodies"],
            "unflagged_energy_gain_bodies": res["overall"]["unflagged_energy_gain_bodies"],
            "pass_no_nan": res["pass_no_nan"], "pass_every_failure_flagged": res["pass_every_failure_flagged"]}


def phase_contactnets(a, clock, reserve_s):
    import jax
    import jax.numpy as jnp

    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.functions import ContactFunctions, init_polytope
    from jaxcontact.contactnets.loss import LossConfig, batch_loss
    from jaxcontact.contactnets.train import body_of
    from jaxcontact.laws import CoulombLCP
    from jaxcontact.solvers import NonnegSettings
    from jaxcontact.types import Model

    data = load_tosses()
    xs, xns = data.transitions()
    rng = np.random.default_rng(a.seed)
    n = max(max(a.cn_batches), 64)
    i = rng.choice(len(xs), n, replace=n > len(xs))
    f32 = lambda t: jax.tree_util.tree_map(
        lambda x: x.astype(jnp.float32) if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    A, Bn = jnp.asarray(xs[i], jnp.float32), jnp.asarray(xns[i], jnp.float32)
    body = f32(body_of(data))
    model = Model(law=CoulombLCP(), dt=data.dt, gravity=data.gravity)
    fns = ContactFunctions("polytope")
    th = f32(init_polytope(jax.random.PRNGKey(0), data.vertices, data.mu_nominal))
    out = {"transitions_available": int(len(xs)), "dtype": "float32", "inner": "fista, 100 iterations",
           "rows": []}
    for chunk in ("auto", 256):  # the default, and the CPU's chunk for comparison
        cfg = LossConfig(inner=NonnegSettings(max_iter=100, method="fista"), chunk=chunk)
        f = jax.jit(jax.value_and_grad(lambda th, a_, b_, cfg=cfg: batch_loss(fns, th, model, body, a_, b_, cfg)[0]))
        if chunk == "auto":
            block(f(th, A[:1], Bn[:1]))
            t0 = time.perf_counter()
            for k in range(64):
                block(f(th, A[k:k + 1], Bn[k:k + 1]))
            out["one_at_a_time_transitions_per_s"] = 64 / (time.perf_counter() - t0)
            log(f"[contactnets] one per call: {out['one_at_a_time_transitions_per_s']:,.0f} transitions/s")
        for B in a.cn_batches if chunk == "auto" else a.cn_batches[-1:]:
            if clock.left() - reserve_s < 15:
                out["rows"].append({"batch": B, "chunk": str(chunk), "skipped": "out of budget"})
                continue
            t0 = time.perf_counter()
            block(f(th, A[:B], Bn[:B]))
            first = time.perf_counter() - t0
            times = []
            while len(times) < 3 or (sum(times) < 1.0 and len(times) < 20):
                t0 = time.perf_counter()
                block(f(th, A[:B], Bn[:B]))
                times.append(time.perf_counter() - t0)
            rate = B / min(times)
            out["rows"].append({"batch": B, "chunk": f"{chunk} ({cfg.chunk_size()})", "best_s": min(times), "compile_s": max(first - min(times), 0.0),
                                "transitions_per_s": rate,
                                "speedup_vs_one_per_call": rate / out["one_at_a_time_transitions_per_s"]})
            log(f"[contactnets] batch {B} (chunk {chunk}): {rate:,.0f} transitions/s")
    return out


def _world_run(scene, params, states, steps, model, output="final"):
    """(jitted batch_rollout, seconds of its first call, best seconds of one more, its result)."""
    import jax

    from jaxcontact import worlds

    run = jax.jit(lambda st: worlds.batch_rollout(model, scene, params, st, steps, output=output))
    t0 = time.perf_counter()
    block(run(states))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = block(run(states))
    return run, first, time.perf_counter() - t0, out


def phase_worlds(a, clock, out_dir, reserve_s=0.0):
    """Worlds on the device, float32, the world's default law (``worlds.DEFAULT_LAW``):

    * ``heap``: 16 boxes dropped (``scenes.heap``, ``--world-seeds`` distinct seeds tiled to each
      batch) for ``--world-steps`` steps at ``--world-batches`` worlds, with the graph-coloured
      sweeps (``LCPSettings(sweeps="colour")``, vectorised over worlds; the default on a GPU) and, on a short window
      at the smallest batch, the sequential sweeps: box-steps/s, compile s, peak memory per world,
      sweeps per step, flags; the settled heights of the distinct seeds (``worlds_heaps.npz``) for
      the CPU float64 comparison;
    * ``stack``: the 10-box stack at the smallest batch, 500 steps: how far each top box moved;
    * ``grad``: ``jax.grad`` of the mean final height through 200 steps of the smallest batch of
      heaps against the forward pass alone (time, peak memory per world);
    * ``trace``: a profiler trace of 20 heap steps at the second batch (``worlds_trace.xplane.pb``);
    * ``mjx``: MJX on the same heaps (``benchmarks.worlds.run_mjx``, child processes)."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    from .common import heap_states, run_mjx

    f32 = lambda t: jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    model = worlds.model()
    batches = [4, 8] if a.smoke else [int(x) for x in str(a.world_batches).split(",")]
    steps = 20 if a.smoke else a.world_steps
    n_seeds = 4 if a.smoke else a.world_seeds
    scene, params, seeds_states = heap_states(list(range(n_seeds)))
    params, seeds_states = f32(params), f32(seeds_states)
    tile = lambda W: jax.tree_util.tree_map(lambda x: jnp.tile(x, (W // n_seeds + 1,) + (1,) * (x.ndim - 1))[:W], seeds_states)
    out = {"dtype": "float32", "law": repr(model.law), "steps": steps, "seeds": n_seeds, "heap": [], "stack": None,
           "grad": None, "mjx": None}
    cost = None
    for order in ("colour", "sequential"):
        for W in (batches if order == "colour" else batches[:1]):
            st = steps if order == "colour" else min(steps, 20)
            if cost is not None and cost * W * st * 2 + 40 > clock.left() - reserve_s:
                out["heap"].append({"order": order, "worlds": W, "skipped": "out of budget"})
                log(f"[worlds] heap {order} {W}: skipped (budget)")
                continue
            in0, _ = memory()
            states = block(tile(W))
            try:
                _, first, wall, (final, summary) = _world_run(scene, params, states, st, worlds.model(sweeps=order))
            except Exception as err:  # noqa: BLE001 - out of memory at the largest batch, say
                out["heap"].append({"order": order, "worlds": W, "error": f"{type(err).__name__}: {str(err)[:300]}"})
                log(f"[worlds] heap {order} {W}: {out['heap'][-1]['error']}")
                break
            _, peak = memory()
            z = np.asarray(final.pos[..., 2])
            row = {"order": order, "worlds": W, "steps": st, "wall_s": wall, "compile_s": max(first - wall, 0.0),
                   "box_steps_per_s": W * 16 * st / wall, "ns_per_box_step": 1e9 * wall / (W * 16 * st),
                   "peak_bytes_per_world": None if peak is None or in0 is None else (peak - in0) / W,
                   "flagged_worlds": int(jnp.sum(summary.flags != 0)), "nan_worlds": int((~np.isfinite(z)).any(-1).sum()),
                   "com_height_mean_m": float(np.nanmean(z))}
            out["heap"].append(row)
            if order == "colour":
                cost = wall / (W * st)
            log(f"[worlds] heap {order} {W} worlds x {st} steps: {row['box_steps_per_s']:,.0f} box-steps/s "
                f"({row['ns_per_box_step']:.0f} ns), compile {row['compile_s']:.1f} s, peak/world {row['peak_bytes_per_world']}")
            if order == "colour" and W == batches[0]:
                np.savez_compressed(Path(out_dir) / "worlds_heaps.npz", steps=st, seeds=n_seeds,
                                    final_pos=np.asarray(final.pos[:n_seeds]), final_quat=np.asarray(final.quat[:n_seeds]))
            del states, final, summary
    W0 = batches[0]
    # sweeps per step (trajectory infos) on a short window of the smallest batch
    if clock.left() - reserve_s > 60:
        _, _, _, (traj, infos) = _world_run(scene, params, block(tile(W0)), min(steps, 400 if not a.smoke else 20), model,
                                            output="trajectory")
        it = np.asarray(infos.iterations)
        out["sweeps"] = {"steps": int(it.shape[1]), "mean": float(it.mean()), "max_over_worlds_mean": float(it.max(0).mean()),
                         "p90": float(np.percentile(it, 90)), "max": int(it.max())}
        log(f"[worlds] sweeps per step: {out['sweeps']}")
        del traj, infos
    # the stack
    if clock.left() - reserve_s > 40:
        n, st = (3, 20) if a.smoke else (10, 500)
        sc, sp, s0 = scenes.stack(n)
        sp, s0 = f32(sp), f32(s0)
        states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W0,) + x.shape), s0)
        _, first, wall, (final, summary) = _world_run(sc, sp, states, st, model)
        moved = np.asarray(jnp.linalg.norm(final.pos[:, -1] - s0.pos[-1], axis=-1))
        out["stack"] = {"boxes": n, "worlds": W0, "steps": st, "box_steps_per_s": W0 * n * st / wall,
                        "compile_s": max(first - wall, 0.0), "top_moved_max_m": float(moved.max()),
                        "flagged_worlds": int(jnp.sum(summary.flags != 0))}
        log(f"[worlds] stack: {out['stack']}")
    # gradient through 200 steps
    if clock.left() - reserve_s > 60:
        gs = 20 if a.smoke else 200
        states = block(tile(W0))
        fwd = jax.jit(lambda p: jnp.mean(worlds.batch_rollout(model, scene, p, states, gs, output="final")[0].pos[..., 2]))
        grd = jax.jit(jax.grad(lambda p: jnp.mean(worlds.batch_rollout(model, scene, p, states, gs, output="final")[0].pos[..., 2])))
        t0 = time.perf_counter(); block(fwd(params)); f_first = time.perf_counter() - t0
        t0 = time.perf_counter(); block(fwd(params)); f_wall = time.perf_counter() - t0
        in0, _ = memory()
        t0 = time.perf_counter(); g = block(grd(params)); g_first = time.perf_counter() - t0
        t0 = time.perf_counter(); g = block(grd(params)); g_wall = time.perf_counter() - t0
        _, peak = memory()
        leaves = jax.tree_util.tree_leaves(g)
        out["grad"] = {"worlds": W0, "steps": gs, "forward_s": f_wall, "grad_s": g_wall, "ratio": g_wall / f_wall,
                       "grad_compile_s": max(g_first - g_wall, 0.0),
                       "peak_bytes_per_world": None if peak is None or in0 is None else (peak - in0) / W0,
                       "finite": bool(all(np.isfinite(np.asarray(x)).all() for x in leaves))}
        log(f"[worlds] grad: {out['grad']}")
    # a profiler trace of 20 steps
    if clock.left() - reserve_s > 40 and len(batches) > 1:
        W1 = batches[1]
        states = block(tile(W1))
        run, _, _, _ = _world_run(scene, params, states, 20, model)
        tdir = Path("/tmp/jc_trace")
        jax.profiler.start_trace(str(tdir))
        block(run(states))
        jax.profiler.stop_trace()
        pbs = sorted(tdir.rglob("*.xplane.pb"))
        if pbs:
            import gzip

            (Path(out_dir) / "worlds_trace.xplane.pb.gz").write_bytes(gzip.compress(pbs[-1].read_bytes()))
            out["trace"] = {"worlds": W1, "steps": 20, "file": "worlds_trace.xplane.pb.gz", "bytes": pbs[-1].stat().st_size}
    # MJX on the same heaps
    if not a.smoke and clock.left() - reserve_s > 60:
        mb = [b for b in batches if b <= 4096][:2]
        out["mjx"] = run_mjx(mb, a.world_steps, timeout=min(150.0, clock.left() - reserve_s - 10), spacing=0.18)
    return out


# --------------------------------------------------------------------------------------- report

def markdown(res) -> str:
    f = common.fmt
    env = res.get("env", {})
    lines = [f"# jaxcontact on an accelerator ({env.get('device_kind')})", "",
             f"- Command: `{env.get('command')}`", f"- Date: {env.get('date')} (git {env.get('git_commit')})",
             f"- GPU: {env.get('nvidia_smi')}", f"- Versions: {env.get('versions')}", ""]
    s = res.get("single", {}).get("rows", [])
    mj = {r["batch"]: r for r in res.get("mjx", {}).get("rows", []) if "rate" in r}
    if s:
        lines += ["## Single bodies (box throws), box-steps/s", "",
                  common.md_table(["batch", "steps", "jaxcontact", "compile s", "peak B/body", "NaN", "MJX", "MJX compile s",
                                   "jaxcontact / MJX"],
                                  [[r["batch"], r.get("steps", "—"), f(r.get("rate")) if "rate" in r else r.get("skipped") or r.get("error"),
                                    f(r.get("compile_s")), f(r.get("peak_bytes_per_body")), r.get("nan_bodies", "—"),
                                    f(mj.get(r["batch"], {}).get("rate")), f(mj.get(r["batch"], {}).get("compile_s")),
                                    f(r["rate"] / mj[r["batch"]]["rate"]) if "rate" in r and r["batch"] in mj else "—"]
                                   for r in s]), ""]
    co = res.get("consistency")
    if isinstance(co, dict) and "final_pos_diff_max_m" in co:
        lines += [f"## The same bodies in batches of {co['small_batch']} and {co['large_batch']} ({co['steps']} steps)", "",
                  f"Solver-flagged among the first {co['small_batch']}: {co['solver_flagged_small']['first_n']} (small batch), "
                  f"{co['solver_flagged_large']['first_n']} (large); max final-position difference "
                  f"{f(co['final_pos_diff_max_m'])} m, bodies over 0.1 mm apart: {co['bodies_differing_over_1e_4_m']}", ""]
    sp = res.get("split", {})
    if sp.get("rows"):
        lines += ["## Where the time goes", "",
                  common.md_table(["variant", "batch", "steps", "box-steps/s", "ns / body-step"],
                                  [[r["variant"], r.get("batch", "—"), r.get("steps", "—"), f(r.get("rate")),
                                    f(r.get("ns_per_body_step"))] for r in sp["rows"]]), "",
                  f"Linear fit over the fixed-sweep variants: {sp.get('linear_fit')}", ""]
    st = res.get("stress")
    if isinstance(st, dict) and "nan_bodies" in st:
        lines += [f"## Stress set on the device: {st['throws']} bodies, {st['steps']} steps", "",
                  f"NaN bodies by category {st['nan_bodies']}; silent NaN {st['silent_nan_bodies']}; "
                  f"pass_no_nan {st['pass_no_nan']}; every failure flagged {st['pass_every_failure_flagged']}", ""]
    cn = res.get("contactnets", {})
    if cn.get("rows"):
        lines += ["## ContactNets loss + gradient, transitions/s", "",
                  f"One transition per call: {f(cn.get('one_at_a_time_transitions_per_s'))}", "",
                  common.md_table(["batch", "chunk", "transitions/s", "× one per call", "compile s"],
                                  [[r["batch"], r["chunk"], f(r.get("transitions_per_s")),
                                    f(r.get("speedup_vs_one_per_call")), f(r.get("compile_s"))] for r in cn["rows"]]), ""]
    wd = res.get("worlds", {})
    if wd.get("heap"):
        lines += [f"## Worlds: heaps of 16 boxes, {wd['steps']} steps, {wd['dtype']} ({wd['seeds']} distinct heaps tiled)", "",
                  common.md_table(["sweeps", "worlds", "steps", "box-steps/s", "ns per box-step", "compile s",
                                   "peak B/world", "flagged worlds", "NaN worlds"],
                                  [[r["order"], r["worlds"], r.get("steps", "—"),
                                    f(r.get("box_steps_per_s")) if "box_steps_per_s" in r else r.get("skipped") or r.get("error"),
                                    f(r.get("ns_per_box_step")), f(r.get("compile_s")), f(r.get("peak_bytes_per_world")),
                                    r.get("flagged_worlds", "—"), r.get("nan_worlds", "—")] for r in wd["heap"]]), ""]
        if wd.get("sweeps"):
            lines += [f"Sweeps per step (colour, smallest batch, first {wd['sweeps']['steps']} steps): {wd['sweeps']}", ""]
        if wd.get("stack"):
            lines += [f"Stack: {wd['stack']}", ""]
        if wd.get("grad"):
            lines += [f"Gradient: {wd['grad']}", ""]
        for r in (wd.get("mjx") or {}).get("runs", []):
            done = r["stages"].get("done", {})
            lines += [f"MJX heap {r['worlds']} worlds: {f(done.get('box_steps_per_s')) if done else r.get('reason')} box-steps/s, "
                      f"compile {f(r['stages'].get('compiled', {}).get('compile_s'))} s", ""]
    for k, v in res.get("errors", {}).items():
        lines.append(f"- phase {k} failed: {v.splitlines()[-1] if v else v}")
    return "\n".join(lines) + "\n"


def run(a, results) -> int:
    """``python -m benchmarks gpu_run --out DIR``: every phase, ``results`` (``DIR/gpu_run.json``, ``.md``) written
    after each; the runner has chosen the device."""
    if results is None:
        raise SystemExit("--out: the run's folder (gpu_run.json, gpu_run.md, finals.npz, stress.json) is required")
    a = settle_args(a)
    out_dir = results.folder
    out_dir.mkdir(parents=True, exist_ok=True)
    clock = Clock(a.budget_s)
    res = {"benchmark": "gpu_run", "args": {k: v for k, v in vars(a).items() if k not in ("command", "provenance")},
           "errors": {},
           "phase_wall_s": {}}
    if a.commit:  # a device copy's .git may be older than its files: the commit given wins
        from experiments.provenance import stamp

        res["provenance"] = {**stamp(), "commit": a.commit, "dirty": False,
                             "note": "commit from --commit: the code was committed there before the run"}
    a.provenance = res.get("provenance")

    def save():
        results.write(res, markdown(res))

    res["env"] = phase_env(a)
    log(json.dumps({k: res["env"].get(k) for k in ("device_kind", "nvidia_smi", "versions", "jax_devices")}))
    # the least each phase needs on a GPU: a phase keeps back the sum over the phases after it
    need = {} if a.smoke else {"single": 90, "mjx": 80, "consistency": 25, "split": 45, "stress": 30, "contactnets": 30}
    after = lambda ph: sum(need.get(q, 0) for q in a.phases[a.phases.index(ph) + 1:])
    for ph in a.phases:
        if clock.left() < 10:
            res["errors"][ph] = "skipped: out of budget"
            continue
        t0 = time.perf_counter()
        log(f"== {ph} ({clock.left():.0f} s left)")
        try:
            if ph == "smoke":
                res[ph] = phase_smoke(a, clock)
            elif ph == "single":
                res[ph] = phase_single(a, clock, out_dir, reserve_s=after(ph))
            elif ph == "mjx":
                res[ph] = phase_mjx(a, clock, reserve_s=after(ph))
            elif ph == "consistency":
                res[ph] = phase_consistency(a)
            elif ph == "split":
                res[ph] = phase_split(a, clock, reserve_s=after(ph))
            elif ph == "stress":
                res[ph] = phase_stress(a, out_dir)
            elif ph == "contactnets":
                res[ph] = phase_contactnets(a, clock, reserve_s=0)
            elif ph == "worlds":
                res[ph] = phase_worlds(a, clock, out_dir, reserve_s=after(ph))
        except Exception:  # noqa: BLE001 - one phase failing must not lose the others' results
            res["errors"][ph] = traceback.format_exc()
            log(res["errors"][ph])
            if ph == "smoke":
                save()
                raise SystemExit(1)
        res["phase_wall_s"][ph] = time.perf_counter() - t0
        save()
    print(markdown(res))
    if res["errors"]:
        raise SystemExit(1)
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
