"""Figures: a rendered rollout against the real toss, and the data-efficiency figure (Fig. 5)."""

from __future__ import annotations

import numpy as np

COLORS = {"polytope": "tab:red", "polytope_vr": "tab:orange", "deep": "tab:purple", "e2e": "tab:blue", "lcp": "tab:green"}


def _mat(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


_EDGES = [(i, j) for i in range(8) for j in range(i + 1, 8)]


def plot_rollout(pred, true, data, path, title="rollout vs real toss", n_frames=6):
    """Cube wireframes (side view x–z and top view x–y) of the real toss and the rollout, and
    the centre height over time."""
    from ..plotting import pyplot

    plt = pyplot("contactnets plots")

    T = len(true)
    pred = pred[:T]
    V = np.asarray(data.vertices)
    d = np.linalg.norm(V[:, None] - V[None], axis=-1)
    edges = [(i, j) for i, j in _EDGES if np.isclose(d[i, j], np.min(d[d > 1e-9]))]
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    frames = np.linspace(0, T - 1, n_frames).astype(int)
    for traj, col, lab in ((true, "k", "real"), (pred, "tab:red", "model")):
        for f in frames:
            P = traj[f, :3] + V @ _mat(traj[f, 3:7]).T
            for a, (u, v) in ((ax[0], (0, 2)), (ax[1], (0, 1))):
                for i, j in edges:
                    a.plot(P[[i, j], u], P[[i, j], v], color=col, lw=0.8, alpha=0.4 + 0.6 * f / (T - 1))
        ax[0].plot(traj[:, 0], traj[:, 2], color=col, lw=1.5, label=lab)
        ax[1].plot(traj[:, 0], traj[:, 1], color=col, lw=1.5, label=lab)
        ax[2].plot(np.arange(T) * data.dt, traj[:, 2], color=col, label=lab)
    ax[0].axhline(0.0, color="saddlebrown", lw=2)
    ax[0].set(xlabel="x (half-widths)", ylabel="z", title="side view (frames fade in)", aspect="equal")
    ax[1].set(xlabel="x", ylabel="y", title="top view", aspect="equal")
    ax[2].axhline(np.max(np.abs(V)), color="gray", ls=":", label="resting on a face")
    ax[2].set(xlabel="t (s)", ylabel="centre height", title=title)
    ax[0].legend(fontsize=8)
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_data_efficiency(results: dict, path, title="data efficiency (held-out tosses)"):
    """results[variant][n_tosses] = list of metric dicts (one per seed)."""
    from ..plotting import pyplot

    plt = pyplot("contactnets plots")

    keys = (("pos_error", "position error (block widths)"), ("rot_error_deg", "rotation error (deg)"),
            ("penetration", "penetration (block widths)"))
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for v, byn in results.items():
        ns = sorted(int(n) for n in byn)
        for a, (k, lab) in zip(ax, keys):
            vals = [[m[k] for m in byn[str(n)] if np.isfinite(m[k])] for n in ns]
            mean = [np.mean(x) if x else np.nan for x in vals]
            a.plot(ns, mean, "o-", color=COLORS.get(v), label=v)
            for n, x in zip(ns, vals):
                a.scatter([n] * len(x), x, color=COLORS.get(v), s=8, alpha=0.5)
            a.set(xscale="log", yscale="log", xlabel="training tosses", ylabel=lab)
    ax[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
