"""Fixed scenery (``Scene.fixed``, docs/worlds.md "Fixed scenery"): bodies fixed to the world — a
ramp, a wall, a table — touched by free bodies through the ordinary narrow phase, with infinite
mass, no gravity, no ground contacts, their state kept bitwise. Hand calculations on tiny scenes
(a box sliding down a ramp at g (sin θ − μ cos θ), sticking when tan θ < μ, stopping at a wall,
resting on a table), a gradient through the ramp's angle, and the refusals. The fast catchers of
the scenery mutations in ``tests/mutations.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import shapes, worlds
from jaxcontact.types import Flags, Ground, Params, State
from jaxcontact.laws import CoulombLCP
from jaxcontact.validation import FIXED_MOVING
from jaxcontact.worlds import scenes

MODEL = worlds.model()
H, G = MODEL.dt, MODEL.gravity
STEPS = 150


def _along(traj, angle):
    down, normal = scenes.ramp_axes(angle)
    rel = np.asarray(traj.pos[:, 1] - traj.pos[:, 0], float)
    return np.asarray(traj.vel[:, 1], float) @ down, rel @ normal


def _f32(tree):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating)
                                  else x, tree)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_box_slides_down_a_fixed_ramp_at_g_sin_minus_mu_cos_and_sticks_below_the_friction_angle(dtype):
    """θ = 0.4 rad, μ = 0.2: v = g (sin θ − μ cos θ) t down the slope (1 %), the box on the surface
    (its normal offset unchanged to 10 µm); the ramp's state bitwise as given, no flags. θ = 0.3,
    μ = 0.4 (tan θ = 0.31 < μ): it stays put (below 1 mm/s). Same scene, one program per dtype.
    In float64 the μ is the ramp's own mixed with the box's (``body.friction``: √(0.1 · 0.4) = 0.2,
    √(0.4 · 0.4) = 0.4, the law's μ 0.9 unused); in float32 the law's."""
    cast = _f32 if dtype == "float32" else (lambda t: t)
    for angle, mu, own in ((0.4, 0.2, (0.1, 0.4)), (0.3, 0.4, (0.4, 0.4))):
        scene, params, s = scenes.ramp(angle, mu)
        if dtype == "float64":
            params = params.replace(body=params.body.replace(friction=jnp.array(own)),
                                    law=CoulombLCP.init_params(mu=0.9, restitution=0.0))
        params, s = cast(params), cast(s)
        traj, info = worlds.rollout(MODEL, scene, params, s, STEPS)
        v, off = _along(traj, angle)
        expect = max(G * (np.sin(angle) - mu * np.cos(angle)), 0.0) * STEPS * H
        if expect:
            np.testing.assert_allclose(v[-1], expect, rtol=1e-2)
        else:
            assert abs(v[-1]) < 1e-3, v[-1]
        assert np.ptp(off) < 1e-5, np.ptp(off)
        for f in ("pos", "quat", "vel", "omega"):  # the ramp: exactly as given, every step
            got, given = np.asarray(getattr(traj, f)[:, 0]), np.asarray(getattr(s, f)[0])
            assert np.array_equal(got, np.broadcast_to(given, got.shape)), f
        assert not np.any(np.asarray(info.flags))


def _wall_world(push):
    """A 0.1 m box on the ground moving at 1 m/s along +x towards a fixed wall (a 0.2 × 1 × 0.5 m
    board standing on the ground, sunk 5 cm into it) 5 cm away, pushed on by ``push`` N along +x;
    ε = 0, μ = 0.3."""
    wall = shapes.box((0.2, 1.0, 0.5), 1.0)
    scene, body = worlds.make_scene([shapes.box(0.1, scenes.MASS), wall], fixed=[1])
    params = Params(body=body, ground=Ground.flat(), law=CoulombLCP.init_params(mu=0.3, restitution=0.0))
    pos = jnp.array([[0.0, 0.0, 0.05], [0.2, 0.0, 0.2]])
    quat = jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (2, 1))
    s = State(pos=pos, quat=quat, vel=jnp.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), omega=jnp.zeros((2, 3)))
    controls = jnp.zeros((STEPS, 2, 6)).at[:, 0, 0].set(push)
    return scene, params, s, controls


def test_a_box_pushed_into_a_fixed_wall_stops_without_penetration_or_bounce():
    """The box reaches the wall (face at x = 0.1 m) after ~0.1 s and stops there: never more than
    40 µm inside it, never moving back (ε = 0: no bounce), at rest against it at the end while
    still pushed by 2 N; the wall kept bitwise and never touching the ground it is sunk into (no
    PENETRATION flag, no ground contact of its own: one with zero mobility would have no solution)."""
    scene, params, s, controls = _wall_world(2.0)
    traj, info = worlds.rollout(MODEL, scene, params, s, STEPS, controls)
    gap = 0.1 - np.asarray(traj.pos[:, 0, 0]) - 0.05
    assert gap.min() > -40e-6, gap.min()
    assert abs(gap[-1]) < 40e-6, gap[-1]
    vx = np.asarray(traj.vel[:, 0, 0])
    assert vx.min() > -1e-4, vx.min()  # no bounce (the solver's tolerance, 1e-5 m/s, is the jitter)
    assert abs(vx[-1]) < 1e-4 and float(np.min(info.pair_phi)) > -40e-6
    assert np.array_equal(np.asarray(traj.pos[:, 1]), np.broadcast_to(np.asarray(s.pos[1]), (STEPS + 1, 3)))
    # the step where the box comes to rest against the wall is a stick/slip event: Flags.DEGENERATE (the
    # derivative's warning, issue 60 part 4) may mark it; no other flag
    assert not np.any(np.asarray(info.flags) & ~int(Flags.DEGENERATE))
    wall = np.asarray(info.impulse[:, 1, :3])
    assert wall[:, 0].max() > 1e-3  # the box pushes the wall along +x


def test_a_box_dropped_on_a_fixed_table_rests_on_it():
    """A 0.1 m box dropped from 10 cm above a fixed table top (a 1 × 1 × 0.04 m board of 50 g at
    0.5 m: a table that moved in the solve, and was put back, would let the box sink h² m g/m_table
    = 0.29 mm) comes to rest on it: its centre at
    the top + 5 cm (to 20 µm), at rest (1 mm/s), the table bitwise as given; the box's vertical
    impulse per step m g h once at rest, and the table's the opposite (no ground contact of its own)."""
    table = shapes.box((1.0, 1.0, 0.04), 0.05)
    scene, body = worlds.make_scene([table, shapes.box(0.1, scenes.MASS)], fixed=(True, False))
    params = Params(body=body, ground=Ground.flat(), law=CoulombLCP.init_params(mu=0.5, restitution=0.0))
    quat = jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (2, 1))
    s = State(pos=jnp.array([[0.0, 0.0, 0.5], [0.1, 0.0, 0.62]]), quat=quat, vel=jnp.zeros((2, 3)),
              omega=jnp.zeros((2, 3)))
    traj, info = worlds.rollout(MODEL, scene, params, s, 300)
    np.testing.assert_allclose(float(traj.pos[-1, 1, 2]), 0.52 + 0.05, atol=2e-5)
    assert float(np.linalg.norm(traj.vel[-1, 1])) < 1e-3
    assert np.array_equal(np.asarray(traj.pos[:, 0]), np.broadcast_to(np.asarray(s.pos[0]), (301, 3)))
    np.testing.assert_allclose(float(info.impulse[-1, 1, 2]), scenes.MASS * G * H, rtol=1e-3)
    np.testing.assert_allclose(float(info.impulse[-1, 0, 2]), -scenes.MASS * G * H, rtol=1e-3)  # the box's only
    assert not np.any(np.asarray(info.flags))


@pytest.mark.slow
def test_the_final_position_is_differentiable_in_the_ramps_angle():
    """d(final x of the box)/d(θ) through 100 steps of the box sliding down the ramp (θ = 0.4,
    μ = 0.2; the box placed on the ramp as a function of θ), against central differences (1 %).
    Analytically x moves along the slope by a t²/2 with a = g (sin θ − μ cos θ): the derivative
    is dominated by da/dθ (a sign check: steeper is faster)."""
    steps, mu = 100, 0.2

    scene, params, start = scenes.ramp(0.4, mu)

    def final_x(angle):
        down = jnp.array([jnp.cos(angle), 0.0, -jnp.sin(angle)])
        normal = jnp.array([jnp.sin(angle), 0.0, jnp.cos(angle)])
        q = jnp.array([jnp.cos(angle / 2), 0.0, jnp.sin(angle / 2), 0.0])
        centre = jnp.array([0.0, 0.0, 1.0])
        pos = jnp.stack([centre, centre + (scenes.RAMP_SIZE[2] + scenes.SIZE) / 2 * normal - 0.8 * down])
        s = start.replace(pos=pos, quat=jnp.stack([q, q]))
        final, _ = worlds.rollout(MODEL, scene, params, s, steps, output="final")
        return final.pos[1, 0]

    f = jax.jit(final_x)
    g = float(jax.grad(final_x)(0.4))
    eps = 1e-4
    fd = (float(f(0.4 + eps)) - float(f(0.4 - eps))) / (2 * eps)
    assert g > 0 or fd < 0  # steeper: slides farther, though the start moves too
    np.testing.assert_allclose(g, fd, rtol=1e-2)


def test_fixed_bodies_refused_by_name():
    """Out-of-range and repeated indices, a mask of the wrong length, a fixed body moving (eagerly
    by name; under jit the step's rule FIXED_MOVING and Flags.INVALID_INPUT), a control on a fixed
    body, a fixed body in a joint; pairs of two fixed bodies never enter the table."""
    box = shapes.box(0.1)
    with pytest.raises(ValueError, match="fixed: body 3 is out of range for a world of 3 bodies"):
        worlds.make_scene([box] * 3, fixed=[3])
    with pytest.raises(ValueError, match="listed twice"):
        worlds.make_scene([box] * 3, fixed=[1, 1])
    with pytest.raises(ValueError, match="one bool per body"):
        worlds.make_scene([box] * 3, fixed=[True, False])
    scene, _ = worlds.make_scene([box] * 3, fixed=[0, 2])
    assert scene.pairs == ((0, 1), (1, 2)) and scene.fixed == (0, 2)
    with pytest.raises(ValueError, match=r"both fixed"):
        worlds.Scene(topologies=scene.topologies, pairs=((0, 2),), fixed=(0, 2))
    with pytest.raises(ValueError, match="fixed .*and in a joint"):
        worlds.Scene(topologies=scene.topologies, fixed=(0,), joints=worlds.Joints(parent=(0,), child=(1,)))

    scene, params, s = scenes.ramp(0.4, 0.2)
    moving = s.replace(vel=s.vel.at[0, 2].set(0.1))
    with pytest.raises(ValueError, match=r"state.vel\[0\]: body 0 is fixed to the world .*must be at rest"):
        worlds.rollout(MODEL, scene, params, moving, 2)
    with pytest.raises(ValueError, match=r"control: body 0 is fixed to the world"):
        worlds.rollout(MODEL, scene, params, s, 2, jnp.zeros((2, 2, 6)).at[:, 0, 2].set(1.0))
    step = jax.jit(lambda p, st: worlds.step_with_info(MODEL, scene, p, st)[1])
    info = step(params, moving)
    assert int(info.flags) & int(Flags.INVALID_INPUT)
    assert int(info.invalid) == 1 << FIXED_MOVING
    assert int(step(params, s).flags) == 0


def test_a_fixed_body_links_no_island_as_the_ground():
    """``contacts.stiff_rows`` with a fixed body: two boxes resting on a fixed table (either side of
    the pair), one hit by an impact; the other box's contact stays soft, as on the ground (a table
    in the island would make every box on it stiff). Without the mask the table links them."""
    from jaxcontact.worlds.contacts import WorldContacts, stiff_rows

    for bodies, table in (([[0, 1], [0, 2]], 0), ([[0, 2], [1, 2]], 2)):
        con = WorldContacts(rows=jnp.zeros((2, 2, 3, 6)), phi=jnp.zeros(2), valid=jnp.ones(2, bool),
                            bodies=jnp.asarray(bodies, jnp.int32), slot_pair=jnp.arange(2), pair_phi=jnp.zeros((2, 1)),
                            pair_kind=jnp.zeros(2, jnp.int32), capacity=jnp.zeros((), bool), num_ground=0)
        impact = jnp.array([True, False])
        fixed = np.arange(3) == table
        assert np.asarray(stiff_rows(con, impact, 3, fixed)).tolist() == [True, False]
        assert np.asarray(stiff_rows(con, impact, 3)).tolist() == [True, True]


def test_a_hinged_box_swings_against_a_fixed_wall_and_stops_there():
    """A jointed world with a fixed body (its rows and columns of the jointed mobility W zeroed): a
    0.1 m box hanging from a hinge to the world (axis y) at its top face's centre, pushed by 2 N
    along +x into a fixed wall (50 g, so a wall that moved in the solve would let the box in by
    h² F/m = 0.16 mm) 1 cm away. It swings against the wall and stays there: never more than 40 µm
    inside it, the wall bitwise as given, the joint holding (anchors within 1e-5 m), no flags."""
    from jaxcontact.worlds import joints as J

    box = shapes.box(0.1, scenes.MASS)
    wall = shapes.box((0.1, 0.5, 0.5), 0.05)
    scene, body = worlds.make_scene([box, wall], joints=J.Joints(parent=(-1,), child=(0,)), fixed=[1])
    jp = J.JointParams(anchor_parent=jnp.array([[0.0, 0.0, 0.5]]), anchor_child=jnp.array([[0.0, 0.0, 0.05]]),
                       axis_parent=jnp.array([[0.0, 1.0, 0.0]]), axis_child=jnp.array([[0.0, 1.0, 0.0]]))
    params = J.JointedParams(body=body, ground=Ground.flat(), law=CoulombLCP.init_params(mu=0.3, restitution=0.0),
                             joints=jp)
    quat = jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (2, 1))
    s = State(pos=jnp.array([[0.0, 0.0, 0.45], [0.11, 0.0, 0.45]]), quat=quat, vel=jnp.zeros((2, 3)),
              omega=jnp.zeros((2, 3)))
    controls = jnp.zeros((STEPS, 2, 6)).at[:, 0, 0].set(2.0)
    traj, info = worlds.rollout(MODEL, scene, params, s, STEPS, controls)
    assert float(np.min(info.pair_phi)) > -40e-6, float(np.min(info.pair_phi))
    assert float(np.max(info.impulse[:, 1, 0])) > 1e-3  # it reached the wall and pushes it
    assert np.array_equal(np.asarray(traj.pos[:, 1]), np.broadcast_to(np.asarray(s.pos[1]), (STEPS + 1, 3)))
    assert float(np.max(info.joint_error)) < 1e-5
    assert not np.any(np.asarray(info.flags) & ~int(Flags.DEGENERATE))  # stopping at the wall: a stick/slip event
