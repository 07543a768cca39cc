"""The empty contact law: no contact at all (free flight; a chain's free swing in tests)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from .. import contact
from .base import LawDefaults


@dataclasses.dataclass(frozen=True)
class NoContact(LawDefaults):
    """H ≡ 0: the impulse is zero and ``ContactInfo`` reports no contact."""

    body_geometry = False  # no ground: the step never projects a body out of it

    @staticmethod
    def init_params():
        return None

    def __call__(self, model, params, state, v_free):
        info = contact.empty_info(model.num_contacts(params.body), state.dim, v_free.dtype)
        return jnp.zeros_like(v_free), info

    coupling_refusal = None

    def solve_coupled(self, model, params, coupled):
        """No impulse on any contact of a world (``base.ContactLaw``)."""
        problem = coupled.problem
        dtype = problem.v_free.dtype
        zero = jnp.zeros((), dtype)
        return contact.ContactSolution(z=jnp.zeros((problem.num_contacts, problem.rows_per_contact), dtype),
                                       impulse=jnp.zeros(problem.v_free.size, dtype), residual=zero,
                                       iterations=jnp.zeros((), jnp.int32))
