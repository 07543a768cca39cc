"""Per-body friction in worlds (``body.friction``, ``worlds.materials``): the geometric-mean rule
against the analytic sliding deceleration, gradients, and bad inputs (eagerly and under jit)."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import worlds
from jaxcontact.validation import rule_names
from jaxcontact.worlds import scenes
from jaxcontact.worlds.materials import contact_friction, mix_friction

MU_LAW = 0.18  # the ground's μ (the law's)
MU = (0.5, 0.32)  # bottom box, top box
T = 25  # steps of 2 ms
V0 = 0.5  # m/s


def _world():
    scene, params, state = scenes.stack(2, mu=MU_LAW)
    return scene, params.replace(body=params.body.replace(friction=jnp.array(MU))), state


@pytest.fixture(scope="module")
def slide():
    """Two worlds of a 2-box stack: (A) both boxes sliding at V0 on the ground, (B) the top box
    sliding at V0 on the resting bottom box. One compiled program: the final states, the flags and
    the gradient of world B's top-box x wrt the per-body μ."""
    scene, params, state = _world()
    model = worlds.model()
    A = state.replace(vel=state.vel.at[:, 0].set(V0))
    B = state.replace(vel=state.vel.at[1, 0].set(V0))
    states = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), A, B)

    @jax.jit
    def run(friction):
        def top_x(f):
            p = params.replace(body=params.body.replace(friction=f))
            final, summary = worlds.batch_rollout(model, scene, p, states, T, output="final")
            return final.pos[1, 1, 0], (final, summary)

        return jax.value_and_grad(top_x, has_aux=True)(friction)

    return model, params.body.friction, run


def test_mix_rule_and_default_path():
    assert float(mix_friction(0.5, 0.32)) == pytest.approx(0.4, rel=1e-12)  # √(μ_a μ_b)
    assert float(mix_friction(0.0, 0.7)) == 0.0  # a frictionless side: a frictionless contact
    assert np.all(np.isfinite(jax.grad(lambda a: mix_friction(a, 0.0))(0.3)))  # finite at μ_a μ_b = 0
    # the contact table: ground rows √(μ_body μ_law), pair rows √(μ_a μ_b); without body.friction, the law's μ
    _, params, _ = _world()
    # the 2-box stack's contact table (worlds.collide's layout): 4 ground rows per body, then the pair's 4
    bodies = np.array([[-1, 0]] * 4 + [[-1, 1]] * 4 + [[0, 1]] * 4)
    con = SimpleNamespace(phi=jnp.zeros(12), num_ground=8, bodies=jnp.asarray(bodies))
    mu = np.asarray(contact_friction(params, con, jnp.float64))
    G = con.num_ground
    np.testing.assert_allclose(mu[:4], np.sqrt(MU[0] * MU_LAW), rtol=1e-12)  # body 0 on the ground
    np.testing.assert_allclose(mu[4:G], np.sqrt(MU[1] * MU_LAW), rtol=1e-12)
    np.testing.assert_allclose(mu[G:], np.sqrt(MU[0] * MU[1]), rtol=1e-12)
    plain = params.replace(body=params.body.replace(friction=None))
    np.testing.assert_array_equal(contact_friction(plain, con, jnp.float64),
                                  np.r_[np.full((G, 2), MU_LAW), np.full((mu.shape[0] - G, 2), MU_LAW)])


def test_sliding_deceleration_follows_the_pair_rule(slide):
    model, friction, run = slide
    (_, (final, summary)), _ = run(friction)
    assert np.all(np.asarray(summary.flags) == 0)
    g, t = model.gravity, T * model.dt
    # (A) both slide together on the ground: μ_eff = √(μ_bottom μ_law) = 0.3 (the top box sticks: its
    # pair allows 0.4 g), so both decelerate at 0.3 g
    np.testing.assert_allclose(final.vel[0, :, 0], V0 - np.sqrt(MU[0] * MU_LAW) * g * t, atol=3e-4)
    # (B) the top box slides on the resting bottom box: μ_eff = √(μ_top μ_bottom) = 0.4; the bottom
    # box holds (it would need 0.4 m g of ground friction, it has 0.3 · 2 m g)
    np.testing.assert_allclose(final.vel[1, 1, 0], V0 - np.sqrt(MU[0] * MU[1]) * g * t, rtol=1e-4)
    assert abs(float(final.vel[1, 0, 0])) < 1e-3
    # with the law's μ alone (0.18) neither would decelerate this much
    assert float(final.vel[1, 1, 0]) < V0 - 2 * MU_LAW * g * t


def test_gradient_wrt_body_friction(slide):
    model, friction, run = slide
    (_, _), grad = run(friction)
    # eps 1e-4: under Coulomb's disc the rollout's x has round-off steps of ~3e-11 m where the sweeps'
    # count changes (eps 1e-5 reads d/dμ0 2.9e-4 off, 1e-6 2.9e-3); at 1e-4 and 1e-3 it is the gradient to 1e-8
    eps = 1e-4
    fd = [(run(friction.at[i].add(eps))[0][0] - run(friction.at[i].add(-eps))[0][0]) / (2 * eps) for i in range(2)]
    np.testing.assert_allclose(grad, fd, rtol=1e-5)
    # analytic: x = x0 + h Σ_k (V0 − a k h), a = √(μ0 μ1) g, so ∂x/∂μ_i = −g h² T(T+1)/2 · ½ √(μ_j / μ_i)
    h, g = model.dt, model.gravity
    analytic = [-g * h * h * T * (T + 1) / 2 * 0.5 * np.sqrt(MU[1 - i] / MU[i]) for i in range(2)]
    np.testing.assert_allclose(grad, analytic, rtol=1e-3)


def test_bad_friction_flagged_under_jit(slide):
    _, friction, run = slide
    (_, (_, summary)), _ = run(friction.at[1].set(-0.1))
    assert np.all(np.asarray(summary.flags) & int(jc.Flags.INVALID_INPUT))
    assert rule_names(int(np.asarray(summary.invalid)[0])) == ["body.friction: must be finite and >= 0"]


def test_bad_friction_refused_eagerly():
    scene, params, state = _world()
    model = worlds.model()

    def with_friction(f):
        return params.replace(body=params.body.replace(friction=f))

    for f, msg in [(jnp.array([0.5, -0.1]), "body.friction: friction coefficients must be >= 0"),
                   (jnp.array([0.5, jnp.nan]), "body.friction: contains NaN"),
                   (jnp.array([0.5, 0.3, 0.2]), r"body.friction: expected one friction coefficient per body, shape \(2,\)"),
                   (jnp.array([[0.5], [0.3]]), r"body.friction: expected shape \(B, \)"),
                   (jnp.array([1, 2]), "body.friction: int")]:
        with pytest.raises(ValueError, match=msg):
            worlds.step(model, scene, with_friction(f), state)
    # given for some bodies and not others
    box = jc.shapes.box((0.1,) * 3, 0.37)
    with pytest.raises(ValueError, match="body.friction: given for some bodies and not others"):
        worlds.make_scene([box.replace(friction=jnp.asarray(0.5)), box])
    # a single body's friction is the law's μ: a per-body one is refused, eagerly and at trace time
    single = jc.Params(body=box.replace(friction=jnp.asarray(0.5)), ground=jc.Ground.flat(),
                       law=jc.CoulombLCP.init_params(0.3))
    s, model1 = jax.tree_util.tree_map(lambda x: x[0], state), jc.Model(law=jc.CoulombLCP())
    for call in (lambda: jc.step(model1, single, s), lambda: jax.jit(lambda p: jc.step(model1, p, s))(single)):
        with pytest.raises(ValueError, match="body.friction: a per-body friction coefficient is a material of a world"):
            call()
