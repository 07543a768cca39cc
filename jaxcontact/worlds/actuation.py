"""Actuators on a world's joints (issue 63, item 2): motors, position and velocity servos and
MuJoCo's general affine actuators on a joint transmission.

An actuator a drives joint ``Joints.actuated[a]`` (a hinge or a slide; an index J + t: the fixed tendon
t's length L, ``worlds.tendons``, its force along the tendon's rate row) through a gear g: its length
is l = g q and its velocity l̇ = g q̇ (q, q̇ the joint's coordinate and rate, ``joints.coordinates``);
its force is MuJoCo's affine form f = gain · u + b₀ + b₁ l + b₂ l̇ with u its control clipped to
``ctrlrange`` and f clipped to ``forcerange``; the joint receives the generalised force g f (a
torque about a hinge's axis, a force along a slide's), applied to its two bodies through the
joint's rate row (``joints.rate_rows``). A motor is gain g₀ and no bias; a position servo gain kp,
bias (0, −kp, −kv); a velocity servo gain kv, bias (0, 0, −kv).

The control u: per step, ``rollout(..., controls)`` of shape (n_steps, A) in a world with actuators
(``pipeline.with_ctrl`` puts each step's into ``ActuatorParams.ctrl``); without controls the
params' ``ctrl`` is held. Gradients reach both. The velocity term
b₂ l̇ is taken implicitly, as extra joint damping −g² b₂ in the step's implicit damping (MuJoCo's
``implicitfast`` treats it so; its default Euler takes it explicitly): a stiff servo at a file's step
stays stable. An actuator with a finite ``forcerange`` is taken explicitly at the step's start
velocity, then clipped (the implicit part cannot be clipped).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import struct


@struct.dataclass
class ActuatorParams:
    """Every actuator's traced parameters, (A,) each unless said: ``gear``, ``gain``, ``bias`` (A, 3)
    (b₀, b₁, b₂), ``ctrl`` the control held over the rollout, ``ctrlrange`` and ``forcerange`` (A, 2)
    (±inf: unlimited)."""

    gear: Any
    gain: Any
    bias: Any
    ctrl: Any
    ctrlrange: Any
    forcerange: Any


def motor(num: int, gear=1.0, ctrl=0.0, dtype=jnp.float64) -> ActuatorParams:
    """``num`` motors: force = ``ctrl`` times a unit gain, through ``gear``; unlimited."""
    f = lambda x, shape=(num,): jnp.broadcast_to(jnp.asarray(x, dtype), shape)
    inf = jnp.full((num, 2), jnp.inf, dtype) * jnp.array([-1.0, 1.0], dtype)
    return ActuatorParams(gear=f(gear), gain=f(1.0), bias=jnp.zeros((num, 3), dtype), ctrl=f(ctrl), ctrlrange=inf,
                          forcerange=inf)


def position_servo(num: int, kp, kv=0.0, gear=1.0, ctrl=0.0, dtype=jnp.float64) -> ActuatorParams:
    """``num`` position servos (MuJoCo's ``<position>``): f = kp (u − l) − kv l̇."""
    p = motor(num, gear, ctrl, dtype)
    kp, kv = jnp.broadcast_to(jnp.asarray(kp, dtype), (num,)), jnp.broadcast_to(jnp.asarray(kv, dtype), (num,))
    return p.replace(gain=kp, bias=jnp.stack([jnp.zeros_like(kp), -kp, -kv], axis=1))


def velocity_servo(num: int, kv, gear=1.0, ctrl=0.0, dtype=jnp.float64) -> ActuatorParams:
    """``num`` velocity servos (MuJoCo's ``<velocity>``): f = kv (u − l̇)."""
    p = motor(num, gear, ctrl, dtype)
    kv = jnp.broadcast_to(jnp.asarray(kv, dtype), (num,))
    return p.replace(gain=kv, bias=jnp.stack([jnp.zeros_like(kv), jnp.zeros_like(kv), -kv], axis=1))


def joint_forces(actuated: tuple, ap: ActuatorParams, q, qd, num_joints: int, limited_force):
    """The actuators' generalised forces on the joints: (explicit (J,) at q and q̇, implicit
    damping (J,) ≥ 0). ``limited_force`` (A,) static: the actuators with a finite force range
    (explicit and clipped); the others' b₂ l̇ goes to the implicit damping −g² b₂ (b₂ ≤ 0 there)."""
    idx = np.asarray(actuated, np.int64)
    g, gain, bias = ap.gear, ap.gain, ap.bias
    u = jnp.clip(ap.ctrl, ap.ctrlrange[:, 0], ap.ctrlrange[:, 1])
    length, speed = g * q[idx], g * qd[idx]
    lim = jnp.asarray(np.asarray(limited_force, bool))
    f = gain * u + bias[:, 0] + bias[:, 1] * length + jnp.where(lim, bias[:, 2] * speed, 0.0)
    f = jnp.where(lim, jnp.clip(f, ap.forcerange[:, 0], ap.forcerange[:, 1]), f)
    damping = jnp.where(lim, 0.0, -(g * g) * bias[:, 2])
    explicit = jnp.zeros((num_joints,), q.dtype).at[idx].add(g * f)
    implicit = jnp.zeros((num_joints,), q.dtype).at[idx].add(damping)
    return explicit, implicit


def check_actuators(ap: ActuatorParams, count: int, prefix: str, force_limited=None) -> None:
    """Eager checks of the actuators' arrays: shapes, finite gear/gain/bias/ctrl, ranges lower ≤
    upper, a finite ``forcerange`` only on the actuators ``force_limited`` (``Joints.force_limited``,
    static) marks (elsewhere it would be silently ignored), and a velocity bias b₂ ≤ 0 on the
    actuators taken implicitly (a negative damping would pump energy). Errors name ``prefix.<field>``."""
    shapes = dict(gear=(count,), gain=(count,), bias=(count, 3), ctrl=(count,), ctrlrange=(count, 2),
                  forcerange=(count, 2))
    for name, shape in shapes.items():
        a = np.asarray(getattr(ap, name), float)
        if a.shape != shape:
            raise ValueError(f"{prefix}.{name}: expected shape {shape}, one per actuator, got {a.shape}")
        if name.endswith("range"):
            if np.any(np.isnan(a)) or np.any(a[:, 0] > a[:, 1]):
                raise ValueError(f"{prefix}.{name}: lower <= upper per actuator (±inf: unlimited), got {a.tolist()}")
        elif not np.all(np.isfinite(a)):
            raise ValueError(f"{prefix}.{name}: must be finite, got {a.tolist()}")
    free = ~np.all(np.isinf(np.asarray(ap.forcerange, float)), axis=1)
    if force_limited is not None:
        ignored = [a for a in range(count) if free[a] and not force_limited[a]]
        if ignored:
            raise ValueError(f"{prefix}.forcerange[{ignored[0]}]: a finite force range on an actuator that "
                             "Joints.force_limited does not mark would be ignored; mark it (force_limited) or give "
                             "±inf")
    if np.any((np.asarray(ap.bias, float)[:, 2] > 0) & ~free):
        raise ValueError(f"{prefix}.bias: a velocity bias b2 > 0 (negative damping) on an actuator without a force "
                         "range is refused (it is taken implicitly)")


def broken_actuators(ap: ActuatorParams, force_limited=None):
    """() whether an actuator's gear, gain, bias or control is not finite, or a finite force range
    sits on an actuator ``force_limited`` (static) does not mark: the traced check of
    ``check_actuators`` under ``jit``/``vmap`` (``validation.JOINT_PASSIVE``'s bit)."""
    bad = jnp.zeros((), bool)
    for a in (ap.gear, ap.gain, ap.bias, ap.ctrl):
        bad = bad | ~jnp.all(jnp.isfinite(a))
    if force_limited is not None:
        unmarked = ~jnp.asarray(np.asarray(force_limited, bool))
        bad = bad | jnp.any(unmarked & jnp.any(jnp.isfinite(ap.forcerange), axis=1))
    return bad


__all__ = ["ActuatorParams", "broken_actuators", "check_actuators", "joint_forces", "motor", "position_servo",
           "velocity_servo"]
