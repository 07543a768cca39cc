"""Trajectory losses by short-window (multiple-shooting) rollouts.

Why windows: a rollout over a whole toss is chaotic — a tumbling cube's later motion depends
discontinuously on which corner lands first, so a full-horizon loss is rough (piecewise smooth
with jumps at every contact-mode change) and its gradient says little about the global shape.
Each window instead starts from an *observed* state and is simulated for ``window`` samples
(``window × substeps`` engine steps, compared at the sample times); errors cannot compound past
the window, the loss is much closer to a sum of smooth pieces, and the windows are independent
so they are ``vmap``-ed.

Window starts: by default each window starts from the *observed* state (``starts=()``). With
noisy observations that biases the fit (errors in variables: a start 1 mm inside the ground is
pushed out, one 1 mm above it falls, and neither happened). ``starts=("pos",)`` (or any of
"pos", "vel", "rot", "angvel") makes a per-window correction of those start-state components a
decision variable, with the start sample itself among the residuals: the fit is then the least-
squares estimate of the parameters *and* the start states. Each correction enters only its own
window's residuals, so the Gauss–Newton system is block-arrow shaped and is solved by a Schur
complement on the physical parameters (``optim.BlockJacobian``), not densely.

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


START_GROUPS = ("pos", "vel", "rot", "angvel")  # fitted start-state components, in this order


def check_starts(starts) -> tuple:
    """Canonical tuple of start-state groups (a comma-separated string or a sequence)."""
    if isinstance(starts, str):
        starts = [g for g in starts.replace(" ", "").split(",") if g]
    starts = tuple(starts or ())
    bad = [g for g in starts if g not in START_GROUPS]
    if bad:
        raise ValueError(f"unknown start-state group(s) {bad}: choose from {', '.join(START_GROUPS)}")
    if len(set(starts)) != len(starts):
        raise ValueError(f"start-state group named twice in {starts}")
    return tuple(g for g in START_GROUPS if g in starts)


@dataclasses.dataclass(frozen=True)
class WindowLoss:
    """Residuals of windowed rollouts; static configuration (hashable, a ``jit`` static arg).

    model: engine model with dt = sample period / substeps. window: samples per window.
    substeps: engine steps per sample. rot_scale: length multiplying rotation errors (and the
    unit of a position correction). starts: fitted start-state groups (see the module doc).
    """

    model: Model
    window: int
    substeps: int
    rot_scale: float
    starts: tuple = ()

    @property
    def n_start(self) -> int:
        """Start-state correction variables per window."""
        return 3 * len(self.starts)

    @property
    def rows(self) -> int:
        """Residual rows (of 6) per window: the start sample is compared when it is fitted."""
        return self.window + (1 if self.starts else 0)

    def start_scale(self, group: str) -> float:
        """Physical size of one unit of a start correction: ``rot_scale`` of position (length),
        that per sample period (velocity), one radian, one radian per sample period."""
        T = self.model.dt * self.substeps
        return {"pos": self.rot_scale, "vel": self.rot_scale / T, "rot": 1.0, "angvel": 1.0 / T}[group]

    def start_state(self, x0, delta):
        """The window's start state: the observed x0 (13,) plus the correction delta (n_start,)
        in the units of ``start_scale``."""
        s0 = State.from_array(x0)
        q = s0.quat / jnp.linalg.norm(s0.quat)
        for i, g in enumerate(self.starts):
            d = self.start_scale(g) * delta[3 * i:3 * i + 3]
            if g == "pos":
                s0 = s0.replace(pos=s0.pos + d)
            elif g == "vel":
                s0 = s0.replace(vel=s0.vel + d)
            elif g == "rot":  # body-frame rotation vector, first order (smooth at 0)
                dq = jnp.concatenate([jnp.ones((1,), d.dtype), 0.5 * d])
                q = quat_mul(q, dq / jnp.linalg.norm(dq))
            elif g == "angvel":
                s0 = s0.replace(omega=s0.omega + d)
        return s0.replace(quat=q)

    def simulate(self, params, x0, delta=None):
        """Predicted samples (window+1, 13) from the observed start x0 (13,) (plus ``delta``)."""
        delta = jnp.zeros((self.n_start,), jnp.asarray(x0).dtype) if delta is None else delta
        traj = rollout(self.model, params, self.start_state(x0, delta), self.window * self.substeps)
        return traj.to_array()[:: self.substeps]

    def window_residual(self, params, win, delta=None):
        """(rows, 6) residual rows of one window (observed samples win (window+1, 13)): the
        samples after the start, and the start itself when it is fitted."""
        return self.window_residual_and_end(params, win, delta)[0]

    def window_residual_and_end(self, params, win, delta=None):
        """(``window_residual``, the predicted position (3,) at the window's last sample)."""
        pred = self.simulate(params, win[0], delta)
        k = 0 if self.starts else 1
        dp = pred[k:, 0:3] - win[k:, 0:3]
        dr = self.rot_scale * rotation_error(pred[k:, 3:7], win[k:, 3:7])
        return jnp.concatenate([dp, dr], axis=-1), pred[-1, 0:3]


@partial(jax.jit, static_argnames=("wl", "unpack", "ends"))
def residuals(wl: WindowLoss, unpack, x, deltas, windows, weights, ends: bool = False):
    """Flat residual vector at the parameter vector x and the start corrections deltas
    (n, n_start); ``weights`` (n,) scales each window. ends: also return the predicted
    positions (n, 3) at the windows' last samples (for continuity links)."""
    params = unpack(x)
    r, e = jax.vmap(lambda w, d: wl.window_residual_and_end(params, w, d))(windows, deltas)
    r = (r * weights[:, None, None]).reshape(-1)
    return (r, e) if ends else r


@partial(jax.jit, static_argnames=("wl", "unpack", "batch", "ends"))
def jacobian(wl: WindowLoss, unpack, x, deltas, windows, weights, batch: int = 64, ends: bool = False):
    """(residuals (n·m,), ∂r/∂x (n, m, len x), ∂r/∂delta (n, m, n_start)) with m = 6·rows.
    Reverse mode per window (the LCP's implicit derivative is a custom VJP) — one forward and
    m reverse sweeps per window, windows in batches; a window's start correction touches only
    its own rows, so that block is per window. ends: the m rows are followed by the 3 of the
    predicted last-sample position (unweighted; ``residuals(..., ends=True)``), m = 6·rows + 3."""

    def one(wd):
        w, d = wd

        def f(xx, dd):
            r, e = wl.window_residual_and_end(unpack(xx), w, dd)
            return jnp.concatenate([r.reshape(-1), e]) if ends else r.reshape(-1)

        r, vjp = jax.vjp(f, x, d)
        Jx, Jd = jax.vmap(vjp)(jnp.eye(r.shape[0], dtype=r.dtype))
        return r, Jx, Jd

    if deltas.shape[1] == 0:  # no start corrections (lax.map cannot batch a zero-size axis)
        r, Jx = jax.lax.map(lambda w: one((w, jnp.zeros((0,), w.dtype)))[:2], windows, batch_size=batch)
        Jd = jnp.zeros(r.shape + (0,), r.dtype)
    else:
        r, Jx, Jd = jax.lax.map(one, (windows, deltas), batch_size=batch)
    m = 6 * wl.rows
    wr = jnp.where(jnp.arange(r.shape[1])[None, :] < m, weights[:, None], 1.0)  # the end rows unweighted
    r = r * wr
    return r.reshape(-1), Jx * wr[:, :, None], Jd * wr[:, :, None]


@partial(jax.jit, static_argnames=("wl", "unpack"))
def loss_and_grad(wl: WindowLoss, unpack, x, deltas, windows, weights):
    """(loss, (∂/∂x, ∂/∂deltas))."""
    f = lambda xx, dd: jnp.sum(residuals(wl, unpack, xx, dd, windows, weights) ** 2)
    return jax.value_and_grad(f, argnums=(0, 1))(x, deltas)


# Each Problem is a new static argument of the jitted functions above (its ParamSpec and loss are
# hashed by identity), so each Problem compiles its own programs, and JAX keeps them for the life
# of the process. Every compiled program holds memory maps of its machine code: without a bound,
# about 24 ``staged_fit(..., RANDOM_START_SCHEDULE)`` calls in one process passed the kernel's
# 65,530 maps and LLVM failed with "Cannot allocate memory" (measured: a small Problem's programs
# add about 1,600 maps). So every ``COMPILED_PROBLEMS`` Problems built, the compiled programs of
# these functions are dropped: a Problem used again afterwards compiles again (seconds), nothing
# else changes.
COMPILED_PROBLEMS = 16
_built = [0]


def note_new_problem() -> None:
    """Count a new Problem (``Problem.build``); every ``COMPILED_PROBLEMS``-th drops the compiled
    programs of ``residuals``, ``jacobian`` and ``loss_and_grad``."""
    _built[0] += 1
    if _built[0] % COMPILED_PROBLEMS == 0:
        for f in (residuals, jacobian, loss_and_grad):
            f.clear_cache()
