"""Ground-truth chain dynamics: a chain is a world with joints (``jaxcontact.worlds``).

``as_world`` turns a chain into a world of its n links (``worlds.Scene`` with a revolute
``worlds.joints.Joints`` per link, every link's ``max_contacts`` closest vertices against the
ground, no body–body pairs: links do not collide with each other), and ``step`` is that world's
step (``worlds.step_with_info``), the one multi-body step. Per step (semi-implicit Euler, like
``jaxcontact.dynamics``):

1. free velocities v¹ of every link (gravity, implicit gyroscopic term; ``stages.free_velocity``);
2. the joint rows J_b (5 per revolute joint, target −(β/h)·error, Baumgarte) are eliminated
   exactly (Schur complement, ``worlds.joints.motion``): v_c = v¹ + M⁻¹J_bᵀλ(v¹) satisfies the
   joints and W = M⁻¹ − M⁻¹J_bᵀ(J_bM⁻¹J_bᵀ)⁻¹J_bM⁻¹ is the jointed system's mobility;
3. the contact rows J_c of every link's ``max_contacts`` closest vertices against the ground
   (normal + two tangents, pyramidal Coulomb cone, no-penetration target −φ/h, every candidate in
   the problem) form the contact LCP 0 ≤ z ⊥ J_c W J_cᵀ z + J_c v_c − target ≥ 0 (friction rows
   boxed by μ z_n), built and solved by ``jaxcontact.contact`` with W as the mobility (projected
   Gauss–Seidel, implicit gradients). This is the same solution as the LCP with the joint rows as
   bilateral rows, but PGS never has to iterate on the stiff joint rows of a chain;
4. v⁺ = v_c + W J_cᵀ z, the joint impulse λ, then every link is integrated (``stages.integrate``).

A chain has no restitution (ε of ``ChainParams.law`` is not applied: the world's law gets an
infinite restitution threshold), no penetration projection and no softness (``Scene.softness``
0), and its contact LCP starts cold every step.

Every step reports ``Flags`` like a single body's (``worlds.WorldInfo.flags``/``.invalid``): the input
breaking a ``validation`` rule on any link (INVALID_INPUT), a non-finite state or impulse
(NONFINITE), the contact LCP not converged (SOLVER; ``stages.solver_failed``).
``rollout(..., output="final")`` returns ``(final, Summary)`` as ``jaxcontact.rollout`` does, for
``diagnostics.report``/``check``; an eager rollout warns (``NonFiniteWarning``) when it ends
non-finite.

Pure and jit-able; ``rollout`` is a jitted ``lax.scan``; ``vmap`` both over batches of chains.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax

from ..doors import enter, last_states
from ..eager import warn_failed_solves, warn_nonfinite
from ..stages import full_precision
from ..types import State
from ..validation import OUTPUT, STEPS, check_arguments, check_steps
from ..worlds import pipeline as world
from ..worlds.joints import JointedParams, check_start
from ..worlds.scene import Scene
from .model import ChainModel, ChainParams, validate_chain, world_joints


def as_world(model: ChainModel, params: ChainParams):
    """The chain as a world: ``(model, scene, params)`` for ``jaxcontact.worlds``' step and
    rollouts (state: the chain's, one body per link). The scene has the chain's joints (link i's
    parent link i − 1, the root's the world; β of ``model``), the ground with every link's
    ``max_contacts`` candidates, no pairs and no softness; the law never applies restitution.
    Add bodies to it (a box landing on the chain) with ``worlds.make_scene(..., joints=scene.joints)``."""
    n = params.num_links
    joints, joint_params = world_joints(params, range(n), range(n), model.baumgarte)
    scene = Scene(topologies=(None,) * n, pairs=(), ground=True, softness=0.0, joints=joints)
    law = dataclasses.replace(model.law, restitution_threshold=float("inf"), restitution_target="velocity")
    wparams = JointedParams(body=params.links, ground=params.ground, law=params.law, joints=joint_params)
    return dataclasses.replace(model, law=law), scene, wparams


@full_precision
def _step(model: ChainModel, params: ChainParams, state: State):
    wmodel, scene, wparams = as_world(model, params)
    new, info = world.step_with_info(wmodel, scene, wparams, state)
    return new, info.replace(unit="chains")


_step_jit = jax.jit(_step, static_argnames=("model",))


def step_with_info(model: ChainModel, params: ChainParams, state: State, *, start: str = "initial"):
    """One ground-truth step of a chain: ``(state⁺, worlds.WorldInfo)`` (its ``impulse`` (n, 6) the
    links' contact impulses, ``joint_impulse``, ``phi_ground`` (n, C), ``joint_error``). Validates
    concrete inputs (``start``: as ``rollout``'s) and warns on the step's flags as a world's step does."""
    check_arguments("chains.step_with_info", model=(model, ChainModel), params=(params, ChainParams), state=(state, State))
    return _step_with_info(model, params, state, start)


def _step_with_info(model, params, state, start):
    """The chain's step through the one eager wrapper (``doors.enter``); eagerly it warns as a world's
    step does (``worlds.pipeline.warn_step``)."""
    check_start(start)

    def warn(out):
        world.warn_step(*as_world(model, params), state, out[1], "the chain")
        return out

    return enter((params, state), lambda eager: (_step_jit if eager else _step)(model, params, state),
                 lambda: validate_chain(params, state, start, model), warn)


def step(model: ChainModel, params: ChainParams, state: State, *, start: str = "initial") -> State:
    check_arguments("chains.step", model=(model, ChainModel), params=(params, ChainParams), state=(state, State))
    return _step_with_info(model, params, state, start)[0]


@partial(jax.jit, static_argnames=("model", "n_steps", "output"))
@full_precision
def _rollout(model, params, state, n_steps, output="trajectory"):
    """The world rollout of the chain's world (``worlds.pipeline.run``)."""
    wmodel, scene, wparams = as_world(model, params)
    out = world.run(world.RolloutSpec(wmodel, scene, n_steps, output), wparams, state, None)
    return world.world_out(out, output, scene, unit="chains")


_HINT = "the rollout's infos (or its Summary with output='final') name the steps"


def _warn(out, output: str, batched: bool):
    """An eager chain rollout's warnings (``NonFiniteWarning``, ``SolverWarning``); returns ``out``."""
    warn_nonfinite(last_states(out, output, batched=batched), batched=batched)
    warn_failed_solves(out, output, "chain", batched, _HINT)
    return out


def rollout(model: ChainModel, params: ChainParams, state: State, n_steps: int, *, output: str = "trajectory",
            start: str = "initial"):
    """``n_steps`` ground-truth steps (``lax.scan``): ``(trajectory (n_steps + 1, n, …), infos)``,
    or with ``output="final"`` ``(final state, Summary)`` — the steps' flags accumulated, as
    ``jaxcontact.rollout(..., output="final", with_info=True)``. ``n_steps``: a Python int >= 0
    (``validation.check_steps``). Concrete inputs are validated, and a ``NonFiniteWarning`` says
    when the chain ends non-finite, a ``SolverWarning`` when a step's contact solve failed.
    ``start``: "initial" (a state you wrote) or "continued" (a state a rollout reached), as
    ``worlds.rollout``'s."""
    check_arguments("chains.rollout", model=(model, ChainModel), params=(params, ChainParams), state=(state, State), n_steps=(n_steps, STEPS), output=(output, OUTPUT))
    n_steps = check_steps(n_steps)
    check_start(start)
    return enter((params, state), lambda eager: _rollout(model, params, state, n_steps, output),
                 lambda: validate_chain(params, state, start, model), lambda out: _warn(out, output, False))


def batch_rollout(model: ChainModel, params: ChainParams, states: State, n_steps: int, *, output: str = "trajectory",
                  start: str = "initial"):
    """``rollout`` vmapped over a leading batch axis of ``states`` (same chain parameters)."""
    check_arguments("chains.batch_rollout", model=(model, ChainModel), params=(params, ChainParams), states=(states, State), n_steps=(n_steps, STEPS),
                    output=(output, OUTPUT))
    n_steps = check_steps(n_steps)
    check_start(start)

    def checks():
        for b in range(states.pos.shape[0]):
            validate_chain(params, jax.tree_util.tree_map(lambda x: x[b], states), start, model)

    return enter((params, states), lambda eager: jax.vmap(lambda s: _rollout(model, params, s, n_steps, output))(states),
                 checks, lambda out: _warn(out, output, True))
