"""Ground-truth contact data for dacm from the core engine's Coulomb LCP law.

``generate`` throws a body (``simulate.make_body``: 0.1 m box, pentagon prism, 2D box) with
``states.random_throws`` (random height, orientation, linear and angular velocity), simulates
800 steps of 2 ms with ``CoulombLCP`` (μ = 0.18, or μ = (0.75, 1.5) along world (x, y) when
anisotropic, no restitution) and extracts every contact instance — every step whose speculative
patch (``features.detect_patch``) is non-empty: inputs, patch type and centre, the impulse
p = M(v⁺ − v¹), its patch-frame wrench and the static/dynamic/detach label (thresholds in
``features``). Saved as one ``.npz``.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import geometry
from ..dynamics import _batch_rollout, free_velocity
from ..laws import CoulombLCP
from ..simulate import SHAPES, make_body
from ..states import random_throws
from ..types import Ground, Model, Params
from . import features as F

ANISO_MU = (0.75, 1.5)  # along world x (t1) and world y (t2)
ISO_MU = 0.18
FORMAT = "jaxcontact.dacm.data/1"


def ground_truth_setup(shape: str, anisotropic: bool = False, dt: float = 0.002):
    """(model, params) of the ground-truth simulator for ``shape``."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    if anisotropic and shape == "box2d":
        raise ValueError("--anisotropic needs a 3D shape (box or pentagon)")
    body, max_contacts = make_body(shape)
    law = CoulombLCP()
    mu = law.init_params(mu=ANISO_MU[0], mu2=ANISO_MU[1]) if anisotropic else law.init_params(mu=ISO_MU)
    model = Model(law=law, dt=dt, max_contacts=max_contacts)
    params = Params(body=body, ground=Ground.flat(body.dim), law=mu)
    return model, params


def throws(shape: str, n: int, seed: int):
    return random_throws(jax.random.PRNGKey(seed), n, planar=shape == "box2d")


def simulate(model, params, states, steps: int, chunk: int = 400):
    """Trajectories (batched state pytree, (B, steps+1, …)) in chunks of ``chunk`` steps."""
    out = [jax.tree_util.tree_map(lambda x: x[:, None], states)]
    done = 0
    s = states
    while done < steps:
        k = min(chunk, steps - done)
        traj = _batch_rollout(model, params, s, k, False, "trajectory", False)
        out.append(jax.tree_util.tree_map(lambda x: x[:, 1:], traj))
        s = jax.tree_util.tree_map(lambda x: x[:, -1], traj)
        done += k
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
    pn0 = F.reference_normal_impulse(model, params, s0, v1)
    xe = F.extra_features(body, ground, s0, v1, patch, pn0, model.dt)
    return dict(x=x, kind=patch.kind, label=lab, wrench=w, impulse=p, centre=patch.centre,
                touching=patch.touching, pn0=pn0, x_extra=xe)


def extract(model, params, traj) -> dict:
    """Contact instances of trajectories (B, T+1, …) → dict of flat numpy arrays."""
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


def generate(shape: str, n_throws: int, seed: int, anisotropic: bool = False, steps: int = 800):
    """Simulate ``n_throws`` random throws and return (data dict, trajectories)."""
    if n_throws < 1 or steps < 1:
        raise ValueError("--throws and steps must be >= 1")
    model, params = ground_truth_setup(shape, anisotropic)
    s0 = throws(shape, n_throws, seed)
    traj = simulate(model, params, s0, steps)
    data = extract(model, params, traj)
    mu = np.asarray(params.law.mu)
    data.update(
        format=np.array(FORMAT), shape=np.array(shape), anisotropic=np.array(anisotropic),
        mu=mu, dt=np.array(model.dt), steps=np.array(steps), seed=np.array(seed),
        n_throws=np.array(n_throws), dim=np.array(params.body.dim),
        static_speed=np.array(F.STATIC_SPEED), detach_impulse=np.array(F.DETACH_IMPULSE),
    )
    return data, traj


REQUIRED = ("format", "shape", "dim", "x", "kind", "label", "wrench", "throw", "mu", "anisotropic", "n_throws")


def save(path, data: dict) -> None:
    np.savez_compressed(path, **data)


def load(path) -> dict:
    """Load a dataset written by ``save``; clear errors for anything malformed."""
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise FileNotFoundError(f"dacm data file not found: {path}") from None
    except Exception as e:  # zip / pickle errors
        raise ValueError(f"{path}: not a dacm data file ({type(e).__name__}: {e})") from None
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: not a dacm data file, missing arrays {missing}")
    if str(data["format"]) != FORMAT:
        raise ValueError(f"{path}: unsupported format {data['format']!s}, expected {FORMAT}")
    dim = int(data["dim"])
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
    return data


def summary(data: dict) -> dict:
    out = {"instances": int(len(data["x"])), "throws": int(data["n_throws"]),
           "missed_impulses_without_patch": int(data.get("missed", 0))}
    for k in F.patch_types(int(data["dim"])):
        m = data["kind"] == k
        out[F.PATCH_NAMES[k]] = {F.MODE_NAMES[c]: int(np.sum(m & (data["label"] == c))) for c in range(3)}
    return out
