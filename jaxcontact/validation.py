"""Input validation on concrete values, run before anything is compiled.

Every check raises ``ValueError`` naming the offending field, e.g. ``state.quat``.
"""

from __future__ import annotations

import jax
import numpy as np

from .types import Body, Ground, Params, PlanarState, State

QUAT_TOL = 1e-3


def is_concrete(tree) -> bool:
    """True when no leaf of ``tree`` is a tracer: the call runs eagerly (not inside a user's
    ``jit``/``vmap``/``grad``), so its inputs can be validated and a jitted function called."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _arr(x, name):
    try:
        return np.asarray(x, dtype=np.float64)
    except Exception as err:  # noqa: BLE001
        raise ValueError(f"{name}: not a numeric array ({err})") from None


def _finite(a, name):
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite values")


def _shape(a, shape, name, batched=False):
    core = a.shape[1:] if batched else a.shape
    if batched and a.ndim == 0:
        raise ValueError(f"{name}: expected a leading batch axis and shape (B, {shape}), got a scalar")
    if tuple(core) != tuple(shape):
        want = ("(B, " + ", ".join(map(str, shape)) + ")") if batched else str(tuple(shape))
        raise ValueError(f"{name}: expected shape {want}, got {a.shape}")


def validate_body(body: Body, batched: bool = False) -> None:
    if not isinstance(body, Body):
        raise ValueError(f"params.body: expected a jaxcontact Body, got {type(body).__name__}")
    v = _arr(body.vertices, "body.vertices")
    lead = 1 if batched else 0
    if v.ndim != 2 + lead or v.shape[-1] not in (2, 3):
        raise ValueError(f"body.vertices: expected shape (K, 2) or (K, 3), got {v.shape}")
    d = v.shape[-1]
    _finite(v, "body.vertices")
    mask = _arr(body.vertex_mask, "body.vertex_mask")
    if mask.shape != v.shape[:-1]:
        raise ValueError(f"body.vertex_mask: expected shape {v.shape[:-1]}, got {mask.shape}")
    m = _arr(body.mass, "body.mass")
    _shape(m, (), "body.mass", batched)
    _finite(m, "body.mass")
    if np.any(m <= 0):
        raise ValueError(f"body.mass: must be positive, got {m}")
    inertia = _arr(body.inertia, "body.inertia")
    _finite(inertia, "body.inertia")
    if d == 3:
        _shape(inertia, (3, 3), "body.inertia", batched)
        I = inertia.reshape(-1, 3, 3)
        if np.any(np.abs(I - np.swapaxes(I, -1, -2)) > 1e-9 * max(1.0, np.abs(I).max())):
            raise ValueError("body.inertia: must be symmetric")
        if np.any(np.linalg.eigvalsh(I) <= 0):
            raise ValueError("body.inertia: must be positive definite (all principal moments > 0)")
    else:
        _shape(inertia, (), "body.inertia", batched)
        if np.any(inertia <= 0):
            raise ValueError(f"body.inertia: must be positive, got {inertia}")
    for vb, mb in zip(v.reshape(-1, *v.shape[-2:]), mask.reshape(-1, v.shape[-2])):
        pts = vb[mb > 0]
        if len(pts) < d + 1 or np.linalg.matrix_rank(pts - pts.mean(0), tol=1e-9) < d:
            raise ValueError(
                f"body.vertices: degenerate hull (the {len(pts)} unmasked vertices do not span {d}D)"
            )


def validate_ground(ground: Ground, dim: int) -> None:
    if not isinstance(ground, Ground):
        raise ValueError(f"params.ground: expected a jaxcontact Ground, got {type(ground).__name__}")
    n = _arr(ground.normal, "ground.normal")
    if n.shape != (dim,):
        raise ValueError(f"ground.normal: expected shape ({dim},), got {n.shape}")
    _finite(n, "ground.normal")
    if np.linalg.norm(n) < 1e-9:
        raise ValueError("ground.normal: must be a non-zero vector")
    h = _arr(ground.height, "ground.height")
    if h.shape != ():
        raise ValueError(f"ground.height: expected a scalar, got shape {h.shape}")
    _finite(h, "ground.height")


def validate_state(state, dim: int, batched: bool = False) -> None:
    if dim == 3:
        if not isinstance(state, State):
            raise ValueError(f"state: a 3D body needs a State, got {type(state).__name__}")
        fields = {"pos": (3,), "quat": (4,), "vel": (3,), "omega": (3,)}
    else:
        if not isinstance(state, PlanarState):
            raise ValueError(f"state: a planar body needs a PlanarState, got {type(state).__name__}")
        fields = {"pos": (2,), "angle": (), "vel": (2,), "omega": ()}
    lead = None
    for name, shape in fields.items():
        a = _arr(getattr(state, name), f"state.{name}")
        _shape(a, shape, f"state.{name}", batched)
        if batched:
            if lead is not None and a.shape[0] != lead:
                raise ValueError(f"state.{name}: batch size {a.shape[0]} differs from {lead}")
            lead = a.shape[0]
        _finite(a, f"state.{name}")
    if dim == 3:
        qn = np.linalg.norm(_arr(state.quat, "state.quat"), axis=-1)
        if np.any(np.abs(qn - 1.0) > QUAT_TOL):
            raise ValueError(
                f"state.quat: not a unit quaternion (|q| = {qn.min():.6g}..{qn.max():.6g}, "
                f"tolerance {QUAT_TOL})"
            )


def validate_law_params(law_params) -> None:
    import jax

    leaves = jax.tree_util.tree_leaves_with_path(law_params)
    for path, leaf in leaves:
        name = "params.law" + jax.tree_util.keystr(path)
        a = _arr(leaf, name)
        _finite(a, name)
    mu = getattr(law_params, "mu", None)
    if mu is not None and np.any(np.asarray(mu) < 0):
        raise ValueError(f"params.law.mu: friction coefficients must be >= 0, got {np.asarray(mu)}")
    eps = getattr(law_params, "restitution", None)
    if eps is not None and np.any((np.asarray(eps) < 0) | (np.asarray(eps) > 1)):
        raise ValueError(f"params.law.restitution: must lie in [0, 1], got {np.asarray(eps)}")


def validate_inputs(
    params: Params,
    state,
    control=None,
    batched: bool = False,
    params_batched: bool = False,
    control_steps: bool = False,
) -> None:
    if not isinstance(params, Params):
        raise ValueError(f"params: expected a jaxcontact Params, got {type(params).__name__}")
    validate_body(params.body, batched=params_batched)
    dim = np.shape(params.body.vertices)[-1]
    if not params_batched:
        validate_ground(params.ground, dim)
    validate_state(state, dim, batched=batched)
    validate_law_params(params.law)
    if control is not None:
        c = _arr(control, "control")
        nv = 6 if dim == 3 else 3
        want = (nv,)
        if c.shape[-1:] != want or c.ndim != (2 if control_steps else 1):
            shape = f"(T, {nv})" if control_steps else f"({nv},)"
            raise ValueError(f"control: expected shape {shape}, got {c.shape}")
        _finite(c, "control")
