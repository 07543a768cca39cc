"""The empty contact law: no contact at all (free flight; a chain's free swing in tests)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from .. import contact


@dataclasses.dataclass(frozen=True)
class NoContact:
    """H ≡ 0: the impulse is zero and ``ContactInfo`` reports no contact."""

    body_geometry = False  # no ground: the step never projects a body out of it

    @staticmethod
    def init_params():
        return None

    def __call__(self, model, params, state, v_free):
        info = contact.empty_info(model.num_contacts(params.body), state.dim, v_free.dtype)
        return jnp.zeros_like(v_free), info
