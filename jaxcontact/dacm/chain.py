"""Algorithm 2 of the dacm paper: a chain whose distal link carries a contact law H.

The chain (``jaxcontact.chains``) is split into the distal link (state q, free velocity v¹, mass
matrix M, joint Jacobian J: the 5 rows of the last revolute joint on the distal side) and the
upstream system (the other links, their joints among themselves and the root pin, no contact).
With f_j the joint force (5 components: 3 forces, 2 torques, in the joint rows' directions):

    distal      v⁺(f) = v¹ + hM⁻¹Jᵀf + M⁻¹H(v¹ + hM⁻¹Jᵀf)                                (eq. 3)
    upstream    v̂⁺(f) = v̂_c − hŴĴᵀf                                                     (eq. 5)
    G(f) = J v⁺(f) − Ĵ v̂⁺(f) + (β/h)·e = A f + J M⁻¹ H(f) + c,  A = hJM⁻¹Jᵀ + hĴŴĴᵀ      (eq. 6)

In maximal coordinates the upstream system's reduced-coordinate inverse mass M̂⁻¹ is the
constrained mobility Ŵ = M̂⁻¹ − M̂⁻¹Ĵ_intᵀ(Ĵ_int M̂⁻¹Ĵ_intᵀ)⁻¹Ĵ_int M̂⁻¹ of its own joints and v̂_c its
free velocity projected on them (``chains.model.constrained_free_motion``); e is the joint's
drift (Baumgarte β, as in the ground truth). H is any engine contact law — ``DACMLaw`` (trained
on the isolated link), ``CoulombLCP`` (exact) or ``NoContact`` — called on the distal link with
the free velocity that includes the joint force, exactly H(q, q̇, τ + Jᵀf_j) of the paper.

Initial f_j: ``RootSettings.init="eq7"`` is the paper's eq. 7 (the force that stops the upstream
joint point, (hĴŴĴᵀ)⁺Ĵv̂_c, a pseudo-inverse because a straight chain is a singular configuration
of Ĵ); the default ``"free"`` is the root of G with H ≡ 0, −A⁻¹c (exact whenever the distal link
ends the step out of contact). For a fast swing eq. 7 asks for hundreds of newtons, where the
learned H sees a violent contact and G has spurious roots, so the eq. 7 start fails in some steps
where "free" converges (measured in studies/dacm/results/dacm_chain.md). The root of G is found by
``solvers.find_root`` (Powell's hybrid method: dogleg trust region with Broyden updates of the
Jacobian, started from A, exact wherever H does not depend on f, and a forward-difference
refresh after repeated failed steps; one evaluation of G per iteration, jit-able, vmappable).
Converged means ‖S G‖ ≤ rtol·(‖S J v¹‖ + ‖S Ĵ v̂_c‖ + g h) +
atol with rtol = 0.5 % (the paper's tolerance) and S = diag(1, 1, 1, ℓ, ℓ) putting the angular
rows in m/s (ℓ: the distal joint's lever arm). Every step returns the number of G evaluations
and a ``converged`` flag; a failed step keeps the best f found and says so.

Gradients: ``find_root`` differentiates implicitly through G(f*, θ) = 0 (declared once in
``solvers.implicit``), so reverse mode never enters the solver loop.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from .. import geometry, linalg
from ..chains.model import (
    ChainModel,
    ChainParams,
    constrained_free_motion,
    free_velocities,
    joint_rows,
    joint_system,
    link_state,
    mass_matrix_inverse,
    validate_chain,
)
from ..stages import integrate
from ..solvers import HybridSettings, find_root
from ..types import Params, State
from ..validation import is_concrete


@dataclasses.dataclass(frozen=True)
class RootSettings:
    """Root finding of G (eq. 6). rtol: relative tolerance (0.5 %, the paper's). atol: absolute
    floor (m/s). max_evals: cap on G evaluations per step. fd_after: consecutive rejected steps
    after which the Jacobian is rebuilt by forward differences (5 evaluations). init: initial
    joint force, "eq7" (the paper's: stop the upstream joint point) or "free" (the root of G
    with H ≡ 0, −A⁻¹c: exact whenever the distal link ends up out of contact)."""

    rtol: float = 0.005
    atol: float = 1e-9
    max_evals: int = 40
    fd_after: int = 2
    init: str = "free"

    @property
    def hybrid(self) -> HybridSettings:
        return HybridSettings(max_evals=self.max_evals, fd_after=self.fd_after)

    def __post_init__(self):
        if not self.rtol > 0 or not self.atol >= 0:
            raise ValueError(f"RootSettings: rtol must be > 0 and atol >= 0, got {self.rtol}, {self.atol}")
        if self.init not in ("eq7", "free"):
            raise ValueError(f"RootSettings.init must be 'eq7' or 'free', got {self.init!r}")
        if self.max_evals < 2:
            raise ValueError(f"RootSettings.max_evals must be >= 2, got {self.max_evals}")


@struct.dataclass
class SplitInfo:
    """Per Algorithm-2 step: G evaluations, converged flag, ‖S G‖ and its tolerance, the joint
    force f_j (5,), the distal contact impulse p (6,) and H's mode / patch type (dacm: 0 static,
    1 dynamic, 2 detach, −1 no patch)."""

    evaluations: jnp.ndarray
    converged: jnp.ndarray
    residual: jnp.ndarray
    tolerance: jnp.ndarray
    joint_force: jnp.ndarray
    contact_impulse: jnp.ndarray
    mode: jnp.ndarray
    patch_type: jnp.ndarray


def _residual_fn(law, model_d):
    """r(y; θ) = S G(D y): eq. 6 in scaled units (y = D⁻¹ f)."""

    def r(y, th):
        f = th["D"] * y
        vf = th["v1_d"] + th["h"] * th["Minv_d"] @ (th["J"].T @ f)
        p, _ = law(model_d, th["params_d"], th["state_d"], vf)
        v_d = vf + th["Minv_d"] @ p
        v_u = th["vc_u"] - th["h"] * th["W_u"] @ (th["Jhat"].T @ f)
        G = th["J"] @ v_d - th["Jhat"] @ v_u + th["bias"]
        return th["S"] * G

    return r


def _step(cmodel: ChainModel, law, settings: RootSettings, params: ChainParams, law_params, state: State):
    n = params.num_links
    d = n - 1
    h = cmodel.dt
    dtype = state.pos.dtype
    model_d = cmodel.link_model(law)
    v1 = free_velocities(cmodel, params, state)
    # upstream system: links 0..n−2 with joints 0..n−2 (root pin included), no contact
    up = range(d)
    Minv_u = mass_matrix_inverse(params, state, up)
    Jb_u, err_u = joint_system(params, state, up, up)
    vc_u, W_u, _ = constrained_free_motion(cmodel, Minv_u, Jb_u, err_u, v1[:d].reshape(-1))
    # the distal joint: J on the distal link, Ĵ on the last upstream link
    J, Jp, err = joint_rows(params, state, d)
    Jhat = jnp.zeros((5, 6 * d), dtype).at[:, 6 * (d - 1):].set(Jp)
    state_d = link_state(state, d)
    body_d = params.link(d)
    Minv_d = geometry.mass_matrix_inverse(body_d, state_d)
    ell = jax.lax.stop_gradient(jnp.linalg.norm(params.anchor_child[d]))
    S = jnp.concatenate([jnp.ones(3, dtype), ell * jnp.ones(2, dtype)])
    D = 1.0 / S
    Au = h * Jhat @ W_u @ Jhat.T
    A = h * J @ Minv_d @ J.T + Au
    th = dict(D=D, S=S, h=jnp.asarray(h, dtype), v1_d=v1[d], Minv_d=Minv_d, J=J, Jhat=Jhat, vc_u=vc_u, W_u=W_u,
              bias=(cmodel.baumgarte / h) * err, state_d=state_d,
              params_d=Params(body=body_d, ground=params.ground, law=law_params))
    # eq. 7: assume the upstream joint point stops; pseudo-inverse (a straight chain is singular)
    if settings.init == "eq7":
        f0 = jnp.linalg.pinv(Au, rtol=1e-6) @ (Jhat @ vc_u)
    else:
        f0 = -linalg.solve(A, th["J"] @ v1[d] - Jhat @ vc_u + th["bias"])
    scale = (jnp.linalg.norm(S * (J @ v1[d])) + jnp.linalg.norm(S * (Jhat @ vc_u)) + cmodel.gravity * h)
    tol = jax.lax.stop_gradient(settings.rtol * scale + settings.atol)
    r = _residual_fn(law, model_d)
    B0 = jax.lax.stop_gradient(S[:, None] * A * D[None, :])

    res = find_root(r, jax.lax.stop_gradient(f0 / D), th, B0, tol, settings.hybrid, ridge=1e-12)
    y = res.x
    f = D * y
    # lines 7–11
    vf = v1[d] + h * Minv_d @ (J.T @ f)
    p, cinfo = law(model_d, th["params_d"], state_d, vf)
    v_d = vf + Minv_d @ p
    v_u = vc_u - h * W_u @ (Jhat.T @ f)
    lm = cmodel.link_model()
    v_new = jnp.concatenate([v_u.reshape(d, 6), v_d[None]], 0)
    new = jax.vmap(lambda s, v: integrate(lm, s, v))(state, v_new)
    info = SplitInfo(evaluations=res.evaluations, converged=res.converged, residual=res.residual,
                     tolerance=tol, joint_force=f, contact_impulse=p, mode=cinfo.mode,
                     patch_type=cinfo.patch_type)
    return new, info


def _check_links(params):
    if params.num_links < 2:
        raise ValueError(f"params.links: Algorithm 2 needs a distal link and an upstream system (>= 2 links), "
                         f"got {params.num_links}")


_step_jit = jax.jit(_step, static_argnames=("cmodel", "law", "settings"))


def split_step(cmodel: ChainModel, law, params: ChainParams, law_params, state: State,
               settings: RootSettings = RootSettings()):
    """One step of Algorithm 2: ``(state⁺, SplitInfo)``. ``law`` is the distal link's contact law
    H (static), ``law_params`` its parameters. Validates concrete inputs; pure under jit/vmap."""
    _check_links(params)
    if is_concrete((params, state)):
        validate_chain(params, state)
        return _step_jit(cmodel, law, settings, params, law_params, state)
    return _step(cmodel, law, settings, params, law_params, state)


@partial(jax.jit, static_argnames=("cmodel", "law", "settings", "n_steps"))
def _rollout(cmodel, law, settings, params, law_params, state, n_steps):
    def f(s, _):
        s1, info = _step(cmodel, law, settings, params, law_params, s)
        return s1, (s1, info)

    _, (traj, infos) = jax.lax.scan(f, state, None, length=n_steps)
    traj = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b], 0), state, traj)
    return traj, infos


def split_rollout(cmodel: ChainModel, law, params: ChainParams, law_params, state: State, n_steps: int,
                  settings: RootSettings = RootSettings()):
    """``n_steps`` of Algorithm 2 (``lax.scan``): (trajectory (n_steps + 1, n, …), SplitInfo per step)."""
    if int(n_steps) < 0:
        raise ValueError(f"n_steps must be >= 0, got {n_steps}")
    _check_links(params)
    if is_concrete((params, state)):
        validate_chain(params, state)
    return _rollout(cmodel, law, settings, params, law_params, state, int(n_steps))


def batch_split_rollout(cmodel: ChainModel, law, params: ChainParams, law_params, states: State, n_steps: int,
                        settings: RootSettings = RootSettings()):
    """``split_rollout`` vmapped over a leading batch axis of ``states``."""
    _check_links(params)
    if is_concrete((params, states)):
        for b in range(states.pos.shape[0]):
            validate_chain(params, jax.tree_util.tree_map(lambda x: x[b], states))
    return jax.vmap(lambda s: _rollout(cmodel, law, settings, params, law_params, s, int(n_steps)))(states)
