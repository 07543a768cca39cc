"""The step's stages for one body, and its flags: pure functions every system's step shares.

A world's step (``worlds.pipeline.step``: one body, many, a chain) applies these per body:
``depenetrate`` (a start state deeper than ``Model.penetration_tol`` moved out of the ground),
``free_velocity`` (gravity, control, the implicit gyroscopic term), ``integrate`` (semi-implicit
Euler, quaternion renormalised); then ``step_flags`` from ``solver_failed`` and ``any_nonfinite``;
a rollout's flags accumulate in a ``Summary`` (``empty_summary``, ``accumulate``).
``as_input_dtype`` and ``full_precision`` fix the dtype and the matrix-product precision of every
entry point. No imports from the systems above (``dynamics``, ``worlds``, ``chains``).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from . import geometry
from .rotations import quat_exp, quat_mul, quat_normalize, skew, solve3
from .solvers import LCPSettings
from .types import AnyState, Flags, Model, Params, PlanarState, State, Summary
from .validation import input_dtype


def as_input_dtype(params: Params, state: AnyState, control=None, materials: bool = False):
    """``(state, control)`` cast to ``validation.input_dtype`` (which refuses bad dtypes by name):
    the one dtype every entry point computes in, so a rollout's carry keeps its type. A no-op for
    inputs already in it. materials: the caller (a world) combines ``body.friction``."""
    dtype = input_dtype(params, state, control, materials=materials)
    state = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), state)
    return state, None if control is None else jnp.asarray(control, dtype)


def gravity_vector(model: Model, state: AnyState, dtype) -> jnp.ndarray:
    """Gravity's acceleration (world frame): −``Model.gravity`` along the last axis, and in 3D
    ``Model.gravity_xy`` along x and y (a planar body's is along −y alone: refused otherwise)."""
    d = state.dim
    g = jnp.zeros(d, dtype).at[d - 1].set(-model.gravity)
    if any(model.gravity_xy):
        if d != 3:
            raise ValueError(f"Model.gravity_xy {model.gravity_xy} is a 3D world's; a planar body's gravity is along -y")
        g = g.at[:2].set(jnp.asarray(model.gravity_xy, dtype))
    return g


def gravity_magnitude(model: Model) -> float:
    """|g| (m/s²): ``Model.gravity``'s size, with ``gravity_xy`` where it is not zero."""
    if not any(model.gravity_xy):
        return abs(model.gravity)
    return math.sqrt(model.gravity ** 2 + model.gravity_xy[0] ** 2 + model.gravity_xy[1] ** 2)


def free_velocity(model: Model, params: Params, state: AnyState, control=None, explicit: bool = False) -> jnp.ndarray:
    """Generalised velocity after gravity, control (force world, torque body) and gyroscopics
    (implicit; ``explicit``: −h I⁻¹(ω × Iω) at the state's ω, a Runge–Kutta stage's acceleration)."""
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
    w0 = state.omega + h * solve3(I, f[3:])
    if model.gyroscopic and explicit:
        w = w0 - h * solve3(I, jnp.cross(state.omega, I @ state.omega))
    elif model.gyroscopic:
        # One Newton step on I(w − w0) + h w × I w = 0 from w0 (Bullet's implicit gyroscopic).
        Iw = I @ w0
        res = h * jnp.cross(w0, Iw)
        jac = I + h * (skew(w0) @ I - skew(Iw))
        w = w0 - solve3(jac, res)
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


def bounds_penetration(model: Model) -> bool:
    return model.max_correction_speed is not None and model.law.body_geometry


def depenetrate(model: Model, params: Params, state: AnyState):
    """(state, projected): a state whose deepest vertex is more than ``model.penetration_tol``
    below the ground, moved up along the ground normal until it is exactly that deep (position
    only: velocities untouched, so no momentum is added); ``projected`` says whether it moved.
    Exactly the input state otherwise (and always when ``max_correction_speed`` is None or the
    law's geometry is not the body's vertices: ``body_geometry = False``)."""
    if not bounds_penetration(model):
        return state, jnp.zeros((), bool)
    shift = jnp.maximum(penetration(params, state) - model.penetration_tol, 0.0)
    n = geometry.unit_normal(params.ground).astype(state.pos.dtype)
    return state.replace(pos=state.pos + shift * n), shift > 0


# A contact solve whose residual (a constraint-velocity error) exceeds this is flagged however many
# iterations it used: at extreme speeds the floating-point floor of the solve, not its tolerance,


# sets the error (a 1e10 m/s impact in float32 ends with 1e4 m/s errors).
SOLVER_RESIDUAL_LIMIT = 0.1  # m/s

# A solve that used its whole sweep cap is flagged only where its answer is measurably off: its
# residual (the largest constraint-velocity error of the returned impulses, m/s) above both the
# law's tolerance and this (5 mm/s, a quarter of what gravity adds to a velocity in a 2 ms step).
# The tolerances (1e-6 m/s for one body, 1e-5 for worlds) are far below what changes a trajectory:
# the README's 64 throws (float32) stop once at the 100-sweep cap with a residual of 1.8e-3 m/s, and
# their final positions are within 24 µm of those with a converged solve there; the two-box strike
# of docs/worlds.md stops at its 1,000-sweep cap 3e-5 m/s above its tolerance and rests 3.2 mm from
# the hand calculation. Measured by ``python -m benchmarks.solver_warnings`` (the step in
# docs/ARCHITECTURE.md: 10,000 throws, 0.40 % capped in float32 and 7.6 % in float64, 0.04 % flagged).
SOLVER_ACCURACY = 5e-3  # m/s
# The largest ratio of a capped step's velocity error (m/s, at a box's corners, against a converged
# float64 solve) to its residual seen by that benchmark; quoted by the warning.
VELOCITY_ERROR_PER_RESIDUAL = 30


def solver_failed(model: Model, info) -> jnp.ndarray:
    """Whether a step's contact solve failed (``Flags.SOLVER``): a non-finite residual or one above
    ``SOLVER_RESIDUAL_LIMIT``, or all of the law's ``LCPSettings.max_iter`` used with a residual above
    both its tolerance and ``SOLVER_ACCURACY``. ``info``: anything with ``residual`` and
    ``iterations`` (a ``ContactInfo``, a world's or a chain's info). The one criterion of the flags
    under ``jit`` and of the eager ``SolverWarning``."""
    failed = ~jnp.isfinite(info.residual) | (info.residual > SOLVER_RESIDUAL_LIMIT)
    s = model.law.solver
    if isinstance(s, LCPSettings) and not s.fixed_iterations:
        failed = failed | ((info.iterations >= s.max_iter) & (info.residual > max(s.tol, SOLVER_ACCURACY)))
    return failed


def any_nonfinite(*trees) -> jnp.ndarray:
    """() bool: whether any leaf of ``trees`` (a step's impulses, its new state) has a NaN or inf."""
    leaves = [x for t in trees for x in jax.tree_util.tree_leaves(t)]
    nonfinite = ~jnp.all(jnp.isfinite(leaves[0]))
    for x in leaves[1:]:
        nonfinite = nonfinite | ~jnp.all(jnp.isfinite(x))
    return nonfinite


def step_flags(invalid, nonfinite, projected, failed, capacity=False, degenerate=False) -> jnp.ndarray:
    """A step's ``Flags`` bit set (() int32) from its broken rules (``invalid``, a bit set), a
    non-finite output, a penetration projection, a failed contact solve and (worlds) pairs left
    out by the broad phase and a contact solution at a degenerate point: one body's step, a
    chain's and a world's."""
    flags = jnp.zeros((), jnp.int32)
    for cond, bit in ((invalid != 0, Flags.INVALID_INPUT), (nonfinite, Flags.NONFINITE),
                      (projected, Flags.PENETRATION), (failed, Flags.SOLVER), (capacity, Flags.CAPACITY),
                      (degenerate, Flags.DEGENERATE)):
        flags = flags | jnp.where(cond, jnp.int32(bit), jnp.int32(0))
    return flags


def warm_starts(model: Model) -> bool:
    """Whether a rollout carries the law's warm start from step to step (``law.warm_start``)."""
    return bool(model.law.warm_start)


def full_precision(fn):
    """``fn`` with every matrix product it traces at full float32 (or float64) precision.

    JAX's default precision lets a GPU compute float32 products in TensorFloat-32 (10 mantissa
    bits): on an H200 that put the box throws' final positions 0.9 mm (median) from float64,
    against 0.02 mm for float32 on a CPU (``benchmarks/results/gpu_accuracy.md``). The engine's
    products are small (3×3, 12×6), so full precision costs little. A no-op on CPUs, whose float32
    products are full precision anyway. Set at trace time, so it holds inside a user's ``jit``."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision("highest"):
            return fn(*args, **kwargs)

    return wrapped


_NUM_FLAGS = len(Flags)


def empty_summary() -> Summary:
    """The ``Summary`` of no steps: no flags, no first step, no broken rule."""
    return Summary(flags=jnp.zeros((), jnp.int32), first_step=jnp.full((_NUM_FLAGS,), -1, jnp.int32),
                   invalid=jnp.zeros((), jnp.int32))


def accumulate(summary: Summary, info, k) -> Summary:
    """``summary`` with step ``k``'s ``info.flags`` / ``info.invalid`` added (a rollout's scan)."""
    bits = jnp.asarray([int(f) for f in Flags], jnp.int32)
    raised = (info.flags & bits) != 0
    first = jnp.where((summary.first_step < 0) & raised, k, summary.first_step)
    # the rules broken at the first invalid step (later steps inherit its NaN)
    invalid = jnp.where(summary.invalid == 0, info.invalid, summary.invalid)
    return Summary(flags=summary.flags | info.flags, first_step=first, invalid=invalid)


def per_body(fn, params: Params, *batched):
    """``fn(Params of one body, *one body's args)`` over the stacked bodies of ``params`` (leading
    axis N): vmapped; a world of one body calls ``fn`` on it directly (the single body's program:
    a vmap of one is slower, same values)."""
    one = lambda b: Params(body=b, ground=params.ground, law=params.law)
    if params.body.mass.shape[0] == 1:
        return leading(fn(one(first(params.body)), *map(first, batched)))
    return jax.vmap(lambda b, *a: fn(one(b), *a))(params.body, *batched)


def first(tree, axis: int = 0):
    """Every leaf's first element along ``axis`` (a batch of one, or a world of one body, as the one)."""
    return jax.tree_util.tree_map(lambda x: x[(slice(None),) * axis + (0,)], tree)


def leading(tree):
    """Every leaf with a leading axis of one (``first`` undone)."""
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], tree)


def pad_batch(tree, n_pad: int):
    """Every leaf with ``n_pad`` copies of its first row appended along the leading axis (a batch
    made to divide into chunks or devices; the caller drops the padding from the result)."""
    if n_pad == 0:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.concatenate([x, jnp.repeat(x[:1], n_pad, axis=0)], axis=0), tree)


def energy(model: Model, params: Params, state: AnyState) -> jnp.ndarray:
    """Kinetic plus gravitational potential energy of one body (J)."""
    body = params.body
    if isinstance(state, PlanarState):
        ke = 0.5 * body.mass * jnp.sum(state.vel**2) + 0.5 * body.inertia * state.omega**2
        return ke + body.mass * model.gravity * state.pos[1]
    ke = 0.5 * body.mass * jnp.sum(state.vel**2) + 0.5 * state.omega @ body.inertia @ state.omega
    if any(model.gravity_xy):  # −m g·x
        ke = ke - body.mass * (model.gravity_xy[0] * state.pos[0] + model.gravity_xy[1] * state.pos[1])
    return ke + body.mass * model.gravity * state.pos[2]


def penetration(params: Params, state: AnyState) -> jnp.ndarray:
    """Deepest penetration (≥ 0) of any real vertex (a round body: surface point) below the ground."""
    if params.body.is_round:
        _, phi, valid, _ = geometry.candidate_points(params.body, params.ground, state)
        return jnp.maximum(0.0, -jnp.min(jnp.where(valid, phi, jnp.inf)))
    pts = geometry.world_points(state, params.body.vertices)
    phi = geometry.signed_distance(params.ground, pts)
    return jnp.maximum(0.0, -jnp.min(jnp.where(params.body.vertex_mask > 0, phi, jnp.inf)))


__all__ = ["SOLVER_ACCURACY", "SOLVER_RESIDUAL_LIMIT", "VELOCITY_ERROR_PER_RESIDUAL", "accumulate", "any_nonfinite",
           "as_input_dtype", "bounds_penetration", "depenetrate", "empty_summary", "energy", "free_velocity",
           "full_precision", "gravity_magnitude", "gravity_vector", "integrate", "pad_batch", "penetration", "per_body", "first", "leading", "solver_failed", "step_flags",
           "warm_starts"]
