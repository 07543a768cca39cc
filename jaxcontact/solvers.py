"""Numerical solvers. The only module that imports jaxopt, so it can be swapped in one place.

``solve_lcp`` solves the box-friction linear complementarity problem of time-stepping contact:
find z with, for each row i and w = A z + b,

    lo_i(z) <= z_i <= hi_i(z),   z_i = lo_i ⇒ w_i >= 0,   z_i = hi_i ⇒ w_i <= 0,   else w_i = 0,

where lo_i = lo0_i − c_i z[parent_i] and hi_i = hi0_i + c_i z[parent_i]. Normal rows have
(lo0, hi0, c) = (0, ∞, 0); friction rows (0, 0, μ) with parent their normal row, i.e. the
polyhedral (pyramidal) Coulomb cone |z_t| <= μ z_n per tangent direction; bilateral rows (−∞, ∞, 0).

The forward solve is projected Gauss–Seidel to a stated tolerance with an iteration cap
(``lax.while_loop``); the derivative is *implicit*, taken at the solution through jaxopt's
``custom_fixed_point`` on the projected-Jacobi map T(z) = clip(z − (A z + b)/diag A, lo, hi),
whose fixed points are exactly the LCP solutions. Reverse mode never enters the loop, so
gradients exist for any iteration count, and the adjoint linear system is solved densely with
a guard that keeps gradients finite where the contact problem is degenerate.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jaxopt import implicit_diff as _jaxopt_implicit

# Rows up to this count get a fully unrolled Gauss–Seidel sweep; larger problems use fori_loop.
_UNROLL_ROWS = 64


@dataclasses.dataclass(frozen=True)
class LCPSettings:
    """Projected Gauss–Seidel settings.

    tol: (floored at 64 machine epsilons of the problem's velocity scale, so float32 runs do
    not chase round-off) stop when a sweep changes no constraint velocity by more than tol (m/s), i.e.
    max_i |diag(A)_i Δz_i| < tol. The returned residual is the natural-map residual
    max_i |diag(A)_i (T(z) − z)_i| at the returned z, in the same units. max_iter: iteration cap (sweeps). regularization: relative diagonal added
    to A (constraint-force mixing) so redundant contacts (a face on the ground has four
    normals for three constrained directions) have a unique, differentiable solution.
    fixed_iterations: run exactly ``max_iter`` sweeps (no data-dependent loop exit; useful on
    accelerators where a uniform trip count is faster).
    """

    tol: float = 1e-6
    max_iter: int = 100
    regularization: float = 1e-6
    fixed_iterations: bool = False

    def __post_init__(self):
        if not self.tol > 0:
            raise ValueError(f"LCPSettings.tol must be positive, got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"LCPSettings.max_iter must be >= 1, got {self.max_iter}")
        if self.regularization < 0:
            raise ValueError(f"LCPSettings.regularization must be >= 0, got {self.regularization}")


@struct.dataclass
class LCPSolution:
    z: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray


@dataclasses.dataclass(frozen=True)
class RowStructure:
    """Static row structure of the box-friction LCP (numpy arrays, closed over at trace time)."""

    lo0: np.ndarray
    hi0: np.ndarray
    parent: np.ndarray
    is_friction: np.ndarray

    @staticmethod
    def contacts(num_contacts: int, num_tangents: int, bilateral: int = 0) -> "RowStructure":
        """Rows ``[bilateral..., (n, t_1..t_k) per contact]``."""
        per = 1 + num_tangents
        m = bilateral + num_contacts * per
        lo0 = np.zeros(m)
        hi0 = np.zeros(m)
        parent = np.arange(m)
        fric = np.zeros(m, dtype=bool)
        lo0[:bilateral] = -np.inf
        hi0[:bilateral] = np.inf
        for c in range(num_contacts):
            i = bilateral + c * per
            hi0[i] = np.inf
            for t in range(1, per):
                parent[i + t] = i
                fric[i + t] = True
        return RowStructure(lo0=lo0, hi0=hi0, parent=parent, is_friction=fric)


def _bounds(rows: RowStructure, z, coupling):
    zp = z[rows.parent]
    lo = jnp.asarray(rows.lo0, z.dtype) - coupling * zp
    hi = jnp.asarray(rows.hi0, z.dtype) + coupling * zp
    return lo, hi


def _regularized(A, reg):
    d = jnp.diagonal(A)
    scale = jnp.maximum(jnp.max(jnp.abs(d)), jnp.finfo(A.dtype).tiny)
    return A + jnp.diag(reg * d + 1e-12 * scale)


def _fixed_point_map(rows: RowStructure):
    def T(z, A, b, coupling):
        d = jnp.diagonal(A)
        y = z - (A @ z + b) / d
        lo, hi = _bounds(rows, z, coupling)
        return jnp.clip(y, lo, hi)

    return T


def _residual(T, z, A, b, coupling):
    return jnp.max(jnp.abs(jnp.diagonal(A) * (T(z, A, b, coupling) - z)), initial=0.0)


def _pgs_sweep(rows: RowStructure, z, A, b, coupling):
    """One projected Gauss–Seidel sweep; returns (z, max scaled change)."""
    m = z.shape[0]
    d = jnp.diagonal(A)
    if m <= _UNROLL_ROWS:
        # Unrolled on scalars: under vmap every row update is an elementwise batch operation,
        # so XLA fuses the sweep into few kernels with no dynamic-update-slices.
        zs = [z[i] for i in range(m)]
        change = jnp.zeros((), z.dtype)
        for i in range(m):
            acc = b[i]
            for j in range(m):
                acc = acc + A[i, j] * zs[j]
            zi = zs[i] - acc / d[i]
            if rows.is_friction[i]:
                bound = coupling[i] * zs[int(rows.parent[i])]
                zi = jnp.clip(zi, -bound, bound)
            elif rows.lo0[i] == 0.0:
                zi = jnp.maximum(zi, 0.0)
            change = jnp.maximum(change, jnp.abs(d[i] * (zi - zs[i])))
            zs[i] = zi
        return jnp.stack(zs), change

    lo0 = jnp.asarray(rows.lo0, z.dtype)
    hi0 = jnp.asarray(rows.hi0, z.dtype)
    parent = jnp.asarray(rows.parent)

    def row(i, carry):
        z, change = carry
        zi = z[i] - (jnp.dot(A[i], z) + b[i]) / d[i]
        zp = z[parent[i]]
        zi = jnp.clip(zi, lo0[i] - coupling[i] * zp, hi0[i] + coupling[i] * zp)
        return z.at[i].set(zi), jnp.maximum(change, jnp.abs(d[i] * (zi - z[i])))

    return jax.lax.fori_loop(0, m, row, (z, jnp.zeros((), z.dtype)))


def _dense_guarded_solve(matvec: Callable, rhs, ridge: float = 1e-10):
    """Dense LU solve of the implicit-differentiation system (relative ridge) with a finiteness guard."""
    n = rhs.shape[0]
    M = jax.vmap(matvec, in_axes=1, out_axes=1)(jnp.eye(n, dtype=rhs.dtype))
    scale = jnp.maximum(jnp.max(jnp.abs(M)), 1.0)
    x = jnp.linalg.solve(M + (ridge * scale) * jnp.eye(n, dtype=rhs.dtype), rhs)
    return jnp.where(jnp.all(jnp.isfinite(x)), x, jnp.zeros_like(x))


def implicit_root(optimality_fun: Callable, has_aux: bool = False, ridge: float = 1e-10):
    """Decorator (jaxopt ``custom_root``): differentiate a root solver ``solver(x0, θ)`` implicitly
    through ``optimality_fun(x, θ) = 0`` at the returned root, with the dense guarded adjoint
    solve used by ``solve_lcp`` (relative ``ridge``). Reverse mode never enters the solver."""
    return _jaxopt_implicit.custom_root(optimality_fun, has_aux=has_aux,
                                        solve=functools.partial(_dense_guarded_solve, ridge=ridge))


def solve_lcp(A, b, coupling, rows: RowStructure, settings: LCPSettings = LCPSettings(), z0=None):
    """Solve the box-friction LCP (see module docstring); differentiable in A, b and coupling.

    A: (m, m) Delassus matrix J M⁻¹ Jᵀ. b: (m,) free constraint velocity plus bias.
    coupling: (m,) friction coefficient of each friction row (ignored on other rows).
    Returns ``LCPSolution(z, residual, iterations)``.
    """
    A = _regularized(A, settings.regularization)
    T = _fixed_point_map(rows)
    if z0 is None:
        z0 = jnp.zeros_like(b)

    @_jaxopt_implicit.custom_fixed_point(T, has_aux=True, solve=_dense_guarded_solve)
    def _solve(z_init, A, b, coupling):
        A, b, coupling = (jax.lax.stop_gradient(x) for x in (A, b, coupling))

        def body(carry):
            z, _, it = carry
            z, change = _pgs_sweep(rows, z, A, b, coupling)
            return z, change, it + 1

        # In float32 a velocity change below ~1e-5 m/s is round-off: never ask for less.
        floor = 64 * jnp.finfo(b.dtype).eps * (1.0 + jnp.max(jnp.abs(jnp.where(b < 1e3, b, 0.0))))
        tol = jnp.maximum(jnp.asarray(settings.tol, b.dtype), floor)
        init = (z_init, jnp.asarray(jnp.inf, b.dtype), jnp.asarray(0, jnp.int32))
        if settings.fixed_iterations:
            z, res, it = jax.lax.fori_loop(0, settings.max_iter, lambda _, c: body(c), init)
        else:
            z, res, it = jax.lax.while_loop(
                lambda c: (c[2] < settings.max_iter) & (c[1] > tol), body, init
            )
        return z, (_residual(T, z, A, b, coupling), it)

    z, (res, it) = _solve(z0, A, b, coupling)
    return LCPSolution(z=z, residual=res, iterations=it)


# --------------------------------------------------------------------------------------------
# Small dense convex QPs (ContactNets' inner problem over contact impulses).


@dataclasses.dataclass(frozen=True)
class QPSettings:
    """Settings of ``solve_qp`` (jaxopt ``BoxOSQP``, ADMM).

    tol: primal/dual residual tolerance. max_iter: ADMM iteration cap. rho_start: initial ADMM
    step size (adapted every ``stepsize_updates_frequency`` iterations). linear_solver: how
    ADMM's inner linear systems are solved ("lu" dense, "cg", "cg+jacobi").
    """

    tol: float = 1e-7
    max_iter: int = 2000
    rho_start: float = 0.1
    stepsize_updates_frequency: int = 10
    linear_solver: str = "cg+jacobi"

    def __post_init__(self):
        if not self.tol > 0:
            raise ValueError(f"QPSettings.tol must be positive, got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"QPSettings.max_iter must be >= 1, got {self.max_iter}")


@struct.dataclass
class QPSolution:
    x: jnp.ndarray
    dual: jnp.ndarray
    iterations: jnp.ndarray
    error: jnp.ndarray


def solve_qp(Q, c, G, h, settings: QPSettings = QPSettings()) -> QPSolution:
    """Solve min ½ xᵀQx + cᵀx subject to G x <= h (Q positive semi-definite, dense, small).

    jaxopt ``BoxOSQP`` (OSQP's ADMM, dense LU for its linear systems) is the forward solver;
    derivatives of the solution with respect to (Q, c, G, h) are *implicit*: jaxopt
    differentiates the solver's optimality conditions at the returned solution, so reverse
    mode never enters the ADMM loop. Pure and jit/vmap-able (a batch of QPs is one ``vmap``).
    Returns ``QPSolution(x, dual, iterations, error)`` with ``dual`` the multipliers of G x <= h.
    """
    from jaxopt import BoxOSQP

    solver = BoxOSQP(
        eq_qp_solve=settings.linear_solver,
        tol=settings.tol,
        maxiter=settings.max_iter,
        rho_start=settings.rho_start,
        stepsize_updates_frequency=settings.stepsize_updates_frequency,
        check_primal_dual_infeasability=False,
        jit=True,
    )
    lower = jnp.full_like(h, -jnp.inf)
    res = solver.run(params_obj=(Q, c), params_eq=G, params_ineq=(lower, h))
    return QPSolution(
        x=res.params.primal[0],
        dual=res.params.dual_eq,
        iterations=res.state.iter_num,
        error=res.state.error,
    )


# --------------------------------------------------------------------------------------------
# Smooth convex programs over the nonnegative orthant (ContactNets' inner problem, in the
# extreme-ray coordinates of the friction pyramid).


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
