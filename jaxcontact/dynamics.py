"""Time stepping: one pure ``step`` and a ``lax.scan`` ``rollout``.

Semi-implicit (symplectic) Euler at the velocity level:

1. free velocity  v¹ = v + h M⁻¹ (f_gravity + control − gyroscopic), the gyroscopic term
   integrated with one implicit Newton step (stable for tumbling bodies, never adds energy);
2. contact        p, info = model.law(model, params, state, v¹);
3. update         v⁺ = v¹ + M⁻¹ p; x⁺ = x + h v⁺; q⁺ = normalise(q ⊗ exp(h ω⁺ / 2)).

Before 1, a start state that penetrates deeper than ``Model.penetration_tol`` is projected out
along the ground normal (``depenetrate``: position only, no momentum); the contact solve then
removes the rest at no more than ``Model.max_correction_speed``.

What is checked where:

* eager calls (concrete inputs): ``validation.validate_inputs`` raises ``ValueError`` naming the
  field before anything is compiled; a start state deeper in the ground than
  ``Model.penetration_tol`` gives a ``PenetrationWarning``, a non-finite end state a
  ``NonFiniteWarning``, a contact solve that did not converge (``Flags.SOLVER``) a
  ``SolverWarning`` (``batch_rollout(validate=False)`` skips all three);
* dtypes (static, so in any tracing context): ``validation.input_dtype`` refuses integer, bool,
  float16/bfloat16 and complex inputs by name and gives the one dtype the step computes in —
  JAX's promotion of the state's, the controls' and the parameters' float dtypes; the state and
  controls are cast to it (a float32 state with float64 parameters under x64 runs in float64);
* every step, in any tracing context (``jit``/``vmap``/``grad``): ``ContactInfo.flags``
  (``types.Flags``: invalid input, non-finite output, deep penetration, solver not converged) and
  ``ContactInfo.invalid`` (which value rule of ``validation.RULES`` the input broke);
  ``output="final"`` with ``with_info`` returns their ``Summary`` over the rollout;
  ``diagnostics.report``/``diagnostics.check`` name the field, the bodies and the first step;
* static settings (``Model`` fields, ``n_steps``): when the model is built or the call is made.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from . import geometry
from .rotations import quat_exp, quat_mul, quat_normalize, skew, solve3
from .solvers import LCPSettings
from .types import AnyState, ContactInfo, Flags, Model, Params, PlanarState, State, Summary
from .validation import broken_rules, check_steps, input_dtype, is_concrete, validate_inputs


class PenetrationWarning(UserWarning):
    """A start state penetrates the ground deeper than ``Model.penetration_tol``."""


class NonFiniteWarning(UserWarning):
    """An eager step or rollout ended with non-finite states (NaN spreads, so the last state shows it)."""


class SolverWarning(UserWarning):
    """An eager step or rollout had a contact solve that did not converge (``Flags.SOLVER``: its
    sweep cap reached with a residual above both its tolerance and ``SOLVER_ACCURACY``, or a
    residual above ``SOLVER_RESIDUAL_LIMIT`` or non-finite); the message gives the largest such
    residual (m/s), the constraint-velocity error of the returned impulses."""


def as_input_dtype(params: Params, state: AnyState, control=None, materials: bool = False):
    """``(state, control)`` cast to ``validation.input_dtype`` (which refuses bad dtypes by name):
    the one dtype every entry point computes in, so a rollout's carry keeps its type. A no-op for
    inputs already in it. materials: the caller (a world) combines ``body.friction``."""
    dtype = input_dtype(params, state, control, materials=materials)
    state = jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), state)
    return state, None if control is None else jnp.asarray(control, dtype)


@jax.jit
def _nonfinite_bodies(final) -> jnp.ndarray:
    leaves = [x.reshape(x.shape[0], -1) if x.ndim > 1 else x[:, None] for x in jax.tree_util.tree_leaves(final)]
    return ~jnp.all(jnp.isfinite(jnp.concatenate(leaves, axis=1)), axis=1)


@jax.jit
def _nonfinite_body(final) -> jnp.ndarray:
    return _nonfinite_bodies(jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], final))


def warn_nonfinite(final, batched: bool = False, stacklevel: int = 3) -> None:
    """Warn (``NonFiniteWarning``) when concrete final states are non-finite, with how many."""
    bad = np.asarray(_nonfinite_bodies(final) if batched else _nonfinite_body(final))
    if bad.any():
        who = f"{int(bad.sum())} of {bad.size} bodies" if batched else "the body"
        warnings.warn(f"{who} went non-finite (first: body {int(np.argmax(bad))}); rerun with with_info=True "
                      "and jaxcontact.diagnostics.report for the first step and the cause",
                      NonFiniteWarning, stacklevel=stacklevel)


_RERUN_HINT = "rerun with with_info=True and jaxcontact.diagnostics.report for the steps and bodies"


def solver_message(who: str, first: int, worst=None, hint: str = _RERUN_HINT) -> str:
    """The ``SolverWarning`` sentence (also the CLI's): ``who`` ("the body", "3 of 64 bodies"),
    the first step flagged and the largest residual of the flagged steps (m/s; None: not known)."""
    res = "" if worst is None else f"; largest residual {float(worst):.2g} m/s"
    return (f"the contact solver did not converge for {who} (first at step {first}{res}; Flags.SOLVER: the "
            f"sweep cap reached above {SOLVER_ACCURACY:g} m/s and the tolerance, or a residual above "
            f"{SOLVER_RESIDUAL_LIMIT:g} m/s), so the velocities after those steps are off by about the residual "
            f"(on random throws up to {VELOCITY_ERROR_PER_RESIDUAL:g} times it, against a converged solve); {hint}")


def warn_solver(first_step, batched: bool = False, stacklevel: int = 3, who: str | None = None,
                hint: str = _RERUN_HINT, worst=None) -> None:
    """Warn (``SolverWarning``) when bodies had a contact solve that did not converge;
    ``first_step``: per body, the first such step (−1: none); ``worst``: per body, the largest
    residual of its flagged steps (m/s; None: not known). who/hint: the words for a world."""
    first = np.asarray(first_step).reshape(-1)
    bad = first >= 0
    if bad.any():
        who = who or (f"{int(bad.sum())} of {bad.size} bodies" if batched else "the body")
        w = None
        if worst is not None:
            w = np.asarray(worst, float).reshape(-1)
            w = float(np.max(np.where(np.isfinite(w), w, np.inf)[bad]))
        warnings.warn(solver_message(who, int(first[bad].min()), w, hint), SolverWarning, stacklevel=stacklevel)


def first_flag_step(out, output: str, flag: Flags = Flags.SOLVER):
    """Per rollout, the first step flagged ``flag`` (−1: none), from a rollout's output:
    ``(trajectory, infos)`` (infos.flags (…, T)) or ``(final, Summary)``; leading batch axes kept."""
    if output == "final":
        return np.asarray(out[1].first_step)[..., list(Flags).index(flag)]
    bad = (np.asarray(out[1].flags) & int(flag)) != 0
    if bad.shape[-1] == 0:  # a rollout of 0 steps: no step, no failure
        return np.full(bad.shape[:-1], -1)
    return np.where(bad.any(axis=-1), np.argmax(bad, axis=-1), -1)


def worst_solver_residual(out, output: str):
    """Per rollout, the largest residual (m/s) of its steps flagged SOLVER (0: none; inf for a
    non-finite one), from ``(trajectory, infos)``; None for ``(final, Summary)`` (not recorded)."""
    if output == "final":
        return None
    bad = (np.asarray(out[1].flags) & int(Flags.SOLVER)) != 0
    res = np.asarray(out[1].residual, float)
    res = np.broadcast_to(res.reshape(res.shape[: bad.ndim]), bad.shape)
    return np.where(bad, np.where(np.isfinite(res), res, np.inf), 0.0).max(axis=-1, initial=0.0)


def warn_failed_solves(out, output: str, noun: str, batched: bool, hint: str, stacklevel: int = 4) -> None:
    """``warn_solver`` for a multi-body rollout's output (a world's or a chain's): "the ``noun``",
    or for a batch "k of n ``noun``s"; ``stacklevel`` counted from the caller of this function."""
    first = np.asarray(first_flag_step(out, output)).reshape(-1)
    who = f"{int((first >= 0).sum())} of {first.size} {noun}s" if batched else f"the {noun}"
    warn_solver(first, stacklevel=stacklevel + 1, who=who, hint=hint, worst=worst_solver_residual(out, output))


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
    w0 = state.omega + h * solve3(I, f[3:])
    if model.gyroscopic:
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


def _bounds_penetration(model: Model) -> bool:
    return model.max_correction_speed is not None and getattr(model.law, "body_geometry", True)


def depenetrate(model: Model, params: Params, state: AnyState):
    """(state, projected): a state whose deepest vertex is more than ``model.penetration_tol``
    below the ground, moved up along the ground normal until it is exactly that deep (position
    only: velocities untouched, so no momentum is added); ``projected`` says whether it moved.
    Exactly the input state otherwise (and always when ``max_correction_speed`` is None or the
    law's geometry is not the body's vertices: ``body_geometry = False``)."""
    if not _bounds_penetration(model):
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
    s = getattr(model.law, "solver", None)
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


def step_flags(invalid, nonfinite, projected, failed, capacity=False) -> jnp.ndarray:
    """A step's ``Flags`` bit set (() int32) from its broken rules (``invalid``, a bit set), a
    non-finite output, a penetration projection, a failed contact solve and (worlds) pairs left
    out by the broad phase: one body's step, a chain's and a world's."""
    flags = jnp.zeros((), jnp.int32)
    for cond, bit in ((invalid != 0, Flags.INVALID_INPUT), (nonfinite, Flags.NONFINITE),
                      (projected, Flags.PENETRATION), (failed, Flags.SOLVER), (capacity, Flags.CAPACITY)):
        flags = flags | jnp.where(cond, jnp.int32(bit), jnp.int32(0))
    return flags


def warm_starts(model: Model) -> bool:
    """Whether a rollout carries the law's warm start from step to step (``law.warm_start``)."""
    return bool(getattr(model.law, "warm_start", False))


def _step(model: Model, params: Params, state: AnyState, control=None):
    state, control = as_input_dtype(params, state, control)
    new, info, _ = _step_warm(model, params, state, control, None)
    return new, info


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


@full_precision
def _step_warm(model: Model, params: Params, state: AnyState, control, warm):
    """The step; ``warm`` (None: a cold start) is the law's warm start, returned updated."""
    invalid = broken_rules(params, state, control)
    state, projected = depenetrate(model, params, state)
    v1 = free_velocity(model, params, state, control)
    if warm is None:
        p, info = model.law(model, params, state, v1)
    else:
        p, info, warm = model.law.solve_warm(model, params, state, v1, warm)
    Minv = geometry.mass_matrix_inverse(params.body, state)
    v_new = v1 + Minv @ p
    new = integrate(model, state, v_new)
    flags = step_flags(invalid, any_nonfinite(p, new), projected, solver_failed(model, info))
    return new, info.replace(flags=flags, invalid=invalid), warm


_step_jit = jax.jit(_step, static_argnames=("model",))


@functools.partial(jax.jit, static_argnames=("batched",))
def _penetrations(params: Params, states, batched: bool):
    return jax.vmap(lambda s: penetration(params, s))(states) if batched else penetration(params, states)


def warn_penetration(model: Model, params: Params, states, batched: bool = False, stacklevel: int = 3) -> None:
    """Warn (``PenetrationWarning``) when concrete start states penetrate the ground deeper than
    ``model.penetration_tol``; one vectorised host pass."""
    if not _bounds_penetration(model):
        return
    pen = np.asarray(jax.device_get(_penetrations(params, states, batched)))
    deep = pen > model.penetration_tol
    if np.any(deep):
        n, k = pen.size, int(deep.sum())
        who = f"{k} of {n} start states penetrate" if batched else "the start state penetrates"
        warnings.warn(
            f"{who} the ground by up to {pen.max():.3g} m (more than Model.penetration_tol = "
            f"{model.penetration_tol:.3g} m); projected out along the ground normal without added momentum",
            PenetrationWarning, stacklevel=stacklevel)


def step_with_info(model: Model, params: Params, state: AnyState, control=None):
    """One step of a single body: ``(state⁺, ContactInfo)``. ``vmap`` it for batches.

    Called on concrete arrays it validates them, runs a jitted step (compiled once per model and
    shapes) and warns on its flags (``NonFiniteWarning``, ``SolverWarning``); inside a user's
    ``jit``/``vmap``/``grad`` it traces straight through. ``state⁺`` is in
    ``validation.input_dtype`` of the inputs.
    """
    return _step_with_info(model, params, state, control, stacklevel=3)


def _step_with_info(model, params, state, control, stacklevel):
    """``stacklevel``: of a warning raised here, pointing at the user's call."""
    if not is_concrete((params, state, control)):
        return _step(model, params, state, control)
    validate_inputs(params, state, control=control, batched=False)
    warn_penetration(model, params, state, stacklevel=stacklevel + 1)
    new, info = _step_jit(model, params, state, control)
    flags = int(info.flags)
    if flags & Flags.NONFINITE:
        warnings.warn("the step's output is non-finite; jaxcontact.diagnostics.report(info) names the cause",
                      NonFiniteWarning, stacklevel=stacklevel)
    if flags & Flags.SOLVER:
        warn_solver(0, stacklevel=stacklevel + 1, worst=info.residual)
    return new, info


def step(model: Model, params: Params, state: AnyState, control=None) -> AnyState:
    """One step of a single body: ``state⁺`` (``step_with_info`` without the info)."""
    return _step_with_info(model, params, state, control, stacklevel=3)[0]


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


@functools.partial(jax.jit, static_argnames=("model", "n_steps", "output", "with_info", "watch"))
def _rollout(model, params, state, controls, n_steps, output, with_info, watch=False):
    """The scan; ``watch`` (eager calls) also returns the first step whose contact solve failed
    (−1: none), for ``SolverWarning``."""
    state, controls = as_input_dtype(params, state, controls)
    summarize = output == "final" and with_info
    summary0 = empty_summary()

    # the law's warm start (previous step's impulses) rides in the carry; never differentiated
    warm0 = model.law.init_warm(model, params, state) if warm_starts(model) else None

    def f(carry, xs):
        s, summary, warm, failed = carry
        u, k = xs
        s1, info, warm = _step_warm(model, params, s, u, warm)
        if summarize:
            summary = accumulate(summary, info, k)
        if watch:  # the solver bit alone, so the other flags stay dead code
            first, worst = failed
            bad = solver_failed(model, info)
            res = jnp.where(jnp.isfinite(info.residual), info.residual, jnp.inf).astype(worst.dtype)
            failed = (jnp.where((first < 0) & bad, k, first), jnp.where(bad, jnp.maximum(worst, res), worst))
        out = None if output == "final" else (s1, info if with_info else None)
        return (s1, summary, warm, failed), out

    ks = jnp.arange(n_steps, dtype=jnp.int32)
    failed0 = (jnp.full((), -1, jnp.int32), jnp.zeros((), state.pos.dtype)) if watch else None
    (final, summary, _, failed), ys = jax.lax.scan(f, (state, summary0, warm0, failed0), (controls, ks),
                                                   length=n_steps)
    if output == "final":
        out = (final, summary) if with_info else final
    else:
        traj, infos = ys
        traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
        out = (traj, infos) if with_info else traj
    return (out, failed) if watch else out



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
    final state, which keeps memory per body constant for huge batches (with ``with_info``:
    ``(final, Summary)``, the steps' flags accumulated). Jitted; ``vmap`` it (or use
    ``batch_rollout``) for many bodies.
    """
    if output not in ("trajectory", "final"):
        raise ValueError(f"output must be 'trajectory' or 'final', got {output!r}")
    if controls is not None:
        n_ctrl = jnp.shape(controls)[0]
        if n_steps is not None and check_steps(n_steps) != n_ctrl:
            raise ValueError(f"n_steps={n_steps} but controls has {n_ctrl} rows")
        n_steps = n_ctrl
    if n_steps is None:
        raise ValueError("rollout needs n_steps (an int >= 0) or a controls array")
    n_steps = check_steps(n_steps)
    if not is_concrete((params, state, controls)):
        return _rollout(model, params, state, controls, n_steps, output, with_info)
    validate_inputs(params, state, control=controls, batched=False, control_steps=True)
    warn_penetration(model, params, state)
    out, failed = _rollout(model, params, state, controls, n_steps, output, with_info, watch=True)
    warn_nonfinite(_last_state(out, output, with_info))
    warn_solver(failed[0], worst=failed[1])
    return out


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
    batch on the host, and a ``PenetrationWarning`` for start states deep in the ground) and warn
    after the run (``NonFiniteWarning``, ``SolverWarning``). ``False`` skips both for inputs
    already validated (e.g. states that came out of an earlier
    rollout); inside a user's ``jit`` the check never runs anyway — there ``ContactInfo.flags``
    (or the ``Summary`` of ``output="final", with_info=True``) report, and ``diagnostics.check``
    raises on them.
    """
    n_steps = check_steps(n_steps)
    if chunk_size == "auto":
        chunk_size = CPU_CHUNK if jax.default_backend() == "cpu" else None
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int, None or 'auto', got {chunk_size!r}")
    if output not in ("trajectory", "final"):
        raise ValueError(f"output must be 'trajectory' or 'final', got {output!r}")
    check = validate and is_concrete((params, states))
    if check:
        validate_inputs(params, states, batched=True, params_batched=params_batched)
        if not params_batched:
            warn_penetration(model, params, states, batched=True)
    out = _batch_rollout(model, params, states, n_steps, params_batched, output, with_info, chunk_size, watch=check)
    if check:
        out, failed = out
        warn_nonfinite(_last_state(out, output, with_info, batched=True), batched=True)
        warn_solver(failed[0], batched=True, worst=failed[1])
    return out


def _last_state(out, output, with_info, batched=False):
    states = out[0] if with_info else out
    if output == "final":
        return states
    return jax.tree_util.tree_map(lambda x: x[:, -1] if batched else x[-1], states)


def pad_batch(tree, n_pad: int):
    """Every leaf with ``n_pad`` copies of its first row appended along the leading axis (a batch
    made to divide into chunks or devices; the caller drops the padding from the result)."""
    if n_pad == 0:
        return tree
    return jax.tree_util.tree_map(lambda x: jnp.concatenate([x, jnp.repeat(x[:1], n_pad, axis=0)], axis=0), tree)


@functools.partial(
    jax.jit,
    static_argnames=("model", "n_steps", "params_batched", "output", "with_info", "chunk_size", "watch"),
)
def _batch_rollout(model, params, states, n_steps, params_batched, output, with_info, chunk_size=None, watch=False):
    f = lambda p, s: _rollout(model, p, s, None, n_steps, output, with_info, watch)
    n = jax.tree_util.tree_leaves(states)[0].shape[0]
    if n == 1:  # one body: the unbatched program (a vmap of one costs ~1.6x here), same result
        first = lambda t: jax.tree_util.tree_map(lambda x: x[0], t)
        out = f(first(params) if params_batched else params, first(states))
        return jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], out)
    vf = jax.vmap(f, in_axes=(0 if params_batched else None, 0))
    if chunk_size is None or n <= chunk_size:
        return vf(params, states)
    n_chunks = -(-n // chunk_size)
    pad = n_chunks * chunk_size - n

    def split(tree):  # (n, ...) -> (n_chunks, chunk_size, ...), padded with copies of body 0
        return jax.tree_util.tree_map(lambda x: x.reshape(n_chunks, chunk_size, *x.shape[1:]), pad_batch(tree, pad))

    xs_states = split(states)
    if params_batched:
        out = jax.lax.map(lambda a: vf(*a), (split(params), xs_states))
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
    "depenetrate",
    "NonFiniteWarning",
    "PenetrationWarning",
    "SolverWarning",
    "as_input_dtype",
    "warn_nonfinite",
    "any_nonfinite",
    "step_flags",
    "warn_penetration",
    "warn_solver",
    "solver_message",
    "solver_failed",
    "SOLVER_ACCURACY",
    "free_velocity",
    "integrate",
    "energy",
    "penetration",
]
