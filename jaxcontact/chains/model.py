"""Articulated chains of box links joined by revolute joints, in maximal coordinates.

Conventions (the dacm paper's 3-link chain, section 4.3):

* Link i is a box whose long axis is its body x axis; it is joined to its parent (link i − 1,
  or the world for link 0) by a revolute joint. Joint i sits at ``anchor_parent[i]`` in the
  parent's body frame (world coordinates for the root pin) and at ``anchor_child[i]`` in link
  i's body frame; its axis is ``axis_parent[i]`` / ``axis_child[i]`` in the same frames. The
  chains built here put joints at the link ends (x = ∓L/2) with axes along body y = world y, so
  the chain swings in the world x–z plane, but the engine takes any anchors and axes.
* The chain's state is a ``State`` pytree with a leading link axis (n, …): every link has its
  own maximal-coordinate state (pos, quat, vel world, omega body). ``vmap`` adds batch axes.
* ``ChainParams`` is a pytree of everything differentiable (the stacked link ``Body``, anchors,
  axes, ground, the ground-truth Coulomb parameters); ``ChainModel`` is static and hashable.
* A revolute joint is 5 velocity constraints: the two anchor points move together (3 rows,
  world x, y, z) and the relative angular velocity has no component perpendicular to the axis
  (2 rows, the tangents of the parent's world axis). Drift is corrected Baumgarte-style: the
  rows' target is −(β/h)·error (anchor separation; axis misalignment a_p × a_c).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import geometry, shapes
from ..contact import block_diag
from ..stages import free_velocity
from ..laws.coulomb import CoulombLCP, CoulombParams
from ..rotations import quat_to_mat
from ..solvers import LCPSettings
from ..types import Body, Ground, Model, Params, State
from ..worlds import joints
from ..worlds.joints import check_joint_arrays



@struct.dataclass
class ChainParams:
    """Differentiable chain parameters. links: ``Body`` stacked over n links (mass (n,), inertia
    (n, 3, 3), vertices (n, K, 3), vertex_mask (n, K)). anchor_parent, anchor_child, axis_parent,
    axis_child: (n, 3) (see module docstring). ground: ``Ground``. law: ``CoulombParams`` of the
    ground-truth contact (μ along the ground tangents; restitution is not used by the chain)."""

    links: Body
    anchor_parent: jnp.ndarray
    anchor_child: jnp.ndarray
    axis_parent: jnp.ndarray
    axis_child: jnp.ndarray
    ground: Ground
    law: CoulombParams

    @property
    def num_links(self) -> int:
        return self.links.mass.shape[0]

    def link(self, i: int) -> Body:
        return jax.tree_util.tree_map(lambda x: x[i], self.links)


# The ground truth's contact law: the hard Coulomb LCP, solved tighter than the single-body default.
CHAIN_LAW = CoulombLCP(LCPSettings(tol=1e-7, max_iter=200))


@dataclasses.dataclass(frozen=True)
class ChainModel(Model):
    """Static settings of the chain simulators (hashable: a ``jit`` static argument): a
    ``types.Model`` — ``dt``, ``gravity`` (along world −z), ``max_contacts`` (closest vertices kept
    per link), ``patch_tol``, ``gyroscopic``, validated there — whose ``law`` is the ground truth's
    contact law (a ``CoulombLCP``: its ``solver`` settings solve the chain's contact LCP; the
    exact gradient), plus ``baumgarte``: β of the joint drift correction (target velocity −β/h ·
    error). ``max_correction_speed`` must stay None: the chain's contact target is −φ/h.
    """

    law: Any = CHAIN_LAW
    max_contacts: int = 4
    max_correction_speed: float | None = None
    baumgarte: float = 0.2

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.law, CoulombLCP) or self.law.gradient != "exact":
            raise ValueError(f"ChainModel.law must be a CoulombLCP with the exact gradient, got {self.law!r}")
        if self.max_contacts is None:
            raise ValueError("ChainModel.max_contacts must be an int >= 1 (candidates per link), got None")
        if self.max_correction_speed is not None:
            raise ValueError("ChainModel.max_correction_speed must be None: the chain's contact target is −φ/h, "
                             f"uncapped; got {self.max_correction_speed!r}")
        if not 0 <= self.baumgarte <= 1:
            raise ValueError(f"ChainModel.baumgarte must lie in [0, 1], got {self.baumgarte}")

    @property
    def solver(self) -> LCPSettings:
        """The contact LCP's settings (the law's)."""
        return self.law.solver

    def link_model(self, law=None) -> Model:
        """The single-body ``Model`` of one link (free velocity, a contact law's settings): this
        model's settings with ``law`` (default: the chain's own) and the single-body default
        ``max_correction_speed``."""
        return Model(law=self.law if law is None else law, dt=self.dt, gravity=self.gravity,
                     max_contacts=self.max_contacts, patch_tol=self.patch_tol, gyroscopic=self.gyroscopic)


# ------------------------------------------------------------------------------------ building


def make_chain(sizes=((0.2, 0.05, 0.05),) * 3, masses=(0.185,) * 3, pin=(0.0, 0.0, 0.5),
               mu: float = 0.18, dtype=None) -> ChainParams:
    """A chain of boxes joined end to end (joint i at x = −L_i/2 of link i and x = +L_{i−1}/2
    of link i − 1), the root pinned at the world point ``pin``, all axes along y.

    Defaults: the paper's 3 links, each the ``simulate.make_body("link")`` box (0.2 × 0.05 ×
    0.05 m, 0.185 kg), pinned 0.5 m above the ground. Every array (links, joints, ground, law) is
    of ``dtype`` (default: JAX's default float). Raises ``ValueError`` naming the field for
    non-positive masses or sizes and mismatched lengths.
    """
    sizes = [tuple(float(v) for v in np.broadcast_to(np.asarray(s, float), (3,))) for s in sizes]
    masses = [float(m) for m in masses]
    if len(sizes) != len(masses):
        raise ValueError(f"masses: {len(masses)} masses for {len(sizes)} links")
    if len(sizes) < 1:
        raise ValueError("sizes: a chain needs at least one link")
    for i, m in enumerate(masses):
        if not np.isfinite(m) or m <= 0:
            raise ValueError(f"masses[{i}]: link mass must be positive and finite, got {m}")
    for i, s in enumerate(sizes):
        if not all(np.isfinite(v) and v > 0 for v in s):
            raise ValueError(f"sizes[{i}]: link edge lengths must be positive, got {s}")
    bodies = [shapes.box(s, m) for s, m in zip(sizes, masses)]
    links = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *bodies)
    n = len(sizes)
    half = np.array([s[0] / 2 for s in sizes])
    anchor_child = np.zeros((n, 3))
    anchor_child[:, 0] = -half
    anchor_parent = np.zeros((n, 3))
    anchor_parent[0] = np.asarray(pin, float)
    anchor_parent[1:, 0] = half[:-1]
    axis = np.tile([0.0, 1.0, 0.0], (n, 1))
    f = lambda a: jnp.asarray(a, dtype=dtype or jnp.result_type(float))
    return ChainParams(
        links=jax.tree_util.tree_map(f, links), anchor_parent=f(anchor_parent),
        anchor_child=f(anchor_child), axis_parent=f(axis), axis_child=f(axis),
        ground=jax.tree_util.tree_map(f, Ground.flat(3)), law=jax.tree_util.tree_map(f, CoulombLCP.init_params(mu=mu)),
    )


def _quat_y(theta):
    return jnp.stack([jnp.cos(theta / 2), jnp.zeros_like(theta), jnp.sin(theta / 2), jnp.zeros_like(theta)], -1)


def planar_state(params: ChainParams, angles, rates=None) -> State:
    """Chain state from joint angles about world y (radians; 0 = every link horizontal along
    +x, positive swings the link down) and joint rates (rad/s). Positions and velocities are
    computed joint by joint from the anchors, so the joints coincide exactly."""
    n = params.num_links
    dtype = params.anchor_child.dtype
    angles = jnp.broadcast_to(jnp.asarray(angles, dtype), (n,))
    rates = jnp.zeros(n, dtype) if rates is None else jnp.broadcast_to(jnp.asarray(rates, dtype), (n,))
    theta = jnp.cumsum(angles)
    w = jnp.cumsum(rates)
    ey = jnp.array([0.0, 1.0, 0.0], dtype)
    pos, quat, vel, omega = [], [], [], []
    xj, vj = params.anchor_parent[0], jnp.zeros(3, dtype)
    for i in range(n):
        if i > 0:
            Rp = quat_to_mat(quat[-1])
            xj = pos[-1] + Rp @ params.anchor_parent[i]
            vj = vel[-1] + jnp.cross(w[i - 1] * ey, xj - pos[-1])
        q = _quat_y(theta[i])
        R = quat_to_mat(q)
        p = xj - R @ params.anchor_child[i]
        wv = w[i] * ey
        pos.append(p)
        quat.append(q)
        vel.append(vj + jnp.cross(wv, p - xj))
        omega.append(R.T @ wv)
    return State(pos=jnp.stack(pos), quat=jnp.stack(quat), vel=jnp.stack(vel), omega=jnp.stack(omega))


def horizontal_state(params: ChainParams) -> State:
    """The paper's initial condition: every link horizontal, at rest."""
    return planar_state(params, jnp.zeros(params.num_links))


# ---------------------------------------------------------------------------------- kinematics


def link_state(state: State, i: int) -> State:
    return jax.tree_util.tree_map(lambda x: x[i], state)


def _joint_args(params: ChainParams, state: State, i: int):
    return (params.anchor_parent[i], params.anchor_child[i], params.axis_parent[i], params.axis_child[i],
            link_state(state, i), None if i == 0 else link_state(state, i - 1))


def joint_frames(params: ChainParams, state: State, i: int):
    """World anchor points and axes of joint i: (x_parent, x_child, a_parent, a_child)
    (``worlds.joints.frames``)."""
    return joints.frames(*_joint_args(params, state, i))


def joint_rows(params: ChainParams, state: State, i: int):
    """Constraint rows of joint i: (J_child (5, 6), J_parent (5, 6), error (5,)) (``worlds.joints.rows``).

    Rows: anchor velocity along world x, y, z, then relative angular velocity along the two
    tangents u1, u2 of the parent's world axis. The constraint is J_child v_i − J_parent v_{i−1}
    = −(β/h)·error (J_parent is zero for the root, whose parent is the world)."""
    return joints.rows(*_joint_args(params, state, i))


def world_joints(params: ChainParams, joint_ids, links, baumgarte: float = 0.2):
    """The chain's joints ``joint_ids`` as a world's over its bodies ``links`` (consecutive link
    indices, joint i's parent i − 1 among them, or the world for the root): (``Joints``,
    ``JointParams``)."""
    col = {l: k for k, l in enumerate(links)}
    ids = list(joint_ids)
    desc = joints.Joints(parent=tuple(col[i - 1] if i > 0 else -1 for i in ids), child=tuple(col[i] for i in ids),
                         baumgarte=baumgarte)
    idx = jnp.asarray(ids)
    jp = joints.JointParams(anchor_parent=params.anchor_parent[idx], anchor_child=params.anchor_child[idx],
                            axis_parent=params.axis_parent[idx], axis_child=params.axis_child[idx])
    return desc, jp


def joint_angles(params: ChainParams, state: State) -> jnp.ndarray:
    """(n,) relative rotation of each joint about world y (the chain's plane; 0 = straight)."""
    out = []
    for i in range(params.num_links):
        Rc = quat_to_mat(state.quat[..., i, :])
        Rp = jnp.eye(3, dtype=Rc.dtype) if i == 0 else quat_to_mat(state.quat[..., i - 1, :])
        e = jnp.einsum("...ji,...j->...i", Rp, Rc[..., :, 0])  # Rpᵀ (child x axis)
        out.append(jnp.arctan2(-e[..., 2], e[..., 0]))
    return jnp.stack(out, -1)


def joint_separation(params: ChainParams, state: State) -> jnp.ndarray:
    """(n,) distance between the two anchors of each joint (m)."""
    return jnp.stack([jnp.linalg.norm(joint_frames(params, state, i)[1] - joint_frames(params, state, i)[0])
                      for i in range(params.num_links)])


def energy(model: ChainModel, params: ChainParams, state: State) -> jnp.ndarray:
    """Kinetic plus gravitational energy of the chain (J)."""
    L = params.links
    ke = 0.5 * L.mass * jnp.sum(state.vel**2, -1) + 0.5 * jnp.einsum("ni,nij,nj->n", state.omega, L.inertia, state.omega)
    return jnp.sum(ke + L.mass * model.gravity * state.pos[:, 2])


def lowest_point(params: ChainParams, state: State) -> jnp.ndarray:
    """(n,) signed distance to the ground of each link's lowest vertex (m; a round link's lowest surface point)."""
    def one(body, s):
        if body.is_round:
            _, phi, valid, _ = geometry.candidate_points(body, params.ground, s)
            return jnp.min(jnp.where(valid, phi, jnp.inf))
        phi = geometry.signed_distance(params.ground, geometry.world_points(s, body.vertices))
        return jnp.min(jnp.where(body.vertex_mask > 0, phi, jnp.inf))

    return jax.vmap(one)(params.links, state)


def free_velocities(model: ChainModel, params: ChainParams, state: State) -> jnp.ndarray:
    """(n, 6) velocity of every link after gravity (and gyroscopics) alone."""
    m = model.link_model()
    return jax.vmap(lambda b, s: free_velocity(m, Params(body=b, ground=params.ground, law=None), s))(params.links, state)


def mass_matrix_inverse(params: ChainParams, state: State, links) -> jnp.ndarray:
    """Block-diagonal inverse mass matrix of ``links`` (consecutive indices), (6·len, 6·len)."""
    idx = jnp.asarray(list(links))
    sel = lambda t: jax.tree_util.tree_map(lambda x: x[idx], t)
    return block_diag(jax.vmap(geometry.mass_matrix_inverse)(sel(params.links), sel(state)))


def joint_system(params: ChainParams, state: State, joint_ids, links):
    """Stacked rows of joints ``joint_ids`` over the velocities of ``links`` (consecutive link
    indices): (J (5·len(joint_ids), 6·len(links)), error (5·len(joint_ids),)) (``worlds.joints.system``)."""
    links = list(links)
    desc, jp = world_joints(params, joint_ids, links)
    idx = jnp.asarray(links)
    return joints.system(desc, jp, jax.tree_util.tree_map(lambda x: x[idx], state))


def constrained_free_motion(model: ChainModel, Minv, Jb, err, v1):
    """Velocity after the joint constraints alone and the constrained mobility, with the Baumgarte
    target −(β/h)·error of ``model`` (``worlds.joints.constrained_motion``): (v_c, W, Cholesky
    factor of JM⁻¹Jᵀ)."""
    return joints.constrained_motion(Minv, Jb, -(model.baumgarte / model.dt) * err, v1)


# ---------------------------------------------------------------------------------- validation


def validate_chain(params: ChainParams, state: State, start: str = "initial", model: ChainModel | None = None) -> None:
    """Checks on concrete inputs; ``ValueError`` naming the field. Skipped for tracers. The joints:
    ``worlds.joints.consistency_error`` (``start`` "initial" or "continued", the latter at
    ``model``'s dt and β)."""
    from ..validation import validate_body, validate_ground, validate_law_params

    if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves((params, state))):
        return
    if not isinstance(params, ChainParams):
        raise ValueError(f"params: expected ChainParams, got {type(params).__name__}")
    mass = np.asarray(params.links.mass, float)
    if mass.ndim != 1 or mass.shape[0] < 1:
        raise ValueError(f"params.links.mass: expected shape (n,) with n >= 1 links, got {mass.shape}")
    n = mass.shape[0]
    for i, m in enumerate(mass):
        if not np.isfinite(m) or m <= 0:
            raise ValueError(f"params.links.mass[{i}]: link mass must be positive and finite, got {m}")
    validate_body(params.links, batched=True)
    validate_ground(params.ground, 3)
    validate_law_params(params.law)
    check_joint_arrays(params, n, "params")
    if not isinstance(state, State):
        raise ValueError(f"state: expected a State with a leading link axis, got {type(state).__name__}")
    for name, k in (("pos", 3), ("quat", 4), ("vel", 3), ("omega", 3)):
        a = np.asarray(getattr(state, name), float)
        if a.shape != (n, k):
            raise ValueError(f"state.{name}: expected shape ({n}, {k}) for {n} links, got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"state.{name}: contains NaN or infinite values")
    qn = np.linalg.norm(np.asarray(state.quat, float), axis=1)
    if np.any(np.abs(qn - 1) > 1e-3):
        raise ValueError(f"state.quat: not unit quaternions (|q| = {qn.min():.6g}..{qn.max():.6g})")
    for i in range(n):
        xp, xc, ap, ac = (np.asarray(a) for a in joint_frames(params, state, i))
        d = float(np.linalg.norm(xc - xp))
        ang = float(np.arccos(np.clip(abs(np.dot(ap, ac)), -1, 1)))
        why = joints.consistency_error(i, d, ang, start, 0.2 if model is None else model.baumgarte,
                                       None if model is None else model.dt, "params.anchor_parent/anchor_child",
                                       "params.axis_parent/axis_child",
                                       ("the world pin" if i == 0 else f"link {i - 1}") + f" – link {i}")
        if why:
            raise ValueError(why)
