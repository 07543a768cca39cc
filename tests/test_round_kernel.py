"""A sphere's or capsule's contacts against a hull in a fused CPU kernel (``native/round.cc``;
``collision.round_hull`` with ``method="native"``, the default on a CPU) against the pure-JAX
reference (``method="jax"``): the same contacts on random poses (apart beyond the margin, within it,
touching, overlapping, the core inside) of a box and of a random hull, in float64 and float32; the
same derivatives (the reference's, by ``custom_jvp``); the kernel is what a world on a CPU runs.
The contacts themselves are checked against sampled surfaces in ``test_round_pairs.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import collision, native, shapes

CAP = np.array([[0.0, 0.0, -0.04], [0.0, 0.0, 0.04]])
SPH = np.zeros((2, 3))
BOX = np.asarray(shapes.box((0.1, 0.06, 0.08)).vertices)
_rng = np.random.default_rng(11)
HULL = np.asarray(shapes.convex_hull(_rng.normal(size=(14, 3)) * 0.05).vertices)


def _quats(rng, k):
    q = rng.normal(size=(k, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _both(kind, verts, dtype, margin, m=400, seed=0):
    """(reference, kernel) PairContacts of ``m`` random poses of the round body around the hull."""
    rng = np.random.default_rng(seed)
    topo = collision.topology(verts)
    d = rng.normal(size=(m, 3))
    pa = d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.0, 0.16, size=(m, 1))
    args = [jnp.asarray(x, dtype) for x in (pa, _quats(rng, m), np.zeros((m, 3)), _quats(rng, m))]
    core = CAP if kind == "capsule" else SPH

    def f(method):
        return jax.jit(jax.vmap(lambda p, q, pb, qb: collision.round_hull(
            kind, jnp.asarray(core, dtype), jnp.asarray(0.02, dtype), p, q, jnp.asarray(verts, dtype), topo, pb, qb,
            num=4, margin=margin, method=method)))(*args)

    return f("jax"), f("native"), args


def test_the_kernel_is_the_default_here():
    assert native.available()
    topo = collision.topology(BOX)
    call = lambda method: str(jax.make_jaxpr(lambda p: collision.round_hull(
        "capsule", jnp.asarray(CAP), 0.02, p, jnp.array([1.0, 0, 0, 0]), jnp.asarray(BOX), topo, jnp.zeros(3),
        jnp.array([1.0, 0, 0, 0]), method=method))(jnp.array([0.0, 0, 0.1])))
    assert "jaxcontact_round_hull_f64" in call("auto") and "jaxcontact_round_hull" not in call("jax")
    collision.ROUND_KERNEL = False
    try:
        assert "jaxcontact_round_hull" not in call("auto")
    finally:
        collision.ROUND_KERNEL = True


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
@pytest.mark.parametrize("kind", ["sphere", "capsule"])
@pytest.mark.parametrize("shape", ["box", "hull"])
def test_the_kernel_gives_the_references_contacts(dtype, kind, shape):
    """The same valid slots and patch kinds everywhere; where valid the same points, φ and normal to
    round-off (float32: a near-touching normal is the unit of a short difference, so looser). Pairs
    apart beyond the margin (the kernel exits early) have no contact in either."""
    ref, ker, _ = _both(kind, BOX if shape == "box" else HULL, dtype, margin=0.01)
    valid = np.asarray(ref.valid)
    np.testing.assert_array_equal(np.asarray(ker.valid), valid)
    np.testing.assert_array_equal(np.asarray(ker.kind), np.asarray(ref.kind))
    assert 40 < valid[:, 0].sum() < 360  # contacts and pairs apart both sampled
    tol = 1e-12 if dtype == jnp.float64 else 1e-5
    np.testing.assert_allclose(np.asarray(ker.phi)[valid], np.asarray(ref.phi)[valid], atol=tol)
    np.testing.assert_allclose(np.asarray(ker.point)[valid], np.asarray(ref.point)[valid], atol=tol)
    any_valid = valid.any(1)
    np.testing.assert_allclose(np.asarray(ker.normal)[any_valid], np.asarray(ref.normal)[any_valid],
                               atol=1e-10 if dtype == jnp.float64 else 1e-3)
    assert np.all(np.asarray(ker.phi)[~valid] == np.asarray(ref.phi)[~valid])  # FAR


@pytest.mark.slow
def test_the_kernels_derivatives_are_the_references():
    """d(Σ valid φ and points)/d(both poses) through the kernel equals the reference's (float64; the
    default tier's central differences of φ in ``test_round_pairs.py`` run through the kernel too)."""
    ref, ker, args = _both("capsule", BOX, jnp.float64, margin=0.01, m=64, seed=3)
    topo = collision.topology(BOX)

    def loss(method):
        def one(p, q, pb, qb):
            pc = collision.round_hull("capsule", jnp.asarray(CAP), 0.02, p, q, jnp.asarray(BOX), topo, pb, qb,
                                      num=4, margin=0.01, method=method)
            return jnp.sum(jnp.where(pc.valid, pc.phi, 0.0)) + jnp.sum(jnp.where(pc.valid[:, None], pc.point, 0.0))
        return jax.jit(jax.grad(lambda *a: jnp.sum(jax.vmap(one)(*a)), argnums=(0, 1, 2, 3)))(*args)

    for g_ref, g_ker in zip(loss("jax"), loss("native")):
        np.testing.assert_allclose(np.asarray(g_ker), np.asarray(g_ref), atol=1e-12)
    assert np.abs(np.asarray(loss("native")[0])).max() > 0.1
