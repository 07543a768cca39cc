"""jaxcontact: JAX-native, differentiable rigid bodies in frictional contact.

Quick start::

    import jax, jax.numpy as jnp, jaxcontact as jc
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=0.002)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
    traj = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.5]), n_steps=800)
"""

from . import contact, diagnostics, geometry, shapes, solvers
from .dynamics import (
    NonFiniteWarning,
    PenetrationWarning,
    SolverWarning,
    batch_rollout,
    depenetrate,
    energy,
    free_velocity,
    integrate,
    penetration,
    rollout,
    step,
    step_with_info,
)
from .laws import ContactLaw, CoulombLCP, CoulombParams, NoContact, RelaxedCoulomb
from .solvers import LCPSettings
from .states import make_planar_state, make_state
from .types import Body, ContactInfo, Flags, Ground, Model, Params, PatchType, PlanarState, Planes, State, Summary
from .validation import CheckError

from .version import __version__

__all__ = [
    "__version__",
    "Body",
    "CheckError",
    "ContactInfo",
    "ContactLaw",
    "CoulombLCP",
    "CoulombParams",
    "Flags",
    "Ground",
    "LCPSettings",
    "Model",
    "Params",
    "Planes",
    "PatchType",
    "NonFiniteWarning",
    "PenetrationWarning",
    "PlanarState",
    "SolverWarning",
    "State",
    "Summary",
    "batch_rollout",
    "contact",
    "depenetrate",
    "diagnostics",
    "energy",
    "free_velocity",
    "geometry",
    "integrate",
    "make_planar_state",
    "make_state",
    "NoContact",
    "penetration",
    "rollout",
    "shapes",
    "RelaxedCoulomb",
    "solvers",
    "step",
    "step_with_info",
]
