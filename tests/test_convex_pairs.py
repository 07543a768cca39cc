"""Cylinder and ellipsoid pairs through the general convex method (``collision.convex_pair``,
issue 62 item 4): φ, normal and points against the definition and densely sampled surfaces, φ's
derivative against central differences, resting manifolds, and worlds (resting on a fixed box, a
stack, a collision). The fast catchers of the convex-pair mutations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial import cKDTree

import jaxcontact as jc
from jaxcontact import collision, shapes, worlds
from jaxcontact.rotations import quat_to_mat

HALF = np.array([0.06, 0.04, 0.03])
BOX = np.asarray(shapes.box(tuple(2 * HALF)).vertices)
TOPO = collision.topology(BOX)
CAP = np.array([[0.0, 0.0, -0.04], [0.0, 0.0, 0.04]])
KINDS = {  # kind: (kind argument, core vertices, radius, dims)
    "box": (TOPO, BOX, 0.0, np.zeros(3)),
    "sphere": ("sphere", np.zeros((1, 3)), 0.04, np.zeros(3)),
    "capsule": ("capsule", CAP, 0.025, np.zeros(3)),
    "cylinder": ("cylinder", np.zeros((1, 3)), 0.0, np.array([0.04, 0.05, 0.0])),
    "ellipsoid": ("ellipsoid", np.zeros((1, 3)), 0.0, np.array([0.06, 0.04, 0.03])),
}
PAIRS = [("cylinder", "box"), ("cylinder", "cylinder"), ("cylinder", "sphere"), ("cylinder", "capsule"),
         ("ellipsoid", "box"), ("ellipsoid", "sphere"), ("ellipsoid", "capsule"), ("ellipsoid", "cylinder"),
         ("ellipsoid", "ellipsoid"), ("box", "cylinder")]
I4 = (1.0, 0.0, 0.0, 0.0)


def _rot(q):
    return np.asarray(quat_to_mat(jnp.asarray(q, jnp.float64)))


def _support(kind, pos, rot, n):
    """Exact h(n) (M,) of a shape at (pos, rot) for unit axes n (M, 3)."""
    _, core, r, dims = KINDS[kind]
    nl = n @ rot
    if kind == "cylinder":
        return n @ pos + dims[0] * np.linalg.norm(nl[:, :2], axis=1) + dims[1] * np.abs(nl[:, 2])
    if kind == "ellipsoid":
        return n @ pos + np.linalg.norm(nl * dims, axis=1)
    return n @ pos + np.max(nl @ core.T, axis=1) + r


def _surface(kind, pos, rot, k=160):
    """Points densely on the shape's surface (spacing about a millimetre)."""
    u, v = np.meshgrid(np.linspace(0, 1, k), np.linspace(0, 1, k))
    u, v = u.ravel(), v.ravel()
    _, core, r, dims = KINDS[kind]
    if kind == "box":
        pts = []
        for ax in range(3):
            for s in (-1, 1):
                p = np.zeros((u.size, 3))
                o = [a for a in range(3) if a != ax]
                p[:, ax] = s * HALF[ax]
                p[:, o[0]], p[:, o[1]] = (2 * u - 1) * HALF[o[0]], (2 * v - 1) * HALF[o[1]]
                pts.append(p)
        local = np.concatenate(pts)
    elif kind == "cylinder":
        rho, l = dims[:2]
        th = 2 * np.pi * u
        side = np.stack([rho * np.cos(th), rho * np.sin(th), (2 * v - 1) * l], 1)
        rr = rho * np.sqrt(v)
        caps = [np.stack([rr * np.cos(th), rr * np.sin(th), np.full_like(u, s * l)], 1) for s in (-1, 1)]
        local = np.concatenate([side] + caps)
    else:  # sphere, capsule, ellipsoid: a sphere's points, scaled or swept
        th, z = 2 * np.pi * u, 2 * v - 1
        s = np.stack([np.sqrt(1 - z * z) * np.cos(th), np.sqrt(1 - z * z) * np.sin(th), z], 1)
        if kind == "ellipsoid":
            local = s * dims
        elif kind == "sphere":
            local = r * s
        else:
            t = np.linspace(0, 1, 2 * k)[:, None]
            seg = CAP[0] + t * (CAP[1] - CAP[0])
            ring = np.linspace(0, 2 * np.pi, 2 * k, endpoint=False)
            local = np.concatenate([np.where(s[:, 2:] < 0, CAP[0], CAP[1]) + r * s,
                                    (seg[:, None] + r * np.stack([np.cos(ring), np.sin(ring), 0 * ring], 1)[None]).reshape(-1, 3)])
    return pos + local @ rot.T


def _fibonacci(num):
    k = np.arange(num) + 0.5
    z = 1 - 2 * k / num
    phi = np.pi * (1 + 5 ** 0.5) * k
    return np.stack([np.sqrt(1 - z * z) * np.cos(phi), np.sqrt(1 - z * z) * np.sin(phi), z], axis=1)


LATTICE = _fibonacci(40000)


def _quats(rng, k):
    q = rng.normal(size=(k, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _method(ka, kb, dtype, margin=1.0, num=4):
    A, B = KINDS[ka], KINDS[kb]
    c = lambda x: jnp.asarray(x, dtype)
    return lambda pa, qa, pb, qb: collision.convex_pair(A[0], c(A[1]), c(A[2]), c(A[3]), pa, qa, B[0], c(B[1]), c(B[2]),
                                                        c(B[3]), pb, qb, num=num, margin=margin)


FAST = [("cylinder", "box"), ("ellipsoid", "cylinder"), ("cylinder", "capsule")]


@pytest.mark.parametrize("dtype, pairs", [(jnp.float64, FAST), (jnp.float32, FAST[:1]),
                                          pytest.param(jnp.float64, PAIRS, marks=pytest.mark.slow),
                                          pytest.param(jnp.float32, PAIRS, marks=pytest.mark.slow)])
def test_convex_pairs_match_the_definition_and_sampled_surfaces(dtype, pairs):
    """Kind pairs a cylinder or ellipsoid is in (three in the default tier, float32 one; every one
    in the slow tier), at random poses (apart up to 3 cm, touching,
    overlapping): φ lies between the best separation over 40,000 axes (sep(n) = −h_b(−n) − h_a(n),
    exact support functions: a lower bound of the signed distance) and, apart, the least distance of
    the two densely sampled surfaces (an upper bound); the normal's separation is φ (it is the
    axis); the first point lies midway between the two support points along the normal (on both
    surfaces); every valid point's φ is at least the pair's."""
    rng = np.random.default_rng(11)
    tol = 1e-9 if dtype == jnp.float64 else 3e-6
    if dtype == jnp.float64 and len(pairs) > len(FAST):  # the slow tier's every pair: an ellipsoid against a box
        tol = 1e-8  # left φ 2.4e-9 m above the separation along its normal (the search's accuracy, benchmarks.convex_pairs)
    if dtype == jnp.float32 and len(pairs) > 1:  # the slow tier's every pair in float32: a box against a cylinder
        tol = 6e-6  # left φ 4.9e-6 m from the separation along its normal at φ 25 mm (the search's float32 accuracy)
    M = 6
    fns = {p: jax.vmap(_method(*p, dtype)) for p in pairs}
    run = jax.jit(lambda args: {p: fns[p](*args[p]) for p in pairs})
    args, geo = {}, {}
    for ka, kb in pairs:
        qa, qb = _quats(rng, M), _quats(rng, M)
        d = rng.normal(size=(M, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        # centres placed along d at the sum of the supports plus a gap in [−5 mm, 30 mm]
        gap = rng.uniform(-0.005, 0.03, size=M)
        pa = np.zeros((M, 3))
        pb = np.stack([d[i] * (_support(ka, pa[i], _rot(qa[i]), d[i][None])[0]
                               + _support(kb, np.zeros(3), _rot(qb[i]), -d[i][None])[0] + gap[i]) for i in range(M)])
        args[(ka, kb)] = tuple(jnp.asarray(x, dtype) for x in (pa, qa, pb, qb))
        geo[(ka, kb)] = (pa, qa, pb, qb)
    out = run(args)
    apart = 0
    for (ka, kb), pc in out.items():
        pa, qa, pb, qb = geo[(ka, kb)]
        for i in range(M):
            ra, rb = _rot(qa[i]), _rot(qb[i])
            lower = np.max(-_support(kb, pb[i], rb, -LATTICE) - _support(ka, pa[i], ra, LATTICE))
            phi, n = float(pc.phi[i, 0]), np.asarray(pc.normal[i], np.float64)
            scale = 1.0 + 1e3 * (dtype == jnp.float32)
            assert phi >= lower - 2e-9 * scale, (ka, kb, i, phi, lower)
            assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-5)
            sep_n = -_support(kb, pb[i], rb, -n[None])[0] - _support(ka, pa[i], ra, n[None])[0]
            assert sep_n == pytest.approx(phi, abs=tol + 1e-6 * (dtype == jnp.float32)), (ka, kb, i)
            p0 = np.asarray(pc.point[i, 0], np.float64)
            if lower > 0.002:  # apart: the sampled surfaces' least distance bounds φ from above
                apart += 1
                sa, sb = _surface(ka, pa[i], ra), _surface(kb, pb[i], rb)
                tree_a, tree_b = cKDTree(sa), cKDTree(sb)
                # pruned at φ + 1 mm: the least distance is exact when below that, and the checks below
                # fail when it is not (an infinite distance), so the bound loses nothing and saves ~90 %
                dist, j = tree_b.query(sa, distance_upper_bound=phi + 1e-3)
                k = np.argmin(dist)
                assert phi <= dist[k] + tol, (ka, kb, i)
                assert dist[k] - phi < 2e-4, (ka, kb, i, dist[k], phi)  # the bound is tight: the sampling's spacing
                assert float(n @ (sb[j[k]] - sa[k])) / dist[k] > 0.95, (ka, kb, i)  # to the sampling's spacing
                # the point's ends lie on the sampled surfaces (the closest pair need not be unique)
                assert tree_a.query(p0 - 0.5 * phi * n)[0] < 3e-3, (ka, kb, i)
                assert tree_b.query(p0 + 0.5 * phi * n)[0] < 3e-3, (ka, kb, i)
            # the first point: midway between a's surface (support along n) and b's along the normal
            assert float(n @ (p0 - 0.5 * phi * n)) == pytest.approx(_support(ka, pa[i], ra, n[None])[0], abs=10 * tol)
            assert float(-n @ (p0 + 0.5 * phi * n)) == pytest.approx(_support(kb, pb[i], rb, -n[None])[0], abs=10 * tol)
            v = np.asarray(pc.valid[i])
            assert v[0] and np.all(np.asarray(pc.phi[i])[v] >= phi - tol)
    assert apart >= 1.5 * len(pairs)


def test_resting_manifolds_cylinder_on_a_box():
    """A cylinder standing on a box face touches at three points of its rim (a triangle round its
    axis), lying on it at the two ends of its line; a capsule lying across a cylinder's side at one,
    along it at two; each at the gap, the normal the face's."""
    box = (TOPO, jnp.asarray(BOX), 0.0, None)
    cyl = ("cylinder", jnp.zeros((1, 3)), 0.0, jnp.array([0.04, 0.05]))
    q0 = jnp.asarray(I4)
    qy = jnp.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0])  # body z along world x
    stand = collision.convex_pair(*cyl, jnp.array([0.01, 0.0, 0.03 + 0.05 + 0.001]), q0, *box, jnp.zeros(3), q0,
                                  num=4, margin=0.002)
    v = np.asarray(stand.valid)
    assert v.sum() >= 3 and int(stand.kind) == 3
    np.testing.assert_allclose(np.asarray(stand.phi)[v], 0.001, atol=1e-12)
    np.testing.assert_allclose(np.asarray(stand.normal), [0, 0, -1], atol=1e-12)
    pts = np.asarray(stand.point)[v]
    rad = np.hypot(pts[:, 0] - 0.01, pts[:, 1])
    assert np.all(np.isclose(rad, 0.04, atol=1e-12) | np.isclose(rad, 0.0, atol=1e-12))  # the rim, or the cap's centre
    centre = np.any(np.isclose(rad, 0.0, atol=1e-12))
    pts = pts[np.isclose(rad, 0.04, atol=1e-12)]
    assert len(pts) >= 3
    above = collision.convex_pair(*cyl, jnp.array([0.01, 0.0, 0.03 + 0.05 + 0.003]), q0, *box, jnp.zeros(3), q0,
                                  num=4, margin=0.002)  # 3 mm apart, beyond the margin: no contact
    assert not np.any(np.asarray(above.valid)) and int(above.kind) == 0
    ang = np.sort(np.arctan2(pts[:, 1], pts[:, 0] - 0.01))
    assert centre or np.max(np.diff(np.r_[ang, ang[0] + 2 * np.pi])) < np.pi  # the centre is in the support polygon
    lie = collision.convex_pair(*cyl, jnp.array([0.0, 0.0, 0.03 + 0.04 - 0.0005]), qy, *box, jnp.zeros(3), q0,
                                num=4, margin=0.002)
    v = np.asarray(lie.valid)
    assert v.sum() == 2
    np.testing.assert_allclose(np.asarray(lie.phi)[v], -0.0005, atol=1e-12)
    np.testing.assert_allclose(sorted(np.asarray(lie.point)[v, 0]), [-0.05, 0.05], atol=1e-12)
    cap = ("capsule", jnp.asarray(CAP), 0.025, None)
    across = collision.convex_pair(*cap, jnp.array([0.0, 0.0, 0.04 + 0.025 + 0.001]), qy, *cyl, jnp.zeros(3),
                                   jnp.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]), num=4, margin=0.002)
    assert np.asarray(across.valid).sum() == 1 and float(across.phi[0]) == pytest.approx(0.001, abs=1e-12)
    along = collision.convex_pair(*cap, jnp.array([0.0, 0.0, 0.04 + 0.025 + 0.001]), qy, *cyl, jnp.zeros(3), qy,
                                  num=4, margin=0.002)
    v = np.asarray(along.valid)
    assert v.sum() == 2
    np.testing.assert_allclose(np.asarray(along.phi)[v], 0.001, atol=1e-12)
    np.testing.assert_allclose(np.asarray(along.normal), [0, 0, -1], atol=1e-12)


def test_phi_derivatives_are_central_differences():
    """dφ/d(pose) of cylinder–box (rim on a face, side on an edge), cylinder–cylinder and
    ellipsoid–capsule against central differences of the same function (float64)."""
    rng = np.random.default_rng(5)
    qa = jnp.asarray(_quats(rng, 1)[0])
    qb = jnp.asarray(_quats(rng, 1)[0])

    def cases(x):
        pa, wa = x[:3], x[3:]
        q = qa + 0.5 * jnp.concatenate([jnp.zeros(1), wa])
        q = q / jnp.linalg.norm(q)
        f = lambda ka, kb, p, qb=qb: _method(ka, kb, jnp.float64)(p, q, jnp.zeros(3), qb).phi[0]
        return jnp.stack([f("cylinder", "box", pa + jnp.array([0.02, 0.1, 0.03])),
                          f("cylinder", "box", pa + jnp.array([0.0, 0.0, 0.06])),
                          f("cylinder", "cylinder", pa + jnp.array([0.05, 0.06, 0.02])),
                          f("ellipsoid", "capsule", pa + jnp.array([0.02, 0.03, 0.06]))])

    x0 = jnp.asarray(np.r_[rng.normal(size=3) * 0.003, np.zeros(3)])
    eps = 1e-6
    both = jax.jit(lambda x: (jax.jacfwd(cases)(x), jax.vmap(cases)(x + eps * jnp.eye(6)),
                              jax.vmap(cases)(x - eps * jnp.eye(6))))
    J, up, down = both(x0)
    fd = ((up - down) / (2 * eps)).T
    np.testing.assert_allclose(np.asarray(J), np.asarray(fd), atol=1e-6)
    assert np.all(np.linalg.norm(np.asarray(J[:, :3]), axis=1) > 0.5)  # φ moves with the position (|∇φ| = 1)


# --- worlds ---------------------------------------------------------------------------------------

MODEL = worlds.model()
QY = (np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0)


def _world(bodies, pos, quat=None, vel=None, fixed=(), ground=True, mu=0.5, restitution=0.0, **kw):
    scene, body = worlds.make_scene(bodies, fixed=fixed, ground=ground, **kw)
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=jc.CoulombLCP.init_params(mu=mu, restitution=restitution))
    n = len(bodies)
    s = jc.State(pos=jnp.asarray(pos, float), quat=jnp.asarray(np.tile(I4, (n, 1)) if quat is None else quat, float),
                 vel=jnp.zeros((n, 3)) if vel is None else jnp.asarray(vel, float), omega=jnp.zeros((n, 3)))
    return scene, params, s


def test_cylinders_and_an_ellipsoid_rest_on_fixed_boxes():
    """On three fixed 0.4 × 0.4 × 0.1 m boxes: a cylinder standing on its end, one lying on its side
    and an ellipsoid on its shortest semi-axis stay where they are put (< 0.1 mm over 1 s), at
    rest, the ellipsoid at its semi-axis height above the face."""
    box = shapes.box((0.4, 0.4, 0.1), 1.0)
    bodies = [box, shapes.cylinder(0.05, 0.08, 0.5), box, shapes.cylinder(0.05, 0.08, 0.5), box,
              shapes.ellipsoid((0.06, 0.04, 0.03), 0.3)]
    pos = np.array([[0, 0, 0.05], [0.02, 0.01, 0.18], [1, 0, 0.05], [1.0, 0.02, 0.15], [2, 0, 0.05], [2, 0, 0.13]])
    quat = np.array([I4, I4, I4, QY, I4, I4])
    scene, params, s = _world(bodies, pos, quat, fixed=(0, 2, 4), pairs=[(0, 1), (2, 3), (4, 5)])
    final, summary = worlds.rollout(MODEL, scene, params, s, 500, output="final")
    np.testing.assert_allclose(np.asarray(final.pos), pos, atol=1e-4)
    np.testing.assert_allclose(np.abs(np.asarray(final.quat)), np.abs(quat), atol=1e-3)
    assert float(final.pos[5, 2]) == pytest.approx(0.1 + 0.03, abs=1e-4)
    assert float(np.max(np.abs(np.asarray(final.vel)))) < 1e-3
    assert int(summary.flags) == 0


def test_a_stack_of_three_cylinders_stands():
    """Three cylinders on their ends, one on the other on the ground, stand for 1 s (< 0.1 mm)."""
    c = shapes.cylinder(0.05, 0.04, 0.4)
    pos = np.array([[0, 0, 0.04], [0.005, 0, 0.12], [0.0, 0.005, 0.2]])
    scene, params, s = _world([c, c, c], pos)
    final, summary = worlds.rollout(MODEL, scene, params, s, 500, output="final")
    np.testing.assert_allclose(np.asarray(final.pos), pos, atol=1e-4)
    assert int(summary.flags) == 0


def test_two_cylinders_collide_conserving_momentum_without_gaining_energy():
    """Two cylinders in the air (no ground, no gravity's effect on the relative motion), one thrown
    at the other's side with spin: total momentum is conserved to round-off and the kinetic energy
    never grows (restitution 0.5, friction 0.3)."""
    c = shapes.cylinder(0.04, 0.05, 0.3)
    scene, params, s = _world([c, c], [[0, 0, 1.0], [0.2, 0.01, 1.0]], quat=np.array([QY, I4]),
                              vel=[[1.5, 0, 0], [0, 0, 0]], ground=False, mu=0.3, restitution=0.5)
    s = s.replace(omega=jnp.array([[0.0, 3.0, 1.0], [0.0, 0.0, 0.0]]))
    traj, info = worlds.rollout(MODEL, scene, params, s, 150)
    v, w = np.asarray(traj.vel), np.asarray(traj.omega)
    p = v.sum(axis=1)
    p[:, 2] += 2 * MODEL.gravity * MODEL.dt * np.arange(1, len(p) + 1)  # gravity's impulse, equal on both
    np.testing.assert_allclose(p, np.tile(p[:1], (len(p), 1)), atol=1e-9)
    I = np.asarray(params.body.inertia)
    vz_free = -MODEL.gravity * MODEL.dt * np.arange(1, len(p) + 1)
    rel = v.copy()  # in the freely falling frame
    rel[:, :, 2] -= vz_free[:, None]
    e = 0.5 * 0.3 * np.sum(rel ** 2, axis=(1, 2)) + 0.5 * np.einsum("tbi,bij,tbj->t", w, I, w)
    assert np.all(np.diff(e) <= 1e-9)
    assert v[-1, 1, 0] > 0.3  # they did hit


ROUND_SCENERY_XML = """<mujoco><worldbody>
      <geom name="post" type="cylinder" size=".06 .05" pos="0 0 .05"/>
      <geom name="ball" type="sphere" size=".05" pos="0 1 .05"/>
      <geom name="bar" type="capsule" size=".02 .1" pos="0 -1 .02" euler="0 90 0"/>
      <geom name="slab" type="box" size=".2 .2 .02" pos="1 0 .02"/>
      <body name="can" pos="0.01 0 .15"><freejoint/><geom type="cylinder" size=".04 .05" mass=".3"/></body>
      <body name="egg" pos="1 0 .07"><freejoint/><geom type="ellipsoid" size=".06 .04 .03" mass=".2"/></body>
      </worldbody></mujoco>"""


def test_mjcf_round_scenery_and_cylinder_pairs_load_natively():
    """From a file: a cylinder, a sphere and a capsule on the world body are fixed bodies of their
    own kind (not hulls), paired with the free cylinder and ellipsoid that rest on them."""
    pytest.importorskip("mujoco")
    scene, params, state, _ = worlds.from_mjcf(ROUND_SCENERY_XML)
    assert scene.shapes == ("cylinder", "ellipsoid", "cylinder", "sphere", "capsule", "hull")
    assert scene.fixed == (2, 3, 4, 5) and (0, 2) in scene.pairs and (1, 5) in scene.pairs


@pytest.mark.slow
def test_mjcf_round_scenery_holds_a_cylinder_and_an_ellipsoid_at_rest():
    """The file above: a free cylinder standing on the fixed cylinder's end and a free ellipsoid on a
    fixed slab stay where they are (< 0.1 mm over 1 s)."""
    pytest.importorskip("mujoco")
    scene, params, state, _ = worlds.from_mjcf(ROUND_SCENERY_XML)
    final, summary = worlds.rollout(MODEL, scene, params, state, 500, output="final")
    np.testing.assert_allclose(np.asarray(final.pos), np.asarray(state.pos), atol=1e-4)
    assert int(summary.flags) == 0
