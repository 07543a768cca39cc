"""Tilted planes as fixed scenery (``Scene.planes``, ``Params.planes``, ``worlds.planes``; docs/worlds.md
"Planes at any tilt"): every body touches a plane as it touches the ground, in the plane's frame, with the
plane's own friction. Hand calculations: a box slides down a ramp at g (sin θ − μ cos θ) and sticks when
tan θ < μ, a sphere rolls down it at (5/7) g sin θ, a box pushed into a vertical wall stops at it, a ball
bouncing in the corner of a tilted wall and the ground neither leaves nor gains energy; a gradient through
the ramp's angle against central differences; the refusals. The fast catchers of the plane mutations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import shapes, worlds
from jaxcontact.types import Ground, Params, State
from jaxcontact.worlds import planes as wp
from jaxcontact.worlds import scenes

MODEL = worlds.model()
H, G = MODEL.dt, MODEL.gravity
SIDE = 0.1


def _world(body, plane, mu, ground=False, restitution=0.0, dtype=jnp.float64, **kw):
    scene, stacked = worlds.make_scene(body, ground=ground, planes=plane.count, **kw)
    params = Params(body=stacked, ground=Ground.flat(), law=scenes.DEFAULT_LAW.init_params(mu=mu, restitution=restitution),
                    planes=plane)
    return scene, jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x,
                                         params)


def _state(pos, quat, vel=None, dtype=jnp.float64):
    n = len(pos)
    vel = np.zeros((n, 3)) if vel is None else vel
    return State(pos=jnp.asarray(pos, dtype), quat=jnp.asarray(quat, dtype), vel=jnp.asarray(vel, dtype),
                 omega=jnp.zeros((n, 3), dtype))


def _on_ramp(angle, dtype):
    """A 10 cm box face down on the plane through the origin tilted by ``angle`` about y."""
    _, normal = scenes.ramp_axes(angle)
    q = [np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0]
    return _state([SIDE / 2 * normal], [q], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_box_slides_down_a_tilted_plane_at_g_sin_minus_mu_cos_and_sticks_below_the_friction_angle(dtype):
    """θ = 0.4, the plane's μ 0.2: the box's speed down the slope after 0.3 s is g (sin θ − μ cos θ) t
    (1 %), its height over the plane unchanged (10 µm); θ = 0.3, μ 0.4 (tan θ < μ): it stays (1 mm/s).
    The ground's μ (the law's, 0.9) must not be the plane's. Same shapes: one program per dtype."""
    dt = jnp.dtype(dtype)
    steps = 150
    for angle, mu, sticks in ((0.4, 0.2, False), (0.3, 0.4, True)):
        scene, params = _world([shapes.box((SIDE,) * 3, 1.0)], wp.tilted(angle, friction=mu), 0.9, dtype=dt)
        traj, infos = worlds.rollout(MODEL, scene, params, _on_ramp(angle, dt), steps)
        down, normal = scenes.ramp_axes(angle)
        v = float(np.asarray(traj.vel[-1, 0], float) @ down)
        lift = np.asarray(traj.pos[:, 0], float) @ normal - SIDE / 2
        if sticks:
            assert abs(v) < 1e-3, v
        else:
            want = abs(G) * (np.sin(angle) - mu * np.cos(angle)) * steps * H
            assert v == pytest.approx(want, rel=1e-2), (v, want)
        assert np.max(np.abs(lift)) < 1e-5, np.max(np.abs(lift))
        assert int(np.max(np.asarray(infos.flags))) == 0


def test_a_plane_mixes_its_friction_with_a_bodys_own_as_the_ground_does():
    """Per-body friction (``body.friction`` 0.4) on a plane of μ 0.1: the contact's μ is √(0.4 · 0.1) = 0.2
    (``materials.contact_friction``), so the box slides at g (sin θ − 0.2 cos θ) (1 %), not at the plane's
    or the body's μ (the law's 0.9 is the ground's, unused)."""
    angle, steps = 0.4, 150
    box = shapes.box((SIDE,) * 3, 1.0).replace(friction=jnp.asarray(0.4))
    scene, params = _world([box], wp.tilted(angle, friction=0.1), 0.9)
    traj, _ = worlds.rollout(MODEL, scene, params, _on_ramp(angle, jnp.float64), steps)
    down, _ = scenes.ramp_axes(angle)
    want = abs(G) * (np.sin(angle) - 0.2 * np.cos(angle)) * steps * H
    assert float(np.asarray(traj.vel[-1, 0]) @ down) == pytest.approx(want, rel=1e-2)


def test_a_sphere_rolls_down_a_tilted_plane_at_five_sevenths_g_sin():
    """A solid sphere (I = 2/5 m r²) rolls without slipping (μ 0.5 > (2/7) tan θ) at (5/7) g sin θ: its
    speed after 0.3 s to 1 %, its spin rolling (ω r = v to 1 %), and it stays on the plane (10 µm)."""
    angle, r, steps = 0.3, 0.05, 150
    down, normal = scenes.ramp_axes(angle)
    scene, params = _world([shapes.sphere(r, 1.0)], wp.tilted(angle, friction=0.5), 0.5)
    traj, _ = worlds.rollout(MODEL, scene, params, _state([r * normal], [[1.0, 0, 0, 0]]), steps)
    v = float(np.asarray(traj.vel[-1, 0]) @ down)
    want = 5 / 7 * abs(G) * np.sin(angle) * steps * H
    assert v == pytest.approx(want, rel=1e-2), (v, want)
    assert float(jnp.linalg.norm(traj.omega[-1, 0])) * r == pytest.approx(v, rel=1e-2)
    assert np.max(np.abs(np.asarray(traj.pos[:, 0]) @ normal - r)) < 1e-5


def test_a_box_pushed_into_a_vertical_wall_plane_stops_at_it_and_rests():
    """A box on the ground sliding at 0.5 m/s from 1 cm off a wall plane (solid for x >= 0.2, normal −x)
    stops against it (its face within 40 µm of the wall, never through it by more) and rests there: no
    bounce (restitution 0), at rest after 0.4 s."""
    wall = wp.make_planes([-1.0, 0.0, 0.0], [[0.2, 0.0, 0.0]], friction=0.3)
    scene, params = _world([shapes.box((SIDE,) * 3, 1.0)], wall, 0.3, ground=True)
    start = _state([[0.14, 0.0, SIDE / 2]], [[1.0, 0, 0, 0]], [[0.5, 0.0, 0.0]])
    traj, infos = worlds.rollout(MODEL, scene, params, start, 200)
    face = np.asarray(traj.pos[:, 0, 0]) + SIDE / 2
    assert np.max(face) < 0.2 + 4e-5, np.max(face) - 0.2
    assert face[-1] == pytest.approx(0.2, abs=4e-5)
    assert np.max(np.abs(np.asarray(traj.vel[-50:, 0]))) < 1e-3
    assert abs(float(traj.pos[-1, 0, 2]) - SIDE / 2) < 2e-5
    assert int(np.max(np.asarray(infos.flags))) == 0


def test_a_ball_in_the_corner_of_a_tilted_wall_and_the_ground_neither_leaves_nor_gains_energy():
    """A ball (restitution 1, frictionless) thrown into the corner of the ground and a wall leaning at
    60° (solid beyond it) for 1 s, beside a resting box (a body–body pair in the table): it bounces off
    both, stays on the free side of each (1e-4 m), and its energy never grows beyond the integrator's
    m g h |Δv_z| at a bounce (the box stays put)."""
    r = 0.05
    wall = wp.make_planes([-np.cos(np.pi / 6), 0.0, -np.sin(np.pi / 6)], [[0.3, 0.0, 0.0]], friction=0.0)
    scene, params = _world([shapes.sphere(r, 1.0), shapes.box((SIDE,) * 3, 1.0)], wall, 0.0, ground=True,
                           restitution=1.0)
    start = _state([[0.0, 0.0, 0.2], [-0.5, 0.0, SIDE / 2]], [[1.0, 0, 0, 0]] * 2, [[1.5, 0.3, 0.0], [0.0, 0.0, 0.0]])
    traj, infos = worlds.rollout(MODEL, scene, params, start, 500)
    x = np.asarray(traj.pos[:, 0])
    wall_gap = x @ np.asarray(wall.normal[0]) - float(wall.offset[0]) - r
    assert np.min(wall_gap) > -1e-4 and np.min(x[:, 2] - r) > -1e-4
    assert np.max(x[:, 0]) > 0.15  # it reached the wall
    assert np.min(np.asarray(traj.vel[:, 0, 0])) < -0.5  # and came back
    energy = 0.5 * np.sum(np.asarray(traj.vel[:, 0]) ** 2, -1) + 0.4 * 0.5 * r ** 2 * np.sum(
        np.asarray(traj.omega[:, 0]) ** 2, -1) + abs(G) * x[:, 2]
    vz = np.abs(np.asarray(traj.vel[:, 0, 2]))
    # semi-implicit Euler moves the ball by h·v after a bounce's impulse: its energy then reads up to
    # m g h |Δv_z| high (the wall's normal has a vertical part too); between bounces it is exact
    assert np.all(np.diff(energy) <= abs(G) * H * (vz[1:] + vz[:-1]) + 1e-12), np.max(np.diff(energy))
    assert energy[0] * 0.97 < energy[-1] < energy[0] + abs(G) * H * np.max(vz)
    assert np.max(np.abs(np.asarray(traj.pos[:, 1]) - np.asarray(traj.pos[0, 1]))) < 1e-5


@pytest.mark.slow
def test_the_final_position_of_a_box_sliding_down_a_plane_has_the_gradient_of_central_differences():
    """d(x after 0.2 s)/dθ of a box sliding on a tilted plane (θ = 0.5, μ 0.2; the plane traced in
    ``Params.planes``) against central differences (1 %)."""
    steps = 100
    scene, params = _world([shapes.box((SIDE,) * 3, 1.0)], wp.tilted(0.5, friction=0.2), 0.2)
    start = _on_ramp(0.5, jnp.float64)

    @jax.jit
    def final_x(angle):
        p = params.replace(planes=wp.tilted(angle, friction=0.2))
        traj, _ = worlds.rollout(MODEL, scene, p, start, steps)
        return traj.pos[-1, 0, 0]

    grad = float(jax.grad(final_x)(jnp.float64(0.5)))
    eps = 1e-4
    fd = (float(final_x(0.5 + eps)) - float(final_x(0.5 - eps))) / (2 * eps)
    assert np.isfinite(grad) and abs(fd) > 1e-3
    assert grad == pytest.approx(fd, rel=1e-2), (grad, fd)


def test_planes_that_disagree_with_the_scene_are_refused_by_name():
    """No ``Params.planes`` for a scene of planes, another count, a bad count, a zero normal, a negative
    μ, an unknown axis: one ``ValueError`` each, naming the argument, eagerly and under ``jit``."""
    box = shapes.box((SIDE,) * 3, 1.0)
    scene, params = _world([box], wp.tilted(0.3, friction=0.3), 0.3)
    start = _on_ramp(0.3, jnp.float64)
    with pytest.raises(ValueError, match="params.planes is None"):
        worlds.rollout(MODEL, scene, params.replace(planes=None), start, 2)
    two = wp.stack_planes([wp.tilted(0.3), wp.tilted(-0.3)])
    with pytest.raises(ValueError, match="Scene.planes"):
        worlds.rollout(MODEL, scene, params.replace(planes=two), start, 2)
    with pytest.raises(ValueError, match="Scene.planes"):
        jax.jit(lambda p: worlds.step(MODEL, scene, p, start)[0].pos)(params.replace(planes=two))
    with pytest.raises(ValueError, match="planes: the number of tilted planes"):
        worlds.make_scene([box], planes=-1)
    with pytest.raises(ValueError, match="zero length"):
        wp.make_planes([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="friction"):
        wp.make_planes([0.0, 0.0, 1.0], friction=-0.1)
    with pytest.raises(ValueError, match="axis must be"):
        wp.tilted(0.3, axis="z")
