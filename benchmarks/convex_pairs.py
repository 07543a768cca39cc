"""The general convex method (``collision.convex_pair``) against a brute-force reference: accuracy of φ and cost per pair.

For each pair of kinds a cylinder or an ellipsoid is in (cylinder–box, –cylinder, –sphere,
–capsule; ellipsoid–box, –sphere, –capsule, –cylinder, –ellipsoid), ``--pairs`` random poses
(centres up to 0.12 m apart, random orientations: separated, touching and overlapping pairs).
The reference is the definition of the signed distance, φ = max over unit axes n of
sep(n) = −h_b(−n) − h_a(n), with the exact support functions h in numpy, brute force: the best of
``--directions`` axes of a Fibonacci lattice, then polished by Nelder–Mead from it (any axis's
sep is a lower bound of φ, so a larger value is a better reference). Reported per kind pair, for
the method's settings (``collision.CONVEX_ITERATIONS`` pattern-search steps: 0 is the candidate axes
alone): the largest shortfall φ_ref − φ, over all pairs and over the near ones (apart, or overlapping
by less than ``NEAR``, the regime of a simulation), the largest excess φ − φ_ref (m), and the cost per
pair (µs, float64, one ``jit(vmap)`` over the poses on this machine's CPU, best of 3).

    python -m benchmarks convex_pairs --pairs 200 --directions 20000 --out benchmarks/results/convex_pairs.json
"""

from __future__ import annotations

import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from jaxcontact import collision, shapes  # noqa: E402
from jaxcontact.rotations import quat_to_mat  # noqa: E402

BOX_HALF = np.array([0.06, 0.04, 0.03])
BOX = np.asarray(shapes.box(tuple(2 * BOX_HALF)).vertices)
TOPO = collision.topology(BOX)
CAP = np.array([[0.0, 0.0, -0.04], [0.0, 0.0, 0.04]])
SHAPES = {  # kind: (kind argument, vertices, radius, dims)
    "box": (TOPO, BOX, 0.0, np.zeros(3)),
    "sphere": ("sphere", np.zeros((1, 3)), 0.04, np.zeros(3)),
    "capsule": ("capsule", CAP, 0.025, np.zeros(3)),
    "cylinder": ("cylinder", np.zeros((1, 3)), 0.0, np.array([0.04, 0.05, 0.0])),
    "ellipsoid": ("ellipsoid", np.zeros((1, 3)), 0.0, np.array([0.06, 0.04, 0.03])),
}
NEAR = 0.005  # m: pairs overlapping less than this (or apart) are "near", a simulation's regime
PAIRS = [("cylinder", "box"), ("cylinder", "cylinder"), ("cylinder", "sphere"), ("cylinder", "capsule"),
         ("ellipsoid", "box"), ("ellipsoid", "sphere"), ("ellipsoid", "capsule"), ("ellipsoid", "cylinder"),
         ("ellipsoid", "ellipsoid")]


def support(kind, pos, rot, n):
    """h(n) (M,) of the shape at (pos, rot) for unit axes n (M, 3), exactly."""
    _, verts, radius, dims = SHAPES[kind]
    nl = n @ rot  # rows Rᵀ n
    base = n @ pos
    if kind == "box":
        return base + np.max(nl @ BOX.T, axis=1)
    if kind == "sphere":
        return base + radius
    if kind == "capsule":
        return base + np.max(nl @ CAP.T, axis=1) + radius
    if kind == "cylinder":
        return base + dims[0] * np.linalg.norm(nl[:, :2], axis=1) + dims[1] * np.abs(nl[:, 2])
    return base + np.linalg.norm(nl * dims, axis=1)


def reference(ka, pa, ra, kb, pb, rb, lattice):
    sep = lambda n: -support(kb, pb, rb, -n) - support(ka, pa, ra, n)
    v = sep(lattice)
    n0 = lattice[np.argmax(v)]

    def neg(x):
        n = n0 + x[0] * t1 + x[1] * t2
        return -sep((n / np.linalg.norm(n))[None])[0]

    t1 = np.cross(n0, [1.0, 0, 0] if abs(n0[0]) < 0.9 else [0, 1.0, 0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n0, t1)
    res = minimize(neg, np.zeros(2), method="Nelder-Mead",
                   options=dict(xatol=1e-12, fatol=1e-15, maxiter=4000, initial_simplex=0.02 * np.array([[0, 0], [1, 0], [0, 1]])))
    return max(-res.fun, v.max())


def fibonacci(num):
    k = np.arange(num) + 0.5
    z = 1 - 2 * k / num
    phi = np.pi * (1 + 5 ** 0.5) * k
    r = np.sqrt(1 - z * z)
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def poses(rng, m):
    q = rng.normal(size=(m, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    d = rng.normal(size=(m, 3))
    return d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.0, 0.12, size=(m, 1)), q


def method(ka, kb):
    A, B = SHAPES[ka], SHAPES[kb]
    return jax.jit(jax.vmap(lambda pa, qa, pb, qb: collision.convex_pair(
        A[0], jnp.asarray(A[1]), A[2], jnp.asarray(A[3]), pa, qa, B[0], jnp.asarray(B[1]), B[2], jnp.asarray(B[3]),
        pb, qb, num=4, margin=1.0).phi[0]))


def arguments(ap):
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--directions", type=int, default=20000)
    ap.add_argument("--iterations", default="0,10,20,40", help="collision.CONVEX_ITERATIONS values to measure")


def run(args, out):
    """``python -m benchmarks convex_pairs``: the rows, printed; also into ``out`` where ``--out`` is given."""
    lattice = fibonacci(args.directions)
    rng = np.random.default_rng(args.seed)
    rows = []
    default = collision.CONVEX_ITERATIONS
    for ka, kb in PAIRS:
        pa, qa = poses(rng, args.pairs)
        pb, qb = np.zeros((args.pairs, 3)), poses(rng, args.pairs)[1]
        rot = lambda q: np.asarray(quat_to_mat(jnp.asarray(q)))
        ref = np.array([reference(ka, pa[i], rot(qa[i]), kb, pb[i], rot(qb[i]), lattice) for i in range(args.pairs)])
        row = {"pair": f"{ka}-{kb}", "overlapping": int(np.sum(ref < 0)), "near": int(np.sum(ref >= -NEAR)),
               "pairs": args.pairs}
        for it in (int(x) for x in args.iterations.split(",")):
            collision.CONVEX_ITERATIONS = it
            f = method(ka, kb)
            ins = [jnp.asarray(x) for x in (pa, qa, pb, qb)]
            phi = np.asarray(f(*ins))
            best = np.inf
            for _ in range(3):
                t = time.perf_counter()
                f(*ins).block_until_ready()
                best = min(best, time.perf_counter() - t)
            near = ref >= -NEAR
            row[f"it{it}"] = {"shortfall_max": float(np.max(ref - phi)), "excess_max": float(np.max(phi - ref)),
                              "near_shortfall_max": float(np.max((ref - phi)[near])) if near.any() else None,
                              "shortfall_p99": float(np.quantile(ref - phi, 0.99)),
                              "us_per_pair": 1e6 * best / args.pairs}
        collision.CONVEX_ITERATIONS = default
        rows.append(row)
        print(row["pair"], {k: v for k, v in row.items() if k.startswith("it")}, flush=True)
    if out is not None:
        out.write({"rows": rows, "pairs": args.pairs, "directions": args.directions, "seed": args.seed})


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
