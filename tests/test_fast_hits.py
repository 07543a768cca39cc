"""Fast hits (``Scene.fast_hits``, docs/worlds.md "Fast hits"): a fast pair's contacts are taken at
the pose it reaches within the step (the features that will meet), brought back to this pose to
first order. A ball falling fast just past a fixed box's edge or corner keeps its velocity (no ghost
collision: the current pose's closest feature, the edge, would push it sideways); a box thrown
spinning at a fixed wall neither tunnels nor overlaps it; a fast pair's contacts, brought back to
this pose, are exact for a closing along the normal, and a slow pair's are bitwise as before. (The
census of throws, ``benchmarks.overlap_census``, is minutes per pair: not in the default tier.)"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import shapes, worlds
from jaxcontact.laws import CoulombLCP
from jaxcontact.types import Ground, Params, State
from jaxcontact.worlds import contacts

MODEL = worlds.model()
H = MODEL.dt


def _params(body, mu=0.5):
    return Params(body=body, ground=Ground.flat(), law=CoulombLCP.init_params(mu=mu, restitution=0.0))


def _ghost_world(corner: bool, fast_hits: bool = True):
    """A 0.05 m ball falling at 3 m/s past a fixed 0.1 m box (centred at the origin, no ground), its
    surface 0.2 mm clear of the box's top edge (along x) or corner (along the diagonal), its centre
    5 mm above the top face: the edge (corner) is its closest feature now, and the side face (edge)
    the one it passes within the step of 6 mm."""
    scene, body = worlds.make_scene([shapes.sphere(0.05, 0.37), shapes.box(0.1, 0.37)], fixed=[1], ground=False,
                                    fast_hits=fast_hits)
    clear = 0.05 + 0.2e-3
    xy = [0.05 + clear / np.sqrt(2)] * 2 if corner else [0.05 + clear, 0.0]
    s = State(pos=jnp.array([[*xy, 0.05 + 5e-3], [0.0, 0.0, 0.0]]), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)),
              vel=jnp.array([[0.0, 0.0, -3.0], [0.0, 0.0, 0.0]]), omega=jnp.zeros((2, 3)))
    return scene, _params(body), s


@pytest.mark.parametrize("corner", [False, True], ids=["edge", "corner"])
def test_a_ball_falling_fast_past_a_box_edge_or_corner_is_not_deflected(corner):
    """The ball passes the box untouched: its horizontal velocity stays zero and its fall is free
    (v_z = −3 − g t) to round-off, over 40 steps (12 cm past the edge). With the current pose's
    contacts only (fast_hits off) the edge's speculative contact pushes it sideways."""
    scene, params, s = _ghost_world(corner)
    traj, info = worlds.rollout(MODEL, scene, params, s, 40)
    v = np.asarray(traj.vel[:, 0])
    t = H * np.arange(41)
    assert np.abs(v[:, :2]).max() < 1e-9, np.abs(v[:, :2]).max()
    assert np.allclose(v[:, 2], -3.0 - MODEL.gravity * t, atol=1e-9)
    assert float(np.abs(info.impulse).max()) < 1e-12
    scene_off, params, s = _ghost_world(corner, fast_hits=False)
    traj_off, _ = worlds.rollout(MODEL, scene_off, params, s, 40)
    assert np.abs(np.asarray(traj_off.vel[:, 0, :2])).max() > 1e-3  # the ghost collision this removes


def _wall_throws(fast_hits: bool = True):
    """Four 0.1 m boxes (one world each) thrown along +x at 3 m/s with spins of 10–17 rad/s at a fixed
    wall (a 0.2 × 1 × 1 m board, face at x = 0.1 m) from 5 cm away, no ground."""
    wall = shapes.box((0.2, 1.0, 1.0), 1.0)
    scene, body = worlds.make_scene([shapes.box(0.1, 0.37), wall], fixed=[1], ground=False, fast_hits=fast_hits)
    rng = np.random.default_rng(3)
    q = rng.normal(size=(4, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    omega = rng.normal(size=(4, 3))
    omega *= np.linspace(10, 17, 4)[:, None] / np.linalg.norm(omega, axis=1, keepdims=True)
    W = 4
    s = State(pos=jnp.asarray(np.stack([np.tile([-0.05 - np.sqrt(3) * 0.05, 0.0, 0.0], (W, 1)),
                                        np.tile([0.2, 0.0, 0.0], (W, 1))], axis=1)),
              quat=jnp.asarray(np.stack([q, np.tile([1.0, 0, 0, 0], (W, 1))], axis=1)),
              vel=jnp.asarray(np.stack([np.tile([3.0, 0.0, 0.0], (W, 1)), np.zeros((W, 3))], axis=1)),
              omega=jnp.asarray(np.stack([omega, np.zeros((W, 3))], axis=1)))
    return scene, _params(body), s


def _deepest(scene, params, traj):
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), traj)
    over = jax.jit(jax.vmap(lambda st: contacts.start_overlaps(MODEL, scene, params, st)[0]))(flat)
    return np.asarray(over).reshape(traj.pos.shape[:2]).max(axis=1)


def test_a_box_thrown_spinning_at_a_wall_neither_tunnels_nor_overlaps():
    """Every box hits the wall (a pair contact within 1 mm), stays on its side (its centre never past
    the wall's face less its inradius, and moving back or stopped at the end), and never starts a
    step more than 0.1 mm inside the wall (start_overlaps at every state)."""
    scene, params, s = _wall_throws()
    traj, info = worlds.batch_rollout(MODEL, scene, params, s, 60)
    assert (np.asarray(info.pair_phi).min(axis=(1, 2, 3)) < 1e-3).all()
    assert np.asarray(traj.pos[:, :, 0, 0]).max() < 0.1 - 0.05
    assert (np.asarray(traj.vel[:, -1, 0, 0]) < 1e-6).all()
    deepest = _deepest(scene, params, traj)
    assert deepest.max() < 1e-4, deepest


@pytest.mark.parametrize("kind", ["sphere", "box"])
def test_a_fast_pairs_contacts_are_its_meeting_features_at_this_pose(kind):
    """Two bodies 3 mm apart along x, a closing at 3 m/s (a box spinning at 10 rad/s about x, face to
    face): the pose reached within the step overlaps by 3 mm, and its contacts brought back to this
    pose (φ − h v_n) are 3 mm apart again, exactly (a motion along the normal, a spin about it). A
    pair at rest (0.01 mm/s) takes this pose's contacts, bitwise those of fast_hits off."""
    body = shapes.sphere(0.05, 0.37) if kind == "sphere" else shapes.box(0.1, 0.37)
    con_of = {}
    for on in (True, False):
        scene, stacked = worlds.make_scene([body, body], ground=False, fast_hits=on)
        params = _params(stacked)
        collide = jax.jit(lambda s: contacts.collide(MODEL, scene, params, s))
        for speed in (3.0, 1e-5):
            s = State(pos=jnp.array([[0.0, 0.0, 0.0], [0.1 + 3e-3, 0.0, 0.0]]), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)),
                      vel=jnp.array([[speed, 0.0, 0.0], [0.0, 0.0, 0.0]]),
                      omega=jnp.array([[10.0 if kind == "box" and speed > 1 else 0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
            con_of[on, speed] = collide(s)
    fast = con_of[True, 3.0]
    assert bool(contacts.fast_pairs(MODEL, params, State(pos=jnp.zeros((2, 3)), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)),
                                                         vel=jnp.array([[3.0, 0, 0], [0, 0, 0]]), omega=jnp.zeros((2, 3))),
                                    np.array([[0, 1]]))[0])
    phi, valid = np.asarray(fast.phi), np.asarray(fast.valid)
    assert valid.sum() == (1 if kind == "sphere" else 4)
    assert np.allclose(phi[valid], 3e-3, atol=1e-9), phi[valid]
    normal = np.asarray(fast.rows[valid][:, 1, 0, :3])
    assert np.allclose(normal, [1.0, 0.0, 0.0], atol=1e-9)
    slow_on, slow_off = con_of[True, 1e-5], con_of[False, 1e-5]
    for a, b in zip(jax.tree_util.tree_leaves(slow_on), jax.tree_util.tree_leaves(slow_off)):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def _body_of(kind):
    return {"box": lambda: shapes.box(0.1, 0.37), "sphere": lambda: shapes.sphere(0.05, 0.37),
            "capsule": lambda: shapes.capsule(0.03, 0.05, 0.37), "cylinder": lambda: shapes.cylinder(0.05, 0.05, 0.37)}[kind]()


def _throws(kind_a, kind_b, n, seed=0):
    """``n`` throws of ``kind_a`` onto a resting ``kind_b`` (the census's, ``benchmarks.overlap_census``):
    B on the ground at the origin (a capsule lying along x), A 0–0.15 m above B's top within ±8 cm,
    thrown at 0.5–3 m/s towards B's top centre with a spin of up to 10 rad/s per component."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s = np.sqrt(0.5)
    zb, qb, top = (0.03, [s, 0.0, s, 0.0], 0.06) if kind_b == "capsule" else (0.05, [1.0, 0.0, 0.0, 0.0], 0.1)
    reach = {"box": np.sqrt(3) * 0.05, "sphere": 0.05, "capsule": 0.08, "cylinder": np.sqrt(2) * 0.05}[kind_a]
    pos_a = np.column_stack([rng.uniform(-0.08, 0.08, (n, 2)), top + reach + 1e-3 + rng.uniform(0.0, 0.15, n)])
    d = np.array([0.0, 0.0, top]) - pos_a
    d *= rng.uniform(0.5, 3.0, n)[:, None] / np.linalg.norm(d, axis=1, keepdims=True)
    pair = lambda a, b: jnp.asarray(np.stack([a, np.broadcast_to(b, a.shape)], axis=1))
    return State(pos=pair(pos_a, [0.0, 0.0, zb]), quat=pair(q, qb), vel=pair(d, [0.0, 0.0, 0.0]),
                 omega=pair(rng.uniform(-10, 10, (n, 3)), [0.0, 0.0, 0.0]))


@functools.lru_cache(maxsize=None)
def _census(kinds, throws=32, steps=200):
    """``throws`` census throws of ``kinds`` ("A-B"), float64: (scene, params, trajectory, info)."""
    a, b = kinds.split("-")
    scene, body = worlds.make_scene([_body_of(a), _body_of(b)], pairs=[(0, 1)], fast_hits=True)
    params = _params(body)
    traj, info = worlds.batch_rollout(MODEL, scene, params, _throws(a, b, throws), steps)
    return scene, params, traj, info


@pytest.mark.parametrize("kinds", ["box-box"] + [pytest.param(k, marks=pytest.mark.slow) for k in ("box-capsule", "capsule-cylinder")])
def test_a_small_census_of_fast_throws_holds_the_overlap_bound(kinds):
    """32 throws (float64, 200 steps): no step starts with the pair more than 40 µm inside itself
    (the issue's bound, ≤ 1 % of throws: none of 32), every throw hits. Before the fast pairs'
    overlap was moved out at the end of the step (``contacts.separate_fast_pairs``) box on box had
    20 of 100 census throws beyond 40 µm, capsule on a standing cylinder (rotating the bodies too)
    5 of 100."""
    scene, params, traj, info = _census(kinds)
    assert (np.asarray(info.pair_phi).min(axis=(1, 2, 3)) < 1e-3).all()
    deepest = _deepest(scene, params, traj)
    assert deepest.max() < 40e-6, (np.sort(deepest)[-3:], np.argmax(deepest))


def test_fast_tumbling_throws_gain_no_energy():
    """The 32 box-on-box throws (inelastic, μ 0.5, spins up to 17 rad/s): the world's energy never
    exceeds its start, and no step gains more than 1e-4 J (lifting the thrown 0.37 kg box by 28 µm,
    less than the overlap bound: the position move adds no velocity; measured 3.2e-5 J at most, the
    velocity solve's own push out of the slop; 1.3e-4 J with fast_hits off)."""
    scene, params, traj, info = _census("box-box")
    E = jax.vmap(jax.vmap(lambda s: worlds.energy(MODEL, params, s)))(traj)
    E = np.asarray(E)
    assert (E <= E[:, :1] + 1e-9).all(), (E - E[:, :1]).max()
    assert np.diff(E, axis=1).max() < 1e-4, np.diff(E, axis=1).max()


def test_a_resting_stack_is_bitwise_the_same_with_fast_hits():
    """Slow pairs are neither predicted nor moved: a 3-box stack at rest under a softness of 0.1
    (its boxes settle 20 µm into each other, deeper than ``contacts.SEPARATE_SLOP``, at under 1 cm/s)
    takes the same 100 steps, bitwise, with fast_hits on."""
    from jaxcontact.worlds import scenes

    scene, params, s = scenes.stack(3, softness=0.1)
    out = {}
    for on in (False, True):
        sc = dataclasses.replace(scene, fast_hits=on)
        out[on] = worlds.rollout(MODEL, sc, params, s, 100, output="final")[0]
    for x, y in zip(jax.tree_util.tree_leaves(out[False]), jax.tree_util.tree_leaves(out[True])):
        assert np.array_equal(np.asarray(x), np.asarray(y))
