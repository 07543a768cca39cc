"""Issue 61: the designs for a face's normal split, measured side by side (float64, small cases).

(a) soft normal rows: a larger relative diagonal (``LCPSettings.regularization`` R, which the
    implicit derivative solves with too; MuJoCo-like constraint-force mixing), so the split among a
    face's corners is unique and the sweeps converge along it at a rate ~R per sweep;
(b) the split converged in the forward: the sweeps' point polished to the exact fixed point of the
    regularised map (a damped semismooth Newton on T(z) = z: in NumPy on one LCP, ``newton``; in the
    solver, ``LCPSettings.forward_newton``) and the derivative taken there.

* ``slides``: ``benchmarks.cone_derivative``'s slide along 30° spinning at 6 rad/s (0.1 m box, 0.37 kg,
  1.58 m/s, μ 0.5, 100 steps), per cone and R: the distance, d/dμ implicit against central differences
  (step 1e-6), d/ds along the mass scale (must be 0), the mean sweeps a step.
* ``rest``: the same box dropped flat from 1 cm, 250 steps (0.5 s): penetration and |v|, |ω| at the end.
* ``throw``: ``tests/test_checks.py``'s throw (40 steps): d/dmass implicit against central and along
  ``with_mass`` (must be 0).
* ``newton``: one LCP (the spinning slide's first step, four corners), option (b): the residual the
  sweeps leave, the residual a damped Newton reaches, how far the split moves, and dz/ds against z
  (exact: z(s) = s z) at the sweeps' point and at the polished point.
* ``polish`` (not in the default parts): on that throw, the steps whose solution is not the fixed point.
* ``sysid`` (not in the default parts, ~5 min): ``tests/test_sysid.py``'s 800-step gradient (``SYSID_CASES``:
  the default, the disc without the polish, ``forward_newton`` 10, the square) against central
  differences at four steps.
(c) the default since issue 61: the active-set polish in the forward (``LCPSettings.forward_active_set``).

    python -m benchmarks cone_designs      # writes benchmarks/results/cone_designs.{json,md}
    python -m benchmarks cone_designs --only sysid --name cone_designs_sysid
    python -m benchmarks cone_designs --only polish --name cone_designs_polish
    python -m benchmarks cone_designs --only sysid,slides,throw --name cone_designs_active_set
"""

from __future__ import annotations

import sys

import numpy as np

from .common import BOX_MASS as MASS, BOX_SIZE as SIZE, CONES, SLIDE_MU as MU, SLIDE_SPIN as SPIN, SLIDE_V0 as V0  # noqa: F401
from .common import fixed_point_map, scaled_mass as _scaled, slide_launch as _launch, throw_mass_derivative, x64 as _jax

REGS = (1e-6, 1e-2, 1e-1)
_NO = {"forward_active_set": 0}  # the variants before design (c): the sweeps' point as is
VARIANTS = tuple((f"(a) R {r:g}" if r != 1e-6 else "sweeps alone (R 1e-6)", {"regularization": r, **_NO}) for r in REGS) + (
    ("(b) forward_newton 3", {"forward_newton": 3, **_NO}), ("(b) forward_newton 10", {"forward_newton": 10, **_NO}),
    ("reverse-only gradient_newton 5", {"gradient_newton": 5, **_NO}),
    ("(c) the default: active set, 1 round", {}))
"""(label, ``LCPSettings`` fields): the sweeps alone, soft normals (a), the split converged in the forward by
Newton (b), and the default since issue 61's design (c): the active-set polish (``forward_active_set``)."""
SYSID_CASES = (("elliptic", 0, None), ("elliptic", 0, 0), ("elliptic", 10, 0), ("box", 0, None))
"""(cone, forward_newton, forward_active_set) of ``sysid``'s rows: the default, the disc without the polish,
design (b), the square preset."""


def _settings(cone, kw):
    import jaxcontact as jc

    return jc.LCPSettings(cone=cone, **kw)


def _model(cone, kw):
    import jaxcontact as jc

    return jc.Model(law=jc.CoulombLCP(solver=_settings(cone, kw)))


def slides():
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc

    out = []
    for cone in CONES:
        for reg, kw in VARIANTS:
            model = _model(cone, kw)
            s0, u = _launch(SPIN)

            def run(mu, v0, sc, info=False):
                params = jc.Params(body=_scaled(jc.shapes.box(SIZE, MASS), sc), ground=jc.Ground.flat(),
                                   law=model.law.init_params(mu=mu))
                return jc.rollout(model, params, s0.replace(vel=v0 * jnp.asarray(u)), 100,
                                  output="trajectory" if info else "final", with_info=info)

            dist = lambda mu, v0, sc: jnp.dot(run(mu, v0, sc).pos, jnp.asarray(u))
            g = [float(x) for x in jax.jit(jax.grad(dist, argnums=(0, 1, 2)))(MU, V0, 1.0)]
            f, e = jax.jit(dist), 1e-6
            fd_mu = float((f(MU + e, V0, 1.0) - f(MU - e, V0, 1.0)) / (2 * e))
            traj, info = run(MU, V0, 1.0, True)
            out.append({"cone": cone, "reg": reg, "distance": float(f(MU, V0, 1.0)), "d_mu": g[0], "d_mu_central": fd_mu,
                        "d_s": g[2], "sweeps": float(jnp.mean(info.iterations)),
                        "spin_end": float(traj.omega[-1, 2])})
    return out


def rest():
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc

    out = []
    for cone in CONES:
        for reg, kw in VARIANTS:
            model = _model(cone, kw)
            params = jc.Params(body=jc.shapes.box(SIZE, MASS), ground=jc.Ground.flat(), law=model.law.init_params(mu=MU))
            s0 = jc.State(pos=jnp.asarray([0.0, 0.0, SIZE / 2 + 0.01]), quat=jnp.asarray([1.0, 0, 0, 0]),
                          vel=jnp.zeros(3), omega=jnp.zeros(3))
            traj = jc.rollout(model, params, s0, 250)
            z = np.asarray(traj.pos[:, 2])
            out.append({"cone": cone, "reg": reg, "penetration_end": float(SIZE / 2 - z[-1]),
                        "penetration_max": float(SIZE / 2 - z.min()), "bounce": float(z[int(np.argmin(z)):].max() - z.min()),
                        "v_end": float(np.linalg.norm(traj.vel[-1])), "w_end": float(np.linalg.norm(traj.omega[-1]))})
    return out


def throw():
    _jax()
    return [{"cone": cone, "reg": reg, **throw_mass_derivative(_settings(cone, kw))}
            for cone in CONES for reg, kw in VARIANTS]


def newton():
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc
    from jaxcontact.solvers import RowStructure, solve_lcp
    from jaxcontact.solvers.lcp import regularized

    out = []
    for cone in CONES:
        for reg in (1e-6, 1e-2):
            law = jc.CoulombLCP(solver=jc.LCPSettings(cone=cone, regularization=reg))
            model = jc.Model(law=law, max_contacts=4)
            params = jc.Params(body=jc.shapes.box(SIZE, MASS), ground=jc.Ground.flat(), law=law.init_params(mu=MU))
            s0, _ = _launch(SPIN)
            prob, _ = jc.contact.rigid_body(model, params, s0, jc.stages.free_velocity(model, params, s0))
            C = prob.num_contacts
            b = prob.free_velocity.at[:, 0].add(-prob.target).reshape(-1)
            mu = jnp.broadcast_to(params.law.mu, (C, 2))
            coupling = jnp.concatenate([jnp.zeros((C, 1)), mu], 1).reshape(-1)
            rows = RowStructure.contacts(C, 2)
            z0 = np.asarray(solve_lcp(prob.A, b, coupling, rows, law.solver).z)
            T = jax.jit(lambda q, sc: fixed_point_map(q, regularized(prob.A / sc, reg), b, mu, cone))
            JT = jax.jit(jax.jacfwd(T, argnums=(0, 1)))
            r = lambda q: np.asarray(T(q, 1.0)) - q

            def dzds(q):
                Tz, Ts = (np.asarray(x) for x in JT(q, 1.0))
                return np.linalg.solve(np.eye(len(q)) - Tz, Ts)

            z, steps = z0.copy(), 0
            for steps in range(1, 201):  # damped semismooth Newton on r(z) = T(z) − z, backtracking on |r|
                Tz, _ = (np.asarray(x) for x in JT(z, 1.0))
                dz = np.linalg.solve(np.eye(len(z)) - Tz, r(z))
                t, n0 = 1.0, np.linalg.norm(r(z))
                while t > 1e-6 and np.linalg.norm(r(z + t * dz)) >= (1 - 1e-4 * t) * n0:
                    t *= 0.5
                if t <= 1e-6:
                    break
                z = z + t * dz
                if np.linalg.norm(r(z)) < 1e-14 * max(1.0, np.abs(z).max()):
                    break
            err = lambda q: float(np.linalg.norm(dzds(q) - q) / np.linalg.norm(q))
            J = np.asarray(prob.J)
            out.append({"cone": cone, "reg": f"R {reg:g}", "res_sweeps": float(np.abs(r(z0)).max()), "res_newton": float(np.abs(r(z)).max()),
                        "newton_steps": steps, "split_moved": float(np.linalg.norm(z - z0) / np.linalg.norm(z0)),
                        "impulse_moved": float(np.linalg.norm(J.T @ (z - z0)) / np.linalg.norm(J.T @ z0)),
                        "dzds_error_sweeps": err(z0), "dzds_error_newton": err(z)})
    return out


def sysid(cone="elliptic", forward_newton=10, forward_active_set=0):
    """One row per θ of ``tests/test_sysid.py``'s 800-step gradient (tol 1e-13, max_iter 500)."""
    """``tests/test_sysid.py``'s 800-step gradient (tol 1e-13, max_iter 500) with ``cone`` and
    ``forward_newton``: d loss/d(μ, ε, ground height) against central differences (steps 1e-6,
    1e-6, 1e-7), and the central differences of ε and the height at steps 1e-4 … 1e-7 (is the
    forward smooth there?)."""
    jax = _jax()
    import jax.numpy as jnp
    import jaxcontact as jc

    body = jc.shapes.box(0.1, 0.37)
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-13, max_iter=500, cone=cone, forward_newton=forward_newton,
                                              forward_active_set=forward_active_set))
    model = jc.Model(law=law, dt=0.002, max_contacts=4)
    s0 = jc.make_state(pos=[0, 0, 0.08], vel=[0.8, 0.3, -0.5], omega=[0, 0, 6.0])
    params = lambda x: jc.Params(body=body, ground=jc.Ground.flat(3, x[2]), law=law.init_params(x[0], x[1]))

    def loss(x):
        tr = jc.rollout(model, params(x), s0, 800)
        return jnp.sum(tr.pos[::10] ** 2) + jnp.sum(tr.quat[::10, 3] ** 2)

    f, x = jax.jit(loss), jnp.array([0.3, 0.2, 0.01])
    g = np.asarray(jax.jit(jax.grad(loss))(x))
    rows = []
    for i, name in enumerate(("mu", "restitution", "ground height")):
        fd = {}
        for d in (1e-4, 1e-5, 1e-6, 1e-7):
            e = jnp.zeros(3).at[i].set(d)
            fd[f"{d:g}"] = float((f(x + e) - f(x - e)) / (2 * d))
        rows.append({"cone": cone, "forward_newton": forward_newton, "forward_active_set": forward_active_set, "parameter": name, "implicit": float(g[i]), "central": fd})
    return rows


def polish():
    """The same 800-step throw as ``sysid`` (tol 1e-13, the disc): at how many steps the forward's
    solution is not the fixed point (the natural-map residual of ``ContactInfo`` > 1e-12) without and
    with ``forward_newton`` 10 and 40, the largest residual, and where (the first ten such steps)."""
    _jax()
    import jaxcontact as jc

    body = jc.shapes.box(0.1, 0.37)
    rows = []
    for fn, fa in ((0, 0), (10, 0), (40, 0), (0, None)):
        law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-13, max_iter=500, cone="elliptic", forward_newton=fn,
                                                  forward_active_set=fa))
        model = jc.Model(law=law, dt=0.002, max_contacts=4)
        s0 = jc.make_state(pos=[0, 0, 0.08], vel=[0.8, 0.3, -0.5], omega=[0, 0, 6.0])
        p = jc.Params(body=body, ground=jc.Ground.flat(3, 0.01), law=law.init_params(0.3, 0.2))
        _, info = jc.rollout(model, p, s0, 800, with_info=True)
        r = np.asarray(info.residual)
        bad = np.nonzero(r > 1e-12)[0]
        rows.append({"forward_newton": fn if fa == 0 else f"{fn}, active set (default)", "unconverged_steps": int(len(bad)), "max_residual": float(r.max()),
                     "first": int(bad.min()) if len(bad) else -1, "last": int(bad.max()) if len(bad) else -1,
                     "four_active_steps": int((np.asarray(info.active).sum(1) == 4).sum()), "steps": [int(i) for i in bad[:10]]})
    return rows


def markdown(res) -> str:
    L = ["# Issue 61: the designs for a face's normal split, side by side", "",
         "From `python -m benchmarks cone_designs` (float64, tol 1e-6; R: `LCPSettings.regularization`, relative diagonal; "
         "1e-6 is today's default).", "",
         "## (a) soft normals: the slide along 30° spinning at 6 rad/s, 100 steps", "",
         "| cone | design | distance (m) | d/dμ implicit, central, rel. error | d/ds (must be 0) | sweeps a step | spin at the end (rad/s) |",
         "|---|---|---|---|---|---|---|"]
    for r in res["slides"]:
        L.append(f"| {r['cone']} | {r['reg']} | {r['distance']:.5f} | {r['d_mu']:.6f}, {r['d_mu_central']:.6f}, "
                 f"{abs(r['d_mu'] - r['d_mu_central']) / abs(r['d_mu_central']):.1e} | {r['d_s']:.1e} | {r['sweeps']:.2f} | {r['spin_end']:.3f} |")
    L += ["", "## (a) at rest: the box dropped flat from 1 cm, 0.5 s", "",
          "| cone | design | penetration at the end (m) | deepest (m) | bounce after the deepest (m) | \\|v\\| end | \\|ω\\| end |", "|---|---|---|---|---|---|---|"]
    for r in res["rest"]:
        L.append(f"| {r['cone']} | {r['reg']} | {r['penetration_end']:.2e} | {r['penetration_max']:.2e} | {r['bounce']:.2e} | {r['v_end']:.1e} | {r['w_end']:.1e} |")
    L += ["", "## (a) tests/test_checks.py's throw, 40 steps: d(Σ final position)/d(mass)", "",
          "| cone | design | implicit | central | along with_mass (must be 0) |", "|---|---|---|---|---|"]
    for r in res["throw"]:
        L.append(f"| {r['cone']} | {r['reg']} | {r['d_mass']:.6f} | {r['d_mass_central']:.6f} | {r['along_with_mass']:.2e} |")
    L += ["", "## (b) one LCP (the spinning slide's first step): the split polished to the fixed point by a damped Newton", "",
          "| cone | design | \\|T(z) − z\\| sweeps | after Newton (steps) | z moved (rel.) | Jᵀz moved (rel.) | dz/ds error at the sweeps' z | at Newton's z |",
          "|---|---|---|---|---|---|---|---|"]
    for r in res["newton"]:
        L.append(f"| {r['cone']} | {r['reg']} | {r['res_sweeps']:.1e} | {r['res_newton']:.1e} ({r['newton_steps']}) | {r['split_moved']:.1e} | "
                 f"{r['impulse_moved']:.1e} | {r['dzds_error_sweeps']:.1e} | {r['dzds_error_newton']:.1e} |")
    if res.get("polish"):
        L += ["", "## (b) the 800-step throw (the disc, tol 1e-13): steps whose solution is not the fixed point", "",
              "| forward_newton | steps with residual > 1e-12 | largest residual (m/s) | first, last such step | the first ten | steps with 4 corners active |",
              "|---|---|---|---|---|---|"]
        for r in res["polish"]:
            L.append(f"| {r['forward_newton']} | {r['unconverged_steps']} | {r['max_residual']:.1e} | {r['first']}, {r['last']} | {', '.join(map(str, r['steps']))} | {r['four_active_steps']} |")
    if res.get("sysid"):
        L += ["", "## (b) tests/test_sysid.py's 800-step throw (tol 1e-13): d loss/dθ, implicit against central differences", "",
              "| cone | forward_newton | forward_active_set (None: the default, 1 round) | θ | implicit | central at steps 1e-4, 1e-5, 1e-6, 1e-7 |", "|---|---|---|---|---|---|"]
        for r in res["sysid"]:
            L.append(f"| {r['cone']} | {r['forward_newton']} | {r.get('forward_active_set', 0)} | {r['parameter']} | {r['implicit']:.6f} | "
                     + ", ".join(f"{v:.6f}" for v in r["central"].values()) + " |")
    return "\n".join(L) + "\n"


def run(args, out):
    """``python -m benchmarks cone_designs [--only PART,...]``: the parts into ``out``."""
    parts = {"newton": newton, "slides": slides, "rest": rest, "throw": throw, "polish": polish,
             "sysid": lambda: [r for case in SYSID_CASES for r in sysid(*case)]}
    unknown = [k for k in args.only.split(",") if k not in parts]
    if unknown:
        raise SystemExit(f"--only: unknown part {unknown[0]!r} (parts: {', '.join(parts)})")
    res = {k: parts[k]() for k in args.only.split(",")}
    for k in parts:
        res.setdefault(k, [])
    md = markdown(res)
    out.write(res, md)
    print(md)


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
