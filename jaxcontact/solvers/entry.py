"""The one solver entry of the contact problem: ``solve_contact``.

Every law hands its problem here (``CoulombLCP`` one body's ``ContactProblem`` or a world's
``BodyProblem``, ContactNets' learned one, dacm's frictionless one, ``RelaxedCoulomb``'s relaxed
one) with its ``Method`` (``lcp.Method``: settings, gradient mode, manifold size); ``problem.choose``
picks the ``Plan`` from the problem's static sizes and the method (the table in ``problem``'s
docstring) and this module runs it: the box-friction LCP by projected Gauss–Seidel dense
(``lcp.solve_dense``) or in velocity form (``body_lcp.solve_velocity``), or the relaxed LCP by
Newton (``relaxed_lcp``), each with its implicit derivative. These three are called here only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .body_lcp import VelocityLCP, ground_index, solve_velocity
from .lcp import DenseLCP, Method, RowStructure, regularized, solve_dense
from .problem import BodyProblem, ContactProblem, ContactSolution, choose, dense, soften
from .relaxed import relaxed_gradient
from .relaxed_lcp import solve_relaxed_lcp


def solve_contact(problem, method: Method = Method()) -> ContactSolution:
    """The contact impulse of ``problem`` (a ``ContactProblem`` or a ``BodyProblem``) by ``method``
    (``lcp.Method``: the law's settings, gradient mode, manifold size, a relaxed solve, a forced form).

    The problem carries the law's part: its ``target`` (the normal rows' velocity target), ``mu``
    (friction per tangent row, broadcast to (C, num_tangents): a scalar, (nt,) per direction, or
    (C, nt); None only without tangent rows), ``soft`` ((C,) relative diagonal added to each
    contact's rows, or (C, d) to each row: constraint-force mixing; None: none) and ``warm`` ((C, d)
    start of the sweeps; padded contacts start at zero; not differentiated). ``problem.choose`` picks
    the ``Plan`` (form, sweeps, batching, adjoint) and the form's solver runs it."""
    plan = choose(problem, method)
    if problem.rows_per_contact > 1 and problem.mu is None:
        raise ValueError("solve_contact: the problem has friction rows but no friction coefficient: set its mu "
                         "(problem.replace(mu=...))")
    if problem.fixed_normal is not None and problem.soft is not None:  # a fixed bound holds without the softness's creep
        soft = jnp.asarray(problem.soft)
        held = problem.fixed_normal if soft.ndim == 1 else problem.fixed_normal[:, None]
        problem = problem.replace(soft=jnp.where(held, 0.0, soft))
    bodies = isinstance(problem, BodyProblem)
    if plan.form == "velocity":
        sol = _velocity(problem, method, plan)
    else:
        flat = dense(problem) if bodies else problem
        flat = flat if flat.soft is None else soften(flat, flat.soft).replace(soft=None)
        sol = (_relaxed(flat, method.relaxed) if plan.form == "relaxed" else _dense(flat, method, plan))
    if bodies and plan.form != "relaxed":  # a world's solve: is its solution at a degenerate point (Flags.DEGENERATE)?
        held = problem.fixed_normal
        judged = problem if held is None else problem.replace(valid=problem.valid & ~held)
        sol = sol.replace(degenerate=degenerate(judged, sol.z, problem.mu, None, method.settings.cone))
    return sol


def _rhs(problem: ContactProblem):
    return problem.free_velocity.at[:, 0].add(-problem.target)


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
    mu = jnp.broadcast_to(jnp.asarray(0.0 if mu is None else mu, dtype), (C, nt))  # None: no tangent rows
    return jnp.concatenate([jnp.zeros((C, 1), dtype), mu], axis=1).reshape(-1)


def _dense(problem: ContactProblem, method: Method, plan) -> ContactSolution:
    """The box-friction LCP with A formed, by projected Gauss–Seidel with implicit gradients."""
    C, d = problem.num_contacts, problem.rows_per_contact
    settings = method.settings
    A, b = _without_padding(problem, _rhs(problem))
    if problem.fixed_normal is not None:
        A, b = _held_normals(problem, A, b, settings)
    rows = RowStructure.contacts(C, problem.num_tangents)
    z0 = problem.warm
    if z0 is not None:
        z0 = jnp.where(problem.valid[:, None], jax.lax.stop_gradient(z0), 0.0).astype(b.dtype).reshape(-1)
    coupling = _coupling(problem, problem.mu)
    sol = solve_dense(DenseLCP(A=A, b=b, coupling=coupling, z0=z0, rows=rows), settings, plan)
    z = sol.z
    if method.gradient is not None:
        z = relaxed_gradient(z, DenseLCP(A=regularized(A, settings.regularization), b=b, coupling=coupling, z0=None,
                                         rows=rows), jnp.repeat(problem.valid, d), method.gradient, settings.cone)
    return ContactSolution(z=z.reshape(C, d), impulse=problem.J.T @ z, residual=sol.residual,
                           iterations=sol.iterations)


def body_impulse(problem: BodyProblem, z) -> jnp.ndarray:
    """(N, 6) every body's generalised impulse Jᵀz from the contacts' impulses z (C, d)."""
    N = problem.v_free.shape[0]
    p = jnp.einsum("csdk,cd->csk", problem.rows, z)
    idx = ground_index(problem.bodies, N)
    return jnp.zeros((N + 1, 6), p.dtype).at[idx.reshape(-1)].add(p.reshape(-1, 6))[:N]


def _velocity(problem: BodyProblem, method: Method, plan) -> ContactSolution:
    """The same LCP in velocity form (``body_lcp.solve_velocity``): the solution of the dense
    form (the same sweeps in exact arithmetic) in O(C) memory, each sweep visiting the valid
    contacts only. ``impulse`` is (6N,), as the dense form's over the world's stacked velocities."""
    C, d = problem.num_contacts, problem.rows_per_contact
    dtype = problem.v_free.dtype
    bias = jnp.zeros((C, d), dtype).at[:, 0].set(-problem.target)
    mu = jnp.broadcast_to(jnp.asarray(problem.mu, dtype), (C, d - 1))
    coupling = jnp.concatenate([jnp.zeros((C, 1), dtype), mu], axis=1)
    soft = problem.soft
    if soft is not None:
        soft = jnp.asarray(soft, dtype)
        soft = jnp.broadcast_to(soft[:, None] if soft.ndim == 1 else soft, (C, d))
    z0 = None if problem.warm is None else jax.lax.stop_gradient(problem.warm)
    lcp = VelocityLCP(rows=problem.rows, bodies=problem.bodies, Minv=problem.mobility, v_free=problem.v_free, bias=bias,
                      coupling=coupling, valid=problem.valid, soft=soft, z0=z0)
    sol = solve_velocity(lcp, method, plan)
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


def _relaxed(problem: ContactProblem, relaxed) -> ContactSolution:
    """The relaxed-complementarity impulse (``solve_relaxed_lcp``) of ``relaxed`` = ``(kappa,
    newton_iters, regularization[, cone])`` (``lcp.Method.relaxed``): the friction set ``cone`` (default
    "box"), A with a relative diagonal ``regularization`` (default 1e-6)."""
    kappa, newton_iters, regularization, cone = (tuple(relaxed) + (1e-6, "box")[len(relaxed) - 2:])[:4]
    C, d = problem.num_contacts, problem.rows_per_contact
    A = problem.A + jnp.diag(regularization * jnp.diagonal(problem.A))
    b = _rhs(problem).reshape(-1)
    rows = RowStructure.contacts(C, problem.num_tangents)
    valid = jnp.repeat(problem.valid, d)
    lcp = DenseLCP(A=A, b=b, coupling=_coupling(problem, problem.mu), z0=None, rows=rows)
    sol = solve_relaxed_lcp(lcp, valid, kappa, newton_iters, cone)
    return ContactSolution(z=sol.z.reshape(C, d), impulse=problem.J.T @ sol.z, residual=sol.residual,
                           iterations=sol.iterations)


__all__ = ["DEGENERATE_IMPULSE", "DEGENERATE_VELOCITY", "Method", "body_impulse", "degenerate", "solve_contact"]
