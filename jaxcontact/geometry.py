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
    all_points: (M, d), all_phi: (M,) and all_valid: (M,) for every candidate (for the contact patch).
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
    all_valid: jnp.ndarray


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


# The rim points of a cylinder's cap kept as ground candidates: the deepest and those at ±120° from it.
RIM_ANGLES = (0.0, 2 * np.pi / 3, -2 * np.pi / 3)


def cylinder_rim(cylinder, normal_body) -> jnp.ndarray:
    """(6, 3) body-frame ground candidates of a solid cylinder (``Body.cylinder`` = (ρ, l), axis
    body z) against a plane of body-frame unit normal ``normal_body``: on each cap (z = −l, then +l)
    the rim's deepest point (the direction of −n projected on the cap plane; body x when the
    cylinder stands exactly upright and every rim point is as deep) and the rim points at ±120°
    from it: a triangle of support on an end, a line of two on the side (exact: it rolls without
    a polygon's bumps). The rim angle is chosen without gradient (the deepest point's distance has
    none in it); the points are the cylinder's, differentiable in ρ and l."""
    rho, half = cylinder[..., 0], cylinder[..., 1]
    u = jax.lax.stop_gradient(-normal_body[:2])
    norm = jnp.sqrt(u @ u)
    u = jnp.where(norm > 0, u / jnp.where(norm > 0, norm, 1.0), jnp.array([1.0, 0.0], u.dtype))
    v = jnp.stack([-u[1], u[0]])
    rim = [float(np.cos(a)) * u + float(np.sin(a)) * v for a in RIM_ANGLES]
    return jnp.stack([jnp.concatenate([rho * d, (sign * half)[None]]) for sign in (-1.0, 1.0) for d in rim])


def ellipsoid_support(semi_axes, normal_body) -> jnp.ndarray:
    """(1, 3) the body-frame point of a solid ellipsoid (``Body.ellipsoid`` = (a, b, c)) deepest
    along −``normal_body``: s = −A² n / |A n|, A = diag(a, b, c) (zeros: the centre, no NaN)."""
    an = semi_axes * normal_body
    k = jnp.sqrt(jnp.maximum(an @ an, jnp.finfo(an.dtype).tiny))
    return (-(semi_axes * an) / k)[None]


def candidate_points(body: Body, ground: Ground, state: AnyState):
    """Every ground-contact candidate of ``body`` at ``state`` (M = ``body.num_candidates``):
    (points (M, d) world, phi (M,) signed distances, valid (M,), r_body (M, d) body-frame lever
    arms), the points on the body's surface. A hull's are its vertices; with ``radius`` r each
    vertex p gives the point p − r n at φ = n·p − h − r (exact for spheres and capsules); then a
    ``cylinder``'s six rim points (``cylinder_rim``) and an ``ellipsoid``'s support point
    (``ellipsoid_support``), masked where the body has none (zeros)."""
    pts = world_points(state, body.vertices)
    phi = signed_distance(ground, pts)
    valid = body.vertex_mask > 0
    r = body.vertices
    if not body.is_round:
        return pts, phi, valid, r
    n = unit_normal(ground)
    R = rotation(state)
    nb = n @ R  # Rᵀn: the ground normal in the body frame
    if body.radius is not None:
        rad = jnp.asarray(body.radius)
        pts, phi, r = pts - rad * n, phi - rad, r - rad * nb
    if body.vertex_radius is not None:  # a body of several shapes: each vertex its own radius
        pts, phi, r = swept_vertices(body.vertex_radius, pts, phi, r, n, nb)
    if body.vertex_shape is not None:  # a compound's cylinder and ellipsoid parts: their surface points
        r = part_candidates(body.vertex_shape, body.vertices, r, nb)
        pts = world_points(state, r)
        phi = signed_distance(ground, pts)
    parts = [(r, valid)]
    if body.cylinder is not None:
        cyl = jnp.asarray(body.cylinder)
        parts.append((cylinder_rim(cyl, nb), jnp.broadcast_to(jnp.all(cyl > 0), (6,))))
    if body.ellipsoid is not None:
        ell = jnp.asarray(body.ellipsoid)
        parts.append((ellipsoid_support(ell, nb), jnp.all(ell > 0)[None]))
    extra = jnp.concatenate([p[0] for p in parts[1:]]) if len(parts) > 1 else r[:0]
    extra_pts = world_points(state, extra)
    return (jnp.concatenate([pts, extra_pts]), jnp.concatenate([phi, signed_distance(ground, extra_pts)]),
            jnp.concatenate([p[1] for p in parts]), jnp.concatenate([r, extra]))


def part_candidates(vertex_shape, vertices, r, nb):
    """(K, 3) body-frame candidates with a compound's cylinder and ellipsoid parts' vertices (``Body.vertex_shape``
    code 1..6: the part's ``cylinder_rim`` point of that index, 7: its ``ellipsoid_support``, both against
    the ground normal in the part's frame, placed at the part's centre and orientation); ``r`` elsewhere."""
    code = vertex_shape[:, 0]
    dims = vertex_shape[:, 1:4]
    Rp = jax.vmap(quat_to_mat)(vertex_shape[:, 4:8] + (code == 0)[:, None] * jnp.array([1.0, 0, 0, 0], r.dtype))
    npart = jnp.einsum("kji,j->ki", Rp, nb)  # the normal in each part's frame: Rpᵀ nb
    rim = jax.vmap(cylinder_rim)(dims[:, :2], npart)  # (K, 6, 3)
    idx = jnp.clip(code.astype(jnp.int32) - 1, 0, 5)
    on_rim = jnp.take_along_axis(rim, idx[:, None, None], axis=1)[:, 0]
    ell = jax.vmap(ellipsoid_support)(dims, npart)[:, 0]
    local = jnp.where((code == 7)[:, None], ell, on_rim)
    placed = vertices + jnp.einsum("kij,kj->ki", Rp, local)
    return jnp.where((code > 0)[:, None], placed, r)


def swept_vertices(vertex_radius, pts, phi, r, n, nb):
    """A compound's (``shapes.compound``) vertices each swept by its own radius (``Body.vertex_radius``
    (K,): its sphere and capsule parts' radii, 0 on its hull parts): the surface points p − r_k n
    (world), their φ − r_k and body-frame lever arms r − r_k Rᵀn."""
    rad = jnp.asarray(vertex_radius)[:, None]
    return pts - rad * n, phi - vertex_radius, r - rad * nb


def contact_candidates(body: Body, ground: Ground, state: AnyState, num: int, tol: float | None = None) -> Contacts:
    """Signed distances of all candidates (``candidate_points``: a hull's vertices, a round body's
    surface points), the ``num`` kept (``face_points``: the closest, or with ``tol`` a face's
    widest spread), their frames and Jacobians (at the surface points)."""
    pts_all, phi_all, valid_all, r_all = candidate_points(body, ground, state)
    n = unit_normal(ground)
    tang = tangent_basis(n)
    M = pts_all.shape[0]
    if num < M:
        idx = face_points(pts_all, phi_all, valid_all, tang, num, tol)
    else:
        idx = jnp.arange(M)
    dirs = jnp.concatenate([n[None, :], tang], axis=0)
    r = r_all[idx]
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
        all_valid=valid_all,
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
    pts, phi, valid, _ = candidate_points(body, ground, state)
    return patch_from_points(pts, phi, valid, ground, tol)


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
    """Characteristic size: the largest distance between two candidate vertices (a round body:
    its diameter, ``2 * radius`` added to its core's, a cylinder's 2√(ρ² + l²), an ellipsoid's
    longest axis)."""
    v = body.vertices
    d = jnp.linalg.norm(v[:, None, :] - v[None, :, :], axis=-1)
    m = (body.vertex_mask[:, None] * body.vertex_mask[None, :]) > 0
    size = jnp.max(jnp.where(m, d, 0.0))
    if not body.is_round:
        return size
    if body.radius is not None:
        size = jnp.where(jnp.any(body.vertex_mask > 0), size + 2 * body.radius, 0.0)
    if body.vertex_radius is not None:
        size = size + 2 * jnp.max(jnp.where(body.vertex_mask > 0, body.vertex_radius, 0.0))
    if body.vertex_shape is not None:  # a cylinder or ellipsoid part: its circumscribed sphere
        size = size + 2 * jnp.max(jnp.where(body.vertex_mask > 0, jnp.linalg.norm(body.vertex_shape[..., 1:4], axis=-1), 0.0))
    return jnp.maximum(size, 2 * shape_reach(body))


def shape_reach(body: Body) -> jnp.ndarray:
    """(…) the farthest point of a body's ``cylinder`` or ``ellipsoid`` from its centre (0 for
    none): √(ρ² + l²), max(a, b, c)."""
    far = jnp.zeros(jnp.shape(body.mass), jnp.result_type(body.mass))
    if body.cylinder is not None:
        cyl = jnp.asarray(body.cylinder)
        far = jnp.maximum(far, jnp.sqrt(jnp.maximum(jnp.sum(cyl * cyl, axis=-1), jnp.finfo(cyl.dtype).tiny)))
    if body.ellipsoid is not None:
        far = jnp.maximum(far, jnp.max(jnp.asarray(body.ellipsoid), axis=-1))
    return far
