"""Convenient state constructors and random throws (the dacm paper's throwing experiment)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .rotations import quat_normalize
from .types import PlanarState, State


def make_state(pos=(0.0, 0.0, 0.0), quat=(1.0, 0.0, 0.0, 0.0), vel=(0.0, 0.0, 0.0), omega=(0.0, 0.0, 0.0)) -> State:
    f = lambda x: jnp.asarray(x, dtype=jnp.result_type(float))
    return State(pos=f(pos), quat=f(quat), vel=f(vel), omega=f(omega))


def make_planar_state(pos=(0.0, 0.0), angle=0.0, vel=(0.0, 0.0), omega=0.0) -> PlanarState:
    f = lambda x: jnp.asarray(x, dtype=jnp.result_type(float))
    return PlanarState(pos=f(pos), angle=f(angle), vel=f(vel), omega=f(omega))


# Ranges of the random throws (our reading of the dacm paper's Fig. 4, whose numbers are not in
# its text): drop height of the centre above the ground, uniform random orientation, horizontal
# speed, vertical speed and body-frame angular velocity, each uniform per component.
THROW_RANGES = {
    "height": (0.3, 1.0),
    "horizontal_speed": (-2.0, 2.0),
    "vertical_speed": (-1.0, 1.0),
    "angular_speed": (-5.0, 5.0),
}


def random_throws(key, n: int, planar: bool = False, clearance: float = 0.1, ranges=None):
    """``n`` random throws as a batched State (or PlanarState), all starting above the ground.

    clearance is added to the drop height so the body (of size ≲ clearance) starts in the air.
    """
    r = dict(THROW_RANGES, **(ranges or {}))
    dtype = jnp.result_type(float)
    k = jax.random.split(key, 5)
    u = lambda kk, shape, lohi: jax.random.uniform(kk, shape, dtype, lohi[0], lohi[1])
    height = u(k[0], (n,), r["height"]) + clearance
    if planar:
        return PlanarState(
            pos=jnp.stack([jnp.zeros(n, dtype), height], -1),
            angle=u(k[1], (n,), (-jnp.pi, jnp.pi)),
            vel=jnp.stack([u(k[2], (n,), r["horizontal_speed"]), u(k[3], (n,), r["vertical_speed"])], -1),
            omega=u(k[4], (n,), r["angular_speed"]),
        )
    quat = quat_normalize(jax.random.normal(k[1], (n, 4), dtype))
    vxy = u(k[2], (n, 2), r["horizontal_speed"])
    vz = u(k[3], (n, 1), r["vertical_speed"])
    return State(
        pos=jnp.stack([jnp.zeros(n, dtype), jnp.zeros(n, dtype), height], -1),
        quat=quat,
        vel=jnp.concatenate([vxy, vz], -1),
        omega=u(k[4], (n, 3), r["angular_speed"]),
    )
