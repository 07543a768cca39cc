"""Worlds of many bodies (jaxcontact.worlds): one LCP for body–ground and body–body contact.

Scenes are the issue's 0.1 m, 0.37 kg boxes at 2 ms (``worlds.scenes``). Each test compiles one
rollout program; scenes and step counts are shared so the compiled programs are too."""

import dataclasses
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.types import Flags
from jaxcontact.worlds import scenes

MODEL = worlds.model()
CRADLE_STEPS = 100


def test_one_body_world_is_the_single_body_rollout():
    """A world of one body without pairs and without softness (the ground candidates are the
    model's ``max_contacts`` in both) takes the single body's step: a tumbling throw with friction
    and restitution matches ``jaxcontact.rollout`` to round-off."""
    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    box = shapes.box()
    scene, body = worlds.make_scene([box], softness=0.0)
    ground = jc.Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0))
    params = jc.Params(body=body, ground=ground, law=law.init_params(mu=0.3, restitution=0.2))
    s = jc.make_state(pos=(0.0, 0.0, 0.2), vel=(1.0, 0.0, -0.5), omega=(1.0, 2.0, 0.3))
    traj, _ = worlds.rollout(model, scene, params, jax.tree_util.tree_map(lambda x: x[None], s), 300)
    ref = jc.rollout(model, jc.Params(body=box, ground=ground, law=params.law), s, 300)
    np.testing.assert_allclose(traj.pos[:, 0], ref.pos, atol=1e-12)
    np.testing.assert_allclose(traj.quat[:, 0], ref.quat, atol=1e-12)


def _cradle(gap):
    return scenes.cradle(5, gap=gap, speed=1.0, restitution=1.0)


def test_newtons_cradle_one_impact_at_a_time_and_simultaneous():
    """Five boxes on a frictionless ground, ε = 1. 5 mm apart, the impacts come one at a time:
    the last box leaves at the first's speed (within 1 %), the others nearly at rest. Touching,
    the impacts are simultaneous and the velocity-level LCP has its own answer: for equal masses
    the striker rebounds at 0.6 v and the four others move on together at 0.4 v (momentum 1 m/s·m,
    relative speed of the first interface ε·v; the others stay closed)."""
    scene, params, s = _cradle(0.005)
    traj, info = worlds.rollout(MODEL, scene, params, s, CRADLE_STEPS)
    v = np.asarray(traj.vel[-1, :, 0])
    assert v[-1] == pytest.approx(1.0, rel=1e-2)
    assert np.all(np.abs(v[:-1]) < 1e-3), v
    assert abs(v.sum() - 1.0) < 1e-9  # momentum: the ground is frictionless
    assert not np.any(np.asarray(info.flags) & int(Flags.SOLVER))

    scene, params, s = _cradle(0.0)
    traj, info = worlds.rollout(MODEL, scene, params, s, CRADLE_STEPS)
    v = np.asarray(traj.vel[-1, :, 0])
    np.testing.assert_allclose(v, [-0.6, 0.4, 0.4, 0.4, 0.4], atol=2e-5)
    assert abs(v.sum() - 1.0) < 1e-9
    assert not np.any(np.asarray(info.flags) & int(Flags.SOLVER))


def test_inelastic_collision_leaves_at_the_common_velocity():
    """A box sliding at 1 m/s into an identical resting box, ε = 0, frictionless: both leave at
    0.5 m/s; momentum conserved to round-off (the same program as the cradle's)."""
    scene, params, s = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)
    traj, _ = worlds.rollout(MODEL, scene, params, s, CRADLE_STEPS)
    v = np.asarray(traj.vel[-1, :, 0])
    np.testing.assert_allclose(v, [0.5, 0.5], rtol=1e-5)
    assert abs(v.sum() - 1.0) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stack_stands(dtype):
    """A stack of 5 boxes built at rest stands for 1 s: the top box moves (any direction, sinking
    included) at most 0.1 mm in float64 and 1 mm in float32, no step flagged. (The issue's 10 boxes
    for 10 s: ``python -m benchmarks.worlds``, docs/worlds.md.)"""
    scene, params, s = scenes.stack(5)
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype), t)
    params, s = cast(params), cast(s)
    final, summary = worlds.rollout(MODEL, scene, params, s, 500, output="final")
    moved = float(jnp.linalg.norm(final.pos[-1] - s.pos[-1]))
    assert moved <= (1e-4 if dtype == "float64" else 1e-3), moved
    assert int(summary.flags) == 0
    assert final.pos.dtype == jnp.dtype(dtype)


@pytest.mark.slow
def test_pyramid_stands_in_float32():
    """A pyramid of 6 boxes (3-2-1), each resting on two below, built at rest, stands for 0.5 s in
    float32 (the dtype that needs the most sweeps): the top box moves at most 1 mm, no step flagged. (The issue's 4-3-2-1 pyramid for
    10 s: ``python -m benchmarks.worlds``.)"""
    scene, params, s = scenes.pyramid(3)
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype("float32"), t)
    params, s = cast(params), cast(s)
    final, summary = worlds.rollout(MODEL, scene, params, s, 250, output="final")
    moved = float(jnp.linalg.norm(final.pos[-1] - s.pos[-1]))
    assert moved <= 1e-3, moved
    assert int(summary.flags) == 0


@pytest.mark.slow
def test_gradient_through_a_collision_matches_central_differences():
    """d(struck box's final x)/d(pusher's initial speed) through an inelastic collision equals
    central differences (contact modes fixed: the pair closes once and moves on together). At the
    world's earlier 1e-5 m/s with 8 ground contacts a box it was 1.7e-3 off (a strict xfail, issue 60
    part 4); at the default 1e-7 it passes (an XPASS of that xfail)."""
    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)

    def final_x(speed):
        s = s0.replace(vel=s0.vel.at[0, 0].set(speed))
        final, _ = worlds.rollout(MODEL, scene, params, s, 60, output="final")
        return final.pos[1, 0]

    g = jax.grad(final_x)(1.0)
    h = 1e-4
    fd = (final_x(1.0 + h) - final_x(1.0 - h)) / (2 * h)
    assert np.isfinite(g) and g > 0
    assert float(g) == pytest.approx(float(fd), rel=1e-3)


@pytest.mark.slow
def test_interpenetrating_start_is_separated_without_launch_and_flagged():
    """Two boxes start 5 mm inside each other: they are pushed apart at no more than
    ``max_correction_speed`` (no launch: kinetic energy ≤ ½ m v_max² each), close to it, and the
    step is flagged PENETRATION."""
    scene, params, s = scenes.cradle(2, gap=-0.005, speed=0.0, restitution=0.0)
    traj, info = worlds.rollout(MODEL, scene, params, s, CRADLE_STEPS)
    v = np.asarray(traj.vel[:, :, 0])
    assert np.max(np.abs(v)) <= MODEL.max_correction_speed + 1e-9
    assert int(np.asarray(info.flags)[0]) & int(Flags.PENETRATION)
    assert jc.diagnostics.report(info).startswith("1 of 1 worlds had deep penetration")  # the report reads world infos
    gap = np.asarray(traj.pos[:, 1, 0] - traj.pos[:, 0, 0]) - scenes.SIZE
    opening = np.diff(gap) / MODEL.dt
    assert np.all(opening <= MODEL.max_correction_speed + MODEL.law.solver.tol)  # relative speed capped (to the tolerance)
    assert gap[-1] - gap[0] > 0.8 * MODEL.max_correction_speed * MODEL.dt * CRADLE_STEPS  # and moving out


def test_bad_worlds_refused_by_name():
    from jaxcontact.contactnets import ContactNetsLaw
    scene, params, s = scenes.cradle(2)
    with pytest.raises(ValueError, match="ground only"):
        worlds.rollout(jc.Model(law=ContactNetsLaw()), scene, params, s, 10)
    with pytest.raises(ValueError, match="body 1"):
        verts = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0.1, 0.1, 0]], float)
        b = jc.Body(mass=jnp.array(0.37), inertia=jnp.eye(3) * 1e-3, vertices=jnp.asarray(verts), vertex_mask=jnp.ones(4))
        worlds.make_scene([shapes.box(), b])
    with pytest.raises(ValueError, match="state.pos"):
        worlds.rollout(MODEL, scene, params, jax.tree_util.tree_map(lambda x: x[:1], s), 10)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        worlds.billiards.fit(None, np.zeros((1, 2)), optimizer="lbfgs")
    with pytest.raises(ValueError, match="iters must be an int"):
        worlds.billiards.fit(None, np.zeros((1, 2)), iters=-1)


@pytest.mark.slow
def test_simulate_scene_command_writes_the_world(tmp_path, capsys):
    """``jaxcontact simulate --scene cradle:2``: the file holds every box's states, momentum is
    kept through the impact (ε = 1: the pusher stops, the other leaves at 1 m/s), no step flagged."""
    from jaxcontact.cli import main

    out = tmp_path / "cradle.npz"
    assert main(["simulate", "--scene", "cradle:2", "--steps", str(CRADLE_STEPS), "--out", str(out),
                 "--no-progress"]) == 0
    assert "no step flagged" in capsys.readouterr().out
    d = np.load(out)
    assert d["states"].shape == (CRADLE_STEPS + 1, 2, 13) and str(d["scene"]) == "cradle:2"
    v = d["states"][-1, :, 7]
    np.testing.assert_allclose(v, [0.0, 1.0], atol=1e-4)
    assert main(["simulate", "--scene", "tower:3", "--out", str(tmp_path / "x.npz")]) == 2
    assert "--scene must be one of stack:N" in capsys.readouterr().err


@pytest.mark.slow
def test_a_heap_settles_without_nan_energy_gain_or_penetration():
    """A random drop of 12 boxes into a heap (two layers, 9 + 3), float32 as users batch it, with
    ``worlds.rollout_checks`` (the checks of ``benchmarks.stress --heaps``): no NaN, energy never
    above the start's plus the correction bound, penetration ≤ 1 mm once settled, no failure
    unflagged, the broad phase never over capacity. (The issue's 16-box drops run in ``benchmarks.stress``: a 16-box heap costs
    minutes on this CPU, docs/worlds.md.)"""
    scene, params, s = scenes.heap(12, jax.random.PRNGKey(7))
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype("float32") if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    params, s = cast(params), cast(s)
    traj, infos = worlds.batch_rollout(MODEL, scene, params, jax.tree_util.tree_map(lambda x: x[None], s), 400)
    r = jax.device_get(worlds.rollout_checks(MODEL, scene, params, traj, infos))
    assert np.all(r["finite"])
    assert np.all(r["energy_gain_J"] <= r["bound_J"]), r["energy_gain_J"]
    assert np.all(r["settled_penetration_m"] <= 1e-3), r["settled_penetration_m"]
    assert not np.any(r["unflagged"])
    assert not np.any(r["flags"] & int(Flags.CAPACITY))
    assert np.all(np.asarray(traj.pos[0, -1, :, 2]) < 0.2)  # they fell and lie in a low heap
    assert np.any(np.asarray(infos.pair_kind) != 0)  # and touched each other on the way


@pytest.mark.slow
def test_broad_phase_keeps_the_pairs_within_reach_and_flags_capacity():
    """Three boxes in a row, every pair in the table, the first striking at 1 m/s (ε = 1): a broad
    phase of 2 pairs a step gives the all-pairs answer (the far pair is never within reach); a
    broad phase of 1 pair is over capacity once two pairs are within reach, and says so."""
    bodies = [shapes.box((scenes.SIZE,) * 3, scenes.MASS)] * 3
    _, params, s = scenes.cradle(3, gap=0.005, speed=1.0, restitution=1.0)
    finals = {}
    for max_pairs in (None, 2, 1):
        scene, _ = worlds.make_scene(bodies, max_pairs=max_pairs)
        final, summary = worlds.rollout(MODEL, scene, params, s, 60, output="final")
        finals[max_pairs] = (np.asarray(final.vel[:, 0]), int(summary.flags))
    np.testing.assert_allclose(finals[2][0], finals[None][0], atol=1e-12)
    assert finals[None][1] == finals[2][1] == 0
    assert finals[None][0][-1] == pytest.approx(1.0, rel=1e-2)
    assert finals[1][1] & int(Flags.CAPACITY)


@pytest.mark.slow
def test_velocity_form_solver_equals_the_dense_one_with_its_gradient():
    """``solvers.solve_contact``'s velocity form (projected Gauss–Seidel, A never formed, the
    valid contacts only) gives the dense solver's impulses on a world's problem — a 3-2-1 pyramid
    knocked sideways, every contact softened as at rest — and the same implicit gradient of a
    function of the impulses with respect to the free velocities and μ. A problem with no contact
    in it (a world in free fall) gives zero impulses and a finite, zero gradient (its padded rows
    have no diagonal to divide by: this once gave NaN gradients in every free-falling heap)."""
    scene, params, s = scenes.pyramid(3)
    s = s.replace(vel=s.vel.at[5].set(jnp.array([0.4, 0.2, -0.3])))
    con = worlds.collide(MODEL, scene, params, s)
    Minv = jax.vmap(lambda b, x: jc.geometry.mass_matrix_inverse(b, x))(params.body, s)
    v1 = jax.vmap(lambda x: x.generalized_velocity())(s)
    bp = jc.contact.body_problem(con.rows, con.bodies, con.phi, con.valid, Minv, v1, MODEL.dt)
    assert bp.num_contacts * 3 > jc.solvers.SMALL_ROWS and 0 < int(jnp.sum(con.valid)) < bp.num_contacts
    soft = worlds.contacts.soft_rows(scene.softness, jnp.zeros(bp.num_contacts, bool))
    # the disc's dense solve polishes where differentiated (LCPSettings.forward_active_set None) and
    # the velocity form never does: 0 rounds compares the two forms' own sweeps and derivatives
    settings = dataclasses.replace(MODEL.law.solver, forward_active_set=0)
    assert settings.cone == "elliptic"
    w = jax.random.normal(jax.random.PRNGKey(0), (bp.num_contacts, 3))

    def loss(v_free, mu, valid, velocity_form):
        p = bp.replace(v_free=v_free, valid=valid)
        mus = jnp.full((bp.num_contacts, 2), mu)
        sol = jc.solvers.solve_contact(p.replace(mu=mus, soft=soft),
                                       jc.solvers.Method(settings, form="velocity" if velocity_form else "dense"))
        return jnp.sum(w * sol.z), sol

    fns = {f: jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True), static_argnums=3) for f in (False, True)}
    out = {f: fn(v1, 0.5, bp.valid, f) for f, fn in fns.items()}
    (_, dense), g_dense = out[False]
    (_, fast), g_fast = out[True]
    assert int(fast.iterations) == int(dense.iterations) > 2
    np.testing.assert_allclose(fast.z, dense.z, atol=1e-11)
    np.testing.assert_allclose(fast.impulse, dense.impulse, atol=1e-11)
    assert float(jnp.max(jnp.abs(dense.z))) > 1e-3  # the pyramid pushes
    for a, b in zip(g_fast, g_dense):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
    assert float(jnp.max(jnp.abs(g_dense[0]))) > 1e-3
    for f, fn in fns.items():  # no contact in the problem
        (_, sol), g = fn(v1, 0.5, jnp.zeros_like(bp.valid), f)
        assert float(jnp.max(jnp.abs(sol.z))) == 0.0
        for x in g:
            assert bool(jnp.all(jnp.isfinite(x))) and float(jnp.max(jnp.abs(x))) == 0.0, f


@pytest.mark.slow
def test_jointed_links_carry_a_box_dropped_on_them():
    """Two links (0.2 m, 0.185 kg) lying on the ground, hinged end to end (``Scene.joints``: the
    jointed pair leaves the pair table), and a free box dropped 2 cm onto the second link, all in
    the one contact problem with the joints eliminated (the chains' step): the box comes to rest on
    the link's top face, the ground carries the whole weight, the hinge stays closed (its anchors
    within 1e-9 m) and carries an impulse. Bad joint inputs are refused by name."""
    from jaxcontact.worlds import joints as J

    link, box = shapes.box((0.2, 0.05, 0.05), 0.185), shapes.box((scenes.SIZE,) * 3, scenes.MASS)
    scene, body = worlds.make_scene([link, link, box], joints=J.Joints(parent=(0,), child=(1,)))
    assert scene.pairs == ((0, 2), (1, 2))
    ey = jnp.array([[0.0, 1.0, 0.0]])
    jp = J.JointParams(anchor_parent=jnp.array([[0.1, 0.0, 0.0]]), anchor_child=jnp.array([[-0.1, 0.0, 0.0]]),
                       axis_parent=ey, axis_child=ey)
    params = J.JointedParams(body=body, ground=jc.Ground(normal=jnp.array([0.0, 0.0, 1.0]), height=jnp.array(0.0)),
                             law=jc.CoulombLCP.init_params(mu=0.5), joints=jp)
    s = jc.State(pos=jnp.array([[-0.1, 0.0, 0.025], [0.1, 0.0, 0.025], [0.1, 0.0, 0.12]]),
                 quat=jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (3, 1)), vel=jnp.zeros((3, 3)), omega=jnp.zeros((3, 3)))
    traj, info = worlds.rollout(MODEL, scene, params, s, 150)
    assert int(np.bitwise_or.reduce(np.asarray(info.flags))) == 0
    assert float(traj.pos[-1, 2, 2]) == pytest.approx(0.1, abs=1e-4)  # on the link's top face (0.05 m)
    assert np.abs(np.asarray(traj.vel[-1])).max() < 1e-3
    weight = (2 * 0.185 + scenes.MASS) * MODEL.gravity * MODEL.dt
    assert float(info.impulse[-1, :, 2].sum()) == pytest.approx(weight, rel=1e-3)
    assert float(np.max(info.joint_error)) < 1e-9
    lam = np.asarray(info.joint_impulse)
    assert lam.shape == (150, 5)  # 5 rows per revolute joint, per step
    assert np.all(np.isfinite(lam)) and np.abs(lam[-1, 2]) > 1e-4
    with pytest.raises(ValueError, match=r"anchor_parent/anchor_child\[0\].*apart"):
        worlds.rollout(MODEL, scene, params, s.replace(pos=s.pos.at[1, 0].add(0.01)), 2)
    with pytest.raises(ValueError, match="JointedParams"):
        worlds.rollout(MODEL, scene, jc.Params(body=body, ground=params.ground, law=params.law), s, 2)
    with pytest.raises(ValueError, match="body 3"):
        worlds.make_scene([link, link, box], joints=J.Joints(parent=(0,), child=(3,)))
    with pytest.raises(ValueError, match="parent"):
        J.Joints(parent=(1,), child=(1,))
