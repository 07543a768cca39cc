"""Bodies from geometry: boxes, regular prisms, convex hulls of points, planar polygons, and the
round shapes: spheres, capsules, cylinders and ellipsoids.

Mass properties are those of a uniform solid of the given mass; vertices are re-centred on the
centre of mass. Degenerate input raises ``ValueError`` before anything is compiled. A round body
is a ``Body`` with ``radius`` (spheres, capsules: sphere-swept vertices), ``cylinder`` or
``ellipsoid`` set (``types.Body``); ``shape_kind`` names one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .types import Body


def _as_body(vertices: np.ndarray, mass: float, inertia, pad_to: int | None) -> Body:
    k = len(vertices)
    pad_to = k if pad_to is None else pad_to
    if pad_to < k:
        raise ValueError(f"pad_to={pad_to} is smaller than the {k} vertices")
    verts = np.zeros((pad_to, vertices.shape[1]))
    verts[:k] = vertices
    mask = np.zeros(pad_to)
    mask[:k] = 1.0
    if pad_to > k:  # padding sits on a real vertex so it is harmless even if unmasked
        verts[k:] = vertices[0]
    return Body(
        mass=jnp.asarray(float(mass)),
        inertia=jnp.asarray(inertia),
        vertices=jnp.asarray(verts),
        vertex_mask=jnp.asarray(mask),
    )


def with_mass(body: Body, mass) -> Body:
    """``body`` with mass ``mass`` and its inertia scaled by ``mass / body.mass``: the same shape of
    uniform density, heavier or lighter. Differentiable in ``mass`` (a traced value is fine), so a
    gradient through it sees the inertia follow the mass — unlike ``body.replace(mass=m)``, or the
    ``.body.mass`` of ``jax.grad(loss)(params)``, which hold the inertia fixed. For a density ρ:
    ``with_mass(body, ρ * volume)``. Scaling mass and inertia together changes nothing without
    forces other than gravity and contact, so the derivative is non-zero only under controls."""
    if not isinstance(mass, jax.core.Tracer):
        _check_mass(float(np.asarray(mass)))
    m = jnp.asarray(mass)
    return body.replace(mass=m, inertia=body.inertia * (m / body.mass))


def _check_mass(mass):
    if not np.isfinite(mass) or mass <= 0:
        raise ValueError(f"mass: must be positive and finite, got {mass}")


def _hull(points, dim: int):
    """Validated float64 points (K, dim) and their scipy ``ConvexHull``; degenerate input raises."""
    from scipy.spatial import ConvexHull, QhullError

    what = "hull" if dim == 3 else "polygon"
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != dim:
        raise ValueError(f"vertices: expected shape (K, {dim}), got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("vertices: contains NaN or infinite values")
    if len(pts) < dim + 1 or np.linalg.matrix_rank(pts - pts.mean(0), tol=1e-9) < dim:
        raise ValueError(f"vertices: degenerate {what} (points do not span {dim}D)")
    try:
        return pts, ConvexHull(pts)
    except QhullError as err:
        raise ValueError(f"vertices: degenerate {what} ({err.args[0].splitlines()[0]})") from None


def polyhedron_mass_properties(points: np.ndarray, mass: float):
    """Hull vertices, centre of mass and inertia (about the COM) of the convex hull of points."""
    pts, hull = _hull(points, 3)
    verts = pts[hull.vertices]
    c0 = verts.mean(0)
    vol = 0.0
    first = np.zeros(3)
    second = np.zeros((3, 3))
    for tri in hull.simplices:
        p = np.stack([c0, *pts[tri]])
        v = abs(np.linalg.det(p[1:] - p[0])) / 6.0
        s = p.sum(0)
        vol += v
        first += v * s / 4.0
        second += v / 20.0 * (np.einsum("ki,kj->ij", p, p) + np.outer(s, s))
    if vol <= 1e-15:
        raise ValueError("vertices: degenerate hull (zero volume)")
    com = first / vol
    cov = second / vol - np.outer(com, com)  # per unit volume, about COM
    inertia = mass * (np.trace(cov) * np.eye(3) - cov)
    return verts - com, inertia


def convex_hull(points, mass: float = 1.0, pad_to: int | None = None) -> Body:
    """Uniform solid convex hull of 3D points (interior points are dropped)."""
    _check_mass(mass)
    verts, inertia = polyhedron_mass_properties(points, mass)
    return _as_body(verts, mass, inertia, pad_to)


def box(size=(0.1, 0.1, 0.1), mass: float = 0.37, pad_to: int | None = None) -> Body:
    """Box with full edge lengths ``size`` (a scalar for a cube); default: the 0.1 m, 0.37 kg box."""
    _check_mass(mass)
    s = np.broadcast_to(np.asarray(size, dtype=np.float64), (3,))
    if np.any(s <= 0) or not np.all(np.isfinite(s)):
        raise ValueError(f"size: edge lengths must be positive, got {s}")
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    verts = signs * s / 2
    a, b, c = s
    inertia = mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return _as_body(verts, mass, inertia, pad_to)


def regular_prism(
    sides: int = 5, radius: float = 0.06, height: float = 0.1, mass: float = 0.37, pad_to=None
) -> Body:
    """Right prism over a regular polygon (circumradius ``radius``), axis along body z."""
    if sides < 3:
        raise ValueError(f"sides: a prism needs at least 3 sides, got {sides}")
    if radius <= 0 or height <= 0:
        raise ValueError("radius and height must be positive")
    ang = 2 * np.pi * np.arange(sides) / sides
    ring = np.stack([radius * np.cos(ang), radius * np.sin(ang)], 1)
    pts = np.concatenate(
        [np.c_[ring, -np.full(sides, height / 2)], np.c_[ring, np.full(sides, height / 2)]]
    )
    return convex_hull(pts, mass, pad_to)


def polygon(vertices, mass: float = 1.0, pad_to: int | None = None) -> Body:
    """Uniform convex planar polygon (body frame x, y); hull of the given points."""
    _check_mass(mass)
    pts, hull = _hull(vertices, 2)
    ring = pts[hull.vertices]  # counter-clockwise
    c0 = ring.mean(0)
    area, first, second = 0.0, np.zeros(2), np.zeros((2, 2))
    for i in range(len(ring)):
        p = np.stack([c0, ring[i], ring[(i + 1) % len(ring)]])
        a = abs(np.linalg.det(p[1:] - p[0])) / 2.0
        s = p.sum(0)
        area += a
        first += a * s / 3.0
        second += a / 12.0 * (np.einsum("ki,kj->ij", p, p) + np.outer(s, s))
    com = first / area
    cov = second / area - np.outer(com, com)
    inertia = mass * np.trace(cov)
    return _as_body(ring - com, mass, inertia, pad_to)


def box2d(size=(0.1, 0.1), mass: float = 0.37, pad_to: int | None = None) -> Body:
    """Planar rectangle with full side lengths ``size``."""
    s = np.broadcast_to(np.asarray(size, dtype=np.float64), (2,))
    if np.any(s <= 0):
        raise ValueError(f"size: side lengths must be positive, got {s}")
    a, b = s / 2
    return polygon([[-a, -b], [a, -b], [a, b], [-a, b]], mass, pad_to)


def _check_size(value, name: str) -> float:
    v = float(np.asarray(value, dtype=np.float64))
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name}: must be positive and finite, got {value}")
    return v


def _round_body(vertices, mask, mass: float, inertia, **shape) -> Body:
    return Body(mass=jnp.asarray(float(mass)), inertia=jnp.asarray(np.asarray(inertia, np.float64)),
                vertices=jnp.asarray(np.asarray(vertices, np.float64)), vertex_mask=jnp.asarray(np.asarray(mask, np.float64)),
                **{k: jnp.asarray(np.asarray(v, np.float64)) for k, v in shape.items()})


def sphere(radius: float = 0.05, mass: float = 1.0) -> Body:
    """Uniform solid sphere: one core vertex at its centre swept by ``radius`` (I = 2/5 m r²)."""
    _check_mass(mass)
    r = _check_size(radius, "radius")
    return _round_body([[0.0, 0.0, 0.0]], [1.0], mass, 0.4 * mass * r * r * np.eye(3), radius=r)


def capsule_inertia(radius: float, half_length: float, mass: float) -> np.ndarray:
    """(3, 3) inertia of a uniform solid capsule (axis z): a cylinder of radius r and height 2l
    and two hemispheres, each shifted from the centre by l + 3r/8 (its centre of mass)."""
    r, l = radius, half_length
    v_cyl, v_sph = np.pi * r * r * 2 * l, 4.0 / 3.0 * np.pi * r ** 3
    m_cyl, m_sph = mass * v_cyl / (v_cyl + v_sph), mass * v_sph / (v_cyl + v_sph)
    axial = m_cyl * r * r / 2 + m_sph * 2 * r * r / 5
    # a hemisphere about a transverse axis through its flat face is half a sphere's 2/5 m r²; about
    # its own centre of mass (3r/8 from the face) less m (3r/8)², then shifted to l + 3r/8
    across = m_cyl * (r * r / 4 + l * l / 3) + m_sph * (2 * r * r / 5 + l * l + 3 * l * r / 4)
    return np.diag([across, across, axial])


def capsule(radius: float = 0.03, half_length: float = 0.05, mass: float = 1.0) -> Body:
    """Uniform solid capsule along body z (MuJoCo's convention: ``half_length`` is the half-length
    of its cylinder part, the segment between the hemispheres' centres): two core vertices
    (0, 0, ±l) swept by ``radius``; exact mass properties (``capsule_inertia``)."""
    _check_mass(mass)
    r = _check_size(radius, "radius")
    l = _check_size(half_length, "half_length")
    return _round_body([[0.0, 0.0, -l], [0.0, 0.0, l]], [1.0, 1.0], mass, capsule_inertia(r, l, mass), radius=r)


def cylinder(radius: float = 0.05, half_length: float = 0.05, mass: float = 1.0) -> Body:
    """Uniform solid cylinder of ``radius`` ρ along body z from −l to l (``half_length``):
    I = m diag(ρ²/4 + l²/3, ρ²/4 + l²/3, ρ²/2). Its ground candidates: ``geometry.cylinder_rim``."""
    _check_mass(mass)
    rho = _check_size(radius, "radius")
    l = _check_size(half_length, "half_length")
    across = mass * (rho * rho / 4 + l * l / 3)
    return _round_body([[0.0, 0.0, 0.0]], [0.0], mass, np.diag([across, across, mass * rho * rho / 2]),
                       cylinder=[rho, l])


def ellipsoid(semi_axes=(0.05, 0.04, 0.03), mass: float = 1.0) -> Body:
    """Uniform solid ellipsoid with ``semi_axes`` (a, b, c) along body x, y, z:
    I = m/5 diag(b² + c², a² + c², a² + b²). Its ground candidate: ``geometry.ellipsoid_support``."""
    _check_mass(mass)
    e = np.asarray(semi_axes, dtype=np.float64)
    if e.shape != (3,):
        raise ValueError(f"semi_axes: expected 3 semi-axes (a, b, c), got shape {e.shape}")
    a, b, c = (_check_size(x, f"semi_axes[{i}]") for i, x in enumerate(e))
    inertia = mass / 5.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return _round_body([[0.0, 0.0, 0.0]], [0.0], mass, inertia, ellipsoid=[a, b, c])


COMPOUND_PART_KINDS = ("hull", "sphere", "capsule", "cylinder", "ellipsoid")
"""The shapes a compound's part may have (``compound``): those with body–body contacts."""


def _pose(pose, k: int):
    """A part's pose: a position (3,), or (position (3,), unit quaternion (4,) w, x, y, z)."""
    from .rotations import quat_to_mat

    if isinstance(pose, (tuple, list)) and len(pose) == 2 and np.shape(pose[0]) == (3,):
        pos, quat = np.asarray(pose[0], np.float64), np.asarray(pose[1], np.float64)
    else:
        pos, quat = np.asarray(pose, np.float64), np.array([1.0, 0.0, 0.0, 0.0])
    if pos.shape != (3,) or quat.shape != (4,) or not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))):
        raise ValueError(f"poses[{k}]: expected a position (3,) or (position (3,), quaternion (4,)), finite, got {pose!r}")
    nq = np.linalg.norm(quat)
    if abs(nq - 1.0) > 1e-6:
        raise ValueError(f"poses[{k}]: the quaternion must have unit norm, got norm {nq:.6g}")
    return pos, np.asarray(quat_to_mat(jnp.asarray(quat / nq, jnp.float64)), np.float64)


def combined_mass_properties(masses, inertias, positions, rotations):
    """(mass, centre of mass (3,), inertia (3, 3) about it) of rigid parts of ``masses`` whose
    inertias (about their own centres of mass, in their frames) are ``inertias`` and whose frames
    sit at ``positions`` rotated by ``rotations``: I = Σ R_i I_i R_iᵀ + m_i (|d_i|² E − d_i d_iᵀ),
    d_i = p_i − c (the parallel-axis theorem)."""
    m = np.asarray(masses, np.float64)
    p = np.asarray(positions, np.float64)
    total = float(m.sum())
    com = (m[:, None] * p).sum(0) / total
    inertia = np.zeros((3, 3))
    for mi, Ii, pi, Ri in zip(m, inertias, p, rotations):
        d = pi - com
        inertia += Ri @ np.asarray(Ii, np.float64) @ Ri.T + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, 0.5 * (inertia + inertia.T)


def compound(parts, poses, mass=None, inertia=None, com=None, pad_to: int | None = None) -> Body:
    """A rigid body of several convex ``parts`` at fixed ``poses`` (a table of a top and four legs,
    a dumbbell, a hammer). Each part is a body of one shape (``box``, ``convex_hull``, ``sphere``,
    ``capsule``, ``cylinder`` or ``ellipsoid``: ``COMPOUND_PART_KINDS``; a cylinder's or ellipsoid's
    candidates and pairs through ``Body.vertex_shape``) with its own mass; its pose is a position (3,) of its
    centre of mass, or (position, quaternion), in the frame the poses are written in.

    Mass properties: by default the exact combination of the parts' (``combined_mass_properties``);
    the body's origin is the combined centre of mass, its axes those of the poses' frame (so the
    inertia is a full 3×3). ``mass`` alone rescales every part's mass (and inertia) by the same
    factor; ``mass`` with ``inertia`` (3, 3) about ``com`` (3,) (default: the combined centre of
    mass) are taken as given, as MJCF's ``<inertial>`` does. The parts' vertices are concatenated
    in ``Body.vertices`` (each round part's own radius in ``Body.vertex_radius``), so the ground
    sees the union of the parts' candidates; ``Body.parts`` names each part's kind and vertex range
    for a world's narrow phase (per part pair)."""
    parts, poses = list(parts), list(poses)
    if not parts:
        raise ValueError("compound: parts is empty; give at least one part")
    if len(parts) != len(poses):
        raise ValueError(f"compound: {len(parts)} parts but {len(poses)} poses; give one pose per part")
    kinds, frames = [], []
    for k, part in enumerate(parts):
        if not isinstance(part, Body) or np.ndim(part.mass) != 0 or np.shape(part.vertices)[-1] != 3:
            raise ValueError(f"compound: parts[{k}] must be one 3D Body (shapes.box, convex_hull, sphere, capsule), "
                             f"got {type(part).__name__}")
        if part.parts is not None or part.vertex_radius is not None:
            raise ValueError(f"compound: parts[{k}] is itself a compound; give its parts instead")
        kind = shape_kind(part)
        if kind not in COMPOUND_PART_KINDS:
            raise ValueError(f"compound: parts[{k}] is a {kind}; a compound's parts may be "
                             f"{', '.join(COMPOUND_PART_KINDS)} (the shapes with body–body contacts), not a {kind}")
        kinds.append(kind)
        frames.append(_pose(poses[k], k))
    m_parts = np.array([float(p.mass) for p in parts])
    total, c, I = combined_mass_properties(m_parts, [np.asarray(p.inertia) for p in parts],
                                           [f[0] for f in frames], [f[1] for f in frames])
    if mass is not None:
        _check_mass(float(mass))
    if inertia is not None:
        if mass is None:
            raise ValueError("compound: inertia is given without mass; give both (MJCF's <inertial>) or neither")
        I = np.asarray(inertia, np.float64)
        if I.shape != (3, 3) or not np.all(np.isfinite(I)) or np.max(np.abs(I - I.T)) > 1e-9 * np.max(np.abs(I)):
            raise ValueError(f"compound: inertia must be a finite symmetric (3, 3) matrix, got {inertia!r}")
        if np.min(np.linalg.eigvalsh(I)) <= 0:
            raise ValueError("compound: inertia must be positive definite")
        total = float(mass)
        if com is not None:
            c = np.asarray(com, np.float64)
            if c.shape != (3,) or not np.all(np.isfinite(c)):
                raise ValueError(f"compound: com must be a finite position (3,), got {com!r}")
    elif mass is not None:
        I, total = I * (float(mass) / total), float(mass)
    if com is not None and inertia is None:
        raise ValueError("compound: com is given without mass and inertia; give all three (MJCF's <inertial>)")
    verts, radii, table, start, rows = [], [], [], 0, []
    for k, (part, kind, (pos, R)) in enumerate(zip(parts, kinds, frames)):
        if kind in ("cylinder", "ellipsoid"):  # its centre, once per candidate (six rim points, one support point)
            count = 6 if kind == "cylinder" else 1
            dims = (list(np.asarray(part.cylinder, np.float64)) + [0.0] if kind == "cylinder"
                    else list(np.asarray(part.ellipsoid, np.float64)))
            quat = _part_quaternion(poses[k])
            rows.extend([[float(j + 1) if kind == "cylinder" else 7.0] + dims + quat for j in range(count)])
            v = np.repeat((pos - c)[None], count, axis=0)
            verts.append(v)
            radii.append(np.zeros(count))
            table.append((kind, start, start + count))
            start += count
            continue
        v = np.asarray(part.vertices, np.float64)[np.asarray(part.vertex_mask) > 0]
        verts.append(v @ R.T + pos - c)
        r = 0.0 if kind == "hull" else float(part.radius)
        radii.append(np.full(len(v), r))
        rows.extend([[0.0] * 8] * len(v))
        table.append((kind, start, start + len(v)))
        start += len(v)
    verts, radii = np.concatenate(verts), np.concatenate(radii)
    body = _as_body(verts, total, I, pad_to)
    rad = np.zeros(body.num_vertices)
    rad[: len(radii)] = radii
    body = body.replace(vertex_radius=jnp.asarray(rad), parts=tuple(table))
    if any(kind in ("cylinder", "ellipsoid") for kind in kinds):
        shape = np.zeros((body.num_vertices, 8))
        shape[: len(rows)] = rows
        body = body.replace(vertex_shape=jnp.asarray(shape))
    return body


def _part_quaternion(pose) -> list:
    """A part's unit quaternion (w, x, y, z) from its pose (identity for a position alone)."""
    if isinstance(pose, (tuple, list)) and len(pose) == 2 and np.shape(pose[0]) == (3,):
        q = np.asarray(pose[1], np.float64)
        return list(q / np.linalg.norm(q))
    return [1.0, 0.0, 0.0, 0.0]


def shape_kind(body: Body) -> str:
    """The shape of one concrete (unstacked) body, for messages: "hull", "sphere", "capsule",
    "sphere-swept hull", "cylinder", "ellipsoid" or "compound" (``compound``; zeros in a round
    field: absent)."""
    def present(x):
        return x is not None and bool(np.all(np.asarray(x) > 0))

    if body.parts is not None:
        return "compound"

    if present(body.cylinder):
        return "cylinder"
    if present(body.ellipsoid):
        return "ellipsoid"
    if present(body.radius):
        k = int(np.sum(np.asarray(body.vertex_mask) > 0))
        return {1: "sphere", 2: "capsule"}.get(k, "sphere-swept hull")
    return "hull"
