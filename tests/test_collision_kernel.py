"""The narrow phase's fused CPU kernel (``jaxcontact.native``, ``narrow.cc``; ``collision.hull_hull``
with ``method="native"``, the default on a CPU) against the pure-JAX reference (``method="jax"``):
the same contacts (validity, kind, points, normals, distances) on random box pairs and on general
hulls (both edge-axis methods), in float64 to round-off and in float32 to its round-off; the same
derivatives (the kernel's choices, the reference's formulas); the same world trajectories."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import collision, native, worlds
from jaxcontact.worlds import scenes


def random_poses(n, dtype, seed):
    """Poses of b near a (centres 0.1 m apart on average, random orientations): touching,
    overlapping and separated pairs, face–face, face–edge and edge–edge."""
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    pa = jax.random.uniform(k[0], (n, 3), dtype, -0.05, 0.05)
    pb = pa + jnp.array([0.0, 0.0, 0.1], dtype) + 0.04 * jax.random.normal(k[1], (n, 3), dtype)
    unit = lambda q: q / jnp.linalg.norm(q, axis=1, keepdims=True)
    return pa, unit(jax.random.normal(k[2], (n, 4), dtype)), pb, unit(jax.random.normal(k[3], (n, 4), dtype))


def box():
    scene, params, _ = scenes.stack(2)
    return scene.topologies[0], np.asarray(params.body.vertices[0])


def hull(seed, n=20):
    p = np.random.default_rng(seed).normal(size=(n, 3))
    p = 0.05 * p / np.linalg.norm(p, axis=1, keepdims=True)
    return collision.topology(p), p


def both(ta, va, tb, vb, poses, dtype, num=4):
    va, vb = jnp.asarray(va, dtype), jnp.asarray(vb, dtype)
    out = {}
    for m in ("native", "jax"):
        f = jax.jit(jax.vmap(lambda a, qa, b, qb, m=m: collision.hull_hull(va, ta, a, qa, vb, tb, b, qb, num=num,
                                                                          margin=0.005, method=m)))
        out[m] = f(*poses)
    return out["native"], out["jax"]


def test_the_kernel_is_the_default_here():
    assert native.available()
    ta, va = box()
    jaxpr = str(jax.make_jaxpr(lambda p: collision.hull_hull(va, ta, p, jnp.array([1.0, 0, 0, 0]), va, ta,
                                                              p + jnp.array([0, 0, 0.1]), jnp.array([1.0, 0, 0, 0])))(
        jnp.zeros(3)))
    assert "jaxcontact_narrow" in jaxpr


@pytest.mark.parametrize("dtype,atol,allowed", [(jnp.float64, 1e-12, 0), (jnp.float32, 2e-6, 2)])
@pytest.mark.parametrize("shapes", ["box-box", "hull-hull", "box-hull"])
def test_kernel_gives_the_reference_contacts(shapes, dtype, atol, allowed):
    """Every pair: the same valid slots and kind; where valid, the same points, distances and normal.
    In float32 a near-tie between two features may fall either way: at most ``allowed`` of 1,500
    pairs may choose differently."""
    (ta, va), (tb, vb) = {"box-box": (box(), box()), "hull-hull": (hull(0), hull(1)),
                          "box-hull": (box(), hull(2))}[shapes]
    poses = random_poses(1500, dtype, seed=7)
    k, r = both(ta, va, tb, vb, poses, dtype)
    touching = np.asarray(r.valid.any(axis=1))
    assert 300 < touching.sum() < 1400  # the set has contacts and separated pairs
    same = np.all(np.asarray(k.valid == r.valid), axis=1) & np.asarray(k.kind == r.kind)
    assert (~same).sum() <= allowed
    v = np.asarray(r.valid) & same[:, None]
    np.testing.assert_allclose(np.where(v, k.phi, 0), np.where(v, r.phi, 0), atol=atol)
    np.testing.assert_allclose(np.where(v[..., None], k.point, 0), np.where(v[..., None], r.point, 0), atol=atol)
    t = (touching & same)[:, None]
    np.testing.assert_allclose(np.where(t, k.normal, 0), np.where(t, r.normal, 0), atol=10 * atol / 0.05)
    assert np.all(np.asarray(k.phi)[~np.asarray(k.valid)] == collision.FAR)


@pytest.mark.parametrize("num", [1, 3, 6])
def test_kernel_keeps_the_reference_points_for_any_slot_count(num):
    ta, va = box()
    k, r = both(ta, va, ta, va, random_poses(400, jnp.float64, seed=3), jnp.float64, num=num)
    np.testing.assert_array_equal(k.valid, r.valid)
    np.testing.assert_array_equal(k.kind, r.kind)
    np.testing.assert_allclose(np.where(r.valid[..., None], k.point, 0), np.where(r.valid[..., None], r.point, 0),
                               atol=1e-12)


@pytest.mark.parametrize("shapes", ["box-box", "hull-hull"])
def test_kernel_derivatives_are_the_references(shapes):
    """jax.grad through the kernel (its choices, the reference's formulas) equals the reference's,
    with respect to both bodies' vertices and poses, float64."""
    (ta, va), (tb, vb) = {"box-box": (box(), box()), "hull-hull": (hull(0), hull(1))}[shapes]
    va, vb = jnp.asarray(va), jnp.asarray(vb)
    pa, qa, pb, qb = random_poses(200, jnp.float64, seed=11)
    w = jnp.array([0.3, -0.7, 1.1])

    def loss(m):
        def f(va, vb, pa, qa, pb, qb):
            c = jax.vmap(lambda a, b, cc, d: collision.hull_hull(va, ta, a, b, vb, tb, cc, d, margin=0.005,
                                                                 method=m))(pa, qa, pb, qb)
            on = jnp.where(c.valid, 1.0, 0.0)
            return (jnp.sum(on * c.phi) + jnp.sum(on[..., None] * c.point * w)
                    + jnp.sum(jnp.any(c.valid, axis=1)[:, None] * c.normal * w))
        return jax.jit(jax.grad(f, argnums=(0, 1, 2, 3, 4, 5)))

    gk, gr = loss("native")(va, vb, pa, qa, pb, qb), loss("jax")(va, vb, pa, qa, pb, qb)
    for a, b in zip(gk, gr):
        assert float(jnp.max(jnp.abs(b))) > 0.1
        np.testing.assert_allclose(a, b, atol=1e-10 * float(jnp.max(jnp.abs(b))))


@pytest.mark.slow
def test_world_with_the_kernel_follows_the_reference():
    """A falling, landing heap of 8 boxes (the broad phase on): float64 trajectories of the default
    narrow phase and the reference agree to 1e-9 m over 150 steps."""
    scene, params, s = scenes.heap(8, jax.random.PRNGKey(3))
    out = {}
    for m in ("auto", "jax"):
        sc = dataclasses.replace(scene, narrow_phase=m)
        traj, info = jax.jit(lambda st, sc=sc: worlds.rollout(worlds.model(), sc, params, st, 150))(s)
        out[m] = (traj, info)
    (ta, ia), (tb, ib) = out["auto"], out["jax"]
    np.testing.assert_array_equal(ia.flags, ib.flags)
    assert float(jnp.max(jnp.abs(ib.impulse))) > 1e-3  # the boxes touched each other and the ground
    np.testing.assert_allclose(ta.pos, tb.pos, atol=1e-9)
    np.testing.assert_allclose(ta.quat, tb.quat, atol=1e-9)


def test_bad_methods_are_refused():
    ta, va = box()
    q = jnp.array([1.0, 0, 0, 0])
    with pytest.raises(ValueError, match="method"):
        collision.hull_hull(va, ta, jnp.zeros(3), q, va, ta, jnp.ones(3), q, method="fast")
    scene, _, _ = scenes.stack(2)
    with pytest.raises(ValueError, match="narrow_phase"):
        dataclasses.replace(scene, narrow_phase="gpu")
