"""Optimisers on a parameter vector: Levenberg–Marquardt (residuals + Jacobian), Adam (optax,
loss + gradient) and Nelder–Mead (scipy, loss only) — the derivative-free baseline.

All three share one bookkeeping object, ``Tracker``: it counts evaluations, records the loss and
the parameters after every iteration (for the plots), keeps the best point seen, and turns a NaN
loss into ``FitError`` that carries the best parameters so far (they are never lost).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np


class FitError(RuntimeError):
    """A fit stopped on a bad value; ``.result`` holds the best parameters found so far."""

    def __init__(self, message: str, result: "OptimResult"):
        super().__init__(message)
        self.result = result


@dataclasses.dataclass
class OptimResult:
    x: np.ndarray  # best parameter vector
    loss: float  # its loss
    history: list  # per iteration: {"iter", "loss", "x", "time"}
    loss_evals: int  # forward-only loss/residual evaluations
    grad_evals: int  # gradient or Jacobian evaluations (each includes a forward pass)
    iterations: int
    wall_time: float
    message: str
    method: str


class Tracker:
    def __init__(self, x0, method: str, callback: Callable | None = None):
        self.best_x = np.array(x0, dtype=float)
        self.best_loss = np.inf
        self.history: list = []
        self.loss_evals = 0
        self.grad_evals = 0
        self.t0 = time.perf_counter()
        self.method = method
        self.callback = callback

    def seen(self, x, loss) -> None:
        if np.isfinite(loss) and loss < self.best_loss:
            self.best_loss = float(loss)
            self.best_x = np.array(x, dtype=float)

    def record(self, it: int, x, loss) -> None:
        self.history.append({"iter": it, "loss": float(loss), "x": np.array(x, dtype=float),
                             "time": time.perf_counter() - self.t0})
        if self.callback is not None:
            self.callback(it, float(loss), np.array(x, dtype=float))

    def result(self, it: int, message: str) -> OptimResult:
        return OptimResult(self.best_x, self.best_loss, self.history, self.loss_evals, self.grad_evals,
                           it, time.perf_counter() - self.t0, message, self.method)

    def fail(self, it: int, what: str, x) -> None:
        msg = (f"{self.method}: {what} at iteration {it} (parameters {np.round(np.asarray(x), 6).tolist()}); "
               f"stopped, best parameters so far kept (loss {self.best_loss:.6g}) in FitError.result")
        raise FitError(msg, self.result(it, msg))


class DenseJacobian:
    """Gauss–Newton pieces of a dense Jacobian J: gradient Jᵀr, diag(JᵀJ), damped solves."""

    def __init__(self, r, J):
        J = np.asarray(J)
        self.finite = bool(np.all(np.isfinite(J)))
        self.g = J.T @ r
        self.H = J.T @ J

    def diag(self):
        return np.diag(self.H).copy()

    def solve(self, damp):
        """The step s of (JᵀJ + diag(damp)) s = −Jᵀr."""
        return np.linalg.solve(self.H + np.diag(damp), -self.g)

    def curvature(self, s) -> float:
        return float(s @ self.H @ s)


class BlockJacobian:
    """A block-arrow Jacobian: every window w has residual rows r_w (m,) that depend on the
    shared variables x (n_g) through Jg[w] (m, n_g) and on its own local variables (n_l) through
    Jl[w] (m, n_l) only. The vector is [x, local_0, local_1, …]. A damped Gauss–Newton step is
    solved by eliminating the local blocks (Schur complement on the n_g shared variables):
    O(W·n_l³ + n_g³) instead of a dense (n_g + W·n_l)³ solve — as in bundle adjustment."""

    def __init__(self, r, Jg, Jl):
        Jg, Jl = np.asarray(Jg), np.asarray(Jl)
        W, m, _ = Jg.shape
        r = np.asarray(r).reshape(W, m)
        self.Jg, self.Jl = Jg, Jl
        self.finite = bool(np.all(np.isfinite(Jg)) and np.all(np.isfinite(Jl)))
        self.ng, self.nl, self.W = Jg.shape[2], Jl.shape[2], W
        self.A = np.einsum("wmi,wmj->ij", Jg, Jg)
        self.B = np.einsum("wmi,wmj->wij", Jg, Jl)
        self.C = np.einsum("wmi,wmj->wij", Jl, Jl)
        self.gg = np.einsum("wmi,wm->i", Jg, r)
        self.gl = np.einsum("wmi,wm->wi", Jl, r)
        self.g = np.concatenate([self.gg, self.gl.ravel()])

    def diag(self):
        return np.concatenate([np.diag(self.A), np.diagonal(self.C, axis1=1, axis2=2).ravel()])

    def solve(self, damp):
        dg, dl = damp[: self.ng], damp[self.ng:].reshape(self.W, self.nl)
        Cd = self.C + dl[:, :, None] * np.eye(self.nl)[None]
        rhs = np.concatenate([np.swapaxes(self.B, 1, 2), self.gl[:, :, None]], axis=2)  # (W, nl, ng+1)
        X = np.linalg.solve(Cd, rhs)
        CiBt, Cig = X[:, :, : self.ng], X[:, :, self.ng]
        S = self.A + np.diag(dg) - np.einsum("wij,wjk->ik", self.B, CiBt)
        sg = np.linalg.solve(S, -self.gg + np.einsum("wij,wj->i", self.B, Cig))
        sl = -Cig - np.einsum("wij,j->wi", CiBt, sg)
        return np.concatenate([sg, sl.ravel()])

    def curvature(self, s) -> float:
        sg, sl = s[: self.ng], s[self.ng:].reshape(self.W, self.nl)
        Js = np.einsum("wmi,i->wm", self.Jg, sg) + np.einsum("wmi,wi->wm", self.Jl, sl)
        return float(np.sum(Js * Js))


def levenberg_marquardt(res_jac: Callable, res: Callable, x0, *, max_iter: int = 50, ftol: float = 1e-10,
                        xtol: float = 1e-9, gtol: float = 1e-12, lam0: float = 1e-3, max_rejects: int = 12,
                        callback=None) -> OptimResult:
    """Damped Gauss–Newton with Marquardt's diagonal scaling and Nielsen's damping update.

    res_jac(x) -> (r, J) with J a dense array or a ``BlockJacobian``; res(x) -> r. Loss = ‖r‖².
    A trial step whose loss is NaN is rejected
    like any bad step (more damping); only a NaN at the start, or ``max_rejects`` rejections in
    a row of which the last is NaN, raise ``FitError``.
    """
    tr = Tracker(x0, "levenberg-marquardt", callback)
    x = np.array(x0, dtype=float)
    def gauss_newton(x):
        r, J = res_jac(x)
        r = np.asarray(r)
        return r, (J if isinstance(J, BlockJacobian) else DenseJacobian(r, J))

    r, J = gauss_newton(x)
    tr.grad_evals += 1
    f = float(r @ r)
    if not np.isfinite(f) or not J.finite:
        tr.fail(0, "loss or Jacobian is NaN/inf at the initial guess", x)
    tr.seen(x, f)
    tr.record(0, x, f)
    lam, nu = None, 2.0
    Dmax = None
    message = "max_iter reached"
    it = 0
    for it in range(1, max_iter + 1):
        g = J.g
        # Moré's scaling: the running maximum of diag(JᵀJ), floored, so a parameter whose column is
        # momentarily tiny (a vertex off the ground) cannot take a huge step.
        Dmax = J.diag() if Dmax is None else np.maximum(Dmax, J.diag())
        D = np.maximum(Dmax, 1e-6 * max(np.max(Dmax), 1e-300))
        if lam is None:
            lam = lam0 * float(np.max(D))
        if np.max(np.abs(g)) <= gtol * max(f, 1e-300) ** 0.5:
            message = "gradient below gtol"
            break
        accepted = False
        rejects = 0
        while not accepted:
            try:
                step = J.solve(lam * D)
            except np.linalg.LinAlgError:
                step = -g / (lam * D)
            xn = x + step
            rn = np.asarray(res(xn))
            tr.loss_evals += 1
            fn = float(rn @ rn)
            pred = -(2 * step @ g + J.curvature(step))  # predicted decrease of ‖r‖²
            rho = (f - fn) / pred if pred > 0 else -1.0
            if np.isfinite(fn) and rho > 1e-4:
                accepted = True
            else:
                rejects += 1
                lam *= nu
                nu *= 2.0
                if rejects >= max_rejects:
                    if not np.isfinite(fn):
                        tr.fail(it, f"loss became NaN/inf on every trial step ({rejects} in a row)", xn)
                    break
        if not accepted:
            message = f"no decrease after {max_rejects} damped trials (converged to the resolution of the loss)"
            break
        lam *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
        nu = 2.0
        df = f - fn
        x_old = x
        x, r, f = xn, rn, fn
        tr.seen(x, f)
        tr.record(it, x, f)
        if df <= ftol * f or np.linalg.norm(x - x_old) <= xtol * (np.linalg.norm(x) + xtol):
            message = "converged (ftol/xtol)"
            break
        r, J = gauss_newton(x)
        tr.grad_evals += 1
        if not J.finite:
            tr.fail(it, "Jacobian became NaN/inf", x)
    return tr.result(it, message)


def adam(loss_grad: Callable, x0, *, steps: int = 300, lr: float = 0.02, schedule: str = "cosine",
         callback=None) -> OptimResult:
    """optax Adam on loss_grad(x) -> (loss, grad); a cosine-decayed step size by default."""
    import optax

    tr = Tracker(x0, "adam", callback)
    sched = optax.cosine_decay_schedule(lr, steps, alpha=0.01) if schedule == "cosine" else lr
    opt = optax.adam(sched)
    x = np.array(x0, dtype=float)
    state = opt.init(x)
    it = 0
    for it in range(steps + 1):
        f, g = loss_grad(x)
        f, g = float(f), np.asarray(g)
        tr.grad_evals += 1
        if not np.isfinite(f) or not np.all(np.isfinite(g)):
            tr.fail(it, "loss or gradient became NaN/inf", x)
        tr.seen(x, f)
        tr.record(it, x, f)
        if it == steps:
            break
        upd, state = opt.update(g, state, x)
        x = np.asarray(optax.apply_updates(x, upd))
    return tr.result(it, f"{steps} Adam steps")


def nelder_mead(loss: Callable, x0, *, max_evals: int = 2000, initial_step: float = 0.1, xatol: float = 1e-6,
                fatol: float = 1e-14, callback=None) -> OptimResult:
    """scipy Nelder–Mead (adaptive) on the same loss; a NaN loss stops it with ``FitError``."""
    from scipy.optimize import minimize

    tr = Tracker(x0, "nelder-mead", callback)
    x0 = np.array(x0, dtype=float)
    n = len(x0)
    simplex = np.vstack([x0, x0 + initial_step * np.eye(n)])
    state = {"it": 0}

    def f(x):
        v = float(loss(x))
        tr.loss_evals += 1
        if not np.isfinite(v):
            tr.fail(state["it"], "loss became NaN/inf", x)
        tr.seen(x, v)
        return v

    def cb(xk):
        state["it"] += 1
        tr.record(state["it"], xk, tr.best_loss)

    f0 = f(x0)
    tr.record(0, x0, f0)
    out = minimize(f, x0, method="Nelder-Mead", callback=cb,
                   options={"maxfev": max_evals, "initial_simplex": simplex, "xatol": xatol,
                            "fatol": fatol, "adaptive": True})
    return tr.result(state["it"], str(out.message))


def smoothed_least_squares(res: Callable, res_jac: Callable, size: int, sigma: float, pairs: int = 4,
                           seed: int = 0) -> tuple[Callable, Callable]:
    """Oracles ``(res_s, res_jac_s)`` of the sample-average smoothed least-squares problem

        L_σ(x) ≈ (1 / 2N) Σᵢ ‖r(x + σzᵢ)‖² + ‖r(x − σzᵢ)‖²,   zᵢ ~ N(0, I) drawn once (``seed``),

    for ``levenberg_marquardt``: the residuals of the 2N perturbed copies stacked (each scaled by
    1/√2N), and their exact Jacobians stacked the same way. The perturbations touch the first
    ``size`` entries of x only (the physical parameters; per-window start corrections are shared
    by the copies). Because the perturbations are fixed (common random numbers), L_σ is a
    deterministic sum of squares, so LM's acceptance test sees the smoothed loss: where the hard
    loss has minima at a scale well below σ (a contact-mode flip per window; docs/gradients.md),
    LM on L_σ can step over them, which no smoothed *derivative* can do while steps are accepted on
    the hard loss. With N fixed draws the fine ripples are averaged down (about as 1/√2N for
    ripples much finer than σ), not removed as by the exact Gaussian average. L_σ's minimiser is
    biased by O(σ²), so a smoothed stage is followed by an unsmoothed one. Cost: 2N rollouts per
    window per evaluation. ``res_jac`` may return a dense
    Jacobian or a ``BlockJacobian`` (each window's rows of the copies stay that window's rows)."""
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1, got {pairs}")
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be positive and finite, got {sigma}")
    z = np.random.default_rng(seed).normal(size=(pairs, size))
    offsets = np.concatenate([z, -z]) * sigma
    c = 1.0 / np.sqrt(len(offsets))

    def shifted(x, o):
        x = np.array(x, dtype=float)
        x[:size] += o
        return x

    def res_s(x):
        return c * np.concatenate([np.asarray(res(shifted(x, o))) for o in offsets])

    def res_jac_s(x):
        out = [res_jac(shifted(x, o)) for o in offsets]
        if isinstance(out[0][1], BlockJacobian):
            W = out[0][1].W
            r = np.concatenate([np.asarray(ri).reshape(W, -1) for ri, _ in out], axis=1)
            Jg = np.concatenate([J.Jg for _, J in out], axis=1)
            Jl = np.concatenate([J.Jl for _, J in out], axis=1)
            # rows grouped window by window (res_s lists them copy by copy: the same residuals in
            # another order, which levenberg_marquardt, using res only for the loss, never sees)
            return c * r.reshape(-1), BlockJacobian(c * r.reshape(-1), c * Jg, c * Jl)
        return (c * np.concatenate([np.asarray(ri) for ri, _ in out]),
                c * np.concatenate([np.asarray(J) for _, J in out]))

    return res_s, res_jac_s
