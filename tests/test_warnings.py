"""Warnings that mean something (issue 50): a ``SolverWarning`` only where a capped contact solve
is measurably off (``dynamics.SOLVER_ACCURACY``), with its numbers; reports that count what they
report; the CLI's warning over the whole rollout, naming a CLI option.

The README's examples and the two-box strike run without a ``SolverWarning``; a solve capped at
one or two sweeps still warns, eagerly and in the flags under ``jit`` (the same criterion)."""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import diagnostics, dynamics, worlds
from jaxcontact.worlds import billiards, scenes

DT = 0.002


def _cast(tree, dtype):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)
                                  else x, tree)


def _readme(dtype, law=None):
    law = law or jc.CoulombLCP()
    model = jc.Model(law=law, dt=DT)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
    return model, _cast(params, dtype)


@pytest.mark.parametrize("x64", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["float32", "float64"])
def test_readme_minimal_example_does_not_warn(x64):
    """The README's minimal example (one step, a 500-step rollout, 64 random throws for 800 steps)
    as a user runs it (float32: x64 off, so the throws are drawn as the README's are) and as the
    tests do (float64) raises no SolverWarning. Its one float32 throw that stops at the 100-sweep
    cap (residual 1.8e-3 m/s) ends within 24 µm of the same throw with a converged solve
    (``benchmarks.solver_warnings``, docs/ARCHITECTURE.md): not measurably off."""
    with jax.enable_x64(x64):
        law = jc.CoulombLCP()
        model = jc.Model(law=law, dt=DT)
        params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
        start = jc.make_state(pos=[0, 0, 0.3], vel=[1.0, 0, 0])
        throws = jc.states.random_throws(jax.random.PRNGKey(0), 64)
        with warnings.catch_warnings():
            warnings.simplefilter("error", jc.SolverWarning)
            jc.step(model, params, start)
            traj = jc.rollout(model, params, start, 500)
            final, summary = jc.batch_rollout(model, params, throws, 800, with_info=True)  # as the README's, + flags
        assert final.pos.dtype == (jnp.float64 if x64 else jnp.float32)
        assert float(traj.pos[-1, 2]) == pytest.approx(0.05, abs=1e-3)
        assert not np.any(np.asarray(summary.flags) & int(jc.Flags.SOLVER))  # the flags agree with the warning
        assert np.all(np.isfinite(np.asarray(final.pos)))


def test_failed_solve_warns_with_its_numbers_and_the_flags_agree():
    """A solve capped at one sweep at a landing is off by far more than SOLVER_ACCURACY: the eager
    rollout warns with the first step and the largest residual (m/s); the same steps are flagged in
    the infos and in the Summary under jit; float32 too."""
    law = jc.CoulombLCP(solver=jc.LCPSettings(max_iter=1, tol=1e-12))
    for dtype in ("float64", "float32"):
        model, params = _readme(dtype, law)
        s = _cast(jc.make_state(pos=[0, 0, 0.06], vel=[1.0, 0, -1.0], omega=[1.0, 2.0, 0.0]), dtype)
        with pytest.warns(jc.SolverWarning, match=r"did not converge for the body \(first at step (\d+); "
                                                  r"largest residual ([0-9.e+-]+) m/s") as w:
            _, info = jc.rollout(model, params, s, 10, with_info=True)
        assert w[0].filename == __file__
        step, worst = re.search(r"first at step (\d+); largest residual ([0-9.e+-]+) m/s", str(w[0].message)).groups()
        flagged = (np.asarray(info.flags) & int(jc.Flags.SOLVER)) != 0
        res = np.asarray(info.residual)
        assert int(step) == int(np.argmax(flagged))
        assert float(worst) == pytest.approx(res[flagged].max(), rel=0.05) and float(worst) > dynamics.SOLVER_ACCURACY
        assert "--" not in str(w[0].message)  # the API's advice, not a CLI option
        # the flag is the criterion: the cap reached above the tolerance and SOLVER_ACCURACY
        expect = (np.asarray(info.iterations) >= 1) & (res > dynamics.SOLVER_ACCURACY)
        np.testing.assert_array_equal(flagged, expect | (res > dynamics.SOLVER_RESIDUAL_LIMIT))
        _, summary = jax.jit(lambda p, x: jc.rollout(model, p, x, 10, output="final", with_info=True))(params, s)
        assert int(summary.first_step[list(jc.Flags).index(jc.Flags.SOLVER)]) == int(step)


def test_capped_solve_below_the_accuracy_is_not_flagged():
    """A solve that reaches its cap with a residual above its tolerance but below SOLVER_ACCURACY:
    two sweeps on a box sliding and spinning on its face (residual about 1.4e-3 m/s) — no flag, no
    warning; the residual is still in the infos. With the disc's active-set polish after the two
    sweeps (``forward_active_set=1``), the same solves land on the fixed point (residual at round-off)."""
    s = jc.make_state(pos=[0, 0, 0.05], vel=[0.5, 0, 0], omega=[0, 0, 3.0])
    polished, params = _readme("float64", jc.CoulombLCP(solver=jc.LCPSettings(max_iter=2, tol=1e-12, forward_active_set=1)))
    _, info = jc.rollout(polished, params, s, 5, with_info=True)
    assert np.all(np.asarray(info.iterations) == 2) and np.all(np.asarray(info.residual) < 1e-15)
    law = jc.CoulombLCP(solver=jc.LCPSettings(max_iter=2, tol=1e-12))
    model, params = _readme("float64", law)
    with warnings.catch_warnings():
        warnings.simplefilter("error", jc.SolverWarning)
        _, info = jc.rollout(model, params, s, 5, with_info=True)
    res = np.asarray(info.residual)
    assert np.all(np.asarray(info.iterations) == 2) and np.all((res > 1e-12) & (res < dynamics.SOLVER_ACCURACY))
    assert not np.any(np.asarray(info.flags) & int(jc.Flags.SOLVER))


def test_two_box_strike_does_not_warn_and_matches_the_hand_calculation():
    """docs/worlds.md's strike (notebooks/worlds.ipynb): the pusher at 2 m/s into a resting box
    0.15 m ahead (μ = 0.3, ε = 0.5). The impact step stops at the 1,000-sweep cap a little above its
    1e-5 m/s tolerance, not measurably off: no SolverWarning, no step flagged, and both boxes rest
    within 5 mm of the hand calculation (it ignores the friction during the impact step)."""
    model, scene, params, state = billiards.world()
    mu, eps, g = 0.3, 0.5, model.gravity
    with warnings.catch_warnings():
        warnings.simplefilter("error", jc.SolverWarning)
        traj, info = worlds.rollout(model, scene, params, billiards.launched(state, jnp.array([2.0, 0.0])), 500)
    assert not np.any(np.asarray(info.flags) & int(jc.Flags.SOLVER))
    v_in = np.sqrt(2.0**2 - 2 * mu * g * 0.05)
    pusher = 0.05 + ((1 - eps) * v_in / 2) ** 2 / (2 * mu * g)
    struck = 0.15 + ((1 + eps) * v_in / 2) ** 2 / (2 * mu * g)
    x = np.asarray(traj.pos[-1, :, 0])
    assert abs(x[0] - pusher) < 5e-3 and abs(x[1] - struck) < 5e-3, (x, pusher, struck)
    assert np.abs(np.asarray(traj.vel[-1])).max() < 1e-4


@pytest.mark.parametrize("n", [3, pytest.param(10, marks=pytest.mark.slow)])
def test_report_of_a_ten_box_world_counts_the_world_and_its_bodies(n):
    """``diagnostics.report`` of an n-box stack's Summary and of its infos: one world of n bodies
    (of 10 it said "all 1 bodies clean"; the 10-box world, the issue's, in the slow tier)."""
    scene, params, s = scenes.stack(n)
    model = worlds.model()
    _, summary = worlds.rollout(model, scene, params, s, 3, output="final")
    _, info = worlds.rollout(model, scene, params, s, 3)
    for x in (summary, info):
        text = diagnostics.report(x)
        assert text.startswith(f"the world ({n} bodies) clean"), text
    assert summary.unit == "worlds" and summary.bodies == n
    # a single body's report is unchanged in kind
    model1, params1 = _readme("float64")
    _, summary1 = jc.rollout(model1, params1, jc.make_state(pos=[0, 0, 0.3]), 3, output="final", with_info=True)
    assert diagnostics.report(summary1).startswith("the body clean")


def test_report_of_a_flagged_world_says_how_many_bodies():
    """A flagged world's line keeps its count of worlds and adds the bodies per world."""
    law = dataclasses_replace_cap(scenes.DEFAULT_LAW, 1)
    model, scene, params, state = billiards.world()
    model = worlds.model(law)
    with pytest.warns(jc.SolverWarning, match=r"did not converge for the world \(first at step \d+; largest residual"):
        _, info = worlds.rollout(model, scene, params, billiards.launched(state, jnp.array([2.0, 0.0])), 60)
    text = diagnostics.report(info)
    assert re.search(r"1 of 1 worlds had solver not converged \(first at step \d+; worlds 0; 2 bodies per world\)",
                     text), text
    # the eager steps warn as the rollout does, at the caller's line (its first step is the flagged one)
    assert int(info.flags[0]) & jc.Flags.SOLVER
    launched = billiards.launched(state, jnp.array([2.0, 0.0]))
    for door in (worlds.step, worlds.step_with_info):
        with pytest.warns(jc.SolverWarning, match=r"did not converge for the world \(first at step 0; largest") as rec:
            door(model, scene, params, launched)
        assert [r.filename for r in rec] == [__file__]


def dataclasses_replace_cap(law, cap):
    import dataclasses

    return dataclasses.replace(law, solver=dataclasses.replace(law.solver, max_iter=cap))


@pytest.mark.slow
def test_cli_warning_names_an_option_and_counts_steps_over_the_whole_rollout(tmp_path, capsys):
    """``jaxcontact simulate`` with a solver capped at one sweep: one line on stderr (not a Python
    warning pointing at simulate.py) naming --max-sweeps, with the first flagged step counted from
    the start of the rollout (the rollout runs in chunks of 100 steps; the first landing is after
    step 100), equal to the library's own first flagged step."""
    from jaxcontact.cli import main

    out = tmp_path / "t.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("error", jc.SolverWarning)  # no Python warning escapes
        assert main(["simulate", "--throws", "16", "--steps", "200", "--seed", "0", "--max-sweeps", "1",
                     "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    m = re.search(r"jaxcontact simulate: warning: the contact solver did not converge for (\d+) of 16 throws, at "
                  r"\d+ steps in all \(first at step (\d+); largest residual [0-9.e+-]+ m/s", err)
    assert m, err
    assert "--max-sweeps (now 1)" in err and "with_info" not in err
    law = jc.CoulombLCP(solver=jc.LCPSettings(max_iter=1))
    model = jc.Model(law=law, dt=DT, max_contacts=4)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.18))
    throws = jc.states.random_throws(jax.random.PRNGKey(0), 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.SolverWarning)
        _, summary = jc.batch_rollout(model, params, throws, 200, with_info=True)
    first = np.asarray(summary.first_step)[:, list(jc.Flags).index(jc.Flags.SOLVER)]
    assert int(m.group(1)) == int((first >= 0).sum())
    assert int(m.group(2)) == int(first[first >= 0].min()) > 100


def test_the_sharded_doors_warn_a_failed_solve_at_the_callers_line():
    """The one eager wrapper (``doors.enter``) serves the sharded doors too, which once stayed silent: a box's
    solve capped at one sweep (as ``test_checks``' ``rollout``) warns from ``sharding.sharded_batch_rollout`` and,
    as a world of one box, from ``worlds.sharded_batch_rollout``, with ``batch_rollout``'s words, at the caller's
    line; ``batch_rollout(validate=False)`` stays silent."""
    from jaxcontact.sharding import sharded_batch_rollout

    capped = jc.Model(law=jc.CoulombLCP(solver=jc.LCPSettings(max_iter=1, tol=1e-12, cone="box")), dt=DT)
    box = jc.shapes.box(0.1, 0.37)
    params = jc.Params(body=box, ground=jc.Ground.flat(), law=capped.law.init_params(mu=0.18))
    rest = jc.make_state(pos=[0, 0, 0.05], vel=[0.5, 0, 0], omega=[0, 0, 3.0])
    scene, stacked = worlds.make_scene([box])
    doors = {
        "bodies": (lambda s: sharded_batch_rollout(capped, params, s, 2), "2 of 2 bodies"),
        "worlds": (lambda s: worlds.sharded_batch_rollout(capped, scene, params.replace(body=stacked),
                                                           jax.tree_util.tree_map(lambda x: x[:, None], s), 2),
                   "2 of 2 worlds"),
    }
    two = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), rest)
    for name, (door, who) in doors.items():
        with pytest.warns(jc.SolverWarning, match=rf"did not converge for {who} \(first at step 0") as rec:
            door(two)
        assert [r.filename for r in rec if r.category is jc.SolverWarning] == [__file__], name
    with warnings.catch_warnings():  # batch_rollout(validate=False): no check, no warning (the flags report)
        warnings.simplefilter("error")
        jc.batch_rollout(capped, params, two, 2, validate=False)
