"""Extra training data for the chain's distal link: throws of the **isolated** link that land
tip-first, low and swinging (``jaxcontact dacm chain-data``).

The paper trains the end-effector's contact model on data "collected with the disassembled
end-effector". Random throws (``dacm generate --shape link``: drop height 0.4–1.1 m, horizontal
speed ±2 m/s, angular speed ±5 rad/s per axis, uniform orientation) rarely produce what the
chain's tip does when it lands: the link tilted 0.1–0.4 rad, one end first, falling at ~2–3 m/s
while rotating at up to ~20 rad/s about its short horizontal axis. ``tip_throws`` samples
isolated-link initial states around such landings; nothing of the chain (no joint, no upstream
links, no chain trajectory) enters the data — the link flies, lands, bounces and slides alone,
simulated by the same ground truth as ``dacm generate`` (``CoulombLCP``, μ = 0.18).

Tip-throw preset (``TIP_RANGES``), in a frame turned by a uniform random yaw ψ about world z
(so the data have no preferred direction): tilt θ of the long axis about the frame's y
(either end down), lowest vertex ``clearance`` above the ground, velocity along / across the
long axis and vertical, angular velocity about the frame's y (``swing_rate``; other components
±``tumble_rate``), small roll.

``merge`` concatenates a random-throw file and a tip-throw file into one dacm data file whose
throw ids interleave the two sets proportionally, so dacm's first-2/3-of-the-throws training
split and the held-out validation throws contain both kinds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..rotations import quat_exp, quat_mul, quat_to_mat
from ..types import State
from . import data as D

TIP_RANGES = {
    "tilt": (-0.8, 0.8),          # rad, long axis below (+) / above (−) horizontal at its +x end
    "clearance": (0.002, 0.10),   # m, lowest vertex above the ground
    "speed_along": (-3.0, 3.0),   # m/s, along the long axis (horizontal part)
    "speed_across": (-0.5, 0.5),  # m/s, horizontal, across the long axis
    "speed_vertical": (-3.5, 0.0),  # m/s
    "swing_rate": (-20.0, 20.0),  # rad/s about the horizontal short axis
    "tumble_rate": (-2.0, 2.0),   # rad/s, the other two components
    "roll": (-0.15, 0.15),        # rad about the long axis
}


def tip_throws(key, n: int, body, ranges=None) -> State:
    """``n`` isolated-link initial states landing tip-first (``TIP_RANGES`` overridden by ``ranges``)."""
    r = dict(TIP_RANGES, **(ranges or {}))
    dtype = jnp.result_type(float)
    k = jax.random.split(key, 10)
    u = lambda kk, shape, lohi: jax.random.uniform(kk, shape, dtype, lohi[0], lohi[1])
    yaw = u(k[0], (n,), (-jnp.pi, jnp.pi))
    tilt = u(k[1], (n,), r["tilt"])
    roll = u(k[2], (n,), r["roll"])
    z = jnp.zeros(n, dtype)
    ez = lambda a: jnp.stack([z, z, a], -1)
    ey = lambda a: jnp.stack([z, a, z], -1)
    ex = lambda a: jnp.stack([a, z, z], -1)
    q_yaw = quat_exp(ez(yaw))
    quat = quat_mul(q_yaw, quat_mul(quat_exp(ey(tilt)), quat_exp(ex(roll))))
    R = quat_to_mat(quat)  # (n, 3, 3)
    verts = jnp.einsum("nij,kj->nki", R, body.vertices)  # world offsets of the vertices
    lowest = jnp.min(jnp.where(body.vertex_mask[None], verts[..., 2], jnp.inf), axis=1)
    height = u(k[3], (n,), r["clearance"]) - lowest
    Ryaw = quat_to_mat(q_yaw)
    v_frame = jnp.stack([u(k[4], (n,), r["speed_along"]), u(k[5], (n,), r["speed_across"]),
                         u(k[6], (n,), r["speed_vertical"])], -1)
    w_frame = jnp.stack([u(k[7], (n,), r["tumble_rate"]), u(k[8], (n,), r["swing_rate"]),
                         u(k[9], (n,), r["tumble_rate"])], -1)
    vel = jnp.einsum("nij,nj->ni", Ryaw, v_frame)
    omega_world = jnp.einsum("nij,nj->ni", Ryaw, w_frame)
    omega = jnp.einsum("nji,nj->ni", R, omega_world)  # body frame
    pos = jnp.stack([z, z, height], -1)
    return State(pos=pos, quat=quat, vel=vel, omega=omega)


def generate_tip(n_throws: int, seed: int, steps: int = 400, ranges=None):
    """Tip throws of the isolated ``link``, simulated and extracted like ``data.generate``."""
    if n_throws < 1 or steps < 1:
        raise ValueError("--tip-throws and --tip-steps must be >= 1")
    model, params = D.ground_truth_setup("link")
    s0 = tip_throws(jax.random.PRNGKey(seed), n_throws, params.body, ranges)
    traj = D.simulate(model, params, s0, steps)
    data = D.extract(model, params, traj)
    data.update(
        format=np.array(D.FORMAT), shape=np.array("link"), anisotropic=np.array(False),
        mu=np.asarray(params.law.mu), dt=np.array(model.dt), steps=np.array(steps), seed=np.array(seed),
        n_throws=np.array(n_throws), dim=np.array(3),
        static_speed=np.array(D.F.STATIC_SPEED), detach_impulse=np.array(D.F.DETACH_IMPULSE),
    )
    return data


def merge(a: dict, b: dict) -> dict:
    """One dacm data dict from two of the same shape / μ; throw ids interleaved proportionally."""
    for k in ("shape", "dim", "anisotropic"):
        if str(a[k]) != str(b[k]):
            raise ValueError(f"cannot merge data with different {k}: {a[k]} vs {b[k]}")
    if not np.allclose(a["mu"], b["mu"]):
        raise ValueError(f"cannot merge data with different mu: {a['mu']} vs {b['mu']}")
    na, nb = int(a["n_throws"]), int(b["n_throws"])
    key = np.concatenate([(np.arange(na) + 0.5) / na, (np.arange(nb) + 0.5) / nb])
    new_id = np.empty(na + nb, np.int64)
    new_id[np.argsort(key, kind="stable")] = np.arange(na + nb)
    n_inst = len(a["x"])
    per_instance = [k for k, v in a.items() if np.ndim(v) >= 1 and len(v) == n_inst and k in b and k != "mu"]
    out = {k: np.concatenate([a[k], b[k]]) for k in per_instance}
    out["throw"] = np.concatenate([new_id[a["throw"]], new_id[na + b["throw"]]])
    out["source"] = np.concatenate([np.zeros(len(a["x"]), np.int8), np.ones(len(b["x"]), np.int8)])
    for k, v in a.items():
        if k not in out:
            out[k] = v
    out["n_throws"] = np.array(na + nb)
    out["missed"] = np.array(int(a.get("missed", 0)) + int(b.get("missed", 0)))
    out["tip_throws"] = np.array(nb)
    out["tip_seed"] = np.array(b["seed"])
    out["tip_steps"] = np.array(b["steps"])
    return out


def run_chain_data(args) -> int:
    import json
    import time

    import jax

    from ..cliargs import check_memory, trajectory_bytes

    check_memory(trajectory_bytes(args.tip_throws, args.tip_steps, 13, 8 if jax.config.jax_enable_x64 else 4),
                 f"dacm chain-data --tip-throws {args.tip_throws} --tip-steps {args.tip_steps}",
                 "use fewer --tip-throws or --tip-steps")
    t0 = time.perf_counter()
    base = D.load(args.data)
    if str(base["shape"]) != "link":
        raise ValueError(f"{args.data}: shape {base['shape']!s}; chain-data adds tip throws of the 'link'")
    tip = generate_tip(args.tip_throws, args.seed, args.tip_steps)
    out = merge(base, tip)
    D.save(args.out, out)
    s = D.summary(out)
    s["tip_summary"] = D.summary(tip)
    s["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"wrote {args.out}")
    print(json.dumps(s, indent=1))
    return 0


def register_chain_data(dacm_subparsers) -> None:
    from ..cliargs import nonnegative_int, output_npz, positive_int, seed

    c = dacm_subparsers.add_parser(
        "chain-data", help="add isolated-link throws landing tip-first (chain-like contacts) to link data")
    c.add_argument("--data", required=True, help="random-throw data of the link (dacm generate --shape link)")
    c.add_argument("--tip-throws", type=positive_int, default=150, help="tip-first throws added (throws)")
    c.add_argument("--tip-steps", type=positive_int, default=400, help="steps per tip throw (steps of 2 ms)")
    c.add_argument("--seed", type=seed, default=0, help="seed of the tip throws (integer)")
    c.add_argument("--out", type=output_npz, required=True, help="output .npz ('.npz' appended if missing; required)")
    c.set_defaults(func=run_chain_data)
