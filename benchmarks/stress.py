"""Stress test of jaxcontact: many boxes, including degenerate and extreme initial states.

Workload: the 0.1 m, 0.37 kg box (μ 0.18, no restitution, h = 2 ms, PGS tol 1e-6, ≤ 100 sweeps,
max_contacts 4) simulated for ``--steps`` steps from ``--throws`` initial states made of

* ``flat_rest``   identity orientation at exactly the contact height (face resting), zero velocity;
* ``flat_yaw``    face resting with a random rotation about the vertical, zero velocity;
* ``edge_touch``  rotated 45° about a horizontal axis, the lower edge exactly touching, zero velocity;
* ``corner_touch`` a corner exactly touching (body diagonal vertical), zero velocity;
* ``zero_vel``    random orientation in the air, zero velocity (a plain drop);
* ``fast``        random orientation in the air, |v| = 50 m/s in a random direction and
                  |ω| = 200 rad/s about a random axis;
* ``fast_down``   a face resting, driven into the ground at 50 m/s with 200 rad/s spin;
* ``penetrating`` random orientation, starting 1 µm to 5 cm (log-uniform) inside the ground, at rest;
* ``extreme_speed`` random orientation in the air, |v| from 1e3 to 1e20 m/s (log-uniform) in a
                  random direction (half of them into the ground);
* ``random``      ``jaxcontact.states.random_throws`` (the rest of the batch).

The batch is simulated in chunks (``--chunk``) to bound memory; per chunk the trajectory is
reduced on the device to:

* NaN count: bodies whose trajectory contains a non-finite value (must be 0);
* energy gain: max over bodies and steps of E_{k+1} − E_k (``jc.energy``, kinetic + potential with
  the ground at z = 0), absolute and relative to the body's energy scale
  E_scale = KE_0 + m g · 0.1 m + 1e-9 J (initial kinetic energy plus the potential energy of
  lifting the box by its size);
* penetration: max over bodies and steps of ``jc.penetration``, absolute and as a fraction of the
  0.1 m box size;
* solver: max natural-map residual of the PGS solve and fraction of body-steps at the iteration cap
  (and the fraction at the cap among body-steps in contact);
* flags (``ContactInfo.flags``, ``jaxcontact.Flags``): bodies that raised each flag; a *silent* NaN
  is a body that went non-finite without ``Flags.NONFINITE``; an *unflagged* energy gain is a body
  that gained more than 1e-3 of its energy scale in a step without any flag (both must be 0);
* energy beyond the lift: max over steps of E_k − (E_0 + m g d_0), d_0 the start penetration: what
  separating a penetrating body adds beyond lifting it out (bounded by ½ m max_correction_speed²).

Usage::

    python -m benchmarks stress [--json] [--throws 10000] [--steps 800] [--chunk 1000]

Writes ``benchmarks/results/stress.json`` and ``stress.md`` (unless ``--out-dir``).

Heaps (worlds of many bodies)::

    python -m benchmarks stress --heaps 1000 [--heap-boxes 16] [--heap-steps 1000] [--heap-chunk 8] [--dtype float32]

drops ``--heaps`` heaps of 16 boxes (``jaxcontact.worlds.scenes.heap``, one random key each: random
orientations and velocities from a loose grid) and checks each world (``heap_checks``): no NaN;
energy never above the start's plus the correction bound N · ½ m v_max² (what separating
penetrating bodies at ``max_correction_speed`` may add); penetration (ground and body–body) at
most 1 mm over the last quarter of the steps (settled); every world failing a check flagged.
Writes ``stress_heap.json`` and ``stress_heap.md``. A long run is resumable: after each chunk the
checks so far are saved to ``stress_heap.partial.npz`` in the output folder (with the workload and
the git trees of ``jaxcontact/`` and this file), and a run of the same workload on the same code
starts where it stopped (never with uncommitted changes to either); the file is removed once the
run is written. ``--heap-grads K [--grad-steps 300]``
instead: gradients of K heap rollouts in float32 and float64 (``stress_heap_grads.{json,md}``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from jaxcontact.worlds.checks import SETTLED_PENETRATION

from . import common
from .common import heap_height_grad, log

CATEGORIES = ["flat_rest", "flat_yaw", "edge_touch", "corner_touch", "zero_vel", "fast", "fast_down",
              "penetrating", "extreme_speed"]


def arguments(p):
    """stress's own options (shared: ``--steps``, ``--seed``, ``--device``, ``--dtype`` of the heaps, ``--out``)."""
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--throws", type=int, default=10000, help="number of bodies")
    p.add_argument("--chunk", type=int, default=1000, help="bodies simulated at once")
    p.add_argument("--per-category", type=int, default=None,
                   help="bodies per special category (default: throws // 20)")
    p.add_argument("--fast-speed", type=float, default=50.0, help="m/s for the 'fast' categories")
    p.add_argument("--fast-spin", type=float, default=200.0, help="rad/s for the 'fast' categories")
    p.add_argument("--cone", choices=["elliptic", "box"], default=None,
                   help="LCPSettings.cone of the law (default: the law's default, the disc)")
    p.add_argument("--heaps", type=int, default=0, help="drop this many heaps of boxes instead of the box throws")
    p.add_argument("--heap-boxes", type=int, default=16)
    p.add_argument("--heap-steps", type=int, default=1000)
    p.add_argument("--heap-chunk", type=int, default=8, help="heaps simulated at once")
    p.add_argument("--heap-report-partial", action="store_true",
                   help="write the record of the heaps a resumable --heaps run has finished so far")
    p.add_argument("--heap-grads", type=int, default=0,
                   help="instead of the drops: gradients of this many heap rollouts, float32 and float64")
    p.add_argument("--grad-steps", type=int, default=300)


def _axis_angle_quat(axis, angle):
    axis = np.asarray(axis, float)
    axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    return np.concatenate([np.cos(angle / 2)[..., None], np.sin(angle / 2)[..., None] * axis], -1)


def _quat_mul(a, b):
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], -1)


def _rand_unit(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _quat_to_mat(q):
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def contact_height(quat, half=common.BOX_SIZE / 2):
    """Centre height at which the lowest corner of the box touches z = 0 exactly."""
    R = _quat_to_mat(quat)
    return half * np.abs(R[..., 2, :]).sum(-1)


def initial_states(args):
    """(numpy dict of pos/quat/vel/omega (N, ·), category index per body)."""
    import jax

    n, k = args.throws, args.per_category or max(args.throws // 20, 1)
    rng = np.random.default_rng(args.seed)
    cats, quats, heights, vels, omegas = [], [], [], [], []
    zero3 = np.zeros((k, 3))
    yaw = lambda m: _axis_angle_quat(np.tile([0.0, 0, 1], (m, 1)), rng.uniform(-np.pi, np.pi, m))

    def add(ci, q, v=zero3, w=zero3, h=None):
        cats.append(np.full(len(q), ci))
        quats.append(q)
        heights.append(contact_height(q) if h is None else h)
        vels.append(v)
        omegas.append(w)

    ident = np.tile([1.0, 0, 0, 0], (k, 1))
    add(0, ident)                                                      # flat_rest
    add(1, yaw(k))                                                     # flat_yaw
    edge = _axis_angle_quat(np.tile([1.0, 0, 0], (k, 1)), np.full(k, np.pi / 4))
    add(2, _quat_mul(yaw(k), edge))                                    # edge_touch
    corner = _axis_angle_quat(np.tile([1.0, -1.0, 0], (k, 1)), np.full(k, np.arctan(np.sqrt(2))))
    add(3, _quat_mul(yaw(k), corner))                                  # corner_touch
    q = rng.normal(size=(k, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    add(4, q, h=contact_height(q) + rng.uniform(0.1, 1.0, k))          # zero_vel
    q = rng.normal(size=(k, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    add(5, q, v=args.fast_speed * _rand_unit(rng, k), w=args.fast_spin * _rand_unit(rng, k),
        h=contact_height(q) + rng.uniform(0.1, 1.0, k))                # fast
    v = np.concatenate([rng.uniform(-1, 1, (k, 2)), np.full((k, 1), -args.fast_speed)], -1)
    add(6, ident, v=v, w=args.fast_spin * _rand_unit(rng, k))          # fast_down
    q = rng.normal(size=(k, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    add(7, q, h=contact_height(q) - 10 ** rng.uniform(-6, np.log10(5e-2), k))  # penetrating
    q = rng.normal(size=(k, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    speed = 10 ** rng.uniform(3, 20, k)
    add(8, q, v=speed[:, None] * _rand_unit(rng, k), h=contact_height(q) + rng.uniform(0.1, 1.0, k))  # extreme
    m = sum(len(c) for c in cats)
    if m > n:
        raise SystemExit(f"--throws {n} is smaller than the {m} special bodies; lower --per-category")
    from jaxcontact.states import random_throws

    rt = jax.device_get(random_throws(jax.random.PRNGKey(args.seed), n - m))
    st = {
        "pos": np.concatenate([np.stack([np.zeros(m), np.zeros(m), np.concatenate(heights)], -1), rt.pos]),
        "quat": np.concatenate(quats + [rt.quat]),
        "vel": np.concatenate(vels + [rt.vel]),
        "omega": np.concatenate(omegas + [rt.omega]),
    }
    cat = np.concatenate(cats + [np.full(n - m, len(CATEGORIES))])
    return st, cat


def make_chunk_fn(model, params, steps):
    """Jitted: batched initial State → per-body reductions of the trajectory."""
    import jax
    import jax.numpy as jnp
    import jaxcontact as jc

    g = model.gravity
    m = params.body.mass
    cap = model.law.solver.max_iter

    @jax.jit
    def reduce(states):
        traj, info = jc.batch_rollout(model, params, states, steps, output="trajectory", with_info=True)
        leaves = jax.tree_util.tree_leaves(traj) + [info.residual]
        finite = jnp.ones(states.pos.shape[0], bool)
        for x in leaves:
            finite &= jnp.all(jnp.isfinite(x.reshape(x.shape[0], -1)), axis=1)
        e = jax.vmap(jax.vmap(lambda s: jc.energy(model, params, s)))(traj)           # (B, T+1)
        pen = jax.vmap(jax.vmap(lambda s: jc.penetration(params, s)))(traj)           # (B, T+1)
        de = jnp.diff(e, axis=1)
        flags = jax.lax.reduce(info.flags, jnp.int32(0), jax.lax.bitwise_or, (1,))
        ke0 = e[:, 0] - m * g * states.pos[:, 2]
        scale = ke0 + m * g * common.BOX_SIZE + 1e-9
        in_contact = jnp.min(info.phi, -1) <= model.patch_tol
        at_cap = info.iterations >= cap
        nanmax = lambda x, ax=None: jnp.max(jnp.where(jnp.isfinite(x), x, -jnp.inf), axis=ax)
        return {
            "finite": finite,
            "max_de": nanmax(de, 1),
            "max_de_rel": nanmax(de / scale[:, None], 1),
            "max_pen": nanmax(pen, 1),
            "max_residual": nanmax(info.residual, 1),
            "cap_steps": jnp.sum(at_cap, 1),
            "contact_steps": jnp.sum(in_contact, 1),
            "cap_contact_steps": jnp.sum(at_cap & in_contact, 1),
            "mean_iterations": jnp.mean(info.iterations, 1),
            "energy_scale": scale,
            "flags": flags,
            "energy_beyond_lift": nanmax(e - (e[:, :1] + m * g * pen[:, :1]), 1),
        }

    return reduce


def throw_categories(args):
    import jax
    import jax.numpy as jnp
    import jaxcontact as jc
    from tqdm import tqdm

    info = common.machine_info("benchmarks.stress", command=args.command)
    model, params = common.box_workload(cone=args.cone)
    st, cat = initial_states(args)
    n = args.throws
    reduce = make_chunk_fn(model, params, args.steps)
    dtype = jnp.result_type(float)
    parts = []
    t0 = time.perf_counter()
    with tqdm(total=n, desc="stress", unit="body", file=sys.stderr) as bar:
        for s0 in range(0, n, args.chunk):
            sl = slice(s0, min(s0 + args.chunk, n))
            k = sl.stop - sl.start
            pad = args.chunk - k  # keep one compiled shape: pad the last chunk with copies
            take = lambda x: np.concatenate([x[sl], np.repeat(x[sl][:1], pad, 0)]) if pad else x[sl]
            states = jc.State(**{f: jnp.asarray(take(v), dtype) for f, v in st.items()})
            r = jax.device_get(reduce(states))
            parts.append({kk: np.asarray(v)[:k] for kk, v in r.items()})
            bar.update(k)
    wall = time.perf_counter() - t0
    R = {kk: np.concatenate([p[kk] for p in parts]) for kk in parts[0]}

    def summary(mask):
        i_de = int(np.argmax(np.where(mask, R["max_de"], -np.inf)))
        i_rel = int(np.argmax(np.where(mask, R["max_de_rel"], -np.inf)))
        i_pen = int(np.argmax(np.where(mask, R["max_pen"], -np.inf)))
        steps = mask.sum() * args.steps
        return {
            "bodies": int(mask.sum()),
            "nan_bodies": int((~R["finite"][mask]).sum()),
            "max_energy_gain_J": float(R["max_de"][i_de]),
            "max_energy_gain_rel": float(R["max_de_rel"][i_rel]),
            "max_penetration_m": float(R["max_pen"][i_pen]),
            "max_penetration_frac_of_size": float(R["max_pen"][i_pen] / common.BOX_SIZE),
            "max_residual": float(np.max(R["max_residual"][mask])),
            "frac_steps_at_cap": float(R["cap_steps"][mask].sum() / steps),
            "frac_contact_steps_at_cap": float(R["cap_contact_steps"][mask].sum() / max(R["contact_steps"][mask].sum(), 1)),
            "mean_iterations": float(R["mean_iterations"][mask].mean()),
            "silent_nan_bodies": int((~R["finite"][mask] & ((R["flags"][mask] & int(jc.Flags.NONFINITE)) == 0)).sum()),
            "unflagged_energy_gain_bodies": int(((R["max_de_rel"][mask] > 1e-3) & (R["flags"][mask] == 0)).sum()),
            "flagged_bodies": {fl.name.lower(): int(((R["flags"][mask] & int(fl)) != 0).sum()) for fl in jc.Flags},
            "max_energy_beyond_lift_J": float(np.max(R["energy_beyond_lift"][mask])),
            "worst_bodies": {"energy_gain": i_de, "energy_gain_rel": i_rel, "penetration": i_pen},
        }

    names = CATEGORIES + ["random"]
    out = {
        "benchmark": "stress", "machine": info,
        "workload": {"body": "box 0.1 m, 0.37 kg", "mu": common.MU, "restitution": 0.0, "dt": common.DT,
                     "steps": args.steps, "throws": n, "chunk": args.chunk, "seed": args.seed,
                     "fast_speed": args.fast_speed, "fast_spin": args.fast_spin,
                     "solver": {"tol": 1e-6, "max_iter": 100, "max_contacts": 4, "cone": model.law.solver.cone},
                     "dtype": str(np.dtype(dtype))},
        "wall_s": wall,
        "body_steps_per_s_with_diagnostics": n * args.steps / wall,
        "overall": summary(np.ones(n, bool)),
        "by_category": {nm: summary(cat == i) for i, nm in enumerate(names) if (cat == i).any()},
    }
    ordinary = [k for k in out["by_category"] if k != "extreme_speed"]
    out["pass_no_nan"] = all(out["by_category"][k]["nan_bodies"] == 0 for k in ordinary)
    out["pass_every_failure_flagged"] = (out["overall"]["silent_nan_bodies"] == 0
                                         and out["overall"]["unflagged_energy_gain_bodies"] == 0)
    return out


def heap_checks(model, scene, params, traj, infos):
    """The heap checks: ``jaxcontact.worlds.rollout_checks`` (settled penetration at most
    ``worlds.checks.SETTLED_PENETRATION``, 1 mm)."""
    from jaxcontact.worlds import rollout_checks

    return rollout_checks(model, scene, params, traj, infos)


def _code_version():
    """The git tree of the simulator and of this file (a commit that changes neither, docs say,
    keeps a partial heap run resumable); None with uncommitted changes to either (never resumed)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    git = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True)
    if git("diff", "--quiet", "HEAD", "--", "jaxcontact", "benchmarks/stress.py").returncode != 0:
        return None
    trees = [git("rev-parse", f"HEAD:{p}").stdout.strip() for p in ("jaxcontact", "benchmarks/stress.py")]
    return None if not all(trees) else "+".join(trees)


def run_heaps(args):
    import jax
    import jax.numpy as jnp
    from tqdm import tqdm

    from jaxcontact import Flags, worlds
    from jaxcontact.worlds import scenes

    info = common.machine_info("benchmarks.stress", command=args.command)
    model = worlds.model() if args.cone is None else worlds.model(law=dataclasses.replace(
        worlds.DEFAULT_LAW, solver=dataclasses.replace(worlds.DEFAULT_LAW.solver, cone=args.cone)))
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(args.dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    keys = jax.random.split(jax.random.PRNGKey(args.seed), args.heaps)
    scene, params, _ = scenes.heap(args.heap_boxes, keys[0])
    params = cast(params)
    starts = [cast(scenes.heap(args.heap_boxes, k)[2]) for k in keys]

    @jax.jit
    def chunk(states):
        traj, infos = worlds.batch_rollout(model, scene, params, states, args.heap_steps)
        return heap_checks(model, scene, params, traj, infos)

    # resumable: the checks so far, saved after each chunk, for this workload at this commit
    partial = Path(args.out) / "stress_heap.partial.npz"
    tag = json.dumps({"heaps": args.heaps, "boxes": args.heap_boxes, "steps": args.heap_steps, "chunk": args.heap_chunk,
                      "seed": args.seed, "dtype": args.dtype, "code": _code_version()}, sort_keys=True)
    parts, wall_before, resumed = [], 0.0, 0
    if partial.exists():
        with np.load(partial) as f:
            if str(f["tag"]) == tag and json.loads(tag)["code"] is not None:
                done = {kk[2:]: f[kk] for kk in f.files if kk.startswith("r_")}
                parts, wall_before, resumed = [done], float(f["wall_s"]), len(f["r_finite"])
                log(f"resuming after {resumed} heaps from {partial}")
            else:
                log(f"ignoring {partial}: another workload, other code, or uncommitted changes")
    t0 = time.perf_counter()
    with tqdm(total=args.heaps, initial=resumed, desc="heaps", unit="heap", file=sys.stderr) as bar:
        for c0 in range(resumed, args.heaps, args.heap_chunk):
            sel = starts[c0:c0 + args.heap_chunk]
            k = len(sel)
            sel = sel + [sel[0]] * (args.heap_chunk - k)  # one compiled shape
            states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *sel)
            r = jax.device_get(chunk(states))
            parts.append({kk: np.asarray(v)[:k] for kk, v in r.items()})
            so_far = {kk: np.concatenate([p[kk] for p in parts]) for kk in parts[0]}
            np.savez(partial, tag=np.array(tag), wall_s=np.array(wall_before + time.perf_counter() - t0),
                     **{f"r_{kk}": v for kk, v in so_far.items()})
            bar.update(k)
    wall = wall_before + time.perf_counter() - t0
    R = {kk: np.concatenate([p[kk] for p in parts]) for kk in parts[0]}
    out = heap_summary(args, info, model.dt, scene.max_pairs, repr(model.law.solver), R, wall)
    out["resumed_after_heaps"] = resumed
    return out


def heap_summary(args, info, dt, max_pairs, law, R, wall):
    """The run's record from the per-world checks ``R`` (``heap_checks``' fields, concatenated)."""
    from jaxcontact import Flags

    out = {
        "benchmark": "stress_heap", "machine": info,
        "workload": {"heaps": len(R["finite"]), "boxes": args.heap_boxes, "steps": args.heap_steps, "dt": dt,
                     "chunk": args.heap_chunk, "seed": args.seed, "dtype": args.dtype, "mu": 0.5, "restitution": 0.0,
                     "max_pairs": max_pairs, "law": law},
        "wall_s": wall, "box_steps_per_s": len(R["finite"]) * args.heap_boxes * args.heap_steps / wall,
        "nan_worlds": int((~R["finite"]).sum()),
        "energy_above_bound_worlds": int((R["energy_gain_J"] > R["bound_J"]).sum()),
        "max_energy_gain_J": float(R["energy_gain_J"].max()), "energy_bound_J": float(R["bound_J"].max()),
        "settled_penetration_above_1mm_worlds": int((R["settled_penetration_m"] > SETTLED_PENETRATION).sum()),
        "max_settled_penetration_m": float(R["settled_penetration_m"].max()),
        "median_settled_penetration_m": float(np.median(R["settled_penetration_m"])),
        "max_penetration_m": float(R["max_penetration_m"].max()),
        "failed_worlds": int(R["failed"].sum()), "unflagged_failed_worlds": int(R["unflagged"].sum()),
        "flagged_worlds": {fl.name.lower(): int(((R["flags"] & int(fl)) != 0).sum()) for fl in Flags},
        "mean_sweeps": float(R["mean_sweeps"].mean()), "solver_flagged_steps": int(R["solver_steps"].sum()),
        "final_com_height_m": {"mean": float(R["final_com_height_m"].mean()),
                               "std": float(R["final_com_height_m"].std())},
    }
    out["pass"] = (out["nan_worlds"] == 0 and out["energy_above_bound_worlds"] == 0
                   and out["settled_penetration_above_1mm_worlds"] == 0 and out["unflagged_failed_worlds"] == 0)
    return out


def report_partial(args):
    """``--heap-report-partial``: the record of the heaps a resumable run has finished so far (its
    ``stress_heap.partial.npz``, this workload), as ``stress_heap_partial.json``/``.md``."""
    from jaxcontact.worlds import scenes

    partial = Path(args.out) / "stress_heap.partial.npz"
    with np.load(partial) as f:
        tag = json.loads(str(f["tag"]))
        R = {kk[2:]: f[kk] for kk in f.files if kk.startswith("r_")}
        wall = float(f["wall_s"])
    want = {"heaps": args.heaps, "boxes": args.heap_boxes, "steps": args.heap_steps, "chunk": args.heap_chunk,
            "seed": args.seed, "dtype": args.dtype}
    for k, v in want.items():
        if tag[k] != v:
            raise SystemExit(f"{partial} is of another workload: {k} {tag[k]!r}, not {v!r}")
    scene, _, _ = scenes.heap(args.heap_boxes)
    from jaxcontact import worlds

    model = worlds.model()
    out = heap_summary(args, common.machine_info("benchmarks.stress", command=args.command), model.dt, scene.max_pairs,
                       repr(model.law.solver), R, wall)
    out["partial"] = {"done": len(R["finite"]), "of": args.heaps, "code": tag["code"]}
    return out


def run_heap_grads(args):
    """d(final centre-of-mass height)/d(initial velocities) of ``--heap-grads`` heap rollouts of
    ``--grad-steps`` steps (the drops and first impacts), in float32 and float64: how many are
    finite, and their size."""
    import jax

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    info = common.machine_info("benchmarks.stress", command=args.command)
    model = worlds.model() if args.cone is None else worlds.model(law=dataclasses.replace(
        worlds.DEFAULT_LAW, solver=dataclasses.replace(worlds.DEFAULT_LAW.solver, cone=args.cone)))
    keys = jax.random.split(jax.random.PRNGKey(args.seed + 1), args.heap_grads)
    out = {"benchmark": "stress_heap_grads", "machine": info,
           "workload": {"heaps": args.heap_grads, "boxes": args.heap_boxes, "steps": args.grad_steps,
                        "seed": args.seed + 1, "of": "d mean(final z) / d initial velocities (N, 3)"}}
    for dtype in ("float32", "float64"):
        cast = lambda t: common.cast_floats(t, dtype)
        scene, params, _ = scenes.heap(args.heap_boxes, keys[0])
        params = cast(params)

        grad = jax.jit(heap_height_grad(model, scene, params, args.grad_steps))

        t0 = time.perf_counter()
        norms, finite = [], []
        for k in keys:
            g = np.asarray(grad(cast(scenes.heap(args.heap_boxes, k)[2])))
            finite.append(bool(np.all(np.isfinite(g))))
            norms.append(float(np.linalg.norm(g)) if finite[-1] else float("nan"))
            log(dtype, len(finite), finite[-1], norms[-1])
        out[dtype] = {"finite": int(sum(finite)), "of": len(finite), "wall_s": time.perf_counter() - t0,
                      "grad_norm": {"median": float(np.nanmedian(norms)) if any(finite) else None,
                                    "max": float(np.nanmax(norms)) if any(finite) else None}}
    return out


def markdown_heap_grads(out) -> str:
    w = out["workload"]
    rows = [[d, f"{out[d]['finite']} of {out[d]['of']}", common.fmt(out[d]["grad_norm"]["median"]),
             common.fmt(out[d]["grad_norm"]["max"]), f"{out[d]['wall_s']:.0f}"] for d in ("float32", "float64")]
    return "\n".join([
        f"# Gradients through {w['heaps']} heap rollouts of {w['boxes']} boxes", "",
        common.md_machine(out["machine"]), "",
        f"{w['of']} over {w['steps']} steps (the fall and the first impacts), keys from seed {w['seed']}, "
        "`jax.grad` through `worlds.rollout` (implicit derivative of every contact solve).", "",
        common.md_table(["dtype", "finite", "median ‖g‖", "max ‖g‖", "wall (s)"], rows), ""])


def markdown_heaps(out) -> str:
    f = common.fmt
    w = out["workload"]
    rows = [["worlds with a NaN", out["nan_worlds"], "0"],
            ["worlds whose energy rose above the start's + bound", out["energy_above_bound_worlds"],
             f"0 (bound {f(out['energy_bound_J'])} J; largest rise {f(out['max_energy_gain_J'])} J)"],
            ["worlds penetrating > 1 mm once settled (last quarter)", out["settled_penetration_above_1mm_worlds"],
             f"0 (deepest {f(out['max_settled_penetration_m'])} m, median {f(out['median_settled_penetration_m'])} m)"],
            ["worlds failing a check without a flag", out["unflagged_failed_worlds"], "0"]]
    fl = ", ".join(f"{k} {v}" for k, v in out["flagged_worlds"].items())
    return "\n".join([
        f"# jaxcontact stress test: {w['heaps']} heaps of {w['boxes']} boxes"
        + (f" (the first {out['partial']['done']} of a {out['partial']['of']}-heap run, not finished)" if "partial" in out else ""), "",
        common.md_machine(out["machine"]), "",
        f"Workload: `jaxcontact.worlds.scenes.heap({w['boxes']}, key)` for {w['heaps']} keys from seed {w['seed']} "
        f"(random orientations, velocities 0.2 m/s rms, from a loose grid 0.3 m up), μ {w['mu']}, ε {w['restitution']}, "
        f"h {w['dt']} s, {w['steps']} steps, {w['dtype']}, the default world law ({w['law']}), broad phase "
        f"max_pairs {w['max_pairs']}; {w['chunk']} worlds at once. Wall {out['wall_s']:.0f} s "
        f"({out['box_steps_per_s']:.0f} box-steps/s with the checks). **{'PASS' if out['pass'] else 'FAIL'}**", "",
        common.md_table(["check", "worlds", "target"], rows), "",
        f"Worlds raising each flag (any step): {fl}. Steps flagged SOLVER: {out['solver_flagged_steps']}; "
        f"mean sweeps per step {out['mean_sweeps']:.1f}. Deepest penetration at any step (impacts, before "
        f"settling): {f(out['max_penetration_m'])} m. Final centre-of-mass height: "
        f"{out['final_com_height_m']['mean']:.4f} ± {out['final_com_height_m']['std']:.4f} m.", ""])


def markdown(out) -> str:
    import jaxcontact as jc

    f = common.fmt
    hdr = ["category", "bodies", "NaN bodies", "silent NaN", "max ΔE/step (J)", "max ΔE/step rel.",
           "E beyond lift (J)", "max penetration (m)", "penetration / size", "max residual (m/s)", "steps at cap",
           "contact steps at cap", "mean sweeps"]
    row = lambda nm, s: [nm, s["bodies"], s["nan_bodies"], s["silent_nan_bodies"], f(s["max_energy_gain_J"]),
                         f(s["max_energy_gain_rel"]), f(s["max_energy_beyond_lift_J"]),
                         f(s["max_penetration_m"]), f(s["max_penetration_frac_of_size"]), f(s["max_residual"]),
                         f(s["frac_steps_at_cap"]), f(s["frac_contact_steps_at_cap"]), f(s["mean_iterations"])]
    rows = [row("**all**", out["overall"])] + [row(k, v) for k, v in out["by_category"].items()]
    names = [fl.name.lower() for fl in jc.Flags]
    fhdr = ["category", "bodies"] + [f"flag {n}" for n in names] + ["silent NaN", "unflagged energy gain"]
    frow = lambda nm, s: ([nm, s["bodies"]] + [s["flagged_bodies"][n] for n in names]
                          + [s["silent_nan_bodies"], s["unflagged_energy_gain_bodies"]])
    frows = [frow("**all**", out["overall"])] + [frow(k, v) for k, v in out["by_category"].items()]
    w = out["workload"]
    return "\n".join([
        "# jaxcontact stress test (box throws, degenerate and extreme states)", "",
        common.md_machine(out["machine"]), "",
        f"Workload: {w['body']}, μ {w['mu']}, h {w['dt']} s, {w['steps']} steps, {w['throws']} bodies in chunks of "
        f"{w['chunk']}, PGS tol 1e-6 / cap 100, max_contacts 4, cone {w['solver'].get('cone', 'box')}, {w['dtype']}; "
        f"'fast' = {w['fast_speed']} m/s and "
        f"{w['fast_spin']} rad/s. Wall time {out['wall_s']:.1f} s "
        f"({f(out['body_steps_per_s_with_diagnostics'])} body-steps/s including trajectory diagnostics).", "",
        f"**NaN bodies outside extreme_speed: "
        f"{sum(v['nan_bodies'] for k, v in out['by_category'].items() if k != 'extreme_speed')}** "
        f"({'pass' if out['pass_no_nan'] else 'FAIL'}); **silent NaN: {out['overall']['silent_nan_bodies']}, "
        f"unflagged energy gains: {out['overall']['unflagged_energy_gain_bodies']}** "
        f"({'pass' if out['pass_every_failure_flagged'] else 'FAIL'}: every failure flagged).", "",
        common.md_table(hdr, rows), "",
        "Bodies that raised each flag (`ContactInfo.flags`, OR over the steps):", "",
        common.md_table(fhdr, frows), "",
        "- ΔE/step: max over bodies and steps of E_{k+1} − E_k (kinetic + potential, jc.energy); "
        "rel. = divided by the body's scale KE_0 + m g · 0.1 m.",
        "- Penetration: max over bodies and steps of jc.penetration (deepest vertex below the ground).",
        "- Residual: PGS natural-map residual (m/s); 'at cap' = solves that used all 100 sweeps.",
        "- E beyond lift: max over steps of E_k − (E_0 + m g d_0), d_0 the start penetration; bounded by "
        "½ m max_correction_speed² = 7.4e-05 J for a body separated from a penetration.",
        "- extreme_speed bodies are expected to fail at the top of the range (float32 overflows); the requirement "
        "is that each failure is flagged.",
        "",
    ])


def run(args, results):
    """``python -m benchmarks stress``: the throws into ``results`` (``stress.json``, ``.md``); ``--heaps`` into
    ``<name>_heap``, ``--heap-grads`` into ``<name>_heap_grads`` (the runner chose the device)."""
    if args.heap_grads or args.heaps:
        import jax

        jax.config.update("jax_enable_x64", True)
    if args.heap_grads:
        out, tag, md = run_heap_grads(args), "heap_grads", markdown_heap_grads
    elif args.heaps and args.heap_report_partial:
        out, tag, md = report_partial(args), "heap_partial", markdown_heaps
    elif args.heaps:
        out, tag, md = run_heaps(args), "heap", markdown_heaps
    else:
        out, tag, md = throw_categories(args), "", markdown
    results = results.tagged(tag)
    results.write(out, md(out))
    if tag == "heap":
        (results.folder / "stress_heap.partial.npz").unlink(missing_ok=True)
    print(json.dumps(out, default=common.json_default) if args.json else md(out))
    log(f"wrote {results.json} and {results.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
