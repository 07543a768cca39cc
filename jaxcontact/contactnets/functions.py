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
    """Residual φ network: features (p, R) → (φ_n (C,), φ_t (C, 2))."""

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


@dataclasses.dataclass(frozen=True)
class ContactFunctions:
    """Static description of a learned contact-function family (hashable)."""

    variant: str = "polytope"  # "polytope" | "deep"
    num_contacts: int = 8
    hidden: tuple = (256, 256)

    def __post_init__(self):
        if self.variant not in ("polytope", "deep"):
            raise ValueError(f"contact function variant must be 'polytope' or 'deep', got {self.variant!r}")

    def mlp(self) -> ContactMLP:
        return ContactMLP(num_contacts=self.num_contacts, hidden=tuple(self.hidden))

    def phi(self, theta, pos, R):
        if self.variant == "polytope":
            return polytope_phi(theta, pos, R)
        pn, pt = polytope_phi(theta.poly, pos, R)
        feats = jnp.concatenate([pos, R.reshape(-1)])
        dn, dt = self.mlp().apply(theta.net, feats)
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
    feats = jnp.zeros(12, dtype=poly.vertices.dtype)
    net = fns.mlp().init(k2, feats)
    net = jax.tree_util.tree_map(lambda a: a.astype(poly.vertices.dtype), net)
    return DeepParams(poly=poly, net=net)
