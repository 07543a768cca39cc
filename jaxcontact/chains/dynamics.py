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

Pure and jit-able; ``rollout`` is a jitted ``lax.scan``; ``vmap`` both over batches of chains.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from .. import contact, geometry
from ..dynamics import integrate
from ..types import State
from ..validation import is_concrete
from .model import (
    ChainModel,
    ChainParams,
    block_diag,
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
    largest joint anchor separation before the step (m)."""

    contact_impulse: jnp.ndarray
    joint_impulse: jnp.ndarray
    phi_min: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray
    joint_error: jnp.ndarray


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
    return new, info


_step_jit = jax.jit(_step, static_argnames=("model",))


def step_with_info(model: ChainModel, params: ChainParams, state: State):
    """One ground-truth step of a chain: ``(state⁺, ChainInfo)``. Validates concrete inputs."""
    if is_concrete((params, state)):
        validate_chain(params, state)
        return _step_jit(model, params, state)
    return _step(model, params, state)


def step(model: ChainModel, params: ChainParams, state: State) -> State:
    return step_with_info(model, params, state)[0]


@partial(jax.jit, static_argnames=("model", "n_steps"))
def _rollout(model, params, state, n_steps):
    def f(s, _):
        s1, info = _step(model, params, s)
        return s1, (s1, info)

    _, (traj, infos) = jax.lax.scan(f, state, None, length=n_steps)
    traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
    return traj, infos


def rollout(model: ChainModel, params: ChainParams, state: State, n_steps: int):
    """``n_steps`` ground-truth steps (``lax.scan``): (trajectory (n_steps + 1, n, …), infos)."""
    if int(n_steps) < 0:
        raise ValueError(f"n_steps must be >= 0, got {n_steps}")
    if is_concrete((params, state)):
        validate_chain(params, state)
    return _rollout(model, params, state, int(n_steps))


def batch_rollout(model: ChainModel, params: ChainParams, states: State, n_steps: int):
    """``rollout`` vmapped over a leading batch axis of ``states`` (same chain parameters)."""
    if is_concrete((params, states)):
        for b in range(states.pos.shape[0]):
            validate_chain(params, jax.tree_util.tree_map(lambda x: x[b], states))
    return jax.vmap(lambda s: _rollout(model, params, s, int(n_steps)))(states)
