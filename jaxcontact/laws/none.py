"""The empty contact law: no contact at all (free flight; a chain's free swing in tests)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from ..types import ContactInfo


@dataclasses.dataclass(frozen=True)
class NoContact:
    """H ≡ 0: the impulse is zero and ``ContactInfo`` reports no contact."""

    body_geometry = False  # no ground: the step never projects a body out of it

    @staticmethod
    def init_params():
        return None

    def __call__(self, model, params, state, v_free):
        C = model.num_contacts(params.body)
        d = state.dim
        dtype = v_free.dtype
        z = jnp.zeros((), dtype)
        info = ContactInfo(
            phi=jnp.zeros(C, dtype), active=jnp.zeros(C, bool), impulse=jnp.zeros((C, d), dtype),
            patch_type=jnp.zeros((), jnp.int32), patch_centre=jnp.zeros(d, dtype),
            patch_normal=jnp.zeros(d, dtype), residual=z, iterations=jnp.zeros((), jnp.int32),
            mode=-jnp.ones((), jnp.int32),
        )
        return jnp.zeros_like(v_free), info
