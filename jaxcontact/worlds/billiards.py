"""Billiards with boxes: choose a pusher box's initial velocity by gradient so that the box it
strikes comes to rest at a target (``python -m studies.worlds``, ``notebooks/worlds.ipynb``,
docs/worlds.md).

Two 0.1 m, 0.37 kg boxes on the ground (μ = 0.3 everywhere, ε = 0.5): the pusher (body 0) at the
origin and the struck box (body 1) 0.15 m ahead along x, both at rest but the pusher, whose
horizontal velocity v = (vx, vy) is the decision variable. The loss is the squared distance between
the struck box's position after ``STEPS`` steps (1 s: at rest by then) and the target; its gradient
goes through the rollout (body–body impact, friction, the ground) with the solver's implicit
derivative.

- ``world()``: the model, scene, parameters and state.
- ``objective(...)``: one compiled ``value_and_grad`` of the loss over a batch of velocities.
- ``starts(seed, n)``: random starts, vx ~ U(1, 3) m/s, vy ~ U(−0.3, 0.3) m/s.
- ``fit(...)``: Adam or plain gradient descent on a batch of starts. Both updates are
  elementwise and each start's loss depends on its own velocity only, so every start follows the
  path it would follow alone.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import shapes
from ..types import Ground, Params, State
from .pipeline import rollout
from .scene import make_scene
from .scenes import DEFAULT_LAW, MASS, SIZE, model

TARGET = (0.6, 0.0)  # m: where the struck box should rest, on the line of centres
STEPS = 500  # 1 s at the default 2 ms step
AHEAD = 0.15  # m: the struck box's centre ahead of the pusher's (a 5 cm gap)


def world(mu: float = 0.3, restitution: float = 0.5):
    """``(model, scene, params, state)``: the two boxes on the ground, both at rest, the pusher
    (body 0) at the origin and the struck box (body 1) ``AHEAD`` m along x; ``model()``'s law."""
    scene, body = make_scene([shapes.box(SIZE, MASS)] * 2)
    params = Params(body=body, ground=Ground.flat(), law=DEFAULT_LAW.init_params(mu=mu, restitution=restitution))
    pos = jnp.array([[0.0, 0.0, SIZE / 2], [AHEAD, 0.0, SIZE / 2]])
    state = State(pos=pos, quat=jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (2, 1)), vel=jnp.zeros((2, 3)),
                  omega=jnp.zeros((2, 3)))
    return model(), scene, params, state


def launched(state: State, v) -> State:
    """``state`` with the pusher's (body 0's) horizontal velocity set to ``v`` (2,)."""
    return state.replace(vel=state.vel.at[0, :2].set(v))


def objective(model, scene, params, state, target=TARGET, steps: int = STEPS):
    """The compiled ``value_and_grad`` of the loss over a batch of pusher velocities:
    ``v`` (S, 2) → ``(loss (S,), grad (S, 2))``, loss = |struck box's (x, y) after ``steps``
    steps − target|² (m²). Compile once, call it for every start and iteration."""
    target = jnp.asarray(target)

    def loss(v):
        final, _ = rollout(model, scene, params, launched(state, v), steps, output="final")
        return jnp.sum((final.pos[1, :2] - target) ** 2)

    return jax.jit(jax.vmap(jax.value_and_grad(loss)))


def starts(seed: int, n: int) -> np.ndarray:
    """``n`` random starts (n, 2): vx ~ U(1, 3) m/s, vy ~ U(−0.3, 0.3) m/s, drawn in that order per
    start from ``numpy.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return np.array([[rng.uniform(1.0, 3.0), rng.uniform(-0.3, 0.3)] for _ in range(n)])


OPTIMIZERS = ("adam", "sgd")


def fit(value_and_grad, v0, iters: int = 100, lr: float = 0.05, optimizer: str = "adam"):
    """``iters`` updates of ``optax.adam(lr)`` or ``optax.sgd(lr)`` (plain gradient descent) on a
    batch of starts ``v0`` (S, 2) with ``value_and_grad`` from ``objective``. Returns
    ``(v (S, 2), start error (S,), final error (S,))``, the errors being the struck box's distance
    to the target (m)."""
    import optax

    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if not (isinstance(iters, int) and iters >= 0):
        raise ValueError(f"iters must be an int >= 0, got {iters!r}")
    v0 = jnp.asarray(v0)
    opt = getattr(optax, optimizer)(lr)
    st, v = opt.init(v0), v0
    loss0 = None
    for _ in range(iters):
        loss, g = value_and_grad(v)
        loss0 = loss if loss0 is None else loss0
        up, st = opt.update(g, st)
        v = optax.apply_updates(v, up)
    loss = value_and_grad(v)[0]
    return v, jnp.sqrt(loss if loss0 is None else loss0), jnp.sqrt(loss)


__all__ = ["AHEAD", "OPTIMIZERS", "STEPS", "TARGET", "fit", "launched", "objective", "starts", "world"]
