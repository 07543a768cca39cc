"""The binding of ``narrow.cc``'s hull-pair kernel (``collision.hull_hull`` on a CPU): the XLA custom
call. The pair's static topology as attributes and the derivatives are ``collision``'s."""

from __future__ import annotations

import jax

from . import NARROW_TARGETS


def hull_hull_manifold(args, out, attributes: dict):
    """One hull pair's manifold by the kernel (every leading dimension a batch of pairs). ``args``: a's
    verts, pos, quat, b's, the margin, one floating dtype, without gradient; ``out``: the results' shapes
    (point (num, 3), normal (3), phi (num), valid (num), kind (), choices (6 + num)); ``attributes``: the
    topology's and the constants (``collision._kernel_attributes``)."""
    call = jax.ffi.ffi_call(NARROW_TARGETS[args[0].dtype.name][0], out, vmap_method="broadcast_all")
    return call(*args, **attributes)


__all__ = ["hull_hull_manifold"]
