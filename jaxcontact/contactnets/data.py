"""Cube-toss files: loading with validation, transitions, splits, the bundled subset.

A toss file is a NumPy archive laid out like ``../shared/data/cube_tosses/tosses.npz``: ``states``
(sum of lengths, 13) with columns pos (3, world), quat (4, w x y z, body→world), vel (3, world),
omega (3, **body**) — ``State.to_array()`` — all tosses back to back, ``lengths`` (N,), and the
scalars ``dt``, ``gravity``, ``mass``, ``inertia`` (scalar or 3×3) and the body-frame ``vertices``.
Optional: ``toss_ids``, ``mu_nominal``, ``restitution_nominal``, ``length_unit_m``.

Units: we keep the file's units (the shared data use the cube half-width as length unit and
gravity 9.81/0.0524 in those units) and build the simulation ``Model``/``Body`` from the file's
``dt``, ``gravity``, ``mass`` and ``inertia`` — nothing is converted. Metrics are reported as a
fraction of the block *width* = 2 × (half-width of the file's vertices).
"""

from __future__ import annotations

import dataclasses
import hashlib
from importlib import resources
from pathlib import Path

import numpy as np

from ..files import file_sha256

REQUIRED = ("states", "lengths", "dt", "gravity", "mass", "inertia", "vertices")
BUNDLED_NAME = "cube_tosses_small.npz"


def bundled_path() -> Path:
    """The subset of the real cube tosses shipped with the package (BSD-3, see its LICENSE)."""
    return Path(str(resources.files("jaxcontact") / "data" / BUNDLED_NAME))


@dataclasses.dataclass
class TossData:
    states: list  # list of (T_i, 13) float64 arrays
    dt: float
    gravity: float
    mass: float
    inertia: np.ndarray  # (3, 3)
    vertices: np.ndarray  # (K, 3)
    toss_ids: np.ndarray
    mu_nominal: float = 0.18
    restitution_nominal: float = 0.0
    source: str = ""
    # content identity (not the path): SHA-256 of the file and, per toss, of its (T_i, 13) float64
    # states (``toss_hash``); a checkpoint records the hashes of its training/validation tosses so
    # that evaluate finds them in any file, under any path
    file_sha256: str = ""
    toss_hashes: tuple = ()

    @property
    def n_tosses(self) -> int:
        return len(self.states)

    @property
    def lengths(self) -> np.ndarray:
        return np.array([len(s) for s in self.states])

    @property
    def width(self) -> float:
        """Block width (2 × the largest |coordinate| of the vertices), the metrics' unit."""
        return float(2.0 * np.max(np.abs(self.vertices)))

    def subset(self, idx) -> "TossData":
        idx = [int(i) for i in idx]
        hashes = tuple(self.toss_hashes[i] for i in idx) if self.toss_hashes else ()
        return dataclasses.replace(self, states=[self.states[i] for i in idx], toss_ids=self.toss_ids[idx],
                                   toss_hashes=hashes)

    def content_ids(self) -> tuple:
        """Per-toss content hashes (``toss_hash``), computed here if the data were built in memory."""
        return tuple(self.toss_hashes) if self.toss_hashes else tuple(toss_hash(t) for t in self.states)

    def transitions(self):
        """(x, x') pairs of consecutive samples of every toss: two (M, 13) arrays."""
        xs = np.concatenate([s[:-1] for s in self.states])
        xn = np.concatenate([s[1:] for s in self.states])
        return xs, xn

    def padded(self):
        """(N, T_max, 13) states padded by repeating each toss's last sample, and (N, T_max) mask."""
        T = int(self.lengths.max())
        out = np.zeros((self.n_tosses, T, 13))
        mask = np.zeros((self.n_tosses, T), bool)
        for i, s in enumerate(self.states):
            out[i, : len(s)] = s
            out[i, len(s) :] = s[-1]
            mask[i, : len(s)] = True
        return out, mask

    def save(self, path) -> None:
        np.savez_compressed(
            path,
            states=np.concatenate(self.states),
            lengths=self.lengths,
            toss_ids=self.toss_ids,
            dt=np.array(self.dt),
            gravity=np.array(self.gravity),
            mass=np.array(self.mass),
            inertia=np.array(self.inertia[0, 0] if np.allclose(self.inertia, self.inertia[0, 0] * np.eye(3)) else self.inertia),
            vertices=self.vertices,
            mu_nominal=np.array(self.mu_nominal),
            restitution_nominal=np.array(self.restitution_nominal),
        )


def toss_hash(states) -> str:
    """Content id of one toss: the first 16 hex digits of the SHA-256 of its states rounded to 1e-9
    (so a toss re-saved after the loader's quaternion normalisation keeps its id), as contiguous
    little-endian float64; independent of the file's path, name and the toss's position in the file."""
    a = np.ascontiguousarray(np.round(np.asarray(states, dtype=np.float64), 9) + 0.0, dtype="<f8")  # + 0.0: no -0
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def _scalar(d, key, positive=True) -> float:
    a = np.asarray(d[key], dtype=np.float64)
    if a.size != 1:
        raise ValueError(f"toss file: '{key}' must be a scalar, got shape {a.shape}")
    v = float(a.reshape(()))
    if not np.isfinite(v) or (positive and v <= 0):
        raise ValueError(f"toss file: '{key}' must be a positive finite number, got {v}")
    return v


def load_tosses(path=None) -> TossData:
    """Load and validate a toss file (default: the bundled subset). Raises ``ValueError``."""
    from ..files import read_npz

    path = bundled_path() if path is None else Path(path)
    d = read_npz(path, "toss file")
    keys = set(d)
    missing = [k for k in REQUIRED if k not in keys]
    if missing:
        raise ValueError(f"toss file {path}: missing keys {missing} (need {list(REQUIRED)})")
    states = np.asarray(d["states"], dtype=np.float64)
    if states.ndim != 2 or states.shape[1] != 13:
        raise ValueError(
            f"toss file {path}: 'states' must have shape (samples, 13) "
            f"[pos3, quat_wxyz4, vel3_world, omega3_body], got {states.shape}"
        )
    if not np.all(np.isfinite(states)):
        bad = np.argwhere(~np.isfinite(states))[0]
        raise ValueError(f"toss file {path}: 'states' contains NaN/inf (first at row {bad[0]}, column {bad[1]})")
    lengths = np.asarray(d["lengths"])
    if lengths.ndim != 1 or lengths.size == 0 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"toss file {path}: 'lengths' must be a non-empty 1-D integer array")
    if np.any(lengths < 2):
        i = int(np.argmin(lengths))
        raise ValueError(f"toss file {path}: toss {i} has {int(lengths[i])} samples; every toss needs at least 2")
    if int(lengths.sum()) != len(states):
        raise ValueError(f"toss file {path}: sum of 'lengths' ({int(lengths.sum())}) != number of states rows ({len(states)})")
    qn = np.linalg.norm(states[:, 3:7], axis=1)
    if np.any(np.abs(qn - 1.0) > 1e-2):
        raise ValueError(f"toss file {path}: quaternion columns 3:7 are not unit (norm range {qn.min():.3f}..{qn.max():.3f})")
    states = states.copy()
    states[:, 3:7] /= qn[:, None]
    inertia = np.asarray(d["inertia"], dtype=np.float64)
    if inertia.size == 1:
        inertia = float(inertia) * np.eye(3)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)) or np.any(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)) <= 0):
        raise ValueError(f"toss file {path}: 'inertia' must be a positive scalar or a positive-definite 3x3 matrix")
    vertices = np.asarray(d["vertices"], dtype=np.float64)
    if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) < 4 or not np.all(np.isfinite(vertices)):
        raise ValueError(f"toss file {path}: 'vertices' must be a finite (K>=4, 3) array, got {vertices.shape}")
    splits = np.cumsum(lengths)[:-1]
    toss_ids = np.asarray(d["toss_ids"]) if "toss_ids" in keys else np.arange(len(lengths))
    if toss_ids.shape != lengths.shape:
        raise ValueError(f"toss file {path}: 'toss_ids' must have the shape of 'lengths'")
    per_toss = list(np.split(states, splits))
    return TossData(
        states=per_toss,
        dt=_scalar(d, "dt"),
        gravity=_scalar(d, "gravity"),
        mass=_scalar(d, "mass"),
        inertia=inertia,
        vertices=vertices,
        toss_ids=toss_ids,
        mu_nominal=_scalar(d, "mu_nominal") if "mu_nominal" in keys else 0.18,
        restitution_nominal=_scalar(d, "restitution_nominal", positive=False) if "restitution_nominal" in keys else 0.0,
        source=str(path),
        file_sha256=file_sha256(path),
        toss_hashes=tuple(toss_hash(t) for t in per_toss),
    )


def split_train_val(n_available: int, n_tosses: int, seed: int, val_fraction: float = 0.3):
    """Pick ``n_tosses`` of ``n_available`` at random (seeded) and split them train/validation."""
    if n_tosses < 2:
        raise ValueError(f"--tosses must be >= 2 (one for training, one for validation), got {n_tosses}")
    if n_tosses > n_available:
        raise ValueError(f"--tosses {n_tosses} but the file has only {n_available} tosses")
    rng = np.random.default_rng(seed)
    pick = rng.permutation(n_available)[:n_tosses]
    n_val = max(1, int(round(val_fraction * n_tosses)))
    return np.sort(pick[n_val:]), np.sort(pick[:n_val])
