"""A world's static description: its bodies' hull topologies, which pairs may touch, the ground.

A world is N convex bodies (``Body`` fields stacked on a leading body axis, padded to one vertex
count) and, optionally, the ground plane. ``Scene`` is the static, hashable part (a ``jit``
static argument, like ``Model``): the number of bodies, each body's hull topology
(``collision.HullTopology``: faces and edges; the vertex *positions* stay traced, so gradients
reach them), the table of body–body pairs that may touch after the filter, the contacts kept per
pair and the speculative margin. ``make_scene`` builds it from concrete bodies and returns the
stacked ``Body`` beside it.
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
import warnings
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import collision
from ..shapes import shape_kind
from ..types import Body
from .joints import Joints
from .soft import check_integrator, check_mode


SLOT_CONTACTS = "kinds"
"""How many contacts a pair slot of the contact problem holds (``Scene.slot_contacts``, read when a program is
traced): "kinds" (the default: the most the scene's pairs of kinds can have, ``collision.most_pair_contacts``)
or "pair_contacts" (``Scene.pair_contacts`` on every slot, the design before; kept to measure against)."""
COMPOUND = "compound"  # the shape of a body of several parts (shapes.compound; Scene.parts)


@dataclasses.dataclass(frozen=True)
class Scene:
    """Static description of a world of ``num_bodies`` convex bodies.

    topologies: one ``collision.HullTopology`` per body (faces and edges of its hull; None for a
    body in no pair, whose hull the narrow phase never needs).
    pairs: the body–body pairs (a, b), a < b, whose contacts are resolved (all pairs minus the
    excluded ones by default). ground: whether the ground plane is part of the world.
    ground_contacts: deprecated, None. ``Model.max_contacts`` alone decides how many ground
    contacts a body keeps, in bodies and worlds alike (a face's widest spread when more touch:
    ``geometry.face_points``); an int given here warns (``DeprecationWarning``) and must agree with
    it, or the step refuses it (``contacts.check_ground_contacts``). pair_contacts: contacts kept per body–body pair (the manifold is reduced to this many points;
    the contact problem holds ``slot_contacts`` per pair slot, fewer where no pair can have that many).
    margin: speculative distance (m): pairs closer than this report contacts with their true signed
    distance (φ > 0), so a contact is in the problem one step before the surfaces meet, and its
    φ has a gradient.
    softness: relative diagonal added to the rows of resting contacts (``contacts.soft_rows``, ``solvers.problem.soften``).
    max_pairs: the broad phase. None: the narrow phase runs on every pair of the table each step.
    An int K: each step it runs on the K pairs (per pair of topologies) whose bounding spheres are
    closest (a static number, so the problem keeps fixed shapes); pairs further apart than the
    margin cannot touch and are skipped. When more than K pairs are within reach of each other
    the farthest are left out of that step and the step is flagged ``Flags.CAPACITY``.
    max_slots: the broad phase across the groups of pairs (one cap on the table, not per group).
    None: every pair the narrow phase ran on (per group: ``max_pairs``) is a slot of the contact
    problem. An int S: the problem keeps S pair slots, the pairs with a contact within reach
    (the nearest first; ``contacts.keep_slots``), in the table's order, whatever their groups;
    when more than S pairs have a contact within reach, the farthest are left out and the step
    is flagged ``Flags.CAPACITY``. ``scenes.heap_broad_phase`` sets it for a heap of several kinds.
    joints: None, or the world's revolute ``joints.Joints`` (their anchors and axes are traced, in
    ``joints.JointedParams``); a jointed body keeps every ground candidate (no reach filter: its
    joints can move it faster than its own velocity says).
    vertex_counts: each body's number of valid (unmasked) vertices when the scene was built
    (``make_scene`` fills it; None for a hand-built scene: not checked). With ``topologies``
    it is what the scene was built from: ``check_body`` refuses other bodies by name.
    narrow_phase: how the pairs' manifolds are computed (``collision.hull_hull``'s ``method``):
    ``"auto"`` (the fused kernel on a CPU, the pure-JAX reference elsewhere), ``"native"`` or
    ``"jax"`` (the reference). They give the same contacts to round-off.
    names: None, or each body's name where the world came from a file (``worlds.from_mjcf``: the
    file's body names, None for an unnamed body); messages name bodies by it (``body_name``).
    shapes: None (every body a hull), or each body's shape (``shapes.shape_kind``: "hull",
    "sphere", "capsule", "cylinder", …; ``make_scene`` fills it when a body is round). Spheres and
    capsules touch each other and hulls (``collision.round_round``, ``round_hull``; grouped by
    kind, ``pair_shape``), cylinders and ellipsoids touch every kind (``collision.convex_pair``); a pair
    holding a sphere-swept hull is refused by name.
    fixed: the indices (sorted) of the bodies fixed to the world (scenery: a table, a wall, a
    ramp; docs/worlds.md, "Fixed scenery"). A fixed body keeps its state exactly as given (never
    integrated, at rest), has zero inverse mass and inertia in the contact problem (its contacts
    move only the free body), no gravity or control, no ground contacts, and no pairs with other
    fixed bodies; its pose stays traced, so gradients reach it.
    parts: None (no body of several shapes), or per body None or its parts (``shapes.compound``,
    its shape "compound") as ``(kind, start, stop, topology)``: "hull" (its ``HullTopology`` over
    ``vertices[start:stop]``), "sphere" or "capsule" (None); ``make_scene`` fills it. A pair
    holding a compound runs the narrow phase per part pair (``contacts.compound_pair``).
    fast_hits: a pair moving more than ``contacts.FAST_HIT`` within the step takes its contacts
    from the pose it would reach at its current velocities (the features that will meet,
    ``contacts.pair_contacts``; docs/worlds.md, "Fast hits"); False (the default, for now): the
    current pose's only.
    planes: how many tilted planes (walls, ramps: fixed scenery, ``types.Planes`` in
    ``Params.planes``, ``worlds.planes``) the world has beside the ground (static); every body
    touches each as it touches the ground (``contacts.ground_contacts``).
    contactless: the indices (sorted) of the bodies that collide with nothing (MuJoCo's bodies
    without a colliding geom: a link of inertia only, or of visual geoms): they move (gravity,
    joints, controls) but have no ground or plane contacts, are never depenetrated and are in no
    pair; their ``Body`` shape is nominal (``worlds.mjcf``: the equivalent-inertia box).
    no_ground: the indices (sorted) of the bodies that do not touch the ground (MuJoCo's contype/
    conaffinity filter between their geoms and the floor, per body: a gripper that passes through the
    floor beside a box that rests on it): no ground contacts, never moved out of the ground; they
    keep their pairs and the tilted planes (``Scene.planes``). Only with ``ground``.
    constraints: "hard" (the default: contacts and range limits are hard rows) or "mujoco" (MuJoCo's
    soft constraint law on them, with ``Params.soft``'s values: ``worlds.soft``).
    integrator: "euler" (the default: the semi-implicit Euler step) or "rk4" (MuJoCo's classic
    four-stage Runge–Kutta, ``pipeline.rk4_stages``; only with ``constraints="mujoco"``, whose rows are
    forces, where the hard rows are impulses: ``soft.check_integrator``).
    """

    topologies: tuple
    pairs: tuple = ()
    ground: bool = True
    pair_contacts: int = 4
    margin: float = 0.002
    ground_contacts: int | None = None
    softness: float = 1e-2
    max_pairs: int | None = None
    joints: Joints | None = None
    vertex_counts: tuple | None = None
    narrow_phase: str = "auto"
    names: tuple | None = None
    shapes: tuple | None = None
    fixed: tuple = ()
    parts: tuple | None = None
    fast_hits: bool = False
    planes: int = 0
    contactless: tuple = ()
    no_ground: tuple = ()
    max_slots: int | None = None
    constraints: str = "hard"
    integrator: str = "euler"

    def __post_init__(self):
        n = len(self.topologies)
        check_mode(self.constraints)
        check_integrator(self.integrator, self.constraints)
        check_plane_count(self.planes)
        object.__setattr__(self, "fixed", check_fixed(self.fixed, n))
        object.__setattr__(self, "contactless", check_fixed(self.contactless, n, "contactless"))
        object.__setattr__(self, "no_ground", check_fixed(self.no_ground, n, "no_ground"))
        if self.no_ground and not self.ground:
            raise ValueError(f"Scene.no_ground: {self.body_name(self.no_ground[0])} is kept off a ground the world does "
                             "not have (Scene.ground is False)")
        for a, b in self.pairs:
            if a in self.contactless or b in self.contactless:
                raise ValueError(f"Scene.pairs: ({a}, {b}) holds {self.body_name(a if a in self.contactless else b)}, "
                                 "which collides with nothing (Scene.contactless)")
            if a in self.fixed and b in self.fixed:
                raise ValueError(f"Scene.pairs: ({a}, {b}) are both fixed bodies (Scene.fixed), which never touch")
        if self.vertex_counts is not None and len(self.vertex_counts) != n:
            raise ValueError(f"Scene.vertex_counts: expected one count per body ({n}), got {len(self.vertex_counts)}")
        for a, b in self.pairs:
            if not (0 <= a < b < n):
                raise ValueError(f"Scene.pairs: ({a}, {b}) is not a pair of distinct bodies a < b of 0..{n - 1}")
        if len(set(self.pairs)) != len(self.pairs):
            raise ValueError("Scene.pairs: a pair is listed twice")
        for name in ("pair_contacts", "ground_contacts"):
            pc = getattr(self, name)
            if name == "ground_contacts" and pc is None:
                continue
            if not isinstance(pc, numbers.Integral) or isinstance(pc, bool) or pc < 1:
                raise ValueError(f"Scene.{name} must be an int >= 1, got {pc!r}")
        if self.ground_contacts is not None:
            warnings.warn(f"Scene.ground_contacts (= {self.ground_contacts}) is deprecated: Model.max_contacts alone "
                          "decides how many ground contacts a body keeps (a step refuses a scene whose count "
                          "disagrees with it); drop ground_contacts and set Model(max_contacts=...)",
                          DeprecationWarning, stacklevel=3)
        if not (isinstance(self.softness, numbers.Real) and 0 <= self.softness < 1):
            raise ValueError(f"Scene.softness must be a number in [0, 1), got {self.softness!r}")
        if self.max_pairs is not None and (not isinstance(self.max_pairs, numbers.Integral)
                                           or isinstance(self.max_pairs, bool) or self.max_pairs < 1):
            raise ValueError(f"Scene.max_pairs must be None (every pair) or an int >= 1, got {self.max_pairs!r}")
        if self.max_slots is not None and (not isinstance(self.max_slots, numbers.Integral)
                                           or isinstance(self.max_slots, bool) or self.max_slots < 1):
            raise ValueError(f"Scene.max_slots must be None (every pair the narrow phase ran on) or an int >= 1, "
                             f"got {self.max_slots!r}")
        if self.narrow_phase not in collision.METHODS:
            raise ValueError(f"Scene.narrow_phase must be one of {collision.METHODS}, got {self.narrow_phase!r}")
        if not (isinstance(self.margin, numbers.Real) and np.isfinite(self.margin) and self.margin >= 0):
            raise ValueError(f"Scene.margin must be a finite distance >= 0 (m), got {self.margin!r}")
        if not isinstance(self.fast_hits, bool):
            raise ValueError(f"Scene.fast_hits must be True or False, got {self.fast_hits!r}")
        if self.shapes is not None and len(self.shapes) != n:
            raise ValueError(f"Scene.shapes: expected one shape per body ({n}), got {len(self.shapes)}")
        if self.parts is not None and len(self.parts) != n:
            raise ValueError(f"Scene.parts: expected one entry per body ({n}), got {len(self.parts)}")
        for i in range(n):
            if (self.shapes is not None and self.shapes[i] == COMPOUND) != (self.parts is not None and self.parts[i] is not None):
                raise ValueError(f"Scene.parts: {self.body_name(i)} needs its parts exactly when its shape is a "
                                 "compound (make_scene fills both)")
        for a, b in self.pairs:
            for i in (a, b):
                if self.shapes is not None and self.shapes[i] not in collision.PAIR_KINDS + (COMPOUND,):
                    raise ValueError(f"Scene.pairs: ({a}, {b}) holds {self.body_name(i)}, a {self.shapes[i]}: body–body "
                                     f"contacts exist for {', '.join(collision.PAIR_KINDS)} only; a "
                                     f"{self.shapes[i]} touches the ground only; leave the pair out (make_scene's pairs= "
                                     "or exclude=)")
        for a, b in self.pairs:
            if any(self.topologies[i] is None and (self.shapes is None or self.shapes[i] == "hull") for i in (a, b)):
                raise ValueError(f"Scene.topologies: body {a if self.topologies[a] is None else b} is in pair ({a}, {b}) "
                                 "and needs its hull topology (None only for bodies in no pair)")
        if self.names is not None and len(self.names) != n:
            raise ValueError(f"Scene.names: expected one name per body ({n}), got {len(self.names)}")
        if self.joints is not None:
            if not isinstance(self.joints, Joints):
                raise ValueError(f"Scene.joints must be None or a worlds.joints.Joints, got {type(self.joints).__name__}")
            far = max(max(self.joints.parent), max(self.joints.child))
            if far >= n:
                raise ValueError(f"Scene.joints: a joint names body {far} of a world of {n} bodies")
            held = sorted(set(self.fixed) & set(self.joints.parent + self.joints.child))
            if held:
                raise ValueError(f"Scene.joints: body {held[0]} is fixed (Scene.fixed) and in a joint; hinge the "
                                 "moving body to the world (parent -1) at the fixed body's anchor instead")

    def body_name(self, i: int) -> str:
        """Body ``i`` as messages name it: ``body 2`` or, from a file, ``body 'lid' (2)``."""
        name = None if self.names is None else self.names[i]
        return f"body {name!r} ({i})" if name else f"body {i}"

    @property
    def num_bodies(self) -> int:
        return len(self.topologies)

    def _mask(self, indices) -> np.ndarray:
        """(N,) static mask, True at ``indices``."""
        mask = np.zeros(self.num_bodies, bool)
        mask[list(indices)] = True
        return mask

    @property
    def fixed_bodies(self) -> np.ndarray:
        """(N,) static mask of the bodies fixed to the world (``fixed``)."""
        return self._mask(self.fixed)

    @property
    def contactless_bodies(self) -> np.ndarray:
        """(N,) static mask of the bodies that collide with nothing (``contactless``)."""
        return self._mask(self.contactless)

    @property
    def no_ground_bodies(self) -> np.ndarray:
        """(N,) static mask of the bodies that do not touch the ground (``no_ground``)."""
        return self._mask(self.no_ground)

    @property
    def off_ground(self) -> tuple:
        """The bodies (sorted indices) that never touch the ground: those that collide with nothing
        (``contactless``) and those MuJoCo's filter keeps off the floor (``no_ground``)."""
        return tuple(sorted(set(self.contactless) | set(self.no_ground)))

    @property
    def off_ground_bodies(self) -> np.ndarray:
        """(N,) static mask of ``off_ground``."""
        return self._mask(self.off_ground)

    @property
    def jointed_bodies(self) -> np.ndarray:
        """(N,) static mask of the bodies that belong to a joint (none without ``joints``)."""
        return np.zeros(self.num_bodies, bool) if self.joints is None else self.joints.jointed(self.num_bodies)

    @property
    def num_pairs(self) -> int:
        return len(self.pairs)

    def pair_groups(self):
        """The pairs grouped by their two bodies' topologies (``[(topo_a, topo_b, [pair index])]``):
        each group's narrow phase is one ``vmap``."""
        groups: dict = {}
        for k, (a, b) in enumerate(self.pairs):
            groups.setdefault((self.pair_shape(a), self.pair_shape(b)), []).append(k)
        return [(ta, tb, ks) for (ta, tb), ks in groups.items()]

    def pair_shape(self, i: int):
        """What body ``i``'s narrow phase dispatches on (static): its hull topology, or its round
        kind ("sphere", "capsule": ``collision.ROUND_KINDS``), or a compound's ``("compound", parts)``."""
        if self.parts is not None and self.parts[i] is not None:
            return (COMPOUND, self.parts[i])
        if self.shapes is not None and self.shapes[i] != "hull":
            return self.shapes[i]
        return self.topologies[i]

    @property
    def slot_contacts(self) -> int:
        """Contacts per pair slot of the contact problem (static): ``pair_contacts``, or fewer where no
        group of pairs can have that many (``collision.most_pair_contacts``: a heap of spheres 1, of
        capsules 2); ``WorldInfo.pair_phi`` keeps ``pair_contacts`` columns (the others φ FAR)."""
        groups = self.pair_groups()
        if not groups or SLOT_CONTACTS == "pair_contacts":
            return self.pair_contacts
        return max(collision.most_pair_contacts(ta, tb, self.pair_contacts) for ta, tb, _ in groups)

    def pair_slots(self, group_size: int) -> int:
        """Pairs of a topology group of ``group_size`` the narrow phase runs on each step."""
        return group_size if self.max_pairs is None else min(group_size, self.max_pairs)

    @property
    def num_narrow_slots(self) -> int:
        """Pairs the narrow phase runs on each step (every pair without a broad phase)."""
        return sum(self.pair_slots(len(ks)) for _, _, ks in self.pair_groups())

    @property
    def num_pair_slots(self) -> int:
        """Pair slots of the contact problem each step: the narrow phase's, at most ``max_slots``."""
        ran = self.num_narrow_slots
        return ran if self.max_slots is None else min(ran, self.max_slots)


def check_plane_count(planes) -> None:
    """Refuse a plane count (``Scene.planes``, ``make_scene(planes=)``) that is not an int >= 0, by name."""
    if isinstance(planes, bool) or not isinstance(planes, (int, np.integer)) or planes < 0:
        raise ValueError(f"planes: the number of tilted planes (an int >= 0; their normals, offsets and friction go "
                         f"in Params.planes), got {planes!r}")


DESCRIBED = {"fixed": "fixed to the world", "contactless": "that collide with nothing",
             "no_ground": "that do not touch the ground"}


def check_fixed(fixed, n: int, what: str = "fixed") -> tuple:
    """``fixed`` (body indices, or N bools) as the sorted tuple of indices ``Scene.fixed`` holds;
    refused by name when not ints of 0..n−1 (or n bools), or an index is listed twice. ``what``: the
    argument named in messages (``"contactless"`` for ``Scene.contactless``)."""
    if isinstance(fixed, (str, bytes)) or not hasattr(fixed, "__iter__"):
        raise ValueError(f"{what}: expected the indices of the bodies {DESCRIBED[what]} (or one bool per body), "
                         f"got {fixed!r}")
    items = list(np.asarray(fixed).tolist()) if isinstance(fixed, np.ndarray) else list(fixed)
    if items and all(isinstance(f, (bool, np.bool_)) for f in items):
        if len(items) != n:
            raise ValueError(f"{what}: a mask needs one bool per body ({n}), got {len(items)}")
        items = [i for i, f in enumerate(items) if f]
    for f in items:
        if not isinstance(f, numbers.Integral) or isinstance(f, (bool, np.bool_)):
            raise ValueError(f"{what}: expected body indices (ints) or one bool per body, got {f!r}")
        if not 0 <= f < n:
            raise ValueError(f"{what}: body {f} is out of range for a world of {n} bodies (0..{n - 1})")
    if len(set(items)) != len(items):
        raise ValueError(f"{what}: a body is listed twice in {tuple(items)}")
    return tuple(sorted(int(f) for f in items))


def stack_bodies(bodies: Sequence[Body]) -> Body:
    """One ``Body`` with a leading body axis from N bodies, their vertices padded (masked) to the
    largest count; none: an empty stack (N = 0, one padded vertex), a world of no bodies (a file of
    a floor or assets alone, ``mjcf.from_mujoco``)."""
    bodies = list(bodies)
    if not bodies:
        z = jnp.zeros((0,), jnp.result_type(float))
        return Body(mass=z, inertia=z.reshape(0, 1, 1) * jnp.zeros((3, 3)), vertices=jnp.zeros((0, 1, 3), z.dtype),
                    vertex_mask=jnp.zeros((0, 1), z.dtype))
    dims = {np.shape(b.vertices)[-1] for b in bodies}
    if dims != {3}:
        raise ValueError(f"a world holds 3D bodies; got vertex dimensions {sorted(dims)}")
    K = max(np.shape(b.vertices)[0] for b in bodies)
    has_friction = {b.friction is not None for b in bodies}
    if len(has_friction) > 1:
        raise ValueError("body.friction: given for some bodies and not others; give every body one "
                         "(worlds.materials), or none for the law's μ")
    # round-shape fields: a body without one that another has gets zeros (absent), so that every
    # body of the world has the same pytree
    round_fields = {"radius": (), "cylinder": (2,), "ellipsoid": (3,)}
    present = [name for name in round_fields if any(getattr(b, name) is not None for b in bodies)]
    swept = any(b.vertex_radius is not None for b in bodies)  # a compound's per-vertex radii (zeros elsewhere)
    shaped = any(b.vertex_shape is not None for b in bodies)  # a compound's cylinder/ellipsoid parts (zeros elsewhere)

    def pad(b: Body) -> Body:
        k = np.shape(b.vertices)[0]
        v = jnp.concatenate([jnp.asarray(b.vertices), jnp.repeat(jnp.asarray(b.vertices)[:1], K - k, 0)])
        m = jnp.concatenate([jnp.asarray(b.vertex_mask), jnp.zeros(K - k, jnp.asarray(b.vertex_mask).dtype)])
        shape = {name: jnp.zeros(round_fields[name], jnp.result_type(b.mass)) if getattr(b, name) is None
                 else jnp.asarray(getattr(b, name)) for name in present}
        if swept:
            shape["vertex_radius"] = padded_vertex_radius(b, K)
        if shaped:
            x = jnp.zeros((k, 8), jnp.result_type(b.mass)) if b.vertex_shape is None else jnp.asarray(b.vertex_shape)
            shape["vertex_shape"] = jnp.concatenate([x, jnp.zeros((K - k, 8), x.dtype)])
        return b.replace(vertices=v, vertex_mask=m, parts=None, **shape)

    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[pad(b) for b in bodies])


def padded_vertex_radius(body: Body, K: int):
    """(K,) a body's ``vertex_radius`` padded with zeros to K vertices (zeros for a body of one shape)."""
    k = np.shape(body.vertices)[0]
    dtype = jnp.result_type(body.mass)
    if body.vertex_radius is None:
        return jnp.zeros((K,), dtype)
    return jnp.concatenate([jnp.asarray(body.vertex_radius), jnp.zeros((K - k,), jnp.asarray(body.vertex_radius).dtype)])


def compound_parts(body: Body, label: str) -> tuple:
    """A compound's parts as ``Scene.parts`` holds them: ``(kind, start, stop, topology)``, each
    hull part's topology from its own vertices (``collision.topology``, refused by name)."""
    out = []
    for k, (kind, start, stop) in enumerate(body.parts):
        topo = None
        if kind == "hull":
            try:
                topo = collision.topology(np.asarray(body.vertices)[start:stop])
            except ValueError as e:
                raise ValueError(f"{label}, part {k}: {e}") from None
        out.append((kind, int(start), int(stop), topo))
    return tuple(out)


def make_scene(bodies: Sequence[Body] | Body, pairs="all", exclude=(), ground: bool = True,
               pair_contacts: int = 4, margin: float = 0.002, ground_contacts: int | None = None, softness: float = 1e-2,
               max_pairs: int | None = None, joints: Joints | None = None, narrow_phase: str = "auto",
               names: Sequence | None = None, fixed=(), fast_hits: bool = False, planes: int = 0, contactless=(),
               no_ground=(), max_slots: int | None = None, constraints: str = "hard", integrator: str = "euler"):
    """``(scene, stacked_body)`` of a world of ``bodies`` (a sequence of ``Body``, or one ``Body``
    already stacked on a leading axis). pairs: "all" (every pair of bodies) or a list of (a, b);
    exclude: pairs never resolved (either order); joints: the world's ``Joints`` (the two bodies
    of a joint meet there, so their pair is excluded too). Each body's hull topology is computed here from
    its concrete vertices (``collision.topology``, which refuses degenerate hulls by name).
    max_pairs: the broad phase (per group of pairs), max_slots: across the groups; narrow_phase: its method; names: the bodies' names (``Scene``).
    ground_contacts: deprecated (``Model.max_contacts`` decides; ``Scene``). fixed: the bodies fixed to
    the world (indices, or one bool per body; ``Scene.fixed``): pairs of two fixed bodies are left
    out of the table (also from an explicit ``pairs`` list). planes: how many tilted planes the world
    has (``Scene.planes``; their values in ``Params.planes``, ``worlds.planes.make_planes``). contactless:
    the bodies that collide with nothing (``Scene.contactless``): their pairs are left out of the table.
    no_ground: the bodies that do not touch the ground (``Scene.no_ground``), indices or one bool per body.
    constraints: "hard" or "mujoco" (``Scene.constraints``); integrator: "euler" or "rk4" (``Scene.integrator``)."""
    if isinstance(bodies, Body) and bodies.vertex_radius is not None:
        raise ValueError("make_scene: these stacked bodies hold a compound (body.vertex_radius), whose parts "
                         "stacking drops; pass the bodies as a list (make_scene([table, box, ...]))")
    listed = None if isinstance(bodies, Body) else list(bodies)
    stacked = bodies if isinstance(bodies, Body) else stack_bodies(bodies)
    n = np.shape(stacked.vertices)[0]
    topologies = []
    names = None if names is None else tuple(None if m is None else str(m) for m in names)
    kinds = (tuple(shape_kind(jax.tree_util.tree_map(lambda x, i=i: x[i], stacked)) for i in range(n))
             if stacked.is_round else ("hull",) * n)
    parts = None
    if listed is not None and any(b.parts is not None for b in listed):
        lab = lambda i: f"body {names[i]!r} ({i})" if names is not None and i < len(names) and names[i] else f"body {i}"
        parts = tuple(None if b.parts is None else compound_parts(b, lab(i)) for i, b in enumerate(listed))
        kinds = tuple(COMPOUND if p is not None else k for p, k in zip(parts, kinds))
    for i in range(n):
        if kinds[i] != "hull":  # a round body has no hull topology (its pairs dispatch on its kind)
            topologies.append(None)
            continue
        try:
            topologies.append(collision.topology(np.asarray(stacked.vertices[i]), np.asarray(stacked.vertex_mask[i]) > 0))
        except ValueError as e:
            label = f"body {names[i]!r} ({i})" if names is not None and i < len(names) and names[i] else f"body {i}"
            raise ValueError(f"{label}: {e}") from None
    if isinstance(pairs, str):
        if pairs != "all":
            raise ValueError(f"pairs must be 'all' or a list of (a, b), got {pairs!r}")
        pairs = list(itertools.combinations(range(n), 2))
    fixed = check_fixed(fixed, n)
    drop = {tuple(sorted(p)) for p in exclude} | (set() if joints is None else joints.body_pairs())
    drop |= set(itertools.combinations(fixed, 2))
    contactless = check_fixed(contactless, n, "contactless")
    drop |= {p for p in itertools.combinations(range(n), 2) if set(p) & set(contactless)}
    table = tuple(sorted({tuple(sorted((int(a), int(b)))) for a, b in pairs} - drop))
    round_pairs = [(a, b) for a, b in table if {kinds[a], kinds[b]} - set(collision.PAIR_KINDS + (COMPOUND,))]
    if round_pairs:
        label = lambda i: (f"body {names[i]!r} ({i})" if names is not None and i < len(names) and names[i]
                           else f"body {i}") + f", a {kinds[i]}"
        a, b = round_pairs[0]
        first = label(a) if kinds[a] not in collision.PAIR_KINDS else label(b)
        hulls = [p for p in table if p not in round_pairs]
        listed = ", ".join(map(str, hulls[:6])) + (", …" if len(hulls) > 6 else "")
        raise ValueError(f"make_scene: {len(round_pairs)} of the pairs hold a sphere-swept hull ({first}, first): "
                         f"body–body contacts exist for {', '.join(collision.PAIR_KINDS)} only; a sphere-swept hull "
                         f"touches the ground only. Keep the pairs among the hulls: pairs=[{listed}] (pairs=[] for none), or "
                         "exclude the round bodies' pairs with exclude=")
    counts = tuple(int(c) for c in np.sum(np.asarray(stacked.vertex_mask) > 0, axis=-1))
    return Scene(topologies=tuple(topologies), pairs=table, ground=ground, pair_contacts=pair_contacts,
                 margin=margin, ground_contacts=ground_contacts, softness=softness,
                 max_pairs=max_pairs, joints=joints, vertex_counts=counts, narrow_phase=narrow_phase,
                 names=names, shapes=None if set(kinds) == {"hull"} else kinds, fixed=fixed, parts=parts, fast_hits=fast_hits,
                 planes=planes, contactless=contactless, no_ground=check_fixed(no_ground, n, "no_ground"),
                 max_slots=max_slots, constraints=constraints, integrator=integrator), stacked


def check_body(scene: Scene, body: Body, concrete: bool = True) -> None:
    """Refuse, by name, stacked bodies other than those ``scene`` was built from.

    Static (in any tracing context, inside ``jit``/``vmap``/``grad`` too): the number of bodies
    (``body.mass`` (N,), ``body.vertices`` (N, K, 3)) and the padded vertex count K each body's hull
    topology indexes. Concrete bodies only (eager calls): each body's number of valid vertices
    (``Scene.vertex_counts``), and for each body in a pair its hull topology: the scene's faces must
    be faces of the body's hull (every valid vertex on or inside each face's plane, the face's own
    vertices on it, within 1e-4 of the body's size) and its valid vertices the scene's, so that a
    box's scene refuses a prism of the same vertex count in another vertex order. Traced vertices
    cannot be compared: under ``jit`` only the static counts are checked."""
    N = scene.num_bodies
    shape = np.shape(body.vertices)
    if np.shape(body.mass) != (N,) or len(shape) != 3 or shape[0] != N:
        raise ValueError(f"params.body: the scene was built for {N} bodies, got body.mass of shape "
                         f"{np.shape(body.mass)} and body.vertices of shape {shape} (stack {N} bodies, "
                         "as make_scene returns them)")
    K = shape[1]
    for i, topo in enumerate(scene.topologies):
        if topo is not None and topo.num_vertices != K:
            raise ValueError(f"params.body.vertices: {scene.body_name(i)}'s hull was built from {topo.num_vertices} (padded) "
                             f"vertices, got {K}; use the bodies the scene was made from (make_scene)")
    if scene.shapes is not None and not body.is_round and any(k != "hull" for k in scene.shapes):
        i = next(i for i, k in enumerate(scene.shapes) if k != "hull")
        raise ValueError(f"params.body: the scene was built with {scene.body_name(i)} a {scene.shapes[i]}, but these bodies "
                         "have no round-shape fields (radius, cylinder, ellipsoid); use the bodies the scene was made from")
    if not concrete:
        return
    if body.is_round:
        for i in range(N):
            kind = shape_kind(jax.tree_util.tree_map(lambda x: x[i], body))
            want = "hull" if scene.shapes is None else scene.shapes[i]
            if want == COMPOUND:  # a stacked compound reads as a hull or a sphere-swept hull: its radii say
                kind = COMPOUND if body.vertex_radius is not None else kind
            if kind != want:
                raise ValueError(f"params.body: {scene.body_name(i)} is a {kind}, but the scene was built for a {want}; "
                                 "use the bodies the scene was made from (make_scene)")
    mask = np.asarray(body.vertex_mask) > 0
    counts = mask.sum(axis=-1)
    verts = np.asarray(body.vertices, dtype=np.float64)
    for i in range(N):
        if scene.vertex_counts is not None and counts[i] != scene.vertex_counts[i]:
            raise ValueError(f"params.body.vertices: {scene.body_name(i)} has {counts[i]} vertices, but the scene was built for "
                             f"a body of {scene.vertex_counts[i]}; use the bodies the scene was made from (make_scene)")
        topo = scene.topologies[i]
        if topo is None:
            continue
        if tuple(np.flatnonzero(mask[i])) != tuple(topo.vertices):
            raise ValueError(f"params.body.vertices: {scene.body_name(i)}'s valid vertices (vertex_mask) are not those its hull "
                             "topology in the scene was built from; use the bodies the scene was made from (make_scene)")
        pts = verts[i][mask[i]]
        tol = 1e-4 * max(float(np.max(np.linalg.norm(pts - pts.mean(0), axis=1))), 1e-12)
        for face in topo.faces:
            f = verts[i][list(face)]
            n = np.cross(f - f.mean(0), np.roll(f, -1, axis=0) - f.mean(0)).sum(0)  # Newell: outward (CCW)
            n = n / max(np.linalg.norm(n), 1e-300)
            off = max(float(np.max(pts @ n - f.mean(0) @ n)), float(np.max(np.abs(f @ n - f.mean(0) @ n))))
            if off > tol:
                raise ValueError(f"params.body.vertices: {scene.body_name(i)} is not the hull the scene was built from (its face "
                                 f"{tuple(face)} is not a face of these vertices, off by {off:.3g} m); "
                                 "use the bodies the scene was made from (make_scene), or make_scene of these")


__all__ = ["COMPOUND", "Scene", "check_body", "check_fixed", "check_plane_count", "compound_parts", "make_scene", "padded_vertex_radius",
           "stack_bodies"]
