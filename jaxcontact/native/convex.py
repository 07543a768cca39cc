"""The bindings of ``convex.cc``'s kernels (``collision.convex_pair`` on a CPU): the convex pairs' axis
search (``Convex``) and their whole manifold (``ConvexPair``), the XLA custom calls and their results' shapes. The shapes' static description (their kinds, a hull's
faces and lines) and the derivatives are ``collision``'s."""

from __future__ import annotations

import jax
import numpy as np

from . import CONVEX_PAIR_TARGETS, CONVEX_TARGETS, threads


def convex_pair_manifold(args, attributes: dict, num: int, far: float, point_tol: float, apart_exit: bool = True):
    """One pair's axis and manifold by the kernel (``convex.cc``'s ``ConvexPair``; every leading
    dimension a batch of pairs). ``args``: a's verts (K, 3), radius (), dims (3), pos (3), quat (4),
    the same of b, the margin (), one floating dtype, without gradient; ``attributes``: the shapes'
    and the axis search's (``collision``). Returns point (num, 3), normal (3), phi (num), valid (num)
    int32, kind () int32 and the choices (num + 2) int32: the kept candidates, then on_a and on_b.
    ``apart_exit``: a pair its axis separates beyond the margin skips the manifold's candidates (the same
    outputs; ``collision.CONVEX_APART_EXIT``)."""
    import jax.numpy as jnp

    dt = args[0].dtype
    out = (jax.ShapeDtypeStruct((num, 3), dt), jax.ShapeDtypeStruct((3,), dt), jax.ShapeDtypeStruct((num,), dt),
           jax.ShapeDtypeStruct((num,), jnp.int32), jax.ShapeDtypeStruct((), jnp.int32),
           jax.ShapeDtypeStruct((num + 2,), jnp.int32))
    call = jax.ffi.ffi_call(CONVEX_PAIR_TARGETS[dt.name][0], out, vmap_method="broadcast_all")
    return call(*args, **attributes, threads=np.int64(threads()), num=np.int64(num), point_tol=float(point_tol),
                far=float(far), apart_exit=np.int64(bool(apart_exit)))


def best_axis(args, attributes: dict):
    """One pair's axis of largest separation by the kernel (``convex.cc``'s ``Convex``; every leading
    dimension a batch of pairs). ``args``: a's verts (K, 3), radius (), dims (3), pos (3), quat (4), the
    same of b, the margin (), one floating dtype, without gradient; ``attributes``: the shapes' and the
    search's (``collision``). Returns the axis (3,)."""
    dt = args[0].dtype
    call = jax.ffi.ffi_call(CONVEX_TARGETS[dt.name][0], jax.ShapeDtypeStruct((3,), dt), vmap_method="broadcast_all")
    return call(*args, **attributes, threads=np.int64(threads()))


__all__ = ["best_axis", "convex_pair_manifold"]
