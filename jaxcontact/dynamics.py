"""Time stepping: one pure ``step`` and a ``lax.scan`` ``rollout``.

Semi-implicit (symplectic) Euler at the velocity level:

1. free velocity  v¹ = v + h M⁻¹ (f_gravity + control − gyroscopic), the gyroscopic term
   integrated with one implicit Newton step (stable for tumbling bodies, never adds energy);
2. contact        p, info = model.law(model, params, state, v¹);
3. update         v⁺ = v¹ + M⁻¹ p; x⁺ = x + h v⁺; q⁺ = normalise(q ⊗ exp(h ω⁺ / 2)).

``step``/``rollout`` validate concrete inputs (shapes, finiteness, unit quaternion, positive
mass and inertia) and raise ``ValueError`` naming the field before anything is compiled; inside
a user's ``jit``/``grad``/``vmap`` the inputs are tracers and the checks are skipped.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from . import geometry
from .rotations import quat_exp, quat_mul, quat_normalize, skew
from .types import AnyState, Model, Params, PlanarState, State
from .validation import is_concrete, validate_inputs


def gravity_vector(model: Model, state: AnyState, dtype) -> jnp.ndarray:
    d = state.dim
    return jnp.zeros(d, dtype).at[d - 1].set(-model.gravity)


def free_velocity(model: Model, params: Params, state: AnyState, control=None) -> jnp.ndarray:
    """Generalised velocity after gravity, control (force world, torque body) and gyroscopics."""
    body = params.body
    h = model.dt
    dtype = state.vel.dtype
    g = gravity_vector(model, state, dtype)
    if isinstance(state, PlanarState):
        f = jnp.zeros(3, dtype) if control is None else control
        v = state.vel + h * (g + f[:2] / body.mass)
        w = state.omega + h * f[2] / body.inertia
        return jnp.concatenate([v, w[None]])
    f = jnp.zeros(6, dtype) if control is None else control
    v = state.vel + h * (g + f[:3] / body.mass)
    I = body.inertia
    w0 = state.omega + h * jnp.linalg.solve(I, f[3:])
    if model.gyroscopic:
        # One Newton step on I(w − w0) + h w × I w = 0 from w0 (Bullet's implicit gyroscopic).
        Iw = I @ w0
        res = h * jnp.cross(w0, Iw)
        jac = I + h * (skew(w0) @ I - skew(Iw))
        w = w0 - jnp.linalg.solve(jac, res)
    else:
        w = w0
    return jnp.concatenate([v, w])


def integrate(model: Model, state: AnyState, v_new: jnp.ndarray) -> AnyState:
    """Positions from the new velocity (semi-implicit Euler); quaternion renormalised."""
    h = model.dt
    if isinstance(state, PlanarState):
        return PlanarState(
            pos=state.pos + h * v_new[:2],
            angle=state.angle + h * v_new[2],
            vel=v_new[:2],
            omega=v_new[2],
        )
    vel, omega = v_new[:3], v_new[3:]
    quat = quat_normalize(quat_mul(state.quat, quat_exp(h * omega)))
    return State(pos=state.pos + h * vel, quat=quat, vel=vel, omega=omega)


def _step(model: Model, params: Params, state: AnyState, control=None):
    v1 = free_velocity(model, params, state, control)
    p, info = model.law(model, params, state, v1)
    Minv = geometry.mass_matrix_inverse(params.body, state)
    v_new = v1 + Minv @ p
    return integrate(model, state, v_new), info


_step_jit = jax.jit(_step, static_argnames=("model",))


def step_with_info(model: Model, params: Params, state: AnyState, control=None):
    """One step of a single body: ``(state⁺, ContactInfo)``. ``vmap`` it for batches.

    Called on concrete arrays it validates them and runs a jitted step (compiled once per
    model and shapes); inside a user's ``jit``/``vmap``/``grad`` it traces straight through.
    """
    if is_concrete((params, state, control)):
        validate_inputs(params, state, control=control, batched=False)
        return _step_jit(model, params, state, control)
    return _step(model, params, state, control)


def step(model: Model, params: Params, state: AnyState, control=None) -> AnyState:
    """One step of a single body: ``state⁺``."""
    return step_with_info(model, params, state, control)[0]


@partial(jax.jit, static_argnames=("model", "n_steps", "output", "with_info"))
def _rollout(model, params, state, controls, n_steps, output, with_info):
    def f(s, u):
        s1, info = _step(model, params, s, u)
        out = None if output == "final" else (s1, info if with_info else None)
        return s1, out

    final, ys = jax.lax.scan(f, state, controls, length=n_steps)
    if output == "final":
        return final
    traj, infos = ys
    traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
    return (traj, infos) if with_info else traj


def rollout(
    model: Model,
    params: Params,
    state: AnyState,
    n_steps: int | None = None,
    controls=None,
    *,
    output: str = "trajectory",
    with_info: bool = False,
):
    """Simulate one body for ``n_steps`` (or ``len(controls)``) steps with ``lax.scan``.

    output="trajectory" returns the stacked states (n_steps + 1, …) including the initial one
    (and the per-step ``ContactInfo`` when ``with_info``); output="final" returns only the
    final state, which keeps memory per body constant for huge batches. Jitted; ``vmap`` it
    (or use ``batch_rollout``) for many bodies.
    """
    if output not in ("trajectory", "final"):
        raise ValueError(f"output must be 'trajectory' or 'final', got {output!r}")
    if controls is not None:
        n_ctrl = jnp.shape(controls)[0]
        if n_steps is not None and n_steps != n_ctrl:
            raise ValueError(f"n_steps={n_steps} but controls has {n_ctrl} rows")
        n_steps = n_ctrl
    if n_steps is None or int(n_steps) < 0:
        raise ValueError("rollout needs n_steps >= 0 or a controls array")
    if is_concrete((params, state, controls)):
        validate_inputs(params, state, control=controls, batched=False, control_steps=True)
    return _rollout(model, params, state, controls, int(n_steps), output, with_info)


# Bodies per sequential chunk of a batched rollout on a CPU (chosen by the chunk-size sweep of the
# throughput benchmark; its results file has the measurement).
CPU_CHUNK = 256


def batch_rollout(
    model: Model,
    params: Params,
    states: AnyState,
    n_steps: int,
    *,
    params_batched: bool = False,
    output: str = "final",
    with_info: bool = False,
    chunk_size: int | None | str = "auto",
    validate: bool = True,
):
    """``rollout`` vmapped over a leading batch axis of ``states`` (and ``params`` if batched).

    chunk_size: simulate the batch as sequential chunks of this many bodies (``lax.map`` over
    vmapped chunks). On a CPU, chunks of a few hundred keep the working set in cache and stop
    the slowest body of a huge batch from setting every body's solver sweep count (the same
    physics; results differ only by floating-point rounding). ``None`` vmaps the whole batch at
    once (best on GPUs); ``"auto"`` is 256 on a CPU backend and ``None`` elsewhere.
    validate: check concrete inputs first (shapes, finiteness, quaternions, mass; one pass over the
    batch on the host). ``False`` skips the check for inputs already validated (e.g. states that
    came out of an earlier rollout); inside a user's ``jit`` the check never runs anyway.
    """
    if chunk_size == "auto":
        chunk_size = CPU_CHUNK if jax.default_backend() == "cpu" else None
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int, None or 'auto', got {chunk_size!r}")
    if validate and is_concrete((params, states)):
        validate_inputs(params, states, batched=True, params_batched=params_batched)
    return _batch_rollout(
        model, params, states, int(n_steps), params_batched, output, with_info, chunk_size
    )


@partial(
    jax.jit,
    static_argnames=("model", "n_steps", "params_batched", "output", "with_info", "chunk_size"),
)
def _batch_rollout(model, params, states, n_steps, params_batched, output, with_info, chunk_size=None):
    f = lambda p, s: _rollout(model, p, s, None, n_steps, output, with_info)
    vf = jax.vmap(f, in_axes=(0 if params_batched else None, 0))
    n = jax.tree_util.tree_leaves(states)[0].shape[0]
    if chunk_size is None or n <= chunk_size:
        return vf(params, states)
    n_chunks = -(-n // chunk_size)
    pad = n_chunks * chunk_size - n

    def split(x):  # (n, ...) -> (n_chunks, chunk_size, ...), padded with copies of body 0
        x = jnp.concatenate([x, jnp.repeat(x[:1], pad, axis=0)]) if pad else x
        return x.reshape(n_chunks, chunk_size, *x.shape[1:])

    xs_states = jax.tree_util.tree_map(split, states)
    if params_batched:
        out = jax.lax.map(lambda a: vf(*a), (jax.tree_util.tree_map(split, params), xs_states))
    else:
        out = jax.lax.map(lambda s: vf(params, s), xs_states)
    return jax.tree_util.tree_map(lambda x: x.reshape(n_chunks * chunk_size, *x.shape[2:])[:n], out)


def energy(model: Model, params: Params, state: AnyState) -> jnp.ndarray:
    """Kinetic plus gravitational potential energy of one body (J)."""
    body = params.body
    if isinstance(state, PlanarState):
        ke = 0.5 * body.mass * jnp.sum(state.vel**2) + 0.5 * body.inertia * state.omega**2
        return ke + body.mass * model.gravity * state.pos[1]
    ke = 0.5 * body.mass * jnp.sum(state.vel**2) + 0.5 * state.omega @ body.inertia @ state.omega
    return ke + body.mass * model.gravity * state.pos[2]


def penetration(params: Params, state: AnyState) -> jnp.ndarray:
    """Deepest penetration (≥ 0) of any real vertex below the ground."""
    pts = geometry.world_points(state, params.body.vertices)
    phi = geometry.signed_distance(params.ground, pts)
    return jnp.maximum(0.0, -jnp.min(jnp.where(params.body.vertex_mask > 0, phi, jnp.inf)))


__all__ = [
    "step",
    "step_with_info",
    "rollout",
    "batch_rollout",
    "free_velocity",
    "integrate",
    "energy",
    "penetration",
]
