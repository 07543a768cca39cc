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

from .. import contact, geometry
from ..rotations import quat_to_mat
from ..laws.base import LawDefaults
from ..solvers import LCPSettings, Method, solve_contact
from ..types import Ground, Params
from ..validation import DTYPE, KEY, NUMBER, OPTIONAL_POINTS, check_arguments
from .functions import ContactFunctions, PolytopeParams, init_deep, init_polytope


LCP_SETTINGS = LCPSettings(tol=1e-7, max_iter=100, cone="box")
"""The solver of this family's rollouts (its learned laws and its ``lcp`` variant): the square
(``LCPSettings.cone = "box"``), each learned tangent row clipped on its own. The paper states the disc
(Pfrommer et al. 2020, §2 eq. 6–7 and the loss's constraint eq. 17, ‖λ_t‖₂ ≤ λ_n), but this family's
loss is the pyramidal version (``contactnets.loss``: |λ_t,k| ≤ λ_n per tangent, solved in the
pyramid's extreme rays), so the rollouts keep the set the geometry was trained under, and the seed
reproductions (docs/contactnets.md) reproduce."""


@dataclasses.dataclass(frozen=True)
class ContactNetsLaw(LawDefaults):
    fns: ContactFunctions = ContactFunctions()
    solver: LCPSettings = LCP_SETTINGS
    body_geometry = False  # contact geometry is the learned φ, not params.body's vertices

    def init_params(self, key=None, vertices=None, mu: float = 0.18, noise: float = 0.0, dtype=None):
        """Contact-function parameters: the polytope of ``vertices`` (body frame; default the
        0.1 m cube's 8 corners) with friction ``mu``, perturbed by ``noise`` (relative; 0 = exact,
        the paper's initialisation uses 0.4), plus a zero-output network for the deep variant."""
        check_arguments(f"{type(self).__name__}.init_params", key=(key, KEY), vertices=(vertices, OPTIONAL_POINTS),
                        mu=(mu, NUMBER), noise=(noise, NUMBER), dtype=(dtype, DTYPE))
        import jax
        import numpy as np

        key = jax.random.PRNGKey(0) if key is None else key
        if vertices is None:
            vertices = 0.05 * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        vertices = np.asarray(vertices)
        if vertices.shape != (self.fns.num_contacts, 3):
            raise ValueError(f"vertices must have shape ({self.fns.num_contacts}, 3) "
                             f"(ContactFunctions.num_contacts), got {vertices.shape}")
        if self.fns.variant == "deep":
            return init_deep(key, self.fns, vertices, mu, noise, dtype)
        return init_polytope(key, vertices, mu, noise, dtype)

    def __call__(self, model, params: Params, state, v_free):
        theta = params.law
        R = quat_to_mat(state.quat)
        phi, _, Jn, Jt = self.fns.terms(theta, state.pos, R)
        C = phi.shape[0]
        jac = jnp.concatenate([Jn[:, None, :], Jt], axis=1)  # (C, 3, 6): friction lumped into J_t (μ = 1)
        Minv = geometry.mass_matrix_inverse(params.body, state)
        prob = contact.from_jacobians(jac, phi, jnp.ones(C, bool), Minv, v_free, model.dt)
        sol = solve_contact(prob.replace(mu=1.0), Method(self.solver))
        poly: PolytopeParams = theta if isinstance(theta, PolytopeParams) else theta.poly
        pts = state.pos + poly.vertices @ R.T
        ground = Ground(normal=poly.normal, height=jnp.zeros((), prob.A.dtype))
        patch = geometry.patch_from_points(pts, phi, jnp.ones(C, bool), ground, model.patch_tol)
        return sol.impulse, contact.info(phi, phi <= model.patch_tol, sol.z, patch, sol)


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
class E2ELaw(LawDefaults):
    """The end-to-end baseline: ``ImpulseMLP`` maps the normalised state to the generalised impulse."""

    body_geometry = False  # the impulse is learned end to end; no geometric φ

    hidden: tuple = (256, 256, 256, 256)

    def init_params(self, key=None, out_scale: float = 1e-3, dtype=None) -> E2EParams:
        """Untrained parameters: a randomly initialised network, unit input normalisation and an
        impulse scale of ``out_scale`` N·s (training replaces all of them)."""
        check_arguments(f"{type(self).__name__}.init_params", key=(key, KEY), out_scale=(out_scale, NUMBER),
                        dtype=(dtype, DTYPE))
        import jax

        key = jax.random.PRNGKey(0) if key is None else key
        dtype = dtype or jnp.result_type(float)
        net = ImpulseMLP(hidden=tuple(self.hidden)).init(key, jnp.zeros(18, dtype))
        net = jax.tree_util.tree_map(lambda a: a.astype(dtype), net)
        return E2EParams(net=net, in_mean=jnp.zeros(18, dtype), in_std=jnp.ones(18, dtype),
                         out_scale=jnp.full(6, out_scale, dtype))

    def __call__(self, model, params: Params, state, v_free):
        x = state.to_array()
        p = e2e_apply(self.hidden, params.law, x)
        info = contact.empty_info(1, 3, x.dtype)
        return p, info
