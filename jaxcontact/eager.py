"""What an eager call adds after validation: the warnings a concrete run raises on its flags.

``PenetrationWarning`` (a start state deep in the ground, ``warn_penetration``), ``NonFiniteWarning``
(``warn_nonfinite``), ``SolverWarning`` (``warn_solver``, ``warn_failed_solves``: a contact solve
that did not converge, with its first step and largest residual). Under a user's ``jit``/``vmap``/
``grad`` none of this runs: the step's ``Flags`` report instead (``diagnostics.report``/``check``).
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .stages import (
    SOLVER_ACCURACY,
    SOLVER_RESIDUAL_LIMIT,
    VELOCITY_ERROR_PER_RESIDUAL,
    bounds_penetration,
    penetration,
    per_body,
)
from .types import Flags, Model, Params


class PenetrationWarning(UserWarning):
    """A start state penetrates the ground deeper than ``Model.penetration_tol``."""


class NonFiniteWarning(UserWarning):
    """An eager step or rollout ended with non-finite states (NaN spreads, so the last state shows it)."""


class SolverWarning(UserWarning):
    """An eager step or rollout had a contact solve that did not converge (``Flags.SOLVER``: its
    sweep cap reached with a residual above both its tolerance and ``SOLVER_ACCURACY``, or a
    residual above ``SOLVER_RESIDUAL_LIMIT`` or non-finite); the message gives the largest such
    residual (m/s), the constraint-velocity error of the returned impulses."""


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


def warn_step(flags, residual, who: str | None = None, stacklevel: int = 3) -> None:
    """An eager step's warnings on its flags, for every door (a body's, a world's, a chain's):
    ``NonFiniteWarning`` when ``flags`` has ``Flags.NONFINITE``, ``SolverWarning`` (``warn_solver``,
    with ``residual``, m/s) when it has ``Flags.SOLVER``; ``who``: the words for what stepped ("the
    world", "the chain"; None: a single body's words)."""
    flags = int(flags)
    if flags & Flags.NONFINITE:
        warnings.warn("the step's output is non-finite; jaxcontact.diagnostics.report(info) names the cause",
                      NonFiniteWarning, stacklevel=stacklevel)
    if flags & Flags.SOLVER:
        warn_solver(0, stacklevel=stacklevel + 1, who=who, worst=residual)


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


@functools.partial(jax.jit, static_argnames=("batched",))
def _penetrations(params: Params, states, batched: bool):
    return jax.vmap(lambda s: penetration(params, s))(states) if batched else penetration(params, states)


def warn_penetration(model: Model, params: Params, states, batched: bool = False, stacklevel: int = 3) -> None:
    """Warn (``PenetrationWarning``) when concrete start states penetrate the ground deeper than
    ``model.penetration_tol``; one vectorised host pass."""
    if not bounds_penetration(model):
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


@functools.partial(jax.jit, static_argnames=("batched",))
def _body_penetrations(params: Params, states, batched: bool):
    one = lambda s: per_body(penetration, params, s)
    return jax.vmap(one)(states) if batched else one(states)


def warn_world_penetration(model: Model, params: Params, states, batched: bool = False, stacklevel: int = 3) -> None:
    """``warn_penetration`` for a world's concrete start states (bodies stacked on a leading axis N,
    a batch of worlds (W, N, …) when ``batched``): a ``PenetrationWarning`` when a body starts
    deeper in the ground than ``model.penetration_tol``, as a single body's rollout warns."""
    if not bounds_penetration(model):
        return
    pen = np.asarray(jax.device_get(_body_penetrations(params, states, batched)))
    pen = pen if batched else pen[None]
    deep = pen > model.penetration_tol
    if not np.any(deep):
        return
    w, b = np.unravel_index(np.argmax(pen), pen.shape)
    who = (f"{int(deep.any(axis=1).sum())} of {pen.shape[0]} worlds start" if batched else "the world starts")
    where = f" (world {w})" if batched else ""
    warnings.warn(
        f"{who} with {int(deep.sum())} body(ies) in the ground by up to {pen.max():.3g} m, the deepest body {b}{where} "
        f"(more than Model.penetration_tol = {model.penetration_tol:.3g} m); projected out along the ground normal "
        "without added momentum", PenetrationWarning, stacklevel=stacklevel)


__all__ = ["NonFiniteWarning", "PenetrationWarning", "SolverWarning", "first_flag_step", "solver_message",
           "warn_failed_solves", "warn_nonfinite", "warn_penetration", "warn_solver", "warn_step", "warn_world_penetration",
           "worst_solver_residual"]
