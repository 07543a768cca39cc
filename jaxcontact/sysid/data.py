"""Observed trajectories for system identification: loading, checking, synthetic generation.

Two file layouts are read (13 state columns: pos, quat wxyz, vel world, omega body — the layout
of ``State.to_array``):

* toss format (the shared ContactNets cube tosses): ``states`` (sum of lengths, 13) back to back
  and ``lengths``, plus ``dt``, ``gravity`` and optionally ``mass``, ``inertia`` (scalar or 3×3),
  ``vertices``, ``mu_nominal``, ``restitution_nominal``, ``length_unit_m``;
* simulate format (``jaxcontact simulate``): ``states`` (N, T+1, 13) plus ``dt``, ``gravity``,
  ``mu``, ``restitution``, ``mass``, ``inertia``, ``vertices``.

Sampling: ``dt`` (or ``sample_period``, which wins) is the **sample period**, the time between
two rows. Files the project simulates (``jaxcontact simulate``, ``save``) also record
``engine_dt``, the time step of the engine that produced them; the engine steps per sample of a
fit (``substeps``) then follow from the data (``substeps_for``) and a contradicting explicit value
is refused. Measured data record no engine step: the fit's step is a modelling choice
(``MEASURED_SUBSTEPS`` unless given). A file without a sample period needs one from the caller
(``load(path, sample_period=...)``, ``jaxcontact sysid --sample-period``).

Synthetic files written by ``make_synthetic``/``save`` are in simulate format and also carry the
hidden truth as ``truth_<name>`` arrays, so the command line can report the errors.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

STATE_DIM = 13
# engine steps per sample of a fit to measured data (no engine step recorded) unless the caller
# chooses: the setting of the real-cube fits in docs/sysid.md
MEASURED_SUBSTEPS = 4


@dataclasses.dataclass
class Trajectories:
    """A set of observed 3D trajectories, each (T_i, 13), sampled every ``dt`` seconds.

    dt: the sample period (s): the time between two consecutive rows of a trajectory.
    engine_dt: the time step of the engine that simulated the data (``jaxcontact simulate``,
    ``synthetic.make_synthetic``), a whole fraction of ``dt``; None for measured data. A fit's
    engine steps per sample are then ``dt / engine_dt`` (``substeps_for``)."""

    trajs: list
    dt: float
    gravity: float
    mass: float | None = None
    inertia: np.ndarray | None = None
    vertices: np.ndarray | None = None
    nominal: dict = dataclasses.field(default_factory=dict)  # values quoted with the data
    truth: dict = dataclasses.field(default_factory=dict)  # hidden truth of synthetic data
    source: str = ""
    engine_dt: float | None = None

    def __post_init__(self):
        check_trajectories(self.trajs, self.dt)
        if self.engine_dt is not None:
            self.engine_dt = float(self.engine_dt)
            recorded_substeps(self.dt, self.engine_dt)  # refuses an engine step that does not divide dt

    @property
    def substeps(self) -> int | None:
        """Engine steps per sample the data were simulated with (None: measured data)."""
        return None if self.engine_dt is None else recorded_substeps(self.dt, self.engine_dt)

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


def recorded_substeps(dt: float, engine_dt: float) -> int:
    """``dt / engine_dt`` as a whole number of engine steps; ``ValueError`` if it is not one."""
    if not (np.isfinite(engine_dt) and engine_dt > 0):
        raise ValueError(f"engine_dt: the engine time step must be a finite number > 0, got {engine_dt}")
    k = dt / engine_dt
    n = int(round(k))
    if n < 1 or abs(k - n) > 1e-6 * k:
        raise ValueError(f"the sample period {dt:g} s is not a whole number of engine steps of {engine_dt:g} s "
                         f"(ratio {k:.6g})")
    return n


def substeps_for(data: Trajectories, substeps: int | None = None, what: str = "substeps") -> int:
    """Engine steps per sample of a fit to ``data``: the data's own (``data.substeps``) when they
    record their engine step, and then an explicit ``substeps`` that differs is refused
    (``ValueError``, one line; ``what`` names the option in it); for measured data ``substeps``,
    or ``MEASURED_SUBSTEPS`` if None."""
    if substeps is not None and (isinstance(substeps, bool) or int(substeps) != substeps or substeps < 1):
        raise ValueError(f"{what} must be an integer >= 1, got {substeps!r}")
    own = data.substeps
    if own is None:
        return MEASURED_SUBSTEPS if substeps is None else int(substeps)
    if substeps is not None and int(substeps) != own:
        raise ValueError(f"{what} {substeps} contradicts the data: {data.source or 'they'} were sampled every "
                         f"{data.dt:g} s by an engine stepping {data.engine_dt:g} s, {own} engine step(s) per "
                         f"sample (leave {what} out to use the data's)")
    return own


def _inertia(x):
    if x is None or not np.all(np.isfinite(x)):
        return None
    a = np.asarray(x, dtype=float)
    return a * np.eye(3) if a.ndim == 0 else a


class MissingSamplePeriod(ValueError):
    """A trajectory file that records no sample period, loaded without one."""


# keys of a file written by ``jaxcontact simulate`` before it recorded ``engine_dt``: it wrote
# every engine step, so its engine step is its ``dt``
_OLD_SIMULATE_KEYS = ("seed", "shape", "layout")


def load(path, sample_period: float | None = None) -> Trajectories:
    """Read a toss-format or simulate-format ``.npz`` (see module docstring).

    sample_period: the time between two rows (s), for a file that records none (no ``dt`` /
    ``sample_period``; ``MissingSamplePeriod`` otherwise); a file that records one must agree."""
    from ..files import read_npz

    path = Path(path)
    d = read_npz(path, "--data file")
    if "states" not in d:
        raise ValueError(f"{path}: no 'states' array (keys: {', '.join(d)})")
    S = np.asarray(d["states"])
    if not (np.issubdtype(S.dtype, np.floating) or np.issubdtype(S.dtype, np.integer)):
        raise ValueError(f"{path}: 'states' must be real numbers, got dtype {S.dtype}")
    S = S.astype(np.float64)
    scalar = lambda k: _scalar(d, k, path)
    recorded = scalar("sample_period") if "sample_period" in d else scalar("dt") if "dt" in d else None
    if recorded is None:
        if sample_period is None:
            raise MissingSamplePeriod(f"sample_period is required: {path} records no sample period ('dt' or "
                                      "'sample_period': the time between two rows, in s)")
        dt = float(sample_period)
    else:
        if sample_period is not None and not np.isclose(float(sample_period), recorded, rtol=1e-9, atol=0.0):
            raise ValueError(f"sample_period {sample_period:g} s contradicts {path}, which records {recorded:g} s "
                             "between samples")
        dt = recorded
    if "gravity" not in d:
        raise ValueError(f"{path}: missing 'gravity'")
    engine_dt = scalar("engine_dt") if "engine_dt" in d else None
    if engine_dt is None and all(k in d for k in _OLD_SIMULATE_KEYS) and "sample_period" not in d:
        engine_dt = dt  # an older ``jaxcontact simulate`` file: every engine step was written
    if "lengths" in d:
        lengths = np.asarray(d["lengths"], dtype=int)
        if S.ndim != 2 or lengths.sum() != len(S):
            raise ValueError(f"{path}: lengths sum to {lengths.sum()} but states has shape {S.shape}")
        trajs = np.split(S, np.cumsum(lengths)[:-1])
    elif S.ndim == 3:
        trajs = list(S)
    else:
        raise ValueError(f"{path}: states of shape {S.shape} needs 'lengths' (toss format) or shape (N, T, 13)")
    get = lambda k: (np.asarray(d[k], dtype=float) if k in d else None)
    nominal = {}
    for k, name in (("mu_nominal", "mu"), ("restitution_nominal", "restitution"), ("mu", "mu"), ("restitution", "restitution")):
        if k in d and name not in nominal:
            nominal[name] = float(d[k])
    if "length_unit_m" in d:
        nominal["length_unit_m"] = float(d["length_unit_m"])
    truth = {k[6:]: np.asarray(d[k], dtype=float) for k in d if k.startswith("truth_")}
    return Trajectories(
        trajs=[np.asarray(t) for t in trajs], dt=dt, gravity=float(d["gravity"]),
        mass=None if get("mass") is None or not np.isfinite(get("mass")) else float(get("mass")), inertia=_inertia(get("inertia")),
        vertices=get("vertices"), nominal=nominal, truth=truth, source=str(path), engine_dt=engine_dt,
    )


def _scalar(d, key, path) -> float:
    a = np.asarray(d[key])
    if a.size != 1 or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{path}: '{key}' must be one number, got {a.dtype} of shape {a.shape}")
    v = float(a.reshape(()))
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{path}: '{key}' must be a finite number > 0, got {v}")
    return v


def save(path, data: Trajectories) -> Path:
    """Write simulate format (equal lengths required) with ``truth_*`` keys; the sample period as
    ``dt`` and ``sample_period``, the engine step as ``engine_dt`` when the data record one."""
    lens = {len(t) for t in data.trajs}
    if len(lens) != 1:
        raise ValueError("save needs trajectories of equal length")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {f"truth_{k}": np.asarray(v) for k, v in data.truth.items()}
    np.savez_compressed(
        path, states=np.stack(data.trajs), dt=np.array(data.dt), sample_period=np.array(data.dt),
        gravity=np.array(data.gravity),
        mass=np.array(data.mass if data.mass is not None else np.nan),
        inertia=np.asarray(data.inertia if data.inertia is not None else np.full((3, 3), np.nan)),
        vertices=np.asarray(data.vertices if data.vertices is not None else np.zeros((0, 3))),
        layout=np.array("pos3,quat_wxyz4,vel3_world,omega3_body"), **extra,
        **({} if data.engine_dt is None else {"engine_dt": np.array(data.engine_dt)}),
    )
    return path
