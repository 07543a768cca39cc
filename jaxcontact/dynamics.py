"""A single body's entry points: ``step``, ``step_with_info``, ``rollout``, ``batch_rollout``.

A single body is a world of one body without pairs (``worlds.pipeline``): these functions lift
its inputs to that world, run the one step (``worlds.pipeline.step_stages``, scanned by
``worlds.pipeline.run``) and return the body's own state and its law's ``ContactInfo``. The
stages themselves are ``jaxcontact.stages``; the eager warnings ``jaxcontact.eager``.

Semi-implicit (symplectic) Euler at the velocity level:

1. free velocity  v¹ = v + h M⁻¹ (f_gravity + control − gyroscopic), the gyroscopic term
   integrated with one implicit Newton step (stable for tumbling bodies, never adds energy);
2. contact        p, info = model.law(model, params, state, v¹);
3. update         v⁺ = v¹ + M⁻¹ p; x⁺ = x + h v⁺; q⁺ = normalise(q ⊗ exp(h ω⁺ / 2)).

Before 1, a start state that penetrates deeper than ``Model.penetration_tol`` is projected out
along the ground normal (``depenetrate``: position only, no momentum); the contact solve then
removes the rest at no more than ``Model.max_correction_speed``.

What is checked where:

* every call, first (static, so in any tracing context): the arguments' types
  (``validation.check_arguments``: ``ArgumentError``, one line naming the argument, the type it got
  and the type it needs);
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

import jax
import jax.numpy as jnp

# the names a single body's user has always had here (their homes: ``stages``, ``eager``)
from .eager import (
    NonFiniteWarning,
    PenetrationWarning,
    SolverWarning,
    solver_message,
    warn_nonfinite,
    warn_penetration,
    warn_solver,
    warn_step,
)
from .stages import (
    SOLVER_ACCURACY,
    SOLVER_RESIDUAL_LIMIT,
    any_nonfinite,
    as_input_dtype,
    depenetrate,
    energy,
    first,
    free_velocity,
    full_precision,
    integrate,
    penetration,
    solver_failed,
    step_flags,
)
from .doors import enter, last_states
from .types import AnyState, Model, Params, PlanarState, State
from .validation import BOOL, OPTIONAL_ARRAY, OPTIONAL_STEPS, OUTPUT, STEPS, check_arguments, check_steps, \
    validate_inputs
from .chains import dynamics as chain_doors
from .chains.model import ChainModel
from .worlds import pipeline
from .worlds.joints import check_start
from .worlds.pipeline import CPU_CHUNK
from .worlds.scene import Scene


def _step(model: Model, params: Params, state: AnyState, control=None):
    state, control = as_input_dtype(params, state, control)
    world = pipeline.lift_body(params, state, control, steps=False)
    new, info, _ = pipeline.step_stages(model, pipeline.body_scene(), *world, None)
    return first(new), first(info.contacts)


_step_jit = jax.jit(_step, static_argnames=("model",))


def _system(door: str, model, scene, start: str) -> str:
    """What the front door ``door`` steps: "chain" (a ``chains.ChainModel``), "world" (``scene`` given:
    ``worlds.pipeline``'s door) or "body"."""
    check_arguments(door, scene=(scene, (Scene, None)))
    check_start(start)
    if isinstance(model, ChainModel):
        if scene is not None:
            raise ValueError(f"{door}: a chain is its own world (chains.as_world); give it no scene")
        return "chain"
    return "body" if scene is None else "world"


def _refuse(door: str, kind: str, **settings) -> None:
    """Refuse by name a setting (name -> (value, default)) that a ``kind`` of system does not have."""
    for name, (value, default) in settings.items():
        if (value is not None) if default is None else (value != default):
            shown = "an array" if hasattr(value, "shape") else repr(value)
            raise ValueError(f"{door}: {name} (got {shown}) does not apply to a {kind}; leave it at {default!r}")


def _strip(out, with_info: bool):
    """A world's or chain's rollout output, ``(states, infos)``, as the front door returns it: the states
    alone unless ``with_info``."""
    return out if with_info else out[0]


def step_with_info(model: Model, params: Params, state: AnyState, control=None, *, scene: Scene | None = None,
                   start: str = "initial"):
    """One step of any system: a single body ``(state⁺, ContactInfo)``; with ``scene`` a world's step
    (``worlds.step_with_info``: ``(state⁺, WorldInfo)``, ``start`` as ``worlds.rollout``'s); a chain
    (``model`` a ``chains.ChainModel``, ``params`` its ``ChainParams``, no control) ``chains.step_with_info``.
    A single body's, below. ``vmap`` it for batches.

    Called on concrete arrays it validates them, runs a jitted step (compiled once per model and
    shapes) and warns on its flags (``NonFiniteWarning``, ``SolverWarning``); inside a user's
    ``jit``/``vmap``/``grad`` it traces straight through. ``state⁺`` is in
    ``validation.input_dtype`` of the inputs.
    """
    kind = _system("step_with_info", model, scene, start)
    if kind == "chain":
        _refuse("step_with_info", kind, control=(control, None))
        return chain_doors.step_with_info(model, params, state, start=start)
    if kind == "world":
        return pipeline.step_with_info(model, scene, params, state, control, start=start)
    check_arguments("step_with_info", model=(model, Model), params=(params, Params), state=(state, (State, PlanarState)),
                    control=(control, OPTIONAL_ARRAY))
    return _step_with_info(model, params, state, control)


def _step_with_info(model, params, state, control):
    def checks():
        validate_inputs(params, state, control=control, batched=False)
        warn_penetration(model, params, state)

    def warn(out):
        warn_step(out[1].flags, out[1].residual)
        return out

    return enter((params, state, control), lambda eager: (_step_jit if eager else _step)(model, params, state, control),
                 checks, warn)


def step(model: Model, params: Params, state: AnyState, control=None, *, scene: Scene | None = None,
         start: str = "initial") -> AnyState:
    """One step of any system: ``state⁺`` (``step_with_info`` without the info; ``scene``, a chain: as there)."""
    kind = _system("step", model, scene, start)
    if kind == "chain":
        _refuse("step", kind, control=(control, None))
        return chain_doors.step(model, params, state, start=start)
    if kind == "world":
        return pipeline.step(model, scene, params, state, control, start=start)
    check_arguments("step", model=(model, Model), params=(params, Params), state=(state, (State, PlanarState)),
                    control=(control, OPTIONAL_ARRAY))
    return _step_with_info(model, params, state, control)[0]


@functools.partial(jax.jit, static_argnames=("spec",))
def _rollout(spec: pipeline.RolloutSpec, params, state, controls):
    """The world rollout of one body (``pipeline.run`` through ``pipeline.as_body``); ``spec.watch``
    (eager calls) also returns the first step whose contact solve failed (−1: none) and the largest
    such residual."""
    return pipeline.as_body(spec, lambda p, s, u: pipeline.run(spec, p, s, u), params, state, controls)


def _spec(model, n_steps, output, with_info, watch=False, **batch) -> pipeline.RolloutSpec:
    """A body's rollout settings: its world of one (``pipeline.body_scene``), its inputs and outputs a
    single body's (``pipeline.as_body``)."""
    return pipeline.RolloutSpec(model, pipeline.body_scene(), n_steps, output, with_info, watch, body=True, **batch)


def rollout(
    model: Model,
    params: Params,
    state: AnyState,
    n_steps: int | None = None,
    controls=None,
    *,
    output: str = "trajectory",
    with_info: bool = False,
    scene: Scene | None = None,
    start: str = "initial",
):
    """Simulate any system for ``n_steps`` (or ``len(controls)``) steps with ``lax.scan``: a single body;
    with ``scene`` a world (``worlds.rollout``, ``start`` as there); a chain (``model`` a ``chains.ChainModel``,
    no controls: ``chains.rollout``). A world's or chain's infos are ``WorldInfo``/``Summary``, returned
    only ``with_info``, as a body's. A single body's, below.

    output="trajectory" returns the stacked states (n_steps + 1, …) including the initial one
    (and the per-step ``ContactInfo`` when ``with_info``); output="final" returns only the
    final state, which keeps memory per body constant for huge batches (with ``with_info``:
    ``(final, Summary)``, the steps' flags accumulated). Jitted; ``vmap`` it (or use
    ``batch_rollout``) for many bodies.
    """
    kind = _system("rollout", model, scene, start)
    if kind == "chain":
        _refuse("rollout", kind, controls=(controls, None))
        return _strip(chain_doors.rollout(model, params, state, n_steps, output=output, start=start), with_info)
    if kind == "world":
        n_steps = n_steps if controls is None or n_steps is not None else jnp.shape(controls)[0]
        return _strip(pipeline.rollout(model, scene, params, state, n_steps, controls, output=output, start=start),
                      with_info)
    check_arguments("rollout", model=(model, Model), params=(params, Params), state=(state, (State, PlanarState)),
                    n_steps=(n_steps, OPTIONAL_STEPS), controls=(controls, OPTIONAL_ARRAY), output=(output, OUTPUT),
                    with_info=(with_info, BOOL))
    if controls is not None:
        n_ctrl = jnp.shape(controls)[0]
        if n_steps is not None and check_steps(n_steps) != n_ctrl:
            raise ValueError(f"n_steps={n_steps} but controls has {n_ctrl} rows")
        n_steps = n_ctrl
    if n_steps is None:
        raise ValueError("rollout needs n_steps (an int >= 0) or a controls array")
    n_steps = check_steps(n_steps)

    def checks():
        validate_inputs(params, state, control=controls, batched=False, control_steps=True)
        warn_penetration(model, params, state)

    def warn(watched):
        out, failed = watched
        warn_nonfinite(last_states(out, output, with_info))
        warn_solver(failed[0], worst=failed[1])
        return out

    return enter((params, state, controls),
                 lambda eager: _rollout(_spec(model, n_steps, output, with_info, eager), params, state, controls),
                 checks, warn)


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
    scene: Scene | None = None,
    controls=None,
    start: str = "initial",
):
    """``rollout`` vmapped over a leading batch axis of ``states`` (and ``params`` if batched), of any
    system: with ``scene`` a batch of worlds (``worlds.batch_rollout``: states (W, N, …), ``controls``
    (W, n_steps, N, 6) or None, ``start``); a chain's (``chains.batch_rollout``). ``params_batched``,
    ``chunk_size`` and ``validate`` are a single body's settings; the output (``output="final"`` by
    default) and its infos (``with_info``) as for a body.

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
    kind = _system("batch_rollout", model, scene, start)
    if kind != "body":
        _refuse("batch_rollout", kind, params_batched=(params_batched, False), chunk_size=(chunk_size, "auto"),
                validate=(validate, True))
    if kind == "chain":
        _refuse("batch_rollout", kind, controls=(controls, None))
        return _strip(chain_doors.batch_rollout(model, params, states, n_steps, output=output, start=start), with_info)
    if kind == "world":
        return _strip(pipeline.batch_rollout(model, scene, params, states, n_steps, controls, output=output,
                                             start=start), with_info)
    _refuse("batch_rollout", "batch of bodies", controls=(controls, None))
    check_arguments("batch_rollout", model=(model, Model), params=(params, Params), states=(states, (State, PlanarState)),
                    n_steps=(n_steps, STEPS), params_batched=(params_batched, BOOL), output=(output, OUTPUT),
                    with_info=(with_info, BOOL), validate=(validate, BOOL))
    n_steps = check_steps(n_steps)
    if chunk_size == "auto":
        chunk_size = CPU_CHUNK if jax.default_backend() == "cpu" else None
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"chunk_size must be a positive int, None or 'auto', got {chunk_size!r}")

    def checks():
        validate_inputs(params, states, batched=True, params_batched=params_batched)
        if not params_batched:
            warn_penetration(model, params, states, batched=True)

    def run(eager):
        spec = _spec(model, n_steps, output, with_info, eager, params_batched=params_batched, chunk_size=chunk_size)
        return pipeline.batch_jit(spec, params, states, None)

    return enter((params, states), run, checks, lambda watched: warn_batch(watched, output, with_info), check=validate)


def warn_batch(watched, output: str, with_info: bool):
    """The warnings of a watched batch of bodies (``(out, failed)``: ``batch_rollout``'s and the sharded
    one's eager program): ``NonFiniteWarning`` of its last states, ``SolverWarning``; returns ``out``."""
    out, failed = watched
    warn_nonfinite(last_states(out, output, with_info, batched=True), batched=True)
    warn_solver(failed[0], batched=True, worst=failed[1])
    return out


__all__ = [
    "step",
    "step_with_info",
    "rollout",
    "batch_rollout",
    "warn_batch",
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
    "SOLVER_RESIDUAL_LIMIT",
    "CPU_CHUNK",
    "full_precision",
    "free_velocity",
    "integrate",
    "energy",
    "penetration",
]
