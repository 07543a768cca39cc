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
Known limitation of the position form (tests/test_physics.py, a strict xfail): a vertex that lands
late in a step leaves it with the step's mean velocity, still downward, and the next step bounces
it again, so ε acts twice: from 10 cm with ε = 0.5 the rebound is 0.49 m/s instead of 0.70 m/s.
Gradient modes (``gradient=``; the forward pass is the same hard contact in every mode):
"exact" (default) — the implicit derivative of the hard LCP; "relaxed" — the implicit derivative
of the relaxed (CHKS-smoothed) problem next to the hard solution (``solvers.relaxed``), with the
mode switches blended over ``smoothing_length`` ℓ (m). Conversion to the solver's velocity scale
s = √κ: the relaxed complementarity reads (d·z_n)·w_n = κ; a body resting under its weight
takes d·z_n ≈ g h per step and a gap φ shows as w_n ≈ φ/h, so κ = g ℓ makes the relaxed
problem's rest gap ≈ ℓ (s = √(g ℓ): 0.031 m/s at ℓ = 0.1 mm, 0.099 m/s at 1 mm; s = ℓ/h when
``Model.gravity`` is 0). The restitution switch is blended over s in approach speed and over ℓ
in closing distance.
The friction set (``LCPSettings.cone``): ``"elliptic"`` is Coulomb's disc
|z_t| ≤ μ z_n, an ellipse Σ_k (z_tk/μ_k)² ≤ z_n² along the two ground tangents where μ = (μ_1, μ_2)
differ (anisotropic friction), so the friction opposes the slip in every direction, its implicit
derivative exact through the forward's active-set polish (the default; docs/worlds.md, "Friction
cone"); ``"box"``, the preset of the paper setups that used it (ContactNets, dacm's ground truth), is
the square |z_tk| ≤ μ_k z_n of each tangent on its own (a pyramid). Planar bodies use μ_1.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import contact
from ..solvers import LCPSettings, Method, RelaxedGradient, check_gradient_mode, solve_contact
from ..types import AnyState, Params
from ..validation import FRICTION, NUMBER, OPTIONAL_NUMBER, check_arguments, check_dtype
from .base import LawDefaults


@struct.dataclass
class CoulombParams:
    """mu: (2,) friction coefficients along the ground tangents t1, t2 (anisotropic; planar bodies
    use μ₁; ``init_params(mu=μ)`` makes the isotropic (μ, μ)). restitution: () in [0, 1]."""

    mu: jnp.ndarray
    restitution: jnp.ndarray

    def check_static(self, batch_ndim: int = 0) -> None:
        """Dtypes and shapes of the fields (static, so this raises the same ``ValueError`` eagerly
        and at trace time): float32/float64, μ of shape (2,), ε a scalar, after ``batch_ndim``
        leading batch axes. A scalar μ is refused rather than broadcast: the pytree's shape is its
        gradient's, and every reader of ``law.mu`` (sysid, data files, chains) takes a 2-vector."""
        for name, want, hint in (
            ("mu", (2,), " — μ is (μ₁, μ₂) along the two ground tangents; for isotropic friction use "
                         "law.init_params(mu=μ) or jnp.full(2, μ)"),
            ("restitution", (), " — one coefficient ε"),
        ):
            x = getattr(self, name)
            check_dtype(x, f"params.law.{name}")
            shape = tuple(jnp.shape(x))
            if len(shape) < batch_ndim or shape[batch_ndim:] != want:
                dims = ["B"] * batch_ndim + [str(n) for n in want]
                expected = "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
                raise ValueError(f"params.law.{name}: expected shape {expected}, got shape {shape}{hint}")


@dataclasses.dataclass(frozen=True)
class CoulombLCP(LawDefaults):
    """Hard contact with Coulomb friction solved as an LCP.

    solver: projected Gauss–Seidel settings (tolerance, cap, regularisation).
    restitution_threshold: approach speeds (m/s) below which restitution is not applied, so
    resting contact does not chatter.
    gradient: "exact" (default) or "relaxed" (module docstring); smoothing_length: ℓ (m) of the
    relaxed mode (ignored by "exact"); relaxed_newton_iters: Newton steps from the hard solution.
    """

    solver: LCPSettings = LCPSettings()
    restitution_threshold: float = 0.05
    restitution_target: str = "velocity"
    gradient: str = "exact"
    smoothing_length: float = 1e-3
    relaxed_newton_iters: int = 6

    def __post_init__(self):
        if self.restitution_target not in ("velocity", "position"):
            raise ValueError(
                f"CoulombLCP.restitution_target must be 'velocity' or 'position', got {self.restitution_target!r}"
            )
        check_gradient_mode(self.gradient, "CoulombLCP.gradient")
        if not self.smoothing_length > 0:
            raise ValueError(f"CoulombLCP.smoothing_length must be positive (m), got {self.smoothing_length}")
        if self.relaxed_newton_iters < 0:
            raise ValueError(f"CoulombLCP.relaxed_newton_iters must be >= 0, got {self.relaxed_newton_iters}")

    def relaxed_gradient(self, model) -> RelaxedGradient | None:
        """The solver's ``RelaxedGradient`` for this law on ``model`` (velocity scale
        ``relaxed_velocity_scale``), or None in the exact mode."""
        if self.gradient == "exact":
            return None
        return RelaxedGradient(velocity_scale=relaxed_velocity_scale(self.smoothing_length, model),
                               newton_iters=self.relaxed_newton_iters)

    @staticmethod
    def init_params(mu=0.18, restitution=0.0, mu2=None) -> CoulombParams:
        """``CoulombParams``: μ = (mu, mu2), isotropic (mu, mu) without ``mu2``; ``mu`` may also be
        the pair (μ₁, μ₂) itself."""
        check_arguments("CoulombLCP.init_params", mu=(mu, FRICTION), restitution=(restitution, NUMBER),
                        mu2=(mu2, OPTIONAL_NUMBER))
        dtype = jnp.result_type(float)
        for name, x in (("mu", mu), ("mu2", mu2), ("restitution", restitution)):
            if x is not None and not isinstance(x, (list, tuple)):
                check_dtype(x, name)
        mu = jnp.asarray(mu, dtype=dtype)
        if mu.shape == (2,) and mu2 is None:
            return CoulombParams(mu=mu, restitution=jnp.asarray(restitution, dtype))
        if mu.shape != ():
            raise ValueError(f"mu: expected a scalar (with mu2 for the second tangent) or a pair (μ₁, μ₂), "
                             f"got shape {mu.shape}")
        mu2 = mu if mu2 is None else jnp.asarray(mu2, dtype=dtype)
        if mu2.shape != ():
            raise ValueError(f"mu2: expected a scalar, got shape {mu2.shape}")
        return CoulombParams(mu=jnp.stack([mu, mu2]), restitution=jnp.asarray(restitution, dtype))

    def __call__(self, model, params: Params, state: AnyState, v_free):
        impulse, info, _ = self.solve_warm(model, params, state, v_free, None)
        return impulse, info

    @property
    def coupling_refusal(self) -> str | None:
        """None: the law solves a world's coupled contacts (``solve_coupled``), in the velocity form."""
        if self.restitution_target != "velocity":
            return ("in a world with body–body pairs or joints supports restitution_target='velocity' only (the "
                    "position form applies ε twice on late landings: a known bug of the single-body law)")
        return None

    def method(self, model, group: int | None = None) -> Method:
        """The law's ``solvers.Method``: its solver settings, its gradient mode on ``model``
        (``relaxed_gradient``), the contacts' manifold size ``group``."""
        return Method(self.solver, gradient=self.relaxed_gradient(model), group=group)

    def solve_coupled(self, model, params: Params, coupled: contact.CoupledProblem):
        """Every contact of a world at once (``base.ContactLaw``): the normal target raised for
        restitution from the *relative* pre-step normal velocity ``coupled.vn_pre`` at the distances
        ``coupled.phi_switch`` (``normal_target_at``), the rows softened outside the islands of this
        step's impacts (``coupled.soften``: approaching faster than ``restitution_threshold``), solved by
        ``solvers.solve_contact``."""
        if self.coupling_refusal is not None:
            raise ValueError(f"{type(self).__name__} {self.coupling_refusal}")
        problem, vn_pre = coupled.problem, coupled.vn_pre
        target = normal_target_at(self, model, params.law.restitution, vn_pre, coupled.phi_switch, problem.target)
        impact = problem.valid & (vn_pre < -self.restitution_threshold)
        return solve_contact(problem.replace(target=target, soft=coupled.soften(impact)),
                             self.method(model, coupled.group))

    @staticmethod
    def with_friction(law_params: CoulombParams, mu) -> CoulombParams:
        """One body's parameters against the ground when its material has friction ``mu``:
        (μ₁, μ₂) each mixed with it (``mix_friction``), as a world's body–ground contacts."""
        return law_params.replace(mu=mix_friction(mu, law_params.mu))

    @property
    def warm_start(self) -> bool:
        return self.solver.warm_start and not self.solver.fixed_iterations

    def init_warm(self, model, params: Params, state: AnyState):
        """The warm start of a rollout's first step: zero impulse (normal, tangents) per candidate."""
        return jnp.zeros((params.body.num_candidates, state.dim), state.vel.dtype)

    def solve_warm(self, model, params: Params, state: AnyState, v_free, warm):
        """``__call__`` started from ``warm`` (per-vertex impulses of the previous step, or None
        for zero): ``(impulse, info, warm⁺)``."""
        prob, con = contact.rigid_body(model, params, state, v_free)
        target = normal_target(self, model, params, state, prob, con)
        z0 = None if warm is None else warm[con.index]
        sol = solve_contact(prob.replace(target=target, mu=params.law.mu[: prob.num_tangents], warm=z0),
                            self.method(model))
        new = None if warm is None else jnp.zeros_like(warm).at[con.index].set(jax.lax.stop_gradient(sol.z))
        return sol.impulse, contact.rigid_body_info(model, params, con, sol), new


def mix_friction(mu_a, mu_b):
    """The friction coefficient of a contact between materials ``mu_a`` and ``mu_b`` (broadcast):
    the geometric mean √(μ_a μ_b), with a zero gradient where the product is 0 (Box2D's rule;
    ``worlds.materials`` says why)."""
    prod = mu_a * mu_b
    pos = prod > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, prod, 1.0)), 0.0)


def relaxed_velocity_scale(length: float, model) -> float:
    """The relaxed mode's velocity scale s = √(g ℓ) (m/s) of a smoothing length ℓ (m): the
    relaxed problem's rest gap under the body's weight is ≈ ℓ (module docstring); ℓ/h without gravity."""
    g = abs(float(model.gravity))
    return float(np.sqrt(g * length)) if g > 0 else length / model.dt


def restitution_switch(model, params: Params, state: AnyState, prob: contact.ContactProblem, con, threshold: float,
                       form: str = "velocity", blend=None):
    """The normal-row target of the Coulomb laws for one body's candidates ``con``:
    ``bounce_target`` at their pre-step normal velocities J_n v⁻, with ε = ``params.law.restitution``."""
    vn_pre = con.jac[:, 0, :] @ state.generalized_velocity()
    return bounce_target(model, params.law.restitution, vn_pre, con.phi, prob.target, threshold, form, blend)


def bounce_target(model, restitution, vn_pre, phi, target, threshold: float, form: str = "velocity", blend=None):
    """The normal-row target of the Coulomb laws: ``target`` (−φ/h, capped), raised to the bounce
    target for contacts that approach faster than ``threshold`` (m/s) and close within this step
    at the pre-step speed (Newton restitution with coefficient ``restitution``).

    vn_pre: (C,) pre-step normal velocity of each contact (relative, for two bodies; m/s); phi:
    (C,) signed distances. form: "velocity" (bounce target −ε v⁻, switched on where
    φ + h v⁻ ≤ patch_tol) or "position" (−ε v⁻ − (1 + ε) φ/h, switched on where φ + h v⁻ ≤ 0,
    where it equals −φ/h: continuous in φ). blend: None for the hard switch, or
    ``(velocity, length)`` — the switch blended by sigmoids over that approach speed (m/s) and
    closing distance (m). Returns ``(hard, blended)`` (blended None without ``blend``):
    ``CoulombLCP`` keeps the hard value and, in its relaxed gradient mode, the blended
    derivative; ``RelaxedCoulomb`` uses the blended value."""
    eps = jnp.clip(restitution, 0.0, 1.0)
    if form == "position":
        # position-consistent: reach the ground within the step, leave at ε|v⁻|; switched on
        # where it equals −φ/h (φ + h v⁻ = 0), so continuous in φ
        closing = (vn_pre < -threshold) & (phi + model.dt * vn_pre <= 0.0)
        bounce = -eps * vn_pre - (1.0 + eps) * phi / model.dt
    else:
        closing = (vn_pre < -threshold) & (phi + model.dt * vn_pre <= model.patch_tol)
        bounce = -eps * vn_pre
    on = closing & (eps > 0)
    hard = jnp.where(on, jnp.maximum(target, bounce), target)
    if blend is None:
        return hard, None
    velocity, length = blend
    gap = phi + model.dt * vn_pre - (0.0 if form == "position" else model.patch_tol)
    w = jax.nn.sigmoid((-threshold - vn_pre) / velocity) * jax.nn.sigmoid(-gap / length) * (eps > 0)
    return hard, target + w * jnp.maximum(bounce - target, 0.0)


def normal_target(law: CoulombLCP, model, params: Params, state: AnyState, prob: contact.ContactProblem, con):
    """``CoulombLCP``'s normal-row target for one body's candidates (``normal_target_at``)."""
    vn_pre = con.jac[:, 0, :] @ state.generalized_velocity()
    return normal_target_at(law, model, params.law.restitution, vn_pre, con.phi, prob.target)


def normal_target_at(law: CoulombLCP, model, restitution, vn_pre, phi, target):
    """``CoulombLCP``'s normal-row target: ``bounce_target`` in the law's form, hard; in the
    relaxed gradient mode the same value with the derivative of the switch blended over the law's
    smoothing length ℓ in closing distance and its velocity scale √(g ℓ) in approach speed."""
    relaxed = law.gradient == "relaxed"
    blend = (relaxed_velocity_scale(law.smoothing_length, model), law.smoothing_length) if relaxed else None
    hard, soft = bounce_target(model, restitution, vn_pre, phi, target, law.restitution_threshold,
                               law.restitution_target, blend)
    if soft is None:
        return hard
    return hard + (soft - jax.lax.stop_gradient(soft))
