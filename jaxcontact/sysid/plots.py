"""Plot of a fit: the loss and every scalar parameter over the iterations."""

from __future__ import annotations

import numpy as np


def plot_history(histories, path, truth: dict | None = None, title: str = "") -> str:
    """``histories``: a list of (label, FitResult.history) drawn one after the other (stages)."""
    from ..plotting import pyplot

    plt = pyplot("sysid --plot")

    keys = []
    for _, hist in histories:  # scalar parameters of every stage, in order of appearance
        keys += [k for k, v in hist[0]["values"].items() if not isinstance(v, list) and k not in keys]
    has_v = "vertices" in histories[0][1][0]["values"] or any("vertices" in h[1][0]["values"] for h in histories)
    n = 1 + len(keys) + (1 if has_v and truth and "vertices" in truth else 0)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.2))
    axes = np.atleast_1d(axes)
    off = 0
    for label, hist in histories:
        it = off + np.array([h["iter"] for h in hist])
        axes[0].semilogy(it, [h["loss"] for h in hist], marker=".", label=label)
        for ax, k in zip(axes[1:], keys):
            ax.plot(it, [h["values"].get(k, np.nan) for h in hist], marker=".")
            ax.set_title(k)
        if n > 1 + len(keys):
            tv = np.asarray(truth["vertices"])
            err = [np.max(np.linalg.norm(np.asarray(h["values"]["vertices"]) - tv, axis=1) / np.linalg.norm(tv, axis=1))
                   if "vertices" in h["values"] else np.nan for h in hist]
            axes[-1].semilogy(it, err, marker=".")
            axes[-1].set_title("worst relative vertex error")
        off = it[-1]
    axes[0].set_title("loss (mean squared residual)")
    axes[0].legend(fontsize=7)
    if truth:
        for ax, k in zip(axes[1:], keys):
            if k in truth:
                ax.axhline(float(np.asarray(truth[k])), color="k", ls="--", lw=1, label="truth")
    for ax in axes:
        ax.set_xlabel("iteration")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
