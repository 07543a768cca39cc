"""Core data types.

* ``State`` / ``PlanarState`` — the dynamic state, a pytree (leading batch axes allowed).
* ``Body``, ``Ground`` — physical parameters, pytrees with differentiable leaves.
* ``Params`` — everything ``jax.grad`` may reach: body, ground and the contact law's parameters.
* ``Model`` — static, hashable configuration (time step, gravity, contact law, tolerances); it is
  passed to ``jit`` as a static argument, so changing it recompiles, changing ``Params`` does not.
* ``ContactInfo`` — diagnostics every contact law returns beside its impulse.
"""

from __future__ import annotations

import dataclasses
from enum import IntEnum
from typing import Any

import jax.numpy as jnp
from flax import struct


class PatchType(IntEnum):
    """Contact patch type, from the number of touching vertices (dacm's collision detector D)."""

    NONE = 0
    POINT = 1
    LINE = 2
    FACE = 3


@struct.dataclass
class State:
    """3D rigid-body state.

    pos: (3,) centre of mass, world frame. quat: (4,) unit quaternion (w, x, y, z), body to world.
    vel: (3,) linear velocity, world frame. omega: (3,) angular velocity, **body** frame.
    """

    pos: jnp.ndarray
    quat: jnp.ndarray
    vel: jnp.ndarray
    omega: jnp.ndarray

    @property
    def dim(self) -> int:
        return 3

    def generalized_velocity(self) -> jnp.ndarray:
        return jnp.concatenate([self.vel, self.omega], axis=-1)

    def to_array(self) -> jnp.ndarray:
        """(…, 13) array laid out like the cube-toss data: pos, quat, vel, omega."""
        return jnp.concatenate([self.pos, self.quat, self.vel, self.omega], axis=-1)

    @staticmethod
    def from_array(x) -> "State":
        x = jnp.asarray(x)
        return State(pos=x[..., 0:3], quat=x[..., 3:7], vel=x[..., 7:10], omega=x[..., 10:13])


@struct.dataclass
class PlanarState:
    """Planar rigid-body state in generalised coordinates, y up.

    pos: (2,) centre of mass. angle: () rotation θ. vel: (2,) linear velocity. omega: () θ̇.
    """

    pos: jnp.ndarray
    angle: jnp.ndarray
    vel: jnp.ndarray
    omega: jnp.ndarray

    @property
    def dim(self) -> int:
        return 2

    def generalized_velocity(self) -> jnp.ndarray:
        return jnp.concatenate([self.vel, self.omega[..., None]], axis=-1)

    def to_array(self) -> jnp.ndarray:
        """(…, 6) array: x, y, θ, ẋ, ẏ, θ̇ (the planar-impact data layout)."""
        return jnp.concatenate(
            [self.pos, self.angle[..., None], self.vel, self.omega[..., None]], axis=-1
        )

    @staticmethod
    def from_array(x) -> "PlanarState":
        x = jnp.asarray(x)
        return PlanarState(pos=x[..., 0:2], angle=x[..., 2], vel=x[..., 3:5], omega=x[..., 5])


AnyState = State | PlanarState


@struct.dataclass
class Body:
    """A rigid convex body.

    mass: (). inertia: (3, 3) body-frame inertia about the centre of mass (3D) or () (planar).
    vertices: (K, d) contact candidates in the body frame, padded to a fixed K.
    vertex_mask: (K,) 1.0 for real candidates, 0.0 for padding.
    """

    mass: jnp.ndarray
    inertia: jnp.ndarray
    vertices: jnp.ndarray
    vertex_mask: jnp.ndarray

    @property
    def dim(self) -> int:
        return self.vertices.shape[-1]

    @property
    def num_vertices(self) -> int:
        return self.vertices.shape[-2]


@struct.dataclass
class Ground:
    """Ground plane {x : n·x = height} with n the (normalised on use) upward normal."""

    normal: jnp.ndarray
    height: jnp.ndarray

    @staticmethod
    def flat(dim: int = 3, height: float = 0.0) -> "Ground":
        n = jnp.zeros(dim).at[dim - 1].set(1.0)
        return Ground(normal=n, height=jnp.asarray(height, dtype=n.dtype))


@struct.dataclass
class Params:
    """All differentiable parameters: body, ground and the contact law's own pytree."""

    body: Body
    ground: Ground
    law: Any


@struct.dataclass
class ContactInfo:
    """Diagnostics of one contact resolution (one body, one step).

    phi: (C,) signed distances of the selected contact candidates (C = model contact count).
    active: (C,) candidates within ``Model.patch_tol`` of the ground.
    impulse: (C, d) per-candidate impulse in the contact frame (normal, tangent(s)).
    patch_type: () ``PatchType`` as int; patch_centre: (d,) world; patch_normal: (d,) world.
    residual: () solver residual (velocity units, natural-map norm); 0 for closed-form laws.
    iterations: () solver iterations used.
    mode: () law-specific mode label (dacm: static/dynamic/detach), −1 where not applicable.
    """

    phi: jnp.ndarray
    active: jnp.ndarray
    impulse: jnp.ndarray
    patch_type: jnp.ndarray
    patch_centre: jnp.ndarray
    patch_normal: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray
    mode: jnp.ndarray

    @staticmethod
    def from_patch(phi, active, impulse, patch, residual, iterations, mode=-1, patch_normal=None) -> "ContactInfo":
        """Info from a patch (``kind``, ``centre`` and, unless ``patch_normal`` is given, ``normal``)
        and a solver's residual/iterations."""
        return ContactInfo(
            phi=phi,
            active=active,
            impulse=impulse,
            patch_type=patch.kind,
            patch_centre=patch.centre,
            patch_normal=patch.normal if patch_normal is None else patch_normal,
            residual=jnp.asarray(residual),
            iterations=jnp.asarray(iterations, jnp.int32),
            mode=jnp.asarray(mode, jnp.int32),
        )


@dataclasses.dataclass(frozen=True)
class Model:
    """Static simulation configuration (hashable; a ``jit`` static argument).

    dt: time step (s). gravity: magnitude (m/s²) along world −z (3D) or −y (planar).
    law: the contact law, a hashable callable ``law(model, params, state, v_free) -> (p, info)``.
    max_contacts: contact candidates kept per step (the closest ones), ``None`` = all vertices.
    patch_tol: distance under which a vertex counts as touching for the contact patch (m).
    gyroscopic: include the gyroscopic term ω × Iω (integrated implicitly, stable).
    """

    law: Any
    dt: float = 0.002
    gravity: float = 9.81
    max_contacts: int | None = 8
    patch_tol: float = 1e-3
    gyroscopic: bool = True

    def __post_init__(self):
        if not (self.dt > 0):
            raise ValueError(f"Model.dt must be positive, got {self.dt}")
        if self.max_contacts is not None and self.max_contacts < 1:
            raise ValueError(f"Model.max_contacts must be >= 1 or None, got {self.max_contacts}")
        if not (self.patch_tol >= 0):
            raise ValueError(f"Model.patch_tol must be >= 0, got {self.patch_tol}")
        hash(self.law)  # a law must be hashable to be a static argument

    def num_contacts(self, body: Body) -> int:
        k = body.num_vertices
        return k if self.max_contacts is None else min(k, self.max_contacts)
