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
learned H sees a violent contact and G has spurious roots: measured on 8 chain swings, the eq. 7 start
fails in a few steps (5 of 4000 with the current dacm checkpoint; 39 % and 5 diverged swings with
an earlier, weaker one) and costs accuracy, "free" converges in every step
(studies/dacm/results/dacm_chain.md). The root of G is
found by ``powell_hybrid``: Powell's dogleg trust region with Broyden updates of the Jacobian
(started from A, exact wherever H does not depend on f) and a forward-difference refresh of the
Jacobian after repeated failed steps, in one ``lax.while_loop`` that evaluates G exactly once
per iteration (jit-able, vmappable). Converged means ‖S G‖ ≤ rtol·(‖S J v¹‖ + ‖S Ĵ v̂_c‖ + g h) +
atol with rtol = 0.5 % (the paper's tolerance) and S = diag(1, 1, 1, ℓ, ℓ) putting the angular
rows in m/s (ℓ: the distal joint's lever arm). Every step returns the number of G evaluations
and a ``converged`` flag; a failed step keeps the best f found and says so.

Gradients: the root is wrapped in ``solvers.implicit_root`` (jaxopt ``custom_root``: implicit differentiation of
G(f*, θ) = 0 with a dense guarded solve), so reverse mode never enters the solver loop.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from .. import geometry
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
from ..dynamics import integrate
from ..solvers import implicit_root
from ..types import ContactInfo, Params, State


@dataclasses.dataclass(frozen=True)
class NoContact:
    """The contact law H ≡ 0 (a chain in free swing; for tests of the split itself)."""

    def __call__(self, model, params, state, v_free):
        C = model.num_contacts(params.body)
        z = jnp.zeros((), v_free.dtype)
        info = ContactInfo(
            phi=jnp.zeros(C, v_free.dtype), active=jnp.zeros(C, bool), impulse=jnp.zeros((C, 3), v_free.dtype),
            patch_type=jnp.zeros((), jnp.int32), patch_centre=jnp.zeros(3, v_free.dtype),
            patch_normal=jnp.zeros(3, v_free.dtype), residual=z, iterations=jnp.zeros((), jnp.int32),
            mode=-jnp.ones((), jnp.int32),
        )
        return jnp.zeros_like(v_free), info


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

    def __post_init__(self):
        if not self.rtol > 0 or not self.atol >= 0:
            raise ValueError(f"RootSettings: rtol must be > 0 and atol >= 0, got {self.rtol}, {self.atol}")
        if self.init not in ("eq7", "free"):
            raise ValueError(f"RootSettings.init must be 'eq7' or 'free', got {self.init!r}")
        if self.max_evals < 2:
            raise ValueError(f"RootSettings.max_evals must be >= 2, got {self.max_evals}")


@struct.dataclass
class RootResult:
    x: jnp.ndarray
    residual: jnp.ndarray  # ‖r(x)‖
    evaluations: jnp.ndarray
    converged: jnp.ndarray


def _dogleg(B, r, delta):
    """Powell's dogleg step for min ‖r + B s‖ within ‖s‖ ≤ delta."""
    newton = -jnp.linalg.solve(B, r)
    grad = B.T @ r
    Bg = B @ grad
    t = jnp.dot(grad, grad) / jnp.maximum(jnp.dot(Bg, Bg), jnp.finfo(r.dtype).tiny)
    cauchy = -t * grad
    nn, nc = jnp.linalg.norm(newton), jnp.linalg.norm(cauchy)
    ok = jnp.all(jnp.isfinite(newton))
    # on the segment cauchy → newton, find τ with ‖cauchy + τ(newton − cauchy)‖ = delta
    d = newton - cauchy
    a = jnp.dot(d, d)
    b = 2 * jnp.dot(cauchy, d)
    c = nc**2 - delta**2
    tau = (-b + jnp.sqrt(jnp.maximum(b * b - 4 * a * c, 0.0))) / jnp.maximum(2 * a, jnp.finfo(r.dtype).tiny)
    dog = cauchy + jnp.clip(tau, 0.0, 1.0) * d
    scaled_cauchy = cauchy * (delta / jnp.maximum(nc, jnp.finfo(r.dtype).tiny))
    step = jnp.where(nn <= delta, newton, jnp.where(nc >= delta, scaled_cauchy, dog))
    return jnp.where(ok, step, scaled_cauchy)


def powell_hybrid(fun, x0, B0, tol, settings: RootSettings) -> RootResult:
    """Root of ``fun`` (R^m → R^m) from x0 with initial Jacobian estimate B0 (see module doc).

    One evaluation of ``fun`` per loop iteration: either a trust-region trial step (dogleg on
    the current Jacobian estimate, Broyden update after it, accepted if ‖fun‖ decreases
    enough) or one column of a forward-difference Jacobian (started after ``fd_after``
    consecutive rejections). Pure; ``lax.while_loop``; vmappable."""
    m = x0.shape[0]
    dtype = x0.dtype
    r0 = fun(x0)
    sqrt_eps = jnp.sqrt(jnp.finfo(dtype).eps)
    init = dict(x=x0, r=r0, B=B0, delta=jnp.asarray(1e8, dtype) * (1.0 + jnp.linalg.norm(x0)),
                nfev=jnp.asarray(1, jnp.int32), fd=jnp.asarray(-1, jnp.int32), nfail=jnp.asarray(0, jnp.int32))

    def cond(c):
        return (jnp.linalg.norm(c["r"]) > tol) & (c["nfev"] < settings.max_evals)

    def body(c):
        x, r, B, delta = c["x"], c["r"], c["B"], c["delta"]
        in_fd = c["fd"] >= 0
        e = jax.nn.one_hot(jnp.maximum(c["fd"], 0), m, dtype=dtype)
        h_fd = sqrt_eps * (1.0 + jnp.linalg.norm(x))
        s = _dogleg(B, r, delta)
        trial = jnp.where(in_fd, x + h_fd * e, x + s)
        rt = fun(trial)
        # forward-difference column
        col = (rt - r) / h_fd
        B_fd = B + jnp.outer(col - B @ e, e)
        # trust-region step: Broyden update, acceptance, radius
        ss = jnp.maximum(jnp.dot(s, s), jnp.finfo(dtype).tiny)
        B_br = B + jnp.outer(rt - r - B @ s, s) / ss
        rr = jnp.dot(r, r)
        pred = rr - jnp.sum((r + B @ s) ** 2)
        act = rr - jnp.dot(rt, rt)
        rho = jnp.where(pred > 0, act / jnp.where(pred > 0, pred, 1.0), -1.0)
        finite = jnp.all(jnp.isfinite(rt))
        accept = (~in_fd) & finite & (act > 0) & (rho > 1e-4)
        ns = jnp.sqrt(ss)
        delta_new = jnp.where(rho < 0.1, 0.5 * ns, jnp.where(rho > 0.5, jnp.maximum(delta, 2 * ns), delta))
        nfail = jnp.where(accept, 0, c["nfail"] + 1)
        start_fd = (~in_fd) & (nfail >= settings.fd_after)
        fd_next = jnp.where(in_fd, jnp.where(c["fd"] + 1 >= m, -1, c["fd"] + 1), jnp.where(start_fd, 0, -1))
        B_new = jnp.where(in_fd, B_fd, jnp.where(finite, B_br, B))
        return dict(
            x=jnp.where(accept, trial, x), r=jnp.where(accept, rt, r), B=B_new,
            delta=jnp.where(in_fd, delta, delta_new), nfev=c["nfev"] + 1, fd=fd_next,
            nfail=jnp.where(start_fd | in_fd, 0, nfail),
        )

    out = jax.lax.while_loop(cond, body, init)
    res = jnp.linalg.norm(out["r"])
    return RootResult(x=out["x"], residual=res, evaluations=out["nfev"], converged=res <= tol)


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
        f0 = -jnp.linalg.solve(A, th["J"] @ v1[d] - Jhat @ vc_u + th["bias"])
    scale = (jnp.linalg.norm(S * (J @ v1[d])) + jnp.linalg.norm(S * (Jhat @ vc_u)) + cmodel.gravity * h)
    tol = jax.lax.stop_gradient(settings.rtol * scale + settings.atol)
    r = _residual_fn(law, model_d)
    B0 = jax.lax.stop_gradient(S[:, None] * A * D[None, :])

    def solver(y0, th):
        res = powell_hybrid(lambda y: r(y, th), y0, B0, tol, settings)
        return res.x, res

    y, res = implicit_root(r, has_aux=True, ridge=1e-12)(solver)(jax.lax.stop_gradient(f0 / D), th)
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


def _concrete(tree) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


_step_jit = jax.jit(_step, static_argnames=("cmodel", "law", "settings"))


def split_step(cmodel: ChainModel, law, params: ChainParams, law_params, state: State,
               settings: RootSettings = RootSettings()):
    """One step of Algorithm 2: ``(state⁺, SplitInfo)``. ``law`` is the distal link's contact law
    H (static), ``law_params`` its parameters. Validates concrete inputs; pure under jit/vmap."""
    _check_links(params)
    if _concrete((params, state)):
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
    if _concrete((params, state)):
        validate_chain(params, state)
    return _rollout(cmodel, law, settings, params, law_params, state, int(n_steps))


def batch_split_rollout(cmodel: ChainModel, law, params: ChainParams, law_params, states: State, n_steps: int,
                        settings: RootSettings = RootSettings()):
    """``split_rollout`` vmapped over a leading batch axis of ``states``."""
    _check_links(params)
    if _concrete((params, states)):
        for b in range(states.pos.shape[0]):
            validate_chain(params, jax.tree_util.tree_map(lambda x: x[b], states))
    return jax.vmap(lambda s: _rollout(cmodel, law, settings, params, law_params, s, int(n_steps)))(states)
