"""Observed trajectories for system identification: loading, checking, synthetic generation.

Two file layouts are read (13 state columns: pos, quat wxyz, vel world, omega body — the layout
of ``State.to_array``):

* toss format (the shared ContactNets cube tosses): ``states`` (sum of lengths, 13) back to back
  and ``lengths``, plus ``dt``, ``gravity`` and optionally ``mass``, ``inertia`` (scalar or 3×3),
  ``vertices``, ``mu_nominal``, ``restitution_nominal``, ``length_unit_m``;
* simulate format (``jaxcontact simulate``): ``states`` (N, T+1, 13) plus ``dt``, ``gravity``,
  ``mu``, ``restitution``, ``mass``, ``inertia``, ``vertices``.

Synthetic files written by ``make_synthetic``/``save`` are in simulate format and also carry the
hidden truth as ``truth_<name>`` arrays, so the command line can report the errors.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

STATE_DIM = 13


@dataclasses.dataclass
class Trajectories:
    """A set of observed 3D trajectories, each (T_i, 13), sampled every ``dt`` seconds."""

    trajs: list
    dt: float
    gravity: float
    mass: float | None = None
    inertia: np.ndarray | None = None
    vertices: np.ndarray | None = None
    nominal: dict = dataclasses.field(default_factory=dict)  # values quoted with the data
    truth: dict = dataclasses.field(default_factory=dict)  # hidden truth of synthetic data
    source: str = ""

    def __post_init__(self):
        check_trajectories(self.trajs, self.dt)

    def __len__(self) -> int:
        return len(self.trajs)

    def subset(self, idx) -> "Trajectories":
        return dataclasses.replace(self, trajs=[self.trajs[i] for i in idx])

    @property
    def num_samples(self) -> int:
        return int(sum(len(t) for t in self.trajs))


def check_trajectories(trajs, dt, min_samples: int = 2) -> None:
    """Raise ``ValueError`` naming the trajectory and sample for bad shapes, NaN, too few samples."""
    if not np.isfinite(dt) or dt <= 0:
        raise ValueError(f"dt: sample period must be positive, got {dt}")
    if len(trajs) == 0:
        raise ValueError("no trajectories given")
    for i, t in enumerate(trajs):
        t = np.asarray(t)
        if t.ndim != 2 or t.shape[1] != STATE_DIM:
            raise ValueError(f"trajectory {i}: expected shape (T, {STATE_DIM}), got {t.shape}")
        if len(t) < min_samples:
            raise ValueError(f"trajectory {i}: has {len(t)} samples, needs at least {min_samples}")
        bad = ~np.all(np.isfinite(t), axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            cols = np.nonzero(~np.isfinite(t[k]))[0].tolist()
            raise ValueError(f"trajectory {i}: sample {k} contains NaN or infinite values (columns {cols})")
        qn = np.linalg.norm(t[:, 3:7], axis=1)
        if np.any(np.abs(qn - 1) > 0.05):
            k = int(np.argmax(np.abs(qn - 1) > 0.05))
            raise ValueError(f"trajectory {i}: sample {k} has a quaternion of norm {qn[k]:.3f}, not a unit quaternion")


def _inertia(x):
    if x is None or not np.all(np.isfinite(x)):
        return None
    a = np.asarray(x, dtype=float)
    return a * np.eye(3) if a.ndim == 0 else a


def load(path) -> Trajectories:
    """Read a toss-format or simulate-format ``.npz`` (see module docstring)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"--data: no such file: {path}")
    d = np.load(path, allow_pickle=False)
    if "states" not in d.files:
        raise ValueError(f"{path}: no 'states' array (keys: {', '.join(d.files)})")
    S = np.asarray(d["states"], dtype=np.float64)
    for key in ("dt", "gravity"):
        if key not in d.files:
            raise ValueError(f"{path}: missing '{key}'")
    if "lengths" in d.files:
        lengths = np.asarray(d["lengths"], dtype=int)
        if S.ndim != 2 or lengths.sum() != len(S):
            raise ValueError(f"{path}: lengths sum to {lengths.sum()} but states has shape {S.shape}")
        trajs = np.split(S, np.cumsum(lengths)[:-1])
    elif S.ndim == 3:
        trajs = list(S)
    else:
        raise ValueError(f"{path}: states of shape {S.shape} needs 'lengths' (toss format) or shape (N, T, 13)")
    get = lambda k: (np.asarray(d[k], dtype=float) if k in d.files else None)
    nominal = {}
    for k, name in (("mu_nominal", "mu"), ("restitution_nominal", "restitution"), ("mu", "mu"), ("restitution", "restitution")):
        if k in d.files and name not in nominal:
            nominal[name] = float(d[k])
    if "length_unit_m" in d.files:
        nominal["length_unit_m"] = float(d["length_unit_m"])
    truth = {k[6:]: np.asarray(d[k], dtype=float) for k in d.files if k.startswith("truth_")}
    return Trajectories(
        trajs=[np.asarray(t) for t in trajs], dt=float(d["dt"]), gravity=float(d["gravity"]),
        mass=None if get("mass") is None or not np.isfinite(get("mass")) else float(get("mass")), inertia=_inertia(get("inertia")),
        vertices=get("vertices"), nominal=nominal, truth=truth, source=str(path),
    )


def save(path, data: Trajectories) -> Path:
    """Write simulate format (equal lengths required) with ``truth_*`` keys."""
    lens = {len(t) for t in data.trajs}
    if len(lens) != 1:
        raise ValueError("save needs trajectories of equal length")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {f"truth_{k}": np.asarray(v) for k, v in data.truth.items()}
    np.savez_compressed(
        path, states=np.stack(data.trajs), dt=np.array(data.dt), gravity=np.array(data.gravity),
        mass=np.array(data.mass if data.mass is not None else np.nan),
        inertia=np.asarray(data.inertia if data.inertia is not None else np.full((3, 3), np.nan)),
        vertices=np.asarray(data.vertices if data.vertices is not None else np.zeros((0, 3))),
        layout=np.array("pos3,quat_wxyz4,vel3_world,omega3_body"), **extra,
    )
    return path
