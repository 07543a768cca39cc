"""Coulomb contact with relaxed complementarity: a smoothed version of ``CoulombLCP``.

The hard law solves the box-friction LCP z = clip(y(z), lo(z), hi(z)) with
y = z − (A z + b)/diag(A) (its projected-Jacobi fixed point; ``solvers.py``). Here every clip is
replaced by its interior-point (CHKS) smoothing, with sr(x) = (x + √(x² + 4κ'))/2 a smooth
max(0, x):

    normal rows:    z = sr(y)                          ⇔  z > 0, w > 0, (d·z)·w = κ
    friction rows:  z = lo + sr(y − lo) − sr(y − hi)   (lo, hi = ∓ μ z_n)

with d = diag(A), w = A z + b the constraint velocity and κ' = κ / d² — so the relaxed
complementarity reads (d·z_n)·w_n = κ with both factors in m/s: √κ is the velocity scale of the
smoothing. As κ → 0 the solution tends to the hard LCP's. For κ > 0 contact forces act before
touch (a barrier), the impulse is a smooth function of distance, velocity and parameters, and
the contact-mode switches (touch/lift-off, stick/slip, and the restitution switch) are blended
over √κ — the relaxation of
Dojo (Howell et al. 2022) and of the interior-point contact models it follows.

The smoothed system is solved by a fixed number of Newton steps (κ continued from a large value
down to the target over the first half of them), so it runs the same way under ``vmap``. The
derivative is implicit (one Newton step at the solution with the parameters live), so it works
in forward *and* reverse mode — ``jax.jacfwd`` through a rollout works with this law.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from .. import geometry
from ..types import AnyState, ContactInfo, Params
from .coulomb import CoulombLCP, CoulombParams, contact_problem


def _sr(x, k):
    return 0.5 * (x + jnp.sqrt(x * x + 4.0 * k))


@dataclasses.dataclass(frozen=True)
class SmoothedCoulomb:
    """Relaxed-complementarity Coulomb contact (see module docstring).

    kappa: relaxation (m/s)²; the hard law is the limit kappa → 0. newton_iters: Newton steps.
    restitution_threshold: as ``CoulombLCP``. regularization: relative diagonal added to A.
    """

    kappa: float = 1e-4
    newton_iters: int = 30
    restitution_threshold: float = 0.05
    regularization: float = 1e-6

    def __post_init__(self):
        if not self.kappa > 0:
            raise ValueError(f"SmoothedCoulomb.kappa must be positive (use CoulombLCP for kappa = 0), got {self.kappa}")
        if self.newton_iters < 1:
            raise ValueError(f"SmoothedCoulomb.newton_iters must be >= 1, got {self.newton_iters}")

    @staticmethod
    def init_params(mu=0.18, restitution=0.0, mu2=None) -> CoulombParams:
        return CoulombLCP.init_params(mu=mu, restitution=restitution, mu2=mu2)

    def __call__(self, model, params: Params, state: AnyState, v_free):
        body, ground, lp = params.body, params.ground, params.law
        h = model.dt
        prob = contact_problem(model, params, state, v_free)
        con, J, C, d = prob.contacts, prob.J, prob.num_contacts, state.dim
        nt = d - 1
        diag = jnp.diagonal(prob.A)
        A = prob.A + jnp.diag(self.regularization * diag)
        vn_pre, target = prob.vn_pre, prob.target
        eps = jnp.clip(lp.restitution, 0.0, 1.0)
        # The hard law's bounce switch (approaching faster than the threshold and closing within
        # the step: φ + h·v_n ≤ patch_tol)
        # is blended too, over √κ in velocity and h√κ in distance, so ε and the ground height do
        # not see a jump when an impact moves across a time step.
        sk = jnp.sqrt(self.kappa)
        w_v = jax.nn.sigmoid((-self.restitution_threshold - vn_pre) / sk)
        w_d = jax.nn.sigmoid((model.patch_tol - (con.phi + h * vn_pre)) / (h * sk))
        bounce = w_v * w_d * (eps > 0)
        target = target + bounce * jnp.maximum(-eps * vn_pre - target, 0.0)
        b = prob.free_velocity.at[:, 0].add(-target).reshape(-1)
        valid = jnp.repeat(con.valid, d)
        mu = jnp.broadcast_to(lp.mu[:nt], (C, nt))
        is_fric = jnp.tile(jnp.arange(d) > 0, C)
        parent = jnp.repeat(jnp.arange(C) * d, d)
        coupling = jnp.concatenate([jnp.zeros((C, 1), mu.dtype), mu], axis=1).reshape(-1)

        def F(z, A, b, coupling, kap):
            dd = jnp.diagonal(A)
            y = z - (A @ z + b) / dd
            k = kap / dd**2
            c = coupling * z[parent]
            zf = -c + _sr(y + c, k) - _sr(y - c, k)
            zn = _sr(y, k)
            g = jnp.where(is_fric, zf, zn)
            return jnp.where(valid, z - g, z)  # padded candidates: z = 0

        # Newton with κ continuation from the problem's own velocity scale down to kappa.
        sg = jax.lax.stop_gradient
        A0, b0, c0 = sg(A), sg(b), sg(coupling)
        vscale = jnp.maximum(jnp.max(jnp.where(valid, jnp.abs(b0), 0.0)), 1e-3)
        k_start = jnp.maximum(vscale**2, self.kappa)
        half = max(self.newton_iters // 2, 1)
        ratio = (self.kappa / k_start) ** (1.0 / half)

        def newton(i, z):
            kap = jnp.maximum(k_start * ratio ** (i + 1.0), self.kappa)
            f = lambda zz: F(zz, A0, b0, c0, kap)
            r = f(z)
            Jz = jax.jacfwd(f)(z)
            dz = jnp.linalg.solve(Jz, -r)
            dz = jnp.where(jnp.all(jnp.isfinite(dz)), dz, jnp.zeros_like(dz))
            # keep normal impulses positive (fraction-to-boundary on the normal rows)
            zn_new = z + dz
            shrink = jnp.where(~is_fric & (zn_new < 0), z / jnp.maximum(z - zn_new, 1e-300), 1.0)
            t = jnp.minimum(1.0, 0.99 * jnp.min(shrink))
            return z + t * dz

        z0 = jnp.where(is_fric, 0.0, jnp.sqrt(k_start) / jnp.diagonal(A0))
        z = jax.lax.fori_loop(0, self.newton_iters, newton, z0)
        z = sg(z)
        # implicit derivative: one Newton step at the solution with (A, b, μ) live
        kap = jnp.asarray(self.kappa, z.dtype)
        Jz = jax.jacfwd(lambda zz: F(zz, A0, b0, c0, kap))(z)
        r = F(z, A, b, coupling, kap)
        z = z - jnp.linalg.solve(Jz, r)
        res = jnp.max(jnp.abs(jnp.diagonal(A0) * sg(r)), initial=0.0)

        zc = z.reshape(C, d)
        impulse = J.T @ z
        patch = geometry.patch_from_points(con.all_points, con.all_phi, body.vertex_mask > 0, ground, model.patch_tol)
        active = con.valid & (con.phi <= model.patch_tol)
        info = ContactInfo.from_patch(con.phi, active, zc, patch, res, self.newton_iters)
        return impulse, info
