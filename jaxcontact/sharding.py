"""Batches larger than one device: shard the batch axis with ``jax.sharding``.

``sharded_batch_rollout`` places the batch of states on a 1-D ``Mesh`` over the devices with a
``NamedSharding`` that splits the leading axis and runs ``batch_rollout`` on each device's part
with ``jax.shard_map``: every device runs its own program — its own solver loops, which exit when
*its* bodies have converged (a partitioned vmap would make every sweep's exit test a reduction
across devices), and on CPU devices its own chunks of ``worlds.pipeline.CPU_CHUNK`` bodies. Bodies are
independent, so no communication is needed. The same call serves several GPUs, or several hosts
once ``jax.distributed.initialize()`` has made every process's devices part of ``jax.devices()``.
A batch that does not divide the device count is padded with copies of its first body and the
padding is dropped from the result.
"""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from .doors import enter
from .dynamics import warn_batch
from .eager import warn_penetration
from .worlds import pipeline
from .worlds.sharding import BATCH_AXIS, batch_mesh, per_device_rollout, shard_batch, sharded
from .types import Model, Params, PlanarState, State
from .validation import BOOL, OUTPUT, STEPS, check_arguments, check_steps, validate_inputs


def sharded_batch_rollout(
    model,
    params,
    states,
    n_steps: int,
    *,
    mesh: Mesh | None = None,
    params_batched: bool = False,
    output: str = "final",
    with_info: bool = False,
):
    """``batch_rollout`` with the batch axis sharded over ``mesh`` (default: all devices); eagerly it
    validates and warns as ``batch_rollout`` does (``doors.enter``)."""
    check_arguments("sharding.sharded_batch_rollout", model=(model, Model), params=(params, Params),
                    states=(states, (State, PlanarState)), n_steps=(n_steps, STEPS), mesh=(mesh, (Mesh, None)),
                    params_batched=(params_batched, BOOL), output=(output, OUTPUT), with_info=(with_info, BOOL))
    n_steps = check_steps(n_steps)
    mesh = batch_mesh() if mesh is None else mesh

    def checks():
        validate_inputs(params, states, batched=True, params_batched=params_batched)
        if not params_batched:
            warn_penetration(model, params, states, batched=True)

    def run(eager):
        n = jax.tree_util.tree_leaves(states)[0].shape[0]
        padded, n_pad = sharded(states, n, mesh)
        p = sharded(params, n, mesh)[0] if params_batched else jax.device_put(params, NamedSharding(mesh, P()))
        chunk = pipeline.CPU_CHUNK if mesh.devices.reshape(-1)[0].platform == "cpu" else None
        spec = pipeline.RolloutSpec(model, pipeline.body_scene(), n_steps, output, with_info, eager, body=True,
                                    params_batched=params_batched, chunk_size=chunk)
        out = per_device_rollout(spec, mesh, False)(p, padded, None)
        return jax.tree_util.tree_map(lambda x: x[:n], out) if n_pad else out

    return enter((params, states), run, checks, lambda watched: warn_batch(watched, output, with_info))


__all__ = ["BATCH_AXIS", "batch_mesh", "per_device_rollout", "shard_batch", "sharded_batch_rollout"]
