"""A trajectory optimisation through contact (issue 63, item 6), the quick version of
``benchmarks/arm_push_trajopt.py``: Adam on the per-step torques of the two-link arm of
``jaxcontact/data/scenes/arm_trajopt.xml`` pushing its box across the floor, through
``worlds.rollout(..., controls=u)`` under ``jax.jit(jax.value_and_grad(...))``, as a user writes it."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontact import worlds

SCENE = Path(__file__).resolve().parents[1] / "jaxcontact" / "data" / "scenes" / "arm_trajopt.xml"


@pytest.mark.slow
def test_adam_on_an_arms_torques_pushes_the_box_towards_its_target():
    pytest.importorskip("mujoco")
    optax = pytest.importorskip("optax")
    scene, params, state, model = worlds.from_mjcf(str(SCENE))
    horizon = 40
    start = np.asarray(state.pos[2, :2])
    target = jnp.asarray(start + np.array([-0.02, 0.05]))  # 5.4 cm along the arm's sweep

    def loss(u):
        final, _ = worlds.rollout(model, scene, params, state, horizon, u, output="final")
        return jnp.sum((final.pos[2, :2] - target) ** 2)

    grad = jax.jit(jax.value_and_grad(loss))
    u = jnp.zeros((horizon, 2)).at[:, 0].set(0.8)  # a shoulder torque that reaches the box at about 0.25 s
    opt = optax.adam(0.05)
    opt_state = opt.init(u)
    values = []
    for _ in range(15):
        value, g = grad(u)
        assert np.all(np.isfinite(np.asarray(g))) and float(jnp.abs(g).max()) > 0
        values.append(float(value))
        updates, opt_state = opt.update(g, opt_state, u)
        u = optax.apply_updates(u, updates)
    values.append(float(grad(u)[0]))
    # the box touched at the start (it moved), and the loss fell at least fivefold (at least twofold at the end)
    assert values[0] < float(jnp.sum((jnp.asarray(start) - target) ** 2)) - 1e-5, values
    assert min(values) < 0.2 * values[0] and values[-1] < 0.5 * values[0], values
