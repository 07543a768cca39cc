"""Randomized smoothing: the gradient of a loss averaged over Gaussian parameter perturbations.

For a loss L(θ) whose exact gradient describes it only at round-off scale (hard contact: jagged
at 0.1–1 mm, see ``docs/gradients.md``), the Gaussian-smoothed loss

    L_σ(θ) = E_ε[L(θ + σ⊙ε)],   ε ~ N(0, I),

has the gradient ∇L_σ(θ) = E[(L(θ + σ⊙ε) − L(θ − σ⊙ε)) ε / (2σ)] (Stein's identity, antithetic
pairs), which needs only values of L. ``randomized_value_and_grad`` estimates it with
``num_samples`` antithetic pairs evaluated as one batch (``jax.lax.map`` in batches of
``batch_size``, each batch vmapped): the zeroth-order estimator of Suh et al. ("Do differentiable
simulators give better policy gradients?", 2022) and Le Lidec et al. The value returned is the
unsmoothed L(θ) (the forward pass is unchanged). σ is given per leaf of θ in that leaf's physical
units (a scalar or a pytree of the same structure; 0 keeps a leaf fixed). ``randomized_jacobian``
is the same for a vector-valued function (for Gauss–Newton / Levenberg–Marquardt).

The estimate is unbiased for ∇L_σ; its error falls as √(n/num_samples) for n perturbed numbers.
This is a loss-level wrapper, not a solver mode: it works with any law and any loss.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree


def _flat_sigma(sigma, x):
    if jax.tree_util.tree_structure(sigma) == jax.tree_util.tree_structure(x):
        s = jax.tree.map(lambda si, xi: jnp.broadcast_to(jnp.asarray(si, jnp.result_type(xi)), jnp.shape(xi)),
                         sigma, x)
    else:
        s = jax.tree.map(lambda xi: jnp.full(jnp.shape(xi), sigma, jnp.result_type(xi)), x)
    return ravel_pytree(s)[0]


def _pairs(fun, x, sigma, num_samples: int, key, batch_size: int | None):
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    flat, unravel = ravel_pytree(x)
    s = _flat_sigma(sigma, x)
    eps = jax.random.normal(key, (num_samples, flat.shape[0]), flat.dtype)
    f = lambda v: jnp.asarray(fun(unravel(v)))
    diff = jax.lax.map(lambda e: 0.5 * (f(flat + s * e) - f(flat - s * e)), eps, batch_size=batch_size)
    return flat, unravel, s, eps, diff


def randomized_value_and_grad(fun: Callable, sigma, num_samples: int = 64, batch_size: int | None = None):
    """A function ``(x, key) -> (fun(x), ĝ)``: ĝ the antithetic estimate of ∇L_σ(x) from
    ``num_samples`` pairs (module docstring), a pytree like x. fun: x -> scalar loss."""

    def vg(x, key):
        flat, unravel, s, eps, diff = _pairs(fun, x, sigma, num_samples, key, batch_size)
        safe = jnp.where(s > 0, s, 1.0)
        g = jnp.where(s > 0, jnp.mean(diff[:, None] * eps, axis=0) / safe, 0.0)
        return fun(x), unravel(g)

    return vg


def randomized_jacobian(fun: Callable, sigma, num_samples: int = 64, batch_size: int | None = None):
    """A function ``(x, key) -> (fun(x), Ĵ)`` with Ĵ (m, n) the antithetic estimate of the Jacobian
    of the smoothed vector function E[fun(x + σ⊙ε)] over the flattened x (``ravel_pytree`` order)."""

    def vj(x, key):
        flat, unravel, s, eps, diff = _pairs(fun, x, sigma, num_samples, key, batch_size)
        safe = jnp.where(s > 0, s, 1.0)
        J = jnp.einsum("km,kn->mn", diff.reshape(num_samples, -1), eps) / num_samples
        J = jnp.where(s[None, :] > 0, J / safe[None, :], 0.0)
        return fun(x), J

    return vj


__all__ = ["randomized_jacobian", "randomized_value_and_grad"]
