"""The contact-law protocol."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax.numpy as jnp

from ..types import AnyState, ContactInfo, Params


@runtime_checkable
class ContactLaw(Protocol):
    """``law(model, params, state, v_free) -> (impulse, info)``; hashable, pure, jit-able.

    A law whose contact geometry is not ``params.body``'s vertices against ``params.ground``
    (a learned φ, no ground at all) sets the class attribute ``body_geometry = False``: the step
    then never projects a start state out of the ground by those vertices (``dynamics.depenetrate``).
    Absent means True.

    Optional warm start: a law whose solver can start from the previous step's solution sets the
    property ``warm_start`` true and provides ``init_warm(model, params, state) -> warm`` (the
    first step's start, a pytree of fixed shape) and ``solve_warm(model, params, state, v_free,
    warm) -> (impulse, info, warm⁺)``. ``rollout`` then carries ``warm`` from step to step (never
    differentiated); ``step`` and laws without it start cold. ``CoulombLCP``: the impulse per vertex.
    """

    def __call__(
        self, model: Any, params: Params, state: AnyState, v_free: jnp.ndarray
    ) -> tuple[jnp.ndarray, ContactInfo]: ...

    def init_params(self, *args, **kwargs) -> Any: ...
