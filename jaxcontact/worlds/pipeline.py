"""The one step, of every system: a single body, a world of many bodies, a chain.

A single body is a world of one body without pairs (``body_scene``; ``jaxcontact.dynamics``
lifts its inputs), a chain a world with joints (``chains.as_world``). ``step_stages`` is a recipe
of pure stages over the stacked bodies (leading body axis N):

0. checks in: ``validation.broken_rules`` per body;
1. ``stages.depenetrate`` each body out of the ground (position only);
2. free velocities v¹ (``stages.free_velocity``) and M⁻¹ of every body;
3. contact, by the law (``laws.base.ContactLaw``): where bodies cannot touch each other (no
   body–body pairs, no joints: ``coupled`` false) each body's ``law(model, params, state, v¹)``
   (or ``law.solve_warm``) against the ground, exactly a single body's call; otherwise the joints
   eliminated (``joints.motion``: v_c and the jointed mobility W), ``contacts.collide`` (body–ground
   candidates and every pair's manifold, ``collision.hull_hull``), one contact problem
   (``contact.body_problem``) with the friction of every contact (``materials.contact_friction``),
   the distances the restitution switch reads (``patch_phi``) and the softness outside the islands
   of impacts (``soft_rows``, ``stiff_rows``), solved by ``law.solve_coupled`` (``CoulombLCP``:
   ``solvers.solve_contact``, dense up to ``solvers.SMALL_ROWS`` rows or in velocity form);
4. v⁺ = v¹ + M⁻¹ p per body (v_c + W p with joints, and the joint impulse), ``stages.integrate``;
5. checks out: ``stages.step_flags`` (+ ``Flags.CAPACITY`` from the broad phase) in a ``WorldInfo``.

A world of ``Scene.integrator = "rk4"`` (MuJoCo's soft constraints only) steps by ``rk4_stages`` instead:
stages 2 and 3 four times at MuJoCo's Runge–Kutta stages, then one update (``advance``).

``run`` scans it (the one rollout; the law's warm start in the carry) and ``batch_jit`` vmaps
``run`` over systems in chunks; the entry points of bodies (``dynamics``), worlds (here:
``step``, ``rollout``, ``batch_rollout``) and chains (``chains.dynamics``) validate, call them
and warn. A law without a coupled solve (dacm, PDD, ContactNets, E2E) runs in worlds without pairs
or joints and is refused by name in the others (``check_law``).

Friction (``materials.contact_friction``): by default one material per world: body–ground
contacts use the law's (μ₁, μ₂) along the ground tangents, exactly as a single body; body–body
contacts use μ₁ isotropically (anisotropy is defined against the ground's tangents only). With a
per-body ``params.body.friction`` (N,) a contact's μ is the geometric mean of its two sides'
(Box2D's rule, ``laws.coulomb.mix_friction``), the ground's being the law's (μ₁, μ₂); on the
per-body route the law's parameters take it (``ContactLaw.with_friction``). Restitution: the
law's ε on every contact, applied to the relative normal velocity of the contact's two bodies.
Softness (``Scene.softness``) and the reach filter act on coupled worlds only.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from .. import contact, eager, geometry, stages
from ..rotations import quat_exp, quat_mul, quat_normalize
from ..stages import first, leading, per_body
from ..doors import enter, last_states
from ..types import Flags, Model, Params, State
from ..validation import (
    FIXED_MOVING,
    JOINT_PASSIVE,
    SOFT,
    MEDIUM,
    OPTIONAL_ARRAY,
    OUTPUT,
    STEPS,
    broken_rules,
    check_arguments,
    check_steps,
    is_concrete,
    validate_body,
    validate_ground,
    validate_law_params,
    validate_state,
)
from .contacts import (
    WorldContacts,
    check_ground_contacts,
    collide,
    manifold_size,
    num_ground_contacts,
    num_joint_contacts,
    patch_phi,
    separate_fast_pairs,
    soft_rows,
    start_overlaps,
    stiff_rows,
    warm_slots,
    warm_table,
)
from .materials import contact_friction
from . import joints as world_joints
from .medium import broken_medium, check_medium, fluid_wrench
from . import soft as world_soft
from .scene import Scene, check_body


@struct.dataclass
class WorldInfo:
    """Per step of a world: ``impulse`` (N, 6) contact impulse per body (world force, body torque
    impulse); ``phi_ground`` (N, Cg) the body–ground candidates' signed distances; ``pair_phi``
    (P, n) and ``pair_kind`` (P,) (``PatchType``) of every body–body pair; the contact solve's
    ``residual`` (m/s) and ``iterations``; ``joint_impulse`` (R,) of the scene's joints' rows
    (``Joints.num_rows``) and ``joint_error`` () their largest anchor separation before the step (m) (empty and 0 without
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
    contacts: Any = None
    unit: str = struct.field(pytree_node=False, default="worlds")


def coupled(scene: Scene) -> bool:
    """Whether the world's bodies share one contact problem (static): body–body pairs, joints, tilted
    planes, or MuJoCo's soft constraints (``Scene.constraints``: built in the coupled contact stage).
    Otherwise each body's contact with the ground is its own (the per-body route of ``step``)."""
    return bool(scene.pairs) or scene.joints is not None or scene.planes > 0 or scene.constraints == "mujoco"


def check_law(model, scene: Scene) -> None:
    """Refuse, before compiling and by name, a law that cannot solve the coupled contact problem
    of a world with body–body pairs or joints (``ContactLaw.coupling_refusal``)."""
    why = model.law.coupling_refusal
    if coupled(scene) and why is not None:
        raise ValueError(
            f"{type(model.law).__name__} {why}; a world with body–body pairs or joints needs a law with a coupled "
            "solve (CoulombLCP, NoContact). Use make_scene(..., pairs=[]) for independent bodies on the ground")


def _or(bits):
    return jax.lax.reduce(bits, jnp.int32(0), jax.lax.bitwise_or, (0,))


def _ground_model(model, scene: Scene, params: Params):
    """The model each body's law sees on the per-body route: ``model`` itself (its ``max_contacts``
    is the one count of ground contacts; a deprecated ``Scene.ground_contacts`` must agree)."""
    check_ground_contacts(model, scene, params)
    return model


def _law_params(model, p: Params) -> Params:
    """One body's parameters for its law: with a per-body material (``body.friction``), the law's
    friction mixed with it (``ContactLaw.with_friction``)."""
    if p.body.friction is None:
        return p
    return p.replace(law=model.law.with_friction(p.law, p.body.friction))


def _contactsper_body(model, scene: Scene, params: Params, state, v1, Minv, warm):
    """The contact stage of a world whose bodies cannot touch each other: each body's law against
    the ground (``law(model, params, state, v¹)``, or ``law.solve_warm`` with a warm start), as a
    single body's step calls it. (velocities after contact (N, nv), impulses, the laws' infos
    (N, …), warm⁺, each body's solve failed (N,))."""
    lmodel = _ground_model(model, scene, params)

    def one(p, s, v, M, w):
        if not scene.ground:  # no ground and no pairs: nothing to touch
            p_imp = jnp.zeros_like(v)
            info = contact.empty_info(lmodel.num_contacts(p.body), s.dim, v.dtype)
        elif w is None:
            p_imp, info = model.law(lmodel, _law_params(model, p), s, v)
        else:
            p_imp, info, w = model.law.solve_warm(lmodel, _law_params(model, p), s, v, w)
        info = info.replace(flags=jnp.zeros((), jnp.int32), invalid=jnp.zeros((), jnp.int32))
        return v + M @ p_imp, p_imp, info, w, stages.solver_failed(model, info)

    out = per_body(one, params, state, v1, Minv, warm)
    if not scene.fixed and not scene.off_ground:
        return out
    v, p_imp, info, w, failed = out  # a fixed body takes no impulse (its state is kept: ``step_stages``)
    held = jnp.asarray(scene.fixed_bodies)[:, None]
    if scene.off_ground:  # a body that collides with nothing (here: the ground) moves freely (v¹)
        none = jnp.asarray(scene.off_ground_bodies)[:, None]
        v, p_imp = jnp.where(none, v1, v), jnp.where(none, 0.0, p_imp)
    return jnp.where(held, 0.0, v), jnp.where(held, 0.0, p_imp), info, w, failed


def _contacts_coupled(model, scene: Scene, params: Params, state, v1, Minv, warm, correction=None):
    """The contact stage of a world with pairs or joints: the joints eliminated
    (``joints.motion``), ``collide``, one ``contact.body_problem`` of every contact, solved by the
    law at once (``law.solve_coupled``). (velocities after contact, impulses, ``WorldInfo`` without
    flags, warm⁺, the contacts). ``correction``: a Runge–Kutta stage's joint rows (``joints.motion``)."""
    N = scene.num_bodies
    law = model.law
    # v¹ and M⁻¹, or v_c and W of the joints
    motion = world_joints.motion(model, scene, params, state, v1, Minv, correction)
    # MuJoCo's Euler with damping: the constraint forces from M (the damping explicit), applied with M + hD
    split = (scene.constraints == "mujoco" and correction is None
             and world_joints.damped(scene.joints, getattr(params, "joints", None)))
    solving = world_joints.motion(model, scene, params, state, v1, Minv, explicit=True) if split else motion
    if scene.fixed:
        motion = hold_fixed(scene, motion)
        solving = hold_fixed(scene, solving) if split else motion
    con = collide(model, scene, params, state)
    if con.rows.shape[0] == 0:  # joints alone, nothing to touch: no contact problem
        p_body = jnp.zeros_like(v1)
        info = WorldInfo(
            impulse=p_body, phi_ground=jnp.zeros((N, 0), v1.dtype), pair_phi=con.pair_phi, pair_kind=con.pair_kind,
            residual=jnp.zeros((), v1.dtype), iterations=jnp.zeros((), jnp.int32),
            joint_impulse=motion.joint_impulse(p_body), joint_error=motion.joint_error())
        return motion.after(p_body), p_body, info, warm, con
    prob = contact.body_problem(con.rows, con.bodies, con.phi, con.valid, solving.mobility, solving.velocity, model.dt)
    if con.num_losses:  # friction losses: contacts of a fixed normal impulse (contacts.loss_contacts)
        prob = prob.replace(fixed_normal=jnp.arange(con.phi.shape[0]) >= con.phi.shape[0] - con.num_losses)
    if model.max_correction_speed is not None:
        prob = prob.replace(target=jnp.minimum(prob.target, jnp.asarray(model.max_correction_speed, prob.target.dtype)))
    v_pre = jax.vmap(lambda s: s.generalized_velocity())(state)
    vn_pre = contact.relative_velocity(prob, v_pre)[:, 0]
    jp = getattr(params, "joints", None)
    if (con.num_limits and jp is not None and getattr(jp, "limit_soft", None) is not None and scene.joints.limited
            and scene.constraints == "hard"):
        # a joint past its limit returns at MuJoCo's soft-limit pace (at most −φ/h), not the contact's cap
        at = slice(con.pair_end, con.pair_end + scene.joints.num_limit_rows)
        phi = con.phi[at]
        soft = world_joints.soft_limit_speed(scene.joints, jp, phi, vn_pre[at], model.dt)
        back = jnp.where(phi < 0, jnp.maximum(prob.target[at], jnp.minimum(soft, -phi / model.dt)), prob.target[at])
        prob = prob.replace(target=prob.target.at[at].set(back))
    mu = contact_friction(params, con, v1.dtype)
    def soften(impact):  # the rows' softness outside the islands of this step's impacts
        held = scene.fixed_bodies if scene.fixed else None
        return soft_rows(scene.softness, stiff_rows(con, impact, N, held)) if scene.softness else None

    if scene.constraints == "mujoco":  # MuJoCo's soft rows (worlds.soft): their targets, R / A_ii, active once r < 0
        ours = soften(jnp.zeros(con.phi.shape, bool))
        vel_pre = contact.relative_velocity(prob, v_pre)
        sp = world_soft.problem(scene, params, con, prob, mu, vel_pre, model.dt, ours)
        # the pyramid's edges warm-started; an elliptic world's soft rows start cold (a warm start sent
        # Metaworld's mug to 6e6 mm, not yet understood)
        start = None if warm is None or sp.edges == 1 else sp.spread(warm_slots(scene, con, warm))
        sol = law.solve_coupled(model, params, contact.CoupledProblem(
            problem=sp.prob.replace(mu=sp.mu, warm=start), vn_pre=sp.vn_pre, phi_switch=sp.prob.phi,
            soften=lambda impact: sp.soft, group=None if sp.edges > 1 else manifold_size(model, scene, params)))
        sol = sol.replace(z=sp.collapse(sol.z))
    else:
        sol = law.solve_coupled(model, params, contact.CoupledProblem(
            problem=prob.replace(mu=mu, warm=None if warm is None else warm_slots(scene, con, warm)), vn_pre=vn_pre,
            phi_switch=patch_phi(scene, con, vn_pre, model.dt), soften=soften, group=manifold_size(model, scene, params)))
    p_body = sol.impulse.reshape(N, 6)
    if warm is not None:
        warm = warm_table(scene, con, jax.lax.stop_gradient(sol.z))
    Cg = con.num_ground // N if scene.ground or scene.planes else 0
    info = WorldInfo(
        impulse=p_body, phi_ground=con.phi[:con.num_ground].reshape(N, Cg),
        pair_phi=con.pair_phi, pair_kind=con.pair_kind, residual=sol.residual, iterations=sol.iterations,
        joint_impulse=motion.joint_impulse(p_body), joint_error=motion.joint_error(),
        # the solve's own bit, OR-ed into the step's by _checks_coupled
        flags=jnp.where(jnp.asarray(sol.degenerate), jnp.int32(Flags.DEGENERATE), jnp.int32(0)))
    return motion.after(p_body), p_body, info, warm, con


def on_ground(scene: Scene, con: WorldContacts):
    """(N,) the bodies touching the ground or a plane (a valid contact within ``Scene.margin``)."""
    G, N = con.num_ground, scene.num_bodies
    if not G:
        return jnp.zeros(N, bool)
    return jnp.any((con.valid[:G] & (con.phi[:G] <= scene.margin)).reshape(N, G // N), axis=1)


def hold_fixed(scene: Scene, motion):
    """``motion`` with the fixed bodies (``Scene.fixed``) held: zero velocity (no gravity, no
    control) and zero rows and columns of the mobility (infinite mass), so a contact's impulse moves
    only its free body. A fixed body is in no joint (``Scene``), so a jointed W's blocks of it are
    its own M⁻¹ alone."""
    held = scene.fixed_bodies
    velocity = jnp.where(jnp.asarray(held)[:, None], 0.0, motion.velocity)
    if motion.factor is None:  # free bodies: (N, 6, 6)
        mobility = jnp.where(jnp.asarray(held)[:, None, None], 0.0, motion.mobility)
    else:  # the jointed W (6N, 6N)
        free = jnp.asarray(np.repeat(~held, 6))
        mobility = jnp.where(free[:, None] & free[None, :], motion.mobility, 0.0)
    return dataclasses.replace(motion, velocity=velocity, mobility=mobility)


def fixed_at_rest(scene: Scene, state):
    """(N,) the rule bit (``validation.FIXED_MOVING``) of every fixed body (``Scene.fixed``) given a
    nonzero velocity or angular velocity: the traced check of ``validate``'s refusal."""
    moving = jnp.any(state.vel != 0, axis=-1) | jnp.any(state.omega != 0, axis=-1)
    bad = jnp.asarray(scene.fixed_bodies) & moving
    return jnp.where(bad, jnp.int32(1 << FIXED_MOVING), jnp.int32(0))


def _keep(mask, kept, other):
    """``other`` with the bodies of ``mask`` (N,) taken from ``kept`` (every field, bitwise)."""
    m = jnp.asarray(mask)
    return jax.tree_util.tree_map(lambda k, o: jnp.where(m.reshape((-1,) + (1,) * (o.ndim - 1)), k, o), kept, other)


STAGES = ("checks in", "depenetrate", "free motion", "contact", "integrate", "checks out")


def direct(name: str, fn, *args):
    """How ``step_stages`` runs each of its named stages (``STAGES``) by default: ``fn(*args)``. A
    profiler passes its own ``stage(name, fn, *args)`` (``fn`` closes over nothing but the static
    model and scene; every array is in ``args``), so it times the step's own stages in their order."""
    return fn(*args)


@stages.full_precision
def step_stages(model, scene: Scene, params: Params, state, control, warm, stage=direct):
    """The step, of every system: ``(state⁺, WorldInfo, warm⁺)``. A recipe of pure stages over
    the stacked bodies (N, …; a single body is a world of one, a chain a world with joints):

    0. checks in: ``validation.broken_rules`` per body;
    1. depenetrate: ``stages.depenetrate`` per body (the ground's; position only);
    2. free motion: ``stages.free_velocity`` and M⁻¹ per body;
    3. contact, by the law, on the world's ``route`` (chosen once): bodies that cannot touch each other
       (``coupled`` false) each call ``law(model, params, state, v¹)`` against the ground
       (``_contacts_ground``); a world with pairs or joints collides and builds one problem that
       ``law.solve_coupled`` solves (``_contacts_coupled``); both give a ``WorldInfo``;
    4. integrate: ``stages.integrate`` per body;
    5. checks out: ``stages.step_flags`` (+ ``Flags.CAPACITY`` from the broad phase).
    ``warm``: the law's warm start (None: cold), returned updated. ``stage``: how each named stage
    is run (``direct``: called; a profiler's hook times them). A world of ``Scene.integrator = "rk4"``
    steps by ``rk4_stages`` instead (stages 2 and 3 four times, then one update)."""
    if scene.integrator == "rk4":
        return rk4_stages(model, scene, params, state, control, warm, stage)
    params, control, invalid_b = stage("checks in", lambda p, s, u: _checks_in(scene, p, s, u), params, state, control)
    given = state
    state, projected_b = stage("depenetrate", lambda p, s: _depenetrate(model, scene, p, s), params, state)
    v1, Minv, invalid_b = stage("free motion", lambda p, s, u, i: _free_motion(model, p, s, u, i),
                                params, state, control, invalid_b)
    contacts, checks = route(scene)  # the one branch: both routes' stages return the same
    v_new, p_body, info, warm, con = stage(
        "contact", lambda p, s, v, M, w: contacts(model, scene, p, s, v, M, w), params, state, v1, Minv, warm)
    new = stage("integrate", lambda p, g, s, v, M, c: _integrate(model, scene, p, g, s, v, M, c),
                params, given, state, v_new, Minv, con)
    info = stage("checks out", lambda p, c, i, b: checks(model, scene, p, c, i, b),
                 params, con, info, Bodies(invalid_b, projected_b, p_body, new))
    return new, info, warm


def route(scene: Scene):
    """A world's contact route, chosen once (static, ``coupled``): its contact stage and its checks out,
    the same on both routes — contact ``(model, scene, params, state, v¹, M⁻¹, warm) -> (v after contact,
    impulses (N, 6), WorldInfo, warm⁺, the contacts or None)``, checks out ``(model, scene, params, contacts,
    WorldInfo, Bodies) -> WorldInfo`` with its flags. Coupled:
    ``_contacts_coupled``, ``_checks_coupled``; per body: ``_contacts_ground``, ``_checks_ground``."""
    return (_contacts_coupled, _checks_coupled) if coupled(scene) else (_contacts_ground, _checks_ground)


RK4_A = (0.5, 0.5, 1.0)  # MuJoCo's RK4 tableau (``RK4_A``, its diagonal below the first row): stage i from stage i − 1
RK4_B = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)  # the stages' weights in the update (``RK4_B``)


def advance(model, state, dq, dv):
    """``state`` advanced by one step h = ``model.dt`` at the rates ``dq`` (N, 6) (positions: world
    velocity, body angular velocity, the quaternion turned on its manifold as ``stages.integrate``)
    and the accelerations ``dv`` (N, 6): MuJoCo's ``X[0] '+' h dX`` of a Runge–Kutta stage and update."""
    h = model.dt
    quat = jax.vmap(lambda q, w: quat_normalize(quat_mul(q, quat_exp(h * w))))(state.quat, dq[:, 3:])
    return state.replace(pos=state.pos + h * dq[:, :3], quat=quat, vel=state.vel + h * dv[:, :3],
                         omega=state.omega + h * dv[:, 3:])


def _rk4_scan(model, scene: Scene, params: Params, state, control, warm, invalid_b):
    """``rk4_stages``' four stages in one ``lax.scan`` (one stage compiled): ``(Σ B v, Σ B a, the flags of
    every stage, warm⁺, the first stage's WorldInfo)``."""
    jp = getattr(params, "joints", None)
    correction = None if scene.joints is None else world_joints.stage_correction(model, scene.joints, jp, state)
    dtype = state.pos.dtype
    h = model.dt
    gen = lambda s: jax.vmap(lambda x: x.generalized_velocity())(s)
    none = jnp.zeros((scene.num_bodies,), bool)

    def one(carry, ab):
        v_prev, a_prev, w, dq, dv, bad = carry
        first_stage, a_i, b_i = ab
        s = advance(model, state, a_i * v_prev, a_i * a_prev)
        s = jax.tree_util.tree_map(lambda x0, x: jnp.where(first_stage, x0, x), state, s)  # X₀ itself, bitwise
        v1, Minv, inv = _free_motion(model, params, s, control, invalid_b, explicit=True)
        v_new, p_body, info, w, con = _contacts_coupled(model, scene, params, s, v1, Minv, w, correction)
        info = _checks_coupled(model, scene, params, con, info, Bodies(inv, none, p_body, s))
        v = gen(s)
        acc = (v_new - v) / h
        return (v, acc, w, dq + b_i * v, dv + b_i * acc, bad | info.flags), info

    zero = jnp.zeros((scene.num_bodies, 6), dtype)
    stages_in = (jnp.arange(4) == 0, jnp.asarray((0.0,) + RK4_A, dtype), jnp.asarray(RK4_B, dtype))
    carry, infos = jax.lax.scan(one, (zero, zero, warm, zero, zero, jnp.zeros((), jnp.int32)), stages_in)
    _, _, warm, dq, dv, bad = carry
    return dq, dv, bad, warm, jax.tree_util.tree_map(lambda x: x[0], infos)


@stages.full_precision
def rk4_stages(model, scene: Scene, params: Params, state, control, warm, stage=direct):
    """The step of a world of ``Scene.integrator = "rk4"`` (MuJoCo's ``mj_RungeKutta``, four stages):
    ``(state⁺, WorldInfo, warm⁺)`` as ``step_stages``. Each stage's acceleration a(X) = (v⁺ − v)/h is one
    velocity update of the Euler step at the stage's state X (free motion with the gyroscopic term and
    the damping explicit, the joint rows at acceleration level: ``joints.motion``'s ``correction``, held
    from the step's start; MuJoCo's soft rows as they are, their a_ref an acceleration); stage i starts at
    X₀ ⊕ h A_i (v, a) of stage i − 1 (``RK4_A``), and the step is X₀ ⊕ h Σ B_i (v_i, a_i) (``RK4_B``,
    ``advance``). The info is the first stage's (the step's start, as MuJoCo's ``mj_forward``), its flags
    those of every stage; the warm start is passed from stage to stage. The stages run as the named stage
    "contact" (``_rk4_scan``), the update as "integrate"."""
    params, control, invalid_b = stage("checks in", lambda p, s, u: _checks_in(scene, p, s, u), params, state, control)
    dq, dv, bad, warm, info = stage("contact", lambda p, s, u, w, i: _rk4_scan(model, scene, p, s, u, w, i),
                                    params, state, control, warm, invalid_b)
    new = stage("integrate", lambda s, q, v: advance(model, s, q, v), state, dq, dv)
    if scene.fixed:  # a fixed body's state is kept exactly as given
        new = _keep(scene.fixed_bodies, state, new)
    flags = bad | jnp.where(stages.any_nonfinite(new), jnp.int32(Flags.NONFINITE), jnp.int32(0))
    return new, info.replace(flags=flags), warm


def _checks_in(scene: Scene, params: Params, state, control):
    """Stage 0: ``(params, control, invalid bits (N,))``: the actuators' ``ctrl`` set, each body's broken rules."""
    params, control = with_ctrl(scene, params, state, control)
    invalid_b = per_body(lambda p, s, u: broken_rules(p, s, u), params, state, control)
    if scene.fixed:  # fixed bodies: at rest (a rule), never moved, no gravity or control
        invalid_b = invalid_b | fixed_at_rest(scene, state)
    jp = getattr(params, "joints", None)
    if scene.joints is not None and isinstance(jp, world_joints.JointParams) and jp.has_checks():
        invalid_b = invalid_b | jnp.where(world_joints.broken_passive(jp, scene.joints), jnp.int32(1 << JOINT_PASSIVE), jnp.int32(0))
    if scene.constraints == "mujoco":  # MuJoCo-soft values out of range: flagged (validation.SOFT)
        invalid_b = invalid_b | jnp.where(world_soft.broken_soft(scene, params), jnp.int32(1 << SOFT), jnp.int32(0))
    return params, control, invalid_b


def _depenetrate(model, scene: Scene, params: Params, state):
    """Stage 1: ``(state, moved out (N,))``: each body out of the ground (not a fixed one, not one off the ground;
    none under MuJoCo's soft contacts, which sink by design)."""
    if not scene.ground or scene.constraints != "hard":
        return state, jnp.zeros((scene.num_bodies,), bool)
    given = state
    state, projected_b = per_body(lambda p, s: stages.depenetrate(model, p, s), params, state)
    if scene.fixed:
        state, projected_b = _keep(scene.fixed_bodies, given, state), projected_b & ~scene.fixed_bodies
    if scene.off_ground:  # a body that does not touch the ground is never moved out of it
        off = scene.off_ground_bodies
        state, projected_b = _keep(off, given, state), projected_b & ~off
    return state, projected_b


def _free_motion(model, params: Params, state, control, invalid_b, explicit: bool = False):
    """Stage 2: ``(v¹, M⁻¹, invalid bits)``: the fluid's drag at the state the step starts from (a wrench
    beside the control, its rule checked), v¹ and M⁻¹ per body. ``explicit``: the gyroscopic term
    explicit (a Runge–Kutta stage's acceleration: ``stages.free_velocity(..., explicit=True)``)."""
    medium = getattr(params, "medium", None)
    if medium is not None:
        invalid_b = invalid_b | jnp.where(broken_medium(medium), jnp.int32(1 << MEDIUM), jnp.int32(0))
        drag = fluid_wrench(params.body, medium, state)
        control = drag if control is None else control + drag
    v1 = per_body(lambda p, s, u: stages.free_velocity(model, p, s, u, explicit=explicit), params, state, control)
    Minv = per_body(lambda p, s: geometry.mass_matrix_inverse(p.body, s), params, state)
    return v1, Minv, invalid_b


def _integrate(model, scene: Scene, params: Params, given, state, v_new, Minv, con):
    """Stage 4: the state⁺ of every body (``stages.integrate``), fast pairs separated, fixed bodies kept."""
    new = per_body(lambda p, s, v: stages.integrate(model, s, v), params, state, v_new)
    if scene.fast_hits and scene.pairs:  # the fast pairs' overlap at the pose reached, moved out (position only)
        new, _ = separate_fast_pairs(model, scene, params, state, new, Minv, on_ground(scene, con))
    if scene.fixed:  # a fixed body's state is kept exactly as given
        new = _keep(scene.fixed_bodies, given, new)
    return new


class Bodies(NamedTuple):
    """What a step's checks out read of its bodies: the broken rules' bits (N,) (``validation.RULES``),
    moved out of the ground (N,), the contact impulses (N, 6) and the state⁺."""

    invalid: jnp.ndarray
    projected: jnp.ndarray
    impulse: jnp.ndarray
    new: Any


def _checks_coupled(model, scene: Scene, params: Params, con: WorldContacts, info: WorldInfo, bodies: Bodies):
    """A coupled world's checks out: one ``Flags`` set from its one solve, its bodies and its pairs."""
    invalid_b, projected_b, p_body, new = bodies
    invalid, projected = _or(invalid_b), jnp.any(projected_b)
    failed = stages.solver_failed(model, info)
    # bodies that start a step inside each other deeper than one step of max_correction_speed: the
    # capped target separates them without launching them (as the ground does); flagged
    if scene.pairs and scene.constraints == "hard":
        pair_phi = con.phi[con.num_ground:con.pair_end]
        projected = projected | jnp.any(con.valid[con.num_ground:con.pair_end] & (pair_phi < -model.penetration_tol))
    flags = stages.step_flags(invalid, stages.any_nonfinite(p_body, new, info.joint_impulse), projected, failed,
                              con.capacity, (jnp.asarray(info.flags) & int(Flags.DEGENERATE)) != 0)
    return info.replace(flags=flags, invalid=invalid)


def _contacts_ground(model, scene: Scene, params: Params, state, v1, Minv, warm):
    """The per-body route's contact stage in the coupled route's form (``route``): ``_contactsper_body``, its
    laws' infos in a ``WorldInfo`` (``contacts``: each body's ``ContactInfo``, whose ``flags`` hold the body's
    solve-failed bit, ``Flags.SOLVER``, until ``_checks_ground`` sets them); no contacts of pairs (None)."""
    v_new, p_body, laws_info, warm, failed_b = _contactsper_body(model, scene, params, state, v1, Minv, warm)
    most = (lambda x: x[0]) if scene.num_bodies == 1 else (lambda x: jnp.max(x, initial=0))  # no bodies: 0
    dtype = p_body.dtype
    info = WorldInfo(
        impulse=p_body, phi_ground=laws_info.phi, pair_phi=jnp.zeros((0, scene.pair_contacts), dtype),
        pair_kind=jnp.zeros((0,), jnp.int32), residual=most(laws_info.residual),
        iterations=most(laws_info.iterations), joint_impulse=jnp.zeros((0,), dtype),
        joint_error=jnp.zeros((), dtype),
        contacts=laws_info.replace(flags=jnp.where(failed_b, jnp.int32(Flags.SOLVER), jnp.int32(0))))
    return v_new, p_body, info, warm, None


def _checks_ground(model, scene: Scene, params: Params, con, info: WorldInfo, bodies: Bodies):
    """The per-body route's checks out: each body's ``Flags`` (as a single body's step sets them, in
    its ``ContactInfo``) and the world's, their OR."""
    invalid_b, projected_b, p_body, new = bodies
    failed_b = (info.contacts.flags & int(Flags.SOLVER)) != 0
    flags_b = per_body(lambda p, i, imp, s1, pr, f: stages.step_flags(i, stages.any_nonfinite(imp, s1), pr, f),
                        params, invalid_b, p_body, new, projected_b, failed_b)
    one = scene.num_bodies == 1
    pick = (lambda x: x[0]) if one else (lambda x: _or(x))
    return info.replace(flags=pick(flags_b), invalid=pick(invalid_b),
                        contacts=info.contacts.replace(flags=flags_b, invalid=invalid_b))


def initial_warm(model, scene: Scene, params: Params, state):
    """The warm start of a rollout's first step, or None when the law does not warm-start
    (``ContactLaw.warm_start``): each body's ``law.init_warm`` on the per-body route; zero
    impulses per contact slot of a coupled world."""
    if not stages.warm_starts(model):
        return None
    if not coupled(scene):
        lmodel = _ground_model(model, scene, params)
        return per_body(lambda p, s: model.law.init_warm(lmodel, p, s), params, state)
    C = scene.num_bodies * num_ground_contacts(model, scene, params) + scene.num_pairs * scene.slot_contacts
    if scene.joints is not None:  # two contacts per limited joint or tendon, the friction losses
        C += num_joint_contacts(scene, params)
    return jnp.zeros((C, 3), state.pos.dtype)


def actuated(scene: Scene) -> int:
    """How many actuators the scene's joints have (``Joints.actuated``; 0: none). A world with
    actuators takes its controls as one value per actuator (per step), not as per-body wrenches."""
    return 0 if scene.joints is None else len(scene.joints.actuated)


def with_ctrl(scene: Scene, params: Params, state, control):
    """``(params, control)`` of one step: in a world with actuators a given control (A,) becomes the
    actuators' ``ctrl`` for this step and the bodies' wrenches are zero; otherwise both as given."""
    if not actuated(scene) or control is None:
        return params, control
    ap = params.joints.actuators.replace(ctrl=jnp.asarray(control, params.joints.actuators.ctrl.dtype))
    return (params.replace(joints=params.joints.replace(actuators=ap)),
            jnp.zeros((scene.num_bodies, 6), state.pos.dtype))


def _controls(scene: Scene, state, control):
    """A coupled world's controls, zero when None; the per-body route keeps None (as one body's step)."""
    if control is None and coupled(scene) and not actuated(scene):
        return jnp.zeros((scene.num_bodies, 6), state.pos.dtype)
    return control


def step_with_info(model, scene: Scene, params: Params, state: State, control=None, *, start: str = "initial"):
    """One step of a world: ``(state⁺, WorldInfo)``. state: ``State`` with a leading body axis
    (N, …); control: (N, 6) force (world) and torque (body) per body, or None. Concrete inputs are
    validated (``validate``; ``start`` as ``rollout``'s: "continued" for a state a step reached)
    and the law checked, and an eager step warns on its flags as a single body's step and a world's
    rollout do (``warn_step``: a start in the ground or bodies inside each other, non-finite, a solve
    not converged); inside a user's ``jit``/``vmap``/``grad`` it traces straight through and reports
    through ``WorldInfo.flags``."""
    check_arguments("worlds.step_with_info", model=(model, Model), scene=(scene, Scene), params=(params, Params), state=(state, State), control=(control, OPTIONAL_ARRAY))
    return _step_with_info(model, scene, params, state, control, start)


def _step_with_info(model, scene, params, state, control, start):
    """A world's step through the one eager wrapper (``doors.enter``): static checks, then on concrete
    inputs ``validate``, the jitted step and ``warn_step``."""
    world_joints.check_start(start)
    check_law(model, scene)
    check_shapes(scene, params, state, control, concrete=is_concrete(params.body))

    def warn(out):
        warn_step(model, scene, params, state, out[1], "the world")
        return out

    return enter((params, state, control),
                 lambda eager: (_step_jit if eager else _step)(model, scene, params, state, control),
                 lambda: validate(scene, params, state, control, start=start, dt=model.dt), warn)


def warn_step(model, scene: Scene, params: Params, state: State, info: WorldInfo, who: str) -> None:
    """An eager world step's warnings, as a single body's step and a world's rollout give them: a
    body in the ground or two bodies inside each other at the start (``PenetrationWarning``, when the
    step flagged ``Flags.PENETRATION``), then ``eager.warn_step`` (non-finite, solve not converged).
    ``who``: "the world" or "the chain". Called inside ``doors.enter``, which points them at the user's call."""
    if int(info.flags) & Flags.PENETRATION:
        warn_start(model, scene, params, state, False)
    eager.warn_step(info.flags, info.residual, who)


def warn_start(model, scene: Scene, params: Params, states: State, batched: bool) -> None:
    """The warnings of a start the step flagged ``Flags.PENETRATION``, for every world door: a body in the
    ground (``eager.warn_world_penetration``) and two bodies inside each other (``warn_overlaps``)."""
    if scene.ground:
        eager.warn_world_penetration(model, params, states, batched=batched)
    warn_overlaps(model, scene, params, states, batched=batched)


def _step(model, scene, params, state, control):
    state, control = stages.as_input_dtype(params, state, control, materials=True)
    new, info, _ = step_stages(model, scene, params, state, _controls(scene, state, control), None)
    return new, info


_step_jit = jax.jit(_step, static_argnames=("model", "scene"))


def step(model, scene: Scene, params: Params, state: State, control=None, *, start: str = "initial") -> State:
    """``step_with_info`` without the info."""
    check_arguments("worlds.step", model=(model, Model), scene=(scene, Scene), params=(params, Params), state=(state, State), control=(control, OPTIONAL_ARRAY))
    return _step_with_info(model, scene, params, state, control, start)[0]


def body_scene() -> Scene:
    """The scene of a single body as a world: one body, no pairs, the ground, no softness (the
    model's ``max_contacts`` keeps its ground contacts, as in every world)."""
    return Scene(topologies=(None,), ground=True, softness=0.0)


def lift_body(params: Params, state, control, steps: bool):
    """One body's inputs as a world of one (``body_scene``): a leading body axis (controls (T, 1, ·) over steps)."""
    if control is not None:
        control = control[:, None] if steps else control[None]
    return params.replace(body=leading(params.body)), leading(state), control


@dataclasses.dataclass(frozen=True)
class RolloutSpec:
    """A rollout's static settings, one hashable value (``jax.jit``'s static argument of ``run``,
    ``rollout_jit``, ``batch_jit`` and ``sharding.per_device_rollout``): the ``model`` and ``scene``,
    ``n_steps``, ``output`` ("trajectory" or "final"), ``with_info``, ``watch`` (also return the first
    step whose contact solve failed and the largest such residual: eager warnings), ``body`` (a single
    body's inputs and outputs, ``as_body``) and, for batches, ``params_batched`` and ``chunk_size``."""

    model: Any
    scene: Scene
    n_steps: int
    output: str = "trajectory"
    with_info: bool = True
    watch: bool = False
    body: bool = False
    params_batched: bool = False
    chunk_size: int | None = None


def as_body(spec: RolloutSpec, fn, params, state, controls):
    """``fn`` (a world rollout of one body, ``run``) called on one body's inputs (lifted to a world of one,
    ``lift_body``) and returning its outputs: the body's states and its law's ``ContactInfo``
    (``WorldInfo.contacts``); a world's (``spec.body`` false) called as it is."""
    if not spec.body:
        return fn(params, state, controls)
    state, controls = stages.as_input_dtype(params, state, controls)  # a single body's: no materials
    out = fn(*lift_body(params, state, controls, steps=True))
    failed = None
    if spec.watch:
        out, failed = out
    if spec.output == "final":
        out = (first(out[0]), out[1]) if spec.with_info else first(out)
    elif spec.with_info:
        out = (first(out[0], 1), first(out[1].contacts, 1))
    else:
        out = first(out, 1)
    return (out, failed) if spec.watch else out


def _watch(model, info, k, failed):
    """(first step whose contact solve failed, largest such residual) updated with step ``k``:
    the solver bit alone (``stages.solver_failed`` of the laws' infos on the per-body route), so the
    other flags stay dead code in an eager rollout that returns no info."""
    first, worst = failed
    src = info.contacts if info.contacts is not None else info
    bad = stages.solver_failed(model, src)
    res = jnp.where(jnp.isfinite(src.residual), src.residual, jnp.inf).astype(worst.dtype)
    worst = jnp.max(jnp.where(bad, jnp.maximum(worst, res), worst))
    bad = jnp.any(bad)
    return jnp.where((first < 0) & bad, k, first), worst


def run(spec: RolloutSpec, params: Params, state, controls):
    """The one rollout: ``step_stages`` scanned ``spec.n_steps`` times (``lax.scan``), the law's warm
    start in the carry. output="trajectory": ``(trajectory (n_steps + 1, N, …), infos)`` (the
    infos only ``with_info``); "final": ``final`` or ``(final, Summary)``. ``watch`` also returns
    the first step whose contact solve failed and the largest such residual (eager warnings).
    Not jitted: ``rollout_jit`` is; the entry points of bodies, worlds and chains call them. The
    state and controls are cast to the inputs' dtype with a world's materials (``as_body`` casts a
    single body's first, which refuses a per-body friction)."""
    model, scene, n_steps, output, with_info, watch = (spec.model, spec.scene, spec.n_steps, spec.output,
                                                       spec.with_info, spec.watch)
    state, controls = stages.as_input_dtype(params, state, controls, materials=True)
    if controls is None and coupled(scene):
        controls = jnp.zeros((n_steps, scene.num_bodies, 6), state.pos.dtype) if not actuated(scene) else None
    summarize = output == "final" and with_info
    warm0 = initial_warm(model, scene, params, state)

    def f(carry, xs):
        s, summary, warm, failed = carry
        u, k = xs
        s1, info, warm = step_stages(model, scene, params, s, u, warm)
        if summarize:
            summary = stages.accumulate(summary, info, k)
        if watch:
            failed = _watch(model, info, k, failed)
        out = None if output == "final" else (s1, info if with_info else None)
        return (s1, summary, warm, failed), out

    ks = jnp.arange(n_steps, dtype=jnp.int32)
    failed0 = (jnp.full((), -1, jnp.int32), jnp.zeros((), state.pos.dtype)) if watch else None
    (final, summary, _, failed), ys = jax.lax.scan(f, (state, stages.empty_summary(), warm0, failed0), (controls, ks),
                                                   length=n_steps)
    if output == "final":
        out = (final, summary) if with_info else final
    else:
        traj, infos = ys
        traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
        out = (traj, infos) if with_info else traj
    return (out, failed) if watch else out


rollout_jit = jax.jit(run, static_argnames=("spec",))

CPU_COMPILER_OPTIONS = (("xla_cpu_experimental_ynn_fusion_type", ""),)
"""XLA's options for a world's programs compiled on a CPU by the eager entry points (``rollout``,
``batch_rollout``, ``worlds.sharded_batch_rollout``): no YNNPACK fusions. XLA's CPU default hands
small dots and reductions, fused with their producers (a 3-vector's dot, a max over a hull's faces,
the solve's largest |b|), to YNNPACK, which runs a world's shapes slower than XLA's own loops: off,
the 16-box heap's step takes 1/1.32 of the CPU time, the mixed heap's 1/1.60 (docs/worlds.md, "Where
the mixed heap's time goes"). A user's own top-level ``jit`` of a world passes
``compiler_options=compiler_options()``."""


@functools.cache
def cpu_options() -> tuple:
    """``CPU_COMPILER_OPTIONS`` where this jaxlib's XLA knows them, else ``()`` (XLA's defaults): an
    older XLA (jax 0.7) has no YNNPACK and refuses the option by name when a program is compiled, so a
    one-line program is compiled with them once to ask. Any other compile error is raised."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=dict(CPU_COMPILER_OPTIONS)).lower(
            jax.ShapeDtypeStruct((), jnp.float32)).compile()
    except Exception as error:  # noqa: BLE001 - XlaRuntimeError's module moved between jaxlib versions
        if "No such compile option" not in str(error):
            raise
        return ()
    return CPU_COMPILER_OPTIONS


def compiler_options() -> dict | None:
    """``cpu_options()`` as ``jax.jit``'s ``compiler_options`` where JAX's default backend is a CPU
    (and this XLA knows them); None elsewhere (XLA's defaults)."""
    return (dict(cpu_options()) or None) if jax.default_backend() == "cpu" else None


@functools.cache
def top_level(program):
    """``program`` (``rollout_jit`` or ``batch_jit``) jitted again with ``compiler_options()``: what
    the eager entry points call (at the top level: JAX refuses compiler options in a nested ``jit``)."""
    return jax.jit(program.__wrapped__, static_argnames=("spec",), compiler_options=compiler_options())


# Systems per sequential chunk of a batched rollout on a CPU (chosen by the chunk-size sweep of the
# throughput benchmark; its results file has the measurement).
CPU_CHUNK = 256


def _batch(spec: RolloutSpec, params, states, controls):
    """``run`` vmapped over the leading axis of ``states`` (and ``controls``, ``params`` if
    ``spec.params_batched``), in sequential chunks of ``spec.chunk_size`` (``lax.map`` over vmapped
    chunks; None: all at once); a single body's inputs and outputs through ``as_body``."""
    params_batched, chunk_size = spec.params_batched, spec.chunk_size

    def f(p, s, u):
        return as_body(spec, lambda p, s, u: run(spec, p, s, u), p, s, u)

    n = jax.tree_util.tree_leaves(states)[0].shape[0]
    if n == 1:  # one system: the unbatched program (a vmap of one costs ~1.6x here), same result
        return leading(f(first(params) if params_batched else params, first(states),
                         None if controls is None else first(controls)))
    vf = jax.vmap(f, in_axes=(0 if params_batched else None, 0, None if controls is None else 0))
    if chunk_size is None or n <= chunk_size:
        return vf(params, states, controls)
    n_chunks = -(-n // chunk_size)
    pad = n_chunks * chunk_size - n

    def split(tree):  # (n, ...) -> (n_chunks, chunk_size, ...), padded with copies of the first
        return jax.tree_util.tree_map(lambda x: x.reshape(n_chunks, chunk_size, *x.shape[1:]),
                                      stages.pad_batch(tree, pad))

    xs = (split(params) if params_batched else None, split(states), None if controls is None else split(controls))
    out = jax.lax.map(lambda a: vf(params if a[0] is None else a[0], a[1], a[2]), xs)
    return jax.tree_util.tree_map(lambda x: x.reshape(n_chunks * chunk_size, *x.shape[2:])[:n], out)


batch_jit = jax.jit(_batch, static_argnames=("spec",))


def rollout(model, scene: Scene, params: Params, state: State, n_steps: int, controls=None, *,
            output: str = "trajectory", start: str = "initial"):
    """``n_steps`` steps of a world (``lax.scan``): ``(trajectory (n_steps + 1, N, …), infos)``,
    or with ``output="final"`` ``(final state, Summary)`` (the steps' flags, as a single body's
    ``rollout(..., output="final", with_info=True)``). controls: (n_steps, N, 6) or None; in a world
    with actuators (``Joints.actuated``) (n_steps, A), one per actuator per step. Concrete
    inputs are validated and an eager rollout warns when it ends non-finite or its contact solve
    failed (``NonFiniteWarning``, ``SolverWarning``), and when it starts with a body in the ground
    (``eager.warn_world_penetration``, as a single body's rollout) or two bodies inside each other
    deeper than ``Model.penetration_tol`` (``PenetrationWarning``: the pair, the depth, the time to
    separate at ``max_correction_speed``; ``warn_overlaps``).

    Static checks (``check_shapes``), eagerly and inside ``jit``/``vmap``/``grad``: the scene's
    bodies (count, padded vertex count; their hulls too when concrete: ``scene.check_body``), the
    state's N, controls of shape (n_steps, N, 6).

    ``start``: what the state is, for a jointed world's check of its joints. "initial" (the
    default): a state you wrote, every joint's anchors within ``joints.ANCHOR_TOL`` (1e-5 m) and
    axes within ``joints.AXIS_TOL``. "continued": a state a rollout reached (the last of a chunk,
    when a long rollout runs in pieces), which carries the joints' drift under the Baumgarte
    correction: accepted within ``joints.drift_tolerance`` (h·2 m/s/β, 2 cm at 2 ms), a state
    further off still refused. Chunks continued this way give the unchunked trajectory."""
    check_arguments("worlds.rollout", model=(model, Model), scene=(scene, Scene), params=(params, Params), state=(state, State), n_steps=(n_steps, STEPS),
                    controls=(controls, OPTIONAL_ARRAY), output=(output, OUTPUT))
    n_steps = check_steps(n_steps)
    world_joints.check_start(start)
    check_law(model, scene)
    check_shapes(scene, params, state, controls, n_steps=n_steps, concrete=is_concrete(params.body))
    spec = RolloutSpec(model, scene, n_steps, output)

    def warn(out):
        warn_rollout(model, scene, params, state, out, output, batched=False)
        return out

    return enter((params, state, controls),
                 lambda eager: world_out((top_level(rollout_jit) if eager else rollout_jit)(spec, params, state, controls),
                                         output, scene),
                 lambda: validate(scene, params, state, controls, control_steps=True, start=start, dt=model.dt), warn)


def world_out(out, output: str, scene: Scene, unit: str = "worlds"):
    """A world's rollout output: its infos (output="trajectory") or ``Summary`` (output="final")
    count ``unit`` ("worlds" of N bodies, or "chains")."""
    if output != "final":
        return out[0], out[1].replace(unit=unit)
    final, summary = out
    return final, summary.replace(unit=unit, bodies=scene.num_bodies)


_HINT = "jaxcontact.diagnostics.report of the rollout's infos (or of its Summary with output='final') names the steps"


def warn_overlaps(model, scene: Scene, params: Params, states: State, batched: bool, stacklevel: int = 3) -> None:
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
    pair = f"bodies ({a}, {b})" if scene.names is None else f"{scene.body_name(a)} and {scene.body_name(b)}"
    warnings.warn(
        f"{who} with bodies inside each other: {int(deep.sum())} pair(s) deeper than Model.max_correction_speed·dt = "
        f"{model.penetration_tol:.3g} m, the deepest {pair}{where} by {d:.3g} m; pairs are pushed apart at "
        f"no more than max_correction_speed = {v:.3g} m/s (not projected out as the ground is), so separating takes "
        f"about {d / v:.3g} s ({round(d / (v * model.dt))} steps)",
        eager.PenetrationWarning, stacklevel=stacklevel)


def _penetrated_at_start(out, output: str) -> bool:
    """Any world flagged PENETRATION on its first step (the ground or a pair)."""
    return bool(np.any(eager.first_flag_step(out, output, Flags.PENETRATION) == 0))


def warn_rollout(model, scene: Scene, params: Params, states: State, out, output: str, batched: bool) -> None:
    """An eager world rollout's warnings: a start in the ground or bodies inside each other (when its first
    step flagged ``Flags.PENETRATION``: the overlaps' narrow phase only then), non-finite final states,
    steps whose contact solve failed."""
    if _penetrated_at_start(out, output):
        warn_start(model, scene, params, states, batched)
    final = last_states(out, output, batched=batched)
    final = final if batched else jax.tree_util.tree_map(lambda x: x[None], final)
    eager.warn_nonfinite(final, batched=True)
    eager.warn_failed_solves(out, output, "world", batched, _HINT)


def batch_rollout(model, scene: Scene, params: Params, states: State, n_steps: int, controls=None, *,
                  output: str = "trajectory", start: str = "initial"):
    """``rollout`` of a batch of worlds: ``states`` with leading axes (W, N, …), the same
    parameters; controls (W, n_steps, N, 6) or None; ``start`` as ``rollout``'s. Eagerly it warns
    as ``rollout`` does, with how many worlds (``NonFiniteWarning`` counts bodies)."""
    check_arguments("worlds.batch_rollout", model=(model, Model), scene=(scene, Scene), params=(params, Params), states=(states, State), n_steps=(n_steps, STEPS),
                    controls=(controls, OPTIONAL_ARRAY), output=(output, OUTPUT))
    n_steps = check_steps(n_steps)
    world_joints.check_start(start)
    check_law(model, scene)
    check_shapes(scene, params, states, controls, n_steps=n_steps, batched=True, concrete=is_concrete(params.body))
    spec = RolloutSpec(model, scene, n_steps, output)

    def warn(out):
        warn_rollout(model, scene, params, states, out, output, batched=True)
        return out

    return enter((params, states, controls),
                 lambda eager: world_out((top_level(batch_jit) if eager else batch_jit)(spec, params, states, controls),
                                         output, scene),
                 lambda: validate_batch(scene, params, states, controls, start=start, dt=model.dt), warn)


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
    if getattr(params, "medium", None) is not None:
        check_medium(params.medium, N)
    world_soft.check_soft(scene, params)
    lead = np.shape(state.pos)[:1] if batched else ()
    for name in ("pos", "quat", "vel", "omega"):
        shape = np.shape(getattr(state, name))
        if len(shape) != len(lead) + 2 or shape[len(lead)] != N:
            want = ("W, " if batched else "") + f"{N}, {4 if name == 'quat' else 3}"
            raise ValueError(f"state.{name}: the scene has {N} bodies, so expected shape ({want}) (one row per body), "
                             f"got {shape}")
    if control is None:
        return
    A = actuated(scene)
    if A:  # one control per actuator (per step)
        want = (A,) if n_steps is None else (*lead, n_steps, A)
        if tuple(np.shape(control)) != want:
            raise ValueError(f"controls: this world has {A} actuators (Joints.actuated), so its controls are one value "
                             f"per actuator{' per step' if n_steps is not None else ''}: expected shape {want}, got "
                             f"{tuple(np.shape(control))} (per-body wrenches are for worlds without actuators)")
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


def validate_batch(scene: Scene, params: Params, states: State, controls=None, start: str = "initial",
                   dt: float | None = None) -> None:
    """``validate`` of every world of a batch (``states`` (W, N, …), controls (W, T, N, 6) or None)."""
    for w in range(states.pos.shape[0]):
        validate(scene, params, jax.tree_util.tree_map(lambda x: x[w], states),
                 None if controls is None else controls[w], control_steps=True, start=start, dt=dt)


def validate(scene: Scene, params: Params, state: State, control=None, control_steps: bool = False,
             start: str = "initial", dt: float | None = None) -> None:
    """Eager checks of a world's concrete inputs, naming the field (and body): bodies stacked on
    the scene's N, the ground, the law parameters, the state (N, …) and its joints (``start``: an
    "initial" or a "continued" state, ``joints.validate``; ``dt`` the model's step), the controls."""
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
        world_joints.validate(scene.joints, params, state, start=start, dt=dt)
    for i in scene.fixed:
        for name in ("vel", "omega"):
            if np.any(np.asarray(getattr(state, name)[i]) != 0):
                raise ValueError(f"state.{name}[{i}]: {scene.body_name(i)} is fixed to the world (Scene.fixed) and must be "
                                 f"at rest, got {_numbers(getattr(state, name)[i])}; a fixed body never moves")
    if control is not None:
        c = np.asarray(control)
        want = ("T", N, 6) if control_steps else (N, 6)
        if not actuated(scene) and (c.ndim != len(want) or c.shape[-2:] != (N, 6)):
            raise ValueError(f"control: expected shape {want}, got {c.shape}")
        if not np.all(np.isfinite(c)):
            raise ValueError("control: contains non-finite values")
    if control is not None and not actuated(scene):  # per-body wrenches: none on a fixed body
        pushed = [i for i in scene.fixed if np.any(c[..., i, :] != 0)]
        if pushed:
            raise ValueError(f"control: {scene.body_name(pushed[0])} is fixed to the world (Scene.fixed) and takes no "
                             "force or torque; give it zero control")


def _numbers(x) -> str:
    return "(" + ", ".join(f"{float(v):g}" for v in np.ravel(np.asarray(x))) + ")"


def energy(model, params: Params, state: State) -> jnp.ndarray:
    """Kinetic plus gravitational potential energy of the world (J): the bodies' sum."""
    return jnp.sum(per_body(lambda p, s: stages.energy(model, p, s), params, state))


__all__ = ["CPU_CHUNK", "CPU_COMPILER_OPTIONS", "Bodies", "RolloutSpec", "WorldInfo", "actuated", "as_body", "batch_jit",
           "batch_rollout", "body_scene", "check_law", "check_shapes", "compiler_options", "coupled", "cpu_options",
           "energy", "fixed_at_rest", "hold_fixed", "initial_warm", "lift_body", "on_ground", "rollout", "rollout_jit",
           "route", "run", "step", "step_stages", "step_with_info", "top_level", "validate", "validate_batch", "warn_overlaps",
           "warn_rollout", "warn_start", "warn_step", "with_ctrl", "world_out"]
