"""Billiards with boxes: choose a pusher box's initial velocity by gradient so that the box it
strikes comes to rest at a target.

    python -m studies.worlds [--seed 1] [--starts 20] [--optimizer adam|sgd] [--lr 0.05] [--iters 100]
                             [--out studies/worlds/results/billiards]

Two 0.1 m, 0.37 kg boxes on the ground (μ = 0.3 everywhere, ε = 0.5), the pusher at the origin and
the struck box 0.15 m ahead along x, both at rest but the pusher. The pusher's initial horizontal
velocity v = (vx, vy) starts at random (vx ~ U(1, 3) m/s, vy ~ U(−0.3, 0.3) m/s) and is fitted by
Adam on the squared distance between the struck box's position after 1 s (500 steps, at rest by
then) and the target, the gradient taken through the rollout (body–body impact, friction, the
ground) by ``jax.grad`` with the solver's implicit derivative. Success: within 1 cm of the target.

The target is on the line of centres: a face-on hit transfers almost no lateral momentum (the
friction of a 1-step impact acting through four redundant face contacts, docs/worlds.md), so a
lateral target is not reachable from these starts; say so rather than report it as a failure of
the gradient. Settings (Adam 0.05, 100 iterations) were chosen on seed 0; the report is seed 1.

``--optimizer sgd`` is plain gradient descent (``--lr 2 --iters 10``, also chosen on seed 0): the
struck box's rest position is close to quadratic in vx, so a fixed step converges in a few
iterations where Adam's steps of about lr oscillate around the optimum for tens of them.
The task itself (world, objective, starts, the optimiser loop) is ``jaxcontact.worlds.billiards``,
shared with ``notebooks/worlds.ipynb``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from jaxcontact.worlds import billiards

from ..common import command_line, write_results


def run(seed: int, starts: int, iters: int, lr: float, target_xy=billiards.TARGET, optimizer: str = "adam"):
    """Fit each start alone (the rows keep each start's wall time); ``jaxcontact.worlds.billiards``
    holds the world, the objective, the starts and the optimiser loop."""
    import jax

    jax.config.update("jax_enable_x64", True)
    vg = billiards.objective(*billiards.world(), target=target_xy)
    rows = []
    for i, v0 in enumerate(billiards.starts(seed, starts)):
        t0 = time.perf_counter()
        v, err0, err = billiards.fit(vg, v0[None], iters, lr, optimizer)
        v, err0, err = np.asarray(v[0]), float(err0[0]), float(err[0])
        rows.append({"start": [float(x) for x in v0], "final_v": [float(x) for x in v], "start_error_m": err0,
                     "error_m": err, "success": err < 0.01, "wall_s": time.perf_counter() - t0})
        print(f"start {i}: v0 {np.round(v0, 3)} -> v {np.round(v, 3)}, {err0:.3f} m -> {err:.4f} m", flush=True)
    return rows


OPT_NAMES = {"adam": "Adam", "sgd": "gradient descent"}


def render(doc) -> str:
    r = doc["rows"]
    ok = sum(x["success"] for x in r)
    errs = np.array([x["error_m"] for x in r])
    return (f"# Billiards with boxes (gradient through body–body contact)\n\nCommand: `{doc['command']}`\n\n"
            f"Target {doc['target']} m, seed {doc['seed']} ({'report' if doc['seed'] != 0 else 'validation'}), "
            f"{OPT_NAMES[doc.get('optimizer', 'adam')]} lr {doc['lr']}, {doc['iters']} iterations.\n\n"
            f"**{ok} of {len(r)} random starts within 1 cm** (median final error {1e3 * np.median(errs):.2f} mm, "
            f"worst {1e3 * errs.max():.2f} mm; start errors {min(x['start_error_m'] for x in r):.3f}–"
            f"{max(x['start_error_m'] for x in r):.3f} m).\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--optimizer", choices=billiards.OPTIMIZERS, default="adam",
                    help="adam (the report's setting) or sgd, plain gradient descent (docs/worlds.md)")
    ap.add_argument("--target", type=float, nargs=2, default=billiards.TARGET, metavar=("X", "Y"),
                    help="where the struck box should rest (m); default on the line of centres")
    ap.add_argument("--out", default="studies/worlds/results/billiards")
    a = ap.parse_args(argv)
    rows = run(a.seed, a.starts, a.iters, a.lr, tuple(a.target), a.optimizer)
    doc = {"command": command_line("studies.worlds", argv), "target": list(a.target), "seed": a.seed, "lr": a.lr,
           "optimizer": a.optimizer, "iters": a.iters, "rows": rows}
    write_results(a.out, doc, render)
    print(render(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
