"""Learned impact models on top of the rigid laws (the paper's conclusion; Fazeli et al. 2017b).

The predictor is allowed to leave the rigid point-contact set: it outputs the full scaled
velocity change ``S Δv`` (3 numbers: a wrench impulse, not just a 2-D point-contact impulse).

* ``data-augmented``: ``S Δv = S Δv_prior + MLP(features)``, the prior being an identified rigid
  model's prediction (default: the best model on the training set);
* ``data-driven``: ``S Δv = MLP(features)``.

Features are pose-invariant contact quantities: the contact-space pre-impact velocity, the
compliance ``W`` entries, the angular Jacobian entries and ``S v_pre``. Training is full-batch
Adam (optax) on the evaluation metric, a few seconds on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .data import ImpactData


def features(data: ImpactData) -> np.ndarray:
    u0, W = data.u0, data.W
    S = np.array([1.0, 1.0, data.rho])
    return np.concatenate([
        u0, W[:, 0, 0:2] * data.mass, W[:, 1, 1:2] * data.mass,
        data.J[:, 0, 2:3] / data.rho, data.J[:, 1, 2:3] / data.rho, data.v_pre * S,
    ], axis=1)


def _init(key, sizes):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        params.append((jax.random.normal(k, (a, b)) * np.sqrt(1.0 / a), jnp.zeros(b)))
    return params


def _mlp(params, x):
    for W, b in params[:-1]:
        x = jnp.tanh(x @ W + b)
    W, b = params[-1]
    return x @ W + b


_mlp_jit = jax.jit(_mlp)


@dataclass
class LearnedImpactModel:
    params: list
    x_mean: np.ndarray
    x_std: np.ndarray
    y_scale: float
    mode: str

    def predict_scaled_dv(self, data: ImpactData, prior_scaled_dv=None) -> np.ndarray:
        x = (features(data) - self.x_mean) / self.x_std
        out = np.asarray(_mlp_jit(self.params, jnp.asarray(x))) * self.y_scale
        if self.mode == "data-augmented":
            if prior_scaled_dv is None:
                raise ValueError("data-augmented model needs the prior's scaled velocity change")
            out = out + prior_scaled_dv
        return out


def scaled_dv_from_impulse(data: ImpactData, P) -> np.ndarray:
    S = np.array([1.0, 1.0, data.rho])
    return np.einsum("jk,nlj,nl->nk", data.Minv, data.J, np.asarray(P)) * S


@partial(jax.jit, static_argnames=("steps", "lr", "weight_decay"))
def _fit(params, Xn, Y, *, steps, lr, weight_decay):
    """``steps`` of full-batch AdamW (cosine-decayed ``lr``) on the mean squared error; the data are
    arguments, so both learned models (same shapes) share one compiled program."""
    opt = optax.adamw(optax.cosine_decay_schedule(lr, steps), weight_decay=weight_decay)

    def loss(p):
        return jnp.mean(jnp.sum((_mlp(p, Xn) - Y) ** 2, axis=1))

    def step(carry, _):
        p, s = carry
        l, g = jax.value_and_grad(loss)(p)
        upd, s = opt.update(g, s, p)
        return (optax.apply_updates(p, upd), s), l

    (params, _), losses = jax.lax.scan(step, (params, opt.init(params)), None, length=steps)
    return params, losses


def train(data: ImpactData, prior_scaled_dv=None, mode: str = "data-augmented",
          hidden=(64, 64), steps: int = 3000, lr: float = 3e-3, weight_decay: float = 1e-4,
          seed: int = 0) -> LearnedImpactModel:
    """Fit the MLP on ``data`` minimising the mean squared scaled-velocity error."""
    if mode not in ("data-augmented", "data-driven"):
        raise ValueError(f"mode must be 'data-augmented' or 'data-driven', got {mode!r}")
    S = np.array([1.0, 1.0, data.rho])
    target = (data.v_post - data.v_pre) * S
    if mode == "data-augmented":
        if prior_scaled_dv is None:
            raise ValueError("data-augmented training needs prior_scaled_dv")
        target = target - prior_scaled_dv
    X = features(data)
    x_mean, x_std = X.mean(0), X.std(0) + 1e-12
    y_scale = float(np.sqrt(np.mean(target**2))) + 1e-12
    Xn = jnp.asarray((X - x_mean) / x_std)
    Y = jnp.asarray(target / y_scale)
    params = _init(jax.random.PRNGKey(seed), [X.shape[1], *hidden, 3])
    params, _ = _fit(params, Xn, Y, steps=steps, lr=lr, weight_decay=weight_decay)
    return LearnedImpactModel(params, x_mean, x_std, y_scale, mode)
