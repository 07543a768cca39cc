"""Short physics checks of worlds (jaxcontact.worlds), each a hand calculation on a tiny scene
over a few steps: the velocity-form sweep against μ g and free flight, speculative contacts
against a fast approach, the joints' Baumgarte decay, the broad phase's choice of pairs. They are
the fast catchers of the worlds mutations in ``tests/mutations.py`` (docs/testing.md)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.types import Flags
from jaxcontact.worlds import joints as J
from jaxcontact.worlds import scenes

MODEL = worlds.model()
H = MODEL.dt
G = MODEL.gravity


def test_velocity_form_sweep_slides_at_mu_g_and_lets_a_lifted_box_go():
    """Four boxes in a row on the ground, 5 cm apart, μ = 0.5: 4·8 ground + 3·4 pair contacts are
    132 rows, above ``solvers.SMALL_ROWS``, so the step solves in velocity form (``solvers.body_lcp``).
    Three boxes slide at 0.5 m/s: friction saturates at μ m g h a step, so after T steps
    v = 0.5 − μ g T h. The fourth is lifted at 1 m/s: its ground contacts stay in the problem (the
    gap is within reach) but may only push, so it flies freely, v_z = 1 − g T h."""
    T, mu, v0 = 25, 0.5, 0.5
    scene, params, s = scenes.cradle(4, gap=0.05, speed=0.0, restitution=0.0)
    assert (4 * MODEL.max_contacts + scene.num_pairs * scene.pair_contacts) * 3 > jc.solvers.SMALL_ROWS
    params = params.replace(law=jc.CoulombLCP.init_params(mu=mu, restitution=0.0))
    s = s.replace(vel=jnp.array([[v0, 0.0, 0.0]] * 3 + [[0.0, 0.0, 1.0]]))
    traj, info = worlds.rollout(MODEL, scene, params, s, T)
    np.testing.assert_allclose(traj.vel[-1, :3, 0], v0 - mu * G * T * H, atol=1e-3)
    assert float(traj.vel[-1, :3, 0].min()) > 0.1  # still sliding: the deceleration was μ g throughout
    np.testing.assert_allclose(traj.vel[-1, 3], [0.0, 0.0, 1.0 - G * T * H], atol=1e-9)
    assert float(traj.pos[-1, 3, 2] - s.pos[3, 2]) > 0.02  # it left the ground
    assert not np.any(np.asarray(info.flags))


def test_speculative_contact_stops_a_fast_box_without_penetration():
    """A box closing at 3 m/s (6 mm a step) on a resting one, ε = 0, frictionless: 20.5 mm apart,
    the gap at the start of the steps is 20.5, 14.5, 8.5, 2.5 mm. The pair's reach (each body's
    h·(|v| + |ω| r + g h) plus half the 2 mm margin) is 8.1 mm, so the contact enters the problem
    at 2.5 mm with target −φ/h and the boxes meet exactly, never a step inside each other; both
    then move at 1.5 m/s (momentum). A reach without the speed would let the box start the next
    step 3.5 mm inside."""
    scene, params, s = scenes.cradle(2, gap=0.0205, speed=3.0, restitution=0.0)
    traj, info = worlds.rollout(MODEL, scene, params, s, 100)
    gap = np.asarray(traj.pos[:, 1, 0] - traj.pos[:, 0, 0]) - scenes.SIZE
    np.testing.assert_allclose(gap[:4], [0.0205, 0.0145, 0.0085, 0.0025], atol=1e-9)
    assert gap.min() > -1e-6, gap.min()
    assert float(np.min(info.pair_phi)) > -1e-6
    np.testing.assert_allclose(traj.vel[-1, :, 0], [1.5, 1.5], rtol=1e-5)
    assert not np.any(np.asarray(info.flags))  # no PENETRATION either


def _pendulum(anchor_error, axis_error):
    """A 0.1 m box hanging from a revolute joint to the world (axis y) at its top face's centre,
    its anchor ``anchor_error`` m off along x and its axis ``axis_error`` rad off about x."""
    box = shapes.box((scenes.SIZE,) * 3, scenes.MASS)
    scene, body = worlds.make_scene([box], joints=J.Joints(parent=(-1,), child=(0,)))
    axis_child = jnp.array([[0.0, np.cos(axis_error), np.sin(axis_error)]])
    jp = J.JointParams(anchor_parent=jnp.array([[anchor_error, 0.0, 0.5]]), anchor_child=jnp.array([[0.0, 0.0, 0.05]]),
                       axis_parent=jnp.array([[0.0, 1.0, 0.0]]), axis_child=axis_child)
    params = J.JointedParams(body=body, ground=jc.Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0)),
                             law=jc.CoulombLCP.init_params(mu=0.5), joints=jp)
    s = jc.State(pos=jnp.array([[0.0, 0.0, 0.45]]), quat=jnp.array([[1.0, 0.0, 0.0, 0.0]]), vel=jnp.zeros((1, 3)),
                 omega=jnp.zeros((1, 3)))
    return scene, params, s, axis_child


def test_joint_drift_decays_by_one_minus_beta_per_step():
    """Baumgarte stabilisation by hand: a joint's velocity target is −(β/h)·error, so a hanging
    box whose anchor starts 5 µm off (and its axis 50 µrad off) has both errors shrink by
    (1 − β) each step (β = 0.2): 0.8^k of the start after k steps, to 1e-3 relative (the swing the
    correction starts adds errors of order (ωh)²r, below 1e-12 m)."""
    e0, a0, T = 5e-6, 5e-5, 20
    scene, params, s, axis_child = _pendulum(e0, a0)
    beta = scene.joints.baumgarte
    traj, info = worlds.rollout(MODEL, scene, params, s, T)
    assert not np.any(np.asarray(info.flags))
    decay = (1.0 - beta) ** np.arange(T)
    np.testing.assert_allclose(np.asarray(info.joint_error), e0 * decay, rtol=1e-3)
    R = jax.vmap(jc.rotations.quat_to_mat)(traj.quat[:, 0])
    axis = jnp.einsum("kij,j->ki", R, axis_child[0])
    angle = np.asarray(jnp.linalg.norm(jnp.cross(jnp.array([0.0, 1.0, 0.0]), axis), axis=1))
    np.testing.assert_allclose(angle[:T], a0 * decay, rtol=1e-3)


def test_broad_phase_keeps_the_closest_pair_and_flags_only_a_second_one_within_reach():
    """Three boxes, every pair in the table, a broad phase of 1 pair a step (``worlds.collide``,
    no step): boxes 0 and 1 touch and box 2 is 40 cm away, so the pair kept is (0, 1), with its
    face patch of 4 contacts, and nothing is flagged. Box 2 brought to 1 mm of box 1 (within
    reach) makes a second pair that cannot be kept: CAPACITY."""
    box = shapes.box((scenes.SIZE,) * 3, scenes.MASS)
    scene, body = worlds.make_scene([box] * 3, max_pairs=1)
    assert scene.pairs == ((0, 1), (0, 2), (1, 2)) and scene.num_pair_slots == 1
    _, params, s = scenes.cradle(3, gap=0.0, speed=0.0)
    params = params.replace(body=body)
    collide = jax.jit(worlds.collide, static_argnums=(0, 1))
    far = s.replace(pos=s.pos.at[2, 0].set(0.6))
    con = collide(MODEL, scene, params, far)
    G = con.num_ground
    assert np.asarray(con.slot_pair).tolist() == [0]
    assert np.asarray(con.valid[G:]).tolist() == [True] * 4
    np.testing.assert_allclose(con.phi[G:], 0.0, atol=1e-12)
    assert not bool(con.capacity)
    near = s.replace(pos=s.pos.at[2, 0].set(0.201))
    con = collide(MODEL, scene, params, near)
    assert bool(con.capacity)
    assert np.asarray(con.slot_pair).tolist() == [0]  # the touching pair, not the one 1 mm apart
