"""The ``jax.ffi`` calls of the fused CPU kernels, beside their C++ (this package's ``*.cc``): each
binding names its XLA target, the shapes it returns and the attributes it passes, so a caller in
``solvers`` or ``collision`` hands arrays in and gets arrays out. The kernels are registered by
``available()`` (``jaxcontact.native``), which the caller's choice of method consults first."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import ADJOINT_TARGETS, TARGETS, threads


def pgs_sweeps(z, rows, index, WJ, extra, v0, bias, coupling, valid, tol, *, max_iter: int, fixed: bool, cone: str):
    """``pgs.cc``: the projected Gauss–Seidel sweeps of a world's contacts (``solvers.body_lcp``'s
    velocity form) from the impulses ``z`` (C, d) and the bodies' velocities ``v0`` at them:
    (z⁺, last change, sweeps). ``fixed``: every sweep up to ``max_iter`` (no early exit); ``cone``:
    "elliptic" (the disc) or "box". Leading batch dimensions broadcast (``vmap``); float32 or float64."""
    dtype = jnp.dtype(z.dtype)
    if dtype.name not in TARGETS:
        raise TypeError(f"the fused kernel takes float32 or float64, got {dtype}")
    out = (jax.ShapeDtypeStruct(z.shape, dtype), jax.ShapeDtypeStruct(tol.shape, dtype),
           jax.ShapeDtypeStruct(tol.shape, jnp.int32))
    call = jax.ffi.ffi_call(TARGETS[dtype.name][0], out, vmap_method="broadcast_all")
    return call(z, rows, index.astype(jnp.int32), WJ, extra, v0, bias, coupling, valid.astype(jnp.int32), tol,
                max_iter=np.int64(max_iter), fixed=np.int64(bool(fixed)), threads=np.int64(threads()),
                cone=np.int64(cone == "elliptic"))


def adjoint_solve(rows, index, WJ, extra, steps, P, dzn, g, num_bodies: int, *, max_rows: int):
    """``adjoint.cc``: λ (C, d) of the sweeps' adjoint system on the rows the projection passes
    (its Jacobians ``P`` (C, d, d) and ``dzn`` (C, d)), right-hand side ``g`` (C, d), factorised
    densely in double precision up to ``max_rows`` rows: (λ, the relative residual of the solve (∞
    where it did not solve), the rows it solved)."""
    C, d = g.shape
    dtype = g.dtype
    out = (jax.ShapeDtypeStruct((C, d), dtype), jax.ShapeDtypeStruct((), dtype), jax.ShapeDtypeStruct((), jnp.int32))
    call = jax.ffi.ffi_call(ADJOINT_TARGETS[dtype.name][0], out, vmap_method="broadcast_all")
    return call(rows, index.astype(jnp.int32), WJ, extra, steps, P, dzn, g, jnp.zeros((num_bodies + 1, 6), dtype),
                max_rows=np.int64(max_rows), threads=np.int64(threads()))


__all__ = ["adjoint_solve", "pgs_sweeps"]
