"""A world's fluid medium: MuJoCo's passive fluid forces of its inertia-box model (``opt.density``,
``opt.viscosity``, ``opt.wind``; docs/worlds.md, "A fluid medium").

Each body of mass m and principal moments (I₀, I₁, I₂) is the box of the same inertia, its sides
bₖ = √(6 (Iᵢ + Iⱼ − Iₖ) / m) along its principal axes (``Medium.frame``: each body's principal frame
in its body frame, MuJoCo's ``body_iquat``: where two moments are equal the quadratic drag depends on
which axes, so the frame is MuJoCo's own, not recomputed). With the body's angular velocity ω and its
centre of mass's velocity v less the wind, both in that frame, the force and torque are (MuJoCo's
``mj_inertiaBoxFluidModel``) viscous, with d the mean side (b₀ + b₁ + b₂) / 3 and β the viscosity,

    f = −3π d β v,        τ = −π d³ β ω,

plus the quadratic drag of density ρ, per axis k (i, j the other two),

    fₖ = −½ ρ bᵢ bⱼ |vₖ| vₖ,        τₖ = −ρ bₖ (bᵢ⁴ + bⱼ⁴) |ωₖ| ωₖ / 64.

The step adds them to each body's wrench from the state it starts from (``pipeline.step_stages``),
explicitly, as MuJoCo's Euler integrator does. The medium is a pytree of ``Params`` (``Params.medium``,
None without one), so ``jax.grad`` reaches the density, viscosity and wind.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct

from ..rotations import quat_to_mat

MIN_VALUE = 1e-15  # MuJoCo's mjMINVAL: a side's squared length below it is this


@struct.dataclass
class Medium:
    """density: () kg/m³ (≥ 0); viscosity: () Pa·s (≥ 0); wind: (3,) m/s, world; frame: (N, 4) each
    body's principal axes in its body frame as a unit quaternion (MuJoCo's ``body_iquat``)."""

    density: jnp.ndarray
    viscosity: jnp.ndarray
    wind: jnp.ndarray
    frame: jnp.ndarray


def make_medium(density=0.0, viscosity=0.0, wind=(0.0, 0.0, 0.0), frame=None, num_bodies: int | None = None,
                dtype=None) -> Medium:
    """A ``Medium``; ``frame`` (N, 4), or None: the identity for each of ``num_bodies`` (bodies whose
    inertia is diagonal in their body frame, as ``shapes``' are). Negative or non-finite values are
    refused by name (concrete ones; a traced medium is the step's to flag)."""
    if frame is None:
        if num_bodies is None:
            raise ValueError("make_medium: give frame (N, 4) or num_bodies")
        frame = np.tile([1.0, 0.0, 0.0, 0.0], (num_bodies, 1))
    out = Medium(density=jnp.asarray(density, dtype), viscosity=jnp.asarray(viscosity, dtype),
                 wind=jnp.asarray(wind, dtype), frame=jnp.asarray(frame, dtype))
    check_medium(out)
    return out


def check_medium(medium: Medium, num_bodies: int | None = None) -> None:
    """Refuse a medium a step cannot use, by name: shapes (static, also under ``jit``), and concrete
    values that are negative or not finite, or a frame that is not a unit quaternion per body."""
    shapes = {"density": (), "viscosity": (), "wind": (3,)}
    for name, want in shapes.items():
        if np.shape(getattr(medium, name)) != want:
            raise ValueError(f"params.medium.{name}: expected shape {want}, got {np.shape(getattr(medium, name))}")
    n = np.shape(medium.frame)
    if len(n) != 2 or n[1] != 4 or (num_bodies is not None and n[0] != num_bodies):
        raise ValueError(f"params.medium.frame: expected shape ({'N' if num_bodies is None else num_bodies}, 4), got {n}")
    try:
        vals = {k: np.asarray(getattr(medium, k), float) for k in ("density", "viscosity", "wind", "frame")}
    except Exception:  # traced: the step's own flags say what went wrong
        return
    for k, v in vals.items():
        if not np.all(np.isfinite(v)):
            raise ValueError(f"params.medium.{k}: must be finite, got {v.tolist()}")
    for k in ("density", "viscosity"):
        if vals[k] < 0:
            raise ValueError(f"params.medium.{k}: must be >= 0, got {float(vals[k]):g}")
    if n[0] and not np.allclose(np.linalg.norm(vals["frame"], axis=1), 1.0, atol=1e-6):
        raise ValueError("params.medium.frame: each body's principal frame must be a unit quaternion")


def broken_medium(medium: Medium):
    """``check_medium``'s value rules, traced (``validation.MEDIUM``'s bit under ``jit``/``vmap``)."""
    ok = jnp.isfinite(medium.density) & (medium.density >= 0) & jnp.isfinite(medium.viscosity) & (medium.viscosity >= 0)
    return ~(ok & jnp.all(jnp.isfinite(medium.wind)) & jnp.all(jnp.isfinite(medium.frame)))


def box_sides(mass, principal):
    """The sides (..., 3) of the box of ``mass`` (...) and principal moments ``principal`` (..., 3)."""
    I0, I1, I2 = principal[..., 0], principal[..., 1], principal[..., 2]
    m = jnp.maximum(mass, MIN_VALUE)
    side = lambda a: jnp.sqrt(jnp.maximum(MIN_VALUE, a) / m * 6.0)
    return jnp.stack([side(I1 + I2 - I0), side(I0 + I2 - I1), side(I0 + I1 - I2)], axis=-1)


def fluid_wrench(body, medium: Medium, state):
    """Each body's fluid force (world) and torque (body frame), (N, 6), at ``state``: the wrench
    ``free_velocity`` takes as a control. A body of mass below ``MIN_VALUE`` feels none (MuJoCo's)."""
    R = quat_to_mat(state.quat)  # (N, 3, 3) body → world
    P = quat_to_mat(medium.frame)  # (N, 3, 3) principal → body
    principal = jnp.einsum("nji,njk,nki->ni", P, body.inertia, P)  # diag(Pᵀ I P)
    b = box_sides(body.mass, principal)
    w = jnp.einsum("nji,nj->ni", P, state.omega)  # ω in the principal frame
    rel = state.vel - medium.wind  # the centre of mass's velocity through the medium (world)
    v = jnp.einsum("nji,nj->ni", P, jnp.einsum("nji,nj->ni", R, rel))
    d = jnp.mean(b, axis=-1, keepdims=True)
    beta, rho = medium.viscosity, medium.density
    f = -3.0 * jnp.pi * d * beta * v
    t = -jnp.pi * d ** 3 * beta * w
    area = jnp.stack([b[:, 1] * b[:, 2], b[:, 0] * b[:, 2], b[:, 0] * b[:, 1]], axis=-1)
    f = f - 0.5 * rho * area * jnp.abs(v) * v
    b4 = b ** 4
    arm = jnp.stack([b4[:, 1] + b4[:, 2], b4[:, 0] + b4[:, 2], b4[:, 0] + b4[:, 1]], axis=-1)
    t = t - rho * b * arm * jnp.abs(w) * w / 64.0
    on = (body.mass >= MIN_VALUE)[:, None]
    force = jnp.einsum("nij,nj->ni", R, jnp.einsum("nij,nj->ni", P, f))
    torque = jnp.einsum("nij,nj->ni", P, t)
    return jnp.where(on, jnp.concatenate([force, torque], axis=-1), 0.0)


__all__ = ["MIN_VALUE", "Medium", "box_sides", "broken_medium", "check_medium", "fluid_wrench", "make_medium"]
