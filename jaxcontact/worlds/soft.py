"""MuJoCo's soft constraints as an option of a world: ``Scene.constraints = "mujoco"``.

By default (``"hard"``) a contact and a joint's range limit are hard rows of the contact problem: an
impulse ≥ 0 that stops the approach at the surface (speculatively, from within ``Scene.margin``), with the
problem's small softness (``Scene.softness``). MuJoCo's constraints are soft: a row is in its problem
only once its distance r = φ − margin is below 0, and it then asks for the reference acceleration

    a_ref = −b v − k d(r) r,   b = 2/(d_max τ),   k = 1/(d_max² τ² ζ²)

(solref (τ, ζ), τ ≥ 2h; the direct form solref = (−k', −b') gives k = k'/d_max², b = b'/d_max), with
the impedance d(r) of solimp (d0, d_max, width, midpoint, power) and the regulariser R = (1 − d)/d · Â
on the row's diagonal, Â MuJoCo's approximation of A_ii (``mj_diagApprox``: the bodies' or the dof's
inverse weight at qpos0). In this engine's velocity-level problem that is a per-row target velocity
v + h a_ref (v the row's velocity at the step's start) and a per-row diagonal R added to A's (in
``soften``'s relative form, R / A_ii), built once in the step's contact stage
(``pipeline._contacts_coupled``: ``problem``) so that every solve path and the implicit adjoint see the
same rows. Where ``SoftParams.invweight`` (or ``limit_invweight``) is None, Â is the row's own A_ii.

What is soft: every body–ground and body–body contact (solref, solimp and margin mixed from the two
sides' as MuJoCo's ``mj_contactParam``: the higher priority's, else by solmix, the margins added; the
ground's from ``ground_*``) and every range limit of a hinge, slide or ball (``JointParams.limit_soft``:
MuJoCo's ``jnt_solref``; ``SoftParams.limit_*``). Under MuJoCo's pyramidal cone (its default) a contact is
its four edges n ± μ_j t_j, each a frictionless row ≥ 0 whose velocity holds the slip, with MuJoCo's
R = 2 μ²/impratio · (1 − d)/d · Â (1 + μ²) (``problem``); under the elliptic cone its normal row is soft
and its friction rows stay this engine's (the law's cone, bounded by μ times the soft normal impulse).
Tendon limits, friction losses, welds and equalities stay hard. In the mode a world may step by MuJoCo's
RK4 (``Scene.integrator``, ``INTEGRATORS``; ``pipeline.rk4_stages``), and its Euler step computes the rows'
forces with M, the damping explicit, and applies them with M + hD as MuJoCo's (``joints.damped``).
``worlds.from_mjcf(path, constraints="mujoco")`` loads a file's compiled values (and ``opt.integrator``); ``soft_params``
builds MuJoCo's defaults for a world made by hand. docs/worlds.md, "MuJoCo's soft constraints".
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from ..solvers import normal_diagonal

CONSTRAINTS = ("hard", "mujoco")
"""``Scene.constraints``: this engine's hard rows (the default) or MuJoCo's soft constraint law."""

MIN_IMPEDANCE, MAX_IMPEDANCE = 1e-4, 0.9999  # MuJoCo's mjMINIMP, mjMAXIMP: solimp's d0, d_max, midpoint clamp
MIN_VALUE = 1e-15  # MuJoCo's mjMINVAL

DEFAULT_SOLREF = (0.02, 1.0)
DEFAULT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)


@struct.dataclass
class SoftParams:
    """The values of MuJoCo's soft constraints (``Scene.constraints = "mujoco"``; module docstring).

    Per body (N, …), for its contacts: ``solref`` (N, 2) (time constant s, damping ratio; or the
    direct form, both < 0), ``solimp`` (N, 5) (d0, d_max, width m, midpoint, power), ``solmix`` (N,)
    (the weight of a body's values where two of equal priority meet), ``margin`` (N,) m (margin − gap: a
    contact is in the problem once φ < the sum of its two sides', and r = φ − that sum), ``invweight`` (N,)
    1/kg or None (MuJoCo's ``body_invweight0`` translational part, 0 for a fixed body: Â of a contact
    is the sum of its two sides'; None: the row's own A_ii). The ground's: ``ground_solref`` (2,),
    ``ground_solimp`` (5,), ``ground_solmix`` (), ``ground_margin`` (). ``impratio`` (): MuJoCo's
    ``opt.impratio``. Per joint, for its range limits (None without limited joints): ``limit_solimp``
    (J, 5), ``limit_margin`` (J,), ``limit_invweight`` (J,) or None (MuJoCo's ``dof_invweight0``); the
    limits' solref is ``JointParams.limit_soft``. Static: ``priority`` (N,) and ``ground_priority``
    (MuJoCo's geom priority), ``condim`` (N,) and ``ground_condim``, ``cone`` ("pyramidal", MuJoCo's
    default, or "elliptic")."""

    solref: jnp.ndarray
    solimp: jnp.ndarray
    solmix: jnp.ndarray
    margin: jnp.ndarray
    ground_solref: jnp.ndarray
    ground_solimp: jnp.ndarray
    ground_solmix: jnp.ndarray
    ground_margin: jnp.ndarray
    impratio: jnp.ndarray
    invweight: Any = None
    limit_solimp: Any = None
    limit_margin: Any = None
    limit_invweight: Any = None
    priority: tuple = struct.field(pytree_node=False, default=())
    ground_priority: int = struct.field(pytree_node=False, default=0)
    condim: tuple = struct.field(pytree_node=False, default=())
    ground_condim: int = struct.field(pytree_node=False, default=3)
    cone: str = struct.field(pytree_node=False, default="pyramidal")


def soft_params(num_bodies: int, num_joints: int = 0, solref=DEFAULT_SOLREF, solimp=DEFAULT_SOLIMP,
                invweight=None, impratio: float = 1.0, cone: str = "pyramidal", condim: int = 3,
                dtype=None) -> SoftParams:
    """MuJoCo's defaults (or the given ``solref``, ``solimp``) on every body, the ground and every
    joint's limits: solmix 1, margin 0, priority 0, ``condim`` everywhere; ``invweight`` (N,) or None
    (Â = the row's own A_ii; a free body's MuJoCo value is 1/mass)."""
    dtype = dtype or jnp.asarray(0.0).dtype
    N, J = int(num_bodies), int(num_joints)
    ref, imp = jnp.asarray(solref, dtype), jnp.asarray(solimp, dtype)
    return SoftParams(
        solref=jnp.tile(ref, (N, 1)), solimp=jnp.tile(imp, (N, 1)), solmix=jnp.ones((N,), dtype),
        margin=jnp.zeros((N,), dtype), ground_solref=ref, ground_solimp=imp, ground_solmix=jnp.ones((), dtype),
        ground_margin=jnp.zeros((), dtype), impratio=jnp.asarray(impratio, dtype),
        invweight=None if invweight is None else jnp.asarray(invweight, dtype),
        limit_solimp=jnp.tile(imp, (J, 1)) if J else None, limit_margin=jnp.zeros((J,), dtype) if J else None,
        priority=(0,) * N, condim=(int(condim),) * N, ground_condim=int(condim), cone=cone)


def impedance(solimp, r):
    """MuJoCo's impedance d(r) ∈ (0, 1) of a row at distance r = φ − margin (``getimpedance``): d0 at
    r = 0 rising to d_max at |r| ≥ width along two power curves that meet at the midpoint; flat
    (d0 + d_max)/2 where d0 = d_max or the width is 0. solimp (…, 5), r (…)."""
    d0 = jnp.clip(solimp[..., 0], MIN_IMPEDANCE, MAX_IMPEDANCE)
    dmax = jnp.clip(solimp[..., 1], MIN_IMPEDANCE, MAX_IMPEDANCE)
    width = jnp.maximum(solimp[..., 2], 0.0)
    mid = jnp.clip(solimp[..., 3], MIN_IMPEDANCE, MAX_IMPEDANCE)
    power = jnp.maximum(solimp[..., 4], 1.0)
    flat = (d0 == dmax) | (width <= MIN_VALUE)
    x = jnp.abs(r) / jnp.where(flat, 1.0, width)
    xs = jnp.clip(x, 1e-12, 1.0 - 1e-12)  # the curves' inside (x = 0 and x ≥ 1 are the saturated ends)
    low = xs ** power / mid ** (power - 1.0)
    high = 1.0 - (1.0 - xs) ** power / (1.0 - mid) ** (power - 1.0)
    y = jnp.where(power == 1.0, xs, jnp.where(xs <= mid, low, high))
    y = jnp.where(x >= 1.0, 1.0, jnp.where(x <= 0.0, 0.0, y))
    return jnp.where(flat, 0.5 * (d0 + dmax), d0 + y * (dmax - d0))


def reference(solref, solimp, r, v, dt: float):
    """(a_ref, d, R/Â): MuJoCo's reference acceleration a_ref = −b v − k d(r) r of rows at distance r
    moving at v (``mj_makeImpedance``, ``mj_referenceConstraint``; τ raised to 2h as MuJoCo's safety),
    their impedance d and the regulariser's factor (1 − d)/d."""
    d = impedance(solimp, r)
    dmax = jnp.clip(solimp[..., 1], MIN_IMPEDANCE, MAX_IMPEDANCE)
    standard = solref[..., 0] > 0
    tau = jnp.where(standard, jnp.maximum(solref[..., 0], 2.0 * dt), 1.0)
    zeta = jnp.where(standard, solref[..., 1], 1.0)
    k = jnp.where(standard, 1.0 / jnp.maximum(dmax ** 2 * tau ** 2 * zeta ** 2, MIN_VALUE),
                  -solref[..., 0] / jnp.maximum(dmax ** 2, MIN_VALUE))
    b = jnp.where(standard, 2.0 / jnp.maximum(dmax * tau, MIN_VALUE), -solref[..., 1] / jnp.maximum(dmax, MIN_VALUE))
    return -b * v - k * d * r, d, (1.0 - d) / d


def mixed(sp: SoftParams, bodies):
    """(solref (C, 2), solimp (C, 5), margin (C,), condim (C,)) of contacts between ``bodies`` (C, 2)
    (−1: the ground), as MuJoCo's ``mj_contactParam``: the higher priority side's values; at equal
    priority solref and solimp mixed by solmix (solref by the minimum where either is direct), condim
    the larger; the margin the sum of the two sides' (MuJoCo's ``getMargin``: geom margins add, as do gaps)."""
    N = sp.solref.shape[0]
    ext = lambda body, ground: jnp.concatenate([body, jnp.asarray(ground, body.dtype)[None]])
    at = lambda x, b: x[jnp.where(b < 0, N, b)]
    b1, b2 = bodies[:, 0], bodies[:, 1]
    ref, imp = ext(sp.solref, sp.ground_solref), ext(sp.solimp, sp.ground_solimp)
    mix, margin = ext(sp.solmix, sp.ground_solmix), ext(sp.margin, sp.ground_margin)
    prio = jnp.asarray(tuple(sp.priority) + (sp.ground_priority,), jnp.int32)
    cond = jnp.asarray(tuple(sp.condim) + (sp.ground_condim,), jnp.int32)
    r1, r2, i1, i2, m1, m2 = at(ref, b1), at(ref, b2), at(imp, b1), at(imp, b2), at(mix, b1), at(mix, b2)
    g1, g2 = at(margin, b1), at(margin, b2)
    p1, p2, c1, c2 = at(prio, b1), at(prio, b2), at(cond, b1), at(cond, b2)
    big1, big2 = m1 >= MIN_VALUE, m2 >= MIN_VALUE
    w = jnp.where(big1 & big2, m1 / jnp.where(big1 & big2, m1 + m2, 1.0),
                  jnp.where(~big1 & ~big2, 0.5, jnp.where(big1, 1.0, 0.0)))[:, None]
    std = (r1[:, :1] > 0) & (r2[:, :1] > 0)
    ref_eq = jnp.where(std, w * r1 + (1 - w) * r2, jnp.minimum(r1, r2))
    imp_eq = w * i1 + (1 - w) * i2
    first, second = (p1 > p2)[:, None], (p1 < p2)[:, None]
    solref = jnp.where(first, r1, jnp.where(second, r2, ref_eq))
    solimp = jnp.where(first, i1, jnp.where(second, i2, imp_eq))
    condim = jnp.where(p1 > p2, c1, jnp.where(p1 < p2, c2, jnp.maximum(c1, c2)))
    return solref, solimp, g1 + g2, condim


@struct.dataclass
class SoftProblem:
    """A world's contact problem with MuJoCo's soft rows (``problem``): ``prob`` (its ``BodyProblem``,
    C' contacts), ``mu`` (C', 2), ``vn_pre`` (C',) each row's normal velocity at the step's start,
    ``soft`` (C', 3) the relative diagonal of each row (R / A_ii on a soft row's normal, ``ours`` on the
    others), ``edge_mu`` (contacts, 2) the edges' μ (0 for a frictionless contact), ``edges``: how many
    pyramid edges replace each of the first ``contacts`` contacts (4, or 1 without the pyramid:
    ``collapse``, ``spread``)."""

    prob: Any
    mu: jnp.ndarray
    vn_pre: jnp.ndarray
    soft: jnp.ndarray
    edge_mu: jnp.ndarray
    contacts: int = struct.field(pytree_node=False, default=0)
    edges: int = struct.field(pytree_node=False, default=1)

    def collapse(self, z):
        """(C, 3) the impulses of the world's contacts from the rows' ``z`` (C', 3): a contact's pyramid
        edges n ± μ_j t_j summed into its normal and tangents (z_n = Σ z_e, z_tj = μ_j (z_j⁺ − z_j⁻))."""
        if self.edges == 1:
            return z
        P = self.contacts
        e = z[:4 * P, 0].reshape(P, 4)
        mu = self.edge_mu
        z_c = jnp.stack([e.sum(axis=1), mu[:, 0] * (e[:, 0] - e[:, 1]), mu[:, 1] * (e[:, 2] - e[:, 3])], axis=1)
        return jnp.concatenate([z_c, z[4 * P:]])

    def spread(self, z):
        """``collapse``'s inverse for a warm start: (C', 3) rows from the contacts' impulses ``z`` (C, 3),
        a contact's normal shared by its four edges and its tangents split between each pair's two
        (z_j± = z_n/4 ± z_tj/(2 μ_j), at least 0)."""
        if self.edges == 1:
            return z
        P = self.contacts
        mu = jnp.where(self.edge_mu > 0, self.edge_mu, 1.0)
        zn, t1, t2 = z[:P, 0] / 4.0, z[:P, 1] / (2.0 * mu[:, 0]), z[:P, 2] / (2.0 * mu[:, 1])
        t1, t2 = jnp.where(self.edge_mu[:, 0] > 0, t1, 0.0), jnp.where(self.edge_mu[:, 1] > 0, t2, 0.0)
        e = jnp.maximum(jnp.stack([zn + t1, zn - t1, zn + t2, zn - t2], axis=1), 0.0).reshape(-1)
        return jnp.concatenate([jnp.zeros((4 * P, 3), z.dtype).at[:, 0].set(e), z[P:]])


def problem(scene, params, con, prob, mu, vel_pre, dt: float, ours=None) -> SoftProblem:
    """A world's contact problem with MuJoCo's soft rows (``Scene.constraints = "mujoco"``) from ``con``'s
    contacts (``contacts.WorldContacts``), ``prob`` (their ``BodyProblem``), ``mu`` (C, 2) their friction,
    ``vel_pre`` (C, 3) their rows' velocities at the step's start (normal, tangents) and ``ours`` (C,) or None the scene's
    softness of the others. Soft: the body–ground and body–body contacts and the joints' range limits;
    each is in the problem once its distance r = φ − margin is below 0 and asks for v + h a_ref with R on
    its diagonal. Under MuJoCo's pyramidal cone (``SoftParams.cone``) each contact becomes its four edges
    n ± μ_j t_j, frictionless rows ≥ 0 of velocity v_e (normal and slip) and target v_e + h a_ref(v_e),
    each with MuJoCo's R = 2 μ²/impratio · (1 − d)/d · Â (1 + μ²) (a frictionless contact, condim 1:
    4 (1 − d)/d Â, its four rows the normal's); under the elliptic cone the contact keeps this engine's
    friction rows beside a soft normal row. Other rows (tendon limits, friction losses) are as given."""
    sp = params.soft
    C = con.phi.shape[0]
    dtype = con.phi.dtype
    P = con.pair_end
    vn_pre = vel_pre[:, 0]
    soft_row = np.zeros(C, bool)
    soft_row[:P] = True
    solref = jnp.zeros((C, 2), dtype).at[:, 0].set(DEFAULT_SOLREF[0]).at[:, 1].set(DEFAULT_SOLREF[1])
    solimp = jnp.broadcast_to(jnp.asarray(DEFAULT_SOLIMP, dtype), (C, 5))
    margin = jnp.zeros((C,), dtype)
    approx = jnp.zeros((C,), dtype)
    given = np.zeros(C, bool)
    mu = jnp.asarray(mu, dtype)
    condim = jnp.full((P,), 3, jnp.int32)
    if P:
        ref_c, imp_c, margin_c, condim = mixed(sp, con.bodies[:P, :2])
        solref, solimp = solref.at[:P].set(ref_c), solimp.at[:P].set(imp_c)
        margin = margin.at[:P].set(margin_c)
        if sp.invweight is not None:
            w = jnp.concatenate([jnp.asarray(sp.invweight, dtype), jnp.zeros((1,), dtype)])
            b = con.bodies[:P, :2]
            approx = approx.at[:P].set(w[jnp.where(b[:, 0] < 0, -1, b[:, 0])] + w[jnp.where(b[:, 1] < 0, -1, b[:, 1])])
            given[:P] = True
    joints = scene.joints
    if joints is not None and joints.limited:
        L = joints.num_limit_rows
        at = slice(P, P + L)
        j = joints.limit_row_joints
        soft_row[at] = True
        solref = solref.at[at].set(jnp.asarray(params.joints.limit_soft, dtype)[j])
        solimp = solimp.at[at].set(jnp.asarray(sp.limit_solimp, dtype)[j])
        margin = margin.at[at].set(jnp.asarray(sp.limit_margin, dtype)[j])
        if sp.limit_invweight is not None:
            approx = approx.at[at].set(jnp.asarray(sp.limit_invweight, dtype)[j])
            given[P:P + L] = True
    r = con.phi - margin
    active = ~jnp.asarray(soft_row) | (jax.lax.stop_gradient(r) < 0)
    base = jnp.zeros((C,), dtype) if ours is None else jnp.asarray(ours, dtype)
    pyramid = sp.cone == "pyramidal" and P > 0
    if pyramid:  # each contact its four edges n ± μ_j t_j (MuJoCo's pyramidal cone), after them the other rows
        frictionless = (condim <= 1)[:, None]
        m_e = jnp.where(frictionless, 0.0, mu[:P])
        sign = jnp.asarray([1.0, -1.0, 1.0, -1.0], dtype)
        tan = jnp.asarray([1, 1, 2, 2])
        n = prob.rows[:P, :, 0]  # (P, S, 6)
        t = prob.rows[:P][:, :, tan]  # (P, S, 4, 6)
        m4 = m_e[:, jnp.asarray([0, 0, 1, 1])] * sign  # (P, 4)
        e_rows = n[:, :, None, :] + m4[:, None, :, None] * t  # (P, S, 4, 6)
        e_rows = jnp.moveaxis(e_rows, 2, 1).reshape(4 * P, n.shape[1], 1, 6)
        e_rows = jnp.concatenate([e_rows, jnp.zeros(e_rows.shape[:2] + (2, 6), dtype)], axis=2)
        rep = lambda x: jnp.repeat(x[:P], 4, axis=0)
        rows = jnp.concatenate([e_rows, prob.rows[P:]])
        bodies = jnp.concatenate([rep(prob.bodies), prob.bodies[P:]])
        slip = (m4 * jnp.repeat(vel_pre[:P, 1:], 2, axis=1)).reshape(-1)  # each edge's ±μ_j v_tj
        v_pre = jnp.concatenate([rep(vn_pre) + slip, vn_pre[P:]])
        phi = jnp.concatenate([rep(prob.phi), prob.phi[P:]])
        valid = jnp.concatenate([rep(prob.valid & active), (prob.valid & active)[P:]])
        target_other = prob.target[P:]
        expand = lambda x: jnp.concatenate([rep(x), x[P:]])
        solref, solimp, r, approx, base = expand(solref), expand(solimp), expand(r), expand(approx), expand(base)
        given = np.concatenate([np.repeat(given[:P], 4), given[P:]])
        soft_row = np.concatenate([np.repeat(soft_row[:P], 4), soft_row[P:]])
        me = jnp.repeat(m_e[:, 0], 4)
        factor = jnp.concatenate([jnp.where(jnp.repeat(frictionless[:, 0], 4), 4.0,
                                            2.0 * me ** 2 / sp.impratio * (1.0 + me ** 2)), jnp.ones((C - P,), dtype)])
        mu_new = jnp.concatenate([jnp.zeros((4 * P, 2), dtype), mu[P:]])
        new = prob.replace(rows=rows, bodies=bodies, phi=phi, valid=valid,
                           target=jnp.concatenate([jnp.zeros((4 * P,), dtype), target_other]),
                           fixed_normal=None if prob.fixed_normal is None else expand(prob.fixed_normal))
    else:
        v_pre, new, mu_new, factor = vn_pre, prob.replace(valid=prob.valid & active), mu, jnp.ones((C,), dtype)
    aref, _, ratio = reference(solref, solimp, r, v_pre, dt)
    new = new.replace(target=jnp.where(soft_row, v_pre + dt * aref, new.target))
    diag = normal_diagonal(new)
    own = jnp.where(given, approx / jnp.where(diag > MIN_VALUE, diag, 1.0), 1.0)
    normal = jnp.where(soft_row, jnp.maximum(ratio * factor * own, 0.0), base)
    soft = jnp.stack([normal, base, base], axis=1)
    return SoftProblem(prob=new, mu=mu_new, vn_pre=v_pre, soft=soft, edge_mu=m_e if pyramid else mu[:0],
                       contacts=P if pyramid else 0, edges=4 if pyramid else 1)


def check_soft(scene, params) -> None:
    """Refuse, by name, what a world's MuJoCo-soft constraints cannot use: ``params.soft`` missing (or
    given to a hard world), its shapes (static, also under ``jit``), and concrete values out of range
    (``broken_soft``'s rules, eagerly): a solref not both > 0 (standard) or < 0 and ≤ 0 (direct), a solimp
    whose d0, d_max or midpoint is outside [0, 1] (MuJoCo clamps them into [1e-4, 0.9999]), whose width
    is < 0 or whose power is < 1, a solmix,
    margin or inverse weight < 0 or not finite."""
    sp = getattr(params, "soft", None)
    mode = getattr(scene, "constraints", "hard")
    if mode != "mujoco":
        if sp is not None:
            raise ValueError("params.soft: MuJoCo's soft-constraint values are given but Scene.constraints is "
                             f"{mode!r}; make the scene with constraints='mujoco' to use them, or drop params.soft")
        return
    if not isinstance(sp, SoftParams):
        raise ValueError("Scene.constraints='mujoco' needs params.soft (a worlds.soft.SoftParams: "
                         "worlds.soft_params(...) for MuJoCo's defaults, or from_mjcf(..., constraints='mujoco'))")
    N = scene.num_bodies
    want = {"solref": (N, 2), "solimp": (N, 5), "solmix": (N,), "margin": (N,), "ground_solref": (2,),
            "ground_solimp": (5,), "ground_solmix": (), "ground_margin": (), "impratio": ()}
    if sp.invweight is not None:
        want["invweight"] = (N,)
    joints = scene.joints
    J = 0 if joints is None else joints.num_joints
    if joints is not None and joints.limited:
        jp = params.joints
        if getattr(jp, "limit_soft", None) is None or sp.limit_solimp is None or sp.limit_margin is None:
            raise ValueError("Scene.constraints='mujoco' with limited joints needs params.joints.limit_soft (J, 2) "
                             "(the limits' solref) and params.soft.limit_solimp (J, 5), limit_margin (J,)")
        want |= {"limit_solimp": (J, 5), "limit_margin": (J,)}
        if sp.limit_invweight is not None:
            want["limit_invweight"] = (J,)
    for name, shape in want.items():
        got = np.shape(getattr(sp, name))
        if got != shape:
            raise ValueError(f"params.soft.{name}: expected shape {shape}, got {got}")
    if len(sp.priority) != N or len(sp.condim) != N:
        raise ValueError(f"params.soft.priority and condim: one per body ({N}), got {len(sp.priority)} and "
                         f"{len(sp.condim)}")
    if sp.cone not in ("pyramidal", "elliptic"):
        raise ValueError(f"params.soft.cone must be 'pyramidal' or 'elliptic', got {sp.cone!r}")
    try:
        vals = {k: np.asarray(getattr(sp, k), float) for k in want}
        if "limit_solimp" in want:
            vals["limit_solref"] = np.asarray(params.joints.limit_soft, float)[list(joints.limited_joints)]
    except Exception:  # traced: the step's flags (validation.SOFT) say what went wrong
        return
    for name in ("solref", "ground_solref", "limit_solref"):
        if name in vals:
            ref = vals[name].reshape(-1, 2)
            ok = _solref_ok(ref, np)
            if not np.all(ok):
                where = "params.joints.limit_soft" if name == "limit_solref" else f"params.soft.{name}"
                raise ValueError(f"{where}: a solref is (time constant > 0, damping ratio > 0) or MuJoCo's direct "
                                 f"(−stiffness < 0, −damping ≤ 0), got {ref[np.argmin(ok)].tolist()}")
    for name in ("solimp", "ground_solimp", "limit_solimp"):
        if name in vals:
            imp = vals[name].reshape(-1, 5)
            ok = _solimp_ok(imp, np)
            if not np.all(ok):
                raise ValueError(f"params.soft.{name}: a solimp is (d0, d_max in [0, 1], width ≥ 0, midpoint in "
                                 f"[0, 1], power ≥ 1; MuJoCo clamps d0, d_max, midpoint into [1e-4, 0.9999]), "
                                 f"got {imp[np.argmin(ok)].tolist()}")
    for name in ("solmix", "margin", "ground_solmix", "ground_margin", "invweight", "limit_margin", "limit_invweight"):
        if name in vals and not (np.all(np.isfinite(vals[name])) and np.all(vals[name] >= 0)):
            raise ValueError(f"params.soft.{name}: must be finite and >= 0, got {vals[name].tolist()}")
    if not (np.isfinite(vals["impratio"]) and vals["impratio"] > 0):
        raise ValueError(f"params.soft.impratio: must be finite and > 0, got {float(vals['impratio']):g}")


def _solref_ok(ref, xp):
    """(K,) whether each solref row of ``ref`` (K, 2) is standard (τ > 0, ζ > 0) or direct (−k < 0, −b ≤ 0);
    ``xp``: numpy (``check_soft``, eagerly) or jax.numpy (``broken_soft``, traced)."""
    return xp.all(xp.isfinite(ref), axis=1) & (((ref[:, 0] > 0) & (ref[:, 1] > 0)) | ((ref[:, 0] < 0) & (ref[:, 1] <= 0)))


def _solimp_ok(imp, xp):
    """(K,) whether each solimp row of ``imp`` (K, 5) is finite with d0, d_max and the midpoint in [0, 1],
    the width ≥ 0 and the power ≥ 1 (``_solref_ok``'s ``xp``)."""
    return (xp.all(xp.isfinite(imp), axis=1) & (imp[:, 0] >= 0) & (imp[:, 0] <= 1) & (imp[:, 1] >= 0)
            & (imp[:, 1] <= 1) & (imp[:, 2] >= 0) & (imp[:, 3] >= 0) & (imp[:, 3] <= 1) & (imp[:, 4] >= 1))


def broken_soft(scene, params):
    """``check_soft``'s value rules, traced (``validation.SOFT``'s bit under ``jit``/``vmap``)."""
    sp = params.soft

    def solref_bad(ref):
        return ~jnp.all(_solref_ok(ref.reshape(-1, 2), jnp))

    def solimp_bad(imp):
        return ~jnp.all(_solimp_ok(imp.reshape(-1, 5), jnp))

    nonneg = lambda x: ~jnp.all(jnp.isfinite(x) & (x >= 0))
    bad = (solref_bad(sp.solref) | solref_bad(sp.ground_solref) | solimp_bad(sp.solimp) | solimp_bad(sp.ground_solimp)
           | nonneg(sp.solmix) | nonneg(sp.margin) | nonneg(sp.ground_solmix) | nonneg(sp.ground_margin)
           | ~(jnp.isfinite(sp.impratio) & (sp.impratio > 0)))
    if sp.invweight is not None:
        bad = bad | nonneg(sp.invweight)
    joints = scene.joints
    if joints is not None and joints.limited:
        lim = np.asarray(joints.limited_joints)
        bad = (bad | solref_bad(jnp.asarray(params.joints.limit_soft)[lim]) | solimp_bad(sp.limit_solimp[lim])
               | nonneg(sp.limit_margin[lim]))
        if sp.limit_invweight is not None:
            bad = bad | nonneg(sp.limit_invweight[lim])
    return bad


INTEGRATORS = ("euler", "rk4")
"""``Scene.integrator``: the semi-implicit Euler step (the default) or MuJoCo's four-stage Runge–Kutta."""


def check_integrator(integrator, constraints: str = "mujoco") -> str:
    """``Scene.integrator``, refused by name when it is not one of ``INTEGRATORS``, or "rk4" beside the
    hard rows: a Runge–Kutta stage's acceleration needs forces (MuJoCo's soft rows), where a hard row's
    impulse stops an approach within one step."""
    if not isinstance(integrator, str) or integrator not in INTEGRATORS:
        raise ValueError(f"Scene.integrator must be one of {INTEGRATORS}, got {integrator!r}")
    if integrator == "rk4" and constraints != "mujoco":
        raise ValueError("Scene.integrator='rk4' needs constraints='mujoco': its stages combine accelerations, "
                         "which MuJoCo's soft rows are and the hard rows' impulses are not")
    return integrator


def check_mode(constraints) -> str:
    """``Scene.constraints``, refused by name when it is not one of ``CONSTRAINTS``."""
    if not isinstance(constraints, str) or constraints not in CONSTRAINTS:
        raise ValueError(f"Scene.constraints must be one of {CONSTRAINTS}, got {constraints!r}")
    return constraints


__all__ = ["CONSTRAINTS", "DEFAULT_SOLIMP", "DEFAULT_SOLREF", "INTEGRATORS", "SoftParams", "broken_soft", "check_integrator",
           "check_mode", "check_soft", "mixed",
           "impedance", "problem", "reference", "soft_params", "SoftProblem"]
