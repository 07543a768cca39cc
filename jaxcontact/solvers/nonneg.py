"""Smooth convex programs over the nonnegative orthant (ContactNets' inner problem, in the
extreme-ray coordinates of the friction pyramid): FISTA with a fixed iteration count on a
Jacobi-scaled problem, or jaxopt ``ProjectedGradient`` with its stopping test; implicit gradients
through ``implicit.implicit_root``."""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .implicit import implicit_root

@dataclasses.dataclass(frozen=True)
class NonnegSettings:
    """Settings of ``minimize_nonneg`` (accelerated projected gradient, FISTA).

    max_iter: iteration count ("fista") or cap ("jaxopt": the vmapped loop runs until every problem
    of the batch meets ``tol`` or the cap). tol ("jaxopt" only): jaxopt's error, the step length
    ‖x_k − x_{k−1}‖ in the scaled variables.
    power_iters: power-iteration steps estimating L, the largest eigenvalue of the scaled curvature.
    implicit_diff: differentiate the solution implicitly (jaxopt) with respect to the problem's
    arguments; with False the solution is returned without derivatives (stop-gradient).
    method: "fista" (default) — FISTA with unit step, t₀ = 1, x₀ = y₀ = 0, i.e. jaxopt's iterates,
    for exactly ``max_iter`` iterations in a ``lax.scan`` (coefficients from ``_fista_momentum``), no per-iteration
    stopping test (``tol`` unused; the returned ``error`` is the last step's ‖x_k − x_{k−1}‖, jaxopt's
    error definition); "jaxopt" — jaxopt ``ProjectedGradient`` (``lax.while_loop`` with its stopping
    test at ``tol``; the default before the fixed-iteration path, kept for comparison).
    unroll: loop unroll factor of the "fista" method.
    """

    max_iter: int = 300
    tol: float = 1e-9
    power_iters: int = 12
    implicit_diff: bool = True
    method: str = "fista"
    unroll: int = 1

    def __post_init__(self):
        if self.max_iter < 1:
            raise ValueError(f"NonnegSettings.max_iter must be >= 1, got {self.max_iter}")
        if not self.tol > 0:
            raise ValueError(f"NonnegSettings.tol must be positive, got {self.tol}")
        if self.method not in ("jaxopt", "fista"):
            raise ValueError(f"NonnegSettings.method must be 'jaxopt' or 'fista', got {self.method!r}")
        if self.unroll < 1:
            raise ValueError(f"NonnegSettings.unroll must be >= 1, got {self.unroll}")


@struct.dataclass
class NonnegSolution:
    x: jnp.ndarray
    iterations: jnp.ndarray
    error: jnp.ndarray


def minimize_nonneg(fun: Callable, curvature, args: tuple = (),
                    settings: NonnegSettings = NonnegSettings(), grad: Callable | None = None) -> NonnegSolution:
    """Minimise a smooth convex ``fun(x, *args)`` over x >= 0 (x a vector of length n).

    ``curvature`` (n, n) is a PSD matrix bounding the Hessian of ``fun`` from above (for a QP,
    its Hessian). The variables are Jacobi-scaled, x = s ⊙ y with s = diag(curvature)^(-1/2),
    and the objective divided by L, the largest eigenvalue of the scaled curvature (power
    iteration), so FISTA runs with unit step on a well-conditioned problem: a fixed number of
    iterations in a ``lax.scan`` (``settings.method == "fista"``, the default) or jaxopt
    ``ProjectedGradient`` with its stopping test (``"jaxopt"``) — the same iterates. Pure, jit- and vmap-able (a batch of problems is one ``vmap``).
    With ``settings.implicit_diff`` the solution is differentiable with respect to ``args``
    implicitly at the fixed point x = proj(x − ∇f(x)/L) — reverse mode never enters the loop.

    ``grad(x, *args)``, optional: ∇fun, hand-written (e.g. one dense matrix–vector product for a
    quadratic instead of autodiff's product and transposed product). Used by the "fista" method
    (iterations and implicit-differentiation optimality condition); the "jaxopt" method always
    differentiates ``fun`` itself.
    """
    from jaxopt import ProjectedGradient
    from jaxopt.projection import projection_non_negative

    Hc = jax.lax.stop_gradient(jnp.asarray(curvature))
    n = Hc.shape[-1]
    d = jnp.diagonal(Hc)
    floor = jnp.maximum(1e-12 * jnp.max(d), jnp.finfo(Hc.dtype).tiny)
    s = 1.0 / jnp.sqrt(jnp.maximum(d, floor))
    Hs = s[:, None] * Hc * s[None, :]
    v = jnp.ones(n, Hc.dtype)
    for _ in range(settings.power_iters):
        v = Hs @ v
        v = v / (jnp.linalg.norm(v) + 1e-300)
    L = 1.05 * (v @ Hs @ v) + 1e-300  # Jacobi-scaled: L <= n, >= 1 whenever H ≠ 0

    def scaled(y, s, L, *a):
        return fun(s * y, *a) / L

    if grad is None:
        scaled_grad = jax.grad(scaled)
    else:
        def scaled_grad(y, s, L, *a):
            return s * grad(s * y, *a) / L

    if not settings.implicit_diff:
        args = jax.lax.stop_gradient(args)
    if settings.method == "fista":
        y, it, err = _fista_nonneg(scaled_grad, jnp.zeros_like(s), (s, L, *args), settings)
        return NonnegSolution(x=s * y, iterations=it, error=err)
    solver = ProjectedGradient(fun=scaled, projection=projection_non_negative, stepsize=1.0,
                               maxiter=settings.max_iter, tol=settings.tol, acceleration=True,
                               implicit_diff=settings.implicit_diff, jit=True)
    res = solver.run(jnp.zeros(n, Hc.dtype), None, s, L, *args)
    return NonnegSolution(x=s * res.params, iterations=res.state.iter_num, error=res.state.error)


def _fista_nonneg(grad: Callable, x0, args: tuple, settings: NonnegSettings):
    """Exactly ``settings.max_iter`` FISTA iterations on min f(x, *args) s.t. x >= 0 given ``grad`` = ∇f,
    unit step (f already scaled so that its gradient is 1-Lipschitz): the iterates of jaxopt's
    ``ProjectedGradient(acceleration=True, stepsize=1)`` without its stopping test. Returns
    (x, iterations, last step norm). With ``settings.implicit_diff`` the solution carries implicit
    derivatives (jaxopt ``custom_root`` on the projected-gradient fixed point, the same optimality
    condition as jaxopt's solver, adjoint system solved densely as in ``solve_lcp``); otherwise the
    caller has already stopped the gradients."""
    momentum = _fista_momentum(settings.max_iter, np.dtype(x0.dtype))  # numpy: no tracer closed over

    def solve(x_init, *a):
        a = jax.lax.stop_gradient(a)

        def body(carry, mom):
            x, y, _err = carry
            x_new = jnp.maximum(y - grad(y, *a), 0.0)
            return (x_new, x_new + mom * (x_new - x), jnp.linalg.norm(x_new - x)), None

        init = (x_init, x_init, jnp.full((), jnp.inf, x_init.dtype))
        (x, _, err), _ = jax.lax.scan(body, init, jnp.asarray(momentum), unroll=settings.unroll)
        return x, err

    if settings.implicit_diff:
        def optimality(x, *a):
            return jnp.maximum(x - grad(x, *a), 0.0) - x

        solve = implicit_root(optimality, has_aux=True)(solve)
    x, err = solve(x0, *args)
    return x, jnp.asarray(settings.max_iter, jnp.int32), err


def _fista_momentum(num_iter: int, dtype) -> np.ndarray:
    """FISTA's extrapolation coefficients (t_k − 1)/t_{k+1}, t_0 = 1 (data-independent, so computed once)."""
    t, out = 1.0, []
    for _ in range(num_iter):
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        out.append((t - 1.0) / t_next)
        t = t_next
    return np.asarray(out, dtype)


def minimize_nonneg_qp(Q, c, P=None, a=None, weight: float = 1.0,
                       settings: NonnegSettings = NonnegSettings(method="fista")) -> NonnegSolution:
    """Minimise ½ xᵀQx + cᵀx + weight · Σ_j min(0, a_j + (P x)_j)² over x >= 0 (Q PSD (n, n), c (n,),
    P (m, n), a (m,); P, a optional): a convex quadratic plus a squared hinge.

    The same problem, scaling and iterates as ``minimize_nonneg(fun, Q + 2·weight·PᵀP, ...)``
    (Jacobi scaling by that curvature's diagonal, L by power iteration, FISTA with unit step from
    x = 0), written for this structure: Q, c, P are scaled once before the loop, so an iteration is
    one product with the stacked (n + m, n) matrix [Q; P], one with Pᵀ and two fused elementwise
    passes. ``settings.method``: "fista" — exactly ``max_iter`` iterations (``lax.scan``, no
    stopping test); "jaxopt" — delegates to ``minimize_nonneg`` (jaxopt ``ProjectedGradient`` with
    its stopping test). ``error``: ‖x_K − x_{K−1}‖ of the last step (jaxopt's error definition).
    With ``settings.implicit_diff`` the solution is differentiable in (Q, c, P, a) implicitly
    (jaxopt ``custom_root`` on the projected-gradient fixed point, dense guarded adjoint solve as in
    ``solve_lcp``); otherwise stop-gradient.
    """
    Q = jnp.asarray(Q)
    n = Q.shape[-1]
    dtype = Q.dtype
    c = jnp.asarray(c, dtype)
    if P is None:
        P, a = jnp.zeros((0, n), dtype), jnp.zeros((0,), dtype)
    P, a = jnp.asarray(P, dtype), jnp.asarray(a, dtype)
    if settings.method != "fista":
        fun = lambda x, Q, c, P, a: (0.5 * x @ Q @ x + c @ x + weight * jnp.sum(jnp.minimum(a + P @ x, 0.0) ** 2))
        H = Q + 2.0 * weight * P.T @ P
        return minimize_nonneg(fun, H, (Q, c, P, a), settings)
    if not settings.implicit_diff:
        Q, c, P, a = jax.lax.stop_gradient((Q, c, P, a))

    # the curvature H = Q + 2·weight·PᵀP is never formed: its diagonal and its products suffice
    Qc, Pc = jax.lax.stop_gradient((Q, P))
    d = jnp.diagonal(Qc) + 2.0 * weight * jnp.sum(Pc * Pc, axis=0)
    floor = jnp.maximum(1e-12 * jnp.max(d), jnp.finfo(dtype).tiny)
    s = 1.0 / jnp.sqrt(jnp.maximum(d, floor))
    QPh = jnp.concatenate([s[:, None] * Qc * s[None, :], Pc * s[None, :]], axis=0)  # scaled [Q; P]

    def Hs(v):  # scaled curvature times v: one stacked product
        z = QPh @ v
        return z[:n] + 2.0 * weight * (z[n:] @ QPh[n:])

    v = jnp.ones(n, dtype)
    for _ in range(settings.power_iters):
        v = Hs(v)
        v = v / (jnp.linalg.norm(v) + 1e-300)
    L = 1.05 * (v @ Hs(v)) + 1e-300
    # scaled problem in y = x / s, divided by L: gradient  Qs y + cs + Pt · min(0, a + Ps y)
    cs = s * c / L
    if settings.implicit_diff:  # Q, P carry derivatives: scale them again
        Qs = (s[:, None] * Q * s[None, :]) / L
        Ps = P * s[None, :]
    else:  # the scaled matrices of the power iteration are the loop's
        Qs, Ps = QPh[:n] / L, QPh[n:]
    Pt = (2.0 * weight / L) * Ps
    momentum = _fista_momentum(settings.max_iter, np.dtype(dtype))  # numpy: no tracer closed over

    def grad(y, Qs, cs, Ps, Pt, a):
        z = jnp.concatenate([Qs, Ps], axis=0) @ y
        return z[:n] + cs + jnp.minimum(a + z[n:], 0.0) @ Pt

    def solve(y0, Qs, cs, Ps, Pt, a):
        Qs, cs, Ps, Pt, a = jax.lax.stop_gradient((Qs, cs, Ps, Pt, a))
        QP = jnp.concatenate([Qs, Ps], axis=0)  # one product per iteration for both terms

        def body(carry, mom):
            x, y = carry
            z = QP @ y
            # the (m, n) product with the hinge as a broadcast-and-sum: fused with the update below
            g = z[:n] + cs + jnp.sum(jnp.minimum(a + z[n:], 0.0)[:, None] * Pt, axis=0)
            x_new = jnp.maximum(y - g, 0.0)
            return (x_new, x_new + mom * (x_new - x)), None

        (x, y), _ = jax.lax.scan(body, (y0, y0), jnp.asarray(momentum), unroll=settings.unroll)
        # y_K = x_K + μ_K (x_K − x_{K−1}): the last step without carrying x_{K−1} (μ_1 = 0)
        last = float(momentum[-1])
        err = jnp.linalg.norm(y - x) / last if last > 0 else jnp.linalg.norm(x - y0)
        return x, err

    if settings.implicit_diff:
        def optimality(y, Qs, cs, Ps, Pt, a):
            return jnp.maximum(y - grad(y, Qs, cs, Ps, Pt, a), 0.0) - y

        solve = implicit_root(optimality, has_aux=True)(solve)
    y, err = solve(jnp.zeros_like(cs), Qs, cs, Ps, Pt, a)  # zeros_like: inherits shard_map axis types
    return NonnegSolution(x=s * y, iterations=jnp.asarray(settings.max_iter, jnp.int32), error=err)
