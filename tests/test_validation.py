"""Bad input raises a clear ValueError naming the field, before anything is compiled."""

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
    check(r"output must be", jc.rollout, model, params, s, 5, output="everything")


def test_valid_inputs_pass_and_controls_act(good):
    model, params, s = good
    # a constant upward force equal to the weight cancels gravity exactly
    w = float(params.body.mass) * model.gravity
    ctrl = jnp.tile(jnp.array([0, 0, w, 0, 0, 0]), (50, 1))
    traj = jc.rollout(model, params, s, controls=ctrl)
    np.testing.assert_allclose(traj.pos[-1], s.pos, atol=1e-12)
