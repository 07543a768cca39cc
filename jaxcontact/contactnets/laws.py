"""Contact laws for rollouts of learned models, behind the engine's law signature.

* ``ContactNetsLaw`` — learned φ_n, J_n = ∇φ_n, J_t = ∇φ_t (friction lumped, μ = 1) fed to the
  same velocity-level LCP as ``CoulombLCP`` (Stewart–Trinkle, pyramidal cone) through
  ``solvers.solve_lcp``. Every learned contact is a candidate (``Model.max_contacts`` is not used).
* ``E2ELaw`` — the end-to-end baseline: a network predicts the generalised contact impulse
  directly from the (normalised) state; no complementarity.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax.numpy as jnp
from flax import struct

from .. import geometry
from ..rotations import quat_to_mat
from ..solvers import LCPSettings, RowStructure, solve_lcp
from ..types import ContactInfo, Ground, Params
from .functions import ContactFunctions, PolytopeParams


@dataclasses.dataclass(frozen=True)
class ContactNetsLaw:
    fns: ContactFunctions = ContactFunctions()
    solver: LCPSettings = LCPSettings(tol=1e-7, max_iter=100)

    def __call__(self, model, params: Params, state, v_free):
        theta = params.law
        R = quat_to_mat(state.quat)
        phi, _, Jn, Jt = self.fns.terms(theta, state.pos, R)
        C = phi.shape[0]
        h = model.dt
        J = jnp.concatenate([Jn[:, None, :], Jt], axis=1)  # (C, 3, 6)
        Jf = J.reshape(3 * C, 6)
        Minv = geometry.mass_matrix_inverse(params.body, state)
        A = Jf @ Minv @ Jf.T
        b = (Jf @ v_free).reshape(C, 3).at[:, 0].add(phi / h)
        coupling = jnp.tile(jnp.array([0.0, 1.0, 1.0], A.dtype), C)
        sol = solve_lcp(A, b.reshape(-1), coupling, RowStructure.contacts(C, 2), self.solver)
        poly: PolytopeParams = theta if isinstance(theta, PolytopeParams) else theta.poly
        pts = state.pos + poly.vertices @ R.T
        ground = Ground(normal=poly.normal, height=jnp.zeros((), A.dtype))
        patch = geometry.patch_from_points(pts, phi, jnp.ones(C, bool), ground, model.patch_tol)
        info = ContactInfo.from_patch(
            phi, phi <= model.patch_tol, sol.z.reshape(C, 3), patch, sol.residual, sol.iterations
        )
        return Jf.T @ sol.z, info


class ImpulseMLP(nn.Module):
    """E2E network (paper A.2: 4 hidden layers × 256, ReLU) on normalised inputs."""

    hidden: tuple = (256, 256, 256, 256)

    @nn.compact
    def __call__(self, x):
        for w in self.hidden:
            x = nn.relu(nn.Dense(w)(x))
        return nn.Dense(6)(x)


@struct.dataclass
class E2EParams:
    net: dict
    in_mean: jnp.ndarray  # (18,)
    in_std: jnp.ndarray  # (18,)
    out_scale: jnp.ndarray  # (6,) impulse scale of the training data (output un-normalisation)


def e2e_apply(hidden: tuple, theta: E2EParams, x_row):
    from .loss import e2e_features

    f = (e2e_features(x_row) - theta.in_mean) / theta.in_std
    return ImpulseMLP(hidden=tuple(hidden)).apply(theta.net, f) * theta.out_scale


@dataclasses.dataclass(frozen=True)
class E2ELaw:
    hidden: tuple = (256, 256, 256, 256)

    def __call__(self, model, params: Params, state, v_free):
        x = state.to_array()
        p = e2e_apply(self.hidden, params.law, x)
        z = jnp.zeros((), x.dtype)
        info = ContactInfo(
            phi=jnp.zeros(1, x.dtype), active=jnp.zeros(1, bool), impulse=jnp.zeros((1, 3), x.dtype),
            patch_type=jnp.asarray(0, jnp.int32), patch_centre=jnp.zeros(3, x.dtype),
            patch_normal=jnp.array([0.0, 0.0, 1.0], x.dtype), residual=z, iterations=jnp.asarray(0, jnp.int32),
            mode=jnp.asarray(-1, jnp.int32),
        )
        return p, info
