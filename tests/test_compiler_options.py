"""A world's programs compiled by the eager entry points on a CPU (``pipeline.CPU_COMPILER_OPTIONS``:
no YNNPACK fusions): the program has none of them, and the answer is the one of XLA's defaults (the
same program traced under a user's ``jit``) to round-off."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import shapes, worlds
from jaxcontact.worlds import pipeline

MODEL = worlds.model()
STEPS = 30
I4 = (1.0, 0.0, 0.0, 0.0)

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="the options are a CPU's")


def _world(dtype=jnp.float64, n=3):
    """A box falling onto a box on the ground and a sphere rolling into it: body–body and ground contacts
    (``n`` = 2: the box on the ground and the sphere; 1: the box alone)."""
    scene, body = worlds.make_scene([shapes.box(0.1, 1.0), shapes.box(0.08, 0.5), shapes.sphere(0.03, 0.2)][:n])
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=jc.CoulombLCP.init_params(mu=0.5))
    state = jc.State(pos=jnp.asarray([[0.0, 0.0, 0.05], [0.01, 0.0, 0.16], [0.12, 0.0, 0.03]]),
                     quat=jnp.asarray([I4, (0.9962, 0.0, 0.0872, 0.0), I4]),
                     vel=jnp.asarray([[0.0, 0.0, 0.0], [0.0, 0.0, -0.3], [-0.4, 0.0, 0.0]]), omega=jnp.zeros((3, 3)))
    state = jax.tree_util.tree_map(lambda x: x[np.asarray([0, 2][:n])] if n < 3 else x, state)
    cast = lambda t: jax.tree_util.tree_map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, t)
    return scene, cast(params), cast(state)


def test_the_eager_program_has_no_ynn_fusions():
    """The world's program the eager rollout compiles (``top_level(rollout_jit)``, a one-box world) has
    no YNNPACK fusion (XLA's default compile of it has some: ``benchmarks.heap_cpu`` counts them)."""
    scene, params, state = _world(jnp.float32, n=1)
    top = pipeline.top_level(pipeline.rollout_jit).lower(pipeline.RolloutSpec(MODEL, scene, 1, "final"), params, state, None).compile()
    assert "fusion" in top.as_text() and "__ynn_fusion" not in top.as_text()
    assert pipeline.compiler_options() == dict(pipeline.CPU_COMPILER_OPTIONS)


def test_an_xla_without_the_options_gets_its_defaults(monkeypatch):
    """An older XLA (jax 0.7, pyproject's lower bound) refuses the YNNPACK option by name when a
    program is compiled: ``cpu_options`` asks once and answers ``()``, ``compiler_options`` None, so
    the eager entry points compile with XLA's defaults there (an option this XLA lacks stands in)."""
    monkeypatch.setattr(pipeline, "CPU_COMPILER_OPTIONS", (("xla_cpu_no_such_option_here", ""),))
    assert pipeline.cpu_options.__wrapped__() == ()
    monkeypatch.setattr(pipeline, "cpu_options", pipeline.cpu_options.__wrapped__)
    assert pipeline.compiler_options() is None


@pytest.mark.slow
def test_eager_entry_points_give_the_traced_answer():
    """Eager ``rollout``, ``batch_rollout`` and ``sharded_batch_rollout`` compile their programs with
    the options (``top_level``'s cache grows), and give the answer of the same calls traced inside a
    user's ``jit`` (XLA's defaults) within 1e-8 m in float64 (a 30-step landing and roll-in: the
    sums' order differs by round-off, 1e-17 m at step 20 at the tests' LLVM level, grown by the
    landing's solves to 3e-9 m at step 30; bitwise at XLA's default level); the batch's worlds are
    the single world's."""
    scene, params, state = _world()
    before = pipeline.top_level(pipeline.rollout_jit)._cache_size()
    eager = worlds.rollout(MODEL, scene, params, state, STEPS, output="final")[0]
    traced = jax.jit(lambda p, s: worlds.rollout(MODEL, scene, p, s, STEPS, output="final")[0])(params, state)
    assert pipeline.top_level(pipeline.rollout_jit)._cache_size() == before + 1
    assert float(jnp.max(jnp.abs(eager.pos - state.pos))) > 1e-2  # it moved
    for other in (traced,):
        np.testing.assert_allclose(np.asarray(eager.pos), np.asarray(other.pos), atol=1e-8)
        np.testing.assert_allclose(np.asarray(eager.quat), np.asarray(other.quat), rtol=0, atol=1e-7)
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    batches = pipeline.top_level(pipeline.batch_jit)._cache_size()
    batch = worlds.batch_rollout(MODEL, scene, params, states, STEPS, output="final")[0]
    sharded = worlds.sharded_batch_rollout(MODEL, scene, params, states, STEPS, output="final")[0]
    assert pipeline.top_level(pipeline.batch_jit)._cache_size() == batches + 1
    for out in (batch, sharded):
        np.testing.assert_allclose(np.asarray(out.pos), np.asarray(jnp.stack([eager.pos] * 2)), atol=1e-8)
