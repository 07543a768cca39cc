"""System identification: ``Problem`` (data + model + which parameters) and ``fit``.

    from jaxcontact import sysid
    data = sysid.load("tosses.npz")
    prob = sysid.Problem.build(data, names="mu,restitution,ground", window=4)  # substeps: the data's
    res = sysid.fit(prob, method="lm")
    res.values  # {"mu": …, "restitution": …, "ground": …}

Methods: ``"lm"`` (Levenberg–Marquardt on the window residuals, Jacobian by JAX), ``"adam"``
(optax, gradient of the same loss), ``"nelder-mead"`` (scipy, derivative-free baseline).
"""

from __future__ import annotations

import dataclasses
import time

import jax.numpy as jnp
import numpy as np

from ..laws import CoulombLCP
from ..solvers import LCPSettings
from ..types import Ground, Model, Params
from . import losses, optim
from .data import Trajectories, substeps_for
from .params import ParamSpec

METHODS = ("lm", "adam", "nelder-mead")


@dataclasses.dataclass(eq=False)
class Problem:
    """A windowed trajectory loss over the fitted parameter subset ``spec``."""

    spec: ParamSpec
    loss_def: losses.WindowLoss
    windows: jnp.ndarray  # (n, window+1, 13)
    weights: jnp.ndarray  # (n,)
    where: np.ndarray  # (n, 2) trajectory index, start sample
    data: Trajectories
    continuity: float = 0.0  # weight of the links between consecutive windows (``build``)
    links: np.ndarray | None = None  # (P, 2) window k, window j that starts at k's last sample

    @staticmethod
    def build(data: Trajectories, names, params0: Params | None = None, *, law=None, window: int = 4,
              substeps: int | None = None, stride: int | None = None, rot_scale: float | None = None,
              max_contacts: int = 4, contact_margin: float | None = None, starts=(),
              continuity: float = 0.0, restitution_coordinate: str = "sigmoid") -> "Problem":
        """Windows of ``window`` samples, simulated with ``substeps`` engine steps per sample.

        substeps: None (default) takes the data's (``data.substeps``, simulated data record their
        engine step) or ``data.MEASURED_SUBSTEPS`` for measured data; an explicit value that
        contradicts the data's is refused (``data.substeps_for``).

        params0: initial guess (default: a body from the data's mass/inertia/vertices, a flat
        ground at 0, the law's default parameters). law: contact law (default: a tight
        ``CoulombLCP``). contact_margin: keep only windows where a vertex comes within this
        distance of the ground (default: the body size; ``inf`` keeps all windows).
        starts: start-state groups fitted per window ("pos", "vel", "rot", "angvel"; default
        none: windows start from the observed states) — use "pos" (and "vel", …) when the
        observations are noisy (``losses`` module doc). The optimisation vector is then
        [physical parameters, window 0's corrections, window 1's, …].
        continuity: weight (relative to an observed sample) of the *links* between consecutive
        windows of a trajectory: the position predicted at window k's last sample must equal the
        fitted start position of window k+1, which starts there (multiple shooting). Needs
        ``starts`` with "pos". 0 (default): the windows are independent. With links, the
        corrected starts are no longer incidental parameters of six samples each (the bias of
        noisy fits, docs/sysid.md) but are tied to the dynamics of the window before.
        """
        starts = losses.check_starts(starts)
        if not (np.isfinite(continuity) and continuity >= 0):
            raise ValueError(f"continuity must be a finite weight >= 0, got {continuity}")
        if continuity > 0 and "pos" not in starts:
            raise ValueError("continuity links the fitted window starts: build the Problem with starts including 'pos'")
        substeps = substeps_for(data, substeps)
        law = CoulombLCP(solver=LCPSettings(tol=1e-9, max_iter=200)) if law is None else law
        if params0 is None:
            params0 = default_params(data, law)
        spec = ParamSpec.build(names, params0, restitution_coordinate)
        losses.note_new_problem()  # bounds the compiled programs kept for earlier Problems
        unit = float(data.nominal.get("length_unit_m", 1.0))  # data length unit in metres
        # patch_tol: the engine's default 1 mm, in the data's units. max_correction_speed=None: a window
        # starts at a measured state whose apparent penetration is measurement noise, and the fit must
        # reproduce the next samples from it (the unbounded −φ/h correction the recipes were chosen
        # with; the bounded one raised the restitution error of the tiny synthetic case from < 1 % to 2 %)
        model = Model(law=law, dt=data.dt / substeps, gravity=data.gravity, max_contacts=max_contacts,
                      patch_tol=1e-3 / unit, max_correction_speed=None)
        rot_scale = spec.length if rot_scale is None else float(rot_scale)
        wl = losses.WindowLoss(model=model, window=int(window), substeps=int(substeps), rot_scale=rot_scale,
                               starts=starts)
        wins, where = losses.make_windows(data, int(window), stride)
        margin = spec.length if contact_margin is None else float(contact_margin)
        if np.isfinite(margin):
            keep = losses.contact_windows(wins, params0, margin)
            if not keep.any():
                raise ValueError(f"no window comes within {margin:.4g} of the ground: nothing to identify contact from")
            wins, where = wins[keep], where[keep]
        n_res = wins.shape[0] * wl.rows * 6
        weights = jnp.full((wins.shape[0],), 1.0 / np.sqrt(n_res))
        links = None
        if continuity > 0:
            index = {(int(t), int(s)): k for k, (t, s) in enumerate(where)}
            links = np.asarray([(k, index[(int(t), int(s) + int(window))]) for k, (t, s) in enumerate(where)
                                if (int(t), int(s) + int(window)) in index], dtype=int).reshape(-1, 2)
        return Problem(spec, wl, jnp.asarray(wins), weights, where, data, float(continuity), links)

    # the three oracles, on the vector z = [scaled unconstrained parameters of ``spec``,
    # the windows' start corrections (none unless ``starts``)]
    @property
    def starts(self) -> tuple:
        return self.loss_def.starts

    @property
    def size(self) -> int:
        return self.spec.size + self.num_windows * self.loss_def.n_start

    def split(self, z):
        """(physical-parameter vector, start corrections (windows, n_start)) of z."""
        z = jnp.asarray(z)
        if z.shape != (self.size,):
            raise ValueError(f"vector of length {z.shape} for a problem of {self.spec.size} parameters "
                             f"+ {self.num_windows}×{self.loss_def.n_start} start corrections = {self.size}")
        n = self.spec.size
        return z[:n], z[n:].reshape(self.num_windows, self.loss_def.n_start)

    def residuals(self, z):
        if not self.continuity:
            return losses.residuals(self.loss_def, self.spec.unpack, *self.split(z), self.windows, self.weights)
        x, d = self.split(z)
        r, ends = losses.residuals(self.loss_def, self.spec.unpack, x, d, self.windows, self.weights, ends=True)
        return jnp.concatenate([r, self._link_residuals(ends, d)])

    def _link_weights(self):
        k, j = self.links[:, 0], self.links[:, 1]
        w = np.asarray(self.weights)
        return self.continuity * w[k] * (w[j] > 0)

    def _link_residuals(self, ends, d):
        """(3P,) weighted position gaps: predicted end of window k − fitted start of window j."""
        k, j = self.links[:, 0], self.links[:, 1]
        start = self.windows[j, 0, 0:3] + self.loss_def.start_scale("pos") * d[j, 0:3]
        return (jnp.asarray(self._link_weights())[:, None] * (ends[k] - start)).reshape(-1)

    def residuals_and_jacobian(self, z):
        """(r, J): J a dense array without start corrections (or with continuity links), else an
        ``optim.BlockJacobian``."""
        x, d = self.split(z)
        if self.continuity:
            return self._linked_jacobian(x, d)
        r, Jx, Jd = losses.jacobian(self.loss_def, self.spec.unpack, x, d, self.windows, self.weights)
        if not self.starts:
            return r, np.asarray(Jx).reshape(-1, self.spec.size)
        return r, optim.BlockJacobian(r, Jx, Jd)

    def _linked_jacobian(self, x, d):
        """Dense (r, J) with the link rows: a link couples two windows' start corrections."""
        R, Jx, Jd = losses.jacobian(self.loss_def, self.spec.unpack, x, d, self.windows, self.weights, ends=True)
        W, nx, nl = self.num_windows, self.spec.size, self.loss_def.n_start
        m = 6 * self.loss_def.rows
        R, Jx, Jd = np.asarray(R).reshape(W, m + 3), np.asarray(Jx), np.asarray(Jd)
        k, j = self.links[:, 0], self.links[:, 1]
        P, wc = len(k), self._link_weights()
        J = np.zeros((W * m + 3 * P, self.size))
        J[: W * m, :nx] = Jx[:, :m].reshape(W * m, nx)
        rows = np.arange(W * m).reshape(W, m)
        for i in range(nl):  # block-diagonal start corrections
            J[rows, nx + np.arange(W)[:, None] * nl + i] = Jd[:, :m, i]
        lr = W * m + np.arange(3 * P).reshape(P, 3)
        J[lr, :nx] = wc[:, None, None] * Jx[k, m:]
        for i in range(nl):
            J[lr, (nx + k * nl + i)[:, None]] = wc[:, None] * Jd[k, m:, i]
        J[lr, nx + j[:, None] * nl + np.arange(3)[None, :]] -= wc[:, None] * self.loss_def.start_scale("pos")
        r = np.concatenate([R[:, :m].reshape(-1), np.asarray(self._link_residuals(R[:, m:], d))])
        return r, J

    def loss(self, z) -> float:
        r = self.residuals(z)
        return float(jnp.sum(r * r))

    def loss_and_grad(self, z):
        f, (gx, gd) = losses.loss_and_grad(self.loss_def, self.spec.unpack, *self.split(z), self.windows,
                                           self.weights)
        return f, jnp.concatenate([gx, gd.reshape(-1)])

    @property
    def num_windows(self) -> int:
        return int(self.windows.shape[0])

    def x0(self) -> np.ndarray:
        """The initial guess: ``spec``'s template, zero start corrections."""
        return np.concatenate([self.spec.pack(self.spec.template), np.zeros(self.size - self.spec.size)])

    def start_corrections(self, z) -> np.ndarray:
        """(windows, n_start) start corrections at z, physical units (length, length/s, rad, rad/s)."""
        d = np.asarray(self.split(z)[1])
        return d * np.repeat([self.loss_def.start_scale(g) for g in self.starts], 3)[None, :]

    def with_law(self, law) -> "Problem":
        """The same problem with another contact law (e.g. a smoothed one)."""
        model = dataclasses.replace(self.loss_def.model, law=law)
        return dataclasses.replace(self, loss_def=dataclasses.replace(self.loss_def, model=model))


def default_params(data: Trajectories, law) -> Params:
    """Initial guess from what the data file states about the body; flat ground at height 0."""
    from .. import shapes

    if data.vertices is not None and len(data.vertices) >= 4:
        V = np.asarray(data.vertices, dtype=float)
        mass = data.mass if data.mass is not None else 1.0
        body = shapes.convex_hull(V, mass)
        if data.inertia is not None:
            body = body.replace(inertia=jnp.asarray(data.inertia))
        # keep the file's vertex order and centre (the hull re-centres on the COM)
        body = body.replace(vertices=jnp.asarray(V), vertex_mask=jnp.ones(len(V)))
    else:
        body = shapes.box(0.1, data.mass or 0.37)
    return Params(body=body, ground=Ground.flat(3), law=law.init_params())


@dataclasses.dataclass
class FitResult:
    """Identified parameters. values: physical values by name. loss: mean squared residual
    (length² units) at ``x`` (the whole optimisation vector, start corrections included). rollouts: window simulations run (forward), gradient/Jacobian
    evaluations included (one per window each). history: per-iteration loss and values."""

    params: Params
    values: dict
    x: np.ndarray
    loss: float
    method: str
    iterations: int
    loss_evals: int
    grad_evals: int
    rollouts: int
    wall_time: float
    message: str
    history: list
    num_windows: int

    @classmethod
    def from_optim(cls, prob: "Problem", r: "optim.OptimResult") -> "FitResult":
        """The result of an optimiser run ``r`` on ``prob``'s vector: physical values, history,
        rollouts counted as one window simulation per window per loss and per Jacobian evaluation."""
        x = np.asarray(r.x)
        n = prob.spec.size
        hist = [{"iter": h["iter"], "loss": h["loss"], "time": h["time"], "values": prob.spec.flat_values(h["x"][:n])}
                for h in r.history]
        return cls(
            params=prob.spec.unpack(jnp.asarray(x[:n])), values=prob.spec.flat_values(x[:n]), x=x, loss=float(r.loss),
            method=r.method, iterations=r.iterations, loss_evals=r.loss_evals, grad_evals=r.grad_evals,
            rollouts=(r.loss_evals + r.grad_evals) * prob.num_windows, wall_time=r.wall_time,
            message=r.message, history=hist, num_windows=prob.num_windows,
        )

    @classmethod
    def at(cls, prob: "Problem", x, loss: float | None = None, message: str = "given point") -> "FitResult":
        """The point ``x`` of ``prob``'s vector as a result with no work done, e.g. to resume a
        polishing stage (``schedule.smooth_polish``, ``schedule.trim_polish``) from a stored end
        point. ``loss``: the hard loss at x if known (else evaluated here, not counted)."""
        x = np.asarray(x, float)
        n = prob.spec.size
        return cls(params=prob.spec.unpack(jnp.asarray(x[:n])), values=prob.spec.flat_values(x[:n]), x=x,
                   loss=float(prob.loss(x) if loss is None else loss), method="lm", iterations=0, loss_evals=0,
                   grad_evals=0, rollouts=0, wall_time=0.0, message=message, history=[], num_windows=prob.num_windows)

    def at_point_of(self, kept: "FitResult") -> "FitResult":
        """``kept``'s point (parameters, values, x, loss, message, history) with this result's work
        counters: a proposal that was run and then not taken (the polishing steps of ``schedule``)."""
        return dataclasses.replace(self, params=kept.params, values=kept.values, x=kept.x, loss=kept.loss,
                                   message=kept.message, history=kept.history)

    def after(self, earlier: "FitResult") -> "FitResult":
        """This fit (started where ``earlier`` stopped) with the work and history of both: the
        counters add up and the history continues ``earlier``'s iteration numbers."""
        return dataclasses.replace(
            self, iterations=earlier.iterations + self.iterations, loss_evals=earlier.loss_evals + self.loss_evals,
            grad_evals=earlier.grad_evals + self.grad_evals, rollouts=earlier.rollouts + self.rollouts,
            history=earlier.history + [dict(h, iter=h["iter"] + earlier.iterations) for h in self.history])

    def summary(self) -> dict:
        return {"method": self.method, "values": self.values, "loss": self.loss,
                "rms_residual": float(np.sqrt(self.loss)), "iterations": self.iterations,
                "loss_evals": self.loss_evals, "grad_evals": self.grad_evals, "rollouts": self.rollouts,
                "num_windows": self.num_windows, "wall_time_s": self.wall_time, "message": self.message}


def fit(prob: Problem, method: str = "lm", x0=None, *, progress: bool = False, max_iter: int | None = None,
        **options) -> FitResult:
    """Minimise the window loss of ``prob`` from ``x0`` (default: the problem's initial guess).

    A NaN loss raises ``optim.FitError`` whose ``.result`` is a ``FitResult`` with the best
    parameters found before it (never lost).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "nelder-mead" and prob.starts:
        raise ValueError(f"nelder-mead cannot fit the {prob.size} variables of per-window start corrections; "
                         "build the Problem without starts, or use lm/adam")
    x0 = prob.x0() if x0 is None else np.asarray(x0, dtype=float)
    prob.split(x0)  # checks the length
    bar = None
    if progress:
        from tqdm.auto import tqdm

        total = max_iter or {"lm": 50, "adam": 300, "nelder-mead": None}[method]
        bar = tqdm(total=total, desc=f"sysid {method}", unit="it")

    def cb(it, f, x):
        if bar is not None:
            bar.n = it
            bar.set_postfix(loss=f"{f:.3e}", refresh=False)
            bar.refresh()

    t0 = time.perf_counter()
    try:
        if method == "lm":
            r = optim.levenberg_marquardt(prob.residuals_and_jacobian, prob.residuals, x0,
                                          max_iter=max_iter or 50, callback=cb, **options)
        elif method == "adam":
            r = optim.adam(prob.loss_and_grad, x0, steps=max_iter or 300, callback=cb, **options)
        else:
            r = optim.nelder_mead(prob.loss, x0, max_evals=max_iter or 2000, callback=cb, **options)
    except optim.FitError as err:
        raise optim.FitError(str(err), FitResult.from_optim(prob, err.result)) from None
    finally:
        if bar is not None:
            bar.close()
    out = FitResult.from_optim(prob, r)
    out.wall_time = time.perf_counter() - t0
    return out


def errors(values: dict, truth: dict) -> dict:
    """Errors against known truth: relative for μ, ε, mass, inertia; absolute for the ground
    height; for vertices the worst relative vertex error max_k ‖v_k − v*_k‖ / ‖v*_k‖."""
    out = {}
    for k, v in values.items():
        if k not in truth:
            continue
        a, t = np.asarray(v, dtype=float), np.asarray(truth[k], dtype=float)
        if k == "ground":
            out[k] = {"abs": float(abs(a - t))}
        elif k == "vertices":
            rel = np.linalg.norm(a - t, axis=-1) / np.linalg.norm(t, axis=-1)
            out[k] = {"rel": float(rel.max()), "abs": float(np.abs(a - t).max())}
        elif k == "ground_normal":
            out[k] = {"angle_rad": float(np.arccos(np.clip(a @ t / np.linalg.norm(a) / np.linalg.norm(t), -1, 1)))}
        else:
            out[k] = {"rel": float(np.max(np.abs(a - t) / np.maximum(np.abs(t), 1e-12)))}
    return out


def within_tolerance(errs: dict, rel: float = 0.01, height_abs: float = 0.002) -> bool:
    ok = True
    for k, e in errs.items():
        if k == "ground":
            ok &= e["abs"] <= height_abs
        elif "rel" in e:
            ok &= e["rel"] <= rel
    return bool(ok)

