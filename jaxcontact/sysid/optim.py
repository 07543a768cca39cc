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


def levenberg_marquardt(res_jac: Callable, res: Callable, x0, *, max_iter: int = 50, ftol: float = 1e-10,
                        xtol: float = 1e-9, gtol: float = 1e-12, lam0: float = 1e-3, max_rejects: int = 12,
                        callback=None) -> OptimResult:
    """Damped Gauss–Newton with Marquardt's diagonal scaling and Nielsen's damping update.

    res_jac(x) -> (r, J); res(x) -> r. Loss = ‖r‖². A trial step whose loss is NaN is rejected
    like any bad step (more damping); only a NaN at the start, or ``max_rejects`` rejections in
    a row of which the last is NaN, raise ``FitError``.
    """
    tr = Tracker(x0, "levenberg-marquardt", callback)
    x = np.array(x0, dtype=float)
    r, J = (np.asarray(a) for a in res_jac(x))
    tr.grad_evals += 1
    f = float(r @ r)
    if not np.isfinite(f) or not np.all(np.isfinite(J)):
        tr.fail(0, "loss or Jacobian is NaN/inf at the initial guess", x)
    tr.seen(x, f)
    tr.record(0, x, f)
    lam, nu = None, 2.0
    Dmax = None
    message = "max_iter reached"
    it = 0
    for it in range(1, max_iter + 1):
        g = J.T @ r
        H = J.T @ J
        # Moré's scaling: the running maximum of diag(JᵀJ), floored, so a parameter whose column is
        # momentarily tiny (a vertex off the ground) cannot take a huge step.
        Dmax = np.diag(H).copy() if Dmax is None else np.maximum(Dmax, np.diag(H))
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
                step = np.linalg.solve(H + lam * np.diag(D), -g)
            except np.linalg.LinAlgError:
                step = -g / (lam * D)
            xn = x + step
            rn = np.asarray(res(xn))
            tr.loss_evals += 1
            fn = float(rn @ rn)
            pred = -(2 * step @ g + step @ H @ step)  # predicted decrease of ‖r‖²
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
        rj = res_jac(x)
        r, J = (np.asarray(a) for a in rj)
        tr.grad_evals += 1
        if not np.all(np.isfinite(J)):
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
