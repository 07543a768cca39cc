"""The contact problem: built once for every LCP-based law and for chains.

Every hard-contact law in jaxcontact resolves contact the same way: rows J (a normal and
``num_tangents`` friction rows per contact) act on the generalised velocity through a mobility W
(M⁻¹ for one body; the joint-constrained mobility for a chain), and the impulse z solves the
box-friction LCP

    0 <= z_n  ⊥  J_n v⁺ − target >= 0,      |z_t,k| <= μ_k z_n opposing J_t,k v⁺,
    v⁺ = v_free + W Jᵀ z,  target = −φ/h (no penetration at the end of the step) unless raised.

This module builds those problems; ``solvers.solve_contact`` (the one solver entry) solves them.
The laws only decide what is theirs: where the rows come from (the body's vertices, a learned φ,
a chain's links), the friction coefficients and the target.

* ``from_jacobians`` — a ``ContactProblem`` (A = J W Jᵀ formed) from any rows (ContactNets' learned
  Jacobians); ``rigid_body`` — the rows of a body's closest vertices against the ground
  (``geometry``), the normal target capped at ``Model.max_correction_speed``;
* ``body_problem`` — a world's ``BodyProblem``: each contact's rows on its two bodies (A never
  formed); ``dense`` turns it into a ``ContactProblem``; ``relative_velocity``, ``body_impulse``;
* ``frictionless`` — the normal-only problem of a body, solved (dacm's reference and dynamic branch);
* ``CoupledProblem`` — a world's problem as a law's ``solve_coupled`` takes it (impacts, warm start);
* ``info`` / ``rigid_body_info`` / ``empty_info`` — the per-step ``ContactInfo``.

The problem types and the dense conversion live in ``solvers.problem`` (the solvers take them);
they are re-exported here.
"""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
from flax import struct

from . import geometry
from .solvers import LCPSettings, Method, ground_index, solve_contact, with_ground
from .solvers.entry import body_impulse
from .solvers.problem import (
    BodyProblem,
    ContactProblem,
    ContactSolution,
    block_diag,
    body_problem,
    dense,
    from_body_rows,
    from_jacobians,
    soften,
)
from .types import ContactInfo


def relative_velocity(problem: BodyProblem, v) -> jnp.ndarray:
    """(C, d) every contact's rows applied to the bodies' velocities v (N, 6): the relative
    velocity along [normal, tangents] (the ground at rest)."""
    return jnp.einsum("csdk,csk->cd", problem.rows, with_ground(v)[ground_index(problem.bodies, v.shape[0])])


def rigid_body(model, params, state, v_free, friction: bool = True):
    """(problem, candidates) for ``params.body``'s ``model.num_contacts`` closest vertices against
    ``params.ground`` (a face's widest spread of them when more touch: ``geometry.face_points``,
    within ``model.patch_tol``); ``friction=False`` keeps only the normal rows."""
    body = params.body
    con = geometry.contact_candidates(body, params.ground, state, model.num_contacts(body), model.patch_tol)
    jac = con.jac if friction else con.jac[:, :1, :]
    prob = from_jacobians(jac, con.phi, con.valid, geometry.mass_matrix_inverse(body, state), v_free, model.dt)
    if model.max_correction_speed is not None:
        # a penetrating vertex is pushed out at most this fast (no launch from deep penetration)
        prob = prob.replace(target=jnp.minimum(prob.target, jnp.asarray(model.max_correction_speed, prob.target.dtype)))
    return prob, con


def frictionless(model, params, state, v_free, settings: LCPSettings = LCPSettings()):
    """(solution, candidates) of the frictionless LCP of ``params.body`` at ``v_free``:
    normal impulses ``solution.z[:, 0]`` (C,) and the generalised impulse ``solution.impulse``."""
    prob, con = rigid_body(model, params, state, v_free, friction=False)
    return solve_contact(prob, Method(settings)), con


@struct.dataclass
class CoupledProblem:
    """A world's contacts as the step hands them to a law at once (``ContactLaw.solve_coupled``).

    problem: the ``BodyProblem`` with the step's friction per contact (``mu``) and warm start
    (``warm``); its target the step's (−φ/h, capped); vn_pre: (C,) the pre-step relative normal
    velocities; phi_switch: (C,) the distances the restitution switch reads; soften (static): the
    impacts (C,) bool → the rows' softness (None: none) outside their islands; group (static): the
    contacts' manifold size (the coloured sweeps), None where they vary."""

    problem: BodyProblem
    vn_pre: jnp.ndarray
    phi_switch: jnp.ndarray
    soften: Callable[[Any], Any] = struct.field(pytree_node=False, default=lambda impact: None)
    group: int | None = struct.field(pytree_node=False, default=None)


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
    patch = geometry.patch_from_points(con.all_points, con.all_phi, con.all_valid, params.ground,
                                       model.patch_tol)
    active = con.valid & (con.phi <= model.patch_tol)
    return info(con.phi, active, solution.z, patch, solution, mode)


__all__ = [
    "BodyProblem",
    "ContactProblem",
    "CoupledProblem",
    "ContactSolution",
    "block_diag",
    "body_impulse",
    "body_problem",
    "dense",
    "empty_info",
    "frictionless",
    "from_body_rows",
    "from_jacobians",
    "info",
    "relative_velocity",
    "rigid_body",
    "rigid_body_info",
    "soften",
]
