"""The step of a world of many bodies: every contact (body–ground and body–body) in one LCP.

A recipe of pure stages over the stacked bodies (leading body axis N):

0. ``depenetrate`` each body out of the ground (as a single body's step; position only);
1. free velocities v¹ of every body (``dynamics.free_velocity``, vmapped); with ``Scene.joints``,
   the joints eliminated (``joints.motion``: the velocity v_c that satisfies them and the jointed
   mobility W, dense over the 6N velocities);
2. ``collide``: the body–ground candidates of every body (``geometry.contact_candidates``) and
   the manifold of every body–body pair of the scene (``collision.hull_hull``), as rows on the
   contact's two bodies;
3. the one contact problem (``contact.body_problem``: each contact's rows on its two bodies, W
   block-diagonal, or the jointed W), its normal target raised for restitution from the
   *relative* normal velocity (``laws.coulomb.normal_target_at``), solved by ``solve_contacts``
   (projected Gauss–Seidel, implicit gradients: dense up to ``DENSE_ROWS`` rows or with joints,
   in velocity form above);
4. v⁺ = v¹ + M⁻¹ p per body (v_c + W p with joints, and the joint impulse), every body
   integrated (``dynamics.integrate``), and the step's ``Flags`` (invalid input on any body,
   non-finite output, penetration projected, solver).

A one-body world without pairs takes the single body's step (``dynamics``) to round-off. The law must be ``CoulombLCP`` (or
``NoContact``) once the scene has body–body pairs: the learned laws (dacm, PDD, ContactNets,
E2E) describe a body against the ground only and are refused before compiling.

Friction (``materials.contact_friction``): by default one material per world: body–ground
contacts use the law's (μ₁, μ₂) along the ground tangents, exactly as a single body; body–body
contacts use μ₁ isotropically (anisotropy is defined against the ground's tangents only). With a
per-body ``params.body.friction`` (N,) a contact's μ is the geometric mean of its two sides'
(Box2D's rule, ``materials.mix_friction``), the ground's being the law's (μ₁, μ₂). Restitution: the law's ε on every contact, applied
to the relative normal velocity of the contact's two bodies.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import collision, contact, dynamics, geometry
from ..laws import CoulombLCP, NoContact
from ..laws.coulomb import normal_target_at
from ..rotations import quat_to_mat
from ..types import Flags, Params, State
from ..validation import (
    broken_rules,
    check_steps,
    is_concrete,
    validate_body,
    validate_ground,
    validate_law_params,
    validate_state,
)
from .materials import contact_friction
from . import joints as world_joints
from .scene import Scene, check_body


@struct.dataclass
class WorldInfo:
    """Per step of a world: ``impulse`` (N, 6) contact impulse per body (world force, body torque
    impulse); ``phi_ground`` (N, Cg) the body–ground candidates' signed distances; ``pair_phi``
    (P, n) and ``pair_kind`` (P,) (``PatchType``) of every body–body pair; the contact solve's
    ``residual`` (m/s) and ``iterations``; ``joint_impulse`` (5·J,) of the scene's joints and
    ``joint_error`` () their largest anchor separation before the step (m) (empty and 0 without
    joints); ``flags``/``invalid`` as a single body's ``ContactInfo`` (OR over the bodies)."""

    impulse: jnp.ndarray
    phi_ground: jnp.ndarray
    pair_phi: jnp.ndarray
    pair_kind: jnp.ndarray
    residual: jnp.ndarray
    iterations: jnp.ndarray
    joint_impulse: jnp.ndarray
    joint_error: jnp.ndarray
    flags: jnp.ndarray = 0
    invalid: jnp.ndarray = 0


@struct.dataclass
class WorldContacts:
    """Every contact of a world at one state: ``rows`` (C, 2, 3, 6) on the two bodies of each
    contact (signed: their sum is the relative velocity, normal first), ``phi`` (C,), ``valid``
    (C,), ``bodies`` (C, 2) the two body indices (−1: the ground). The first ``num_ground`` are
    body–ground (Cg per body, body-major); the rest are the pair slots' (``n`` per slot):
    ``slot_pair`` (S,) the scene pair each slot holds this step (every pair, in order, without a
    broad phase). ``pair_phi`` (P, n) and ``pair_kind`` (P,) of every pair of the scene (a pair
    the broad phase skipped: φ its bounding spheres' gap, a lower bound, and no patch);
    ``capacity``: a pair within reach was left out (``Flags.CAPACITY``)."""

    rows: jnp.ndarray
    phi: jnp.ndarray
    valid: jnp.ndarray
    bodies: jnp.ndarray
    slot_pair: jnp.ndarray
    pair_phi: jnp.ndarray
    pair_kind: jnp.ndarray
    capacity: jnp.ndarray
    num_ground: int = struct.field(pytree_node=False)


def _body(params: Params, i):
    return jax.tree_util.tree_map(lambda x: x[i], params.body)


def _per_body(fn, params: Params, *batched):
    """``fn(Params of one body, *one body's args)`` vmapped over the bodies."""
    return jax.vmap(lambda b, *a: fn(Params(body=b, ground=params.ground, law=params.law), *a))(params.body, *batched)


def bounding_radii(params: Params):
    """(N,) each body's farthest vertex from its centre of mass (m)."""
    body = params.body
    return jnp.max(jnp.where(body.vertex_mask > 0, jnp.linalg.norm(body.vertices, axis=-1), 0.0), axis=-1)


def reach(model, scene: Scene, params: Params, state: State):
    """(N,) how far (m) any point of each body can move this step, plus half the scene's margin:
    h·(|v| + |ω| r + g h) + margin/2, without gradient. A body–ground candidate enters the contact
    problem when its φ is within its body's reach, a pair when its gap is within the sum of its two
    bodies' reaches (speculative contacts: a pair closing at 3 m/s is in the problem before it
    meets, so a 2 ms step never carries it through the surface; the constraint only acts if the
    gap would close this step, because its target is −φ/h)."""
    r = bounding_radii(params)
    speed = jnp.linalg.norm(state.vel, axis=-1) + jnp.linalg.norm(state.omega, axis=-1) * r
    return jax.lax.stop_gradient(model.dt * (speed + abs(model.gravity) * model.dt) + 0.5 * scene.margin)


def ground_contacts(model, scene: Scene, params: Params, state: State):
    """Every body's ``scene.ground_contacts`` closest vertices against the ground (at most
    ``model.max_contacts``), those within the body's ``reach`` in the problem:
    (rows (N·Cg, 2, 3, 6), phi, valid, bodies (N·Cg, 2))."""
    N = scene.num_bodies
    Cg = num_ground_contacts(model, scene, params)
    con = _per_body(lambda p, s: geometry.contact_candidates(p.body, p.ground, s, Cg), params, state)
    rows = jnp.stack([jnp.zeros_like(con.jac), con.jac], axis=2).reshape(N * Cg, 2, 3, 6)
    bodies = np.stack([np.full(N * Cg, -1), np.repeat(np.arange(N), Cg)], axis=1)
    valid = con.valid
    if N > 1:  # candidates beyond reach stay out of the problem (a single body keeps all, as dynamics does;
        # so does a jointed body: its joints can move it faster than its own velocity says)
        valid = valid & ((con.phi <= reach(model, scene, params, state)[:, None]) | scene.jointed_bodies[:, None])
    return rows, con.phi.reshape(-1), valid.reshape(-1), bodies


def _pair_rows(state_a, state_b, pc: collision.PairContacts):
    """Rows (n, 2, 3, 6) of a pair's contacts: −(rows on a), rows on b, along [normal, tangents]."""
    dirs = jnp.concatenate([pc.normal[None], geometry.tangent_basis(pc.normal)], axis=0)

    def on(s, p):
        r = (p - s.pos) @ quat_to_mat(s.quat)  # body frame: Rᵀ(p − x)
        return geometry.point_jacobian(s, r, dirs)

    ra = jax.vmap(lambda p: on(state_a, p))(pc.point)
    rb = jax.vmap(lambda p: on(state_b, p))(pc.point)
    return jnp.stack([-ra, rb], axis=1)


def pair_gaps(scene: Scene, params: Params, state: State):
    """(P,) a lower bound of every pair's distance (the broad phase): the distance of the two
    centres of mass minus both bodies' bounding radii (their farthest vertex)."""
    radius = bounding_radii(params)
    a, b = np.asarray(scene.pairs, dtype=int).reshape(-1, 2).T
    return jnp.linalg.norm(state.pos[a] - state.pos[b], axis=-1) - radius[a] - radius[b]


def pair_contacts(model, scene: Scene, params: Params, state: State):
    """The manifolds (``collision.hull_hull``, within the pair's ``reach``) of the pairs the broad
    phase keeps (every pair without ``Scene.max_pairs``: there, the pairs with the least gap less
    reach), one vmap per topology pair: (rows (S·n, 2, 3, 6), phi, valid, bodies (S·n, 2),
    slot_pair (S,), pair_phi (P, n), pair_kind (P,), capacity)."""
    n, P = scene.pair_contacts, scene.num_pairs
    pairs = np.asarray(scene.pairs, dtype=int).reshape(P, 2)
    dtype = state.pos.dtype
    broad = scene.max_pairs is not None
    body_reach = reach(model, scene, params, state)
    pair_reach = body_reach[pairs[:, 0]] + body_reach[pairs[:, 1]]
    gaps = jax.lax.stop_gradient(pair_gaps(scene, params, state)) if broad else None
    capacity = jnp.zeros((), bool)
    out = []
    for ta, tb, ks in scene.pair_groups():
        ks = np.asarray(ks)
        K = scene.pair_slots(len(ks))
        if K < len(ks):  # the K pairs of this group with the smallest gaps; one more within reach is flagged
            neg, sel = jax.lax.top_k(pair_reach[ks] - gaps[ks], K + 1)
            capacity = capacity | (neg[K] >= 0)
            idx = jnp.asarray(ks)[sel[:K]]
            ia, ib = jnp.asarray(pairs[:, 0])[idx], jnp.asarray(pairs[:, 1])[idx]
        else:
            idx, ia, ib = ks, pairs[ks, 0], pairs[ks, 1]
        sa = jax.tree_util.tree_map(lambda x: x[ia], state)
        sb = jax.tree_util.tree_map(lambda x: x[ib], state)
        va, vb = params.body.vertices[ia], params.body.vertices[ib]

        def one(va, sa, vb, sb, margin):
            pc = collision.hull_hull(va, ta, sa.pos, sa.quat, vb, tb, sb.pos, sb.quat, num=n, margin=margin,
                                     method=scene.narrow_phase)
            return _pair_rows(sa, sb, pc), pc.phi, pc.valid, pc.kind

        r, f, v, k = jax.vmap(one)(va, sa, vb, sb, pair_reach[idx])
        out.append((idx, jnp.stack([jnp.asarray(ia), jnp.asarray(ib)], axis=1), r, f, v, k))
    cols = [jnp.concatenate([o[i] for o in out]) for i in range(6)]
    if not broad:  # every pair, in the scene's order
        order = np.argsort(np.concatenate([o[0] for o in out]), kind="stable")
        cols = [c[order] for c in cols]
    slot_pair, slot_bodies, rows, phi, valid, kind = cols
    S = slot_pair.shape[0]
    if broad:
        pair_phi = jnp.broadcast_to(gaps[:, None], (P, n)).astype(dtype).at[slot_pair].set(phi)
        pair_kind = jnp.zeros((P,), jnp.int32).at[slot_pair].set(kind)
    else:
        pair_phi, pair_kind = phi, kind
    bodies = jnp.repeat(slot_bodies, n, axis=0)
    return (rows.reshape(S * n, 2, 3, 6), phi.reshape(-1), valid.reshape(-1), bodies, slot_pair, pair_phi,
            pair_kind, capacity)


def collide(model, scene: Scene, params: Params, state: State) -> WorldContacts:
    """The world's contacts at ``state``: body–ground (if the scene has the ground) then body–body."""
    parts = []
    if scene.ground:
        parts.append(ground_contacts(model, scene, params, state))
    dtype = state.pos.dtype
    slot_pair, pair_phi = jnp.zeros((0,), jnp.int32), jnp.zeros((0, scene.pair_contacts), dtype)
    pair_kind, capacity = jnp.zeros((0,), jnp.int32), jnp.zeros((), bool)
    if scene.pairs:
        *pair, slot_pair, pair_phi, pair_kind, capacity = pair_contacts(model, scene, params, state)
        parts.append(tuple(pair))
    rows = jnp.concatenate([p[0] for p in parts])
    phi = jnp.concatenate([p[1] for p in parts])
    valid = jnp.concatenate([p[2] for p in parts])
    bodies = jnp.concatenate([jnp.asarray(p[3], jnp.int32) for p in parts])
    num_ground = parts[0][0].shape[0] if scene.ground else 0
    return WorldContacts(rows=rows, phi=phi, valid=valid, bodies=bodies, slot_pair=jnp.asarray(slot_pair, jnp.int32),
                         pair_phi=pair_phi, pair_kind=pair_kind, capacity=capacity, num_ground=num_ground)


def stiff_rows(con: WorldContacts, impact, num_bodies: int):
    """(C,) the contacts of the islands hit by an impact this step: ``impact`` (C,) marks the
    contacts approaching faster than the restitution threshold; their bodies, and every body
    linked to them through touching contacts (φ within the margin: the valid ones), are in the
    island (label propagation, at most N − 1 hops, static). Ground contacts never link bodies."""
    a, b = con.bodies[:, 0], con.bodies[:, 1]
    link = con.valid & (a >= 0) & (b >= 0)
    ia, ib = jnp.maximum(a, 0), jnp.maximum(b, 0)
    hit = jnp.zeros(num_bodies, bool).at[ib].max(impact).at[ia].max(impact & (a >= 0))
    if num_bodies > 1:
        # bodies within N − 1 hops of a hit body: the reflexive adjacency squared ⌈log₂(N − 1)⌉ times
        # (a few small matrix products, where a hop at a time was N − 1 dependent scatters)
        adj = jnp.eye(num_bodies, dtype=jnp.float32).at[ia, ib].max(link.astype(jnp.float32))
        adj = jnp.maximum(adj, adj.T)
        squarings = int(np.ceil(np.log2(num_bodies - 1)))  # paths of up to 2^squarings >= N - 1 hops
        for _ in range(squarings):
            adj = (jnp.matmul(adj, adj, precision="highest") > 0).astype(jnp.float32)
        hit = jnp.matmul(adj, hit.astype(jnp.float32), precision="highest") > 0
    return impact | (con.valid & (hit[ib] | ((a >= 0) & hit[ia])))


def soft_rows(softness: float, stiff):
    """(C,) the relative diagonal added to every contact's rows (constraint-force mixing):
    ``softness`` on every contact except the ``stiff`` ones ((C,): ``stiff_rows``, the islands of
    this step's impacts), which get none. The rows of a resting stack are redundant (four normals
    per face for three constrained directions, eight friction rows for three), which slows
    projected Gauss–Seidel to hundreds of sweeps at the solver's own 1e-6; a softness of 1e-2
    brings a 10-box stack at rest to ~30 (docs/worlds.md) at the price of a steady compression of
    softness·h·|A_ii z| per contact (40 µm over a 10-box stack at 2 ms). An island hit by an impact
    is solved stiff, so restitution, inelastic impacts and simultaneous impacts (a touching
    Newton's cradle) keep the exact answer of the velocity-level LCP."""
    return jnp.where(stiff, 0.0, softness)


def soften(prob: contact.ContactProblem, soft):
    """The dense problem with ``soft`` ((C,): ``soft_rows``) added to A's diagonal, relative to it
    (what ``contact.solve_bodies`` does row by row)."""
    row_soft = jnp.repeat(soft, prob.rows_per_contact).astype(prob.A.dtype)
    return prob.replace(A=prob.A + jnp.diag(row_soft * jnp.diagonal(prob.A)))


DENSE_ROWS = 64
"""Contact problems of at most this many rows (C·3) are solved densely (``contact.solve``: A
formed, the sweep unrolled, its own batching rule); larger ones in velocity form
(``contact.solve_bodies``: A never formed, each sweep over the valid contacts only). Both give
the same impulses up to round-off (tests/test_worlds.py). The dense form also serves the
``"relaxed"`` gradient mode, which the velocity form does not implement."""


def solve_contacts(bp: contact.BodyProblem, mu, settings, target, z0, soft, gradient, group=None):
    """The world's contact solution (``DENSE_ROWS``: dense or velocity form; a jointed world's
    full mobility, densely)."""
    if bp.num_contacts * bp.rows_per_contact <= DENSE_ROWS or gradient is not None or bp.mobility.ndim == 2:
        prob = contact.dense(bp)
        if soft is not None:
            prob = soften(prob, soft)
        return contact.solve(prob, mu, settings, target, z0=z0, gradient=gradient)
    return contact.solve_bodies(bp, mu, settings, target, z0=z0, soft=soft, group=group)


def patch_phi(scene: Scene, con: WorldContacts, vn_pre, dt: float):
    """(C,) the distances the restitution switch reads: body–ground contacts their own (as a
    single body); every contact of a body–body pair the pair's earliest closing, so that φ + h v⁻
    is the least over the pair's valid points for all of them. A face patch then bounces as one:
    its four points' distances differ by round-off, and a switch read point by point could bounce
    two of them and not the others (a spurious torque, measured on the cradle at a 3 mm gap)."""
    G, n = con.num_ground, scene.pair_contacts
    if not scene.pairs:
        return con.phi
    phi, vn, valid = con.phi[G:].reshape(-1, n), vn_pre[G:].reshape(-1, n), con.valid[G:].reshape(-1, n)
    first = jnp.min(jnp.where(valid, phi + dt * vn, jnp.inf), axis=1, keepdims=True)
    pair = jnp.where(valid, first - dt * vn, phi)
    return jnp.concatenate([con.phi[:G], pair.reshape(-1)])


def check_law(model, scene: Scene) -> None:
    """Refuse, before compiling, a law that cannot resolve body–body contact in a scene with pairs."""
    if scene.pairs and not isinstance(model.law, (CoulombLCP, NoContact)):
        raise ValueError(
            f"{type(model.law).__name__} describes a body against the ground only (its contact model, learned or "
            "not, has no body–body contact); a world with body–body pairs needs CoulombLCP (or NoContact). "
            "Use make_scene(..., pairs=[]) for independent bodies on the ground")
    if isinstance(model.law, CoulombLCP) and model.law.restitution_target != "velocity":
        raise ValueError("worlds support CoulombLCP(restitution_target='velocity') only (the position form "
                         "applies ε twice on late landings: a known bug of the single-body law)")


def _or(bits):
    return jax.lax.reduce(bits, jnp.int32(0), jax.lax.bitwise_or, (0,))


@dynamics.full_precision
def _coupled_step(model, scene: Scene, params: Params, state: State, control, warm):
    N = scene.num_bodies
    invalid = _or(_per_body(lambda p, s, u: broken_rules(p, s, u), params, state, control))
    if scene.ground:
        state, projected = _per_body(lambda p, s: dynamics.depenetrate(model, p, s), params, state)
        projected = jnp.any(projected)
    else:
        projected = jnp.zeros((), bool)
    v1 = _per_body(lambda p, s, u: dynamics.free_velocity(model, p, s, u), params, state, control)
    Minv = _per_body(lambda p, s: geometry.mass_matrix_inverse(p.body, s), params, state)
    motion = world_joints.motion(model, scene, params, state, v1, Minv)  # v¹ and M⁻¹, or v_c and W of the joints
    con = collide(model, scene, params, state)
    if isinstance(model.law, NoContact):
        v_new, p_body = motion.velocity, jnp.zeros_like(v1)
        residual, iterations = jnp.zeros((), v1.dtype), jnp.zeros((), jnp.int32)
    else:
        law = model.law
        prob = contact.body_problem(con.rows, con.bodies, con.phi, con.valid, motion.mobility, motion.velocity,
                                    model.dt)
        if model.max_correction_speed is not None:
            prob = prob.replace(target=jnp.minimum(prob.target, jnp.asarray(model.max_correction_speed, prob.target.dtype)))
        v_pre = jax.vmap(lambda s: s.generalized_velocity())(state)
        vn_pre = contact.relative_velocity(prob, v_pre)[:, 0]
        target = normal_target_at(law, model, params.law.restitution, vn_pre, patch_phi(scene, con, vn_pre, model.dt),
                                  prob.target)
        mu = contact_friction(params, con, v1.dtype)
        impact = con.valid & (vn_pre < -law.restitution_threshold)
        soft = soft_rows(scene.softness, stiff_rows(con, impact, N)) if scene.softness else None
        sol = solve_contacts(prob, mu, law.solver, target, None if warm is None else warm_slots(scene, con, warm),
                             soft, law.relaxed_gradient(model), manifold_size(model, scene, params))
        p_body = sol.impulse.reshape(N, 6)
        v_new = motion.after(p_body)
        residual, iterations = sol.residual, sol.iterations
        if warm is not None:
            warm = warm_table(scene, con, jax.lax.stop_gradient(sol.z))
    new = jax.vmap(lambda s, v: dynamics.integrate(model, s, v))(state, v_new)
    Cg = con.num_ground // N if scene.ground else 0
    info = WorldInfo(
        impulse=p_body, phi_ground=con.phi[:con.num_ground].reshape(N, Cg),
        pair_phi=con.pair_phi, pair_kind=con.pair_kind, residual=residual, iterations=iterations,
        joint_impulse=motion.joint_impulse(p_body), joint_error=motion.joint_error())
    failed = dynamics.solver_failed(model, info)
    # bodies that start a step inside each other deeper than one step of max_correction_speed: the
    # capped target separates them without launching them (as the ground does); flagged
    if scene.pairs:
        pair_phi = con.phi[con.num_ground:]
        projected = projected | jnp.any(con.valid[con.num_ground:] & (pair_phi < -model.penetration_tol))
    flags = dynamics.step_flags(invalid, dynamics.any_nonfinite(p_body, new, info.joint_impulse), projected, failed,
                                con.capacity)
    return new, info.replace(flags=flags, invalid=invalid), warm


def manifold_size(model, scene: Scene, params: Params) -> int:
    """Contacts per manifold (static): consecutive contacts on the same two bodies, a body's ground
    candidates (split in equal parts) and a pair slot's points alike."""
    sizes = [s for s in (num_ground_contacts(model, scene, params), scene.pair_contacts if scene.pairs else 0) if s]
    return math.gcd(*sizes) if sizes else 1


def num_ground_contacts(model, scene: Scene, params: Params) -> int:
    """Body–ground candidates per body (static)."""
    return min(model.num_contacts(_body(params, 0)), scene.ground_contacts) if scene.ground else 0


def warm_slots(scene: Scene, con: WorldContacts, table):
    """The warm start of this step's contacts (C, 3) from ``table`` (the impulses of the previous
    step per body–ground contact and per pair of the scene, ``initial_warm``'s layout): a pair the
    broad phase brings in takes its own last impulses (zero if it was out)."""
    G, n = con.num_ground, scene.pair_contacts
    pairs = table[G:].reshape(scene.num_pairs, n, 3)[con.slot_pair].reshape(-1, 3)
    return jnp.concatenate([table[:G], pairs])


def warm_table(scene: Scene, con: WorldContacts, z):
    """``warm_slots`` inverted: this step's impulses z (C, 3) into the table (pairs out: zero)."""
    G, n = con.num_ground, scene.pair_contacts
    pairs = jnp.zeros((scene.num_pairs, n, 3), z.dtype).at[con.slot_pair].set(z[G:].reshape(-1, n, 3))
    return jnp.concatenate([z[:G], pairs.reshape(-1, 3)])


def initial_warm(model, scene: Scene, params: Params, state: State):
    """The warm start of a rollout's first step (zero impulses per contact slot), or None when the
    law does not warm-start (``LCPSettings.warm_start``)."""
    if not dynamics.warm_starts(model) or isinstance(model.law, NoContact):
        return None
    C = scene.num_bodies * num_ground_contacts(model, scene, params) + scene.num_pairs * scene.pair_contacts
    return jnp.zeros((C, 3), state.pos.dtype)


def _controls(scene: Scene, state: State, control):
    N = scene.num_bodies
    if control is None:
        return jnp.zeros((N, 6), state.pos.dtype)
    return control


def step_with_info(model, scene: Scene, params: Params, state: State, control=None):
    """One step of a world: ``(state⁺, WorldInfo)``. state: ``State`` with a leading body axis
    (N, …); control: (N, 6) force (world) and torque (body) per body, or None. Concrete inputs are
    validated (``validate``) and the law checked; inside a user's ``jit``/``vmap``/``grad`` it
    traces straight through and reports through ``WorldInfo.flags``."""
    check_law(model, scene)
    check_shapes(scene, params, state, control, concrete=is_concrete(params.body))
    if is_concrete((params, state, control)):
        validate(scene, params, state, control)
        return _step_jit(model, scene, params, state, control)
    return _step(model, scene, params, state, control)


def _step(model, scene, params, state, control):
    state, control = dynamics.as_input_dtype(params, state, _controls(scene, state, control), materials=True)
    new, info, _ = _coupled_step(model, scene, params, state, control, None)
    return new, info


_step_jit = jax.jit(_step, static_argnames=("model", "scene"))


def step(model, scene: Scene, params: Params, state: State, control=None) -> State:
    """``step_with_info`` without the info."""
    return step_with_info(model, scene, params, state, control)[0]


@functools.partial(jax.jit, static_argnames=("model", "scene", "n_steps", "output"))
def _rollout(model, scene, params, state, controls, n_steps, output):
    N = scene.num_bodies
    if controls is None:
        controls = jnp.zeros((n_steps, N, 6), state.pos.dtype)
    state, controls = dynamics.as_input_dtype(params, state, controls, materials=True)
    warm0 = initial_warm(model, scene, params, state)
    steps = jnp.arange(n_steps, dtype=jnp.int32)
    if output == "final":
        def g(carry, xs):
            s, summary, warm = carry
            u, k = xs
            s1, info, warm = _coupled_step(model, scene, params, s, u, warm)
            return (s1, dynamics.accumulate(summary, info, k), warm), None

        (final, summary, _), _ = jax.lax.scan(g, (state, dynamics.empty_summary(), warm0), (controls, steps))
        return final, summary.replace(unit="worlds", bodies=N)

    def f(carry, u):
        s, warm = carry
        s1, info, warm = _coupled_step(model, scene, params, s, u, warm)
        return (s1, warm), (s1, info)

    _, (traj, infos) = jax.lax.scan(f, (state, warm0), controls)
    traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
    return traj, infos


def rollout(model, scene: Scene, params: Params, state: State, n_steps: int, controls=None, *,
            output: str = "trajectory"):
    """``n_steps`` steps of a world (``lax.scan``): ``(trajectory (n_steps + 1, N, …), infos)``,
    or with ``output="final"`` ``(final state, Summary)`` (the steps' flags, as a single body's
    ``rollout(..., output="final", with_info=True)``). controls: (n_steps, N, 6) or None. Concrete
    inputs are validated and an eager rollout warns when it ends non-finite or its contact solve
    failed (``NonFiniteWarning``, ``SolverWarning``), and when it starts with two bodies inside each
    other deeper than ``Model.penetration_tol`` (``PenetrationWarning``: the pair, the depth, the
    time to separate at ``max_correction_speed``; ``warn_overlaps``).

    Static checks (``check_shapes``), eagerly and inside ``jit``/``vmap``/``grad``: the scene's
    bodies (count, padded vertex count; their hulls too when concrete: ``scene.check_body``), the
    state's N, controls of shape (n_steps, N, 6)."""
    n_steps = check_steps(n_steps)
    if output not in ("trajectory", "final"):
        raise ValueError(f"output must be 'trajectory' or 'final', got {output!r}")
    check_law(model, scene)
    check_shapes(scene, params, state, controls, n_steps=n_steps, concrete=is_concrete(params.body))
    if not is_concrete((params, state, controls)):
        return _rollout(model, scene, params, state, controls, n_steps, output)
    validate(scene, params, state, controls, control_steps=True)
    out = _rollout(model, scene, params, state, controls, n_steps, output)
    if _penetrated_at_start(out, output):  # the flag first: the overlaps' narrow phase only then
        warn_overlaps(model, scene, params, state, batched=False)
    _warn(out, output, batched=False)
    return out


_HINT = "jaxcontact.diagnostics.report of the rollout's infos (or of its Summary with output='final') names the steps"


@functools.partial(jax.jit, static_argnames=("model", "scene"))
def start_overlaps(model, scene: Scene, params: Params, state: State):
    """(P,) how deep (m, 0 if apart) the two bodies of every pair of the scene overlap at ``state``
    (the narrow phase on every pair, whatever ``Scene.max_pairs``)."""
    every = dataclasses.replace(scene, max_pairs=None)
    _, phi, valid, *_ = pair_contacts(model, every, params, state)
    return jnp.max(jnp.where(valid, -phi, 0.0).reshape(scene.num_pairs, scene.pair_contacts), axis=1)


def warn_overlaps(model, scene: Scene, params: Params, states: State, batched: bool, stacklevel: int = 4) -> None:
    """Warn (``PenetrationWarning``) when concrete start states put a pair of bodies inside each
    other deeper than one step of ``Model.max_correction_speed`` corrects (``penetration_tol``):
    the pair, how deep, and how long separating takes at the capped speed (pairs are pushed apart
    at no more than ``max_correction_speed``, not projected out as the ground is)."""
    if not scene.pairs or model.max_correction_speed is None:
        return
    depth = np.asarray(jax.vmap(lambda s: start_overlaps(model, scene, params, s))(states) if batched
                       else start_overlaps(model, scene, params, states)[None])
    deep = depth > model.penetration_tol
    if not deep.any():
        return
    w, k = np.unravel_index(np.argmax(depth), depth.shape)
    a, b = scene.pairs[k]
    d, v = float(depth[w, k]), model.max_correction_speed
    who = (f"{int(deep.any(axis=1).sum())} of {depth.shape[0]} worlds start" if batched else "the world starts")
    where = f" (world {w})" if batched else ""
    warnings.warn(
        f"{who} with bodies inside each other: {int(deep.sum())} pair(s) deeper than Model.max_correction_speed·dt = "
        f"{model.penetration_tol:.3g} m, the deepest bodies ({a}, {b}){where} by {d:.3g} m; pairs are pushed apart at "
        f"no more than max_correction_speed = {v:.3g} m/s (not projected out as the ground is), so separating takes "
        f"about {d / v:.3g} s ({round(d / (v * model.dt))} steps)",
        dynamics.PenetrationWarning, stacklevel=stacklevel)


def _penetrated_at_start(out, output: str) -> bool:
    """Any world flagged PENETRATION on its first step (the ground or a pair)."""
    return bool(np.any(dynamics.first_flag_step(out, output, Flags.PENETRATION) == 0))


def _warn(out, output: str, batched: bool) -> None:
    """An eager rollout's warnings: non-finite final states, steps whose contact solve failed."""
    final = out[0] if output == "final" else jax.tree_util.tree_map(lambda x: x[..., -1, :, :], out[0])
    final = final if batched else jax.tree_util.tree_map(lambda x: x[None], final)
    dynamics.warn_nonfinite(final, batched=True, stacklevel=4)
    dynamics.warn_failed_solves(out, output, "world", batched, _HINT)


def batch_rollout(model, scene: Scene, params: Params, states: State, n_steps: int, controls=None, *,
                  output: str = "trajectory"):
    """``rollout`` of a batch of worlds: ``states`` with leading axes (W, N, …), the same
    parameters; controls (W, n_steps, N, 6) or None. Eagerly it warns as ``rollout`` does, with
    how many worlds (``NonFiniteWarning`` counts bodies)."""
    n_steps = check_steps(n_steps)
    if output not in ("trajectory", "final"):
        raise ValueError(f"output must be 'trajectory' or 'final', got {output!r}")
    check_law(model, scene)
    check_shapes(scene, params, states, controls, n_steps=n_steps, batched=True, concrete=is_concrete(params.body))
    check = is_concrete((params, states, controls))
    if check:
        validate_batch(scene, params, states, controls)
    if controls is None:
        out = jax.vmap(lambda s: _rollout(model, scene, params, s, None, n_steps, output))(states)
    else:
        out = jax.vmap(lambda s, u: _rollout(model, scene, params, s, u, n_steps, output))(states, controls)
    if check:
        if _penetrated_at_start(out, output):
            warn_overlaps(model, scene, params, states, batched=True)
        _warn(out, output, batched=True)
    return out


def check_shapes(scene: Scene, params: Params, state: State, control=None, n_steps: int | None = None,
                 batched: bool = False, concrete: bool = True) -> None:
    """Static checks, the same eagerly and inside ``jit``/``vmap``/``grad`` (shapes are static):
    ``params.body`` is what ``scene`` was built from (``scene.check_body``; its vertices compared
    only when ``concrete``), the state has the scene's N bodies, and the controls are (N, 6) for a
    step, (n_steps, N, 6) for a rollout (one row per step), with a leading W for a batch."""
    if not isinstance(params, Params):
        raise ValueError(f"params: expected a jaxcontact Params, got {type(params).__name__}")
    if not isinstance(state, State):
        raise ValueError(f"state: a world needs a State with a leading body axis, got {type(state).__name__}")
    N = scene.num_bodies
    check_body(scene, params.body, concrete)
    lead = np.shape(state.pos)[:1] if batched else ()
    for name in ("pos", "quat", "vel", "omega"):
        shape = np.shape(getattr(state, name))
        if len(shape) != len(lead) + 2 or shape[len(lead)] != N:
            want = ("W, " if batched else "") + f"{N}, {4 if name == 'quat' else 3}"
            raise ValueError(f"state.{name}: the scene has {N} bodies, so expected shape ({want}) (one row per body), "
                             f"got {shape}")
    if control is None:
        return
    if n_steps is None:
        want = (N, 6)
    else:
        want = (*lead, n_steps, N, 6)
    shape = tuple(np.shape(control))
    if shape != want:
        what = "one row of (N, 6) per step" if n_steps is not None else "(N, 6): a force and a torque per body"
        raise ValueError(f"controls: expected shape {want} ({what}), got {shape}"
                         + (f"; n_steps = {n_steps} needs {n_steps} rows" if n_steps is not None
                            and len(shape) == len(want) and shape[len(lead) + 1:] == (N, 6) else ""))


def validate_batch(scene: Scene, params: Params, states: State, controls=None) -> None:
    """``validate`` of every world of a batch (``states`` (W, N, …), controls (W, T, N, 6) or None)."""
    for w in range(states.pos.shape[0]):
        validate(scene, params, jax.tree_util.tree_map(lambda x: x[w], states),
                 None if controls is None else controls[w], control_steps=True)


def validate(scene: Scene, params: Params, state: State, control=None, control_steps: bool = False) -> None:
    """Eager checks of a world's concrete inputs, naming the field (and body): bodies stacked on
    the scene's N, the ground, the law parameters, the state (N, …), the controls."""
    N = scene.num_bodies
    if not isinstance(params, Params):
        raise ValueError(f"params: expected a jaxcontact Params, got {type(params).__name__}")
    validate_body(params.body, batched=True)
    if np.shape(params.body.mass) != (N,):
        raise ValueError(f"params.body: expected {N} stacked bodies (mass of shape ({N},)), got mass of shape "
                         f"{np.shape(params.body.mass)}")
    if params.body.friction is not None and np.shape(params.body.friction) != (N,):
        raise ValueError(f"body.friction: expected one friction coefficient per body, shape ({N},), got shape "
                         f"{np.shape(params.body.friction)}")
    validate_ground(params.ground, 3)
    validate_law_params(params.law)
    validate_state(state, 3, batched=True)
    if np.shape(state.pos) != (N, 3):
        raise ValueError(f"state.pos: expected shape ({N}, 3) (one row per body), got {np.shape(state.pos)}")
    if scene.joints is not None:
        world_joints.validate(scene.joints, params, state)
    if control is not None:
        want = ("T", N, 6) if control_steps else (N, 6)
        c = np.asarray(control)
        if c.ndim != len(want) or c.shape[-2:] != (N, 6):
            raise ValueError(f"control: expected shape {want}, got {c.shape}")
        if not np.all(np.isfinite(c)):
            raise ValueError("control: contains non-finite values")


def energy(model, params: Params, state: State) -> jnp.ndarray:
    """Kinetic plus gravitational potential energy of the world (J): the bodies' sum."""
    return jnp.sum(_per_body(lambda p, s: dynamics.energy(model, p, s), params, state))


__all__ = ["DENSE_ROWS", "WorldContacts", "WorldInfo", "batch_rollout", "check_law", "collide", "energy",
           "check_shapes", "ground_contacts", "initial_warm", "pair_contacts", "pair_gaps", "patch_phi", "reach", "rollout", "soft_rows",
           "soften", "solve_contacts", "start_overlaps", "step", "step_with_info", "validate", "validate_batch",
           "warn_overlaps"]
