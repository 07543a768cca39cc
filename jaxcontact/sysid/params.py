"""Which physical parameters are fitted, and how they map to an unconstrained vector.

Every fitted parameter lives in an unconstrained coordinate; bounds hold by construction
(reparameterisation), so no optimiser ever proposes an infeasible model:

| name | physical value | transform | bound |
| --- | --- | --- | --- |
| ``mu`` | isotropic friction, ``law.mu = (μ, μ)`` | softplus | μ ≥ 0 |
| ``mu_aniso`` | ``law.mu = (μ₁, μ₂)`` along the ground tangents | softplus | μᵢ ≥ 0 |
| ``restitution`` | ``law.restitution`` | sigmoid, or ``"reflect"`` (below) | 0 ≤ ε ≤ 1 |
| ``mass`` | ``body.mass`` | exp | m > 0 |
| ``inertia`` | ``body.inertia`` = L Lᵀ, L lower triangular | exp on diag(L) | positive definite |
| ``ground`` / ``ground_height`` | ``ground.height`` | identity (scaled by body size) | — |
| ``ground_normal`` | ``ground.normal`` ∝ (a, b, 1) | identity (tilt) | upward |
| ``vertices`` | ``body.vertices`` (unmasked ones) | identity (scaled by body size) | — |

The unconstrained vector is also *scaled* (a vertex coordinate or a height is divided by the body
size) so that a unit step means a comparable change for every parameter; Nelder–Mead's simplex,
Adam's step size and Levenberg–Marquardt's damping all work in these scaled coordinates.

The restitution coordinate is chosen per problem (``restitution_coordinate``). ``"sigmoid"`` (the
default, with which every schedule was measured) is flat at both ends: once a fit drives ε to 0
its slope is e^u ≈ 0 and no later stage can bring ε back, even where the loss falls steeply
towards the truth (the random-start failures of docs/gradients.md). ``"reflect"`` is the triangle
wave ε = |u − 2⌊(u + 1)/2⌋|: the identity on [0, 1], mirrored at both bounds, slope ±1
everywhere, so a fit that overshoots a bound comes back with the full gradient.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ..types import Params

# Smallest distance kept from an open bound when the initial guess sits exactly on it
# (ε = 0 or ε = 1 are feasible, but sigmoid reaches them only in the limit).
_EDGE = 1e-6

ALIASES = {"ground_height": "ground", "friction": "mu", "epsilon": "restitution", "eps": "restitution"}
NAMES = ("mu", "mu_aniso", "restitution", "mass", "inertia", "ground", "ground_normal", "vertices")
RESTITUTION_COORDINATES = ("sigmoid", "reflect")


def reflect01(u):
    """The triangle wave onto [0, 1]: u on [0, 1], mirrored at 0 and 1 (period 2, slope ±1)."""
    return jnp.abs(u - 2.0 * jnp.floor((u + 1.0) / 2.0))


def _softplus_inv(y):
    y = np.asarray(y, dtype=np.float64)
    return np.where(y > 30, y, np.log(np.expm1(np.maximum(y, 1e-300))))


def canonical(names) -> tuple[str, ...]:
    """Parameter names from a list or a comma-separated string, aliases resolved, checked."""
    if isinstance(names, str):
        names = [n for n in names.replace(" ", "").split(",") if n]
    out = []
    for n in names:
        c = ALIASES.get(n, n)
        if c not in NAMES:
            raise ValueError(
                f"unknown parameter {n!r}: the model has {', '.join(NAMES)} "
                f"(aliases: {', '.join(f'{a}={b}' for a, b in ALIASES.items())})"
            )
        if c in out:
            raise ValueError(f"parameter {n!r} named twice")
        out.append(c)
    if not out:
        raise ValueError("no parameters to fit: name at least one of " + ", ".join(NAMES))
    if "mu" in out and "mu_aniso" in out:
        raise ValueError("name either 'mu' (isotropic) or 'mu_aniso' (two coefficients), not both")
    return tuple(out)


SCALARS = ("mu", "restitution", "ground", "mass")


def with_scalar(params: Params, name: str, value: float) -> Params:
    """``params`` with one scalar parameter (a canonical name of ``SCALARS``; isotropic μ) set."""
    v = jnp.asarray(value)
    if name == "mu":
        return params.replace(law=params.law.replace(mu=jnp.full_like(params.law.mu, value)))
    if name == "restitution":
        return params.replace(law=params.law.replace(restitution=v))
    if name == "ground":
        return params.replace(ground=params.ground.replace(height=v))
    if name == "mass":
        return params.replace(body=params.body.replace(mass=v))
    raise ValueError(f"{name!r} is not a scalar parameter ({', '.join(SCALARS)})")


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a jit static argument
class ParamSpec:
    """The fitted subset of ``Params``: packs physical values into a scaled unconstrained vector.

    names: canonical parameter names. template: the ``Params`` holding every other value (and
    the initial guess). length: the scale (m) of lengths (heights, vertices), the body size.
    restitution_coordinate: ``"sigmoid"`` or ``"reflect"`` (module doc).
    """

    names: tuple
    template: Params
    length: float
    sizes: tuple
    vertex_rows: np.ndarray
    restitution_coordinate: str = "sigmoid"

    @staticmethod
    def build(names, template: Params, restitution_coordinate: str = "sigmoid") -> "ParamSpec":
        if restitution_coordinate not in RESTITUTION_COORDINATES:
            raise ValueError(f"restitution_coordinate must be one of {RESTITUTION_COORDINATES}, "
                             f"got {restitution_coordinate!r}")
        names = canonical(names)
        law = template.law
        for n, field in (("mu", "mu"), ("mu_aniso", "mu"), ("restitution", "restitution")):
            if n in names and not hasattr(law, field):
                raise ValueError(
                    f"parameter {n!r}: the contact law's parameters ({type(law).__name__}) have no field {field!r}"
                )
        if template.body.vertices.shape[-1] != 3:
            raise ValueError("sysid fits 3D bodies (State with quaternions); got planar vertices")
        mask = np.asarray(template.body.vertex_mask) > 0
        rows = np.nonzero(mask)[0]
        verts = np.asarray(template.body.vertices)[rows]
        length = float(np.max(np.linalg.norm(verts - verts.mean(0), axis=1)))
        sizes = {"mu": 1, "mu_aniso": 2, "restitution": 1, "mass": 1, "inertia": 6, "ground": 1,
                 "ground_normal": 2, "vertices": 3 * len(rows)}
        spec = ParamSpec(names, template, length, tuple(sizes[n] for n in names), rows, restitution_coordinate)
        spec.check_bounds(template)
        return spec

    @property
    def size(self) -> int:
        return int(sum(self.sizes))

    def labels(self) -> list[str]:
        out = []
        for n, k in zip(self.names, self.sizes):
            if n == "vertices":
                out += [f"vertices[{r}].{a}" for r in self.vertex_rows for a in "xyz"]
            elif k == 1:
                out.append(n)
            else:
                out += [f"{n}[{i}]" for i in range(k)]
        return out

    # ---- physical values -------------------------------------------------------------
    def values(self, params: Params) -> dict:
        """Physical values of the fitted parameters (numpy), keyed by name."""
        out = {}
        for n in self.names:
            if n == "mu":
                out[n] = float(np.asarray(params.law.mu)[0])
            elif n == "mu_aniso":
                out[n] = np.asarray(params.law.mu, dtype=float)
            elif n == "restitution":
                out[n] = float(params.law.restitution)
            elif n == "mass":
                out[n] = float(params.body.mass)
            elif n == "inertia":
                out[n] = np.asarray(params.body.inertia, dtype=float)
            elif n == "ground":
                out[n] = float(params.ground.height)
            elif n == "ground_normal":
                nn = np.asarray(params.ground.normal, dtype=float)
                out[n] = nn / np.linalg.norm(nn)
            elif n == "vertices":
                out[n] = np.asarray(params.body.vertices, dtype=float)[self.vertex_rows]
        return out

    def check_bounds(self, params: Params) -> None:
        """Raise ``ValueError`` naming the parameter when a value violates its bound."""
        v = self.values(params)
        for n, x in v.items():
            a = np.asarray(x, dtype=float)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"initial {n} = {x} is not finite")
            if n in ("mu", "mu_aniso") and np.any(a < 0):
                raise ValueError(f"initial {n} = {x} violates the bound mu >= 0")
            if n == "restitution" and not (0.0 <= a <= 1.0):
                raise ValueError(f"initial restitution = {x} violates the bound 0 <= restitution <= 1")
            if n == "mass" and a <= 0:
                raise ValueError(f"initial mass = {x} violates the bound mass > 0")
            if n == "inertia":
                if np.any(np.abs(a - a.T) > 1e-9 * np.abs(a).max()) or np.any(np.linalg.eigvalsh(a) <= 0):
                    raise ValueError("initial inertia violates the bound: must be symmetric positive definite")
            if n == "ground_normal" and a[2] <= 0:
                raise ValueError(f"initial ground_normal = {x} must point up (positive z component)")
        if "mu" in v:
            mu = np.asarray(params.law.mu, dtype=float)
            if mu.ndim and not np.allclose(mu, mu[0]):
                raise ValueError(f"parameter 'mu' is isotropic but the initial law.mu = {mu} is not; fit 'mu_aniso'")

    # ---- packing -----------------------------------------------------------------------
    def pack(self, params: Params) -> np.ndarray:
        """Scaled unconstrained vector of ``params`` (bounds checked first)."""
        self.check_bounds(params)
        L = self.length
        parts = []
        for n in self.names:
            if n == "mu":
                parts.append(_softplus_inv([float(np.asarray(params.law.mu)[0])]))
            elif n == "mu_aniso":
                parts.append(_softplus_inv(np.asarray(params.law.mu, dtype=float)))
            elif n == "restitution" and self.restitution_coordinate == "reflect":
                parts.append(np.array([float(params.law.restitution)]))
            elif n == "restitution":
                e = float(np.clip(float(params.law.restitution), _EDGE, 1 - _EDGE))
                parts.append(np.array([np.log(e / (1 - e))]))
            elif n == "mass":
                parts.append(np.array([np.log(float(params.body.mass))]))
            elif n == "inertia":
                C = np.linalg.cholesky(np.asarray(params.body.inertia, dtype=float))
                parts.append(np.array([np.log(C[0, 0]), np.log(C[1, 1]), np.log(C[2, 2]),
                                       C[1, 0] / C[0, 0], C[2, 0] / C[0, 0], C[2, 1] / C[0, 0]]))
            elif n == "ground":
                parts.append(np.array([float(params.ground.height) / L]))
            elif n == "ground_normal":
                nn = np.asarray(params.ground.normal, dtype=float)
                parts.append(nn[:2] / nn[2] / 0.1)
            elif n == "vertices":
                parts.append((np.asarray(params.body.vertices, dtype=float)[self.vertex_rows] / L).ravel())
        return np.concatenate(parts).astype(np.float64)

    def unpack(self, x) -> Params:
        """``Params`` with the fitted entries taken from the vector x (traceable: jit/grad)."""
        p = self.template
        body, ground, law = p.body, p.ground, p.law
        L = self.length
        i = 0
        for n, k in zip(self.names, self.sizes):
            seg = x[i:i + k]
            i += k
            if n == "mu":
                law = law.replace(mu=jnp.broadcast_to(jax.nn.softplus(seg[0]), jnp.shape(law.mu)))
            elif n == "mu_aniso":
                law = law.replace(mu=jax.nn.softplus(seg))
            elif n == "restitution":
                e = reflect01(seg[0]) if self.restitution_coordinate == "reflect" else jax.nn.sigmoid(seg[0])
                law = law.replace(restitution=e)
            elif n == "mass":
                body = body.replace(mass=jnp.exp(seg[0]))
            elif n == "inertia":
                d0 = jnp.exp(seg[0])
                C = jnp.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=seg.dtype) * d0
                C = C.at[1, 1].set(jnp.exp(seg[1])).at[2, 2].set(jnp.exp(seg[2]))
                C = C.at[1, 0].set(seg[3] * d0).at[2, 0].set(seg[4] * d0).at[2, 1].set(seg[5] * d0)
                body = body.replace(inertia=C @ C.T)
            elif n == "ground":
                ground = ground.replace(height=seg[0] * L)
            elif n == "ground_normal":
                t = 0.1 * seg
                nn = jnp.concatenate([t, jnp.ones((1,), seg.dtype)])
                ground = ground.replace(normal=nn / jnp.linalg.norm(nn))
            elif n == "vertices":
                V = seg.reshape(-1, 3) * L
                body = body.replace(vertices=jnp.asarray(body.vertices).at[self.vertex_rows].set(V))
        return Params(body=body, ground=ground, law=law)

    def flat_values(self, x) -> dict:
        """JSON-friendly physical values at the vector x."""
        out = {}
        for k, v in self.values(self.unpack(jnp.asarray(x))).items():
            out[k] = np.asarray(v).tolist() if np.ndim(v) else float(v)
        return out
