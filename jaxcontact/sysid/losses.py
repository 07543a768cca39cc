"""Trajectory losses by short-window (multiple-shooting) rollouts.

Why windows: a rollout over a whole toss is chaotic — a tumbling cube's later motion depends
discontinuously on which corner lands first, so a full-horizon loss is rough (piecewise smooth
with jumps at every contact-mode change) and its gradient says little about the global shape.
Each window instead starts from an *observed* state and is simulated for ``window`` samples
(``window × substeps`` engine steps, compared at the sample times); errors cannot compound past
the window, the loss is much closer to a sum of smooth pieces, and the windows are independent
so they are ``vmap``-ed. The window start states are taken from the data, not fitted (the
multiple-shooting defects are not decision variables): this keeps the parameter vector small
enough for dense Gauss–Newton, at the price of a small bias when the start states are noisy.

Residual per compared sample: position error (length units) and the rotation error
``rot_scale · 2·vec(q_obs⁻¹ ⊗ q_pred)`` (sign-aligned, ≈ rot_scale × angle), so both are lengths.
All residuals are divided by √(number of residuals): ‖r‖² is the mean squared error.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics import rollout
from ..geometry import world_points
from ..rotations import quat_conj, quat_mul
from ..types import Model, State
from .data import Trajectories


def make_windows(data: Trajectories, window: int, stride: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stack windows (n, window+1, 13) of consecutive samples; also (n, 2) (trajectory, start)."""
    if window < 1:
        raise ValueError(f"window must be >= 1 sample, got {window}")
    stride = window if stride is None else stride
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    wins, where = [], []
    for i, t in enumerate(data.trajs):
        if len(t) < window + 1:
            raise ValueError(
                f"trajectory {i}: has {len(t)} samples, a window of {window} samples needs at least {window + 1}"
            )
        for s in range(0, len(t) - window, stride):
            wins.append(t[s:s + window + 1])
            where.append((i, s))
    return np.stack(wins), np.asarray(where, dtype=int)


def contact_windows(windows: np.ndarray, params, margin: float) -> np.ndarray:
    """Mask of windows in which some vertex of ``params.body`` comes within ``margin`` of the
    ground (observed poses, initial geometry): the only windows that carry contact information."""
    V = jnp.asarray(params.body.vertices)[np.asarray(params.body.vertex_mask) > 0]
    n = params.ground.normal / jnp.linalg.norm(params.ground.normal)

    def lowest(x):
        pts = world_points(State.from_array(x), V)
        return jnp.min(pts @ n - params.ground.height)

    low = jax.vmap(jax.vmap(lowest))(jnp.asarray(windows))
    return np.asarray(jnp.min(low, axis=1) <= margin)


def rotation_error(q_pred, q_obs):
    """2·vec(q_obs⁻¹ ⊗ q_pred), sign-aligned: ≈ the rotation vector between the two."""
    dq = quat_mul(quat_conj(q_obs), q_pred)
    s = jnp.where(dq[..., :1] < 0, -1.0, 1.0)
    return 2.0 * s * dq[..., 1:]


@dataclasses.dataclass(frozen=True)
class WindowLoss:
    """Residuals of windowed rollouts; static configuration (hashable, a ``jit`` static arg).

    model: engine model with dt = sample period / substeps. window: samples per window.
    substeps: engine steps per sample. rot_scale: length multiplying rotation errors.
    """

    model: Model
    window: int
    substeps: int
    rot_scale: float

    def simulate(self, params, x0):
        """Predicted samples (window+1, 13) from the observed start x0 (13,)."""
        s0 = State.from_array(x0)
        s0 = s0.replace(quat=s0.quat / jnp.linalg.norm(s0.quat))
        traj = rollout(self.model, params, s0, self.window * self.substeps)
        return traj.to_array()[:: self.substeps]

    def window_residual(self, params, win):
        """(window, 6) residual rows of one window (observed samples win (window+1, 13))."""
        pred = self.simulate(params, win[0])
        dp = pred[1:, 0:3] - win[1:, 0:3]
        dr = self.rot_scale * rotation_error(pred[1:, 3:7], win[1:, 3:7])
        return jnp.concatenate([dp, dr], axis=-1)


@partial(jax.jit, static_argnames=("wl", "unpack"))
def residuals(wl: WindowLoss, unpack, x, windows, weights):
    """Flat residual vector at the parameter vector x; ``weights`` (n,) scales each window."""
    params = unpack(x)
    r = jax.vmap(lambda w: wl.window_residual(params, w))(windows)
    return (r * weights[:, None, None]).reshape(-1)


@partial(jax.jit, static_argnames=("wl", "unpack", "batch"))
def jacobian(wl: WindowLoss, unpack, x, windows, weights, batch: int = 64):
    """(residuals, Jacobian) at x. Reverse mode per window (the LCP's implicit derivative is a
    custom VJP) — one forward and 6·window reverse sweeps per window, windows in batches."""

    def one(w):
        f = lambda xx: wl.window_residual(unpack(xx), w).reshape(-1)
        r, vjp = jax.vjp(f, x)
        J = jax.vmap(vjp)(jnp.eye(r.shape[0], dtype=r.dtype))[0]
        return r, J

    r, J = jax.lax.map(one, windows, batch_size=batch)
    r = r * weights[:, None]
    J = J * weights[:, None, None]
    return r.reshape(-1), J.reshape(-1, x.shape[0])


@partial(jax.jit, static_argnames=("wl", "unpack"))
def loss_and_grad(wl: WindowLoss, unpack, x, windows, weights):
    f = lambda xx: jnp.sum(residuals(wl, unpack, xx, windows, weights) ** 2)
    return jax.value_and_grad(f)(x)
