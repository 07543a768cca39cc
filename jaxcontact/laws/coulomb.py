"""Coulomb friction by a velocity-level LCP (Stewart–Trinkle / Anitescu–Potra time stepping).

For the selected contact candidates (signed distance φ, Jacobian rows J_n, J_t) the impulse
z = (z_n, z_t) solves, with v⁺ = v_free + M⁻¹ Jᵀ z,

    0 <= z_n  ⊥  J_n v⁺ − target >= 0,      |z_t,k| <= μ_k z_n with maximal opposition to J_t,k v⁺,

target = −φ/h (no penetration at the end of the step, linearised: Stewart & Trinkle 1996;
Anitescu & Potra 1997), raised to −ε J_n v⁻ for approaching contacts when a restitution
coefficient ε > 0 is set (Poisson-free Newton restitution at the velocity level).
Opt-in ``restitution_target="position"``: the bounce target is −ε v⁻ − (1 + ε) φ/h instead — the
vertex reaches the ground within the step and leaves it at ε|v⁻| — which is continuous in φ (it
equals −φ/h where the switch φ + h v⁻ = 0 turns it on), so the trajectory depends continuously on
the ground height and the vertex positions across a landing (used by system identification).
The friction cone is the polyhedral (pyramidal) cone spanned by the two ground tangents with
possibly different coefficients μ = (μ_1, μ_2) — anisotropic friction; planar bodies use μ_1.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
from flax import struct

from .. import geometry
from ..solvers import LCPSettings, RowStructure, solve_lcp
from ..types import AnyState, ContactInfo, Params


@struct.dataclass
class CoulombParams:
    """mu: (2,) friction coefficients along the ground tangents t1, t2. restitution: () in [0, 1]."""

    mu: jnp.ndarray
    restitution: jnp.ndarray


@struct.dataclass
class ContactProblem:
    """The velocity-level contact problem of one body, shared by the LCP-based laws.

    contacts: the selected candidates (``geometry.Contacts``); J: (C·d, nv) stacked Jacobian rows
    (normal, tangents per contact); A: J M⁻¹ Jᵀ; free_velocity: (C, d) J v_free per contact;
    vn_pre: (C,) normal velocity before the step; target: (C,) −φ/h, the no-penetration target.
    """

    contacts: geometry.Contacts
    J: jnp.ndarray
    A: jnp.ndarray
    free_velocity: jnp.ndarray
    vn_pre: jnp.ndarray
    target: jnp.ndarray
    num_contacts: int = struct.field(pytree_node=False)


def contact_problem(model, params: Params, state: AnyState, v_free) -> ContactProblem:
    """Candidates, Jacobians and Delassus matrix for ``params.body`` against ``params.ground``."""
    body = params.body
    C = model.num_contacts(body)
    con = geometry.contact_candidates(body, params.ground, state, C)
    d = state.dim
    Minv = geometry.mass_matrix_inverse(body, state)
    J = con.jac.reshape(C * d, -1)  # rows (n, t1[, t2]) per contact
    return ContactProblem(
        contacts=con,
        J=J,
        A=J @ Minv @ J.T,
        free_velocity=(J @ v_free).reshape(C, d),
        vn_pre=con.jac[:, 0, :] @ state.generalized_velocity(),
        target=-con.phi / model.dt,
        num_contacts=C,
    )


@dataclasses.dataclass(frozen=True)
class CoulombLCP:
    """Hard contact with Coulomb friction solved as an LCP.

    solver: projected Gauss–Seidel settings (tolerance, cap, regularisation).
    restitution_threshold: approach speeds (m/s) below which restitution is not applied, so
    resting contact does not chatter.
    """

    solver: LCPSettings = LCPSettings()
    restitution_threshold: float = 0.05
    restitution_target: str = "velocity"

    def __post_init__(self):
        if self.restitution_target not in ("velocity", "position"):
            raise ValueError(
                f"CoulombLCP.restitution_target must be 'velocity' or 'position', got {self.restitution_target!r}"
            )

    @staticmethod
    def init_params(mu=0.18, restitution=0.0, mu2=None) -> CoulombParams:
        mu1 = jnp.asarray(mu, dtype=jnp.result_type(float))
        mu2 = mu1 if mu2 is None else jnp.asarray(mu2, dtype=mu1.dtype)
        return CoulombParams(mu=jnp.stack([mu1, mu2]), restitution=jnp.asarray(restitution, mu1.dtype))

    def __call__(self, model, params: Params, state: AnyState, v_free):
        body, ground, lp = params.body, params.ground, params.law
        prob = contact_problem(model, params, state, v_free)
        con, J, C, d = prob.contacts, prob.J, prob.num_contacts, state.dim
        nt = d - 1
        eps = jnp.clip(lp.restitution, 0.0, 1.0)
        # Newton restitution for contacts that close within this step at the pre-step speed
        if self.restitution_target == "position":
            # position-consistent: reach the ground within the step, leave at ε|v⁻|; switched on
            # where it equals −φ/h (φ + h v⁻ = 0), so continuous in φ
            closing = (prob.vn_pre < -self.restitution_threshold) & (con.phi + model.dt * prob.vn_pre <= 0.0)
            bounce_target = -eps * prob.vn_pre - (1.0 + eps) * con.phi / model.dt
        else:
            closing = (prob.vn_pre < -self.restitution_threshold) & (
                con.phi + model.dt * prob.vn_pre <= model.patch_tol
            )
            bounce_target = -eps * prob.vn_pre
        bounce = closing & (eps > 0)
        target = jnp.where(bounce, jnp.maximum(prob.target, bounce_target), prob.target)
        b = prob.free_velocity.at[:, 0].add(-target)
        b = jnp.where(con.valid[:, None], b, jnp.asarray(geometry._FAR, b.dtype))
        A = prob.A
        mu = jnp.broadcast_to(lp.mu[:nt], (C, nt))
        coupling = jnp.concatenate([jnp.zeros((C, 1), mu.dtype), mu], axis=1)

        rows = RowStructure.contacts(C, nt)
        sol = solve_lcp(A, b.reshape(-1), coupling.reshape(-1), rows, self.solver)
        z = sol.z.reshape(C, d)
        impulse = J.T @ sol.z
        patch = geometry.patch_from_points(
            con.all_points, con.all_phi, body.vertex_mask > 0, ground, model.patch_tol
        )
        active = con.valid & (con.phi <= model.patch_tol)
        info = ContactInfo.from_patch(con.phi, active, z, patch, sol.residual, sol.iterations)
        return impulse, info
