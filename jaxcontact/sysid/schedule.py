"""Staged fits: a documented schedule of stages, each warm-started from the last.

    from jaxcontact import sysid
    out = sysid.staged_fit(data, params0, law, sysid.DEFAULT_SCHEDULE)
    out["result"].values, out["stages"], out["rollouts"], out["wall_time_s"]

A stage is one of

* ``Stage("geometry", names=("ground", "vertices"))`` — the kinematic contact-geometry fit
  (``sysid.kinematic``): supported samples touch the ground, no sample penetrates it. No
  rollouts; it takes the height and the vertices from "anywhere" to within about a millimetre,
  where the rollout loss becomes informative (below the true ground the rollout loss has no
  height gradient; with vertices millimetres off, window starts penetrate and LM stalls);
* ``Stage("lm" | "adam" | "nelder-mead", names, window=…, max_iter=…, kappa=…, trim=…)`` — a fit
  of the windowed rollout loss (``Problem``/``fit``). ``kappa > 0`` runs it on
  ``SmoothedCoulomb(kappa)`` instead of the given law (a continuation stage); ``trim`` drops that
  fraction of windows with the largest residual at the stage's start before fitting (windows
  whose contact mode — a bounce, which corner lands — differs from the data's at the current
  parameters; with exact data they are a few windows near a switch, and dropping them leaves a
  loss that is smooth around the truth, so LM reaches round-off).

Why this order (docs/sysid.md): geometry first, without dynamics; then friction and restitution
with the geometry fixed (two parameters, cheap, well conditioned); then everything jointly; then
a trimmed joint polish.
"""

from __future__ import annotations

import dataclasses
import time

import jax.numpy as jnp
import numpy as np

from . import kinematic
from .core import Problem, errors, fit
from .params import with_scalar


@dataclasses.dataclass(frozen=True)
class Stage:
    kind: str  # "geometry", "lm", "adam", "nelder-mead"
    names: tuple = ("mu", "restitution", "ground", "vertices")
    window: int = 5
    max_iter: int = 30
    kappa: float = 0.0
    trim: float = 0.0
    starts: tuple = ()  # start-state groups fitted per window (Problem.build's ``starts``)
    grid: int = 0  # > 0: first evaluate the loss on a grid of this many values per parameter

    def label(self) -> str:
        names = "all" if len(self.names) >= 4 else "+".join(self.names)
        extra = (f" κ={self.kappa:g}" if self.kappa else "") + (f" trim {self.trim:.0%}" if self.trim else "")
        extra += f" starts {'+'.join(self.starts)}" if self.starts else ""
        extra += f" grid {self.grid}" if self.grid else ""
        return f"{self.kind} {names}{extra}"


def known_geometry_schedule(max_iter: int = 30) -> tuple:
    """The schedule when the vertices are known: kinematic height, LM on μ, ε and the height,
    a trimmed LM polish (one compiled Jacobian)."""
    return (Stage("geometry", ("ground",), max_iter=50),
            Stage("lm", ("mu", "restitution", "ground"), max_iter=max_iter),
            Stage("lm", ("mu", "restitution", "ground"), max_iter=max_iter, trim=0.1))


DEFAULT_SCHEDULE = (
    Stage("geometry", ("ground", "vertices"), max_iter=100),
    Stage("lm", ("mu", "restitution"), max_iter=15, grid=6, starts=("pos",)),
    Stage("lm", ("mu", "restitution", "ground", "vertices"), max_iter=60, starts=("pos",)),
    Stage("lm", ("mu", "restitution", "ground", "vertices"), max_iter=30, trim=0.1, starts=("pos",)),
)


GRID_RANGES = {"mu": (0.05, 1.0, "log"), "restitution": (0.05, 0.8, "lin")}  # ε off its bound (sigmoid)


def grid_start(prob: Problem, x0, points: int) -> tuple[np.ndarray, int]:
    """The best of x0 and a grid of ``points`` values per fitted scalar (μ log-spaced in
    [0.05, 1], ε in [0.05, 0.8] — not at its bound, where the sigmoid has no slope; other parameters and start corrections held at x0): a cheap global
    look before a local method, for the few parameters whose loss is multimodal (a wrong ε makes
    other bounces; LM from a bad ε settles in a basin of those). Returns (x, loss evaluations)."""
    names = prob.spec.names
    bad = [n for n in names if n not in GRID_RANGES]
    if bad:
        raise ValueError(f"grid search covers {', '.join(GRID_RANGES)}; not {', '.join(bad)}")
    axes = []
    for n in names:
        lo, hi, kind = GRID_RANGES[n]
        axes.append(np.geomspace(lo, hi, points) if kind == "log" else np.linspace(lo, hi, points))
    best_x, best_f, evals = np.asarray(x0, float), prob.loss(x0), 1
    n = prob.spec.size
    p0 = prob.spec.unpack(np.asarray(x0[:n]))
    for combo in np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(names)):
        p = p0
        for name, v in zip(names, combo):
            p = with_scalar(p, name, v)
        x = np.array(x0, float)
        x[:n] = prob.spec.pack(p)
        f = prob.loss(x)
        evals += 1
        if np.isfinite(f) and f < best_f:
            best_x, best_f = x, f
    return best_x, evals


def trim_windows(prob: Problem, x, fraction: float) -> tuple[Problem, int]:
    """``prob`` with zero weight on the ``fraction`` of windows with the largest squared residual
    at x (the shapes stay, so the compiled loss and Jacobian are reused)."""
    if fraction <= 0:
        return prob, 0
    live = np.asarray(prob.weights) > 0
    r = np.asarray(prob.residuals(x)).reshape(prob.num_windows, -1)
    per = np.where(live, np.sum(r * r, axis=1), -np.inf)
    k = int(np.floor(fraction * live.sum()))
    if k == 0:
        return prob, 0
    keep = live.copy()
    keep[np.argsort(per)[-k:]] = False
    w = np.where(keep, 1.0 / np.sqrt(int(keep.sum()) * r.shape[1]), 0.0)
    return dataclasses.replace(prob, weights=jnp.asarray(w)), k


def staged_fit(data, params0, law, schedule=DEFAULT_SCHEDULE, *, substeps: int = 1, stride=None,
               method: str | None = None, progress: bool = False, log=None, contact_margin=None) -> dict:
    """Run ``schedule`` from ``params0``. ``method`` overrides the optimiser of every rollout
    stage (e.g. "nelder-mead" for the derivative-free baseline on the same stages and loss;
    a stage's ``max_iter`` is then its evaluation budget ×50). Returns {"result" (last
    ``FitResult``), "params", "stages" (per-stage summaries, errors against ``data.truth``),
    "histories", "rollouts", "wall_time_s"}."""
    from ..laws.smoothed import SmoothedCoulomb

    params = params0
    stages, histories, rollouts, wall, res = [], [], 0, 0.0, None
    prev = None  # (stage, Problem) of the last rollout stage
    for st in schedule:
        if st.kind == "geometry":
            g = kinematic.fit_geometry(data, params, st.names, max_iter=st.max_iter)
            prev = None
            params = g["params"].replace(law=params.law)
            wall += g["wall_time_s"]
            summ = {"stage": st.label(), "names": list(st.names), "kind": st.kind, "values": g["values"],
                    "loss": g["loss"], "supported_samples": g["supported"], "iterations": g["iterations"],
                    "rollouts": 0, "wall_time_s": g["wall_time_s"], "message": g["message"]}
            hist = g["history"]
        else:
            kind = method or st.kind
            if kind == "nelder-mead":  # derivative-free: no per-window variables
                st = dataclasses.replace(st, starts=())
            lw = SmoothedCoulomb(st.kappa) if st.kappa > 0 else law
            key = lambda s: (s.names, s.window, s.kappa, tuple(s.starts))
            same = prev is not None and key(prev[0]) == key(st)
            if same:  # same fitted set and loss as the last stage: reuse its compiled Problem
                prob, x0 = prev[1], res.x
            else:
                prob = Problem.build(data, st.names, params, law=lw, window=st.window, substeps=substeps,
                                     stride=stride, contact_margin=contact_margin, starts=st.starts)
                x0 = prob.x0()
                old = prev[1] if prev is not None else None
                if (old is not None and prob.starts and old.starts == prob.starts
                        and old.windows.shape == prob.windows.shape and np.array_equal(old.where, prob.where)):
                    x0[prob.spec.size:] = res.x[old.spec.size:]  # same windows: keep their start corrections
            t0 = time.perf_counter()
            grid_evals = 0
            if st.grid:
                x0, grid_evals = grid_start(prob, x0, st.grid)
            prob, dropped = trim_windows(prob, x0, st.trim)
            prev = (st, prob)
            budget = st.max_iter * 50 if kind == "nelder-mead" and st.kind != "nelder-mead" else st.max_iter
            res = fit(prob, kind, x0, progress=progress, max_iter=budget)
            params = res.params  # the smoothed law has the hard law's parameter pytree
            t = time.perf_counter() - t0
            wall += t
            summ = {"stage": st.label(), "names": list(st.names), "kind": kind, "kappa": st.kappa,
                    "windows_dropped": dropped, **res.summary(), "wall_time_s": t}
            if grid_evals:
                summ["grid_loss_evals"] = grid_evals
                summ["rollouts"] += grid_evals * prob.num_windows
            rollouts += summ["rollouts"]
            hist = res.history
        if data.truth:
            summ["errors"] = errors(summ["values"], data.truth)
        stages.append(summ)
        histories.append((st.label(), hist))
        if log:
            log(f"  {st.label()}: loss {summ['loss']:.3e}, {summ['iterations']} it, {summ['wall_time_s']:.1f} s, "
                f"{summ.get('errors', '')}")
    return {"result": res, "params": params, "stages": stages, "histories": histories, "rollouts": rollouts,
            "wall_time_s": wall}
