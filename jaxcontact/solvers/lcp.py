"""Box-friction LCP by projected Gauss–Seidel with implicit gradients.

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

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .implicit import implicit_fixed_point, newton_polish

from .batching import MIN_TAIL_DENSE, tail_sweeps, with_batching_rule
from .problem import SWEEP_METHODS, Method, choose


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
    warm_start: inside a rollout, start each step's sweeps from the previous step's impulses of
    the same contact points (laws that support it: ``CoulombLCP``) instead of zero. A resting or
    sliding contact then stops after one or two sweeps instead of ten (the stopping rule is the
    same), and the implicit derivative, taken at the solution, does not see the start. Off by
    default because it is *not* as accurate: a face on the ground has four normals for three
    constrained directions, the split among the corners is fixed only by the 1e-6 regularisation,
    and PGS barely moves that split; from zero it stays near the regularised solution, from the
    previous step it carries the split along and drifts. On 40 random throws in float64 the
    final positions of the cold solver are within 2.1e-4 m (p90; max 9.9e-4) of the converged
    (Newton, κ → 0) solution, those of the warm-started one within 1.4e-3 m (max 2.1e-2)
    (``benchmarks/breakdown.py``, docs/performance.md).
    sweeps: how a world's velocity-form solve (``solve_body_lcp``) runs its sweeps: ``"auto"``
    (default) the fused CPU kernel on a CPU (``jaxcontact.native``; the pure-JAX sequential sweeps
    where it cannot be built) and the graph-coloured sweeps elsewhere; ``"native"``, ``"colour"``
    (vectorised over each colour's contacts and the worlds: accelerators) or ``"sequential"`` (pure
    JAX, one contact after another: the reference) to force one. The sequential sweeps and the
    kernel give the same iterates; the coloured ones visit the contacts in another order (colour by
    colour) and reach the same solution to the tolerance. Dense solves ignore it.
    gradient_newton, gradient_tol, gradient_max_iter, gradient_restart: the *polish* of a solution
    before its implicit derivative is taken, in reverse mode only (the value is the forward's, bit
    for bit): ``gradient_newton`` semismooth Newton steps on the fixed-point map
    (``implicit.newton_polish``; 0: none), then sweeps to ``gradient_tol`` (m/s; None: none) capped
    at ``gradient_max_iter`` (from zero with ``gradient_restart``), then Newton again. Off by default:
    on worlds it moves some derivatives onto the converged solution's and others away from the
    default forward's differences (docs/gradients.md, "Through worlds at the defaults").
    """

    tol: float = 1e-6
    max_iter: int = 100
    regularization: float = 1e-6
    fixed_iterations: bool = False
    warm_start: bool = False
    sweeps: str = "auto"
    gradient_tol: float | None = None
    gradient_max_iter: int = 1000
    gradient_newton: int = 0
    gradient_restart: bool = False

    def __post_init__(self):
        if self.sweeps not in SWEEP_METHODS:
            raise ValueError(f"LCPSettings.sweeps must be one of {SWEEP_METHODS}, got {self.sweeps!r}")
        if not self.tol > 0:
            raise ValueError(f"LCPSettings.tol must be positive, got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"LCPSettings.max_iter must be >= 1, got {self.max_iter}")
        if self.regularization < 0:
            raise ValueError(f"LCPSettings.regularization must be >= 0, got {self.regularization}")
        if self.gradient_tol is not None and not self.gradient_tol > 0:
            raise ValueError(f"LCPSettings.gradient_tol must be positive or None, got {self.gradient_tol}")
        if self.gradient_newton < 0:
            raise ValueError(f"LCPSettings.gradient_newton must be >= 0, got {self.gradient_newton}")
        if self.gradient_max_iter < 1:
            raise ValueError(f"LCPSettings.gradient_max_iter must be >= 1, got {self.gradient_max_iter}")

    def polish_settings(self) -> "LCPSettings | None":
        """The settings of the sweeps that refine a solution before its implicit derivative is
        taken (``gradient_tol``, ``gradient_max_iter``, to the tolerance: no fixed trip count), or
        None where the derivative is taken at the forward's own solution."""
        if self.gradient_tol is None:
            return None
        return dataclasses.replace(self, tol=self.gradient_tol, max_iter=self.gradient_max_iter,
                                   fixed_iterations=False, gradient_tol=None)


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


def regularized(A, reg):
    """A with the solver's relative diagonal ``reg`` (``LCPSettings.regularization``) — the matrix
    ``solve_lcp`` solves with (also used by the gradient modes of ``solvers.relaxed``)."""
    d = jnp.diagonal(A)
    scale = jnp.maximum(jnp.max(jnp.abs(d)), jnp.finfo(A.dtype).tiny)
    return A + jnp.diag(reg * d + 1e-12 * scale + diagonal_floor(d, scale))


def diagonal_floor(d, scale):
    """What lifts a diagonal entry of A that is round-off (below 64 ε of the largest, ``scale``,
    or negative) to that floor; 0 for every other entry, so that they are left bit for bit. A row
    whose bodies cannot move along it (a contact direction a jointed chain's joints hold) has a
    diagonal that is 0 in exact arithmetic; computed in float32 it came out −4·10⁻⁹, and the
    sweep's division by it sent a chain's impulse to 10¹⁰ N·s (docs/chains.md)."""
    return jnp.maximum(64 * jnp.finfo(d.dtype).eps * scale - d, 0.0)


def _fixed_point_map(rows: RowStructure):
    def T(z, A, b, coupling):
        d = jnp.diagonal(A)
        y = z - (A @ z + b) / d
        lo, hi = _bounds(rows, z, coupling)
        return jnp.clip(y, lo, hi)

    return T


def _residual(T, z, A, b, coupling):
    return jnp.max(jnp.abs(jnp.diagonal(A) * (T(z, A, b, coupling) - z)), initial=0.0)


def _pgs_sweep(rows: RowStructure, z, A, b, coupling, unrolled: bool):
    """One projected Gauss–Seidel sweep; returns (z, max scaled change).

    z, b, coupling: (m, *batch); A: (m, m, *batch) — the batch, if any, is the *trailing* axis
    (``_pgs_batched``), so every row update is one contiguous vector operation."""
    m = z.shape[0]
    if unrolled:  # the method's sweep (``problem.choose``: up to ``SMALL_ROWS`` rows)
        # Unrolled on scalars: with a trailing batch axis every row update is an elementwise
        # vector operation, so XLA fuses the sweep into few kernels with no dynamic-update-slices.
        zs = [z[i] for i in range(m)]
        change = jnp.zeros_like(b[0])
        for i in range(m):
            acc = b[i]
            for j in range(m):
                acc = acc + A[i, j] * zs[j]
            zi = zs[i] - acc / A[i, i]
            if rows.is_friction[i]:
                bound = coupling[i] * zs[int(rows.parent[i])]
                zi = jnp.clip(zi, -bound, bound)
            elif rows.lo0[i] == 0.0:
                zi = jnp.maximum(zi, 0.0)
            change = jnp.maximum(change, jnp.abs(A[i, i] * (zi - zs[i])))
            zs[i] = zi
        return jnp.stack(zs), change

    d = jnp.diagonal(A)
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


def _tolerance(settings: LCPSettings, b):
    """The stopping tolerance of one problem (b: (m,)): ``settings.tol``, but never below what the
    dtype can resolve at the problem's velocity scale max |b| — in float32 a velocity change below
    ~1e-5 m/s is round-off. (Rows that must not push are decoupled by the caller with b = 0:
    ``entry.solve_contact``; they do not raise the scale.)"""
    floor = 64 * jnp.finfo(b.dtype).eps * (1.0 + jnp.max(jnp.abs(b), axis=0))
    return jnp.maximum(jnp.asarray(settings.tol, b.dtype), floor)


def _pgs_single(rows: RowStructure, settings: LCPSettings, unrolled: bool, z, A, b, coupling):
    """Sweeps of one problem until no scaled change exceeds the tolerance (or the cap):
    (z, last change, sweeps)."""
    tol = _tolerance(settings, b)

    def body(carry):
        z, _, it = carry
        z, change = _pgs_sweep(rows, z, A, b, coupling, unrolled)
        return z, change, it + 1

    init = (z, jnp.asarray(jnp.inf, b.dtype), jnp.asarray(0, jnp.int32))
    if settings.fixed_iterations:
        return jax.lax.fori_loop(0, settings.max_iter, lambda _, c: body(c), init)
    return jax.lax.while_loop(lambda c: (c[2] < settings.max_iter) & (c[1] > tol), body, init)


def _pgs_batched(rows: RowStructure, settings: LCPSettings, z, A, b, coupling):
    """``_pgs_single`` of a batch (leading axis B on every argument), with the same result per
    problem: the batch laid out batch-last (each row update one contiguous vector operation) and
    swept by the one batching rule (``batching.tail_sweeps``: each problem exactly its own sweeps,
    the unconverged tail in sub-batches)."""
    B = z.shape[0]
    zt, bt, ct = z.T, b.T, coupling.T
    At = jnp.moveaxis(A, 0, -1)
    tol = _tolerance(settings, bt)
    cap = settings.max_iter

    def sweep(data, carry):
        At, bt, ct = data
        zt, _, it = carry
        zn, ch = _pgs_sweep(rows, zt, At, bt, ct, True)  # the tail rule serves unrolled sweeps only
        return zn, ch, it + 1

    def unfinished(carry, tol):
        _, change, it = carry
        return (it < cap) & (change > tol)

    carry = (zt, jnp.full((B,), jnp.inf, b.dtype), jnp.zeros((B,), jnp.int32))
    zt, change, it = tail_sweeps(sweep, unfinished, (At, bt, ct), carry, tol, MIN_TAIL_DENSE, axis=-1)
    return zt.T, change, it


def _pgs(rows: RowStructure, settings: LCPSettings, method: Method):
    """The forward solve (z0, A, b, coupling) -> (z, change, sweeps): with the one batching rule
    where ``method.batching`` says so (``problem.choose``)."""
    single = functools.partial(_pgs_single, rows, settings, method.sweep == "unrolled")
    if method.batching != "tail":
        return single  # a uniform trip count, or rows in a fori_loop: plain vmap is right
    return with_batching_rule(single, functools.partial(_pgs_batched, rows, settings))


def solve_lcp(A, b, coupling, rows: RowStructure, settings: LCPSettings = LCPSettings(), z0=None,
              method: Method | None = None):
    """Solve the box-friction LCP (see module docstring); differentiable in A, b and coupling.

    A: (m, m) Delassus matrix J M⁻¹ Jᵀ. b: (m,) free constraint velocity plus bias.
    coupling: (m,) friction coefficient of each friction row (ignored on other rows).
    z0: (m,) start of the sweeps (a warm start; default zero) — not differentiated.
    method: the sweep and batching of ``problem.choose`` (None: chosen here from the row count).
    Returns ``LCPSolution(z, residual, iterations)``.
    """
    A = regularized(A, settings.regularization)
    T = _fixed_point_map(rows)
    if z0 is None:
        z0 = jnp.zeros_like(b)
    method = choose("dense", len(rows.lo0), settings) if method is None else method
    pgs = _pgs(rows, settings, method)
    polish = None
    if settings.polish_settings() is not None or settings.gradient_newton:
        fine = settings.polish_settings()
        fine = None if fine is None else _pgs(rows, fine, choose("dense", len(rows.lo0), fine))
        newton = newton_polish(T, settings.gradient_newton) if settings.gradient_newton else None

        def polish(z, A, b, coupling):
            A, b, coupling = (jax.lax.stop_gradient(x) for x in (A, b, coupling))
            z = z if newton is None else newton(z, A, b, coupling)
            start = jnp.zeros_like(z) if settings.gradient_restart else z
            z = z if fine is None else fine(start, A, b, coupling)[0]
            return z if newton is None or fine is None else newton(z, A, b, coupling)

    @implicit_fixed_point(T, has_aux=True, polish=polish)
    def _solve(z_init, A, b, coupling):
        A, b, coupling = (jax.lax.stop_gradient(x) for x in (A, b, coupling))
        z, _, it = pgs(jax.lax.stop_gradient(z_init), A, b, coupling)
        return z, (_residual(T, z, A, b, coupling), it)

    z, (res, it) = _solve(z0, A, b, coupling)
    return LCPSolution(z=z, residual=res, iterations=it)
