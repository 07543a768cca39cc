"""Figures of the study: error densities (Fig. 8), energy ellipse with model regions (Fig. 3-4),
per-impact (mu, eps) (Fig. 10)."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..plotting import pyplot

plt = pyplot("impacts plots")  # importing this module without matplotlib fails at once, with the install hint

from .ellipse import ellipse_boundary, feasibility  # noqa: E402
from .models import MODEL_NAMES, MODELS  # noqa: E402
from .sysid import mu_stick  # noqa: E402


def _kde(x, grid):
    x = np.asarray(x)
    bw = 1.06 * x.std() * len(x) ** (-0.2) + 1e-12
    return np.exp(-0.5 * ((grid[:, None] - x[None]) / bw) ** 2).sum(1) / (len(x) * bw * np.sqrt(2 * np.pi))


def error_density(errors: dict, path):
    fig, ax = plt.subplots(figsize=(6, 4))
    hi = max(np.percentile(e, 99) for e in errors.values())
    grid = np.linspace(0, hi, 300)
    for name, e in errors.items():
        ax.plot(grid, _kde(e, grid), label=f"{name} (mean {np.mean(e):.3f})",
                lw=2.5 if name in ("IRB bound", "Best Post Hoc", "learned") else 1.2)
    ax.set_xlabel("post-impact velocity error ‖S(v̂ - v)‖ [m/s]")
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def model_region(model, u0, W, n=25):
    """Impulses (n*n, 2) of ``model`` over ``eps ∈ [0,1]``, ``mu ∈ [0, mu_s(eps)]``."""
    eps = jnp.linspace(0, 1, n)
    mus = mu_stick(model, jnp.broadcast_to(u0, (n, 2)), jnp.broadcast_to(W, (n, 2, 2)), eps)
    s = jnp.linspace(0, 1, n)
    f = MODELS[model]
    return np.asarray(jax.vmap(lambda e, ms: jax.vmap(lambda si: f(u0, W, si * ms, e))(s))(eps, mus)).reshape(-1, 2)


def ellipse_figure(u0, W, path, target=None, title=""):
    u0, W = jnp.asarray(u0), jnp.asarray(W)
    B = np.asarray(ellipse_boundary(u0, W))
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot(B[:, 0], B[:, 1], "k-", lw=1, label="energy ellipse")
    lo, hi = B.min(0), B.max(0)
    g = np.stack(np.meshgrid(np.linspace(lo[0], hi[0], 120), np.linspace(lo[1], hi[1], 120)), -1).reshape(-1, 2)
    feas = np.asarray(jax.vmap(lambda P: feasibility(P, u0, W))(jnp.asarray(g)))
    ax.scatter(g[feas, 0], g[feas, 1], s=1, c="0.85", label="feasible set")
    # line of sticking (u_t⁺ = 0) and maximum compression (u_n⁺ = 0)
    t = np.linspace(lo[1], hi[1], 2)
    Wn = np.asarray(W)
    u = np.asarray(u0)
    ax.plot((-u[0] - Wn[0, 1] * t) / Wn[0, 0], t, "b--", lw=1, label="sticking")
    ax.plot((-u[1] - Wn[1, 1] * t) / Wn[1, 0] if abs(Wn[1, 0]) > 1e-12 else np.full(2, np.nan), t,
            "r--", lw=1, label="max compression")
    for k, name in enumerate(MODEL_NAMES):
        R = model_region(name, u0, W)
        ax.scatter(R[:, 0], R[:, 1], s=3, color=f"C{k}", label=name)
    if target is not None:
        ax.plot(*target, "k*", ms=12, label="measured (best impulse)")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_xlabel("P_t [N s]")
    ax.set_ylabel("P_n [N s]")
    ax.set_title(title)
    ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def per_impact_params(mu, eps, residual, path, title="AP Newton"):
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 4))
    sc = a.scatter(mu, eps, c=residual, s=6, cmap="viridis")
    fig.colorbar(sc, ax=a, label="impulse residual [N s]")
    a.set_xlabel("mu")
    a.set_ylabel("eps")
    a.set_title(f"{title}: per-impact (mu, eps)")
    b.hist(mu, bins=40, alpha=0.6, label="mu")
    b.hist(eps, bins=40, alpha=0.6, label="eps")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


PLOT_NAMES = ("error_density.png", "energy_ellipse.png", "per_impact_params.png")  # what all_plots writes


def all_plots(result, test, P_test, out_dir):
    from .sysid import fit_per_impact

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    E = result["_errors"]
    errors = {n: E["models"][:, k] for k, n in enumerate(MODEL_NAMES)}
    errors["IRB bound"] = E["irb"]
    errors["Best Post Hoc"] = E["best_post_hoc"]
    if "learned" in E:
        errors["learned"] = E["learned"]
    paths = [out_dir / name for name in PLOT_NAMES]
    error_density(errors, paths[0])
    i = int(np.argmin(np.abs(test.J[:, 1, 2])))  # contact under the centre of mass
    i = int(np.argsort(np.abs(test.J[:, 1, 2]))[len(test.J) // 2]) if test.n > 2 else i
    ellipse_figure(test.u0[i], test.W[i], paths[1], target=P_test[i], title=f"test impact {i}")
    mu, eps, res = fit_per_impact("AP Newton", jnp.asarray(test.u0), jnp.asarray(test.W), jnp.asarray(P_test))
    per_impact_params(np.asarray(mu), np.asarray(eps), np.asarray(res), paths[2])
    return paths
