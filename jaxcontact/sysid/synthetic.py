"""The synthetic recovery case of issue 10.

Box throws (``jaxcontact.states.random_throws``: a 0.1 m, 0.37 kg cube's mass properties) are
simulated with hidden μ = 0.27, ε = 0.1, ground height 0.013 m and a vertex set 10% off the cube
(every corner moved by 10% of its distance from the centre, in a random direction; the mass and
inertia stay the cube's). The fit starts from μ = 0.5, ε = 0.5, height 0 and the nominal cube.
Noise, when asked for, is added to the observed positions only (i.i.d. Gaussian per coordinate).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import shapes
from ..laws import CoulombLCP
from ..solvers import LCPSettings
from ..states import random_throws
from ..types import Ground, Model, Params
from .data import Trajectories

TRUTH = {"mu": 0.27, "restitution": 0.1, "ground": 0.013}
START = {"mu": 0.5, "restitution": 0.5, "ground": 0.0}
NAMES = ("mu", "restitution", "ground", "vertices")
DT = 0.002
BOX = 0.1
MASS = 0.37
SAMPLE_EVERY = 5


def true_vertices(seed: int = 0, offset: float = 0.1) -> np.ndarray:
    V = np.asarray(shapes.box(BOX, MASS).vertices)
    d = np.random.default_rng(seed).normal(size=V.shape)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return V + offset * np.linalg.norm(V, axis=1, keepdims=True) * d


def synthetic_law():
    return CoulombLCP(solver=LCPSettings(tol=1e-9, max_iter=200))


def make_synthetic(n_throws: int = 20, steps: int = 400, seed: int = 0, noise: float = 0.0,
                   vertex_seed: int = 0, max_contacts: int = 4, sample_every: int = SAMPLE_EVERY) -> Trajectories:
    """``n_throws`` throws of ``steps`` engine steps (dt = 2 ms), sampled every ``sample_every``
    steps (default 5: 100 Hz, like a motion-capture system), with the truth attached."""
    from ..dynamics import batch_rollout

    law = synthetic_law()
    body = shapes.box(BOX, MASS)
    V = true_vertices(vertex_seed)
    body_true = body.replace(vertices=jnp.asarray(V))
    params = Params(body=body_true, ground=Ground.flat(3, TRUTH["ground"]),
                    law=law.init_params(mu=TRUTH["mu"], restitution=TRUTH["restitution"]))
    model = Model(law=law, dt=DT, max_contacts=max_contacts)
    s0 = random_throws(jax.random.PRNGKey(seed), n_throws)
    s0 = s0.replace(pos=s0.pos + jnp.array([0.0, 0.0, TRUTH["ground"]]))
    traj = batch_rollout(model, params, s0, steps, output="trajectory")
    S = np.array(traj.to_array())[:, ::sample_every]  # (N, T/sample_every + 1, 13)
    if noise > 0:
        S[..., 0:3] += np.random.default_rng(seed + 1000).normal(scale=noise, size=S[..., 0:3].shape)
    truth = dict(TRUTH, vertices=V)
    return Trajectories(trajs=list(S), dt=DT * sample_every, gravity=model.gravity, mass=MASS,
                        inertia=np.asarray(body.inertia), vertices=np.asarray(body.vertices),
                        truth={k: np.asarray(v) for k, v in truth.items()}, source=f"synthetic(seed={seed}, noise={noise})")


def start_params(law=None) -> Params:
    """The initial guess: μ = 0.5, ε = 0.5, flat ground at 0, the nominal cube."""
    law = synthetic_law() if law is None else law
    return Params(body=shapes.box(BOX, MASS), ground=Ground.flat(3, START["ground"]),
                  law=law.init_params(mu=START["mu"], restitution=START["restitution"]))


# The recovery schedule. Stage 0 scans the ground height alone (1-D, derivative-free): while the
# model ground is below the true one, every landing in a window is a bounce whose target velocity
# −ε v⁻ does not depend on the height, so the loss is piecewise constant there and has no
# gradient; above the truth the −φ/h push makes it smooth. The scan's best grid point plus one
# grid step therefore starts LM on the smooth side. Then LM fits the scalars on the nominal cube,
# then everything with the vertices, all on the hard ``CoulombLCP`` (kappa = 0; a stage with
# kappa > 0 uses ``SmoothedCoulomb(kappa)``).
SCHEDULE = (
    (("mu", "restitution", "ground"), 0.0),
    (NAMES, 0.0),
)
HEIGHT_GRID = tuple(np.round(np.arange(0.0, 0.0401, 0.0025), 6))


def scan_height(data: Trajectories, params: Params, *, window: int, substeps: int, stride=None,
                grid=HEIGHT_GRID) -> tuple[float, dict]:
    """Loss on a grid of ground heights (other parameters fixed); returns the start height for
    LM (best grid point + one grid step, on the smooth side) and the scan."""
    from .core import Problem

    losses_ = []
    prob = None
    for h in grid:
        p = params.replace(ground=params.ground.replace(height=jnp.asarray(float(h))))
        # contact windows chosen at the initial height so every grid point sees the same windows
        prob = Problem.build(data, ("ground",), p, law=synthetic_law(), window=window, substeps=substeps,
                             stride=stride) if prob is None else prob
        losses_.append(prob.loss(np.array([float(h) / prob.spec.length])))
    k = int(np.nanargmin(losses_))
    step = float(grid[1] - grid[0])
    return float(grid[k]) + step, {"grid": [float(g) for g in grid], "loss": losses_, "best": float(grid[k]),
                                   "evals": len(grid), "rollouts": len(grid) * prob.num_windows}


def recover(data: Trajectories, *, window: int = 5, substeps: int = SAMPLE_EVERY, stride: int | None = None,
            schedule=SCHEDULE, max_iter: int = 40, progress: bool = False, log=None, scan: bool = True,
            method: str = "lm", nm_evals: int = 1000) -> dict:
    """Height scan then ``schedule`` of fits, each warm-started from the last, from the issue's
    initial guess; returns the final ``FitResult`` and per-stage summaries (wall time and window
    rollouts summed over the stages, the scan included). ``method="nelder-mead"`` runs the
    derivative-free baseline on the same stages (``nm_evals`` loss evaluations per stage)."""
    import time

    from ..laws.smoothed import SmoothedCoulomb
    from .core import Problem, errors, fit

    params = start_params()
    stages, histories, total_rollouts, total_time = [], [], 0, 0.0
    if scan:
        t0 = time.perf_counter()
        h0, sc = scan_height(data, params, window=window, substeps=substeps, stride=stride)
        params = params.replace(ground=params.ground.replace(height=jnp.asarray(h0)))
        sc["wall_time_s"] = time.perf_counter() - t0
        total_rollouts += sc["rollouts"]
        total_time += sc["wall_time_s"]
        stages.append({"names": ["ground"], "scan": sc, "start_height": h0})
        if log:
            log(f"  height scan: best grid point {sc['best']}, LM starts at {h0} ({sc['wall_time_s']:.1f} s)")
    res = None
    for names, kappa in schedule:
        law = SmoothedCoulomb(kappa) if kappa > 0 else synthetic_law()
        prob = Problem.build(data, names, params.replace(law=params.law), law=law, window=window,
                             substeps=substeps, stride=stride)
        if method == "lm":
            res = fit(prob, "lm", progress=progress, max_iter=max_iter)
        else:
            res = fit(prob, method, progress=progress, max_iter=nm_evals)
        params = res.params
        total_rollouts += res.rollouts
        total_time += res.wall_time
        st = {"names": list(names), "kappa": kappa, **res.summary()}
        if data.truth:
            st["errors"] = errors(res.values, data.truth)
        stages.append(st)
        histories.append(res.history)
        if log:
            log(f"  stage {list(names)} kappa={kappa}: loss {res.loss:.3e}, {res.iterations} it, "
                f"{res.wall_time:.1f} s, {st.get('errors', '')}")
    return {"result": res, "stages": stages, "histories": histories, "rollouts": total_rollouts,
            "wall_time_s": total_time}
