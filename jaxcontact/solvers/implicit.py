"""Implicit differentiation, declared once for every solver of the package (jaxopt).

``implicit_root`` (jaxopt ``custom_root``) and ``implicit_fixed_point`` (jaxopt
``custom_fixed_point``) wrap a solver so that its derivative is taken at the returned solution
through the optimality condition (F(x, θ) = 0, or x = T(x, θ)); reverse mode never enters the
solver's loop. The adjoint linear system is solved with a ridge and a finiteness guard, so
degenerate problems give zero rather than NaN cotangents, either densely (``dense_guarded_solve``:
the matrix formed from n products, O(n²) memory, O(n³) time; the default) or matrix-free
(``krylov_guarded_solve``: restarted GMRES on the products alone, O(n) memory; for solvers that
never form their matrix). Solvers call these and stay unaware of how the derivative is formed.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
from jaxopt import implicit_diff as _jaxopt_implicit

from .. import linalg


def dense_guarded_solve(matvec: Callable, rhs, ridge: float = 1e-10):
    """Dense LU solve of the implicit-differentiation system (relative ridge) with a finiteness guard."""
    n = rhs.shape[0]
    M = jax.vmap(matvec, in_axes=1, out_axes=1)(jnp.eye(n, dtype=rhs.dtype))
    scale = jnp.maximum(jnp.max(jnp.abs(M)), 1.0)
    x = linalg.solve(M + (ridge * scale) * jnp.eye(n, dtype=rhs.dtype), rhs)
    return jnp.where(jnp.all(jnp.isfinite(x)), x, jnp.zeros_like(x))


KRYLOV_RESTART = 64
"""Krylov vectors kept between restarts of ``krylov_guarded_solve`` (its memory: this many n-vectors)."""
KRYLOV_RESTARTS = 10
"""Restarts of ``krylov_guarded_solve`` at most (KRYLOV_RESTART · KRYLOV_RESTARTS products)."""


def krylov_guarded_solve(matvec: Callable, rhs, ridge: float = 1e-10, x0=None, tol: float | None = None,
                         restarts: int = KRYLOV_RESTARTS):
    """Matrix-free solve of the implicit-differentiation system: restarted GMRES (Givens form,
    stable in float32 where the batched Gram–Schmidt form broke down to NaN on heap adjoints),
    ``KRYLOV_RESTART`` vectors, at most ``KRYLOV_RESTARTS`` restarts, to a relative residual of
    max(1e-10, 100 ε); the ridge is added as ``ridge``·x (the Jacobian of a fixed-point map T − I
    whose rows are scaled to a unit diagonal has entries of order one, the scale the dense
    solve's relative ridge measures), with the same finiteness guard. Memory O(n·restart), no
    matrix formed. On the velocity form's heap adjoints (768 rows) it gives the dense solve's
    gradients to about 1e-7 in float64 (``benchmarks.adjoint``, docs/worlds.md)."""
    n = rhs.shape[0]
    tol = max(1e-10, 100 * float(jnp.finfo(rhs.dtype).eps)) if tol is None else tol
    x, _ = jax.scipy.sparse.linalg.gmres(lambda u: matvec(u) + ridge * u, rhs, x0=x0, tol=tol,
                                         restart=min(KRYLOV_RESTART, n), maxiter=restarts,
                                         solve_method="incremental")
    return jnp.where(jnp.all(jnp.isfinite(x)), x, jnp.zeros_like(x))


def implicit_root(optimality_fun: Callable, has_aux: bool = False, ridge: float = 1e-10):
    """Decorator (jaxopt ``custom_root``): differentiate a root solver ``solver(x0, θ)`` implicitly
    through ``optimality_fun(x, θ) = 0`` at the returned root, with the dense guarded adjoint
    solve (relative ``ridge``). Reverse mode never enters the solver."""
    return _jaxopt_implicit.custom_root(optimality_fun, has_aux=has_aux,
                                        solve=functools.partial(dense_guarded_solve, ridge=ridge))


def implicit_fixed_point(fixed_point_fun: Callable, has_aux: bool = False, matrix_free: bool = False,
                         adjoint: Callable | None = None, polish: Callable | None = None,
                         refine: Callable | None = None):
    """Decorator (jaxopt ``custom_fixed_point``): differentiate ``solver(x0, θ)`` implicitly through
    x = T(x, θ) at the returned fixed point, with the dense guarded adjoint solve, or with
    ``matrix_free`` the Krylov one (``krylov_guarded_solve``).

    ``adjoint(x, θ, g)``, when given, is the solver's own solution λ of (I − ∂T/∂x)ᵀ λ = g at the
    fixed point (a solver that knows its map's structure can solve it much faster than Krylov on
    products); the cotangent of θ is then (∂T/∂θ)ᵀ λ, one product, and x0 gets none. A solver's
    adjoint may fall back on ``krylov_guarded_solve`` (``fixed_point_adjoint_matvec`` gives it
    the products).

    ``polish(x, *args)``, when given, refines the solver's solution x before the derivative is
    taken there (reverse mode only: the forward rule under differentiation returns the solver's
    own output, bit for bit the undifferentiated one, and keeps the polished point for the
    backward pass). The derivative of x = T(x, θ) at an inexact x is that of another active set
    or of the wrong point on a slowly converging direction; the polish moves it to the fixed
    point (docs/gradients.md, "Through worlds at the defaults").

    ``refine(out, *args)``, when given, replaces the solver's output under differentiation only
    (the forward rule returns it, value and derivative both taken there; an undifferentiated call
    returns the solver's own output, at no cost): a forward that lands on the fixed point where a
    derivative needs it (``lcp.active_set_polish``) without slowing plain rollouts."""
    if adjoint is None and polish is None and refine is None:
        solve = krylov_guarded_solve if matrix_free else dense_guarded_solve
        return _jaxopt_implicit.custom_fixed_point(fixed_point_fun, has_aux=has_aux, solve=solve)
    if adjoint is None:
        solve = krylov_guarded_solve if matrix_free else dense_guarded_solve

        def adjoint(sol, args, g):
            return solve(fixed_point_adjoint_matvec(fixed_point_fun, sol, args), g)

    def wrap(solver):
        @jax.custom_vjp
        def run(x0, *args):
            return solver(x0, *args)

        def fwd(x0, *args):
            out = solver(x0, *args)
            if refine is not None:
                out = jax.lax.stop_gradient(refine(jax.lax.stop_gradient(out), *args))
            sol = out[0] if has_aux else out
            if polish is not None:
                sol = jax.lax.stop_gradient(polish(jax.lax.stop_gradient(sol), *args))
            return out, (sol, x0, args)

        def bwd(res, g):
            sol, x0, args = res
            lam = adjoint(sol, args, g[0] if has_aux else g)
            _, vjp = jax.vjp(lambda *a: fixed_point_fun(sol, *a), *args)
            return (jnp.zeros_like(x0), *vjp(lam))

        run.defvjp(fwd, bwd)
        return run

    return wrap


NEWTON_STEP_LENGTHS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125)
"""The lengths of a Newton step ``newton_polish`` tries (the best is kept if it lowers the residual)."""


def newton_polish(fixed_point_fun: Callable, steps: int, matrix_free: bool = False, ridge: float = 1e-10) -> Callable:
    """``polish(x, *args)`` for ``implicit_fixed_point``: up to ``steps`` semismooth Newton steps on
    F(x) = T(x, θ) − x from x, each x ← x + (I − ∂T/∂x)⁻¹ (T(x) − x) with ∂T/∂x at x (the matrix of
    the adjoint solve; dense from forward-mode columns, or with ``matrix_free`` restarted GMRES on
    Jacobian–vector products), kept only where it lowers the largest |T(x) − x| (and is finite);
    stops once a step is refused. T piecewise linear (a projected-Jacobi map): a step from a point
    with the right active set lands on the fixed point, whatever the sweeps' slow directions."""
    def polish(x, *args):
        T = lambda y: fixed_point_fun(y, *args)

        def residual(y):
            return jnp.max(jnp.abs(T(y) - y), initial=0.0)

        def step(carry):
            x, r, k, _ = carry
            if matrix_free:
                matvec = lambda u: u - jax.jvp(T, (x,), (u,))[1]
                dx = krylov_guarded_solve(matvec, T(x) - x, ridge=ridge)
            else:
                dx = dense_guarded_solve(lambda u: u - jax.jvp(T, (x,), (u,))[1], T(x) - x, ridge=ridge)
            # the full step, or the best of its halvings (a step across a kink of T overshoots)
            ys = x[None] + jnp.asarray(NEWTON_STEP_LENGTHS, x.dtype)[:, None] * dx[None]
            rs = jax.vmap(residual)(ys)
            rs = jnp.where(jnp.isfinite(rs), rs, jnp.inf)
            best = jnp.argmin(rs)
            y, ry = ys[best], rs[best]
            better = ry < r
            return jnp.where(better, y, x), jnp.where(better, ry, r), k + 1, better

        r0 = residual(x)
        init = (x, r0, jnp.asarray(0, jnp.int32), r0 > 0)
        x, _, _, _ = jax.lax.while_loop(lambda c: (c[2] < steps) & c[3], step, init)
        return x

    return polish


def fixed_point_adjoint_matvec(fixed_point_fun: Callable, sol, args) -> Callable:
    """u ↦ (I − ∂T/∂x)ᵀ u at the fixed point ``sol`` of ``fixed_point_fun(x, *args)``: the products
    an ``adjoint`` may hand ``krylov_guarded_solve``."""
    _, vjp = jax.vjp(lambda x: fixed_point_fun(x, *args), sol)
    return lambda u: u - vjp(u)[0]
