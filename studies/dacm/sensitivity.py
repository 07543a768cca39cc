"""How sensitive are the Fig. 5 metrics to small errors of the contact model itself?

The ground-truth simulator (Coulomb LCP) is compared with copies of itself whose friction
coefficient is off by a small relative amount, and with itself started from slightly perturbed
states, on the study's fresh test throws (``dacm evaluate``'s ``--throws 100 --seed 1``). A learned
model whose friction impulses are accurate to ~1 % cannot be expected to beat the errors these
produce: they are the floor the throws' chaotic tumbling puts under the final-position and
final-orientation errors.

    python -m studies.dacm sensitivity --shape box --throws 100 --seed 1   # → results/dacm_sensitivity_box.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..common import command_line

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None, prog="studies.dacm sensitivity") -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {prog}", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="box", choices=("box", "pentagon", "box2d"))
    ap.add_argument("--throws", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mu-rel", default="0.003,0.01,0.03", help="relative friction errors (each used with + and −)")
    ap.add_argument("--state-eps", default="1e-6,1e-4", help="perturbation of the initial position (m) and velocity (m/s)")
    ap.add_argument("--out", default=None, help="default studies/dacm/results/dacm_sensitivity_<shape>.json")
    args = ap.parse_args(argv)

    import dataclasses

    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    from jaxcontact.dacm import data as D
    from jaxcontact.dacm.evaluate import STEPS, trajectory_metrics

    model, params = D.ground_truth_setup(args.shape)
    s0 = D.throws(args.shape, args.throws, args.seed)
    gt = D.simulate(model, params, s0, STEPS)
    variants = {}
    for r in (float(x) for x in args.mu_rel.split(",")):
        for sgn in (1, -1):
            lp = dataclasses.replace(params.law, mu=params.law.mu * (1 + sgn * r))
            variants[f"mu{'+' if sgn > 0 else '-'}{100 * r:g}%"] = D.simulate(model, params.replace(law=lp), s0, STEPS)
    rng = np.random.default_rng(0)
    for eps in (float(x) for x in args.state_eps.split(",")):
        noise = lambda a: a + eps * jnp.asarray(rng.normal(size=a.shape), a.dtype)
        s = s0.replace(pos=noise(s0.pos), vel=noise(s0.vel))
        variants[f"state{eps:g}"] = D.simulate(model, params, s, STEPS)
    m = trajectory_metrics(gt, variants, model, params)
    out = {"command": command_line(prog, argv), "shape": args.shape,
           "throws": args.throws, "seed": args.seed, "metrics": m}
    path = Path(args.out or RESULTS / f"dacm_sensitivity_{args.shape}.json")
    path.write_text(json.dumps(out, indent=1))
    for k, v in m.items():
        print(k, {a: round(b, 4) for a, b in v.items() if isinstance(b, float)})
    return 0

