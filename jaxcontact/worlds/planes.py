"""A world's tilted planes: walls and ramps as fixed scenery (docs/worlds.md, "Planes at any tilt").

A plane is a half-space {x : n·x <= offset} with its own friction, held in ``Params.planes``
(``types.Planes``: traced, so ``jax.grad`` reaches a ramp's angle) and counted statically by
``Scene.planes`` (``make_scene(..., planes=P)``). Every body touches it as it touches the flat
ground, in the plane's frame: its candidates (``geometry.contact_candidates``: a hull's vertices, a
sphere's or capsule's core moved by the radius, a cylinder's rim points, an ellipsoid's support
point, a compound's parts' union) against the plane's normal and offset (``contacts.ground_contacts``).
``make_planes`` builds them from normals and points, ``tilted`` a ramp or a wall by its angle,
``check_planes`` refuses what a step cannot use, by name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..types import Ground, Planes


def make_planes(normals, points=None, friction=0.5, dtype=None) -> Planes:
    """``Planes`` through ``points`` (P, 3) (default the origin) with outward ``normals`` (P, 3) (or one
    plane's (3,)), each normalised; ``friction`` one μ for all or (P,). Traced inputs stay traced."""
    n = jnp.atleast_2d(jnp.asarray(normals, dtype))
    if n.ndim != 2 or n.shape[1] != 3:
        raise ValueError(f"make_planes: normals must be (P, 3) or (3,), got shape {tuple(np.shape(normals))}")
    P = n.shape[0]
    x = jnp.zeros((P, 3), n.dtype) if points is None else jnp.broadcast_to(jnp.asarray(points, n.dtype), (P, 3))
    norm = jnp.linalg.norm(n, axis=-1, keepdims=True)
    if not isinstance(norm, jax.core.Tracer) and not np.all(np.asarray(norm) > 0):
        raise ValueError("make_planes: a plane's normal has zero length")
    n = n / norm
    mu = jnp.broadcast_to(jnp.asarray(friction, n.dtype), (P,))
    planes_ = Planes(normal=n, offset=jnp.sum(n * x, axis=-1), friction=mu)
    check_values(planes_)
    return planes_


def tilted(angle, friction=0.5, axis: str = "y", point=(0.0, 0.0, 0.0), dtype=None) -> Planes:
    """One plane through ``point`` whose normal is +z turned by ``angle`` (rad) about the world
    ``axis`` ("x" or "y"): a ramp (a body on it slides towards +x for a positive angle about y, as ``scenes.ramp_axes``),
    a vertical wall at ``angle`` = ±π/2. ``angle`` may be traced (a gradient reaches it)."""
    a = jnp.asarray(angle, dtype)
    s, c = jnp.sin(a), jnp.cos(a)
    if axis == "y":
        n = jnp.stack([s, jnp.zeros_like(s), c])
    elif axis == "x":
        n = jnp.stack([jnp.zeros_like(s), -s, c])
    else:
        raise ValueError(f"tilted: axis must be 'x' or 'y', got {axis!r}")
    return make_planes(n, jnp.asarray(point, n.dtype)[None], friction, dtype)


def stack_planes(items) -> Planes:
    """Several ``Planes`` as one (their planes in order)."""
    items = list(items)
    if not items:
        raise ValueError("stack_planes: no planes given")
    return jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *items)


def plane_grounds(p: Planes):
    """Each plane as the ``Ground`` its candidates are measured against (normal, height = offset)."""
    return [Ground(normal=p.normal[k], height=p.offset[k]) for k in range(p.count)]


def check_values(p: Planes) -> None:
    """Refuse (concrete values only) a non-finite normal or offset, a zero normal or a negative or
    non-finite friction, by name."""
    leaves = (p.normal, p.offset, p.friction)
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        return
    n, off, mu = (np.asarray(x) for x in leaves)
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(off))):
        raise ValueError("params.planes: a plane's normal or offset is not finite")
    if not np.all(np.linalg.norm(n, axis=-1) > 0):
        raise ValueError("params.planes.normal: a plane's normal has zero length")
    if not (np.all(np.isfinite(mu)) and np.all(mu >= 0)):
        raise ValueError(f"params.planes.friction: every plane's μ must be finite and >= 0, got {mu.tolist()}")


def check_planes(scene, params) -> None:
    """Refuse (static, also under ``jit``) a world whose ``params.planes`` disagree with
    ``Scene.planes``: missing, or another count, or not (P, 3)/(P,)/(P,); concrete values by
    ``check_values``."""
    want = scene.planes
    got = getattr(params, "planes", None)
    if got is None:
        if want:
            raise ValueError(f"params.planes: the scene has {want} plane(s) (Scene.planes) and params.planes is None; "
                             "give Params(..., planes=worlds.planes.make_planes(normals, points, friction))")
        return
    if not isinstance(got, Planes):
        raise ValueError(f"params.planes: expected a types.Planes (worlds.planes.make_planes(...)), got {type(got).__name__}")
    shapes = tuple(np.shape(x) for x in (got.normal, got.offset, got.friction))
    if shapes != ((want, 3), (want,), (want,)):
        raise ValueError(f"params.planes: the scene has {want} plane(s) (Scene.planes), so normal (P, 3), offset (P,) "
                         f"and friction (P,) with P = {want}; got shapes {shapes} (make_scene(..., planes=P))")
    check_values(got)


__all__ = ["check_planes", "check_values", "plane_grounds", "make_planes", "stack_planes", "tilted"]
