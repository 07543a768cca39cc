"""Training of the dacm classifiers / regressors and the PDD regressors (Flax + optax), and
checkpoints.

Per patch type: the classifier (cross-entropy, 3 classes) on all instances of that type; the
regressor (MSE on the normalised friction wrench) on the instances labelled dynamic; the PDD
regressor (MSE on the normalised full wrench) on all instances. PDD gets 50 % more data, as in
the paper: dacm trains on the first 2/3 of the throws of the data file, PDD on all of them.
A held-out 10 % of each training set gives the reported validation accuracy / R².

A checkpoint is a directory with ``meta.json`` (shape, dimensions, hyper-parameters, data
summary, training report, the SHA-256 of each parameter file, the training status) and
``dacm.msgpack`` / ``pdd.msgpack`` (Flax-serialised law params), written and verified by
``jaxcontact.checkpoint``.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization

from . import features as F
from .law import PATCH_KEYS, DACMLaw, PDDLaw
from .networks import MLP, HyperParams, NetConfig
from .recipes import total_budget

CKPT_FORMAT = "jaxcontact.dacm.checkpoint/2"  # /2: SHA-256 of each file, training status
CKPT_FORMAT_V1 = "jaxcontact.dacm.checkpoint/1"  # no checksums: refused


def _stats(x, y):
    xm, xs = x.mean(0), x.std(0)
    xs = np.where(xs > 1e-6, xs, 1.0)
    if y is None or len(y) == 0:
        ym, ys = np.zeros(0 if y is None else y.shape[1]), np.ones(0 if y is None else y.shape[1])
    else:
        ym, ys = y.mean(0), y.std(0)
        ys = np.where(ys > 1e-9, ys, 1.0)
    return dict(x_mean=xm, x_std=xs, x_min=x.min(0), x_max=x.max(0), y_mean=ym, y_std=ys)


def _loss(net, task, v, xb, yb, wb, k):
    pred = net.apply(v, xb, deterministic=False, rngs={"dropout": k})
    if task == "classify":
        return jnp.mean(wb * optax.softmax_cross_entropy_with_integer_labels(pred, yb))
    return jnp.mean(wb[:, None] * (pred - yb) ** 2)


@functools.partial(jax.jit, static_argnames=("net", "task", "lr", "bs", "nb"))
def _epoch(v, s, key, x, y, wts, *, net, task, lr, bs, nb):
    """One epoch of minibatch Adam: a ``lax.scan`` over ``nb`` batches of ``bs`` from a random
    permutation. Module level with the data as arguments, so every ``fit`` of the same network
    and data shapes reuses one compiled program (and the persistent compilation cache sees the
    same program across processes)."""
    opt = optax.adam(lr)
    kp, kd = jax.random.split(key)
    perm = jax.random.permutation(kp, x.shape[0])[: nb * bs].reshape(nb, bs)

    def step(c, inp):
        v, s = c
        idx, k = inp
        l, g = jax.value_and_grad(lambda v_: _loss(net, task, v_, x[idx], y[idx], wts[idx], k))(v)
        upd, s = opt.update(g, s, v)
        return (optax.apply_updates(v, upd), s), l

    (v, s), ls = jax.lax.scan(step, (v, s), (perm, jax.random.split(kd, nb)))
    return v, s, ls.mean()


@functools.partial(jax.jit, static_argnames=("net", "task"))
def _val_loss(v, xv, yv, wv, *, net, task):
    pred = net.apply(v, xv)
    if task == "classify":  # error rate (cross-entropy only breaks ties): overconfident
        # logits on a few errors raise the loss long after the accuracy has stopped rising
        ce = optax.softmax_cross_entropy_with_integer_labels(pred, yv).mean()
        return jnp.mean(pred.argmax(-1) != yv) + 1e-3 * ce
    return jnp.mean(wv[:, None] * (pred - yv) ** 2)


def fit(cfg: NetConfig, x, y, out: int, task: str, seed: int, time_limit: float | None = None,
        weights=None, val=None, patience: int | None = None, bar=None):
    """Train one MLP; x normalised (N, F) float32; y int labels (classify) or normalised (N, out).
    weights: optional per-sample loss weights (N,) (normalised to mean 1). val: optional (x, y) or
    (x, y, weights) validation set (held-out throws; its loss weighted alike): with ``patience``, training stops after that many epochs without a better
    validation loss and the best epoch's weights are returned (early stopping).
    Returns (variables, report). Minibatch Adam, one jitted ``lax.scan`` per epoch. Ctrl-C stops
    the epochs (report ``stopped_by`` "interrupted") and returns the weights reached (with
    ``patience``, the best epoch's)."""
    net = MLP(tuple(cfg.hidden), out, cfg.dropout)
    key = jax.random.PRNGKey(seed)
    key, k0 = jax.random.split(key)
    x = jnp.asarray(x, jnp.float32)
    y = jnp.asarray(y, jnp.int32 if task == "classify" else jnp.float32)
    wts = jnp.ones(x.shape[0], jnp.float32) if weights is None else jnp.asarray(weights / np.mean(weights), jnp.float32)
    variables = net.init(k0, x[:1])
    state = optax.adam(cfg.lr).init(variables)
    n = x.shape[0]
    bs = max(1, min(cfg.batch, n))
    nb = max(1, n // bs)
    epoch = functools.partial(_epoch, x=x, y=y, wts=wts, net=net, task=task, lr=float(cfg.lr), bs=bs, nb=nb)

    if val is not None and len(val[0]):
        xv = jnp.asarray(val[0], jnp.float32)
        yv = jnp.asarray(val[1], jnp.int32 if task == "classify" else jnp.float32)
        wv = jnp.ones(xv.shape[0], jnp.float32) if len(val) < 3 or val[2] is None else \
            jnp.asarray(val[2] / np.mean(val[2]), jnp.float32)
        val_loss = functools.partial(_val_loss, xv=xv, yv=yv, wv=wv, net=net, task=task)
    else:
        val_loss = None
    t0 = time.perf_counter()
    losses = []
    done = 0
    best = (np.inf, variables, 0)
    stopped = "epochs"
    first = None
    try:
        for e in range(cfg.epochs):
            key, ke = jax.random.split(key)
            new_variables, state, l = epoch(variables, state, ke)
            variables = new_variables  # only a finished epoch counts (Ctrl-C may cut one short)
            losses.append(float(l))
            done = e + 1
            if first is None:
                first = time.perf_counter() - t0  # compilation + one epoch
            if val_loss is not None:
                vl = float(val_loss(variables))
                if bar is not None:
                    bar.set_postfix(val=f"{vl:.3g}", best_epoch=best[2] if vl >= best[0] else done, refresh=False)
                if vl < best[0]:
                    best = (vl, variables, done)
                elif patience is not None and done - best[2] >= patience:
                    stopped = "early_stopping"
                    break
            if bar is not None:
                bar.update(1)
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                stopped = "time_limit"
                break
    except KeyboardInterrupt:  # Ctrl-C: keep what was trained (train() marks the checkpoint interrupted)
        stopped = "interrupted"
    rep = {"samples": int(n), "epochs_run": done, "epochs_asked": cfg.epochs, "stopped_by": stopped,
           "final_loss": losses[-1] if losses else None, "seconds": round(time.perf_counter() - t0, 2),
           "first_epoch_seconds": None if first is None else round(first, 2)}
    if val_loss is not None:
        rep["best_val_loss"], rep["best_epoch"] = best[0], best[2]
        if patience is not None:  # early stopping returns the best epoch's weights
            variables = best[1]
    return variables, rep


@functools.partial(jax.jit, static_argnames=("hidden", "out"))
def _apply(variables, xn, *, hidden, out):
    return MLP(hidden, out).apply(variables, xn)


def predict(hidden, out, variables, xn):
    """The MLP's outputs for ``xn``: one jitted program per network and input shape (run eagerly,
    every layer's matmul, bias add and ReLU compiled a program of its own per shape)."""
    return np.asarray(_apply(variables, jnp.asarray(xn, jnp.float32), hidden=tuple(hidden), out=int(out)))


def r2(pred, true):
    sst = np.sum((true - true.mean(0)) ** 2)
    return float(1.0 - np.sum((pred - true) ** 2) / sst) if sst > 0 else float("nan")


def _split(throw, seed, frac=0.1):
    """(train, validation) indices with the validation set made of whole held-out throws
    (~``frac`` of them): consecutive steps of one throw are nearly identical, so an instance-level
    split would score memorisation, not generalisation to new throws."""
    throw = np.asarray(throw)
    ids = np.unique(throw)
    nv = int(round(frac * len(ids))) if len(ids) >= 5 else 0
    held = np.random.default_rng(seed).permutation(ids)[:nv]
    va = np.isin(throw, held)
    return np.where(~va)[0], np.where(va)[0]


def subsample_rest(data: dict, max_per_throw: int) -> np.ndarray:
    """Mask keeping at most ``max_per_throw`` instances per throw of a body resting on a face
    (3D) / line (2D) — labelled static with a free patch velocity below 0.05 m/s (the resting
    steps, hundreds per throw, nearly identical) — and every other instance."""
    dim = int(data["dim"])
    full = 3 if dim == 3 else 2
    vc = data["x"][:, -1 - dim:-1]
    rest = (data["kind"] == full) & (data["label"] == F.STATIC) & (np.linalg.norm(vc, axis=1) < 0.05)
    keep = ~rest
    for t in np.unique(data["throw"][rest]):
        idx = np.where(rest & (data["throw"] == t))[0]
        keep[idx[:: max(1, int(np.ceil(len(idx) / max_per_throw)))]] = True
    return keep


def subsample_steady(data: dict, max_per_throw: int) -> np.ndarray:
    """Mask keeping at most ``max_per_throw`` instances per throw of steady sliding — dynamic
    instances of the full patch (face 3D / line 2D) whose reference normal impulse p_n⁰ is within
    10 % of the gravity step (the median p_n⁰ of those instances) — and every other instance
    (the impacts among them: a small share of the face instances that carries most of the friction
    impulse error; docs/dacm.md, "Diagnosis", item 3)."""
    dim = int(data["dim"])
    full = 3 if dim == 3 else 2
    cand = (data["kind"] == full) & (data["label"] == F.DYNAMIC)
    keep = np.ones(len(cand), bool)
    if not cand.any():
        return keep
    pn0 = data["pn0"]
    g = np.median(pn0[cand])
    steady = cand & (np.abs(pn0 - g) <= 0.1 * g)
    keep &= ~steady
    for t in np.unique(data["throw"][steady]):
        idx = np.where(steady & (data["throw"] == t))[0]
        keep[idx[:: max(1, int(np.ceil(len(idx) / max_per_throw)))]] = True
    return keep


def subsample_mask(data: dict, max_rest_per_throw: int | None, max_steady_per_throw: int | None) -> np.ndarray:
    """Both subsamplings at once (resting and steady-sliding instances are disjoint sets)."""
    keep = np.ones(len(data["x"]), bool)
    if max_rest_per_throw is not None:
        keep &= subsample_rest(data, max_rest_per_throw)
    if max_steady_per_throw is not None:
        keep &= subsample_steady(data, max_steady_per_throw)
    return keep


REGRESSOR_WEIGHTS = ("uniform", "pn0")


def _cost(samples: int, cfg: NetConfig, n_in: int, n_out: int) -> float:
    """Relative cost of a network at its epoch cap: samples × epochs × weights per sample."""
    dims = (n_in,) + tuple(cfg.hidden) + (n_out,)
    return float(samples) * cfg.epochs * sum(a * b for a, b in zip(dims[:-1], dims[1:]))


class _Schedule:
    """Per-network time limits from a total budget, progress bars and time estimates.

    jobs: {(patch, network): (samples, NetConfig, inputs, outputs)} in training order. The budget
    left is shared among the networks still to train in proportion to their cost at the epoch cap
    (``_cost``); the estimate of the time left uses the seconds per unit cost measured so far and
    the share of the epoch cap the finished networks used (early stopping)."""

    def __init__(self, jobs, budget, time_limit, log, progress):
        self.cost = {k: _cost(*v) for k, v in jobs.items()}
        self.epochs = {k: v[1].epochs for k, v in jobs.items()}
        self.first = []
        self.todo = list(jobs)
        self.budget, self.time_limit, self.log, self.progress = budget, time_limit, log, progress
        self.t0 = time.perf_counter()
        self.spent_cost = 0.0  # cost units (at the epoch cap) of the finished networks
        self.used_cost = 0.0  # cost units actually run (epochs_run / epochs_cap)
        self.seconds = 0.0
        self._rep = None
        if progress:
            b = "off" if budget is None else f"{budget:.0f} s"
            log(f"training {len(jobs)} networks; time budget {b}" +
                ("" if time_limit is None else f", at most {time_limit:.0f} s per network"))

    def elapsed(self):
        return time.perf_counter() - self.t0

    def overhead(self):
        """Seconds of a network's first epoch (mostly compilation), measured so far (5 s before)."""
        return float(np.mean(self.first)) if self.first else 5.0

    def limit(self, key):
        """Seconds for network ``key``: its own first-epoch overhead plus a share of the time left
        in the budget (less one overhead per network still to train) — its share of the cost at
        the epoch caps, but at least an equal share (cheap networks stop early on their own and
        hand the rest to the next ones; the last network gets what is left)."""
        lim = self.time_limit
        if self.budget is not None:
            c0 = self.overhead()
            left = max(self.budget - self.elapsed() - c0 * len(self.todo), 0.0)
            total = sum(self.cost[k] for k in self.todo) or 1.0
            share = c0 + left * max(self.cost[key] / total, 1.0 / len(self.todo))
            lim = share if lim is None else min(lim, share)
        return lim

    def report(self, rep):
        self._rep = rep

    def skip(self, key):
        if key in self.todo:
            self.todo.remove(key)

    def estimate(self):
        """(expected, at most) seconds left, or None before any network finished."""
        if self.spent_cost <= 0 or self.used_cost <= 0:
            return None
        rate = self.seconds / self.used_cost  # seconds per cost unit run
        frac = self.used_cost / self.spent_cost  # share of the epoch caps used (early stopping)
        cap = sum(self.cost[k] for k in self.todo) * rate
        if self.budget is not None:
            cap = min(cap, max(self.budget - self.elapsed(), 0.0))
        return min(cap, cap * frac if frac > 0 else cap), cap

    class _Run:
        def __init__(self, sched, key):
            self.s, self.key = sched, key

        def __enter__(self):
            s = self.s
            lim = s.limit(self.key)
            self.bar = None
            if s.progress:
                from tqdm.auto import tqdm

                desc = f"{self.key[0]} {self.key[1]}" + ("" if lim is None else f" (≤{lim:.0f} s)")
                self.bar = tqdm(total=s.epochs[self.key], desc=desc, unit="epoch", leave=False,
                                dynamic_ncols=True, file=sys.stderr)
            self.t = time.perf_counter()
            return lim, self.bar

        def __exit__(self, *exc):
            s = self.s
            if self.bar is not None:
                self.bar.close()
            if exc[0] is not None:
                return False
            sec = time.perf_counter() - self.t
            rep, s._rep = s._rep or {}, None
            asked = max(int(rep.get("epochs_asked", 1)), 1)
            run = int(rep.get("epochs_run", asked))
            c = s.cost[self.key]
            s.spent_cost += c
            s.used_cost += c * run / asked
            s.seconds += sec
            if rep.get("first_epoch_seconds") is not None:
                s.first.append(float(rep["first_epoch_seconds"]))
            s.skip(self.key)
            if s.progress:
                est = s.estimate()
                left = "" if est is None or not s.todo else \
                    f"; estimated ~{est[0]:.0f} s left (at most {est[1]:.0f} s)"
                s.log(f"{self.key[0]} {self.key[1]}: {run} epochs in {sec:.1f} s "
                      f"({rep.get('stopped_by', '?')}); training {s.elapsed():.0f} s so far{left}")
            return False

    def run(self, key):
        return self._Run(self, key)


def train(data: dict, hp: HyperParams | None = None, seed: int = 0, time_limit: float | None = None,
          log=print, friction_target: str = "absolute", max_rest_per_throw: int | None = None,
          inputs: str = "paper", max_steady_per_throw: int | None = None, patience: int | None = None,
          friction_head: str = "plain", regressor_weight: str = "uniform", time_budget: float | None = None,
          time_budget_per_kilo: float | None = None, progress: bool = False):
    """Train dacm and PDD on a dataset (``data.load``). Returns (dacm params, pdd params, meta).

    time_limit: seconds per network (epochs stop early when exceeded; the report says so).
    time_budget: seconds for all nine (3D) networks together, shared among the networks still to
    train in proportion to their cost at the epoch cap (time a network does not use goes to the
    next ones); a network stops at the smaller of its share and ``time_limit``.
    Ctrl-C stops the network being trained (its weights so far are kept, the best epoch's with
    ``patience``); the networks after it keep their initial weights, and
    ``checkpoint.TrainingInterrupted`` is raised with ``partial`` = (dacm params, pdd params, meta),
    ``meta["interrupted"]`` saying where it stopped and which networks are untrained.
    time_budget_per_kilo: seconds added to ``time_budget`` per 1 000 training instances (counted
    after the subsampling), so the budget grows with the data (``recipes.total_budget``).
    progress: tqdm bars per network (stderr) and time estimates through ``log``.
    friction_target: "absolute" (the paper: p_f) or "ratio" (p_f / p_n⁰, see ``law``).
    max_rest_per_throw: keep at most this many resting instances per throw (None: all).
    inputs: "paper", "physics", "both" or "coulomb" (``features.INPUTS``) for dacm's networks (PDD: paper).
    max_steady_per_throw: keep at most this many steady-sliding instances per throw (None: all).
    patience: early stopping on held-out throws (None: run the epochs / time limit).
    friction_head: "plain" (the paper) or "residual" (fitted sliding-Coulomb term + network,
    ``features.coulomb_head``; needs inputs="coulomb" and friction_target="ratio").
    regressor_weight: "uniform" (the paper) or "pn0": each dynamic instance's squared error in the
    dacm regressor's loss (training and validation) weighted by its reference normal impulse p_n⁰
    (floored at ``features.RATIO_FLOOR``), so an impact's friction counts by the impulse it carries
    instead of as one of the thousands of steady-sliding steps (needs friction_target="ratio": the
    ratio error times p_n⁰ is the impulse error)."""
    dim = int(data["dim"])
    if inputs not in F.INPUTS:
        raise ValueError(f"inputs must be one of {F.INPUTS}, got {inputs!r}")
    F.check_friction_head(friction_head, inputs, friction_target)
    if regressor_weight not in REGRESSOR_WEIGHTS:
        raise ValueError(f"regressor_weight must be one of {REGRESSOR_WEIGHTS}, got {regressor_weight!r}")
    if regressor_weight == "pn0" and friction_target != "ratio":
        raise ValueError("regressor_weight='pn0' needs friction_target='ratio'")
    if (friction_target == "ratio" or max_steady_per_throw is not None) and "pn0" not in data:
        raise ValueError("friction_target='ratio' / max_steady_per_throw need data with 'pn0' (regenerate with this version)")
    if inputs != "paper" and "x_extra" not in data:
        raise ValueError(f"inputs={inputs!r} needs data with 'x_extra' (regenerate with this version)")
    if max_rest_per_throw is not None or max_steady_per_throw is not None:
        keep = subsample_mask(data, max_rest_per_throw, max_steady_per_throw)
        data = {k: (v[keep] if isinstance(v, np.ndarray) and v.shape[:1] == keep.shape else v) for k, v in data.items()}
    time_budget = total_budget(time_budget, time_budget_per_kilo, len(data["x"]))
    shape = str(data["shape"])
    hp = hp or HyperParams.paper(shape)
    n_throws = int(data["n_throws"])
    dacm_mask = data["throw"] < int(np.ceil(n_throws * 2 / 3))
    n_in = F.num_features(dim, inputs)
    jobs = {}
    for k in F.patch_types(dim):
        name, nf = PATCH_KEYS[k], len(F.COMPONENTS[dim][k][0])
        m = dacm_mask & (data["kind"] == k)
        jobs[(name, "classifier")] = (int(m.sum()), hp.classifier, n_in, 3)
        jobs[(name, "regressor")] = (int((m & (data["label"] == F.DYNAMIC)).sum()), hp.regressor, n_in, nf)
        jobs[(name, "pdd")] = (int((data["kind"] == k).sum()), hp.pdd, F.num_features(dim), nf + len(F.COMPONENTS[dim][k][1]))
    sched = _Schedule(jobs, time_budget, time_limit, log, progress)
    stop = {"at": None, "untrained": []}  # Ctrl-C: the network it stopped, those left untrained

    def net_cfg(c, key):
        """The network's config; after a Ctrl-C, 0 epochs (initial weights, recorded as untrained)."""
        if stop["at"] is None:
            return c
        stop["untrained"].append(" ".join(key))
        return dataclasses.replace(c, epochs=0)

    def note(r, key):
        if stop["at"] is None and r.get("stopped_by") == "interrupted":
            stop["at"] = {"network": " ".join(key), "epoch": int(r.get("epochs_run", 0))}

    dp = {"clf": {}, "reg": {}, "norm": {}}
    pp = {"reg": {}, "norm": {}}
    report = {}
    for i, k in enumerate(F.patch_types(dim)):
        name = PATCH_KEYS[k]
        fi, ni = F.COMPONENTS[dim][k]
        rep = {}
        # ---------- dacm
        m = dacm_mask & (data["kind"] == k)
        x = F.select_inputs(data["x"][m], data["x_extra"][m] if inputs != "paper" else None, inputs)
        lab, w, thr = data["label"][m], data["wrench"][m].copy(), data["throw"][m]
        if friction_target == "ratio":
            w[:, : F.NF[dim]] /= np.maximum(data["pn0"][m], F.RATIO_FLOOR)[:, None]
        dyn = lab == F.DYNAMIC
        if len(x) == 0:
            raise ValueError(f"no {name} contact instances in the data: generate more throws")
        yf = w[dyn][:, list(fi)]
        wr = np.maximum(data["pn0"][m][dyn], F.RATIO_FLOOR) if regressor_weight == "pn0" else np.ones(len(yf))
        tr_r, va_r = _split(thr[dyn], seed + i + 100)  # regressor split (held-out throws)
        if friction_head == "residual":  # fitted sliding-Coulomb term; the network learns the rest
            head = F.fit_coulomb_head(x[dyn][tr_r], yf[tr_r], dim)
            yf = yf - F.coulomb_head(head, x[dyn], dim)
        st = _stats(x, yf if dyn.any() else np.zeros((0, len(fi))))
        if friction_head == "residual":
            st["head"] = head
            rep["head"] = np.round(head, 5).tolist()
        xn = (x - st["x_mean"]) / st["x_std"]
        tr, va = _split(thr, seed + i)
        with sched.run((name, "classifier")) as (lim, bar):
            v_c, r = fit(net_cfg(hp.classifier, (name, "classifier")), xn[tr], lab[tr], 3, "classify", seed + 10 * i,
                         lim, val=(xn[va], lab[va]), patience=patience, bar=bar)
            sched.report(r)
            note(r, (name, "classifier"))
        if len(va):
            r["val_accuracy"] = float(np.mean(predict(hp.classifier.hidden, 3, v_c, xn[va]).argmax(1) == lab[va]))
        rep["classifier"] = r
        log(f"[{shape}/{name}] classifier {r}")
        yd = (yf - st["y_mean"]) / st["y_std"]
        xd = xn[dyn]
        if len(xd) == 0:
            sched.skip((name, "regressor"))
            v_r = MLP(hp.regressor.hidden, len(fi)).init(jax.random.PRNGKey(seed), jnp.zeros((1, xn.shape[1])))
            r = {"samples": 0, "note": "no dynamic instances: untrained"}
        else:
            tr, va = tr_r, va_r
            with sched.run((name, "regressor")) as (lim, bar):
                v_r, r = fit(net_cfg(hp.regressor, (name, "regressor")), xd[tr], yd[tr], len(fi), "regress",
                             seed + 10 * i + 1, lim, weights=wr[tr], val=(xd[va], yd[va], wr[va]), patience=patience,
                             bar=bar)
                sched.report(r)
                note(r, (name, "regressor"))
            if len(va):
                r["val_r2"] = r2(predict(hp.regressor.hidden, len(fi), v_r, xd[va]), yd[va])
                if friction_head == "residual":  # R² of the whole output (head + network), ratio units
                    head_va = F.coulomb_head(head, x[dyn][va], dim)
                    full = yf[va] + head_va
                    pred = predict(hp.regressor.hidden, len(fi), v_r, xd[va]) * st["y_std"] + st["y_mean"] + head_va
                    r["val_r2_output"] = r2(pred, full)
                    r["val_r2_head_only"] = r2(head_va, full)
        rep["regressor"] = r
        log(f"[{shape}/{name}] regressor {r}")
        dp["clf"][name], dp["reg"][name] = v_c, v_r
        dp["norm"][name] = {a: jnp.asarray(b) for a, b in st.items()}
        # ---------- PDD (all throws = 1.5x dacm's data)
        m = data["kind"] == k
        x, w = data["x"][m], data["wrench"][m][:, list(fi + ni)]
        st = _stats(x, w)
        xn = (x - st["x_mean"]) / st["x_std"]
        yn = (w - st["y_mean"]) / st["y_std"]
        tr, va = _split(data["throw"][m], seed + i + 200)
        with sched.run((name, "pdd")) as (lim, bar):
            v_p, r = fit(net_cfg(hp.pdd, (name, "pdd")), xn[tr], yn[tr], len(fi) + len(ni), "regress",
                         seed + 10 * i + 2, lim, val=(xn[va], yn[va]), patience=patience, bar=bar)
            sched.report(r)
            note(r, (name, "pdd"))
        if len(va):
            r["val_r2"] = r2(predict(hp.pdd.hidden, len(fi) + len(ni), v_p, xn[va]), yn[va])
        rep["pdd"] = r
        log(f"[{shape}/{name}] pdd {r}")
        pp["reg"][name] = v_p
        pp["norm"][name] = {a: jnp.asarray(b) for a, b in st.items()}
        report[name] = rep
    meta = {
        "format": CKPT_FORMAT, "shape": shape, "dim": dim, "anisotropic": bool(data["anisotropic"]),
        "mu": np.asarray(data["mu"]).tolist(), "hyperparams": hp.to_dict(), "seed": seed,
        "data_throws": n_throws, "dacm_throws": int(np.ceil(n_throws * 2 / 3)),
        "static_speed": F.STATIC_SPEED, "detach_impulse": F.DETACH_IMPULSE, "report": report,
        "friction_target": friction_target, "max_rest_per_throw": max_rest_per_throw,
        "inputs": inputs, "max_steady_per_throw": max_steady_per_throw, "patience": patience,
        "instances_used": int(len(data["x"])), "friction_head": friction_head,
        "regressor_weight": regressor_weight, "time_limit": time_limit, "time_budget": time_budget,
    }
    if stop["at"] is not None:
        from ..checkpoint import TrainingInterrupted

        meta["interrupted"] = dict(stop["at"], untrained_networks=stop["untrained"], networks=len(jobs))
        raise TrainingInterrupted(f"interrupted: {stop['at']['network']} stopped at epoch {stop['at']['epoch']}, "
                                  f"{len(stop['untrained'])} of {len(jobs)} networks untrained",
                                  partial=(dp, pp, meta))
    return dp, pp, meta


def laws_from_meta(meta: dict):
    hp = HyperParams.from_dict(meta["hyperparams"])
    dim = int(meta["dim"])
    return (DACMLaw(dim, hp.classifier.hidden, hp.regressor.hidden, friction_target=meta.get("friction_target", "absolute"),
                    inputs=meta.get("inputs", "paper"), friction_head=meta.get("friction_head", "plain"),
                    symmetry=int(meta.get("symmetry", 1))),
            PDDLaw(dim, hp.pdd.hidden))


PAYLOAD = ("dacm.msgpack", "pdd.msgpack")


def save_checkpoint(path, dacm_params, pdd_params, meta, status: str = "finished", reached: dict | None = None,
                    run=None) -> dict:
    """Write the checkpoint directory atomically with the SHA-256 of both parameter files and the
    training ``status`` (``jaxcontact.checkpoint``); ``run``: a ``checkpoint.RunDirectory`` to
    write through instead of ``path`` (``--force`` over an existing checkpoint). Returns the meta."""
    from ..checkpoint import write_checkpoint

    files = dict(zip(PAYLOAD, (serialization.to_bytes(jax.device_get(p)) for p in (dacm_params, pdd_params))))
    meta = dict(meta, format=CKPT_FORMAT)
    if run is not None:
        return run.save(files, meta, status, reached)
    return write_checkpoint(path, files, meta, status, reached)


def load_checkpoint(path):
    """(dacm law, dacm params, pdd law, pdd params, meta); ``ValueError`` on a bad checkpoint.

    Both parameter files are checked against the SHA-256 recorded in meta.json. Checkpoints of
    the first format (no checksums) are refused: retrain them with this version."""
    from ..checkpoint import read_meta, verified_files

    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"dacm checkpoint directory not found: {path}")
    meta = read_meta(path)
    if meta.get("format") == CKPT_FORMAT_V1:
        raise ValueError(f"{path}: dacm checkpoint of format {CKPT_FORMAT_V1}, which records no checksums and cannot "
                         "be verified; retrain it with this version (jaxcontact dacm train)")
    if meta.get("format") != CKPT_FORMAT:
        raise ValueError(f"{path}: unsupported checkpoint format {meta.get('format')!r}, expected {CKPT_FORMAT}")
    blobs = verified_files(path, meta, PAYLOAD)
    dl, pl = laws_from_meta(meta)
    out = []
    for law, f in ((dl, "dacm.msgpack"), (pl, "pdd.msgpack")):
        template = law.init_params()
        try:
            params = serialization.from_bytes(template, blobs[f])
        except Exception as e:
            raise ValueError(f"{path}/{f}: corrupt or does not match meta.json ({type(e).__name__}: {e})") from None
        t_shapes = [np.shape(a) for a in jax.tree_util.tree_leaves(template)]
        p_shapes = [np.shape(a) for a in jax.tree_util.tree_leaves(params)]
        if t_shapes != p_shapes:
            raise ValueError(f"{path}/{f}: array shapes do not match meta.json's networks")
        for kp, a in jax.tree_util.tree_leaves_with_path(params):
            if not np.all(np.isfinite(np.asarray(a))):
                raise ValueError(f"{path}/{f}: non-finite values at {jax.tree_util.keystr(kp)}")
        out.append(jax.tree_util.tree_map(jnp.asarray, params))
    return dl, out[0], pl, out[1], meta
