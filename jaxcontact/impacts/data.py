"""Loading, validating and splitting planar-impact files (the MCube planar-impact format).

The data are never shipped with the package: pass a path, or use :func:`default_data_path`
(``$JAXCONTACT_SHARED/data/planar_impacts/impacts.npz``, ``JAXCONTACT_SHARED`` defaulting to
``<repo>/../shared``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import shared_dir

PER_IMPACT_KEYS = {
    "states_pre": (6,),
    "states_post": (6,),
    "jac_normal": (3,),
    "jac_tangent": (3,),
}
OPTIONAL_PER_IMPACT = {
    "impulse_best": (2,),
    "wrench_best": (3,),
    "impulse_models": (6, 2),
    "velocity_models": (6, 3),
    "impact_ids": (),
}
SCALAR_KEYS = ("mass",)
OPTIONAL_SCALARS = ("gravity", "semi_major", "semi_minor", "radius_of_gyration", "sample_period")


def default_data_path() -> Path:
    """The planar impacts in the shared data (``files.shared_dir``)."""
    return shared_dir() / "data" / "planar_impacts" / "impacts.npz"


@dataclass(frozen=True)
class ImpactData:
    """Validated impacts. Arrays are float64 numpy; ``J`` is ``(N, 2, 3)`` = [tangent; normal]."""

    v_pre: np.ndarray
    v_post: np.ndarray
    J: np.ndarray
    mass: float
    inertia: float
    raw: dict

    @property
    def n(self) -> int:
        return self.v_pre.shape[0]

    @property
    def rho(self) -> float:
        """Radius of gyration sqrt(I/m) used to scale angular velocity errors."""
        return float(np.sqrt(self.inertia / self.mass))

    @property
    def M(self) -> np.ndarray:
        return np.diag([self.mass, self.mass, self.inertia])

    @property
    def Minv(self) -> np.ndarray:
        return np.diag([1 / self.mass, 1 / self.mass, 1 / self.inertia])

    @property
    def u0(self) -> np.ndarray:
        return np.einsum("nij,nj->ni", self.J, self.v_pre)

    @property
    def W(self) -> np.ndarray:
        return np.einsum("nij,jk,nlk->nil", self.J, self.Minv, self.J)

    @property
    def has_published(self) -> bool:
        return "impulse_models" in self.raw

    def subset(self, idx) -> "ImpactData":
        idx = np.asarray(idx)
        raw = {k: (v[idx] if _is_per_impact(k, v, self.n) else v) for k, v in self.raw.items()}
        return ImpactData(self.v_pre[idx], self.v_post[idx], self.J[idx], self.mass, self.inertia, raw)


def _is_per_impact(key, value, n):
    return key in PER_IMPACT_KEYS or key in OPTIONAL_PER_IMPACT


def _estimate_inertia(raw, J, v_pre, mass):
    """Moment of inertia. When the published model velocities are present, I is recovered from
    them (they are exactly ``v + M⁻¹JᵀP``); otherwise ``m ρ²`` with the stated radius of gyration."""
    if "impulse_models" in raw and "velocity_models" in raw:
        P = raw["impulse_models"].reshape(-1, 2)
        Jr = np.repeat(J, raw["impulse_models"].shape[1], axis=0)
        torque = Jr[:, 0, 2] * P[:, 0] + Jr[:, 1, 2] * P[:, 1]
        dw = (raw["velocity_models"] - v_pre[:, None, :])[..., 2].reshape(-1)
        ok = np.abs(dw) > 1e-9
        if ok.sum() >= 1:
            inertia = float(np.sum(torque[ok] * dw[ok]) / np.sum(dw[ok] ** 2))
            if np.isfinite(inertia) and inertia > 0:
                return inertia
    if "radius_of_gyration" in raw:
        return float(mass * float(raw["radius_of_gyration"]) ** 2)
    raise KeyError("cannot determine the moment of inertia: need 'radius_of_gyration' or "
                   "'impulse_models' + 'velocity_models'")


def validate(raw: dict, name: str = "impacts") -> ImpactData:
    """Check keys, shapes, finiteness and approach velocity; raise ``KeyError``/``ValueError``
    naming the offending field."""
    missing = [k for k in (*PER_IMPACT_KEYS, *SCALAR_KEYS) if k not in raw]
    if missing:
        raise KeyError(f"{name}: missing key(s) {missing}")
    n = np.asarray(raw["states_pre"]).shape[0] if np.ndim(raw["states_pre"]) >= 1 else -1
    if n <= 0:
        raise ValueError(f"{name}: 'states_pre' must have shape (N, 6) with N >= 1")
    clean = {}
    for k, tail in {**PER_IMPACT_KEYS, **OPTIONAL_PER_IMPACT}.items():
        if k not in raw:
            continue
        a = np.asarray(raw[k])
        if a.shape != (n, *tail):
            raise ValueError(f"{name}: field '{k}' has shape {a.shape}, expected {(n, *tail)}")
        if k != "impact_ids":
            a = a.astype(np.float64)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: field '{k}' contains non-finite values")
        clean[k] = a
    for k in (*SCALAR_KEYS, *OPTIONAL_SCALARS):
        if k in raw:
            a = np.asarray(raw[k])
            if a.shape != ():
                raise ValueError(f"{name}: field '{k}' must be a scalar, got shape {a.shape}")
            clean[k] = a.astype(np.float64)
    if "model_names" in raw:
        clean["model_names"] = np.asarray(raw["model_names"])
    mass = float(clean["mass"])
    if not (np.isfinite(mass) and mass > 0):
        raise ValueError(f"{name}: field 'mass' must be positive, got {mass}")
    J = np.stack([clean["jac_tangent"], clean["jac_normal"]], axis=1)
    v_pre = clean["states_pre"][:, 3:]
    v_post = clean["states_post"][:, 3:]
    inertia = _estimate_inertia(clean, J, v_pre, mass)
    un = np.einsum("ni,ni->n", clean["jac_normal"], v_pre)
    bad = np.nonzero(~(un < 0))[0]
    if bad.size:
        raise ValueError(
            f"{name}: field 'states_pre' has {bad.size} impact(s) with non-negative normal approach "
            f"velocity (jac_normal · v_pre >= 0), e.g. index {int(bad[0])} (u_n = {un[bad[0]]:.3g}); "
            "these are not impacts")
    return ImpactData(v_pre, v_post, J, mass, inertia, clean)


def load_impacts(path) -> ImpactData:
    from ..files import read_npz

    path = Path(path)
    raw = read_npz(path, "impacts file")
    return validate(raw, name=str(path))


def split_impacts(path, test_fraction: float, seed: int, out_dir) -> tuple[Path, Path]:
    """Random split into ``train.npz`` / ``test.npz`` (same format) in ``out_dir``."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    data = load_impacts(path)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(data.n)
    n_test = int(round(test_fraction * data.n))
    if n_test < 1 or n_test >= data.n:
        raise ValueError(f"test_fraction {test_fraction} leaves an empty train or test set")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, idx in (("train", np.sort(perm[n_test:])), ("test", np.sort(perm[:n_test]))):
        p = out_dir / f"{name}.npz"
        np.savez(p, **data.subset(idx).raw)
        paths.append(p)
    return paths[0], paths[1]
