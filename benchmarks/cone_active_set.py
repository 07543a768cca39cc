"""Issue 61, design (c), prototype in NumPy: an active-set polish of the sweeps' point at the 800-step
throw's stuck impact steps (``benchmarks.cone_designs --only polish``: 14, 33, 39, 44, 49, 54, 58).

From the sweeps' z (``solve_lcp``, the disc, tol 1e-13): normals with z_n > 0 take w_n = 0, else
z_n = 0; friction strictly inside the disc takes w_t = 0 (stick), on its boundary z_t = −μ² z_n w_t/|μ w_t|
(slip opposite the scaled velocity). That smooth system is solved by Gauss–Newton with least-squares
steps (least-norm along a face's split), the set re-identified and repeated (8 rounds); the result is
kept only if T(z) = z is closer than at the sweeps' point. Reported: |T(z) − z| before and after.

    python -m benchmarks cone_active_set    # writes benchmarks/results/cone_active_set.{json,md}
    python -m benchmarks cone_active_set --steps 90:130 --name cone_active_set_run
"""

from __future__ import annotations

import sys

import numpy as np

from .common import active_set_polish, fixed_point_map, x64 as _jax  # noqa: F401

STEPS = (14, 33, 39, 44, 49, 54, 58)


def polish_steps(steps=STEPS):
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc
    from jaxcontact.solvers import RowStructure, solve_lcp
    from jaxcontact.laws.coulomb import normal_target
    from jaxcontact.solvers.lcp import regularized

    body = jc.shapes.box(0.1, 0.37)
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-13, max_iter=500, cone="elliptic"))
    model = jc.Model(law=law, dt=0.002, max_contacts=4)
    s0 = jc.make_state(pos=[0, 0, 0.08], vel=[0.8, 0.3, -0.5], omega=[0, 0, 6.0])
    p = jc.Params(body=body, ground=jc.Ground.flat(3, 0.01), law=law.init_params(0.3, 0.2))
    states = jc.rollout(model, p, s0, max(steps))
    out = []
    for k in steps:
        s = jax.tree.map(lambda x: x[k], states)  # the trajectory starts with s0: states[k] enters step k
        prob, con = jc.contact.rigid_body(model, p, s, jc.stages.free_velocity(model, p, s))
        target = normal_target(law, model, p, s, prob, con)  # the bounce target, as the step's solve_warm
        C = prob.num_contacts
        b = np.asarray(prob.free_velocity.at[:, 0].add(-target).reshape(-1))
        mu = np.broadcast_to(np.asarray(p.law.mu), (C, 2))
        coupling = jnp.concatenate([jnp.zeros((C, 1)), jnp.asarray(mu)], 1).reshape(-1)
        z0 = np.asarray(solve_lcp(prob.A, jnp.asarray(b), coupling, RowStructure.contacts(C, 2), law.solver).z)
        A = np.asarray(regularized(prob.A, law.solver.regularization))
        Tj = jax.jit(lambda q: fixed_point_map(q, jnp.asarray(A), jnp.asarray(b), jnp.asarray(mu), "elliptic"))
        T = lambda q: np.asarray(Tj(jnp.asarray(q)))
        r0 = float(np.abs(np.diag(A) * (T(z0) - z0)).max())
        z, r = active_set_polish(z0, A, b, mu, T)
        Jj = jax.jit(jax.jacfwd(Tj))
        smin = lambda q: float(np.linalg.svd(np.eye(len(q)) - np.asarray(Jj(jnp.asarray(q))), compute_uv=False).min())
        zc = z.reshape(-1, 3)
        slip = int((np.sqrt(((zc[:, 1:] / mu) ** 2).sum(1)) >= zc[:, 0] * (1 - 1e-8)).sum())
        out.append({"step": k, "res_sweeps": r0, "res_active_set": r,
                    "moved": float(np.linalg.norm(z - z0) / max(np.linalg.norm(z0), 1e-300)),
                    "active_normals": int((z.reshape(-1, 3)[:, 0] > 0).sum()), "slipping": slip,
                    "smin_sweeps": smin(z0), "smin_active_set": smin(z)})
        print(out[-1], flush=True)
    return out


def arguments(ap):
    ap.add_argument("--steps", default=None, help="first:last (inclusive) instead of the seven stuck steps")


def run(args, out):
    """``python -m benchmarks cone_active_set [--steps A:B]``: the polish per step into ``out``."""
    a = args
    steps = STEPS if a.steps is None else tuple(range(int(a.steps.split(":")[0]), int(a.steps.split(":")[1]) + 1))
    res = polish_steps(steps)
    lines = ["# Issue 61 design (c): an active-set polish at the throw's stuck steps (NumPy prototype)", "",
             "From `python -m benchmarks cone_active_set` (float64, the disc, tol 1e-13; residual "
             "max |diag(A)(T(z) − z)| in m/s).", "",
             "| step | residual, sweeps | after the active-set polish | z moved (rel.) | normals active | slipping | σ_min(I − ∂T/∂z) at the sweeps' z | at the polished z |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['step']} | {r['res_sweeps']:.2g} | {r['res_active_set']:.2g} | {r['moved']:.2g} | {r['active_normals']} | {r['slipping']} | {r['smin_sweeps']:.2g} | {r['smin_active_set']:.2g} |" for r in res]
    out.write(res, "\n".join(lines))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
