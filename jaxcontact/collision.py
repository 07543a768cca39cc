"""Narrow phase of body–body contact: convex hull against convex hull, a fixed-size contact manifold.

The algorithm is the separating-axis test with face clipping of Gregorius ("The Separating Axis
Test between Convex Polyhedra", GDC 2013; "Robust Contact Creation for Physics Simulations", GDC
2015), as in Box2D, Bullet and MJX's ``collision_convex.py``, written for fixed shapes:

1. **Separating axes.** Every face normal of ``a`` and of ``b`` (support of the other body's
   vertices), and edge-pair axes, near-parallel pairs skipped, by whichever of two exact methods
   costs less for the pair's static sizes: Gregorius' test of every edge pair (does it build a
   face of the Minkowski difference? its Gauss-map arcs cross), whose separation is then closed
   form; or every pair of edge *directions* (parallel edges share one: a box has 3) with the
   support of both vertex sets along its cross product (box–box: 9 axes instead of 144 edge
   pairs). The axis of largest separation wins, with a bias (``FACE_B_BIAS``,
   ``EDGE_BIAS``: a relative plus an absolute part, the absolute one relative to the smaller body)
   that prefers a face of ``a`` over a face of ``b`` and faces over edges, so resting face–face
   contact does not flicker between features.
2. **Face axis.** The face is the reference face; the incident face is the other body's face most
   anti-parallel to it. The manifold is the intersection of the two polygons seen along the
   reference normal, written as one fixed candidate set: the incident vertices inside the
   reference prism, the reference vertices inside the incident polygon (projected onto the
   incident plane along the normal), and every crossing of an incident edge with a reference edge.
   Candidates farther than ``margin`` above the reference plane are dropped. ``num`` of them are
   kept: the deepest, the farthest from it, the farthest from that line, the one adding the most
   area to that triangle, then farthest-point sampling (the reduction of Bullet and MJX);
   coincident points are not kept twice.
3. **Edge axis.** One contact at the closest points of the two edges.

Every discrete choice (axis, faces, edges, kept candidates) is made under ``stop_gradient``; the
points, normal and distances are then recomputed from the traced vertices and poses, so their
gradients are exact wherever the features do not change, and not zero for separated pairs within
the margin. ``phi`` is each point's distance along the contact normal. For penetrating pairs the
deepest one is minus the separating-axis depth (when the deepest vertex lies over the reference
face; where the bias chose a face or edge over a slightly better axis, deeper by at most the bias).
Separated pairs get their true distance where the closest features are face–face, face–vertex or
edge–edge; for a separated vertex–vertex or vertex–edge pair it is the separating-axis gap, a lower
bound. A separated pair whose reference and incident faces do not overlap along the normal gets no
speculative contact. Swapping a and b flips the normal and keeps the distances, except where the
bias decides (a's face within the bias of b's: a's wins either way).

Static topology (faces, edges) comes from ``topology``, once, with numpy and scipy. The cost of a
pair grows with the product of the two bodies' edge counts (or edge directions): small for boxes
and prisms, large for two 64-vertex hulls (about 34,000 edge pairs).
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
# |separation| plus absolute part times the size of the smaller body, its largest vertex radius) to
# be chosen; an edge axis must beat the best face likewise with EDGE_BIAS.
FACE_B_BIAS = (0.02, 1e-3)
EDGE_BIAS = (0.05, 1e-3)
# Edge pairs whose sine of angle is below this are skipped (their axis is a face axis's).
PARALLEL_SINE = 1e-3
# Two manifold points closer than this (times the size of the smaller body) are the same point; a
# third point this close to the line of the first two makes a line, not a face.
POINT_TOL = 1e-5
MAX_HULL_VERTICES = 1024
"""The most valid vertices a hull may have (``topology`` refuses more, at once): MuJoCo's own hulls of the
public corpus's meshes fit (Metaworld's Sawyer gripper, 874 corners, the largest one a loadable file holds;
``python -m benchmarks.hull_sizes``, ``benchmarks/results/hull_sizes.md``). MuJoCo and MJX collide a mesh by
its whole convex hull and cap nothing (MJX advises ``maxhullvert`` of 64 or less for speed, and caps a
face at 20 vertices); neither is done here: the hull is exact. The cost is the pairs': a hull's faces,
edges and edge directions grow with K, and a world pads every body to its largest K
(``worlds.make_scene``), measured there; ``reduce_hull`` keeps a hull's extreme vertices when speed
matters more than the shape."""

DEFAULT_MARGIN = 0.005  # m: separated pairs closer than this get speculative contacts


@dataclasses.dataclass(frozen=True)
class HullTopology:
    """Faces and edges of a convex hull, static (hashable: a ``jit`` static argument).

    faces: vertex indices (into the padded vertex array) of every face, counter-clockwise seen from
    outside, coplanar hull triangles merged into one polygon. edges: unique undirected edges
    ``(i, j)``, ``i < j``. edge_faces: the two faces each edge borders. edge_class: the direction
    class of each edge (parallel edges share one; a box has 3). vertices: the indices of the valid
    (hull) vertices. num_vertices: the length of the padded vertex array.
    """

    faces: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]
    edge_faces: tuple[tuple[int, int], ...]
    edge_class: tuple[int, ...]
    vertices: tuple[int, ...]
    num_vertices: int

    @property
    def num_classes(self) -> int:
        return max(self.edge_class) + 1

    @property
    def class_edges(self) -> np.ndarray:
        """(D,) one edge of each direction class."""
        first = {}
        for e, c in enumerate(self.edge_class):
            first.setdefault(c, e)
        return np.array([first[c] for c in range(self.num_classes)], dtype=np.int32)

    @property
    def vertex_class_edge(self) -> np.ndarray:
        """(K, D) the edge of each direction class at each vertex (the class's first edge where the
        vertex has none)."""
        out = np.tile(self.class_edges, (self.num_vertices, 1))
        for e, (i, j) in enumerate(self.edges):
            out[i, self.edge_class[e]] = e
            out[j, self.edge_class[e]] = e
        return out

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


def reduce_hull(points, num: int = MAX_HULL_VERTICES) -> np.ndarray:
    """At most ``num`` of the hull's extreme vertices of ``points`` (P, 3): for ``num`` directions
    spread over the sphere (a Fibonacci lattice), the point farthest along each (each kept once).
    The reduced hull lies inside the original and touches it in every one of those directions;
    build the body from it (``shapes.convex_hull(reduce_hull(points), mass)``)."""
    pts = np.asarray(points, np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points: expected shape (P, 3), got {pts.shape}")
    if not isinstance(num, int) or isinstance(num, bool) or not 4 <= num <= MAX_HULL_VERTICES:
        raise ValueError(f"num: expected an int in [4, {MAX_HULL_VERTICES}], got {num!r}")
    k = np.arange(num) + 0.5
    z = 1 - 2 * k / num
    phi = np.pi * (1 + 5 ** 0.5) * k
    r = np.sqrt(1 - z * z)
    dirs = np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)
    centre = pts.mean(0)
    keep = np.unique(np.argmax((pts - centre) @ dirs.T, axis=0))
    return pts[keep]


def _merged_faces(pts, tol_d: float):
    """scipy's hull of ``pts`` (P, 3) with neighbouring facets within ``tol_d`` of each other's plane
    merged: (faces: each a ring of indices into ``pts``, counter-clockwise seen from outside; the
    indices that are corners of the merged hull)."""
    from scipy.spatial import ConvexHull, QhullError

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
        flat = np.stack([(pts[ids] - c) @ u, (pts[ids] - c) @ w], axis=1)
        ang = np.arctan2(flat[:, 1], flat[:, 0])
        ring = ids[np.argsort(ang)]  # counter-clockwise about the outward normal
        if len(ids) > 3:  # a merged face's own corners: a point inside its polygon (a mesh's vertex a hair
            # above a flat cap, within the tolerance) is no corner, and would break the ring's order
            try:
                corners = set(ids[ConvexHull(flat).vertices].tolist())
            except QhullError:
                corners = set(ids.tolist())
            for i in ids:
                if int(i) not in corners:
                    on_hull.discard(int(i))
            ring = np.array([i for i in ring if int(i) in corners], dtype=ids.dtype)
        # a point of the ring on the straight line of its neighbours is not a corner
        for r in range(len(ring)):
            p0, p1, p2 = pts[ring[r - 1]], pts[ring[r]], pts[ring[(r + 1) % len(ring)]]
            if np.linalg.norm(np.cross(p1 - p0, p2 - p0)) <= tol_d * np.linalg.norm(p2 - p0):
                on_hull.discard(int(ring[r]))
        faces.append(ring)
    return faces, on_hull


def hull_corners(points, tol: float = 1e-7) -> np.ndarray:
    """The corners of the convex hull of ``points`` (P, 3), in their order: scipy's hull vertices
    without those ``topology`` would refuse as lying on a face or an edge of the others (within
    ``tol`` times the hull's size: a mesh's near-coplanar vertices), so that the same convex hull
    (to that tolerance) builds a body. Any number of points (no vertex limit)."""
    from scipy.spatial import ConvexHull

    pts = np.asarray(points, np.float64)
    keep = np.sort(ConvexHull(pts).vertices)
    while True:
        sub = pts[keep]
        size = float(np.max(np.linalg.norm(sub - sub.mean(0), axis=1)))
        _, on_hull = _merged_faces(sub, max(tol, 10 * np.finfo(np.float64).eps) * size)
        if len(on_hull) == len(keep):
            return sub
        keep = keep[np.sort(np.fromiter(on_hull, int))]


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
    if len(idx) > MAX_HULL_VERTICES:
        raise ValueError(f"vertices: {len(idx)} valid vertices, more than the engine's limit of "
                         f"collision.MAX_HULL_VERTICES = {MAX_HULL_VERTICES} (the hull's topology and narrow phase "
                         "grow as K²); reduce the hull first (collision.reduce_hull keeps its extreme vertices)")
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
    rings, on_hull = _merged_faces(pts, tol_d)
    faces = [tuple(int(idx[i]) for i in ring) for ring in rings]
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
    # direction classes: edges parallel within the tolerance (as unit vectors, up to sign)
    dirs = np.array([v[j] - v[i] for i, j in edges])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    classes, reps = [], np.zeros((0, 3))
    for dvec in dirs:  # each edge joins the first class parallel to it (all classes at once), else opens one
        close = np.flatnonzero(np.sqrt(np.sum(np.cross(reps, dvec) ** 2, axis=1)) <= max(tol, 10 * eps) * 10)
        if len(close):
            classes.append(int(close[0]))
        else:
            classes.append(len(reps))
            reps = np.concatenate([reps, dvec[None]])
    return HullTopology(
        faces=tuple(faces),
        edges=tuple(edges),
        edge_faces=tuple(edge_faces),
        edge_class=tuple(classes),
        vertices=tuple(int(i) for i in idx),
        num_vertices=k,
    )


@struct.dataclass
class PairContacts:
    """The contact manifold of one body pair (``num`` slots).

    point: (n, 3) world points, midway between the two surfaces along the normal. normal: (3,) world
    unit normal from body a to body b. phi: (n,) signed distance along the normal (negative:
    penetration). valid: (n,) a real contact with phi ≤ margin (other slots: False, phi = ``FAR``).
    kind: () int32 ``PatchType`` of the pair (NONE without a valid contact). The point and normal
    of a pair without a valid contact are unspecified (the fused kernel and the reference differ
    there: the kernel stops at the first axis that separates the pair by more than the margin).
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
        ca=topo_a.class_edges, cb=topo_b.class_edges,
        vca=topo_a.vertex_class_edge, vcb=topo_b.vertex_class_edge,
        # edge axes by the support of every pair of edge directions when that is cheaper than
        # Gregorius' per-edge-pair test (boxes: 9 axes instead of 144 edge pairs). Measured on a CPU
        # (float32, vmapped): one edge pair of the test costs about 4 axis-vertex projections.
        support=topo_a.num_classes * topo_b.num_classes * (len(topo_a.vertices) + len(topo_b.vertices) + 3)
        < 4 * len(topo_a.edges) * len(topo_b.edges),
    )


def edge_axes_method(topo_a: HullTopology, topo_b: HullTopology) -> str:
    """Which exact method finds a pair's edge axes (module docstring, 1.): ``"support"`` (pairs of
    edge directions) or ``"gauss"`` (Gregorius' per-edge-pair test); the cheaper for the sizes."""
    return "support" if _static(topo_a, topo_b)["support"] else "gauss"


def _arrays(topo_a, topo_b):
    """``_static`` as JAX constants (gathers at traced indices need them)."""
    return {k: (jnp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in _static(topo_a, topo_b).items()}


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


def _rot(r, v, pos=None):
    """Components of R v (+ pos) for body-frame components v."""
    out = tuple(r[i, 0] * v[0] + r[i, 1] * v[1] + r[i, 2] * v[2] for i in range(3))
    return out if pos is None else tuple(out[i] + pos[i] for i in range(3))


def _sat(verts_a, rot_a, pos_a, verts_b, rot_b, pos_b, s):
    """Separating-axis test on (stop-gradient) body-frame vertices (K, 3) and poses.

    Face normals and edge directions are formed in the body frame and rotated, so under a ``vmap``
    over poses alone (the same bodies in every world) their gathers are not batched. Returns the
    world face normals of a and b (F, 3), the separations of a's faces (Fa,) and b's (Fb,), the best
    edge-pair separation and that pair's edges (indices into each topology's edges)."""
    va, vb = _c(verts_a), _c(verts_b)
    na_body, da_body = _face_normals_c(va, s["fa"])
    nb_body, db_body = _face_normals_c(vb, s["fb"])
    na, nb = _rot(rot_a, na_body), _rot(rot_b, nb_body)
    da, db = da_body + _dot(na, _c(pos_a)), db_body + _dot(nb, _c(pos_b))
    pa = _rot(rot_a, _map(lambda x: x[s["va"]], va), _c(pos_a))
    pb = _rot(rot_b, _map(lambda x: x[s["vb"]], vb), _c(pos_b))
    outer = lambda u, v: _dot(_map(lambda x: x[:, None], u), _map(lambda x: x[None, :], v))
    sep_a = jnp.min(outer(na, pb), axis=1) - da  # faces of a: b's deepest vertex above each plane
    sep_b = jnp.min(outer(nb, pa), axis=1) - db
    if s["support"]:
        best_e, ka, kb = _edge_axes_support(va, rot_a, vb, rot_b, pa, pb, s)
    else:
        best_e, ka, kb = _edge_axes_gauss(va, rot_a, pos_a, vb, rot_b, pos_b, na_body, nb_body, pa, s, outer)
    return jnp.stack(na, axis=-1), jnp.stack(nb, axis=-1), sep_a, sep_b, best_e, ka, kb


def _edge_axes_gauss(va, rot_a, pos_a, vb, rot_b, pos_b, na_body, nb_body, pa, s, outer):
    """Gregorius: every edge pair whose Gauss-map arcs cross (a face of the Minkowski difference),
    its separation in closed form along the pair's cross product."""
    def edge(c, e, k, r, pos=None):
        return _rot(r, _map(lambda x: x[e[:, k]], c), pos)

    a1, a2 = edge(na_body, s["efa"], 0, rot_a), edge(na_body, s["efa"], 1, rot_a)
    c1 = _map(lambda x: -x, edge(nb_body, s["efb"], 0, rot_b))
    c2 = _map(lambda x: -x, edge(nb_body, s["efb"], 1, rot_b))
    bxa = _cross(a2, a1)  # (Ea,)
    dxc = _cross(c2, c1)  # (Eb,)
    cba, dba = outer(bxa, c1), outer(bxa, c2)  # (Ea, Eb)
    adc, bdc = outer(a1, dxc), outer(a2, dxc)
    minkowski = (cba * dba < 0) & (adc * bdc < 0) & (cba * bdc > 0)
    ea0, eb0 = edge(va, s["ea"], 0, rot_a, _c(pos_a)), edge(vb, s["eb"], 0, rot_b, _c(pos_b))
    ua = _rot(rot_a, _sub(_map(lambda x: x[s["ea"][:, 1]], va), _map(lambda x: x[s["ea"][:, 0]], va)))
    ub = _rot(rot_b, _sub(_map(lambda x: x[s["eb"][:, 1]], vb), _map(lambda x: x[s["eb"][:, 0]], vb)))
    axis = _cross(_map(lambda x: x[:, None], ua), _map(lambda x: x[None, :], ub))
    len2 = _dot(axis, axis)
    ok = minkowski & (len2 > PARALLEL_SINE**2 * _dot(ua, ua)[:, None] * _dot(ub, ub)[None, :])
    inv = jax.lax.rsqrt(jnp.where(ok, len2, 1.0))
    centre_a = _map(jnp.mean, pa)
    side = _dot(axis, _map(lambda x: x[:, None], _sub(ea0, centre_a)))  # orient away from a's centre
    gap = _dot(axis, _sub(_map(lambda x: x[None, :], eb0), _map(lambda x: x[:, None], ea0)))
    sep = jnp.where(ok, jnp.where(side < 0, -gap, gap) * inv, -jnp.inf).reshape(-1)
    i = _argmax(sep)
    nb_edges = s["eb"].shape[0]
    return sep[i], i // nb_edges, i % nb_edges


def _edge_axes_support(va, rot_a, vb, rot_b, pa, pb, s):
    """Every pair of edge directions (parallel edges share one), the separation of the vertex sets
    along its cross product (both signs); the pair's edges are those of the two directions at the
    supporting vertices."""
    def direction(c, e, cls, r):
        return _rot(r, _sub(_map(lambda x: x[e[cls, 1]], c), _map(lambda x: x[e[cls, 0]], c)))

    ua = direction(va, s["ea"], s["ca"], rot_a)  # (Da,)
    ub = direction(vb, s["eb"], s["cb"], rot_b)  # (Db,)
    axis = _cross(_map(lambda x: x[:, None], ua), _map(lambda x: x[None, :], ub))  # (Da, Db)
    len2 = _dot(axis, axis)
    ok = len2 > PARALLEL_SINE**2 * _dot(ua, ua)[:, None] * _dot(ub, ub)[None, :]
    inv = jax.lax.rsqrt(jnp.where(ok, len2, 1.0))
    u = _map(lambda x: (x * inv).reshape(-1)[:, None], axis)  # (M, 1)
    proj_a = _dot(u, _map(lambda x: x[None, :], pa))  # (M, Ka)
    proj_b = _dot(u, _map(lambda x: x[None, :], pb))
    plus = jnp.min(proj_b, axis=1) - jnp.max(proj_a, axis=1)  # b beyond a along +u
    minus = jnp.min(proj_a, axis=1) - jnp.max(proj_b, axis=1)  # along −u
    sep = jnp.where(ok.reshape(-1), jnp.maximum(plus, minus), -jnp.inf)
    i = _argmax(sep)
    sign = jnp.where(plus[i] >= minus[i], 1.0, -1.0)
    va = s["va"][_argmax(sign * proj_a[i])]  # a's vertex farthest towards b
    vb = s["vb"][_argmax(-sign * proj_b[i])]  # b's vertex farthest towards a
    nb_dirs = s["cb"].shape[0]
    return sep[i], s["vca"][va, i // nb_dirs], s["vcb"][vb, i % nb_dirs]


def _clip_candidates(ref, ref_size, inc, inc_size, width, tol_d, tol_u):
    """Candidate manifold points of a reference polygon against an incident polygon (P, 3) each.

    Returns the incident-surface points y (M, 3), the reference normal n, its plane's point c and
    the candidates' mask (M,); M = 2P + P². Written on components, like the separating-axis test."""
    dt = ref.dtype
    k = jnp.arange(width)
    ref_ok = k < ref_size  # padded edges have zero length
    inc_ok = k < inc_size
    r, q = _c(ref), _c(inc)
    col = lambda v: _map(lambda x: x[:, None], v)
    row = lambda v: _map(lambda x: x[None, :], v)

    def normal(p):
        rel = _map(lambda x: x - x[:1], p)
        a = _map(jnp.sum, _cross(rel, _map(lambda x: jnp.roll(x, -1), rel)))
        inv = jax.lax.rsqrt(jnp.maximum(_dot(a, a), 1e-30))
        return _map(lambda x: x * inv, a)

    n, n_inc = normal(r), normal(q)
    c = _map(lambda x: jnp.sum(jnp.where(ref_ok, x, 0.0)) / ref_size.astype(dt), r)
    e_ref = _sub(_map(lambda x: jnp.roll(x, -1), r), r)
    e_inc = _sub(_map(lambda x: jnp.roll(x, -1), q), q)
    side_ref = _cross(e_ref, n)  # outward side normals of the reference prism (unnormalised)
    side_inc = _cross(e_inc, n_inc)
    len_ref = jnp.sqrt(_dot(side_ref, side_ref))
    len_inc = jnp.sqrt(_dot(side_inc, side_inc))
    off_ref = _dot(side_ref, r)
    off_inc = _dot(side_inc, q)

    def inside(x, side, off, length, ok):  # x: components (M,) → (M,)
        d = _dot(col(x), row(side)) - off[None, :]
        return jnp.all((d <= tol_d * length[None, :]) | ~ok[None, :], axis=1)

    # 1. incident vertices inside the reference prism
    m1 = inc_ok & inside(q, side_ref, off_ref, len_ref, ref_ok)
    # 2. reference vertices inside the incident polygon, projected along n onto the incident plane
    den = _dot(n_inc, n)
    den_ok = den < -0.05
    t = (_dot(n_inc, _map(lambda x: x[0], q)) - _dot(n_inc, r)) / jnp.where(den_ok, den, -1.0)
    y2 = tuple(r[j] + t * n[j] for j in range(3))
    m2 = ref_ok & den_ok & inside(y2, side_inc, off_inc, len_inc, inc_ok)
    # 3. crossings of incident edge k (q_k + u e_k) with reference edge i's side plane, on edge i
    num = off_ref[None, :] - _dot(col(q), row(side_ref))  # (k, i)
    dd = _dot(col(e_inc), row(side_ref))
    dd_ok = jnp.abs(dd) > 1e-12 * len_ref[None, :] * jnp.sqrt(_dot(e_inc, e_inc))[:, None] + 1e-30
    u = num / jnp.where(dd_ok, dd, 1.0)
    y3 = tuple(q[j][:, None] + u * e_inc[j][:, None] for j in range(3))  # (k, i)
    lr2 = _dot(e_ref, e_ref)
    w = _dot(_sub(y3, row(r)), row(e_ref)) / jnp.where(ref_ok, lr2, 1.0)[None, :]
    m3 = (inc_ok[:, None] & ref_ok[None, :] & dd_ok
          & (u >= -tol_u) & (u <= 1 + tol_u) & (w >= -tol_u) & (w <= 1 + tol_u))
    y = jnp.stack([jnp.concatenate([q[j], y2[j], y3[j].reshape(-1)]) for j in range(3)], axis=-1)
    mask = jnp.concatenate([m1, m2, m3.reshape(-1)])
    return y, jnp.stack(n), jnp.stack(c), mask


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
    args = verts_a, pos_a, quat_a, verts_b, pos_b, quat_b
    dt = jnp.result_type(*args)
    va, pa, qa, vb, pb, qb = (jnp.asarray(x, dt) for x in args)
    with jax.default_matmul_precision("highest"):
        _, _, sep_a, sep_b, sep_e, _, _ = _sat(va, quat_to_mat(qa), pa, vb, quat_to_mat(qb), pb, s)
    return jnp.maximum(jnp.maximum(jnp.max(sep_a), jnp.max(sep_b)), sep_e)


def hull_hull(verts_a, topo_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b, num: int = 4,
              margin: float = DEFAULT_MARGIN, method: str = "auto") -> PairContacts:
    """Contact manifold of convex hull a against convex hull b (module docstring: the algorithm).

    verts_*: (K, 3) body-frame vertices (padded as ``topo_*`` says); topo_*: their ``topology``
    (static); pos_* (3,), quat_* (4, w x y z, body→world); num: contact slots (static, ≥ 1);
    margin (m, a number or a traced scalar): separated pairs closer than this get contacts with
    their positive distance. method (``METHODS``): ``"jax"``, the pure-JAX reference; ``"native"``
    and ``"auto"`` (the default): on a CPU the fused kernel (``jaxcontact.native``, ``narrow.cc``:
    the same choices and values, to round-off, with the derivatives of the reference at its choices),
    elsewhere, or where the kernel does not build, the reference.
    ``jit``, ``vmap`` and ``grad`` apply, float32 and float64, with static shapes. The reference's
    matrix products are traced at full precision (no TensorFloat-32 on GPUs: a 0.1 m box's vertices
    would move by tens of micrometres).
    """
    verts_a, verts_b = jnp.asarray(verts_a), jnp.asarray(verts_b)
    _check(verts_a, topo_a, "a")
    _check(verts_b, topo_b, "b")
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"num: a static number of contacts ≥ 1, got {num!r}")
    if method not in METHODS:
        raise ValueError(f"method: one of {METHODS}, got {method!r}")
    args = verts_a, pos_a, quat_a, verts_b, pos_b, quat_b
    dt = jnp.result_type(*args)
    if not jnp.issubdtype(dt, jnp.floating):
        dt = jnp.dtype(float)
    args = tuple(jnp.asarray(x, dt) for x in args)
    margin = jnp.asarray(margin, dt)

    def reference(*a):
        with jax.default_matmul_precision("highest"):
            va, pa, qa, vb, pb, qb, m = a
            return _hull_hull(va, topo_a, pa, qa, vb, topo_b, pb, qb, num, m)

    if not kernel_runs(method, dt):
        return reference(*args, margin)

    def kernel(*a):
        return _native_hull_hull((topo_a, topo_b, num), *a)

    return jax.lax.platform_dependent(*args, margin, cpu=kernel, default=reference)


METHODS = ("auto", "native", "jax")
"""The narrow phase's methods (``hull_hull``, ``round_hull``, ``convex_pair``)."""


def kernel_runs(method: str, dtype) -> bool:
    """Whether a narrow-phase ``method`` (``METHODS``) takes its fused CPU kernel for ``dtype``: not
    ``"jax"``, JAX's default backend a CPU, float32 or float64, and the kernels built
    (``native.available()``): the narrow phase's one place to ask (the solvers': ``solvers.problem.table``)."""
    if method == "jax" or jax.default_backend() != "cpu" or jnp.dtype(dtype).name not in ("float32", "float64"):
        return False
    from . import native

    return native.available()


def _kernel_attributes(topo_a: HullTopology, topo_b: HullTopology, num: int) -> dict:
    """The pair's static topology as the kernel's attributes (flat int32 arrays, ints, the constants)."""
    from . import native

    s = _static(topo_a, topo_b)
    flat = lambda k: np.ascontiguousarray(s[k], np.int32).reshape(-1)
    return dict(**{k: flat(k) for k in ("fa", "fb", "sa", "sb", "ea", "eb", "efa", "efb", "ca", "cb", "vca", "vcb")},
                via=flat("va"), vib=flat("vb"), width=np.int64(s["width"]), support=np.int64(bool(s["support"])),
                num=np.int64(num), threads=np.int64(native.threads()), face_b_bias0=float(FACE_B_BIAS[0]),
                face_b_bias1=float(FACE_B_BIAS[1]), edge_bias0=float(EDGE_BIAS[0]), edge_bias1=float(EDGE_BIAS[1]),
                parallel_sine=float(PARALLEL_SINE), point_tol=float(POINT_TOL), far=float(FAR))


def _native_hull_hull(spec, verts_a, pos_a, quat_a, verts_b, pos_b, quat_b, margin) -> PairContacts:
    """``hull_hull`` by the fused kernel: its choices and values, with the derivatives of
    ``_evaluate`` (the reference's values at those choices)."""
    from .native.narrow import hull_hull_manifold

    topo_a, topo_b, num = spec
    dt = verts_a.dtype
    sg = jax.lax.stop_gradient
    args = (verts_a, pos_a, quat_a, verts_b, pos_b, quat_b)
    out = (jax.ShapeDtypeStruct((num, 3), dt), jax.ShapeDtypeStruct((3,), dt), jax.ShapeDtypeStruct((num,), dt),
           jax.ShapeDtypeStruct((num,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32),
           jax.ShapeDtypeStruct((6 + num,), jnp.int32))
    point, normal, phi, valid, kind, choice = hull_hull_manifold(tuple(sg(a) for a in (*args, margin)), out,
                                                                 _kernel_attributes(topo_a, topo_b, num))
    valid = valid.astype(bool)
    point, normal, phi = _with_derivative(spec, (point, normal, phi), choice, valid, args)
    return PairContacts(point=point, normal=normal, phi=phi, valid=valid, kind=kind)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _with_derivative(spec, values, choice, valid, args):
    """``values`` (the kernel's), whose derivatives are those of ``_evaluate`` at the same choices."""
    return values


@_with_derivative.defjvp
def _with_derivative_jvp(spec, primals, tangents):
    values, choice, valid, args = primals
    _, _, _, dargs = tangents
    with jax.default_matmul_precision("highest"):
        _, dvalues = jax.jvp(lambda a: _evaluate(spec, choice, valid, *a), (args,), (dargs,))
    return values, dvalues


def _evaluate(spec, choice, valid, verts_a, pos_a, quat_a, verts_b, pos_b, quat_b):
    """(point, normal, phi) of a pair's manifold at given choices (the kernel's ``choice``: use_b,
    use_edge, reference face, incident face, the two edges, the kept candidates; and ``valid``):
    ``_hull_hull``'s formulas for the kept candidates only, differentiable in the vertices and poses."""
    topo_a, topo_b, num = spec
    s = _arrays(topo_a, topo_b)
    W = s["width"]
    wa, wb = _world(verts_a, pos_a, quat_a), _world(verts_b, pos_b, quat_b)
    use_b, use_edge = choice[0] > 0, choice[1] > 0
    ref_face, inc_face, ka, kb, keep = choice[2], choice[3], choice[4], choice[5], choice[6:6 + num]
    Fa, Fb = s["fa"].shape[0], s["fb"].shape[0]
    rf_a, rf_b = jnp.minimum(ref_face, Fa - 1), jnp.minimum(ref_face, Fb - 1)
    if_a, if_b = jnp.minimum(inc_face, Fa - 1), jnp.minimum(inc_face, Fb - 1)
    r = jnp.where(use_b, wb[s["fb"][rf_b]], wa[s["fa"][rf_a]])  # (W, 3)
    q = jnp.where(use_b, wa[s["fa"][if_a]], wb[s["fb"][if_b]])
    ref_size = jnp.where(use_b, s["sb"][rf_b], s["sa"][rf_a])

    def normal(p):
        rel = p - p[:1]
        a = jnp.sum(jnp.cross(rel, jnp.roll(rel, -1, axis=0)), axis=0)
        return a * jax.lax.rsqrt(jnp.maximum(jnp.dot(a, a), 1e-30))

    n, n_inc = normal(r), normal(q)
    c = jnp.sum(jnp.where((jnp.arange(W) < ref_size)[:, None], r, 0.0), axis=0) / ref_size.astype(r.dtype)
    e_ref, e_inc = jnp.roll(r, -1, axis=0) - r, jnp.roll(q, -1, axis=0) - q
    # the kept candidates (_clip_candidates' order: incident vertices, projected reference vertices,
    # crossings k·W + i of incident edge k with reference edge i's side plane)
    j1 = jnp.clip(keep, 0, W - 1)
    j2 = jnp.clip(keep - W, 0, W - 1)
    k3, i3 = jnp.clip((keep - 2 * W) // W, 0, W - 1), jnp.clip((keep - 2 * W) % W, 0, W - 1)
    y1 = q[j1]
    den = jnp.dot(n_inc, n)
    den = jnp.where(den < -0.05, den, -1.0)
    y2 = r[j2] + ((jnp.dot(n_inc, q[0]) - r[j2] @ n_inc) / den)[:, None] * n[None, :]
    side = jnp.cross(e_ref[i3], n)
    dd = jnp.sum(e_inc[k3] * side, axis=-1)
    u = (jnp.sum(side * r[i3], axis=-1) - jnp.sum(q[k3] * side, axis=-1)) / jnp.where(dd != 0, dd, 1.0)
    y3 = q[k3] + u[:, None] * e_inc[k3]
    y = jnp.where((keep < W)[:, None], y1, jnp.where((keep < 2 * W)[:, None], y2, y3))
    face_phi = (y - c) @ n
    face_pt = y - 0.5 * face_phi[:, None] * n[None, :]
    face_normal = jnp.where(use_b, -n, n)
    axis, edge_phi, edge_pt = _edge_contact(wa, wb, s, ka, kb)
    slot0 = jnp.arange(num) == 0
    phi = jnp.where(use_edge, jnp.where(slot0, edge_phi, FAR), face_phi)
    point = jnp.where(use_edge, jnp.broadcast_to(edge_pt, face_pt.shape), face_pt)
    return point, jnp.where(use_edge, axis, face_normal), jnp.where(valid, phi, FAR)


def _edge_contact(wa, wb, s, ka, kb):
    """The edge axis's contact between a's edge ka and b's edge kb (world vertices wa, wb): the unit
    axis, oriented away from a's centre (a choice, without gradient), the distance along it and the
    point midway between the edges' closest points."""
    sg = jax.lax.stop_gradient
    p1, q1 = wa[s["ea"][ka, 0]], wa[s["ea"][ka, 1]]
    p2, q2 = wb[s["eb"][kb, 0]], wb[s["eb"][kb, 1]]
    d1, d2 = q1 - p1, q2 - p2
    axis = _unit(jnp.cross(d1, d2))
    centre_a = jnp.mean(sg(wa)[s["va"]], axis=0)
    axis = jnp.where(jnp.dot(sg(axis), sg(p1) - centre_a) < 0, -axis, axis)
    edge_phi = jnp.dot(axis, p2 - p1)
    r = p1 - p2
    aa, ee, bb = jnp.dot(d1, d1), jnp.dot(d2, d2), jnp.dot(d1, d2)
    cc, ff = jnp.dot(d1, r), jnp.dot(d2, r)
    den = aa * ee - bb * bb
    den = jnp.where(den > 1e-30, den, 1.0)
    s1 = jnp.clip((bb * ff - cc * ee) / den, 0.0, 1.0)
    t2 = jnp.clip((bb * s1 + ff) / jnp.where(ee > 0, ee, 1.0), 0.0, 1.0)
    return axis, edge_phi, 0.5 * (p1 + s1 * d1 + p2 + t2 * d2)


def _hull_hull(verts_a, topo_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b, num, margin):
    s = _arrays(topo_a, topo_b)
    dt = jnp.result_type(verts_a, verts_b, pos_a, pos_b, quat_a, quat_b)
    sg = jax.lax.stop_gradient
    wa = _world(verts_a.astype(dt), pos_a.astype(dt), quat_a.astype(dt))
    wb = _world(verts_b.astype(dt), pos_b.astype(dt), quat_b.astype(dt))

    # --- discrete choices, no gradient ---
    size = jnp.minimum(jnp.max(jnp.linalg.norm(sg(verts_a)[s["va"]].astype(dt), axis=-1)),
                       jnp.max(jnp.linalg.norm(sg(verts_b)[s["vb"]].astype(dt), axis=-1)))
    na, nb, sep_a, sep_b, best_e, ka, kb = _sat(sg(verts_a).astype(dt), sg(quat_to_mat(quat_a.astype(dt))),
                                                sg(pos_a).astype(dt), sg(verts_b).astype(dt),
                                                sg(quat_to_mat(quat_b.astype(dt))), sg(pos_b).astype(dt), s)
    ia, ib = _argmax(sep_a), _argmax(sep_b)
    best_a, best_b = sep_a[ia], sep_b[ib]
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
    axis, edge_phi, edge_pt = _edge_contact(wa, wb, s, ka, kb)
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


# --- Round cores (spheres, capsules) against each other and against hulls (issue 62) ----------------

ROUND_KINDS = ("sphere", "capsule")
PAIR_KINDS = ("hull",) + ROUND_KINDS + ("cylinder", "ellipsoid")  # the kinds with body–body contacts
"""The shapes with body–body contacts (a pair of two of them collides): hulls, the sphere-swept
point or segment (``round_round``, ``round_hull``), cylinders and ellipsoids (``convex_pair``, the
general convex method). A sphere-swept hull touches the ground only."""


def _seg_point(p0, p1, x):
    """Closest point to x on the segment p0–p1 (a point when p0 = p1)."""
    d = p1 - p0
    dd = jnp.dot(d, d)
    t = jnp.clip(jnp.dot(x - p0, d) / _safe(dd, dd > 1e-30), 0.0, 1.0)
    return p0 + t * d


def _safe(x, ok):
    """x where ``ok``, else 1: a divisor whose quotient is used only where ``ok`` (a floor such as
    max(x, 1e-30) instead squares to 0 in float32 in the quotient's derivative, 0/0 = NaN, which
    the floor's own derivative, a multiplication by 0, carries into every gradient)."""
    return jnp.where(ok, x, jnp.ones_like(x))


def _seg_seg(p0, p1, q0, q1):
    """Closest points (on p0–p1, on q0–q1) of two segments, either possibly a point (Ericson's
    clamped parameters; parallel segments: the point of q nearest p0's projection; q a point: the
    point of p nearest it)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, f = jnp.dot(d1, d1), jnp.dot(d2, d2), jnp.dot(d2, r)
    c, b = jnp.dot(d1, r), jnp.dot(d1, d2)
    tiny = 1e-30
    denom = a * e - b * b
    crossed = denom > 1e-12 * jnp.maximum(a * e, tiny)
    s = jnp.where(crossed, jnp.clip((b * f - c * e) / _safe(denom, crossed), 0.0, 1.0), 0.0)
    s = jnp.where(a > tiny, s, 0.0)
    s = jnp.where(e > tiny, s, jnp.where(a > tiny, jnp.clip(-c / _safe(a, a > tiny), 0.0, 1.0), 0.0))  # q a point
    t = jnp.where(e > tiny, (b * s + f) / _safe(e, e > tiny), 0.0)
    t_c = jnp.clip(t, 0.0, 1.0)
    s = jnp.where(t != t_c, jnp.where(a > tiny, jnp.clip((b * t_c - c) / _safe(a, a > tiny), 0.0, 1.0), 0.0), s)
    return p0 + s * d1, q0 + t_c * d2


def _core(kind, verts, pos, quat):
    """A round body's core in the world: its segment's two ends (a sphere's twice its centre)."""
    w = _world(verts[:2] if kind == "capsule" else verts[:1], pos, quat)
    return (w[0], w[1]) if kind == "capsule" else (w[0], w[0])


ROUND_ALIGN = 0.99
"""A round pair's second contact (an end of a capsule) must face the other body along the pair's
normal to within this cosine (8°): the ends of a capsule lying along a face or another capsule."""


def _manifold(pa, pb, dist, dirs, num, margin, dtype):
    """PairContacts from candidate closest points pa, pb (m, 3) of the two surfaces (first: the
    pair's closest, whose direction ``dirs[0]`` is the pair's normal; ``dirs`` (m, 3) each
    candidate's) and their φ (m,): the closest, then the candidate farthest from it among those
    within the margin whose direction is the normal's (``ROUND_ALIGN``: a segment lying along the
    other surface touches at both ends), the rest of the ``num`` slots empty."""
    m = dist.shape[0]
    n = dirs[0]
    point = 0.5 * (pa + pb)
    sep = jax.lax.stop_gradient(jnp.linalg.norm(point - point[0], axis=-1))
    ok = jax.lax.stop_gradient(dist <= margin)
    along = jax.lax.stop_gradient(dirs @ n >= ROUND_ALIGN)
    far = jnp.where(ok & along & (sep > 1e-6 + 1e-3 * jnp.max(sep)), sep, -1.0)
    j = _argmax(far) if m > 1 else 0
    two = (far[j] > 0) if m > 1 else jnp.zeros((), bool)
    slots = min(num, 2)
    pts = jnp.stack([point[0], point[j]])[:slots]
    phi = jnp.stack([dist[0], dist[j]])[:slots]
    valid = jnp.stack([ok[0], ok[0] & two])[:slots]
    pad = num - slots
    pts = jnp.concatenate([pts, jnp.zeros((pad, 3), dtype)])
    valid = jnp.concatenate([valid, jnp.zeros((pad,), bool)])
    phi = jnp.where(valid, jnp.concatenate([phi, jnp.zeros((pad,), dtype)]), jnp.asarray(FAR, dtype))
    kind = jnp.where(valid[0], jnp.where(valid[1] if num > 1 else False, PatchType.LINE, PatchType.POINT),
                     PatchType.NONE).astype(jnp.int32)
    return PairContacts(point=pts, normal=n, phi=phi, valid=valid, kind=kind)


def most_pair_contacts(kind_a, kind_b, num: int) -> int:
    """The most valid contacts (static) of a pair of two bodies of these kinds (``Scene.pair_shape``'s:
    a round kind, a ``HullTopology``, a convex kind, a compound) whose manifold keeps ``num``: a round
    pair (``round_round``, or ``round_hull`` against a hull) has at most two (``_manifold``), one when
    a sphere is in it; every other pair ``num``. The contact problem keeps this many per pair slot
    (``Scene.slot_contacts``): the rest of ``num`` would be empty slots on every step."""
    round_ = [k for k in (kind_a, kind_b) if isinstance(k, str) and k in ROUND_KINDS]
    if not round_ or not all(isinstance(k, HullTopology) or (isinstance(k, str) and k in ROUND_KINDS)
                             for k in (kind_a, kind_b)):
        return num
    return min(num, 1 if "sphere" in round_ else 2)


def round_round(kind_a, verts_a, radius_a, pos_a, quat_a, kind_b, verts_b, radius_b, pos_b, quat_b,
                num: int = 4, margin: float = DEFAULT_MARGIN) -> PairContacts:
    """Contacts of two round bodies (``kind_*`` in ``ROUND_KINDS``, static): a sphere is its first
    core vertex swept by ``radius``, a capsule the segment of its first two. Closed forms: the
    segments' closest points give the normal (a → b) and φ = distance − r_a − r_b; two capsules
    whose axes lie along each other (every end of one within the margin of the other) touch at
    two points, the overlap's ends. Points midway between the two surfaces."""
    for k in (kind_a, kind_b):
        if k not in ROUND_KINDS:
            raise ValueError(f"round_round: kinds in {ROUND_KINDS}, got {k!r}")
    dt = jnp.result_type(verts_a, verts_b, pos_a, pos_b, quat_a, quat_b)
    a0, a1 = _core(kind_a, verts_a, pos_a, quat_a)
    b0, b1 = _core(kind_b, verts_b, pos_b, quat_b)
    ca, cb = _seg_seg(a0, a1, b0, b1)
    n = _unit(cb - ca)
    if kind_a == "capsule" and kind_b == "capsule":  # the ends of each against the other
        ea = jnp.stack([a0, a1, _seg_point(a0, a1, b0), _seg_point(a0, a1, b1)])
        eb = jnp.stack([_seg_point(b0, b1, a0), _seg_point(b0, b1, a1), b0, b1])
        ca, cb = jnp.concatenate([ca[None], ea]), jnp.concatenate([cb[None], eb])
    else:
        ca, cb = ca[None], cb[None]
    dist = jnp.linalg.norm(cb - ca, axis=-1) - radius_a - radius_b
    dirs = jnp.where(jnp.arange(ca.shape[0])[:, None] == 0, n, _unit(cb - ca))
    sa, sb = ca + radius_a * dirs, cb - radius_b * dirs
    return _manifold(sa, sb, dist, dirs, num, jnp.asarray(margin, dt), dt)


def _hull_faces(topo: HullTopology):
    """Static arrays of a hull's faces: fan triangles (T, 3) and each triangle's face (T,); each
    face's vertex ring padded by repeating its first vertex (F, M)."""
    tris, owner = [], []
    for f, face in enumerate(topo.faces):
        for i in range(1, len(face) - 1):
            tris.append((face[0], face[i], face[i + 1]))
            owner.append(f)
    width = max(len(f) for f in topo.faces)
    rings = [tuple(f) + (f[0],) * (width - len(f)) for f in topo.faces]
    return np.asarray(tris, np.int32), np.asarray(owner, np.int32), np.asarray(rings, np.int32)


def _point_triangle(x, a, b, c):
    """Closest point to x on the triangle abc: its projection when inside, else the closest point
    of its three edges."""
    nrm = jnp.cross(b - a, c - a)
    nn = jnp.maximum(jnp.dot(nrm, nrm), 1e-30)
    proj = x - jnp.dot(x - a, nrm) / nn * nrm
    inside = ((jnp.dot(jnp.cross(b - a, proj - a), nrm) >= 0) & (jnp.dot(jnp.cross(c - b, proj - b), nrm) >= 0)
              & (jnp.dot(jnp.cross(a - c, proj - c), nrm) >= 0))
    edges = jnp.stack([_seg_point(a, b, x), _seg_point(b, c, x), _seg_point(c, a, x)])
    e = edges[_argmin(jax.lax.stop_gradient(jnp.sum((edges - x) ** 2, axis=-1)))]
    return jnp.where(jax.lax.stop_gradient(inside), proj, e)


def _point_hull(x, w, tris, planes_n, planes_d):
    """(closest hull point, signed distance) of x against the hull (world vertices w): outside, the
    closest point over the faces' triangles; inside, the face of least penetration."""
    sep = planes_n @ x - planes_d
    q = jax.vmap(lambda t: _point_triangle(x, w[t[0]], w[t[1]], w[t[2]]))(tris)
    k = _argmin(jax.lax.stop_gradient(jnp.sum((q - x) ** 2, axis=-1)))
    f = _argmax(jax.lax.stop_gradient(sep))
    inside = jax.lax.stop_gradient(sep[f] <= 0)
    q_in = x - sep[f] * planes_n[f]
    out_d = jnp.sqrt(jnp.maximum(jnp.sum((x - q[k]) ** 2), 1e-30))
    return jnp.where(inside, q_in, q[k]), jnp.where(inside, sep[f], out_d), inside, f


def round_hull(kind_a, verts_a, radius_a, pos_a, quat_a, verts_b, topo_b, pos_b, quat_b,
               num: int = 4, margin: float = DEFAULT_MARGIN, method: str = "auto") -> PairContacts:
    """Contacts of a round body a (``kind_a`` in ``ROUND_KINDS``) against the convex hull b
    (``verts_b`` as ``topo_b`` says; a box, a hull, a fixed wall): the core's closest points to the
    hull (points against the faces' triangles, the segment against the hull's edges; exact), or,
    where the core is inside the hull, the face of least penetration. Normal a → b, φ = distance −
    radius; a capsule's ends within the margin of the hull are contacts too (a capsule lying on a
    face: two points). Features are chosen without gradient, the geometry recomputed with it.
    method (``METHODS``): ``"jax"``, the pure-JAX reference; ``"auto"``/``"native"`` on a CPU the fused
    kernel (``native/round.cc``: the same formulas and choices, to round-off) for the values, with the
    reference's derivatives (``ROUND_KERNEL``: whether the kernel is used)."""
    if kind_a not in ROUND_KINDS:
        raise ValueError(f"round_hull: kind_a in {ROUND_KINDS}, got {kind_a!r}")
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"num: a static number of contacts ≥ 1, got {num!r}")
    if method not in METHODS:
        raise ValueError(f"method: one of {METHODS}, got {method!r}")
    verts_b = jnp.asarray(verts_b)
    _check(verts_b, topo_b, "b")
    dt = jnp.result_type(verts_a, verts_b, pos_a, pos_b, quat_a, quat_b)
    if not jnp.issubdtype(dt, jnp.floating):
        dt = jnp.dtype(float)
    args = tuple(jnp.asarray(x, dt) for x in (verts_a, radius_a, pos_a, quat_a, verts_b, pos_b, quat_b, margin))
    spec = (kind_a, topo_b, num)

    def reference(*a):
        return _round_hull(spec, *a)

    if not (ROUND_KERNEL and kernel_runs(method, dt)):
        return reference(*args)
    return jax.lax.platform_dependent(*args, cpu=lambda *a: _native_round_hull(spec, *a), default=reference)


ROUND_KERNEL = True
"""Whether ``round_hull``'s ``"auto"``/``"native"`` methods take the kernel on a CPU (True, the default) or
the pure-JAX reference (False, the design before; kept to measure against)."""
ROUND_APART_EXIT = True
"""Whether the kernel skips a pair whose core is farther from the hull's origin than the radius, the hull's
bounding sphere and the margin (no contact there whatever the features; the point and normal of such a pair
are unspecified, as for every pair without a valid contact)."""


def _round_attributes(kind_a, topo_b: HullTopology) -> dict:
    """The kernel's static attributes of a round kind against a hull topology (``native/round.cc``)."""
    tris, owner, rings = _hull_faces(topo_b)
    flat = lambda x: np.ascontiguousarray(x, np.int32).reshape(-1)
    return dict(capsule=np.int64(kind_a == "capsule"), tris=flat(tris), owner=flat(owner), rings=flat(rings),
                width=np.int64(rings.shape[1]), edges=flat(np.asarray(topo_b.edges, np.int32).reshape(-1, 2)),
                far=float(FAR), round_align=float(ROUND_ALIGN), kind_none=np.int64(int(PatchType.NONE)),
                kind_point=np.int64(int(PatchType.POINT)), kind_line=np.int64(int(PatchType.LINE)),
                apart_exit=np.int64(bool(ROUND_APART_EXIT)))


def _native_round_hull(spec, *args) -> PairContacts:
    """``round_hull`` by the kernel (``native/round.cc``): its values, with the reference's derivatives."""
    from .native.round import round_hull_manifold

    kind_a, topo_b, num = spec
    sg = jax.lax.stop_gradient
    point, normal, phi, valid, kind = round_hull_manifold(tuple(sg(a) for a in args),
                                                          _round_attributes(kind_a, topo_b), num)
    point, normal, phi = _round_with_derivative(spec, (point, normal, phi), args)
    return PairContacts(point=point, normal=normal, phi=phi, valid=valid.astype(bool), kind=kind)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _round_with_derivative(spec, values, args):
    """``values`` (the kernel's point, normal, φ), whose derivatives are the reference's (``_round_hull``)."""
    return values


@_round_with_derivative.defjvp
def _round_with_derivative_jvp(spec, primals, tangents):
    values, args = primals
    _, dargs = tangents
    def values_of(a):
        pc = _round_hull(spec, *a)
        return pc.point, pc.normal, pc.phi

    _, dref = jax.jvp(values_of, (args,), (dargs,))
    return values, dref


def _round_hull(spec, verts_a, radius_a, pos_a, quat_a, verts_b, pos_b, quat_b, margin) -> PairContacts:
    """``round_hull`` in pure JAX (the reference)."""
    kind_a, topo_b, num = spec
    dt = verts_b.dtype
    tris, owner, rings = _hull_faces(topo_b)
    with jax.default_matmul_precision("highest"):
        w = _world(verts_b, pos_b, quat_b)
        ring = w[rings]  # (F, M, 3): Newell's normal of each face, outward
        nf = _unit(jnp.sum(jnp.cross(ring, jnp.roll(ring, -1, axis=1)), axis=1))
        df = jnp.sum(nf * jnp.mean(ring, axis=1), axis=-1)
        e0, e1 = _core(kind_a, verts_a, pos_a, quat_a)
        if kind_a == "sphere":
            q, d, inside, f = _point_hull(e0, w, tris, nf, df)
            n = jnp.where(inside, -nf[f], _unit(q - e0))
            ends = e0[None], q[None], d[None], n[None]
        else:
            q0, d0, in0, f0 = _point_hull(e0, w, tris, nf, df)
            q1, d1, in1, f1 = _point_hull(e1, w, tris, nf, df)
            # the segment against every hull edge (outside; an end against a face is q0, q1)
            edges = np.asarray(topo_b.edges, np.int32)
            ps, qs = jax.vmap(lambda ed: _seg_seg(e0, e1, w[ed[0]], w[ed[1]]))(edges)
            ps = jnp.concatenate([ps, jnp.stack([e0, e1])])
            qs = jnp.concatenate([qs, jnp.stack([q0, q1])])
            k = _argmin(jax.lax.stop_gradient(jnp.sum((qs - ps) ** 2, axis=-1)))
            # the segment meets the hull (Cyrus–Beck clipping): the face of least penetration
            s0, s1 = nf @ e0 - df, nf @ e1 - df
            den = s0 - s1
            t = jnp.where(jnp.abs(den) > 1e-30, s0 / jnp.where(jnp.abs(den) > 1e-30, den, 1.0), 0.0)
            lo = jnp.max(jnp.where((s0 > 0) & (s1 <= 0), t, jnp.where(s0 > 0, 2.0, 0.0)))
            hi = jnp.min(jnp.where((s0 <= 0) & (s1 > 0), t, jnp.where(s1 > 0, -1.0, 1.0)))
            meets = jax.lax.stop_gradient(lo <= hi)
            pen = jnp.minimum(s0, s1)
            fp = _argmax(jax.lax.stop_gradient(pen))
            deep = jnp.where(jax.lax.stop_gradient(s0[fp] <= s1[fp]), e0, e1)
            p_main = jnp.where(meets, deep, ps[k])
            q_main = jnp.where(meets, deep - pen[fp] * nf[fp], qs[k])
            d_main = jnp.where(meets, pen[fp], jnp.sqrt(jnp.maximum(jnp.sum((qs[k] - ps[k]) ** 2), 1e-30)))
            n = jnp.where(meets, -nf[fp], _unit(q_main - p_main))
            # an end inside the hull: its depth below the main face
            d0 = jnp.where(in0 & meets, s0[fp], d0)
            d1 = jnp.where(in1 & meets, s1[fp], d1)
            q0 = jnp.where(in0 & meets, e0 - s0[fp] * nf[fp], q0)
            q1 = jnp.where(in1 & meets, e1 - s1[fp] * nf[fp], q1)
            n0 = jnp.where(in0 | meets, n, _unit(q0 - e0))
            n1 = jnp.where(in1 | meets, n, _unit(q1 - e1))
            ends = (jnp.stack([p_main, e0, e1]), jnp.stack([q_main, q0, q1]), jnp.stack([d_main, d0, d1]),
                    jnp.stack([n, n0, n1]))
        p, q, d, dirs = ends
        return _manifold(p + radius_a * dirs, q, d - radius_a, dirs, num, jnp.asarray(margin, dt), dt)


# --- The general convex method: cylinders and ellipsoids against every kind (issue 62, item 4) ------
#
# A support-function separating-axis test over continuous directions. For convex A and B, the
# separation along a unit axis n (a → b) is sep(n) = min_B n·y − max_A n·x = −h_B(−n) − h_A(n)
# (h: support functions), and the signed distance is exactly φ = max over unit n of sep(n): the
# distance when apart, minus the penetration depth (the least translation) when overlapping. The
# maximum is found without gradient: sep at a set of candidate axes (a Fibonacci lattice, the
# centres' direction, the hull's face normals, the cylinder's axis and radial direction, crosses of
# axes with edges), then a pattern search on the sphere from the best one (a ring of axes at an
# angle that halves when none is better, its phase turned each time). φ, the support points and the
# manifold are then recomputed from the traced poses at that axis: by Danskin's theorem dφ is exact
# where the maximiser is unique. Docs: docs/worlds.md, "Shapes" (why this method, measured).

CONVEX_KINDS = ("cylinder", "ellipsoid")
"""The round shapes whose pairs go through ``convex_pair`` (no closed form)."""
CONVEX_LATTICE = 48  # candidate axes on a Fibonacci lattice
CONVEX_ITERATIONS = 32  # pattern-search steps from the best candidate
CONVEX_RING = 8  # axes per pattern-search ring
CONVEX_SHRINK = 0.7  # the ring's angle shrinks so when no axis of it is better
CONVEX_STARTS = 3  # pattern searches, from the best candidates (overlapping pairs have local maxima)
_BIG = 1e9


def _fibonacci(num: int) -> np.ndarray:
    k = np.arange(num) + 0.5
    z = 1 - 2 * k / num
    phi = np.pi * (1 + 5 ** 0.5) * k
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


@dataclasses.dataclass(frozen=True)
class _Convex:
    """One body of a ``convex_pair`` in the world: its kind ("sphere", "capsule", "cylinder",
    "ellipsoid", or a ``HullTopology``), body-frame vertices, radius, dims (a cylinder's (ρ, l), an
    ellipsoid's (a, b, c)), rotation and position (all traced)."""

    kind: object
    verts: jnp.ndarray
    radius: jnp.ndarray
    dims: jnp.ndarray
    rot: jnp.ndarray
    pos: jnp.ndarray

    @property
    def hull(self):
        return isinstance(self.kind, HullTopology)

    def world_verts(self):
        if self.hull:
            return self.pos + self.verts[np.asarray(self.kind.vertices, np.int32)] @ self.rot.T
        return self.pos + self.verts[:2 if self.kind == "capsule" else 1] @ self.rot.T

    def size(self):
        """Its largest extent from the centre (without gradient): the tolerance's scale."""
        sg = jax.lax.stop_gradient
        if self.hull:
            return jnp.max(jnp.linalg.norm(sg(self.verts)[np.asarray(self.kind.vertices, np.int32)], axis=-1))
        if self.kind == "cylinder":
            return jnp.linalg.norm(sg(self.dims)[:2])
        if self.kind == "ellipsoid":
            return jnp.max(sg(self.dims)[:3])
        core = jnp.linalg.norm(sg(self.verts)[:2 if self.kind == "capsule" else 1], axis=-1)
        return jnp.max(core) + sg(self.radius)

    def support(self, n):
        """The world point of the shape farthest along the world unit axis n (its feature chosen
        without gradient, the point traced)."""
        if self.kind in ("sphere", "capsule") or self.hull:
            w = self.world_verts()
            i = _argmax(jax.lax.stop_gradient(w @ n))
            return w[i] + (0.0 if self.hull else self.radius * n)
        nl = self.rot.T @ n
        if self.kind == "cylinder":
            u = _unit(jax.lax.stop_gradient(nl[:2]))
            s = jnp.concatenate([self.dims[0] * u, (self.dims[1] * jnp.sign(jax.lax.stop_gradient(nl[2])))[None]])
        else:
            an = self.dims[:3] * nl
            s = self.dims[:3] * an / jnp.sqrt(jnp.maximum(an @ an, jnp.finfo(an.dtype).tiny))
        return self.pos + self.rot @ s

    def support_segment(self, n, tol):
        """(p, q) world ends of the shape's support feature along n when it is a segment (a
        hull's edge: its two highest vertices within ``tol`` (m) of each other; a cylinder's side
        line or a capsule's axis within ``tol`` of perpendicular), else its support point twice.
        Chosen without gradient, the points traced."""
        sg = jax.lax.stop_gradient
        s = self.support(n)
        if self.hull:
            w = self.world_verts()
            h = sg(w @ n)
            i = _argmax(h)
            j = _argmax(jnp.where(jnp.arange(h.shape[0]) == i, -jnp.inf, h))
            return s, jnp.where(h[i] - h[j] <= tol, w[j], s)
        if self.kind in ("cylinder", "capsule"):
            z = self.rot[:, 2] if self.kind == "cylinder" else _unit(self.world_verts()[1] - self.world_verts()[0])
            half = self.dims[1] if self.kind == "cylinder" else 0.5 * jnp.linalg.norm(self.world_verts()[1] - self.world_verts()[0])
            side = sg(jnp.abs(jnp.dot(n, z)) * half <= tol)
            mid = s - jnp.dot(s - self.pos, z) * z
            return jnp.where(side, mid - half * z, s), jnp.where(side, mid + half * z, s)
        return s, s

    def axes(self, other_centre):
        """(m, 3) candidate world axes (either sign is tried) of this shape's own features: a hull's
        face normals, a cylinder's axis and its radial direction towards the other body, a
        capsule's axis."""
        if self.hull:
            _, _, rings = _hull_faces(self.kind)
            ring = self.verts[rings] @ self.rot.T
            return _unit(jnp.sum(jnp.cross(ring, jnp.roll(ring, -1, axis=1)), axis=1))
        if self.kind == "cylinder":
            z = self.rot[:, 2]
            d = other_centre - self.pos
            return jnp.stack([z, _unit(d - jnp.dot(d, z) * z)])
        if self.kind == "capsule":
            w = self.world_verts()
            return _unit(w[1] - w[0])[None]
        return jnp.zeros((0, 3), self.pos.dtype)

    def lines(self):
        """(m, 3) world directions of its edges and axes (for cross-product axes)."""
        if self.hull:
            e = np.asarray(self.kind.class_edges, np.int32)
            ed = self.kind.edge_array[e]
            return _unit((self.verts[ed[:, 1]] - self.verts[ed[:, 0]]) @ self.rot.T)
        if self.kind == "cylinder":
            return self.rot[:, 2][None]
        if self.kind == "capsule":
            w = self.world_verts()
            return _unit(w[1] - w[0])[None]
        return jnp.zeros((0, 3), self.pos.dtype)

    def extremes(self, n):
        """(m, 3) world points of the shape that may touch a body lying along +n: a hull's
        vertices, a cylinder's six rim points (``geometry.cylinder_rim``), a capsule's two end
        supports, a sphere's or ellipsoid's support point."""
        if self.hull:
            return self.world_verts()
        if self.kind == "cylinder":
            from .geometry import cylinder_rim
            # and 8 fixed points of each rim (a cap on another's overlaps it where the rim's
            # deepest three may hang off)
            ang = 2 * np.pi * np.arange(8) / 8
            ring = np.stack([np.cos(ang), np.sin(ang), np.zeros(8)], axis=1)
            fixed = jnp.concatenate([self.dims[0] * ring + jnp.stack([0.0 * ang, 0.0 * ang, sign * self.dims[1] + 0.0 * ang], 1)
                                     for sign in (-1.0, 1.0)])
            rim = jnp.concatenate([cylinder_rim(self.dims[:2], -(self.rot.T @ n)), fixed.astype(self.pos.dtype)])
            return self.pos + rim @ self.rot.T
        if self.kind == "capsule":
            return self.world_verts() + self.radius * n
        return self.support(n)[None]

    def entry(self, p, d):
        """(t, hit) where the line p + t d (d a unit vector, t over all reals) enters the shape."""
        dt = p.dtype
        big = jnp.asarray(_BIG, dt)
        if self.hull:
            _, _, rings = _hull_faces(self.kind)
            ring = (self.pos + self.verts[rings] @ self.rot.T)
            nf = _unit(jnp.sum(jnp.cross(ring, jnp.roll(ring, -1, axis=1)), axis=1))
            off = jnp.sum(nf * jnp.mean(ring, axis=1), axis=-1) - nf @ p  # inside: n_f·(p + t d) ≤ off_f + n_f·p
            den = nf @ d
            safe = jnp.where(jnp.abs(den) > 1e-12, den, 1.0)
            t = off / safe
            lo = jnp.max(jnp.where(den < -1e-12, t, jnp.where((jnp.abs(den) <= 1e-12) & (off < 0), big, -big)))
            hi = jnp.min(jnp.where(den > 1e-12, t, jnp.where((jnp.abs(den) <= 1e-12) & (off < 0), -big, big)))
            return lo, jax.lax.stop_gradient(lo <= hi)
        if self.kind == "sphere":
            return _ball_entry(p - self.world_verts()[0], d, self.radius)
        if self.kind == "capsule":
            w = self.world_verts()
            t0, h0 = _ball_entry(p - w[0], d, self.radius)
            t1, h1 = _ball_entry(p - w[1], d, self.radius)
            half = 0.5 * jnp.linalg.norm(w[1] - w[0])
            z = _unit(w[1] - w[0])
            frame = jnp.stack([*_tangents(z), z], axis=1)  # columns: a frame with z along the axis
            tc, hc = _cylinder_entry(frame.T @ (p - 0.5 * (w[0] + w[1])), frame.T @ d, self.radius, half)
            t = jnp.minimum(jnp.minimum(jnp.where(h0, t0, big), jnp.where(h1, t1, big)), jnp.where(hc, tc, big))
            return t, h0 | h1 | hc
        pl, dl = self.rot.T @ (p - self.pos), self.rot.T @ d
        if self.kind == "cylinder":
            return _cylinder_entry(pl, dl, self.dims[0], self.dims[1])
        a = self.dims[:3]  # the ellipsoid as the unit ball in scaled coordinates (t keeps its scale)
        ps, ds = pl / a, dl / a
        aa = ds @ ds
        b = ps @ ds / aa
        disc = b * b - (ps @ ps - 1.0) / aa
        hit = jax.lax.stop_gradient(disc >= 0)
        return -b - jnp.sqrt(jnp.where(hit, disc, 0.0)), hit


def _tangents(n):
    """Two unit world axes perpendicular to the unit axis n (``geometry.tangent_basis``)."""
    from .geometry import tangent_basis
    t = tangent_basis(n)
    return t[0], t[1]


def _ball_entry(p, d, r):
    """Entry of the line p + t d (unit d) into the ball of radius r at the origin."""
    b = p @ d
    disc = b * b - (p @ p - r * r)
    hit = jax.lax.stop_gradient(disc >= 0)
    return -b - jnp.sqrt(jnp.where(hit, disc, 0.0)), hit


def _cylinder_entry(p, d, rho, half):
    """Entry of the line p + t d into the solid cylinder of radius rho about z, |z| ≤ half (its frame)."""
    dt = p.dtype
    big = jnp.asarray(_BIG, dt)
    a = d[:2] @ d[:2]
    b = p[:2] @ d[:2]
    c = p[:2] @ p[:2] - rho * rho
    along = jax.lax.stop_gradient(a <= 1e-12)
    sa = jnp.where(along, 1.0, a)
    disc = b * b - sa * c
    side_hit = jax.lax.stop_gradient(jnp.where(along, c <= 0, disc >= 0))
    root = jnp.sqrt(jnp.where(side_hit & ~along, disc, 0.0))
    lo_s = jnp.where(along, -big, (-b - root) / sa)
    hi_s = jnp.where(along, big, (-b + root) / sa)
    flat = jax.lax.stop_gradient(jnp.abs(d[2]) <= 1e-12)
    sd = jnp.where(flat, 1.0, d[2])
    t1, t2 = (-half - p[2]) / sd, (half - p[2]) / sd
    lo_z = jnp.where(flat, -big, jnp.minimum(t1, t2))
    hi_z = jnp.where(flat, big, jnp.maximum(t1, t2))
    cap_hit = jax.lax.stop_gradient(jnp.where(flat, jnp.abs(p[2]) <= half, True))
    lo, hi = jnp.maximum(lo_s, lo_z), jnp.minimum(hi_s, hi_z)
    return lo, side_hit & cap_hit & jax.lax.stop_gradient(lo <= hi)


def _separation(a: _Convex, b: _Convex, n):
    """sep(n) = n·(s_b(−n) − s_a(n)): the gap of the two shapes along the unit axis n (a → b)."""
    return jnp.dot(n, b.support(-n) - a.support(n))


def _best_axis(a: _Convex, b: _Convex):
    """The unit axis (a → b) of largest separation (stop-gradient inputs): candidates, then a
    pattern search on the sphere."""
    dt = a.pos.dtype
    own = jnp.concatenate([a.axes(b.pos), b.axes(a.pos)])
    la, lb = a.lines(), b.lines()
    lines = jnp.concatenate([la, lb])
    kappa = 4.0 * (a.size() + b.size())
    crosses = jnp.cross(la[:, None], lb[None]).reshape(-1, 3)
    ok = jnp.sum(crosses * crosses, axis=-1) > 1e-12
    crosses = jnp.where(ok[:, None], _unit(crosses), jnp.asarray([1.0, 0.0, 0.0], dt))
    cand = jnp.concatenate([jnp.asarray(_fibonacci(CONVEX_LATTICE), dt), _unit(b.pos - a.pos)[None],
                            own, -own, crosses, -crosses])
    sep = jax.vmap(lambda n: _separation(a, b, n))
    vals = sep(cand)
    _, top = jax.lax.top_k(vals, CONVEX_STARTS)
    delta0 = jnp.asarray(np.sqrt(4 * np.pi / CONVEX_LATTICE), dt)
    golden = np.pi * (3 - 5 ** 0.5)
    ring = 2 * np.pi * np.arange(CONVEX_RING) / CONVEX_RING

    def step(carry, k):
        n, f, delta = carry
        t1, t2 = _tangents(n)
        ang = jnp.asarray(ring, dt) + k * golden
        dirs = (jnp.cos(delta) * n[None] + jnp.sin(delta) * (jnp.cos(ang)[:, None] * t1[None]
                                                             + jnp.sin(ang)[:, None] * t2[None]))
        # and the support-point steps: at the best axis the two support points differ along it,
        # z = s_b(−n) − s_a(n) = f n; the step to z + (κ − f) n is a damped one towards it
        # (κ above the surfaces' radii of curvature, so it does not overshoot on curved ones)
        z = b.support(-n) - a.support(n)
        fp = _unit(jnp.stack([z + (kappa - f) * n, z + (0.25 * kappa - f) * n]))
        # the optimum often lies on a ridge of sep (where a support jumps: n ⟂ a cylinder's or a
        # capsule's axis, ⟂ a hull's edge), which a ring rarely follows: n and the support-point
        # steps projected onto each ridge
        both = jnp.concatenate([n[None], fp])
        proj = (both[:, None] - (both @ lines.T)[..., None] * lines[None]).reshape(-1, 3)
        proj = jnp.where(jnp.sum(proj * proj, axis=-1, keepdims=True) > 1e-12, proj, n)
        dirs = _unit(jnp.concatenate([dirs, fp, proj]))
        v = sep(dirs)
        j = _argmax(v)
        better = v[j] > f
        return (jnp.where(better, dirs[j], n), jnp.where(better, v[j], f),
                jnp.where(better, delta, CONVEX_SHRINK * delta)), None

    def search(n0, f0):
        (n, f, _), _ = jax.lax.scan(step, (n0, f0, delta0), jnp.arange(CONVEX_ITERATIONS, dtype=dt))
        return n, f

    n, f = jax.vmap(search)(cand[top], vals[top])
    return n[_argmax(f)]


def _convex_shape(kind, verts, radius, dims, pos, quat, dt):
    if not (isinstance(kind, HullTopology) or kind in ROUND_KINDS + CONVEX_KINDS):
        raise ValueError(f"convex_pair: a kind in {ROUND_KINDS + CONVEX_KINDS} or a HullTopology, got {kind!r}")
    verts = jnp.asarray(verts).astype(dt)
    if isinstance(kind, HullTopology):
        _check(verts, kind, "")
    dims = jnp.zeros(3, dt) if dims is None else jnp.asarray(dims).astype(dt)
    need = {"cylinder": 2, "ellipsoid": 3}.get(kind if isinstance(kind, str) else "", 0)
    if dims.shape[-1] < need:
        raise ValueError(f"convex_pair: a {kind}'s dims hold {need} numbers, got shape {dims.shape}")
    radius = jnp.asarray(0.0 if radius is None else radius).astype(dt)
    return _Convex(kind, verts, radius, dims, quat_to_mat(jnp.asarray(quat).astype(dt)), jnp.asarray(pos).astype(dt))


_CONVEX_KIND_CODES = {"sphere": 1, "capsule": 2, "cylinder": 3, "ellipsoid": 4}  # convex.cc's kinds (a hull: 0)


def _convex_attributes(kind, side: str) -> dict:
    """One shape's static description as ``convex.cc``'s attributes: its kind code, and for a hull
    its vertex indices, face rings (``_hull_faces``) and one edge of each direction class."""
    none = np.zeros(1, np.int32)
    if not isinstance(kind, HullTopology):
        return {f"kind_{side}": np.int64(_CONVEX_KIND_CODES[kind]), f"vi{side}": none, f"rings_{side}": none,
                f"width_{side}": np.int64(1), f"lines_{side}": none}
    _, _, rings = _hull_faces(kind)
    return {f"kind_{side}": np.int64(0), f"vi{side}": np.asarray(kind.vertices, np.int32),
            f"rings_{side}": np.ascontiguousarray(rings, np.int32).reshape(-1), f"width_{side}": np.int64(rings.shape[1]),
            f"lines_{side}": np.ascontiguousarray(kind.edge_array[kind.class_edges], np.int32).reshape(-1)}


MARGIN_SLACK = 1e-3
"""The kernel's axis search stops at an axis that separates a pair by more than its margin plus
this much of (|margin| + both shapes' sizes): the pair has no contact (``convex.cc``)."""


def _native_best_axis(kind_a, kind_b, va, ra, da, pa, qa, vb, rb, db, pb, qb, margin):
    """``_best_axis`` by the fused kernel (``native/convex.cc``): the same search, one loop per pair,
    except that a pair separated beyond its ``margin`` (``MARGIN_SLACK``) along the centres'
    direction or a candidate axis gets that axis at once (it has no contact either way); inputs
    without gradient, dims padded to 3."""
    from .native.convex import best_axis

    pad = lambda d: jnp.pad(d, [(0, 0)] * (d.ndim - 1) + [(0, 3 - d.shape[-1])]) if d.shape[-1] < 3 else d[..., :3]
    return best_axis((va, ra, pad(da), pa, qa, vb, rb, pad(db), pb, qb, margin),
                     dict(**_convex_attributes(kind_a, "a"), **_convex_attributes(kind_b, "b"),
                          lattice=np.int64(CONVEX_LATTICE), iterations=np.int64(CONVEX_ITERATIONS),
                          ring=np.int64(CONVEX_RING), starts=np.int64(CONVEX_STARTS), shrink=float(CONVEX_SHRINK)))


def _axis(a: _Convex, b: _Convex, qa, qb, margin, method: str):
    """The pair's axis of largest separation, without gradient: ``_best_axis`` (the pure-JAX
    reference, ``method="jax"``, and off a CPU) or on a CPU the fused kernel (``"auto"``,
    ``"native"``; the reference where the kernel does not build; a pair apart beyond ``margin``
    gets the first axis that shows it, ``_native_best_axis``)."""
    sg = jax.lax.stop_gradient
    args = tuple(sg(x) for x in (a.verts, a.radius, a.dims, a.pos, qa, b.verts, b.radius, b.dims, b.pos, qb, margin))

    def reference(va, ra, da, pa, qa, vb, rb, db, pb, qb, margin):
        with jax.default_matmul_precision("highest"):
            return _best_axis(_Convex(a.kind, va, ra, da, quat_to_mat(qa), pa),
                              _Convex(b.kind, vb, rb, db, quat_to_mat(qb), pb))

    dt = a.pos.dtype
    if not kernel_runs(method, dt):
        return reference(*args)
    kernel = lambda *x: _native_best_axis(a.kind, b.kind, *x)
    return jax.lax.platform_dependent(*args, cpu=kernel, default=reference)


CONVEX_MANIFOLD = "native"
"""Where ``convex_pair``'s manifold runs when its method takes the kernel (``"auto"``/``"native"`` on a
CPU): ``"native"``, the whole pair in ``native/convex.cc`` (the axis search and the manifold at its
axis, values from C++, derivatives from ``_convex_candidates`` at its choices); ``"jax"``, the axis
search alone in the kernel and the manifold in JAX (the design before; a switch for side-by-side
measurements, read when a program is traced)."""


CONVEX_APART_EXIT = True
"""Whether the whole-pair kernel (``CONVEX_MANIFOLD`` = "native") skips the manifold's candidates of a pair
that its axis separates beyond the margin (no contact either way; its outputs are those the full manifold
gives there, so the results are the same): True, the default; False, the design before (every pair's
candidates and reduction; a switch for side-by-side measurements, read when a program is traced)."""


def _convex_candidates(a: _Convex, b: _Convex, n, sides=None):
    """The candidates of ``convex_pair``'s manifold at the axis n (a → b, without gradient): points x
    (M, 3) and their φ (M,) (first the pair's deepest, then a's extremes, then b's), the pair's
    separation ``deep`` along n, the others' hits (ha, hb), whether the deepest lies over a's or b's
    support point (on_a, on_b; ``sides`` gives them, the kernel's choice), ``close`` and the smaller
    size. Geometry traced, features chosen without gradient."""
    sg = jax.lax.stop_gradient
    dt = a.pos.dtype
    xa, yb = a.support(n), b.support(-n)
    deep = jnp.dot(n, yb - xa)
    pa = a.extremes(n)
    ta, ha = jax.vmap(lambda p: b.entry(p, n))(pa)
    pb = b.extremes(-n)
    tb, hb = jax.vmap(lambda p: a.entry(p, -n))(pb)
    # the deepest pair's point: over a's support point where its line along n meets b at the
    # pair's φ, else over b's (a flat feature's support is any of its points, not always over
    # the other body), else midway, where no other candidate is as deep
    size = jnp.minimum(a.size(), b.size())
    close = jnp.maximum(1e-7, 1e3 * jnp.finfo(dt).eps) * size
    t0a, h0a = b.entry(xa, n)
    t0b, h0b = a.entry(yb, -n)
    if sides is None:
        on_a = h0a & sg(t0a <= deep + close)
        on_b = h0b & sg(t0b <= deep + close)
    else:
        on_a, on_b = sides
    # (an edge or a side line against another: the closest points of the two segments)
    ca, cb = _seg_seg(*a.support_segment(n, close), *b.support_segment(-n, close))
    x0 = jnp.where(on_a, xa + 0.5 * deep * n, jnp.where(on_b, yb - 0.5 * deep * n, 0.5 * (ca + cb)))
    x = jnp.concatenate([x0[None], pa + 0.5 * ta[:, None] * n, pb - 0.5 * tb[:, None] * n])
    # its φ from the witness points, for φ's derivative (a face's support is any of its points,
    # an edge's any of the edge's, but only the witness moves as the contact does)
    phi0 = jnp.where(on_a, t0a, jnp.where(on_b, t0b, jnp.dot(n, cb - ca)))
    phi = jnp.concatenate([phi0[None], ta, tb])
    return x, phi, deep, ha, hb, on_a, on_b, close, size


def _convex_arguments(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, kind_b, verts_b, radius_b, dims_b, pos_b,
                      quat_b, margin, dt):
    """The pair's traced arguments in one dtype (dims padded to 3), as the kernel and
    ``_convex_evaluate`` take them."""
    a = _convex_shape(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, dt)
    b = _convex_shape(kind_b, verts_b, radius_b, dims_b, pos_b, quat_b, dt)
    pad = lambda d: jnp.pad(d, [(0, 0)] * (d.ndim - 1) + [(0, 3 - d.shape[-1])]) if d.shape[-1] < 3 else d[..., :3]
    return (a.verts, a.radius, pad(a.dims), a.pos, jnp.asarray(quat_a).astype(dt), b.verts, b.radius, pad(b.dims),
            b.pos, jnp.asarray(quat_b).astype(dt), jnp.asarray(margin, dt))


def _native_convex_pair(kind_a, kind_b, num, args) -> PairContacts:
    """``convex_pair`` by the fused kernel (``native/convex.cc``'s ``ConvexPair``: the axis search of
    ``_native_best_axis``, then the manifold at that axis): its values, with the derivatives of
    ``_convex_evaluate`` (the reference's candidates at the kernel's axis and choices)."""
    from .native.convex import convex_pair_manifold

    sg = jax.lax.stop_gradient
    attrs = dict(**_convex_attributes(kind_a, "a"), **_convex_attributes(kind_b, "b"),
                 lattice=np.int64(CONVEX_LATTICE), iterations=np.int64(CONVEX_ITERATIONS), ring=np.int64(CONVEX_RING),
                 starts=np.int64(CONVEX_STARTS), shrink=float(CONVEX_SHRINK))
    point, normal, phi, valid, kind, choice = convex_pair_manifold(tuple(sg(x) for x in args), attrs, num, FAR,
                                                                   POINT_TOL, CONVEX_APART_EXIT)
    valid = valid.astype(bool)
    point, phi = _convex_with_derivative((kind_a, kind_b, num), (point, phi), normal, choice, valid, args[:10])
    return PairContacts(point=point, normal=normal, phi=phi, valid=valid, kind=kind)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _convex_with_derivative(spec, values, normal, choice, valid, args):
    """``values`` (the kernel's point and φ), whose derivatives are those of ``_convex_evaluate``."""
    return values


@_convex_with_derivative.defjvp
def _convex_with_derivative_jvp(spec, primals, tangents):
    values, normal, choice, valid, args = primals
    dargs = tangents[-1]
    with jax.default_matmul_precision("highest"):
        _, dvalues = jax.jvp(lambda a: _convex_evaluate(spec, normal, choice, valid, *a), (args,), (dargs,))
    return values, dvalues


def _convex_evaluate(spec, normal, choice, valid, va, ra, da, pa, qa, vb, rb, db, pb, qb):
    """(point, φ) of a convex pair's contacts at the kernel's axis ``normal`` and choices (the kept
    candidates, on_a, on_b; ``valid``): ``_convex_candidates``' formulas, differentiable in the
    shapes and poses."""
    kind_a, kind_b, num = spec
    sg = jax.lax.stop_gradient
    a = _Convex(kind_a, va, ra, da, quat_to_mat(qa), pa)
    b = _Convex(kind_b, vb, rb, db, quat_to_mat(qb), pb)
    x, phi, *_ = _convex_candidates(a, b, sg(normal), sides=(choice[num] > 0, choice[num + 1] > 0))
    keep = choice[:num]
    return x[keep], jnp.where(valid, phi[keep], jnp.asarray(FAR, pa.dtype))


def convex_pair(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, kind_b, verts_b, radius_b, dims_b, pos_b, quat_b,
                num: int = 4, margin: float = DEFAULT_MARGIN, method: str = "auto") -> PairContacts:
    """Contacts of two convex bodies of any kinds by their support functions (the general method
    for the pairs without a closed form: a cylinder or an ellipsoid against anything). kind_*: a
    ``HullTopology`` (a hull: ``verts_*`` its padded vertices), "sphere", "capsule" (``verts_*``
    its core, ``radius_*``), "cylinder" (``dims_*`` = (ρ, l), axis body z) or "ellipsoid"
    (``dims_*`` = (a, b, c)); static. The normal (a → b) is the axis of largest separation (module
    notes above: φ exact, the distance or minus the penetration depth); the manifold is the pair's
    deepest points (midway) and each shape's extreme points along the normal (a hull's vertices, a
    cylinder's rim points, a capsule's ends) whose line along the normal meets the other shape,
    each with φ the distance along the normal to where it enters, those within ``margin`` reduced
    to ``num`` as ``hull_hull`` reduces (a cylinder standing on a face: its rim's triangle; lying:
    the two ends of its line). Features and axis chosen without gradient, geometry traced. method
    (``METHODS``): pure JAX (``"jax"``, the reference) or, on a CPU (``"auto"``, ``"native"``), the
    fused kernel ``native/convex.cc``: the same search and manifold, to round-off, as one loop per
    pair, with the reference's derivatives at its choices (``CONVEX_MANIFOLD``: or the search alone
    there, the manifold in JAX)."""
    if method not in METHODS:
        raise ValueError(f"method: one of {METHODS}, got {method!r}")
    if not isinstance(num, int) or num < 1:
        raise ValueError(f"num: a static number of contacts ≥ 1, got {num!r}")
    dt = jnp.result_type(verts_a, verts_b, pos_a, pos_b, quat_a, quat_b)
    if CONVEX_MANIFOLD == "native" and kernel_runs(method, dt):
        args = _convex_arguments(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, kind_b, verts_b, radius_b,
                                 dims_b, pos_b, quat_b, margin, dt)

        def reference(*x):
            return _convex_pair(kind_a, x[0], x[1], x[2], x[3], x[4], kind_b, x[5], x[6], x[7], x[8], x[9], num,
                                x[10], "jax")

        kernel = lambda *x: _native_convex_pair(kind_a, kind_b, num, x)
        return jax.lax.platform_dependent(*args, cpu=kernel, default=reference)
    return _convex_pair(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, kind_b, verts_b, radius_b, dims_b, pos_b,
                        quat_b, num, margin, method)


def _convex_pair(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, kind_b, verts_b, radius_b, dims_b, pos_b, quat_b,
                 num, margin, method) -> PairContacts:
    """``convex_pair`` with its manifold in JAX (the axis by ``_axis``: the reference's search, or the
    kernel's with ``method`` "auto"/"native" on a CPU)."""
    dt = jnp.result_type(verts_a, verts_b, pos_a, pos_b, quat_a, quat_b)
    sg = jax.lax.stop_gradient
    with jax.default_matmul_precision("highest"):
        a = _convex_shape(kind_a, verts_a, radius_a, dims_a, pos_a, quat_a, dt)
        b = _convex_shape(kind_b, verts_b, radius_b, dims_b, pos_b, quat_b, dt)
        n = sg(_axis(a, b, jnp.asarray(quat_a).astype(dt), jnp.asarray(quat_b).astype(dt), jnp.asarray(margin, dt),
                     method))
        x, phi, deep, ha, hb, on_a, on_b, close, size = _convex_candidates(a, b, n)
        margin = jnp.asarray(margin, dt)
        others = jnp.concatenate([ha, hb]) & sg(phi[1:] <= deep + close)
        first = on_a | on_b | ~jnp.any(others)
        mask = jnp.concatenate([first[None], ha, hb]) & (sg(phi) <= margin)
        tol = POINT_TOL * size
        keep, ok, kind = _reduce(sg(x), sg(phi), mask, n, num, tol)
        valid = ok & (sg(deep) <= margin)
        kind = jnp.where(jnp.any(valid), kind, jnp.int32(PatchType.NONE)).astype(jnp.int32)
        return PairContacts(point=x[keep], normal=n, phi=jnp.where(valid, phi[keep], jnp.asarray(FAR, dt)),
                            valid=valid, kind=kind)
