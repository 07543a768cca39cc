"""Per-body friction in a world: each contact's μ from its two bodies' materials.

Without ``body.friction`` (the default) a world has one material: body–ground contacts use the
law's (μ₁, μ₂) along the ground tangents, body–body contacts μ₁ (``contact_friction`` keeps that
path exactly as it was). With ``params.body.friction`` (N,) — traced, so ``jax.grad`` reaches it —
a contact's μ is ``mix_friction`` of its two sides:

* body–body: √(μ_a μ_b), isotropic;
* body–ground: √(μ_body μ_k) per ground tangent k, the ground's μ being the law's (μ₁, μ₂).

The rule is Box2D's (``b2MixFriction``: the geometric mean, "anything slides on ice"): a pair of
one material keeps that material's μ, and a frictionless side makes the contact frictionless.
The other engines: MuJoCo takes the larger of the two geoms' μ (ice on rubber grips like rubber),
PhysX the average by default (half of rubber's), Bullet the product (a pair of one material μ gets
μ², so a body's μ is not the μ it has against itself). At μ_a μ_b = 0 the geometric mean's
derivative is infinite; the gradient there is taken as 0 (finite, and a body starting
frictionless is not moved by a gradient step).
"""

from __future__ import annotations

import jax.numpy as jnp

from ..laws.coulomb import mix_friction


def contact_friction(params, con, dtype):
    """(C, 2) μ of every contact of ``con`` (``WorldContacts``: the first ``num_ground`` rows are
    body–ground, ``bodies`` (C, 2) the two body indices, −1 the ground) along its two tangents."""
    mu = _contact_friction(params, con, dtype)
    L, F = getattr(con, "num_limits", 0), getattr(con, "num_losses", 0)
    if L or F:  # a joint's range limit is a contact without friction; a friction loss's μ is its bound
        loss = [jnp.stack([con.loss_bound.astype(dtype), jnp.zeros((F,), dtype)], axis=1)] if F else []
        mu = jnp.concatenate([mu[:mu.shape[0] - L - F], jnp.zeros((L, 2), dtype)] + loss)
    return mu


def _contact_friction(params, con, dtype):
    law_mu = params.law.mu
    friction = params.body.friction
    C, G = con.phi.shape[0], con.num_ground
    ground_mu = getattr(con, "ground_mu", None)  # the planes' rows' μ (WorldContacts.ground_mu), or None
    if friction is None and ground_mu is not None:  # tilted planes: each its own μ (the ground the law's)
        return jnp.concatenate([ground_mu, jnp.broadcast_to(law_mu[:1], (C - G, 2))]).astype(dtype)
    if friction is None:  # one material per world
        return jnp.concatenate([jnp.broadcast_to(law_mu, (G, 2)),
                                jnp.broadcast_to(law_mu[:1], (C - G, 2))]).astype(dtype)
    friction = jnp.asarray(friction)
    a, b = con.bodies[:, 0], con.bodies[:, 1]
    surface = jnp.asarray(law_mu)[None, :2]
    if ground_mu is not None:  # a plane's μ mixed with the body's as the ground's is
        surface = jnp.concatenate([ground_mu, jnp.broadcast_to(surface, (C - G, 2))]).astype(friction.dtype)
    other = jnp.where((a >= 0)[:, None], friction[jnp.maximum(a, 0)][:, None], surface)
    return mix_friction(friction[b][:, None], other).astype(dtype)


__all__ = ["contact_friction", "mix_friction"]
