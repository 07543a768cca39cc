"""Input validation: eagerly on concrete values, and the same value rules inside ``jit``.

* Eager (``validate_inputs``): shapes, types and values of concrete inputs, before anything is
  compiled; every problem raises ``ValueError`` naming the field, e.g. ``state.quat``.
* Traced (``broken_rules``): the value rules (``RULES``) as ``jnp`` predicates, usable on
  tracers: every step reports the broken ones in ``ContactInfo.invalid`` and sets
  ``Flags.INVALID_INPUT``, inside ``jit``/``vmap``/``grad`` (``diagnostics`` names them).
* Types first (``check_arguments``): every public entry point (a door) checks its arguments'
  types before any other work, eagerly and at trace time alike, and refuses a wrong one with an
  ``ArgumentError`` (a ``TypeError`` and a ``ValueError``), one line naming the door, the argument,
  the type it got, the type it needs, and how to mend a known mistake (``MISTAKES``).
* Static (``check_steps``, ``check_dtype``, ``input_dtype``): step counts must be Python ints >= 0;
  every array input must be float32 or float64 (integer, bool, float16/bfloat16 and complex arrays,
  lists and strings are refused by name; Python numbers are fine), and a law's parameters pass its
  ``check_static`` (``CoulombParams``: μ of shape (2,), ε a scalar); a per-body ``body.friction``
  is refused outside a world (``input_dtype(materials=False)``). Dtypes and shapes are static,
  so these raise the same ``ValueError`` eagerly and at trace time, inside any ``jit``/``vmap``/``grad``.
  ``input_dtype`` also gives the one dtype a step computes in (see there).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import linalg
from .types import Body, Ground, Params, PlanarState, State

QUAT_TOL = 1e-3
INERTIA_TOL = 1e-5
"""Relative slack of the inertia's triangle inequality (each principal moment at most the sum of
the other two, times 1 + INERTIA_TOL: a flat plate sits exactly on it)."""
COM_TOL = 1e-3
"""How far (relative to the body's size, its farthest vertex) the centre of mass (the body's
origin) may lie outside the hull of its vertices before it is refused / flagged."""


def is_concrete(tree) -> bool:
    """True when no leaf of ``tree`` is a tracer: the call runs eagerly (not inside a user's
    ``jit``/``vmap``/``grad``), so its inputs can be validated and a jitted function called."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


# --- dtypes: static, so refused eagerly and at trace time alike ------------------------------------

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def check_dtype(x, name: str, integers: bool = False) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``x`` is a float32/float64 array (NumPy, JAX or a
    tracer) or a Python int/float. Refused: complex values, float16/bfloat16 (and any float other
    than float32/float64), integer and bool arrays (``integers=True`` allows them, e.g. a vertex
    mask), and non-arrays such as lists or strings. Inside a transform a Python int arrives as a
    weakly typed integer array, which is allowed for the same reason the int was."""
    if isinstance(x, (bool, np.bool_)):
        if integers:
            return
        raise ValueError(f"{name}: got a bool; expected a float32 or float64 array")
    if isinstance(x, (int, float)):
        return  # a Python number: weakly typed, it takes the compute dtype
    if isinstance(x, complex):
        raise ValueError(f"{name}: complex values are not supported; jaxcontact simulates real float32 or float64 arrays")
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        raise ValueError(f"{name}: expected a float32 or float64 array, got {type(x).__name__}")
    dtype = np.dtype(dtype)
    if dtype in FLOAT_DTYPES:
        return
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"{name}: complex values ({dtype}) are not supported; jaxcontact simulates real "
                         "float32 or float64 arrays")
    if jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f"{name}: {dtype} is not supported; the contact solve needs float32 or float64 "
                         "(cast with .astype(jnp.float32))")
    if jnp.issubdtype(dtype, jnp.integer) or dtype == np.bool_:
        if integers or (dtype != np.bool_ and getattr(x, "weak_type", False)):
            return
        raise ValueError(f"{name}: {dtype} values; expected float32 or float64 (e.g. jnp.asarray(x, float))")
    raise ValueError(f"{name}: {dtype} values; expected a float32 or float64 array")


def _state_fields(state) -> tuple[str, ...]:
    if isinstance(state, State):
        return ("pos", "quat", "vel", "omega")
    if isinstance(state, PlanarState):
        return ("pos", "angle", "vel", "omega")
    raise ValueError(f"state: expected a jaxcontact State or PlanarState, got {type(state).__name__}")


def input_dtype(params: Params, state, control=None, batch_ndim: int = 0, materials: bool = False):
    """The one dtype a step computes in: JAX's promotion (``jnp.result_type``) of the floating
    inputs — state, controls, body, ground and the law's floating parameters (Python numbers are
    weak, as in any JAX expression). ``step``/``rollout``/``batch_rollout`` cast the state and the
    controls to it, so states come back in it (a float32 ``State`` rolled out with float64
    parameters under x64 runs, and returns, float64); parameters promote inside the operations.

    Checks every input's dtype by name (``check_dtype``) and runs the law parameters' own static
    checks (``params.law.check_static(batch_ndim)`` where the law defines it): all static, so this
    raises the same ``ValueError`` eagerly and at trace time. ``batch_ndim``: leading batch axes
    of ``params`` (``batch_rollout(params_batched=True)``). materials: the caller combines a
    per-body ``body.friction`` (worlds); elsewhere a body that has one is refused by name (static)."""
    body, ground, law = params.body, params.ground, params.law
    floats = []

    def see(x, name, integers=False):
        check_dtype(x, name, integers)
        if isinstance(x, (int, float)) and not isinstance(x, bool) or jnp.issubdtype(jnp.result_type(x), jnp.floating):
            floats.append(x)

    for f in _state_fields(state):
        see(getattr(state, f), f"state.{f}")
    see(body.mass, "body.mass")
    see(body.inertia, "body.inertia")
    see(body.vertices, "body.vertices")
    check_dtype(body.vertex_mask, "body.vertex_mask", integers=True)
    for name in (*ROUND_FIELDS, "vertex_radius", "vertex_shape"):
        if getattr(body, name, None) is not None:
            see(getattr(body, name), f"body.{name}")
    friction = getattr(body, "friction", None)
    if friction is not None:
        if not materials:
            raise ValueError("body.friction: a per-body friction coefficient is a material of a world "
                             "(jaxcontact.worlds); a single body's (or a chain's) friction is params.law.mu")
        see(friction, "body.friction")
    see(ground.normal, "ground.normal")
    see(ground.height, "ground.height")
    check = getattr(law, "check_static", None)
    if callable(check):
        check(batch_ndim)
    for path, leaf in jax.tree_util.tree_leaves_with_path(law):
        see(leaf, "params.law" + jax.tree_util.keystr(path), integers=True)
    if control is not None:
        see(control, "control")
    dtype = jnp.result_type(*floats)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.result_type(float)


def _arr(x, name, integers=False):
    check_dtype(x, name, integers)
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


class ComOutsideError(ValueError):
    """``validate_body``'s refusal of a body whose centre of mass (its origin) lies outside its shape;
    ``distance``: how far outside (m), for callers that report it in their own terms (``from_mujoco``)."""

    def __init__(self, message: str, distance: float):
        super().__init__(message)
        self.distance = float(distance)


def validate_body(body: Body, batched: bool = False) -> None:
    if not isinstance(body, Body):
        raise ValueError(f"params.body: expected a jaxcontact Body, got {type(body).__name__}")
    v = _arr(body.vertices, "body.vertices")
    lead = 1 if batched else 0
    if v.ndim != 2 + lead or v.shape[-1] not in (2, 3):
        raise ValueError(f"body.vertices: expected shape (K, 2) or (K, 3), got {v.shape}")
    d = v.shape[-1]
    _finite(v, "body.vertices")
    mask = _arr(body.vertex_mask, "body.vertex_mask", integers=True)
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
        if np.any(np.abs(I - np.swapaxes(I, -1, -2)) > 1e-9 * max(1.0, np.abs(I).max(initial=0.0))):
            raise ValueError("body.inertia: must be symmetric")
        if np.any(np.linalg.eigvalsh(I) <= 0):
            raise ValueError("body.inertia: must be positive definite (all principal moments > 0)")
        lam = np.linalg.eigvalsh(I)
        if np.any(lam[:, -1] > (lam[:, 0] + lam[:, 1]) * (1 + INERTIA_TOL)):
            k = int(np.argmax(lam[:, -1] - lam[:, 0] - lam[:, 1]))
            raise ValueError(f"body.inertia: physically impossible (principal moments {np.round(lam[k], 9).tolist()}: "
                             "the largest exceeds the sum of the other two, which no mass distribution gives)")
    else:
        _shape(inertia, (), "body.inertia", batched)
        if np.any(inertia <= 0):
            raise ValueError(f"body.inertia: must be positive, got {inertia}")
    if getattr(body, "friction", None) is not None:
        mu = _arr(body.friction, "body.friction")
        _shape(mu, (), "body.friction", batched)
        _finite(mu, "body.friction")
        if np.any(mu < 0):
            raise ValueError(f"body.friction: friction coefficients must be >= 0, got {mu}")
    if body.is_round:
        _validate_round(body, v, mask, batched)
        return
    if v.size == 0:  # a world of no bodies (a file of scenery or assets alone): nothing to check
        return
    vs, ms = v.reshape(-1, *v.shape[-2:]), mask.reshape(-1, v.shape[-2])
    # each distinct (vertices, mask) once: a batch of one shape costs one hull
    _, first = np.unique(np.concatenate([vs.reshape(len(vs), -1), ms], axis=1), axis=0, return_index=True)
    for k in np.sort(first):
        vb, mb = vs[k], ms[k]
        pts = vb[mb > 0]
        if len(pts) < d + 1 or np.linalg.matrix_rank(pts - pts.mean(0), tol=1e-9) < d:
            raise ValueError(
                f"body.vertices: degenerate hull (the {len(pts)} unmasked vertices do not span {d}D)"
            )
        out = com_outside(pts)
        if out > COM_TOL * np.max(np.linalg.norm(pts, axis=1)):
            which = f" of body {int(k)}" if len(vs) > 1 else ""
            raise ComOutsideError(f"body.vertices: the centre of mass{which} (the body's origin, 0) lies {out:.3g} m outside "
                                  "the hull of the vertices; give vertices relative to the centre of mass "
                                  "(shapes.convex_hull does)", out)


ROUND_FIELDS = {"radius": (), "cylinder": (2,), "ellipsoid": (3,)}


def _vertex_radii(vertex_radius, mask, ms) -> np.ndarray:
    """A compound's ``body.vertex_radius`` checked (one per vertex, finite, >= 0): the largest of
    each body's valid vertices (what sweeps its hull for the centre-of-mass check)."""
    a = _arr(vertex_radius, "body.vertex_radius")
    if a.shape != mask.shape:
        raise ValueError(f"body.vertex_radius: expected one radius per vertex, shape {mask.shape}, got {a.shape}")
    _finite(a, "body.vertex_radius")
    if np.any(a < 0):
        raise ValueError(f"body.vertex_radius: radii must be >= 0, got {a}")
    return np.max(np.where(ms > 0, a.reshape(ms.shape), 0.0), axis=-1)


def _part_surface_points(centres, rows) -> np.ndarray:
    """Points on the surfaces of a compound's cylinder and ellipsoid parts (``Body.vertex_shape`` rows
    at their centre vertices ``centres``): a cylinder's two rims (8 points each), an ellipsoid's six
    axis ends, in the body frame; the hull of them and the other vertices holds the parts' centres
    of mass."""
    from .rotations import quat_to_mat

    out = []
    ring = np.stack([np.cos(np.arange(8) * np.pi / 4), np.sin(np.arange(8) * np.pi / 4)], axis=1)
    for c, row in zip(centres, rows):
        R = np.asarray(quat_to_mat(np.asarray(row[4:8], np.float64)))
        if row[0] == 7:  # an ellipsoid of semi-axes row[1:4]
            local = np.concatenate([np.diag(row[1:4]), -np.diag(row[1:4])])
        else:  # a cylinder of radius row[1], half-length row[2] along its z
            local = np.concatenate([np.c_[row[1] * ring, np.full(8, s * row[2])] for s in (1.0, -1.0)])
        out.append(c + local @ R.T)
    return np.concatenate(out) if out else np.zeros((0, 3))


def _validate_round(body: Body, v, mask, batched: bool) -> None:
    """A body with round-shape fields (``types.Body``): each of the right shape, finite and >= 0
    (zeros: absent), 3D for a cylinder or ellipsoid; a sphere-swept body's core (its valid
    vertices) may be a point or a segment, but holds its centre of mass within its radius."""
    d = v.shape[-1]
    sizes = {}
    for name, shape in ROUND_FIELDS.items():
        x = getattr(body, name)
        if x is None:
            continue
        a = _arr(x, f"body.{name}")
        _shape(a, shape, f"body.{name}", batched)
        _finite(a, f"body.{name}")
        if np.any(a < 0):
            raise ValueError(f"body.{name}: sizes must be >= 0 (0: absent), got {a}")
        if name != "radius" and d != 3:
            raise ValueError(f"body.{name}: a {name} is a 3D shape; a planar body may have only a radius")
        sizes[name] = a.reshape(-1, *shape)
    vs, ms = v.reshape(-1, *v.shape[-2:]), mask.reshape(-1, v.shape[-2])
    if body.vertex_radius is not None:  # a compound's per-vertex radii (shapes.compound)
        sizes["radius"] = sizes.get("radius", np.zeros((len(vs),))) + _vertex_radii(body.vertex_radius, mask, ms)
    # a compound's cylinder and ellipsoid parts (``Body.vertex_shape``: kind > 0) shape it beyond its centre points
    parted = None if body.vertex_shape is None else np.asarray(body.vertex_shape).reshape(len(vs), vs.shape[1], -1)[..., 0] > 0
    for k in range(len(vs)):
        pts = vs[k][ms[k] > 0]
        for name in ("cylinder", "ellipsoid"):
            if name in sizes and np.any(sizes[name][k] > 0) and not np.all(sizes[name][k] > 0):
                raise ValueError(f"body.{name}: every size must be positive for a {name} (all zeros: none), got "
                                 f"{sizes[name][k]}")
        shaped = any(name in sizes and np.all(sizes[name][k] > 0) for name in ("cylinder", "ellipsoid"))
        if parted is not None and np.any(parted[k][ms[k] > 0]):  # its cylinders' and ellipsoids' surfaces
            shaped = True
            rows = np.asarray(body.vertex_shape).reshape(len(vs), vs.shape[1], -1)[k][ms[k] > 0]
            pts = np.concatenate([pts, _part_surface_points(pts[parted[k][ms[k] > 0]], rows[parted[k][ms[k] > 0]])])
        if len(pts) == 0:
            if not shaped:
                which = f" of body {k}" if len(vs) > 1 else ""
                raise ValueError(f"body.vertex_mask: no valid vertex{which}, and no cylinder or ellipsoid: the body "
                                 "has no shape")
            continue
        r = float(sizes["radius"][k]) if "radius" in sizes else 0.0
        if len(pts) <= d or np.linalg.matrix_rank(pts - pts.mean(0), tol=1e-9) < d:
            # a sphere-swept point or segment (a sphere, a capsule): the centre of mass within the radius of it
            if r <= 0 and not shaped:
                raise ValueError(f"body.vertices: degenerate hull (the {len(pts)} unmasked vertices do not span "
                                 f"{d}D) and no radius (body.radius) to sweep them")
            a, b = pts[0], pts[np.argmax(np.linalg.norm(pts - pts[0], axis=1))]
            t = np.clip(np.dot(-a, b - a) / max(np.dot(b - a, b - a), 1e-300), 0.0, 1.0)
            out = np.linalg.norm(a + t * (b - a)) - r
        else:
            out = com_outside(pts) - r
        if out > COM_TOL * max(np.max(np.linalg.norm(pts, axis=1)) + r, 1e-12):
            which = f" of body {int(k)}" if len(vs) > 1 else ""
            raise ComOutsideError(f"body.vertices: the centre of mass{which} (the body's origin, 0) lies {out:.3g} m outside "
                                  "the body (its vertices swept by its radius); give vertices relative to the centre of mass",
                                  out)


def com_outside(points) -> float:
    """How far (m) the origin lies outside the convex hull of ``points`` (P, d) (0 inside); eager
    (scipy's hull)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        eq = ConvexHull(np.asarray(points, np.float64)).equations  # n·x + c <= 0 inside
    except QhullError:
        return 0.0  # degenerate: refused by the rank check
    return max(float(np.max(eq[:, -1])), 0.0)


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
                f"state.quat: not a unit quaternion (|q| = {_span(qn)}, "
                f"tolerance {QUAT_TOL})"
            )


def _span(x) -> str:
    """The range of ``x`` in a message: ``2`` when every value is 2, ``0.5..2`` otherwise."""
    lo, hi = float(np.min(x)), float(np.max(x))
    return f"{lo:.6g}" if f"{lo:.6g}" == f"{hi:.6g}" else f"{lo:.6g}..{hi:.6g}"


def validate_law_params(law_params, batch_ndim: int = 0) -> None:
    check = getattr(law_params, "check_static", None)
    if callable(check):
        check(batch_ndim)
    leaves = jax.tree_util.tree_leaves_with_path(law_params)
    for path, leaf in leaves:
        name = "params.law" + jax.tree_util.keystr(path)
        a = _arr(leaf, name, integers=True)
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
    validate_law_params(params.law, batch_ndim=1 if params_batched else 0)
    if control is not None:
        c = _arr(control, "control")
        nv = 6 if dim == 3 else 3
        want = (nv,)
        if c.shape[-1:] != want or c.ndim != (2 if control_steps else 1):
            shape = f"(T, {nv})" if control_steps else f"({nv},)"
            raise ValueError(f"control: expected shape {shape}, got {c.shape}")
        _finite(c, "control")


def check_steps(n_steps, name: str = "n_steps") -> int:
    """``n_steps`` as an int; it sets a ``scan`` length, so it must be a concrete integer >= 0."""
    if isinstance(n_steps, jax.core.Tracer):
        raise ValueError(f"{name} must be a static Python int (it sets the scan length), got a traced value; "
                         "mark it static in your jit (static_argnames) or close over it")
    if isinstance(n_steps, np.ndarray) and n_steps.shape == () and np.issubdtype(n_steps.dtype, np.integer):
        n_steps = int(n_steps)
    if not isinstance(n_steps, numbers.Integral) or isinstance(n_steps, bool):
        raise ValueError(f"{name} must be an int >= 0, got {n_steps!r} ({type(n_steps).__name__})")
    if n_steps < 0:
        raise ValueError(f"{name} must be >= 0, got {n_steps}")
    return int(n_steps)


# --- the types of a public entry point's arguments: static, checked first, eagerly and traced ---


class ArgumentError(TypeError, ValueError):
    """A public entry point (a door: ``step``, ``rollout``, ``worlds.rollout``, a law's
    ``init_params``, ...) was given an argument of the wrong type; the message is one line naming
    the door, the argument, the type it got and the type it needs (``check_arguments``). A
    ``TypeError``, and a ``ValueError`` as every other input error of jaxcontact."""


@dataclasses.dataclass(frozen=True)
class Expect:
    """What an argument must be when a class (or a tuple of classes, None among them) cannot say
    it: ``what`` (how the message writes it) and ``accepts`` (a static test: under ``jit`` an
    array arrives as a tracer, which is an array)."""

    what: str
    accepts: Callable[[Any], bool]


def is_array(x) -> bool:
    """A JAX or NumPy array, or a tracer of one (NumPy scalars included)."""
    return isinstance(x, (jax.Array, np.ndarray, np.generic, jax.core.Tracer))


def _is_number(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, numbers.Real) or is_array(x) and np.shape(x) == ()


def _is_steps(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False  # a tracer is neither an Integral nor an ndarray: refused below
    return isinstance(x, numbers.Integral) or isinstance(x, np.ndarray) and x.shape == () and \
        np.issubdtype(x.dtype, np.integer)


def _is_dtype(x) -> bool:
    if x is None:
        return True
    if not isinstance(x, (type, np.dtype, str)) and not hasattr(x, "dtype"):
        return False
    try:
        np.dtype(x)
    except TypeError:
        return False
    return True


OPTIONAL_ARRAY = Expect("an array (jax or NumPy) or None", lambda x: x is None or is_array(x))
BOOL = Expect("a bool", lambda x: isinstance(x, (bool, np.bool_)))
NUMBER = Expect("a number (a Python float or a scalar array)", _is_number)
OPTIONAL_NUMBER = Expect("a number (a Python float or a scalar array) or None", lambda x: x is None or _is_number(x))
STEPS = Expect("a static Python int >= 0", _is_steps)
OPTIONAL_STEPS = Expect("a static Python int >= 0 or None",
                        lambda x: x is None or _is_steps(x))
OPTIONAL_INT = Expect("an int or None", lambda x: x is None or isinstance(x, numbers.Integral) and not isinstance(x, bool))
OUTPUT = Expect("'trajectory' or 'final'", lambda x: isinstance(x, str) and x in ("trajectory", "final"))
KEY = Expect("a PRNG key (jax.random.PRNGKey(seed)) or None", lambda x: x is None or is_array(x))
DTYPE = Expect("a dtype (jnp.float32, jnp.float64, 'float64') or None", _is_dtype)
OPTIONAL_POINTS = Expect("an array of points or None", lambda x: x is None or is_array(x) or isinstance(x, (list, tuple)))
SOURCE = Expect("a path (str or os.PathLike) or MJCF/URDF text (str)",
                lambda x: isinstance(x, (str, os.PathLike, bytes)) or x is None)  # bytes, None: from_mjcf's own
OPTIONAL_PATH = Expect("a path (str or os.PathLike) or None", lambda x: x is None or isinstance(x, (str, os.PathLike)))
KEYFRAME = Expect("a keyframe's index (int) or name (str) or None",
                  lambda x: x is None or isinstance(x, str) or isinstance(x, numbers.Integral) and not isinstance(x, bool))
MJ_MODEL = Expect("a mujoco.MjModel", lambda x: type(x).__name__ == "MjModel")
MJ_DATA = Expect("a mujoco.MjData or None", lambda x: x is None or type(x).__name__ == "MjData")
FRICTION = Expect("a friction coefficient μ (a number or a scalar array) or the pair (μ₁, μ₂)",
                  lambda x: _is_number(x) or is_array(x) and np.shape(x) == (2,)
                  or isinstance(x, (list, tuple)) and len(x) == 2 and all(map(_is_number, x)))


# The known mistakes: (the door's family, the argument, the type given) -> how to mend it. The
# family is the door's prefix ("worlds", "chains"; "*" any door); a swap of two of a door's
# arguments is found without this table (``check_arguments``).
_BUILD = "build Params(body={0}, ground=Ground.flat(), law={1}.init_params(...))"
MISTAKES: dict[tuple[str, str, str], str] = {
    ("worlds", "params", "Body"): "make_scene returns (scene, stacked_body): " + _BUILD.format("stacked_body", "law"),
    ("worlds", "params", "tuple"): "make_scene returns (scene, stacked_body): unpack it and "
                                   + _BUILD.format("stacked_body", "law"),
    ("worlds", "scene", "tuple"): "make_scene returns (scene, stacked_body): scene, body = make_scene(...)",
    ("worlds", "params", "ChainParams"): "a chain is a world with joints: model, scene, params = "
                                         "chains.as_world(chain_model, chain_params)",
    ("worlds", "state", "PlanarState"): "worlds are 3D: a State with a leading body axis (N, ...)",
    ("worlds", "states", "PlanarState"): "worlds are 3D: a State with leading axes (W, N, ...)",
    ("worlds", "params", "CoulombParams"): "that is the law's part: " + _BUILD.format("stacked_body", "law"),
    ("*", "params", "Body"): _BUILD.format("body", "model.law"),
    ("*", "params", "CoulombParams"): "that is the law's part: " + _BUILD.format("body", "model.law"),
    ("*", "model", "CoulombLCP"): "that is a law: build Model(law=law, dt=...)",
    ("*", "model", "RelaxedCoulomb"): "that is a law: build Model(law=law, dt=...)",
    ("*", "model", "NoContact"): "that is a law: build Model(law=law, dt=...)",
    ("*", "state", "tuple"): "a rollout returns (states, infos) or (final, summary): pass a State",
    ("*", "states", "tuple"): "a rollout returns (states, infos) or (final, summary): pass a State",
    ("*", "states", "list"): "stack the states on a leading batch axis: "
                             "jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)",
    ("chains", "params", "Params"): "a chain takes ChainParams (chains.make_chain); a chain as a world: "
                                    "chains.as_world(model, params)",
    ("chains", "params", "JointedParams"): "a chain takes ChainParams (chains.make_chain); the world's "
                                           "JointedParams go to worlds.rollout",
    ("chains", "model", "Model"): "a chain takes a ChainModel (chains.ChainModel(dt=...))",
    ("*", "key", "int"): "jax.random.PRNGKey(seed)",
    ("*", "source", "MjModel"): "a compiled MjModel goes to worlds.from_mujoco",
}


def _what(expected) -> str:
    if isinstance(expected, Expect):
        return expected.what
    types = expected if isinstance(expected, tuple) else (expected,)
    names = [
        "None" if t is None else t.__name__ if t.__module__.startswith("jaxcontact") else f"{t.__module__.split('.')[0]}.{t.__name__}"
        for t in types
    ]
    return " or ".join(names)


def _accepts(expected, x) -> bool:
    if isinstance(expected, Expect):
        return expected.accepts(x)
    types = expected if isinstance(expected, tuple) else (expected,)
    return (x is None and None in types) or isinstance(x, tuple(t for t in types if t is not None))


def describe(x) -> str:
    """How a refusal writes the value it got: its type, and its value or shape where short."""
    if x is None:
        return "None"
    if isinstance(x, jax.core.Tracer):
        return f"a traced value of shape {tuple(x.shape)}"
    if isinstance(x, (bool, np.bool_)):
        return f"a bool ({bool(x)})"
    name = type(x).__name__
    a = "an " if name[:1].lower() in "aeiou" else "a "
    if isinstance(x, (numbers.Number, str)):
        text = repr(x) if len(repr(x)) <= 40 else repr(x)[:37] + "..."
        return f"{a}{name} {text}" if text.startswith("(") else f"{a}{name} ({text})"
    if isinstance(x, (np.ndarray, jax.Array)):
        return f"an array of shape {tuple(x.shape)} ({x.dtype})"
    if isinstance(x, (tuple, list)):
        inner = ", ".join(type(v).__name__ for v in x[:3]) + (", ..." if len(x) > 3 else "")
        return f"{a}{name} of {len(x)} ({inner})"
    return a + name


def check_arguments(door: str, **arguments) -> None:
    """Refuse an argument of a public entry point of the wrong type, before any other work.

    ``door``: the entry point as a user calls it (``"worlds.rollout"``); ``arguments``: each
    argument as ``name=(value, expected)``, in the door's order, ``expected`` a class, a tuple of
    classes (``None`` among them for an optional one) or an ``Expect``. Types are static, so this
    works eagerly and inside ``jit``/``vmap``/``grad`` alike (an array arrives there as a tracer,
    which is an array). Raises ``ArgumentError``, one line: ``worlds.rollout: argument 'params' is
    a Body, expected Params (make_scene returns ...)``; the hint names the argument it was
    swapped with (another argument of the door accepts the value) or a known mistake
    (``MISTAKES``)."""
    for name, (value, expected) in arguments.items():
        if _accepts(expected, value):
            continue
        got = type(value).__name__
        family = door.split(".")[0] if "." in door else "*"
        hint = MISTAKES.get((family, name, got)) or MISTAKES.get(("*", name, got))
        if hint is None and isinstance(value, jax.core.Tracer) and expected in (STEPS, OPTIONAL_STEPS):
            hint = "it sets the scan length: mark it static in your jit (static_argnames) or close over it"
        if hint is None and value is not None:
            swapped = [other for other, (_, exp) in arguments.items() if other != name and _accepts(exp, value)]
            if swapped:
                hint = (f"swapped with '{swapped[0]}'? the order is {door}(" + ", ".join(arguments) + ")")
        raise ArgumentError(f"{door}: argument '{name}' is {describe(value)}, expected {_what(expected)}"
                            + (f" ({hint})" if hint else ""))


# --- traced value rules -------------------------------------------------------------------------

# The value rules every step evaluates on its input, in any tracing context. A step reports the
# broken ones as a bit set (bit i = RULES[i]) in ``ContactInfo.invalid``.
RULES: tuple[tuple[str, str], ...] = (
    ("state.pos", "contains NaN or infinite values"),
    ("state.quat", "contains NaN or infinite values"),
    ("state.quat", f"is not a unit quaternion (tolerance {QUAT_TOL})"),
    ("state.vel", "contains NaN or infinite values"),
    ("state.omega", "contains NaN or infinite values"),
    ("state.angle", "contains NaN or infinite values"),
    ("body.mass", "must be positive and finite"),
    ("body.inertia", "must be symmetric positive definite (planar: positive) and finite"),
    ("body.vertices", "contains NaN or infinite values"),
    ("ground.normal", "must be a finite non-zero vector"),
    ("ground.height", "contains NaN or infinite values"),
    ("params.law", "contains NaN or infinite values"),
    ("params.law.mu", "friction coefficients must be >= 0"),
    ("params.law.restitution", "must lie in [0, 1]"),
    ("control", "contains NaN or infinite values"),
    ("body.friction", "must be finite and >= 0"),
    ("body.inertia", "physically impossible: a principal moment exceeds the sum of the other two"),
    ("body.vertices", "the centre of mass (the origin) lies outside the hull of the vertices"),
    ("body.radius", "round-shape sizes (radius, cylinder, ellipsoid) must be finite and >= 0"),
    ("state.vel", "a fixed body (Scene.fixed) must be at rest: zero vel and omega"),
    ("params.joints", "damping, stiffness and armature must be finite and >= 0, springref finite; frictionloss "
                       "and the tendons' fields (tendons.TendonParams) likewise"),
    ("params.medium", "density and viscosity must be finite and >= 0, the wind and the principal frames finite"),
    ("params.soft", "solref (τ, ζ) > 0 or direct (< 0, ≤ 0), solimp d0, d_max, midpoint in [0, 1], width >= 0, "
                    "power >= 1, solmix, margins and inverse weights finite and >= 0, impratio > 0 "
                    "(params.joints.limit_soft: the limits' solref)"),
)
FIXED_MOVING = 19  # the rule a world's step sets for a fixed body given a velocity (worlds.pipeline)
JOINT_PASSIVE = 20  # the rule a jointed world's step sets for a bad passive joint field (worlds.pipeline)
MEDIUM = 21  # the rule a world's step sets for a bad fluid medium (worlds.pipeline, worlds.medium)
SOFT = 22  # the rule a world's step sets for bad MuJoCo-soft constraint values (worlds.pipeline, worlds.soft)


def rule_names(bits) -> list[str]:
    """``"field: what is wrong"`` for every rule set in the bit set ``bits`` (an int)."""
    return [f"{field}: {msg}" for i, (field, msg) in enumerate(RULES) if int(bits) >> i & 1]


def _bad_nonfinite(x):
    return ~jnp.all(jnp.isfinite(x))


def broken_rules(params: Params, state, control=None) -> jnp.ndarray:
    """The ``RULES`` one body's step input breaks, as an int32 bit set (0 = valid); traceable, so
    it works inside ``jit``/``vmap``/``grad``. Shapes and types are static and fail at trace time."""
    body, ground, law = params.body, params.ground, params.law
    bits = jnp.zeros((), jnp.int32)

    def add(i, bad):
        nonlocal bits
        bits = bits | jnp.where(bad, jnp.int32(1 << i), jnp.int32(0))

    nonfinite = {"pos": 0, "quat": 1, "vel": 3, "omega": 4, "angle": 5}
    for name, i in nonfinite.items():
        if hasattr(state, name):
            add(i, _bad_nonfinite(getattr(state, name)))
    if isinstance(state, State):
        add(2, jnp.abs(jnp.linalg.norm(state.quat) - 1.0) > QUAT_TOL)
    add(6, ~(jnp.isfinite(body.mass) & (body.mass > 0)))
    I = body.inertia
    if jnp.ndim(I) == 2:
        # positive definite: the Cholesky factor of the symmetric part exists (no NaN); and, in the
        # same call, the second moment tr(I)/2·E − I positive semidefinite (with INERTIA_TOL of
        # slack): every principal moment at most the sum of the other two (the triangle inequality)
        asym = jnp.max(jnp.abs(I - I.T)) > 1e-9 * jnp.maximum(1.0, jnp.max(jnp.abs(I)))
        S = 0.5 * (I + I.T)
        second = (0.5 + INERTIA_TOL) * jnp.trace(S) * jnp.eye(3, dtype=S.dtype) - S
        chol = jax.vmap(linalg.cholesky)(jnp.stack([S, second]))
        add(7, _bad_nonfinite(I) | asym | _bad_nonfinite(chol[0]))
        add(16, ~_bad_nonfinite(chol[0]) & _bad_nonfinite(chol[1]))
    else:
        add(7, ~(jnp.isfinite(I) & (I > 0)))
    add(8, _bad_nonfinite(body.vertices))
    add(9, _bad_nonfinite(ground.normal) | (jnp.linalg.norm(ground.normal) < 1e-9))
    add(10, _bad_nonfinite(ground.height))
    for leaf in jax.tree_util.tree_leaves(law):
        if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact):
            add(11, _bad_nonfinite(leaf))
    mu = getattr(law, "mu", None)
    if mu is not None:
        add(12, jnp.any(jnp.asarray(mu) < 0))
    eps = getattr(law, "restitution", None)
    if eps is not None:
        eps = jnp.asarray(eps)
        add(13, jnp.any((eps < 0) | (eps > 1)))
    if control is not None:
        add(14, _bad_nonfinite(control))
    friction = getattr(body, "friction", None)
    if friction is not None:
        add(15, ~jnp.all(jnp.isfinite(friction) & (jnp.asarray(friction) >= 0)))
    add(17, com_outside_traced(body) > COM_TOL)
    for name in (*ROUND_FIELDS, "vertex_radius"):
        x = getattr(body, name, None)
        if x is not None:
            add(18, ~jnp.all(jnp.isfinite(x) & (jnp.asarray(x) >= 0)))
    return bits


def com_outside_traced(body: Body) -> jnp.ndarray:
    """A lower bound of how far the origin lies outside the hull of the body's valid vertices,
    relative to its size; traceable. Over a fixed set of directions d (the axes, minus the
    vertices' mean, minus each vertex) the origin is outside by at least −max_v d·v; exact when
    one of them separates (it always does by a clear margin for a centre of mass 0.2 m out of a
    0.1 m box), 0 where none does. Never positive for an origin inside the hull."""
    v, valid = body.vertices, body.vertex_mask > 0
    d = v.shape[-1]
    size = jnp.max(jnp.where(valid, jnp.linalg.norm(v, axis=-1), 0.0))
    mean = jnp.sum(jnp.where(valid[:, None], v, 0.0), 0) / jnp.maximum(jnp.sum(valid), 1)
    dirs = jnp.concatenate([jnp.eye(d, dtype=v.dtype), -jnp.eye(d, dtype=v.dtype), -mean[None], -v])
    dirs = dirs / jnp.maximum(jnp.linalg.norm(dirs, axis=-1, keepdims=True), 1e-30)
    support = jnp.max(jnp.where(valid[None], dirs @ v.T, -jnp.inf), axis=-1)  # max_v d·v per direction
    if body.is_round:  # swept by its radius; a cylinder's or ellipsoid's body has no valid vertex (centred)
        rad = 0.0 if body.radius is None else jnp.asarray(body.radius)
        if body.vertex_radius is not None:
            rad = rad + jnp.max(jnp.where(valid, body.vertex_radius, 0.0))
        out = jnp.where(jnp.any(valid), jnp.maximum(-jnp.min(support) - rad, 0.0), 0.0)
        return jax.lax.stop_gradient(out / jnp.maximum(size + rad, 1e-30))
    return jax.lax.stop_gradient(jnp.maximum(-jnp.min(support), 0.0) / jnp.maximum(size, 1e-30))


class MissingExtra(ImportError):
    """An optional extra a command needs is missing (``worlds.mjcf.MujocoUnavailable``); the CLI
    prints it as one line."""


class CheckError(ValueError):
    """Raised by ``diagnostics.check`` when a run's flags report a problem; the message names the
    field, how many bodies and the first step."""
