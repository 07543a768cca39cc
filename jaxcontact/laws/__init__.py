"""Contact laws: pure functions behind one protocol (``base.ContactLaw``).

A contact law is a hashable object (a frozen dataclass: its fields are static configuration)
called as ``law(model, params, state, v_free) -> (impulse, ContactInfo)`` where ``params.law``
holds its differentiable parameters, ``v_free`` is the generalised velocity after gravity and
controls, and ``impulse`` is the generalised contact impulse p (v⁺ = v_free + M⁻¹ p).
Every law also offers ``init_params(...)`` for its default parameter pytree, and subclasses
``base.LawDefaults``: the protocol's optional members (warm start, coupled solve, solver settings)
declared with their defaults.

Here: ``CoulombLCP`` (hard contact), ``RelaxedCoulomb`` (relaxed), ``NoContact``. The learned
laws live with their families: ``jaxcontact.dacm`` (``DACMLaw``, ``PDDLaw``) and
``jaxcontact.contactnets`` (``ContactNetsLaw``, ``E2ELaw``).
"""

from .base import ContactLaw, LawDefaults
from .coulomb import CoulombLCP, CoulombParams
from .none import NoContact
from .relaxed import RelaxedCoulomb

__all__ = ["ContactLaw", "LawDefaults", "CoulombLCP", "CoulombParams", "NoContact", "RelaxedCoulomb"]
