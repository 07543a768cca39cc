"""Narrow phase of body–body contact: convex hull against convex hull, a fixed-size contact manifold.

The algorithm is the separating-axis test with face clipping of Gregorius ("The Separating Axis
Test between Convex Polyhedra", GDC 2013; "Robust Contact Creation for Physics Simulations", GDC
2015), as in Box2D, Bullet and MJX's ``collision_convex.py``, written for fixed shapes:

1. **Separating axes.** Every face normal of ``a`` and of ``b`` (support of the other body's
   vertices), and the cross product of every edge pair that builds a face of the Minkowski
   difference (Gregorius' Gauss-map arc test; near-parallel pairs skipped), whose separation is
   then exact in closed form. The axis of largest separation wins, with a bias (``FACE_B_BIAS``,
   ``EDGE_BIAS``: a relative plus an absolute part, the absolute one relative to the bodies' size)
   that prefers a face of ``a`` over a face of ``b`` and faces over edges, so resting face–face
   contact does not flicker between features.
2. **Face axis.** The face is the reference face; the incident face is the other body's face most
   anti-parallel to it. The manifold is the intersection of the two polygons seen along the
   reference normal, written as one fixed candidate set: the incident vertices inside the
   reference prism, the reference vertices inside the incident polygon (projected onto the
   incident plane along the normal), and every crossing of an incident edge with a reference edge.
   Candidates farther than ``margin`` above the reference plane are dropped. ``num`` of them are kept: the deepest, the farthest from it, the farthest from
   that line, the one adding the most area to that triangle, then farthest-point sampling (the
   reduction of Bullet and MJX); coincident points are not kept twice.
3. **Edge axis.** One contact at the closest points of the two edges.

Every discrete choice (axis, faces, edges, kept candidates) is made under ``stop_gradient``; the
points, normal and distances are then recomputed from the traced vertices and poses, so their
gradients are exact wherever the features do not change, and not zero for separated pairs within
the margin. ``phi`` is the distance along the contact normal: the true distance for penetrating
pairs (the separating-axis depth) and for separated pairs whose closest features are face–face,
face–vertex or edge–edge; for a separated vertex–vertex or vertex–edge pair it is the largest
separating-axis gap, a lower bound. A separated pair whose reference face and incident face do
not overlap along the normal gets no speculative contact.

Static topology (faces, edges) comes from ``topology``, once, with numpy and scipy.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .geometry import FAR
from .rotations import quat_to_mat
from .types import PatchType

# The separating axis of a face of b must beat a's best face by this much (relative part times the
# |separation| plus absolute part times the size of the larger body) to be chosen; an edge axis
# must beat the best face likewise with EDGE_BIAS.
FACE_B_BIAS = (0.02, 1e-3)
EDGE_BIAS = (0.05, 1e-3)
# Edge pairs whose sine of angle is below this are skipped (their axis is a face axis's).
PARALLEL_SINE = 1e-3
# Two manifold points closer than this (times the size of the larger body) are the same point; a
# third point this close to the line of the first two makes a line, not a face.
POINT_TOL = 1e-5
DEFAULT_MARGIN = 0.005  # m: separated pairs closer than this get speculative contacts


@dataclasses.dataclass(frozen=True)
class HullTopology:
    """Faces and edges of a convex hull, static (hashable: a ``jit`` static argument).

    faces: vertex indices (into the padded vertex array) of every face, counter-clockwise seen from
    outside, coplanar hull triangles merged into one polygon. edges: unique undirected edges
    ``(i, j)``, ``i < j``. edge_faces: the two faces each edge borders. vertices: the indices of the
    valid (hull) vertices. num_vertices: the length of the padded vertex array.
    """

    faces: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]
    edge_faces: tuple[tuple[int, int], ...]
    vertices: tuple[int, ...]
    num_vertices: int

    @property
    def max_face_size(self) -> int:
        return max(len(f) for f in self.faces)

    def face_array(self, width: int | None = None) -> np.ndarray:
        """(F, width) face vertex indices, each face padded with its own first vertex (a zero-length
        edge, a zero term of the face's area vector)."""
        width = self.max_face_size if width is None else width
        out = np.empty((len(self.faces), width), dtype=np.int32)
        for i, f in enumerate(self.faces):
            out[i, : len(f)] = f
            out[i, len(f):] = f[0]
        return out

    @property
    def face_sizes(self) -> np.ndarray:
        return np.array([len(f) for f in self.faces], dtype=np.int32)

    @property
    def edge_array(self) -> np.ndarray:
        return np.array(self.edges, dtype=np.int32).reshape(-1, 2)

    @property
    def edge_face_array(self) -> np.ndarray:
        return np.array(self.edge_faces, dtype=np.int32).reshape(-1, 2)


def topology(vertices, mask=None, tol: float = 1e-7) -> HullTopology:
    """Static topology of the convex body with (padded) ``vertices`` (K, 3) and ``mask`` (K,).

    Faces are scipy's hull triangles merged where coplanar: within ``tol`` times the body's size of
    each other's plane (at least 10 float epsilons of the vertices' dtype, so float32 vertices merge
    too). Raises ``ValueError`` naming the defect: fewer than 4 valid vertices, flat vertices,
    duplicate vertices, a valid vertex that is not a corner of the hull (inside it, or on a face or
    an edge), non-finite values.
    """
    from scipy.spatial import ConvexHull, QhullError

    raw = np.asarray(vertices)
    eps = np.finfo(raw.dtype).eps if np.issubdtype(raw.dtype, np.floating) else 0.0
    v = raw.astype(np.float64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"vertices: expected shape (K, 3), got {v.shape}")
    k = len(v)
    m = np.ones(k, bool) if mask is None else np.asarray(mask) > 0
    if m.shape != (k,):
        raise ValueError(f"mask: expected shape ({k},), got {m.shape}")
    idx = np.flatnonzero(m)
    pts = v[idx]
    if not np.all(np.isfinite(pts)):
        raise ValueError("vertices: contains NaN or infinite values")
    if len(idx) < 4:
        raise ValueError(f"vertices: degenerate hull (only {len(idx)} valid vertices, at least 4 needed)")
    size = float(np.max(np.linalg.norm(pts - pts.mean(0), axis=1)))
    tol_d = max(tol, 10 * eps) * size
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    if np.min(d) <= tol_d:
        i, j = np.unravel_index(np.argmin(d), d.shape)
        raise ValueError(f"vertices: degenerate hull (vertices {idx[i]} and {idx[j]} are duplicates)")
    if size == 0 or np.linalg.svd(pts - pts.mean(0), compute_uv=False)[-1] <= tol_d:
        raise ValueError("vertices: degenerate hull (the vertices are flat: all in one plane)")
    try:
        hull = ConvexHull(pts)
    except QhullError as err:
        raise ValueError(f"vertices: degenerate hull ({err.args[0].splitlines()[0]})") from None
    on_hull = set(int(i) for i in hull.vertices)
    eq = hull.equations  # outward unit normals and offsets, n·x + c = 0 on the facet
    simplices = hull.simplices
    # merge neighbouring facets within tol_d of each other's plane (union-find)
    parent = list(range(len(simplices)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, nbrs in enumerate(hull.neighbors):
        for j in nbrs:
            if np.all(np.abs(pts[simplices[j]] @ eq[i, :3] + eq[i, 3]) <= tol_d):
                parent[root(i)] = root(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(len(simplices)):
        groups.setdefault(root(i), []).append(i)
    faces = []
    for members in groups.values():
        n = eq[members, :3].mean(0)
        n /= np.linalg.norm(n)
        ids = np.unique(simplices[members].ravel())
        c = pts[ids].mean(0)
        u = pts[ids[0]] - c
        u -= (u @ n) * n
        u /= np.linalg.norm(u)
        w = np.cross(n, u)
        ang = np.arctan2((pts[ids] - c) @ w, (pts[ids] - c) @ u)
        ring = ids[np.argsort(ang)]  # counter-clockwise about the outward normal
        # a point of the ring on the straight line of its neighbours is not a corner
        for r in range(len(ring)):
            p0, p1, p2 = pts[ring[r - 1]], pts[ring[r]], pts[ring[(r + 1) % len(ring)]]
            if np.linalg.norm(np.cross(p1 - p0, p2 - p0)) <= tol_d * np.linalg.norm(p2 - p0):
                on_hull.discard(int(ring[r]))
        faces.append(tuple(int(idx[i]) for i in ring))
    missing = [int(idx[i]) for i in range(len(idx)) if i not in on_hull]
    if missing:
        raise ValueError(
            f"vertices: degenerate hull (valid vertices {missing} are not corners of the hull: "
            "inside it or on a face or an edge; drop them or mask them out)"
        )
    directed = {}
    for fi, f in enumerate(faces):
        for r in range(len(f)):
            directed[(f[r], f[(r + 1) % len(f)])] = fi
    edges, edge_faces = [], []
    for (i, j), fi in sorted(directed.items()):
        if i < j:
            if (j, i) not in directed:
                raise ValueError("vertices: degenerate hull (a face edge without a neighbour face)")
            edges.append((i, j))
            edge_faces.append((fi, directed[(j, i)]))
    return HullTopology(
        faces=tuple(faces),
        edges=tuple(edges),
        edge_faces=tuple(edge_faces),
        vertices=tuple(int(i) for i in idx),
        num_vertices=k,
    )


@struct.dataclass
class PairContacts:
    """The contact manifold of one body pair (``num`` slots).

    point: (n, 3) world points, midway between the two surfaces along the normal. normal: (3,) world
    unit normal from body a to body b. phi: (n,) signed distance along the normal (negative:
    penetration). valid: (n,) a real contact with phi ≤ margin (other slots: False, phi = ``FAR``).
    kind: () int32 ``PatchType`` of the pair (NONE without a valid contact).
    """

    point: jnp.ndarray
    normal: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    kind: jnp.ndarray


def _unit(x, axis=-1):
    """x / |x|, finite (and with a finite derivative) at x = 0."""
    return x / jnp.sqrt(jnp.maximum(jnp.sum(x * x, axis=axis, keepdims=True), 1e-30))


def _argmax(x):
    """First index of the maximum of a 1D array: two plain reductions, which XLA vectorises on a
    CPU (``jnp.argmax``'s paired reduction is several times slower there)."""
    i = jnp.arange(x.shape[0], dtype=jnp.int32)
    return jnp.min(jnp.where(x == jnp.max(x), i, x.shape[0] - 1))


def _argmin(x):
    return _argmax(-x)


def _area_vectors(poly):
    """Twice the area vector of polygons (..., P, 3) padded with their first vertex (Newell)."""
    rel = poly - poly[..., :1, :]
    return jnp.sum(jnp.cross(rel, jnp.roll(rel, -1, axis=-2)), axis=-2)


def _world(verts, pos, quat):
    return pos + verts @ quat_to_mat(quat).T


def _check(verts, topo, name):
    if not isinstance(topo, HullTopology):
        raise TypeError(f"topo_{name}: expected a HullTopology (collision.topology), got {type(topo).__name__}")
    if verts.shape != (topo.num_vertices, 3):
        raise ValueError(f"verts_{name}: shape {verts.shape} does not match its topology ({topo.num_vertices}, 3)")


@functools.lru_cache(maxsize=256)
def _static(topo_a: HullTopology, topo_b: HullTopology):
    """Numpy index arrays of a pair, faces padded to a common width."""
    width = max(topo_a.max_face_size, topo_b.max_face_size)
    return dict(
        fa=topo_a.face_array(width), fb=topo_b.face_array(width),
        sa=topo_a.face_sizes, sb=topo_b.face_sizes,
        ea=topo_a.edge_array, eb=topo_b.edge_array,
        efa=topo_a.edge_face_array, efb=topo_b.edge_face_array,
        va=np.array(topo_a.vertices, np.int32), vb=np.array(topo_b.vertices, np.int32),
        width=width,
    )


def _arrays(topo_a, topo_b):
    """``_static`` as JAX constants (gathers at traced indices need them)."""
    return {k: (jnp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in _static(topo_a, topo_b).items()}


def _face_planes(w, faces):
    n = _unit(_area_vectors(w[faces]))
    return n, jnp.sum(n * w[faces[:, 0]], axis=-1)


# The separating-axis test works on vector components (x, y, z as separate arrays) so that, under
# vmap, every operation is elementwise over (batch, features) with no length-3 minor axis: on a CPU
# this made the test several times faster than (..., 3)-shaped arrays.
def _c(w):
    return w[..., 0], w[..., 1], w[..., 2]


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _map(f, a):
    return tuple(f(x) for x in a)


def _face_normals_c(w, faces):
    """Unit outward normals (components, each (F,)) and plane offsets (F,) of padded faces."""
    p = _map(lambda x: x[faces], w)  # (F, P)
    rel = _map(lambda x: x - x[:, :1], p)
    nxt = _map(lambda x: jnp.roll(x, -1, axis=1), rel)
    n = _map(lambda x: jnp.sum(x, axis=1), _cross(rel, nxt))
    inv = jax.lax.rsqrt(jnp.maximum(_dot(n, n), 1e-30))
    n = _map(lambda x: x * inv, n)
    return n, _dot(n, _map(lambda x: x[:, 0], p))


def _sat(wa, wb, s):
    """Separating-axis test on (stop-gradient) world vertices (K, 3): the separations of a's faces
    (Fa,), b's faces (Fb,) and the edge pairs (Ea·Eb,), and the face normals (F, 3)."""
    ca, cb = _c(wa), _c(wb)
    na, da = _face_normals_c(ca, s["fa"])
    nb, db = _face_normals_c(cb, s["fb"])
    pa = _map(lambda x: x[s["va"]], ca)
    pb = _map(lambda x: x[s["vb"]], cb)
    outer = lambda u, v: _dot(_map(lambda x: x[:, None], u), _map(lambda x: x[None, :], v))
    sep_a = jnp.min(outer(na, pb), axis=1) - da  # faces of a: b's deepest vertex above each plane
    sep_b = jnp.min(outer(nb, pa), axis=1) - db
    # edge pairs: the Gauss-map arcs (a's two face normals; b's, negated) must cross
    a1 = _map(lambda x: x[s["efa"][:, 0]], na)
    a2 = _map(lambda x: x[s["efa"][:, 1]], na)
    c1 = _map(lambda x: -x[s["efb"][:, 0]], nb)
    c2 = _map(lambda x: -x[s["efb"][:, 1]], nb)
    bxa = _cross(a2, a1)  # (Ea,)
    dxc = _cross(c2, c1)  # (Eb,)
    cba = outer(bxa, c1)  # (Ea, Eb)
    dba = outer(bxa, c2)
    adc = outer(a1, dxc)
    bdc = outer(a2, dxc)
    minkowski = (cba * dba < 0) & (adc * bdc < 0) & (cba * bdc > 0)
    ea0 = _map(lambda x: x[s["ea"][:, 0]], ca)
    eb0 = _map(lambda x: x[s["eb"][:, 0]], cb)
    ua = _sub(_map(lambda x: x[s["ea"][:, 1]], ca), ea0)
    ub = _sub(_map(lambda x: x[s["eb"][:, 1]], cb), eb0)
    axis = _cross(_map(lambda x: x[:, None], ua), _map(lambda x: x[None, :], ub))
    len2 = _dot(axis, axis)
    ok = minkowski & (len2 > PARALLEL_SINE**2 * _dot(ua, ua)[:, None] * _dot(ub, ub)[None, :])
    inv = jax.lax.rsqrt(jnp.where(ok, len2, 1.0))
    centre_a = _map(jnp.mean, pa)
    # orient the axis away from a's centre: sign of axis·(ea0 - centre_a)
    side = _dot(axis, _map(lambda x: x[:, None], _sub(ea0, centre_a)))
    gap = _dot(axis, _sub(_map(lambda x: x[None, :], eb0), _map(lambda x: x[:, None], ea0)))
    sep_e = jnp.where(side < 0, -gap, gap) * inv
    sep_e = jnp.where(ok, sep_e, -jnp.inf).reshape(-1)
    normals_a = jnp.stack(na, axis=-1)
    normals_b = jnp.stack(nb, axis=-1)
    return normals_a, normals_b, sep_a, sep_b, sep_e


def _clip_candidates(ref, ref_size, inc, inc_size, width, tol_d, tol_u):
    """Candidate manifold points of a reference polygon against an incident polygon (P, 3) each.

    Returns the incident-surface points y (M, 3), the reference normal n, its plane's point c and
    the candidates' mask (M,); M = 2P + P²."""
    dt = ref.dtype
    k = jnp.arange(width)
    ref_edge_ok = k < ref_size  # padded edges have zero length
    inc_edge_ok = k < inc_size
    n = _unit(_area_vectors(ref))
    c = jnp.sum(jnp.where(ref_edge_ok[:, None], ref, 0.0), axis=0) / ref_size.astype(dt)
    n_inc = _unit(_area_vectors(inc))
    e_ref = jnp.roll(ref, -1, axis=0) - ref
    e_inc = jnp.roll(inc, -1, axis=0) - inc
    side_ref = jnp.cross(e_ref, n)  # outward side normals of the reference prism (unnormalised)
    side_inc = jnp.cross(e_inc, n_inc)
    len_ref = jnp.linalg.norm(side_ref, axis=-1)
    len_inc = jnp.linalg.norm(side_inc, axis=-1)

    def inside(x, verts, side, length, ok):  # x (M, 3) → (M,)
        d = jnp.einsum("mj,kj->mk", x, side) - jnp.sum(side * verts, axis=-1)
        return jnp.all((d <= tol_d * length) | ~ok, axis=-1)

    # 1. incident vertices inside the reference prism
    y1 = inc
    m1 = inc_edge_ok & inside(inc, ref, side_ref, len_ref, ref_edge_ok)
    # 2. reference vertices inside the incident polygon, projected along n onto the incident plane
    den = jnp.dot(n_inc, n)
    den_ok = den < -0.05
    den_s = jnp.where(den_ok, den, -1.0)
    t = (jnp.dot(n_inc, inc[0]) - ref @ n_inc) / den_s
    y2 = ref + t[:, None] * n
    m2 = ref_edge_ok & den_ok & inside(y2, inc, side_inc, len_inc, inc_edge_ok)
    # 3. crossings of incident edge k (p + u e) with reference edge i's side plane, on edge i
    num = jnp.sum(side_ref * ref, axis=-1)[None, :] - inc @ side_ref.T  # (k, i)
    dd = e_inc @ side_ref.T
    dd_ok = jnp.abs(dd) > 1e-12 * (len_ref[None, :] * jnp.linalg.norm(e_inc, axis=-1)[:, None]) + 1e-30
    u = num / jnp.where(dd_ok, dd, 1.0)
    y3 = inc[:, None, :] + u[..., None] * e_inc[:, None, :]  # (k, i, 3)
    lr2 = jnp.sum(e_ref * e_ref, axis=-1)
    w = jnp.einsum("kij,ij->ki", y3 - ref[None], e_ref) / jnp.where(ref_edge_ok, lr2, 1.0)[None, :]
    m3 = (inc_edge_ok[:, None] & ref_edge_ok[None, :] & dd_ok
          & (u >= -tol_u) & (u <= 1 + tol_u) & (w >= -tol_u) & (w <= 1 + tol_u))
    y = jnp.concatenate([y1, y2, y3.reshape(-1, 3)], axis=0)
    mask = jnp.concatenate([m1, m2, m3.reshape(-1)])
    return y, n, c, mask


def _reduce(x, phi, mask, n, num, tol):
    """Indices (num,) of kept candidates and their validity; and the patch type (stop-gradient)."""
    big = jnp.asarray(jnp.inf, x.dtype)
    i1 = _argmin(jnp.where(mask, phi, big))
    p1 = x[i1]
    d2 = jnp.sum((x - p1) ** 2, axis=-1)
    i2 = _argmax(jnp.where(mask, d2, -1.0))
    ok1 = mask[i1]
    ok2 = ok1 & (d2[i2] > tol * tol)
    p2 = x[i2]
    perp = jnp.cross(n, p2 - p1)
    perp = perp / jnp.maximum(jnp.linalg.norm(perp), 1e-30)
    d3 = jnp.abs((x - p1) @ perp)
    i3 = _argmax(jnp.where(mask, d3, -1.0))
    ok3 = ok2 & (d3[i3] > tol)
    kind = jnp.where(ok3, PatchType.FACE, jnp.where(ok2, PatchType.LINE,
                                                    jnp.where(ok1, PatchType.POINT, PatchType.NONE)))
    idx, oks = [i1, i2, i3], [ok1, ok2, ok3]
    if num >= 4:
        p3 = x[i3]
        best = jnp.full(x.shape[:1], -jnp.inf, x.dtype)
        for u, v, opp in ((p1, p2, p3), (p2, p3, p1), (p3, p1, p2)):
            q = jnp.cross(n, v - u)
            q = jnp.where(jnp.dot(q, opp - u) > 0, -q, q)  # away from the third corner
            best = jnp.maximum(best, (x - u) @ q)  # outward distance × edge length: added area
        i4 = _argmax(jnp.where(mask, best, -jnp.inf))
        scale = jnp.maximum(jnp.linalg.norm(p2 - p1), 1e-30)
        idx.append(i4)
        oks.append(ok3 & (best[i4] > tol * scale))
    if num > len(idx):
        mind = jnp.min(jnp.sum((x[:, None, :] - x[jnp.stack(idx)][None]) ** 2, axis=-1), axis=1)
    for _ in range(len(idx), num):  # farthest-point sampling
        i = _argmax(jnp.where(mask, mind, -1.0))
        idx.append(i)
        oks.append(oks[-1] & (mind[i] > tol * tol))
        mind = jnp.minimum(mind, jnp.sum((x - x[i]) ** 2, axis=-1))
    return jnp.stack(idx[:num]), jnp.stack(oks[:num]), kind.astype(jnp.int32)


def sat_separation(verts_a, topo_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b) -> jnp.ndarray:
    """The separating-axis test's separation of two hulls (no bias): minus the penetration depth of
    overlapping hulls; for separated ones a lower bound of their distance (equal to it unless the
    closest features are vertex–vertex or vertex–edge). Differentiable almost everywhere."""
    _check(verts_a, topo_a, "a")
    _check(verts_b, topo_b, "b")
    s = _arrays(topo_a, topo_b)
    with jax.default_matmul_precision("highest"):
        wa, wb = _world(verts_a, pos_a, quat_a), _world(verts_b, pos_b, quat_b)
        _, _, sep_a, sep_b, sep_e = _sat(wa, wb, s)
    return jnp.maximum(jnp.maximum(jnp.max(sep_a), jnp.max(sep_b)), jnp.max(sep_e))


def hull_hull(verts_a, topo_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b, num: int = 4,
              margin: float = DEFAULT_MARGIN) -> PairContacts:
    """Contact manifold of convex hull a against convex hull b (module docstring: the algorithm).

    verts_*: (K, 3) body-frame vertices (padded as ``topo_*`` says); topo_*: their ``topology``
    (static); pos_* (3,), quat_* (4, w x y z, body→world); num: contact slots (static, ≥ 1);
    margin (m): separated pairs closer than this get contacts with their positive distance.
    Pure JAX with static shapes: ``jit``, ``vmap`` and ``grad`` apply, float32 and float64. Its
    matrix products are traced at full precision (no TensorFloat-32 on GPUs: a 0.1 m box's vertices
    would move by tens of micrometres).
    """
    _check(verts_a, topo_a, "a")
    _check(verts_b, topo_b, "b")
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"num: a static number of contacts ≥ 1, got {num!r}")
    with jax.default_matmul_precision("highest"):
        return _hull_hull(verts_a, topo_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b, num, margin)


def _hull_hull(verts_a, topo_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b, num, margin):
    s = _arrays(topo_a, topo_b)
    dt = jnp.result_type(verts_a, verts_b, pos_a, pos_b, quat_a, quat_b)
    sg = jax.lax.stop_gradient
    wa = _world(verts_a.astype(dt), pos_a.astype(dt), quat_a.astype(dt))
    wb = _world(verts_b.astype(dt), pos_b.astype(dt), quat_b.astype(dt))
    wa_s, wb_s = sg(wa), sg(wb)

    # --- discrete choices, no gradient ---
    size = jnp.maximum(jnp.max(jnp.linalg.norm(sg(verts_a)[s["va"]].astype(dt), axis=-1)),
                       jnp.max(jnp.linalg.norm(sg(verts_b)[s["vb"]].astype(dt), axis=-1)))
    na, nb, sep_a, sep_b, sep_e = _sat(wa_s, wb_s, s)
    ia, ib, ie = _argmax(sep_a), _argmax(sep_b), _argmax(sep_e)
    best_a, best_b, best_e = sep_a[ia], sep_b[ib], sep_e[ie]
    use_b = best_b > best_a + FACE_B_BIAS[0] * jnp.abs(best_a) + FACE_B_BIAS[1] * size
    best_f = jnp.where(use_b, best_b, best_a)
    use_edge = best_e > best_f + EDGE_BIAS[0] * jnp.abs(best_f) + EDGE_BIAS[1] * size
    separation = jnp.maximum(jnp.maximum(best_a, best_b), best_e)
    inc_a = _argmin(na @ nb[ib])  # a's face most anti-parallel to b's reference face
    inc_b = _argmin(nb @ na[ia])

    # --- face axis: clip the incident face against the reference face (traced values) ---
    ref = jnp.where(use_b, wb[s["fb"][ib]], wa[s["fa"][ia]])
    inc = jnp.where(use_b, wa[s["fa"][inc_a]], wb[s["fb"][inc_b]])
    ref_size = jnp.where(use_b, s["sb"][ib], s["sa"][ia])
    inc_size = jnp.where(use_b, s["sa"][inc_a], s["sb"][inc_b])
    tol = POINT_TOL * size
    y, n, c, mask = _clip_candidates(ref, ref_size, inc, inc_size, s["width"], 0.1 * tol, 1e-6)
    phi_c = (y - c) @ n
    mask = mask & (sg(phi_c) <= margin)
    keep, ok, kind_f = _reduce(sg(y), sg(phi_c), mask, sg(n), num, tol)
    face_phi = phi_c[keep]
    face_pt = y[keep] - 0.5 * face_phi[:, None] * n[None, :]
    face_normal = jnp.where(use_b, -n, n)

    # --- edge axis: closest points of the two edges ---
    ka, kb = ie // len(s["eb"]), ie % len(s["eb"])
    p1, q1 = wa[s["ea"][ka, 0]], wa[s["ea"][ka, 1]]
    p2, q2 = wb[s["eb"][kb, 0]], wb[s["eb"][kb, 1]]
    d1, d2 = q1 - p1, q2 - p2
    axis = _unit(jnp.cross(d1, d2))
    centre_a = jnp.mean(wa_s[s["va"]], axis=0)
    axis = jnp.where(jnp.dot(sg(axis), sg(p1) - centre_a) < 0, -axis, axis)
    edge_phi = jnp.dot(axis, p2 - p1)
    r = p1 - p2
    aa, ee, bb = jnp.dot(d1, d1), jnp.dot(d2, d2), jnp.dot(d1, d2)
    cc, ff = jnp.dot(d1, r), jnp.dot(d2, r)
    den = aa * ee - bb * bb
    den = jnp.where(den > 1e-30, den, 1.0)
    s1 = jnp.clip((bb * ff - cc * ee) / den, 0.0, 1.0)
    t2 = jnp.clip((bb * s1 + ff) / jnp.where(ee > 0, ee, 1.0), 0.0, 1.0)
    edge_pt = 0.5 * (p1 + s1 * d1 + p2 + t2 * d2)
    edge_ok = sg(edge_phi) <= margin

    # --- combine ---
    slot0 = jnp.arange(num) == 0
    valid = jnp.where(use_edge, slot0 & edge_ok, ok) & (separation <= margin)
    phi = jnp.where(use_edge, jnp.where(slot0, edge_phi, FAR), face_phi)
    point = jnp.where(use_edge, jnp.broadcast_to(edge_pt, face_pt.shape), face_pt)
    normal = jnp.where(use_edge, axis, face_normal)
    kind = jnp.where(use_edge, jnp.int32(PatchType.POINT), kind_f)
    kind = jnp.where(jnp.any(valid), kind, jnp.int32(PatchType.NONE)).astype(jnp.int32)
    phi = jnp.where(valid, phi, FAR)
    return PairContacts(point=point, normal=normal, phi=phi, valid=valid, kind=kind)
