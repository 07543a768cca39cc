"""Physics checks of a batch of world rollouts, reduced on the device: the checks the heap stress
runs (``python -m benchmarks.stress --heaps``) and the heap test (tests/test_worlds.py) make, for any
batch of worlds a user rolls out with ``worlds.batch_rollout``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..types import Flags
from .pipeline import energy

SETTLED_PENETRATION = 1e-3  # m: the deepest penetration allowed once a heap has settled (issue 25)


def rollout_checks(model, scene, params, traj, infos, settled_penetration: float = SETTLED_PENETRATION) -> dict:
    """Per world (leading axis W of ``traj``/``infos`` from ``worlds.batch_rollout``, trajectory
    output) the checks, reduced on the device: finite, the largest energy above the start's, the
    correction bound N · ½ m_max v_max² (what separating penetrating bodies at
    ``model.max_correction_speed`` may add), the deepest penetration (ground and body–body; all
    steps, and over the last quarter of the steps: settled), the OR of the flags, the sweeps.
    ``failed``: a check broken (not finite, energy gain above the bound, settled penetration above
    ``settled_penetration``); ``unflagged``: broken without a flag."""
    N = scene.num_bodies
    e = jax.vmap(jax.vmap(lambda s: energy(model, params, s)))(traj)  # (W, T+1)
    gain = jnp.max(e - e[:, :1], axis=1)
    bound = N * 0.5 * jnp.max(params.body.mass) * model.max_correction_speed ** 2
    ground = -jnp.min(infos.phi_ground, axis=(2, 3)) if scene.ground else jnp.zeros(infos.pair_phi.shape[:2])
    touching = (infos.pair_kind != 0)[..., None]
    pairs = -jnp.min(jnp.where(touching, infos.pair_phi, jnp.inf), axis=(2, 3), initial=jnp.inf)
    pen = jnp.maximum(jnp.maximum(ground, pairs), 0.0)  # (W, T)
    T = pen.shape[1]
    settled = jnp.max(pen[:, T - max(T // 4, 1):], axis=1)
    finite = jnp.all(jnp.isfinite(traj.pos), axis=(1, 2, 3)) & jnp.all(jnp.isfinite(traj.vel), axis=(1, 2, 3))
    flags = jax.lax.reduce(infos.flags, jnp.int32(0), jax.lax.bitwise_or, (1,))
    failed = ~finite | (gain > bound) | (settled > settled_penetration)
    solver_steps = jnp.sum((infos.flags & int(Flags.SOLVER)) != 0, axis=1)
    return {"finite": finite, "energy_gain_J": gain, "bound_J": jnp.broadcast_to(bound, gain.shape),
            "max_penetration_m": jnp.max(pen, axis=1), "settled_penetration_m": settled, "flags": flags,
            "failed": failed, "unflagged": failed & (flags == 0), "mean_sweeps": jnp.mean(infos.iterations, axis=1),
            "solver_steps": solver_steps, "final_com_height_m": jnp.mean(traj.pos[:, -1, :, 2], axis=1)}
