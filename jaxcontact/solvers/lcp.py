"""Box-friction LCP by projected Gauss–Seidel with implicit gradients.

``solve_lcp`` solves the box-friction linear complementarity problem of time-stepping contact:
find z with, for each row i and w = A z + b,

    lo_i(z) <= z_i <= hi_i(z),   z_i = lo_i ⇒ w_i >= 0,   z_i = hi_i ⇒ w_i <= 0,   else w_i = 0,

where lo_i = lo0_i − c_i z[parent_i] and hi_i = hi0_i + c_i z[parent_i]. Normal rows have
(lo0, hi0, c) = (0, ∞, 0); friction rows (0, 0, μ) with parent their normal row, i.e. the
square |z_t| <= μ z_n per tangent direction (``LCPSettings.cone = "box"``); bilateral rows (−∞, ∞, 0).
With ``cone = "elliptic"`` (the default: docs/worlds.md "Friction cone") a contact's two friction rows are one block on Coulomb's disc
Σ_k (z_tk/μ_k)² <= z_n², projected together with a common step (``disc_step``, ``project_disc``), and
its complementarity is maximal dissipation: a sliding contact's z_t ∥ −diag(μ²) w_t.

The forward solve is projected Gauss–Seidel to a stated tolerance with an iteration cap
(``lax.while_loop``), then, in a dense solve with the disc, one round of an active-set polish
(``active_set_polish``, ``LCPSettings.forward_active_set``) that lands the sweeps' point on the
fixed point along the directions they converge slowly (a face's normal split); the derivative is *implicit*, taken at the solution through jaxopt's
``custom_fixed_point`` on the projected-Jacobi map T(z) = clip(z − (A z + b)/diag A, lo, hi),
whose fixed points are exactly the LCP solutions (with the disc: its pairs projected as the sweeps do). Reverse mode never enters the loop, so
gradients exist for any iteration count, and the adjoint linear system is solved densely with
a guard that keeps gradients finite where the contact problem is degenerate.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import linalg
from .implicit import implicit_fixed_point, newton_polish

from .batching import MIN_TAIL_DENSE, tail_sweeps, with_batching_rule
from .problem import SWEEP_METHODS, Plan, table


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
    forward_newton: semismooth Newton steps (``implicit.newton_polish``, each kept only where it
    lowers max |T(z) − z|) on the sweeps' result *in the forward*, the value and the derivative
    both taken at the polished point (0: none, the default for now). A face's normals share three
    directions, so the split of its normal force among the corners converges at the rate of the
    regularisation (1e-6 a sweep) and the sweeps stop far from the fixed point along it; under the
    disc a spinning face's split moves the body, and the implicit derivative at the sweeps' point
    is off along it (issue 61). Polishing only in reverse (``gradient_newton``) leaves the forward
    at the sweeps' split, so the derivative is of another trajectory. The dense solve only (one
    body); ``solve_body_lcp`` refuses it. Measured in docs/worlds.md, "Friction cone": it makes a
    spinning slide's derivative exact, not yet an 800-step throw's.
    forward_active_set: rounds of ``active_set_polish`` on the sweeps' result in the forward (after
    ``forward_newton`` if both), the value and the derivative taken at the polished point (0: none):
    the active set the sweeps' point projects into, its smooth equations solved by least-squares
    Gauss–Newton, re-identified each round, the lowest natural-map residual kept. None (default):
    one round in a dense solve (``solve_lcp``: one body) with the disc *where it is differentiated*
    (``jax.grad``/``vjp``: value and derivative both at the polished point; a plain rollout keeps the
    sweeps' point, within tol of it, at the sweeps' cost: the polish's dense Gauss–Newton steps cost
    3.6× a single body's step), none with the square (its iterates as before) nor in the velocity
    form (worlds: ``solve_body_lcp`` never forms A and refuses an explicit count). An explicit count
    polishes every solve. With it the 800-step throw's
    derivatives match central differences (docs/worlds.md, "Friction cone").
    stall_active_set: rounds of ``active_set_polish`` in the forward of a dense solve *where its
    sweeps stopped at the cap* (``max_iter``; 0: none, the default here; a world's default law
    ``worlds.DEFAULT_LAW`` runs 3), value and derivative both at the polished point, in a plain
    rollout as under ``jax.grad`` (the world's law sets ``forward_active_set=0`` beside it, so no
    other solve is polished under differentiation alone). Where PGS stalls on a stiff island of redundant face rows (an
    arm striking a box, issue 63: the split along the rows' shared directions converges at the
    regularisation's rate, 1e-6 a sweep) the derivative's own polish (``forward_active_set`` None)
    moved only the differentiated run, so reverse mode and central differences followed two
    trajectories. Solves that stop by the tolerance are untouched, so is every fixed trip count
    (``fixed_iterations``); under ``vmap`` the polish runs only when some problem of the batch
    stalled (``stalled_polish``). The velocity form (``solve_body_lcp``) ignores it.
    """

    tol: float = 1e-6
    max_iter: int = 100
    regularization: float = 1e-6
    fixed_iterations: bool = False
    warm_start: bool = False
    sweeps: str = "auto"
    cone: str = "elliptic"
    gradient_tol: float | None = None
    gradient_max_iter: int = 1000
    gradient_newton: int = 0
    gradient_restart: bool = False
    forward_newton: int = 0
    forward_active_set: int | None = None
    stall_active_set: int = 0

    def __post_init__(self):
        if self.cone not in CONES:
            raise ValueError(f"LCPSettings.cone must be one of {CONES}, got {self.cone!r}")
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
        if self.forward_newton < 0:
            raise ValueError(f"LCPSettings.forward_newton must be >= 0, got {self.forward_newton}")
        if not (isinstance(self.stall_active_set, int) and self.stall_active_set >= 0):
            raise ValueError(f"LCPSettings.stall_active_set must be an int >= 0, got {self.stall_active_set!r}")
        if self.forward_active_set is not None and not (isinstance(self.forward_active_set, int)
                                                         and self.forward_active_set >= 0):
            raise ValueError(f"LCPSettings.forward_active_set must be None or an int >= 0, got "
                             f"{self.forward_active_set!r}")

    def polish_settings(self) -> "LCPSettings | None":
        """The settings of the sweeps that refine a solution before its implicit derivative is
        taken (``gradient_tol``, ``gradient_max_iter``, to the tolerance: no fixed trip count), or
        None where the derivative is taken at the forward's own solution."""
        if self.gradient_tol is None:
            return None
        return dataclasses.replace(self, tol=self.gradient_tol, max_iter=self.gradient_max_iter,
                                   fixed_iterations=False, gradient_tol=None)


CONES = ("elliptic", "box")
"""``LCPSettings.cone``: Coulomb's disc (elliptic) or each tangent on its own (box)."""


@dataclasses.dataclass(frozen=True)
class Method:
    """How a law solves its contact problem (``solve_contact(problem, method)``), static: the law's
    ``settings``; ``gradient``, a ``RelaxedGradient`` for the relaxed derivative (the same value;
    dense form); ``group``, the contacts' manifold size (the coloured sweeps need it); ``relaxed``,
    ``(kappa, newton_iters, regularization[, cone])`` for a relaxed-complementarity solve
    (``RelaxedCoulomb``; ``settings`` unused); ``form``, "dense" or "velocity" forced (a comparison, a
    benchmark). The table (``problem.choose``) turns it into a ``Plan``: the form, the sweeps (the fused
    kernel or pure JAX), the batching and the adjoint."""

    settings: LCPSettings = LCPSettings()
    gradient: Any = None
    group: int | None = None
    relaxed: tuple | None = None
    form: str | None = None


@struct.dataclass
class DenseLCP:
    """The dense box-friction LCP as ``solve_dense`` takes it: A (m, m), b (m,), coupling (m,) (each
    friction row's coefficient), z0 (m,) the start of the sweeps (None: zero), and the static ``rows``."""

    A: jnp.ndarray
    b: jnp.ndarray
    coupling: jnp.ndarray
    z0: Any
    rows: RowStructure = struct.field(pytree_node=False)


def disc_step(mu1, mu2, d1, d2):
    """The tangent pair's steps (α μ₁², α μ₂²) with one common α = 1 / max_k(μ_k² d_k) (d_k the two
    rows' diagonals of A): the projected step y_k = z_k − α μ_k² w_k is a gradient step in the
    scaled coordinates z_k/μ_k, so that ``project_disc`` is the Euclidean projection there and its
    fixed points make the friction oppose the slip (per-row steps 1/d_k would not). 0 where μ = 0."""
    m = jnp.maximum(mu1 * mu1 * d1, mu2 * mu2 * d2)
    alpha = jnp.where(m > 0, 1.0 / jnp.where(m > 0, m, 1.0), 0.0)
    return alpha * mu1 * mu1, alpha * mu2 * mu2


def scaled_tangents(y1, y2, mu1, mu2):
    """(y₁/μ₁, y₂/μ₂), a term with μ_k = 0 dropped (0): the coordinates in which the ellipse
    Σ_k (z_k/μ_k)² ≤ z_n² is a disc (``project_disc``, ``active_set_polish``'s slip test)."""
    on1, on2 = mu1 > 0, mu2 > 0
    return (jnp.where(on1, y1 / jnp.where(on1, mu1, 1.0), 0.0), jnp.where(on2, y2 / jnp.where(on2, mu2, 1.0), 0.0))


def project_disc(y1, y2, mu1, mu2, zn):
    """(y₁, y₂) scaled onto the ellipse Σ_k (z_k/μ_k)² ≤ z_n² if outside: y · min(1, z_n / s) with
    s = √Σ_k (y_k/μ_k)² (a term with μ_k = 0 dropped, its z_k = 0). Differentiable everywhere JAX
    evaluates it: s = 0 and z_n = 0 give finite derivatives (a safe norm)."""
    on1, on2 = mu1 > 0, mu2 > 0
    l1, l2 = scaled_tangents(y1, y2, mu1, mu2)
    ss = l1 * l1 + l2 * l2
    slides = ss > zn * zn
    s = jnp.sqrt(jnp.where(slides & (ss > 0), ss, 1.0))
    f = jnp.where(slides, zn / s, 1.0)
    return jnp.where(on1, y1 * f, 0.0), jnp.where(on2, y2 * f, 0.0)


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

    def pairs(self):
        """(first, second): the friction rows of the contacts with exactly two tangents (numpy index
        arrays): the pairs that an elliptic cone projects together (``disc_step``, ``project_disc``)."""
        fric = np.flatnonzero(self.is_friction)
        first, second = [], []
        for p in np.unique(self.parent[fric]):
            kids = fric[self.parent[fric] == p]
            if len(kids) == 2:
                first.append(kids[0])
                second.append(kids[1])
        return np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)


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


def _fixed_point_map(rows: RowStructure, cone: str = "box"):
    first, second = rows.pairs() if cone == "elliptic" else ((), ())

    def T(z, A, b, coupling):
        d = jnp.diagonal(A)
        w = A @ z + b
        y = z - w / d
        lo, hi = _bounds(rows, z, coupling)
        out = jnp.clip(y, lo, hi)
        if len(first):  # the disc: each pair with its common step, projected together
            c1, c2 = coupling[first], coupling[second]
            s1, s2 = disc_step(c1, c2, d[first], d[second])
            p1, p2 = project_disc(z[first] - s1 * w[first], z[second] - s2 * w[second], c1, c2,
                                  z[rows.parent[first]])
            out = out.at[first].set(p1).at[second].set(p2)
        return out

    return T


def _residual(T, z, A, b, coupling):
    return jnp.max(jnp.abs(jnp.diagonal(A) * (T(z, A, b, coupling) - z)), initial=0.0)


ACTIVE_SET_INNER = 3
"""Gauss–Newton steps of one round of ``active_set_polish`` (each a least-norm solve)."""
DENSE_ACTIVE_SET_ROUNDS = 1
"""Rounds of ``active_set_polish`` a dense solve runs by default (``LCPSettings.forward_active_set`` None)."""
"""Gauss–Newton steps of one round of ``active_set_polish`` (each a least-squares solve)."""


def _active_set_system(rows: RowStructure, cone: str):
    """``F(z, A, b, coupling, masks)``: the smooth equations of one active set of the LCP (rows of
    ``rows``; masks from ``_identify``), zero exactly at a solution with that set. A row at a bound
    keeps z on it (z − lo, z − hi: a friction row's bound moves with its normal), a free row has
    w = 0; a disc pair on its boundary slips opposite the scaled velocity,
    z_k = −μ_k² z_n w_k / √Σ(μ_j w_j)² (maximal dissipation on the ellipse), inside it sticks
    (w_t = 0), and with its normal off carries nothing."""
    first, second = rows.pairs() if cone == "elliptic" else ((), ())

    def F(z, A, b, coupling, masks):
        at_lo, at_hi, slide = masks
        w = b + A @ z
        lo, hi = _bounds(rows, z, coupling)
        out = jnp.where(at_lo, z - jnp.where(at_lo, lo, 0.0), jnp.where(at_hi, z - jnp.where(at_hi, hi, 0.0), w))
        if len(first):
            c1, c2 = coupling[first], coupling[second]
            zn = z[rows.parent[first]]
            g1, g2 = c1 * w[first], c2 * w[second]
            ss = g1 * g1 + g2 * g2
            s = jnp.sqrt(jnp.where(ss > 0, ss, 1.0))
            sl = slide[first]
            off = at_hi[first]  # the normal carries nothing: so does the pair
            f1 = jnp.where(off, z[first], jnp.where(sl, z[first] + c1 * zn * g1 / s, w[first]))
            f2 = jnp.where(off, z[second], jnp.where(sl, z[second] + c2 * zn * g2 / s, w[second]))
            out = out.at[first].set(f1).at[second].set(f2)
        return out

    return F


def _identify(rows: RowStructure, cone: str, z, y, coupling):
    """The active set the projected-Jacobi step from z lands in (y = T(z): clipped rows lie
    exactly on their bounds): (at_lo, at_hi, slide) boolean (m,) masks. A disc pair's rows are
    ``slide`` where y is on the ellipse's boundary with a positive normal, ``at_hi`` (nothing
    carried) where its normal is off."""
    first, second = rows.pairs() if cone == "elliptic" else ((), ())
    lo, hi = _bounds(rows, z, coupling)  # the bounds T clipped to (a friction row's from z's normal)
    scale = jnp.maximum(jnp.max(jnp.abs(y), initial=0.0), jnp.finfo(y.dtype).tiny)
    eps = 64 * jnp.finfo(y.dtype).eps * scale
    at_lo = jnp.isfinite(lo) & (y <= lo + eps)
    at_hi = jnp.isfinite(hi) & (y >= hi - eps) & ~at_lo
    slide = jnp.zeros_like(at_lo)
    if len(first):
        on = y[rows.parent[first]] > eps
        zn = z[rows.parent[first]]  # the ellipse T projected onto
        c1, c2 = coupling[first], coupling[second]
        l1, l2 = scaled_tangents(y[first], y[second], c1, c2)
        sl = on & (jnp.sqrt(l1 * l1 + l2 * l2) >= zn * (1 - 1e-10))
        slide = slide.at[first].set(sl).at[second].set(sl)
        for k in (first, second):
            at_lo = at_lo.at[k].set(False)
            at_hi = at_hi.at[k].set(~on)
    return at_lo, at_hi, slide


def active_set_polish(rows: RowStructure, cone: str, T, rounds: int):
    """``polish(z, A, b, coupling)``: the sweeps' z moved onto the LCP's solution by an active-set
    method (issue 61, design (c)): the set the projected-Jacobi step from z lands in
    (``_identify``), that set's smooth equations (``_active_set_system``) solved by Gauss–Newton with
    least-squares (least-norm) steps — a face's normals share three directions, and the split the
    sweeps leave is taken as is along that null direction —, the set re-identified and repeated
    ``rounds`` times. The point with the lowest natural-map residual max |diag(A)(T(z) − z)| is
    returned, the sweeps' own unless one is lower (a fixed trip count: jit and vmap alike)."""
    F = _active_set_system(rows, cone)

    def polish(z, A, b, coupling):
        d = jnp.diagonal(A)
        res = lambda q, y: jnp.max(jnp.abs(d * (y - q)), initial=0.0)  # ``_residual`` from y = T(q), T once a point

        def round_(_, carry):
            z, y, best, rbest = carry
            masks = _identify(rows, cone, z, y, coupling)
            f = lambda q: F(q, A, b, coupling, masks)

            def gn(_, q):
                J = jax.jacfwd(f)(q)
                # the least-norm step Jᵀ(JJᵀ + λI)⁻¹F (λ at round-off of JJᵀ's scale: 1e-15 of it, at
                # least 4 epsilons, or float32's steps along a face's null direction are noise that
                # creeps a resting body): a Cholesky, not an SVD
                JJ = J @ J.T
                rel = max(1e-15, 4 * float(jnp.finfo(JJ.dtype).eps))
                lam = rel * jnp.maximum(jnp.max(jnp.abs(jnp.diagonal(JJ))), jnp.finfo(JJ.dtype).tiny)
                JJ = JJ + lam * jnp.eye(JJ.shape[0], dtype=JJ.dtype)
                dq = J.T @ linalg.cho_solve((linalg.cholesky(JJ), True), f(q))
                q_new = q - dq
                return jnp.where(jnp.all(jnp.isfinite(q_new)), q_new, q)

            q = jax.lax.fori_loop(0, ACTIVE_SET_INNER, gn, z)
            # rows held at a bound sit on it exactly (the least-norm steps leave round-off there: a
            # contact that is off carries 0, not 1e-17); normals first, then the friction bounds they set
            for _ in range(2):
                lo, hi = _bounds(rows, q, coupling)
                q = jnp.where(masks[0], lo, jnp.where(masks[1], hi, q))
            yq = T(q, A, b, coupling)
            r = res(q, yq)
            better = r < rbest
            return q, yq, jnp.where(better, q, best), jnp.where(better, r, rbest)

        y = T(z, A, b, coupling)
        _, _, best, _ = jax.lax.fori_loop(0, rounds, round_, (z, y, z, res(z, y)))
        return best

    return polish


def stalled_polish(active, cap: int):
    """``polish(z, A, b, coupling, sweeps)``: ``active`` (an ``active_set_polish``) applied where the
    sweeps reached ``cap``, z as it is elsewhere (``LCPSettings.stall_active_set``). A ``lax.cond``,
    so a solve that stopped by the tolerance pays nothing; batched, a loop over the stalled problems
    alone, one at a time (a ``vmap`` of a plain ``cond`` would polish every problem, always)."""
    def keep(z, A, b, coupling):
        return z

    def single(z, A, b, coupling, sweeps):
        return jax.lax.cond(sweeps >= cap, active, keep, z, A, b, coupling)

    def batched(z, A, b, coupling, sweeps):
        hit = sweeps >= cap
        order = jnp.argsort(~hit, stable=True)  # the stalled problems first

        def one(k, z):
            i = order[k]
            return z.at[i].set(active(z[i], A[i], b[i], coupling[i]))

        return jax.lax.fori_loop(0, jnp.sum(hit), one, z)

    return with_batching_rule(single, batched)


def _unrolled_row(rows: RowStructure, i: int, zs, A, b, coupling):
    """Row ``i`` of an unrolled sweep updated on its own (``zs``: the impulses as scalars, current):
    its Gauss–Seidel step clipped to its own bounds (a friction row's interval, a normal's z >= 0)."""
    acc = b[i]
    for j in range(len(zs)):
        acc = acc + A[i, j] * zs[j]
    zi = zs[i] - acc / A[i, i]
    if rows.is_friction[i]:
        bound = coupling[i] * zs[int(rows.parent[i])]
        zi = jnp.clip(zi, -bound, bound)
    elif rows.lo0[i] == 0.0:
        zi = jnp.maximum(zi, 0.0)
    return zi


def _pgs_sweep(rows: RowStructure, z, lcp, unrolled: bool, cone: str = "box", visit=None):
    """One projected Gauss–Seidel sweep of ``lcp`` = (A, b, coupling); returns (z, max scaled change).

    z, b, coupling: (m, *batch); A: (m, m, *batch) — the batch, if any, is the *trailing* axis
    (``_pgs_batched``), so every row update is one contiguous vector operation. ``cone``
    "elliptic": a contact's two tangent rows are one block (``disc_step``, ``project_disc``).
    visit: None (every row), or ``(order, count)`` of the looped sweeps (``visited_rows``): rows
    ``order[:count]`` in that order, the others left as they are."""
    A, b, coupling = lcp
    m = z.shape[0]
    if cone == "elliptic" and len(rows.pairs()[0]):
        return _pgs_sweep_disc(rows, z, lcp, unrolled, visit)
    if unrolled:  # the method's sweep (``problem.choose``: up to ``SMALL_ROWS`` rows)
        # Unrolled on scalars: with a trailing batch axis every row update is an elementwise
        # vector operation, so XLA fuses the sweep into few kernels with no dynamic-update-slices.
        zs = [z[i] for i in range(m)]
        change = jnp.zeros_like(b[0])
        for i in range(m):
            zi = _unrolled_row(rows, i, zs, A, b, coupling)
            change = jnp.maximum(change, jnp.abs(A[i, i] * (zi - zs[i])))
            zs[i] = zi
        return jnp.stack(zs), change

    d = jnp.diagonal(A)
    lo0 = jnp.asarray(rows.lo0, z.dtype)
    hi0 = jnp.asarray(rows.hi0, z.dtype)
    parent = jnp.asarray(rows.parent)

    def row(k, carry):
        z, change = carry
        i = k if visit is None else visit[0][k]
        zi = z[i] - (jnp.dot(A[i], z) + b[i]) / d[i]
        zp = z[parent[i]]
        zi = jnp.clip(zi, lo0[i] - coupling[i] * zp, hi0[i] + coupling[i] * zp)
        return z.at[i].set(zi), jnp.maximum(change, jnp.abs(d[i] * (zi - z[i])))

    return jax.lax.fori_loop(0, m if visit is None else visit[1], row, (z, jnp.zeros((), z.dtype)))


def _pgs_sweep_disc(rows: RowStructure, z, lcp, unrolled: bool, visit=None):
    """``_pgs_sweep`` with the elliptic cone: rows in order, each contact's tangent pair (``first``,
    ``second``: ``RowStructure.pairs``) updated at its first row as one block, from the constraint
    velocities after its normal's update."""
    A, b, coupling = lcp
    first, second = rows.pairs()
    m = z.shape[0]
    partner = np.arange(m)
    partner[first] = second
    is_first = np.zeros(m, bool)
    is_first[first] = True
    is_second = np.zeros(m, bool)
    is_second[second] = True
    if unrolled:
        zs = [z[i] for i in range(m)]
        change = jnp.zeros_like(b[0])
        for i in range(m):
            if is_second[i]:
                continue
            if is_first[i]:
                j = int(partner[i])
                # the pair's two sums as one reduction over the stacked impulses: as scalar chains, XLA's
                # CPU fusion recomputed them in every later row (a program 7x the box's, 2-3x slower)
                zv = jnp.stack(zs)
                wi, wj = b[i] + jnp.sum(A[i] * zv, axis=0), b[j] + jnp.sum(A[j] * zv, axis=0)
                si, sj = disc_step(coupling[i], coupling[j], A[i, i], A[j, j])
                zi, zj = project_disc(zs[i] - si * wi, zs[j] - sj * wj, coupling[i], coupling[j],
                                      zs[int(rows.parent[i])])
                change = jnp.maximum(change, jnp.maximum(jnp.abs(A[i, i] * (zi - zs[i])), jnp.abs(A[j, j] * (zj - zs[j]))))
                zs[i], zs[j] = zi, zj
                continue
            zi = _unrolled_row(rows, i, zs, A, b, coupling)  # a normal, or a contact's only tangent
            change = jnp.maximum(change, jnp.abs(A[i, i] * (zi - zs[i])))
            zs[i] = zi
        return jnp.stack(zs), change

    d = jnp.diagonal(A)
    lo0 = jnp.asarray(rows.lo0, z.dtype)
    hi0 = jnp.asarray(rows.hi0, z.dtype)
    parent = jnp.asarray(rows.parent)
    partner_j, first_j, second_j = jnp.asarray(partner), jnp.asarray(is_first), jnp.asarray(is_second)

    def row(k, carry):
        z, change = carry
        i = k if visit is None else visit[0][k]
        j = partner_j[i]
        wi, wj = jnp.dot(A[i], z) + b[i], jnp.dot(A[j], z) + b[j]
        zp = z[parent[i]]
        box = jnp.clip(z[i] - wi / d[i], lo0[i] - coupling[i] * zp, hi0[i] + coupling[i] * zp)
        si, sj = disc_step(coupling[i], coupling[j], d[i], d[j])
        pi, pj = project_disc(z[i] - si * wi, z[j] - sj * wj, coupling[i], coupling[j], zp)
        zi = jnp.where(first_j[i], pi, jnp.where(second_j[i], z[i], box))
        zj = jnp.where(first_j[i], pj, z[j])
        change = jnp.maximum(change, jnp.maximum(jnp.abs(d[i] * (zi - z[i])), jnp.abs(d[j] * (zj - z[j]))))
        return z.at[j].set(zj).at[i].set(zi), change

    return jax.lax.fori_loop(0, m if visit is None else visit[1], row, (z, jnp.zeros((), z.dtype)))


VISIT_COUPLED_ROWS = True
"""Whether the looped dense sweeps (``problem.choose``: above ``SMALL_ROWS`` rows, a jointed world's
solve) visit only the rows that can change (``visited_rows``); the same iterates either way (a
benchmark's switch: ``python -m benchmarks.robot_speed --profile-steps ...`` times both)."""


def visited_rows(A, b, z0):
    """``(order, count)``: the rows a looped sweep visits, in their own order, then the rest. A row
    is skipped only where a sweep cannot change it nor anything else: no off-diagonal entry in its
    row or column of A, b = 0 and z0 = 0 there (a padded contact's rows, which ``entry.solve_contact``
    decouples so: its update is clip(0 − (A_ii·0 + 0)/A_ii) = 0 with a change of 0). So the sweeps'
    iterates, counts and changes are those of visiting every row, bit for bit."""
    off = (A != 0) & ~jnp.eye(A.shape[0], dtype=bool)
    skip = ~jnp.any(off, axis=1) & ~jnp.any(off, axis=0) & (b == 0) & (z0 == 0)
    order = jnp.argsort(skip, stable=True)  # the visited rows first, in their order
    return order.astype(jnp.int32), jnp.sum(~skip).astype(jnp.int32)


def _tolerance(settings: LCPSettings, b):
    """The stopping tolerance of one problem (b: (m,)): ``settings.tol``, but never below what the
    dtype can resolve at the problem's velocity scale max |b| — in float32 a velocity change below
    ~1e-5 m/s is round-off. (Rows that must not push are decoupled by the caller with b = 0:
    ``entry.solve_contact``; they do not raise the scale.)"""
    floor = 64 * jnp.finfo(b.dtype).eps * (1.0 + jnp.max(jnp.abs(b), axis=0))
    return jnp.maximum(jnp.asarray(settings.tol, b.dtype), floor)


class _Sweeps(NamedTuple):
    """What a dense solve's sweeps are (static): the rows, the settings, unrolled or looped."""

    rows: RowStructure
    settings: LCPSettings
    unrolled: bool


def _pgs_single(how: _Sweeps, z, A, b, coupling):
    """Sweeps of one problem until no scaled change exceeds the tolerance (or the cap):
    (z, last change, sweeps)."""
    rows, settings, unrolled = how
    tol = _tolerance(settings, b)
    visit = None if unrolled or not VISIT_COUPLED_ROWS else visited_rows(A, b, z)

    def body(carry):
        z, _, it = carry
        z, change = _pgs_sweep(rows, z, (A, b, coupling), unrolled, settings.cone, visit)
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
        zn, ch = _pgs_sweep(rows, zt, (At, bt, ct), True, settings.cone)  # the tail rule serves unrolled sweeps only
        return zn, ch, it + 1

    def unfinished(carry, tol):
        _, change, it = carry
        return (it < cap) & (change > tol)

    carry = (zt, jnp.full((B,), jnp.inf, b.dtype), jnp.zeros((B,), jnp.int32))
    zt, change, it = tail_sweeps(sweep, unfinished, (At, bt, ct), carry, tol, MIN_TAIL_DENSE, axis=-1)
    return zt.T, change, it


def _pgs(rows: RowStructure, settings: LCPSettings, plan: Plan):
    """The forward solve (z0, A, b, coupling) -> (z, change, sweeps): with the one batching rule
    where ``plan.batching`` says so (``problem.choose``)."""
    single = functools.partial(_pgs_single, _Sweeps(rows, settings, plan.sweep == "unrolled"))
    if plan.batching != "tail":
        return single  # a uniform trip count, or rows in a fori_loop: plain vmap is right
    return with_batching_rule(single, functools.partial(_pgs_batched, rows, settings))


def _refined(active, T):
    """``refine`` for ``implicit_fixed_point``: a solve's output (z, (residual, sweeps)) with z moved
    by ``active`` (``active_set_polish``) and its residual taken again."""
    def refine(out, A, b, coupling):
        z, (_, it) = out
        z = active(z, A, b, coupling)
        return z, (_residual(T, z, A, b, coupling), it)

    return refine


def solve_lcp(A, b, coupling, rows: RowStructure, settings: LCPSettings = LCPSettings(), z0=None,
              method: Plan | None = None):
    """Solve the box-friction LCP (see module docstring); differentiable in A, b and coupling.

    A: (m, m) Delassus matrix J M⁻¹ Jᵀ. b: (m,) free constraint velocity plus bias.
    coupling: (m,) friction coefficient of each friction row (ignored on other rows).
    z0: (m,) start of the sweeps (a warm start; default zero) — not differentiated.
    method: a ``problem.Plan`` of the dense form (None: the table's, ``problem.table``, from the row count).
    Returns ``LCPSolution(z, residual, iterations)``. The arrays one by one, as a user holds them;
    a law's problem goes through ``solve_contact`` (``solve_dense``)."""
    plan = table("dense", len(rows.lo0), Method(settings)) if method is None else method
    return solve_dense(DenseLCP(A=A, b=b, coupling=coupling, z0=z0, rows=rows), settings, plan)


def solve_dense(lcp: DenseLCP, settings: LCPSettings, plan: Plan) -> LCPSolution:
    """``solve_lcp`` of a ``DenseLCP`` by the sweeps and batching of ``plan`` (``problem.choose``)."""
    A, b, coupling, z0, rows = lcp.A, lcp.b, lcp.coupling, lcp.z0, lcp.rows
    A = regularized(A, settings.regularization)
    T = _fixed_point_map(rows, settings.cone)
    if z0 is None:
        z0 = jnp.zeros_like(b)
    pgs = _pgs(rows, settings, plan)
    polish = None
    if settings.polish_settings() is not None or settings.gradient_newton:
        fine = settings.polish_settings()
        fine = None if fine is None else _pgs(rows, fine, table("dense", len(rows.lo0), Method(fine)))
        newton = newton_polish(T, settings.gradient_newton) if settings.gradient_newton else None

        def polish(z, A, b, coupling):
            A, b, coupling = (jax.lax.stop_gradient(x) for x in (A, b, coupling))
            z = z if newton is None else newton(z, A, b, coupling)
            start = jnp.zeros_like(z) if settings.gradient_restart else z
            z = z if fine is None else fine(start, A, b, coupling)[0]
            return z if newton is None or fine is None else newton(z, A, b, coupling)

    split = newton_polish(T, settings.forward_newton) if settings.forward_newton else None
    if settings.forward_active_set is None:  # the default: the disc's dense solves polish where differentiated
        rounds = DENSE_ACTIVE_SET_ROUNDS if settings.cone == "elliptic" else 0  # (the square keeps its iterates)
        refine, active = (_refined(active_set_polish(rows, settings.cone, T, rounds), T) if rounds else None), None
    else:  # an explicit count: every solve
        rounds = settings.forward_active_set
        refine, active = None, (active_set_polish(rows, settings.cone, T, rounds) if rounds else None)

    stall = None
    if settings.stall_active_set and not settings.fixed_iterations:
        stall = stalled_polish(active_set_polish(rows, settings.cone, T, settings.stall_active_set), settings.max_iter)

    @implicit_fixed_point(T, has_aux=True, polish=polish, refine=refine)
    def _solve(z_init, A, b, coupling):
        A, b, coupling = (jax.lax.stop_gradient(x) for x in (A, b, coupling))
        z, _, it = pgs(jax.lax.stop_gradient(z_init), A, b, coupling)
        if stall is not None:  # a stalled solve moved onto its fixed point in the forward (issue 63)
            z = stall(z, A, b, coupling, it)
        if split is not None:  # the split the sweeps leave converged (issue 61): the value is the fixed point
            z = split(z, A, b, coupling)
        if active is not None:  # the sweeps' point moved onto the fixed point by its active set (issue 61)
            z = active(z, A, b, coupling)
        return z, (_residual(T, z, A, b, coupling), it)

    z, (res, it) = _solve(z0, A, b, coupling)
    return LCPSolution(z=z, residual=res, iterations=it)
