"""The binding of ``round.cc``'s kernel (``collision.round_hull`` on a CPU): a sphere's or capsule's
contacts against a hull, the XLA custom call and its results' shapes. The hull's static topology (its
triangles, face rings and edges) and the derivatives are ``collision``'s."""

from __future__ import annotations

import jax
import numpy as np

from . import ROUND_TARGETS, threads


def round_hull_manifold(args, attributes: dict, num: int):
    """One round–hull pair's manifold by the kernel (every leading dimension a batch of pairs). ``args``:
    a's core vertices (K, 3), radius (), pos (3), quat (4), b's vertices (K, 3), pos, quat, the margin (),
    one floating dtype, without gradient; ``attributes``: the round kind's and the hull's
    (``collision._round_attributes``). Returns point (num, 3), normal (3), phi (num), valid (num) int32
    and kind () int32."""
    import jax.numpy as jnp

    dt = args[0].dtype
    out = (jax.ShapeDtypeStruct((num, 3), dt), jax.ShapeDtypeStruct((3,), dt), jax.ShapeDtypeStruct((num,), dt),
           jax.ShapeDtypeStruct((num,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32))
    call = jax.ffi.ffi_call(ROUND_TARGETS[dt.name][0], out, vmap_method="broadcast_all")
    return call(*args, **attributes, num=np.int64(num), threads=np.int64(threads()))


__all__ = ["round_hull_manifold"]
