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


def synthetic_law(restitution_target: str = "position", cone: str = "elliptic") -> CoulombLCP:
    """The law that generates the synthetic data and is fitted to it (the model class is exact).

    restitution_target="position" (default here): the position-consistent bounce target
    −ε v⁻ − (1 + ε) φ/h of ``CoulombLCP``, continuous in the distance φ, so the trajectory is
    continuous in the ground height and the vertices across a landing. "velocity": the engine's
    default −ε v⁻, under which the loss is piecewise constant in the height below the truth.
    cone: the friction set, Coulomb's disc (the engine's default) or "box", the square (docs/sysid.md,
    "The friction cone": the same fits under each).
    """
    return CoulombLCP(solver=LCPSettings(tol=1e-9, max_iter=200, cone=cone), restitution_target=restitution_target)


def make_synthetic(n_throws: int = 20, steps: int = 400, seed: int = 0, noise: float = 0.0,
                   vertex_seed: int = 0, max_contacts: int = 4, sample_every: int = SAMPLE_EVERY,
                   law=None) -> Trajectories:
    """``n_throws`` throws of ``steps`` engine steps (dt = 2 ms), sampled every ``sample_every``
    steps (default 5: 100 Hz, like a motion-capture system), with the truth attached.
    law: the data-generating law (default ``synthetic_law()``); fit with the same one."""
    from ..dynamics import batch_rollout

    law = synthetic_law() if law is None else law
    body = shapes.box(BOX, MASS)
    V = true_vertices(vertex_seed)
    params = truth_params(dict(TRUTH, vertices=V), law)
    model = Model(law=law, dt=DT, max_contacts=max_contacts, max_correction_speed=None)  # as the fit's (core.py)
    s0 = random_throws(jax.random.PRNGKey(seed), n_throws)
    s0 = s0.replace(pos=s0.pos + jnp.array([0.0, 0.0, TRUTH["ground"]]))
    traj = batch_rollout(model, params, s0, steps, output="trajectory")
    S = np.array(traj.to_array())[:, ::sample_every]  # (N, T/sample_every + 1, 13)
    if noise > 0:
        S[..., 0:3] += np.random.default_rng(seed + 1000).normal(scale=noise, size=S[..., 0:3].shape)
    truth = dict(TRUTH, vertices=V)
    return Trajectories(trajs=list(S), dt=DT * sample_every, gravity=model.gravity, mass=MASS,
                        inertia=np.asarray(body.inertia), vertices=np.asarray(body.vertices),
                        truth={k: np.asarray(v) for k, v in truth.items()}, engine_dt=DT, source=f"synthetic(seed={seed}, noise={noise}, restitution_target={getattr(law, 'restitution_target', '-')})")


def truth_params(truth: dict, law=None) -> Params:
    """The hidden parameters as ``Params``: ``truth`` holds μ, ε, the ground height and the vertex
    set (``make_synthetic``'s ``data.truth``); mass and inertia are the cube's."""
    law = synthetic_law() if law is None else law
    body = shapes.box(BOX, MASS).replace(vertices=jnp.asarray(truth["vertices"]))
    return Params(body=body, ground=Ground.flat(3, float(truth["ground"])),
                  law=law.init_params(mu=float(truth["mu"]), restitution=float(truth["restitution"])))


def start_params(law=None) -> Params:
    """The initial guess: μ = 0.5, ε = 0.5, flat ground at 0, the nominal cube."""
    law = synthetic_law() if law is None else law
    return Params(body=shapes.box(BOX, MASS), ground=Ground.flat(3, START["ground"]),
                  law=law.init_params(mu=START["mu"], restitution=START["restitution"]))


def recover(data: Trajectories, *, schedule=None, law=None, method: str | None = None, progress: bool = False,
            log=None, max_iter: int | None = None, known_vertices: bool = False, starts=None) -> dict:
    """The issue's recovery from ``start_params`` by ``schedule.staged_fit`` (default
    ``DEFAULT_SCHEDULE``, that is ``RANDOM_START_NOISY_SCHEDULE``: kinematic geometry, LM on
    everything, a trimmed LM, then the noisy schedule's last stage). ``max_iter`` caps the iterations of every rollout stage. ``method="nelder-mead"``:
    the derivative-free baseline on the same stages and loss (after the same geometry stage).
    known_vertices: start from the true vertex set and fit μ, ε, height only
    (``schedule.known_geometry_schedule``) — the reduced case of the tests. starts: override the
    fitted window-start groups of every rollout stage ("" or () for none; Nelder–Mead stages
    never fit starts)."""
    import dataclasses

    from .schedule import DEFAULT_SCHEDULE, in_rollout_stages, known_geometry_schedule, staged_fit

    law = synthetic_law() if law is None else law
    p0 = start_params(law)
    if known_vertices:
        p0 = p0.replace(body=p0.body.replace(vertices=jnp.asarray(data.truth["vertices"])))
    if schedule is None:
        schedule = known_geometry_schedule() if known_vertices else DEFAULT_SCHEDULE
    if max_iter is not None:
        schedule = tuple(s if s.kind == "geometry" else dataclasses.replace(s, max_iter=min(s.max_iter, max_iter))
                         for s in schedule)
    if starts is not None:
        from .losses import check_starts

        starts = check_starts(starts)
        schedule = in_rollout_stages(schedule, starts=starts)
    return staged_fit(data, p0, law, schedule, substeps=SAMPLE_EVERY, method=method,
                      progress=progress, log=log)
