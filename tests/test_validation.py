"""Bad input raises a clear ValueError naming the field, before anything is compiled."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc


@pytest.fixture
def good():
    law = jc.CoulombLCP()
    model = jc.Model(law=law)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(0.2))
    return model, params, jc.make_state(pos=[0, 0, 0.2])


def check(match, fn, *args, **kw):
    with pytest.raises(ValueError, match=match):
        fn(*args, **kw)


def test_state_errors(good):
    model, params, s = good
    check(r"state\.pos: expected shape \(3,\)", jc.rollout, model, params, s.replace(pos=jnp.zeros(2)), 5)
    check(r"state\.vel: contains NaN", jc.rollout, model, params, s.replace(vel=jnp.array([0.0, np.nan, 0.0])), 5)
    check(r"state\.omega: contains NaN or infinite", jc.step, model, params, s.replace(omega=jnp.array([np.inf, 0, 0])))
    check(r"state\.quat: not a unit quaternion", jc.rollout, model, params, s.replace(quat=jnp.array([1.0, 0.1, 0, 0])), 5)
    check(r"a 3D body needs a State", jc.rollout, model, params, jc.make_planar_state(), 5)
    # batched: leading batch axis required and consistent
    batch = jc.State(pos=jnp.zeros((4, 3)), quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (4, 1)), vel=jnp.zeros((3, 3)), omega=jnp.zeros((4, 3)))
    check(r"state\.vel: batch size 3 differs", jc.batch_rollout, model, params, batch, 5)


def test_body_errors(good):
    model, params, s = good
    b = params.body
    check(r"body\.mass: must be positive", jc.rollout, model, params.replace(body=b.replace(mass=jnp.asarray(0.0))), s, 5)
    check(r"body\.mass: must be positive", jc.rollout, model, params.replace(body=b.replace(mass=jnp.asarray(-1.0))), s, 5)
    check(r"body\.inertia: must be positive definite", jc.rollout, model,
          params.replace(body=b.replace(inertia=jnp.diag(jnp.array([1.0, -1.0, 1.0])))), s, 5)
    check(r"body\.inertia: must be symmetric", jc.rollout, model,
          params.replace(body=b.replace(inertia=jnp.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]]))), s, 5)
    flat = b.replace(vertices=b.vertices.at[:, 2].set(0.0))
    check(r"body\.vertices: degenerate hull", jc.rollout, model, params.replace(body=flat), s, 5)
    check(r"body\.vertices: contains NaN", jc.rollout, model, params.replace(body=b.replace(vertices=b.vertices.at[0, 0].set(np.nan))), s, 5)


def test_shape_constructor_errors():
    check(r"vertices: degenerate hull", jc.shapes.convex_hull, np.random.rand(10, 2) @ np.ones((2, 3)))
    check(r"vertices: degenerate hull", jc.shapes.convex_hull, [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
    check(r"mass: must be positive", jc.shapes.box, 0.1, -0.3)
    check(r"size: edge lengths must be positive", jc.shapes.box, (0.1, 0.0, 0.1))
    check(r"vertices: degenerate polygon", jc.shapes.polygon, [[0, 0], [1, 1], [2, 2]])
    check(r"sides: a prism needs at least 3", jc.shapes.regular_prism, 2)


def test_param_ground_model_control_errors(good):
    model, params, s = good
    check(r"params\.law\.mu: friction coefficients must be >= 0", jc.rollout, model,
          params.replace(law=params.law.replace(mu=jnp.array([-0.1, 0.2]))), s, 5)
    check(r"params\.law\.restitution: must lie in \[0, 1\]", jc.rollout, model,
          params.replace(law=params.law.replace(restitution=jnp.asarray(1.5))), s, 5)
    check(r"ground\.normal: must be a non-zero", jc.rollout, model,
          params.replace(ground=jc.Ground(normal=jnp.zeros(3), height=jnp.asarray(0.0))), s, 5)
    check(r"ground\.height: contains NaN", jc.rollout, model,
          params.replace(ground=jc.Ground(normal=jnp.array([0, 0, 1.0]), height=jnp.asarray(np.nan))), s, 5)
    check(r"control: expected shape \(T, 6\)", jc.rollout, model, params, s, None, jnp.zeros((5, 3)))
    check(r"Model\.dt must be a finite positive", jc.Model, law=jc.CoulombLCP(), dt=0.0)
    check(r"LCPSettings\.tol must be positive", jc.LCPSettings, tol=-1.0)
    check(r"rollout: argument 'output' is a str \('everything'\), expected 'trajectory' or 'final'", jc.rollout, model,
          params, s, 5, output="everything")


def test_valid_inputs_pass_and_controls_act(good):
    model, params, s = good
    # Python numbers are fine (weakly typed, as in any JAX expression), and so are bool masks
    params = params.replace(body=params.body.replace(mass=0.37, vertex_mask=params.body.vertex_mask > 0),
                            ground=jc.Ground(normal=jnp.array([0, 0, 1.0]), height=0))
    # a constant upward force equal to the weight cancels gravity exactly
    w = float(params.body.mass) * model.gravity
    ctrl = jnp.tile(jnp.array([0, 0, w, 0, 0, 0]), (50, 1))
    traj = jc.rollout(model, params, s, controls=ctrl)
    assert traj.pos.dtype == jnp.float64
    np.testing.assert_allclose(traj.pos[-1], s.pos, atol=1e-12)


# --- dtypes and law-parameter shapes: static, so refused eagerly and at trace time alike ----------

_MODEL = jc.Model(law=jc.CoulombLCP())
_PARAMS = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=jc.CoulombLCP.init_params(0.2))
_STATE = jc.make_state(pos=[0, 0, 0.2])
_CTRL = jnp.zeros((3, 6))


def _law(**kw):
    return _PARAMS.replace(law=_PARAMS.law.replace(**kw))


def _body(**kw):
    return _PARAMS.replace(body=_PARAMS.body.replace(**kw))


# (id, field and what, (params, state, controls)); every input is otherwise valid
BAD_INPUTS = [
    ("int state", r"state\.pos: int64 values", (_PARAMS, _STATE.replace(pos=np.array([0, 0, 1])), None)),
    ("float16 state", r"state\.vel: float16 is not supported", (_PARAMS, _STATE.replace(vel=jnp.zeros(3, jnp.float16)), None)),
    ("bfloat16 state", r"state\.omega: bfloat16 is not supported", (_PARAMS, _STATE.replace(omega=jnp.zeros(3, jnp.bfloat16)), None)),
    ("complex state", r"state\.pos: complex values", (_PARAMS, _STATE.replace(pos=_STATE.pos + 0j), None)),
    ("bool state", r"state\.quat: bool values", (_PARAMS, _STATE.replace(quat=jnp.array([True, False, False, False])), None)),
    ("list state", r"state\.pos: expected a float32 or float64 array, got list", (_PARAMS, _STATE.replace(pos=[0.0, 0.0, 0.2]), None)),
    ("int mass", r"body\.mass: int64 values", (_body(mass=np.asarray(1)), _STATE, None)),
    ("complex inertia", r"body\.inertia: complex values", (_body(inertia=_PARAMS.body.inertia + 0j), _STATE, None)),
    ("float16 ground", r"ground\.height: float16", (_PARAMS.replace(ground=jc.Ground(jnp.array([0, 0, 1.0]), jnp.float16(0))), _STATE, None)),
    ("complex restitution", r"params\.law\.restitution: complex", (_law(restitution=jnp.asarray(0.1 + 0j)), _STATE, None)),
    ("int mu", r"params\.law\.mu: int64 values", (_law(mu=np.array([1, 1])), _STATE, None)),
    ("scalar mu", r"params\.law\.mu: expected shape \(2,\), got shape \(\) — μ is \(μ₁, μ₂\)", (_law(mu=jnp.asarray(0.3)), _STATE, None)),
    ("3-element mu", r"params\.law\.mu: expected shape \(2,\), got shape \(3,\)", (_law(mu=jnp.full(3, 0.3)), _STATE, None)),
    ("vector restitution", r"params\.law\.restitution: expected shape \(\), got shape \(2,\)", (_law(restitution=jnp.zeros(2)), _STATE, None)),
    ("int control", r"control: int64 values", (_PARAMS, _STATE, np.zeros((3, 6), int))),
    ("complex control", r"control: complex values", (_PARAMS, _STATE, _CTRL + 0j)),
]


@pytest.mark.parametrize("field, inputs", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_dtypes_and_law_shapes_refused_eagerly_and_under_jit(field, inputs):
    params, state, ctrl = inputs
    n = None if ctrl is not None else 3
    one = lambda c: None if c is None else c[0]
    calls = {
        "rollout": lambda p, s, c: jc.rollout(_MODEL, p, s, n, controls=c),
        "step": lambda p, s, c: jc.step(_MODEL, p, s, one(c)),
        "jit rollout": lambda p, s, c: jax.jit(lambda p, s, c: jc.rollout(_MODEL, p, s, n, controls=c))(p, s, c),
        "jit step": lambda p, s, c: jax.jit(lambda p, s, c: jc.step(_MODEL, p, s, one(c)))(p, s, c),
    }
    if ctrl is None:  # batched: the eager batch check and, without it, the traced one
        batch = jax.tree_util.tree_map(lambda x: np.stack([x, x]), state)
        calls["batch_rollout"] = lambda p, s, c: jc.batch_rollout(_MODEL, p, batch, 3)
        calls["batch_rollout(validate=False)"] = lambda p, s, c: jc.batch_rollout(_MODEL, p, batch, 3, validate=False)
    for name, call in calls.items():
        with pytest.raises(ValueError, match=field):
            call(params, state, ctrl)


def test_law_shapes_checked_under_vmap_and_with_batched_params():
    s = jc.make_state(pos=[0, 0, 0.2])
    run = jax.vmap(lambda mu: jc.rollout(_MODEL, _law(mu=mu), s, 3))
    with pytest.raises(ValueError, match=r"params\.law\.mu: expected shape \(2,\), got shape \(\)"):
        run(jnp.full(4, 0.3))  # a batch of scalar μ
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), s)
    stacked = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), _PARAMS)
    with pytest.raises(ValueError, match=r"params\.law\.mu: expected shape \(B, 2\), got shape \(2,\)"):
        jc.batch_rollout(_MODEL, stacked.replace(law=stacked.law.replace(mu=jnp.ones(2))), batch, 3, params_batched=True)


def test_init_params_pair_and_bad_shapes():
    np.testing.assert_array_equal(jc.CoulombLCP.init_params(mu=[0.3, 0.2]).mu, [0.3, 0.2])
    np.testing.assert_array_equal(jc.CoulombLCP.init_params(mu=0.3, mu2=0.2).mu, [0.3, 0.2])
    np.testing.assert_array_equal(jc.CoulombLCP.init_params(mu=0.3).mu, [0.3, 0.3])
    check(r"CoulombLCP.init_params: argument 'mu' is an array of shape \(2, 2\) \(float64\), expected a friction "
          r"coefficient .* or the pair", jc.CoulombLCP.init_params, mu=np.ones((2, 2)))
    check(r"CoulombLCP.init_params: argument 'mu2' is a list of 2 \(float, float\), expected a number",
          jc.CoulombLCP.init_params, mu=0.3, mu2=[0.1, 0.2])
    check(r"CoulombLCP.init_params: argument 'mu' is a complex \(0.3\+1j\)", jc.CoulombLCP.init_params, mu=0.3 + 1j)
    check(r"mu: complex values", jc.CoulombLCP.init_params, mu=jnp.asarray(0.3 + 1j))
