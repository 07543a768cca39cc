"""Worlds are never silently wrong (issue 50): every input a world cannot honour is refused by name
before any work (eagerly, and under jit where the check is static) or flagged/warned, never run
silently or answered with a raw JAX traceback. One test per case, tiny scenes, few steps."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import collision, shapes, worlds
from jaxcontact.dynamics import PenetrationWarning
from jaxcontact.types import Flags, State
from jaxcontact.validation import broken_rules, rule_names
from jaxcontact.worlds import scenes

MODEL = worlds.model()
STEPS = 5


def _pair():
    """Two boxes 5 mm apart on the ground, the first moving at 1 m/s towards the second."""
    return scenes.cradle(2)


def _tetrahedron():
    v = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], float)
    return shapes.convex_hull(v, 0.37)


# --- 1. a scene refuses bodies other than those it was built from ----------------------------------

def test_scene_refuses_bodies_it_was_not_built_from():
    scene, params, s = _pair()
    # built for [box, tetrahedron], used with two boxes: the vertex counts differ
    other, _ = worlds.make_scene([shapes.box(), _tetrahedron()])
    assert other.vertex_counts == (8, 4)
    with pytest.raises(ValueError, match=r"params.body.vertices: body 1 has 8 vertices, but the scene was built for a body of 4"):
        worlds.rollout(MODEL, other, params, s, STEPS)
    # built for [box, box], used with a box and a 4-sided prism: 8 vertices each, another order
    # (without the check the prism was launched at 8.4 m/s)
    prism = shapes.regular_prism(4, 0.07, 0.1, 0.37)
    assert prism.vertices.shape == (8, 3)
    wrong = params.replace(body=worlds.stack_bodies([shapes.box(), prism]))
    with pytest.raises(ValueError, match=r"params.body.vertices: body 1 is not the hull the scene was built from"):
        worlds.rollout(MODEL, scene, wrong, s, STEPS)
    with pytest.raises(ValueError, match="params.body.vertices: body 1"):
        worlds.step(MODEL, scene, wrong, s)
    # under jit the vertices are traced; the padded vertex count is static and still refused
    padded = params.replace(body=worlds.stack_bodies([shapes.box(pad_to=10), shapes.box(pad_to=10)]))
    with pytest.raises(ValueError, match=r"params.body.vertices: body 0's hull was built from 8 \(padded\) vertices, got 10"):
        jax.jit(lambda p, s: worlds.rollout(MODEL, scene, p, s, STEPS, output="final"))(padded, s)
    # the scene's own bodies, uniformly shrunk by 1 % (a hull of the same topology), still run
    scaled = params.replace(body=params.body.replace(vertices=params.body.vertices * 0.99))
    final, summary = worlds.rollout(MODEL, scene, scaled, s, STEPS, output="final")
    assert int(np.asarray(summary.flags)) == 0  # the first box hit the second (ε = 1, frictionless): momentum kept
    assert float(final.vel[1, 0]) > 0.9 and float(final.vel[0, 0] + final.vel[1, 0]) == pytest.approx(1.0, rel=1e-3)


# --- 2. controls need n_steps rows ------------------------------------------------------------------

@pytest.mark.parametrize("rows", [3, 8])
def test_controls_need_one_row_per_step(rows):
    scene, params, s = _pair()
    u = jnp.zeros((rows, 2, 6))
    for output in ("trajectory", "final"):
        with pytest.raises(ValueError, match=rf"controls: expected shape \(5, 2, 6\).*got \({rows}, 2, 6\); n_steps = 5 needs 5 rows"):
            worlds.rollout(MODEL, scene, params, s, STEPS, u, output=output)
        with pytest.raises(ValueError, match=r"controls: expected shape \(5, 2, 6\)"):
            jax.jit(lambda p, s, u: worlds.rollout(MODEL, scene, p, s, STEPS, u, output=output))(params, s, u)
    states = jax.tree_util.tree_map(lambda x: x[None], s)
    with pytest.raises(ValueError, match=r"controls: expected shape \(1, 5, 2, 6\)"):
        worlds.batch_rollout(MODEL, scene, params, states, STEPS, u[None], output="final")


def test_controls_of_the_right_length_act():
    """A 10 N push in x on the resting second box of a pair over 5 steps of 2 ms: Δv = F t / m."""
    scene, params, s = scenes.cradle(2, speed=0.0)
    u = jnp.zeros((STEPS, 2, 6)).at[:, 1, 0].set(10.0)
    final, summary = worlds.rollout(MODEL, scene, params, s, STEPS, u, output="final")
    assert float(final.vel[1, 0]) == pytest.approx(10.0 * STEPS * MODEL.dt / scenes.MASS, rel=1e-6)
    assert float(final.vel[0, 0]) == pytest.approx(0.0, abs=1e-9)


# --- 3. n_steps = 0 -----------------------------------------------------------------------------------

def test_zero_steps_returns_the_start_in_every_form():
    scene, params, s = _pair()
    traj, infos = worlds.rollout(MODEL, scene, params, s, 0)
    assert traj.pos.shape == (1, 2, 3) and np.array_equal(np.asarray(traj.pos[0]), np.asarray(s.pos))
    assert infos.flags.shape == (0,)
    final, summary = worlds.rollout(MODEL, scene, params, s, 0, output="final")
    assert np.array_equal(np.asarray(final.vel), np.asarray(s.vel)) and int(np.asarray(summary.flags)) == 0
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), s)
    traj, infos = worlds.batch_rollout(MODEL, scene, params, states, 0)
    assert traj.pos.shape == (2, 1, 2, 3) and infos.flags.shape == (2, 0)
    final, summary = worlds.batch_rollout(MODEL, scene, params, states, 0, output="final")
    assert np.array_equal(np.asarray(final.pos), np.asarray(states.pos))
    # as the single-body API
    b = params.body
    one = jc.Params(body=jax.tree_util.tree_map(lambda x: x[0], b), ground=params.ground, law=params.law)
    t1 = jc.rollout(MODEL, one, jax.tree_util.tree_map(lambda x: x[0], s), 0)
    assert t1.pos.shape == (1, 3)


# --- 4. body counts of scene, params and state --------------------------------------------------------

def test_body_count_mismatch_is_refused_by_name_eagerly_and_under_jit():
    scene, params, s = _pair()
    three = jax.tree_util.tree_map(lambda x: jnp.concatenate([x, x[:1]]), s)
    for run in (lambda p, s: worlds.rollout(MODEL, scene, p, s, STEPS),
                jax.jit(lambda p, s: worlds.rollout(MODEL, scene, p, s, STEPS, output="final"))):
        with pytest.raises(ValueError, match=r"state.pos: the scene has 2 bodies, so expected shape \(2, 3\)"):
            run(params, three)
    body3 = jax.tree_util.tree_map(lambda x: jnp.concatenate([x, x[:1]]), params.body)
    with pytest.raises(ValueError, match="params.body: the scene was built for 2 bodies"):
        jax.jit(lambda p, s: worlds.step(MODEL, scene, p, s))(params.replace(body=body3), s)
    with pytest.raises(ValueError, match="params.body: the scene was built for 2 bodies"):
        worlds.rollout(MODEL, scene, params.replace(body=body3), s, STEPS)


# --- 5. the scene builders' counts --------------------------------------------------------------------

@pytest.mark.parametrize("build, arg, bad", [(scenes.heap, "n", -3), (scenes.stack, "n", 0), (scenes.pyramid, "levels", 2.5),
                                             (scenes.cradle, "n", True), (scenes.heap, "n", float("nan"))])
def test_scene_builders_refuse_bad_counts(build, arg, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        with pytest.raises(ValueError, match=rf"scenes.{build.__name__}: {arg} must be an int >= 1"):
            build(bad)
    with pytest.raises(ValueError, match="scenes.cradle: gap must be a finite distance"):
        scenes.cradle(2, gap=float("inf"))


# --- 6. hulls above the engine's vertex limit ---------------------------------------------------------

def _sphere(n):
    p = np.random.default_rng(0).normal(size=(n, 3))
    return 0.05 * p / np.linalg.norm(p, axis=1, keepdims=True)


def test_hulls_above_the_vertex_limit_are_refused_at_once_or_reduced():
    import time
    big = shapes.convex_hull(_sphere(1100), 1.0)  # above the limit (1024)
    t = time.process_time()  # CPU seconds: the machine may be shared
    with pytest.raises(ValueError, match=rf"body 1: vertices: 1100 valid vertices, more than .*MAX_HULL_VERTICES = {collision.MAX_HULL_VERTICES}"):
        worlds.make_scene([shapes.box(), big])
    assert time.process_time() - t < 2.0
    small = collision.reduce_hull(_sphere(400), 20)
    assert 4 <= len(small) <= 20
    pts = _sphere(400)
    assert set(map(tuple, small)) <= set(map(tuple, pts))  # extreme vertices of the original
    scene, body = worlds.make_scene([shapes.box(), shapes.convex_hull(small, 1.0)])
    assert scene.vertex_counts == (8, len(small))


# --- 7. impossible inertia, centre of mass outside the hull -------------------------------------------

def _single(body):
    return jc.Params(body=body, ground=jc.Ground.flat(3), law=jc.CoulombLCP.init_params())


def _rest():
    return State(pos=jnp.array([0.0, 0.0, 0.05]), quat=jnp.array([1.0, 0, 0, 0]), vel=jnp.zeros(3), omega=jnp.zeros(3))


IMPOSSIBLE = jnp.diag(jnp.array([1.0, 1.0, 5.0])) * 1e-3  # 5 > 1 + 1: no mass distribution has it


def test_impossible_inertia_is_refused_eagerly_and_flagged_under_jit():
    box = shapes.box()
    bad = box.replace(inertia=IMPOSSIBLE)
    with pytest.raises(ValueError, match="body.inertia: physically impossible"):
        jc.rollout(jc.Model(law=jc.CoulombLCP()), _single(bad), _rest(), 2)
    scene, params, s = _pair()
    wbad = params.replace(body=worlds.stack_bodies([box, bad]))
    with pytest.raises(ValueError, match="body.inertia: physically impossible"):
        worlds.rollout(MODEL, scene, wbad, s, STEPS)
    _, summary = jax.jit(lambda p: worlds.rollout(MODEL, scene, p, s, STEPS, output="final"))(wbad)
    assert int(np.asarray(summary.flags)) & int(Flags.INVALID_INPUT)
    assert rule_names(int(np.asarray(summary.invalid))) == [
        "body.inertia: physically impossible: a principal moment exceeds the sum of the other two"]
    # a flat plate sits on the inequality (I_z = I_x + I_y) and is fine; the shapes are
    plate = shapes.box((0.1, 0.1, 1e-6), 0.37)
    for b in (box, plate, shapes.regular_prism(5, 0.06, 0.1, 0.37), shapes.box((0.2, 0.05, 0.05), 0.185)):
        assert rule_names(int(jax.jit(broken_rules)(_single(b), _rest()))) == []


def test_centre_of_mass_outside_the_hull_is_refused_eagerly_and_flagged_under_jit():
    box = shapes.box()
    out = box.replace(vertices=box.vertices + jnp.array([0.25, 0.0, 0.0]))  # the origin 0.2 m out of the hull
    with pytest.raises(ValueError, match="body.vertices: the centre of mass .* lies 0.2 m outside the hull"):
        jc.rollout(jc.Model(law=jc.CoulombLCP()), _single(out), _rest(), 2)
    assert rule_names(int(jax.jit(broken_rules)(_single(out), _rest()))) == [
        "body.vertices: the centre of mass (the origin) lies outside the hull of the vertices"]
    # padded vertices far away do not count (vertex_mask)
    padded = shapes.box(pad_to=10)
    padded = padded.replace(vertices=padded.vertices.at[8:].set(1.0))
    assert rule_names(int(jax.jit(broken_rules)(_single(padded), _rest()))) == []
    jc.validation.validate_body(padded)
    # on a face (within the tolerance) is inside; a planar polygon too
    face = box.replace(vertices=box.vertices + jnp.array([0.05, 0.0, 0.0]))
    jc.validation.validate_body(face)
    jc.validation.validate_body(shapes.box2d())


# --- 8. bodies starting inside each other -------------------------------------------------------------

def test_overlapping_start_warns_with_pair_depth_and_time():
    scene, params, s = scenes.cradle(2, gap=-0.005, speed=0.0, restitution=0.0)
    with pytest.warns(PenetrationWarning, match=r"bodies \(0, 1\) by 0.005 m; pairs are pushed apart at no more than "
                                                 r"max_correction_speed = 0.02 m/s .* about 0.25 s \(125 steps\)"):
        traj, infos = worlds.rollout(MODEL, scene, params, s, STEPS)
    assert "body pairs: pushed apart at no more than Model.max_correction_speed" in jc.diagnostics.report(infos)
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), s)
    with pytest.warns(PenetrationWarning, match=r"2 of 2 worlds start with bodies inside each other"):
        worlds.batch_rollout(MODEL, scene, params, states, STEPS, output="final")
    # the overlap is real and the pair is not projected out: still about 4.8 mm deep after the
    # 5 steps of 2 ms (pushed apart at 0.02 m/s)
    overlaps = worlds.contacts.start_overlaps
    assert float(overlaps(MODEL, scene, params, s)[0]) == pytest.approx(0.005, rel=1e-6)
    end = jax.tree_util.tree_map(lambda x: x[-1], traj)
    assert 0.0045 < float(overlaps(MODEL, scene, params, end)[0]) < 0.005


def test_docs_scenes_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PenetrationWarning)
        for scene, params, s in (scenes.stack(2), scenes.cradle(2), scenes.heap(2)):
            _, summary = worlds.rollout(MODEL, scene, params, s, STEPS, output="final")
            assert not int(np.asarray(summary.flags)) & int(Flags.PENETRATION)


# --- 9. the command line applies --mu, --restitution, --dt to scenes or refuses ----------------------

def test_cli_scene_applies_mu_restitution_dt(tmp_path, capsys):
    from jaxcontact.cli import main

    out = tmp_path / "c.npz"
    assert main(["simulate", "--scene", "cradle:2", "--mu", "0.9", "--restitution", "0", "--dt", "0.01",
                 "--steps", "3", "--out", str(out), "--no-progress"]) == 0
    d = np.load(out)
    assert float(d["dt"]) == 0.01 and float(d["restitution"]) == 0.0 and np.allclose(d["mu"], 0.9)
    vel = d["states"][-1, :, 7:10]
    # the first box hit the second in the first 10 ms step: inelastic (ε = 0), the two move together
    # (ε = 1 would stop the first); friction 0.9 on the ground slows them (μ = 0 would keep 0.5 m/s)
    assert abs(vel[0, 0] - vel[1, 0]) < 0.05
    assert 0.1 < vel[0, 0] < 0.45
    assert main(["simulate", "--scene", "cradle:2", "--shape", "pentagon", "--out", str(tmp_path / "p.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("jaxcontact: error: --shape pentagon: a --scene is a world of 0.1 m boxes")
    assert main(["simulate", "--scene", "stack:2", "--throws", "5", "--out", str(tmp_path / "t.npz")]) == 2
    assert not (tmp_path / "p.npz").exists() and not (tmp_path / "t.npz").exists()
