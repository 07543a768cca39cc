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

from ..doors import enter
from ..stages import pad_batch
from ..types import Model, Params, State
from ..validation import OPTIONAL_ARRAY, OUTPUT, STEPS, check_arguments, check_steps
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
def per_device_rollout(spec: pipeline.RolloutSpec, mesh: Mesh, with_controls: bool, options=None):
    """The sharded program of bodies and worlds alike: a jitted ``shard_map`` over ``mesh``'s batch
    axis of ``worlds.pipeline.batch_jit`` of ``spec`` (each device its own batch, its own solver loops;
    its own chunks of ``spec.chunk_size`` systems), cached per setting; called as ``(params, states,
    controls)`` (``with_controls``: controls batched, else None). ``options``: XLA's compiler options as
    (name, value) pairs (``pipeline.cpu_options()``), for a call at the top level only; None: XLA's defaults."""

    def local(params, states, controls):  # traced: no validation again
        return pipeline.batch_jit(spec, params, states, controls)

    specs = (P(BATCH_AXIS) if spec.params_batched else P(), P(BATCH_AXIS), P(BATCH_AXIS) if with_controls else P())
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=specs, out_specs=P(BATCH_AXIS), check_vma=False),
                   compiler_options=None if options is None else dict(options))


def sharded(tree, n: int, mesh: Mesh):
    """``tree`` (a batch of n on its leading axis) padded to the mesh's device count with copies of its
    first element (``stages.pad_batch``) and placed across it (``shard_batch``); the padding's size."""
    n_pad = (-n) % mesh.devices.size
    return shard_batch(pad_batch(tree, n_pad), mesh), n_pad


def sharded_batch_rollout(model, scene: Scene, params: Params, states: State, n_steps: int, controls=None, *,
                          mesh: Mesh | None = None, output: str = "trajectory"):
    """``worlds.batch_rollout`` with the world axis of ``states`` (W, N, …) (and of ``controls``
    (W, n_steps, N, 6), if given) sharded over ``mesh`` (default: all devices). Concrete inputs
    are validated first and the run warns after, as ``batch_rollout`` does (``doors.enter``); the same
    results (to round-off). Eagerly on CPU devices the program is compiled with ``pipeline.cpu_options()``."""
    check_arguments("worlds.sharded_batch_rollout", model=(model, Model), scene=(scene, Scene), params=(params, Params), states=(states, State), n_steps=(n_steps, STEPS),
                    controls=(controls, OPTIONAL_ARRAY), mesh=(mesh, (Mesh, None)), output=(output, OUTPUT))
    n_steps = check_steps(n_steps)
    check_law(model, scene)
    mesh = batch_mesh() if mesh is None else mesh
    spec = pipeline.RolloutSpec(model, scene, n_steps, output)

    def run(eager):
        n = states.pos.shape[0]
        padded, n_pad = sharded(states, n, mesh)
        ctrl = None if controls is None else sharded(controls, n, mesh)[0]
        cpu = eager and mesh.devices.reshape(-1)[0].platform == "cpu"  # at the top level: the CPU options
        program = per_device_rollout(spec, mesh, controls is not None, (pipeline.cpu_options() or None) if cpu else None)
        out = pipeline.world_out(program(jax.device_put(params, NamedSharding(mesh, P())), padded, ctrl), output, scene)
        return jax.tree_util.tree_map(lambda x: x[:n], out) if n_pad else out

    def warn(out):
        pipeline.warn_rollout(model, scene, params, states, out, output, batched=True)
        return out

    return enter((params, states, controls), run, lambda: validate_batch(scene, params, states, controls), warn)


__all__ = ["BATCH_AXIS", "batch_mesh", "per_device_rollout", "shard_batch", "sharded", "sharded_batch_rollout"]
