"""Energy ellipse, the feasible impulse set and the Ideal Rigid-Body (IRB) bound.

For one impact with contact-space velocity ``u0`` and compliance ``W`` the change of kinetic
energy caused by a contact impulse ``P`` is ``ΔE(P) = Pᵀ u0 + ½ Pᵀ W P`` (identical in body and
contact space). The *energy ellipse* (Chatterjee & Ruina 1998; eq. 5-6 of Fazeli et al.) is
``ΔE(P) <= 0``: centre ``-W⁻¹ u0`` (the impulse that stops the contact point), shape ``W``, passing
through ``P = 0``. The *feasible set* of rigid point contact is the ellipse intersected with
non-penetration ``u_n + (W P)_n >= 0`` (above the line of maximum compression) and compressive
``P_n >= 0``.

The IRB bound picks, for every impact, the feasible impulse that best explains the measured
post-impact velocity in the evaluation metric (angular velocity scaled by the radius of
gyration). It is computed exactly by enumerating the active sets of this convex 2-D problem: the
unconstrained optimum, the optimum on the ellipse (trust-region secular equation solved by a
fixed-iteration bisection on log λ), the optimum on each line clipped to its chord, and the corner
of the two lines. Every candidate is a smooth function of the data, so the bound is jit-able,
vmappable and NaN-free also for degenerate (tiny) ellipses.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .models import safe_div, solve2


def energy_change(P, u0, W):
    """``ΔE = Pᵀ u0 + ½ Pᵀ W P`` (kinetic energy after minus before the impact)."""
    return P @ u0 + 0.5 * P @ W @ P


def ellipse_params(u0, W):
    """Centre ``c = -W⁻¹u0``, shape ``W`` and squared radius ``r² = u0ᵀ W⁻¹ u0``:
    the ellipse is ``(P - c)ᵀ W (P - c) <= r²``."""
    c = solve2(W, -u0)
    return c, W, -(u0 @ c)


def feasibility(P, u0, W, tol=1e-9):
    """Boolean: ``P`` lies in the feasible impulse set (energy, non-penetration, ``P_n >= 0``)."""
    scale_e = jnp.maximum(u0 @ solve2(W, u0), 1e-300)
    scale_v = jnp.maximum(jnp.abs(u0[1]), 1e-300)
    e_ok = energy_change(P, u0, W) <= tol * scale_e
    n_ok = u0[1] + (W @ P)[1] >= -tol * scale_v
    p_ok = P[1] >= -tol * jnp.maximum(jnp.abs(solve2(W, -u0)[1]), 1e-300)
    return e_ok & n_ok & p_ok


def _min_on_ellipse(H, g, u0, W, iters=120):
    """argmin ½PᵀHP - gᵀP s.t. ΔE(P) <= 0 (KKT: (H + λW)P = g - λu0, λ >= 0)."""
    P0 = solve2(H, g)
    scale = jnp.trace(H) / jnp.maximum(jnp.trace(W), 1e-300)

    def P_of(loglam):
        lam = scale * jnp.exp(loglam)
        return solve2(H + lam * W, g - lam * u0)

    def body(_, ab):
        a, b = ab
        m = 0.5 * (a + b)
        outside = energy_change(P_of(m), u0, W) > 0
        return jnp.where(outside, m, a), jnp.where(outside, b, m)

    a, b = jax.lax.fori_loop(0, iters, body, (jnp.asarray(-40.0, g.dtype), jnp.asarray(40.0, g.dtype)))
    Pb = P_of(b)
    return jnp.where(energy_change(P0, u0, W) <= 0, P0, Pb)


def _min_on_line(H, g, u0, W, a, c):
    """argmin of the objective on the line ``aᵀP = c`` clipped to the ellipse chord.
    Returns ``(P, ok)``; ``ok`` is False when the line misses the ellipse."""
    aa = jnp.maximum(a @ a, 1e-300)
    PL = a * (c / aa)
    d = jnp.array([-a[1], a[0]])
    t_star = safe_div(d @ (g - H @ PL), d @ H @ d)
    # chord: ½ t² dᵀWd + t dᵀ(u0 + W PL) + ΔE(PL) <= 0
    qa = 0.5 * (d @ W @ d)
    qb = d @ (u0 + W @ PL)
    qc = energy_change(PL, u0, W)
    disc = qb * qb - 4 * qa * qc
    ok = disc >= 0
    sq = jnp.sqrt(jnp.maximum(disc, 0.0))
    t1 = safe_div(-qb - sq, 2 * qa)
    t2 = safe_div(-qb + sq, 2 * qa)
    t = jnp.clip(t_star, t1, t2)
    return PL + t * d, ok


def constrained_lsq_impulse(H, g, u0, W):
    """``argmin_P ½PᵀHP - gᵀP`` over the feasible impulse set (exact active-set enumeration)."""
    lines = [(W[1], -u0[1]), (jnp.array([0.0, 1.0], dtype=g.dtype), jnp.zeros((), g.dtype))]
    cands, oks = [], []
    Pe = _min_on_ellipse(H, g, u0, W)
    cands.append(Pe)
    oks.append(jnp.asarray(True))
    for a, c in lines:
        P, ok = _min_on_line(H, g, u0, W, a, c)
        cands.append(P)
        oks.append(ok)
    A2 = jnp.stack([lines[0][0], lines[1][0]])
    Pv = solve2(A2, jnp.array([lines[0][1], lines[1][1]]))
    cands.append(Pv)
    oks.append(jnp.asarray(True))
    cands = jnp.stack(cands)
    feas = jnp.stack([ok & feasibility(P, u0, W, tol=1e-7) for P, ok in zip(cands, oks)])
    vals = jax.vmap(lambda P: 0.5 * P @ H @ P - g @ P)(cands)
    vals = jnp.where(feas, vals, jnp.inf)
    best = jnp.argmin(vals)
    # fall back to the sticking impulse (always feasible for an approaching impact)
    stick = solve2(W, -u0)
    return jnp.where(jnp.any(feas), cands[best], stick)


def velocity_metric_matrices(J, Minv, rho):
    """``A = S M⁻¹ Jᵀ`` (3x2) with ``S = diag(1, 1, rho)``: scaled velocity change per impulse."""
    S = jnp.diag(jnp.array([1.0, 1.0, rho], dtype=J.dtype))
    return S @ Minv @ J.T, S


def irb_impulse(v_pre, v_post, J, Minv, rho):
    """Ideal Rigid-Body bound: the feasible impulse minimising the scaled post-impact velocity
    error ``‖S (v_pre + M⁻¹JᵀP - v_post)‖``."""
    A, S = velocity_metric_matrices(J, Minv, rho)
    b = S @ (v_post - v_pre)
    u0 = J @ v_pre
    W = J @ Minv @ J.T
    W = 0.5 * (W + W.T)
    return constrained_lsq_impulse(A.T @ A, A.T @ b, u0, W)


def momentum_lsq_impulse(v_pre, v_post, J, M):
    """Eq. 7: ``P_IRB = argmin ‖M(v_f - v_i) - JᵀP‖`` (unconstrained least squares)."""
    A = J @ J.T
    return solve2(A, J @ (M @ (v_post - v_pre)))


def ellipse_boundary(u0, W, n=200):
    """Points ``(n, 2)`` on the boundary ``ΔE(P) = 0`` (for plotting)."""
    c, Wm, r2 = ellipse_params(u0, W)
    L = jnp.linalg.cholesky(Wm)  # W = L Lᵀ; (P-c)ᵀ L Lᵀ (P-c) = r²
    th = jnp.linspace(0, 2 * jnp.pi, n)
    circ = jnp.stack([jnp.cos(th), jnp.sin(th)], 1) * jnp.sqrt(jnp.maximum(r2, 0.0))
    return c + jax.vmap(lambda z: jax.scipy.linalg.solve_triangular(L.T, z, lower=False))(circ)
