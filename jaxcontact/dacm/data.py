"""Ground-truth contact data for dacm from the core engine's Coulomb LCP law.

``generate`` throws a body (``simulate.make_body``: 0.1 m box, pentagon prism, 2D box) with
``states.random_throws`` (random height, orientation, linear and angular velocity), simulates
800 steps of 2 ms with ``CoulombLCP`` (μ = 0.18, or μ = (0.75, 1.5) along world (x, y) when
anisotropic, no restitution) and extracts every contact instance — every step whose speculative
patch (``features.detect_patch``) is non-empty: inputs, patch type and centre, the impulse
p = M(v⁺ − v¹), its patch-frame wrench and the static/dynamic/detach label (thresholds in
``features``). Saved as one ``.npz``.

``slide_fraction`` > 0 replaces that share of the random throws by *sliding throws*
(``slide_throws``: low, near-flat launches with random yaw, horizontal speed 0.5–3 m/s in a random
direction, small spin), spread evenly over the throw indices so the first 2/3 (dacm's share) and
the held-out validation throws get the same mixture. With μ = (0.75, 1.5) the random throws almost
never slide on a face; Fig. 7's flat 2 m/s slides need these.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import geometry
from ..dynamics import batch_rollout
from ..stages import free_velocity
from ..laws import CoulombLCP
from ..solvers import LCPSettings
from ..rotations import quat_mul, quat_to_mat
from ..simulate import SHAPES, make_body
from ..states import random_throws
from ..types import Ground, Model, Params, PlanarState, State
from . import features as F

ANISO_MU = (0.75, 1.5)  # along world x (t1) and world y (t2)
ISO_MU = 0.18
FORMAT = "jaxcontact.dacm.data/1"


GROUND_TRUTH_LAW = CoulombLCP(solver=LCPSettings(cone="box"))
"""The ground truth's law: the square (``LCPSettings.cone = "box"``), as the paper's ground truth,
DART (Jiang et al., §4: "a generic physics engine DART"), whose boxed-LCP contact solver bounds each of
the two friction directions on its own; its anisotropic case (§4.4: μ 1.5 along one ground axis,
0.75 along the other) is two such bounds. The features' rotation symmetry (k = 2, ``dacm.law``) is
this square's."""


def ground_truth_setup(shape: str, anisotropic: bool = False, dt: float = 0.002):
    """(model, params) of the ground-truth simulator for ``shape``."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    if anisotropic and shape == "box2d":
        raise ValueError("--anisotropic needs a 3D shape (box or pentagon)")
    body, max_contacts = make_body(shape)
    law = GROUND_TRUTH_LAW
    mu = law.init_params(mu=ANISO_MU[0], mu2=ANISO_MU[1]) if anisotropic else law.init_params(mu=ISO_MU)
    model = Model(law=law, dt=dt, max_contacts=max_contacts)
    params = Params(body=body, ground=Ground.flat(body.dim), law=mu)
    return model, params


# Sliding throws (``slide_throws``): gap between the lowest vertex and the ground at launch (m),
# tilt from the resting pose about a random horizontal axis (rad), horizontal speed magnitude
# (m/s, random direction), vertical speed (m/s), body-frame angular velocity about the horizontal
# axes and about the vertical (spin) (rad/s). The tilt and horizontal rates are small so most
# landings are face impacts (a box tilted by more than ~0.03 rad lands on an edge and, with
# μ = 1.5 > half-width / centre height, tips over instead of sliding). Fig. 7's throws (gap
# 0.10 m, no tilt, 2 m/s, −0.5 m/s down, no spin) lie inside these ranges.
SLIDE_RANGES = {
    "gap": (0.0, 0.15),
    "tilt": (0.0, 0.02),
    "horizontal_speed": (0.5, 3.0),
    "vertical_speed": (-1.0, 0.0),
    "angular_speed": (-0.1, 0.1),
    "spin": (-2.0, 2.0),
}


def slide_throws(key, n: int, body, ranges=None):
    """``n`` sliding throws of ``body`` (batched State / PlanarState): resting pose (identity
    orientation, lying on its lowest face) yawed at random and tilted by at most ``tilt``, lowest
    vertex ``gap`` above the ground, horizontal velocity of random direction and magnitude,
    small downward vertical speed, small rotation rates — the body lands nearly flat and slides."""
    r = dict(SLIDE_RANGES, **(ranges or {}))
    dtype = jnp.result_type(float)
    k = jax.random.split(key, 10)
    u = lambda kk, shape, lohi: jax.random.uniform(kk, shape, dtype, lohi[0], lohi[1])
    gap = u(k[0], (n,), r["gap"])
    tilt = u(k[4], (n,), r["tilt"])
    speed = u(k[3], (n,), r["horizontal_speed"]) * jnp.where(jax.random.bernoulli(k[7], 0.5, (n,)), 1.0, -1.0)
    vz = u(k[1], (n,), r["vertical_speed"])
    verts = jnp.asarray(body.vertices, dtype)
    mask = jnp.asarray(body.vertex_mask, bool)
    if body.dim == 2:
        angle = jnp.where(jax.random.bernoulli(k[2], 0.5, (n,)), tilt, -tilt)  # 2D: no spin
        c, s_ = jnp.cos(angle), jnp.sin(angle)
        low = jnp.min(jnp.where(mask, s_[:, None] * verts[None, :, 0] + c[:, None] * verts[None, :, 1], jnp.inf), 1)
        return PlanarState(pos=jnp.stack([jnp.zeros(n, dtype), gap - low], -1), angle=angle,
                           vel=jnp.stack([speed, vz], -1), omega=u(k[6], (n,), r["angular_speed"]))
    omega = jnp.concatenate([u(k[6], (n, 2), r["angular_speed"]), u(k[5], (n, 1), r["spin"])], -1)
    yaw = jax.random.uniform(k[2], (n,), dtype, -jnp.pi, jnp.pi)
    axis = jax.random.uniform(k[8], (n,), dtype, -jnp.pi, jnp.pi)  # horizontal tilt axis
    qyaw = jnp.stack([jnp.cos(yaw / 2), 0 * yaw, 0 * yaw, jnp.sin(yaw / 2)], -1)
    qtilt = jnp.stack([jnp.cos(tilt / 2), jnp.cos(axis) * jnp.sin(tilt / 2), jnp.sin(axis) * jnp.sin(tilt / 2), 0 * tilt], -1)
    quat = jax.vmap(quat_mul)(qtilt, qyaw)
    low = jax.vmap(lambda q: jnp.min(jnp.where(mask, (verts @ quat_to_mat(q).T)[:, 2], jnp.inf)))(quat)
    direction = jax.random.uniform(k[9], (n,), dtype, -jnp.pi, jnp.pi)
    speed = jnp.abs(speed)
    zero = jnp.zeros(n, dtype)
    return State(pos=jnp.stack([zero, zero, gap - low], -1), quat=quat,
                 vel=jnp.stack([speed * jnp.cos(direction), speed * jnp.sin(direction), vz], -1),
                 omega=omega)


def slide_mask(n: int, fraction: float) -> np.ndarray:
    """Which of ``n`` throws are sliding throws: round(n·fraction) of them, spread evenly."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"--slide-fraction must be in [0, 1], got {fraction}")
    i = np.arange(n)
    return np.floor((i + 1) * fraction + 1e-9) > np.floor(i * fraction + 1e-9)


def throws(shape: str, n: int, seed: int, slide_fraction: float = 0.0):
    """Random throws (``states.random_throws``, key ``PRNGKey(seed)``); with ``slide_fraction``,
    that share of them (``slide_mask``) replaced by ``slide_throws`` (key folded from the seed)."""
    key = jax.random.PRNGKey(seed)
    s = random_throws(key, n, planar=shape == "box2d")
    m = slide_mask(n, slide_fraction)
    if not m.any():
        return s
    body, _ = make_body(shape)
    sl = slide_throws(jax.random.fold_in(key, 7), n, body)
    mj = jnp.asarray(m)
    return jax.tree_util.tree_map(lambda a, b: jnp.where(mj.reshape((n,) + (1,) * (a.ndim - 1)), b, a), s, sl)


def simulate(model, params, states, steps: int, chunk: int = 400, bar=None):
    """Trajectories (batched state pytree, (B, steps+1, …)) in chunks of ``chunk`` steps
    (``bar``: optional tqdm bar, advanced by the steps of each chunk)."""
    out = [jax.tree_util.tree_map(lambda x: x[:, None], states)]
    done = 0
    s = states
    while done < steps:
        k = min(chunk, steps - done)
        traj = batch_rollout(model, params, s, k, output="trajectory", chunk_size=None, validate=False)
        out.append(jax.tree_util.tree_map(lambda x: x[:, 1:], traj))
        s = jax.tree_util.tree_map(lambda x: x[:, -1], traj)
        done += k
        if bar is not None:
            bar.update(k)
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, 1), *out)


@partial(jax.jit, static_argnames=("model",))
def _instances(model, params, s0, s1):
    """Per transition s0 → s1 (single body): patch, features, impulse, wrench, label."""
    body, ground = params.body, params.ground
    v1 = free_velocity(model, params, s0)
    patch = F.detect_patch(body, ground, s0, v1, model.patch_tol, model.dt)
    x = F.features(body, ground, s0, v1, patch)
    v_new = s1.generalized_velocity()
    M = geometry.mass_matrix(body, s0)
    p = M @ (v_new - v1)
    w = F.to_patch_frame(ground, s0, patch.centre, p)
    lab = F.label(body, ground, s0, v_new, p, patch, model.dt)
    ref = F.reference_lcp(model, params, s0, v1)
    pn0 = ref.pn0
    xe = jnp.concatenate([F.extra_features(body, ground, s0, v1, patch, pn0, model.dt),
                          F.coulomb_features(body, ground, s0, patch, ref)])
    return dict(x=x, kind=patch.kind, label=lab, wrench=w, impulse=p, centre=patch.centre,
                touching=patch.touching, pn0=pn0, x_extra=xe)


def extract(model, params, traj, bar=None) -> dict:
    """Contact instances of trajectories (B, T+1, …) → dict of flat numpy arrays (``bar``:
    optional tqdm bar, advanced by the steps of each chunk of 20 000 body-steps, per body)."""
    B, T1 = traj.pos.shape[:2]
    s0 = jax.tree_util.tree_map(lambda a: a[:, :-1].reshape((B * (T1 - 1),) + a.shape[2:]), traj)
    s1 = jax.tree_util.tree_map(lambda a: a[:, 1:].reshape((B * (T1 - 1),) + a.shape[2:]), traj)
    f = jax.vmap(lambda a, b: _instances(model, params, a, b))
    res = {}
    n = B * (T1 - 1)
    step = 20000
    for i in range(0, n, step):
        sl = lambda a: a[i:i + step]
        r = f(jax.tree_util.tree_map(sl, s0), jax.tree_util.tree_map(sl, s1))
        for k, v in r.items():
            res.setdefault(k, []).append(np.asarray(v))
        if bar is not None:  # steps per body done so far (integer, never past the total)
            bar.update(min(n, i + step) // B - bar.n)
    res = {k: np.concatenate(v) for k, v in res.items()}
    throw = np.repeat(np.arange(B), T1 - 1)
    stepi = np.tile(np.arange(T1 - 1), B)
    keep = res["kind"] > 0
    lin = np.linalg.norm(res["impulse"][:, : traj.pos.shape[-1]], axis=-1)
    missed = int(np.sum(~keep & (lin > F.DETACH_IMPULSE)))
    out = {k: v[keep] for k, v in res.items() if k != "touching"}
    out["throw"] = throw[keep]
    out["step"] = stepi[keep]
    out["missed"] = np.array(missed)
    return out


def generate(shape: str, n_throws: int, seed: int, anisotropic: bool = False, steps: int = 800,
             slide_fraction: float = 0.0, progress: bool = False):
    """Simulate ``n_throws`` throws (random, ``slide_fraction`` of them sliding) and return
    (data dict, trajectories). progress: tqdm bars (stderr) for the simulation and the extraction,
    in steps of all throws (their rate and time left are tqdm's estimate)."""
    if n_throws < 1 or steps < 1:
        raise ValueError("--throws and steps must be >= 1")
    from tqdm.auto import tqdm

    model, params = ground_truth_setup(shape, anisotropic)
    s0 = throws(shape, n_throws, seed, slide_fraction)
    kw = dict(total=steps, unit="step", leave=False, dynamic_ncols=True, disable=not progress)
    with tqdm(desc=f"simulate {n_throws} throws", **kw) as bar:
        traj = simulate(model, params, s0, steps, bar=bar)
    with tqdm(desc="extract contact instances", **kw) as bar:
        data = extract(model, params, traj, bar=bar)
    mu = np.asarray(params.law.mu)
    data.update(
        format=np.array(FORMAT), shape=np.array(shape), anisotropic=np.array(anisotropic),
        mu=mu, dt=np.array(model.dt), steps=np.array(steps), seed=np.array(seed),
        n_throws=np.array(n_throws), dim=np.array(params.body.dim),
        slide_fraction=np.array(slide_fraction),
        static_speed=np.array(F.STATIC_SPEED), detach_impulse=np.array(F.DETACH_IMPULSE),
    )
    return data, traj


REQUIRED = ("format", "shape", "dim", "x", "kind", "label", "wrench", "throw", "mu", "anisotropic", "n_throws")


def save(path, data: dict) -> None:
    np.savez_compressed(path, **data)


def load(path) -> dict:
    """Load a dataset written by ``save``; clear errors for anything malformed."""
    from ..files import read_npz

    data = read_npz(path, "dacm data file")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: not a dacm data file, missing arrays {missing}")
    if str(data["format"]) != FORMAT:
        raise ValueError(f"{path}: unsupported format {data['format']!s}, expected {FORMAT}")
    shape = str(data["shape"])
    if data["shape"].shape != () or shape not in SHAPES:
        raise ValueError(f"{path}: shape {shape!r} is not one of {SHAPES} (the checkpoint could not be evaluated)")
    dim = int(data["dim"])
    if dim != (2 if shape == "box2d" else 3):
        raise ValueError(f"{path}: dim {dim} does not match shape {shape!r} ({2 if shape == 'box2d' else 3})")
    for k, want in (("x", "floating"), ("wrench", "floating"), ("kind", "integer"), ("label", "integer"),
                    ("throw", "integer")):
        ok = np.issubdtype(data[k].dtype, np.floating if want == "floating" else np.integer)
        if not ok or (want == "floating" and data[k].dtype.itemsize < 4):
            raise ValueError(f"{path}: {k} must be {'float32 or float64' if want == 'floating' else 'integers'}, "
                             f"got {data[k].dtype}")
    n = len(data["x"])
    if data["x"].ndim != 2 or data["x"].shape[1] != F.num_features(dim):
        raise ValueError(f"{path}: x must be (N, {F.num_features(dim)}), got {data['x'].shape}")
    for k, shp in (("kind", (n,)), ("label", (n,)), ("wrench", (n, 6 if dim == 3 else 3)), ("throw", (n,))):
        if data[k].shape != shp:
            raise ValueError(f"{path}: {k} must have shape {shp}, got {data[k].shape}")
    if not np.all(np.isfinite(data["x"])) or not np.all(np.isfinite(data["wrench"])):
        raise ValueError(f"{path}: x / wrench contain NaN or inf")
    if n and (data["label"].min() < 0 or data["label"].max() > 2):
        raise ValueError(f"{path}: labels must be 0 (static), 1 (dynamic) or 2 (detach)")
    unknown = sorted(set(np.unique(data["kind"]).tolist()) - set(F.patch_types(dim)))
    if unknown:
        raise ValueError(f"{path}: kind {unknown} is not a patch type of a {dim}D body "
                         f"({', '.join(f'{k} {F.PATCH_NAMES[k]}' for k in F.patch_types(dim))})")
    n_throws = int(data["n_throws"])
    if n and (data["throw"].min() < 0 or data["throw"].max() >= n_throws):
        raise ValueError(f"{path}: throw indices must lie in [0, n_throws = {n_throws})")
    return data


def summary(data: dict) -> dict:
    out = {"instances": int(len(data["x"])), "throws": int(data["n_throws"]),
           "missed_impulses_without_patch": int(data.get("missed", 0)),
           "slide_fraction": float(data.get("slide_fraction", 0.0))}
    for k in F.patch_types(int(data["dim"])):
        m = data["kind"] == k
        out[F.PATCH_NAMES[k]] = {F.MODE_NAMES[c]: int(np.sum(m & (data["label"] == c))) for c in range(3)}
    return out
