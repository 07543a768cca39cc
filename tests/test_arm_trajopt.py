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


@pytest.mark.slow
def test_the_trajopt_benchmarks_cap_of_200_sweeps_keeps_the_defaults_gradient():
    """``benchmarks/arm_push_trajopt.py --max-iter 200`` (its earlier default; now the law's own 1,000, which
    the optimisation needed on fresh seeds) caps the world law's sweeps a step at 200 (the
    steps that reach the cap are polished by the law's ``stall_active_set``): through a push of the box
    (a constant 0.8 N m shoulder torque, 60 steps), the loss and its gradient stay the defaults'."""
    pytest.importorskip("mujoco")
    import dataclasses

    scene, params, state, model = worlds.from_mjcf(str(SCENE), dtype=jnp.float64)
    law = model.law
    capped = dataclasses.replace(model, law=dataclasses.replace(
        law, solver=dataclasses.replace(law.solver, max_iter=200)))
    horizon = 60
    target = jnp.asarray([0.35, 0.30])
    u = jnp.zeros((horizon, 2)).at[:, 0].set(0.8)

    def loss(m):
        def f(u):
            traj, infos = worlds.rollout(m, scene, params, state, horizon, u)
            near = jnp.linalg.norm(traj.pos[1:, 1, :2] - traj.pos[1:, 2, :2], axis=-1)
            return jnp.sum((traj.pos[-1, 2, :2] - target) ** 2) + 0.1 * jnp.min(near) ** 2, infos.iterations
        return jax.jit(jax.value_and_grad(f, has_aux=True))

    (v0, it0), g0 = loss(model)(u)
    (v1, it1), g1 = loss(capped)(u)
    it0, it1 = np.asarray(it0), np.asarray(it1)
    assert law.solver.max_iter == 1000 and np.sum(it0 > 200) >= 3 and np.sum(it1 == 200) >= 10, (it0, it1)  # the cap bites
    assert abs(float(v1) - float(v0)) <= 2e-3 * abs(float(v0)), (v0, v1)
    assert np.all(np.isfinite(np.asarray(g1))) and float(jnp.linalg.norm(g0)) > 0
    rel = float(jnp.linalg.norm(g1 - g0) / jnp.linalg.norm(g0))
    assert rel < 3e-3, rel
