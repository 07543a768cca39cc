"""Does fine-tuning a trained ContactNets polytope on short rollout windows help its full rollouts?

    python -m studies.contactnets finetune polytope_32_s0 [...] [--work DIR]

For each polytope checkpoint (trained by ``python -m studies.contactnets study``; names are looked up
in ``--work``, default ``work/contactnets``): the learned parameters
(vertices, ground normal, friction-scaled tangents) are fitted further to windowed rollouts of the
checkpoint's own *training* tosses through the differentiable LCP law (``sysid.losses.WindowLoss``:
each window starts from an observed state), two ways:

* ``lm`` — Levenberg–Marquardt (``sysid.optim``), 4-sample windows, 15 iterations (as the LCP
  baseline's fit, whose windows these are);
* ``adam`` — optax Adam (lr 3e-3, 200 steps of 64 random 8-sample windows), keeping the parameters
  whose rollouts of the checkpoint's *validation* tosses score best (position error + rotation
  error in radians), checked every 25 steps.

Reports eq. 18–19 on the study's 48 test tosses before and after. Writes
studies/contactnets/results/contactnets_rollout_finetune.json (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ..common import command_line, in_work
from .common import RESULTS, WORK, cube_test_split, cube_tosses_path


def main(argv=None, prog="studies.contactnets finetune") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoints", nargs="+", help="polytope checkpoints of the study (names are looked up in --work)")
    ap.add_argument("--work", default=WORK, help="the study's --work directory (default %(default)s)")
    ap.add_argument("--data", default=str(cube_tosses_path()))
    ap.add_argument("--out", default=str(RESULTS / "contactnets_rollout_finetune.json"))
    args = ap.parse_args(argv)
    checkpoints = [str(in_work(c, args.work)) for c in args.checkpoints]

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import optax
    from jax.flatten_util import ravel_pytree

    from jaxcontact import sysid
    from jaxcontact.contactnets.data import load_tosses
    from jaxcontact.contactnets.evaluate import metrics, rollout_tosses
    from jaxcontact.contactnets.train import load_checkpoint, sim_model_params
    from jaxcontact.sysid import losses, optim

    data = load_tosses(args.data)
    test, _ = cube_test_split(data)  # the study's test set
    ids = {int(i): k for k, i in enumerate(data.toss_ids)}
    out = {"command": command_line(prog, argv), "runs": []}
    for ck in checkpoints:
        meta, theta = load_checkpoint(ck)
        if meta["variant"] != "polytope":
            raise ValueError(f"{ck}: a polytope checkpoint is needed, got {meta['variant']}")
        tr = data.subset([ids[i] for i in meta["train_toss_ids"]])
        va = data.subset([ids[i] for i in meta["val_toss_ids"]])
        model, params = sim_model_params(meta, theta)
        x0, unrav = ravel_pytree(theta)
        unpack = lambda x: params.replace(law=unrav(jnp.asarray(x)))  # noqa: E731

        def evaluate(x, d):
            m = metrics(rollout_tosses(model, unpack(x), d), d)
            return {"pos_error": m["pos_error"], "rot_error_deg": m["rot_error_deg"], "penetration": m["penetration"]}

        traj = sysid.Trajectories(trajs=list(tr.states), dt=tr.dt, gravity=tr.gravity, mass=tr.mass,
                                  inertia=tr.inertia, vertices=tr.vertices, source=tr.source)
        _, true_params = sim_model_params(dict(meta, variant="lcp", lcp={"mu": 0.3, "restitution": 0.0, "ground": 0.0}), None)

        def windows(window, stride):
            w, _ = losses.make_windows(traj, window, stride)
            return jnp.asarray(w[losses.contact_windows(w, true_params, 1.0)])  # near the table only

        run = {"checkpoint": str(ck), "n_tosses": meta["n_tosses"], "seed": meta["seed"],
               "before": {"test": evaluate(x0, test), "val": evaluate(x0, va)}}
        # Levenberg–Marquardt on 4-sample windows (the LCP baseline's windows and stride)
        t0 = time.perf_counter()
        w4 = windows(4, 4 * max(1, int(np.ceil(tr.n_tosses / 16))))
        wl = losses.WindowLoss(model=model, window=4, substeps=1, rot_scale=1.0)
        wts = jnp.full((w4.shape[0],), 1.0 / np.sqrt(w4.shape[0] * 24))
        d0 = jnp.zeros((w4.shape[0], 0))

        def res_jac(x):
            r, Jx, _ = losses.jacobian(wl, unpack, jnp.asarray(x), d0, w4, wts)
            return r, np.asarray(Jx).reshape(-1, x0.size)

        def res(x):
            return losses.residuals(wl, unpack, jnp.asarray(x), d0, w4, wts)

        lm = optim.levenberg_marquardt(res_jac, res, np.asarray(x0), max_iter=15, lam0=1e-8)
        run["lm"] = {"windows": int(w4.shape[0]), "loss_before": float(lm.history[0]["loss"]), "loss_after": lm.loss,
                     "test": evaluate(lm.x, test), "val": evaluate(lm.x, va), "time_s": time.perf_counter() - t0}
        # Adam on 8-sample windows, parameters chosen by validation-toss rollouts
        t0 = time.perf_counter()
        w8 = windows(8, 2)
        wl8 = losses.WindowLoss(model=model, window=8, substeps=1, rot_scale=1.0)

        @jax.jit
        def loss_grad(x, w):
            f = lambda x: jnp.mean(jnp.sum(jax.vmap(  # noqa: E731
                lambda ww: wl8.window_residual(unpack(x), ww, jnp.zeros(0)))(w) ** 2, axis=(1, 2)))
            return jax.value_and_grad(f)(x)

        tx = optax.adam(3e-3)
        x, st, rng = x0, tx.init(x0), np.random.default_rng(0)
        v = evaluate(x0, va)
        best = (v["pos_error"] + np.radians(v["rot_error_deg"]), 0, x0)
        for k in range(1, 201):
            _, g = loss_grad(x, w8[rng.choice(w8.shape[0], 64)])
            u, st = tx.update(g, st)
            x = optax.apply_updates(x, u)
            if k % 25 == 0:
                v = evaluate(x, va)
                s = v["pos_error"] + np.radians(v["rot_error_deg"])
                if s < best[0]:
                    best = (s, k, x)
        run["adam"] = {"windows": int(w8.shape[0]), "selected_step": best[1], "test": evaluate(best[2], test),
                       "val": evaluate(best[2], va), "time_s": time.perf_counter() - t0}
        out["runs"].append(run)
        f = lambda m: f"{m['pos_error']:.3f} / {m['rot_error_deg']:.1f}°"  # noqa: E731
        print(f"{ck}: test before {f(run['before']['test'])}, lm {f(run['lm']['test'])}, adam {f(run['adam']['test'])} "
              f"(step {best[1]})", flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0

