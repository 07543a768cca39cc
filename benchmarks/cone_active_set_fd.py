"""Issue 61 design (c): one step's dz/d(target) (every normal's target raised together, as ε does) at the throw's
stuck steps 14 and 33: central differences of the sweeps' z and of the active-set-polished z against the implicit
derivative (I − ∂T/∂z)⁻¹ ∂T/∂b at the polished z. Prints the relative errors (in z and in the impulse Jᵀz).

    python -m benchmarks cone_active_set_fd
"""
import sys


def run(args, out):
    """Prints the relative errors (no results file)."""
    import numpy as np, jax, jax.numpy as jnp
    from .common import active_set_polish, fixed_point_map, x64
    x64()
    import jaxcontact as jc
    from jaxcontact.laws.coulomb import normal_target
    from jaxcontact.solvers import RowStructure, solve_lcp
    from jaxcontact.solvers.lcp import regularized
    body = jc.shapes.box(0.1, 0.37)
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-13, max_iter=500, cone="elliptic"))
    model = jc.Model(law=law, dt=0.002, max_contacts=4)
    s0 = jc.make_state(pos=[0, 0, 0.08], vel=[0.8, 0.3, -0.5], omega=[0, 0, 6.0])
    p = jc.Params(body=body, ground=jc.Ground.flat(3, 0.01), law=law.init_params(0.3, 0.2))
    states = jc.rollout(model, p, s0, 60)
    for k in (14, 33):
        s = jax.tree.map(lambda x: x[k], states)
        prob, con = jc.contact.rigid_body(model, p, s, jc.stages.free_velocity(model, p, s))
        t = normal_target(law, model, p, s, prob, con); C = prob.num_contacts
        b = np.asarray(prob.free_velocity.at[:, 0].add(-t).reshape(-1))
        mu = np.broadcast_to(np.asarray(p.law.mu), (C, 2)); coupling = jnp.concatenate([jnp.zeros((C, 1)), jnp.asarray(mu)], 1).reshape(-1)
        A = np.asarray(regularized(prob.A, law.solver.regularization))
        v = np.zeros(3 * C); v[0::3] = 1.0  # every normal's target raised together (as ε does)
        Tf = jax.jit(lambda q, bb: fixed_point_map(q, jnp.asarray(A), bb, jnp.asarray(mu), "elliptic"))
        def solve(bb, polish):
            z0 = np.asarray(solve_lcp(prob.A, jnp.asarray(bb), coupling, RowStructure.contacts(C, 2), law.solver).z)
            return active_set_polish(z0, A, bb, mu, lambda q: np.asarray(Tf(jnp.asarray(q), jnp.asarray(bb))))[0] if polish else z0
        z = solve(b, True)
        Jz, Jb = (np.asarray(x) for x in jax.jacfwd(Tf, argnums=(0, 1))(jnp.asarray(z), jnp.asarray(b)))
        imp = np.linalg.solve(np.eye(3 * C) - Jz, Jb @ v)
        J = np.asarray(prob.J); Jt = lambda q: J.T @ q
        for h in (1e-6, 1e-7):
            for pol in (False, True):
                fd = (solve(b + h * v, pol) - solve(b - h * v, pol)) / (2 * h)
                print(k, h, "polish" if pol else "sweeps", "dz rel err", np.linalg.norm(fd - imp) / np.linalg.norm(imp), "impulse J^T dz rel err", np.linalg.norm(Jt(fd) - Jt(imp)) / np.linalg.norm(Jt(imp)))


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
