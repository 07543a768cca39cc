"""Ground-truth chain dynamics: joints and Coulomb contact in one velocity-level problem.

One step (semi-implicit Euler, like ``jaxcontact.dynamics``):

1. free velocities v¹ of every link (gravity, implicit gyroscopic term; ``dynamics.free_velocity``);
2. the joint rows J_b (5 per revolute joint, target −(β/h)·error, Baumgarte) and the contact rows
   J_c of every link's ``max_contacts`` closest vertices against the ground (normal + two
   tangents, pyramidal Coulomb cone, no-penetration target −φ/h — the ``CoulombLCP`` law);
3. the bilateral rows are eliminated exactly (Schur complement): v_c = v¹ + M⁻¹J_bᵀλ(v¹) satisfies
   the joints, W = M⁻¹ − M⁻¹J_bᵀ(J_bM⁻¹J_bᵀ)⁻¹J_bM⁻¹ is the jointed system's mobility, and the
   contact LCP  0 ≤ z ⊥ J_c W J_cᵀ z + J_c v_c − target ≥ 0 (friction rows boxed by μ z_n) is
   built and solved by ``jaxcontact.contact`` with W as the mobility (the one contact-problem
   builder of every LCP-based law; projected Gauss–Seidel, implicit gradients). This is the same
   solution as the LCP with the joint rows as bilateral rows (``RowStructure.contacts(C, 2, 5n)``)
   but PGS never has to iterate on the stiff joint rows of a chain;
4. v⁺ = v_c + W J_cᵀ z, then every link is integrated (``dynamics.integrate``).

Every step reports ``Flags`` like a single body's (``ChainInfo.flags``/``.invalid``): the input
breaking a ``validation`` rule on any link (INVALID_INPUT), a non-finite state or impulse
(NONFINITE), the contact LCP not converged (SOLVER; ``dynamics.solver_failed``); a chain has no
penetration projection. ``rollout(..., output="final")`` returns ``(final, Summary)`` as
``jaxcontact.rollout`` does, for ``diagnostics.report``/``check``; an eager rollout warns
(``NonFiniteWarning``) when it ends non-finite.

Pure and jit-able; ``rollout`` is a jitted ``lax.scan``; ``vmap`` both over batches of chains.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from .. import contact, geometry
from ..contact import block_diag
from ..dynamics import (
    accumulate,
    any_nonfinite,
    empty_summary,
    full_precision,
    integrate,
    solver_failed,
    step_flags,
    warn_nonfinite,
)
from ..types import Params, State
from ..validation import broken_rules, check_steps, is_concrete
from .model import (
    ChainModel,
    ChainParams,
    constrained_free_motion,
    free_velocities,
    mass_matrix_inverse,
    joint_system,
    validate_chain,
)


@struct.dataclass
class ChainInfo:
    """Per step: contact impulse of every link (n, 6) (generalised, world force / body torque),
    joint impulses (5n,), deepest penetration per link (n,), contact LCP residual / iterations,
    largest joint anchor separation before the step (m). flags: () int32 ``Flags`` bit set of the
    step; invalid: () int32 bit set of the ``validation.RULES`` broken by the step's input (on
    any link), as ``ContactInfo``'s."""

    contact_impulse: jnp.ndarray
    joint_impulse: jnp.ndarray
    phi_min: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray
    joint_error: jnp.ndarray
    flags: jnp.ndarray = 0
    invalid: jnp.ndarray = 0


def contact_problem(model: ChainModel, params: ChainParams, state: State, links, mobility, v_free):
    """The contact problem (``jaxcontact.contact``) of ``links``' closest vertices against the
    ground, acting through the jointed system's ``mobility`` W at the free velocity ``v_free``
    (both over the generalised velocities of ``links``, 6 per link). Returns (problem, phi (len, C))."""
    links = list(links)
    C = model.max_contacts
    idx = jnp.asarray(links)
    sel = lambda t: jax.tree_util.tree_map(lambda x: x[idx], t)
    con = jax.vmap(lambda b, s: geometry.contact_candidates(b, params.ground, s, C))(sel(params.links), sel(state))
    nc = len(links) * C
    jac = block_diag(con.jac.reshape(len(links), C * 3, 6)).reshape(nc, 3, 6 * len(links))
    prob = contact.from_jacobians(jac, con.phi.reshape(-1), con.valid.reshape(-1), mobility, v_free, model.dt)
    return prob, con.phi


def _broken_rules(params: ChainParams, state: State):
    """The ``validation.RULES`` any link's input breaks (bit set, as a single body's step)."""
    bits = jax.vmap(lambda b, s: broken_rules(Params(body=b, ground=params.ground, law=params.law), s))(
        params.links, state)
    return jax.lax.reduce(bits, jnp.int32(0), jax.lax.bitwise_or, (0,))


@full_precision
def _step(model: ChainModel, params: ChainParams, state: State):
    n = params.num_links
    h = model.dt
    v1 = free_velocities(model, params, state).reshape(-1)
    Minv = mass_matrix_inverse(params, state, range(n))
    Jb, err = joint_system(params, state, range(n), range(n))
    vc, W, fac = constrained_free_motion(model, Minv, Jb, err, v1)
    prob, phi = contact_problem(model, params, state, range(n), W, vc)
    sol = contact.solve(prob, params.law.mu[:2], model.solver)
    p = sol.impulse
    v_new = vc + W @ p
    # joint impulse λ: J_b v⁺ = target with v⁺ = v¹ + M⁻¹(J_bᵀλ + p)
    lam = jax.scipy.linalg.cho_solve(fac, -(model.baumgarte / h) * err - Jb @ (v1 + Minv @ p))
    lm = model.link_model()
    new = jax.vmap(lambda s, v: integrate(lm, s, v))(state, v_new.reshape(n, 6))
    info = ChainInfo(
        contact_impulse=p.reshape(n, 6), joint_impulse=lam, phi_min=jnp.min(phi, axis=1),
        residual=sol.residual, iterations=sol.iterations,
        joint_error=jnp.max(jnp.linalg.norm(err.reshape(n, 5)[:, :3], axis=1)),
    )
    invalid = _broken_rules(params, state)
    flags = step_flags(invalid, any_nonfinite(p, lam, new), False, solver_failed(model, info))
    return new, info.replace(flags=flags, invalid=invalid)


_step_jit = jax.jit(_step, static_argnames=("model",))


def step_with_info(model: ChainModel, params: ChainParams, state: State):
    """One ground-truth step of a chain: ``(state⁺, ChainInfo)``. Validates concrete inputs."""
    if is_concrete((params, state)):
        validate_chain(params, state)
        return _step_jit(model, params, state)
    return _step(model, params, state)


def step(model: ChainModel, params: ChainParams, state: State) -> State:
    return step_with_info(model, params, state)[0]


@partial(jax.jit, static_argnames=("model", "n_steps", "output"))
def _rollout(model, params, state, n_steps, output="trajectory"):
    if output == "final":
        def g(carry, k):
            s, summary = carry
            s1, info = _step(model, params, s)
            return (s1, accumulate(summary, info, k)), None

        (final, summary), _ = jax.lax.scan(g, (state, empty_summary()), jnp.arange(n_steps, dtype=jnp.int32))
        return final, summary

    def f(s, _):
        s1, info = _step(model, params, s)
        return s1, (s1, info)

    _, (traj, infos) = jax.lax.scan(f, state, None, length=n_steps)
    traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
    return traj, infos


def _check_output(output: str) -> None:
    if output not in ("trajectory", "final"):
        raise ValueError(f"output must be 'trajectory' or 'final', got {output!r}")


def rollout(model: ChainModel, params: ChainParams, state: State, n_steps: int, *, output: str = "trajectory"):
    """``n_steps`` ground-truth steps (``lax.scan``): ``(trajectory (n_steps + 1, n, …), infos)``,
    or with ``output="final"`` ``(final state, Summary)`` — the steps' flags accumulated, as
    ``jaxcontact.rollout(..., output="final", with_info=True)``. ``n_steps``: a Python int >= 0
    (``validation.check_steps``). Concrete inputs are validated, and a ``NonFiniteWarning`` says
    when the chain ends non-finite."""
    n_steps = check_steps(n_steps)
    _check_output(output)
    if not is_concrete((params, state)):
        return _rollout(model, params, state, n_steps, output)
    validate_chain(params, state)
    out = _rollout(model, params, state, n_steps, output)
    warn_nonfinite(out[0] if output == "final" else jax.tree_util.tree_map(lambda x: x[-1], out[0]))
    return out


def batch_rollout(model: ChainModel, params: ChainParams, states: State, n_steps: int, *, output: str = "trajectory"):
    """``rollout`` vmapped over a leading batch axis of ``states`` (same chain parameters)."""
    n_steps = check_steps(n_steps)
    _check_output(output)
    check = is_concrete((params, states))
    if check:
        for b in range(states.pos.shape[0]):
            validate_chain(params, jax.tree_util.tree_map(lambda x: x[b], states))
    out = jax.vmap(lambda s: _rollout(model, params, s, n_steps, output))(states)
    if check:
        last = out[0] if output == "final" else jax.tree_util.tree_map(lambda x: x[:, -1], out[0])
        warn_nonfinite(last, batched=True)
    return out
