"""dacm geometry: the contact detector D, the patch frame, the learned models' inputs and labels.

Everything here is a pure JAX function of one body (``vmap`` it for batches).

Contact detector D (speculative patch)
    A vertex *touches* when it is within ``tol`` of the ground at the start of the step, or
    would be at its end under the free velocity: ``φ_i + h·min(0, v¹_n,i) ≤ tol``. At 2 ms
    steps a box falling at 4 m/s moves 8 mm per step, so a purely positional detector would
    let it penetrate before any patch exists; the speculative test sees the collision one step
    ahead, as the ground-truth LCP does (its target −φ/h admits approach up to the gap).
    The patch type is the count of touching vertices: 1 point, 2 line, ≥ 3 face (3D; a planar
    polygon has at most a line). Centre: mean of the touching vertices projected on the ground.

Patch frame
    normal n = ground normal (world z in 3D, world y in 2D); tangents (t1, t2) =
    ``geometry.tangent_basis(n)`` = world x, y for a flat ground (2D: t = world x); origin at
    the patch centre c. A generalised impulse p = (P world linear, L body-frame angular) is
    written as the wrench at c:  3D  w = (P·t1, P·t2, τ_c·n | P·n, τ_c·t1, τ_c·t2),
    2D  w = (P·t | P·n, τ_c), with τ_c = R L − (c − x) × P the torque about c.
    The first block is the friction impulse p_f (the paper's (p_x, p_z, m_y)), the second the
    normal impulse p_n (the paper's (p_y, m̃_x, m̃_z)): a normal pressure on the patch only has
    torque in the tangent plane, friction only about the normal, so the split is exact.
    Output components used per patch type (the paper's "dimension of the controllable space"):
    3D point: p_f = (P·t1, P·t2), p_n = (P·n); line and face: all three of each.
    2D point: p_f = (P·t), p_n = (P·n); line: p_f = (P·t), p_n = (P·n, τ_c).

Inputs (the paper's best): rotation matrix (9 / 4 entries), centre height above the ground,
the free generalised velocity v¹ (6 / 3), the patch centre in the body frame (3 / 2), the
velocity of the body point at the patch centre under v¹ (3 / 2, world), and the mean signed
distance of the touching vertices (1): 23 inputs in 3D, 13 in 2D.

Labels of a ground-truth contact instance (p = M(v⁺ − v¹), v¹ the engine's free velocity, so p
is exactly the law's impulse; the issue's M(v⁺ − v) − h·g additionally contains the implicit
gyroscopic term):
    detach   ‖P‖ ≤ DETACH_IMPULSE (N·s; 1e-6 ≈ 1.4e-4 of one step of the box's weight),
    static   else if every touching vertex ends the step with tangential speed ≤ STATIC_SPEED
             and normal speed within STATIC_SPEED of its no-penetration target −φ_i/h
             (1e-4 m/s: sticking contacts of the engine are at ≤ 1e-6 m/s — its PGS tolerance —
             slipping ones almost all ≥ 1e-3 m/s; the gap between is nearly empty),
    dynamic  otherwise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import contact, geometry, linalg
from ..rotations import perp2d
from ..solvers import LCPSettings
from ..types import Body, Ground, PatchType, PlanarState

STATIC, DYNAMIC, DETACH = 0, 1, 2
MODE_NAMES = ("static", "dynamic", "detach")
PATCH_NAMES = {1: "point", 2: "line", 3: "face"}

STATIC_SPEED = 1e-4  # m/s, inside the measured gap between sticking and slipping speeds (docs/dacm.md, "Labels")
DETACH_IMPULSE = 1e-6  # N·s

# Patch-frame wrench components per (dim, patch type): (friction indices, normal indices).
COMPONENTS = {
    3: {1: ((0, 1), (3,)), 2: ((0, 1, 2), (3, 4, 5)), 3: ((0, 1, 2), (3, 4, 5))},
    2: {1: ((0,), (1,)), 2: ((0,), (1, 2))},
}
NF = {3: 3, 2: 1}  # friction block size of the full wrench (3D: 6 = 3 + 3, 2D: 3 = 1 + 2)


def patch_types(dim: int) -> tuple[int, ...]:
    return tuple(sorted(COMPONENTS[dim]))


def num_features(dim: int, inputs: str = "paper") -> int:
    base = 23 if dim == 3 else 13
    return {"paper": base, "physics": N_PHYSICS[dim], "both": base + N_PHYSICS[dim],
            "coulomb": N_PHYSICS[dim] + N_COULOMB[dim]}[inputs]


def select_inputs(x, x_extra, inputs: str):
    """The model input matrix / vector of an input set from the paper's x and the extra inputs
    x_extra (physics inputs, then — in data of this version — the coulomb inputs)."""
    if inputs == "paper":
        return x
    dim = 3 if x.shape[-1] == 23 else 2
    nphys = N_PHYSICS[dim]
    if inputs == "physics":
        return x_extra[..., :nphys]
    if inputs == "both":
        return (np if isinstance(x, np.ndarray) else jnp).concatenate([x, x_extra[..., :nphys]], -1)
    if inputs == "coulomb":
        if x_extra.shape[-1] != num_extra_features(dim):
            raise ValueError(f"inputs='coulomb' needs {num_extra_features(dim)} extra input columns, the data has "
                             f"{x_extra.shape[-1]} (data generated before the coulomb inputs: regenerate it)")
        return x_extra
    raise ValueError(f"inputs must be one of {INPUTS}, got {inputs!r}")


@struct.dataclass
class DPatch:
    """Speculative patch of one body: kind (PatchType), centre (world), centre in body frame,
    touching mask (K,), mean φ of the touching vertices, line axis (body frame, unit)."""

    kind: jnp.ndarray
    centre: jnp.ndarray
    centre_body: jnp.ndarray
    touching: jnp.ndarray
    phi: jnp.ndarray
    axis_body: jnp.ndarray


def _normal_speeds(body: Body, ground: Ground, state, v):
    """Normal velocity of every vertex under generalised velocity v, in closed form (O(K) FLOPs):
    3D n·(v + R(ω × r)) = n·v + r·((Rᵀn) × ω); 2D n·(v + θ̇ perp(R r))."""
    n = geometry.unit_normal(ground)
    R = geometry.rotation(state)
    d = body.dim
    if d == 2:
        return v[:2] @ n + v[2] * (perp2d(body.vertices @ R.T) @ n)
    return v[:3] @ n + body.vertices @ jnp.cross(R.T @ n, v[3:])


def detect_patch(body: Body, ground: Ground, state, v_free, tol: float, dt: float) -> DPatch:
    """The speculative contact detector D (module docstring). A polytope's: a round body (a
    ``Body.radius``, ``cylinder`` or ``ellipsoid``) is refused by name (static), since its patch
    and features are its vertices'."""
    if body.is_round:
        raise ValueError("dacm (DACMLaw, PDDLaw, their data): the contact patch and its features are a polytope's "
                         "vertices; a round body (body.radius, body.cylinder or body.ellipsoid set: a sphere, capsule, "
                         "cylinder or ellipsoid) has none. Use CoulombLCP or RelaxedCoulomb for round bodies")
    pts = geometry.world_points(state, body.vertices)
    phi = geometry.signed_distance(ground, pts)
    valid = body.vertex_mask > 0
    vn = _normal_speeds(body, ground, state, v_free)
    touching = valid & (phi + dt * jnp.minimum(vn, 0.0) <= tol)
    patch = geometry.patch_from_points(pts, phi, valid, ground, tol, touching=touching)
    count = jnp.sum(touching)
    kind = patch.kind if body.dim == 3 else jnp.minimum(patch.kind, int(PatchType.LINE))
    centre = patch.centre
    w = touching.astype(pts.dtype)
    wsum = jnp.maximum(jnp.sum(w), 1.0)
    closest = jnp.argmin(jnp.where(valid, phi, geometry.FAR))
    R = geometry.rotation(state)
    centre_body = R.T @ (centre - state.pos)
    phibar = jnp.where(count > 0, jnp.sum(w * phi) / wsum, phi[closest])
    # Line axis: from the centre to the farthest touching vertex (body frame).
    rel = body.vertices - centre_body
    dist = jnp.where(touching, jnp.sum(rel**2, -1), -1.0)
    far = rel[jnp.argmax(dist)]
    d = body.dim
    default = jnp.zeros(d, pts.dtype).at[0].set(1.0)
    nrm = jnp.linalg.norm(far)
    axis = jnp.where(nrm > 1e-9, far / jnp.maximum(nrm, 1e-12), default)
    return DPatch(kind=kind, centre=centre, centre_body=centre_body, touching=touching, phi=phibar, axis_body=axis)


def features(body: Body, ground: Ground, state, v_free, patch: DPatch) -> jnp.ndarray:
    """Input vector of the learned models (module docstring), unnormalised."""
    R = geometry.rotation(state)
    n = geometry.unit_normal(ground)
    height = jnp.dot(state.pos, n) - ground.height
    d = body.dim
    vc = geometry.point_jacobian(state, patch.centre_body, jnp.eye(d, dtype=R.dtype)) @ v_free
    return jnp.concatenate(
        [R.reshape(-1), height[None], v_free, patch.centre_body, vc, patch.phi[None]]
    ).astype(v_free.dtype)


def frame(ground: Ground, dim: int):
    n = geometry.unit_normal(ground)
    return n, geometry.tangent_basis(n)


def _cross2(a, b):
    return a[0] * b[1] - a[1] * b[0]


def to_patch_frame(ground: Ground, state, centre, p) -> jnp.ndarray:
    """Generalised impulse p → patch-frame wrench w (module docstring)."""
    n, T = frame(ground, state.dim)
    R = geometry.rotation(state)
    r = centre - state.pos
    if isinstance(state, PlanarState):
        P, L = p[:2], p[2]
        tau_c = L - _cross2(r, P)
        return jnp.stack([P @ T[0], P @ n, tau_c])
    P, L = p[:3], p[3:]
    tau_c = R @ L - jnp.cross(r, P)
    return jnp.stack([P @ T[0], P @ T[1], tau_c @ n, P @ n, tau_c @ T[0], tau_c @ T[1]])


def from_patch_frame(ground: Ground, state, centre, w) -> jnp.ndarray:
    """Patch-frame wrench w → generalised impulse p (the paper's T_f p_f + T_n p_n)."""
    n, T = frame(ground, state.dim)
    R = geometry.rotation(state)
    r = centre - state.pos
    if isinstance(state, PlanarState):
        P = w[0] * T[0] + w[1] * n
        tau = w[2] + _cross2(r, P)
        return jnp.concatenate([P, tau[None]])
    P = w[0] * T[0] + w[1] * T[1] + w[3] * n
    tau_c = w[2] * n + w[4] * T[0] + w[5] * T[1]
    return jnp.concatenate([P, R.T @ (tau_c + jnp.cross(r, P))])


def label(body: Body, ground: Ground, state, v_new, p, patch: DPatch, dt: float) -> jnp.ndarray:
    """static / dynamic / detach label of one ground-truth contact instance."""
    d = body.dim
    lin = jnp.linalg.norm(p[:d])
    n, T = frame(ground, d)
    pts = geometry.world_points(state, body.vertices)
    phi = geometry.signed_distance(ground, pts)
    dirs = jnp.concatenate([n[None], T], 0)
    vel = jax.vmap(lambda r: geometry.point_jacobian(state, r, dirs) @ v_new)(body.vertices)  # (K, d)
    err_n = jnp.abs(vel[:, 0] + phi / dt)
    err_t = jnp.max(jnp.abs(vel[:, 1:]), axis=-1)
    err = jnp.where(patch.touching, jnp.maximum(err_n, err_t), 0.0)
    static = jnp.max(err) <= STATIC_SPEED
    return jnp.where(lin <= DETACH_IMPULSE, DETACH, jnp.where(static, STATIC, DYNAMIC)).astype(jnp.int32)


def perp_axes(axis: jnp.ndarray):
    """Two unit vectors orthogonal to a unit 3-vector (and to each other)."""
    ex = jnp.array([1.0, 0.0, 0.0], axis.dtype)
    ey = jnp.array([0.0, 1.0, 0.0], axis.dtype)
    a = jnp.where(jnp.abs(axis[0]) < 0.9, ex, ey)
    a1 = a - jnp.dot(a, axis) * axis
    a1 = a1 / jnp.linalg.norm(a1)
    return a1, jnp.cross(axis, a1)


def static_impulse(body: Body, ground: Ground, state, v_free, patch: DPatch, dt: float) -> jnp.ndarray:
    """Impulse making the patch static at the end of the step, solved exactly.

    Constraint rows G (static shape nv × nv, unused rows masked): the velocity of the body
    point at the patch centre = (−φ̄/h) n (no-penetration target, 0 for a resting patch), and
    for a line the angular velocity perpendicular to the line axis = 0, for a face (3D) / line
    (2D) the whole angular velocity = 0. p = Gᵀλ with (G M⁻¹ Gᵀ) λ = g − G v¹: a point keeps
    rolling freely about the contact point, a line rocks about its axis, a face is held.
    """
    d = body.dim
    n, T = frame(ground, d)
    dirs = jnp.concatenate([n[None], T], 0)
    Gp = geometry.point_jacobian(state, patch.centre_body, dirs)  # (d, nv)
    nv = Gp.shape[1]
    dtype = Gp.dtype
    if d == 3:
        a1, a2 = perp_axes(patch.axis_body)
        Ga = jnp.concatenate([jnp.zeros((3, 3), dtype), jnp.stack([a1, a2, patch.axis_body])], 1)
        ang_mask = jnp.where(patch.kind == PatchType.POINT, jnp.array([0.0, 0, 0]),
                             jnp.where(patch.kind == PatchType.LINE, jnp.array([1.0, 1, 0]), jnp.array([1.0, 1, 1])))
    else:
        Ga = jnp.array([[0.0, 0.0, 1.0]], dtype)
        ang_mask = jnp.where(patch.kind == PatchType.LINE, jnp.array([1.0]), jnp.array([0.0]))
    G = jnp.concatenate([Gp, Ga], 0)  # (nv, nv)
    mask = jnp.concatenate([jnp.ones(d), ang_mask]).astype(dtype)
    g = jnp.zeros(nv, dtype).at[0].set(-patch.phi / dt)
    Minv = geometry.mass_matrix_inverse(body, state)
    A = G @ Minv @ G.T
    A = A * mask[:, None] * mask[None, :] + jnp.diag(1.0 - mask)
    lam = linalg.solve(A, mask * (g - G @ v_free))
    return G.T @ (mask * lam)


RATIO_FLOOR = 1e-4  # N·s, floor of the reference normal impulse (≈ 1.4 % of one step of the box's weight)


@struct.dataclass
class Reference:
    """The frictionless LCP at the free velocity: pn0 = P·n (≥ 0), per-candidate normal impulses
    z (C,), the candidates (``geometry.Contacts``) and the velocity after it, v¹ + M⁻¹J_nᵀz."""

    pn0: jnp.ndarray
    z: jnp.ndarray
    contacts: geometry.Contacts
    v_after: jnp.ndarray


def reference_lcp(model, params, state, v_free, solver=None) -> Reference:
    """The frictionless LCP at the free velocity (``Reference``); its normal impulse P·n ≥ 0 is the
    scale by which the "ratio" friction target divides p_f (dacm improvement, see docs/dacm.md)."""
    sol, con = contact.frictionless(model, params, state, v_free, solver or LCPSettings())
    p = sol.impulse
    n = geometry.unit_normal(params.ground)
    v_after = v_free + geometry.mass_matrix_inverse(params.body, state) @ p
    return Reference(pn0=jnp.dot(p[: state.dim], n), z=sol.z[:, 0], contacts=con, v_after=v_after)


def friction_scale(pn0):
    return jnp.maximum(pn0, RATIO_FLOOR)


# ---------------------------------------------------------------- "plus" inputs (improvement)
# Physically derived inputs appended to the paper's (``features="plus"``, see docs/dacm.md).
# Each addresses a measured failure of the paper's inputs on the Coulomb-LCP data:
#   * gap velocity g = φ̄/h + v¹_n,c: detach ⇔ g ≥ 0 exactly for a point patch, but dynamic and
#     detach instances lie close together in g compared with the spread of v¹_n (docs/dacm.md,
#     "Diagnosis", item 4) — fed as sign(g)·log(1 + |g|/GAP_SCALE);
#   * slip direction v_t / √(|v_t|² + ε²) and log √(|v_t|² + ε²) of the patch-centre velocity
#     (box friction saturates at ±μ p_n per axis for |v_t| ≳ μ g h = 3.5 mm/s, a step the
#     normalised velocity resolves only at 1e-2 of its std);
#   * world angular velocity (3D; v¹ holds it in the body frame) — torsion follows ω·n;
#   * log p_n⁰ (normal impulse scale of the frictionless LCP: the absolute friction impulse is
#     ∝ p_n, which spans three orders of magnitude and is no input of the paper's);
#   * the friction part of the static (stick) impulse divided by p_n⁰, clipped to ±STICK_CLIP:
#     the Coulomb friction is this stick ratio clipped to the friction cone, so the network has
#     to learn the clipping, not the Delassus operator of every patch geometry.
# Input sets (``inputs``): "paper" (the 23 / 13 above), "physics" (these 11 / 5 only — the better
# set on fresh throws: the paper's inputs let the networks memorise the few hundred impacts of
# the training throws; docs/dacm.md, improvement 2), "both" (concatenated).
#
# "coulomb" inputs (second improvement, ``inputs="coulomb"`` = the physics inputs and these): the
# friction and torsion of a patch are sums over its vertices of per-vertex friction impulses of
# magnitude ∝ the vertex's normal impulse, opposing the vertex's slip, which the patch-centre
# quantities above do not determine for a line or a face (the line / face friction regressors
# stayed weak on fresh throws, and ground-truth friction alone removes almost all of the
# trajectory error: docs/dacm.md, "Diagnosis", item 5). From the frictionless LCP at v¹
# (normal impulses z_i of the candidates, velocity after it v⁰ = v¹ + M⁻¹J_nᵀz):
#   * the unit-coefficient sliding friction s_k = Σ_i z_i σ(−u_ik) / p_n⁰ per tangent k, with
#     u_i = J_t,i v⁰ the slip of candidate i and σ(u) = u / √(u² + ε²) (|s_k| ≤ 1: the box-friction
#     ground truth is μ s_k when every vertex slides — the network has to learn μ and sticking),
#   * its torsion about the patch centre Σ_i z_i ((x_i − c) × (σ_1 t1 + σ_2 t2))·n / p_n⁰ (m),
#   * the centre of pressure relative to the patch centre Σ_i z_i (x_i − c)·t_k / p_n⁰ (m),
#   * the normal–tangential coupling A_nk / A_nn of the Delassus matrix A = G M⁻¹ Gᵀ of the
#     patch-centre point (G: its velocity rows n, t1, t2): a sliding point's normal impulse is
#     p_n⁰ A_nn / (A_nn + μ Σ_k A_nk σ_k), so the friction ratio p_f / p_n⁰ depends on it.
#   2D: s (1), the centre of pressure (1) and the coupling (1).
# No friction coefficient enters: these are properties of the frictionless normal solution.
GAP_SCALE = 1e-3  # m/s
SLIP_EPS = 1e-3  # m/s
STICK_CLIP = 3.0
INPUTS = ("paper", "physics", "both", "coulomb")
N_PHYSICS = {3: 11, 2: 5}
N_COULOMB = {3: 7, 2: 3}


def num_extra_features(dim: int) -> int:
    """Width of the data files' ``x_extra``: the physics inputs then the coulomb inputs."""
    return N_PHYSICS[dim] + N_COULOMB[dim]


def coulomb_features(body: Body, ground: Ground, state, patch: DPatch, ref: Reference) -> jnp.ndarray:
    """The "coulomb" inputs (block comment above), unnormalised."""
    d = state.dim
    n, T = frame(ground, d)
    G = geometry.point_jacobian(state, patch.centre_body, jnp.concatenate([n[None], T], 0))
    A = G @ geometry.mass_matrix_inverse(body, state) @ G.T
    coupling = A[0, 1:] / A[0, 0]
    con = ref.contacts
    z = jnp.where(con.valid, ref.z, 0.0)
    scale = friction_scale(ref.pn0)
    u = con.jac[:, 1:, :] @ ref.v_after  # (C, d-1) slip per tangent
    sig = -u / jnp.sqrt(u**2 + SLIP_EPS**2)
    s = (z @ sig) / scale
    r = con.points - patch.centre  # (C, d)
    cop = (z @ (r @ T.T)) / scale
    if d == 2:
        return jnp.concatenate([s, cop, coupling]).astype(ref.v_after.dtype)
    f = sig @ T  # (C, 3) unit-coefficient friction directions
    tors = (z @ (jnp.cross(r, f) @ n)) / scale
    return jnp.concatenate([s, tors[None], cop, coupling]).astype(ref.v_after.dtype)


# ---------------------------------------------------------------- "residual" friction head
# Our improvement over the paper (``friction_head="residual"``, needs the coulomb inputs and the
# ratio target): the regressor's output is a fitted sliding-Coulomb term plus the network,
#     y = m ⊙ b / max(1 + Σ_k m_k c_k s_k, HEAD_DEN_MIN) + NN(x),
# with b the unit-coefficient sliding friction of the coulomb inputs per output component (s_1,
# s_2 and, for a line or face, the torsion; 2D: s), s = (s_k), c the normal–tangential coupling
# A_nk / A_nn, and m (one coefficient per output component and patch type, ≈ μ) fitted by least
# squares on the training instances before the network is trained on the rest. A point that
# slides through the whole step has the ratio μσ / (1 + μ Σ_k c_k σ_k) exactly; the network then
# only learns sticking and the deviations from all-sliding. "plain" (default): the paper's head.
FRICTION_HEADS = ("plain", "residual")


def check_friction_head(friction_head: str, inputs: str, friction_target: str) -> None:
    """Raise ``ValueError`` for an unknown head, or the residual head without what it needs."""
    if friction_head not in FRICTION_HEADS:
        raise ValueError(f"friction_head must be one of {FRICTION_HEADS}, got {friction_head!r}")
    if friction_head == "residual" and (inputs != "coulomb" or friction_target != "ratio"):
        raise ValueError("friction_head='residual' needs inputs='coulomb' and friction_target='ratio'")


HEAD_DEN_MIN = 0.2  # floor of the coupling denominator (well below its values in the box data; < 0 would be Painlevé-like)


def slide_terms(x, dim: int, nf: int):
    """(b, s, c) of the residual head from coulomb-input rows x (``select_inputs(..., "coulomb")``,
    unnormalised): b (…, nf) sliding friction per output component, s (…, dim−1), c (…, dim−1)."""
    nph, nt = N_PHYSICS[dim], dim - 1
    if x.shape[-1] != nph + N_COULOMB[dim]:
        raise ValueError(f"the residual friction head needs the coulomb inputs ({nph + N_COULOMB[dim]} columns), got {x.shape[-1]}")
    return x[..., nph:nph + nf], x[..., nph:nph + nt], x[..., -nt:]


def coulomb_head(m, x, dim: int):
    """The fitted sliding-Coulomb term of the residual head (block comment above) for coefficients
    m (nf,) and coulomb-input rows x (…, F); numpy or jax arrays."""
    xp = np if isinstance(x, np.ndarray) and isinstance(m, np.ndarray) else jnp
    nt = dim - 1
    b, s, c = slide_terms(x, dim, m.shape[-1])
    den = xp.maximum(1.0 + xp.sum(m[:nt] * c * s, axis=-1, keepdims=True), HEAD_DEN_MIN)
    return m * b / den


def fit_coulomb_head(x, y, dim: int) -> np.ndarray:
    """Least-squares coefficients m (nf,) of ``coulomb_head`` for inputs x (N, F) and friction
    ratios y (N, nf) (numpy; scipy's trust-region least squares from the per-component linear fit)."""
    from scipy.optimize import least_squares

    x, y = np.asarray(x, float), np.asarray(y, float)
    nf = y.shape[1]
    b, _, _ = slide_terms(x, dim, nf)
    m0 = np.array([np.dot(b[:, j], y[:, j]) / max(np.dot(b[:, j], b[:, j]), 1e-12) for j in range(nf)])
    if len(y) < nf:
        return np.zeros(nf)
    sol = least_squares(lambda m: (coulomb_head(m, x, dim) - y).ravel(), m0)
    return sol.x


def _slog(g, scale):
    return jnp.sign(g) * jnp.log1p(jnp.abs(g) / scale)


def extra_features(body: Body, ground: Ground, state, v_free, patch: DPatch, pn0, dt: float) -> jnp.ndarray:
    """The "plus" inputs (block comment above), unnormalised; pn0 = ``reference_lcp(...).pn0``."""
    d = body.dim
    n, T = frame(ground, d)
    dirs = jnp.concatenate([n[None], T], 0)
    vc = geometry.point_jacobian(state, patch.centre_body, dirs) @ v_free  # (n, t1[, t2])
    gap = patch.phi / dt + vc[0]
    vt = vc[1:]
    nvt = jnp.sqrt(jnp.sum(vt**2) + SLIP_EPS**2)
    scale = friction_scale(pn0)
    w_stick = to_patch_frame(ground, state, patch.centre, static_impulse(body, ground, state, v_free, patch, dt))
    stick = jnp.clip(w_stick[: NF[d]] / scale, -STICK_CLIP, STICK_CLIP)
    parts = [_slog(gap, GAP_SCALE)[None], vt / nvt, jnp.log(nvt)[None]]
    if d == 3:
        parts.append(geometry.rotation(state) @ v_free[3:])
    parts += [jnp.log(jnp.maximum(pn0, 1e-6))[None], stick]
    return jnp.concatenate(parts).astype(v_free.dtype)
