"""Every public door refuses an argument of the wrong type by name, first (issue 60, part 2).

Each door (bodies, worlds, chains: step, step_with_info, rollout, batch_rollout, the sharded
rollouts; ``from_mjcf``, ``from_mujoco``, ``to_mjcf``; every law's ``init_params``) is fed each of
its arguments swapped with another of a different type, or replaced by a wrong type: it raises
``validation.ArgumentError`` (a ``TypeError`` and a ``ValueError``), one line naming the door,
the argument, the type it got and the type it needs, before any work: no XLA program is compiled
(counted by a ``jax.monitoring`` listener) and each refusal takes well under a second. The jittable
doors refuse a wrong pytree the same way inside ``jax.jit``.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import chains, sharding, shapes, worlds
from jaxcontact.contactnets.laws import ContactNetsLaw, E2ELaw
from jaxcontact.dacm.law import DACMLaw, PDDLaw
from jaxcontact.validation import ArgumentError

COMPILES = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: COMPILES.append(event) if event == "/jax/core/compile/backend_compile_duration" else None)


def _world_state(n):
    z = jnp.zeros((n, 3))
    return jc.State(pos=z.at[:, 2].set(0.2 + 0.2 * jnp.arange(n)), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (n, 1)),
                    vel=z, omega=z)


def _stack(tree, n=2):
    return jax.tree_util.tree_map(lambda x: jnp.stack([x] * n), tree)


LAW = jc.CoulombLCP()
MODEL = jc.Model(law=LAW, dt=0.002)
PARAMS = jc.Params(body=shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=LAW.init_params(mu=0.3))
STATE = jc.make_state(pos=[0, 0, 0.3])
STATES = _stack(STATE)
SCENE, BODY = worlds.make_scene([shapes.box(0.1, 0.3), shapes.box(0.1, 0.3)])
WPARAMS = jc.Params(body=BODY, ground=jc.Ground.flat(), law=LAW.init_params(mu=0.3))
WSTATE = _world_state(2)
WSTATES = _stack(WSTATE)
WMODEL = worlds.model()
CMODEL = chains.ChainModel()
CPARAMS = chains.make_chain()
CSTATE = chains.horizontal_state(CPARAMS)
CSTATES = _stack(CSTATE)
XML = "<mujoco><worldbody><body><freejoint/><geom type='box' size='.05 .05 .05'/></body></worldbody></mujoco>"

# door name (as the message writes it) -> (the callable, its good arguments in the door's order)
DOORS = {
    "step": (jc.step, dict(model=MODEL, params=PARAMS, state=STATE, control=None)),
    "step_with_info": (jc.step_with_info, dict(model=MODEL, params=PARAMS, state=STATE, control=None)),
    "rollout": (jc.rollout, dict(model=MODEL, params=PARAMS, state=STATE, n_steps=3, controls=None,
                                 output="final", with_info=False)),
    "batch_rollout": (jc.batch_rollout, dict(model=MODEL, params=PARAMS, states=STATES, n_steps=3,
                                             params_batched=False, output="final", with_info=False, validate=True)),
    "sharding.sharded_batch_rollout": (sharding.sharded_batch_rollout, dict(
        model=MODEL, params=PARAMS, states=STATES, n_steps=3, mesh=None, params_batched=False, output="final",
        with_info=False)),
    "worlds.step": (worlds.step, dict(model=WMODEL, scene=SCENE, params=WPARAMS, state=WSTATE, control=None)),
    "worlds.step_with_info": (worlds.step_with_info, dict(model=WMODEL, scene=SCENE, params=WPARAMS, state=WSTATE,
                                                          control=None)),
    "worlds.rollout": (worlds.rollout, dict(model=WMODEL, scene=SCENE, params=WPARAMS, state=WSTATE, n_steps=3,
                                            controls=None, output="final")),
    "worlds.batch_rollout": (worlds.batch_rollout, dict(model=WMODEL, scene=SCENE, params=WPARAMS, states=WSTATES,
                                                        n_steps=3, controls=None, output="final")),
    "worlds.sharded_batch_rollout": (worlds.sharded_batch_rollout, dict(
        model=WMODEL, scene=SCENE, params=WPARAMS, states=WSTATES, n_steps=3, controls=None, mesh=None,
        output="final")),
    "worlds.from_mjcf": (worlds.from_mjcf, dict(source=XML, keyframe=None, approximate=False, dtype=None)),
    "worlds.to_mjcf": (worlds.to_mjcf, dict(scene=SCENE, params=WPARAMS, state=WSTATE, model=None, path=None,
                                            option=None, geom=None, name="jaxcontact")),
    "chains.step": (chains.step, dict(model=CMODEL, params=CPARAMS, state=CSTATE)),
    "chains.step_with_info": (chains.step_with_info, dict(model=CMODEL, params=CPARAMS, state=CSTATE)),
    "chains.rollout": (chains.rollout, dict(model=CMODEL, params=CPARAMS, state=CSTATE, n_steps=3, output="final")),
    "chains.batch_rollout": (chains.batch_rollout, dict(model=CMODEL, params=CPARAMS, states=CSTATES, n_steps=3,
                                                        output="final")),
    "CoulombLCP.init_params": (jc.CoulombLCP.init_params, dict(mu=0.3, restitution=0.0, mu2=None)),
    "RelaxedCoulomb.init_params": (jc.RelaxedCoulomb.init_params, dict(mu=0.3, restitution=0.0, mu2=None)),
    "DACMLaw.init_params": (DACMLaw().init_params, dict(key=None, x_dim=None)),
    "PDDLaw.init_params": (PDDLaw().init_params, dict(key=None)),
    "ContactNetsLaw.init_params": (ContactNetsLaw().init_params, dict(key=None, vertices=None, mu=0.18, noise=0.0,
                                                                       dtype=None)),
    "E2ELaw.init_params": (E2ELaw().init_params, dict(key=None, out_scale=1e-3, dtype=None)),
}
try:
    import mujoco

    DOORS["worlds.from_mujoco"] = (worlds.from_mujoco, dict(model=mujoco.MjModel.from_xml_string(XML), keyframe=None,
                                                            data=None, approximate=False, dtype=None))
except ImportError:  # the [mjcf] extra: from_mujoco's cases are left out
    pass

# wrong values: a string (a float where a string is right) and a pytree no argument takes
WRONG_FOR_STR = {"source": 1.5, "keyframe": 1.5, "name": 1.5, "path": 1.5}
GROUND = jc.Ground.flat()


def _swaps():
    for door, (_, good) in DOORS.items():
        names = list(good)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                # from_mjcf's source of None (or bytes) is refused by from_mjcf's own checks, by value
                if type(good[a]) is not type(good[b]) and not (door == "worlds.from_mjcf" and a == "source"):
                    yield door, a, b


def _wrongs():
    for door, (_, good) in DOORS.items():
        for name in good:
            yield door, name, WRONG_FOR_STR.get(name, "wrong")
            yield door, name, GROUND


def _article(name):
    return ("an " if name[0].lower() in "aeiou" else "a ") + name


def _refused(door, args):
    """Call ``door`` with ``args``; return its one-line refusal, checking it came before any work."""
    fn = DOORS[door][0]
    COMPILES.clear()
    start = time.perf_counter()
    with pytest.raises(ArgumentError) as err:
        fn(**args)
    seconds = time.perf_counter() - start
    msg = str(err.value)
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)
    assert "\n" not in msg, msg
    assert msg.startswith(f"{door}: argument '"), msg
    assert COMPILES == [], (msg, COMPILES)  # refused before anything was compiled
    assert seconds < 1.0, (msg, seconds)
    return msg


@pytest.mark.parametrize("door,a,b", list(_swaps()))
def test_every_door_refuses_two_arguments_swapped(door, a, b):
    good = DOORS[door][1]
    msg = _refused(door, {**good, a: good[b], b: good[a]})
    named = a if msg.startswith(f"{door}: argument '{a}'") else b
    assert msg.startswith(f"{door}: argument '{named}' is "), msg
    other = b if named == a else a
    got = type(good[other])
    assert (f"is {_article(got.__name__)}" in msg if good[other] is not None else "is None," in msg), msg
    assert ", expected " in msg, msg


@pytest.mark.parametrize("door,name,wrong", list(_wrongs()), ids=lambda x: type(x).__name__ if isinstance(x, jc.Ground) else None)
def test_every_door_refuses_a_wrong_type_by_name(door, name, wrong):
    good = DOORS[door][1]
    msg = _refused(door, {**good, name: wrong})
    assert msg.startswith(f"{door}: argument '{name}' is {_article(type(wrong).__name__)}"), msg
    assert ", expected " in msg, msg


def test_the_messages_name_the_needed_type_and_the_known_mistakes():
    """The issue's case and its siblings: make_scene's tuple, the stacked body for params, a law
    for the model, a rollout's output for a state, n_steps given the controls, a list of 3 for μ."""
    msg = _refused("worlds.rollout", {**DOORS["worlds.rollout"][1], "params": BODY})
    assert msg == ("worlds.rollout: argument 'params' is a Body, expected Params (make_scene returns (scene, "
                   "stacked_body): build Params(body=stacked_body, ground=Ground.flat(), law=law.init_params(...)))")
    msg = _refused("worlds.rollout", {**DOORS["worlds.rollout"][1], "scene": (SCENE, BODY)})
    assert "argument 'scene' is a tuple of 2 (Scene, Body), expected Scene (make_scene returns" in msg
    msg = _refused("worlds.rollout", {**DOORS["worlds.rollout"][1], "scene": WPARAMS, "params": SCENE})
    assert msg.startswith("worlds.rollout: argument 'scene' is a Params, expected Scene (swapped with 'params'?")
    msg = _refused("rollout", {**DOORS["rollout"][1], "model": LAW})
    assert "argument 'model' is a CoulombLCP, expected Model (that is a law: build Model(law=law" in msg
    msg = _refused("rollout", {**DOORS["rollout"][1], "params": PARAMS.body})
    assert "expected Params (build Params(body=body, ground=Ground.flat()" in msg
    msg = _refused("rollout", {**DOORS["rollout"][1], "state": (STATE, None)})
    assert "argument 'state' is a tuple of 2 (State, NoneType), expected State or PlanarState (a rollout returns" in msg
    msg = _refused("worlds.rollout", {**DOORS["worlds.rollout"][1], "n_steps": jnp.zeros((3, 2, 6))})
    assert "'n_steps' is an array of shape (3, 2, 6) (float" in msg and "(swapped with 'controls'?" in msg
    msg = _refused("worlds.rollout", {**DOORS["worlds.rollout"][1], "params": CPARAMS})
    assert "expected Params (a chain is a world with joints: model, scene, params = chains.as_world" in msg
    msg = _refused("chains.rollout", {**DOORS["chains.rollout"][1], "model": MODEL})
    assert msg.startswith("chains.rollout: argument 'model' is a Model, expected ChainModel (a chain takes a ChainModel")
    for door in ("CoulombLCP.init_params", "RelaxedCoulomb.init_params"):
        msg = _refused(door, {"mu": [0.3, 0.2, 0.1]})
        assert msg.startswith(f"{door}: argument 'mu' is a list of 3 (float, float, float), expected a friction "
                              "coefficient"), msg
    assert "(jax.random.PRNGKey(seed))" in _refused("DACMLaw.init_params", {"key": 0})
    # NoContact.init_params takes no argument and a keyword a door does not have is Python's own
    # one-line TypeError, naming the door and the argument
    with pytest.raises(TypeError, match=r"NoContact.init_params\(\) takes 0 positional arguments but 1 was given"):
        jc.NoContact.init_params(0.3)
    with pytest.raises(TypeError, match=r"rollout\(\) got an unexpected keyword argument 'with_info'"):
        worlds.rollout(WMODEL, SCENE, WPARAMS, WSTATE, 3, with_info=True)
    # what stays accepted: the pair (μ₁, μ₂) as a list, NumPy scalars, a NumPy integer step count
    np.testing.assert_array_equal(jc.CoulombLCP.init_params(mu=[0.3, 0.2], restitution=np.float32(0.5)).mu, [0.3, 0.2])


JITTED = [  # (door, the call with its pytree arguments traced, those arguments with one of the wrong type)
    ("step", lambda p, s: jc.step(MODEL, p, s), (PARAMS.body, STATE), "params"),
    ("step_with_info", lambda p, s: jc.step_with_info(MODEL, p, s), (STATE, PARAMS), "params"),
    ("rollout", lambda p, s: jc.rollout(MODEL, p, s, 3), (PARAMS, PARAMS), "state"),
    ("batch_rollout", lambda p, s: jc.batch_rollout(MODEL, p, s, 3), (PARAMS, (STATES,)), "states"),
    ("worlds.step", lambda p, s: worlds.step(WMODEL, SCENE, p, s), (BODY, WSTATE), "params"),
    ("worlds.step_with_info", lambda p, s: worlds.step_with_info(WMODEL, SCENE, p, s), (WSTATE, WSTATE), "params"),
    ("worlds.rollout", lambda p, s: worlds.rollout(WMODEL, SCENE, p, s, 3), (BODY, WSTATE), "params"),
    ("worlds.batch_rollout", lambda p, s: worlds.batch_rollout(WMODEL, SCENE, p, s, 3), (WPARAMS, BODY), "states"),
    ("chains.step", lambda p, s: chains.step(CMODEL, p, s), (WPARAMS, CSTATE), "params"),
    ("chains.rollout", lambda p, s: chains.rollout(CMODEL, p, s, 3), (CPARAMS, CPARAMS), "state"),
    ("chains.batch_rollout", lambda p, s: chains.batch_rollout(CMODEL, p, s, 3), (CPARAMS.links, CSTATES), "params"),
    ("CoulombLCP.init_params", lambda mu, eps: jc.CoulombLCP.init_params(mu, eps), (jnp.zeros(3), 0.0), "mu"),
]


@pytest.mark.parametrize("door,fn,args,name", JITTED, ids=[j[0] for j in JITTED])
def test_jitted_doors_refuse_a_wrong_pytree_at_trace_time(door, fn, args, name):
    COMPILES.clear()
    with pytest.raises(ArgumentError, match=rf"^{door}: argument '{name}' is (a|an) \w+") as err:
        jax.jit(fn)(*args)
    assert "\n" not in str(err.value) and COMPILES == []
    # a traced array is an array: the right pytrees pass the check (traced only, not compiled)
    if door == "CoulombLCP.init_params":
        assert jax.eval_shape(fn, jnp.zeros(()), 0.0).mu.shape == (2,)
