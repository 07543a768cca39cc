"""Implicit differentiation, declared once for every solver of the package (jaxopt).

``implicit_root`` (jaxopt ``custom_root``) and ``implicit_fixed_point`` (jaxopt
``custom_fixed_point``) wrap a solver so that its derivative is taken at the returned solution
through the optimality condition (F(x, θ) = 0, or x = T(x, θ)); reverse mode never enters the
solver's loop. Both solve the adjoint linear system densely with a relative ridge and a
finiteness guard, so degenerate problems give zero rather than NaN cotangents. Solvers call
these and stay unaware of how the derivative is formed.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
from jaxopt import implicit_diff as _jaxopt_implicit


def dense_guarded_solve(matvec: Callable, rhs, ridge: float = 1e-10):
    """Dense LU solve of the implicit-differentiation system (relative ridge) with a finiteness guard."""
    n = rhs.shape[0]
    M = jax.vmap(matvec, in_axes=1, out_axes=1)(jnp.eye(n, dtype=rhs.dtype))
    scale = jnp.maximum(jnp.max(jnp.abs(M)), 1.0)
    x = jnp.linalg.solve(M + (ridge * scale) * jnp.eye(n, dtype=rhs.dtype), rhs)
    return jnp.where(jnp.all(jnp.isfinite(x)), x, jnp.zeros_like(x))


def implicit_root(optimality_fun: Callable, has_aux: bool = False, ridge: float = 1e-10):
    """Decorator (jaxopt ``custom_root``): differentiate a root solver ``solver(x0, θ)`` implicitly
    through ``optimality_fun(x, θ) = 0`` at the returned root, with the dense guarded adjoint
    solve (relative ``ridge``). Reverse mode never enters the solver."""
    return _jaxopt_implicit.custom_root(optimality_fun, has_aux=has_aux,
                                        solve=functools.partial(dense_guarded_solve, ridge=ridge))


def implicit_fixed_point(fixed_point_fun: Callable, has_aux: bool = False):
    """Decorator (jaxopt ``custom_fixed_point``): differentiate ``solver(x0, θ)`` implicitly through
    x = T(x, θ) at the returned fixed point, with the dense guarded adjoint solve."""
    return _jaxopt_implicit.custom_fixed_point(fixed_point_fun, has_aux=has_aux, solve=dense_guarded_solve)
