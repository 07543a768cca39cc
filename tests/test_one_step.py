"""One step for every system (``worlds.pipeline.step_stages``): a single body is a world of one
body, bodies that cannot touch each other each call their law against the ground exactly as a
single body does (so every law, learned ones included, runs in a world without pairs), and a
law without a coupled solve is refused by name where a world needs one."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import chains, diagnostics, shapes, worlds
from jaxcontact.contactnets.functions import ContactFunctions
from jaxcontact.contactnets.laws import ContactNetsLaw, E2ELaw
from jaxcontact.dacm.law import DACMLaw, PDDLaw
from jaxcontact.laws.coulomb import mix_friction

SMALL = (16,)
LEARNED = {
    "dacm": lambda: (DACMLaw(clf_hidden=SMALL, reg_hidden=SMALL, friction_target="ratio", inputs="coulomb",
                             friction_head="residual", dissipative=True), dict(key=jax.random.PRNGKey(2))),
    "pdd": lambda: (PDDLaw(hidden=SMALL), dict(key=jax.random.PRNGKey(3))),
    "contactnets": lambda: (ContactNetsLaw(ContactFunctions("polytope")), dict(mu=0.3)),
    "e2e": lambda: (E2ELaw(hidden=(16, 16)), dict(key=jax.random.PRNGKey(4))),
}
STEPS = 12


def _throws(n):
    """Boxes 1–3 mm above the ground, falling, sliding and spinning."""
    k = jnp.arange(n, dtype=float)
    return jc.State(pos=jnp.stack([0.3 * k, 0.1 * k, 0.051 + 1e-3 * k], 1),
                    quat=jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (n, 1)),
                    vel=jnp.stack([0.5 - 0.4 * k, 0.2 * k, -0.5 + 0.1 * k], 1),
                    omega=jnp.stack([0.3 * k, 0.0 * k, 1.0 - k], 1))


def _world(law, law_params, n, **scene_kw):
    box = shapes.box()
    scene, body = worlds.make_scene([box] * n, **scene_kw)
    return scene, jc.Params(body=body, ground=jc.Ground.flat(), law=law_params), box


def test_a_single_body_is_a_world_of_one_body():
    """``jaxcontact.rollout`` is the world rollout of a one-body world without pairs: the same
    trajectory, bit for bit, and its ``ContactInfo`` is the world info's ``contacts``, compiled
    alike (both inside one ``jit``). Eagerly a world's program is compiled with its CPU options
    (``pipeline.CPU_COMPILER_OPTIONS``), the body's with XLA's defaults: the same within round-off."""
    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    scene, params, box = _world(law, law.init_params(mu=0.3, restitution=0.2), 1)
    s = jc.make_state(pos=(0.0, 0.0, 0.2), vel=(1.0, 0.0, -0.5), omega=(1.0, 2.0, 0.3))
    one = jax.tree_util.tree_map(lambda x: x[None], s)

    @jax.jit
    def both(params, s, one):
        return (worlds.rollout(model, scene, params, one, 150),
                jc.rollout(model, params.replace(body=box), s, 150, with_info=True))

    (traj, winfo), (ref, info) = both(params, s, one)
    for a, b in zip(jax.tree_util.tree_leaves(traj), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_array_equal(np.asarray(a)[:, 0], np.asarray(b))
    np.testing.assert_array_equal(np.asarray(winfo.contacts.impulse)[:, 0], np.asarray(info.impulse))
    np.testing.assert_array_equal(np.asarray(winfo.flags), np.asarray(info.flags))
    eager, _ = worlds.rollout(model, scene, params, one, 150)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(ref)):
        np.testing.assert_allclose(np.asarray(a)[:, 0], np.asarray(b), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n if n == "dacm" else pytest.param(n, marks=pytest.mark.slow) for n in LEARNED])
def test_learned_law_runs_in_a_world_without_pairs(name):
    """A learned ground law in a world of three boxes without pairs: each box moves as the same
    box alone under ``batch_rollout`` (to 1e-12 m where both compile alike, inside one ``jit``: eagerly a
    world compiles with its CPU options, ``pipeline.CPU_COMPILER_OPTIONS``), and the world's info carries
    each box's ``ContactInfo``."""
    law, kw = LEARNED[name]()
    model = jc.Model(law=law)
    lp = law.init_params(**kw)
    if name == "pdd":  # an untrained PDD predicts O(1) N·s wrenches: scale them to the box's weight
        lp = jax.tree_util.tree_map_with_path(lambda p, x: x * 1e-3 if "y_std" in jax.tree_util.keystr(p) else x, lp)
    scene, params, box = _world(law, lp, 3, pairs=[])
    states = _throws(3)
    (traj, winfo), ref = jax.jit(lambda p, s: (worlds.rollout(model, scene, p, s, STEPS),
                                               jc.batch_rollout(model, p.replace(body=box), s, STEPS,
                                                                output="trajectory")))(params, states)
    np.testing.assert_allclose(np.asarray(traj.pos), np.swapaxes(np.asarray(ref.pos), 0, 1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(traj.quat), np.swapaxes(np.asarray(ref.quat), 0, 1), rtol=0, atol=1e-12)
    assert winfo.contacts is not None and winfo.contacts.phi.shape[:2] == (STEPS, 3)
    assert np.all(np.isfinite(np.asarray(traj.pos)))


@pytest.mark.parametrize("name", list(LEARNED))
def test_learned_law_refused_by_name_where_a_world_couples_bodies(name):
    """With body–body pairs (or joints) a world needs a coupled solve, which a ground law has not:
    refused before compiling, naming the law, in ``rollout``, ``step`` and ``batch_rollout``."""
    law, kw = LEARNED[name]()
    model = jc.Model(law=law)
    scene, params, _ = _world(law, law.init_params(**kw), 2)
    states = _throws(2)
    with pytest.raises(ValueError, match=f"{type(law).__name__} describes a body against the ground only.*needs a law "
                                         "with a coupled solve"):
        worlds.rollout(model, scene, params, states, 3)
    with pytest.raises(ValueError, match=type(law).__name__):
        worlds.step(model, scene, params, states)
    with pytest.raises(ValueError, match=type(law).__name__):
        batch = jax.tree_util.tree_map(lambda x: x[None], states)
        jax.jit(lambda s: worlds.batch_rollout(model, scene, params, s, 3))(batch)


def test_jointed_world_with_a_ground_law_is_refused_by_name():
    """Joints couple bodies as pairs do (a chain is a world with joints): a ground law is refused."""
    params = chains.make_chain(pin=(0.0, 0.0, 0.45))
    _, scene, wparams = chains.as_world(chains.ChainModel(), params)
    model = jc.Model(law=E2ELaw(hidden=(8,)), max_correction_speed=None)
    with pytest.raises(ValueError, match="E2ELaw describes a body against the ground only.*pairs or joints"):
        worlds.rollout(model, scene, wparams, chains.horizontal_state(params), 2)


def test_per_body_route_takes_the_materials_and_the_scene_candidates():
    """Without pairs, each body's law gets its own material (``body.friction`` mixed with the law's
    μ, ``ContactLaw.with_friction``) and the model's ``max_contacts`` (the one count of ground
    contacts): a world of two boxes of μ 0.1 and 0.9 on 4 candidates each moves as two single boxes
    with those μ and ``max_contacts=4``."""
    law = jc.CoulombLCP()
    lp = law.init_params(mu=0.5)
    box = shapes.box()
    scene, body = worlds.make_scene([box, box], pairs=[])
    friction = jnp.array([0.1, 0.9])
    params = jc.Params(body=body.replace(friction=friction), ground=jc.Ground.flat(), law=lp)
    states = _throws(2)
    traj, _ = worlds.rollout(jc.Model(law=law, max_contacts=4), scene, params, states, 60)
    for i in range(2):
        one = jc.Params(body=box, ground=jc.Ground.flat(), law=lp.replace(mu=mix_friction(friction[i], lp.mu)))
        ref = jc.rollout(jc.Model(law=law, max_contacts=4), one, jax.tree_util.tree_map(lambda x: x[i], states), 60)
        np.testing.assert_allclose(np.asarray(traj.pos[:, i]), np.asarray(ref.pos), rtol=0, atol=1e-12)
    # the materials matter here: the two boxes slide differently
    assert float(jnp.linalg.norm(traj.vel[-1, 0, :2] - traj.vel[-1, 1, :2])) > 1e-2


def test_per_body_route_flags_every_body_under_jit():
    """A non-finite body among independent ones is flagged under ``jit`` (the world's flags are the
    OR of the bodies'; ``contacts.flags`` says which body)."""
    law = jc.CoulombLCP()
    scene, params, _ = _world(law, law.init_params(mu=0.3), 3, pairs=[])
    states = _throws(3)
    states = states.replace(vel=states.vel.at[1, 0].set(jnp.nan))
    _, info = jax.jit(lambda s: worlds.step_with_info(jc.Model(law=law), scene, params, s))(states)
    assert int(info.flags) & int(jc.Flags.NONFINITE) and int(info.flags) & int(jc.Flags.INVALID_INPUT)
    per_body = np.asarray(info.contacts.flags) & int(jc.Flags.NONFINITE)
    assert per_body[1] and not per_body[0] and not per_body[2]


def test_a_law_without_the_protocol_members_is_refused():
    """The step reads a law's optional members directly (declared by ``LawDefaults``); a law that
    lacks them is refused when the model is built, naming them."""

    @dataclasses.dataclass(frozen=True)
    class Bare:
        def __call__(self, model, params, state, v_free):
            return jnp.zeros_like(v_free), None

    with pytest.raises(ValueError, match="lacks the contact-law protocol's members body_geometry.*LawDefaults"):
        jc.Model(law=Bare())


def test_a_chain_reports_as_a_chain():
    """A chain's info is the world's info type, counted as chains by ``diagnostics.report``."""
    params = chains.make_chain(pin=(0.0, 0.0, 2.0))
    s0 = chains.planar_state(params, jnp.array([0.3, -0.4, 0.5]))
    _, info = chains.rollout(chains.ChainModel(), params, s0, 3)
    assert isinstance(info, worlds.WorldInfo) and info.unit == "chains"
    assert "chain" in diagnostics.report(info)



@pytest.mark.parametrize("kind", ["per body", "coupled"])
def test_the_step_runs_its_named_stages_in_order_through_its_hook(kind):
    """``step_stages`` runs every named stage (``pipeline.STAGES``) through its ``stage`` hook, once and in
    order, each a function of its arguments alone (no traced value closed over: a profiler that jits a stage
    on its own times the stage, not constants), and the hooked step is the step's own program on both routes."""
    from jaxcontact.worlds import pipeline

    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    scene, params, _ = _world(law, law.init_params(mu=0.3, restitution=0.0), 2,
                              pairs="all" if kind == "coupled" else [])
    state = jax.tree_util.tree_map(lambda *x: jnp.stack(x), jc.make_state(pos=(0.0, 0.0, 0.049), vel=(0.3, 0.0, -0.2)),
                                   jc.make_state(pos=(0.0, 0.099, 0.049), omega=(0.0, 0.0, 1.0)))
    control = jnp.zeros((2, 6))
    warm = pipeline.initial_warm(model, scene, params, state)
    assert pipeline.coupled(scene) == (kind == "coupled")
    seen, consts = [], []

    def recorded(name, fn, *args):
        seen.append(name)
        # a value closed over from the step's own trace would be a tracer among the stage's constants
        consts.append(sum(isinstance(c, jax.core.Tracer) for c in jax.make_jaxpr(fn)(*args).consts))
        return fn(*args)

    # the hooked step traces to the step's own program (compared as jaxprs: nothing compiled)
    ref = jax.make_jaxpr(lambda p, s, u, w: pipeline.step_stages(model, scene, p, s, u, w))(params, state, control, warm)
    got = jax.make_jaxpr(lambda p, s, u, w: pipeline.step_stages(model, scene, p, s, u, w, stage=recorded))(
        params, state, control, warm)
    assert tuple(seen) == pipeline.STAGES and consts == [0] * len(seen), (seen, consts)
    assert str(got) == str(ref)
    assert "while" in str(got) and len(str(got)) > 10_000  # the contact solve and the rest are in it
