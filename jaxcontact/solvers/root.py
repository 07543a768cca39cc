"""Roots of small nonlinear systems: Powell's hybrid (dogleg trust region) method.

``powell_hybrid`` finds a root of ``fun`` (R^m → R^m) from x0 with an initial Jacobian estimate
B0: Powell's dogleg trust region with Broyden updates of the Jacobian and a forward-difference
refresh of it after repeated failed steps, in one ``lax.while_loop`` that evaluates ``fun`` exactly
once per iteration (jit-able, vmappable). ``find_root`` wraps it with implicit differentiation
through ``fun(x, θ) = 0`` at the returned root (``implicit.implicit_root``), so reverse mode never
enters the loop. Used by dacm's Algorithm 2 (``jaxcontact.dacm.chain``) for the distal joint force.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
from flax import struct

from .. import linalg
from .implicit import implicit_root


@dataclasses.dataclass(frozen=True)
class HybridSettings:
    """max_evals: cap on evaluations of ``fun`` per solve. fd_after: consecutive rejected steps
    after which the Jacobian is rebuilt by forward differences (m evaluations)."""

    max_evals: int = 40
    fd_after: int = 2

    def __post_init__(self):
        if self.max_evals < 2:
            raise ValueError(f"max_evals must be >= 2, got {self.max_evals}")
        if self.fd_after < 1:
            raise ValueError(f"fd_after must be >= 1, got {self.fd_after}")


@struct.dataclass
class RootResult:
    x: jnp.ndarray
    residual: jnp.ndarray  # ‖r(x)‖
    evaluations: jnp.ndarray
    converged: jnp.ndarray


def _dogleg(B, r, delta):
    """Powell's dogleg step for min ‖r + B s‖ within ‖s‖ ≤ delta."""
    newton = -linalg.solve(B, r)
    grad = B.T @ r
    Bg = B @ grad
    t = jnp.dot(grad, grad) / jnp.maximum(jnp.dot(Bg, Bg), jnp.finfo(r.dtype).tiny)
    cauchy = -t * grad
    nn, nc = jnp.linalg.norm(newton), jnp.linalg.norm(cauchy)
    ok = jnp.all(jnp.isfinite(newton))
    # on the segment cauchy → newton, find τ with ‖cauchy + τ(newton − cauchy)‖ = delta
    d = newton - cauchy
    a = jnp.dot(d, d)
    b = 2 * jnp.dot(cauchy, d)
    c = nc**2 - delta**2
    tau = (-b + jnp.sqrt(jnp.maximum(b * b - 4 * a * c, 0.0))) / jnp.maximum(2 * a, jnp.finfo(r.dtype).tiny)
    dog = cauchy + jnp.clip(tau, 0.0, 1.0) * d
    scaled_cauchy = cauchy * (delta / jnp.maximum(nc, jnp.finfo(r.dtype).tiny))
    step = jnp.where(nn <= delta, newton, jnp.where(nc >= delta, scaled_cauchy, dog))
    return jnp.where(ok, step, scaled_cauchy)


def powell_hybrid(fun, x0, B0, tol, settings=HybridSettings()) -> RootResult:
    """Root of ``fun`` (R^m → R^m) from x0 with initial Jacobian estimate B0 (module docstring);
    ``settings``: any object with ``max_evals`` and ``fd_after`` (``HybridSettings``).

    One evaluation of ``fun`` per loop iteration: either a trust-region trial step (dogleg on
    the current Jacobian estimate, Broyden update after it, accepted if ‖fun‖ decreases
    enough) or one column of a forward-difference Jacobian (started after ``fd_after``
    consecutive rejections). Pure; ``lax.while_loop``; vmappable."""
    m = x0.shape[0]
    dtype = x0.dtype
    r0 = fun(x0)
    sqrt_eps = jnp.sqrt(jnp.finfo(dtype).eps)
    init = dict(x=x0, r=r0, B=B0, delta=jnp.asarray(1e8, dtype) * (1.0 + jnp.linalg.norm(x0)),
                nfev=jnp.asarray(1, jnp.int32), fd=jnp.asarray(-1, jnp.int32), nfail=jnp.asarray(0, jnp.int32))

    def cond(c):
        return (jnp.linalg.norm(c["r"]) > tol) & (c["nfev"] < settings.max_evals)

    def body(c):
        x, r, B, delta = c["x"], c["r"], c["B"], c["delta"]
        in_fd = c["fd"] >= 0
        e = jax.nn.one_hot(jnp.maximum(c["fd"], 0), m, dtype=dtype)
        h_fd = sqrt_eps * (1.0 + jnp.linalg.norm(x))
        s = _dogleg(B, r, delta)
        trial = jnp.where(in_fd, x + h_fd * e, x + s)
        rt = fun(trial)
        # forward-difference column
        col = (rt - r) / h_fd
        B_fd = B + jnp.outer(col - B @ e, e)
        # trust-region step: Broyden update, acceptance, radius
        ss = jnp.maximum(jnp.dot(s, s), jnp.finfo(dtype).tiny)
        B_br = B + jnp.outer(rt - r - B @ s, s) / ss
        rr = jnp.dot(r, r)
        pred = rr - jnp.sum((r + B @ s) ** 2)
        act = rr - jnp.dot(rt, rt)
        rho = jnp.where(pred > 0, act / jnp.where(pred > 0, pred, 1.0), -1.0)
        finite = jnp.all(jnp.isfinite(rt))
        accept = (~in_fd) & finite & (act > 0) & (rho > 1e-4)
        ns = jnp.sqrt(ss)
        delta_new = jnp.where(rho < 0.1, 0.5 * ns, jnp.where(rho > 0.5, jnp.maximum(delta, 2 * ns), delta))
        nfail = jnp.where(accept, 0, c["nfail"] + 1)
        start_fd = (~in_fd) & (nfail >= settings.fd_after)
        fd_next = jnp.where(in_fd, jnp.where(c["fd"] + 1 >= m, -1, c["fd"] + 1), jnp.where(start_fd, 0, -1))
        B_new = jnp.where(in_fd, B_fd, jnp.where(finite, B_br, B))
        return dict(
            x=jnp.where(accept, trial, x), r=jnp.where(accept, rt, r), B=B_new,
            delta=jnp.where(in_fd, delta, delta_new), nfev=c["nfev"] + 1, fd=fd_next,
            nfail=jnp.where(start_fd | in_fd, 0, nfail),
        )

    out = jax.lax.while_loop(cond, body, init)
    res = jnp.linalg.norm(out["r"])
    return RootResult(x=out["x"], residual=res, evaluations=out["nfev"], converged=res <= tol)


def find_root(fun: Callable, x0, theta, B0, tol, settings=HybridSettings(), ridge: float = 1e-12) -> RootResult:
    """Root x* of ``fun(x, theta)`` by ``powell_hybrid`` from x0, differentiable in ``theta``
    (a pytree) implicitly at x* (dense guarded adjoint solve with relative ``ridge``).
    Returns the ``RootResult``; its ``x`` carries the implicit derivative."""

    def solver(x_init, th):
        res = powell_hybrid(lambda x: fun(x, th), x_init, B0, tol, settings)
        return res.x, res

    x, res = implicit_root(fun, has_aux=True, ridge=ridge)(solver)(x0, theta)
    return res.replace(x=x)
