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

from .. import geometry, linalg
from ..contact import block_diag
from .actuation import broken_actuators, check_actuators, joint_forces
from .tendons import Tendons, broken as broken_tendons, check as check_tendons, lengths as tendon_lengths
from .tendons import equality_rows as tendon_equality_rows, passive as tendon_passive
from ..rotations import quat_conj, quat_mul, quat_to_mat
from ..types import Params, State

ANCHOR_TOL = 1e-5  # m: joint anchors of an initial state must coincide to this distance
AXIS_TOL = 1e-4  # rad: joint axes of an initial state must be aligned to this angle
# A continued start (a state a rollout reached: ``start="continued"``) may carry the drift the
# Baumgarte correction leaves, up to the error it closes at these speeds (``drift_tolerance``)
CONTINUED_SPEED = 2.0  # m/s: anchors
CONTINUED_TURN = 5.0  # rad/s: axes
STARTS = ("initial", "continued")


KINDS = ("hinge", "slide", "ball", "welded", "connect", "weld")  # a joint's kind (``Joints.kinds``)
EQUALITIES = ("connect", "weld")  # kinds that are equality constraints (MuJoCo's <equality>), not a body's joint
DOFS = {"hinge": 1, "slide": 1, "ball": 3, "welded": 0, "connect": 0, "weld": 0}  # a kind's degrees of freedom
ROWS = {"hinge": 5, "slide": 5, "ball": 3, "welded": 6, "connect": 3, "weld": 6}  # its rows alone on its body
ANCHORS = {"hinge": 3, "slide": 2, "ball": 3, "welded": 3, "connect": 3, "weld": 3}  # of them, the anchor rows first
SCALAR = ("hinge", "slide")  # kinds with one coordinate (limits, springs, actuators)


@dataclasses.dataclass(frozen=True)
class Joints:
    """The joints of a world (static, hashable): joint j links body ``child[j]`` to body
    ``parent[j]`` (−1: the world, the parent anchor and axis then in world coordinates).
    baumgarte: β of the drift correction (target velocity −β/h · error), in [0, 1].
    kinds: one of ``KINDS`` per joint (empty: every joint a hinge). A hinge turns about its axis
    through the anchor; a slide (prismatic joint) moves the child along the axis without turning
    it (its orientation in the parent's frame stays ``JointParams.reference``); a ball turns freely
    about the anchor (3 rows); "welded" holds the child at ``reference`` to its parent (6 rows: a
    jointless MuJoCo body inside a moving one). Consecutive hinges and slides with one child and
    parent are one body's composite joint (MuJoCo's several joints on a body: the child's frame is
    parent ∘ joint₁ ∘ joint₂ …; slides first, then hinges through one anchor): one group of
    6 − dof rows (``groups``). "connect" and "weld" are MuJoCo's equality constraints between any
    two bodies (or a body and the world): a point of each coincides (3 rows), and the orientation too
    (6 rows); unlike a joint they keep the two bodies' contacts (``body_pairs``).
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
        tree = [(self.parent[g[0]], self.child[g[0]]) for g in self.groups if self.kind(g[0]) not in EQUALITIES]
        if len(set(tree)) != len(tree):
            raise ValueError("Joints: a joint is listed twice (a body's several hinges and slides are consecutive)")
        for g in self.groups:
            ks = [self.kind(j) for j in g]
            if len(g) > 1 and ("slide" in ks[ks.index("hinge"):] if "hinge" in ks else False):
                raise ValueError(f"Joints: joints {list(g)} of body {self.child[g[0]]}: a slide after a hinge on one body "
                                 "(a composite joint here is its slides, then its hinges through one anchor)")
            if len(g) > 1 and (ks.count("slide") > 3 or ks.count("hinge") > 3 or len(g) > 5):
                raise ValueError(f"Joints: joints {list(g)} of body {self.child[g[0]]}: {ks.count('slide')} slides and "
                                 f"{ks.count('hinge')} hinges on one body (at most 3 of each and 5 in all; six "
                                 "degrees of freedom are a free body)")
        for j in self.actuated:
            if j < len(self.child) and self.kind(j) not in SCALAR:
                raise ValueError(f"Joints.actuated: joint {j} is a {self.kind(j)}; actuators drive a hinge or a slide")
        for j, lim in enumerate(self.limited):
            if lim and self.kind(j) not in SCALAR + ("ball",):
                raise ValueError(f"Joints.limited: joint {j} is a {self.kind(j)}, which has no range")
        if self.tendons is not None and (not isinstance(self.tendons, Tendons) or
                                         max(max(js) for js in self.tendons.joints) >= len(self.child)):
            raise ValueError(f"Joints.tendons: a tendons.Tendons over these {len(self.child)} joints, got {self.tendons!r}")
        if self.tendons is not None and any(self.kind(j) not in SCALAR for js in self.tendons.joints for j in js):
            raise ValueError("Joints.tendons: a fixed tendon sums hinge and slide coordinates; joints "
                             f"{sorted({j for js in self.tendons.joints for j in js if self.kind(j) not in SCALAR})} "
                             "are not hinges or slides")
        if not (isinstance(self.baumgarte, numbers.Real) and 0 <= self.baumgarte <= 1):
            raise ValueError(f"Joints.baumgarte must lie in [0, 1], got {self.baumgarte!r}")

    @property
    def num_joints(self) -> int:
        return len(self.child)

    def kind(self, j: int) -> str:
        """Joint j's kind (one of ``KINDS``)."""
        return self.kinds[j] if self.kinds else "hinge"

    @property
    def has_slides(self) -> bool:
        return "slide" in self.kinds

    @property
    def groups(self) -> tuple:
        """The joints in row groups: a run of consecutive hinges and slides with one child and parent
        is one group (a body's composite joint); every other joint is a group of its own."""
        out = []
        for j in range(len(self.child)):
            k = self.kinds[j] if self.kinds else "hinge"
            if (out and k in SCALAR and self.kind(out[-1][-1]) in SCALAR and self.child[out[-1][-1]] == self.child[j]
                    and self.parent[out[-1][-1]] == self.parent[j]):
                out[-1].append(j)
            else:
                out.append([j])
        return tuple(tuple(g) for g in out)

    def group_rows(self, g: tuple) -> int:
        """The rows of group ``g`` (joint indices): a lone joint's ``ROWS``, a composite 6 − its dofs."""
        return ROWS[self.kind(g[0])] if len(g) == 1 else 6 - len(g)

    def group_anchors(self, g: tuple) -> int:
        """How many of group ``g``'s first rows hold its anchors together: a lone joint's ``ANCHORS``,
        a composite's 3 − its slides."""
        return ANCHORS[self.kind(g[0])] if len(g) == 1 else 3 - sum(self.kind(j) == "slide" for j in g)

    @property
    def num_rows(self) -> int:
        """Every group's rows, in all (5 per joint when every joint is a lone hinge or slide), then one per
        tendon equality (``tendons.Tendons.equal``)."""
        return sum(self.group_rows(g) for g in self.groups) + self.num_tendon_equalities

    @property
    def num_tendon_equalities(self) -> int:
        return len(self.tendons.equal) if isinstance(self.tendons, Tendons) else 0

    @property
    def uniform(self) -> bool:
        """Whether every joint is a lone hinge or slide (5 rows each: the first programs' layout)."""
        return all(len(g) == 1 and self.kind(g[0]) in SCALAR for g in self.groups)

    @property
    def dof_start(self) -> tuple:
        """Each joint's first coordinate in ``coordinates``/``rate_rows`` (a ball has 3, a weld or
        an equality none)."""
        out, k = [], 0
        for j in range(len(self.child)):
            out.append(k)
            k += DOFS[self.kind(j)]
        return tuple(out)

    @property
    def num_dofs(self) -> int:
        """The coordinates in all (J when every joint is a hinge or a slide)."""
        return sum(DOFS[self.kind(j)] for j in range(len(self.child)))

    @property
    def dof_joint(self) -> np.ndarray:
        """(D,) static: the joint of each coordinate."""
        return np.asarray([j for j in range(len(self.child)) for _ in range(DOFS[self.kind(j)])], np.int64)

    @property
    def num_limit_rows(self) -> int:
        """The contact rows of the range limits: two per limited hinge or slide, one per limited ball
        (its cone)."""
        return len(self.limit_row_joints)

    @property
    def limit_row_joints(self) -> np.ndarray:
        """(L,) the joint of each range-limit row (``limit_rows``' order: two per limited hinge or slide,
        one per limited ball)."""
        return np.asarray([j for j in self.limited_joints for _ in range(1 if self.kind(j) == "ball" else 2)], np.int64)

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
        """The (a, b), a < b, of the joints between two bodies (the pairs they exclude from contact; an
        equality's bodies keep theirs, as in MuJoCo)."""
        return {tuple(sorted((p, c))) for j, (p, c) in enumerate(zip(self.parent, self.child))
                if p >= 0 and self.kind(j) not in EQUALITIES}


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
    none). ``tendons``: a ``tendons.TendonParams`` of the fixed tendons ``Joints.tendons`` names.
    ``limit_soft`` (J, 2): MuJoCo's soft-limit pace of each limited joint, (time constant s, damping
    ratio: ``jnt_solref``), with which a joint *past* its limit (a
    file's start outside its range) returns into it (``soft_limit_speed``) instead of at
    ``Model.max_correction_speed``; a joint inside its range still stops at the limit hard (None: the
    hard rows alone). Under ``Scene.constraints = "mujoco"`` it is the limits' solref of MuJoCo's soft
    law (``worlds.soft``), inside the range and past it."""

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
    limit_soft: Any = None

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


def point_rows(anchor_parent, anchor_child, child: State, parent: State | None):
    """Constraint rows of a ball joint or a connect equality, as ``rows``: the two anchor points move
    together (3 rows, world x, y, z); error: their separation."""
    xc = child.pos + quat_to_mat(child.quat) @ anchor_child
    eye = jnp.eye(3, dtype=xc.dtype)
    Jc = geometry.point_jacobian(child, anchor_child, eye)
    if parent is None:
        return Jc, jnp.zeros_like(Jc), xc - anchor_parent
    xp = parent.pos + quat_to_mat(parent.quat) @ anchor_parent
    return Jc, geometry.point_jacobian(parent, anchor_parent, eye), xc - xp


def turn_error(reference, child: State, parent: State | None):
    """(3,) the rotation vector (world) taking ``reference`` (the child's orientation in the parent's
    frame) to the child's orientation now, and the parent's rotation matrix (the world's: I)."""
    if parent is None:
        rel, Rp = child.quat, jnp.eye(3, dtype=child.pos.dtype)
    else:
        rel, Rp = quat_mul(quat_conj(parent.quat), child.quat), quat_to_mat(parent.quat)
    d = quat_mul(rel, quat_conj(reference))  # the rotation since the reference, parent's frame
    d = jnp.where(d[0] < 0, -d, d)
    return Rp @ (2.0 * d[1:]), Rp


def weld_rows(anchor_parent, anchor_child, reference, child: State, parent: State | None):
    """Constraint rows of a welded body or a weld equality, as ``rows``: the anchors move together
    (3 rows, world x, y, z) and the relative angular velocity is zero (3 rows, world x, y, z). Errors:
    the anchors' separation and the rotation vector (world) from ``reference`` (the child's
    orientation in the parent's frame) to the child's orientation now."""
    Jc, Jp, err = point_rows(anchor_parent, anchor_child, child, parent)
    turn, _ = turn_error(reference, child, parent)
    zero = jnp.zeros((3, 3), Jc.dtype)
    ang = lambda s: jnp.concatenate([zero, quat_to_mat(s.quat)], axis=1)  # ω_world = R ω_body
    Jc = jnp.concatenate([Jc, ang(child)])
    Jp = jnp.zeros_like(Jc) if parent is None else jnp.concatenate([Jp, ang(parent)])
    return Jc, Jp, jnp.concatenate([err, turn])


def _unit(a):
    return a / jnp.linalg.norm(a)


def _dual(A):
    """(m, 3) the rows that read the coefficients of a vector in the span of A's m columns."""
    return linalg.solve(A.T @ A, A.T)


def composite_parts(kinds: tuple, jp: JointParams, g: tuple, child: State, parent: State | None):
    """The world quantities of a body's composite joint (``Joints.groups``: slides, then hinges
    through one anchor, the group's last joint's): (xp, xc, Rp, Rc, S (3, k) the slides' world axes,
    the parent's material point under the child's anchor, in the parent's frame)."""
    last = g[-1]
    Rc = quat_to_mat(child.quat)
    xc = child.pos + Rc @ jp.anchor_child[last]
    if parent is None:
        Rp, xp, under = jnp.eye(3, dtype=xc.dtype), jp.anchor_parent[last], None
    else:
        Rp = quat_to_mat(parent.quat)
        xp, under = parent.pos + Rp @ jp.anchor_parent[last], Rp.T @ (xc - parent.pos)
    slides = [j for j, k in zip(g, kinds) if k == "slide"]
    S = jnp.stack([_unit(Rp @ jp.axis_parent[j]) for j in slides], axis=1) if slides else None
    return xp, xc, Rp, Rc, S, under


def composite_rows(kinds: tuple, jp: JointParams, g: tuple, child: State, parent: State | None):
    """Constraint rows of a body's composite joint of k slides then m hinges (``Joints.groups``), as
    ``rows``, 6 − k − m of them: the child's anchor (the hinges' common point) moves relative to the
    parent's material point under it only within the span of the slides' (parent-fixed) axes (3 − k
    rows: an orthonormal basis across them; k = 0: world x, y, z, the anchors' separation), and the
    relative angular velocity stays within the span of the hinges' axes: m = 0, none (3 rows, world
    x, y, z; error the turn from ``reference``); m = 1, as a hinge (2 rows across its axis); m = 2,
    the first hinge's axis a₁ is the parent's and the last's a₂ the child's, and a₁·a₂ keeps its value
    at the reference (1 row along a₁ × a₂); m = 3, none (a ball's anchor rows alone).

    Two hinges alone (k = 0, m = 2) may pass through different points p₁, p₂ (MuJoCo composes them:
    parent ∘ hinge₁ about p₁ ∘ hinge₂ about p₂, each point fixed in the body's frame): the child's
    p₂ (``anchor_child`` of the second) is where hinge₁ turns the parent's p₂ at q = 0 about its axis
    through p₁, x_c(p₂) = x_p(p₁) + e, e = R_p R(b₁, q₁) (p₂ − p₁) (b₁, p₁, p₂ the parent's
    ``axis_parent``/``anchor_parent`` at q = 0, q₁ ``composite_coordinates``'), 3 rows; their
    velocity v_c(p₂) − v_p(p₁ + e) − q̇₁ a₁ × e with q̇₁ the dual basis of (a₁, a₂)'s first row of
    the relative angular velocity. Through one point (e = 0) these are the rows above, bit for bit."""
    xp, xc, Rp, Rc, S, under = composite_parts(kinds, jp, g, child, parent)
    dtype = xc.dtype
    eye = jnp.eye(3, dtype=dtype)
    hinges = [j for j, k in zip(g, kinds) if k == "hinge"]
    k, m = len(g) - len(hinges), len(hinges)
    offset = k == 0 and m == 2  # two hinges: the second's point circles the first's axis (e, below)
    if offset:
        h1, h2 = hinges
        b1 = _unit(jp.axis_parent[h1])
        q1 = composite_coordinates(kinds, jp, g, child, parent)[0]
        e = Rp @ (quat_to_mat(_axis_angle(b1, q1)) @ (jp.anchor_parent[h2] - jp.anchor_parent[h1]))
        xp = jp.anchor_parent[h1] if parent is None else parent.pos + Rp @ jp.anchor_parent[h1]
        xc = xc - e  # the error x_c(p₂) − x_p(p₁) − e
    if k == 0:
        N = eye
    elif k == 1:
        N = geometry.tangent_basis(S[:, 0])
    elif k == 2:
        N = _unit(jnp.cross(S[:, 0], S[:, 1]))[None]
    else:
        N = jnp.zeros((0, 3), dtype)
    err_lin = N @ (xc - xp)
    if m == 0:
        U = eye
        err_ang, _ = turn_error(jp.reference[g[0]], child, parent)
    elif m == 1:
        a, ac = _unit(Rp @ jp.axis_parent[hinges[0]]), _unit(Rc @ jp.axis_child[hinges[0]])
        U = geometry.tangent_basis(a)
        err_ang = U @ jnp.cross(a, ac)
    elif m == 2:
        a1, a2 = _unit(Rp @ jp.axis_parent[hinges[0]]), _unit(Rc @ jp.axis_child[hinges[1]])
        n = jnp.cross(a1, a2)
        sin = jnp.linalg.norm(n)
        c0 = jnp.dot(_unit(jp.axis_parent[hinges[0]]), quat_to_mat(jp.reference[hinges[1]]) @ _unit(jp.axis_child[hinges[1]]))
        U = (n / sin)[None]
        err_ang = ((c0 - jnp.dot(a1, a2)) / sin)[None]
    else:
        U = jnp.zeros((0, 3), dtype)
        err_ang = jnp.zeros((0,), dtype)
    zl = jnp.zeros((U.shape[0], 3), dtype)

    def on(s, r_body, R):
        lin = geometry.point_jacobian(s, r_body, N)
        return jnp.concatenate([lin, jnp.concatenate([zl, U @ R], axis=1)], axis=0)

    Jc = on(child, jp.anchor_child[g[-1]], Rc)
    if offset:  # q̇₁ a₁ × e: q̇₁ = P₁·(ω_c − ω_p), P the dual basis of the hinges' world axes (a₁, a₂)
        P1 = _dual(jnp.stack([a1, a2], axis=1))[0]
        turn = jnp.outer(jnp.cross(a1, e), P1)
        Jc = Jc.at[:3, 3:].add(-turn @ Rc)
    if parent is None:
        Jp = jnp.zeros_like(Jc)
    elif offset:
        Jp = on(parent, jp.anchor_parent[hinges[0]] + Rp.T @ e, Rp).at[:3, 3:].add(-turn @ Rp)
    else:
        Jp = on(parent, jp.anchor_parent[g[-1]] if k == 0 else under, Rp)
    return Jc, Jp, jnp.concatenate([err_lin, err_ang])


def joint_rows(joints: Joints, jp: JointParams, j: int, child: State, parent: State | None):
    """Joint j's rows by its kind (``rows``, ``slide_rows``, ``point_rows``, ``weld_rows``)."""
    args = (jp.anchor_parent[j], jp.anchor_child[j], jp.axis_parent[j], jp.axis_child[j])
    kind = joints.kind(j)
    if kind == "slide":
        return slide_rows(*args, jp.reference[j], child, parent)
    if kind in ("ball", "connect"):
        return point_rows(args[0], args[1], child, parent)
    if kind in ("welded", "weld"):
        return weld_rows(args[0], args[1], jp.reference[j], child, parent)
    return rows(*args, child, parent)


def group_rows(joints: Joints, jp: JointParams, g: tuple, child: State, parent: State | None):
    """Group g's rows (``Joints.groups``): a lone joint's ``joint_rows``, a composite's
    ``composite_rows``."""
    if len(g) == 1:
        return joint_rows(joints, jp, g[0], child, parent)
    return composite_rows(tuple(joints.kind(j) for j in g), jp, g, child, parent)


def limit_rows(joints: Joints, jp: JointParams, state: State):
    """The range limits as one-sided rows of the contact problem, two per limited hinge or slide (its
    lower then its upper limit), each a contact whose normal velocity is ±q̇ (the joint's rate row G on
    its two bodies, ``rate_rows``) and whose distance is q − lower (upper − q), with no tangent rows,
    and one per limited ball (MuJoCo's cone: the angle θ of its turn within ``range[j, 1]``, distance
    upper − θ, normal velocity −θ̇ = −n̂·ω_rel, n̂ the turn's world axis):
    (rows (L, 2, 3, 6), phi (L,), rate (L,) the normal velocity now, bodies (L, 2): child and parent,
    −1 the world; L = ``Joints.num_limit_rows``). The problem then keeps q within the range as a
    contact keeps bodies apart (an impulse ≥ 0, speculative, the law's restitution: none by default)."""
    lim = joints.limited_joints
    dtype = state.pos.dtype
    G = rate_rows(joints, state, jp)
    q, qd = coordinates(joints, jp, state)
    rng = jnp.asarray(jp.range, dtype)
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    rows, phi, rate, bodies = [], [], [], []
    for j in lim:
        c, p = joints.child[j], joints.parent[j]
        d = joints.dof_start[j]
        if joints.kind(j) == "ball":  # the cone: θ ≤ upper
            Q = ball_quaternion(jp, j, body(c), None if p < 0 else body(p))
            s = jnp.linalg.norm(Q[1:])
            theta = 2.0 * jnp.arctan2(s, Q[0])
            n = Q[1:] / jnp.where(s > 1e-12, s, 1.0)  # the turn's axis, child's frame (the ball's rates' frame)
            gc, gp = n @ G[d:d + 3, 6 * c:6 * c + 6], (jnp.zeros((6,), dtype) if p < 0 else n @ G[d:d + 3, 6 * p:6 * p + 6])
            rows.append(jnp.zeros((2, 3, 6), dtype).at[0, 0].set(-gc).at[1, 0].set(-gp))
            phi.append(rng[j, 1] - theta)
            rate.append(-(n @ qd[d:d + 3]))
            bodies.append((c, p))
            continue
        gc = G[d, 6 * c:6 * c + 6]
        gp = jnp.zeros_like(gc) if p < 0 else G[d, 6 * p:6 * p + 6]
        for sign, dist in ((1.0, q[d] - rng[j, 0]), (-1.0, rng[j, 1] - q[d])):
            r = jnp.zeros((2, 3, 6), dtype).at[0, 0].set(sign * gc).at[1, 0].set(sign * gp)
            rows.append(r)
            phi.append(dist)
            rate.append(sign * qd[d])
            bodies.append((c, p))
    return jnp.stack(rows), jnp.stack(phi), jnp.stack(rate), jnp.asarray(bodies, jnp.int32)


def soft_limit_speed(joints: Joints, jp: JointParams, phi, rate, dt: float):
    """(L,) the speed at which each limit row (``limit_rows``' order; its distance ``phi``, its normal
    velocity now ``rate``) moves back into the range under MuJoCo's soft limit: one step of the
    acceleration MuJoCo's constraint gives a row past its limit, d·a_ref with a_ref = −b v − k r, b =
    2/(dmax τ), k = d/(dmax² τ² ζ²) and the impedance d = dmax beyond solimp's width, that is
    a = −2v/τ − r/(τ ζ)² (the time constant τ at least 2 h, as MuJoCo's safety keeps it;
    ``JointParams.limit_soft``): v + h·a. Used for rows past their limit (phi < 0), where it replaces
    the contact's correction cap; one-sided as MuJoCo's limit: the row only pushes."""
    soft = jnp.asarray(jp.limit_soft, phi.dtype)[joints.limit_row_joints]
    tau = jnp.maximum(soft[:, 0], 2.0 * dt)
    zeta = soft[:, 1]
    return rate + dt * (-2.0 * rate / tau - phi / (tau * zeta) ** 2)


def loss_dofs(joints: Joints) -> tuple:
    """(joint, coordinate) of every friction-loss row (static, ``loss_rows``' order): a hinge's or slide's
    one coordinate, a ball's three (MuJoCo's ``dof_frictionloss`` bounds each of its dofs on its own), a
    weld's or an equality's none (coordinate −1: a zero row; its loss must be 0, ``validate``)."""
    out = []
    for j in range(joints.num_joints):
        start, n = joints.dof_start[j], DOFS[joints.kind(j)]
        out += [(j, start + k) for k in range(n)] if n else [(j, -1)]
    return tuple(out)


def loss_rows(joints: Joints, jp: JointParams, state: State):
    """Every joint's friction loss as contacts of the contact problem whose normal impulse is held
    at 1 (``BodyProblem.fixed_normal``) and whose first tangent row is one of the joint's rate rows G on
    its two bodies (``rate_rows``; a ball's three, each its own: ``loss_dofs``), so that its friction
    μ = frictionloss·h bounds the joint's impulse |z| ≤ frictionloss·h per coordinate, as MuJoCo's
    friction loss bounds its force (|τ| ≤ frictionloss per dof): (rows (K, 2, 3, 6), bodies (K, 2):
    child and parent, −1 the world), K = ``len(loss_dofs(joints))``."""
    rows = loss_dofs(joints)
    G = rate_rows(joints, state, jp)
    dofs = [k for _, k in rows]
    if dofs != list(range(G.shape[0])):  # not every coordinate once, in order: gather, a weld's row zero
        valid = jnp.asarray([k >= 0 for k in dofs])[:, None]
        G = jnp.where(valid, G[np.asarray([max(k, 0) for k in dofs], np.int64)], 0)
    js = [j for j, _ in rows]
    return _rate_contacts(G, [joints.child[j] for j in js], [joints.parent[j] for j in js], state.pos.dtype)


def scalar_view(joints: Joints, x):
    """Per-coordinate x (D, …) (``coordinates``, ``rate_rows``) as one entry per joint (J, …): a hinge's
    or slide's own coordinate, zero for a ball, a weld or an equality (a friction loss or a tendon acts
    on hinges and slides only: ``validate`` and ``Joints`` refuse the others). Hinges and slides alone:
    x itself."""
    if joints.num_dofs == joints.num_joints and all(joints.kind(j) in SCALAR for j in range(joints.num_joints)):
        return x
    idx = np.asarray([min(k, joints.num_dofs - 1) for k in joints.dof_start], np.int64)
    one = np.asarray([joints.kind(j) in SCALAR for j in range(joints.num_joints)])
    return jnp.where(jnp.asarray(one).reshape((-1,) + (1,) * (x.ndim - 1)), x[idx], 0)


def _rate_contacts(G, child, parent, dtype):
    """(rows (K, 2, 3, 6), bodies (K, 2)): contacts whose first tangent row is G's row k on its two
    bodies ``child[k]``, ``parent[k]`` (−1: the world); the normal and second tangent rows zero."""
    rows = []
    for k, (c, p) in enumerate(zip(child, parent)):
        r = jnp.zeros((2, 3, 6), dtype).at[0, 1].set(G[k, 6 * c:6 * c + 6])
        rows.append(r if p < 0 else r.at[1, 1].set(G[k, 6 * p:6 * p + 6]))
    return jnp.stack(rows), jnp.asarray(list(zip(child, parent)), jnp.int32)


def anchor_rows(joints: Joints) -> np.ndarray:
    """(G, 3) static: each group's rows (``Joints.groups``, in ``system``'s order) whose error is the
    anchors' separation (a hinge's first 3, a slide's first 2: across its axis; a composite's first
    3 − its slides), −1 where a group has fewer."""
    out = -np.ones((len(joints.groups), 3), np.int64)
    start = 0
    for i, g in enumerate(joints.groups):
        n = joints.group_anchors(g)
        out[i, :n] = np.arange(start, start + n)
        start += joints.group_rows(g)
    return out


def system(joints: Joints, jp: JointParams, state: State):
    """Every joint group's rows over the 6N velocities of the world's N bodies (``state`` (N, …)):
    (J (R, 6N), error (R,)), R = ``Joints.num_rows`` (5 per joint when every joint is a lone hinge
    or slide)."""
    N = state.pos.shape[0]
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    J = jnp.zeros((joints.num_rows, 6 * N), jp.anchor_child.dtype)
    errs = []
    start = 0
    for g in joints.groups:
        p, c = joints.parent[g[0]], joints.child[g[0]]
        Jc, Jp, err = group_rows(joints, jp, g, body(c), None if p < 0 else body(p))
        rs = slice(start, start + joints.group_rows(g))
        start += joints.group_rows(g)
        J = J.at[rs, 6 * c:6 * c + 6].set(Jc)
        if p >= 0:
            J = J.at[rs, 6 * p:6 * p + 6].add(-Jp)
        errs.append(err)
    if joints.num_tendon_equalities:  # the tendon equalities' rows, after the groups' (tendons.equality_rows)
        G = scalar_view(joints, rate_rows(joints, state, jp))
        q = scalar_view(joints, coordinates(joints, jp, state)[0])
        rows, err = tendon_equality_rows(joints.tendons, jp.tendons, G, q)
        J = J.at[start:].set(rows.astype(J.dtype))
        errs.append(err)
    return J, jnp.concatenate(errs)


def coordinates(joints: Joints, jp: JointParams, state: State):
    """Every joint's coordinates q and rates q̇, (D,) each (``Joints.num_dofs``: one per hinge or
    slide, so (J,) when every joint is one; three per ball; none for a weld or an equality; joint
    j's first at ``Joints.dof_start[j]``). A hinge: q̇ = a·(ω_child − ω_parent) along
    the parent's world axis a (MuJoCo's hinge rate); q the rotation about a that takes
    ``jp.reference`` (the child's orientation in the parent's frame at q = 0) to the child's
    orientation now, in (−π, π] (MuJoCo's hinge angle is unbounded: the two agree within a half
    turn of the reference). A slide: q = a·(x_child − x_parent), the child's anchor's displacement
    along a from the parent's anchor (MuJoCo's slide qpos when the anchors coincide at qpos 0), and
    q̇ its rate (``rate_rows``). A ball: q the rotation vector, in the child's frame, of its
    quaternion (MuJoCo's ball qpos, ``ball_quaternion``), q̇ the relative angular velocity in the
    child's frame (MuJoCo's ball qvel). A composite's joints (``composite_coordinates``): each
    joint's own, as MuJoCo composes them."""
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    qs, rates = [], []
    plain = all(k in SCALAR for k in joints.kinds) and joints.uniform
    G = rate_rows(joints, state, jp) if joints.has_slides or not plain else None
    v = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1) if G is not None else None
    for g in joints.groups:
        p, c = joints.parent[g[0]], joints.child[g[0]]
        child = body(c)
        parent = None if p < 0 else body(p)
        start = joints.dof_start[g[0]]
        if len(g) > 1:
            qs.append(composite_coordinates(tuple(joints.kind(j) for j in g), jp, g, child, parent))
            rates.append(G[start:start + len(g)] @ v)
            continue
        r = g[0]
        kind = joints.kind(r)
        if kind == "ball":
            qs.append(2.0 * _log(quat_mul(quat_conj(jp.reference[r]), _relative(child, parent))))
            rates.append(G[start:start + 3] @ v)
            continue
        if kind not in SCALAR:
            continue
        xp, xc, ap, _ = frames(jp.anchor_parent[r], jp.anchor_child[r], jp.axis_parent[r], jp.axis_child[r], child, parent)
        if kind == "slide":
            qs.append(jnp.dot(ap, xc - xp)[None])
            rates.append(G[start:start + 1] @ v)
            continue
        w_c = quat_to_mat(child.quat) @ child.omega
        w_p = jnp.zeros_like(w_c) if parent is None else quat_to_mat(parent.quat) @ parent.omega
        rates.append(jnp.dot(ap, w_c - w_p)[None])
        if jp.reference is None:
            qs.append(jnp.zeros((1,), w_c.dtype))
            continue
        rel = child.quat if parent is None else quat_mul(quat_conj(parent.quat), child.quat)
        d = quat_mul(rel, quat_conj(jp.reference[r]))  # the rotation since the reference, parent's frame
        a_local = jp.axis_parent[r] / jnp.linalg.norm(jp.axis_parent[r])
        qs.append(2.0 * jnp.arctan2(jnp.dot(d[1:], a_local), d[0])[None])
    if not qs:
        return jnp.zeros((0,), state.pos.dtype), jnp.zeros((0,), state.pos.dtype)
    return jnp.concatenate(qs), jnp.concatenate(rates)


def _relative(child: State, parent: State | None):
    """The child's orientation in the parent's frame (the world's for None)."""
    return child.quat if parent is None else quat_mul(quat_conj(parent.quat), child.quat)


def _log(q):
    """Half the rotation vector of unit quaternion q (the shorter way round), finite at the identity."""
    q = jnp.where(q[0] < 0, -q, q)
    s = jnp.linalg.norm(q[1:])
    safe = jnp.where(s > 1e-12, s, 1.0)
    return jnp.where(s > 1e-12, jnp.arctan2(s, q[0]) / safe, 1.0 / jnp.maximum(q[0], 1e-300)) * q[1:]


def ball_quaternion(jp: JointParams, j: int, child: State, parent: State | None):
    """(4,) ball joint j's quaternion (MuJoCo's ball qpos): the child's turn from ``jp.reference`` in
    its own frame, conj(reference) ⊗ (the child's orientation in the parent's frame)."""
    q = quat_mul(quat_conj(jp.reference[j]), _relative(child, parent))
    return jnp.where(q[0] < 0, -q, q)


def _axis_angle(axis, angle):
    return jnp.concatenate([jnp.cos(0.5 * angle)[None], jnp.sin(0.5 * angle) * axis])


def composite_coordinates(kinds: tuple, jp: JointParams, g: tuple, child: State, parent: State | None):
    """(n,) the coordinates of a body's composite joint (slides, then one to three hinges: MuJoCo's
    parent ∘ slide … ∘ hinge₁ ∘ hinge₂): the slides' from the child's anchor's displacement d from the
    parent's, d = Σ qₛ sₛ over their world axes; the hinges' from the turn D since ``reference`` (the
    parent's frame), D = R(b₁, q₁) R(b₂, q₂) with bᵢ ``axis_parent`` (each hinge's axis at q = 0):
    q₁ turns b₂ about b₁ onto D b₂, q₂ is what is left, about b₂."""
    xp, xc, _, _, S, _ = composite_parts(kinds, jp, g, child, parent)
    hinges = [j for j, k in zip(g, kinds) if k == "hinge"]
    out = []
    if S is not None:
        out.append(_dual(S) @ (xc - xp))
    if hinges:
        D = quat_mul(_relative(child, parent), quat_conj(jp.reference[g[0]]))
        b1 = _unit(jp.axis_parent[hinges[0]])
        if len(hinges) == 1:
            out.append(2.0 * jnp.arctan2(jnp.dot(D[1:], b1), D[0])[None])
        elif len(hinges) == 2:
            b2 = _unit(jp.axis_parent[hinges[1]])
            q1 = _turn(b1, b2, quat_to_mat(D) @ b2)
            e = quat_mul(quat_conj(_axis_angle(b1, q1)), D)
            out.append(jnp.stack([q1, 2.0 * jnp.arctan2(jnp.dot(e[1:], b2), e[0])]))
        else:
            out.append(jnp.stack(_three_angles(D, *(_unit(jp.axis_parent[h]) for h in hinges))))
    return jnp.concatenate(out)


def _turn(axis, a, b):
    """The angle about unit ``axis`` that turns a's component across it onto b's."""
    u, v = a - jnp.dot(axis, a) * axis, b - jnp.dot(axis, b) * axis
    return jnp.arctan2(jnp.dot(axis, jnp.cross(u, v)), jnp.dot(u, v))


def _three_angles(D, b1, b2, b3):
    """(q₁, q₂, q₃) with D = R(b₁, q₁) R(b₂, q₂) R(b₃, q₃) (three hinges through one point, their axes
    at q = 0): x = R(b₂, q₂) b₃ = R(b₁, −q₁) D b₃ lies on both cones, b₂·x = b₂·b₃ and b₁·x = b₁·D b₃;
    of the two such x the branch of the reference (q = 0: x = b₃, the sign of (b₁ × b₂)·b₃) is kept;
    then q₂ turns b₃ onto x about b₂, q₁ x onto D b₃ about b₁, and q₃ is what is left, about b₃."""
    w = quat_to_mat(D) @ b3
    c12 = jnp.dot(b1, b2)
    n = jnp.cross(b1, b2)
    alpha, beta = jnp.dot(b1, w), jnp.dot(b2, b3)
    a = (alpha - beta * c12) / (1.0 - c12 * c12)
    c = (beta - alpha * c12) / (1.0 - c12 * c12)
    side = jnp.where(jnp.dot(n, b3) < 0, -1.0, 1.0)
    gamma = side * jnp.sqrt(jnp.maximum(1.0 - a * a - c * c - 2.0 * a * c * c12, 0.0) / jnp.dot(n, n))
    x = a * b1 + c * b2 + gamma * n
    q2, q1 = _turn(b2, b3, x), _turn(b1, x, w)
    e = quat_mul(quat_conj(quat_mul(_axis_angle(b1, q1), _axis_angle(b2, q2))), D)
    return q1, q2, 2.0 * jnp.arctan2(jnp.dot(e[1:], b3), e[0])


def composite_rates(kinds: tuple, jp: JointParams, g: tuple, child: State, parent: State | None):
    """(G_child (n, 6), G_parent (n, 6)) the rate rows of a composite's joints (q̇ = G_child v_child −
    G_parent v_parent): the relative motion at the child's anchor is Σ q̇ₛ sₛ (slides) and
    Σ q̇ₕ aₕ (hinges, aₕ their world axes now: the first the parent's, the second the child's), read
    by the dual bases of the slides' and the hinges' axes."""
    _, _, Rp, Rc, S, under = composite_parts(kinds, jp, g, child, parent)
    hinges = [j for j, k in zip(g, kinds) if k == "hinge"]
    dtype = Rc.dtype
    gc, gp = [], []
    if S is not None:
        P = _dual(S)
        gc.append(geometry.point_jacobian(child, jp.anchor_child[g[-1]], P))
        gp.append(None if parent is None else geometry.point_jacobian(parent, under, P))
    if hinges:
        axes = [_unit(Rp @ jp.axis_parent[hinges[0]])] + ([_unit(Rc @ jp.axis_child[hinges[-1]])] if len(hinges) > 1 else [])
        if len(hinges) == 3:  # the middle axis turns with the first hinge: R_p R(b₁, q₁) b₂
            q1 = composite_coordinates(kinds, jp, g, child, parent)[len(g) - 3]
            axes.insert(1, Rp @ quat_to_mat(_axis_angle(_unit(jp.axis_parent[hinges[0]]), q1)) @ _unit(jp.axis_parent[hinges[1]]))
        P = _dual(jnp.stack(axes, axis=1))
        z = jnp.zeros((len(hinges), 3), dtype)
        gc.append(jnp.concatenate([z, P @ Rc], axis=1))
        gp.append(None if parent is None else jnp.concatenate([z, P @ Rp], axis=1))
    Gc = jnp.concatenate(gc)
    return Gc, jnp.zeros_like(Gc) if parent is None else jnp.concatenate(gp)


def rate_rows(joints: Joints, state: State, jp: JointParams):
    """(D, 6N) every coordinate's rate row G (q̇ = G v over the bodies' generalised velocities, D =
    ``Joints.num_dofs``): a hinge's a·(ω_child − ω_parent), a slide's a·(velocity of the child's
    anchor − velocity of the parent's material point there), a the parent's world axis; a ball's
    three the relative angular velocity in the child's frame; a composite's ``composite_rates``."""
    N = state.pos.shape[0]
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    G = jnp.zeros((joints.num_dofs, 6 * N), state.pos.dtype)
    for grp in joints.groups:
        r = grp[0]
        p, c = joints.parent[r], joints.child[r]
        child = body(c)
        parent = None if p < 0 else body(p)
        d = joints.dof_start[r]
        kind = joints.kind(r)
        if len(grp) > 1:
            Gc, Gp = composite_rates(tuple(joints.kind(j) for j in grp), jp, grp, child, parent)
            G = G.at[d:d + len(grp), 6 * c:6 * c + 6].set(Gc)
            if p >= 0:
                G = G.at[d:d + len(grp), 6 * p:6 * p + 6].add(-Gp)
            continue
        if kind == "ball":  # ω_rel in the child's frame: Rcᵀ(Rc ω_c − Rp ω_p)
            Rc = quat_to_mat(child.quat)
            G = G.at[d:d + 3, 6 * c + 3:6 * c + 6].set(jnp.eye(3, dtype=Rc.dtype))
            if p >= 0:
                G = G.at[d:d + 3, 6 * p + 3:6 * p + 6].add(-(Rc.T @ quat_to_mat(parent.quat)))
            continue
        if kind not in SCALAR:
            continue
        _, xc, ap, _ = frames(jp.anchor_parent[r], jp.anchor_child[r], jp.axis_parent[r], jp.axis_child[r], child, parent)
        if kind == "slide":
            G = G.at[d, 6 * c:6 * c + 6].set(geometry.point_jacobian(child, jp.anchor_child[r], ap[None])[0])
            if p >= 0:
                r_p = quat_to_mat(parent.quat).T @ (xc - parent.pos)
                G = G.at[d, 6 * p:6 * p + 6].add(-geometry.point_jacobian(parent, r_p, ap[None])[0])
            continue
        G = G.at[d, 6 * c + 3:6 * c + 6].set(ap @ quat_to_mat(child.quat))  # ω_world = R ω_body
        if p >= 0:
            G = G.at[d, 6 * p + 3:6 * p + 6].add(-(ap @ quat_to_mat(parent.quat)))
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


def passive_motion(model, joints: Joints, jp: JointParams, state: State, v1, Minv, explicit: bool = False):
    """The free velocity and mobility with the hinges' passive forces (MuJoCo's Euler step:
    damping implicit, springs explicit, armature in the mass): with G the rate rows, A, B, K the
    armature, damping and stiffness (diagonal) and v⁰ the step's start velocity, the step solves
    (M + GᵀAG + h GᵀBG)(v − v⁰) = h f − h GᵀBG v⁰ − h GᵀK(q − q_ref) − h GᵀA Ġv⁰ (the armature's force
    A q̈ with q̈ = G v̇ + Ġ v: ``rate_drift``); with v¹ = v⁰ + h M⁻¹f that is
    v = v¹ − M'⁻¹Gᵀ[A G(v¹ − v⁰) + h A Ġv⁰ + h B G v¹ + h K(q − q_ref)], M'⁻¹ = M⁻¹ − M⁻¹Gᵀ(I + C G M⁻¹Gᵀ)⁻¹C G M⁻¹
    (Woodbury, C = A + hB). Returns (v (6N,), M'⁻¹ (6N, 6N)); the joint rows then act through M'⁻¹.
    ``explicit``: every damping (the joints', the actuators' velocity bias, the tendons') explicit, at
    v⁰, and C = A: the acceleration of a Runge–Kutta stage (MuJoCo's RK4 has no implicit damping)."""
    h = model.dt
    dtype = v1.dtype
    D = joints.num_dofs
    zeros = jnp.zeros((D,), dtype)
    per_dof = (lambda a: a) if D == joints.num_joints and joints.uniform else (lambda a: a[joints.dof_joint])
    arm = zeros if jp.armature is None else per_dof(jnp.asarray(jp.armature, dtype))
    damp = zeros if jp.damping is None else per_dof(jnp.asarray(jp.damping, dtype))
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
        # an actuator j < J drives joint j's coordinate (its first dof), J + t tendon t on its length
        index = tuple(joints.dof_start[j] if j < J else D + j - J for j in joints.actuated)
        if T:
            L, Ld = tendon_lengths(joints.tendons, jp.tendons, scalar_view(joints, q), scalar_view(joints, qd))
            q_a, qd_a = jnp.concatenate([q, L]), jnp.concatenate([qd, Ld])
        pushed, extra = joint_forces(index, jp.actuators, q_a if T else q, qd_a if T else qd, D + T,
                                     joints.force_limited)
        pushed, extra, t_pushed, t_extra = pushed[:D], extra[:D], pushed[D:], extra[D:]
        damp = damp + extra
    C = arm if explicit else arm + h * damp
    v_damp = v0 if explicit else v1  # the velocity the damping acts at
    MG = Minv @ G.T  # (6N, D)
    S = jnp.eye(D, dtype=dtype) + C[:, None] * (G @ MG)
    Minv_p = Minv - MG @ linalg.solve(S, C[:, None] * MG.T)
    force = arm * (G @ (v1 - v0)) + h * damp * (G @ v_damp) - h * pushed
    if jp.armature is not None:  # the rotor's inertia force is a·q̈, q̈ = G v̇ + Ġ v: its Ġ v part
        force = force + h * arm * rate_drift(joints, jp, state)
    if jp.stiffness is not None:
        ref = zeros if jp.springref is None else per_dof(jnp.asarray(jp.springref, dtype))
        force = force + h * per_dof(jnp.asarray(jp.stiffness, dtype)) * (q - ref)
    push = G.T @ force
    if jp.tendons is not None and (jp.tendons.has_passive() or T and jp.actuators is not None):
        # the tendons' rows join the update (Woodbury again), with their actuators' forces and implicit damping
        Gt, ct, ft = tendon_passive(joints.tendons, jp.tendons, scalar_view(joints, G),
                                    scalar_view(joints, q) if spring else None, v_damp, h)
        if t_pushed is not None:
            ct, ft = ct + h * t_extra, ft + h * t_extra * (Gt @ v_damp) - h * t_pushed
        if explicit:
            ct = jnp.zeros_like(ct)
        MG = Minv_p @ Gt.T
        S = jnp.eye(Gt.shape[0], dtype=dtype) + ct[:, None] * (Gt @ MG)
        Minv_p = Minv_p - MG @ linalg.solve(S, ct[:, None] * MG.T)
        push = push + Gt.T @ ft
    v = v1 - Minv_p @ push
    return v, 0.5 * (Minv_p + Minv_p.T)


def constraint_drift(joints: Joints, jp: JointParams, state: State):
    """(R,) J̇ v: how the joint rows' velocity J v (``system``) changes as the bodies move at their
    velocities v with v held, by forward differentiation along the motion (as ``rate_drift``): a
    row's acceleration is J a + J̇ v, so J a = −J̇ v keeps J v (a Runge–Kutta stage's rows)."""
    v = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1)

    def rows(pos, quat):
        return system(joints, jp, state.replace(pos=pos, quat=quat))[0] @ v

    dquat = 0.5 * jax.vmap(lambda q, w: quat_mul(q, jnp.concatenate([jnp.zeros((1,), w.dtype), w])))(state.quat, state.omega)
    return jax.jvp(rows, (state.pos, state.quat), (state.vel, dquat))[1]


def stage_correction(model, joints: Joints, jp: JointParams, state: State):
    """(R,) the joint rows' correction of a Runge–Kutta step (``motion``'s ``correction``), from the state
    the step starts from: −(β/h)·error − J v, the Euler step's stabilisation (its drift of position and
    of velocity taken out within a step), held over the step's stages so that the stages' own chords
    off the joints (O(h²), which the stages' accelerations integrate away) are not corrected."""
    Jb, err = system(joints, jp, state)
    v = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1)
    return -(joints.baumgarte / model.dt) * err - Jb @ v


REDUNDANT_REGULARIZATION = 1e-2  # × √(machine ε) × the largest diagonal of J M⁻¹ Jᵀ: ``regularized_motion``


def regularized_motion(Minv, Jb, target, v1):
    """``constrained_motion`` for rows that may be redundant (a loop closed by an equality: a planar
    four-bar's hinges and connect repeat one another's out-of-plane rows, and J M⁻¹ Jᵀ is singular):
    J M⁻¹ Jᵀ + εI with ε = ``REDUNDANT_REGULARIZATION``·√(machine ε)·max diag(J M⁻¹ Jᵀ) (1.5e-10 of it
    in float64), so the impulse in a redundant direction is the least one and the rest are met to
    that relative accuracy. W = M⁻¹ − B Bᵀ with B = M⁻¹Jᵀ L⁻ᵀ (L the Cholesky factor of the
    regularised matrix), symmetrised. Returns as ``constrained_motion``."""
    R = linalg.cholesky(Minv)
    A = R.T @ Jb.T
    K = A.T @ A
    eps = REDUNDANT_REGULARIZATION * jnp.sqrt(jnp.finfo(K.dtype).eps) * jax.lax.stop_gradient(jnp.max(jnp.diag(K)))
    L = linalg.cholesky(K + eps * jnp.eye(K.shape[0], dtype=K.dtype))
    fac = (L, True)
    vc = v1 + Minv @ (Jb.T @ linalg.cho_solve(fac, target - Jb @ v1))
    B = R @ linalg.solve_triangular(L, A.T, lower=True).T
    W = Minv - B @ B.T
    return vc, 0.5 * (W + W.T), fac


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
    R = linalg.cholesky(Minv)
    Q, T = linalg.qr(R.T @ Jb.T)  # Rᵀ Jᵀ = Q T, so J M⁻¹ Jᵀ = Tᵀ T (T: its Cholesky factor, up to signs)
    fac = (T, False)
    # v_c = v¹ + M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹(target − J v¹) = v¹ + R Q T⁻ᵀ(target − J v¹), without forming JM⁻¹Jᵀ
    vc = v1 + R @ (Q @ linalg.solve_triangular(T, target - Jb @ v1, lower=False, trans=True))
    F = R - (R @ Q) @ Q.T
    W = F @ F.T
    return vc, 0.5 * (W + W.T), fac


@dataclasses.dataclass(frozen=True)
class Motion:
    """The bodies' motion before contact (a step's stage, not a pytree). velocity: (N, 6) the
    velocity the contact problem starts from (v¹, or v_c with joints); mobility: (N, 6, 6) every
    body's M⁻¹ (free bodies: W block-diagonal) or (6N, 6N) the jointed W; error: (R,) the joints'
    drift before the step (``Joints.num_rows``)."""

    velocity: Any
    mobility: Any
    error: Any
    v1: Any = None
    minv: Any = None
    jac: Any = None
    target: Any = None
    factor: Any = None
    anchors: Any = None  # (G, 3) static anchor rows of each group (``anchor_rows``) unless every joint is a hinge

    def after(self, p):
        """(N, 6) velocity after the contact impulse p (N, 6): v + W p."""
        if self.factor is None:  # free bodies: every body's own M⁻¹
            return self.velocity + jnp.einsum("nij,nj->ni", self.mobility, p)
        return (self.velocity.reshape(-1) + self.mobility @ p.reshape(-1)).reshape(p.shape)

    def joint_impulse(self, p):
        """(R,) the joint impulse λ (``system``'s rows) with the contact impulse p (N, 6): J_b v⁺ = target with
        v⁺ = v¹ + M⁻¹(J_bᵀλ + p)."""
        if self.factor is None:
            return jnp.zeros((0,), p.dtype)
        return linalg.cho_solve(self.factor, self.target - self.jac @ (self.v1 + self.minv @ p.reshape(-1)))

    def joint_error(self):
        """() the largest anchor separation of a joint before the step (m; 0 without joints)."""
        if self.factor is None:
            return jnp.zeros((), self.velocity.dtype)
        if self.anchors is None:  # every joint a lone hinge: 5 rows each, the anchors' first
            return jnp.max(jnp.linalg.norm(self.error.reshape(-1, 5)[:, :3], axis=1))
        err = jnp.concatenate([self.error, jnp.zeros((1,), self.error.dtype)])[jnp.asarray(self.anchors)]
        return jnp.max(jnp.linalg.norm(err, axis=1))


def motion(model, scene, params: Params, state: State, v1, Minv, correction=None, explicit: bool = False) -> Motion:
    """The step's stage between the free velocities v¹ (N, 6) and the contact problem: free bodies
    start from v¹ with their own M⁻¹ (N, 6, 6); a world with ``scene.joints`` from v_c with the
    jointed W (``constrained_motion``). ``correction`` (R,) or None: a Runge–Kutta stage's
    (``stage_correction`` of the step's start): the joint rows then ask for the acceleration that
    keeps them, J v⁺ = J v − h J̇ v + correction (``constraint_drift``), and the damping is explicit
    (``passive_motion``); None: the Euler step's J v⁺ = −(β/h)·error. ``explicit``: the damping explicit
    in an Euler step (the motion MuJoCo's Euler computes its constraint forces with: ``damped``)."""
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
        v, M = passive_motion(model, joints, params.joints, state, v1, M, explicit=explicit or correction is not None)
    Jb, err = system(joints, params.joints, state)
    if correction is None:
        target = -(joints.baumgarte / model.dt) * err
    else:  # a stage's acceleration: the rows' own rate kept, their drift from the step's start corrected
        v_now = jax.vmap(lambda s: s.generalized_velocity())(state).reshape(-1)
        target = Jb @ v_now - model.dt * constraint_drift(joints, params.joints, state) + correction
    loops = any(joints.kind(j) in EQUALITIES for j in range(joints.num_joints)) or bool(joints.num_tendon_equalities)
    vc, W, fac = (regularized_motion if loops else constrained_motion)(M, Jb, target, v)
    plain = joints.kinds == () and joints.uniform and not joints.num_tendon_equalities
    return Motion(velocity=vc.reshape(N, 6), mobility=W, error=err, v1=v, minv=M, jac=Jb,
                  target=target, factor=fac, anchors=None if plain else anchor_rows(joints))


def damped(joints: Joints | None, jp) -> bool:
    """Whether a world's joints have damping that an Euler step integrates implicitly (static: a
    ``JointParams.damping`` or actuators, whose velocity bias is damping too). MuJoCo's Euler then
    computes the constraint forces with M (the damping explicit) and applies them with M + hD
    (``mj_EulerSkip``); ``pipeline._contacts_coupled`` does so in the mode ``constraints="mujoco"``."""
    return joints is not None and isinstance(jp, JointParams) and (jp.damping is not None or jp.actuators is not None)


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
    if jp.limit_soft is not None:
        ls = np.asarray(jp.limit_soft, float)
        if ls.shape != (J, 2):
            raise ValueError(f"params.joints.limit_soft: expected shape ({J}, 2) (time constant, damping ratio per "
                             f"joint), got {ls.shape}")
        bad = [j for j in range(J) if not (np.all(np.isfinite(ls[j])) and ls[j, 0] > 0 and ls[j, 1] > 0)]
        if bad:
            raise ValueError(f"params.joints.limit_soft[{bad[0]}]: a time constant > 0 and a damping ratio > 0 "
                             f"(MuJoCo's solreflimit), got {ls[bad[0]].tolist()}")
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
    if jp.frictionloss is not None:
        odd = [j for j in range(J) if joints.kind(j) not in SCALAR + ("ball",) and np.asarray(jp.frictionloss, float)[j] != 0]
        if odd:
            raise ValueError(f"params.joints.frictionloss: joints {odd} are not hinges, slides or balls (a "
                             f"{joints.kind(odd[0])}); a friction loss acts on a joint's coordinates: give them 0")
    lengths = joints.tendons is not None and (bool(joints.tendons.limited) or jp.tendons.stiffness is not None)
    kinds = set(joints.kinds)
    needs = [why for why, given in (("a slide keeps the child's orientation in the parent's frame", joints.has_slides),
                                    ("a limited joint's coordinate is measured from it", joints.limited),
                                    ("an actuated joint's coordinate is measured from it", joints.actuated),
                                    ("a tendon's length sums the joints' coordinates", lengths),
                                    ("a ball's turn is measured from it", "ball" in kinds),
                                    ("a weld holds the child at it", kinds & {"welded", "weld"}),
                                    ("a composite joint's coordinates are measured from it",
                                     any(len(g) > 1 for g in joints.groups))) if given]
    if needs and jp.reference is None:
        raise ValueError(f"params.joints.reference: {'; '.join(needs)}: give reference ((J, 4) unit quaternions, the "
                         "child's orientation in the parent's frame at q = 0); it is None")
    for field in ("stiffness", "armature", "damping", "springref"):  # a ball's spring pulls toward its reference
        v = getattr(jp, field)
        bad = [j for j in range(J) if joints.kind(j) not in SCALAR and v is not None and float(np.asarray(v)[j]) != 0
               and (field == "springref" or joints.kind(j) != "ball")]
        if bad:
            raise ValueError(f"params.joints.{field}[{bad[0]}]: joint {bad[0]} is a {joints.kind(bad[0])}, which has no "
                             f"{field} here (a hinge's or a slide's; a ball's damping, armature and stiffness, its "
                             "spring toward its reference); give 0")
    N = np.shape(state.pos)[0]
    body = lambda i: jax.tree_util.tree_map(lambda x: x[i], state)
    for g in joints.groups:
        if len(g) == 1 and joints.kind(g[0]) in SCALAR:
            continue
        j = g[0]
        p, c = joints.parent[j], joints.child[j]
        if max(p, c) >= N:
            raise ValueError(f"Joints: joint {j} names body {max(p, c)} of a world of {N} bodies")
        if len(g) > 1:
            hinges = [i for i in g if joints.kind(i) == "hinge"]
            a = np.asarray(jp.anchor_child)[hinges] if hinges else np.zeros((0, 3))
            if len(hinges) > 1 and len(g) > 2 and np.max(np.abs(a - a[-1])) > ANCHOR_TOL:
                raise ValueError(f"params.joints.anchor_child[{hinges[0]}]: the hinges {hinges} of body {c} do not pass "
                                 "through one point (a composite joint's hinges share their anchor, but for two hinges "
                                 "alone)")
            if len(hinges) == 2:
                b = np.asarray(jp.axis_parent, float)[hinges]
                if np.linalg.norm(np.cross(b[0], b[1])) < 1e-6 * np.linalg.norm(b[0]) * np.linalg.norm(b[1]):
                    raise ValueError(f"params.joints.axis_parent[{hinges[1]}]: the two hinges of body {c} are parallel")
        err = np.asarray(group_rows(joints, jp, g, body(c), None if p < 0 else body(p))[2])
        n = joints.group_anchors(g)
        who = f"a {joints.kind(j)}" if len(g) == 1 else f"joints {list(g)}, one body's composite joint"
        why = consistency_error(j, float(np.linalg.norm(err[:n])), float(np.linalg.norm(err[n:])), start,
                                joints.baumgarte, dt, "params.joints.anchor_parent/anchor_child",
                                "params.joints.axis_parent/axis_child/reference", who + ": its anchors, its turn")
        if why:
            raise ValueError(why)
    for j, (p, c) in enumerate(zip(joints.parent, joints.child)):
        if joints.kind(j) not in SCALAR or len(next(g for g in joints.groups if j in g)) > 1:
            continue
        if max(p, c) >= N:
            raise ValueError(f"Joints: joint {j} names body {max(p, c)} of a world of {N} bodies")
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
           "Motion", "PASSIVE", "STARTS", "ANCHORS", "DOFS", "EQUALITIES", "ROWS", "SCALAR",
           "ball_quaternion", "composite_coordinates", "composite_rates", "composite_rows", "composite_parts", "group_rows", "point_rows", "turn_error", "weld_rows", "anchor_rows", "axis_drift_tolerance", "broken_passive",
           "check_passive", "coordinates", "joint_rows", "limit_rows", "loss_dofs", "loss_rows", "scalar_view", "slide_rows", "soft_limit_speed",
           "passive_motion", "rate_drift", "rate_rows", "check_joint_arrays", "check_start", "consistency_error", "drift_tolerance",
           "constrained_motion", "frames", "REDUNDANT_REGULARIZATION", "regularized_motion",
           "motion", "rows", "system", "validate"]
