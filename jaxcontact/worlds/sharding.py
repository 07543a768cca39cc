"""Batches of worlds larger than one device: ``batch_rollout`` with the world axis sharded.

``sharded_batch_rollout`` is ``jaxcontact.sharding.sharded_batch_rollout`` for worlds: the batch
of world states (W, N, …) is placed on a 1-D ``"batch"`` mesh (``batch_mesh``, ``shard_batch``,
here, beside ``per_device_rollout``, the sharded program of bodies and worlds alike), padded to the device count with copies of the first world
(``stages.pad_batch``; the padding is dropped from the result), and every device runs
``worlds.batch_rollout`` on its worlds with ``jax.shard_map``: its own program, so its contact
solves exit when *its* worlds have converged. Worlds are independent: no communication. The
parameters and the scene are shared by every world (replicated)."""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from ..stages import pad_batch
from ..types import Model, Params, State
from ..validation import OPTIONAL_ARRAY, OUTPUT, STEPS, check_arguments, check_steps, is_concrete
from . import pipeline
from .pipeline import check_law, validate_batch
from .scene import Scene


BATCH_AXIS = "batch"


def batch_mesh(devices=None) -> Mesh:
    """A 1-D mesh named ``"batch"`` over ``devices`` (default: all devices)."""
    devs = np.asarray(jax.devices() if devices is None else devices)
    return Mesh(devs.reshape(-1), (BATCH_AXIS,))


def shard_batch(tree, mesh: Mesh):
    """Place every leaf's leading axis across the mesh (each leaf's batch must divide evenly)."""
    sharding = NamedSharding(mesh, P(BATCH_AXIS))
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, sharding), tree)


@functools.lru_cache(maxsize=64)
def per_device_rollout(model, scene, n_steps, params_batched, output, with_info, chunk, lift, with_controls, mesh,
                       options=None):
    """The sharded program of bodies and worlds alike: a jitted ``shard_map`` over ``mesh``'s batch
    axis of ``worlds.pipeline.batch_jit`` (each device its own batch, its own solver loops; its own
    chunks of ``chunk`` systems), cached per setting; called as ``(params, states, controls)``.
    ``options``: XLA's compiler options as (name, value) pairs (``pipeline.cpu_options()``), for a
    call at the top level only; None: XLA's defaults."""

    def local(params, states, controls):  # traced: no validation again
        return pipeline.batch_jit(model, scene, params, states, controls, n_steps, params_batched, output, with_info,
                                  chunk, False, lift)

    specs = (P(BATCH_AXIS) if params_batched else P(), P(BATCH_AXIS), P(BATCH_AXIS) if with_controls else P())
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(BATCH_AXIS), check_vma=False),
                   compiler_options=None if options is None else dict(options))


def sharded_batch_rollout(model, scene: Scene, params: Params, states: State, n_steps: int, controls=None, *,
                          mesh: Mesh | None = None, output: str = "trajectory"):
    """``worlds.batch_rollout`` with the world axis of ``states`` (W, N, …) (and of ``controls``
    (W, n_steps, N, 6), if given) sharded over ``mesh`` (default: all devices). Concrete inputs
    are validated first, as ``batch_rollout`` does; the same results (to round-off). Eagerly on CPU
    devices the program is compiled with ``pipeline.cpu_options()``."""
    check_arguments("worlds.sharded_batch_rollout", model=(model, Model), scene=(scene, Scene), params=(params, Params), states=(states, State), n_steps=(n_steps, STEPS),
                    controls=(controls, OPTIONAL_ARRAY), mesh=(mesh, (Mesh, None)), output=(output, OUTPUT))
    n_steps = check_steps(n_steps)
    check_law(model, scene)
    concrete = is_concrete((params, states, controls))
    if concrete:
        validate_batch(scene, params, states, controls)
    mesh = batch_mesh() if mesh is None else mesh
    n = states.pos.shape[0]
    n_pad = (-n) % mesh.devices.size
    states = shard_batch(pad_batch(states, n_pad), mesh)
    if controls is not None:
        controls = shard_batch(pad_batch(controls, n_pad), mesh)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    cpu = concrete and mesh.devices.reshape(-1)[0].platform == "cpu"  # at the top level: the CPU options
    run = per_device_rollout(model, scene, n_steps, False, output, True, None, pipeline.as_is, controls is not None,
                             mesh, (pipeline.cpu_options() or None) if cpu else None)
    out = pipeline.world_out(run(params, states, controls), output, scene)
    return jax.tree_util.tree_map(lambda x: x[:n], out) if n_pad else out


__all__ = ["BATCH_AXIS", "batch_mesh", "per_device_rollout", "shard_batch", "sharded_batch_rollout"]
