"""Body–body contacts of spheres and capsules (issue 62, items 4 and 6): with each other
(``collision.round_round``) and with hulls (``collision.round_hull``), in worlds through
``Scene.pair_shape``'s dispatch. Contacts against densely sampled surfaces, φ's derivative against
central differences, and physics: a head-on hit of two spheres, a sphere and a capsule resting on
a fixed box, a ball in a bin of four fixed walls. The fast catchers of the round-pair mutations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import collision, shapes, worlds
from jaxcontact.rotations import quat_to_mat

CAP = np.array([[0.0, 0.0, -0.05], [0.0, 0.0, 0.05]])
SPH = np.zeros((1, 3))
HALF = np.array([0.1, 0.05, 0.07])
BOX = np.asarray(shapes.box(tuple(2 * HALF)).vertices)
TOPO = collision.topology(BOX)


def _quats(rng, k):
    q = rng.normal(size=(k, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _rot(q):
    return np.asarray(quat_to_mat(jnp.asarray(q, jnp.float64)))


def _core_pts(kind, pos, q, n=801):
    w = pos + (CAP if kind == "capsule" else SPH) @ _rot(q).T
    if kind == "sphere":
        return w
    t = np.linspace(0.0, 1.0, n)[:, None]
    return w[0] + t * (w[1] - w[0])


def _box_dist(pts, pos, q):
    """Exact signed distance of points to the box (its local frame; negative inside)."""
    local = (pts - pos) @ _rot(q)
    d = np.abs(local) - HALF
    out = np.linalg.norm(np.maximum(d, 0.0), axis=-1)
    return np.where(np.all(d <= 0, axis=-1), np.max(d, axis=-1), out)


def _cast(tree, dtype):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), tree)


@pytest.mark.parametrize("method", ["jax", "native"])
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_round_hull_contacts_are_the_sampled_closest(dtype, method):
    """A sphere and a capsule at random poses around a randomly turned box, separated, touching
    and with the core inside: φ is the least signed distance of the core (densely sampled) to the
    box less the radius; the normal points from the round body into the box (it is the box's outward
    normal at the closest point, negated); the point lies midway between the surfaces. Both methods:
    the pure-JAX reference and the CPU kernel (``native/round.cc``)."""
    rng = np.random.default_rng(3)
    r = 0.03
    tol = 1e-6 if dtype == jnp.float64 else 2e-5
    fn = {k: jax.jit(jax.vmap(lambda pa, qa, pb, qb, k=k: collision.round_hull(
        k, jnp.asarray(CAP if k == "capsule" else SPH, dtype), jnp.asarray(r, dtype), pa, qa, jnp.asarray(BOX, dtype),
        TOPO, pb, qb, num=4, margin=1.0, method=method))) for k in ("sphere", "capsule")}
    for kind, f in fn.items():
        M = 24
        qa, qb = _quats(rng, M), _quats(rng, M)
        dirs = rng.normal(size=(M, 3))
        pa = dirs / np.linalg.norm(dirs, axis=1, keepdims=True) * rng.uniform(0.0, 0.2, size=(M, 1))
        pb = np.zeros((M, 3))
        pc = f(*(jnp.asarray(x, dtype) for x in (pa, qa, pb, qb)))
        hits = 0
        for i in range(M):
            pts = _core_pts(kind, pa[i], qa[i])
            d = _box_dist(pts, pb[i], qb[i])
            core = pts[np.argmin(d)]
            n = np.asarray(pc.normal[i], float)
            assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-5)
            assert bool(pc.valid[i, 0])
            if d.min() > 0:  # separated cores: the exact distance, the normal along the closest points
                want = d.min() - r
                assert float(pc.phi[i, 0]) == pytest.approx(want, abs=tol + (2e-6 if kind == "capsule" else 0.0)), (kind, i)
                surf = core + n * (want + r)
                assert abs(_box_dist(surf[None], pb[i], qb[i])[0]) < 5 * tol + (6e-5 if kind == 'capsule' else 1e-5), (kind, i)
                np.testing.assert_allclose(np.asarray(pc.point[i, 0], float), core + n * (r + 0.5 * want),
                                           atol=5 * tol + 6e-5)
            else:  # the core meets the box: the face of least penetration (its deepest core point's depth)
                axes = np.concatenate([_rot(qb[i]).T, -_rot(qb[i]).T])  # six outward face normals
                sep = np.min((pts - pb[i]) @ axes.T - np.concatenate([HALF, HALF]), axis=0)
                f = np.argmax(sep)
                assert float(pc.phi[i, 0]) == pytest.approx(sep[f] - r, abs=tol), (kind, i)
                np.testing.assert_allclose(n, -axes[f], atol=10 * tol)
            hits += d.min() <= 0
        assert 3 <= hits <= M - 3  # both regimes sampled


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_round_round_contacts_are_the_sampled_closest(dtype):
    """Sphere–sphere, sphere–capsule, capsule–capsule at random poses: φ is the least distance of
    the sampled cores less both radii, the normal the direction between the closest core points."""
    rng = np.random.default_rng(4)
    ra, rb = 0.03, 0.02
    tol = 1e-9 if dtype == jnp.float64 else 2e-6
    for ka, kb in (("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "capsule")):
        M = 16
        qa, qb = _quats(rng, M), _quats(rng, M)
        pa, pb = rng.normal(size=(M, 3)) * 0.06, rng.normal(size=(M, 3)) * 0.06
        f = jax.jit(jax.vmap(lambda pa, qa, pb, qb: collision.round_round(
            ka, jnp.asarray(CAP if ka == "capsule" else SPH, dtype), jnp.asarray(ra, dtype), pa, qa,
            kb, jnp.asarray(CAP if kb == "capsule" else SPH, dtype), jnp.asarray(rb, dtype), pb, qb, num=4, margin=1.0)))
        pc = f(*(jnp.asarray(x, dtype) for x in (pa, qa, pb, qb)))
        for i in range(M):
            A, B = _core_pts(ka, pa[i], qa[i], 2001), _core_pts(kb, pb[i], qb[i], 2001)
            D = np.linalg.norm(A[:, None] - B[None], axis=-1)
            j, k = np.unravel_index(np.argmin(D), D.shape)
            assert float(pc.phi[i, 0]) == pytest.approx(D[j, k] - ra - rb, abs=tol + 1e-7 * (kb == "capsule")), (ka, kb, i)
            np.testing.assert_allclose(np.asarray(pc.normal[i], float), (B[k] - A[j]) / D[j, k], atol=2e-3)
            if ka == "sphere" or kb == "sphere":
                assert not bool(pc.valid[i, 1])


def test_parallel_capsules_touch_at_the_overlaps_ends():
    """Two parallel capsules side by side, offset along their axes: two contacts, at the ends of
    the overlap of their segments, both at the gap; crossed, one."""
    q = jnp.array([1.0, 0.0, 0.0, 0.0])
    pc = collision.round_round("capsule", jnp.asarray(CAP), 0.03, jnp.zeros(3), q, "capsule", jnp.asarray(CAP), 0.02,
                               jnp.array([0.051, 0.0, 0.03]), q, num=4, margin=0.01)
    assert np.asarray(pc.valid).tolist() == [True, True, False, False]
    np.testing.assert_allclose(np.asarray(pc.phi[:2]), 0.001, atol=1e-12)
    np.testing.assert_allclose(sorted(np.asarray(pc.point[:2, 2])), [-0.02, 0.05], atol=1e-12)
    np.testing.assert_allclose(np.asarray(pc.normal), [1.0, 0.0, 0.0], atol=1e-12)
    qx = jnp.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])
    pc = collision.round_round("capsule", jnp.asarray(CAP), 0.03, jnp.zeros(3), q, "capsule", jnp.asarray(CAP), 0.02,
                               jnp.array([0.051, 0.0, 0.03]), qx, num=4, margin=0.01)
    assert np.asarray(pc.valid).tolist() == [True, False, False, False]


def test_capsule_lying_on_a_box_face_touches_at_both_ends():
    qy = jnp.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0])  # axis along x
    pc = collision.round_hull("capsule", jnp.asarray(CAP), 0.03, jnp.array([0.01, 0.0, 0.07 + 0.031]), qy,
                              jnp.asarray(BOX), TOPO, jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), num=4, margin=0.002)
    assert np.asarray(pc.valid).tolist() == [True, True, False, False]
    np.testing.assert_allclose(np.asarray(pc.phi[:2]), 0.001, atol=1e-12)
    np.testing.assert_allclose(sorted(np.asarray(pc.point[:2, 0])), [-0.04, 0.06], atol=1e-12)
    np.testing.assert_allclose(np.asarray(pc.normal), [0.0, 0.0, -1.0], atol=1e-12)


def test_phi_derivatives_are_central_differences():
    """dφ/d(pose) of sphere–box, capsule–box (outside and core inside) and capsule–capsule against
    central differences of the same function (float64)."""
    rng = np.random.default_rng(5)
    qa, qb = jnp.asarray(_quats(rng, 1)[0]), jnp.asarray(_quats(rng, 1)[0])

    def cases(x):
        pa, wa = x[:3], x[3:]
        q = qa + 0.5 * jnp.concatenate([jnp.zeros(1), wa])
        q = q / jnp.linalg.norm(q)
        one = lambda k, p: collision.round_hull(k, jnp.asarray(CAP if k == "capsule" else SPH), 0.03, p, q,
                                                jnp.asarray(BOX), TOPO, jnp.zeros(3), qb, margin=1.0).phi[0]
        rr = collision.round_round("capsule", jnp.asarray(CAP), 0.03, pa, q, "capsule", jnp.asarray(CAP), 0.02,
                                   jnp.array([0.03, 0.05, 0.02]), qb, margin=1.0).phi[0]
        return jnp.stack([one("sphere", pa + jnp.array([0.1, 0.1, 0.05])), one("capsule", pa + jnp.array([0.12, 0.0, 0.1])),
                          one("capsule", pa), rr])

    x0 = jnp.asarray(np.r_[rng.normal(size=3) * 0.01, np.zeros(3)])
    eps = 1e-6
    both = jax.jit(lambda x: (jax.jacfwd(cases)(x), jax.vmap(cases)(x + eps * jnp.eye(6)), jax.vmap(cases)(x - eps * jnp.eye(6))))
    J, up, down = both(x0)
    fd = ((up - down) / (2 * eps)).T
    np.testing.assert_allclose(np.asarray(J), np.asarray(fd), atol=1e-6)
    assert np.all(np.linalg.norm(np.asarray(J[:, :3]), axis=1) > 0.5)  # φ moves with the position (|∇φ| = 1 outside)


# --- worlds ---------------------------------------------------------------------------------------

MODEL = worlds.model()
H, G = MODEL.dt, MODEL.gravity
I4 = (1.0, 0.0, 0.0, 0.0)


def _world(bodies, pos, quat=None, vel=None, fixed=(), ground=True, mu=0.5, restitution=0.0, **kw):
    scene, body = worlds.make_scene(bodies, fixed=fixed, ground=ground, **kw)
    params = jc.Params(body=body, ground=jc.Ground.flat(3),
                       law=jc.CoulombLCP.init_params(mu=mu, restitution=restitution))
    n = len(bodies)
    s = jc.State(pos=jnp.asarray(pos, float), quat=jnp.asarray(np.tile(I4, (n, 1)) if quat is None else quat, float),
                 vel=jnp.zeros((n, 3)) if vel is None else jnp.asarray(vel, float), omega=jnp.zeros((n, 3)))
    return scene, params, s


def test_two_spheres_hit_head_on_and_exchange_velocities():
    """Two equal 5 cm spheres, frictionless, in the air (no ground), the first at 1 m/s into the
    second at rest (restitution 1): after the hit the first is at rest and the second at 1 m/s
    (to 1 %), momentum conserved along x (to round-off) and no energy gained."""
    scene, params, s = _world([shapes.sphere(0.05, 0.3), shapes.sphere(0.05, 0.3)], [[0, 0, 0.5], [0.13, 0, 0.5]],
                              vel=[[1.0, 0, 0], [0, 0, 0]], ground=False, mu=0.0, restitution=1.0)
    assert scene.shapes == ("sphere", "sphere") and scene.pairs == ((0, 1),)
    final, summary = worlds.rollout(MODEL, scene, params, s, 40, output="final")
    v = np.asarray(final.vel)
    np.testing.assert_allclose(v[:, 0], [0.0, 1.0], atol=1e-2)
    assert v[:, 0].sum() == pytest.approx(1.0, abs=1e-9)
    assert float(final.pos[1, 0] - final.pos[0, 0]) > 0.1  # never passed through each other
    assert int(summary.flags) == 0


def test_a_sphere_and_a_capsule_rest_on_a_fixed_box():
    """A sphere resting on a fixed 0.2 × 0.1 × 0.14 m box and a capsule lying across another stay
    where they are put (< 0.1 mm over 1 s), at rest."""
    qy = (np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0)
    box = shapes.box(tuple(2 * HALF), 1.0)
    pos = np.array([[0, 0, 0.07], [0.03, 0, 0.14 + 0.05], [1.0, 0, 0.07], [1.0, 0, 0.14 + 0.03]])
    quat = np.array([I4, I4, I4, qy])
    scene, params, s = _world([box, shapes.sphere(0.05, 0.3), box, shapes.capsule(0.03, 0.05, 0.3)], pos, quat,
                              fixed=(0, 2), pairs=[(0, 1), (2, 3)])
    final, summary = worlds.rollout(MODEL, scene, params, s, 500, output="final")
    np.testing.assert_allclose(np.asarray(final.pos), pos, atol=1e-4)
    np.testing.assert_allclose(np.abs(np.asarray(final.quat)), np.abs(quat), atol=1e-3)
    assert float(np.max(np.abs(np.asarray(final.vel)))) < 1e-3
    assert int(summary.flags) == 0


def test_a_ball_thrown_in_a_bin_of_fixed_walls_stays_and_gains_no_energy():
    """A 4 cm ball thrown at 2 m/s (and up) inside four fixed walls (a 0.4 m square bin on the
    ground), restitution 0.8, 2 s: it never leaves the bin and its energy (with its spin's) never grows."""
    wall_x, wall_y = shapes.box((0.04, 0.48, 0.2), 5.0), shapes.box((0.48, 0.04, 0.2), 5.0)
    pos = [[0.22, 0, 0.1], [-0.22, 0, 0.1], [0, 0.22, 0.1], [0, -0.22, 0.1], [0, 0, 0.1]]
    m = 0.1
    scene, params, s = _world([wall_x, wall_x, wall_y, wall_y, shapes.sphere(0.04, m)], pos,
                              vel=[[0, 0, 0]] * 4 + [[2.0, 1.3, 1.0]], fixed=(0, 1, 2, 3), mu=0.2, restitution=0.8)
    traj, info = worlds.rollout(MODEL, scene, params, s, 1000)
    p, v = np.asarray(traj.pos[:, 4]), np.asarray(traj.vel[:, 4])
    assert np.all(np.abs(p[:, :2]) <= 0.2 - 0.04 + 2e-3) and np.all(p[:, 2] >= 0.04 - 2e-3)
    w = np.asarray(traj.omega[:, 4])  # a wall's friction trades spin for speed: count both
    energy = 0.5 * m * np.sum(v * v, axis=1) + 0.2 * m * 0.04**2 * np.sum(w * w, axis=1) + m * G * p[:, 2]
    # semi-implicit Euler moves the ball by h·v after the step's impulses: at a bounce its energy
    # reads up to m g h |v_z| high (measured 3.2e-5 J on the floor), and a step whose position
    # correction lifts it out of a sub-micron overlap (Baumgarte, capped at max_correction_speed)
    # adds that lift's ½ m v_z² (under the disc, rolling at step 819: 0.9 µm, v_z 2.4e-4 m/s,
    # 2.9e-9 J); walls push sideways, no slack
    assert np.all(np.diff(energy) <= m * G * H * np.abs(v[1:, 2]) + 0.5 * m * v[1:, 2] ** 2 + 1e-12)
    assert energy[-1] < energy[0]
    assert np.max(np.abs(p[:, 0])) > 0.15 and np.max(np.abs(p[:, 1])) > 0.15  # it did hit the walls


def test_round_colliders_refuse_other_kinds_by_name():
    """The colliders take the kinds they know (static): a cylinder is refused eagerly and under jit."""
    q = jnp.array([1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"round_round: kinds in \('sphere', 'capsule'\), got 'cylinder'"):
        collision.round_round("cylinder", jnp.asarray(SPH), 0.03, jnp.zeros(3), q, "sphere", jnp.asarray(SPH), 0.02,
                              jnp.ones(3), q)
    with pytest.raises(ValueError, match="round_hull: kind_a in"):
        jax.jit(lambda p: collision.round_hull("ellipsoid", jnp.asarray(SPH), 0.03, p, q, jnp.asarray(BOX), TOPO,
                                               jnp.zeros(3), q).phi)(jnp.ones(3))
