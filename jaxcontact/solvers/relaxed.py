"""Gradient modes of the hard LCP: the forward value stays the hard solution, the derivative is chosen.

``solve_lcp`` returns the hard box-friction LCP solution z* and, by default, its *exact* implicit
derivative (the projected-Jacobi fixed point at z*). That derivative is correct, but it describes
the contact impulse only within round-off of z*: where contact modes are about to change
(touch/lift-off, stick/slip) or the normal split between coplanar contacts is nearly
indeterminate (a face on the ground), it is either zero or as large as 1/regularisation.

``relaxed_gradient`` keeps z* as the value and replaces its derivative by that of the *relaxed*
problem (``relaxed_lcp.relaxed_residual``, every clip of the fixed point replaced by its CHKS
smoothing with velocity scale s = √κ):

    z_κ = Newton on F_κ(z; A, b, c) = 0 for ``newton_iters`` steps, started from g_κ(z*)
          (one smoothed fixed-point map of the hard solution: positive normal impulses),
    dz/dθ := dz_κ/dθ = −(∂F_κ/∂z)⁻¹ ∂F_κ/∂θ at z_κ          (``implicit.implicit_root``),
    z      = z* + (z_κ − stop_gradient(z_κ))                    (value z*, derivative dz_κ/dθ).

This is the gradient of Dojo (Howell et al. 2022: implicit differentiation of a relaxed
complementarity problem near the hard solution). Mode changes are blended over the velocity s in
the rows' units (m/s); a law converts its physical smoothing length ℓ (m) — ``CoulombLCP`` uses
s = √(g ℓ), so that the relaxed problem's rest gap under the body's weight is ≈ ℓ
(``laws.coulomb.relaxed_velocity_scale``). As s → 0 the relaxed
derivative tends to the exact one wherever the latter is well defined (no mode at a switch).
The forward value is bit-identical to ``solve_lcp``'s; the Newton steps are extra work in the
forward pass too (the straight-through sum cannot be skipped by XLA), so use it when you
differentiate.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from .. import linalg
from .implicit import implicit_root
from .lcp import DenseLCP
from .relaxed_lcp import relaxed_residual

GRADIENT_MODES = ("exact", "relaxed")


@dataclasses.dataclass(frozen=True)
class RelaxedGradient:
    """Settings of the relaxed derivative: velocity_scale s (m/s, > 0; κ = s²) and the Newton
    steps taken from the hard solution towards the relaxed one (0: the derivative is taken at
    g_κ(z*), one smoothed map of the hard solution)."""

    velocity_scale: float
    newton_iters: int = 6

    def __post_init__(self):
        if not self.velocity_scale > 0:
            raise ValueError(f"RelaxedGradient.velocity_scale must be positive (m/s), got {self.velocity_scale}")
        if self.newton_iters < 0:
            raise ValueError(f"RelaxedGradient.newton_iters must be >= 0, got {self.newton_iters}")


def check_gradient_mode(mode: str, owner: str = "gradient") -> str:
    """``mode`` if it is one of ``GRADIENT_MODES``, else a ``ValueError`` naming the choices."""
    if mode not in GRADIENT_MODES:
        hint = (" (randomized smoothing is a loss-level estimator: jaxcontact.randomized_smoothing.randomized_value_and_grad)"
                if mode == "randomized" else "")
        raise ValueError(f"{owner} must be one of {GRADIENT_MODES}, got {mode!r}{hint}")
    return mode


def relaxed_solution(z_hard, lcp: DenseLCP, valid, settings: RelaxedGradient, cone: str = "box"):
    """The relaxed solution z_κ near the hard one, differentiable implicitly in ``lcp``'s (A, b,
    coupling) (its ``z0`` unused). A must be the matrix the hard solve used (``lcp.regularized``);
    ``cone`` its friction set."""
    A, b, coupling, rows = lcp.A, lcp.b, lcp.coupling, lcp.rows
    F = relaxed_residual(rows, cone)
    kap = float(settings.velocity_scale) ** 2

    def opt(z, A, b, coupling, valid):
        return F(z, A, b, coupling, jnp.asarray(kap, z.dtype), valid)

    @implicit_root(opt)
    def newton(z_init, A, b, coupling, valid):
        A, b, coupling = (jax.lax.stop_gradient(x) for x in (A, b, coupling))
        f = lambda zz: opt(zz, A, b, coupling, valid)

        def step(_, z):
            dz = linalg.solve(jax.jacfwd(f)(z), -f(z))
            return jnp.where(jnp.all(jnp.isfinite(dz)), z + dz, z)

        z = z_init - f(z_init)  # g_κ(z*): one smoothed fixed-point map
        return jax.lax.fori_loop(0, settings.newton_iters, step, z)

    valid = jax.lax.stop_gradient(jnp.asarray(valid, b.dtype))
    return newton(jax.lax.stop_gradient(z_hard), A, b, coupling, valid)


def relaxed_gradient(z_hard, lcp: DenseLCP, valid, settings: RelaxedGradient, cone: str = "box"):
    """``z_hard`` as the value, the relaxed problem's implicit derivative as the derivative (module
    docstring). z_hard: the hard solution of ``lcp`` (its own derivative is discarded); ``cone`` its
    friction set."""
    z_soft = relaxed_solution(z_hard, lcp, valid, settings, cone)
    delta = z_soft - jax.lax.stop_gradient(z_soft)  # exactly 0 in value where finite
    delta = jnp.where(jnp.isfinite(z_soft), delta, jnp.zeros_like(delta))
    return jax.lax.stop_gradient(z_hard) + delta


__all__ = ["GRADIENT_MODES", "RelaxedGradient", "check_gradient_mode", "relaxed_gradient", "relaxed_solution"]
