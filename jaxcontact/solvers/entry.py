"""The one solver entry of the contact problem: ``solve_contact``.

Every law hands its problem here (``CoulombLCP`` one body's ``ContactProblem`` or a world's
``BodyProblem``, ContactNets' learned one, dacm's frictionless one, ``RelaxedCoulomb``'s relaxed
one); ``problem.choose`` picks the method from the problem's static sizes and the law's settings
(the table in ``problem``'s docstring) and this module runs it: the box-friction LCP by projected
Gauss–Seidel dense (``lcp.solve_lcp``) or in velocity form (``body_lcp.solve_body_lcp``), or the
relaxed LCP by Newton (``relaxed_lcp``), each with its implicit derivative.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .body_lcp import ground_index, solve_body_lcp
from .lcp import LCPSettings, RowStructure, regularized, solve_lcp
from .problem import BodyProblem, ContactProblem, ContactSolution, choose, dense, soften
from .relaxed import RelaxedGradient, relaxed_gradient
from .relaxed_lcp import solve_relaxed_lcp


def solve_contact(problem, mu=1.0, settings: LCPSettings = LCPSettings(), target=None, z0=None, soft=None,
                  gradient: RelaxedGradient | None = None, group: int | None = None, relaxed=None,
                  form: str | None = None) -> ContactSolution:
    """The contact impulse of ``problem`` (a ``ContactProblem`` or a ``BodyProblem``).

    mu: friction coefficient per tangent row, broadcast to (C, num_tangents) (a scalar, (nt,) per
    direction, or (C, nt)); settings: the law's ``LCPSettings``; target: (C,) normal-row target,
    default the problem's (−φ/h); z0: (C, d) start of the sweeps (a warm start; padded contacts
    start at zero; not differentiated); soft: (C,) relative diagonal added to each contact's rows, or
    (C, d) to each row (constraint-force mixing; a world's softness; MuJoCo-soft rows' R / A_ii); gradient: a ``RelaxedGradient`` for the relaxed
    derivative (same value; dense form); group: the contacts' manifold size (the coloured sweeps);
    relaxed: ``(kappa, newton_iters, regularization[, cone])`` for the relaxed-complementarity solution
    (``RelaxedCoulomb``; ``settings`` unused); form: force "dense" or "velocity" (``problem.choose``)."""
    if isinstance(problem, BodyProblem):
        kind, full = "bodies", problem.full_mobility
    elif isinstance(problem, ContactProblem):
        kind, full = "dense", False
    else:
        raise TypeError(f"solve_contact: expected a ContactProblem or a BodyProblem, got {type(problem).__name__}")
    rows = problem.num_contacts * problem.rows_per_contact
    held = problem.fixed_normal is not None  # rows of a fixed bound (a joint's friction loss): dense only
    if held and (relaxed is not None or form == "velocity"):
        raise ValueError("solve_contact: a problem with fixed-normal contacts (a joint's or tendon's friction loss) is "
                         "solved by the dense projected Gauss–Seidel only, not " + ("a relaxed law's Newton solve "
                         "(RelaxedCoulomb)" if relaxed is not None else "in velocity form"))
    method = choose(kind, rows, settings, gradient, full, group, relaxed is not None, "dense" if held else form)
    if held and soft is not None:  # a fixed bound holds without the softness's creep
        soft = jnp.asarray(soft)
        soft = jnp.where(problem.fixed_normal if soft.ndim == 1 else problem.fixed_normal[:, None], 0.0, soft)
    if method.form == "relaxed":
        if kind == "bodies":
            problem = dense(problem)
        return _relaxed(problem if soft is None else soften(problem, soft), mu, *relaxed, target=target)
    if method.form == "velocity":
        sol = _velocity(problem, mu, settings, target, z0, soft, group, method)
    else:
        body = dense(problem) if kind == "bodies" else problem
        sol = _dense(body if soft is None else soften(body, soft), mu, settings, target, z0, gradient, method)
    if kind == "bodies":  # a world's solve: is its solution at a degenerate point (Flags.DEGENERATE)?
        judged = problem if not held else problem.replace(valid=problem.valid & ~problem.fixed_normal)
        sol = sol.replace(degenerate=degenerate(judged, sol.z, mu, target, settings.cone))
    return sol


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


def _held_normals(problem: ContactProblem, A, b, settings):
    """(A, b) with the normal rows of ``problem.fixed_normal``'s valid contacts decoupled and their
    impulse held at 1: the row and column zero but the diagonal 1, and b = −(that diagonal as
    ``lcp.regularized`` leaves it), so that every sweep and the fixed-point map give z_n = 1 and the
    contact's friction rows are bounded by μ alone (a joint's friction loss, μ = loss·h)."""
    d = problem.rows_per_contact
    first = jnp.asarray(np.arange(problem.num_contacts * d) % d == 0)
    n = first & jnp.repeat(problem.fixed_normal & problem.valid, d)
    A = jnp.where(n[:, None] | n[None, :], 0.0, A) + jnp.diag(n.astype(A.dtype))
    return A, jnp.where(n, -jnp.diagonal(regularized(A, settings.regularization)), b)


def _coupling(problem: ContactProblem, mu):
    C, nt = problem.num_contacts, problem.num_tangents
    dtype = problem.A.dtype
    mu = jnp.broadcast_to(jnp.asarray(mu, dtype), (C, nt))
    return jnp.concatenate([jnp.zeros((C, 1), dtype), mu], axis=1).reshape(-1)


def _dense(problem: ContactProblem, mu, settings, target, z0, gradient, method) -> ContactSolution:
    """The box-friction LCP with A formed, by projected Gauss–Seidel with implicit gradients."""
    C, d = problem.num_contacts, problem.rows_per_contact
    A, b = _without_padding(problem, _rhs(problem, target))
    if problem.fixed_normal is not None:
        A, b = _held_normals(problem, A, b, settings)
    rows = RowStructure.contacts(C, problem.num_tangents)
    if z0 is not None:
        z0 = jnp.where(problem.valid[:, None], jax.lax.stop_gradient(z0), 0.0).astype(b.dtype).reshape(-1)
    coupling = _coupling(problem, mu)
    sol = solve_lcp(A, b, coupling, rows, settings, z0=z0, method=method)
    z = sol.z
    if gradient is not None:
        z = relaxed_gradient(z, regularized(A, settings.regularization), b, coupling, rows,
                             jnp.repeat(problem.valid, d), gradient, settings.cone)
    return ContactSolution(z=z.reshape(C, d), impulse=problem.J.T @ z, residual=sol.residual,
                           iterations=sol.iterations)


def body_impulse(problem: BodyProblem, z) -> jnp.ndarray:
    """(N, 6) every body's generalised impulse Jᵀz from the contacts' impulses z (C, d)."""
    N = problem.v_free.shape[0]
    p = jnp.einsum("csdk,cd->csk", problem.rows, z)
    idx = ground_index(problem.bodies, N)
    return jnp.zeros((N + 1, 6), p.dtype).at[idx.reshape(-1)].add(p.reshape(-1, 6))[:N]


def _velocity(problem: BodyProblem, mu, settings, target, z0, soft, group, method) -> ContactSolution:
    """The same LCP in velocity form (``body_lcp.solve_body_lcp``): the solution of the dense
    form (the same sweeps in exact arithmetic) in O(C) memory, each sweep visiting the valid
    contacts only. ``impulse`` is (6N,), as the dense form's over the world's stacked velocities."""
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
    sol = solve_body_lcp(problem.rows, problem.bodies, problem.mobility, problem.v_free, bias, coupling,
                         problem.valid, soft, settings, z0, group, method=method)
    return ContactSolution(z=sol.z, impulse=body_impulse(problem, sol.z).reshape(-1), residual=sol.residual,
                           iterations=sol.iterations)


DEGENERATE_IMPULSE = 1e-2
"""``degenerate``: a contact carries load above this fraction of the problem's largest normal
impulse, and a manifold's friction sits at its bound within this fraction of Σ μ z_n."""
DEGENERATE_VELOCITY = 3e-5
"""``degenerate``: a slip is ~0 below this fraction of the problem's velocity scale (the largest
|J v_free − target| of its valid rows)."""


def degenerate(problem: BodyProblem, z, mu, target=None, cone: str = "box", impulse_tol: float | None = None,
               velocity_tol: float | None = None) -> jnp.ndarray:
    """() bool: whether the box-friction LCP's solution ``z`` (C, d) of a world's ``problem`` sits at
    a stick/slip event, a degenerate complementarity point where the solution is not
    differentiable (its active set changes under a perturbation, and the implicit derivative is
    one side's): a manifold (the consecutive contacts on the same two bodies: a body's ground
    candidates, a pair slot's points) whose net friction along a tangent row over its loaded
    contacts is at its bound |Σ z_t| = Σ μ z_n while every loaded contact's slip is ~0 (the
    manifold saturated, neither sticking nor sliding; ``cone`` "elliptic": the norm of the net
    tangent pair). "~0" and "at" are relative to the problem's scales: ``impulse_tol`` of the
    largest normal impulse (loaded) and of Σ μ z_n,
    ``velocity_tol`` of the largest |J v_free − target| (None: the module's ``DEGENERATE_IMPULSE``,
    ``DEGENERATE_VELOCITY``). Single rows at their bound with no slip inside a manifold that still
    sticks as a whole (the box cone's redundant static friction: a resting pyramid's corners in
    float32, whose rows at their bound cancel) and unloaded contacts with no gap
    velocity are *not* flagged: measured, they fire on pushes, drops and slides whose gradients
    are right (docs/gradients.md, "The DEGENERATE flag"). Not differentiated."""
    impulse_tol = DEGENERATE_IMPULSE if impulse_tol is None else impulse_tol
    velocity_tol = DEGENERATE_VELOCITY if velocity_tol is None else velocity_tol
    z = jax.lax.stop_gradient(z)
    C, d = problem.num_contacts, problem.rows_per_contact
    dtype = problem.v_free.dtype
    target = jax.lax.stop_gradient(problem.target if target is None else target)
    N = problem.v_free.shape[0]
    idx = ground_index(problem.bodies, N)
    p = jnp.einsum("csdk,cd->csk", problem.rows, z)
    p_body = jnp.zeros((N + 1, 6), dtype).at[idx.reshape(-1)].add(p.reshape(-1, 6))[:N]
    if problem.full_mobility:
        dv = (problem.mobility @ p_body.reshape(-1)).reshape(N, 6)
    else:
        dv = jnp.einsum("nij,nj->ni", problem.mobility, p_body)

    def rel(v):  # (C, d) each contact's rows applied to the bodies' velocities (the ground at rest)
        vg = jnp.concatenate([v, jnp.zeros((1, 6), dtype)])
        return jnp.einsum("csdk,csk->cd", problem.rows, vg[idx])

    free = rel(jax.lax.stop_gradient(problem.v_free)) - jnp.zeros((C, d), dtype).at[:, 0].set(target)
    w = free + rel(jax.lax.stop_gradient(dv))  # after the impulse: the gap velocity, the slips
    valid = problem.valid
    zn = jnp.where(valid, z[:, 0], 0.0)
    load = jnp.max(zn)
    scale = jnp.max(jnp.where(valid[:, None], jnp.abs(free), 0.0))
    loaded = valid & (zn > impulse_tol * load) & (load > 0)
    mu = jnp.broadcast_to(jnp.asarray(jax.lax.stop_gradient(mu), dtype), (C, d - 1))
    key = problem.bodies[:, 0] * (N + 1) + problem.bodies[:, 1]
    run = jnp.cumsum(jnp.concatenate([jnp.zeros((1,), jnp.int32), (key[1:] != key[:-1]).astype(jnp.int32)]))
    per = lambda x: jax.ops.segment_sum(jnp.where(loaded[:, None], x, 0.0), run, num_segments=C)
    net = per(z[:, 1:])  # (C, d-1) per manifold (a run of consecutive contacts on the same two bodies)
    cap = per(mu * zn[:, None])
    if cone == "box":
        force, slip = jnp.abs(net), jnp.abs(w[:, 1:])
    else:  # the disc: one bound per tangent pair (μ equal along the pair)
        force = jnp.linalg.norm(net, axis=1, keepdims=True)
        slip = jnp.linalg.norm(w[:, 1:], axis=1, keepdims=True)
        cap = cap[:, :1]
    still = jnp.where(loaded[:, None], slip < velocity_tol * scale, True).astype(jnp.int32)
    every = jax.ops.segment_min(still, run, num_segments=C) == 1  # every loaded contact without slip
    return jnp.any((cap > 0) & (force >= (1 - impulse_tol) * cap) & every)


def _relaxed(problem: ContactProblem, mu, kappa: float, newton_iters: int, regularization: float = 1e-6,
             cone: str = "box", target=None) -> ContactSolution:
    """The relaxed-complementarity impulse (``solve_relaxed_lcp``) with the friction set ``cone``;
    A gets a relative diagonal ``regularization``."""
    C, d = problem.num_contacts, problem.rows_per_contact
    A = problem.A + jnp.diag(regularization * jnp.diagonal(problem.A))
    b = _rhs(problem, target).reshape(-1)
    rows = RowStructure.contacts(C, problem.num_tangents)
    valid = jnp.repeat(problem.valid, d)
    sol = solve_relaxed_lcp(A, b, _coupling(problem, mu), rows, valid, kappa, newton_iters, cone)
    return ContactSolution(z=sol.z.reshape(C, d), impulse=problem.J.T @ sol.z, residual=sol.residual,
                           iterations=sol.iterations)


__all__ = ["DEGENERATE_IMPULSE", "DEGENERATE_VELOCITY", "body_impulse", "degenerate", "solve_contact"]
