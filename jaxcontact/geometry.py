"""Geometry of convex bodies against a ground plane: pure functions of (body, ground, state).

Everything has static shapes: candidates are the body's (padded) vertices; the ``C`` closest ones
are selected with ``lax.top_k`` so the contact problem stays small for bodies with many vertices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .rotations import inv3, perp2d, quat_to_mat, rot2d
from .types import AnyState, Body, Ground, PatchType, PlanarState

# Distance (m) given to padded vertices so they are never selected as candidates, active or closest.
FAR = 1e6


def unit_normal(ground: Ground) -> jnp.ndarray:
    n = ground.normal
    return n / jnp.linalg.norm(n)


def tangent_basis(n: jnp.ndarray) -> jnp.ndarray:
    """Tangent directions of a plane with unit normal n: (1, 2) in 2D, (2, 3) in 3D.

    3D: t1 is world x projected on the plane (world y if x is nearly normal), t2 = n × t1.
    Anisotropic friction coefficients ``mu = (mu_1, mu_2)`` refer to these directions.
    2D: t = (n_y, −n_x) (world +x for a flat ground).
    """
    if n.shape[-1] == 2:
        return jnp.stack([n[1], -n[0]])[None, :]
    ex = jnp.array([1.0, 0.0, 0.0], dtype=n.dtype)
    ey = jnp.array([0.0, 1.0, 0.0], dtype=n.dtype)
    a = jnp.where(jnp.abs(n[0]) < 0.9, ex, ey)
    t1 = a - jnp.dot(a, n) * n
    t1 = t1 / jnp.linalg.norm(t1)
    t2 = jnp.cross(n, t1)
    return jnp.stack([t1, t2])


def rotation(state: AnyState) -> jnp.ndarray:
    if isinstance(state, PlanarState):
        return rot2d(state.angle)
    return quat_to_mat(state.quat)


def world_points(state: AnyState, points_body: jnp.ndarray) -> jnp.ndarray:
    """Body-frame points (K, d) to world frame."""
    return state.pos + points_body @ rotation(state).T


def signed_distance(ground: Ground, points: jnp.ndarray) -> jnp.ndarray:
    return points @ unit_normal(ground) - ground.height


def point_jacobian(state: AnyState, r_body: jnp.ndarray, directions: jnp.ndarray) -> jnp.ndarray:
    """Rows mapping generalised velocity to the velocity of body point r along world directions.

    r_body: (d,), directions: (m, d) → (m, nv). 3D generalised velocity is (v_world, ω_body):
    the point velocity is v + R(ω × r), so a row for direction u is [u, r × (Rᵀu)].
    Planar: velocity v + θ̇ ẑ×(R r), row [u, u·perp(R r)].
    """
    R = rotation(state)
    if isinstance(state, PlanarState):
        ang = directions @ perp2d(R @ r_body)
        return jnp.concatenate([directions, ang[:, None]], axis=-1)
    u_body = directions @ R  # rows Rᵀu
    ang = jnp.cross(r_body[None, :], u_body)
    return jnp.concatenate([directions, ang], axis=-1)


@struct.dataclass
class Contacts:
    """The selected contact candidates of one body (C of them).

    index: (C,) vertex index. r_body: (C, d). points: (C, d) world. phi: (C,) signed distance.
    valid: (C,) real (not padding). normal: (d,) ground unit normal. tangents: (d−1, d).
    jac: (C, d, nv) Jacobian rows [normal, tangents...] of each candidate.
    all_points: (K, d) and all_phi: (K,) for every vertex (for the contact patch).
    """

    index: jnp.ndarray
    r_body: jnp.ndarray
    points: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    normal: jnp.ndarray
    tangents: jnp.ndarray
    jac: jnp.ndarray
    all_points: jnp.ndarray
    all_phi: jnp.ndarray


def face_points(points, phi, valid, tangents, num: int, tol: float | None) -> jnp.ndarray:
    """(num,) indices of the vertices to keep against the ground: the ``num`` closest (``lax.top_k``),
    unless more than ``num`` valid vertices lie within ``tol`` of the deepest (a face on the ground,
    the *touching set*). Then ``num`` of the touching set are kept so that their support polygon is
    as wide as the face's, as Bullet and MJX reduce a manifold: the deepest vertex first, then the
    touching vertex farthest from it (in the ground plane), then (3D) the two farthest from that
    line on either side, then the rest at once: the extremes along directions evenly between those
    four (at 45°, 135°, … from the first line for 8; planar: each next the vertex farthest from all
    those kept). The closest ``num`` of a face with more vertices are an arbitrary subset of equal distances (the
    lowest indices: half an octagon), whose polygon may not hold the body's centre of mass (issue
    61: a resting prism chattered). ``tol`` None: the closest only. Chosen without gradient (indices
    only)."""
    phi = jax.lax.stop_gradient(jnp.where(valid, phi, FAR))
    _, closest = jax.lax.top_k(-phi, num)
    if tol is None:
        return closest
    # the ground-plane coordinates as columns, elementwise masks and plain reductions: no gathers,
    # scatters or argmax (a variadic reduce), each several times slower under vmap on a CPU
    p, t = jax.lax.stop_gradient(points), jax.lax.stop_gradient(tangents)
    cols = [sum(p[:, a] * t[j, a] for a in range(p.shape[-1])) for j in range(t.shape[0])]
    K = phi.shape[0]
    iota = jnp.arange(K)
    low = jnp.min(phi)
    touching = valid & (phi <= low + tol)
    at = lambda i: [jnp.sum(jnp.where(iota == i, c, 0.0)) for c in cols]

    def first_of(score):  # argmax as two plain reductions (the lowest index of the maximum)
        return jnp.min(jnp.where(score == jnp.max(score), iota, K))

    first = first_of(-phi)  # the deepest
    chosen = iota == first
    idx, pos = [first], [at(first)]
    spread = sum((c - a) ** 2 for c, a in zip(cols, pos[0]))  # squared distance to the nearest kept vertex

    def pick(score):
        return first_of(jnp.where(touching & ~chosen, score, -jnp.inf))

    side = None
    for k in range(1, min(num, 4) if len(cols) == 2 else num):
        if k == 2 and len(cols) == 2:  # the farthest from the line of the first two, either side
            (x0, y0), (x1, y1) = pos[0], pos[1]
            side = (x1 - x0) * (cols[1] - y0) - (y1 - y0) * (cols[0] - x0)
            i = pick(jnp.abs(side))
        elif k == 3 and side is not None:  # the farthest on the other side
            i = pick(-jnp.sign(jnp.sum(jnp.where(iota == idx[2], side, 0.0))) * side)
        else:
            i = pick(spread)
        chosen = chosen | (iota == i)
        pos.append(at(i))
        spread = jnp.minimum(spread, sum((c - a) ** 2 for c, a in zip(cols, pos[-1])))
        idx.append(i)
    if len(cols) == 2 and num > 4:  # 3D: the rest at once, the extremes along directions evenly
        # between those of the first four (relative to the line of the first two), not yet kept
        (x0, y0), (x1, y1) = pos[0], pos[1]
        n = jnp.maximum(jnp.hypot(x1 - x0, y1 - y0), 1e-30)
        ex, ey = (x1 - x0) / n, (y1 - y0) / n
        for j in range(num - 4):
            a = np.pi * (2 * j + 1) / (num - 4)
            ca, sa = np.cos(a), np.sin(a)
            idx.append(pick((ca * ex - sa * ey) * cols[0] + (sa * ex + ca * ey) * cols[1]))
    return jnp.where(jnp.sum(touching) > num, jnp.stack(idx), closest)


def contact_candidates(body: Body, ground: Ground, state: AnyState, num: int, tol: float | None = None) -> Contacts:
    """Signed distances of all vertices, the ``num`` kept (``face_points``: the closest, or with
    ``tol`` a face's widest spread), their frames and Jacobians."""
    pts_all = world_points(state, body.vertices)
    phi_all = signed_distance(ground, pts_all)
    valid_all = body.vertex_mask > 0
    n = unit_normal(ground)
    tang = tangent_basis(n)
    if num < body.num_vertices:
        idx = face_points(pts_all, phi_all, valid_all, tang, num, tol)
    else:
        idx = jnp.arange(body.num_vertices)
    dirs = jnp.concatenate([n[None, :], tang], axis=0)
    r = body.vertices[idx]
    jac = jax.vmap(lambda rb: point_jacobian(state, rb, dirs))(r)
    return Contacts(
        index=idx,
        r_body=r,
        points=pts_all[idx],
        phi=jnp.where(valid_all[idx], phi_all[idx], FAR),
        valid=valid_all[idx],
        normal=n,
        tangents=tang,
        jac=jac,
        all_points=pts_all,
        all_phi=phi_all,
    )


@struct.dataclass
class Patch:
    """Contact patch: type (``PatchType``), centre (world), normal (world), touching mask."""

    kind: jnp.ndarray
    centre: jnp.ndarray
    normal: jnp.ndarray
    touching: jnp.ndarray


def contact_patch(body: Body, ground: Ground, state: AnyState, tol: float) -> Patch:
    """Patch from all vertices within ``tol`` of the ground: point, line or face (≥ 3).

    With no touching vertex the type is NONE and the centre is the closest vertex's ground
    projection (a well-defined value, never NaN).
    """
    pts = world_points(state, body.vertices)
    return patch_from_points(pts, signed_distance(ground, pts), body.vertex_mask > 0, ground, tol)


def patch_from_points(pts, phi, valid, ground: Ground, tol: float, touching=None) -> Patch:
    """``contact_patch`` from already computed world points (K, d) and distances (K,); ``touching``
    (K,), the vertices that make the patch, defaults to the valid ones within ``tol`` of the ground
    (dacm's speculative detector passes its own)."""
    touching = valid & (phi <= tol) if touching is None else touching
    count = jnp.sum(touching)
    kind = jnp.minimum(count, int(PatchType.FACE)).astype(jnp.int32)
    w = touching.astype(pts.dtype)
    closest = jnp.argmin(jnp.where(valid, phi, FAR))
    mean = jnp.sum(w[:, None] * pts, axis=0) / jnp.maximum(jnp.sum(w), 1.0)
    centre = jnp.where(count > 0, mean, pts[closest])
    n = unit_normal(ground)
    centre = centre - (jnp.dot(centre, n) - ground.height) * n  # on the plane
    return Patch(kind=kind, centre=centre, normal=n, touching=touching)


def mass_matrix_inverse(body: Body, state: AnyState) -> jnp.ndarray:
    """Inverse generalised mass matrix: blockdiag(I/m, I_body⁻¹) (3D) or diag(1/m, 1/m, 1/I)."""
    if isinstance(state, PlanarState):
        return jnp.diag(jnp.stack([1.0 / body.mass, 1.0 / body.mass, 1.0 / body.inertia]))
    z = jnp.zeros((3, 3), dtype=body.inertia.dtype)
    top = jnp.concatenate([jnp.eye(3, dtype=z.dtype) / body.mass, z], axis=1)
    bot = jnp.concatenate([z, inv3(body.inertia)], axis=1)
    return jnp.concatenate([top, bot], axis=0)


def mass_matrix(body: Body, state: AnyState) -> jnp.ndarray:
    if isinstance(state, PlanarState):
        return jnp.diag(jnp.stack([body.mass, body.mass, body.inertia]))
    z = jnp.zeros((3, 3), dtype=body.inertia.dtype)
    top = jnp.concatenate([jnp.eye(3, dtype=z.dtype) * body.mass, z], axis=1)
    bot = jnp.concatenate([z, body.inertia], axis=1)
    return jnp.concatenate([top, bot], axis=0)


def body_size(body: Body) -> jnp.ndarray:
    """Characteristic size: the largest distance between two candidate vertices."""
    v = body.vertices
    d = jnp.linalg.norm(v[:, None, :] - v[None, :, :], axis=-1)
    m = (body.vertex_mask[:, None] * body.vertex_mask[None, :]) > 0
    return jnp.max(jnp.where(m, d, 0.0))
