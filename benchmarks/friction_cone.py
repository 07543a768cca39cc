"""How much friction the pyramidal cone applies against a sliding direction (part of why fitted μ
comes out below a circular-cone μ).

The box preset (``LCPSettings(cone="box")``; the default since issue 61 is Coulomb's disc, whose
μ_eff is μ at every θ: ``benchmarks/cone.py``) clips each of the two ground-tangent impulses to ±μ z_n (a pyramid). A
box sliding flat in direction θ (from the first tangent, world x) is then decelerated along its
velocity by μ_eff(θ) g with μ_eff ∈ [μ, √2 μ]; a circular (isotropic) cone gives μ g for every θ.
This measures μ_eff(θ) from the engine: a 0.1 m box, flat on the ground, sliding at 1 m/s in
direction θ for ``--steps`` steps, μ_eff = (speed lost along the initial direction)/(g t). A fit of
the pyramid's μ to data from a circular-cone world with μ_c therefore lands near μ_c / mean μ_eff/μ
over the data's sliding directions (4/π ≈ 1.27 for uniformly spread directions).

    python -m benchmarks friction_cone    # writes benchmarks/results/friction_cone.{json,md}
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from . import common


def arguments(p):
    from jaxcontact.files import cube_tosses_path

    p.add_argument("--mu", type=float, default=0.18)
    p.add_argument("--angles", type=int, default=19, help="directions from 0 to 90 degrees")
    p.add_argument("--tosses", default=str(cube_tosses_path()),
                   help="real cube tosses: the factor over their measured sliding directions (skipped if absent)")


def run(args, results):
    """``python -m benchmarks friction_cone``: ``results`` (``runner.Results``) gets the JSON and the .md."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxcontact as jc

    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-10, max_iter=500, cone="box"))  # the square (the default is the disc)
    model = jc.Model(law=law, dt=common.DT, max_contacts=4)
    body = jc.shapes.box(common.BOX_SIZE, common.BOX_MASS)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=args.mu))
    theta = np.linspace(0.0, np.pi / 2, args.angles)
    v0 = 1.0
    z = common.BOX_SIZE / 2
    states = jc.State(pos=jnp.asarray(np.stack([np.zeros_like(theta), np.zeros_like(theta), np.full_like(theta, z)], -1)),
                      quat=jnp.asarray(np.tile([1.0, 0, 0, 0], (len(theta), 1))),
                      vel=jnp.asarray(np.stack([v0 * np.cos(theta), v0 * np.sin(theta), np.zeros_like(theta)], -1)),
                      omega=jnp.zeros((len(theta), 3)))
    fin = jc.batch_rollout(model, params, states, args.steps)
    u = np.stack([np.cos(theta), np.sin(theta), np.zeros_like(theta)], -1)
    dv = v0 - np.sum(np.asarray(fin.vel) * u, -1)
    mu_eff = dv / (model.gravity * args.steps * model.dt)
    ratio = mu_eff / args.mu
    out = {"machine": common.machine_info("benchmarks.friction_cone", command=args.command), "mu": args.mu, "steps": args.steps,
           "theta_deg": np.degrees(theta).tolist(), "mu_eff": mu_eff.tolist(), "ratio": ratio.tolist(),
           "mean_ratio_uniform_directions": float(np.trapezoid(ratio, theta) / (np.pi / 2)),
           "analytic": "mu_eff/mu = |cos θ| + |sin θ| (mean 4/π = 1.273 over uniform θ)"}
    if Path(args.tosses).exists():
        # the real tosses' runs of face-sliding samples (sysid.kinematic.face_slides: four lowest
        # vertices on the table, sliding, little spin); the factor is averaged over runs, weighted by
        # their lengths (sysid.kinematic.kinematic_mu, the real-cube study's measurement)
        from jaxcontact import sysid
        from jaxcontact.sysid.kinematic import kinematic_mu

        data = sysid.load(args.tosses)
        km = kinematic_mu(data.trajs, np.asarray(data.vertices), data.gravity, data.dt)
        mu_nom = float(data.nominal["mu"])
        out["real_tosses"] = {"file": Path(args.tosses).name, "sliding_runs": km["runs"],
                              "sliding_samples": km["samples"], "mean_factor": km["pyramid_factor_mean"],
                              "mu_nominal": mu_nom, "pyramid_mu_matching_nominal": mu_nom / km["pyramid_factor_mean"]}
    rows = [[f"{d:.0f}", common.fmt(m), common.fmt(r), common.fmt(abs(np.cos(t)) + abs(np.sin(t)))]
            for d, m, r, t in zip(out["theta_deg"], mu_eff, ratio, theta)]
    md = ["# Pyramidal friction cone: friction against the sliding direction", "",
          f"From `{out['machine']['command']}`: a flat 0.1 m box sliding at 1 m/s for {args.steps} steps "
          f"(float64, PGS tol 1e-10), μ = {args.mu}.", "",
          common.md_table(["θ (deg)", "μ_eff", "μ_eff / μ", "|cos θ| + |sin θ|"], rows), "",
          f"Mean of μ_eff/μ over uniformly spread directions: {out['mean_ratio_uniform_directions']:.4f} "
          "(4/π = 1.2732).", ""]
    if "real_tosses" in out:
        r = out["real_tosses"]
        md += [f"Real cube tosses ({r['file']}): {r['sliding_runs']} runs ({r['sliding_samples']} samples) sliding on a "
               f"face (`sysid.kinematic.kinematic_mu`); the run-length-weighted mean of |cos θ| + |sin θ| over their "
               f"sliding directions is {r['mean_factor']:.3f}, so the pyramid's μ that gives the same mean deceleration "
               f"as the quoted circular μ {r['mu_nominal']} is {r['pyramid_mu_matching_nominal']:.3f}.", ""]
    results.write(out, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
