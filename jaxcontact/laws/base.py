"""The contact-law protocol: what the step calls, with its optional members declared.

A law answers the step's contact stage (``worlds.pipeline.step``, the one step of a body, a
world and a chain) in one of two ways:

* **per body**, required of every law: ``law(model, params, state, v_free) -> (impulse, info)``
  for one body against the ground (``params``: one body's; ``impulse`` its generalised impulse,
  ``info`` a ``ContactInfo``). The step calls it for every body of a world whose bodies cannot
  touch each other (no body–body pairs, no joints): a single body is such a world of one body.
* **coupled**, optional: ``law.solve_coupled(model, params, coupled) -> ContactSolution`` for
  every contact of a world at once (body–body pairs, joints): ``coupled`` a
  ``contact.CoupledProblem``: the ``BodyProblem`` with the step's friction per contact (``mu``) and
  warm start (``warm``), the pre-step relative normal velocities, the distances the restitution
  switch reads, ``soften`` (the impacts (C,) → the rows' softness or None) and the manifold size.
  A law without it sets ``coupling_refusal`` to the sentence that says why, and is refused by name
  where a world needs it.

Optional members, with the defaults of ``LawDefaults`` (every law in jaxcontact subclasses it):

* ``body_geometry`` (class attribute, True): the law's contact geometry is ``params.body``'s
  vertices against ``params.ground``. False (a learned φ, no ground at all): the step never
  projects a start state out of the ground by those vertices (``stages.depenetrate``).
* ``solver`` (None): the law's ``solvers.LCPSettings``, whose cap and tolerance the step's
  ``Flags.SOLVER`` criterion reads (``stages.solver_failed``).
* ``warm_start`` (False), ``init_warm(model, params, state)`` (None) and ``solve_warm(model,
  params, state, v_free, warm) -> (impulse, info, warm⁺)`` (a cold ``__call__``): a law whose
  solver starts from the previous step's solution; rollouts carry ``warm`` (never differentiated).
* ``coupling_refusal`` (a sentence; None for a law with ``solve_coupled``).
* ``friction_cone`` (the ``solver``'s ``cone``, else None): the law's friction set, ``"elliptic"``
  (Coulomb's disc) or ``"box"``; None for a law without Coulomb friction (what ``sysid``'s smoothed
  stages read to smooth the same set).
* ``with_friction(law_params, mu)`` (refused by default): the law's parameters of one body whose
  material has friction ``mu`` (a world's per-body ``params.body.friction``, on the per-body route).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

import jax.numpy as jnp

from ..types import AnyState, ContactInfo, Params


@runtime_checkable
class ContactLaw(Protocol):
    """``law(model, params, state, v_free) -> (impulse, info)``; hashable, pure, jit-able; with
    the optional members of the module docstring (``LawDefaults`` declares them)."""

    body_geometry: bool
    solver: Any
    warm_start: bool
    coupling_refusal: str | None

    def __call__(
        self, model: Any, params: Params, state: AnyState, v_free: jnp.ndarray
    ) -> tuple[jnp.ndarray, ContactInfo]: ...

    def init_params(self, *args, **kwargs) -> Any: ...

    def init_warm(self, model: Any, params: Params, state: AnyState) -> Any: ...

    def solve_warm(self, model: Any, params: Params, state: AnyState, v_free: jnp.ndarray, warm: Any): ...

    def solve_coupled(self, model: Any, params: Params, coupled: Any): ...

    def with_friction(self, law_params: Any, mu) -> Any: ...


class LawDefaults:
    """The optional members of ``ContactLaw`` at their defaults (module docstring): subclass it and
    override what the law has. A dataclass field of the same name (``solver``) overrides the
    class attribute."""

    body_geometry: ClassVar[bool] = True
    solver: ClassVar[Any] = None
    warm_start: ClassVar[bool] = False
    coupling_refusal: ClassVar[str | None] = (
        "describes a body against the ground only (its contact model, learned or not, has no body–body contact "
        "and no coupled solve)")

    @property
    def friction_cone(self) -> str | None:
        """The law's friction set: its ``solver``'s ``cone`` (``LCPSettings.cone``), None without one."""
        return getattr(self.solver, "cone", None)

    def init_warm(self, model, params: Params, state: AnyState):
        """No warm start: None."""
        return None

    def solve_warm(self, model, params: Params, state: AnyState, v_free, warm):
        """``__call__`` (a cold start); ``warm`` returned unchanged."""
        impulse, info = self(model, params, state, v_free)
        return impulse, info, warm

    def solve_coupled(self, model, params: Params, coupled):
        raise ValueError(f"{type(self).__name__} {self.coupling_refusal}")

    def with_friction(self, law_params, mu):
        raise ValueError(f"{type(self).__name__} has no friction coefficient, so a world's per-body "
                         "params.body.friction cannot set it: leave body.friction None")


__all__ = ["ContactLaw", "LawDefaults"]
