"""The data-augmented contact law (Algorithm 1) and the purely data-driven (PDD) baseline.

Both are frozen dataclasses behind the engine's contact-law signature
``law(model, params, state, v_free) -> (impulse, ContactInfo)``; their networks and
normalisation statistics live in ``params.law`` (a dict pytree), so ``jc.rollout`` /
``jc.batch_rollout`` run them unchanged, jitted and vmapped.

``DACMLaw`` (Algorithm 1), per body and step:
1. the speculative contact detector D gives the patch (type, centre; ``features``);
2. the classifier of the patch's type predicts static / dynamic / detach from the inputs;
3. static: the patch-velocity constraint is solved exactly (``features.static_impulse``);
   dynamic: the regressor predicts the friction wrench p_f (patch frame), v² = v¹ + M⁻¹T_f p_f,
   then the frictionless LCP on the contact candidates gives the normal impulse
   (``solvers.solve_lcp`` with no friction rows: projected Gauss–Seidel, implicit gradients by
   jaxopt); detach: p = 0.
All three branches are evaluated and one is chosen with ``jnp.where`` (no Python ``if`` on
data), so a vmapped batch of bodies in different modes runs as one program. The networks of
all patch types run and the patch type's output is selected the same way.
``ContactInfo.mode`` is the predicted class (0 static, 1 dynamic, 2 detach; −1 no patch).

Improvement over the paper (``friction_target="ratio"``): the regressor predicts p_f divided
by the reference normal impulse p_n⁰ of the frictionless LCP at v¹ (an extra small LCP solve),
i.e. a friction *ratio* (≈ μ·direction when sliding) instead of an impulse spanning three
orders of magnitude between resting sliding and impacts.

Second improvement (``dissipative=True``, a law setting, no retraining): the predicted friction
impulse is scaled by the largest α ∈ [0, 1] for which it adds no kinetic energy to v¹, so a
regressor error can never accelerate the body (the Coulomb ground truth itself violates this
bound in a small share of its dynamic instances; measured in docs/dacm.md).

Third (``inputs="coulomb"``): the networks also see per-vertex sliding-friction inputs computed
from the same frictionless LCP (``features.coulomb_features``), which make line and face
friction learnable (docs/dacm.md, improvement 7).

Fourth (``friction_head="residual"``, with the coulomb inputs and the ratio target): the
regressor's output is a fitted sliding-Coulomb term of those inputs (``features.coulomb_head``,
coefficients in ``params.law["norm"][patch]["head"]``) plus the network (improvement 9).

Fifth (``symmetry=k``, a law setting, no retraining; 3D): the classifier probabilities and the
friction wrench are averaged over the k rotations of the world by 2π·j/k about the ground normal
(j = 0 … k−1; state rotated, prediction rotated back). The ground truth is equivariant under
these rotations — k = 2 for any friction pyramid along the ground tangents (anisotropic μ too),
k = 4 only for isotropic μ — so this is test-time augmentation by an exact symmetry of the data:
the averaged law is itself equivariant, and independent network errors partly cancel. It costs
k network and reference-LCP evaluations per step.

``PDDLaw``: the regressor of the patch's type predicts the full patch-frame wrench (p_f, p_n);
p = T w. No classifier, no constraint.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from .. import contact, geometry
from ..rotations import quat_mul
from ..laws.base import LawDefaults
from ..solvers import LCPSettings
from ..types import PatchType
from ..validation import KEY, OPTIONAL_INT, check_arguments
from . import features as F
from .networks import apply

PATCH_KEYS = {1: "point", 2: "line", 3: "face"}
SYMMETRIES = (1, 2, 4)  # DACMLaw.symmetry: rotations about the ground normal averaged over


def _normalise(stats, x):
    return (x - stats["x_mean"]) / stats["x_std"]


def _select(kind, values: dict, types):
    """values[type] for the body's patch type (the first type's value when there is no patch)."""
    out = values[types[0]]
    for k in types[1:]:
        out = jnp.where(kind == k, values[k], out)
    return out


def _pad_wrench(dim, k, y, which):
    fi, ni = F.COMPONENTS[dim][k]
    idx = {"f": fi, "n": ni, "fn": fi + ni}[which]
    w = jnp.zeros(6 if dim == 3 else 3, y.dtype)
    return w.at[jnp.asarray(idx)].set(y)


def _info(model, con_phi, z, patch, dim, mode, solution):
    """ContactInfo of a dacm/PDD step: normal impulses z (C,), the detector's patch (its normal is
    the world up axis), the predicted mode."""
    imp = jnp.zeros((z.shape[0], dim), z.dtype).at[:, 0].set(z)
    normal = jnp.zeros_like(patch.centre).at[dim - 1].set(1.0)
    return contact.info(con_phi, con_phi <= model.patch_tol, imp, patch, solution, mode, patch_normal=normal)


@dataclasses.dataclass(frozen=True)
class DACMLaw(LawDefaults):
    """Algorithm 1. dim: 3 or 2. clf_hidden / reg_hidden: layer widths (static: they shape the
    Flax modules). solver: settings of the frictionless LCP."""

    dim: int = 3
    clf_hidden: tuple[int, ...] = (256, 180, 80)
    reg_hidden: tuple[int, ...] = (512, 360, 180)
    solver: LCPSettings = LCPSettings()
    friction_target: str = "absolute"
    dissipative: bool = False
    inputs: str = "paper"
    friction_head: str = "plain"
    symmetry: int = 1

    def __post_init__(self):
        if self.symmetry not in SYMMETRIES:
            raise ValueError(f"symmetry must be one of {SYMMETRIES} (rotations about the ground normal), got {self.symmetry!r}")
        if self.symmetry > 1 and self.dim != 3:
            raise ValueError("symmetry > 1 (rotations about the ground normal) needs dim=3")
        if self.friction_target not in ("absolute", "ratio"):
            raise ValueError(f"friction_target must be 'absolute' or 'ratio', got {self.friction_target!r}")
        F.check_friction_head(self.friction_head, self.inputs, self.friction_target)
        if self.inputs not in F.INPUTS:
            raise ValueError(f"inputs must be one of {F.INPUTS}, got {self.inputs!r}")
        if self.dim not in (2, 3):
            raise ValueError(f"dim must be 2 or 3, got {self.dim}")

    @property
    def types(self):
        return F.patch_types(self.dim)

    def init_params(self, key=None, x_dim=None):
        """Untrained parameters (random networks, unit normalisation) — for shapes and speed
        measurements; ``train.train`` returns trained ones."""
        check_arguments(f"{type(self).__name__}.init_params", key=(key, KEY), x_dim=(x_dim, OPTIONAL_INT))
        from .networks import MLP

        key = jax.random.PRNGKey(0) if key is None else key
        nx = F.num_features(self.dim, self.inputs) if x_dim is None else x_dim
        x = jnp.zeros((1, nx), jnp.float32)
        out = {"clf": {}, "reg": {}, "norm": {}}
        for k in self.types:
            name = PATCH_KEYS[k]
            key, k1, k2 = jax.random.split(key, 3)
            nf = len(F.COMPONENTS[self.dim][k][0])
            out["clf"][name] = MLP(self.clf_hidden, 3).init(k1, x)
            out["reg"][name] = MLP(self.reg_hidden, nf).init(k2, x)
            out["norm"][name] = _unit_stats(nx, nf)
            if self.friction_head == "residual":
                out["norm"][name]["head"] = jnp.zeros(nf)
        return out

    def friction_output(self, stats, y_net, x):
        """Regressor output (friction ratio / impulse, patch-type components) from the network's
        normalised output y_net and the unnormalised inputs x (numpy or jax, one row or a batch)."""
        y = y_net * stats["y_std"] + stats["y_mean"]
        if self.friction_head == "residual":
            y = y + F.coulomb_head(stats["head"], x, self.dim)
        return y

    def predict(self, model, params, state, v_free):
        """(patch, features, logits, friction wrench (full size, patch frame)) for one body."""
        body, ground, lp = params.body, params.ground, params.law
        patch = F.detect_patch(body, ground, state, v_free, model.patch_tol, model.dt)
        x = F.features(body, ground, state, v_free, patch)
        pn0 = None
        if self.friction_target == "ratio" or self.inputs != "paper":
            ref = F.reference_lcp(model, params, state, v_free, self.solver)
            pn0 = ref.pn0
        if self.inputs != "paper":
            xe = F.extra_features(body, ground, state, v_free, patch, pn0, model.dt)
            if self.inputs == "coulomb":
                xe = jnp.concatenate([xe, F.coulomb_features(body, ground, state, patch, ref)])
            x = F.select_inputs(x, xe, self.inputs)
        logits, pf = {}, {}
        for k in self.types:
            name = PATCH_KEYS[k]
            st = lp["norm"][name]
            xn = _normalise(st, x)
            logits[k] = apply(self.clf_hidden, 3, lp["clf"][name], xn)
            nf = len(F.COMPONENTS[self.dim][k][0])
            y = self.friction_output(st, apply(self.reg_hidden, nf, lp["reg"][name], xn), x)
            pf[k] = _pad_wrench(self.dim, k, y, "f")
        wf = _select(patch.kind, pf, self.types)
        if self.friction_target == "ratio":
            wf = wf * F.friction_scale(pn0)
        return patch, x, _select(patch.kind, logits, self.types), wf

    def predict_symmetric(self, model, params, state, v_free):
        """``predict`` averaged over the ``symmetry`` rotations about the ground normal (module
        docstring): (patch, features, log of the mean class probabilities, mean friction wrench),
        patch and features those of the unrotated state."""
        patch, x, logits, wf = self.predict(model, params, state, v_free)
        if self.symmetry == 1:
            return patch, x, logits, wf
        n = geometry.unit_normal(params.ground)
        T = geometry.tangent_basis(n)  # (2, 3)
        probs, wfs = [jax.nn.softmax(logits)], [wf]
        for j in range(1, self.symmetry):
            ang = 2.0 * np.pi * j / self.symmetry
            c, s_ = np.cos(ang), np.sin(ang)
            K = jnp.array([[0.0, -n[2], n[1]], [n[2], 0.0, -n[0]], [-n[1], n[0], 0.0]], n.dtype)
            R = c * jnp.eye(3, dtype=n.dtype) + s_ * K + (1.0 - c) * jnp.outer(n, n)  # rotation about n
            q = jnp.concatenate([jnp.array([np.cos(ang / 2)], n.dtype), np.sin(ang / 2) * n])
            rs = state.replace(pos=R @ state.pos, quat=quat_mul(q, state.quat), vel=R @ state.vel)  # ω: body frame
            rv = jnp.concatenate([R @ v_free[:3], v_free[3:]])
            _, _, lg, w = self.predict(model, params, rs, rv)
            # tangential force back to the unrotated world (B_ik = t_i · Rᵀ t_k); the torsion
            # about n and the (zero) normal components are unchanged by a rotation about n
            B = T @ R.T @ T.T
            probs.append(jax.nn.softmax(lg))
            wfs.append(w.at[:2].set(B @ w[:2]))
        return patch, x, jnp.log(jnp.mean(jnp.stack(probs), 0)), jnp.mean(jnp.stack(wfs), 0)

    def __call__(self, model, params, state, v_free):
        patch, _, logits, wf = self.predict_symmetric(model, params, state, v_free)
        cls = jnp.argmax(logits).astype(jnp.int32)
        return self.impulse(model, params, state, v_free, patch, cls, wf)

    def impulse(self, model, params, state, v_free, patch, cls, wf, keep_friction=None):
        """Algorithm 1's branches for a given class ``cls`` and friction wrench ``wf`` (patch
        frame): (impulse, ContactInfo). ``keep_friction`` (bool, optional): skip the dissipative
        scaling (used by the oracle diagnosis, ``python -m studies.dacm oracle``)."""
        body, ground = params.body, params.ground
        has = patch.kind > PatchType.NONE
        mode = jnp.where(has, cls, -1).astype(jnp.int32)
        # static
        p_static = F.static_impulse(body, ground, state, v_free, patch, model.dt)
        # dynamic: learned friction, analytical normal impulse
        p_f = F.from_patch_frame(ground, state, patch.centre, wf)
        Minv = geometry.mass_matrix_inverse(body, state)
        if self.dissipative:
            # scale p_f by α ∈ [0, 1] so that it adds no kinetic energy to v¹:
            # KE(v¹ + αM⁻¹p_f) ≤ KE(v¹)  ⇔  α ≤ −2 v¹·p_f / (p_fᵀM⁻¹p_f)
            vq = jnp.dot(v_free, p_f)
            qq = p_f @ Minv @ p_f
            alpha = jnp.clip(-2.0 * vq / jnp.maximum(qq, jnp.finfo(qq.dtype).tiny), 0.0, 1.0)
            if keep_friction is not None:
                alpha = jnp.where(keep_friction, 1.0, alpha)
            p_f = jnp.where(qq > 0, alpha, 1.0) * p_f
        v2 = v_free + Minv @ p_f
        sol, con = contact.frictionless(model, params, state, v2, self.solver)
        p_dyn = p_f + sol.impulse
        zero = jnp.zeros_like(v_free)
        p = jnp.where(mode == F.STATIC, p_static, jnp.where(mode == F.DYNAMIC, p_dyn, zero))
        z = jnp.where(mode == F.DYNAMIC, sol.z[:, 0], 0.0)
        info = _info(model, con.phi, z, patch, self.dim, mode,
                     sol.replace(residual=jnp.where(mode == F.DYNAMIC, sol.residual, 0.0)))
        return p, info


@dataclasses.dataclass(frozen=True)
class PDDLaw(LawDefaults):
    """Purely data-driven baseline: p = T · regressor(inputs) on any non-empty patch."""

    dim: int = 3
    hidden: tuple[int, ...] = (512, 360, 180)

    @property
    def types(self):
        return F.patch_types(self.dim)

    def init_params(self, key=None):
        check_arguments(f"{type(self).__name__}.init_params", key=(key, KEY))
        from .networks import MLP

        key = jax.random.PRNGKey(0) if key is None else key
        nx = F.num_features(self.dim)
        out = {"reg": {}, "norm": {}}
        for k in self.types:
            key, k1 = jax.random.split(key)
            fi, ni = F.COMPONENTS[self.dim][k]
            out["reg"][PATCH_KEYS[k]] = MLP(self.hidden, len(fi) + len(ni)).init(k1, jnp.zeros((1, nx), jnp.float32))
            out["norm"][PATCH_KEYS[k]] = _unit_stats(nx, len(fi) + len(ni))
        return out

    def __call__(self, model, params, state, v_free):
        body, ground, lp = params.body, params.ground, params.law
        patch = F.detect_patch(body, ground, state, v_free, model.patch_tol, model.dt)
        x = F.features(body, ground, state, v_free, patch)
        ws = {}
        for k in self.types:
            name = PATCH_KEYS[k]
            st = lp["norm"][name]
            fi, ni = F.COMPONENTS[self.dim][k]
            y = apply(self.hidden, len(fi) + len(ni), lp["reg"][name], _normalise(st, x)) * st["y_std"] + st["y_mean"]
            ws[k] = _pad_wrench(self.dim, k, y, "fn")
        w = _select(patch.kind, ws, self.types)
        has = patch.kind > PatchType.NONE
        p = jnp.where(has, F.from_patch_frame(ground, state, patch.centre, w), 0.0)
        C = model.num_contacts(body)
        con = geometry.contact_candidates(body, ground, state, C)
        zero = jnp.zeros((), p.dtype)
        none = contact.ContactSolution(z=jnp.zeros((C, 1), p.dtype), impulse=p, residual=zero,
                                       iterations=jnp.zeros((), jnp.int32))
        info = _info(model, con.phi, jnp.zeros(C, p.dtype), patch, self.dim, jnp.asarray(-1, jnp.int32), none)
        return p, info


def _unit_stats(nx, ny):
    return {
        "x_mean": jnp.zeros(nx), "x_std": jnp.ones(nx), "x_min": -1e30 * jnp.ones(nx),
        "x_max": 1e30 * jnp.ones(nx), "y_mean": jnp.zeros(ny), "y_std": jnp.ones(ny),
    }


def law_inputs(law, inst: dict) -> np.ndarray:
    """Inputs of ``law`` (DACMLaw or PDDLaw) for extracted instances (``data.extract``)."""
    inputs = getattr(law, "inputs", "paper")
    if inputs != "paper" and "x_extra" not in inst:
        raise ValueError(f"inputs={inputs!r} needs data with 'x_extra' (regenerate with this version)")
    return np.asarray(F.select_inputs(np.asarray(inst["x"]), np.asarray(inst.get("x_extra")), inputs))


def out_of_range(law_params, x, kind, margin: float = 0.05) -> np.ndarray:
    """Boolean per instance: some input lies outside the training range of its patch type
    (widened by ``margin`` × range on each side). x: (N, F) unnormalised, kind: (N,)."""
    x = np.asarray(x)
    kind = np.asarray(kind)
    out = np.zeros(len(x), bool)
    for k, name in PATCH_KEYS.items():
        if name not in law_params["norm"]:
            continue
        st = law_params["norm"][name]
        lo, hi = np.asarray(st["x_min"]), np.asarray(st["x_max"])
        span = np.where(hi - lo < 1e29, hi - lo, 0.0)
        m = kind == k
        bad = np.any((x[m] < lo - margin * span) | (x[m] > hi + margin * span), axis=1)
        out[np.where(m)[0]] = bad
    return out
