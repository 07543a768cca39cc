"""The convex pairs' axis search in a fused CPU kernel (``native/convex.cc``; ``collision.convex_pair``
with ``method="native"``, the default on a CPU) against the pure-JAX reference (``method="jax"``):
the same axis and contacts on random poses of every kind pair a cylinder or an ellipsoid is in, in
float64 and float32; the same derivatives (the axis is a choice without gradient, the rest is the
reference's JAX); the kernel is what a world on a CPU runs."""

import dataclasses
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import collision, native, shapes, worlds
from jaxcontact.geometry import FAR
from jaxcontact.worlds.scenes import heap_broad_phase

sys.path.insert(0, str(Path(__file__).parent))
from test_convex_pairs import BOX, HALF, I4, KINDS, MODEL, TOPO, _quats, _world  # noqa: E402  (the convex-pair tests' shapes)

EVERY = [("cylinder", "box"), ("box", "cylinder"), ("cylinder", "cylinder"), ("cylinder", "sphere"),
         ("sphere", "cylinder"), ("cylinder", "capsule"), ("capsule", "cylinder"), ("ellipsoid", "box"),
         ("ellipsoid", "sphere"), ("ellipsoid", "capsule"), ("ellipsoid", "cylinder"), ("ellipsoid", "ellipsoid")]
QUICK = [("cylinder", "box"), ("capsule", "cylinder"), ("ellipsoid", "cylinder")]


def _pair(ka, kb, dtype, method, num=4, margin=1.0):
    A, B = KINDS[ka], KINDS[kb]
    c = lambda x: jnp.asarray(x, dtype)
    return lambda pa, qa, pb, qb: collision.convex_pair(A[0], c(A[1]), c(A[2]), c(A[3]), pa, qa, B[0], c(B[1]),
                                                        c(B[2]), c(B[3]), pb, qb, num=num, margin=margin, method=method)


def _poses(rng, m, dtype):
    """b around a at 3–13 cm between centres (the shapes are 4–8 cm across): apart, touching, overlapping."""
    d = rng.normal(size=(m, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    c = lambda x: jnp.asarray(x, dtype)
    return c(np.zeros((m, 3))), c(_quats(rng, m)), c(d * rng.uniform(0.03, 0.13, size=(m, 1))), c(_quats(rng, m))


def test_the_kernel_is_the_default_here():
    assert native.available()
    jaxpr = str(jax.make_jaxpr(_pair("cylinder", "box", jnp.float64, "auto"))(
        jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.array([0.0, 0, 0.1]), jnp.array([1.0, 0, 0, 0])))
    assert "jaxcontact_convex_pair_f64" in jaxpr  # the whole pair (below)
    collision.CONVEX_MANIFOLD = "jax"  # the axis search alone in the kernel
    try:
        axis = str(jax.make_jaxpr(_pair("cylinder", "box", jnp.float64, "auto"))(
            jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.array([0.0, 0, 0.1]), jnp.array([1.0, 0, 0, 0])))
    finally:
        collision.CONVEX_MANIFOLD = "native"
    assert "jaxcontact_convex_f64" in axis and "jaxcontact_convex_pair" not in axis
    ref = str(jax.make_jaxpr(_pair("cylinder", "box", jnp.float64, "jax"))(
        jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.array([0.0, 0, 0.1]), jnp.array([1.0, 0, 0, 0])))
    assert "jaxcontact_convex" not in ref


@pytest.mark.parametrize("dtype, pairs", [(jnp.float64, QUICK), (jnp.float32, QUICK[:1]),
                                          pytest.param(jnp.float64, EVERY, marks=pytest.mark.slow),
                                          pytest.param(jnp.float32, EVERY, marks=pytest.mark.slow)])
def test_kernel_finds_the_reference_axis(dtype, pairs):
    """48 random poses per kind pair: most axes the same to the search's accuracy (the same
    candidates and steps; on curved surfaces the last steps end ~1e-9 apart in float64); where a last-bit difference turns the pattern search another way (a ring's tie), the
    kernel's axis separates the shapes as well as the reference's (φ of the first contact within
    the search's accuracy), and every contact's φ, point and validity follow the axis."""
    rng = np.random.default_rng(5)
    m = 48
    args = {p: _poses(rng, m, dtype) for p in pairs}
    run = jax.jit(lambda a: {p: {meth: jax.vmap(_pair(*p, dtype, meth))(*a[p]) for meth in ("native", "jax")}
                             for p in pairs})
    out = run(args)
    same_tol, phi_tol = (1e-7, 1e-5) if dtype == jnp.float64 else (2e-3, 2e-5)
    for p in pairs:
        nat, ref = out[p]["native"], out[p]["jax"]
        dn = np.abs(np.asarray(nat.normal) - np.asarray(ref.normal)).max(axis=1)
        assert np.all(np.isfinite(np.asarray(nat.normal))), p
        assert np.mean(dn <= same_tol) >= 0.85, (p, np.sort(dn)[-8:])
        assert np.median(dn) <= (1e-8 if dtype == jnp.float64 else 2e-4), (p, np.median(dn))
        assert np.max(np.abs(np.asarray(nat.phi[:, 0]) - np.asarray(ref.phi[:, 0]))) <= phi_tol, p
        # where the axes agree, so does the deepest contact (the other slots up to ties in the reduction)
        same = dn <= same_tol
        tol = 1e-7 if dtype == jnp.float64 else 1e-5
        assert np.allclose(np.asarray(nat.phi)[same, 0], np.asarray(ref.phi)[same, 0], atol=tol, rtol=0), p
        d0 = np.abs(np.asarray(nat.point)[same, 0] - np.asarray(ref.point)[same, 0]).max(axis=1)
        # a point on a curved surface moves with the axis: by its lever (≤ 0.1 m here) times the axes'
        # difference, up to 2e-3 in float32 (float32 cylinder pairs: 1.5e-5 m at |Δn| 1.6e-4)
        assert np.mean(d0 <= tol + 0.1 * dn[same]) >= 0.9, (p, np.sort(d0)[-5:])
        assert np.array_equal(np.asarray(nat.valid)[same, 0], np.asarray(ref.valid)[same, 0]), p


def test_pairs_apart_beyond_the_margin_have_no_contacts_either_way():
    """The kernel stops at an axis that separates a pair beyond its margin (``collision.MARGIN_SLACK``):
    such pairs have no contact in the kernel's answer as in the reference's (a cylinder against a box
    in float64 and float32, a capsule against a cylinder in float64: its radius is in the separation
    the exit reads; centres 8–30 cm apart and a 5 mm margin); the pairs within the margin search on
    and agree with the reference."""
    rng = np.random.default_rng(9)
    for dtype, kinds in ((jnp.float64, ("cylinder", "box")), (jnp.float32, ("cylinder", "box")),
                         (jnp.float64, ("capsule", "cylinder"))):
        pa, qa, pb, qb = _poses(rng, 64, dtype)
        pb = pb * jnp.asarray(rng.uniform(0.08, 0.3, (64, 1)) / 0.08, dtype)
        out = jax.jit(lambda *a: {m: jax.vmap(_pair(*kinds, dtype, m, margin=0.005))(*a)
                                  for m in ("native", "jax")})(pa, qa, pb, qb)
        nat, ref = out["native"], out["jax"]
        apart = ~np.asarray(ref.valid).any(axis=1)
        assert 20 <= apart.sum() < 64  # both kinds of pair in the sample
        assert not np.asarray(nat.valid)[apart].any()
        assert np.all(np.asarray(nat.phi)[apart] == np.asarray(ref.phi)[apart])  # FAR
        assert np.array_equal(np.asarray(nat.kind)[apart], np.asarray(ref.kind)[apart])
        near = ~apart
        tol = 1e-7 if dtype == jnp.float64 else 2e-5
        assert np.max(np.abs(np.asarray(nat.phi)[near, 0] - np.asarray(ref.phi)[near, 0])) <= tol


def test_kernel_derivatives_are_the_references():
    """The pair's φ: its gradient in the poses through the kernel's axis equals the reference's (float64, under
    jit and vmap), to the two searches' agreement (their axes ~1e-7 apart at most here): the axis
    is a choice, the derivative is JAX's own formulas either way."""
    rng = np.random.default_rng(2)
    pa, qa, pb, qb = _poses(rng, 8, jnp.float64)
    pb = pb * (0.09 / jnp.linalg.norm(pb, axis=1, keepdims=True))  # touching to nearly touching

    def loss(meth):
        f = _pair("cylinder", "box", jnp.float64, meth)
        return lambda pa, qa, pb, qb: f(pa, qa, pb, qb).phi[0]  # the pair's distance (minus its depth)

    g = jax.jit(jax.vmap(lambda *a: {m: jax.grad(loss(m), argnums=(0, 1, 2, 3))(*a) for m in ("native", "jax")}))(
        pa, qa, pb, qb)
    for x, y in zip(g["native"], g["jax"]):
        assert np.all(np.isfinite(np.asarray(x)))
        assert np.allclose(np.asarray(x), np.asarray(y), atol=2e-6, rtol=0), np.abs(np.asarray(x) - np.asarray(y)).max(axis=-1)
    assert np.max(np.abs(np.asarray(g["native"][2]))) > 0.1  # the distance moves with b


def test_bad_methods_are_refused():
    f = _pair("cylinder", "box", jnp.float64, "c++")
    args = (jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.array([0.0, 0, 0.1]), jnp.array([1.0, 0, 0, 0]))
    with pytest.raises(ValueError, match="method"):
        f(*args)
    with pytest.raises(ValueError, match="method"):
        jax.jit(f)(*args)


@pytest.mark.slow
def test_world_with_the_kernel_follows_the_reference():
    """A cylinder and a capsule dropped tumbling onto a box and each other (float64, 120 steps, the
    contacts from step ~30 on): the trajectories of the default narrow phase (the kernel's axes) and
    the reference agree to 1e-5 m. Not to round-off: on curved surfaces the two searches end ~1e-9
    apart (the search's accuracy) and the landing grows that (2e-6 m by step 120; the cylinder then
    tips over the box's edge, a choice that 1e-6 m decides: 4e-4 m apart by step 130)."""
    bodies = [shapes.box((0.12, 0.08, 0.06), 0.3), shapes.cylinder(0.03, 0.04, 0.2), shapes.capsule(0.02, 0.08, 0.1)]
    pos = np.array([[0.0, 0.0, 0.03], [0.01, 0.0, 0.12], [-0.01, 0.01, 0.2]])
    quat = np.array([I4, [0.96, 0.2, 0.1, 0.0], [0.9, 0.0, 0.3, 0.3]])
    quat = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    scene, params, s = _world(bodies, pos, quat)
    out = {}
    for m in ("auto", "jax"):
        sc = dataclasses.replace(scene, narrow_phase=m)
        out[m] = worlds.rollout(MODEL, sc, params, s, 120)
    (ta, ia), (tb, ib) = out["auto"], out["jax"]
    touched = np.min(np.asarray(ib.pair_phi)[..., 0], axis=0)  # each pair's least distance over the run
    assert touched[0] < 1e-4 and min(touched[1:]) < 1e-4, touched  # the cylinder on the box, the capsule on one
    np.testing.assert_array_equal(np.asarray(ia.flags), np.asarray(ib.flags))
    np.testing.assert_allclose(np.asarray(ta.pos), np.asarray(tb.pos), atol=1e-5)


def test_heap_broad_phase():
    """More than 3N pairs and no broad phase: max_pairs = 3N (``simulate --mjcf``'s rule); otherwise unchanged."""
    ball = shapes.sphere(0.02, 0.1)
    n = 8
    scene, *_ = _world([ball] * n, np.stack([np.arange(n) * 0.05, np.zeros(n), np.full(n, 0.02)], 1))
    assert scene.num_pairs == n * (n - 1) // 2 > 3 * n and scene.max_pairs is None
    assert heap_broad_phase(scene).max_pairs == 3 * n
    few, *_ = _world([ball] * 3, np.array([[0.0, 0, 0.02], [0.05, 0, 0.02], [0.1, 0, 0.02]]))
    assert heap_broad_phase(few) is few
    given = dataclasses.replace(scene, max_pairs=5)
    assert heap_broad_phase(given).max_pairs == 5


# --- the whole pair in the kernel (collision.CONVEX_MANIFOLD = "native": the axis search and the manifold) ---

def _both(pairs, dtype, args, margin=0.01, grad=None):
    """Each pair's contacts by the whole-pair kernel and by the axis kernel with the manifold in JAX (the
    same axis, to the bit: the same search), under jit and vmap; ``grad``: a function of the contacts
    whose gradient in the four poses is returned too."""
    out = {}
    for switch in ("native", "jax"):
        collision.CONVEX_MANIFOLD = switch
        try:
            def f(p, a):
                fn = _pair(*p, dtype, "native", margin=margin)
                if grad is None:
                    return jax.vmap(fn)(*a)
                return jax.vmap(fn)(*a), jax.vmap(jax.grad(lambda *x: grad(fn(*x)), argnums=(0, 1, 2, 3)))(*a)
            out[switch] = jax.jit(lambda a: {p: f(p, a[p]) for p in pairs})(args)
        finally:
            collision.CONVEX_MANIFOLD = "native"
    return out["native"], out["jax"]


def test_the_whole_pair_is_one_kernel_call_here():
    """On a CPU a convex pair's forward program is one custom call (``jaxcontact_convex_pair``), not the
    axis kernel and the JAX manifold: its compiled program is a fraction of the other's."""
    fn = jax.vmap(_pair("cylinder", "box", jnp.float32, "auto"))
    args = _poses(np.random.default_rng(0), 10, jnp.float32)
    assert "jaxcontact_convex_pair_f32" in str(jax.make_jaxpr(fn)(*args))
    lines = {}
    for switch in ("native", "jax"):
        collision.CONVEX_MANIFOLD = switch
        try:
            lines[switch] = jax.jit(jax.vmap(_pair("cylinder", "box", jnp.float32, "auto"))).lower(
                *args).compile().as_text().count("\n")
        finally:
            collision.CONVEX_MANIFOLD = "native"
    assert 4 * lines["native"] < lines["jax"], lines


@pytest.mark.parametrize("dtype, pairs", [(jnp.float64, QUICK), (jnp.float32, QUICK[:1]),
                                          pytest.param(jnp.float64, EVERY, marks=pytest.mark.slow),
                                          pytest.param(jnp.float32, EVERY, marks=pytest.mark.slow)])
def test_kernel_manifold_is_the_references_at_its_axis(dtype, pairs):
    """96 random poses per kind pair, at the same axis: the kernel's manifold (``convex.cc``'s candidates
    and reduction) and the reference's in JAX have the same deepest contact everywhere (φ, validity,
    point; in float32 the point on ≥ 97 %: among points as deep, a tie) and the same patch type on ≥ 97 %; of the pairs
    touching or overlapping up to 5 mm (what a simulation sees) ≥ 85 % have every valid contact the
    same (φ, point, in the same slot);
    the rest are the reduction's ties (a rim point and a fixed point a hair apart), which the
    last bit decides either way. Float64 to 1e-9 m, float32 to 1e-5 m (points 5e-5 m)."""
    rng = np.random.default_rng(5)
    args = {p: _poses(rng, 96, dtype) for p in pairs}
    nat, ref = _both(pairs, dtype, args)
    tol = 1e-9 if dtype == jnp.float64 else 1e-5
    for p in pairs:
        n, r = jax.tree_util.tree_map(np.asarray, (nat[p], ref[p]))
        np.testing.assert_array_equal(n.normal, r.normal)
        np.testing.assert_array_equal(n.valid[:, 0], r.valid[:, 0])
        assert np.all(np.abs(n.phi[:, 0] - r.phi[:, 0]) <= tol), p
        ptol = tol if dtype == jnp.float64 else 5e-5  # float32: an ellipsoid's entry (a root) to 2e-5 m
        first = np.mean(np.abs(n.point[:, 0] - r.point[:, 0]).max(-1) <= ptol)
        assert first == 1.0 if dtype == jnp.float64 else first >= 0.97, (p, first)  # float32: ties, which is deepest
        assert np.mean(n.kind == r.kind) >= 0.97, p
        same = (np.all(n.valid == r.valid, 1) & np.all(np.abs(n.phi - r.phi) <= tol, 1)
                & np.all((np.abs(n.point - r.point).max(-1) <= ptol) | ~r.valid, 1))
        shallow = r.phi[:, 0] >= -0.005
        assert shallow.sum() >= 15 and r.valid[:, 0].sum() >= 30, p  # the sample holds touching and apart pairs
        assert np.mean(same[shallow]) >= 0.85, (p, np.mean(same[shallow]))
        assert np.all(n.phi[~n.valid] == FAR)
    if ("cylinder", "box") in pairs:  # a narrower cylinder standing on the box's top, tilted ≤ 0.05 rad, 0–1 mm
        m = 8                         # deep: its rim's triangle, every contact the same
        axis = np.c_[rng.normal(size=(m, 2)), np.zeros(m)]
        axis /= np.linalg.norm(axis, axis=1, keepdims=True)
        ang = rng.uniform(0.005, 0.05, m)
        c = lambda x: jnp.asarray(x, dtype)
        qa = c(np.c_[np.cos(ang / 2), np.sin(ang / 2)[:, None] * axis])
        pb = c(np.c_[np.zeros((m, 2)), -(0.05 * np.cos(ang) + 0.025 * np.sin(ang) + HALF[2] - rng.uniform(0, 1e-3, m))])
        out = {}
        for switch in ("native", "jax"):
            collision.CONVEX_MANIFOLD = switch
            try:
                out[switch] = jax.tree_util.tree_map(np.asarray, jax.jit(jax.vmap(
                    lambda q, p: collision.convex_pair("cylinder", c(np.zeros((1, 3))), c(0.0), c([0.025, 0.05, 0.0]),
                                                       c(np.zeros(3)), q, TOPO, c(BOX), c(0.0), None, p, c(I4),
                                                       margin=0.01)))(qa, pb))
            finally:
                collision.CONVEX_MANIFOLD = "native"
        n, r = out["native"], out["jax"]
        assert np.all(r.valid.sum(1) >= 3) and np.all(r.kind == 3), r.valid
        np.testing.assert_array_equal(n.valid, r.valid)
        np.testing.assert_allclose(n.phi[r.valid], r.phi[r.valid], atol=tol, rtol=0)
        np.testing.assert_allclose(n.point[r.valid], r.point[r.valid], atol=tol, rtol=0)


@pytest.mark.parametrize("dtype, pairs", [(jnp.float64, [("cylinder", "box")]),
                                          pytest.param(jnp.float64, [("capsule", "cylinder")], marks=pytest.mark.slow),
                                          pytest.param(jnp.float32, [("cylinder", "box"), ("capsule", "cylinder")],
                                                       marks=pytest.mark.slow)])
def test_kernel_manifold_derivatives_are_the_references(dtype, pairs):
    """The gradient in the four poses of Σ φ and Σ points over the valid contacts: through the kernel
    (``_convex_evaluate`` at its choices) and through the reference's manifold at the same axis, the
    same (float64 to 1e-9, float32 to 1e-3 relative) on ≥ 85 % of the pairs whose manifolds agree,
    finite everywhere."""
    rng = np.random.default_rng(3)
    args = {p: _poses(rng, 24, dtype) for p in pairs}
    for p in pairs:  # touching to shallow: the centres 4–6 cm apart
        pa, qa, pb, qb = args[p]
        args[p] = (pa, qa, pb * jnp.asarray(rng.uniform(0.04, 0.06, (24, 1)), dtype)
                   / jnp.linalg.norm(pb, axis=1, keepdims=True), qb)
    loss = lambda pc: jnp.sum(jnp.where(pc.valid, pc.phi, 0.0)) + jnp.sum(jnp.where(pc.valid[:, None], pc.point, 0.0))
    nat, ref = _both(pairs, dtype, args, grad=loss)
    for p in pairs:
        (n, gn), (r, gr) = jax.tree_util.tree_map(np.asarray, (nat[p], ref[p]))
        same = np.all(n.valid == r.valid, 1) & np.all(np.abs(n.phi - r.phi) <= 1e-5, 1)
        assert same.sum() >= 18 and n.valid.any(1).sum() >= 12, p
        tol = 1e-9 if dtype == jnp.float64 else 1e-3 * max(1.0, max(np.abs(y).max() for y in gr))
        agree = np.ones(len(same), bool)
        for x, y in zip(gn, gr):
            x, y = np.asarray(x), np.asarray(y)
            assert np.all(np.isfinite(x))
            agree &= np.abs(x - y).reshape(len(x), -1).max(1) <= tol
        # the rest: a tie the last bit decides (the deepest point over a's or b's support, both at φ)
        assert np.mean(agree[same]) >= 0.85, (p, np.mean(agree[same]))
        assert np.abs(gn[2]).max() > 0.5, p  # the contacts move with b


@pytest.mark.parametrize("dtype", [jnp.float64, pytest.param(jnp.float32, marks=pytest.mark.slow)])
def test_the_apart_exit_changes_no_output(dtype):
    """``collision.CONVEX_APART_EXIT``: the whole-pair kernel skips the manifold's candidates of a pair its
    axis separates beyond the margin. On 64 random poses of a cylinder and a box (margin 1 cm: 10 apart
    beyond it, the rest within) every output is the same to the bit with and without the exit (the
    points of the empty slots, the normal, φ, validity, the patch type), and so is the gradient in the four
    poses of Σ every point (valid or not: the kernel's choices and sides) and Σ φ of the valid contacts."""
    args = _poses(np.random.default_rng(11), 64, dtype)
    loss = lambda pc: jnp.sum(pc.point) + jnp.sum(jnp.where(pc.valid, pc.phi, 0.0))
    fn = _pair("cylinder", "box", dtype, "native", margin=0.01)

    def both(a):  # one program, the switch read as each half is traced
        out = []
        try:
            for exit_ in (True, False):
                collision.CONVEX_APART_EXIT = exit_
                out.append((jax.vmap(fn)(*a), jax.vmap(jax.grad(lambda *x: loss(fn(*x)), argnums=(0, 1, 2, 3)))(*a)))
        finally:
            collision.CONVEX_APART_EXIT = True
        return out

    (pc, g), (pc0, g0) = jax.tree_util.tree_map(np.asarray, jax.jit(both)(args))
    apart = ~pc.valid.any(1)
    assert apart.sum() >= 8 and (~apart).sum() >= 8, apart.sum()  # both sides of the exit are sampled
    for name in ("point", "normal", "phi", "valid", "kind"):
        np.testing.assert_array_equal(getattr(pc, name), getattr(pc0, name))
    for x, y in zip(g, g0):
        np.testing.assert_array_equal(x, y)
    assert all(np.all(np.isfinite(x)) for x in g) and np.abs(g[2][apart]).max() > 0.1


def test_bad_contact_counts_are_refused():
    args = (jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.array([0.0, 0, 0.1]), jnp.array([1.0, 0, 0, 0]))
    for num in (0, 2.0):
        f = _pair("cylinder", "box", jnp.float64, "auto", num=num)
        with pytest.raises(ValueError, match="num"):
            f(*args)
        with pytest.raises(ValueError, match="num"):
            jax.jit(f)(*args)
