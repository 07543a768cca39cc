"""Faces at rest and the two doors (issues 61 and 60, part 3).

A body resting on a face stays still whatever the face's vertex count: ``Model.max_contacts`` is the
one count of ground contacts of bodies and worlds (``Scene.ground_contacts`` is a deprecated alias
that must agree), and when more vertices touch than it keeps, the kept ones are the face's widest
spread (``geometry.face_points``). A one-body world is the single body, bit for bit, and both warn
of a start state in the ground, as does a world read from MJCF.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial import ConvexHull

import jaxcontact as jc
from jaxcontact import geometry, shapes, worlds
from jaxcontact.eager import PenetrationWarning
from jaxcontact.solvers import LCPSettings

K = 128  # every shape padded to the hull vertex limit: one program for all
STEPS, AFTER = 260, 250  # 0.52 s at 2 ms; the velocities from 0.5 s on


def _hull_near_the_limit():
    """A random hull of 120 vertices (the limit is 128): 40 on a flat circular bottom face at random
    angles, 80 on a random upper cap."""
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0.0, 2 * np.pi, 40))
    bottom = np.c_[0.06 * np.cos(a), 0.06 * np.sin(a), np.zeros(40)]
    d = rng.normal(size=(80, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    d[:, 2] = np.abs(d[:, 2])
    return shapes.convex_hull(np.r_[bottom, d * [0.06, 0.06, 0.08]], 0.37, pad_to=K)


def _shapes():
    """A box, the octagonal, 12- and 24-gon prisms and the random hull, each with its bottom face
    exactly on the ground (the prisms' axes vertical), at rest."""
    prisms = [shapes.regular_prism(n, 0.06, 0.1, 0.37, pad_to=K) for n in (8, 12, 24)]
    bodies = [shapes.box(0.1, 0.37, pad_to=K)] + prisms + [_hull_near_the_limit()]
    heights = [-float(np.min(np.asarray(b.vertices)[np.asarray(b.vertex_mask) > 0, 2])) for b in bodies]
    return bodies, heights


def _cast(tree, dtype):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)
                                  else x, tree)


def _at_rest(vel, omega):
    """|v| < 1 mm/s and |ω| < 0.01 rad/s for every body at every step from 0.5 s on (chatter flips
    sign from step to step: every step is checked)."""
    v = np.linalg.norm(np.asarray(vel, float), axis=-1)
    w = np.linalg.norm(np.asarray(omega, float), axis=-1)
    assert np.all(np.isfinite(v)) and np.all(np.isfinite(w))
    assert v.max() < 1e-3, f"|v| up to {v.max(axis=0)} m/s after 0.5 s"
    assert w.max() < 1e-2, f"|ω| up to {w.max(axis=0)} rad/s after 0.5 s"


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_faces_rest_as_single_bodies(dtype):
    """Each shape alone (one batched program of the five), on its face: still after 0.5 s. Before
    the face reduction the 24-gon and the hull kept 8 of their 24 and 40 touching vertices by index,
    a support polygon beside the centre of mass: they rocked at 0.1–0.35 rad/s
    (benchmarks/results/faces.md)."""
    bodies, z = _shapes()
    n = len(bodies)
    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    stack = lambda *x: jnp.stack(x)
    params = _cast(jc.Params(body=jax.tree_util.tree_map(stack, *bodies),
                             ground=jax.tree_util.tree_map(stack, *[jc.Ground.flat()] * n),
                             law=jax.tree_util.tree_map(stack, *[law.init_params(mu=0.5)] * n)), dtype)
    states = _cast(jc.State(pos=jnp.array([[0.0, 0.0, h] for h in z]), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (n, 1)),
                            vel=jnp.zeros((n, 3)), omega=jnp.zeros((n, 3))), dtype)
    traj = jc.batch_rollout(model, params, states, STEPS, params_batched=True, output="trajectory")
    assert traj.pos.dtype == dtype
    _at_rest(traj.vel[:, AFTER:], traj.omega[:, AFTER:])


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_faces_rest_in_a_world(dtype):
    """The five shapes in one coupled world (a pair makes it one contact problem, with the world's
    softness and reach filter), on their faces 0.3 m apart: still after 0.5 s, each body with
    ``Model.max_contacts`` ground contacts (before: ``Scene.ground_contacts`` = 4 capped them, and
    every prism rocked)."""
    bodies, z = _shapes()
    n = len(bodies)
    scene, body = worlds.make_scene(bodies, pairs=[(0, 1)])
    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    params = _cast(jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=0.5)), dtype)
    state = _cast(jc.State(pos=jnp.array([[0.3 * i, 0.0, h] for i, h in enumerate(z)]),
                           quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (n, 1)), vel=jnp.zeros((n, 3)),
                           omega=jnp.zeros((n, 3))), dtype)
    traj, info = worlds.rollout(model, scene, params, state, STEPS)
    assert info.phi_ground.shape == (STEPS, n, model.max_contacts)  # the model's count, not a scene's 4
    _at_rest(traj.vel[AFTER:], traj.omega[AFTER:])


def _regular_face(sides):
    a = 2 * np.pi * np.arange(sides) / sides
    return np.c_[np.cos(a), np.sin(a)] * 0.06


@pytest.mark.parametrize("num", [4, 8])
def test_kept_points_span_the_face(num):
    """``geometry.face_points`` on faces of more than ``num`` touching vertices (regular 8-, 12-,
    24-gons and the random hull's 40-gon, each face its vertices in order, as a hull lists them):
    the kept points are distinct touching vertices, the deepest first, and their polygon holds the
    face's centre well inside: at least 60 % of the face's area with 4 points and 80 % with 8 (a
    regular 24-gon: 0.64 and 0.90 at best), where the ``num`` closest by index hold half a face or
    less. With no more touching vertices than ``num`` the choice is the closest ``num`` (``lax.top_k``,
    as before). The kept points' coordinates carry the state's gradient."""
    rng = np.random.default_rng(1)
    faces = [_regular_face(s) for s in (8, 12, 24)]
    a = np.sort(rng.uniform(0.0, 2 * np.pi, 40))
    faces.append(np.c_[np.cos(a), np.sin(a)] * 0.06)
    tang = geometry.tangent_basis(jnp.array([0.0, 0.0, 1.0]))
    P = 48  # every face and the body's top padded to one size: one program
    pts, phis, valid, deep = np.zeros((5, P, 3)), np.zeros((5, P)), np.zeros((5, P), bool), []
    for f, face in enumerate(faces):
        m = len(face)
        deep.append(int(rng.integers(m)))
        pts[f, :m, :2], pts[f, m:m + 4, :2] = face, face[:4] * 1.5  # a top wider than the face (a frustum)
        phis[f, deep[-1]] = -1e-7  # the deepest, by round-off
        phis[f, m:] = 0.05  # the top of the body, 5 cm up: never kept here
        valid[f, :m + 4] = True
    pts[4, :24, :2], valid[4, :24] = faces[2], True  # the 24-gon all at one height: kept before by index
    pts[..., 2] = phis
    keep = jax.jit(jax.vmap(lambda p, f, v, tol: geometry.face_points(p, f, v, tang, num, tol), (0, 0, 0, None)),
                   static_argnums=3)
    idx = np.asarray(keep(jnp.asarray(pts), jnp.asarray(phis), jnp.asarray(valid), 1e-3))
    for f, face in enumerate(faces):
        assert idx[f, 0] == deep[f] and len(set(idx[f].tolist())) == num and np.all(idx[f] < len(face))
        area = ConvexHull(face[idx[f]]).volume
        assert area >= (0.6 if num == 4 else 0.8) * ConvexHull(face).volume, (len(face), idx[f])
    closest = np.asarray(keep(jnp.asarray(pts), jnp.asarray(phis), jnp.asarray(valid), None))[4]
    assert ConvexHull(faces[2][closest]).volume < 0.3 * ConvexHull(faces[2]).volume  # the closest: a quarter rim
    # a box's face (4 touching vertices) keeps the closest num, exactly as top_k
    box = shapes.box(0.1, 0.37)
    q = np.array([0.999, 0.02, 0.03, 0.0])
    s = jc.make_state(pos=[0.0, 0.0, 0.05], quat=q / np.linalg.norm(q))
    con = jax.jit(lambda s: geometry.contact_candidates(box, jc.Ground.flat(), s, 4, 1e-3))(s)
    np.testing.assert_array_equal(np.asarray(con.index), np.asarray(jax.lax.top_k(-con.all_phi, 4)[1]))
    # differentiable: each kept point moves with the body (features chosen without gradient)
    prism = shapes.regular_prism(24, 0.06, 0.1, 0.37)
    state = jc.make_state(pos=[0.0, 0.0, 0.05])
    jac = jax.jit(jax.jacobian(lambda p: geometry.contact_candidates(prism, jc.Ground.flat(), state.replace(pos=p), num,
                                                             1e-3).points))(state.pos)
    np.testing.assert_allclose(np.asarray(jac), np.broadcast_to(np.eye(3), (num, 3, 3)), atol=1e-12)


def test_one_setting_decides_the_ground_contacts():
    """``Scene.ground_contacts`` is deprecated: given, it warns; agreeing with ``Model.max_contacts``
    it runs; disagreeing it is refused by name, eagerly and under ``jit``, on the per-body route
    and the coupled one (it used to cap the model's count silently)."""
    box = shapes.box()
    law = jc.CoulombLCP()
    with pytest.warns(DeprecationWarning, match="Model.max_contacts alone decides"):
        scene4, body = worlds.make_scene([box, box], pairs=[], ground_contacts=4)
    with pytest.warns(DeprecationWarning):
        coupled4, _ = worlds.make_scene([box, box], ground_contacts=4)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=0.5))
    state = jc.State(pos=jnp.array([[0.0, 0.0, 0.06], [0.5, 0.0, 0.06]]),
                     quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)), vel=jnp.zeros((2, 3)), omega=jnp.zeros((2, 3)))
    for scene in (scene4, coupled4):
        with pytest.raises(ValueError, match="Scene.ground_contacts = 4 disagrees with Model.max_contacts = 8"):
            worlds.step(jc.Model(law=law), scene, params, state)
        with pytest.raises(ValueError, match="disagrees with Model.max_contacts"):
            jax.jit(lambda s: worlds.step(jc.Model(law=law), scene, params, s))(state)
    _, info = worlds.step_with_info(jc.Model(law=law, max_contacts=4), scene4, params, state)
    assert info.contacts.phi.shape == (2, 4)
    plain, _ = worlds.make_scene([box, box], pairs=[])  # the model's count on the per-body route (a single body's)
    _, info = worlds.step_with_info(jc.Model(law=law), plain, params, state)
    assert info.contacts.phi.shape == (2, 8)


SPIN = dict(pos=[0.0, 0.0, 0.3], vel=[1.0, 0.0, 0.0], omega=[1.0, 2.0, 3.0])
README = dict(pos=[0.0, 0.0, 0.3], vel=[1.0, 0.0, 0.0])


@pytest.mark.slow
def test_two_doors_one_answer():
    """Issue 60: the box thrown with spin (ω = (1, 2, 3) rad/s) and the README's throw, 500 steps in
    float64: ``jc.rollout`` and the one-body world of ``worlds.make_scene([box])`` with the same
    ``Model`` give the same trajectory bit for bit (they differed by 7e-8 m from the landing on,
    when the world kept 4 ground contacts and the body 8). ``worlds.model()`` differs by design: the
    world's default law warm-starts its sweeps and stops at 1e-7 m/s (``scenes.DEFAULT_LAW``, for
    stacks and gradients); with the square (the default) 6.9e-8 m and 4.5e-8 m (5.1e-8 and 4.4e-8 at the
    earlier 1e-5 m/s), with Coulomb's disc (opt-in) 3.7e-4 m (spin: the warm start carries the sliding and
    spinning contacts' split along) and 1.3e-8 m (README) apart over the 500 steps, held here under
    5e-4 m; without the warm start (tol 1e-6) the world is the single body bit for bit. Bit for bit
    where both compile alike (inside one ``jit``); eagerly a world compiles with its CPU options
    (``pipeline.CPU_COMPILER_OPTIONS``), the body with XLA's defaults: the same to 1e-9 m."""
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=0.002)
    box = shapes.box(0.1, 0.37)
    scene, body = worlds.make_scene([box])
    cold = worlds.model(jc.CoulombLCP(solver=LCPSettings(max_iter=1000)))  # the world's law without its warm start

    @jax.jit
    def doors(params, start, lead):
        one_world = params.replace(body=body)
        return (jc.rollout(model, params, start, 500), worlds.rollout(model, scene, one_world, lead, 500)[0],
                worlds.rollout(cold, scene, one_world, lead, 500)[0])

    for throw in (SPIN, README):
        params = jc.Params(body=box, ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
        start = jc.make_state(**throw)
        lead = jax.tree_util.tree_map(lambda x: x[None], start)
        one, world, same = doors(params, start, lead)
        for a, b in zip(jax.tree_util.tree_leaves(world), jax.tree_util.tree_leaves(one)):
            np.testing.assert_array_equal(np.asarray(a)[:, 0], np.asarray(b))
        assert float(jnp.abs(one.pos[-1, 2] - 0.05)) < 1e-6  # landed and resting on a face
        np.testing.assert_array_equal(np.asarray(same.pos)[:, 0], np.asarray(one.pos))
        eager, _ = worlds.rollout(model, scene, params.replace(body=body), lead, 500)
        np.testing.assert_allclose(np.asarray(eager.pos)[:, 0], np.asarray(jc.rollout(model, params, start, 500).pos),
                                   rtol=0, atol=1e-9)
        default, _ = worlds.rollout(worlds.model(), scene, params.replace(body=body), lead, 500)
        gap = float(jnp.max(jnp.abs(default.pos[:, 0] - one.pos)))
        assert 0.0 < gap < 5e-4, gap


def _mjcf_box(z):
    return f"""<mujoco><option timestep="0.002"/><worldbody>
      <geom type="plane" size="1 1 .1"/>
      <body pos="0 0 {z}"><freejoint/><geom type="box" size=".05 .05 .05" mass="0.37"/></body>
    </worldbody></mujoco>"""


def test_start_in_the_ground_warns_from_every_door():
    """A box started 3 cm inside the ground: a ``PenetrationWarning`` naming the depth from
    ``jc.rollout``, ``worlds.rollout`` of ``make_scene([box])``, the world ``worlds.from_mjcf``
    reads (and ``worlds.batch_rollout``), and the eager steps (``jc.step``, ``worlds.step`` and
    ``step_with_info``), pointing at the caller's line; none 1 mm above it."""
    pytest.importorskip("mujoco", reason="the MJCF loader needs mujoco (pip install -e '.[mjcf]')")
    scene, params, state, model = worlds.from_mjcf(_mjcf_box(0.02))
    box = shapes.box(0.1, 0.37)
    one = jc.Params(body=box, ground=params.ground, law=params.law)
    mine, body = worlds.make_scene([box])
    doors = {
        "jc.rollout": lambda s: jc.rollout(model, one, jax.tree_util.tree_map(lambda x: x[0], s), 1),
        "worlds.rollout": lambda s: worlds.rollout(model, mine, params.replace(body=body), s, 1),
        "from_mjcf": lambda s: worlds.rollout(model, scene, params, s, 1),
        "batch_rollout": lambda s: worlds.batch_rollout(model, scene, params, jax.tree_util.tree_map(
            lambda x: x[None], s), 1),
        "jc.step": lambda s: jc.step(model, one, jax.tree_util.tree_map(lambda x: x[0], s)),
        "worlds.step": lambda s: worlds.step(model, scene, params, s),
        "worlds.step_with_info": lambda s: worlds.step_with_info(model, mine, params.replace(body=body), s),
    }
    for name, door in doors.items():
        with pytest.warns(PenetrationWarning, match="ground by up to 0.03 m") as record:
            door(state)
        assert all(r.filename == __file__ for r in record), name
        with warnings.catch_warnings():
            warnings.simplefilter("error", PenetrationWarning)
            door(state.replace(pos=state.pos.at[:, 2].set(0.051)))
