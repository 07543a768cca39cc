"""Revolute joints of a world, eliminated exactly before the contact problem.

A joint links a child body to a parent body (or to the world: parent −1). ``Joints`` is its
static part, on ``Scene.joints`` (which bodies, Baumgarte β); ``JointParams`` the traced part
(anchors and axes, differentiable), carried by ``JointedParams`` (a ``Params`` with ``joints``).

A revolute joint is 5 velocity constraints: the two anchor points move together (3 rows, world
x, y, z) and the relative angular velocity has no component across the axis (2 rows, the
tangents of the parent's world axis). Their target is −(β/h)·error (anchor separation; axis
misalignment a_p × a_c), Baumgarte-style. The step (``pipeline``) eliminates them by a Schur
complement (``motion``): v_c = v¹ + M⁻¹J_bᵀλ(v¹) satisfies the joints and
W = M⁻¹ − M⁻¹J_bᵀ(J_bM⁻¹J_bᵀ)⁻¹J_bM⁻¹ is the jointed system's mobility; the one contact problem
then acts through W (dense over the 6N velocities) from v_c, v⁺ = v_c + W p, and the joint
impulse λ is recovered from p. The same solution as the LCP with the joint rows as bilateral
rows, without projected Gauss–Seidel iterating on stiff joint rows. An articulated chain
(``jaxcontact.chains``) is a world with a joint per link.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import geometry
from ..contact import block_diag
from .actuation import broken_actuators, check_actuators, joint_forces
from .tendons import Tendons, broken as broken_tendons, check as check_tendons, lengths as tendon_lengths
from .tendons import passive as tendon_passive
from ..rotations import quat_conj, quat_mul, quat_to_mat
from ..types import Params, State

ROWS_PER_JOINT = 5
ANCHOR_TOL = 1e-5  # m: joint anchors of an initial state must coincide to this distance
AXIS_TOL = 1e-4  # rad: joint axes of an initial state must be aligned to this angle
# A continued start (a state a rollout reached: ``start="continued"``) may carry the drift the
# Baumgarte correction leaves, up to the error it closes at these speeds (``drift_tolerance``)
CONTINUED_SPEED = 2.0  # m/s: anchors
CONTINUED_TURN = 5.0  # rad/s: axes
STARTS = ("initial", "continued")


KINDS = ("hinge", "slide")  # a joint's kind (``Joints.kinds``)


@dataclasses.dataclass(frozen=True)
class Joints:
    """The joints of a world (static, hashable): joint j links body ``child[j]`` to body
    ``parent[j]`` (−1: the world, the parent anchor and axis then in world coordinates).
    baumgarte: β of the drift correction (target velocity −β/h · error), in [0, 1].
    kinds: one of ``KINDS`` per joint (empty: every joint a hinge). A hinge turns about its axis
    through the anchor; a slide (prismatic joint) moves the child along the axis without turning
    it (its orientation in the parent's frame stays ``JointParams.reference``).
    actuated: the joint each actuator drives (an index J + t: fixed tendon t of ``tendons``, a
    ``tendons.Tendons``), force_limited one bool per actuator; limited: one bool per joint."""

    parent: tuple
    child: tuple
    baumgarte: float = 0.2
    kinds: tuple = ()
    limited: tuple = ()
    actuated: tuple = ()
    force_limited: tuple = ()
    tendons: Any = None  # a tendons.Tendons: the fixed tendons over these joints (None: none)

    def __post_init__(self):
        object.__setattr__(self, "parent", tuple(self.parent))
        object.__setattr__(self, "child", tuple(self.child))
        object.__setattr__(self, "kinds", tuple(self.kinds))
        if self.kinds and (len(self.kinds) != len(self.child) or any(k not in KINDS for k in self.kinds)):
            raise ValueError(f"Joints.kinds: one of {KINDS} per joint ({len(self.child)}), got {self.kinds!r}")
        if self.kinds and all(k == "hinge" for k in self.kinds):
            object.__setattr__(self, "kinds", ())  # every joint a hinge: the default's programs
        object.__setattr__(self, "limited", tuple(bool(x) for x in self.limited))
        if self.limited and len(self.limited) != len(self.child):
            raise ValueError(f"Joints.limited: one bool per joint ({len(self.child)}), got {len(self.limited)}")
        if self.limited and not any(self.limited):
            object.__setattr__(self, "limited", ())
        object.__setattr__(self, "actuated", tuple(int(j) for j in self.actuated))
        object.__setattr__(self, "force_limited", tuple(bool(x) for x in self.force_limited)
                           if self.force_limited else (False,) * len(self.actuated))
        driven = len(self.child) + (self.tendons.num_tendons if isinstance(self.tendons, Tendons) else 0)
        if any(not 0 <= j < driven for j in self.actuated) or len(self.force_limited) != len(self.actuated):
            raise ValueError(f"Joints.actuated: a joint index (0 … {len(self.child) - 1}; J + t: tendon t) per actuator, "
                             f"with one force_limited bool each; got {self.actuated!r}, {self.force_limited!r}")
        if len(self.parent) != len(self.child) or not self.child:
            raise ValueError(f"Joints: parent and child need one entry per joint (at least one joint), got "
                             f"{len(self.parent)} and {len(self.child)}")
        for j, (p, c) in enumerate(zip(self.parent, self.child)):
            for name, i in (("parent", p), ("child", c)):
                if not isinstance(i, numbers.Integral) or isinstance(i, bool):
                    raise ValueError(f"Joints.{name}[{j}] must be a body index (int), got {i!r}")
            if c < 0 or p < -1 or p == c:
                raise ValueError(f"Joints: joint {j} links body {c} to {p}; the child must be a body (>= 0) and the "
                                 "parent another body or −1 (the world)")
        if len(set(zip(self.parent, self.child))) != len(self.child):
            raise ValueError("Joints: a joint is listed twice")
        if self.tendons is not None and (not isinstance(self.tendons, Tendons) or
                                         max(max(js) for js in self.tendons.joints) >= len(self.child)):
            raise ValueError(f"Joints.tendons: a tendons.Tendons over these {len(self.child)} joints, got {self.tendons!r}")
        if not (isinstance(self.baumgarte, numbers.Real) and 0 <= self.baumgarte <= 1):
            raise ValueError(f"Joints.baumgarte must lie in [0, 1], got {self.baumgarte!r}")

    @property
    def num_joints(self) -> int:
        return len(self.child)

    def kind(self, j: int) -> str:
        """Joint j's kind ("hinge" or "slide")."""
        return self.kinds[j] if self.kinds else "hinge"

    @property
    def has_slides(self) -> bool:
        return "slide" in self.kinds

    @property
    def limited_joints(self) -> tuple:
        """The indices of the joints with a range limit (``JointParams.range``)."""
        return tuple(j for j, x in enumerate(self.limited) if x)

    def jointed(self, num_bodies: int) -> np.ndarray:
        """(N,) static mask of the bodies that belong to a joint."""
        mask = np.zeros(num_bodies, bool)
        mask[[c for c in self.child]] = True
        mask[[p for p in self.parent if p >= 0]] = True
        return mask

    def body_pairs(self):
        """The (a, b), a < b, of the joints between two bodies (the pairs they exclude from contact)."""
        return {tuple(sorted((p, c))) for p, c in zip(self.parent, self.child) if p >= 0}


PASSIVE = ("damping", "stiffness", "armature")  # JointParams' passive fields: (J,) each, >= 0


@struct.dataclass
class JointParams:
    """Differentiable joint geometry, (J, 3) each: ``anchor_parent``/``axis_parent`` in the
    parent's body frame (world coordinates for a joint to the world), ``anchor_child``/
    ``axis_child`` in the child's body frame.

    Passive forces (optional, None: none; MuJoCo's ``damping``, ``stiffness``/``springref`` and
    ``armature`` of a hinge, ``passive``): ``damping`` (J,) N·m·s/rad, treated implicitly as
    MuJoCo's Euler integrator does; ``stiffness`` (J,) N·m/rad, a spring −k(q − ``springref``)
    taken explicitly; ``armature`` (J,) kg·m², a rotor inertia on the joint's rate. ``reference``
    (J, 4): the child's orientation in the parent's frame (the world's for a joint to the world)
    where the joint's angle q is 0 (``coordinates``); needed with a stiffness and by a slide.
    ``range`` (J, 2): the lower and upper limit of each joint's coordinate q (rad; m for a slide),
    read for the joints ``Joints.limited`` marks (``limit_rows``). ``actuators``: an
    ``actuation.ActuatorParams`` of the actuators ``Joints.actuated`` places (None: none).
    ``frictionloss`` (J,) N·m (N for a slide; MuJoCo's ``frictionloss``): a dry friction on the
    joint's rate, |τ| ≤ frictionloss, as a bounded row of the contact problem (``loss_rows``; None:
    none). ``tendons``: a ``tendons.TendonParams`` of the fixed tendons ``Joints.tendons`` names."""

    anchor_parent: jnp.ndarray
    anchor_child: jnp.ndarray
    axis_parent: jnp.ndarray
    axis_child: jnp.ndarray
    damping: Any = None
    stiffness: Any = None
    springref: Any = None
    armature: Any = None
    reference: Any = None
    range: Any = None
    actuators: Any = None
    frictionloss: Any = None
    tendons: Any = None

    def has_passive(self) -> bool:
        """Whether any passive force (a joint's or a tendon's) or an actuator is set (static: a field is
        an array or None)."""
        return (any(getattr(self, f) is not None for f in PASSIVE) or self.actuators is not None
                or (self.tendons is not None and self.tendons.has_passive()))

    def has_checks(self) -> bool:
        """Whether any field the step's traced check reads (``broken_passive``) is set: a passive
        force, an actuator, a friction loss or tendons."""
        return self.has_passive() or self.frictionloss is not None or self.tendons is not None


@struct.dataclass
class JointedParams(Params):
    """A world's ``Params`` with its joints' ``JointParams`` (``Scene.joints`` says which bodies)."""

    joints: Any = None


def frames(anchor_parent, anchor_child, axis_parent, axis_child, child: State, parent: State | None):
    """World anchor points and unit axes of one joint: (x_parent, x_child, a_parent, a_child);
    ``parent`` None: the world."""
    Rc = quat_to_mat(child.quat)
    xc = child.pos + Rc @ anchor_child
    ac = Rc @ axis_child
    if parent is None:
        xp, ap = anchor_parent, axis_parent
    else:
        Rp = quat_to_mat(parent.quat)
        xp = parent.pos + Rp @ anchor_parent
        ap = Rp @ axis_parent
    nrm = lambda a: a / jnp.linalg.norm(a)
    return xp, xc, nrm(ap), nrm(ac)


def rows(anchor_parent, anchor_child, axis_parent, axis_child, child: State, parent: State | None):
    """Constraint rows of one joint: (J_child (5, 6), J_parent (5, 6), error (5,)): anchor
    velocity along world x, y, z, then relative angular velocity along the two tangents u1, u2 of
    the parent's world axis. The constraint is J_child v_child − J_parent v_parent = −(β/h)·error
    (J_parent zero for a joint to the world)."""
    xp, xc, ap, ac = frames(anchor_parent, anchor_child, axis_parent, axis_child, child, parent)
    U = geometry.tangent_basis(ap)  # (2, 3), orthogonal to the axis
    eye = jnp.eye(3, dtype=xp.dtype)
    zero = jnp.zeros((2, 3), xp.dtype)

    def on(s, r_body):
        R = quat_to_mat(s.quat)
        lin = geometry.point_jacobian(s, r_body, eye)  # (3, 6)
        ang = jnp.concatenate([zero, U @ R], axis=1)  # ω_world = R ω_body
        return jnp.concatenate([lin, ang], axis=0)

    Jc = on(child, anchor_child)
    Jp = jnp.zeros_like(Jc) if parent is None else on(parent, anchor_parent)
    err = jnp.concatenate([xc - xp, U @ jnp.cross(ap, ac)])
    return Jc, Jp, err


def slide_rows(anchor_parent, anchor_child, axis_parent, axis_child, reference, child: State, parent: State | None):
    """Constraint rows of one slide joint, as ``rows``: the child's anchor moves relative to the
    parent's material point under it only along the parent's world axis a (2 rows: the tangents
    u1, u2 of a), and the relative angular velocity is zero (3 rows, world x, y, z). Errors: the
    anchors' separation across a, and the rotation vector (world) taking ``reference`` (the child's
    orientation in the parent's frame) to the child's orientation now."""
    xp, xc, ap, _ = frames(anchor_parent, anchor_child, axis_parent, axis_child, child, parent)
    U = geometry.tangent_basis(ap)  # (2, 3)
    eye = jnp.eye(3, dtype=xp.dtype)
    zero = jnp.zeros((3, 3), xp.dtype)

    def on(s, r_body):
        lin = geometry.point_jacobian(s, r_body, U)  # (2, 6)
        ang = jnp.concatenate([zero, eye @ quat_to_mat(s.quat)], axis=1)  # ω_world = R ω_body
        return jnp.concatenate([lin, ang], axis=0)

    Jc = on(child, anchor_child)
    if parent is None:
        Jp = jnp.zeros_like(Jc)
        rel, Rp = child.quat, eye
    else:  # the parent's material point at the child's anchor
        Rp = quat_to_mat(parent.quat)
        Jp = on(parent, Rp.T @ (xc - parent.pos))
        rel = quat_mul(quat_conj(parent.quat), child.quat)
    d = quat_mul(rel, quat_conj(reference))  # the rotation since the reference, parent's frame
    d = jnp.where(d[0] < 0, -d, d)
    err = jnp.concatenate([U @ (xc - xp), Rp @ (2.0 * d[1:])])
    return Jc, Jp, err


def joint_rows(joints: Joints, jp: JointParams, j: int, child: State, parent: State | None):
    """Joint j's rows by its kind (``rows`` or ``slide_rows``)."""
    args = (jp.anchor_parent[j], jp.anchor_child[j], jp.axis_parent[j], jp.axis_child[j])
    if joints.kind(j) == "slide":
        return slide_rows(*args, jp.reference[j], child, parent)
    return rows(*args, child, parent)


def limit_rows(joints: Joints, jp: JointParams, state: State):
    """The range limits as one-sided rows of the contact problem, two per limited joint (its lower
    then its upper limit), each a contact whose normal velocity is ±q̇ (the joint's rate row G on its
    two bodies, ``rate_rows``) and whose distance is q − lower (upper − q), with no tangent rows:
    (rows (L, 2, 3, 6), phi (L,), rate (L,) the normal velocity now, bodies (L, 2): child and parent,
    −1 the world). The problem then keeps q within the range as a contact keeps bodies apart (an
    impulse ≥ 0, speculative, the law's restitution: none by default)."""
    lim = joints.limited_joints
    dtype = state.pos.dtype
    G = rate_rows(joints, state, jp)
    q, qd = coordinates(joints, jp, state)
    rng = jnp.asarray(jp.range, dtype)
    rows, phi, rate, bodies = [], [], [], []
    for j in lim:
        c, p = joints.child[j], joints.parent[j]
        gc = G[j, 6 * c:6 * c + 6]
        gp = jnp.zeros_like(gc) if p < 0 else G[j, 6 * p:6 * p + 6]
        for sign, dist in ((1.0, q[j] - rng[j, 0]), (-1.0, rng[j, 1] - q[j])):
            r = jnp.zeros((2, 3, 6), dtype).at[0, 0].set(sign * gc).at[1, 0].set(sign * gp)
            rows.append(r)
            phi.append(dist)
            rate.append(sign * qd[j])
            bodies.append((c, p))
    return jnp.stack(rows), jnp.stack(phi), jnp.stack(rate), jnp.asarray(bodies, jnp.int32)


def loss_rows(joints: Joints, jp: JointParams, state: State):
    """Every joint's friction loss as a contact of the contact problem whose normal impulse is held
    at 1 (``BodyProblem.fixed_normal``) and whose first tangent row is the joint's rate row G on its
    two bodies (``rate_rows``), so that its friction μ = frictionloss·h bounds the joint's impulse
    |z| ≤ frictionloss·h, as MuJoCo's friction loss bounds its force (|τ| ≤ frictionloss): (rows
    (J, 2, 3, 6), bodies (J, 2): child and parent, −1 the world)."""
    G = rate_rows(joints, state, jp)
    return _rate_contacts(G, joints.child, joints.parent, state.pos.dtype)


def _rate_contacts(G, child, parent, dtype):
    """(rows (K, 2, 3, 6), bodies (K, 2)): contacts whose first tangent row is G's row k on its two
    bodies ``child[k]``, ``parent[k]`` (−1: the world); the normal and second tangent rows zero."""
    rows = []
    for k, (c, p) in enumerate(zip(child, parent)):
        r = jnp.zeros((2, 3, 6), dtype).at[0, 1].set(G[k, 6 * c:6 * c + 6])
        rows.append(r if p < 0 else r.at[1, 1].set(G[k, 6 * p:6 * p + 6]))
    return jnp.stack(rows), jnp.asarray(list(zip(child, parent)), jnp.int32)


def anchor_rows(joints: Joints) -> np.ndarray:
    """(J, ROWS_PER_JOINT) static mask of each joint's rows whose error is the anchors' separation
    (a hinge's first 3, a slide's first 2: across its axis)."""
    mask = np.zeros((joints.num_joints, ROWS_PER_JOINT), bool)
    for j in range(joints.num_joints):
        mask[j, :2 if joints.kind(j) == "slide" else 3] = True
    return mask


def system(joints: Joints, jp: JointParams, state: State):
    """Every joint's rows over the 6N velocities of the world's N bodies (``state`` (N, …)):
    (J (5·J, 6N), error (5·J,))."""
    N = state.pos.shape[0]
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    J = jnp.zeros((ROWS_PER_JOINT * joints.num_joints, 6 * N), jp.anchor_child.dtype)
    errs = []
    for r, (p, c) in enumerate(zip(joints.parent, joints.child)):
        Jc, Jp, err = joint_rows(joints, jp, r, body(c), None if p < 0 else body(p))
        rs = slice(ROWS_PER_JOINT * r, ROWS_PER_JOINT * (r + 1))
        J = J.at[rs, 6 * c:6 * c + 6].set(Jc)
        if p >= 0:
            J = J.at[rs, 6 * p:6 * p + 6].add(-Jp)
        errs.append(err)
    return J, jnp.concatenate(errs)


def coordinates(joints: Joints, jp: JointParams, state: State):
    """Every joint's coordinate q and rate q̇, (J,) each. A hinge: q̇ = a·(ω_child − ω_parent) along
    the parent's world axis a (MuJoCo's hinge rate); q the rotation about a that takes
    ``jp.reference`` (the child's orientation in the parent's frame at q = 0) to the child's
    orientation now, in (−π, π] (MuJoCo's hinge angle is unbounded: the two agree within a half
    turn of the reference). A slide: q = a·(x_child − x_parent), the child's anchor's displacement
    along a from the parent's anchor (MuJoCo's slide qpos when the anchors coincide at qpos 0), and
    q̇ its rate (``rate_rows``)."""
    N = state.pos.shape[0]
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    qs, rates = [], []
    G = rate_rows(joints, state, jp) if joints.has_slides else None
    v = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1) if joints.has_slides else None
    for r, (p, c) in enumerate(zip(joints.parent, joints.child)):
        child = body(c)
        parent = None if p < 0 else body(p)
        xp, xc, ap, _ = frames(jp.anchor_parent[r], jp.anchor_child[r], jp.axis_parent[r], jp.axis_child[r], child, parent)
        if joints.kind(r) == "slide":
            qs.append(jnp.dot(ap, xc - xp))
            rates.append(G[r] @ v)
            continue
        w_c = quat_to_mat(child.quat) @ child.omega
        w_p = jnp.zeros_like(w_c) if parent is None else quat_to_mat(parent.quat) @ parent.omega
        rates.append(jnp.dot(ap, w_c - w_p))
        if jp.reference is None:
            qs.append(jnp.zeros((), w_c.dtype))
            continue
        rel = child.quat if parent is None else quat_mul(quat_conj(parent.quat), child.quat)
        d = quat_mul(rel, quat_conj(jp.reference[r]))  # the rotation since the reference, parent's frame
        a_local = jp.axis_parent[r] / jnp.linalg.norm(jp.axis_parent[r])
        qs.append(2.0 * jnp.arctan2(jnp.dot(d[1:], a_local), d[0]))
    del N
    return jnp.stack(qs), jnp.stack(rates)


def rate_rows(joints: Joints, state: State, jp: JointParams):
    """(J, 6N) every joint's rate row G (q̇ = G v over the bodies' generalised velocities): a
    hinge's a·(ω_child − ω_parent), a slide's a·(velocity of the child's anchor − velocity of the
    parent's material point there), a the parent's world axis."""
    N = state.pos.shape[0]
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    G = jnp.zeros((joints.num_joints, 6 * N), state.pos.dtype)
    for r, (p, c) in enumerate(zip(joints.parent, joints.child)):
        child = body(c)
        parent = None if p < 0 else body(p)
        _, xc, ap, _ = frames(jp.anchor_parent[r], jp.anchor_child[r], jp.axis_parent[r], jp.axis_child[r], child, parent)
        if joints.kind(r) == "slide":
            G = G.at[r, 6 * c:6 * c + 6].set(geometry.point_jacobian(child, jp.anchor_child[r], ap[None])[0])
            if p >= 0:
                r_p = quat_to_mat(parent.quat).T @ (xc - parent.pos)
                G = G.at[r, 6 * p:6 * p + 6].add(-geometry.point_jacobian(parent, r_p, ap[None])[0])
            continue
        G = G.at[r, 6 * c + 3:6 * c + 6].set(ap @ quat_to_mat(child.quat))  # ω_world = R ω_body
        if p >= 0:
            G = G.at[r, 6 * p + 3:6 * p + 6].add(-(ap @ quat_to_mat(parent.quat)))
    return G


def rate_drift(joints: Joints, jp: JointParams, state: State):
    """(J,) Ġ v: how each joint's rate q̇ = G v changes as the bodies move at their velocities v with
    v held (the rate rows' own change: a slide's axis turning with its parent, a hinge's axis with
    its parent's spin), by forward differentiation along the motion (ẋ = v, q̇uat = ½ quat ⊗ ω)."""
    v = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1)

    def rate(pos, quat):
        return rate_rows(joints, state.replace(pos=pos, quat=quat), jp) @ v

    dquat = 0.5 * jax.vmap(lambda q, w: quat_mul(q, jnp.concatenate([jnp.zeros((1,), w.dtype), w])))(state.quat, state.omega)
    return jax.jvp(rate, (state.pos, state.quat), (state.vel, dquat))[1]


def passive_motion(model, joints: Joints, jp: JointParams, state: State, v1, Minv):
    """The free velocity and mobility with the hinges' passive forces (MuJoCo's Euler step:
    damping implicit, springs explicit, armature in the mass): with G the rate rows, A, B, K the
    armature, damping and stiffness (diagonal) and v⁰ the step's start velocity, the step solves
    (M + GᵀAG + h GᵀBG)(v − v⁰) = h f − h GᵀBG v⁰ − h GᵀK(q − q_ref) − h GᵀA Ġv⁰ (the armature's force
    A q̈ with q̈ = G v̇ + Ġ v: ``rate_drift``); with v¹ = v⁰ + h M⁻¹f that is
    v = v¹ − M'⁻¹Gᵀ[A G(v¹ − v⁰) + h A Ġv⁰ + h B G v¹ + h K(q − q_ref)], M'⁻¹ = M⁻¹ − M⁻¹Gᵀ(I + C G M⁻¹Gᵀ)⁻¹C G M⁻¹
    (Woodbury, C = A + hB). Returns (v (6N,), M'⁻¹ (6N, 6N)); the joint rows then act through M'⁻¹."""
    h = model.dt
    dtype = v1.dtype
    zeros = jnp.zeros((joints.num_joints,), dtype)
    arm = zeros if jp.armature is None else jnp.asarray(jp.armature, dtype)
    damp = zeros if jp.damping is None else jnp.asarray(jp.damping, dtype)
    G = rate_rows(joints, state, jp)
    v0 = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1)
    v1 = v1.reshape(-1)
    pushed = zeros
    spring = jp.tendons is not None and jp.tendons.stiffness is not None
    if jp.actuators is not None or jp.stiffness is not None or spring:  # the coordinates, once, for all
        q, qd = coordinates(joints, jp, state)
    J, T = joints.num_joints, 0 if joints.tendons is None else joints.tendons.num_tendons
    t_pushed = t_extra = None
    if jp.actuators is not None:  # the actuators: explicit forces, their velocity bias as implicit damping
        if T:  # an actuator J + t drives tendon t, on its length (tendons.lengths)
            L, Ld = tendon_lengths(joints.tendons, jp.tendons, q, qd)
            q_a, qd_a = jnp.concatenate([q, L]), jnp.concatenate([qd, Ld])
        pushed, extra = joint_forces(joints.actuated, jp.actuators, q_a if T else q, qd_a if T else qd, J + T,
                                     joints.force_limited)
        pushed, extra, t_pushed, t_extra = pushed[:J], extra[:J], pushed[J:], extra[J:]
        damp = damp + extra
    C = arm + h * damp
    MG = Minv @ G.T  # (6N, J)
    S = jnp.eye(joints.num_joints, dtype=dtype) + C[:, None] * (G @ MG)
    Minv_p = Minv - MG @ jnp.linalg.solve(S, C[:, None] * MG.T)
    force = arm * (G @ (v1 - v0)) + h * damp * (G @ v1) - h * pushed
    if jp.armature is not None:  # the rotor's inertia force is a·q̈, q̈ = G v̇ + Ġ v: its Ġ v part
        force = force + h * arm * rate_drift(joints, jp, state)
    if jp.stiffness is not None:
        ref = zeros if jp.springref is None else jnp.asarray(jp.springref, dtype)
        force = force + h * jnp.asarray(jp.stiffness, dtype) * (q - ref)
    push = G.T @ force
    if jp.tendons is not None and (jp.tendons.has_passive() or T and jp.actuators is not None):
        # the tendons' rows join the update (Woodbury again), with their actuators' forces and implicit damping
        Gt, ct, ft = tendon_passive(joints.tendons, jp.tendons, G, q if spring else None, v1, h)
        if t_pushed is not None:
            ct, ft = ct + h * t_extra, ft + h * t_extra * (Gt @ v1) - h * t_pushed
        MG = Minv_p @ Gt.T
        S = jnp.eye(Gt.shape[0], dtype=dtype) + ct[:, None] * (Gt @ MG)
        Minv_p = Minv_p - MG @ jnp.linalg.solve(S, ct[:, None] * MG.T)
        push = push + Gt.T @ ft
    v = v1 - Minv_p @ push
    return v, 0.5 * (Minv_p + Minv_p.T)


def constrained_motion(Minv, Jb, target, v1):
    """Velocity after the joint constraints alone and the constrained mobility: (v_c, W, Cholesky
    factor of J M⁻¹Jᵀ as ``cho_solve`` takes it), v_c = v¹ + M⁻¹Jᵀλ with J v_c = ``target``, W = M⁻¹ − M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹JM⁻¹
    (the map from an external impulse to the jointed system's velocity change: the
    maximal-coordinate form of the reduced mass matrix's inverse).

    W is formed as a Gram matrix, F Fᵀ with F = R (I − Q Qᵀ), where M⁻¹ = R Rᵀ (Cholesky) and Q
    is an orthonormal basis of Rᵀ Jᵀ (QR): W is then positive semidefinite to round-off at the
    scale of M⁻¹. The Schur complement written out, M⁻¹ − M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹JM⁻¹, is the same
    matrix in exact arithmetic, but in float32 the difference of two large terms left W with
    eigenvalues down to −6·10⁻⁶ of its largest, and the contact LCP on such a W diverged (a
    3-link chain's impulse reached 10⁹ N·s in one step; docs/chains.md). For the same reason v_c
    and the factor come from the QR (Rᵀ Jᵀ = Q T, so J M⁻¹ Jᵀ = Tᵀ T), not from forming
    J M⁻¹ Jᵀ, which squares the condition number."""
    R = jnp.linalg.cholesky(Minv)
    Q, T = jnp.linalg.qr(R.T @ Jb.T)  # Rᵀ Jᵀ = Q T, so J M⁻¹ Jᵀ = Tᵀ T (T: its Cholesky factor, up to signs)
    fac = (T, False)
    # v_c = v¹ + M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹(target − J v¹) = v¹ + R Q T⁻ᵀ(target − J v¹), without forming JM⁻¹Jᵀ
    vc = v1 + R @ (Q @ jax.scipy.linalg.solve_triangular(T, target - Jb @ v1, trans="T", lower=False))
    F = R - (R @ Q) @ Q.T
    W = F @ F.T
    return vc, 0.5 * (W + W.T), fac


@dataclasses.dataclass(frozen=True)
class Motion:
    """The bodies' motion before contact (a step's stage, not a pytree). velocity: (N, 6) the
    velocity the contact problem starts from (v¹, or v_c with joints); mobility: (N, 6, 6) every
    body's M⁻¹ (free bodies: W block-diagonal) or (6N, 6N) the jointed W; error: (5·J,) the joints'
    drift before the step."""

    velocity: Any
    mobility: Any
    error: Any
    v1: Any = None
    minv: Any = None
    jac: Any = None
    target: Any = None
    factor: Any = None
    anchors: Any = None  # (J, 5) static mask of the anchor rows (``anchor_rows``) where a joint is a slide

    def after(self, p):
        """(N, 6) velocity after the contact impulse p (N, 6): v + W p."""
        if self.factor is None:  # free bodies: every body's own M⁻¹
            return self.velocity + jnp.einsum("nij,nj->ni", self.mobility, p)
        return (self.velocity.reshape(-1) + self.mobility @ p.reshape(-1)).reshape(p.shape)

    def joint_impulse(self, p):
        """(5·J,) the joint impulse λ with the contact impulse p (N, 6): J_b v⁺ = target with
        v⁺ = v¹ + M⁻¹(J_bᵀλ + p)."""
        if self.factor is None:
            return jnp.zeros((0,), p.dtype)
        return jax.scipy.linalg.cho_solve(self.factor, self.target - self.jac @ (self.v1 + self.minv @ p.reshape(-1)))

    def joint_error(self):
        """() the largest anchor separation of a joint before the step (m; 0 without joints)."""
        if self.factor is None:
            return jnp.zeros((), self.velocity.dtype)
        err = self.error.reshape(-1, ROWS_PER_JOINT)
        if self.anchors is not None:
            err = jnp.where(jnp.asarray(self.anchors), err, 0.0)
        return jnp.max(jnp.linalg.norm(err[:, :3], axis=1))


def motion(model, scene, params: Params, state: State, v1, Minv) -> Motion:
    """The step's stage between the free velocities v¹ (N, 6) and the contact problem: free bodies
    start from v¹ with their own M⁻¹ (N, 6, 6); a world with ``scene.joints`` from v_c with the
    jointed W (``constrained_motion``)."""
    joints = scene.joints
    if joints is None:
        return Motion(velocity=v1, mobility=Minv, error=jnp.zeros((0,), v1.dtype))
    if not isinstance(getattr(params, "joints", None), JointParams):
        raise ValueError(f"params: a scene with joints needs JointedParams(..., joints=JointParams(...)), got "
                         f"{type(params).__name__} without joint parameters")
    N = v1.shape[0]
    M = block_diag(Minv)
    v = v1.reshape(-1)
    if params.joints.has_passive():  # damping, springs, armature: the free motion and mobility change
        v, M = passive_motion(model, joints, params.joints, state, v1, M)
    Jb, err = system(joints, params.joints, state)
    target = -(joints.baumgarte / model.dt) * err
    vc, W, fac = constrained_motion(M, Jb, target, v)
    return Motion(velocity=vc.reshape(N, 6), mobility=W, error=err, v1=v, minv=M, jac=Jb,
                  target=target, factor=fac, anchors=anchor_rows(joints) if joints.has_slides else None)


def check_start(start) -> str:
    """``start`` of a rollout or step: "initial" (a state a user wrote: every joint's anchors within
    ``ANCHOR_TOL``, axes within ``AXIS_TOL``) or "continued" (a state a rollout reached: within the
    stabilisation's drift, ``drift_tolerance``); refused by name otherwise."""
    if not isinstance(start, str) or start not in STARTS:
        raise ValueError(f"start must be 'initial' (a state you wrote: joints consistent to {ANCHOR_TOL} m) or "
                         f"'continued' (a state a rollout reached, e.g. the last of a chunk), got {start!r}")
    return start


def drift_tolerance(baumgarte: float, dt: float) -> float:
    """The anchor separation (m) a continued start may carry: the error the Baumgarte correction
    (target velocity −(β/h)·error) closes at ``CONTINUED_SPEED``, h·2 m/s/β (2 cm at 2 ms, β 0.2;
    ``inf`` for β = 0, which corrects nothing). A rollout's own drift stays below it: each step the
    velocity-level rows miss the anchors' second-order motion, (h²/2)·c with c the difference of the
    two anchors' centripetal accelerations, and the correction removes β of the error, so
    e ≤ h²·max c/(2β), under h·2 m/s/β while c < 2·(2 m/s)/h (2000 m/s² at 2 ms: a 0.1 m lever at
    140 rad/s). Measured on swinging chains in docs/chains.md (``benchmarks.joint_drift``: a 7-link
    chain whipping at c = 500 m/s² drifts 3.6 mm)."""
    return float("inf") if baumgarte <= 0 else float(dt) * CONTINUED_SPEED / float(baumgarte)


def axis_drift_tolerance(baumgarte: float, dt: float) -> float:
    """The axis misalignment (rad) a continued start may carry: h·``CONTINUED_TURN``/β (0.05 rad at
    2 ms, β 0.2; ``inf`` for β = 0); a rollout's own is at most h²·max|ω_p × ω_c|/(2β)."""
    return float("inf") if baumgarte <= 0 else float(dt) * CONTINUED_TURN / float(baumgarte)


def consistency_error(j: int, d: float, ang: float, start: str, baumgarte: float, dt: float | None,
                      anchors: str, axes: str, who: str = "") -> str | None:
    """The refusal of joint ``j`` whose anchors are ``d`` m apart and axes ``ang`` rad apart at a
    start (None: consistent): within ``ANCHOR_TOL``/``AXIS_TOL`` for start="initial", within the
    stabilisation's drift (``drift_tolerance``, ``axis_drift_tolerance`` at ``dt``) for "continued".
    ``anchors``/``axes``: the fields the message names; ``who``: the joint's bodies, in words."""
    joint = f"joint {j}" + (f" ({who})" if who else "")
    if start == "continued" and dt is None:
        raise ValueError("start='continued': the joints' drift tolerance needs the model's time step (dt)")
    if start == "continued":
        tol, atol = drift_tolerance(baumgarte, dt), axis_drift_tolerance(baumgarte, dt)
        if d > tol:
            return (f"{anchors}[{j}]: {joint} is broken: its anchors are {d:.3g} m apart at the start of a continued "
                    f"rollout, more than a rollout drifts (dt·{CONTINUED_SPEED} m/s/β = {tol:.3g} m: the Baumgarte "
                    f"correction would pull them together faster than {CONTINUED_SPEED} m/s)")
        if ang > atol:
            return (f"{axes}[{j}]: {joint} is broken: its axes differ by {ang:.3g} rad at the start of a continued "
                    f"rollout, more than a rollout drifts (dt·{CONTINUED_TURN} rad/s/β = {atol:.3g} rad)")
        return None
    hint = ""
    if dt is not None and d <= drift_tolerance(baumgarte, dt) and ang <= axis_drift_tolerance(baumgarte, dt):
        hint = "; if a rollout reached this state, continue from it with start='continued'"
    if d > ANCHOR_TOL:
        return (f"{anchors}[{j}]: {joint} is inconsistent: its anchors are {d:.3g} m apart in the world at the "
                f"initial state (tolerance {ANCHOR_TOL} m){hint}")
    if ang > AXIS_TOL:
        return (f"{axes}[{j}]: {joint} axes differ by {ang:.3g} rad in the world at the initial state (tolerance "
                f"{AXIS_TOL} rad){hint}")
    return None


def check_joint_arrays(owner, count: int, prefix: str) -> None:
    """Eager checks of ``owner``'s joint arrays (``anchor_parent``, ``anchor_child``,
    ``axis_parent``, ``axis_child``): shape (count, 3), finite, non-zero axes; errors name
    ``prefix.<field>`` (a world's ``JointParams``, a chain's ``ChainParams``)."""
    for name in ("anchor_parent", "anchor_child", "axis_parent", "axis_child"):
        a = np.asarray(getattr(owner, name), float)
        if a.shape != (count, 3):
            raise ValueError(f"{prefix}.{name}: expected shape ({count}, 3), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{prefix}.{name}: contains NaN or infinite values")
        if name.startswith("axis") and np.any(np.linalg.norm(a, axis=1) < 1e-9):
            raise ValueError(f"{prefix}.{name}: joint axes must be non-zero vectors")


def check_passive(jp: JointParams, count: int, prefix: str) -> None:
    """Eager checks of the passive fields: ``damping``, ``stiffness``, ``armature`` (count,), finite,
    >= 0; ``springref`` (count,) finite; ``reference`` (count, 4) unit quaternions, required with
    a stiffness. Errors name ``prefix.<field>``."""
    for name in PASSIVE + ("springref", "frictionloss"):
        a = getattr(jp, name)
        if a is None:
            continue
        a = np.asarray(a, float)
        if a.shape != (count,):
            raise ValueError(f"{prefix}.{name}: expected shape ({count},), one per joint, got {a.shape}")
        if not np.all(np.isfinite(a)) or (name != "springref" and np.any(a < 0)):
            raise ValueError(f"{prefix}.{name}: must be finite" + ("" if name == "springref" else " and >= 0")
                             + f", got {a.tolist()}")
    if jp.reference is not None:
        r = np.asarray(jp.reference, float)
        if r.shape != (count, 4) or not np.all(np.isfinite(r)) or np.any(np.abs(np.linalg.norm(r, axis=1) - 1) > 1e-6):
            raise ValueError(f"{prefix}.reference: expected ({count}, 4) unit quaternions (the child's orientation in "
                             f"the parent's frame at angle 0), got shape {r.shape}")
    elif jp.stiffness is not None:
        raise ValueError(f"{prefix}.stiffness needs {prefix}.reference (the child's orientation in the parent's frame "
                         "where the joint's angle is 0), which the spring's angle is measured from")


def broken_passive(jp: JointParams, joints: Joints | None = None):
    """() whether a passive field is negative or not finite, or an actuator's field is broken
    (``actuation.broken_actuators``, with ``joints``' static force limits): the traced check of
    ``check_passive`` (``validation.JOINT_PASSIVE``) under ``jit``/``vmap``."""
    bad = jnp.zeros((), bool)
    for name in PASSIVE + ("frictionloss",):
        a = getattr(jp, name)
        if a is not None:
            bad = bad | ~jnp.all(jnp.isfinite(a) & (a >= 0))
    if jp.springref is not None:
        bad = bad | ~jnp.all(jnp.isfinite(jp.springref))
    if jp.actuators is not None:
        bad = bad | broken_actuators(jp.actuators, None if joints is None else joints.force_limited)
    if jp.tendons is not None:
        bad = bad | broken_tendons(jp.tendons)
    return bad


def validate(joints: Joints, params, state: State, start: str = "initial", dt: float | None = None) -> None:
    """Eager checks of a jointed world's concrete inputs, naming the field: ``params`` a
    ``JointedParams`` whose joint arrays are (J, 3), finite, with non-zero axes, and every joint's
    anchors (axes) coincident (aligned) at ``state``: within ``ANCHOR_TOL`` (``AXIS_TOL``) for
    start="initial", within the stabilisation's drift at the step ``dt`` for start="continued"
    (``consistency_error``)."""
    J = joints.num_joints
    jp = getattr(params, "joints", None)
    if not isinstance(jp, JointParams):
        raise ValueError(f"params: a scene with joints needs JointedParams(..., joints=JointParams(...)), got "
                         f"{type(params).__name__} without joint parameters")
    check_joint_arrays(jp, J, "params.joints")
    check_passive(jp, J, "params.joints")
    if joints.limited:
        if jp.range is None:
            raise ValueError(f"params.joints.range: joints {list(joints.limited_joints)} are limited (Joints.limited) but "
                             "range is None; give (J, 2) lower and upper limits")
        r = np.asarray(jp.range, float)
        if r.shape != (J, 2):
            raise ValueError(f"params.joints.range: expected shape ({J}, 2), got {r.shape}")
        for j in joints.limited_joints:
            if not (np.all(np.isfinite(r[j])) and r[j, 0] < r[j, 1]):
                raise ValueError(f"params.joints.range[{j}]: a limited joint's range must be finite with lower < upper, "
                                 f"got {r[j].tolist()}")
    if joints.actuated or jp.actuators is not None:
        if jp.actuators is None or not joints.actuated:
            raise ValueError("params.joints.actuators and Joints.actuated go together: the actuators' parameters "
                             "(actuation.ActuatorParams) and the joint each drives")
        check_actuators(jp.actuators, len(joints.actuated), "params.joints.actuators", joints.force_limited)
    if joints.tendons is not None or jp.tendons is not None:
        if joints.tendons is None:
            raise ValueError("params.joints.tendons is given but Joints.tendons is None: the tendons' joints are static "
                             "(Joints(..., tendons=tendons.Tendons(...)))")
        check_tendons(joints.tendons, jp.tendons, J)
    lengths = joints.tendons is not None and (bool(joints.tendons.limited) or jp.tendons.stiffness is not None)
    needs = [why for why, given in (("a slide keeps the child's orientation in the parent's frame", joints.has_slides),
                                    ("a limited joint's coordinate is measured from it", joints.limited),
                                    ("an actuated joint's coordinate is measured from it", joints.actuated),
                                    ("a tendon's length sums the joints' coordinates", lengths)) if given]
    if needs and jp.reference is None:
        raise ValueError(f"params.joints.reference: {'; '.join(needs)}: give reference ((J, 4) unit quaternions, the "
                         "child's orientation in the parent's frame at q = 0); it is None")
    N = np.shape(state.pos)[0]
    for j, (p, c) in enumerate(zip(joints.parent, joints.child)):
        if max(p, c) >= N:
            raise ValueError(f"Joints: joint {j} names body {max(p, c)} of a world of {N} bodies")
        body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
        xp, xc, ap, ac = (np.asarray(a) for a in frames(jp.anchor_parent[j], jp.anchor_child[j], jp.axis_parent[j],
                                                        jp.axis_child[j], body(c), None if p < 0 else body(p)))
        d = float(np.linalg.norm(xc - xp))
        ang = float(np.arccos(np.clip(abs(np.dot(ap, ac)), -1, 1)))
        if joints.kind(j) == "slide":  # across the axis only; the turn from the reference
            _, _, err = (np.asarray(a) for a in joint_rows(joints, jp, j, body(c), None if p < 0 else body(p)))
            d, ang = float(np.linalg.norm(err[:2])), float(np.linalg.norm(err[2:]))
        who = "a slide: its anchors across its axis, its turn from the reference" if joints.kind(j) == "slide" else ""
        why = consistency_error(j, d, ang, start, joints.baumgarte, dt, "params.joints.anchor_parent/anchor_child",
                                "params.joints.axis_parent/axis_child", who)
        if why:
            raise ValueError(why)


__all__ = ["ANCHOR_TOL", "AXIS_TOL", "CONTINUED_SPEED", "CONTINUED_TURN", "JointParams", "JointedParams", "Joints", "KINDS",
           "Motion", "PASSIVE", "ROWS_PER_JOINT", "STARTS", "anchor_rows", "axis_drift_tolerance", "broken_passive",
           "check_passive", "coordinates", "joint_rows", "limit_rows", "loss_rows", "slide_rows",
           "passive_motion", "rate_drift", "rate_rows", "check_joint_arrays", "check_start", "consistency_error", "drift_tolerance",
           "constrained_motion", "frames",
           "motion", "rows", "system", "validate"]
