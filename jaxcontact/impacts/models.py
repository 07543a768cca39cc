"""The six planar rigid impact maps of Fazeli et al. as pure JAX functions.

Every map takes the contact-space quantities of one impact,

* ``u0 = J v``      -- pre-impact contact-point velocity ``(u_t, u_n)`` (``u_n < 0`` approaching),
* ``W = J M⁻¹ Jᵀ``  -- the 2x2 contact-space compliance (inverse contact inertia),

and the parameters ``(mu, eps)``; it returns the contact impulse ``P = (P_t, P_n)``. The post-impact
generalised velocity is ``v⁺ = v + M⁻¹ Jᵀ P`` (:func:`impact`). All maps are closed forms or short
fixed-iteration root finds (no Python control flow on traced values), so they are jit-able,
vmappable and differentiable almost everywhere.

Conventions follow the reference implementations the study used (Fazeli's
``planar-contact-models``): Coulomb friction ``|P_t| <= mu P_n``; the friction pyramid of
Anitescu-Potra / Stewart-Trinkle is exact in the plane.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

MODEL_NAMES = (
    "Drumwright-Shell",
    "AP Poisson",
    "AP Newton",
    "Mirtich",
    "Wang-Mason",
    "Whittaker",
)
SHORT_NAMES = ("drumshell", "ap_poisson", "ap_newton", "mirtich", "wang_mason", "whittaker")

_TINY = 1e-30


def contact_quantities(v, J, Minv):
    """``(u0, W)`` for generalised velocity ``v`` (3,), Jacobian ``J`` (2,3) = [tangent; normal]."""
    W = J @ Minv @ J.T
    W = 0.5 * (W + W.T)
    return J @ v, W


def safe_div(a, b):
    b = jnp.where(jnp.abs(b) > _TINY, b, jnp.where(b >= 0, _TINY, -_TINY))
    return a / b


def solve2(W, r):
    """Solve the 2x2 system ``W x = r`` in closed form (W SPD)."""
    det = W[0, 0] * W[1, 1] - W[0, 1] * W[1, 0]
    inv = jnp.array([[W[1, 1], -W[0, 1]], [-W[1, 0], W[0, 0]]])
    return safe_div(inv @ r, det)


def _approaching(u0):
    return u0[1] < 0.0


# ---------------------------------------------------------------------------------------------
# Algebraic / complementarity models
# ---------------------------------------------------------------------------------------------


def _coulomb_lcp(u0, W, mu, target_n):
    """Planar frictional LCP of Anitescu & Potra (1997) / Stewart & Trinkle (1996).

    Post-impact normal velocity is driven to ``target_n`` (0: inelastic; ``-eps u_n``: Newton),
    tangential velocity to zero if the sticking impulse lies in the friction cone, otherwise the
    impulse slides on the cone edge ``P_t = s mu P_n`` with ``s`` the sign of the sticking
    tangential impulse (maximal dissipation). This is the unique solution of the planar LCP when
    ``W_nn > mu |W_tn|``, which holds for every impact in the data set.
    """
    un = u0[1]
    stick = solve2(W, jnp.array([0.0, target_n]) - u0)
    s = jnp.where(stick[0] >= 0, 1.0, -1.0)
    denom = W[1, 1] + s * mu * W[1, 0]
    pn_slide = jnp.maximum(safe_div(target_n - un, denom), 0.0)
    slide = jnp.array([s * mu * pn_slide, pn_slide])
    in_cone = (jnp.abs(stick[0]) <= mu * stick[1]) & (stick[1] >= 0)
    P = jnp.where(in_cone, stick, slide)
    return jnp.where(_approaching(u0), P, jnp.zeros(2))


def ap_newton(u0, W, mu, eps):
    """Anitescu-Potra LCP with Newton restitution: ``u_n⁺ >= -eps u_n``, Coulomb friction.

    Anitescu M., Potra F.A. (1997) Formulating dynamic multi-rigid-body contact problems with
    friction as solvable linear complementarity problems. Nonlinear Dynamics 14:231-247.
    Reference implementation: Fazeli, ``planar-contact-models/src/APNewton.m``.
    """
    return _coulomb_lcp(u0, W, mu, -eps * u0[1])


def ap_poisson(u0, W, mu, eps):
    """Anitescu-Potra LCP with Poisson restitution: inelastic LCP, then ``P_n <- (1+eps) P_n``.

    The tangential impulse of the compression phase is kept (as in the reference implementation
    ``planar-contact-models/src/APPoisson.m``). Anitescu & Potra (1997), Nonlinear Dynamics 14.
    """
    P = _coulomb_lcp(u0, W, mu, 0.0)
    return jnp.array([P[0], (1.0 + eps) * P[1]])


def drumwright_shell(u0, W, mu, eps):
    """Drumwright-Shell: maximum dissipation QP, then Poisson restitution on ``P_n``.

    ``min_P  ½ Pᵀ W P + Pᵀ u0   s.t.  P_n >= 0, |P_t| <= mu P_n, u_n + (W P)_n >= 0``
    (post-impact kinetic energy), solved exactly by enumerating the active sets of this 2-D QP
    (interior = sticking impulse; either cone edge, clipped to non-penetration); afterwards
    ``P_n <- (1+eps) P_n``.

    Drumwright E., Shell D.A. (2010) Modeling contact friction and joint friction in dynamic
    robotic simulation using the principle of maximum dissipation. WAFR IX.
    Reference implementation: ``planar-contact-models/src/DrumShell.m``.
    """
    un = u0[1]

    def obj(P):
        return 0.5 * P @ W @ P + P @ u0

    stick = solve2(W, -u0)
    stick_ok = (jnp.abs(stick[0]) <= mu * stick[1] + 1e-15) & (stick[1] >= 0)
    cands, vals = [stick], [jnp.where(stick_ok, obj(stick), jnp.inf)]
    for s in (1.0, -1.0):
        d = jnp.array([s * mu, 1.0])
        Wd = W @ d
        pn = jnp.maximum(safe_div(-(d @ u0), d @ Wd), 0.0)
        # non-penetration along the edge: un + Wd_n pn >= 0
        pn_min = jnp.where(Wd[1] > 0, safe_div(-un, Wd[1]), 0.0)
        pn = jnp.maximum(pn, pn_min)
        P = pn * d
        cands.append(P)
        vals.append(obj(P))
    vals = jnp.stack(vals)
    cands = jnp.stack(cands)
    P = cands[jnp.argmin(vals)]
    P = jnp.array([P[0], (1.0 + eps) * P[1]])
    return jnp.where(_approaching(u0), P, jnp.zeros(2))


def whittaker(u0, W, mu, eps):
    """Whittaker's algebraic law: Newton restitution with a clipped sticking impulse.

    The impulse that gives ``u⁺ = (0, -eps u_n)`` is computed; if it leaves the friction cone its
    tangential part is clipped to ``±mu P_n`` while ``P_n`` is kept.

    Whittaker E.T. (1944) A Treatise on the Analytical Dynamics of Particles and Rigid Bodies,
    4th ed., Dover; Kane T.R., Levinson D.A. (1985) Dynamics: Theory and Applications.
    Reference implementation: ``planar-contact-models/src/whittaker.m``.
    """
    stick = solve2(W, jnp.array([0.0, -eps * u0[1]]) - u0)
    pn = jnp.maximum(stick[1], 0.0)
    pt = jnp.clip(stick[0], -mu * pn, mu * pn)
    return jnp.where(_approaching(u0), jnp.array([pt, pn]), jnp.zeros(2))


# ---------------------------------------------------------------------------------------------
# Incremental models: impulse-space trajectory parameterised by the normal impulse p
# ---------------------------------------------------------------------------------------------


def _coulomb_path(u0, W, mu):
    """Piecewise-linear Coulomb trajectory in the normal impulse ``p`` (Routh / Stronge).

    Piece 1 (``p < p_star``): sliding against the initial slip, ``dP_t/dp = -s1 mu``.
    Piece 2 (``p >= p_star``): sticking (``dP_t/dp = -W_tn/W_tt``) if ``|W_tn| <= mu W_tt``,
    otherwise reverse sliding. Returns ``(p_star, d1, d2)`` with ``d = dP_t/dp``.
    """
    ut = u0[0]
    s1 = jnp.where(ut >= 0, 1.0, -1.0)
    d1 = -s1 * mu
    rate_t = W[0, 0] * d1 + W[0, 1]  # d u_t / dp while sliding
    p_star = jnp.where((s1 * rate_t < 0) & (jnp.abs(ut) > 0), safe_div(-ut, rate_t), jnp.inf)
    p_star = jnp.where(ut == 0, 0.0, p_star)
    stick_rate = -safe_div(W[0, 1], W[0, 0])
    d2 = jnp.where(jnp.abs(W[0, 1]) <= mu * W[0, 0], stick_rate,
                   -jnp.where(W[0, 1] >= 0, 1.0, -1.0) * mu)
    return p_star, d1, d2


def _path_pieces(u0, W, mu):
    p_star, d1, d2 = _coulomb_path(u0, W, mu)
    un = u0[1]
    s1 = W[1, 0] * d1 + W[1, 1]  # d u_n / dp on piece 1
    s2 = W[1, 0] * d2 + W[1, 1]
    s1 = jnp.maximum(s1, 1e-12)
    s2 = jnp.maximum(s2, 1e-12)
    p_star_f = jnp.where(jnp.isfinite(p_star), p_star, 1e30)
    un_star = un + s1 * p_star_f
    return p_star_f, d1, d2, s1, s2, un_star


def _pt_at(p, p_star, d1, d2):
    return d1 * jnp.minimum(p, p_star) + d2 * jnp.maximum(p - p_star, 0.0)


def _compression_end(un, p_star, s1, s2, un_star):
    return jnp.where(un_star >= 0, -un / s1, p_star + (-un_star) / s2)


def wang_mason(u0, W, mu, eps):
    """Wang-Mason: Routh-style integration with Coulomb friction and Poisson restitution.

    The impulse follows the Coulomb trajectory (slide, then stick or reverse slide) until the end
    of compression ``p_c`` (``u_n = 0``), and stops at ``p = (1 + eps) p_c``.

    Wang Y., Mason M.T. (1992) Two-dimensional rigid-body collisions with friction. ASME J. Appl.
    Mech. 59:635-642. Reference implementation: ``planar-contact-models/src/wang.m``.
    """
    p_star, d1, d2, s1, s2, un_star = _path_pieces(u0, W, mu)
    pc = _compression_end(u0[1], p_star, s1, s2, un_star)
    pf = (1.0 + eps) * pc
    P = jnp.array([_pt_at(pf, p_star, d1, d2), pf])
    return jnp.where(_approaching(u0), P, jnp.zeros(2))


def _quad_root(a_half, b, c):
    """Largest root y >= 0 of ``a_half y^2 + b y = c`` with ``a_half > 0``."""
    disc = jnp.maximum(b * b + 4.0 * a_half * c, 0.0)
    return jnp.maximum((-b + jnp.sqrt(disc)) / (2.0 * a_half), 0.0)


def mirtich_coulomb(u0, W, mu, eps):
    """Mirtich's incremental collision law, Coulomb variant, with Stronge's energetic restitution.

    Physically standard form (``dP_t/dp = -mu sign(u_t)``); the published data use
    :func:`mirtich_viscous` instead, which is the ``"Mirtich"`` entry of :data:`MODELS`.

    Integrates the Coulomb trajectory in normal impulse ``p``; the compression work
    ``W_c = ∫_0^{p_c} u_n dp`` (< 0) is recorded and restitution stops at ``p_f`` where
    ``∫_{p_c}^{p_f} u_n dp = -eps² W_c``. Exact piecewise-quadratic integration replaces the
    reference's explicit Euler steps.

    Mirtich B. (1996) Impulse-based dynamic simulation of rigid body systems. PhD thesis, UC
    Berkeley; Stronge W.J. (1990) Rigid body collisions with friction. Proc. R. Soc. Lond. A 431.
    Reference implementation: ``planar-contact-models/src/mirtich.m``.
    """
    un = u0[1]
    p_star, d1, d2, s1, s2, un_star = _path_pieces(u0, W, mu)
    pc = _compression_end(un, p_star, s1, s2, un_star)

    def F(p):  # ∫_0^p u_n
        p1 = jnp.minimum(p, p_star)
        q = jnp.maximum(p - p_star, 0.0)
        return un * p1 + 0.5 * s1 * p1 * p1 + un_star * q + 0.5 * s2 * q * q

    Fc = F(pc)  # <= 0
    target = (1.0 - eps * eps) * Fc
    F_star = F(p_star)
    root1 = _quad_root(0.5 * s1, un, target)
    root2 = p_star + _quad_root(0.5 * s2, un_star, target - F_star)
    in_piece1 = (p_star >= pc) & (target <= F_star)
    pf = jnp.where(in_piece1, root1, root2)
    pf = jnp.maximum(pf, pc)
    P = jnp.array([_pt_at(pf, p_star, d1, d2), pf])
    return jnp.where(_approaching(u0), P, jnp.zeros(2))


def _visc_g(k, p):
    """``g1 = (1-e^{-kp})/k``, ``g2 = ∫g1``, ``g3 = ∫g2`` with a series for small ``k p``."""
    x = k * p
    small = jnp.abs(x) < 1e-3
    ks = jnp.where(small, 1.0, k)
    g1_f = -jnp.expm1(-x) / ks
    g2_f = (p - g1_f) / ks
    g3_f = (0.5 * p * p - g2_f) / ks
    g1_s = p * (1 - x / 2 + x * x / 6 - x**3 / 24)
    g2_s = p * p * (0.5 - x / 6 + x * x / 24 - x**3 / 120)
    g3_s = p**3 * (1 / 6 - x / 24 + x * x / 120 - x**3 / 720)
    return (jnp.where(small, g1_s, g1_f), jnp.where(small, g2_s, g2_f),
            jnp.where(small, g3_s, g3_f))


def _bisect_increasing(fun, lo, hi, iters=64):
    """Root of an increasing scalar function on ``[lo, hi]`` (fixed iterations), polished by one
    Newton step so that derivatives w.r.t. parameters are those of the implicit root."""
    def expand(_, h):
        return jnp.where(fun(h) < 0, 2.0 * h - lo, h)
    hi = jax.lax.fori_loop(0, 40, expand, hi)

    def body(_, ab):
        a, b = ab
        m = 0.5 * (a + b)
        neg = fun(m) < 0
        return jnp.where(neg, m, a), jnp.where(neg, b, m)
    a, b = jax.lax.fori_loop(0, iters, body, (lo, hi))
    r = jax.lax.stop_gradient(0.5 * (a + b))
    val, slope = jax.jvp(fun, (r,), (jnp.ones_like(r),))
    step = safe_div(val, slope)
    width = jax.lax.stop_gradient(b - a)
    step = jnp.where(jnp.isfinite(step) & (jnp.abs(step) <= width), step, 0.0)
    return r - step


def mirtich_viscous(u0, W, mu, eps):
    """Mirtich's law exactly as the published data were generated (``mirtich.m``).

    The reference implementation integrates ``dP_t/dp = -mu u_t`` (the slip velocity is not
    normalised), i.e. a friction impulse proportional to slip speed rather than Coulomb's
    ``-mu sign(u_t)``; the published ``impulse_models[:, 3]`` follow this law (see
    ``docs/impacts.md``). The linear ODE is integrated in closed form; compression end and
    Stronge's energetic restitution (``∫_{p_c}^{p_f} u_n dp = -eps² ∫_0^{p_c} u_n dp``) are found
    by fixed-iteration bisection.

    Mirtich B. (1996) Impulse-based dynamic simulation of rigid body systems. PhD thesis, UC
    Berkeley; Stronge W.J. (1990) Proc. R. Soc. Lond. A 431.
    """
    ut0, un0 = u0[0], u0[1]
    k = mu * W[0, 0]
    wtn, wnt, wnn = W[0, 1], W[1, 0], W[1, 1]

    def pt(p):
        g1, g2, _ = _visc_g(k, p)
        return -mu * (ut0 * g1 + wtn * g2)

    def un(p):
        return un0 + wnt * pt(p) + wnn * p

    def F(p):
        _, g2, g3 = _visc_g(k, p)
        return un0 * p + 0.5 * wnn * p * p + wnt * (-mu * (ut0 * g2 + wtn * g3))

    un_neg = jnp.minimum(un0, -1e-12)
    scale = safe_div(-un_neg, wnn)
    pc = _bisect_increasing(un, jnp.zeros_like(scale), scale)
    Fc = F(pc)
    target = (1.0 - eps * eps) * Fc
    pf = _bisect_increasing(lambda p: F(p) - target, pc, pc + 2.0 * scale + 1e-12)
    pf = jnp.maximum(pf, pc)
    P = jnp.array([pt(pf), pf])
    return jnp.where(_approaching(u0), P, jnp.zeros(2))


MODELS: dict[str, Callable] = dict(
    zip(MODEL_NAMES, (drumwright_shell, ap_poisson, ap_newton, mirtich_viscous, wang_mason, whittaker))
)


def model_index(model: str) -> int:
    """Position of ``model`` in :data:`MODEL_NAMES` (``ValueError`` naming the known ones)."""
    if model not in MODELS:
        raise ValueError(f"unknown impact model {model!r}; known: {', '.join(MODEL_NAMES)}")
    return MODEL_NAMES.index(model)


def any_model(index, u0, W, mu, eps):
    """``MODELS[MODEL_NAMES[index]](u0, W, mu, eps)`` with ``index`` a traced integer (``lax.switch``):
    one compiled program serves all six models instead of one program per model."""
    return jax.lax.switch(index, tuple(MODELS[n] for n in MODEL_NAMES), u0, W, mu, eps)


_any_batched = jax.jit(jax.vmap(any_model, in_axes=(None, 0, 0, None, None)))


@functools.cache
def batched(model) -> Callable:
    """``MODELS[model]`` (or a contact-space function such as ``mirtich_coulomb``) vmapped over
    impacts ``(u0 (N, 2), W (N, 2, 2), mu, eps) -> (N, 2)`` and jitted, built once per model, so
    repeated calls (every fit, evaluation and study step) reuse one compiled program per input
    shape instead of tracing a fresh ``jit(vmap(...))`` each time. The six named models share one
    program per input shape (:func:`any_model`, the model's index an argument)."""
    if isinstance(model, str):
        return functools.partial(_any_batched, model_index(model))
    return jax.jit(jax.vmap(model, in_axes=(0, 0, None, None)))


ROW_BUCKET = 1024


def bucket_rows(n: int) -> int:
    """Rows a per-impact batch is padded to by :func:`rowwise`: a power of two, at least
    ``ROW_BUCKET``, so a data set's training and test files (962 and 412 impacts) share one program."""
    return max(ROW_BUCKET, 1 << max(n - 1, 0).bit_length())


def rowwise(f, rows, *args):
    """``f(*rows, *args)[:n]`` for a function of independent rows (``rows``: arrays with n rows),
    evaluated on the rows padded to :func:`bucket_rows` (copies of the first row), so calls on data
    of different sizes reuse one compiled program. Each row's result is that of the unpadded call."""
    n = len(rows[0])
    pad = bucket_rows(n) - n
    rows = [np.concatenate([r, np.repeat(r[:1], pad, axis=0)]) if pad else r for r in map(np.asarray, rows)]
    return np.asarray(f(*rows, *args))[:n]


def impact(model, v, J, Minv, mu, eps):
    """Impulse ``P = (P_t, P_n)`` and post-impact velocity ``v + M⁻¹ Jᵀ P`` of one impact.

    ``model`` is a name from :data:`MODEL_NAMES` or one of the contact-space functions above.
    """
    fn = MODELS[model] if isinstance(model, str) else model
    u0, W = contact_quantities(v, J, Minv)
    P = fn(u0, W, mu, eps)
    return P, v + Minv @ J.T @ P


def batch_impulses(model, u0, W, mu, eps):
    """vmapped impulses ``(N, 2)`` of ``model`` for ``u0`` (N,2), ``W`` (N,2,2), scalar params."""
    fn = MODELS[model] if isinstance(model, str) else model
    return jax.vmap(fn, in_axes=(0, 0, None, None))(u0, W, mu, eps)
