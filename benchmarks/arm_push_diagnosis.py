"""Why reverse mode misses central differences for the arm's early controls (issue 63, item 6;
``benchmarks/arm_push_gradient.py`` found 49–76 % at k = 5, 30 at the defaults).

    python -m benchmarks arm_push_diagnosis

The world of ``arm_push_gradient`` (``jaxcontact/data/scenes/arm_push.xml``, 100 steps of 4 ms,
float64, the controls held at (0.6, 0) rad). Per case (a change of the law's solver settings, the
law or the scene): the contact solve's sweeps and natural-map residual (m/s) at steps 28–41, where
the lower link strikes the box and then swings it flat against its face; the box's final x, y;
and for the cases marked so d(box's final x, y)/d(u_k) of the shoulder's control at k = 5, 30, 45 by
reverse mode against central differences at two steps (1e-4 and 1e-6). The cases:

- ``defaults``;
- ``1e5 sweeps`` (100,000 sweeps, tol 1e-11; forward only: the residual where the cap is reached);
- ``softness 0`` (``Scene.softness = 0``: every row stiff; forward only);
- ``Newton + active set`` (``LCPSettings(forward_newton=10, forward_active_set=3)``: the forward
  polished onto the fixed point, the derivative taken there);
- ``no impact islands`` (``CoulombLCP(restitution_threshold=1e3)``: no contact counts as an impact,
  so every row keeps the scene's softness 1e-2);
- ``closing impacts`` (a candidate, defined here and not in the package: ``ClosingImpacts``, the
  default law whose impact islands take only the contacts that approach faster than the threshold
  *and* close within the step, φ_switch + h·v⁻ < 0, the pair's earliest point as the restitution
  switch reads it; a point held at its speculative limit, φ + h·v⁻ ≈ 0 while a face swings flat, is
  then not an impact).

Writes ``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from .common import SCENES_DIR, fmt, machine_info, md_machine, md_table

SCENE = SCENES_DIR / "arm_push.xml"
STEPS = 100
KS = (5, 30, 45)
EPS = (1e-4, 1e-6)
WINDOW = (28, 42)
def closing_impacts(law):
    """The law ``law`` (a ``CoulombLCP``) with the impact test of the ``closing impacts`` case."""
    from jaxcontact.laws.coulomb import CoulombLCP, normal_target_at
    from jaxcontact.solvers import solve_contact

    class ClosingImpacts(CoulombLCP):
        def solve_coupled(self, model, params, coupled):
            problem, vn_pre, phi_switch = coupled.problem, coupled.vn_pre, coupled.phi_switch
            target = normal_target_at(self, model, params.law.restitution, vn_pre, phi_switch, problem.target)
            impact = problem.valid & (vn_pre < -self.restitution_threshold) & (phi_switch + model.dt * vn_pre < 0)
            return solve_contact(problem.replace(target=target, soft=coupled.soften(impact)),
                                 self.method(model, coupled.group))

    return ClosingImpacts(**{f.name: getattr(law, f.name) for f in dataclasses.fields(law)})


CASES = {  # name: (solver settings, law settings, scene settings, with gradients)
    "defaults": ({}, {}, {}, True),
    "1e5 sweeps": ({"tol": 1e-11, "max_iter": 100000}, {}, {}, False),
    "softness 0": ({}, {}, {"softness": 0.0}, False),
    "Newton + active set": ({"forward_newton": 10, "forward_active_set": 3}, {}, {}, True),
    "no impact islands": ({}, {"restitution_threshold": 1e3}, {}, True),
    "closing impacts": ({}, {"closing": True}, {}, True),
}


def case(solver: dict, law: dict, scene_kw: dict, gradients: bool) -> dict:
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    scene, params, state, model = worlds.from_mjcf(str(SCENE))
    law = dict(law)
    closing = law.pop("closing", False)
    lw = dataclasses.replace(model.law, solver=dataclasses.replace(model.law.solver, **solver), **law)
    lw = closing_impacts(lw) if closing else lw
    model = dataclasses.replace(model, law=lw)
    scene = dataclasses.replace(scene, **scene_kw) if scene_kw else scene
    u0 = jnp.tile(jnp.array([[0.6, 0.0]]), (STEPS, 1))
    traj, info = worlds.rollout(model, scene, params, state, STEPS, u0)
    a, b = WINDOW
    out = {"sweeps": np.asarray(info.iterations[a:b]).tolist(), "residual": np.asarray(info.residual[a:b]).tolist(),
           "final": np.asarray(traj.pos[-1, 2, :2]).tolist(), "max_residual": float(np.max(info.residual))}
    if gradients:
        final = jax.jit(lambda u: worlds.rollout(model, scene, params, state, STEPS, u, output="final")[0].pos[2, :2])
        jac = np.asarray(jax.jit(jax.jacrev(final))(u0))
        out["columns"] = []
        for k in KS:
            ad = jac[:, k, 0]
            col = {"k": k, "ad": ad.tolist(), "fd": {}, "rel_error": {}}
            for eps in EPS:
                bump = jnp.zeros_like(u0).at[k, 0].set(eps)
                fd = np.asarray((final(u0 + bump) - final(u0 - bump)) / (2 * eps))
                col["fd"][str(eps)] = fd.tolist()
                col["rel_error"][str(eps)] = float(np.linalg.norm(ad - fd) / np.linalg.norm(fd))
            out["columns"].append(col)
    return out


def run(args, out):
    """``python -m benchmarks arm_push_diagnosis [--only CASE,...]``: the cases (default all) into ``out``."""
    names = args.only.split(",") if args.only else list(CASES)
    for n in names:
        if n not in CASES:
            raise SystemExit(f"--only: unknown case {n!r} (one of {', '.join(CASES)})")
    import jax

    jax.config.update("jax_enable_x64", True)
    res = {"machine": machine_info("benchmarks.arm_push_diagnosis", command=args.command), "steps": STEPS, "window": WINDOW,
           "cases": {}}
    for n in names:
        res["cases"][n] = case(*CASES[n])
        print(n, res["cases"][n], flush=True)
        out.write(res)
    a, b = WINDOW
    solve = [[n, " ".join(str(s) for s in r["sweeps"]), fmt(max(r["residual"])), fmt(r["max_residual"]),
              ", ".join(f"{x:.5f}" for x in r["final"])] for n, r in res["cases"].items()]
    grads = [[n, c["k"], fmt(c["ad"][0]) + ", " + fmt(c["ad"][1]),
              "; ".join(fmt(c["fd"][e][0]) + ", " + fmt(c["fd"][e][1]) for e in c["fd"]),
              "; ".join(fmt(v) for v in c["rel_error"].values())]
             for n, r in res["cases"].items() for c in r.get("columns", [])]
    md = ["# Why the arm's early controls' gradients missed", "", md_machine(res["machine"]), "",
          f"The arm of `arm_push.xml` (module docstring). Sweeps per step at steps {a}…{b - 1} (the strike at 31, the "
          "box swung flat against the link until 39), the largest residual there and over the run, the box's final "
          "x, y:", "",
          md_table(["case", f"sweeps, steps {a}…{b - 1}", "max residual there (m/s)", "max residual, all steps",
                    "box final x, y (m)"], solve), "",
          f"d(box final x, y)/d u_k, reverse mode against central differences at steps {EPS[0]:g}; {EPS[1]:g}:", "",
          md_table(["case", "k", "reverse mode", "central differences", "relative error"], grads)]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json}, {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
