"""Full rollouts of a model from each toss's first state and the metrics of eq. 18–19.

* pos_error: time-averaged ‖p̂_j − p_j‖ as a fraction of the block width;
* rot_error_deg: time-averaged rotation angle between R̂_j and R_j, degrees;
* penetration: time-averaged depth of the deepest *true* cube corner (the file's vertices)
  below the real table (z = 0), fraction of block width.

Each toss is rolled out for its own length (all tosses are simulated to the longest length in
one batched ``jaxcontact.batch_rollout``; samples past a toss's end are masked out); per-toss
averages are then averaged over tosses.
"""

from __future__ import annotations

import numpy as np


def rollout_tosses(model, params, data, chunk: int = 64, progress: bool = False, substeps: int = 1) -> np.ndarray:
    """(N, T_max, 13) predicted states from each toss's first state (batched over tosses).
    ``substeps``: engine steps of dt / substeps per sample (every substeps-th state is returned)."""
    import dataclasses

    import jax.numpy as jnp
    from tqdm.auto import tqdm

    from ..dynamics import batch_rollout
    from ..types import State

    if substeps < 1:
        raise ValueError(f"substeps must be >= 1, got {substeps}")
    if substeps > 1:
        model = dataclasses.replace(model, dt=model.dt / substeps)
    padded, _ = data.padded()
    T = padded.shape[1]
    out = []
    for i in tqdm(range(0, data.n_tosses, chunk), desc="rollouts", disable=not progress):
        s0 = State.from_array(jnp.asarray(padded[i : i + chunk, 0]))
        traj = batch_rollout(model, params, s0, (T - 1) * substeps, output="trajectory")
        out.append(np.asarray(traj.to_array())[:, ::substeps])
    return np.concatenate(out, axis=0)


def metrics(pred: np.ndarray, data) -> dict:
    """Eq. 18–19 over all tosses of ``data`` for predicted states ``pred`` (N, T_max, 13)."""
    true, mask = data.padded()
    if pred.shape != true.shape:
        raise ValueError(f"predictions have shape {pred.shape}, data {true.shape}")
    w = data.width
    pos = np.linalg.norm(pred[..., :3] - true[..., :3], axis=-1) / w
    dots = np.abs(np.sum(pred[..., 3:7] * true[..., 3:7], axis=-1)) / (
        np.linalg.norm(pred[..., 3:7], axis=-1) * np.linalg.norm(true[..., 3:7], axis=-1)
    )
    rot = np.degrees(2.0 * np.arccos(np.clip(dots, 0.0, 1.0)))
    pen = np.maximum(0.0, -_lowest_corner(pred, data.vertices)) / w
    per = lambda a: np.sum(np.where(mask, a, 0.0), axis=1) / mask.sum(axis=1)
    p, r, e = per(pos), per(rot), per(pen)
    finite = np.isfinite(p) & np.isfinite(r) & np.isfinite(e)
    return {
        "pos_error": float(np.mean(p)),
        "rot_error_deg": float(np.mean(r)),
        "penetration": float(np.mean(e)),
        "n_tosses": int(data.n_tosses),
        "n_diverged": int(np.sum(~finite)),
        "per_toss": {"pos_error": p.tolist(), "rot_error_deg": r.tolist(), "penetration": e.tolist()},
    }


def _lowest_corner(states: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    q = states[..., 3:7] / np.linalg.norm(states[..., 3:7], axis=-1, keepdims=True)
    w, x, y, z = (q[..., i] for i in range(4))
    # third row of R (world z of body axes)
    r3 = np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1)
    heights = states[..., 2:3] + np.einsum("...k,vk->...v", r3, vertices)
    return heights.min(axis=-1)
