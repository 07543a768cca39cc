"""Narrow phase of body–body contact (``jaxcontact.collision``): hull topology, the contact manifold
of analytic box pairs, an independent brute-force separating-axis depth, gradients against central
differences, a/b symmetry. Every box–box case runs through one compiled, vmapped program."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import collision, shapes
from jaxcontact.geometry import FAR
from jaxcontact.rotations import quat_exp, quat_to_mat
from jaxcontact.types import PatchType

BOX = shapes.box(0.1)
V = np.asarray(BOX.vertices)
TB = collision.topology(BOX.vertices, BOX.vertex_mask)
ID = np.array([1.0, 0, 0, 0])
H = 0.05 * np.sqrt(2)  # height of a box's edge above its centre when rolled by 45°


def q(rotvec):
    return np.asarray(quat_exp(jnp.asarray(rotvec, dtype=jnp.float64)))


def rot(quat):
    return np.asarray(quat_to_mat(jnp.asarray(quat)))


W = np.random.default_rng(5).normal(size=3)  # weights of the points in the gradient checks' loss


def _loss(pa, qa, vb, pb, qb):
    r = collision.hull_hull(jnp.asarray(V), TB, pa, qa, vb, TB, pb, qb)
    return jnp.sum(jnp.where(r.valid, r.phi, 0.0)) + jnp.sum(jnp.where(r.valid[:, None], r.point * W, 0.0)), r


# one compiled program for every box–box case: the contacts and the gradient of Σφ + Σ W·point with
# respect to pos_a, vertices_b, pos_b, quat_b (b's vertices are an argument for the gradient checks)
@jax.jit
@jax.vmap
def box_pair(pa, qa, vb, pb, qb):
    (_, r), g = jax.value_and_grad(_loss, argnums=(0, 2, 3, 4), has_aux=True)(pa, qa, vb, pb, qb)
    return r, g


N = 384  # the batch of every call of box_pair (one shape, one compilation)


def run_boxes(cases, with_grad=False):
    """cases: list of (pa, qa, pb, qb[, vb]) → PairContacts as numpy (and the gradients), padded to
    the batch N."""
    n = len(cases)
    assert n <= N
    cols = [np.stack([np.asarray(c[i], float) for c in cases]) for i in range(4)]
    vb = np.stack([np.asarray(c[4] if len(c) > 4 else V, float) for c in cases])
    pad = lambda x: np.concatenate([x, np.repeat(x[:1], N - n, 0)])
    out = box_pair(pad(cols[0]), pad(cols[1]), pad(vb), pad(cols[2]), pad(cols[3]))
    r, g = jax.tree_util.tree_map(lambda x: np.asarray(x)[:n], out)
    return (r, g) if with_grad else r


def tilt_on_edge(ang=np.pi / 6, y=0.01, depth=1e-3):
    quat = q([0, ang, 0])
    low = np.min((V @ rot(quat).T)[:, 2])
    return np.array([0.0, y, 0.05 - low - depth]), quat


ANALYTIC = {
    "stack": (np.zeros(3), ID, [0.03, 0.02, 0.099], ID),
    "rot45": (np.zeros(3), ID, [0.0, 0.0, 0.099], q([0, 0, np.pi / 4])),
    "gap3mm": (np.zeros(3), ID, [0.01, -0.02, 0.103], ID),
    "gap6mm": (np.zeros(3), ID, [0.01, -0.02, 0.106], ID),
    "crossed": (np.zeros(3), q([np.pi / 4, 0, 0]), [0.01, 0.02, 2 * H - 1e-3], q([0, np.pi / 4, 0])),
    "edge": (np.zeros(3), ID, *tilt_on_edge()),
}


@pytest.fixture(scope="module")
def analytic():
    names = list(ANALYTIC)
    cases = [ANALYTIC[k] for k in names]
    swapped = [(c[2], c[3], c[0], c[1]) for c in cases]
    r = run_boxes(cases + swapped)
    pick = lambda i: jax.tree_util.tree_map(lambda x: x[i], r)
    return {k: pick(i) for i, k in enumerate(names)}, {k: pick(len(names) + i) for i, k in enumerate(names)}


def _same_points(got, want, atol=1e-12):
    for p in got:
        assert np.min(np.linalg.norm(want - p, axis=1)) < atol, (p, want)


# ---------------------------------------------------------------- topology


def _face_normal(verts, face):
    p = verts[list(face)]
    n = sum(np.cross(p[i] - p[0], p[(i + 1) % len(p)] - p[0]) for i in range(len(p)))
    return n / np.linalg.norm(n)


def test_box_topology_faces_ccw_outward_and_edges():
    assert len(TB.faces) == 6 and all(len(f) == 4 for f in TB.faces)
    assert len(TB.edges) == 12 and len(set(TB.edges)) == 12
    axes = []
    for f in TB.faces:
        n = _face_normal(V, f)
        centre = V[list(f)].mean(0)
        assert n @ centre > 0  # counter-clockwise seen from outside: the area vector points out
        np.testing.assert_allclose(np.abs(n).max(), 1.0)  # a box face: an axis
        np.testing.assert_allclose(V[list(f)] @ n, 0.05, atol=1e-15)  # all four on the face
        axes.append(np.round(n).astype(int))
    assert len({tuple(a) for a in axes}) == 6
    for (i, j), (f, g) in zip(TB.edges, TB.edge_faces):
        assert np.isclose(np.linalg.norm(V[i] - V[j]), 0.1)  # box edges, no face diagonals
        assert {i, j} <= set(TB.faces[f]) and {i, j} <= set(TB.faces[g]) and f != g


@pytest.mark.parametrize("body", ["prism7", "hull20", "padded"])
def test_topology_euler_and_padding(body):
    if body == "prism7":
        b = shapes.regular_prism(7, pad_to=20)
    elif body == "hull20":
        b = shapes.convex_hull(np.random.default_rng(3).normal(size=(20, 3)) * 0.05)
    else:
        b = shapes.box(0.1, pad_to=12)
    t = collision.topology(b.vertices, b.vertex_mask)
    nv = int(np.sum(np.asarray(b.vertex_mask)))
    assert len(t.vertices) == nv and t.num_vertices == b.vertices.shape[0]
    assert nv - len(t.edges) + len(t.faces) == 2  # Euler
    assert max(max(f) for f in t.faces) < nv  # padding never enters a face
    if body == "prism7":
        assert sorted(len(f) for f in t.faces) == [4] * 7 + [7, 7]  # coplanar triangles merged
    for f in t.faces:  # outward normals: all vertices on the inner side of every face
        n = _face_normal(np.asarray(b.vertices), f)
        assert np.all(np.asarray(b.vertices)[list(t.vertices)] @ n <= np.asarray(b.vertices)[f[0]] @ n + 1e-12)
    hash(t)


@pytest.mark.parametrize(
    "points,match",
    [
        (V[:3], "only 3 valid vertices"),
        (np.c_[np.random.default_rng(0).normal(size=(6, 2)), np.zeros(6)], "flat"),
        (np.vstack([V, V[2]]), "vertices 2 and 8 are duplicates"),
        (np.vstack([V, [[0.01, 0.0, 0.0]]]), r"valid vertices \[8\] are not corners"),
        (np.vstack([V, [[0.0, 0.0, 0.05]]]), r"valid vertices \[8\] are not corners"),  # on a face
        (np.vstack([V, [[0.0, 0.05, 0.05]]]), r"valid vertices \[8\] are not corners"),  # on an edge
    ],
)
def test_degenerate_hulls_refused_by_name(points, match):
    with pytest.raises(ValueError, match=match):
        collision.topology(points)


def test_bad_arguments_refused():
    with pytest.raises(ValueError, match="verts_b: shape"):
        collision.hull_hull(V, TB, np.zeros(3), ID, V[:7], TB, np.zeros(3), ID)
    with pytest.raises(ValueError, match="num"):
        collision.hull_hull(V, TB, np.zeros(3), ID, V, TB, np.zeros(3), ID, num=0)


# ---------------------------------------------------------------- analytic box pairs


def test_face_face_stack_with_offset(analytic):
    r = analytic[0]["stack"]
    assert r.kind == PatchType.FACE and r.valid.all()
    np.testing.assert_allclose(r.normal, [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(r.phi, -1e-3, atol=1e-13)
    corners = np.array([[x, y, 0.0495] for x in (-0.02, 0.05) for y in (-0.03, 0.05)])
    _same_points(r.point, corners)
    _same_points(corners, r.point)  # all four distinct corners


def test_rotated_top_box_contacts_on_the_octagon(analytic):
    r = analytic[0]["rot45"]
    assert r.kind == PatchType.FACE and r.valid.all()
    np.testing.assert_allclose(r.phi, -1e-3, atol=1e-13)
    c = 0.05 * np.sqrt(2) - 0.05
    octagon = np.array([[s * a, t * b, 0.0495] for a, b in ((0.05, c), (c, 0.05)) for s in (-1, 1) for t in (-1, 1)])
    _same_points(r.point, octagon)
    assert len({tuple(np.round(p, 9)) for p in r.point}) == 4


def test_separated_pairs_within_and_beyond_the_margin(analytic):
    r = analytic[0]["gap3mm"]
    assert r.kind == PatchType.FACE and r.valid.all()
    np.testing.assert_allclose(r.phi, 3e-3, atol=1e-13)  # the true distance
    np.testing.assert_allclose(r.point[:, 2], 0.0515, atol=1e-13)
    far = analytic[0]["gap6mm"]  # margin 5 mm
    assert far.kind == PatchType.NONE and not far.valid.any() and np.all(far.phi == FAR)


def test_crossed_edges_one_point_at_the_closest_points(analytic):
    r = analytic[0]["crossed"]
    assert r.kind == PatchType.POINT and r.valid.tolist() == [True, False, False, False]
    # a's top edge: the x axis at height H; b's bottom edge: x = 0.01 at height 2H − 1 mm − H
    np.testing.assert_allclose(r.phi[0], -1e-3, atol=1e-13)
    np.testing.assert_allclose(r.point[0], [0.01, 0.0, H - 0.5e-3], atol=1e-13)
    np.testing.assert_allclose(r.normal, [0, 0, 1], atol=1e-12)


def test_box_tilted_on_an_edge_gives_a_line(analytic):
    r = analytic[0]["edge"]
    pb, quat = ANALYTIC["edge"][2:]
    assert r.kind == PatchType.LINE and r.valid.sum() == 2
    phi, pts = r.phi[r.valid], r.point[r.valid]
    np.testing.assert_allclose(phi, -1e-3, atol=1e-13)
    x = np.min((V @ rot(quat).T + pb)[:, 0][np.isclose((V @ rot(quat).T + pb)[:, 2], 0.049)])
    _same_points(pts, np.array([[x, -0.04, 0.0495], [x, 0.05, 0.0495]]))  # clipped at a's side y = 0.05
    assert np.all(r.phi[~r.valid] == FAR)


def test_swapping_a_and_b_flips_the_normal_keeps_phi(analytic):
    ab, ba = analytic
    for k in ANALYTIC:
        np.testing.assert_allclose(ba[k].normal, -ab[k].normal, atol=1e-12)
        np.testing.assert_allclose(np.sort(ba[k].phi), np.sort(ab[k].phi), atol=1e-12)
        assert ba[k].kind == ab[k].kind


# ---------------------------------------------------------------- brute force


def _axes(wa, wb, ta, tb):
    """Every face normal of both bodies and every edge-pair cross product (unit, both signs)."""
    faces = [_face_normal(w, f) for t, w in ((ta, wa), (tb, wb)) for f in t.faces]
    ea = np.array([wa[j] - wa[i] for i, j in ta.edges])
    eb = np.array([wb[j] - wb[i] for i, j in tb.edges])
    cross = np.cross(ea[:, None], eb[None]).reshape(-1, 3)
    length = np.linalg.norm(cross, axis=1)
    u = np.concatenate([faces, cross[length > 1e-9] / length[length > 1e-9, None]])
    return np.concatenate([u, -u])


def brute_separation(wa, wb, ta, tb, u=None):
    """max over every face normal and every edge-pair cross product, both signs, of the gap between
    the two bodies' projections: minus the penetration depth (an independent brute force)."""
    u = _axes(wa, wb, ta, tb) if u is None else u
    return np.max(np.min(wb @ u.T, axis=0) - np.max(wa @ u.T, axis=0))


def random_quats(rng, n):
    x = rng.normal(size=(n, 4))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def random_pairs():
    """Random box pairs placed along random directions at separating-axis gaps in [-3, 4] mm
    (bisection on the brute force), and their results both ways."""
    rng = np.random.default_rng(7)
    n = (N - 2) // 2
    qa, qb = random_quats(rng, n), random_quats(rng, n)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    target = rng.uniform(-3e-3, 4e-3, n)
    wa = [V @ rot(x).T for x in qa]
    vb = [V @ rot(x).T for x in qb]
    axes = [_axes(wa[i], vb[i], TB, TB) for i in range(n)]
    # the gap along each axis is affine in the distance s moved along d: bisection on their max
    base = [np.min(vb[i] @ axes[i].T, 0) - np.max(wa[i] @ axes[i].T, 0) for i in range(n)]
    slope = [axes[i] @ d[i] for i in range(n)]
    lo, hi = np.zeros(n), np.full(n, 0.3)
    for _ in range(50):
        mid = (lo + hi) / 2
        s = np.array([np.max(base[i] + mid[i] * slope[i]) for i in range(n)])
        lo, hi = np.where(s < target, mid, lo), np.where(s < target, hi, mid)
    pb = hi[:, None] * d
    sep = np.array([brute_separation(wa[i], vb[i] + pb[i], TB, TB, axes[i]) for i in range(n)])
    z = np.zeros(3)
    r = run_boxes([(z, qa[i], pb[i], qb[i]) for i in range(n)] + [(pb[i], qb[i], z, qa[i]) for i in range(n)])
    ab = jax.tree_util.tree_map(lambda x: x[:n], r)
    ba = jax.tree_util.tree_map(lambda x: x[n:], r)
    return ab, ba, sep, (qa, pb, qb)


def test_random_pairs_depth_against_brute_force_and_symmetry(random_pairs):
    ab, ba, sep, _ = random_pairs
    size = np.linalg.norm(V[0])
    assert np.all(np.isfinite(ab.point)) and np.all(np.isfinite(ab.phi))
    np.testing.assert_allclose(np.linalg.norm(ab.normal, axis=1), 1.0, atol=1e-12)
    deepest = np.where(ab.valid, ab.phi, np.inf).min(1)
    assert np.all(ab.valid.any(1)[sep <= 0])  # every penetrating pair has a contact
    assert not np.any(ab.valid[sep > 5e-3])
    hit = ab.valid.any(1)
    # never deeper than the depth by more than the feature bias allows; equal in most pairs
    bias = collision.EDGE_BIAS[0] * np.abs(sep) + collision.EDGE_BIAS[1] * size
    assert np.all(deepest[hit] >= sep[hit] - bias[hit])
    exact = np.abs(deepest - sep) < 1e-9
    assert exact[hit].mean() > 0.8, exact[hit].mean()
    # a and b swapped: the normal flips, the distances are the same
    np.testing.assert_array_equal(ab.kind, ba.kind)
    np.testing.assert_allclose(ba.normal[hit], -ab.normal[hit], atol=1e-9)
    np.testing.assert_allclose(np.sort(ba.phi, 1), np.sort(ab.phi, 1), atol=1e-9)
    # separated pairs within the margin: mostly the separating-axis distance, else within the bias
    # (the brute force's non-Minkowski edge axes can raise its lower bound a little)
    sepd = hit & (sep > 1e-5)
    assert sepd.sum() > 10 and exact[sepd].mean() > 0.8
    assert np.all(np.abs(deepest[sepd] - sep[sepd]) <= bias[sepd])


@pytest.mark.parametrize("other", ["prism", "hull"])
def test_box_against_prism_and_hull_matches_brute_force(other):
    """A padded 0.4 m box below a tilted pentagonal prism / random 24-point hull: the deepest contact
    is the separating-axis depth found by brute force, 1 mm, and every point lies on both surfaces'
    midway along the normal."""
    big = shapes.box(0.4, pad_to=12)
    ta = collision.topology(big.vertices, big.vertex_mask)
    rng = np.random.default_rng(11 if other == "prism" else 12)
    body = (shapes.regular_prism(5, 0.06, 0.1) if other == "prism"
            else shapes.convex_hull(rng.normal(size=(24, 3)) * 0.04))
    tb = collision.topology(body.vertices)
    vb = np.asarray(body.vertices)
    n = 6
    quats = np.stack([q(rng.normal(size=3) * (0.3 if other == "prism" else 2.0)) for _ in range(n)])
    pos = np.stack([[*rng.uniform(-0.05, 0.05, 2), 0.2 - np.min((vb @ rot(x).T)[:, 2]) - 1e-3] for x in quats])
    f = jax.jit(jax.vmap(lambda p, x: collision.hull_hull(big.vertices, ta, jnp.zeros(3), jnp.asarray(ID),
                                                          body.vertices, tb, p, x)))
    r = jax.tree_util.tree_map(np.asarray, f(pos, quats))
    wa = np.asarray(big.vertices)[:8]
    for i in range(n):
        wb = vb @ rot(quats[i]).T + pos[i]
        sep = brute_separation(wa, wb, collision.topology(wa), tb)
        np.testing.assert_allclose(sep, -1e-3, atol=1e-12)  # brute force agrees with the set-up
        np.testing.assert_allclose(np.min(r.phi[i]), sep, atol=1e-12)
        np.testing.assert_allclose(r.normal[i], [0, 0, 1], atol=1e-12)
        assert r.kind[i] != PatchType.NONE
        pts = r.point[i][r.valid[i]]
        # each point: midway between the top face z = 0.2 and the body's surface below it
        np.testing.assert_allclose(pts[:, 2], 0.2 + r.phi[i][r.valid[i]] / 2, atol=1e-12)
        assert np.all(np.abs(pts[:, :2]) <= 0.2 + 1e-12)


# ---------------------------------------------------------------- gradients


def test_gradients_match_central_differences(random_pairs):
    """d(Σφ + Σ w·point)/d(pos_b, quat_b, vertices_b) against central differences for a tilted face
    stack, crossed edges, a separated pair within the margin and a line contact on b's face (features
    fixed under ±h); finite for every random pair (penetrating or separated within the margin)."""
    cases = [
        (np.zeros(3), ID, np.array([0.03, 0.02, 0.0995]), q([0.004, -0.003, 0.2])),
        tuple(np.asarray(x, float) for x in ANALYTIC["crossed"]),
        (np.zeros(3), ID, np.array([0.01, -0.02, 0.1035]), q([0.003, 0.006, 0.1])),
        # a on an edge under b's slightly tilted bottom face: b's face is the reference
        (np.zeros(3), q([np.pi / 4, 0, 0]), np.array([0.01, 0.02, H + 0.05 - 1e-3]), q([0.002, 0.001, 0.3])),
    ]
    qa_r, pb_r, qb_r = random_pairs[3]
    z = np.zeros(3)
    m = len(cases)
    _, (d_pa, d_vb, d_pb, d_qb) = run_boxes(cases + [(z, qa_r[i], pb_r[i], qb_r[i]) for i in range(len(pb_r))],
                                             with_grad=True)
    assert all(np.all(np.isfinite(x)) for x in (d_pa, d_vb, d_pb, d_qb))
    # moving both bodies by δ moves every point by δ and no φ: ∂/∂pos_a + ∂/∂pos_b = (valid count) w
    count = random_pairs[0].valid.sum(1)
    np.testing.assert_allclose((d_pa + d_pb)[m:], count[:, None] * W, atol=1e-9)
    assert np.all(np.abs(d_pb[m:][count > 0]).max(1) > 0.1)
    h = 1e-7
    perturbed = []
    for pa, qa, pb, qb in cases:
        for which, size in (("p", 3), ("q", 4), ("v", 24)):
            for k in range(size):
                for sgn in (1, -1):
                    p2, q2, v2 = pb.copy(), qb.copy(), V.copy()
                    if which == "p":
                        p2[k] += sgn * h
                    elif which == "q":
                        q2[k] += sgn * h
                    else:
                        v2.reshape(-1)[k] += sgn * h
                    perturbed.append((pa, qa, p2, q2, v2))
    r = run_boxes(perturbed)
    val = np.sum(np.where(r.valid, r.phi, 0.0), 1) + np.sum(np.where(r.valid[..., None], r.point * W, 0.0), (1, 2))
    fd = ((val[0::2] - val[1::2]) / (2 * h)).reshape(m, 31)
    # the feature set is the same at +h and −h and at the point itself
    assert np.all(r.valid.reshape(m, 62, 4) == r.valid.reshape(m, 62, 4)[:, :1])
    assert np.all(r.kind.reshape(m, 62)[3] == PatchType.LINE)
    ad = np.concatenate([d_pb[:m], d_qb[:m], d_vb[:m].reshape(m, -1)], 1)
    np.testing.assert_allclose(ad, fd, atol=1e-6, rtol=1e-6)
    # separated within the margin: Σφ moves with b's height, one unit per contact
    assert d_pb[2, 2] == pytest.approx(4 + 4 * W[2] * 0.5, rel=1e-9)


def near_resting_stacks(rng, n):
    """Box b resting on box a: tilts ≤ 1 mrad, yaw and offsets random, penetration 0–50 µm."""
    quats = np.stack([q([*rng.uniform(-1e-3, 1e-3, 2), rng.uniform(-np.pi, np.pi)]) for _ in range(n)])
    low = np.array([np.min((V @ rot(x).T)[:, 2]) for x in quats])
    pos = np.c_[rng.uniform(-0.03, 0.03, (n, 2)), 0.05 - low - rng.uniform(0, 5e-5, n)]
    return pos, quats, 0.05 - low - pos[:, 2]  # depth of b's lowest corner


def _on_bottom_face(r, pos, quats, atol):
    """Each contact, moved by φ/2 along the normal, lies on b's bottom face and over a's top face."""
    for i in range(len(pos)):
        R = rot(quats[i])
        y = r.point[i] + r.phi[i][:, None] / 2 * r.normal[i]
        np.testing.assert_allclose((y - pos[i] - R @ [0, 0, -0.05]) @ R[:, 2], 0.0, atol=atol)
        assert np.all(np.abs(r.point[i][:, :2]) <= 0.05 + atol)


def test_near_resting_stacks_keep_the_face_feature():
    """No flicker: a box resting on a box, slightly tilted, keeps a's top face as reference (normal
    +z, four contacts on b's bottom face over a's top face, none deeper than b's lowest corner)."""
    pos, quats, depth = near_resting_stacks(np.random.default_rng(4), 64)
    r = run_boxes([(np.zeros(3), ID, pos[i], quats[i]) for i in range(len(pos))])
    assert np.all(r.kind == PatchType.FACE) and np.all(r.valid)
    np.testing.assert_allclose(r.normal, np.tile([0, 0, 1.0], (len(pos), 1)), atol=1e-15)
    assert np.all(r.phi.min(1) >= -depth - 1e-12) and np.all(r.phi.max(1) <= 2e-4)
    _on_bottom_face(r, pos, quats, 1e-12)


def test_float32():
    """The same in float32 (one program): the analytic stack and the near-resting stacks."""
    v32 = jnp.asarray(V, jnp.float32)
    f = jax.jit(jax.vmap(lambda pb, qb: collision.hull_hull(v32, TB, jnp.zeros(3, jnp.float32),
                                                            jnp.asarray(ID, jnp.float32), v32, TB, pb, qb)))
    pos, quats, depth = near_resting_stacks(np.random.default_rng(4), 64)
    pos = np.vstack([[0.03, 0.02, 0.099], pos])
    quats = np.vstack([q([0, 0, 0.3]), quats])
    r = f(jnp.asarray(pos, jnp.float32), jnp.asarray(quats, jnp.float32))
    assert r.phi.dtype == jnp.float32 and r.point.dtype == jnp.float32
    r = jax.tree_util.tree_map(np.asarray, r)
    assert np.all(r.kind == PatchType.FACE) and np.all(r.valid)
    np.testing.assert_allclose(r.phi[0], -1e-3, atol=2e-7)
    np.testing.assert_allclose(r.normal, np.tile([0, 0, 1.0], (len(pos), 1)), atol=1e-6)
    assert np.all(r.phi[1:].min(1) >= -depth - 2e-7)
    _on_bottom_face(jax.tree_util.tree_map(lambda x: x[1:].astype(float), r), pos[1:], quats[1:], 2e-7)
    r64 = run_boxes([(np.zeros(3), ID, pos[0], quats[0])])
    np.testing.assert_allclose(np.sort(r.point[0], 0), np.sort(r64.point[0], 0), atol=1e-6)


def test_sat_separation_gauss_map_edge_test_matches_brute_force():
    """Pairs of random hulls (edge axes by Gregorius' per-edge-pair Gauss-map test; box pairs, whose
    edge axes come from the 3 × 3 edge directions' supports, are checked through their contacts
    above): the separation is the brute force's for every overlapping pair (minus the penetration
    depth), a lower bound of it for separated ones."""
    rng = np.random.default_rng(9)
    hull = shapes.convex_hull(rng.normal(size=(16, 3)) * 0.05)
    th = collision.topology(hull.vertices)
    assert TB.num_classes == 3 and len(set(TB.edge_class)) == 3
    assert collision.edge_axes_method(th, th) == "gauss" and collision.edge_axes_method(TB, TB) == "support"
    n, verts = 48, np.asarray(hull.vertices)
    qa, qb = random_quats(rng, n), random_quats(rng, n)
    pb = rng.normal(size=(n, 3))
    pb *= rng.uniform(0.0, 0.14, (n, 1)) / np.linalg.norm(pb, axis=1, keepdims=True)
    f = jax.jit(jax.vmap(lambda x, y, p: collision.sat_separation(verts, th, jnp.zeros(3), x, verts, th, p, y)))
    got = np.asarray(f(qa, qb, pb))
    want = np.array([brute_separation(verts @ rot(qa[i]).T, verts @ rot(qb[i]).T + pb[i], th, th) for i in range(n)])
    overlap = want < 0
    assert 5 < overlap.sum() < n
    np.testing.assert_allclose(got[overlap], want[overlap], atol=1e-12)
    assert np.all(got <= want + 1e-12)


@pytest.mark.parametrize("far", [False, True])
@pytest.mark.parametrize("sphere_first", [True, False])
def test_sphere_capsule_gradient_is_finite_in_float32(far, sphere_first):
    """A sphere against a capsule in float32, in either order (a sphere's core is a segment of length 0): the
    derivative of φ is finite whether the pair touches or is beyond the margin (it was NaN in both:
    a floor of 1e-30 under a divisor squares to 0 in float32 in the quotient's derivative), and
    the touching pair's is the float64 one, the unit normal's. The capsule first, its closest point
    to the sphere is on its axis (it was its first end: no contact where the sphere lay midway)."""
    sp, cp = shapes.sphere(0.03, 0.2), shapes.capsule(0.02, 0.08, 0.3)
    qc = (0.7071068, 0.0, 0.7071068, 0.0)  # the capsule lying along x

    def jac(dtype):
        c = lambda x: jnp.asarray(x, dtype)
        sphere = ("sphere", c(sp.vertices), c(sp.radius))
        capsule = ("capsule", c(cp.vertices), c(cp.radius))

        def f(pa, pb):
            if sphere_first:
                return collision.round_round(*sphere, pa, c((1, 0, 0, 0)), *capsule, pb, c(qc), num=4, margin=0.01).phi[0]
            return collision.round_round(*capsule, pb, c(qc), *sphere, pa, c((1, 0, 0, 0)), num=4, margin=0.01).phi[0]
        pa, pb = c([0.01, 0.0, 0.13]), c([0.0, 0.0705, 0.02] if far else [0.0, 0.03, 0.13])
        return np.asarray(jax.jacobian(f, argnums=(0, 1))(pa, pb))

    phi = collision.round_round("capsule", cp.vertices, cp.radius, jnp.asarray([0.0, 0.03, 0.13]), jnp.asarray(qc),
                                "sphere", sp.vertices, sp.radius, jnp.asarray([0.01, 0.0, 0.13]), jnp.asarray((1.0, 0, 0, 0)),
                                num=4, margin=0.01).phi[0]
    assert float(phi) == pytest.approx(0.03 - 0.03 - 0.02, abs=1e-9)  # the capsule first: its axis, not its end
    j32, j64 = jac(jnp.float32), jac(jnp.float64)
    assert np.all(np.isfinite(j32))
    np.testing.assert_allclose(j32, j64, atol=1e-6)
    if not far:
        np.testing.assert_allclose(j64[0], -j64[1], atol=1e-12)
        assert np.linalg.norm(j64[0]) == pytest.approx(1.0)
