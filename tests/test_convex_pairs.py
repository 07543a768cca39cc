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
            t = np.linspace(0, 1, 60)[:, None]
            seg = CAP[0] + t * (CAP[1] - CAP[0])
            local = np.concatenate([np.where(s[:, 2:] < 0, CAP[0], CAP[1]) + r * s,
                                    (seg[:, None] + r * np.stack([np.cos(th), np.sin(th), 0 * th], 1)[None]).reshape(-1, 3)])
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


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_convex_pairs_match_the_definition_and_sampled_surfaces(dtype):
    """Every kind pair a cylinder or ellipsoid is in, at random poses (apart up to 3 cm, touching,
    overlapping): φ lies between the best separation over 40,000 axes (sep(n) = −h_b(−n) − h_a(n),
    exact support functions: a lower bound of the signed distance) and, apart, the least distance of
    the two densely sampled surfaces (an upper bound); the normal's separation is φ (it is the
    axis); the first point lies midway between the two support points along the normal (on both
    surfaces); every valid point's φ is at least the pair's."""
    rng = np.random.default_rng(11)
    tol = 1e-9 if dtype == jnp.float64 else 3e-6
    M = 6
    fns = {p: jax.vmap(_method(*p, dtype)) for p in PAIRS}
    run = jax.jit(lambda args: {p: fns[p](*args[p]) for p in PAIRS})
    args, geo = {}, {}
    for ka, kb in PAIRS:
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
                dist, j = cKDTree(sb).query(sa)
                k = np.argmin(dist)
                assert phi <= dist[k] + tol, (ka, kb, i)
                assert dist[k] - phi < 2e-4, (ka, kb, i, dist[k], phi)  # the bound is tight: the sampling's spacing
                assert float(n @ (sb[j[k]] - sa[k])) / dist[k] > 0.95, (ka, kb, i)  # to the sampling's spacing
                # the point's ends lie on the sampled surfaces (the closest pair need not be unique)
                assert cKDTree(sa).query(p0 - 0.5 * phi * n)[0] < 3e-3, (ka, kb, i)
                assert cKDTree(sb).query(p0 + 0.5 * phi * n)[0] < 3e-3, (ka, kb, i)
            # the first point: midway between a's surface (support along n) and b's along the normal
            assert float(n @ (p0 - 0.5 * phi * n)) == pytest.approx(_support(ka, pa[i], ra, n[None])[0], abs=10 * tol)
            assert float(-n @ (p0 + 0.5 * phi * n)) == pytest.approx(_support(kb, pb[i], rb, -n[None])[0], abs=10 * tol)
            v = np.asarray(pc.valid[i])
            assert v[0] and np.all(np.asarray(pc.phi[i])[v] >= phi - tol)
    assert apart >= 15
