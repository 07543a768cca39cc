"""Evaluation of dacm and PDD against the ground truth (the paper's Figs. 3, 5, 6, 7).

* ``trajectory_metrics`` (Fig. 5): fresh random throws simulated by GT, dacm and PDD for 800
  steps; per throw the final horizontal position (its distance from the start for the GT mean),
  the final orientation (rotation angle: from the identity for the GT mean, between model and
  GT for the error; 2D: the wrapped angle) and the first collision impulse (the linear impulse
  ‖P‖ (N·s) of the first step with a non-zero contact impulse in each rollout — until then all
  three rollouts are identical free flights, so this is a one-step comparison at the same state).
* ``one_step_accuracy`` (Fig. 3): on the GT contact instances of the fresh throws: classifier
  accuracy per patch type; regressor R² of the friction wrench on instances labelled dynamic
  (and the fraction of those within 20 % relative error); PDD R² of the full wrench.
* ``contact_events`` (Fig. 6): per step the touching vertices of the box → a vertex (1-8), edge
  (a-l) or face (A-F) symbol, consecutive repeats merged; compared by normalised edit distance.
* ``anisotropic_directions`` (Fig. 7): the box thrown in 8 directions, distance travelled.
* ``out_of_range``: contact instances of the learned rollouts whose inputs leave the training
  range (``law.out_of_range``) are counted and reported (and warned about), never hidden.
"""

from __future__ import annotations

import itertools
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import geometry
from ..stages import free_velocity
from ..rotations import quat_angle_between, quat_mul
from ..types import Model, Params, PlanarState, State
from . import data as D
from . import features as F
from .law import PATCH_KEYS, law_inputs, out_of_range

STEPS = 800

# units of ``evaluate``'s result (reported with it as ``units``)
UNITS = {
    "final_position": "m (horizontal distance; gt_mean: final position from the start; dacm/pdd: from the GT's "
                      "final position)",
    "final_orientation": "rad (gt_mean: rotation angle from the identity; dacm/pdd: angle to the GT's)",
    "first_impulse": "N s (norm of the linear contact impulse of the first contact step; dacm/pdd: error)",
    "max_penetration_m": "m",
    "nan_throws": "throws",
    "classifier_accuracy": "fraction of instances",
    "regressor_r2": "dimensionless (R^2 of the standardised friction wrench)",
    "pdd_r2": "dimensionless (R^2 of the standardised wrench)",
    "regressor_within_20pct": "fraction of instances",
    "pdd_within_20pct": "fraction of instances",
    "contact_instances": "instances",
    "out_of_training_range": "instances",
    "directions_deg": "deg",
    "anisotropic_distances": "m (gt, dacm, pdd: distance travelled; *_relative_error: fraction)",
    "steps": "steps",
    "dt": "s",
}


def learned_setup(gt_model, gt_params, law, law_params):
    model = Model(law=law, dt=gt_model.dt, gravity=gt_model.gravity, max_contacts=gt_model.max_contacts,
                  patch_tol=gt_model.patch_tol)
    return model, Params(body=gt_params.body, ground=gt_params.ground, law=law_params)


@partial(jax.jit, static_argnames=("model",))
def _impulses_jit(model, params, s0, s1):
    def one(a, b):
        v1 = free_velocity(model, params, a)
        return geometry.mass_matrix(params.body, a) @ (b.generalized_velocity() - v1)

    return jax.vmap(jax.vmap(one))(s0, s1)


def _impulses(model, params, traj):
    """Contact impulse per step (B, T, nv) from consecutive states: M(v⁺ − v¹)."""
    s0 = jax.tree_util.tree_map(lambda a: a[:, :-1], traj)
    s1 = jax.tree_util.tree_map(lambda a: a[:, 1:], traj)
    return np.asarray(_impulses_jit(model, params, s0, s1))


@partial(jax.jit, static_argnames=("tol",))
def _touching(params, traj, tol):
    return jax.vmap(jax.vmap(lambda s: geometry.contact_patch(params.body, params.ground, s, tol).touching))(traj)


def _first_impulse(p, dim):
    lin = p[..., :dim]
    nz = np.linalg.norm(lin, axis=-1) > F.DETACH_IMPULSE
    first = np.argmax(nz, axis=1)
    has = nz.any(axis=1)
    vec = lin[np.arange(len(lin)), first]
    return np.where(has[:, None], vec, 0.0), first, has


def _final_angle(traj):
    if isinstance(traj, PlanarState):
        return np.asarray(traj.angle[:, -1])
    return np.asarray(traj.quat[:, -1])


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def trajectory_metrics(gt_traj, trajs: dict, gt_model, gt_params) -> dict:
    dim = gt_params.body.dim
    p_gt = _impulses(gt_model, gt_params, gt_traj)
    first_gt, _, _ = _first_impulse(p_gt, dim)
    x0 = np.asarray(gt_traj.pos[:, 0, : dim - 1])
    xf = np.asarray(gt_traj.pos[:, -1, : dim - 1])
    q_gt = _final_angle(gt_traj)
    if dim == 3:
        ident = np.broadcast_to(np.array([1.0, 0, 0, 0]), q_gt.shape)
        ang_gt = np.asarray(quat_angle_between(jnp.asarray(ident), jnp.asarray(q_gt)))
    else:
        ang_gt = np.abs(_wrap(q_gt))
    out = {"gt_mean": {"final_position": float(np.mean(np.linalg.norm(xf - x0, axis=1))),
                       "final_orientation": float(np.mean(ang_gt)),
                       "first_impulse": float(np.mean(np.linalg.norm(first_gt, axis=1)))}}
    for name, tr in trajs.items():
        p = _impulses(gt_model, gt_params, tr)
        first, _, _ = _first_impulse(p, dim)
        q = _final_angle(tr)
        if dim == 3:
            dang = np.asarray(quat_angle_between(jnp.asarray(q), jnp.asarray(q_gt)))
        else:
            dang = np.abs(_wrap(q - q_gt))
        pos_err = np.linalg.norm(np.asarray(tr.pos[:, -1, : dim - 1]) - xf, axis=1)
        imp_err = np.linalg.norm(first - first_gt, axis=1)
        nan = ~np.all(np.isfinite(np.asarray(tr.pos[:, -1])), axis=1)
        # Diverged (non-finite) throws are counted in nan_throws and left out of the means.
        out[name] = {"final_position": float(np.nanmean(pos_err)), "final_orientation": float(np.nanmean(dang)),
                     "first_impulse": float(np.nanmean(imp_err)),
                     "final_position_median": float(np.nanmedian(pos_err)),
                     "final_orientation_median": float(np.nanmedian(dang)),
                     "first_impulse_median": float(np.nanmedian(imp_err)),
                     "nan_throws": int(nan.sum()),
                     "max_penetration_m": float(_max_penetration(gt_params, tr))}
    return out


def _max_penetration(params, traj):
    pts = jax.vmap(jax.vmap(lambda s: geometry.world_points(s, params.body.vertices)))(traj)
    phi = geometry.signed_distance(params.ground, pts)
    return float(jnp.maximum(0.0, -jnp.min(phi)))


def one_step_accuracy(test: dict, dacm_law, dacm_params, pdd_law, pdd_params) -> dict:
    from .train import r2

    dim = dacm_law.dim
    out = {}
    for k in F.patch_types(dim):
        name = PATCH_KEYS[k]
        m = test["kind"] == k
        if not m.any():
            out[name] = {"instances": 0}
            continue
        x, lab, w = test["x"][m], test["label"][m], test["wrench"][m]
        fi, ni = F.COMPONENTS[dim][k]
        st = dacm_params["norm"][name]
        xd = law_inputs(dacm_law, {a: test[a][m] for a in ("x", "x_extra") if a in test})
        xn = (xd - np.asarray(st["x_mean"])) / np.asarray(st["x_std"])
        from .train import predict

        cls = predict(dacm_law.clf_hidden, 3, dacm_params["clf"][name], xn).argmax(1)
        r = {"instances": int(m.sum()), "classifier_accuracy": float(np.mean(cls == lab)),
             "label_counts": {F.MODE_NAMES[c]: int(np.sum(lab == c)) for c in range(3)}}
        dyn = lab == F.DYNAMIC
        if dyn.any():
            yp = predict(dacm_law.reg_hidden, len(fi), dacm_params["reg"][name], xn[dyn])
            yp = np.asarray(dacm_law.friction_output({a: np.asarray(b) for a, b in st.items()}, yp, xd[dyn]))
            yt = w[dyn][:, list(fi)]
            if dacm_law.friction_target == "ratio":  # compare impulses: scale back by p_n⁰
                yp = yp * np.maximum(test["pn0"][m][dyn], F.RATIO_FLOOR)[:, None]
            ys = np.std(yt, axis=0) + 1e-12
            r["regressor_r2"] = r2(yp / ys, yt / ys)
            rel = np.linalg.norm((yp - yt) / ys, axis=1) / np.maximum(np.linalg.norm(yt / ys, axis=1), 1e-9)
            r["regressor_within_20pct"] = float(np.mean(rel <= 0.2))
        sp = pdd_params["norm"][name]
        xp = (x - np.asarray(sp["x_mean"])) / np.asarray(sp["x_std"])
        yp = predict(pdd_law.hidden, len(fi) + len(ni), pdd_params["reg"][name], xp)
        yp = yp * np.asarray(sp["y_std"]) + np.asarray(sp["y_mean"])
        yt = w[:, list(fi + ni)]
        ys = np.std(yt, axis=0) + 1e-12
        r["pdd_r2"] = r2(yp / ys, yt / ys)
        rel = np.linalg.norm((yp - yt) / ys, axis=1) / np.maximum(np.linalg.norm(yt / ys, axis=1), 1e-9)
        r["pdd_within_20pct"] = float(np.mean(rel <= 0.2))
        out[name] = r
    return out


def count_out_of_range(gt_model, gt_params, law_params, traj, margin: float = 0.05, law=None) -> dict:
    inst = D.extract(gt_model, gt_params, traj)
    bad = out_of_range(law_params, law_inputs(law, inst), inst["kind"], margin)
    return {"contact_instances": int(len(bad)), "out_of_training_range": int(bad.sum())}


# ---------------------------------------------------------------- contact events (Fig. 6)

def box_symbols(vertices: np.ndarray):
    """Symbol tables of a box: vertices 1-8, edges a-l, faces A-F (by vertex index sets)."""
    v = np.asarray(vertices)
    sg = np.sign(v)
    edges = [(i, j) for i, j in itertools.combinations(range(8), 2) if np.sum(sg[i] != sg[j]) == 1]
    faces = [frozenset(np.where(sg[:, a] == s)[0]) for a in range(3) for s in (-1, 1)]
    return {frozenset(e): "abcdefghijkl"[n] for n, e in enumerate(edges)}, faces


def contact_events(params, traj, tol: float = 1e-3) -> list[str]:
    """Event sequence per throw (box only): symbols of the touching feature, repeats merged."""
    edge_sym, faces = box_symbols(np.asarray(params.body.vertices))
    touch = np.asarray(_touching(params, traj, tol))
    seqs = []
    for b in range(touch.shape[0]):
        out = []
        for t in range(touch.shape[1]):
            idx = frozenset(np.where(touch[b, t])[0].tolist())
            if not idx:
                continue
            if len(idx) == 1:
                s = str(next(iter(idx)) + 1)
            elif len(idx) == 2:
                s = edge_sym.get(idx, "?")
            else:
                s = next((("ABCDEF")[n] for n, f in enumerate(faces) if idx <= f), "?")
            if not out or out[-1] != s:
                out.append(s)
        seqs.append("".join(out))
    return seqs


def edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def event_similarity(seq: str, ref: str) -> float:
    """1 − edit distance / max length (1 = identical sequences)."""
    n = max(len(seq), len(ref), 1)
    return 1.0 - edit_distance(seq, ref) / n


# ---------------------------------------------------------------- anisotropic (Fig. 7)

def direction_throws(n_dirs: int = 8, speed: float = 2.0, height: float = 0.15, tilt: float = 0.0, dtype=None):
    """The box thrown in ``n_dirs`` directions: yawed to the direction (pitched by ``tilt``),
    centre at ``height``, velocity ``speed`` along the direction and −0.5 m/s down, no spin.
    The defaults land it flat so it slides (a tilted, higher throw tips over and sticks at once,
    travelling the same distance in every direction: 0.511 m for tilt 0.3, height 0.4)."""
    dtype = dtype or jnp.result_type(float)
    a = jnp.arange(n_dirs, dtype=dtype) * 2 * jnp.pi / n_dirs
    qyaw = jnp.stack([jnp.cos(a / 2), 0 * a, 0 * a, jnp.sin(a / 2)], -1)
    qp = jnp.array([jnp.cos(tilt / 2), 0.0, jnp.sin(tilt / 2), 0.0], dtype)
    quat = jax.vmap(lambda q: quat_mul(q, qp))(qyaw)
    z = jnp.zeros_like(a)
    return State(pos=jnp.stack([z, z, z + height], -1), quat=quat,
                 vel=jnp.stack([speed * jnp.cos(a), speed * jnp.sin(a), z - 0.5], -1),
                 omega=jnp.zeros((n_dirs, 3), dtype)), np.degrees(np.asarray(a))


def anisotropic_directions(gt_model, gt_params, learned: dict, steps: int = STEPS) -> dict:
    s0, deg = direction_throws(dtype=gt_params.body.mass.dtype)
    res = {"directions_deg": deg.round(1).tolist()}
    trajs = {"gt": D.simulate(gt_model, gt_params, s0, steps)}
    for name, (m, p) in learned.items():
        trajs[name] = D.simulate(m, p, s0, steps)
    for name, tr in trajs.items():
        res[name] = np.linalg.norm(np.asarray(tr.pos[:, -1, :2] - tr.pos[:, 0, :2]), axis=1).tolist()
    gt = np.asarray(res["gt"])
    for name in learned:
        rel = np.abs(np.asarray(res[name]) - gt) / gt
        res[f"{name}_relative_error"] = rel.tolist()
        res[f"{name}_max_relative_error"] = float(rel.max())
    return res


# ---------------------------------------------------------------- all together

def evaluate(dacm_law, dacm_params, pdd_law, pdd_params, meta: dict, throws: int, seed: int,
             anisotropic: bool | None = None, steps: int = STEPS, events: int = 5, log=None,
             dissipative: bool = False, symmetry: int | None = None) -> dict:
    import dataclasses

    shape = meta["shape"]
    if dissipative:
        dacm_law = dataclasses.replace(dacm_law, dissipative=True)
    if symmetry is not None:  # None: the checkpoint's own setting (dacm train --symmetry)
        dacm_law = dataclasses.replace(dacm_law, symmetry=symmetry)
    aniso = bool(meta.get("anisotropic")) if anisotropic is None else anisotropic
    if aniso and not meta.get("anisotropic"):
        raise ValueError("--anisotropic needs a checkpoint trained on anisotropic data (generate --anisotropic)")
    gt_model, gt_params = D.ground_truth_setup(shape, bool(meta.get("anisotropic")))
    dm, dpar = learned_setup(gt_model, gt_params, dacm_law, dacm_params)
    pm, ppar = learned_setup(gt_model, gt_params, pdd_law, pdd_params)
    s0 = D.throws(shape, throws, seed)
    log = log or (lambda *a: None)
    log(f"simulating {throws} test throws x {steps} steps: GT")
    gt = D.simulate(gt_model, gt_params, s0, steps)
    log("dacm")
    tr_d = D.simulate(dm, dpar, s0, steps)
    log("pdd")
    tr_p = D.simulate(pm, ppar, s0, steps)
    data_seed = meta.get("data_seed")
    res = {"shape": shape, "anisotropic": aniso, "throws": throws, "seed": seed, "steps": steps,
           # the test throws are generated here (data.throws(shape, throws, seed)), never read from the
           # training data; they are fresh unless --seed is the training data's seed
           "test_throws": {"seed": seed, "throws": throws, "steps": steps, "dt": float(gt_model.dt),
                           "generated": "fresh random throws, data.throws(shape, throws, seed)",
                           "training_data_seed": data_seed, "training_data_sha256": meta.get("data_sha256"),
                           "training_throws": meta.get("data_throws"),
                           "fresh": None if data_seed is None else seed != data_seed},
           "units": UNITS,
           "dacm_law": repr(dacm_law),
           "trajectory": trajectory_metrics(gt, {"dacm": tr_d, "pdd": tr_p}, gt_model, gt_params)}
    test = D.extract(gt_model, gt_params, gt)
    res["one_step"] = one_step_accuracy(test, dacm_law, dacm_params, pdd_law, pdd_params)
    res["out_of_range"] = {"dacm": count_out_of_range(gt_model, gt_params, dacm_params, tr_d, law=dacm_law),
                           "pdd": count_out_of_range(gt_model, gt_params, pdd_params, tr_p, law=pdd_law)}
    for k, v in res["out_of_range"].items():
        if v["out_of_training_range"]:
            warnings.warn(f"{k}: {v['out_of_training_range']} of {v['contact_instances']} contact instances "
                          "had inputs outside the training range (extrapolated)", stacklevel=2)
    if shape == "box" and events:
        n = min(events, throws)
        sl = lambda tr: jax.tree_util.tree_map(lambda a: a[:n], tr)
        ev = {name: contact_events(gt_params, sl(tr)) for name, tr in (("gt", gt), ("dacm", tr_d), ("pdd", tr_p))}
        ev["dacm_similarity"] = [event_similarity(a, b) for a, b in zip(ev["dacm"], ev["gt"])]
        ev["pdd_similarity"] = [event_similarity(a, b) for a, b in zip(ev["pdd"], ev["gt"])]
        res["contact_events"] = ev
    if aniso:
        log("anisotropic directions")
        res["anisotropic_directions"] = anisotropic_directions(gt_model, gt_params, {"dacm": (dm, dpar), "pdd": (pm, ppar)}, steps)
    return res, {"gt": gt, "dacm": tr_d, "pdd": tr_p}
