"""Contact geometry from the observed poses alone: a kinematic first stage for the fit schedule.

Why: a windowed rollout loss cannot see a ground that is too low (the model body falls freely
where the observed one is supported: exactly zero gradient) and reacts violently to a vertex
that penetrates at a window start (the −φ/h push moves it by φ in one step); with vertices a few
millimetres off, Levenberg–Marquardt on the rollout loss stalls (docs/sysid.md). The observed
poses already say a lot about the geometry without any dynamics:

* the observed motion in a sample interval is free flight — v⁺ = v + g·dt — unless a contact
  acted in it; a sample whose two neighbouring intervals both deviate from free flight is
  *supported* (resting, sliding, rolling, rocking on an edge): its lowest vertex touches the
  ground, ``min_k φ_k = 0`` (the velocity-level LCP drives φ of an active contact to 0 each step);
* no vertex is ever below the ground: ``φ_k ≥ 0`` at every sample.

φ_k = n·(p + R v_k) − h is linear in the vertices and the height, so this is a small nonlinear
(piecewise linear, through the min) least-squares problem solved by Levenberg–Marquardt with a
forward-mode Jacobian, in milliseconds. It pins the height against the vertex offsets as soon as
supported samples rest on different faces, edges and corners (a body resting only on faces
leaves one combination — shrinking the body along its axes while raising the ground — free;
tumbling and edge contacts break it). Mass, inertia and friction play no part.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import world_points
from ..rotations import quat_to_mat
from ..types import Params, State
from . import optim
from .data import Trajectories
from .params import ParamSpec


def supported_samples(data: Trajectories, tol: float | None = None, ground_normal=None) -> list[np.ndarray]:
    """Per trajectory, a mask of samples whose two neighbouring intervals both deviate from free
    flight by more than ``tol`` (velocity units; default ``support_tolerance(data)``), in linear
    velocity."""
    n = np.array([0.0, 0.0, 1.0]) if ground_normal is None else np.asarray(ground_normal, float)
    n = n / np.linalg.norm(n)
    g = -data.gravity * n
    tol = support_tolerance(data, n) if tol is None else float(tol)
    out = []
    for t in data.trajs:
        v = np.asarray(t)[:, 7:10]
        dev = np.linalg.norm(v[1:] - v[:-1] - g * data.dt, axis=1) > tol  # interval i -> i+1
        m = np.zeros(len(t), bool)
        m[1:-1] = dev[:-1] & dev[1:]
        out.append(m)
    return out


def support_tolerance(data: Trajectories, ground_normal=(0.0, 0.0, 1.0)) -> float:
    """The default support test of ``supported_samples``: 3 σ̂ of the velocity noise, clipped to
    [0.02, 0.5] g·dt. A supported interval deviates from free flight by about g·dt (the ground
    cancels gravity), a free one by the noise only; σ̂ is the robust (MAD) spread of the normal
    component of that deviation over the intervals below 0.5 g·dt. Exact velocities (synthetic
    data, noisy or not: noise is on positions) keep 2 % of g·dt; the real cube tosses, whose
    velocities are differences of measured positions (σ̂ ≈ 0.13–0.2 g·dt), get 0.5 g·dt — with
    2 % nearly every sample, flight included, counted as supported (docs/sysid.md, Real cubes)."""
    n = np.asarray(ground_normal, float)
    n = n / np.linalg.norm(n)
    gdt = data.gravity * data.dt
    d = [(np.asarray(t)[1:, 7:10] - np.asarray(t)[:-1, 7:10]) @ n + gdt for t in data.trajs if len(t) >= 2]
    d = np.concatenate(d) if d else np.zeros(0)
    d = d[np.abs(d) < 0.5 * gdt]
    sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) if len(d) else 0.0
    return float(np.clip(3.0 * sigma, 0.02 * gdt, 0.5 * gdt))


def position_noise(data: Trajectories) -> float:
    """Robust estimate of the observation noise σ (length units, per coordinate) of the positions:
    in free flight the second difference p[i+1] − 2p[i] + p[i−1] is exactly g·dt², so its spread
    is √6·σ for i.i.d. noise; the median absolute deviation ignores the few contact samples."""
    g = np.array([0.0, 0.0, -data.gravity]) * data.dt ** 2
    d = [np.asarray(t)[2:, 0:3] - 2 * np.asarray(t)[1:-1, 0:3] + np.asarray(t)[:-2, 0:3] - g
         for t in data.trajs if len(t) >= 3]
    if not d:
        return 0.0
    d = np.concatenate(d).ravel()
    return float(np.median(np.abs(d - np.median(d))) / 0.6745 / np.sqrt(6.0))


def _phi(params: Params, X):
    """(T, K) signed distances of the (unmasked) vertices at the observed states X (T, 13)."""
    n = params.ground.normal / jnp.linalg.norm(params.ground.normal)
    V = params.body.vertices
    pts = jax.vmap(lambda x: world_points(State.from_array(x), V))(X)
    phi = pts @ n - params.ground.height
    return jnp.where(params.body.vertex_mask[None, :] > 0, phi, jnp.inf)


def geometry_residuals(spec: ParamSpec, x, X_sup, X_all, w_pen: float = 1.0, pen_tol: float = 0.0):
    """min_k φ_k at the supported samples, and the penetration beyond ``pen_tol``,
    min(φ_k + pen_tol, 0), at every sample."""
    p = spec.unpack(x)
    r_sup = jnp.min(_phi(p, X_sup), axis=1)
    pen = jnp.minimum(_phi(p, X_all) + pen_tol, 0.0)
    pen = jnp.where(jnp.isfinite(pen), pen, 0.0)
    return jnp.concatenate([r_sup, w_pen * pen.reshape(-1)])


def fit_geometry(data: Trajectories, params: Params, names=("ground", "vertices"), *, tol=None,
                 max_iter: int = 100, prior: float = 1e-2, pen_tol: float | None = None) -> dict:
    """Fit ``names`` (ground height, vertices; any subset) to the supported-sample and
    non-penetration conditions. Returns {"params", "values", "loss", "supported", "iterations",
    "wall_time_s", "message"}; the height starts at the median lowest-vertex height of the
    supported samples when ``params`` puts the ground below every one of them. ``prior``: weight
    of a weak pull towards the initial values (length units per unit of the scaled vector), so
    vertices that never touch the ground in the data stay where they were instead of drifting
    along directions the data do not see; the later rollout stages are unregularised."""
    import time

    t0 = time.perf_counter()
    sigma = position_noise(data)
    pen_tol = 2.0 * sigma if pen_tol is None else float(pen_tol)
    masks = supported_samples(data, tol, np.asarray(params.ground.normal))
    X_sup = np.concatenate([np.asarray(t)[m] for t, m in zip(data.trajs, masks)])
    if len(X_sup) == 0:
        raise ValueError("no supported samples (every interval looks like free flight): no contact geometry to fit")
    X_all = np.concatenate([np.asarray(t) for t in data.trajs])
    low = np.asarray(jnp.min(_phi(params, jnp.asarray(X_sup)), axis=1))
    if "ground" in names and np.all(low > 0):  # ground below every supported sample: start on it
        params = params.replace(ground=params.ground.replace(
            height=jnp.asarray(float(params.ground.height) + float(np.median(low)))))
    spec = ParamSpec.build(names, params)
    Xs, Xa = jnp.asarray(X_sup), jnp.asarray(X_all)
    scale = 1.0 / np.sqrt(len(X_sup))
    x0 = jnp.asarray(spec.pack(params))
    w = prior * spec.length
    f = lambda x: jnp.concatenate([scale * geometry_residuals(spec, x, Xs, Xa, pen_tol=pen_tol), w * (x - x0)])
    res = jax.jit(f)
    jac = jax.jit(jax.jacfwd(f))
    r = optim.levenberg_marquardt(lambda x: (res(x), jac(x)), res, spec.pack(params), max_iter=max_iter,
                                  ftol=1e-14, xtol=1e-12)
    p = spec.unpack(jnp.asarray(r.x))
    return {"params": p, "values": spec.flat_values(r.x), "loss": r.loss, "supported": int(len(X_sup)),
            "noise_estimate": sigma, "pen_tol": pen_tol,
            "iterations": r.iterations, "wall_time_s": time.perf_counter() - t0, "message": r.message,
            "history": [{"iter": h["iter"], "loss": h["loss"], "time": h["time"],
                         "values": spec.flat_values(h["x"])} for h in r.history]}


# ---- friction and gravity from the observed poses alone (no model, no rollouts) ----------------
# Used by the real-cube study (studies/sysid/real_cubes.py, "the μ question") and the friction-cone
# benchmark (benchmarks/friction_cone.py): the deceleration of face slides measures the circular-cone
# μ the data show, and the sliding directions the pyramid factor |d_x| + |d_y| of the engine's cone.


def vertex_heights(states, vertices, ground=0.0):
    """(..., K) heights above the ground of the vertices (body frame (K, 3)) at states (..., 13)."""
    q = states[..., 3:7] / np.linalg.norm(states[..., 3:7], axis=-1, keepdims=True)
    R = np.asarray(quat_to_mat(q))
    return states[..., 2:3] + np.einsum("...k,vk->...v", R[..., 2, :], vertices) - ground


def face_slides(traj, vertices, gravity, dt, tol=0.05, min_speed=0.5, spin_ratio=0.3):
    """Mask of the samples of one toss (T, 13) sliding flat on a face: the four lowest vertices within
    ``tol`` of the ground (length units), horizontal speed above ``min_speed`` (units/s), the corner
    speed due to the spin below ``spin_ratio`` of it, vertical speed below g·dt."""
    h = np.sort(vertex_heights(traj, vertices), axis=-1)
    flat = (np.abs(h[:, :4]) < tol).all(-1)
    vh = np.linalg.norm(traj[:, 7:9], axis=-1)
    r = np.max(np.linalg.norm(vertices, axis=-1))
    spin = np.linalg.norm(traj[:, 10:13], axis=-1) * r
    return flat & (vh > min_speed) & (spin < spin_ratio * vh) & (np.abs(traj[:, 9]) < gravity * dt)


def kinematic_mu(trajs, vertices, gravity, dt, min_run=6, **kw) -> dict:
    """μ from the data alone: for every run of ≥ ``min_run`` consecutive face-sliding samples
    (``face_slides``), the horizontal positions are fitted by a quadratic in time (a constant
    acceleration a, noise-robust over the run) and the mean sliding direction d̂. Least squares over
    runs of a = −μ_c g d̂ + b: μ_c the circular-cone μ, b a direction-independent acceleration (a table
    tilt b/g rad, or a frame offset). Also the mean pyramid factor |d_x| + |d_y| and μ_p = the
    pyramid μ of the same decelerations (a_along / (g (|d_x| + |d_y|)))."""
    A, D, W, F = [], [], [], []
    for t in trajs:
        m = face_slides(t, vertices, gravity, dt, **kw)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], m.astype(int), [0]])))
        for s, e in zip(edges[::2], edges[1::2]):
            if e - s < min_run:
                continue
            tt = (np.arange(e - s) - (e - s - 1) / 2) * dt
            c = np.polyfit(tt, t[s:e, 0:2], 2)  # (3, 2): a/2, v, p at the run's middle
            d = c[1] / np.linalg.norm(c[1])
            A.append(2 * c[0]), D.append(d), W.append(e - s), F.append(np.abs(d).sum())
    A, D, W, F = map(np.asarray, (A, D, W, F))
    along = -(A * D).sum(-1) / gravity  # deceleration along the sliding direction / g, per run
    M = np.zeros((2 * len(A), 3))
    M[:, 0] = -gravity * D.ravel()
    M[0::2, 1] = 1.0
    M[1::2, 2] = 1.0
    sw = np.repeat(np.sqrt(W), 2)
    sol = np.linalg.lstsq(M * sw[:, None], A.ravel() * sw, rcond=None)[0]
    boot = np.random.default_rng(0).integers(0, len(A), (200, len(A)))  # spread over runs
    mus = [np.average(along[i], weights=W[i]) for i in boot]
    return {"runs": int(len(A)), "samples": int(W.sum()),
            "mu_circular_mean": float(np.average(along, weights=W)),
            "mu_circular_median": float(np.median(along)),
            "mu_circular_90": [float(np.percentile(mus, 5)), float(np.percentile(mus, 95))],
            "mu_circular_with_tilt": float(sol[0]), "tilt_accel_over_g": [float(sol[1] / gravity), float(sol[2] / gravity)],
            "pyramid_factor_mean": float(np.average(F, weights=W)),
            "mu_pyramid_mean": float(np.average(along / F, weights=W))}


def free_flight_gravity(trajs, vertices, dt, clearance=0.5) -> dict:
    """The data's own free-flight acceleration: the median over samples whose lowest vertex is more
    than ``clearance`` above the table (at both ends of the interval) of (v[k+1] − v[k]) / dt."""
    a = []
    for t in trajs:
        h = vertex_heights(t, vertices).min(-1)
        free = (h[1:] > clearance) & (h[:-1] > clearance)
        a.append(((t[1:, 7:10] - t[:-1, 7:10]) / dt)[free])
    a = np.concatenate(a)
    return {"intervals": int(len(a)), "median_accel": np.median(a, 0).tolist()}
