"""Bodies of several shapes (issue 62 items 2 and 8): ``shapes.compound`` — a table of a top and four
legs, a dumbbell, a hammer — in a single body's rollout and in worlds.

Mass properties against an independent quadrature and the single box of two flush boxes; ground
contacts (a table keeps its four feet); rolling, resting and free flight against closed forms and
invariants; gradients against central differences; refusals by name."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import geometry, shapes, worlds
from jaxcontact.rotations import quat_to_mat
from jaxcontact.worlds import contacts, mjcf

G, H = 9.81, 0.002
QZ90 = (np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4))  # 90° about z
QY90 = (np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0)  # 90° about y: body z along world x


def _params(body, mu=0.5, tol=1e-8, **solver):
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=tol, max_iter=300, **solver))
    model = jc.Model(law=law, dt=H, gravity=G)
    return model, jc.Params(body=body, ground=jc.Ground.flat(3), law=law.init_params(mu=mu))


def table():
    """A table: a 0.6 × 0.4 × 0.04 m top (3 kg) on four 0.04 × 0.04 × 0.4 m legs (0.5 kg each)."""
    top, leg = shapes.box((0.6, 0.4, 0.04), mass=3.0), shapes.box((0.04, 0.04, 0.4), mass=0.5)
    poses = [(0.0, 0.0, 0.42)] + [(sx * 0.27, sy * 0.17, 0.2) for sx in (-1, 1) for sy in (-1, 1)]
    return shapes.compound([top] + [leg] * 4, poses)


def dumbbell():
    """Two 0.05 m balls (1 kg each) 0.3 m apart on a capsule bar along body x (r 0.015 m, 0.3 kg)."""
    ball, bar = shapes.sphere(0.05, 1.0), shapes.capsule(0.015, 0.1, 0.3)
    return shapes.compound([ball, ball, bar], [(-0.15, 0, 0), (0.15, 0, 0), ((0, 0, 0), QY90)])


def hammer():
    """A capsule handle (r 0.015 m, half-length 0.12 m, 0.3 kg) along z and a 0.1 × 0.04 × 0.04 m
    head (0.6 kg) across its top end, turned 30° about z."""
    head_q = (np.cos(np.pi / 12), 0.0, 0.0, np.sin(np.pi / 12))
    return shapes.compound([shapes.capsule(0.015, 0.12, 0.3), shapes.box((0.1, 0.04, 0.04), mass=0.6)],
                           [(0.0, 0.0, 0.0), ((0.0, 0.0, 0.15), head_q)])


# --- mass properties ----------------------------------------------------------------------------------

def test_two_flush_boxes_are_the_box_of_their_union():
    """Two boxes stacked flush (one turned 90° about z, a square section) have the mass, centre
    of mass and inertia of the single box of their union (exact, the parallel-axis theorem)."""
    lower, upper = shapes.box((0.1, 0.1, 0.06), mass=0.6), shapes.box((0.1, 0.1, 0.04), mass=0.4)
    c = shapes.compound([lower, upper], [(0.3, -0.2, 0.03), ((0.3, -0.2, 0.08), QZ90)])
    one = shapes.box((0.1, 0.1, 0.1), mass=1.0)
    assert float(c.mass) == pytest.approx(1.0)
    np.testing.assert_allclose(np.asarray(c.inertia), np.asarray(one.inertia), rtol=1e-12, atol=1e-16)
    # the union's eight corners are among the compound's vertices (about the combined centre of mass)
    v = np.asarray(c.vertices)
    for corner in np.asarray(one.vertices):
        assert np.min(np.linalg.norm(v - corner, axis=1)) < 1e-14
    assert c.parts == (("hull", 0, 8), ("hull", 8, 16)) and shapes.shape_kind(c) == "compound"


def _grid_moments(inside, lo, hi, n=48):
    """(volume, first moment (3,), second moment (3, 3)) of the solid ``inside`` (points → bool) by
    the midpoint rule on an n³ grid of the box [lo, hi]."""
    axes = [lo[i] + (np.arange(n) + 0.5) * (hi[i] - lo[i]) / n for i in range(3)]
    p = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    p = p[inside(p)]
    dv = np.prod((np.asarray(hi) - np.asarray(lo)) / n)
    return len(p) * dv, p.sum(0) * dv, p.T @ p * dv


def test_hammer_mass_properties_against_quadrature():
    """The hammer's centre of mass and inertia against a grid quadrature of each part's solid in
    the poses' frame (each part of uniform density, as MuJoCo sums geoms: no shared volume)."""
    body = hammer()
    th = np.pi / 6
    R = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])

    def handle(p):
        z = np.clip(p[:, 2], -0.12, 0.12)
        return np.linalg.norm(p - np.c_[0 * z, 0 * z, z], axis=1) <= 0.015

    def head(p):
        q = (p - [0, 0, 0.15]) @ R  # into the head's frame
        return np.all(np.abs(q) <= [0.05, 0.02, 0.02], axis=1)

    total_m, first, second = 0.0, np.zeros(3), np.zeros((3, 3))
    for inside, lo, hi, m in [(handle, (-0.015, -0.015, -0.135), (0.015, 0.015, 0.135), 0.3),
                              (head, (-0.06, -0.06, 0.13), (0.06, 0.06, 0.17), 0.6)]:
        vol, f, s = _grid_moments(inside, lo, hi, n=64)
        total_m, first, second = total_m + m, first + m * f / vol, second + m * s / vol
    com = first / total_m
    cov = second - total_m * np.outer(com, com)
    ref = np.trace(cov) * np.eye(3) - cov
    assert float(body.mass) == pytest.approx(0.9)
    # the body frame sits at the combined centre of mass: the vertices are the parts' less it
    np.testing.assert_allclose(np.asarray(body.vertices)[0], np.array([0, 0, -0.12]) - com, atol=2e-4)
    np.testing.assert_allclose(np.asarray(body.inertia), ref, rtol=0, atol=2e-3 * np.abs(ref).max())


def test_given_mass_and_inertia_are_kept():
    """``mass`` alone scales the combination; ``mass``, ``inertia`` and ``com`` (MJCF's
    <inertial>) are taken as given, the vertices about ``com``."""
    ball = shapes.sphere(0.05, 1.0)
    two = shapes.compound([ball, ball], [(-0.1, 0, 0), (0.1, 0, 0)])
    heavy = shapes.compound([ball, ball], [(-0.1, 0, 0), (0.1, 0, 0)], mass=4.0)
    np.testing.assert_allclose(np.asarray(heavy.inertia), 2.0 * np.asarray(two.inertia), rtol=1e-14)
    inertia = np.diag([0.01, 0.02, 0.03])
    given = shapes.compound([ball, ball], [(-0.1, 0, 0), (0.1, 0, 0)], mass=3.0, inertia=inertia, com=(0.05, 0, 0))
    assert float(given.mass) == 3.0
    np.testing.assert_array_equal(np.asarray(given.inertia), inertia)
    np.testing.assert_allclose(np.asarray(given.vertices)[:, 0], [-0.15, 0.05])


def test_refusals_by_name():
    ball = shapes.sphere(0.05, 1.0)
    cases = [
        (lambda: shapes.compound([ball, shapes.box().replace(radius=jnp.asarray(0.01))], [(0, 0, 0), (0, 0, 0.2)]),
         "is a sphere-swept hull"),
        (lambda: shapes.compound([dumbbell(), ball], [(0, 0, 0), (0, 0, 0.2)]), "itself a compound"),
        (lambda: shapes.compound([ball, ball], [(0, 0, 0)]), "2 parts but 1 poses"),
        (lambda: shapes.compound([], []), "parts is empty"),
        (lambda: shapes.compound([ball], [((0, 0, 0), (1, 1, 0, 0))]), "unit norm"),
        (lambda: shapes.compound([ball], [(0, 0)]), r"poses\[0\]"),
        (lambda: shapes.compound([ball], [(0, 0, 0)], inertia=np.eye(3)), "without mass"),
        (lambda: shapes.compound([ball], [(0, 0, 0)], mass=1.0, inertia=-np.eye(3)), "positive definite"),
        (lambda: shapes.compound([shapes.box2d()], [(0, 0, 0)]), "one 3D Body"),
    ]
    for make, match in cases:
        with pytest.raises(ValueError, match=match):
            make()


# --- a single body against the ground -------------------------------------------------------------------

def test_table_keeps_its_four_feet_and_stands():
    """A table put on its legs keeps a contact under each of its four legs (the face reduction of
    its 16 touching vertices) and stands: < 0.1 mm and 1e-4 rad over 1 s."""
    body = table()
    model, params = _params(body)
    z0 = -float(np.min(np.asarray(body.vertices)[:, 2]))
    s0 = jc.make_state(pos=(0.0, 0.0, z0))
    con = geometry.contact_candidates(body, params.ground, s0, model.max_contacts, model.patch_tol)
    legs = {next(k for k, (_, a, b) in enumerate(body.parts) if a <= i < b) for i in np.asarray(con.index)[:4]}
    assert legs == {1, 2, 3, 4}
    final = jc.rollout(model, params, s0, 500, output="final")
    assert np.max(np.abs(np.asarray(final.pos - s0.pos))) < 1e-4
    assert np.max(np.abs(np.asarray(final.quat - s0.quat))) < 1e-4


def test_dumbbell_rolls_straight_and_rests():
    """A dumbbell on its two balls (axis along world y) launched sliding at v0 along x ends
    rolling at v0 / (1 + I_axis / (m r²)) (the balls' radius), straight (no drift along y, no yaw),
    at the balls' height; placed at rest it stays (< 0.1 mm over 1 s)."""
    body, r, v0 = dumbbell(), 0.05, 1.0
    model, params = _params(body, mu=0.4)
    tr = jc.rollout(model, params, jc.make_state(pos=(0, 0, r), quat=QZ90, vel=(v0, 0, 0)), 400)
    i_axis, m = float(body.inertia[0, 0]), float(body.mass)
    np.testing.assert_allclose(np.asarray(tr.vel[-50:, 0]), v0 / (1 + i_axis / (m * r * r)), rtol=1e-3)
    assert np.max(np.abs(np.asarray(tr.pos[:, 1]))) < 1e-6
    np.testing.assert_allclose(np.asarray(tr.pos[:, 2]), r, atol=1e-6)
    np.testing.assert_allclose(np.asarray(tr.omega[:, 1:]), 0.0, atol=1e-6)
    rest = jc.rollout(model, params, jc.make_state(pos=(0, 0, r), quat=QZ90), 500, output="final")
    assert np.max(np.abs(np.asarray(rest.pos) - [0, 0, r])) < 1e-4


def test_hammer_in_flight_keeps_energy_and_momentum():
    """A hammer thrown spinning (about all three axes) high above the ground: its energy and its
    angular momentum about its centre of mass (world frame, R I ω) are kept over 0.5 s (the step's
    implicit gyroscopic term damps a tumbling body slightly: measured 1.3 % of |L| and 0.1 % of the
    energy, never gained), its centre of mass follows the step's parabola exactly."""
    body = hammer()
    model, params = _params(body)
    v0, w0 = np.array([1.0, 0.5, 3.0]), np.array([8.0, -3.0, 5.0])
    tr = jc.rollout(model, params, jc.make_state(pos=(0, 0, 5.0), vel=v0, omega=w0), 250)
    inertia = np.asarray(body.inertia)
    L = np.stack([np.asarray(quat_to_mat(q)) @ inertia @ np.asarray(w) for q, w in zip(tr.quat, tr.omega)])
    L0 = inertia @ w0
    assert np.max(np.linalg.norm(L - L0, axis=1)) < 2e-2 * np.linalg.norm(L0)
    e = np.asarray(jax.vmap(lambda s: jc.energy(model, params, s))(tr))
    assert np.max(np.abs(e - e[0])) < 2e-3 * abs(e[0])
    assert np.max(e - e[0]) <= 1e-12 * abs(e[0])  # never gains
    k = np.arange(1, 251)  # semi-implicit Euler's parabola: z_k = z_0 + k h v_z - g h² k (k + 1) / 2
    ref = np.c_[k * H * v0[0], k * H * v0[1], 5.0 + k * H * v0[2] - G * H * H * k * (k + 1) / 2]
    np.testing.assert_allclose(np.asarray(tr.pos[1:]), ref, rtol=0, atol=1e-9)


@pytest.mark.parametrize("dtype", [jnp.float64, pytest.param(jnp.float32, marks=pytest.mark.slow)])
def test_two_flush_boxes_move_as_one_box(dtype):
    """Two boxes stacked flush as one compound and the single box of their union, thrown tilted
    and spinning to land on an edge and slide: the same trajectory (the seam's vertices never touch;
    to 1e-9 m in float64, 1e-4 m in float32)."""
    lower, upper = shapes.box((0.1, 0.1, 0.06), mass=0.6), shapes.box((0.1, 0.1, 0.04), mass=0.4)
    c = shapes.compound([lower, upper], [(0, 0, 0.03), (0, 0, 0.08)])
    one = shapes.box((0.1, 0.1, 0.1), mass=1.0)
    s0 = jc.make_state(pos=(0, 0, 0.12), quat=(np.cos(0.15), np.sin(0.15), 0, 0), vel=(0.8, 0, -0.5),
                       omega=(0, 0, 1.0))
    cast = lambda t: jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(x.dtype, jnp.floating)
                                            else x, t)
    finals = []
    for body in (c, one):
        # the polish in every solve: landing flat and spinning, the split of the face's normal force is
        # fixed only by the regularisation and the sweeps stop short along it, differently for 16 and
        # 8 vertices (without it, float64: 8.1e-5 m apart from step 55); polished, both land on the fixed point
        model, params = _params(body, tol=1e-10 if dtype == jnp.float64 else 1e-6, forward_active_set=1)
        finals.append(jc.rollout(model, cast(params), cast(s0), 150))
    tol = 1e-9 if dtype == jnp.float64 else 1e-4
    np.testing.assert_allclose(np.asarray(finals[0].pos, float), np.asarray(finals[1].pos, float), atol=tol)
    # float32 under Coulomb's disc: landing flat while spinning (step 55), the sweeps stop at their
    # 64-epsilon floor (1e-5 m/s) with ω off by up to 0.1 rad/s in that step and 8e-3 rad/s a step
    # while the face slides and spins (the square: 1e-3); measured against the float64 box, the box's
    # quaternion ends 5.1e-4 off and the compound's 1.6e-3: they agree to float32's accuracy there
    np.testing.assert_allclose(np.asarray(finals[0].quat, float), np.asarray(finals[1].quat, float),
                               atol=10 * tol if dtype == jnp.float64 else 4e-3)
    assert float(finals[1].pos[-1, 2]) < 0.06 and float(finals[1].pos[-1, 0]) > 0.05  # it landed and slid


def test_gradient_through_a_compound_landing():
    """d(final state)/d(initial velocity and spin) of a dumbbell landing tilted on one ball and
    sliding, against central differences."""
    body = dumbbell()
    model, params = _params(body, mu=0.3, tol=1e-12)
    tilt = (np.cos(0.05), 0.0, np.sin(0.05), 0.0)
    s0 = jc.make_state(pos=(0, 0, 0.05 + 0.15 * np.sin(0.1) + 2e-3), quat=tilt)

    def loss(x):
        f = jc.rollout(model, params, s0.replace(vel=x[:3], omega=x[3:]), 40, output="final")
        return jnp.concatenate([f.pos, f.vel, f.omega])

    x0 = jnp.array([0.4, -0.1, -0.3, 0.5, 1.0, -0.3])
    J = jax.jacrev(loss)(x0)
    eps = 1e-6
    fd = np.stack([(np.asarray(loss(x0.at[i].add(eps))) - np.asarray(loss(x0.at[i].add(-eps)))) / (2 * eps)
                   for i in range(6)], 1)
    np.testing.assert_allclose(np.asarray(J), fd, atol=2e-5 * max(1.0, np.abs(fd).max()))


# --- worlds: pairs per part -------------------------------------------------------------------------

def _world(bodies, pos, quat=None, mu=0.5, fixed=(), tol=None, **kw):
    scene, body = worlds.make_scene(bodies, fixed=fixed, **kw)
    law = jc.CoulombLCP() if tol is None else jc.CoulombLCP(solver=jc.LCPSettings(tol=tol, max_iter=300))
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=law.init_params(mu=mu))
    n = len(bodies)
    quat = np.tile([1.0, 0, 0, 0], (n, 1)) if quat is None else np.asarray(quat, float)
    s = jc.State(pos=jnp.asarray(pos, float), quat=jnp.asarray(quat), vel=jnp.zeros((n, 3)), omega=jnp.zeros((n, 3)))
    return jc.Model(law=law, dt=H, gravity=G), scene, params, s


def test_box_rests_on_a_table():
    """A world of a table and a box put on its top: the table stands on its four legs and the box
    rests on the top (< 0.1 mm over 1 s; the pair's contacts are the top part's, on the two bodies)."""
    t, box = table(), shapes.box(0.1, mass=0.5)
    zt = -float(np.min(np.asarray(t.vertices)[:, 2]))
    top = float(np.max(np.asarray(t.vertices)[:, 2]))
    pos = np.array([[0.0, 0.0, zt], [0.1, 0.05, zt + top + 0.05]])
    model, scene, params, s = _world([t, box], pos)
    assert scene.shapes == ("compound", "hull") and scene.pairs == ((0, 1),)
    con = contacts.collide(model, scene, params, s)
    G_ = con.num_ground
    assert int(np.sum(np.asarray(con.valid[G_:]))) == 4 and np.all(np.asarray(con.bodies[G_:]) == [0, 1])
    np.testing.assert_allclose(np.asarray(con.phi[G_:]), 0.0, atol=1e-12)
    final, summary = worlds.rollout(model, scene, params, s, 500, output="final")
    assert int(summary.flags) & ~int(jc.Flags.DEGENERATE) == 0
    np.testing.assert_allclose(np.asarray(final.pos), pos, atol=1e-4)


def test_compound_pair_is_the_union_box_pair():
    """A compound of two flush boxes dropped tilted onto a box on the ground moves as the single
    box of their union does (the part pairs' contacts, reduced to the pair's four, are the union's:
    the upper part never touches): the same trajectories to 1e-7 m."""
    lower, upper = shapes.box((0.1, 0.1, 0.06), mass=0.6), shapes.box((0.1, 0.1, 0.04), mass=0.4)
    c = shapes.compound([lower, upper], [(0, 0, 0.03), (0, 0, 0.08)])
    base = shapes.box((0.3, 0.3, 0.1), mass=2.0)
    pos = np.array([[0.0, 0.0, 0.05], [0.02, 0.0, 0.17]])
    quat = np.array([[1.0, 0, 0, 0], [np.cos(0.1), np.sin(0.1), 0, 0]])
    runs = []
    for b in (c, shapes.box((0.1, 0.1, 0.1), mass=1.0)):
        model, scene, params, s = _world([base, b], pos, quat, tol=1e-10, softness=0.0)
        runs.append(worlds.rollout(model, scene, params, s, 150)[0])
    np.testing.assert_allclose(np.asarray(runs[0].pos), np.asarray(runs[1].pos), atol=1e-7)
    np.testing.assert_allclose(np.asarray(runs[0].quat), np.asarray(runs[1].quat), atol=1e-6)
    assert float(runs[1].pos[-1, 1, 2]) < 0.16  # it landed on the base box


def test_dumbbell_on_a_fixed_box_rests_on_both_balls():
    """A dumbbell laid across a fixed box (scenery) rests on its two balls: the pair keeps one
    contact per ball (two parts of the compound, one body) and nothing moves (< 0.1 mm over 1 s)."""
    db, base = dumbbell(), shapes.box((0.5, 0.2, 0.1), mass=5.0)
    pos = np.array([[0.0, 0.0, 0.05], [0.0, 0.0, 0.15]])
    model, scene, params, s = _world([base, db], pos, fixed=[0])
    con = contacts.collide(model, scene, params, s)
    G_ = con.num_ground
    valid = np.asarray(con.valid[G_:])
    phi = np.asarray(con.phi[G_:])
    assert int(valid.sum()) == 2 and np.all(np.abs(phi[valid]) < 1e-12)
    final, summary = worlds.rollout(model, scene, params, s, 500, output="final")
    assert int(summary.flags) & ~int(jc.Flags.DEGENERATE) == 0
    np.testing.assert_allclose(np.asarray(final.pos), pos, atol=1e-4)


def test_refusals_in_worlds():
    """A stacked compound (its parts dropped) is refused by make_scene; a Scene whose shapes and
    parts disagree is refused by name."""
    _, stacked = worlds.make_scene([dumbbell(), shapes.box(0.1)], pairs=[])
    with pytest.raises(ValueError, match="pass the bodies as a list"):
        worlds.make_scene(stacked)
    scene, _ = worlds.make_scene([dumbbell(), shapes.box(0.1)])
    with pytest.raises(ValueError, match="Scene.parts"):
        dataclasses.replace(scene, parts=None)


# --- MJCF: bodies of several geoms ------------------------------------------------------------------------

MJCF = """
<mujoco>
  <worldbody>
    <geom type="plane" size="0 0 1"/>
    <body name="table" pos="0 0 0.44">
      <freejoint/>
      <geom type="box" size="0.3 0.2 0.02" pos="0 0 -0.02" density="800"/>
      <geom type="box" size="0.02 0.02 0.2" pos="0.27 0.17 -0.24" density="800"/>
      <geom type="box" size="0.02 0.02 0.2" pos="-0.27 0.17 -0.24" density="800"/>
      <geom type="box" size="0.02 0.02 0.2" pos="0.27 -0.17 -0.24" density="800"/>
      <geom type="box" size="0.02 0.02 0.2" pos="-0.27 -0.17 -0.24" density="800"/>
    </body>
    <body name="hammer" pos="1 0 0.5" quat="0.9 0.1 0.3 0.2">
      <freejoint/>
      <geom type="capsule" size="0.015" fromto="0 0 -0.12 0 0 0.12" density="700"/>
      <geom type="box" size="0.05 0.02 0.02" pos="0 0 0.15" euler="0 0 30" density="7800"/>
    </body>
    <body name="dumbbell" pos="0 1 0.05">
      <freejoint/>
      <geom type="sphere" size="0.05" pos="-0.15 0 0"/>
      <geom type="sphere" size="0.05" pos="0.15 0 0"/>
      <geom type="capsule" size="0.015" fromto="-0.1 0 0 0.1 0 0"/>
    </body>
    <body name="shelf" pos="-1 0 0.3">
      <geom type="box" size="0.2 0.1 0.01"/>
      <geom type="box" size="0.01 0.1 0.15" pos="0.19 0 -0.15"/>
    </body>
  </worldbody>
</mujoco>"""


def test_compound_mass_properties_match_mujoco():
    """``shapes.compound``'s combination of a table's five boxes and a hammer's capsule and turned
    box (each of MuJoCo's geom mass: density × volume) against MuJoCo's compiled body mass, centre
    of mass (``body_ipos``) and inertia (``body_inertia`` in the frame ``body_iquat``)."""
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(MJCF)
    q30 = (np.cos(np.pi / 12), 0.0, 0.0, np.sin(np.pi / 12))
    top = shapes.box((0.6, 0.4, 0.04), mass=800 * 0.6 * 0.4 * 0.04)
    leg = shapes.box((0.04, 0.04, 0.4), mass=800 * 0.04 * 0.04 * 0.4)
    legs = [(sx * 0.27, sy * 0.17, -0.24) for sx in (1, -1) for sy in (1, -1)]
    r, l = 0.015, 0.12
    cases = {1: shapes.compound([top] + [leg] * 4, [(0, 0, -0.02)] + legs),
             2: shapes.compound([shapes.capsule(r, l, 700 * (np.pi * r * r * 2 * l + 4 / 3 * np.pi * r ** 3)),
                                 shapes.box((0.1, 0.04, 0.04), mass=7800 * 0.1 * 0.04 * 0.04)],
                                [(0, 0, 0), ((0, 0, 0.15), q30)])}
    for b, body in cases.items():
        R = np.asarray(quat_to_mat(jnp.asarray(m.body_iquat[b], float)))
        assert float(body.mass) == pytest.approx(m.body_mass[b], rel=1e-12)
        np.testing.assert_allclose(np.asarray(body.inertia), R @ np.diag(m.body_inertia[b]) @ R.T, rtol=0,
                                   atol=1e-9 * m.body_inertia[b].max())
        # the body frame's origin is the centre of mass: the first part's centre sits at its pose less it
        first = np.asarray(body.vertices)[body.parts[0][1]:body.parts[0][2]].mean(0)
        pose0 = (0, 0, -0.02) if b == 1 else (0, 0, 0)
        np.testing.assert_allclose(first, np.asarray(pose0) - m.body_ipos[b], atol=1e-12)


def _part_sets(body, parts):
    v, w = np.asarray(body.vertices), np.asarray(body.vertex_radius)
    return [(kind, np.round(np.sort(v[a:b], axis=0), 9), np.round(w[a:b], 12)) for kind, a, b, *_ in parts]


def test_from_mjcf_loads_bodies_of_several_geoms_and_writes_them_back():
    """from_mjcf: a table of five boxes, a hammer, a dumbbell (spheres and a capsule) as compounds
    with MuJoCo's compiled mass and inertia, their parts at the geoms' poses about the centre of
    mass (``body_ipos``); a jointless body of two boxes as fixed scenery. to_mjcf writes them as
    several geoms, and from_mjcf reads the same world back (masses, inertias, parts, states)."""
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(MJCF)
    scene, params, state, _ = worlds.from_mjcf(MJCF)
    assert scene.shapes == ("compound",) * 4 and scene.fixed == (3,)
    assert [tuple(p[0] for p in parts) for parts in scene.parts] == [("hull",) * 5, ("capsule", "hull"),
                                                                    ("sphere", "sphere", "capsule"), ("hull", "hull")]
    for i in range(3):
        R = np.asarray(quat_to_mat(jnp.asarray(m.body_iquat[i + 1], float)))
        assert float(params.body.mass[i]) == pytest.approx(m.body_mass[i + 1], rel=1e-12)
        np.testing.assert_allclose(np.asarray(params.body.inertia[i]), R @ np.diag(m.body_inertia[i + 1]) @ R.T,
                                   atol=1e-12)
    d = mjcf.mujoco_data(m)
    np.testing.assert_allclose(np.asarray(state.pos), d.xipos[1:], atol=1e-12)
    for i in range(4):  # each part at its geom's pose in the body frame, about the centre of mass (body_ipos)
        gs = [g for g in range(m.ngeom) if m.geom_bodyid[g] == i + 1]
        for (kind, start, stop, _), g in zip(scene.parts[i], gs):
            Rg = np.asarray(quat_to_mat(jnp.asarray(m.geom_quat[g], float)))
            size = m.geom_size[g]
            if kind == "hull":
                want = m.geom_pos[g] + (mjcf.BOX_SIGNS * size) @ Rg.T
            elif kind == "sphere":
                want = m.geom_pos[g][None]
            else:
                want = m.geom_pos[g] + np.outer([-1, 1], Rg[:, 2] * size[1])
            got = np.asarray(params.body.vertices[i, start:stop]) + m.body_ipos[i + 1]
            np.testing.assert_allclose(np.sort(got, axis=0), np.sort(want, axis=0), atol=1e-12)
            np.testing.assert_allclose(np.asarray(params.body.vertex_radius[i, start:stop]),
                                       0.0 if kind == "hull" else size[0], atol=1e-15)
    xml = worlds.to_mjcf(scene, params, state)
    scene2, params2, state2, _ = worlds.from_mjcf(xml)
    assert scene2.shapes == scene.shapes and scene2.fixed == scene.fixed and scene2.pairs == scene.pairs
    for i in range(4):
        if i not in scene.fixed:
            assert float(params2.body.mass[i]) == pytest.approx(float(params.body.mass[i]), rel=1e-12)
            np.testing.assert_allclose(np.asarray(params2.body.inertia[i]), np.asarray(params.body.inertia[i]),
                                       atol=1e-12)
        one = lambda p: jax.tree_util.tree_map(lambda x: x[i], p.body)
        for (k1, v1, w1), (k2, v2, w2) in zip(_part_sets(one(params), scene.parts[i]),
                                              _part_sets(one(params2), scene2.parts[i])):
            assert k1 == k2
            np.testing.assert_allclose(v1, v2, atol=1e-8)
            np.testing.assert_allclose(w1, w2, atol=1e-12)
    np.testing.assert_allclose(np.asarray(state2.pos), np.asarray(state.pos), atol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(state2.quat)), np.abs(np.asarray(state.quat)), atol=1e-9)


def test_from_mjcf_loads_a_cylinder_among_several_geoms_as_a_part():
    """(Refused before issue 62 item 2's parts: tests/test_compound_round_parts.py checks them.)"""
    pytest.importorskip("mujoco")
    xml = """<mujoco><worldbody><body name="mallet"><freejoint/>
      <geom type="box" size="0.1 0.02 0.02"/><geom type="cylinder" size="0.03 0.05" pos="0 0 0.1"/>
      </body></worldbody></mujoco>"""
    scene, params, _, _ = worlds.from_mjcf(xml)
    assert [p[0] for p in scene.parts[0]] == ["hull", "cylinder"]
    np.testing.assert_allclose(np.asarray(params.body.vertex_shape[0, 8, 1:4]), [0.03, 0.05, 0.0])


def test_a_compound_is_drawn_as_the_hull_of_its_parts():
    """worlds.animate draws a compound as the convex hull of its parts' surfaces (a stand-in): the
    dumbbell's reaches its balls' far sides, the table's its top's corners and its feet."""
    from jaxcontact.worlds import animate

    scene, body = worlds.make_scene([table(), dumbbell()], pairs=[])
    drawn = animate.drawn_body(scene, body)
    v, keep = np.asarray(drawn.vertices), np.asarray(drawn.vertex_mask) > 0
    assert np.max(v[1][keep[1], 0]) == pytest.approx(0.2, abs=1e-9)
    t = np.asarray(body.vertices[0])
    np.testing.assert_allclose(np.max(v[0][keep[0]], axis=0), np.max(t, axis=0), atol=1e-12)
    np.testing.assert_allclose(np.min(v[0][keep[0]], axis=0), np.min(t, axis=0), atol=1e-12)
    assert len(animate.hull_faces(scene, drawn)[1]) > 8


def test_a_compound_pair_keeps_its_deepest_points():
    """A plank lying across two pads of one compound, one pad 1 mm lower (both within the margin):
    the pair has eight valid points over two part pairs and keeps the four deepest, the higher
    pad's (φ = 0), on the plank and the pads' body."""
    pad = shapes.box((0.1, 0.1, 0.05), mass=1.0)
    pads = shapes.compound([pad, pad], [(-0.2, 0, -0.025), (0.2, 0, -0.026)])
    plank = shapes.box((0.6, 0.08, 0.02), mass=1.0)
    top = float(np.max(np.asarray(pads.vertices)[:8, 2]))
    model, scene, params, s = _world([pads, plank], [[0, 0, 0.5], [0, 0, 0.5 + top + 0.01]], margin=0.01)
    con = contacts.collide(model, scene, params, s)
    G_ = con.num_ground
    phi, valid = np.asarray(con.phi[G_:]), np.asarray(con.valid[G_:])
    assert valid.all() and np.all(np.asarray(con.bodies[G_:]) == [0, 1])
    np.testing.assert_allclose(phi, 0.0, atol=1e-12)
    lever = np.asarray(con.rows[G_:, 1, 0, 3:])  # the plank's rows: its normal's angular part r × Rᵀn
    assert np.all(lever[:, 1] > 0)  # every point on the plank's −x half (the higher pad): r_x < 0, r × ẑ has +y
