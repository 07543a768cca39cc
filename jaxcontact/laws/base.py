"""The contact-law protocol."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax.numpy as jnp

from ..types import AnyState, ContactInfo, Params


@runtime_checkable
class ContactLaw(Protocol):
    """``law(model, params, state, v_free) -> (impulse, info)``; hashable, pure, jit-able."""

    def __call__(
        self, model: Any, params: Params, state: AnyState, v_free: jnp.ndarray
    ) -> tuple[jnp.ndarray, ContactInfo]: ...

    def init_params(self, *args, **kwargs) -> Any: ...
