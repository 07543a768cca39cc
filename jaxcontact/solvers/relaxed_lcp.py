"""The box-friction LCP with relaxed complementarity, solved by Newton's method.

The hard problem is the fixed point z = clip(y(z), lo(z), hi(z)) with y = z − (A z + b)/diag(A)
(``lcp.solve_lcp``). Here every clip is replaced by its interior-point (CHKS) smoothing, with
sr(x) = (x + √(x² + 4κ'))/2 a smooth max(0, x):

    normal rows:    z = sr(y)                          ⇔  z > 0, w > 0, (d·z)·w = κ
    friction rows:  z = lo + sr(y − lo) − sr(y − hi)   (lo, hi = ∓ c z_parent)

with d = diag(A), w = A z + b and κ' = κ / d², so √κ is the velocity scale of the smoothing.
With the elliptic cone (``LCPSettings.cone``, the default) a contact's two tangent rows are one
block, the disc of ``lcp.project_disc`` smoothed: with the common step (``lcp.disc_step``)
y_k = z_k − α μ_k² w_k, the scaled norm s = √(Σ_k (y_k/μ_k)² + κ'_n) and the smooth
max(z_n, s) = z_n + sr(s − z_n),

    friction pair:  z_t = y · z_n / (z_n + sr(s − z_n))   (κ' = κ / d_n², the normal row's)

which tends to y · min(1, z_n/|y/μ|) (the disc's projection) as κ → 0.

``solve_relaxed_lcp`` runs a fixed number of Newton steps (κ continued from the problem's own
velocity scale down to the target over the first half of them), so it runs the same way under
``vmap``. Its derivative is implicit, declared here once: one Newton step at the solution with
(A, b, coupling) live. Unlike a ``custom_vjp`` rule this works in forward *and* reverse mode, so
``jax.jacfwd`` through a rollout with the relaxed law works.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import linalg
from .lcp import DenseLCP, LCPSolution, RowStructure, disc_step


def _sr(x, k):
    return 0.5 * (x + jnp.sqrt(x * x + 4.0 * k))


def relaxed_residual(rows: RowStructure, cone: str = "box"):
    """F(z, A, b, coupling, κ, valid): the relaxed fixed-point equations z − g_κ(z) (module
    docstring) of the rows ``rows`` with the friction set ``cone`` (``LCPSettings.cone``); rows
    where ``valid`` (m,) is False (or 0) read z = 0. κ in (m/s)²."""
    # numpy constants: F may be closed over by a custom-derivative rule (no traced closures)
    is_fric = np.asarray(rows.is_friction)
    parent = np.asarray(rows.parent)
    first, second = rows.pairs() if cone == "elliptic" else ((), ())

    def F(z, A, b, coupling, kap, valid):
        dd = jnp.diagonal(A)
        y = z - (A @ z + b) / dd
        k = kap / dd**2
        c = coupling * z[parent]
        zf = -c + _sr(y + c, k) - _sr(y - c, k)
        zn = _sr(y, k)
        g = jnp.where(is_fric, zf, zn)
        if len(first):  # the smoothed disc (module docstring)
            w = A @ z + b
            c1, c2 = coupling[first], coupling[second]
            s1, s2 = disc_step(c1, c2, dd[first], dd[second])
            y1, y2 = z[first] - s1 * w[first], z[second] - s2 * w[second]
            l1 = jnp.where(c1 > 0, y1 / jnp.where(c1 > 0, c1, 1.0), 0.0)
            l2 = jnp.where(c2 > 0, y2 / jnp.where(c2 > 0, c2, 1.0), 0.0)
            kn = k[parent[first]]
            zp = z[parent[first]]
            f = zp / (zp + _sr(jnp.sqrt(l1 * l1 + l2 * l2 + kn) - zp, kn))
            g = g.at[first].set(jnp.where(c1 > 0, y1 * f, 0.0)).at[second].set(jnp.where(c2 > 0, y2 * f, 0.0))
        return jnp.where(valid > 0, z - g, z)  # padded rows: z = 0

    return F


def solve_relaxed_lcp(lcp: DenseLCP, valid, kappa: float, newton_iters: int, cone: str = "box") -> LCPSolution:
    """Solve the relaxed LCP ``lcp`` (module docstring; its A, b, coupling and rows, ``z0`` unused) with
    the friction set ``cone`` (``LCPSettings.cone``). valid: (m,) rows that take part (others return
    z = 0). Returns ``LCPSolution(z, residual, iterations)`` with the residual the largest scaled
    relaxed-equation error |diag(A)·F(z)| (m/s) before the implicit step."""
    A, b, coupling, rows = lcp.A, lcp.b, lcp.coupling, lcp.rows
    is_fric = jnp.asarray(rows.is_friction)
    F = partial(relaxed_residual(rows, cone), valid=valid)

    # Newton with κ continuation from the problem's own velocity scale down to kappa.
    sg = jax.lax.stop_gradient
    A0, b0, c0 = sg(A), sg(b), sg(coupling)
    vscale = jnp.maximum(jnp.max(jnp.where(valid, jnp.abs(b0), 0.0)), 1e-3)
    k_start = jnp.maximum(vscale**2, kappa)
    half = max(newton_iters // 2, 1)
    ratio = (kappa / k_start) ** (1.0 / half)

    def newton(i, z):
        kap = jnp.maximum(k_start * ratio ** (i + 1.0), kappa)
        f = lambda zz: F(zz, A0, b0, c0, kap)
        r = f(z)
        Jz = jax.jacfwd(f)(z)
        dz = linalg.solve(Jz, -r)
        dz = jnp.where(jnp.all(jnp.isfinite(dz)), dz, jnp.zeros_like(dz))
        # keep normal impulses positive (fraction-to-boundary on the normal rows)
        zn_new = z + dz
        shrink = jnp.where(~is_fric & (zn_new < 0), z / jnp.maximum(z - zn_new, 1e-300), 1.0)
        t = jnp.minimum(1.0, 0.99 * jnp.min(shrink))
        return z + t * dz

    z0 = jnp.where(is_fric, 0.0, jnp.sqrt(k_start) / jnp.diagonal(A0))
    z = jax.lax.fori_loop(0, newton_iters, newton, z0)
    z = sg(z)
    # implicit derivative: one Newton step at the solution with (A, b, coupling) live
    kap = jnp.asarray(kappa, z.dtype)
    Jz = jax.jacfwd(lambda zz: F(zz, A0, b0, c0, kap))(z)
    r = F(z, A, b, coupling, kap)
    z = z - linalg.solve(Jz, r)
    res = jnp.max(jnp.abs(jnp.diagonal(A0) * sg(r)), initial=0.0)
    return LCPSolution(z=z, residual=res, iterations=jnp.asarray(newton_iters, jnp.int32))
