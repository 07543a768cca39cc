"""Property-based fuzzing (hypothesis) of the engine's promises.

* Random valid inputs (box sizes and masses, friction, restitution, orientation, velocities, start
  penetrations up to 5 cm): every output finite and unflagged as invalid or non-finite,
  penetration bounded after the first step, and energy never above the start energy plus the work
  of lifting the body out of the ground plus the bounded correction's ½ m v_max².
* Random invalid inputs: eagerly a ``ValueError`` naming the field; inside ``jit`` the step's
  flags name the same field (``diagnostics.check`` raises ``CheckError``).

One compiled rollout serves every example (the inputs are traced arguments), so the examples
are cheap; the example counts are kept small for the CI budget and the seed is fixed by
hypothesis' database-free derandomised mode so a failure reproduces.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the fuzz suite needs hypothesis (pip install -e '.[dev]')")
from hypothesis import given, settings, strategies as st  # noqa: E402

import jaxcontact as jc  # noqa: E402
from jaxcontact import diagnostics  # noqa: E402

LAW = jc.CoulombLCP()
MODEL = jc.Model(law=LAW, dt=0.002)
STEPS = 150
FUZZ = settings(max_examples=25, deadline=None, derandomize=True, database=None)


def make(half, mass, mu, eps, quat, lift, vel, omega):
    body = jc.shapes.box(2 * half[0], mass) if np.ndim(half) == 0 else _box(half, mass)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=LAW.init_params(mu=mu, restitution=eps))
    q = jnp.asarray(quat) / jnp.linalg.norm(jnp.asarray(quat))
    s0 = jc.make_state(pos=[0.0, 0.0, 0.0], quat=q)
    lowest = jnp.min(jc.geometry.world_points(s0, body.vertices)[:, 2])
    state = jc.make_state(pos=[0.0, 0.0, float(lift - lowest)], quat=q, vel=vel, omega=omega)
    return params, state


def _box(half, mass):
    hx, hy, hz = (float(h) for h in half)
    v = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    inertia = mass / 3.0 * np.diag([hy**2 + hz**2, hx**2 + hz**2, hx**2 + hy**2])
    return jc.Body(mass=jnp.asarray(mass), inertia=jnp.asarray(inertia), vertices=jnp.asarray(v),
                   vertex_mask=jnp.ones(8))


@jax.jit
def run(params, state):
    traj, info = jc.rollout(MODEL, params, state, STEPS, with_info=True)
    e = jax.vmap(lambda s: jc.energy(MODEL, params, s))(traj)
    pen = jax.vmap(lambda s: jc.penetration(params, s))(traj)
    return traj, info, e, pen


floats = lambda lo, hi: st.floats(lo, hi, allow_nan=False, allow_infinity=False)
vec3 = lambda r: st.tuples(floats(-r, r), floats(-r, r), floats(-r, r))
quats = st.tuples(floats(-1, 1), floats(-1, 1), floats(-1, 1), floats(-1, 1)).filter(
    lambda q: np.linalg.norm(q) > 0.1)


@FUZZ
@given(half=st.tuples(floats(0.01, 0.3), floats(0.01, 0.3), floats(0.01, 0.3)), mass=floats(0.05, 20.0),
       mu=floats(0.0, 1.5), eps=floats(0.0, 0.8), quat=quats,
       lift=st.one_of(floats(-0.05, -1e-6), floats(0.0, 1.0)), vel=vec3(10.0), omega=vec3(20.0))
def test_valid_inputs_finite_bounded_no_energy_gain(half, mass, mu, eps, quat, lift, vel, omega):
    params, state = make(half, mass, mu, eps, quat, lift, vel, omega)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jc.PenetrationWarning)
        jc.validation.validate_inputs(params, state)
    traj, info, e, pen = jax.device_get(run(params, state))
    assert all(np.all(np.isfinite(x)) for x in jax.tree_util.tree_leaves(traj))
    flags = np.bitwise_or.reduce(np.asarray(info.flags))
    assert not flags & (jc.Flags.INVALID_INPUT | jc.Flags.NONFINITE), diagnostics.report(info)
    # penetration bounded once the first step has separated the body (2 mm: the rotation a
    # 20 rad/s spin makes within one linearised step, plus the correction tolerance)
    assert pen[1:].max() < 2e-3, pen[1:].max()
    # energy: never above E0 + m g d0 (lifting out of an initial penetration) + ½ m v_max² plus a
    # relative 1e-6 of the energy scale (discretisation and rounding); restitution ≤ 0.8 and
    # friction only remove energy
    vmax = MODEL.max_correction_speed
    scale = abs(e[0]) + mass * MODEL.gravity * 0.3 + 1e-9
    bound = e[0] + mass * MODEL.gravity * pen[0] + 0.5 * mass * vmax**2 + 1e-6 * scale
    assert e.max() <= bound, (e.max() - bound, scale)


BOX = jc.shapes.box(0.1, 0.37)
GOOD_LAW = LAW.init_params(mu=0.18, restitution=0.1)
GOOD_STATE = jc.make_state(pos=[0.0, 0.0, 0.2], vel=[1.0, 0.0, 0.0])


def _bad(field, value):
    """(params, state) with one field broken."""
    body, law, state, ground = BOX, GOOD_LAW, GOOD_STATE, jc.Ground.flat()
    if field == "body.mass":
        body = body.replace(mass=jnp.asarray(value))
    elif field == "body.inertia":
        body = body.replace(inertia=body.inertia * value)
    elif field == "params.law.mu":
        law = law.replace(mu=jnp.asarray([value, 0.2]))
    elif field == "params.law.restitution":
        law = law.replace(restitution=jnp.asarray(value))
    elif field == "state.quat":
        state = state.replace(quat=state.quat * value)
    elif field.startswith("state."):
        name = field.split(".")[1]
        state = state.replace(**{name: getattr(state, name).at[0].set(value)})
    elif field == "ground.height":
        ground = jc.Ground(normal=ground.normal, height=jnp.asarray(value))
    return jc.Params(body=body, ground=ground, law=law), state


BAD = st.one_of(
    st.tuples(st.just("body.mass"), st.one_of(floats(-100.0, 0.0), st.sampled_from([np.nan, np.inf]))),
    st.tuples(st.just("body.inertia"), st.one_of(floats(-10.0, -1e-3), st.sampled_from([np.nan]))),
    st.tuples(st.just("params.law.mu"), st.one_of(floats(-10.0, -1e-6), st.sampled_from([np.nan, -np.inf]))),
    st.tuples(st.just("params.law.restitution"), st.one_of(floats(1.0 + 1e-6, 10.0), floats(-10.0, -1e-6))),
    st.tuples(st.just("state.quat"), st.one_of(floats(0.0, 0.99), floats(1.01, 100.0))),
    st.tuples(st.sampled_from(["state.pos", "state.vel", "state.omega"]), st.sampled_from([np.nan, np.inf, -np.inf])),
    st.tuples(st.just("ground.height"), st.sampled_from([np.nan, np.inf])),
)


@jax.jit
def run_final(params, state):
    return jc.rollout(MODEL, params, state, 20, output="final", with_info=True)


@pytest.mark.slow
@FUZZ
@given(bad=BAD)
def test_invalid_inputs_named_eagerly_and_under_jit(bad):
    field, value = bad
    params, state = _bad(field, value)
    pattern = field.replace(".", r"\.")
    with pytest.raises(ValueError, match=pattern):
        jc.rollout(MODEL, params, state, 5)
    _, summary = run_final(params, state)
    # the traced rules name the field (a NaN law parameter is reported as params.law)
    traced = "params.law" if field.startswith("params.law") and not np.isfinite(value) else field
    with pytest.raises(jc.CheckError, match=traced.replace(".", r"\.")):
        diagnostics.check(summary)
