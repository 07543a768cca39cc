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

from pathlib import Path

import numpy as np

# units of the metrics (``metrics``) as reported by ``jaxcontact contactnets evaluate``
UNITS = {
    "pos_error": "block widths (time-averaged centre distance / block width; block width = 2 x the largest "
                 "|vertex coordinate| of the file, 0.1048 m for the real cube)",
    "rot_error_deg": "deg (time-averaged rotation angle between predicted and real orientation)",
    "penetration": "block widths (time-averaged depth of the deepest true corner below z = 0)",
    "n_tosses": "tosses",
    "n_diverged": "tosses (non-finite rollouts)",
}


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
    pen = np.maximum(0.0, -lowest_corner(pred, data.vertices)) / w
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


def lowest_corner(states: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Height of the lowest vertex for each state (``states[..., :7]`` = position, quaternion
    w x y z; ``vertices`` (V, 3) in the body frame)."""
    q = states[..., 3:7] / np.linalg.norm(states[..., 3:7], axis=-1, keepdims=True)
    w, x, y, z = (q[..., i] for i in range(4))
    # third row of R (world z of body axes)
    r3 = np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1)
    heights = states[..., 2:3] + np.einsum("...k,vk->...v", r3, vertices)
    return heights.min(axis=-1)


def toss_roles(meta: dict, data) -> dict:
    """Which tosses of ``data`` the checkpoint trained on, validated on, or never saw.

    Matched by content: each toss's hash (``data.toss_hash`` of its states) against the hashes the
    checkpoint recorded, so the same tosses are found whatever path, name or file they come in
    (a relative or absolute path, a symlink, a copy, a file holding more tosses). Checkpoints written
    before the hashes (only ``train_toss_ids``/``val_toss_ids`` and an absolute ``data_source``) are
    matched by the file's toss ids if ``data_source`` resolves to the same file; otherwise the roles
    are unknown (``match`` None). Ids in the result are the evaluated file's ``toss_ids``.
    """
    ids = [int(t) for t in np.asarray(data.toss_ids)]
    tr_h, va_h = meta.get("train_toss_hashes"), meta.get("val_toss_hashes")
    if tr_h is not None and va_h is not None:
        tr_h, va_h = set(tr_h), set(va_h)
        role = ["train" if h in tr_h else "val" if h in va_h else "held_out" for h in data.content_ids()]
        match = "content hash (SHA-256 of each toss's states)"
    else:
        old = meta.get("data_source")
        same = bool(old) and bool(data.source) and Path(old).exists() and Path(data.source).exists() \
            and Path(old).resolve() == Path(data.source).resolve()
        if not same:
            return {"match": None, "train_ids": [], "val_ids": [], "held_out_ids": [], "held_out_index": [],
                    "note": "checkpoint without toss hashes and not trained on this file: roles unknown"}
        tr_i, va_i = set(meta.get("train_toss_ids", [])), set(meta.get("val_toss_ids", []))
        role = ["train" if i in tr_i else "val" if i in va_i else "held_out" for i in ids]
        match = "toss ids of the same file (checkpoint without toss hashes)"
    pick = lambda r: [i for i, x in zip(ids, role) if x == r]
    return {"match": match, "train_ids": pick("train"), "val_ids": pick("val"), "held_out_ids": pick("held_out"),
            "held_out_index": [k for k, x in enumerate(role) if x == "held_out"]}
