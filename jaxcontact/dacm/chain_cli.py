"""``jaxcontact dacm chain``: Algorithm 2 on the paper's 3-link chain against the ground truth.

    jaxcontact --x64 dacm chain --checkpoint CKPT --json [--steps 500 --swings 8 --seed 0]

The chain (``chains.make_chain``: three 0.2 × 0.05 × 0.05 m links, the ``link`` shape of the
dacm data, pinned ``--pin-height`` above the ground) is released from horizontal (swing 0, the
paper's experiment) and, for ``--swings`` > 1, from random nearby configurations (joint angles
±0.3 rad, joint rates ±1 rad/s, seeded). Each swing is simulated by the ground truth (joints
and Coulomb contact of every link in one LCP, ``chains.rollout``) and by Algorithm 2 with the
distal link's contact law H = the checkpoint's ``DACMLaw`` (trained on the isolated link only)
and, as a reference for the split itself, H = the exact Coulomb LCP of the distal link
(``--pdd`` adds the checkpoint's PDD regressor as H). All rollouts are vmapped over swings.

Reported (state units: rad, m, N·s): joint-angle error (mean over steps, joints and swings;
at first contact + 50 steps; final), distal-link position and orientation error (mean, final),
first contact impulse error (‖P − P_GT‖ of the linear impulse at each rollout's first step with a
distal contact impulse), G evaluations per step (mean, worst), converged fraction and the
failed steps, and the ground truth's smallest upstream clearance (the split assumes the
upstream links never touch the ground).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time

import numpy as np

HORIZON = 50  # steps after the GT first contact for the short-horizon errors


def _log(*a):
    print(*a, file=sys.stderr, flush=True)


def initial_states(params, swings: int, seed: int):
    """Swing 0: horizontal at rest. Others: joint angles ±0.3 rad, rates ±1 rad/s around it."""
    import jax
    import jax.numpy as jnp

    from ..chains import planar_state

    n = params.num_links
    rng = np.random.default_rng(seed)
    ang = np.zeros((swings, n))
    rate = np.zeros((swings, n))
    ang[1:] = rng.uniform(-0.3, 0.3, (swings - 1, n))
    rate[1:] = rng.uniform(-1.0, 1.0, (swings - 1, n))
    return jax.vmap(lambda a, r: planar_state(params, a, r))(jnp.asarray(ang), jnp.asarray(rate))


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def _first_contact(imp):
    """(B, T, 6) impulses → first step index with a non-zero linear impulse (T if none)."""
    lin = np.linalg.norm(imp[..., :3], axis=-1)
    has = lin > 1e-9
    return np.where(has.any(1), has.argmax(1), imp.shape[1])


def trajectory_errors(params, gt, gi, traj, infos, steps):
    """Errors of one model's trajectories (B, T+1, n, …) against the ground truth's."""
    from ..chains import joint_angles
    from ..rotations import quat_angle_between

    ag, am = np.asarray(joint_angles(params, gt)), np.asarray(joint_angles(params, traj))
    ea = np.abs(_wrap(am - ag))  # (B, T+1, n)
    ep = np.linalg.norm(np.asarray(traj.pos[:, :, -1] - gt.pos[:, :, -1]), axis=-1)  # (B, T+1)
    eo = np.asarray(quat_angle_between(traj.quat[:, :, -1], gt.quat[:, :, -1]))
    fc_gt = _first_contact(np.asarray(gi.impulse[:, :, -1]))
    fc_m = _first_contact(np.asarray(infos.contact_impulse))
    B = ag.shape[0]
    h = np.minimum(fc_gt + HORIZON, steps)
    imp_err, imp_dt = [], []
    for b in range(B):
        if fc_gt[b] < steps and fc_m[b] < steps:
            pg = np.asarray(gi.impulse[b, fc_gt[b], -1, :3])
            pm = np.asarray(infos.contact_impulse[b, fc_m[b], :3])
            imp_err.append(float(np.linalg.norm(pm - pg)))
            imp_dt.append(int(fc_m[b] - fc_gt[b]))
    ev = np.asarray(infos.evaluations)
    cv = np.asarray(infos.converged)
    # a swing diverged if its state became non-finite or flew away (> 10 m from the ground truth)
    div = ~(np.isfinite(ea).all(axis=(1, 2)) & np.isfinite(ep).all(axis=1) & (np.nan_to_num(ep, nan=1e9).max(axis=1) < 10.0))
    ok = ~div
    failed = [[int(b), int(t)] for b, t in zip(*np.where(~cv))]
    mean = lambda x: float(np.mean(x[ok])) if ok.any() else None
    at_h = lambda e: np.array([e[b, h[b]].mean() for b in range(B)])
    return {
        "joint_angle_error_mean": mean(ea.mean(axis=(1, 2))),
        "joint_angle_error_at_first_contact_plus_50": mean(at_h(ea)),
        "joint_angle_error_final": mean(ea[:, -1].mean(axis=1)),
        "distal_position_error_mean": mean(ep.mean(axis=1)),
        "distal_position_error_at_first_contact_plus_50": mean(at_h(ep)),
        "distal_position_error_final": mean(ep[:, -1]),
        "distal_orientation_error_mean": mean(eo.mean(axis=1)),
        "distal_orientation_error_final": mean(eo[:, -1]),
        "first_contact_impulse_error": float(np.mean(imp_err)) if imp_err else None,
        "first_contact_step_offset": imp_dt,
        "g_evaluations_mean": float(ev.mean()),
        "g_evaluations_worst": int(ev.max()),
        "g_evaluations_mean_contact_steps": float(ev[np.linalg.norm(np.asarray(infos.contact_impulse), axis=-1) > 0].mean())
        if np.any(np.linalg.norm(np.asarray(infos.contact_impulse), axis=-1) > 0) else None,
        "converged_fraction": float(cv.mean()),
        "failed_steps": len(failed),
        "failed_first": failed[:20],
        "diverged_swings": int(div.sum()),
        "note": "trajectory-error means are over the swings that did not diverge",
    }


def evaluate_chain(checkpoint, steps: int = 500, swings: int = 8, seed: int = 0, pin_height: float = 0.45,
                   init: str = "free", dissipative: bool = False, pdd: bool = False, reference: bool = True,
                   log=_log) -> dict:
    """Everything ``jaxcontact dacm chain`` reports, as a dict (see module docstring).

    The dacm law is the checkpoint's (``train.load_checkpoint``: its inputs and friction target
    come from the checkpoint's meta), with ``dissipative`` the law setting of ``dacm evaluate
    --dissipative``. ``reference=False`` skips the exact-Coulomb H (for ablations)."""
    import jax

    from .. import chains as C
    from ..laws import CoulombLCP
    from . import train as T
    from .chain import RootSettings, batch_split_rollout

    if steps < 1 or swings < 1:
        raise ValueError("--steps and --swings must be >= 1")
    dl, dp, pl, pp, meta = T.load_checkpoint(checkpoint)
    from ..checkpoint import status_warning

    warning = status_warning(checkpoint, meta)
    if warning:
        log(warning)
    if str(meta.get("shape")) != "link" or int(meta.get("dim", 3)) != 3:
        raise ValueError(f"{checkpoint}: trained on shape {meta.get('shape')!r}; the chain's distal link needs a "
                         "checkpoint trained on the isolated 'link' (jaxcontact dacm generate --shape link)")
    if dissipative:
        dl = dataclasses.replace(dl, dissipative=True)
    cmodel = C.ChainModel()
    params = C.make_chain(pin=(0.0, 0.0, pin_height))
    mu = np.asarray(meta.get("mu", [0.18, 0.18]), float)
    params = params.replace(law=CoulombLCP.init_params(mu=mu[0], mu2=mu[1]))
    s0 = initial_states(params, swings, seed)
    settings = RootSettings(init=init)
    t0 = time.perf_counter()
    gt, gi = C.batch_rollout(cmodel, params, s0, steps)
    jax.block_until_ready(gt)
    t_gt = time.perf_counter() - t0
    log(f"ground truth: {swings} swings x {steps} steps ({t_gt:.1f} s incl. compile)")
    low = np.asarray(jax.vmap(jax.vmap(lambda s: C.lowest_point(params, s)))(gt))  # (B, T+1, n)
    res = {
        "checkpoint": str(checkpoint), "steps": steps, "dt": cmodel.dt, "swings": swings, "seed": seed,
        "pin_height": pin_height, "links": params.num_links, "link_size": [0.2, 0.05, 0.05],
        "link_mass": float(params.links.mass[-1]), "mu": mu.tolist(), "root_init": init,
        "root_rtol": settings.rtol, "dissipative": dissipative, "friction_target": meta.get("friction_target"),
        "inputs": dl.inputs,
        "ground_truth": {
            "upstream_min_clearance": float(low[:, :, :-1].min()),
            "swings_with_upstream_contact": int((low[:, :, :-1].min(axis=(1, 2)) <= cmodel.patch_tol).sum()),
            "distal_contact_steps_fraction": float(np.mean(np.linalg.norm(np.asarray(gi.impulse[:, :, -1, :3]), axis=-1) > 0)),
            "first_contact_step": _first_contact(np.asarray(gi.impulse[:, :, -1])).tolist(),
            "first_contact_impulse_mean": float(np.mean([np.linalg.norm(np.asarray(gi.impulse[b, k, -1, :3]))
                                                         for b, k in enumerate(_first_contact(np.asarray(gi.impulse[:, :, -1])))
                                                         if k < steps] or [np.nan])),
            "max_joint_separation": float(np.max(np.asarray(jax.vmap(jax.vmap(lambda s: C.joint_separation(params, s)))(gt)))),
            "seconds": round(t_gt, 1),
        },
        "models": {},
    }
    laws = ([("exact_coulomb", cmodel.law, params.law)] if reference else []) + [("dacm", dl, dp)]
    if pdd:
        laws.append(("pdd", pl, pp))
    for name, law, lp in laws:
        t0 = time.perf_counter()
        traj, infos = batch_split_rollout(cmodel, law, params, lp, s0, steps, settings)
        jax.block_until_ready(traj)
        r = trajectory_errors(params, gt, gi, traj, infos, steps)
        r["seconds"] = round(time.perf_counter() - t0, 1)
        res["models"][name] = r
        log(f"{name}: joint angle err {r['joint_angle_error_mean']:.4f} rad, G evals {r['g_evaluations_mean']:.2f} "
            f"(worst {r['g_evaluations_worst']}), converged {100 * r['converged_fraction']:.2f} % ({r['seconds']} s)")
        if r["failed_steps"]:
            log(f"WARNING: {name}: root finding failed to converge in {r['failed_steps']} steps "
                f"(swing, step): {r['failed_first']} — the best joint force found was used there")
    return res


# numbers per swing and step that dacm chain keeps: the ground truth and up to three models'
# trajectories (two links of 13 numbers) with their contact infos, and their joined copies
CHAIN_NUMBERS_PER_STEP = 4 * 2 * (2 * 13 + 2 * 12)


def run_chain(args) -> int:
    import jax

    # float64 always (as ``jaxcontact --x64``): in float32 the split with the exact Coulomb law ends
    # 0.18 rad (mean joint angle) off the float32 ground truth on the default swings, against
    # 0.0006 rad in float64 (docs/chains.md), which would hide the contact model's error.
    jax.config.update("jax_enable_x64", True)
    from ..cliargs import check_memory

    check_memory(args.swings * (args.steps + 1) * CHAIN_NUMBERS_PER_STEP * 8,
                 f"dacm chain --swings {args.swings} --steps {args.steps}", "use fewer --swings or --steps")
    res = evaluate_chain(args.checkpoint, args.steps, args.swings, args.seed, args.pin_height, args.init,
                         args.dissipative, args.pdd)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        keys = ("joint_angle_error_mean", "joint_angle_error_at_first_contact_plus_50", "distal_position_error_mean",
                "distal_position_error_final", "distal_orientation_error_mean", "first_contact_impulse_error",
                "g_evaluations_mean", "g_evaluations_worst", "converged_fraction")
        names = list(res["models"])
        print(f"{'metric':<46}" + "".join(f"{n:>16}" for n in names))
        for k in keys:
            vals = [res["models"][n][k] for n in names]
            print(f"{k:<46}" + "".join(f"{v:>16.4f}" if v is not None else f"{'-':>16}" for v in vals))
        print("ground truth:", {k: v for k, v in res["ground_truth"].items() if k != "first_contact_step"})
    failed = sum(m["failed_steps"] for m in res["models"].values())
    return 3 if failed and args.strict else 0


def register_chain(dacm_subparsers) -> None:
    """Add ``chain`` to the ``jaxcontact dacm`` sub-commands."""
    from ..cliargs import nonnegative_int, positive_float, positive_int, seed

    c = dacm_subparsers.add_parser("chain", help="Algorithm 2: the 3-link chain with a dacm distal link vs ground truth",
                                   description="Runs in float64 whether or not --x64 is given (in float32 the "
                                               "split is far off the ground truth even with the exact law).")
    c.add_argument("--checkpoint", required=True, help="dacm checkpoint trained on the isolated 'link' shape")
    c.add_argument("--steps", type=positive_int, default=500, help="time steps per swing (steps of 2 ms; default 500 = 1 s)")
    c.add_argument("--swings", type=positive_int, default=8, help="number of swings; swing 0 = released from horizontal, others random nearby (swings)")
    c.add_argument("--seed", type=seed, default=0, help="seed of the random initial swings (integer)")
    c.add_argument("--pin-height", type=positive_float, default=0.45, help="height of the root pin above the ground (m)")
    c.add_argument("--init", choices=("free", "eq7"), default="free",
                   help="initial joint force: root of G without contact (default) or the paper's eq. 7")
    c.add_argument("--dissipative", action="store_true",
                   help="dacm friction may not add kinetic energy (law setting, as dacm evaluate --dissipative)")
    c.add_argument("--pdd", action="store_true", help="also run the PDD baseline as H")
    c.add_argument("--strict", action="store_true", help="exit with status 3 if any step failed to converge")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=run_chain)
    from .chain_data import register_chain_data

    register_chain_data(dacm_subparsers)
