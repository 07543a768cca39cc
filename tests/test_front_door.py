"""One front door: ``jaxcontact.step``/``step_with_info``/``rollout``/``batch_rollout`` step a single body,
a world (``scene=``) and a chain (a ``chains.ChainModel``), each exactly as its own door does, and refuse
by name a setting the system does not have."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import chains, shapes, worlds
from jaxcontact.validation import ArgumentError

LAW = jc.CoulombLCP()
MODEL = jc.Model(law=LAW)
STEPS = 3


def _world():
    """Two boxes on the ground apart (no pairs: the per-body route, a quick compile), falling and sliding."""
    scene, body = worlds.make_scene([shapes.box()] * 2, pairs=[])
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=LAW.init_params(mu=0.3))
    state = jc.State(pos=jnp.array([[0.0, 0.0, 0.06], [0.5, 0.0, 0.08]]), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)),
                     vel=jnp.array([[0.5, 0.0, -0.3], [0.0, 0.2, -0.1]]), omega=jnp.zeros((2, 3)))
    return scene, params, state


def _same(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_front_door_steps_a_world_as_its_own_door():
    """A world (``scene=``) through ``jc.rollout`` gives ``worlds.rollout``'s answer bit for bit, the infos only
    with ``with_info`` (as a body's)."""
    scene, params, state = _world()
    traj, infos = worlds.rollout(MODEL, scene, params, state, STEPS)
    _same(jc.rollout(MODEL, params, state, STEPS, scene=scene, with_info=True), (traj, infos))
    _same(jc.rollout(MODEL, params, state, STEPS, scene=scene), traj)
    assert traj.pos.shape == (STEPS + 1, 2, 3) and float(jnp.max(jnp.abs(traj.pos[-1] - state.pos))) > 1e-3


@pytest.mark.slow
def test_the_front_door_steps_and_batches_worlds_and_chains_as_their_own_doors():
    """``jc.step``/``step_with_info`` and ``jc.batch_rollout`` (a body's default, ``output="final"``) of a world
    are ``worlds.step``'s, ``step_with_info``'s and ``batch_rollout``'s; a chain (``ChainModel``) through
    ``jc.rollout``/``step_with_info`` is ``chains.rollout``'s and ``chains.step_with_info``'s, bit for bit."""
    scene, params, state = _world()
    _same(jc.step_with_info(MODEL, params, state, scene=scene), worlds.step_with_info(MODEL, scene, params, state))
    _same(jc.step(MODEL, params, state, scene=scene), worlds.step(MODEL, scene, params, state))
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    final = jc.batch_rollout(MODEL, params, batch, STEPS, scene=scene)
    _same(final, worlds.batch_rollout(MODEL, scene, params, batch, STEPS, output="final")[0])
    _same(jc.batch_rollout(MODEL, params, batch, STEPS, scene=scene, with_info=True, output="trajectory"),
          worlds.batch_rollout(MODEL, scene, params, batch, STEPS))
    cmodel = chains.ChainModel()
    cparams = chains.make_chain(pin=(0.0, 0.0, 0.45))
    s0 = chains.horizontal_state(cparams)
    _same(jc.rollout(cmodel, cparams, s0, STEPS), chains.rollout(cmodel, cparams, s0, STEPS)[0])
    _same(jc.step_with_info(cmodel, cparams, s0), chains.step_with_info(cmodel, cparams, s0))


def test_the_front_door_refuses_what_a_system_does_not_have():
    """A body's settings given to a world, controls to a chain, a scene with a chain, a world's controls to
    a batch of bodies, an unknown start: refused by name before anything runs."""
    scene, params, state = _world()
    cmodel, cparams = chains.ChainModel(), chains.make_chain(pin=(0.0, 0.0, 0.45))
    s0 = chains.horizontal_state(cparams)
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    cases = [
        (lambda: jc.batch_rollout(MODEL, params, batch, 2, scene=scene, params_batched=True), r"params_batched .* world"),
        (lambda: jc.batch_rollout(MODEL, params, batch, 2, scene=scene, chunk_size=8), r"chunk_size .* world"),
        (lambda: jc.batch_rollout(MODEL, params, batch, 2, scene=scene, validate=False), r"validate .* world"),
        (lambda: jc.rollout(cmodel, cparams, s0, 2, controls=jnp.zeros((2, 3, 6))), r"controls .* chain"),
        (lambda: jc.step(cmodel, cparams, s0, jnp.zeros((3, 6))), r"control .* chain"),
        (lambda: jc.step(cmodel, cparams, s0, scene=scene), r"a chain is its own world"),
        (lambda: jc.batch_rollout(MODEL, params, batch, 2, controls=jnp.zeros((2, 2, 2, 6))), r"batch of bodies"),
        (lambda: jc.rollout(MODEL, params, state, 2, scene=scene, start="later"), r"start"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()
    with pytest.raises(ArgumentError, match=r"scene"):
        jc.rollout(MODEL, params, state, 2, scene="the heap")
