"""Learnable contact functions φ_n(q), φ_t(q) and their Jacobians (ContactNets §4.1, A.2).

A configuration is (pos, R): centre of mass (world) and rotation matrix body→world. Every
contact function is a pure function ``fn(theta, pos, R) -> (phi_n (C,), phi_t (C, 2))``;
the Jacobians with respect to the generalised velocity (v_world, ω_body) are obtained by JAX
autodiff of φ along the motion (pos + δp, R (I + [δθ]×)) at δ = 0, i.e. J = ∇_q φ Γ(q):

* J_n (C, 6) = ∂φ_n/∂(δp, δθ), J_t (C, 2, 6) = ∂φ_t/∂(δp, δθ).

Friction is lumped into J_t (μ = 1 convention): the tangent functions' scale *is* the friction.

Variants:

* **polytope** — θ = (vertices (C, 3) body frame, normal (3,), tangents (2, 3)):
  φ_n,i = n · (p + R v_i), φ_t,i = T (p + R v_i). The table plane passes through the origin
  (the data's table top is z = 0); ``normal`` is not normalised — regulariser R₂ pulls its
  position Jacobian (= n) to unit norm, as in the paper.
* **deep** — polytope plus, in parallel, a Flax MLP (2 × 256, tanh) of (p, R) adding to φ_n
  and φ_t (eq. 20); its last layer starts at zero so training starts from the polytope.
  ``ContactFunctions.features`` chooses other network inputs (an ablation, see the field).
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ..rotations import skew


@struct.dataclass
class PolytopeParams:
    vertices: jnp.ndarray  # (C, 3) body frame
    normal: jnp.ndarray  # (3,) world, unnormalised
    tangents: jnp.ndarray  # (2, 3) world, scaled by the (lumped) friction coefficient


@struct.dataclass
class DeepParams:
    poly: PolytopeParams
    net: dict  # Flax variables of ``ContactMLP``


class ContactMLP(nn.Module):
    """Residual φ network: features (``ContactFunctions.features``) → (φ_n (C,), φ_t (C, 2))."""

    num_contacts: int
    hidden: tuple = (256, 256)

    @nn.compact
    def __call__(self, x):
        for w in self.hidden:
            x = jnp.tanh(nn.Dense(w)(x))
        out = nn.Dense(3 * self.num_contacts, kernel_init=nn.initializers.zeros)(x)
        return out[: self.num_contacts], out[self.num_contacts :].reshape(self.num_contacts, 2)


def polytope_phi(theta: PolytopeParams, pos, R):
    pts = pos + theta.vertices @ R.T  # (C, 3) world
    return pts @ theta.normal, pts @ theta.tangents.T


FEATURES = {"pR": 12, "zR": 10, "p": 3, "vertex": 3}  # deep network input sets and their sizes


@dataclasses.dataclass(frozen=True)
class ContactFunctions:
    """Static description of a learned contact-function family (hashable)."""

    variant: str = "polytope"  # "polytope" | "deep"
    num_contacts: int = 8
    hidden: tuple = (256, 256)
    # inputs of deep's network: "pR" — position and rotation matrix (the paper, 12); "zR" — height and
    # rotation matrix (10): invariant to horizontal translation, as contact with a flat table is;
    # "p" — position only (3): a correction that depends on where the body is, not on its pose;
    # "vertex" — each contact's world point (3) through one network shared by the contacts: a learned
    # field of the environment (height and friction varying over the table)
    features: str = "pR"

    def __post_init__(self):
        if self.variant not in ("polytope", "deep"):
            raise ValueError(f"contact function variant must be 'polytope' or 'deep', got {self.variant!r}")
        if self.features not in FEATURES:
            raise ValueError(f"deep network features must be one of {tuple(FEATURES)}, got {self.features!r}")

    def mlp(self) -> ContactMLP:
        # "vertex": one network of a world point, shared by the contacts (a learned field of the
        # environment), else one output per contact
        n = 1 if self.features == "vertex" else self.num_contacts
        return ContactMLP(num_contacts=n, hidden=tuple(self.hidden))

    def correction(self, theta: DeepParams, pos, R):
        """Deep's network term (Δφ_n (C,), Δφ_t (C, 2)) at configuration (pos, R), from the inputs
        that ``features`` names."""
        if self.features == "vertex":
            pts = pos + theta.poly.vertices @ R.T  # (C, 3) world
            dn, dt = jax.vmap(lambda x: self.mlp().apply(theta.net, x))(pts)
            return dn[:, 0], dt[:, 0]
        if self.features == "p":
            x = pos
        else:  # "pR" (the paper) or "zR" (height only)
            x = jnp.concatenate([pos if self.features == "pR" else pos[2:], R.reshape(-1)])
        return self.mlp().apply(theta.net, x)

    def phi(self, theta, pos, R):
        if self.variant == "polytope":
            return polytope_phi(theta, pos, R)
        pn, pt = polytope_phi(theta.poly, pos, R)
        dn, dt = self.correction(theta, pos, R)
        return pn + dn, pt + dt

    def terms(self, theta, pos, R):
        """(φ_n (C,), φ_t (C, 2), J_n (C, 6), J_t (C, 2, 6)) at configuration (pos, R)."""

        def along(delta):
            return self.phi(theta, pos + delta[:3], R @ (jnp.eye(3, dtype=R.dtype) + skew(delta[3:])))

        zero = jnp.zeros(6, dtype=pos.dtype)
        phin, phit = along(zero)
        jn, jt = jax.jacfwd(along)(zero)
        return phin, phit, jn, jt

    def position_jacobians(self, theta, pos, R):
        """∂φ_n/∂p (C, 3) and ∂φ_t/∂p (C, 2, 3): the columns used by the regularisers of A.3."""
        jn, jt = jax.jacfwd(lambda p: self.phi(theta, p, R))(pos)
        return jn, jt


def init_polytope(key, vertices, mu: float, noise: float = 0.4, dtype=None) -> PolytopeParams:
    """Ground-truth cube geometry with multiplicative-scale Gaussian noise (paper A.2: σ = 40 %).

    Each entry of the vertices, the normal (0, 0, 1) and the tangents μ(e_x; e_y) receives noise of
    standard deviation ``noise`` × (RMS magnitude of that quantity), so zero entries are perturbed
    too (the normal's direction, not only its length, starts wrong).
    """
    dtype = dtype or jnp.result_type(float)
    v = jnp.asarray(vertices, dtype)
    n = jnp.array([0.0, 0.0, 1.0], dtype)
    t = float(mu) * jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype)
    k1, k2, k3 = jax.random.split(key, 3)
    rms = lambda a: jnp.sqrt(jnp.mean(a**2))
    v = v + noise * rms(v) * jax.random.normal(k1, v.shape, dtype)
    n = n + noise * rms(n) * jax.random.normal(k2, n.shape, dtype)
    t = t + noise * float(mu) * jax.random.normal(k3, t.shape, dtype)
    return PolytopeParams(vertices=v, normal=n, tangents=t)


def true_polytope(vertices, mu: float, dtype=None) -> PolytopeParams:
    dtype = dtype or jnp.result_type(float)
    return PolytopeParams(
        vertices=jnp.asarray(vertices, dtype),
        normal=jnp.array([0.0, 0.0, 1.0], dtype),
        tangents=float(mu) * jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype),
    )


def init_deep(key, fns: ContactFunctions, vertices, mu: float, noise: float = 0.4, dtype=None) -> DeepParams:
    k1, k2 = jax.random.split(key)
    poly = init_polytope(k1, vertices, mu, noise, dtype)
    net = fns.mlp().init(k2, jnp.zeros(FEATURES[fns.features], dtype=poly.vertices.dtype))
    net = jax.tree_util.tree_map(lambda a: a.astype(poly.vertices.dtype), net)
    return DeepParams(poly=poly, net=net)
