"""System identification of (mu, eps) for the six models (Fazeli et al., eq. 7-9).

* target impulse per impact: the feasible impulse that best explains the measured velocity change
  (``target="best"``, reproduces the published ``impulse_best``) or eq. 7's unconstrained
  momentum least squares (``target="eq7"``);
* ``mu_s``: the smallest friction coefficient at which a model's impulse stops changing
  (sticking), found by bisection;
* ensemble identification: ``min Σ_i ‖P_i - Model_i(mu, eps)‖`` over ``0 <= mu <= mu_max``,
  ``0 <= eps <= 1`` (grid search followed by zoomed grids — the cost is cheap and the grid is robust
  to the flat regions above ``mu_s``);
* per-impact identification with ``0 <= mu <= mu_s(eps)`` (parameterised as ``mu = s mu_s(eps)``).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .data import ImpactData
from .ellipse import constrained_lsq_impulse, momentum_lsq_impulse
from .models import MODEL_NAMES, MODELS, batched, model_index, rowwise

MU_MAX = 2.0


def check_params(mu, eps):
    """Raise ``ValueError`` for friction/restitution outside ``mu >= 0``, ``0 <= eps <= 1``."""
    mu_a, eps_a = np.asarray(mu, dtype=float), np.asarray(eps, dtype=float)
    if not np.all(np.isfinite(mu_a)) or np.any(mu_a < 0):
        raise ValueError(f"mu must be finite and >= 0, got {mu}")
    if not np.all(np.isfinite(eps_a)) or np.any(eps_a < 0) or np.any(eps_a > 1):
        raise ValueError(f"eps must lie in [0, 1], got {eps}")


def _best_target(v0, vf, J, Minv):
    A = Minv @ J.T
    W = J @ A
    W = 0.5 * (W + W.T)
    return constrained_lsq_impulse(A.T @ A, A.T @ (vf - v0), J @ v0, W)


_best_targets = jax.jit(jax.vmap(_best_target, in_axes=(0, 0, 0, None)))
_eq7_targets = jax.jit(jax.vmap(momentum_lsq_impulse, in_axes=(0, 0, 0, None)))


def target_impulses(data: ImpactData, target: str = "best") -> np.ndarray:
    """Per-impact target impulse (N, 2). One compiled program per target serves the training and
    the test file (rows padded: ``models.rowwise``)."""
    rows = (data.v_pre, data.v_post, data.J)
    if target == "eq7":
        return rowwise(_eq7_targets, rows, jnp.asarray(data.M))
    if target == "best":
        return rowwise(_best_targets, rows, jnp.asarray(data.Minv))
    raise ValueError(f"target must be 'best' or 'eq7', got {target!r}")


def _fn(model):
    return MODELS[model]


def _per_model(impl):
    """``impl(fn, *args)`` for the model of a traced ``index``: ``lax.switch`` over the six models'
    whole computations, so one compiled program serves every model (each branch is the program a
    static model name compiled before) instead of one program per model."""
    def run(index, *args, **static):
        return jax.lax.switch(index, [partial(impl, MODELS[n], **static) for n in MODEL_NAMES], *args)
    return run


def _mu_stick(fn, u0, W, eps, rtol, iters: int = 40):
    eps = jnp.broadcast_to(eps, u0.shape[:1])

    def one(u0, W, e):
        P_inf = fn(u0, W, MU_MAX, e)
        scale = jnp.linalg.norm(P_inf) + 1e-300

        def sticks(mu):
            return jnp.linalg.norm(fn(u0, W, mu, e) - P_inf) <= rtol * scale

        def body(_, ab):
            a, b = ab
            m = 0.5 * (a + b)
            s = sticks(m)
            return jnp.where(s, a, m), jnp.where(s, m, b)

        _, b = jax.lax.fori_loop(0, iters, body, (jnp.zeros(()), jnp.asarray(MU_MAX)))
        return b

    return jax.vmap(one)(u0, W, eps)


_mu_stick_any = jax.jit(_per_model(_mu_stick), static_argnames=("iters",))


def mu_stick(model: str, u0, W, eps, iters: int = 40, rtol: float = 1e-6):
    """Bisection for ``mu_s``: smallest mu whose impulse equals (to ``rtol``) the one at MU_MAX.
    Vectorised over impacts (``u0`` (N,2), ``W`` (N,2,2)), ``eps`` scalar or (N,). Jitted; one
    program per input shape serves the six models."""
    return _mu_stick_any(model_index(model), u0, W, eps, rtol, iters=iters)


def _cost_grid(fn, u0, W, P, mus, epss):
    """(len(mus), len(epss)) matrix of Σ_i ‖P_i - Model_i‖."""

    def cost(mu, e):
        Pm = jax.vmap(fn, in_axes=(0, 0, None, None))(u0, W, mu, e)
        return jnp.sum(jnp.linalg.norm(Pm - P, axis=1))

    return jax.lax.map(lambda mu: jax.vmap(lambda e: cost(mu, e))(epss), mus)


_cost_grid_jit = jax.jit(_per_model(_cost_grid))


def fit_ensemble(model: str, u0, W, P, mu_max: float | None = None, n_grid: int = 21,
                 n_zoom: int = 5):
    """Ensemble (mu, eps) minimising Σ‖P_i - Model_i(mu, eps)‖; returns (mu, eps, mean cost)."""
    u0, W, P = jnp.asarray(u0), jnp.asarray(W), jnp.asarray(P)
    if mu_max is None:
        mu_max = float(jnp.max(mu_stick(model, u0, W, 1.0)))
        mu_max = min(max(mu_max, 1e-3), MU_MAX)
    lo = np.array([0.0, 0.0])
    hi = np.array([mu_max, 1.0])
    best = None
    for _ in range(n_zoom + 1):
        mus = jnp.linspace(lo[0], hi[0], n_grid)
        eps = jnp.linspace(lo[1], hi[1], n_grid)
        C = np.asarray(_cost_grid_jit(model_index(model), u0, W, P, mus, eps))
        i, j = np.unravel_index(np.argmin(C), C.shape)
        best = (float(mus[i]), float(eps[j]), float(C[i, j]) / P.shape[0])
        step = (hi - lo) / (n_grid - 1)
        centre = np.array(best[:2])
        lo = np.maximum(centre - 2 * step, [0.0, 0.0])
        hi = np.minimum(centre + 2 * step, [mu_max, 1.0])
    return best


def _fit_per_impact(fn, u0, W, P, n_grid: int = 15, n_zoom: int = 5):

    def one(u0, W, P):
        def mus_of(e):
            return _mu_stick(fn, u0[None], W[None], e, 1e-6)[0]

        def res(s, e):
            return jnp.linalg.norm(fn(u0, W, s * mus_of(e), e) - P)

        def grid(lo, hi):
            ss = jnp.linspace(lo[0], hi[0], n_grid)
            ee = jnp.linspace(lo[1], hi[1], n_grid)
            R = jax.vmap(lambda e: jax.vmap(lambda s: res(s, e))(ss))(ee)  # (e, s)
            k = jnp.argmin(R)
            i, j = k // n_grid, k % n_grid
            return jnp.array([ss[j], ee[i]]), R[i, j], (hi - lo) / (n_grid - 1)

        lo0, hi0 = jnp.zeros(2), jnp.ones(2)

        def zoom(k, carry):  # k = 0: the whole square; then zoomed around the best point
            x, r, step = carry
            lo = jnp.where(k == 0, lo0, jnp.maximum(x - 2 * step, 0.0))
            hi = jnp.where(k == 0, hi0, jnp.minimum(x + 2 * step, 1.0))
            return grid(lo, hi)

        # the first grid inside the loop: the grid (and its mu_s bisections) compiled once, not twice
        start = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(grid, lo0, hi0))
        x, r, _ = jax.lax.fori_loop(0, n_zoom + 1, zoom, start)
        mu = x[0] * mus_of(x[1])
        return mu, x[1], r

    return jax.vmap(one)(u0, W, P)


_fit_per_impact_any = jax.jit(_per_model(_fit_per_impact), static_argnames=("n_grid", "n_zoom"))


def fit_per_impact(model: str, u0, W, P, n_grid: int = 15, n_zoom: int = 5):
    """Per-impact (mu, eps) with ``0 <= mu <= mu_s(eps)``; returns (mu, eps, residual ‖ΔP‖), each (N,).
    Jitted; one program per input shape serves the six models."""
    return _fit_per_impact_any(model_index(model), u0, W, P, n_grid=n_grid, n_zoom=n_zoom)


def velocity_errors(data: ImpactData, P) -> np.ndarray:
    """‖S(v_pre + M⁻¹JᵀP - v_post)‖ per impact, S = diag(1, 1, rho)."""
    dv = np.einsum("jk,nlj,nl->nk", data.Minv, data.J, np.asarray(P))
    return velocity_errors_dv(data, dv)


def velocity_errors_dv(data: ImpactData, dv) -> np.ndarray:
    S = np.array([1.0, 1.0, data.rho])
    return np.linalg.norm((data.v_pre + np.asarray(dv) - data.v_post) * S, axis=1)


def predict_all(data: ImpactData, params: dict) -> dict:
    """Impulses (N, 2) of every model with its (mu, eps) from ``params[name] = (mu, eps)``."""
    u0, W = jnp.asarray(data.u0), jnp.asarray(data.W)
    out = {}
    for name in MODEL_NAMES:
        mu, eps = params[name]
        check_params(mu, eps)
        out[name] = np.asarray(batched(name)(u0, W, float(mu), float(eps)))
    return out


def best_worst(errors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Percent of impacts on which each model (column) is best / worst. ``errors`` (N, 6)."""
    n, k = errors.shape
    best = np.bincount(np.argmin(errors, axis=1), minlength=k) / n * 100
    worst = np.bincount(np.argmax(errors, axis=1), minlength=k) / n * 100
    return best, worst
