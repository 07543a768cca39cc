"""The full study: identification on a training file, evaluation on a test file."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize as so

from . import learned, sysid
from .data import ImpactData
from .ellipse import irb_impulse
from .models import MODEL_NAMES, batched, rowwise

RANGE_TOL = 1e-3  # relative impulse residual below which an impact is "within predictive range"


def _batch(model, u0, W, mu, eps):
    """Impulses of ``model`` on every row; training and test rows share one program (padded rows)."""
    return rowwise(batched(model), (u0, W), mu, eps)


def rel_diff(P, Q) -> np.ndarray:
    return np.linalg.norm(P - Q, axis=1) / np.maximum(np.linalg.norm(Q, axis=1), 1e-300)


def fit_published_convention(model, data: ImpactData, k: int, max_impacts: int = 300):
    """(mu, eps, a): parameters and normal-velocity offset ``u_n -> u_n - a`` that best reproduce
    the published impulses of ``model`` (column ``k``) on ``data``."""
    idx = np.linspace(0, data.n - 1, min(max_impacts, data.n)).astype(int)
    u0, W, Pp = data.u0[idx], data.W[idx], data.raw["impulse_models"][idx, k]
    f = batched(model)

    def loss(th):
        mu, eps, a = th
        if mu < 0 or not 0 <= eps <= 1:
            return 1e9
        ue = u0 - np.array([0.0, a])
        return float(np.mean(rel_diff(np.asarray(f(ue, W, mu, eps)), Pp) ** 2))

    best = None
    for x0 in ([0.1, 0.5, 0.0], [0.1, 0.5, 0.01]):
        r = so.minimize(loss, x0, method="Nelder-Mead",
                        options=dict(xatol=1e-7, fatol=1e-16, maxiter=1500))
        if best is None or r.fun < best.fun:
            best = r
    return tuple(float(x) for x in best.x)


_irb_batch = jax.jit(jax.vmap(irb_impulse, in_axes=(0, 0, 0, None, None)))


def irb_impulses(data: ImpactData) -> np.ndarray:
    return np.asarray(_irb_batch(jnp.asarray(data.v_pre), jnp.asarray(data.v_post), jnp.asarray(data.J),
                        jnp.asarray(data.Minv), data.rho))


def run_study(train: ImpactData, test: ImpactData, target: str = "best", seed: int = 0,
              learned_steps: int = 3000, published: bool = True, log=print) -> dict:
    t0 = time.time()
    out: dict = {"n_train": train.n, "n_test": test.n, "target": target,
                 "range_tolerance": RANGE_TOL, "rho": test.rho, "models": {}}
    P_train = sysid.target_impulses(train, target)
    P_test = sysid.target_impulses(test, target)
    params, errs, P_models = {}, [], {}
    for k, name in enumerate(MODEL_NAMES):
        mu, eps, cost = sysid.fit_ensemble(name, train.u0, train.W, P_train)
        params[name] = (mu, eps)
        P = _batch(name, test.u0, test.W, mu, eps)
        P_models[name] = P
        e = sysid.velocity_errors(test, P)
        errs.append(e)
        mu_i, eps_i, res = (np.asarray(x) for x in sysid.fit_per_impact(
            name, jnp.asarray(test.u0), jnp.asarray(test.W), jnp.asarray(P_test)))
        rel = res / np.linalg.norm(P_test, axis=1)
        rec = {"mu": mu, "eps": eps, "train_mean_impulse_residual": cost,
               "mean_velocity_error": float(e.mean()), "median_velocity_error": float(np.median(e)),
               "fraction_within_range": float((rel < RANGE_TOL).mean()),
               "fraction_within_range_tol1e-2": float((rel < 1e-2).mean()),
               "per_impact_mu_mean": float(mu_i.mean()), "per_impact_mu_std": float(mu_i.std()),
               "per_impact_eps_mean": float(eps_i.mean()), "per_impact_eps_std": float(eps_i.std()),
               "per_impact_mu_at_zero_fraction": float((mu_i < 1e-3).mean())}
        if published and test.has_published:
            Ppub = test.raw["impulse_models"][:, k]
            rec["published_median_rel_diff_identified_params"] = float(np.median(rel_diff(P, Ppub)))
            if train.has_published:
                conv = fit_published_convention(name, train, k)
                Pc = _batch(name, test.u0 - np.array([0.0, conv[2]]), test.W, conv[0], conv[1])
                rd = rel_diff(Pc, Ppub)
                rec["published_convention"] = {"mu": conv[0], "eps": conv[1],
                                               "normal_velocity_offset": conv[2]}
                rec["published_median_rel_diff"] = float(np.median(rd))
                rec["published_p95_rel_diff"] = float(np.percentile(rd, 95))
        out["models"][name] = rec
        log(f"  {name:17s} mu={mu:.4f} eps={eps:.4f} err={e.mean():.4f} "
            f"in-range={rec['fraction_within_range']:.3f} ({time.time() - t0:.0f}s)")
    E = np.stack(errs, 1)
    best, worst = sysid.best_worst(E)
    for k, name in enumerate(MODEL_NAMES):
        out["models"][name]["best_percent"] = float(best[k])
        out["models"][name]["worst_percent"] = float(worst[k])
    P_irb = irb_impulses(test)
    e_irb = sysid.velocity_errors(test, P_irb)
    out["irb"] = {"mean_velocity_error": float(e_irb.mean()),
                  "median_velocity_error": float(np.median(e_irb))}
    e_bph = E.min(axis=1)
    out["best_post_hoc"] = {"mean_velocity_error": float(e_bph.mean()),
                            "median_velocity_error": float(np.median(e_bph))}
    # learned models on top of the best training model
    P_tr = {n: _batch(n, train.u0, train.W, *params[n]) for n in MODEL_NAMES}
    tr_err = {n: sysid.velocity_errors(train, P_tr[n]).mean() for n in MODEL_NAMES}
    prior = min(tr_err, key=tr_err.get)
    prior_tr = learned.scaled_dv_from_impulse(train, P_tr[prior])
    prior_te = learned.scaled_dv_from_impulse(test, P_models[prior])
    S = np.array([1.0, 1.0, test.rho])
    res_learned = {"prior_model": prior}
    for mode in ("data-augmented", "data-driven"):
        mdl = learned.train(train, prior_tr if mode == "data-augmented" else None, mode=mode,
                            steps=learned_steps, seed=seed)
        dv = mdl.predict_scaled_dv(test, prior_te if mode == "data-augmented" else None) / S
        e = sysid.velocity_errors_dv(test, dv)
        if mode == "data-augmented":
            e_learned = e
        res_learned[mode] = {"mean_velocity_error": float(e.mean()),
                             "median_velocity_error": float(np.median(e))}
    out["learned"] = res_learned
    out["learned_mean_velocity_error"] = res_learned["data-augmented"]["mean_velocity_error"]
    out["seconds"] = time.time() - t0
    out["_errors"] = {"models": E, "irb": e_irb, "best_post_hoc": e_bph,
                      "learned": e_learned}
    out["_params"] = params
    out["_P_test"] = P_test
    return out
