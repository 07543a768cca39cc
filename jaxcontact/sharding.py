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

import functools

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from .eager import warn_penetration
from .stages import pad_batch
from .worlds import pipeline
from .types import Model, Params, PlanarState, State
from .validation import BOOL, OUTPUT, STEPS, check_arguments, check_steps, is_concrete, validate_inputs

BATCH_AXIS = "batch"


def batch_mesh(devices=None) -> Mesh:
    """A 1-D mesh named ``"batch"`` over ``devices`` (default: all devices)."""
    devs = np.asarray(jax.devices() if devices is None else devices)
    return Mesh(devs.reshape(-1), (BATCH_AXIS,))


def shard_batch(tree, mesh: Mesh):
    """Place every leaf's leading axis across the mesh (each leaf's batch must divide evenly)."""
    sharding = NamedSharding(mesh, P(BATCH_AXIS))
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, sharding), tree)


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
    """``batch_rollout`` with the batch axis sharded over ``mesh`` (default: all devices)."""
    check_arguments("sharding.sharded_batch_rollout", model=(model, Model), params=(params, Params),
                    states=(states, (State, PlanarState)), n_steps=(n_steps, STEPS), mesh=(mesh, (Mesh, None)),
                    params_batched=(params_batched, BOOL), output=(output, OUTPUT), with_info=(with_info, BOOL))
    n_steps = check_steps(n_steps)
    if is_concrete((params, states)):
        validate_inputs(params, states, batched=True, params_batched=params_batched)
        if not params_batched:
            warn_penetration(model, params, states, batched=True)
    mesh = batch_mesh() if mesh is None else mesh
    n = jax.tree_util.tree_leaves(states)[0].shape[0]
    ndev = mesh.devices.size
    n_pad = (-n) % ndev
    states = shard_batch(pad_batch(states, n_pad), mesh)
    if params_batched:
        params = shard_batch(pad_batch(params, n_pad), mesh)
    else:
        params = jax.device_put(params, NamedSharding(mesh, P()))
    chunk = pipeline.CPU_CHUNK if mesh.devices.reshape(-1)[0].platform == "cpu" else None
    run = per_device_rollout(model, pipeline.body_scene(params), n_steps, params_batched, output, with_info, chunk,
                             pipeline.AsBody(output, with_info, False), False, mesh)
    out = run(params, states, None)
    return jax.tree_util.tree_map(lambda x: x[:n], out) if n_pad else out


@functools.lru_cache(maxsize=64)
def per_device_rollout(model, scene, n_steps, params_batched, output, with_info, chunk, lift, with_controls, mesh,
                       options=None):
    """The sharded program of bodies and worlds alike: a jitted ``shard_map`` over ``mesh``'s batch
    axis of ``worlds.pipeline.batch_jit`` (each device its own batch, its own solver loops; its own
    chunks of ``chunk`` systems), cached per setting; called as ``(params, states, controls)``.
    ``options``: XLA's compiler options as (name, value) pairs (``pipeline.CPU_COMPILER_OPTIONS``), for a
    call at the top level only; None: XLA's defaults."""

    def local(params, states, controls):  # traced: no validation again
        return pipeline.batch_jit(model, scene, params, states, controls, n_steps, params_batched, output, with_info,
                                  chunk, False, lift)

    specs = (P(BATCH_AXIS) if params_batched else P(), P(BATCH_AXIS), P(BATCH_AXIS) if with_controls else P())
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(BATCH_AXIS), check_vma=False),
                   compiler_options=None if options is None else dict(options))


__all__ = ["BATCH_AXIS", "batch_mesh", "per_device_rollout", "shard_batch", "sharded_batch_rollout"]
