"""Fixed tendons of a jointed world (MuJoCo's ``<tendon><fixed>``): a length L = Σ_i c_i q_i over
hinge and slide coordinates q_i (``joints.coordinates``), its rate L̇ = Σ_i c_i q̇_i = G_T v with
G_T = Σ_i c_i G_i the joints' rate rows combined (``joints.rate_rows``).

``Tendons`` is the static part (which joints each tendon sums, which tendons are limited), on
``Joints.tendons``; ``TendonParams`` the traced part (coefficients, range, spring, damping, friction
loss), on ``JointParams.tendons``. A tendon acts as MuJoCo's does, with hard rows where MuJoCo's
are soft (docs/worlds.md, "Friction loss and fixed tendons"):

* a range limit is two one-sided rows of the contact problem on G_T (``limit_rows``: as a joint's
  limit, ``joints.limit_rows``), on every body the tendon's joints move;
* a spring (``stiffness``, ``springlength`` [lo, hi]: zero force inside the dead band) and a damper
  (``damping``, implicit) join the joints' passive forces in ``joints.passive_motion`` (``passive``);
* a friction loss is a bounded row on G_T (``loss_rows``: as a joint's, ``joints.loss_rows``).

This module imports none of the joints' code: the callers pass the joints' rate rows and coordinates.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import struct


@dataclasses.dataclass(frozen=True)
class Tendons:
    """The fixed tendons of a world (static, hashable): tendon t sums the coordinates of the joints
    ``joints[t]`` (indices into ``Joints``, each at most once); ``limited``: one bool per tendon
    (empty: none limited), the tendons whose ``TendonParams.range`` is enforced; ``equal``: MuJoCo's
    tendon equalities, each ``(t1, t2)`` (t2 = −1: tendon t1 alone), a bilateral row of the joints'
    system holding L₁ − L₁⁰ = p(L₂ − L₂⁰) (``equality_rows``; ``TendonParams.polycoef``, ``length0``)."""

    joints: tuple
    limited: tuple = ()
    equal: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "joints", tuple(tuple(t) for t in self.joints))
        if not self.joints:
            raise ValueError("Tendons: at least one tendon (a tuple of joint indices per tendon)")
        for t, js in enumerate(self.joints):
            if not js or any(not isinstance(j, numbers.Integral) or isinstance(j, bool) or j < 0 for j in js):
                raise ValueError(f"Tendons.joints[{t}]: a tendon sums one or more joints, each a joint index (int >= 0), "
                                 f"got {js!r}")
            twice = sorted({j for j in js if js.count(j) > 1})
            if twice:
                raise ValueError(f"Tendons.joints[{t}]: tendon {t} names joint {twice[0]} twice (a fixed tendon's "
                                 "coefficient per joint is one number: sum them)")
        object.__setattr__(self, "limited", tuple(bool(x) for x in self.limited))
        if self.limited and len(self.limited) != len(self.joints):
            raise ValueError(f"Tendons.limited: one bool per tendon ({len(self.joints)}), got {len(self.limited)}")
        if self.limited and not any(self.limited):
            object.__setattr__(self, "limited", ())
        object.__setattr__(self, "equal", tuple(tuple(int(t) for t in e) for e in self.equal))
        for e in self.equal:
            if len(e) != 2 or not 0 <= e[0] < len(self.joints) or not -1 <= e[1] < len(self.joints) or e[0] == e[1]:
                raise ValueError(f"Tendons.equal: each equality is (t1, t2), two different tendons of the {len(self.joints)}"
                                 f" (t2 = -1: t1 alone), got {e!r}")

    @property
    def num_tendons(self) -> int:
        return len(self.joints)

    @property
    def width(self) -> int:
        """The most joints one tendon sums (``TendonParams.coef``'s second axis)."""
        return max(len(js) for js in self.joints)

    @property
    def limited_tendons(self) -> tuple:
        return tuple(t for t, x in enumerate(self.limited) if x)

    def bodies(self, child, parent) -> tuple:
        """Per tendon, the bodies its joints move (sorted, the world's −1 left out): ``child``/``parent``
        the joints' (``Joints.child``, ``Joints.parent``)."""
        return tuple(tuple(sorted({b for j in js for b in (child[j], parent[j]) if b >= 0})) for js in self.joints)

    def matrix(self, coef, num_joints: int):
        """(T, J) the coefficient of every joint in every tendon (zero where a tendon skips a joint)."""
        rows = np.concatenate([[t] * len(js) for t, js in enumerate(self.joints)])
        cols = np.concatenate([list(js) for js in self.joints])
        ks = np.concatenate([np.arange(len(js)) for js in self.joints])
        coef = jnp.asarray(coef)
        return jnp.zeros((self.num_tendons, num_joints), coef.dtype).at[rows, cols].set(coef[rows, ks])


TENDON_PASSIVE = ("stiffness", "damping", "frictionloss")  # (T,) each, finite and >= 0


@struct.dataclass
class TendonParams:
    """Differentiable tendon fields. ``coef`` (T, K): tendon t's coefficient of its k-th joint
    (``Tendons.joints[t][k]``; MuJoCo's ``wrap_prm``; zero-padded to the widest tendon), so
    L_t = Σ_k coef[t, k] q_{joints[t][k]} (m or rad, as the coordinates'). ``range`` (T, 2): the
    limits of L, read for the tendons ``Tendons.limited`` marks. ``stiffness`` (T,) N/m: a spring
    −k (L − clip(L, lo, hi)) with ``springlength`` (T, 2) its dead band [lo, hi] (MuJoCo's
    ``tendon_lengthspring``), taken explicitly; ``damping`` (T,) N·s/m, implicit as a joint's;
    ``frictionloss`` (T,) N, |f| ≤ frictionloss. ``polycoef`` (E, 5) and ``length0`` (T,): the tendon
    equalities' (``Tendons.equal``) polynomial a₀ + a₁x + … + a₄x⁴ and every tendon's reference length
    (MuJoCo's ``eq_data`` and ``tendon_length0``). None: none."""

    coef: jnp.ndarray
    range: Any = None
    stiffness: Any = None
    springlength: Any = None
    damping: Any = None
    frictionloss: Any = None
    polycoef: Any = None
    length0: Any = None

    def has_passive(self) -> bool:
        return self.stiffness is not None or self.damping is not None


def lengths(tendons: Tendons, tp: TendonParams, q, qd):
    """(L (T,), L̇ (T,)) from the joints' coordinates and rates (J,) each."""
    C = tendons.matrix(tp.coef, q.shape[0])
    return C @ q, C @ qd


def rate_rows(tendons: Tendons, tp: TendonParams, G):
    """(T, 6N) every tendon's rate row G_T = Σ_i c_i G_i from the joints' rate rows G (J, 6N)."""
    return tendons.matrix(tp.coef, G.shape[0]).astype(G.dtype) @ G


def equality_rows(tendons: Tendons, tp: TendonParams, G, q):
    """The tendon equalities (``Tendons.equal``) as bilateral rows over the bodies' 6N velocities, MuJoCo's
    ``mjEQ_TENDON``: with x = L₂ − L₂⁰, error e = L₁ − L₁⁰ − p(x) and row G_T₁ − p′(x) G_T₂ (tendon t1
    alone: e = L₁ − L₁⁰ − a₀, row G_T₁), from the joints' rate rows G (J, 6N) and coordinates q (J,):
    (rows (E, 6N), error (E,))."""
    Gt = rate_rows(tendons, tp, G)
    L = tendons.matrix(tp.coef, q.shape[0]).astype(G.dtype) @ q
    a = jnp.asarray(tp.polycoef, G.dtype)
    L0 = jnp.asarray(tp.length0, G.dtype)
    rows, errs = [], []
    for k, (t1, t2) in enumerate(tendons.equal):
        if t2 < 0:
            rows.append(Gt[t1])
            errs.append(L[t1] - L0[t1] - a[k, 0])
            continue
        x = L[t2] - L0[t2]
        p = a[k, 0] + x * (a[k, 1] + x * (a[k, 2] + x * (a[k, 3] + x * a[k, 4])))
        dp = a[k, 1] + x * (2 * a[k, 2] + x * (3 * a[k, 3] + x * 4 * a[k, 4]))
        rows.append(Gt[t1] - dp * Gt[t2])
        errs.append(L[t1] - L0[t1] - p)
    return jnp.stack(rows), jnp.stack(errs)


def _contacts(Gt, bodies, row: int, signs, dtype):
    """Contacts on the tendons' rows: contact k is Gt[k]·signs[k] on row ``row`` (0 the normal, 1
    the first tangent) of its bodies ``bodies[k]`` (one side each, padded with the world's −1 to
    the widest): (rows (K, S, 3, 6), bodies (K, S))."""
    S = max(2, max(len(b) for b in bodies))
    rows, idx = [], []
    for k, bs in enumerate(bodies):
        r = jnp.zeros((S, 3, 6), dtype)
        for s, b in enumerate(bs):
            r = r.at[s, row].set(signs[k] * Gt[k, 6 * b:6 * b + 6])
        rows.append(r)
        idx.append(list(bs) + [-1] * (S - len(bs)))
    return jnp.stack(rows), jnp.asarray(idx, jnp.int32)


def limit_rows(tendons: Tendons, tp: TendonParams, G, q, qd, child, parent):
    """The limited tendons' range limits as one-sided rows, two per limited tendon (lower, then
    upper), as ``joints.limit_rows``: (rows (2L, S, 3, 6), phi (2L,), rate (2L,), bodies (2L, S))
    with S the most bodies one tendon moves (at least 2)."""
    lim = tendons.limited_tendons
    dtype = G.dtype
    Gt = rate_rows(tendons, tp, G)
    L, Ld = lengths(tendons, tp, q, qd)
    rng = jnp.asarray(tp.range, dtype)
    every = tendons.bodies(child, parent)
    picks, signs, phi, rate, bodies = [], [], [], [], []
    for t in lim:
        for sign, dist in ((1.0, L[t] - rng[t, 0]), (-1.0, rng[t, 1] - L[t])):
            picks.append(t)
            signs.append(sign)
            phi.append(dist)
            rate.append(sign * Ld[t])
            bodies.append(every[t])
    rows, idx = _contacts(Gt[np.asarray(picks)], bodies, 0, signs, dtype)
    return rows, jnp.stack(phi), jnp.stack(rate), idx


def loss_rows(tendons: Tendons, tp: TendonParams, G, child, parent):
    """Every tendon's friction loss as a contact of fixed normal impulse 1 whose first tangent row is
    G_T (as ``joints.loss_rows``): (rows (T, S, 3, 6), bodies (T, S))."""
    Gt = rate_rows(tendons, tp, G)
    return _contacts(Gt, tendons.bodies(child, parent), 1, [1.0] * tendons.num_tendons, G.dtype)


def passive(tendons: Tendons, tp: TendonParams, G, q, v1, h: float):
    """The tendons' spring and damper as rows of ``joints.passive_motion``'s Woodbury update:
    (G_T (T, 6N), c (T,) = h·damping, f (T,)) with f = h·damping·G_T v¹ + h·k·(L − clip(L, lo, hi)):
    the step solves (M' + G_Tᵀ diag(c) G_T)(v − v¹) = −G_Tᵀ f (damping implicit, the spring explicit)."""
    dtype = v1.dtype
    Gt = rate_rows(tendons, tp, G)
    zeros = jnp.zeros((tendons.num_tendons,), dtype)
    damp = zeros if tp.damping is None else jnp.asarray(tp.damping, dtype)
    force = h * damp * (Gt @ v1)
    if tp.stiffness is not None:
        L = tendons.matrix(tp.coef, q.shape[0]).astype(dtype) @ q
        band = jnp.asarray(tp.springlength, dtype)
        force = force + h * jnp.asarray(tp.stiffness, dtype) * (L - jnp.clip(L, band[:, 0], band[:, 1]))
    return Gt, h * damp, force


def check(tendons: Tendons, tp, num_joints: int, prefix: str = "params.joints.tendons") -> None:
    """Eager checks of a world's tendon fields against ``tendons``: a ``TendonParams``; ``coef``
    (T, K) finite with zeros past each tendon's joints; ``range`` (T, 2) finite, lower < upper, for
    the limited; ``stiffness``, ``damping``, ``frictionloss`` (T,) finite and >= 0; ``springlength``
    (T, 2) finite, lo <= hi, required with a stiffness; every joint index below ``num_joints``."""
    T, K = tendons.num_tendons, tendons.width
    for t, js in enumerate(tendons.joints):
        if max(js) >= num_joints:
            raise ValueError(f"Joints.tendons: tendon {t} names joint {max(js)} of a world of {num_joints} joints")
    if not isinstance(tp, TendonParams):
        raise ValueError(f"{prefix}: a world with tendons (Joints.tendons) needs tendons.TendonParams, got "
                         f"{type(tp).__name__}")
    c = np.asarray(tp.coef, float)
    if c.shape != (T, K) or not np.all(np.isfinite(c)):
        raise ValueError(f"{prefix}.coef: expected ({T}, {K}) finite coefficients (tendon t's k-th joint's), got shape "
                         f"{c.shape}")
    for t, js in enumerate(tendons.joints):
        if np.any(c[t, len(js):] != 0):
            raise ValueError(f"{prefix}.coef[{t}]: tendon {t} sums {len(js)} joints; the padding after them must be 0")
    for name in TENDON_PASSIVE:
        a = getattr(tp, name)
        if a is None:
            continue
        a = np.asarray(a, float)
        if a.shape != (T,) or not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"{prefix}.{name}: expected ({T},) finite values >= 0, one per tendon, got "
                             f"{a.tolist() if a.ndim <= 1 else a.shape}")
    E = len(tendons.equal)
    for name, shape in (("polycoef", (E, 5)), ("length0", (T,))):
        a = getattr(tp, name)
        if E and (a is None or np.shape(a) != shape or not np.all(np.isfinite(np.asarray(a, float)))):
            raise ValueError(f"{prefix}.{name}: the {E} tendon equalities (Tendons.equal) need {shape} finite values, got "
                             f"{None if a is None else np.shape(a)}")
    for name, needed in (("range", bool(tendons.limited)), ("springlength", tp.stiffness is not None)):
        a = getattr(tp, name)
        if a is None:
            if needed:
                raise ValueError(f"{prefix}.{name} is None but " + ("tendons are limited (Tendons.limited)" if name == "range"
                                                                   else "a stiffness is given (its dead band [lo, hi])"))
            continue
        a = np.asarray(a, float)
        if a.shape != (T, 2):
            raise ValueError(f"{prefix}.{name}: expected shape ({T}, 2), got {a.shape}")
        rows = tendons.limited_tendons if name == "range" else range(T)
        for t in rows:
            if not (np.all(np.isfinite(a[t])) and (a[t, 0] < a[t, 1] if name == "range" else a[t, 0] <= a[t, 1])):
                raise ValueError(f"{prefix}.{name}[{t}]: must be finite with lower {'<' if name == 'range' else '<='} "
                                 f"upper, got {a[t].tolist()}")


def broken(tp: TendonParams):
    """() whether a tendon's stiffness, damping or friction loss is negative or not finite, or its
    coefficients not finite: ``check``'s traced part (``validation.JOINT_PASSIVE``'s bit)."""
    bad = ~jnp.all(jnp.isfinite(tp.coef))
    for name in ("polycoef", "length0"):
        if getattr(tp, name) is not None:
            bad = bad | ~jnp.all(jnp.isfinite(getattr(tp, name)))
    for name in TENDON_PASSIVE:
        a = getattr(tp, name)
        if a is not None:
            bad = bad | ~jnp.all(jnp.isfinite(a) & (a >= 0))
    return bad


__all__ = ["TENDON_PASSIVE", "TendonParams", "Tendons", "broken", "check", "equality_rows", "lengths", "limit_rows", "loss_rows", "passive",
           "rate_rows"]
