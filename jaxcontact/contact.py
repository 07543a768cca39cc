"""The contact problem: built once for every LCP-based law and for chains.

Every hard-contact law in jaxcontact resolves contact the same way: rows J (a normal and
``num_tangents`` friction rows per contact) act on the generalised velocity through a mobility W
(M⁻¹ for one body; the joint-constrained mobility for a chain), and the impulse z solves the
box-friction LCP (``solvers.solve_lcp``)

    0 <= z_n  ⊥  J_n v⁺ − target >= 0,      |z_t,k| <= μ_k z_n opposing J_t,k v⁺,
    v⁺ = v_free + W Jᵀ z,  target = −φ/h (no penetration at the end of the step) unless raised.

This module is the one place that stacks those rows, forms the Delassus matrix A = J W Jᵀ and
the free constraint velocities, masks padded candidates, calls the solver and fills
``ContactInfo``. The laws only decide what is theirs: where the rows come from (the body's
vertices, a learned φ, a chain's links), the friction coefficients and the target.

* ``from_jacobians`` — a problem from any rows (ContactNets' learned Jacobians, chains).
* ``rigid_body`` — the rows of a body's closest vertices against the ground (``geometry``); the
  normal target is capped at ``Model.max_correction_speed``.
* ``solve`` / ``solve_relaxed`` — the hard and the relaxed solution, as ``ContactSolution``.
* ``body_problem`` / ``solve_bodies`` — the problem of contacts between free bodies (a world)
  kept as rows on their two bodies, and its matrix-free solution (``solvers.solve_body_lcp``);
  ``dense`` turns it into a ``ContactProblem`` for ``solve`` (small worlds).
* ``frictionless`` — the normal-only problem of a body (dacm's reference and dynamic branch).
* ``info`` / ``rigid_body_info`` / ``empty_info`` — the per-step ``ContactInfo``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from . import geometry
from .solvers import (
    LCPSettings,
    RelaxedGradient,
    RowStructure,
    ground_index,
    regularized,
    relaxed_gradient,
    solve_body_lcp,
    solve_lcp,
    solve_relaxed_lcp,
    with_ground,
)
from .types import ContactInfo


@struct.dataclass
class ContactProblem:
    """The velocity-level contact problem of C contacts with d = 1 + num_tangents rows each.

    J: (C·d, nv) stacked rows (normal, tangents per contact). A: (C·d, C·d) Delassus matrix J W Jᵀ.
    free_velocity: (C, d) J v_free per contact. phi: (C,) signed distances (m). valid: (C,) real
    contacts (padding never pushes). target: (C,) −φ/h, the no-penetration normal velocity (m/s).
    """

    J: jnp.ndarray
    A: jnp.ndarray
    free_velocity: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    target: jnp.ndarray
    num_contacts: int = struct.field(pytree_node=False)
    num_tangents: int = struct.field(pytree_node=False)

    @property
    def rows_per_contact(self) -> int:
        return 1 + self.num_tangents


@struct.dataclass
class ContactSolution:
    """z: (C, d) impulses per contact in the contact frame (normal, tangents); impulse: (nv,)
    generalised impulse Jᵀz; residual (m/s) and iterations of the solver."""

    z: jnp.ndarray
    impulse: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray


def from_jacobians(jac, phi, valid, mobility, v_free, dt: float) -> ContactProblem:
    """A problem from per-contact rows ``jac`` (C, d, nv) [normal, tangents...], signed distances
    ``phi`` (C,), a ``valid`` mask (C,), the ``mobility`` W (nv, nv) and the free velocity (nv,)."""
    C, d = jac.shape[0], jac.shape[1]
    J = jac.reshape(C * d, -1)
    return ContactProblem(
        J=J,
        A=J @ mobility @ J.T,
        free_velocity=(J @ v_free).reshape(C, d),
        phi=phi,
        valid=valid,
        target=-phi / dt,
        num_contacts=C,
        num_tangents=d - 1,
    )


def block_diag(blocks) -> jnp.ndarray:
    """Block-diagonal matrix of a stacked (n, r, c) array of equal-shape blocks: the mobility W of
    n free bodies from their (n, 6, 6) inverse mass matrices."""
    blocks = jnp.asarray(blocks)
    n, r, c = blocks.shape
    eye = jnp.eye(n, dtype=blocks.dtype)
    return jnp.einsum("lij,lm->limj", blocks, eye).reshape(n * r, n * c)


def from_body_rows(rows, bodies, phi, valid, mobility_blocks, v_free, dt: float) -> ContactProblem:
    """A problem of contacts between the free bodies of a world (and its ground).

    rows: (C, 2, d, 6) each contact's rows [normal, tangents...] on its two bodies, signed so that
    their sum applied to the two bodies' generalised velocities is the *relative* velocity (body
    b's minus body a's; the normal points from a to b, so a positive normal velocity separates).
    bodies: (C, 2) integer array (static or traced) of the two bodies' indices, −1 for the ground (no rows).
    mobility_blocks: (N, 6, 6) every body's M⁻¹, or (6N, 6N) a full mobility W (a jointed world's);
    v_free: (N, 6) free velocities. The stacked J is (C·d, 6N); with the blocks W is block-diagonal,
    so A = J W Jᵀ couples exactly the contacts that share a body."""
    C, _, d, nv = rows.shape
    N = v_free.shape[0]
    onehot = jax.nn.one_hot(bodies, N, dtype=rows.dtype)  # the ground's −1 gives a zero row
    jac = jnp.einsum("csdk,csn->cdnk", rows, onehot).reshape(C, d, N * nv)
    W = block_diag(mobility_blocks) if mobility_blocks.ndim == 3 else mobility_blocks
    return from_jacobians(jac, phi, valid, W, v_free.reshape(-1), dt)


@struct.dataclass
class BodyProblem:
    """The contact problem of a world's free bodies kept as rows on each contact's two bodies
    (A = J W Jᵀ is never formed: ``solve_bodies``).

    rows: (C, 2, d, 6) [normal, tangents] on the two bodies (signed: their sum is the relative
    velocity). bodies: (C, 2) the bodies' indices, −1 the ground. mobility: (N, 6, 6) every body's
    M⁻¹ (free bodies), or (6N, 6N) a full mobility W (a jointed world's: solved densely).
    v_free: (N, 6). phi, valid, target: (C,) as ``ContactProblem``'s."""

    rows: jnp.ndarray
    bodies: jnp.ndarray
    mobility: jnp.ndarray
    v_free: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    target: jnp.ndarray

    @property
    def num_contacts(self) -> int:
        return self.rows.shape[0]

    @property
    def rows_per_contact(self) -> int:
        return self.rows.shape[2]


def body_problem(rows, bodies, phi, valid, mobility, v_free, dt: float) -> BodyProblem:
    """The ``BodyProblem`` of a world's contacts (arguments as ``from_body_rows``)."""
    return BodyProblem(rows=rows, bodies=jnp.asarray(bodies, jnp.int32), mobility=mobility,
                       v_free=v_free, phi=phi, valid=valid, target=-phi / dt)


def relative_velocity(problem: BodyProblem, v) -> jnp.ndarray:
    """(C, d) every contact's rows applied to the bodies' velocities v (N, 6): the relative
    velocity along [normal, tangents] (the ground at rest)."""
    return jnp.einsum("csdk,csk->cd", problem.rows, with_ground(v)[ground_index(problem.bodies, v.shape[0])])


def body_impulse(problem: BodyProblem, z) -> jnp.ndarray:
    """(N, 6) every body's generalised impulse Jᵀz from the contacts' impulses z (C, d)."""
    N = problem.v_free.shape[0]
    p = jnp.einsum("csdk,cd->csk", problem.rows, z)
    idx = ground_index(problem.bodies, N)
    return jnp.zeros((N + 1, 6), p.dtype).at[idx.reshape(-1)].add(p.reshape(-1, 6))[:N]


def dense(problem: BodyProblem) -> ContactProblem:
    """The same problem with J (C·d, 6N) and A formed (``from_body_rows``), for ``solve``."""
    prob = from_body_rows(problem.rows, problem.bodies, problem.phi, problem.valid, problem.mobility,
                          problem.v_free, 1.0)
    return prob.replace(target=problem.target)  # the problem's own target (capped, raised), not −φ/dt


def solve_bodies(problem: BodyProblem, mu, settings: LCPSettings = LCPSettings(), target=None, z0=None,
                 soft=None, group: int | None = None) -> ContactSolution:
    """The hard contact impulse of a world's contacts by projected Gauss–Seidel in velocity form
    (``solvers.solve_body_lcp``): the solution of ``solve(dense(problem), ...)`` (the same sweeps
    in exact arithmetic) in O(C) memory, each sweep visiting the valid contacts only. mu: (C, nt)
    per tangent row (or broadcastable); target: (C,) normal target, default −φ/h; z0: (C, d) warm
    start; soft: (C,) or (C, d) relative diagonal added to the rows (``worlds.pipeline.soften``).
    ``impulse`` is (6N,), as ``solve``'s over the world's stacked velocities."""
    C, d = problem.num_contacts, problem.rows_per_contact
    dtype = problem.v_free.dtype
    target = problem.target if target is None else target
    bias = jnp.zeros((C, d), dtype).at[:, 0].set(-target)
    coupling = jnp.concatenate([jnp.zeros((C, 1), dtype), jnp.broadcast_to(jnp.asarray(mu, dtype), (C, d - 1))], axis=1)
    if soft is not None:
        soft = jnp.asarray(soft, dtype)
        soft = jnp.broadcast_to(soft[:, None] if soft.ndim == 1 else soft, (C, d))
    if z0 is not None:
        z0 = jax.lax.stop_gradient(z0)
    if problem.mobility.ndim != 3:
        raise ValueError("solve_bodies: the velocity form needs every body's own M⁻¹ (N, 6, 6); a full mobility "
                         "(a jointed world's) is solved densely: solve(dense(problem), ...)")
    sol = solve_body_lcp(problem.rows, problem.bodies, problem.mobility, problem.v_free, bias, coupling,
                         problem.valid, soft, settings, z0, group)
    return ContactSolution(z=sol.z, impulse=body_impulse(problem, sol.z).reshape(-1), residual=sol.residual,
                           iterations=sol.iterations)


def soften(problem: ContactProblem, soft) -> ContactProblem:
    """The dense problem with ``soft`` ((C,) per contact) added to A's diagonal, relative to it
    (what ``solve_bodies`` does row by row): constraint-force mixing (``worlds.pipeline.soft_rows``)."""
    row_soft = jnp.repeat(soft, problem.rows_per_contact).astype(problem.A.dtype)
    return problem.replace(A=problem.A + jnp.diag(row_soft * jnp.diagonal(problem.A)))


DENSE_ROWS = 64
"""A world's contact problems of at most this many rows (C·d) are solved densely (``solve``: A
formed, the sweep unrolled, its own batching rule); larger ones in velocity form
(``solve_bodies``: A never formed, each sweep over the valid contacts only). Both give the same
impulses up to round-off (tests/test_worlds.py). The dense form also serves the ``"relaxed"``
gradient mode, which the velocity form does not implement, and a jointed world's full mobility."""


def solve_world(problem: BodyProblem, mu, settings: LCPSettings, target, z0=None, soft=None,
                gradient: RelaxedGradient | None = None, group: int | None = None) -> ContactSolution:
    """A world's contact solution: ``solve(dense(problem), ...)`` up to ``DENSE_ROWS`` rows, with the
    relaxed gradient or with a jointed world's full mobility; ``solve_bodies`` above."""
    if problem.num_contacts * problem.rows_per_contact <= DENSE_ROWS or gradient is not None \
            or problem.mobility.ndim == 2:
        prob = dense(problem)
        if soft is not None:
            prob = soften(prob, soft)
        return solve(prob, mu, settings, target, z0=z0, gradient=gradient)
    return solve_bodies(problem, mu, settings, target, z0=z0, soft=soft, group=group)


def rigid_body(model, params, state, v_free, friction: bool = True):
    """(problem, candidates) for ``params.body``'s ``model.num_contacts`` closest vertices against
    ``params.ground``; ``friction=False`` keeps only the normal rows."""
    body = params.body
    con = geometry.contact_candidates(body, params.ground, state, model.num_contacts(body))
    jac = con.jac if friction else con.jac[:, :1, :]
    prob = from_jacobians(jac, con.phi, con.valid, geometry.mass_matrix_inverse(body, state), v_free, model.dt)
    if model.max_correction_speed is not None:
        # a penetrating vertex is pushed out at most this fast (no launch from deep penetration)
        prob = prob.replace(target=jnp.minimum(prob.target, jnp.asarray(model.max_correction_speed, prob.target.dtype)))
    return prob, con


def _rhs(problem: ContactProblem, target):
    target = problem.target if target is None else target
    return problem.free_velocity.at[:, 0].add(-target)


def _without_padding(problem: ContactProblem, rhs):
    """(A, b) of the LCP with the padded contacts' rows decoupled: their off-diagonal entries of A
    and their b are zero, so PGS leaves their impulse at exactly 0 (z = max(0, −0/A_ii)) and they
    neither push nor enter the solver's tolerance. Rows of real contacts are unchanged."""
    valid = jnp.repeat(problem.valid, problem.rows_per_contact)
    keep = (valid[:, None] & valid[None, :]) | np.eye(valid.shape[0], dtype=bool)
    A = jnp.where(keep, problem.A, jnp.zeros_like(problem.A))
    return A, jnp.where(valid, rhs.reshape(-1), jnp.zeros_like(rhs.reshape(-1)))


def _coupling(problem: ContactProblem, mu):
    C, nt = problem.num_contacts, problem.num_tangents
    dtype = problem.A.dtype
    mu = jnp.broadcast_to(jnp.asarray(mu, dtype), (C, nt))
    return jnp.concatenate([jnp.zeros((C, 1), dtype), mu], axis=1).reshape(-1)


def solve(problem: ContactProblem, mu=1.0, settings: LCPSettings = LCPSettings(), target=None,
          z0=None, gradient: RelaxedGradient | None = None) -> ContactSolution:
    """The hard contact impulse: the box-friction LCP by projected Gauss–Seidel with implicit
    gradients. mu: friction coefficient per tangent row, broadcast to (C, num_tangents) (a scalar,
    (nt,) per direction, or (C, nt)); target: (C,) normal-row target, default −φ/h; z0: (C, d)
    start of the sweeps (a warm start; default zero; padded contacts start at zero).
    gradient: None for the exact implicit derivative; a ``solvers.RelaxedGradient`` for the
    relaxed one (same value, derivative of the relaxed problem near it: ``solvers.relaxed``)."""
    C, d = problem.num_contacts, problem.rows_per_contact
    A, b = _without_padding(problem, _rhs(problem, target))
    rows = RowStructure.contacts(C, problem.num_tangents)
    if z0 is not None:
        z0 = jnp.where(problem.valid[:, None], jax.lax.stop_gradient(z0), 0.0).astype(b.dtype).reshape(-1)
    coupling = _coupling(problem, mu)
    sol = solve_lcp(A, b, coupling, rows, settings, z0=z0)
    z = sol.z
    if gradient is not None:
        z = relaxed_gradient(z, regularized(A, settings.regularization), b, coupling, rows,
                             jnp.repeat(problem.valid, d), gradient)
    return ContactSolution(z=z.reshape(C, d), impulse=problem.J.T @ z, residual=sol.residual,
                           iterations=sol.iterations)


def solve_relaxed(problem: ContactProblem, mu, kappa: float, newton_iters: int, regularization: float = 1e-6,
                   target=None) -> ContactSolution:
    """The relaxed-complementarity impulse (``solvers.solve_relaxed_lcp``) of the same problem;
    A gets a relative diagonal ``regularization``."""
    C, d = problem.num_contacts, problem.rows_per_contact
    A = problem.A + jnp.diag(regularization * jnp.diagonal(problem.A))
    b = _rhs(problem, target).reshape(-1)
    rows = RowStructure.contacts(C, problem.num_tangents)
    valid = jnp.repeat(problem.valid, d)
    sol = solve_relaxed_lcp(A, b, _coupling(problem, mu), rows, valid, kappa, newton_iters)
    return ContactSolution(z=sol.z.reshape(C, d), impulse=problem.J.T @ sol.z, residual=sol.residual,
                           iterations=sol.iterations)


def frictionless(model, params, state, v_free, settings: LCPSettings = LCPSettings()):
    """(solution, candidates) of the frictionless LCP of ``params.body`` at ``v_free``:
    normal impulses ``solution.z[:, 0]`` (C,) and the generalised impulse ``solution.impulse``."""
    prob, con = rigid_body(model, params, state, v_free, friction=False)
    return solve(prob, 0.0, settings), con


def info(phi, active, z, patch, solution: ContactSolution, mode=-1, patch_normal=None) -> ContactInfo:
    """``ContactInfo`` of one step from the contacts' φ and active mask, impulses z (C, d), a patch
    (``kind``, ``centre`` and, unless ``patch_normal`` is given, ``normal``) and the solution."""
    return ContactInfo.from_patch(phi, active, z, patch, solution.residual, solution.iterations, mode, patch_normal)


def empty_info(num_contacts: int, dim: int, dtype) -> ContactInfo:
    """``ContactInfo`` of a step with no contact resolution (laws without geometry: ``NoContact``,
    ContactNets' end-to-end network): no candidates active, zero impulses and distances, no
    patch (``PatchType.NONE``, zero centre and normal), solver residual and iterations 0, mode −1."""
    z = jnp.zeros((), dtype)
    return ContactInfo(
        phi=jnp.zeros(num_contacts, dtype), active=jnp.zeros(num_contacts, bool),
        impulse=jnp.zeros((num_contacts, dim), dtype), patch_type=jnp.zeros((), jnp.int32),
        patch_centre=jnp.zeros(dim, dtype), patch_normal=jnp.zeros(dim, dtype), residual=z,
        iterations=jnp.zeros((), jnp.int32), mode=-jnp.ones((), jnp.int32),
    )


def rigid_body_info(model, params, con: geometry.Contacts, solution: ContactSolution, mode=-1) -> ContactInfo:
    """``info`` for a body's candidates: the vertices' contact patch and the candidates within
    ``model.patch_tol``."""
    patch = geometry.patch_from_points(con.all_points, con.all_phi, params.body.vertex_mask > 0, params.ground,
                                       model.patch_tol)
    active = con.valid & (con.phi <= model.patch_tol)
    return info(con.phi, active, solution.z, patch, solution, mode)


__all__ = [
    "BodyProblem",
    "block_diag",
    "body_impulse",
    "body_problem",
    "dense",
    "relative_velocity",
    "solve_bodies",
    "from_body_rows",
    "ContactProblem",
    "ContactSolution",
    "empty_info",
    "frictionless",
    "from_jacobians",
    "info",
    "rigid_body",
    "rigid_body_info",
    "DENSE_ROWS",
    "soften",
    "solve",
    "solve_relaxed",
    "solve_world",
]
