"""Plots for dacm: trajectories of GT / dacm / PDD, predicted modes, Fig. 7 distances."""

from __future__ import annotations

import numpy as np


def _plt():
    from ..plotting import pyplot

    return pyplot("dacm plots")


def trajectories(trajs: dict, dt: float = 0.002, throw: int = 0, ax=None):
    """Centre height over time and horizontal path of one throw for each simulator."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.5))
    for name, tr in trajs.items():
        pos = np.asarray(tr.pos[throw])
        d = pos.shape[-1]
        t = np.arange(len(pos)) * dt
        ax[0].plot(t, pos[:, d - 1], label=name)
        if d == 3:
            ax[1].plot(pos[:, 0], pos[:, 1], label=name)
        else:
            ax[1].plot(pos[:, 0], pos[:, 1], label=name)
    ax[0].set_xlabel("t (s)")
    ax[0].set_ylabel("centre height (m)")
    ax[1].set_xlabel("x (m)")
    ax[1].set_ylabel("y (m)")
    ax[1].set_title("horizontal path" if d == 3 else "path in the plane")
    ax[0].legend()
    return ax


def modes(info, dt: float = 0.002, throw: int = 0, ax=None):
    """Predicted dacm mode per step (−1 no patch, 0 static, 1 dynamic, 2 detach) and patch type."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 2.5))
    m = np.asarray(info.mode[throw])
    k = np.asarray(info.patch_type[throw])
    t = np.arange(len(m)) * dt
    ax.step(t, m, where="post", label="mode (0 static, 1 dynamic, 2 detach)")
    ax.step(t, k + 3.2, where="post", label="patch type + 3.2 (1 point, 2 line, 3 face)")
    ax.set_xlabel("t (s)")
    ax.legend(fontsize=8)
    return ax


def directions(res: dict, ax=None):
    """Fig. 7: distance travelled per throwing direction (polar)."""
    plt = _plt()
    if ax is None:
        ax = plt.subplot(projection="polar")
    ang = np.radians(np.r_[res["directions_deg"], res["directions_deg"][0]])
    for name in ("gt", "dacm", "pdd"):
        if name in res:
            r = np.r_[res[name], res[name][0]]
            ax.plot(ang, r, marker="o", label=name)
    ax.legend(loc="lower right", fontsize=8)
    return ax
