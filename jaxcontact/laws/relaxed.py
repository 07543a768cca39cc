"""Coulomb contact with relaxed complementarity: ``CoulombLCP``'s problem, relaxed.

The same contact problem as the hard law (``jaxcontact.contact``), solved with every clip of the
projected-Jacobi fixed point replaced by its interior-point (CHKS) smoothing
(``solvers.solve_relaxed_lcp``): the relaxed complementarity reads (d·z_n)·w_n = κ with both
factors in m/s, so √κ is the velocity scale of the smoothing. As κ → 0 the solution tends to the
hard LCP's. For κ > 0 contact forces act before touch (a barrier), the impulse is a smooth
function of distance, velocity and parameters, and the contact-mode switches (touch/lift-off,
stick/slip, and the restitution switch) are blended over √κ — the relaxation of Dojo (Howell et
al. 2022) and of the interior-point contact models it follows.

The solver's derivative is one Newton step at the solution, so it works in forward *and* reverse
mode — ``jax.jacfwd`` through a rollout works with this law.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from .. import contact
from ..solvers import CONES, Method, solve_contact
from ..types import AnyState, Params
from .base import LawDefaults
from ..validation import FRICTION, NUMBER, OPTIONAL_NUMBER, check_arguments
from .coulomb import CoulombLCP, CoulombParams, restitution_switch


@dataclasses.dataclass(frozen=True)
class RelaxedCoulomb(LawDefaults):
    """Relaxed-complementarity Coulomb contact (see module docstring).

    kappa: relaxation (m/s)²; the hard law is the limit kappa → 0. newton_iters: Newton steps.
    restitution_threshold: as ``CoulombLCP``. regularization: relative diagonal added to A.
    cone: the friction set, as ``LCPSettings.cone``: ``"elliptic"`` (default, as ``LCPSettings.cone``:
    the smoothed disc of ``solvers.relaxed_lcp``) or ``"box"`` (each tangent smoothed-clipped on its own).
    """

    kappa: float = 1e-4
    newton_iters: int = 30
    restitution_threshold: float = 0.05
    regularization: float = 1e-6
    cone: str = "elliptic"

    @property
    def friction_cone(self) -> str:
        """The smoothed friction set (``cone``)."""
        return self.cone

    def __post_init__(self):
        if self.cone not in CONES:
            raise ValueError(f"RelaxedCoulomb.cone must be one of {CONES}, got {self.cone!r}")
        if not self.kappa > 0:
            raise ValueError(f"RelaxedCoulomb.kappa must be positive (use CoulombLCP for kappa = 0), got {self.kappa}")
        if self.newton_iters < 1:
            raise ValueError(f"RelaxedCoulomb.newton_iters must be >= 1, got {self.newton_iters}")

    @staticmethod
    def init_params(mu=0.18, restitution=0.0, mu2=None) -> CoulombParams:
        check_arguments("RelaxedCoulomb.init_params", mu=(mu, FRICTION), restitution=(restitution, NUMBER),
                        mu2=(mu2, OPTIONAL_NUMBER))
        return CoulombLCP.init_params(mu=mu, restitution=restitution, mu2=mu2)

    with_friction = staticmethod(CoulombLCP.with_friction)

    def __call__(self, model, params: Params, state: AnyState, v_free):
        prob, con = contact.rigid_body(model, params, state, v_free)
        # The hard law's bounce switch (approaching faster than the threshold and closing within
        # the step: φ + h·v_n ≤ patch_tol) is blended too, over √κ in velocity and h√κ in
        # distance, so ε and the ground height do not see a jump when an impact moves across a step.
        sk = jnp.sqrt(self.kappa)
        _, target = restitution_switch(model, params, state, prob, con, self.restitution_threshold,
                                       blend=(sk, model.dt * sk))
        sol = solve_contact(prob.replace(target=target, mu=params.law.mu[: prob.num_tangents]),
                            Method(relaxed=(self.kappa, self.newton_iters, self.regularization, self.cone)))
        return sol.impulse, contact.rigid_body_info(model, params, con, sol)
