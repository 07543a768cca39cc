"""Core data types.

* ``State`` / ``PlanarState`` — the dynamic state, a pytree (leading batch axes allowed).
* ``Body``, ``Ground`` — physical parameters, pytrees with differentiable leaves.
* ``Params`` — everything ``jax.grad`` may reach: body, ground and the contact law's parameters.
* ``Model`` — static, hashable configuration (time step, gravity, contact law, tolerances); it is
  passed to ``jit`` as a static argument, so changing it recompiles, changing ``Params`` does not.
* ``ContactInfo`` — diagnostics every contact law returns beside its impulse; ``flags`` (a
  ``Flags`` bit set) says whether the step's input was invalid, its output non-finite, the start
  state penetrated deeper than the stabilisation corrects, or the solver missed its tolerance.
* ``Summary`` — those flags accumulated over a rollout, for runs that keep only final states.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from enum import IntEnum, IntFlag
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


class PatchType(IntEnum):
    """Contact patch type, from the number of touching vertices (dacm's collision detector D)."""

    NONE = 0
    POINT = 1
    LINE = 2
    FACE = 3


class Flags(IntFlag):
    """What a step reports in ``ContactInfo.flags`` (a bit set; 0 = nothing to report).

    INVALID_INPUT: the step's input broke a rule ``validation`` checks eagerly (non-finite or
    non-unit state, non-positive mass or inertia, negative friction, restitution outside [0, 1], …).
    NONFINITE: the step produced a non-finite state or impulse.
    PENETRATION: the start state penetrated deeper than one step of ``Model.max_correction_speed``
    corrects; in the ground it was projected out along the ground normal (no momentum added); a
    world's pair of bodies inside each other is pushed apart at no more than that speed.
    SOLVER: the contact solver used all its iterations with a residual above both its tolerance
    and ``dynamics.SOLVER_ACCURACY`` (5e-3 m/s: below it a capped answer is not measurably off), or
    its residual is non-finite or above ``dynamics.SOLVER_RESIDUAL_LIMIT`` (0.1 m/s; precision lost).
    CAPACITY: (worlds) more body–body pairs were within reach of each other than the broad phase
    keeps (``Scene.max_pairs``); the farthest were left out of the step's contact problem.
    DEGENERATE: (worlds with pairs or joints) the step's contact solution sits at a degenerate
    complementarity point (``solvers.degenerate``: a contact with normal impulse and gap velocity
    both ~0 while others carry load, or a loaded friction row at its bound with slip ~0), where the
    step is not differentiable: a derivative through it is one side's and may jump (docs/gradients.md,
    "The DEGENERATE flag"). The forward step is as exact as any other.
    """

    INVALID_INPUT = 1
    NONFINITE = 2
    PENETRATION = 4
    SOLVER = 8
    CAPACITY = 16
    DEGENERATE = 32


FLAG_NAMES = {Flags.INVALID_INPUT: "invalid input", Flags.NONFINITE: "non-finite",
              Flags.PENETRATION: "deep penetration (projected out)", Flags.SOLVER: "solver not converged",
              Flags.CAPACITY: "pairs left out by the broad phase (Scene.max_pairs)",
              Flags.DEGENERATE: "a degenerate contact point (derivative not trustworthy)"}


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
    friction: (worlds only) the body's friction coefficient μ ≥ 0, () per body, (N,) stacked; a
    contact's μ combines its two bodies' (or the body's and the ground's, ``params.law.mu``) by
    ``worlds.materials.mix_friction``. None (the default): one material per world, the law's μ.
    A single body's step refuses it (its friction is ``params.law.mu``).

    Round shapes (``shapes.sphere``, ``capsule``, ``cylinder``, ``ellipsoid``; None, the default,
    for a hull: its fields and results exactly as without them; a world stacking round bodies and
    hulls gives every body all of them, zeros where absent):
    radius: () the sphere-swept radius r ≥ 0: the body is its (core) vertices' hull swept by a
    sphere of radius r (a sphere: one vertex; a capsule: two, the segment's ends).
    cylinder: (2,) a solid cylinder's (radius ρ, half-length l) along the body z axis, zeros: none.
    ellipsoid: (3,) a solid ellipsoid's semi-axes (a, b, c) along the body axes, zeros: none.
    A cylinder's or ellipsoid's body has no valid vertex (one masked vertex at its centre).

    Bodies of several shapes (``shapes.compound``: a table, a dumbbell, a hammer):
    vertex_radius: (K,) each vertex's own sweep radius (a sphere part's centre, a capsule part's
    two ends: the part's radius; a hull part's vertices: 0), added to ``radius``; None (the
    default) for a body of one shape. parts: static, None, or the parts as ``(kind, start, stop)``
    ("hull", "sphere", "capsule", "cylinder" or "ellipsoid"; their vertices ``vertices[start:stop]``): the narrow phase of
    a world runs per part pair (``worlds.contacts.compound_pair``). ``worlds.stack_bodies`` drops
    it (the ``Scene`` keeps each body's parts). vertex_shape: (K, 8) None unless a part is a cylinder
    or an ellipsoid: per vertex (code, d0, d1, d2, q0..q3), code 0 an ordinary vertex, 1..6 a
    cylinder part's rim candidate (``geometry.cylinder_rim``'s index + 1), 7 an ellipsoid part's
    support point; the vertex itself is the part's centre, d its dimensions (ρ, l, 0) or (a, b, c)
    and q its orientation in the body frame (``geometry.part_candidates``).
    """

    mass: jnp.ndarray
    inertia: jnp.ndarray
    vertices: jnp.ndarray
    vertex_mask: jnp.ndarray
    friction: Any = None
    radius: Any = None
    cylinder: Any = None
    ellipsoid: Any = None
    vertex_radius: Any = None
    vertex_shape: Any = None
    parts: Any = struct.field(pytree_node=False, default=None)

    @property
    def dim(self) -> int:
        return self.vertices.shape[-1]

    @property
    def num_vertices(self) -> int:
        return self.vertices.shape[-2]

    @property
    def is_round(self) -> bool:
        """Whether the body has any round-shape field (static: the pytree's structure)."""
        return (self.radius is not None or self.cylinder is not None or self.ellipsoid is not None
                or self.vertex_radius is not None or self.vertex_shape is not None)

    @property
    def num_candidates(self) -> int:
        """Ground-contact candidates per body (static): its vertices (swept by ``radius``), six rim
        points of a ``cylinder`` (three per cap), one support point of an ``ellipsoid``."""
        return self.num_vertices + (6 if self.cylinder is not None else 0) + (1 if self.ellipsoid is not None else 0)


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
class Planes:
    """A world's tilted planes, fixed scenery (walls, ramps; ``worlds.planes``): P half-spaces
    {x : n_k·x <= offset_k}, each with its own sliding friction. normal (P, 3) (normalised on use),
    offset (P,) (m), friction (P,). All traced: ``jax.grad`` reaches a ramp's angle and a wall's
    place. Their count is static (``Scene.planes``)."""

    normal: jnp.ndarray
    offset: jnp.ndarray
    friction: jnp.ndarray

    @property
    def count(self) -> int:
        return int(jnp.shape(self.offset)[0])


@struct.dataclass
class Params:
    """All differentiable parameters: body, ground and the contact law's own pytree; ``planes``: a
    world's tilted planes (``Planes``, ``Scene.planes`` of them), None without; ``medium``: a world's
    fluid medium (``worlds.medium.Medium``: MuJoCo's inertia-box drag), None without; ``soft``: the
    values of MuJoCo's soft constraints (``worlds.soft.SoftParams``) of a world whose
    ``Scene.constraints`` is "mujoco", None otherwise."""

    body: Body
    ground: Ground
    law: Any
    planes: Planes | None = None
    medium: Any = None
    soft: Any = None


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
    flags: () int32 ``Flags`` bit set, filled in by the step (``dynamics.step_with_info``); a law
    leaves it 0. invalid: () int32 bit set of the ``validation.RULES`` the step's input broke.
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
    flags: Any = 0
    invalid: Any = 0

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


@struct.dataclass
class Summary:
    """A rollout's ``ContactInfo.flags`` accumulated over its steps (what ``rollout(...,
    output="final", with_info=True)`` returns beside the final state; leading batch axes allowed).

    flags: () int32 — OR of every step's flags. first_step: (4,) int32 — for each bit of ``Flags``
    in order (INVALID_INPUT, NONFINITE, PENETRATION, SOLVER) the first step (0-based) that raised
    it, −1 if none did. invalid: () int32 — the ``validation.RULES`` broken at the first invalid step.
    ``diagnostics.report`` turns it into sentences; ``diagnostics.check`` raises on it.
    unit, bodies (static): what one summary counts ("bodies"; a world's rollout: "worlds", with its
    number of bodies; a chain's: "chains"), so that reports count worlds as worlds.
    """

    flags: jnp.ndarray
    first_step: jnp.ndarray
    invalid: jnp.ndarray
    unit: str = struct.field(pytree_node=False, default="bodies")
    bodies: int = struct.field(pytree_node=False, default=1)


def _finite_real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _not_an_array(x, name: str, kind: str = "a Python float") -> None:
    """A static setting (part of a ``jit`` static argument) given as an array or a traced value:
    say so by name instead of a generic "must be a number"."""
    if isinstance(x, jax.core.Tracer):
        raise ValueError(f"{name} is a static setting (Model is a jit static argument): pass {kind}, not a traced "
                         "value; build the Model outside the transformed function (a new value recompiles)")
    if isinstance(x, (jax.Array, np.ndarray)):
        raise ValueError(f"{name} is a static setting (Model is a jit static argument): pass {kind}, not a "
                         f"{'JAX' if isinstance(x, jax.Array) else 'NumPy'} array (e.g. float(x))")


def _unhashable_setting(obj, name: str):
    """The dotted name of the first field of a (nested) dataclass that is an array, or None."""
    if isinstance(obj, (jax.Array, np.ndarray, jax.core.Tracer)):
        return name
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            found = _unhashable_setting(getattr(obj, f.name), f"{name}.{f.name}")
            if found:
                return found
    return None


# The members of a contact law the step reads (``laws.base.ContactLaw``; ``laws.base.LawDefaults``
# declares every optional one with its default).
LAW_MEMBERS = ("body_geometry", "solver", "warm_start", "coupling_refusal", "init_warm", "solve_warm", "solve_coupled",
               "with_friction")


@dataclasses.dataclass(frozen=True)
class Model:
    """Static simulation configuration (hashable; a ``jit`` static argument).

    dt: time step (s). gravity: magnitude (m/s²) along world −z (3D) or −y (planar).
    gravity_xy: gravity's world x and y components (m/s²) beside it, a 3D world's (MuJoCo's
    ``opt.gravity`` off the vertical: ``(gravity_xy[0], gravity_xy[1], −gravity)``); (0, 0) by default.
    law: the contact law, a hashable callable ``law(model, params, state, v_free) -> (p, info)``.
    max_contacts: contact candidates kept per step (the closest ones), ``None`` = all vertices.
    patch_tol: distance under which a vertex counts as touching for the contact patch (m).
    gyroscopic: include the gyroscopic term ω × Iω (integrated implicitly, stable).
    max_correction_speed: bound (m/s) on the speed at which the contact solve pushes a penetrating
    vertex out (its target −φ/h is capped there). A start state that penetrates deeper than one
    step of it corrects (``max_correction_speed·dt``) is first projected out along the ground
    normal, which adds no momentum, and flagged ``Flags.PENETRATION``. So a body that starts
    inside the ground (or is pushed into it) is separated without being launched: it gains at
    most ½ m max_correction_speed² of kinetic energy. ``None`` restores the unbounded −φ/h
    correction (learned laws whose own φ is not the body's vertices use it).

    All settings are validated here, whatever the tracing context (they are static).
    """

    law: Any
    dt: float = 0.002
    gravity: float = 9.81
    max_contacts: int | None = 8
    patch_tol: float = 1e-3
    gyroscopic: bool = True
    max_correction_speed: float | None = 0.02
    gravity_xy: tuple = (0.0, 0.0)

    def __post_init__(self):
        for name in ("dt", "gravity", "patch_tol", "max_correction_speed"):
            _not_an_array(getattr(self, name), f"Model.{name}")
        _not_an_array(self.max_contacts, "Model.max_contacts", "a Python int")
        _not_an_array(self.gyroscopic, "Model.gyroscopic", "a Python bool")
        if not (_finite_real(self.dt) and self.dt > 0):
            raise ValueError(f"Model.dt must be a finite positive number of seconds, got {self.dt!r}")
        if not _finite_real(self.gravity):
            raise ValueError(f"Model.gravity must be a finite number (m/s²), got {self.gravity!r}")
        xy = self.gravity_xy
        if not (isinstance(xy, tuple) and len(xy) == 2 and all(_finite_real(g) for g in xy)):
            raise ValueError(f"Model.gravity_xy must be a tuple of two finite numbers (m/s², world x and y), got {xy!r}")
        mc = self.max_contacts
        if mc is not None and (not isinstance(mc, numbers.Integral) or isinstance(mc, bool) or mc < 1):
            raise ValueError(f"Model.max_contacts must be an int >= 1 or None, got {mc!r}")
        if not (_finite_real(self.patch_tol) and self.patch_tol >= 0):
            raise ValueError(f"Model.patch_tol must be a finite number >= 0 (m), got {self.patch_tol!r}")
        if not isinstance(self.gyroscopic, bool):
            raise ValueError(f"Model.gyroscopic must be a bool, got {self.gyroscopic!r}")
        v = self.max_correction_speed
        if v is not None and not (_finite_real(v) and v > 0):
            raise ValueError(f"Model.max_correction_speed must be a finite positive speed (m/s) or None, got {v!r}")
        if not callable(self.law):
            raise ValueError(f"Model.law must be a contact law (callable), got {type(self.law).__name__}")
        missing = [m for m in LAW_MEMBERS if not hasattr(self.law, m)]
        if missing:
            raise ValueError(f"Model.law: {type(self.law).__name__} lacks the contact-law protocol's members "
                             f"{', '.join(missing)}; subclass jaxcontact.laws.LawDefaults, which declares them with "
                             "their defaults (jaxcontact/laws/base.py)")
        try:
            hash(self.law)  # a law must be hashable to be a static argument
        except TypeError:
            field = _unhashable_setting(self.law, type(self.law).__name__)
            if field is None:
                raise
            raise ValueError(f"{field} is a static setting (Model is a jit static argument): pass a Python "
                             "number, not an array") from None

    @property
    def penetration_tol(self) -> float:
        """Deepest start-state penetration (m) the velocity correction removes in one step;
        deeper is projected out (``inf`` when ``max_correction_speed`` is None)."""
        return math.inf if self.max_correction_speed is None else self.max_correction_speed * self.dt

    def num_contacts(self, body: Body) -> int:
        k = body.num_candidates
        return k if self.max_contacts is None else min(k, self.max_contacts)
