"""Gradients of rollout losses: implicit differentiation through the LCP versus central
finite differences on smooth cases, and finiteness everywhere."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxcontact as jc
from jaxcontact.states import random_throws

H = 0.002
# the sliding-box tests' rollout length: one n_steps (a static argument) for all three, so their
# eager forward rollouts share one compiled program (the suite is compile-bound)
N_SLIDE = 120


def sliding_setup():
    law = jc.CoulombLCP(solver=jc.LCPSettings(tol=1e-12, max_iter=300))
    model = jc.Model(law=law, dt=H)
    base = jc.shapes.box(0.1, 0.37)
    return model, base, law


def central_fd(f, x, eps):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def rel_err(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def test_grad_wrt_friction_matches_finite_differences():
    model, body, law = sliding_setup()
    s0 = jc.make_state(pos=[0, 0, 0.05], vel=[1.2, 0.3, 0])

    def loss(mu):
        params = jc.Params(body=body, ground=jc.Ground.flat(), law=law.init_params(mu=mu))
        final = jc.rollout(model, params, s0, N_SLIDE, output="final")
        return final.pos[0] + 2.0 * final.pos[1]

    mu = 0.25
    g = float(jax.grad(loss)(mu))
    fd = float(central_fd(loss, mu, 1e-5))
    assert rel_err(g, fd) < 1e-3, (g, fd)
    assert g < 0  # more friction, shorter slide


def test_grad_wrt_anisotropic_friction_and_initial_velocity():
    model, body, law = sliding_setup()

    def loss(mu_vec, v0):
        params = jc.Params(
            body=body, ground=jc.Ground.flat(), law=jc.CoulombParams(mu=mu_vec, restitution=jnp.asarray(0.0))
        )
        s0 = jc.make_state(pos=[0, 0, 0.05]).replace(vel=v0)
        final = jc.rollout(model, params, s0, N_SLIDE, output="final")
        return jnp.sum(final.pos[:2] ** 2) + final.vel[0]

    mu = jnp.array([0.2, 0.35])
    v0 = jnp.array([1.0, 0.8, 0.0])
    gmu, gv = jax.grad(loss, argnums=(0, 1))(mu, v0)
    for i in range(2):
        e = jnp.zeros(2).at[i].set(1e-5)
        fd = float((loss(mu + e, v0) - loss(mu - e, v0)) / 2e-5)
        assert rel_err(float(gmu[i]), fd) < 1e-3, (i, gmu, fd)
    for i in range(2):  # horizontal components (a vertical kick would change the mode)
        e = jnp.zeros(3).at[i].set(1e-5)
        fd = float((loss(mu, v0 + e) - loss(mu, v0 - e)) / 2e-5)
        assert rel_err(float(gv[i]), fd) < 1e-3, (i, gv, fd)


def test_grad_wrt_vertex_positions_matches_finite_differences():
    model, body, law = sliding_setup()
    s0 = jc.make_state(pos=[0, 0, 0.05], vel=[0.8, 0, 0])
    direction = np.asarray(body.vertices) * np.array([0.3, 1.0, 1.0])  # stretch, keep bottom face flat

    def loss(vertices):
        params = jc.Params(body=body.replace(vertices=vertices), ground=jc.Ground.flat(), law=law.init_params(0.3))
        final = jc.rollout(model, params, s0, N_SLIDE, output="final")
        return final.pos[2] + 0.1 * final.pos[0]

    V = body.vertices
    g = jax.grad(loss)(V)
    assert np.all(np.isfinite(np.asarray(g)))
    eps = 1e-6
    fd = float((loss(V + eps * direction) - loss(V - eps * direction)) / (2 * eps))
    ad = float(jnp.sum(g * direction))
    assert rel_err(ad, fd) < 1e-3, (ad, fd)
    # the resting height follows the bottom face: lowering the bottom vertices raises the box
    assert float(jnp.sum(g[:, 2] * (np.asarray(V)[:, 2] < 0))) < 0


def test_gradients_are_finite_through_impacts_liftoff_and_sticking():
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=H, max_contacts=4)
    body = jc.shapes.box(0.1, 0.37)
    states = random_throws(jax.random.PRNGKey(7), 256, ranges={"height": (0.0, 0.15)})

    def loss(mu, eps, vertices, states):
        params = jc.Params(
            body=body.replace(vertices=vertices),
            ground=jc.Ground.flat(),
            law=jc.CoulombParams(mu=jnp.stack([mu, mu]), restitution=eps),
        )
        final = jax.vmap(lambda s: jc.rollout(model, params, s, 200, output="final"))(states)
        return jnp.mean(final.pos**2) + jnp.mean(final.quat[:, 1:] ** 2) + jnp.mean(final.vel**2)

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(
        jnp.asarray(0.3), jnp.asarray(0.2), body.vertices, states
    )
    leaves = jax.tree_util.tree_leaves(grads)
    for leaf in leaves:
        assert np.all(np.isfinite(np.asarray(leaf)))
    assert float(jnp.abs(grads[0])) > 0 and float(jnp.abs(grads[2]).sum()) > 0
