"""Cylinder and ellipsoid parts in bodies of several shapes (``shapes.compound``, ``Body.vertex_shape``;
docs/worlds.md "Bodies of several shapes"): their ground candidates are the part's own (a cylinder part's six
rim points, an ellipsoid part's support point, chosen against the ground's normal in the part's frame), their
body–body contacts the part's through ``collision.convex_pair`` at the part's pose (``contacts.part_state``).
A cart of two cylinder wheels on a capsule axle rolls at the speed its analytic inertia gives; a mallet (a
cylinder head on a capsule handle) stands on its head on a fixed box and lies on the ground; a compound with
an ellipsoid part rests at its semi-axis height. The fast catchers of the part mutations."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds

QY = (np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0)  # a part's z axis along the body's x
LAW = jc.CoulombLCP()


def _state(pos, quat, vel=None):
    n = len(pos)
    return jc.State(pos=jnp.asarray(pos, jnp.float64), quat=jnp.asarray(quat, jnp.float64),
                    vel=jnp.asarray(np.zeros((n, 3)) if vel is None else vel, jnp.float64), omega=jnp.zeros((n, 3)))


def _params(body, mu=0.5):
    return jc.Params(body=body, ground=jc.Ground.flat(3), law=LAW.init_params(mu=mu))


def test_a_cart_of_cylinder_wheels_rolls_at_the_speed_of_its_analytic_inertia():
    """Two cylinder wheels (ρ 5 cm) on a capsule axle along x, launched sliding at 1 m/s along y, roll at
    v0 / (1 + I_xx / (m ρ²)) (I_xx the parts' sum: m ρ²/2 per wheel and the capsule's own) to 1e-4,
    their axle at height ρ (1 µm): the wheels touch by their rim points, not a polygon's."""
    wheel, axle = shapes.cylinder(0.05, 0.01, 1.0), shapes.capsule(0.01, 0.15, 0.5)
    cart = shapes.compound([wheel, wheel, axle], [((-0.15, 0, 0), QY), ((0.15, 0, 0), QY), ((0, 0, 0), QY)])
    ixx = 2 * 0.5 * 1.0 * 0.05 ** 2 + float(axle.inertia[2, 2])
    assert float(cart.inertia[0, 0]) == pytest.approx(ixx, rel=1e-12)
    scene, body = worlds.make_scene([cart], pairs=[])
    traj, infos = worlds.rollout(jc.Model(law=LAW), scene, _params(body), _state([[0, 0, 0.05]], [[1.0, 0, 0, 0]],
                                                                                [[0, 1.0, 0]]), 300)
    want = 1.0 / (1 + ixx / (2.5 * 0.05 ** 2))
    assert float(traj.vel[-1, 0, 1]) == pytest.approx(want, rel=1e-4)
    assert float(traj.omega[-1, 0, 0]) * -0.05 == pytest.approx(want, rel=1e-4)
    assert np.max(np.abs(np.asarray(traj.pos[:, 0, 2]) - 0.05)) < 1e-6
    assert int(np.max(np.asarray(infos.flags))) == 0


def test_a_mallet_stands_on_its_head_on_a_fixed_box_and_lies_on_the_ground():
    """A mallet (a cylinder head ρ 4 cm, l 3 cm, on a capsule handle along its axis) stands on its head's cap on
    a fixed box (the cylinder part against a hull: ``convex_pair`` at the part's pose) and on the ground (its
    cap on the rim's triangle of three points), and a third one lies
    on the ground on its head's side (its centre of mass over the head's line of support; the handle clear
    of the ground): both stay put (< 0.1 mm over 1 s), no flags."""
    head, handle = shapes.cylinder(0.04, 0.03, 1.0), shapes.capsule(0.01, 0.1, 0.2)
    mallet = shapes.compound([head, handle], [(0, 0, 0), (0, 0, 0.03 + 0.1 + 0.01)])
    c = np.asarray(mallet.vertices[0])  # the head's centre in the body frame
    table = shapes.box((0.3, 0.3, 0.1), 10.0)
    qx = (np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0)  # lying: its axis along y
    lying_z = 0.04  # lying: the head's centre at its radius (the handle's end 3 cm clear of the ground)
    scene, body = worlds.make_scene([table, mallet, mallet, mallet], pairs=[(0, 1)], fixed=[0])
    pos = [[0, 0, 0.05], [0, 0, 0.1 + 0.03 - c[2]], [0.6, 0, lying_z], [-0.6, 0, 0.03 - c[2]]]
    pos[2][1] = -float(np.asarray(jc.rotations.quat_to_mat(jnp.asarray(qx)) @ c)[1])
    start = _state(pos, [[1.0, 0, 0, 0], [1.0, 0, 0, 0], qx, [1.0, 0, 0, 0]])
    traj, infos = worlds.rollout(jc.Model(law=LAW), scene, _params(body), start, 500)
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 1]), pos[1], atol=1e-4)
    assert abs(float(traj.pos[-1, 2, 2]) - pos[2][2]) < 1e-4
    np.testing.assert_allclose(np.asarray(traj.pos[-1, 3]), pos[3], atol=1e-4)
    np.testing.assert_allclose(np.asarray(traj.quat[-1, 3]), [1.0, 0, 0, 0], atol=1e-3)
    assert int(np.max(np.asarray(infos.flags))) == 0


def test_an_ellipsoid_part_rests_at_its_semi_axis_height():
    """A compound of an ellipsoid (semi-axes 5, 4, 3 cm) and a small sphere above it, on the ground: it stays
    with the ellipsoid's centre at c = 3 cm (10 µm) over 1 s (the part's support point, offset from the body's
    centre of mass)."""
    egg, ball = shapes.ellipsoid((0.05, 0.04, 0.03), 1.0), shapes.sphere(0.01, 0.1)
    toy = shapes.compound([egg, ball], [(0, 0, 0), (0, 0, 0.04)])
    c = np.asarray(toy.vertices[0])
    scene, body = worlds.make_scene([toy], pairs=[])
    start = _state([[0, 0, 0.03 - c[2]]], [[1.0, 0, 0, 0]])
    traj, infos = worlds.rollout(jc.Model(law=LAW), scene, _params(body), start, 500)
    assert abs(float(traj.pos[-1, 0, 2]) + c[2] - 0.03) < 1e-5
    assert np.max(np.abs(np.asarray(traj.pos[-1, 0, :2]))) < 1e-5


def test_mjcf_bodies_with_cylinder_and_ellipsoid_geoms_load_as_compounds_and_write_back():
    """A free body of a cylinder, a capsule and a tilted ellipsoid loads natively (no hull stand-in) with
    MuJoCo's compiled mass and inertia (1e-12) and the parts' sizes and orientations; ``to_mjcf`` writes them
    back as the same geoms (``from_mjcf`` of it: masses, inertias and ``vertex_shape`` to 1e-12)."""
    mujoco = pytest.importorskip("mujoco")
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
    <body name="mallet" pos="0 0 0.2"><freejoint/>
     <geom type="cylinder" size="0.04 0.03"/><geom type="capsule" size="0.01 0.1" pos="0 0 0.14"/>
     <geom type="ellipsoid" size="0.02 0.03 0.01" pos="0 0 0.26" euler="30 0 0"/>
    </body></worldbody></mujoco>"""
    scene, params, state, model = worlds.from_mjcf(xml)
    assert [p[0] for p in scene.parts[0]] == ["cylinder", "capsule", "ellipsoid"]
    mj = mujoco.MjModel.from_xml_string(xml)
    assert float(params.body.mass[0]) == pytest.approx(float(mj.body_mass[1]), rel=1e-12)
    np.testing.assert_allclose(np.linalg.eigvalsh(np.asarray(params.body.inertia[0])), np.sort(mj.body_inertia[1]),
                               rtol=1e-9)
    shape = np.asarray(params.body.vertex_shape[0])
    np.testing.assert_allclose(shape[0, 1:4], [0.04, 0.03, 0.0])
    np.testing.assert_allclose(shape[8, 1:8], [0.02, 0.03, 0.01, np.cos(np.pi / 12), np.sin(np.pi / 12), 0, 0], atol=1e-12)
    s2, p2, _, _ = worlds.from_mjcf(worlds.to_mjcf(scene, params, state, model), keyframe="initial")
    for k in ("mass", "inertia", "vertex_shape"):
        np.testing.assert_allclose(np.asarray(getattr(p2.body, k)), np.asarray(getattr(params.body, k)), atol=1e-12)


def test_a_compound_with_a_cylinder_part_is_drawn_on_its_surfaces():
    """``worlds.animate`` draws the mallet as the hull of its parts' surfaces: the head's rim (ρ 4 cm) and
    its lower cap, the handle's top (1e-9 m)."""
    from jaxcontact.worlds import animate

    head, handle = shapes.cylinder(0.04, 0.03, 1.0), shapes.capsule(0.01, 0.1, 0.2)
    mallet = shapes.compound([head, handle], [(0, 0, 0), (0, 0, 0.14)])
    scene, body = worlds.make_scene([mallet, shapes.box()], pairs=[])
    drawn = animate.drawn_body(scene, body)
    v = np.asarray(drawn.vertices[0])[np.asarray(drawn.vertex_mask[0]) > 0]
    cz = float(body.vertices[0, 0, 2])
    np.testing.assert_allclose(v.min(0), [-0.04, -0.04, cz - 0.03], atol=1e-9)
    np.testing.assert_allclose(v.max(0), [0.04, 0.04, cz + 0.14 + 0.1 + 0.01], atol=1e-9)
