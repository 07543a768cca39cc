"""Where the implicit derivative of a sliding face goes wrong (issue 61), the disc against the square.

* ``slides``: a 0.1 m box (0.37 kg) launched flat along 30° at 1.58 m/s, μ 0.5, float64, 100 steps at
  the defaults (h = 2 ms, tol 1e-6), without and with a spin of 6 rad/s about the vertical:
  d(distance along 30°)/d(μ, v₀, s) (s: mass and inertia × s, along which the forward is invariant)
  by the implicit derivative and by central differences (step 1e-6).
* ``throw``: ``tests/test_checks.py``'s throw with contact (a tilted box, a corner first, μ 0.18,
  40 steps): d(Σ final position)/d(mass) against central differences, and along ``with_mass``
  (d/dmass + Σ d/dI · I/m: must be 0).
* ``face``: one LCP of the spinning and of the straight slide's first step (four corners): the
  smallest eigenvalues of I − ∂T/∂z (T the projected-Jacobi map whose fixed point the derivative
  differentiates), how much body impulse its near-null direction v carries (|Jᵀv|/|v| against
  |Jᵀz|/|z|), the residual |T(z) − z| the sweeps leave, and the error of dz/ds against z (the solve
  is equivariant: z(s) = s z) in z and in the body impulse Jᵀ dz/ds, with the adjoint's ridge 1e-10
  and 1e-4.

    python -m benchmarks cone_derivative     # writes benchmarks/results/cone_derivative.{json,md}
"""

from __future__ import annotations

import sys

import numpy as np

from .common import BOX_MASS as MASS, BOX_SIZE as SIZE, CONES, SLIDE_HEADING as HEADING, SLIDE_MU as MU  # noqa: F401
from .common import SLIDE_SPIN as SPIN, SLIDE_V0 as V0, fixed_point_map, scaled_mass as _scaled, slide_launch as _launch
from .common import throw_mass_derivative, x64 as _jax


def slides():
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc

    out = []
    for cone in CONES:
        model = jc.Model(law=jc.CoulombLCP(solver=jc.LCPSettings(cone=cone)))
        for spin in (0.0, SPIN):
            s0, u = _launch(spin)

            def dist(mu, v0, sc):
                params = jc.Params(body=_scaled(jc.shapes.box(SIZE, MASS), sc), ground=jc.Ground.flat(),
                                   law=model.law.init_params(mu=mu))
                fin = jc.rollout(model, params, s0.replace(vel=v0 * jnp.asarray(u)), 100, output="final")
                return jnp.dot(fin.pos, jnp.asarray(u))

            g = [float(x) for x in jax.jit(jax.grad(dist, argnums=(0, 1, 2)))(MU, V0, 1.0)]
            f, e = jax.jit(dist), 1e-6
            x0 = np.array([MU, V0, 1.0])
            fd = [float((f(*(x0 + e * d)) - f(*(x0 - e * d))) / (2 * e)) for d in np.eye(3)]
            out.append({"cone": cone, "spin": spin, "implicit": g, "central": fd})
    return out


def throw():
    _jax()
    import jaxcontact as jc

    return [{"cone": cone, **throw_mass_derivative(jc.LCPSettings(cone=cone))} for cone in CONES]


def face():
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc
    from jaxcontact.solvers import RowStructure, solve_lcp
    from jaxcontact.solvers.lcp import regularized

    out = []
    for cone in CONES:
        law = jc.CoulombLCP(solver=jc.LCPSettings(cone=cone))
        model = jc.Model(law=law, max_contacts=4)
        params = jc.Params(body=jc.shapes.box(SIZE, MASS), ground=jc.Ground.flat(), law=law.init_params(mu=MU))
        for spin in (0.0, SPIN):
            s0, _ = _launch(spin)
            prob, _ = jc.contact.rigid_body(model, params, s0, jc.stages.free_velocity(model, params, s0))
            C = prob.num_contacts
            b = prob.free_velocity.at[:, 0].add(-prob.target).reshape(-1)
            mu = jnp.broadcast_to(params.law.mu, (C, 2))
            coupling = jnp.concatenate([jnp.zeros((C, 1)), mu], 1).reshape(-1)
            rows = RowStructure.contacts(C, 2)
            solve = lambda A: solve_lcp(A, b, coupling, rows, law.solver).z
            z = solve(prob.A)
            dz = jax.jacrev(lambda sc: solve(prob.A / sc))(1.0)
            Ar = regularized(prob.A, law.solver.regularization)
            Tz = np.asarray(jax.jacfwd(lambda q: fixed_point_map(q, Ar, b, mu, cone))(z))
            Ts = np.asarray(jax.jacfwd(lambda sc: fixed_point_map(z, regularized(prob.A / sc, law.solver.regularization), b, mu, cone))(1.0))
            M = np.eye(len(b)) - Tz
            ev, V = np.linalg.eig(M)
            order = np.argsort(np.abs(ev))
            v = np.real(V[:, order[0]])
            J, zz = np.asarray(prob.J), np.asarray(z)
            imp = lambda x: np.linalg.norm(J.T @ x)
            res = np.asarray(fixed_point_map(z, Ar, b, mu, cone)) - zz
            row = {"cone": cone, "spin": spin, "eig": [float(abs(ev[i])) for i in order[:2]],
                   "null_impulse": float((imp(v) / np.linalg.norm(v)) / (imp(zz) / np.linalg.norm(zz))),
                   "residual": float(np.abs(res).max()), "residual_along_null": float(abs(np.linalg.lstsq(V, res, rcond=None)[0][order[0]])),
                   "z_max": float(np.abs(zz).max())}
            for name, x in (("implicit", np.asarray(dz)), ("ridge_1e-4", np.linalg.solve(M + 1e-4 * np.eye(len(b)), Ts))):
                row[name] = {"dz_error": float(np.linalg.norm(x - zz) / np.linalg.norm(zz)),
                             "impulse_error": float(imp(x - zz) / imp(zz))}
            out.append(row)
    return out


def markdown(res) -> str:
    lines = ["# Where the implicit derivative of a sliding face goes wrong (issue 61)", "",
             "From `python -m benchmarks.cone_derivative` (float64, the defaults: tol 1e-6, regularisation 1e-6).", "",
             "## A box sliding along 30° at 1.58 m/s, μ 0.5, 100 steps: d(distance)/dθ, implicit against central differences", "",
             "| cone | spin (rad/s) | d/dμ (implicit, central, rel. error) | d/dv₀ | d/ds, mass and inertia × s (must be 0) |", "|---|---|---|---|---|"]
    for r in res["slides"]:
        cells = []
        for i in range(2):
            g, c = r["implicit"][i], r["central"][i]
            cells.append(f"{g:.6f}, {c:.6f}, {abs(g - c) / abs(c):.1e}")
        lines.append(f"| {r['cone']} | {r['spin']:g} | {cells[0]} | {cells[1]} | {r['implicit'][2]:.1e} (central {r['central'][2]:.1e}) |")
    lines += ["", "## tests/test_checks.py's throw (a corner first, 40 steps): d(Σ final position)/d(mass)", "",
              "| cone | implicit | central | along with_mass (must be 0) |", "|---|---|---|---|"]
    for r in res["throw"]:
        lines.append(f"| {r['cone']} | {r['d_mass']:.6f} | {r['d_mass_central']:.6f} | {r['along_with_mass']:.2e} |")
    lines += ["", "## One LCP: the face's four corners at the slide's first step", "",
              "v: the eigenvector of I − ∂T/∂z with the smallest |eigenvalue|; 'impulse of v': |Jᵀv|/|v| over |Jᵀz|/|z| "
              "(0: the direction does not move the body). dz/ds against z (exact: z(s) = s z), relative, in z and in Jᵀz.", "",
              "| cone | spin | two smallest \\|eig\\| | impulse of v | \\|T(z) − z\\| (along v) | dz/ds error: z, Jᵀz | with ridge 1e-4 |",
              "|---|---|---|---|---|---|---|"]
    for r in res["face"]:
        lines.append(f"| {r['cone']} | {r['spin']:g} | {r['eig'][0]:.2e}, {r['eig'][1]:.2e} | {r['null_impulse']:.1e} | "
                     f"{r['residual']:.1e} ({r['residual_along_null']:.1e}) | {r['implicit']['dz_error']:.1e}, {r['implicit']['impulse_error']:.1e} | "
                     f"{r['ridge_1e-4']['dz_error']:.1e}, {r['ridge_1e-4']['impulse_error']:.1e} |")
    return "\n".join(lines) + "\n"


def run(args, out):
    """``python -m benchmarks cone_derivative``: ``out`` (``runner.Results``) gets the JSON and the .md."""
    res = {"slides": slides(), "throw": throw(), "face": face()}
    md = markdown(res)
    out.write(res, md)
    print(md)


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
