"""A coupled world's contacts: the collision stage of the step and the contact slots' bookkeeping.

``collide`` gathers every contact of a world at one state (``WorldContacts``): each body's
closest vertices against the ground (``ground_contacts``) and the manifold of every body–body pair
the broad phase keeps (``pair_contacts``: bounding spheres, ``pair_gaps``, under
``Scene.max_pairs``; ``collision.hull_hull`` per kept pair, or ``round_hull``/``round_round`` for
spheres and capsules: ``round_or_hull``, one vmap per pair of topologies or kinds), as rows on
each contact's two bodies. A contact is in the problem when it is within ``reach`` (speculative
contacts). Around the solve: ``patch_phi`` (the distances the restitution switch reads),
``stiff_rows``/``soft_rows`` (the softness outside the islands of this step's impacts),
``warm_slots``/``warm_table`` (the warm start per contact slot), ``manifold_size`` (the coloured
sweeps' group). ``start_overlaps``: how deep pairs start inside each other (the eager warning).
The step that calls these is ``pipeline.step_stages``.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import collision, geometry
from ..rotations import quat_exp, quat_mul, quat_normalize, quat_to_mat
from .joints import coordinates, limit_rows, loss_dofs, loss_rows, rate_rows, scalar_view
from .tendons import limit_rows as tendon_limit_rows, loss_rows as tendon_loss_rows
from ..stages import gravity_magnitude, per_body
from ..types import Params, State
from .planes import check_planes, plane_grounds
from .scene import COMPOUND, Scene


@struct.dataclass
class WorldContacts:
    """Every contact of a world at one state: ``rows`` (C, 2, 3, 6) on the two bodies of each
    contact (signed: their sum is the relative velocity, normal first), ``phi`` (C,), ``valid``
    (C,), ``bodies`` (C, 2) the two body indices (−1: the ground). The first ``num_ground`` are
    body–ground (Cg per body, body-major); the rest are the pair slots' (``n`` per slot):
    ``slot_pair`` (S,) the scene pair each slot holds this step (every pair, in order, without a
    broad phase). ``pair_phi`` (P, n) and ``pair_kind`` (P,) of every pair of the scene (a pair
    the broad phase skipped: φ its bounding spheres' gap, a lower bound, and no patch);
    ``capacity``: a pair within reach was left out (``Flags.CAPACITY``). ``ground_mu``: None (the
    ground's rows take the law's μ), or with tilted planes (``Scene.planes``) the (num_ground, 2) μ
    of each body–ground or body–plane row (``surface_friction``)."""

    rows: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    bodies: jnp.ndarray
    slot_pair: jnp.ndarray
    pair_phi: jnp.ndarray
    pair_kind: jnp.ndarray
    capacity: jnp.ndarray
    num_ground: int = struct.field(pytree_node=False)
    num_limits: int = struct.field(pytree_node=False, default=0)
    ground_mu: jnp.ndarray | None = None
    num_losses: int = struct.field(pytree_node=False, default=0)
    loss_bound: jnp.ndarray | None = None

    @property
    def pair_end(self) -> int:
        """Where the pair slots' contacts end: the joints' range limits (``num_limits``, two per
        limited joint: ``joints.limit_rows``) come last, then the friction losses (``num_losses``,
        ``loss_contacts``, each bounded by ``loss_bound``)."""
        return self.phi.shape[0] - self.num_limits - self.num_losses


def bounding_radii(params: Params):
    """(N,) each body's farthest surface point from its centre of mass (m): its farthest vertex
    (plus its ``radius``), a cylinder's or ellipsoid's (``geometry.shape_reach``)."""
    body = params.body
    far = jnp.max(jnp.where(body.vertex_mask > 0, jnp.linalg.norm(body.vertices, axis=-1), 0.0), axis=-1)
    if not body.is_round:
        return far
    if body.radius is not None:
        far = jnp.where(jnp.any(body.vertex_mask > 0, axis=-1), far + body.radius, 0.0)
    if body.vertex_radius is not None:  # a compound: each vertex its own radius
        far = jnp.maximum(far, jnp.max(jnp.where(body.vertex_mask > 0, jnp.linalg.norm(body.vertices, axis=-1)
                                                 + body.vertex_radius, 0.0), axis=-1))
    if body.vertex_shape is not None:  # a compound's cylinder or ellipsoid part: its circumscribed sphere
        far = jnp.maximum(far, jnp.max(jnp.where(body.vertex_mask > 0, jnp.linalg.norm(body.vertices, axis=-1)
                                                 + jnp.linalg.norm(body.vertex_shape[..., 1:4], axis=-1), 0.0), axis=-1))
    return jnp.maximum(far, geometry.shape_reach(body))


def reach(model, scene: Scene, params: Params, state: State):
    """(N,) how far (m) any point of each body can move this step, plus half the scene's margin:
    h·(|v| + |ω| r + g h) + margin/2, without gradient. A body–ground candidate enters the contact
    problem when its φ is within its body's reach, a pair when its gap is within the sum of its two
    bodies' reaches (speculative contacts: a pair closing at 3 m/s is in the problem before it
    meets, so a 2 ms step never carries it through the surface; the constraint only acts if the
    gap would close this step, because its target is −φ/h)."""
    r = bounding_radii(params)
    speed = jnp.linalg.norm(state.vel, axis=-1) + jnp.linalg.norm(state.omega, axis=-1) * r
    return jax.lax.stop_gradient(model.dt * (speed + gravity_magnitude(model) * model.dt) + 0.5 * scene.margin)


def ground_contacts(model, scene: Scene, params: Params, state: State):
    """Every body's ``model.max_contacts`` closest vertices against the ground (a face's widest
    spread of them when more touch, as a single body's: ``geometry.face_points``), those within the
    body's ``reach`` in the problem: (rows (N·Cg, 2, 3, 6), phi, valid, bodies (N·Cg, 2)). With
    tilted planes (``Scene.planes``): ``surface_contacts``."""
    if scene.planes:
        return surface_contacts(model, scene, params, state)
    N = scene.num_bodies
    Cg = num_ground_contacts(model, scene, params)
    con = per_body(lambda p, s: geometry.contact_candidates(p.body, p.ground, s, Cg, model.patch_tol), params, state)
    jac = con.jac
    if scene.constraints == "mujoco":  # MuJoCo's contact point: midway between the two surfaces
        jac = soft_jacobians(scene, params, state, con)
    rows = jnp.stack([jnp.zeros_like(jac), jac], axis=2).reshape(N * Cg, 2, 3, 6)
    bodies = np.stack([np.full(N * Cg, -1), np.repeat(np.arange(N), Cg)], axis=1)
    valid = con.valid
    if N > 1:  # candidates beyond reach stay out of the problem (a single body keeps all, as dynamics does;
        # so does a jointed body: its joints can move it faster than its own velocity says)
        valid = valid & ((con.phi <= reach(model, scene, params, state)[:, None]) | scene.jointed_bodies[:, None])
    if scene.fixed:  # a fixed body never touches the ground
        valid = valid & ~scene.fixed_bodies[:, None]
    if scene.off_ground:  # nor does a body that collides with nothing or that MuJoCo's filter keeps off the floor
        valid = valid & ~scene.off_ground_bodies[:, None]
    return rows, con.phi.reshape(-1), valid.reshape(-1), bodies


def midway_jacobian(state: State, con: geometry.Contacts, vertices=None, partner=None):
    """The Jacobians of ``con``'s candidates (one body against one surface) as MuJoCo's contacts: at
    MuJoCo's contact point, midway between the two surfaces (``mj_collideGeoms``' ``con.pos``: the body's
    surface point moved by −φ/2 along the surface normal), in place of the body's surface point (under
    MuJoCo's soft contacts a row acts within the margin and while the surfaces overlap, and its lever arm
    is MuJoCo's); and a capsule's candidates with MuJoCo's frame, their first tangent along the capsule's
    axis (``mjc_PlaneCapsule``; the pyramid's edges turn with it), where ``partner`` (V,) names each
    vertex's other end of its capsule (−1: none) among ``vertices`` (V, 3), body frame."""
    R = quat_to_mat(state.quat)
    shift = jnp.where(con.valid, 0.5 * con.phi, 0.0)[:, None] * (con.normal @ R)[None, :]  # body frame: Rᵀn φ/2
    n = con.normal
    C = con.phi.shape[0]
    t1 = jnp.broadcast_to(con.tangents[0], (C, 3))
    t2 = jnp.broadcast_to(con.tangents[1], (C, 3))
    if partner is not None:
        V = vertices.shape[0]
        own = jnp.minimum(con.index, V - 1)
        other = jnp.where(con.index < V, jnp.asarray(partner)[own], -1)
        axis = (vertices[jnp.maximum(other, 0)] - vertices[own]) @ R.T  # world
        along = axis - (axis @ n)[:, None] * n[None, :]  # MuJoCo's mju_makeFrame: orthogonal to the normal
        size = jnp.linalg.norm(axis, axis=1)
        norm = jnp.linalg.norm(along, axis=1)
        use = (other >= 0) & (norm > 1e-6 * size)  # a standing capsule keeps the default frame
        u = along / jnp.where(use, norm, 1.0)[:, None]
        t1 = jnp.where(use[:, None], u, t1)
        t2 = jnp.where(use[:, None], jnp.cross(n[None, :], u), t2)
    dirs = jnp.stack([jnp.broadcast_to(n, (C, 3)), t1, t2], axis=1)  # (C, 3, 3)
    return jax.vmap(lambda r, d: geometry.point_jacobian(state, r, d))(con.r_body - shift, dirs)


def capsule_partners(scene: Scene, num_vertices: int):
    """(N, V) int32: for each body's vertex the other end of its capsule (a capsule body's two vertices,
    a compound's capsule parts'), −1 elsewhere; None when no body holds a capsule (static)."""
    if scene.shapes is None:
        return None
    out = np.full((scene.num_bodies, num_vertices), -1, np.int32)
    for i, kind in enumerate(scene.shapes):
        parts = scene.parts[i] if scene.parts is not None else None
        if parts:
            for part in parts:
                if part[0] == "capsule" and part[2] - part[1] == 2:
                    out[i, part[1]], out[i, part[1] + 1] = part[1] + 1, part[1]
        elif kind == "capsule":
            out[i, 0], out[i, 1] = 1, 0
    return out if (out >= 0).any() else None


def soft_jacobians(scene: Scene, params: Params, state: State, con):
    """``midway_jacobian`` of every body's candidates (``con`` per body) under MuJoCo's soft contacts."""
    partner = capsule_partners(scene, params.body.vertices.shape[-2])
    if partner is None:
        return per_body(lambda p, s, c: midway_jacobian(s, c), params, state, con)
    return per_body(lambda p, s, c, k: midway_jacobian(s, c, p.body.vertices, k), params, state, con,
                    jnp.asarray(partner))


def surfaces(scene: Scene, params: Params):
    """The world's fixed surfaces in their order: the ground (if ``Scene.ground``), then each tilted
    plane (``Params.planes``) as a ``Ground``; refuses planes that disagree with the scene."""
    check_planes(scene, params)
    out = [params.ground] if scene.ground else []
    return out + (plane_grounds(params.planes) if scene.planes else [])


def surface_contacts(model, scene: Scene, params: Params, state: State):
    """``ground_contacts`` of a world with tilted planes: every body's ``model.max_contacts``
    candidates against each surface (``surfaces``: the ground, then the planes), in the plane's frame
    as against the ground (a hull's vertices, a round body's surface points, a compound's parts':
    ``geometry.contact_candidates``), body-major: (rows (N·S·Cs, 2, 3, 6), phi, valid, bodies)."""
    N = scene.num_bodies
    num_ground_contacts(model, scene, params)  # the one count's check
    Cs = model.num_contacts(params.body)
    grounds = surfaces(scene, params)
    cons = [per_body(lambda p, s, g=g: geometry.contact_candidates(p.body, g, s, Cs, model.patch_tol), params, state)
            for g in grounds]
    S = len(grounds)
    if scene.constraints == "mujoco":  # MuJoCo's contact point: midway between the two surfaces
        cons = [c.replace(jac=soft_jacobians(scene, params, state, c)) for c in cons]
    jac = jnp.concatenate([c.jac for c in cons], axis=1)  # (N, S·Cs, 3, 6)
    phi = jnp.concatenate([c.phi for c in cons], axis=1)
    valid = jnp.concatenate([c.valid for c in cons], axis=1)
    rows = jnp.stack([jnp.zeros_like(jac), jac], axis=2).reshape(N * S * Cs, 2, 3, 6)
    bodies = np.stack([np.full(N * S * Cs, -1), np.repeat(np.arange(N), S * Cs)], axis=1)
    if N > 1:
        valid = valid & ((phi <= reach(model, scene, params, state)[:, None]) | scene.jointed_bodies[:, None])
    if scene.fixed:  # a fixed body touches neither the ground nor a plane
        valid = valid & ~scene.fixed_bodies[:, None]
    if scene.contactless:  # nor does a body that collides with nothing
        valid = valid & ~scene.contactless_bodies[:, None]
    if scene.no_ground:  # the ground (the first surface) not for the bodies kept off it; the planes still
        off = np.zeros((N, S * Cs), bool)
        off[np.asarray(scene.no_ground), :Cs] = True
        valid = valid & ~off
    return rows, phi.reshape(-1), valid.reshape(-1), bodies


def surface_friction(model, scene: Scene, params: Params, dtype):
    """(N·S·Cs, 2) the μ of ``surface_contacts``' rows before a body's own material: the law's on the
    ground's, each plane's own (``Planes.friction``) on its rows (mixed with a body's by
    ``materials.contact_friction`` as the ground's μ is)."""
    N, Cs = scene.num_bodies, model.num_contacts(params.body)
    law_mu = jnp.broadcast_to(jnp.asarray(params.law.mu, dtype), (2,))
    per = ([law_mu[None]] if scene.ground else []) + [
        jnp.broadcast_to(jnp.asarray(params.planes.friction[k], dtype), (1, 2)) for k in range(scene.planes)]
    one = jnp.repeat(jnp.concatenate(per), Cs, axis=0)  # (S·Cs, 2): one body's rows
    return jnp.tile(one, (N, 1))


def _pair_rows(state_a, state_b, pc: collision.PairContacts):
    """Rows (n, 2, 3, 6) of a pair's contacts: −(rows on a), rows on b, along [normal, tangents]."""
    dirs = jnp.concatenate([pc.normal[None], geometry.tangent_basis(pc.normal)], axis=0)

    def on(s, p):
        r = (p - s.pos) @ quat_to_mat(s.quat)  # body frame: Rᵀ(p − x)
        return geometry.point_jacobian(s, r, dirs)

    ra = jax.vmap(lambda p: on(state_a, p))(pc.point)
    rb = jax.vmap(lambda p: on(state_b, p))(pc.point)
    return jnp.stack([-ra, rb], axis=1)


def round_or_hull(ta, va, ra, sa, tb, vb, rb, sb, n: int, margin, method: str, da=None, db=None) -> collision.PairContacts:
    """One pair's manifold by its two bodies' ``Scene.pair_shape`` (static): two hulls
    ``collision.hull_hull``, a sphere or capsule against a hull ``collision.round_hull`` (either
    order: the normal flipped to point a → b), two of them ``collision.round_round``; a cylinder
    or ellipsoid against any kind ``collision.convex_pair`` (``da``, ``db``: the bodies'
    ``shape_dims``)."""
    if ta in collision.CONVEX_KINDS or tb in collision.CONVEX_KINDS:
        return collision.convex_pair(ta, va, ra, da, sa.pos, sa.quat, tb, vb, rb, db, sb.pos, sb.quat, num=n,
                                     margin=margin, method=method)
    if not isinstance(ta, str) and not isinstance(tb, str):
        return collision.hull_hull(va, ta, sa.pos, sa.quat, vb, tb, sb.pos, sb.quat, num=n, margin=margin, method=method)
    if isinstance(ta, str) and isinstance(tb, str):
        return collision.round_round(ta, va, ra, sa.pos, sa.quat, tb, vb, rb, sb.pos, sb.quat, num=n, margin=margin)
    if isinstance(ta, str):
        return collision.round_hull(ta, va, ra, sa.pos, sa.quat, vb, tb, sb.pos, sb.quat, num=n, margin=margin)
    pc = collision.round_hull(tb, vb, rb, sb.pos, sb.quat, va, ta, sa.pos, sa.quat, num=n, margin=margin)
    return pc.replace(normal=-pc.normal)


def is_compound(shape) -> bool:
    """Whether a ``Scene.pair_shape`` is a compound's (``("compound", parts)``)."""
    return isinstance(shape, tuple) and len(shape) == 2 and shape[0] == COMPOUND


def shape_parts(shape, verts, radius, vertex_radius):
    """A body's parts for the narrow phase, ``[(pair shape, vertices, radius)]``: a compound's
    (each hull part its topology and vertex range, each round part its kind, its vertices and its
    own radius ``vertex_radius[start]``), or the body itself as its one part."""
    if not is_compound(shape):
        return [(shape, verts, radius)]
    return [(topo if kind == "hull" else kind, verts[start:stop], vertex_radius[start] + radius)
            for kind, start, stop, topo in shape[1]]


def part_state(state: State, centre, shape_row):
    """A compound's cylinder or ellipsoid part as a body of its own for ``collision.convex_pair``: its
    state (the body's pose composed with the part's centre and orientation, ``Body.vertex_shape``'s
    row) and its dimensions (3,)."""
    R = quat_to_mat(state.quat)
    return state.replace(pos=state.pos + R @ centre, quat=quat_mul(state.quat, shape_row[4:8])), shape_row[1:4]


def compound_pair(ta, va, ra, wa, sa, tb, vb, rb, wb, sb, n: int, margin, method: str, xa=None, xb=None, da=None,
                  db=None):
    """The contacts of a pair holding a body of several shapes (``shapes.compound``): every part
    pair's manifold (``round_or_hull``, ``n`` points each, its own normal) as rows on the two
    *bodies* (their states: the parts' contacts are the bodies'), then the ``n`` deepest valid ones
    kept (chosen without gradient). (rows (n, 2, 3, 6), phi (n,), valid (n,), kind ()): the
    most-touching patch of its parts'. ``wa``/``wb``: the bodies' ``vertex_radius`` (K,); ``xa``/``xb``
    their ``vertex_shape`` (K, 8) (None: no cylinder or ellipsoid part): such a part is a body of its
    own at its pose (``part_state``), through ``collision.convex_pair``; ``da``/``db`` a cylinder's or
    ellipsoid's body's dimensions (``shape_dims``) where it is not a compound."""
    rows, phi, valid, kinds = [], [], [], []

    def posed(kind, verts, s, shape, start, table, dims):
        if kind in collision.CONVEX_KINDS and is_compound(shape):  # a part at its own pose and size
            return part_state(s, verts[0], table[start])
        return s, dims

    starts_a = [p[1] for p in ta[1]] if is_compound(ta) else [0]
    starts_b = [p[1] for p in tb[1]] if is_compound(tb) else [0]
    for (pa, xa_, qa), ka in zip(shape_parts(ta, va, ra, wa), starts_a):
        for (pb, xb_, qb), kb in zip(shape_parts(tb, vb, rb, wb), starts_b):
            psa, pda = posed(pa, xa_, sa, ta, ka, xa, da)
            psb, pdb = posed(pb, xb_, sb, tb, kb, xb, db)
            pc = round_or_hull(pa, xa_, qa, psa, pb, xb_, qb, psb, n, margin, method, pda, pdb)
            rows.append(_pair_rows(sa, sb, pc))
            phi.append(pc.phi)
            valid.append(pc.valid)
            kinds.append(pc.kind)
    rows, phi, valid = jnp.concatenate(rows), jnp.concatenate(phi), jnp.concatenate(valid)
    _, keep = jax.lax.top_k(-jax.lax.stop_gradient(jnp.where(valid, phi, jnp.inf)), n)
    return rows[keep], phi[keep], valid[keep], jnp.max(jnp.stack(kinds))


FAST_HIT = 1e-4
"""A pair whose bodies can move more than this (m) within the step (h·(|v| + |ω| r) summed over the
two) is a fast pair when ``Scene.fast_hits`` is on: its contacts are taken at the pose it reaches."""


def predicted(model, state: State):
    """Each body's pose after one step at its current velocities (semi-implicit Euler as
    ``stages.integrate``, without gravity or contact), velocities unchanged."""
    h = model.dt
    step = jnp.vectorize(lambda q, w: quat_normalize(quat_mul(q, quat_exp(h * w))), signature="(4),(3)->(4)")
    return state.replace(pos=state.pos + h * state.vel, quat=step(state.quat, state.omega))


def fast_pairs(model, params: Params, state: State, pairs):
    """(P,) the pairs (an (P, 2) array of body indices) that can move more than ``FAST_HIT`` within
    the step (h·(|v| + |ω| r) of both bodies, r the bounding radius), without gradient."""
    r = bounding_radii(params)
    move = model.dt * (jnp.linalg.norm(state.vel, axis=-1) + jnp.linalg.norm(state.omega, axis=-1) * r)
    return jax.lax.stop_gradient(move[pairs[:, 0]] + move[pairs[:, 1]] > FAST_HIT)


SEPARATE_SLOP = 1e-5
"""How deep (m) a fast pair may end a step inside itself before ``separate_fast_pairs`` moves it out
to this depth (Box2D's linear slop, at the scale of the census's 40 µm)."""

SEPARATE_SWEEPS = 4
"""Gauss–Seidel sweeps over a pair's contacts in ``separate_fast_pairs`` (Box2D v2's position solver)."""


def separate_fast_pairs(model, scene: Scene, params: Params, before: State, after: State, Minv, held):
    """``after`` with the overlap of every fast pair (``fast_pairs`` at ``before`` or ``after``)
    removed at position level (``Scene.fast_hits``; the position solve of Box2D v2, an NGS step, by
    translation): the pairs' manifolds at ``after``, and per pair slot a few Gauss–Seidel sweeps of
    the linearised position problem φ + J M⁻¹Jᵀ λ ≥ −``SEPARATE_SLOP``, λ ≥ 0 on its normal rows,
    with the translational block of M⁻¹ only (the narrow phase's normal is the axis of least
    penetration: moving the bodies apart along it by the depth separates them, where a rotation
    swings the points the manifold did not keep into the other body), each body moved by its share.
    Velocities and orientations untouched (no kinetic energy added). ``held`` (N,): bodies not
    moved (fixed, jointed, or resting on the ground: the thrown body is moved off the resting one,
    not the resting one into the ground; both move when both are held but neither is fixed or
    jointed). A body in several moved pairs takes the mean of their moves. A pair with no contact
    deeper than the slop is untouched, bitwise: (state, moved (N,) bool)."""
    P, N = scene.num_pairs, scene.num_bodies
    pairs = np.asarray(scene.pairs, dtype=int).reshape(P, 2)
    fast = fast_pairs(model, params, before, pairs) | fast_pairs(model, params, after, pairs)
    pinned = np.zeros(N, bool)
    if scene.fixed:
        pinned |= scene.fixed_bodies
    if scene.joints is not None:
        pinned |= scene.jointed_bodies
    n = scene.slot_contacts
    rows, phi, valid, bodies, slot_pair, *_ = pair_contacts(model, dataclasses.replace(scene, fast_hits=False), params, after)
    S = slot_pair.shape[0]
    J = rows[:, :, 0, :].reshape(S, n, 2, 6)
    phi, valid = phi.reshape(S, n), valid.reshape(S, n) & fast[slot_pair][:, None]
    ab = bodies.reshape(S, n, 2)[:, 0]
    pin = jnp.asarray(pinned)[ab]
    hold = jnp.asarray(held)[ab] | pin
    hold = jnp.where(jnp.all(hold, axis=1, keepdims=True), pin, hold)  # both resting: both move
    J = J[..., :3]  # translation only: the axis of least penetration separates
    M = jnp.where(hold[..., None, None], 0.0, Minv[ab][..., :3, :3])  # (S, 2, 3, 3)
    MJ = jnp.einsum("skab,snkb->snka", M, J)  # (S, n, 2, 3)
    K = jnp.einsum("snka,snka->sn", J, MJ)
    act = valid & (K > 0)
    K = jnp.where(act, K, 1.0)
    lam = jnp.zeros_like(phi)
    move = jnp.zeros((S, 2, 3), phi.dtype)
    for _ in range(SEPARATE_SWEEPS):
        for i in range(n):
            c = phi[:, i] + jnp.einsum("ska,ska->s", J[:, i], move)
            new = jnp.where(act[:, i], jnp.maximum(lam[:, i] - (c + SEPARATE_SLOP) / K[:, i], 0.0), 0.0)
            move = move + MJ[:, i] * (new - lam[:, i])[:, None, None]
            lam = lam.at[:, i].set(new)
    on = jnp.any(lam > 0, axis=1)[:, None] & ~hold  # (S, 2) the bodies each slot moves
    count = jnp.zeros(N, phi.dtype).at[ab].add(on.astype(phi.dtype))
    total = jnp.zeros((N, 3), phi.dtype).at[ab.reshape(-1)].add(jnp.where(on[..., None], move, 0.0).reshape(-1, 3))
    moved = count > 0
    pos = jnp.where(moved[:, None], after.pos + total / jnp.maximum(count, 1.0)[:, None], after.pos)
    return after.replace(pos=pos), moved


def shape_dims(body, num_bodies: int, dtype):
    """(N, 3) each body's dimensions for ``collision.convex_pair``: a cylinder's (ρ, l, 0), an
    ellipsoid's (a, b, c) (zeros where a body has neither)."""
    dims = jnp.zeros((num_bodies, 3), dtype)
    if body.cylinder is not None:
        dims = dims.at[:, :2].add(jnp.asarray(body.cylinder, dtype))
    if body.ellipsoid is not None:
        dims = dims + jnp.asarray(body.ellipsoid, dtype)
    return dims


def pair_gaps(scene: Scene, params: Params, state: State):
    """(P,) a lower bound of every pair's distance (the broad phase): the distance of the two
    centres of mass minus both bodies' bounding radii (their farthest vertex)."""
    radius = bounding_radii(params)
    a, b = np.asarray(scene.pairs, dtype=int).reshape(-1, 2).T
    return jnp.linalg.norm(state.pos[a] - state.pos[b], axis=-1) - radius[a] - radius[b]


def keep_slots(limit: int, phi, valid):
    """The broad phase across the groups of pairs (``Scene.max_slots``): of the slots the narrow
    phase filled (``phi``, ``valid``: (S, n)), the ``limit`` to keep, those with a contact within
    reach first, the nearest (least φ of a valid contact) first, returned in the table's order
    (indices (limit,)), and whether one more had a contact within reach (left out: ``CAPACITY``).
    A choice without gradient."""
    touch = jnp.any(valid, axis=1)
    near = jnp.where(touch, -jnp.min(jnp.where(valid, jax.lax.stop_gradient(phi), jnp.inf), axis=1), -jnp.inf)
    top, sel = jax.lax.top_k(near, limit + 1)
    return jnp.sort(sel[:limit]), touch[sel[limit]]


def pair_contacts(model, scene: Scene, params: Params, state: State):
    """The manifolds (``collision.hull_hull``, within the pair's ``reach``) of the pairs the broad
    phase keeps (every pair without ``Scene.max_pairs``: there, the pairs with the least gap less
    reach), one vmap per topology pair, then at most ``Scene.max_slots`` of them across the groups
    (``keep_slots``): (rows (S·n, 2, 3, 6), phi, valid, bodies (S·n, 2), slot_pair (S,),
    pair_phi (P, n), pair_kind (P,), capacity); ``pair_phi``/``pair_kind`` of every pair the narrow
    phase ran on."""
    n, P = scene.slot_contacts, scene.num_pairs
    pairs = np.asarray(scene.pairs, dtype=int).reshape(P, 2)
    dtype = state.pos.dtype
    broad = scene.max_pairs is not None
    body_reach = reach(model, scene, params, state)
    pair_reach = body_reach[pairs[:, 0]] + body_reach[pairs[:, 1]]
    gaps = jax.lax.stop_gradient(pair_gaps(scene, params, state)) if broad else None
    capacity = jnp.zeros((), bool)
    out = []
    for ta, tb, ks in scene.pair_groups():
        ks = np.asarray(ks)
        K = scene.pair_slots(len(ks))
        if K < len(ks):  # the K pairs of this group with the smallest gaps; one more within reach is flagged
            neg, sel = jax.lax.top_k(pair_reach[ks] - gaps[ks], K + 1)
            capacity = capacity | (neg[K] >= 0)
            idx = jnp.asarray(ks)[sel[:K]]
            ia, ib = jnp.asarray(pairs[:, 0])[idx], jnp.asarray(pairs[:, 1])[idx]
        else:
            idx, ia, ib = ks, pairs[ks, 0], pairs[ks, 1]
        sa = jax.tree_util.tree_map(lambda x: x[ia], state)
        sb = jax.tree_util.tree_map(lambda x: x[ib], state)
        va, vb = params.body.vertices[ia], params.body.vertices[ib]

        rad = params.body.radius if params.body.radius is not None else jnp.zeros(scene.num_bodies, dtype)
        ra, rb = rad[ia], rad[ib]
        dims = shape_dims(params.body, scene.num_bodies, dtype)
        da, db = dims[ia], dims[ib]

        def one(va, ra, sa, vb, rb, sb, margin, fast, da, db, ta=ta, tb=tb):
            if fast is not None:  # a fast pair: the manifold of the pose it reaches (the features that meet)
                pa, pb = predicted(model, sa), predicted(model, sb)
                sa, sb = (jax.tree_util.tree_map(lambda p, c: jnp.where(fast, p, c), ps, cs) for ps, cs in ((pa, sa), (pb, sb)))
            pc = round_or_hull(ta, va, ra, sa, tb, vb, rb, sb, n, margin, scene.narrow_phase, da, db)
            rows, phi = _pair_rows(sa, sb, pc), pc.phi
            if fast is not None:  # back to this pose to first order: φ − h v_n, v_n the pair's closing speed now
                vn = rows[:, 0, 0] @ jnp.concatenate([sa.vel, sa.omega]) + rows[:, 1, 0] @ jnp.concatenate([sb.vel, sb.omega])
                phi = jnp.where(fast, phi - model.dt * vn, phi)
            return rows, phi, pc.valid, pc.kind

        if is_compound(ta) or is_compound(tb):  # per part pair (a body of several shapes; fast hits not applied)
            wr = params.body.vertex_radius
            xs = params.body.vertex_shape
            xa, xb = (None, None) if xs is None else (xs[ia], xs[ib])
            r, f, v, k = jax.vmap(lambda va, ra, wa, sa, vb, rb, wb, sb, margin, xa, xb, da, db, ta=ta, tb=tb: compound_pair(
                ta, va, ra, wa, sa, tb, vb, rb, wb, sb, n, margin, scene.narrow_phase, xa, xb, da, db))(
                va, ra, wr[ia], sa, vb, rb, wr[ib], sb, pair_reach[idx], xa, xb, da, db)
        else:
            fast = fast_pairs(model, params, state, jnp.stack([jnp.asarray(ia), jnp.asarray(ib)], axis=1)) if scene.fast_hits else None
            r, f, v, k = jax.vmap(one, in_axes=(0, 0, 0, 0, 0, 0, 0, None if fast is None else 0, 0, 0))(
                va, ra, sa, vb, rb, sb, pair_reach[idx], fast, da, db)
        out.append((idx, jnp.stack([jnp.asarray(ia), jnp.asarray(ib)], axis=1), r, f, v, k))
    cols = [jnp.concatenate([o[i] for o in out]) for i in range(6)]
    if not broad:  # every pair, in the scene's order
        order = np.argsort(np.concatenate([o[0] for o in out]), kind="stable")
        cols = [c[order] for c in cols]
    slot_pair, slot_bodies, rows, phi, valid, kind = cols
    full = jnp.pad(phi, ((0, 0), (0, scene.pair_contacts - n)), constant_values=collision.FAR)  # (S, pair_contacts)
    if broad:
        pair_phi = jnp.broadcast_to(gaps[:, None], (P, scene.pair_contacts)).astype(dtype).at[slot_pair].set(full)
        pair_kind = jnp.zeros((P,), jnp.int32).at[slot_pair].set(kind)
    else:
        pair_phi, pair_kind = full, kind
    if scene.max_slots is not None and slot_pair.shape[0] > scene.max_slots:  # one cap across the groups
        keep, over = keep_slots(scene.max_slots, phi, valid)
        capacity = capacity | over
        slot_pair, slot_bodies, rows, phi, valid = (c[keep] for c in (slot_pair, slot_bodies, rows, phi, valid))
    S = slot_pair.shape[0]
    bodies = jnp.repeat(slot_bodies, n, axis=0)
    return (rows.reshape(S * n, 2, 3, 6), phi.reshape(-1), valid.reshape(-1), bodies, slot_pair, pair_phi,
            pair_kind, capacity)


def collide(model, scene: Scene, params: Params, state: State) -> WorldContacts:
    """The world's contacts at ``state``: body–ground (if the scene has the ground) then body–body."""
    parts = []
    if scene.ground or scene.planes:
        parts.append(ground_contacts(model, scene, params, state))
    dtype = state.pos.dtype
    slot_pair, pair_phi = jnp.zeros((0,), jnp.int32), jnp.zeros((0, scene.pair_contacts), dtype)
    pair_kind, capacity = jnp.zeros((0,), jnp.int32), jnp.zeros((), bool)
    if scene.pairs:
        *pair, slot_pair, pair_phi, pair_kind, capacity = pair_contacts(model, scene, params, state)
        parts.append(tuple(pair))
    num_limits = 0
    if scene.joints is not None and scene.joints.limited:
        parts.append(limit_contacts(model, scene, params, state))
        num_limits = parts[-1][0].shape[0]
    if scene.joints is not None and scene.joints.tendons is not None and scene.joints.tendons.limited:
        parts.append(tendon_limit_contacts(model, scene, params, state))
        num_limits += parts[-1][0].shape[0]
    losses, bound = num_losses(scene, params), None
    if losses:
        *loss, bound = loss_contacts(model, scene, params, state)
        parts.append(tuple(loss))
    if not parts:  # joints alone (no ground, no pairs): nothing to touch
        parts.append((jnp.zeros((0, 2, 3, 6), dtype), jnp.zeros((0,), dtype), jnp.zeros((0,), bool),
                      jnp.zeros((0, 2), jnp.int32)))
    parts = sides(parts)
    rows = jnp.concatenate([p[0] for p in parts])
    phi = jnp.concatenate([p[1] for p in parts])
    valid = jnp.concatenate([p[2] for p in parts])
    bodies = jnp.concatenate([jnp.asarray(p[3], jnp.int32) for p in parts])
    num_ground = parts[0][0].shape[0] if scene.ground or scene.planes else 0
    ground_mu = surface_friction(model, scene, params, dtype) if scene.planes else None
    return WorldContacts(rows=rows, phi=phi, valid=valid, bodies=bodies, slot_pair=jnp.asarray(slot_pair, jnp.int32),
                         pair_phi=pair_phi, pair_kind=pair_kind, capacity=capacity, num_ground=num_ground,
                         num_limits=num_limits, ground_mu=ground_mu, num_losses=losses, loss_bound=bound)


def limit_contacts(model, scene: Scene, params: Params, state: State):
    """The joints' range limits as contacts (``joints.limit_rows``): (rows, phi, valid, bodies). A
    limit is in the problem when it is within the scene's margin plus twice what the joint moves
    toward it this step (speculative, as a contact: its row allows the approach up to the limit)."""
    rows, phi, rate, bodies = limit_rows(scene.joints, params.joints, state)
    reach = scene.margin + 2.0 * model.dt * jnp.maximum(-jax.lax.stop_gradient(rate), 0.0)
    return rows, phi, jax.lax.stop_gradient(phi) < reach, bodies


def num_losses(scene: Scene, params: Params) -> int:
    """How many friction-loss contacts a world has (static): one per joint's coordinate (a ball's three, a
    weld's one zero row: ``joints.loss_dofs``) when its ``JointParams.frictionloss`` is set, one per tendon when its ``TendonParams.frictionloss`` is
    (``loss_contacts``)."""
    jp = getattr(params, "joints", None)
    if scene.joints is None or jp is None:
        return 0
    tendons = jp.tendons is not None and jp.tendons.frictionloss is not None
    return ((len(loss_dofs(scene.joints)) if jp.frictionloss is not None else 0)
            + (scene.joints.tendons.num_tendons if tendons else 0))


def num_joint_contacts(scene: Scene, params: Params) -> int:
    """How many contacts the joints and tendons add after the pairs (static): two per limited hinge or
    slide, one per ball's cone (``Joints.num_limit_rows``), two per limited tendon, and the friction
    losses (``num_losses``)."""
    if scene.joints is None:
        return 0
    tendons = scene.joints.tendons
    return (scene.joints.num_limit_rows + (0 if tendons is None else 2 * len(tendons.limited_tendons))
            + num_losses(scene, params))


def sides(parts):
    """``parts`` (each (rows (C, S, 3, 6), phi, valid, bodies (C, S)[, ...])) with every part's
    contacts on as many sides as the widest (a tendon's rows move every body its joints move): the
    missing sides are the world's (−1, zero rows)."""
    S = max(p[0].shape[1] for p in parts)
    pad = lambda p: (jnp.pad(p[0], ((0, 0), (0, S - p[0].shape[1]), (0, 0), (0, 0))), p[1], p[2],
                     jnp.pad(jnp.asarray(p[3], jnp.int32), ((0, 0), (0, S - p[0].shape[1])), constant_values=-1)) + tuple(p[4:])
    return [p if p[0].shape[1] == S else pad(p) for p in parts]


def loss_contacts(model, scene: Scene, params: Params, state: State):
    """The friction losses as contacts, the joints' (``joints.loss_rows``) then the tendons'
    (``tendons.loss_rows``): (rows, phi, valid, bodies, bound). Each holds its normal impulse at 1
    (``BodyProblem.fixed_normal``) and its friction bound is ``bound`` = frictionloss·h, the
    joint's (tendon's) largest impulse in a step; a loss of 0 is out of the problem (not valid)."""
    joints, jp, dtype = scene.joints, params.joints, state.pos.dtype
    parts, bound = [], []
    if jp.frictionloss is not None:
        parts.append(loss_rows(joints, jp, state))
        bound.append(jnp.asarray(jp.frictionloss, dtype)[np.asarray([j for j, _ in loss_dofs(joints)], np.int64)])
    if jp.tendons is not None and jp.tendons.frictionloss is not None:
        parts.append(tendon_loss_rows(joints.tendons, jp.tendons, scalar_view(joints, rate_rows(joints, state, jp)),
                                      joints.child, joints.parent))
        bound.append(jnp.asarray(jp.tendons.frictionloss, dtype))
    parts = sides([(r, None, None, b) for r, b in parts])
    bound = model.dt * jnp.concatenate(bound)
    phi = jnp.zeros(bound.shape, dtype)
    return (jnp.concatenate([p[0] for p in parts]), phi, jax.lax.stop_gradient(bound) > 0,
            jnp.concatenate([p[3] for p in parts]), bound)


def tendon_limit_contacts(model, scene: Scene, params: Params, state: State):
    """The limited tendons' range limits as contacts (``tendons.limit_rows``), as ``limit_contacts``."""
    joints, jp = scene.joints, params.joints
    q, qd = (scalar_view(joints, x) for x in coordinates(joints, jp, state))
    rows, phi, rate, bodies = tendon_limit_rows(joints.tendons, jp.tendons, scalar_view(joints, rate_rows(joints, state, jp)),
                                                q, qd, joints.child, joints.parent)
    reach = scene.margin + 2.0 * model.dt * jnp.maximum(-jax.lax.stop_gradient(rate), 0.0)
    return rows, phi, jax.lax.stop_gradient(phi) < reach, bodies


def stiff_rows(con: WorldContacts, impact, num_bodies: int, fixed=None):
    """(C,) the contacts of the islands hit by an impact this step: ``impact`` (C,) marks the
    contacts approaching faster than the restitution threshold; their bodies, and every body
    linked to them through touching contacts (φ within the margin: the valid ones), are in the
    island (label propagation, at most N − 1 hops, static). Ground contacts never link bodies, nor
    do a fixed body's (``fixed``: (N,) static mask, ``Scene.fixed_bodies``; None: none), which
    count as the ground's: its contact is on its free body's side alone."""
    a, b = con.bodies[:, 0], con.bodies[:, 1]
    if fixed is not None:  # a fixed body as the ground (−1), its free body on side b
        held = jnp.asarray(fixed)
        b_fixed = held[b]
        a_fixed = (a >= 0) & held[jnp.maximum(a, 0)]
        a, b = jnp.where(a_fixed | b_fixed, -1, a), jnp.where(b_fixed, a, b)
        impact = impact & (b >= 0)
    link = con.valid & (a >= 0) & (b >= 0)
    ia, ib = jnp.maximum(a, 0), jnp.maximum(b, 0)
    hit = jnp.zeros(num_bodies, bool).at[ib].max(impact).at[ia].max(impact & (a >= 0))
    if num_bodies > 1:
        # bodies within N − 1 hops of a hit body: the reflexive adjacency squared ⌈log₂(N − 1)⌉ times
        # (a few small matrix products, where a hop at a time was N − 1 dependent scatters)
        adj = jnp.eye(num_bodies, dtype=jnp.float32).at[ia, ib].max(link.astype(jnp.float32))
        adj = jnp.maximum(adj, adj.T)
        squarings = int(np.ceil(np.log2(num_bodies - 1)))  # paths of up to 2^squarings >= N - 1 hops
        for _ in range(squarings):
            adj = (jnp.matmul(adj, adj, precision="highest") > 0).astype(jnp.float32)
        hit = jnp.matmul(adj, hit.astype(jnp.float32), precision="highest") > 0
    return impact | (con.valid & (hit[ib] | ((a >= 0) & hit[ia])))


def soft_rows(softness: float, stiff):
    """(C,) the relative diagonal added to every contact's rows (constraint-force mixing):
    ``softness`` on every contact except the ``stiff`` ones ((C,): ``stiff_rows``, the islands of
    this step's impacts), which get none. The rows of a resting stack are redundant (four normals
    per face for three constrained directions, eight friction rows for three), which slows
    projected Gauss–Seidel to hundreds of sweeps at the solver's own 1e-6; a softness of 1e-2
    brings a 10-box stack at rest to ~30 (docs/worlds.md) at the price of a steady compression of
    softness·h·|A_ii z| per contact (40 µm over a 10-box stack at 2 ms). An island hit by an impact
    is solved stiff, so restitution, inelastic impacts and simultaneous impacts (a touching
    Newton's cradle) keep the exact answer of the velocity-level LCP."""
    return jnp.where(stiff, 0.0, softness)


def patch_phi(scene: Scene, con: WorldContacts, vn_pre, dt: float):
    """(C,) the distances the restitution switch reads: body–ground contacts their own (as a
    single body); every contact of a body–body pair the pair's earliest closing, so that φ + h v⁻
    is the least over the pair's valid points for all of them. A face patch then bounces as one:
    its four points' distances differ by round-off, and a switch read point by point could bounce
    two of them and not the others (a spurious torque, measured on the cradle at a 3 mm gap)."""
    G, n, E = con.num_ground, scene.slot_contacts, con.pair_end
    if not scene.pairs:
        return con.phi
    phi, vn, valid = con.phi[G:E].reshape(-1, n), vn_pre[G:E].reshape(-1, n), con.valid[G:E].reshape(-1, n)
    first = jnp.min(jnp.where(valid, phi + dt * vn, jnp.inf), axis=1, keepdims=True)
    pair = jnp.where(valid, first - dt * vn, phi)
    return jnp.concatenate([con.phi[:G], pair.reshape(-1), con.phi[E:]])


def manifold_size(model, scene: Scene, params: Params) -> int:
    """Contacts per manifold (static): consecutive contacts on the same two bodies, a body's ground
    candidates (split in equal parts) and a pair slot's points alike."""
    sizes = [s for s in (num_ground_contacts(model, scene, params), scene.slot_contacts if scene.pairs else 0) if s]
    if num_joint_contacts(scene, params):
        sizes.append(1)  # a limit, a friction loss is a contact of its own
    return math.gcd(*sizes) if sizes else 1


def num_ground_contacts(model, scene: Scene, params: Params) -> int:
    """Body–ground candidates per body (static): ``Model.max_contacts``, the one setting of bodies and
    worlds (``Scene.ground_contacts``, deprecated, must agree with it: ``check_ground_contacts``);
    with tilted planes, that many per surface (the ground and each plane: ``surface_contacts``)."""
    if not scene.ground and not scene.planes:
        return 0
    check_ground_contacts(model, scene, params)
    return (int(scene.ground) + scene.planes) * model.num_contacts(params.body)


def check_ground_contacts(model, scene: Scene, params: Params) -> None:
    """Refuse (static, also under ``jit``) a scene whose deprecated ``ground_contacts`` disagrees
    with ``Model.max_contacts``: one setting decides how many ground contacts a body keeps; the two
    used to cap each other silently (min of both)."""
    given = scene.ground_contacts
    want = model.num_contacts(params.body)
    if given is not None and min(given, params.body.num_candidates) != want:
        raise ValueError(f"Scene.ground_contacts = {given} disagrees with Model.max_contacts = {model.max_contacts} "
                         f"({want} ground contacts per body of {params.body.num_candidates} candidates): Model.max_contacts "
                         "alone decides how many ground contacts a body keeps, in bodies and worlds alike; drop "
                         "ground_contacts from make_scene/Scene (deprecated) and set Model(max_contacts=...)")


def warm_slots(scene: Scene, con: WorldContacts, table):
    """The warm start of this step's contacts (C, 3) from ``table`` (the impulses of the previous
    step per body–ground contact and per pair of the scene, ``initial_warm``'s layout): a pair the
    broad phase brings in takes its own last impulses (zero if it was out)."""
    G, n, L = con.num_ground, scene.slot_contacts, con.phi.shape[0] - con.pair_end  # the limits', losses' last
    pairs = table[G:table.shape[0] - L].reshape(scene.num_pairs, n, 3)[con.slot_pair].reshape(-1, 3)
    return jnp.concatenate([table[:G], pairs, table[table.shape[0] - L:]])


def warm_table(scene: Scene, con: WorldContacts, z):
    """``warm_slots`` inverted: this step's impulses z (C, 3) into the table (pairs out: zero)."""
    G, n, E = con.num_ground, scene.slot_contacts, con.pair_end
    pairs = jnp.zeros((scene.num_pairs, n, 3), z.dtype).at[con.slot_pair].set(z[G:E].reshape(-1, n, 3))
    return jnp.concatenate([z[:G], pairs.reshape(-1, 3), z[E:]])


@functools.partial(jax.jit, static_argnames=("model", "scene"))
def start_overlaps(model, scene: Scene, params: Params, state: State):
    """(P,) how deep (m, 0 if apart) the two bodies of every pair of the scene overlap at ``state``
    (the narrow phase on every pair, whatever ``Scene.max_pairs``)."""
    every = dataclasses.replace(scene, max_pairs=None, max_slots=None, fast_hits=False)
    _, phi, valid, *_ = pair_contacts(model, every, params, state)
    return jnp.max(jnp.where(valid, -phi, 0.0).reshape(scene.num_pairs, scene.slot_contacts), axis=1)


__all__ = ["FAST_HIT", "WorldContacts", "bounding_radii", "check_ground_contacts", "collide", "compound_pair", "limit_contacts", "loss_contacts", "num_joint_contacts", "num_losses", "sides", "tendon_limit_contacts", "fast_pairs", "is_compound", "keep_slots", "shape_parts", "ground_contacts", "manifold_size", "num_ground_contacts",
           "pair_contacts", "pair_gaps", "patch_phi", "predicted", "reach", "round_or_hull", "SEPARATE_SLOP", "SEPARATE_SWEEPS", "separate_fast_pairs", "shape_dims", "soft_rows", "start_overlaps", "stiff_rows", "surface_contacts", "surface_friction", "surfaces", "warm_slots",
           "warm_table"]
