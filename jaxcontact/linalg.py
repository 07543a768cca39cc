"""Small dense linear algebra of the step (Cholesky, triangular solves, QR, LU solves) without LAPACK on a CPU.

Why: on a CPU, ``jnp.linalg``/``jax.scipy.linalg`` call jaxlib's LAPACK kernels, and jaxlib 0.10's kernels
share a batch (a ``vmap``'s leading axis) out over XLA's own CPU thread pool and then block that pool's
thread until the pieces are done. When as many such calls run at once as the pool has threads (one per core:
two independent decompositions of a vmapped step on a 2-core machine, or one on each of two host devices), every
thread waits for work that no thread is left to run, and the program never returns (every thread idle in a futex
wait, the caller in ``block_until_ready``: a 1,024-world batch of the quadruped on 2 cores, 20 steps or 2).
These functions are plain XLA loops on a CPU (no custom call, nothing that blocks a thread), and jax's own
functions elsewhere (a GPU's batched solvers); differentiable in both modes, as loops.

Each has jax's meaning and conventions: ``cholesky`` lower; ``qr`` the reduced Q (m, k) and R (k, k) of an
(m, k) matrix with m ≥ k, R's diagonal of either sign as LAPACK's; ``cho_solve`` takes ``(c, lower)`` as
``jax.scipy.linalg.cho_solve``; ``solve`` is Gaussian elimination with partial pivoting. A matrix that is not
positive definite gives NaN from ``cholesky``, a singular one inf or NaN from the solves, as LAPACK's do."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def without_lapack() -> bool:
    """Whether the step's linear algebra runs as XLA loops (on a CPU: module docstring) instead of jax's."""
    return jax.default_backend() == "cpu"


def _norm(x):
    """‖x‖ with a finite derivative at x = 0 (0 there)."""
    s = jnp.sum(x * x)
    ok = s > 0
    return jnp.where(ok, jnp.sqrt(jnp.where(ok, s, 1)), 0)


def cholesky(a):
    """Lower Cholesky factor L of a symmetric positive definite (n, n) matrix, a = L Lᵀ."""
    if not without_lapack():
        return jnp.linalg.cholesky(a)
    n = a.shape[-1]
    rows = jnp.arange(n)

    def column(j, L):  # left-looking: column j from the columns before it (those after are still 0)
        v = a[:, j] - L @ L[j, :]
        return L.at[:, j].set(jnp.where(rows >= j, v / jnp.sqrt(v[j]), 0))

    return lax.fori_loop(0, n, column, jnp.zeros_like(a))


def solve_triangular(a, b, lower: bool, trans: bool = False):
    """x with a x = b (aᵀ x = b with ``trans``) for a triangular (n, n) ``a``; b (n,) or (n, m)."""
    if not without_lapack():
        return jax.scipy.linalg.solve_triangular(a, b, lower=lower, trans="T" if trans else 0)
    if trans:
        a, lower = a.T, not lower
    n = a.shape[0]

    def row(k, x):  # substitution, the unknowns not yet solved held at 0
        i = k if lower else n - 1 - k
        return x.at[i].set((b[i] - a[i] @ x) / a[i, i])

    return lax.fori_loop(0, n, row, jnp.zeros(b.shape, jnp.result_type(a, b)))


def cho_solve(factor, b):
    """x with c cᵀ x = b (``lower``) or cᵀ c x = b, factor = (c, lower) as ``jax.scipy.linalg.cho_solve``."""
    c, lower = factor
    if not without_lapack():
        return jax.scipy.linalg.cho_solve(factor, b)
    y = solve_triangular(c, b, lower=lower, trans=not lower)
    return solve_triangular(c, y, lower=lower, trans=lower)


def qr(a):
    """Reduced QR of an (m, k) matrix, m ≥ k: Q (m, k) with orthonormal columns, R (k, k) upper, a = Q R
    (Householder reflections; R's diagonal is −sign(x₀)‖x‖ per column, as LAPACK's)."""
    if not without_lapack():
        return jnp.linalg.qr(a)
    m, k = a.shape
    if m < k:
        raise ValueError(f"qr: needs at least as many rows as columns, got {a.shape}")
    rows = jnp.arange(m)

    def reflect(j, carry):
        R, V = carry
        x = jnp.where(rows >= j, R[:, j], 0)
        nx = _norm(x)
        v = x.at[j].add(jnp.where(x[j] >= 0, nx, -nx))
        vn = _norm(v)
        v = v / jnp.where(vn > 0, vn, 1)
        return R - 2 * jnp.outer(v, v @ R), V.at[:, j].set(v)

    R, V = lax.fori_loop(0, k, reflect, (a, jnp.zeros_like(a)))

    def apply(t, Q):  # Q = H₀ H₁ … H_{k−1} [I; 0], the last reflection first
        v = V[:, k - 1 - t]
        return Q - 2 * jnp.outer(v, v @ Q)

    Q = lax.fori_loop(0, k, apply, jnp.eye(m, k, dtype=a.dtype))
    return Q, jnp.triu(R[:k])


def solve(a, b):
    """x with a x = b for a square (n, n) ``a``; b (n,) or (n, m) (Gaussian elimination, partial pivoting)."""
    if not without_lapack():
        return jnp.linalg.solve(a, b)
    n = a.shape[0]
    vector = b.ndim == 1
    M = jnp.concatenate([a, b[:, None] if vector else b], axis=1).astype(jnp.result_type(a, b))
    rows = jnp.arange(n)

    def eliminate(j, M):
        p = jnp.argmax(jnp.where(rows >= j, jnp.abs(M[:, j]), -1))
        rj, rp = M[j], M[p]
        M = M.at[p].set(rj).at[j].set(rp)
        f = jnp.where(rows > j, M[:, j] / M[j, j], 0)
        return M - jnp.outer(f, M[j])

    M = lax.fori_loop(0, n, eliminate, M)
    x = solve_triangular(M[:, :n], M[:, n:], lower=False)
    return x[:, 0] if vector else x


__all__ = ["cho_solve", "cholesky", "qr", "solve", "solve_triangular", "without_lapack"]
