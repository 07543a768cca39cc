"""Probes of why jaxcontact's settled 16-box heaps stand taller than MuJoCo C's on the same seeds
(docs/worlds.md, "The heap's settled height").

    python -m benchmarks heap_probe --only creep      # MuJoCo C's heap after 2, 5 and 10 s
    python -m benchmarks heap_probe --only softness   # jaxcontact's heap with Scene.softness = 0
    python -m benchmarks heap_probe --only speculative  # jaxcontact's heap, no friction where φ > 0
    python -m benchmarks heap_probe --only mjhard     # MuJoCo C's heap as its contact gets harder
    python -m benchmarks heap_probe --only swap       # each engine continued from the other's heaps
    python -m benchmarks heap_probe --only reach      # jaxcontact's heap with speculative contacts only within a fixed margin
    python -m benchmarks heap_probe --only manifold   # can each engine's contacts hold jaxcontact's settled heaps?

``creep``: does MuJoCo's soft friction let its heap keep sinking (so that its 2 s height is a
transient)? ``softness``: does the relative diagonal on resting rows hold boxes up?
``speculative``: does friction at speculative contacts (a pair within reach, φ > 0, whose normal
acts because its gap closes this step) hold them up? This part patches
``worlds.pipeline.contact_friction`` in this process to give μ = 0 where φ > 0 (a probe, not a
setting of the library). ``mjhard``: does MuJoCo's heap rise towards jaxcontact's as its contact
approaches a hard one (a shorter solref time constant, down to 2 steps; ``impratio`` 10 for stiffer
elliptic friction; noslip iterations that remove its frictional slip)? ``swap``: is the gap in how
the heaps stand or in how they land? Each engine's settled heaps (2 s) are continued for 1 s by
the other engine: a taller heap that the other engine also holds is a state both call static, so
the difference arose in the landing. ``reach``: do speculative contacts catch boxes that would
have passed each other ("ghost" collisions: the closest features now are not the ones that meet)?
``worlds.contacts.reach`` is patched in this process to give half the scene's margin only, not the
distance a body can move this step, for margins of 2 mm and 0.2 mm. ``manifold``: at each of
jaxcontact's settled heaps (2 s, at rest), the contacts each engine's collision reports (touching:
φ ≤ 0.1 mm), and the smallest μ for which a static solution exists with those contacts: contact
forces in the pyramidal cone carrying every box's weight with no net force or torque (a linear
program, scipy's HiGHS, bisected on μ to 1e-4). With μ = 0.5 in the scene, a heap whose smallest μ
is above 0.5 (or none) cannot stand on that engine's contacts. Seeds 0–8 of
``benchmarks.worlds.heap_states`` (float64 initial states, as ``--only heapcheck``). Writes
``results/heap_probe.json`` and ``.md``, one section per part, each with its command.
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np


SEEDS = 9


def creep():
    from .common import heap_states, mujoco_heap

    _, _, states = heap_states(list(range(16)))
    rows = []
    for steps in (1000, 2500, 5000):
        for cone in ("pyramidal", "elliptic"):
            r = mujoco_heap(states, steps, cone)
            h = 1e3 * np.asarray(r["com_height_m"])
            rows.append({"steps": steps, "seconds": steps * 0.002, "cone": cone, "com_mm_mean": float(h.mean()),
                         "com_mm_sd": float(h.std(ddof=1)), "per_seed_mm": [float(x) for x in h[:SEEDS]]})
            print(rows[-1], flush=True)
    return {"rows": rows}


def softness():
    import jax

    from jaxcontact import worlds
    from jaxcontact.worlds import scenes

    from .common import heap_states

    scene, params, states = heap_states(list(range(SEEDS)))
    model = scenes.model()
    out = {}
    for soft in (scene.softness, 0.0):
        t = time.perf_counter()
        final, _ = worlds.batch_rollout(model, dataclasses.replace(scene, softness=soft), params, states, 1000,
                                        output="final")
        z = 1e3 * np.asarray(jax.device_get(final.pos[..., 2]))
        out[f"softness_{soft:g}"] = {"com_mm_mean": float(z.mean()), "per_seed_mm": [float(x) for x in z.mean(1)],
                                     "on_ground": [int(x) for x in (z < 100).sum(1)], "wall_s": time.perf_counter() - t}
        print(soft, out[f"softness_{soft:g}"], flush=True)
    return out


def speculative():
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import materials, pipeline, scenes

    from .common import heap_states

    def no_speculative_friction(params, con, dtype):
        return jnp.where((con.phi > 0)[:, None], 0.0, materials.contact_friction(params, con, dtype))

    scene, params, states = heap_states(list(range(SEEDS)))
    pipeline.contact_friction = no_speculative_friction
    try:
        t = time.perf_counter()
        final, _ = worlds.batch_rollout(scenes.model(), scene, params, states, 1000, output="final")
    finally:
        pipeline.contact_friction = materials.contact_friction
    z = 1e3 * np.asarray(final.pos[..., 2])
    out = {"no_speculative_friction": {"com_mm_mean": float(z.mean()), "per_seed_mm": [float(x) for x in z.mean(1)],
                                       "on_ground": [int(x) for x in (z < 100).sum(1)], "wall_s": time.perf_counter() - t}}
    print(out, flush=True)
    return out


MJHARD = [  # (label, cone, solref, option)
    ("default (solref 0.02 1)", "pyramidal", None, ""),
    ("solref 0.01 1", "pyramidal", (0.01, 1.0), ""),
    ("solref 0.004 1 (2 steps, the stiffest MuJoCo allows)", "pyramidal", (0.004, 1.0), ""),
    ("solref 0.004 1, noslip 10", "pyramidal", (0.004, 1.0), 'noslip_iterations="10"'),
    ("default (solref 0.02 1)", "elliptic", None, ""),
    ("impratio 10", "elliptic", None, 'impratio="10"'),
    ("solref 0.004 1, impratio 10", "elliptic", (0.004, 1.0), 'impratio="10"'),
    ("solref 0.004 1, impratio 10, noslip 10", "elliptic", (0.004, 1.0), 'impratio="10" noslip_iterations="10"'),
]


def mjhard():
    from .common import heap_states, mujoco_heap

    _, _, states = heap_states(list(range(16)))
    rows = []
    for label, cone, solref, option in MJHARD:
        r = mujoco_heap(states, 1000, cone, solref=solref, option=option)
        h = 1e3 * np.asarray(r["com_height_m"])
        rows.append({"setting": label, "cone": cone, "com_mm_mean": float(h.mean()), "com_mm_sd": float(h.std(ddof=1)),
                     "per_seed_mm": [float(x) for x in h[:SEEDS]], "on_ground": [int(x) for x in r["on_ground"][:SEEDS]],
                     "seeds_0_8_mm_mean": float(h[:SEEDS].mean())})
        print(rows[-1], flush=True)
    return {"rows": rows}


def reach_probe():
    import jax.numpy as jnp

    from jaxcontact import worlds
    from jaxcontact.worlds import contacts

    from .common import heap_states

    scene, params, states = heap_states(list(range(SEEDS)))
    original = contacts.reach

    def margin_only(model, scene, params, state):
        return jnp.full(state.pos.shape[:-1], 0.5 * scene.margin, state.pos.dtype)

    out = {}
    contacts.reach = margin_only
    try:
        for margin in (0.002, 0.0002):
            t = time.perf_counter()
            final, infos = worlds.batch_rollout(worlds.model(), dataclasses.replace(scene, margin=margin), params,
                                                states, 1000, output="final")
            z = 1e3 * np.asarray(final.pos[..., 2])
            out[f"margin_{margin:g}"] = {"com_mm_mean": float(z.mean()), "per_seed_mm": [float(x) for x in z.mean(1)],
                                         "on_ground": [int(x) for x in (z < 100).sum(1)], "wall_s": time.perf_counter() - t}
            print(margin, out[f"margin_{margin:g}"], flush=True)
    finally:
        contacts.reach = original
    return out


def _static_mu(J, num_bodies: int, weight: float, mu_max: float = 5.0, tol: float = 1e-4):
    """The smallest μ (pyramidal cone) for which contact forces balance every body's weight with
    the contacts ``J``: a list of (contact, body, (3, 6) rows: normal, two tangents, on the body's
    [linear (world), angular (body)] velocity). None when there is none up to ``mu_max``."""
    from scipy.optimize import linprog

    C = 1 + max(c for c, _, _ in J)
    A = np.zeros((6 * num_bodies, 3 * C))
    for c, b, R in J:
        A[6 * b:6 * b + 6, 3 * c:3 * c + 3] += R.T
    rhs = np.zeros(6 * num_bodies)
    rhs[2::6] = weight
    bounds = [(0, None) if i % 3 == 0 else (None, None) for i in range(3 * C)]

    def feasible(mu):
        rows = []
        for c in range(C):
            for k in (1, 2):
                for sign in (1.0, -1.0):
                    r = np.zeros(3 * C)
                    r[3 * c + k], r[3 * c] = sign, -mu
                    rows.append(r)
        res = linprog(np.zeros(3 * C), A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=A, b_eq=rhs, bounds=bounds,
                      method="highs")
        return res.status == 0

    if not feasible(mu_max):
        return None
    lo, hi = 0.0, mu_max
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    return hi


def _jaxcontact_contacts(model, scene, params, state, touching: float):
    import jax

    from jaxcontact import worlds

    con = jax.device_get(worlds.collide(model, scene, params, state))
    sel = np.where(np.asarray(con.valid) & (np.asarray(con.phi) <= touching))[0]
    J, pairs = [], {}
    for k, c in enumerate(sel):
        key = tuple(sorted(int(b) for b in con.bodies[c]))
        pairs[key] = pairs.get(key, 0) + 1
        J += [(k, int(con.bodies[c, side]), np.asarray(con.rows[c, side])) for side in range(2) if con.bodies[c, side] >= 0]
    return J, pairs


def _mujoco_contacts(qpos, num_bodies: int, touching: float):
    """MuJoCo C's contacts (the heap's model) at ``qpos`` (7n,), as rows on each box's velocity."""
    import mujoco

    from .common import HEAP_MU as MU, mujoco_boxes_xml

    m = mujoco.MjModel.from_xml_string(mujoco_boxes_xml(num_bodies, MU, "pyramidal"))
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    J, pairs, k = [], {}, 0
    for i in range(d.ncon):
        con = d.contact[i]
        if con.dist > touching:
            continue
        frame = con.frame.reshape(3, 3)  # normal (from geom1 to geom2), two tangents
        bodies = [int(m.geom_bodyid[con.geom1]) - 1, int(m.geom_bodyid[con.geom2]) - 1]
        key = tuple(sorted(bodies))
        pairs[key] = pairs.get(key, 0) + 1
        for b, sign in zip(bodies, (-1.0, 1.0)):
            if b < 0:
                continue
            R = d.xmat[b + 1].reshape(3, 3)
            arm = con.pos - d.xpos[b + 1]
            rows = np.zeros((3, 6))
            rows[:, :3] = sign * frame
            rows[:, 3:] = (R.T @ np.cross(arm, sign * frame).T).T
            J.append((k, b, rows))
        k += 1
    return J, pairs


def manifold():
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    from .common import BOX_MASS as MASS, heap_states, to_mujoco

    scene, params, states = heap_states(list(range(SEEDS)))
    n = states.pos.shape[1]
    model = worlds.model()
    final, _ = worlds.batch_rollout(model, scene, params, states, 1000, output="final")
    final = jax.device_get(final)
    touching = 1e-4
    rows = []
    for w in range(SEEDS):
        s = jax.tree_util.tree_map(lambda x: jnp.asarray(x[w]), final)
        s = s.replace(vel=jnp.zeros_like(s.vel), omega=jnp.zeros_like(s.omega))
        Jj, pj = _jaxcontact_contacts(model, scene, params, s, touching)
        Jm, pm = _mujoco_contacts(to_mujoco(jax.tree_util.tree_map(lambda x: x[None], s))[0][0], n, touching)
        differ = {f"{a}-{b}": [pj.get((a, b), 0), pm.get((a, b), 0)] for a, b in sorted(set(pj) | set(pm))
                  if pj.get((a, b), 0) != pm.get((a, b), 0)}
        rows.append({"seed": w, "com_mm": float(1e3 * np.mean(final.pos[w, :, 2])),
                     "contacts": [len({c for c, _, _ in Jj}), len({c for c, _, _ in Jm})],
                     "static_mu_jaxcontact_contacts": _static_mu(Jj, n, MASS * 9.81),
                     "static_mu_mujoco_contacts": _static_mu(Jm, n, MASS * 9.81),
                     "pairs_differing_jaxcontact_mujoco": differ})
        print(rows[-1], flush=True)
    return {"touching_m": touching, "rows": rows}


def _mujoco_run(qpos, qvel, n: int, steps: int, option: str = ""):
    """MuJoCo C (pyramidal, the heap's settings) from (B, 7n) qpos and (B, 6n) qvel: final qpos, qvel."""
    from .common import mujoco_boxes_run

    return mujoco_boxes_run(qpos, qvel, n, steps, option=option)[:2]


def swap():
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    from .common import heap_states, to_mujoco

    scene, params, states = heap_states(list(range(SEEDS)))
    n = states.pos.shape[1]
    model = worlds.model()
    t = time.perf_counter()
    jx_final, _ = worlds.batch_rollout(model, scene, params, states, 1000, output="final")
    jx_final = jax.device_get(jx_final)
    qp, qv = to_mujoco(states)
    mj_qp, mj_qv = _mujoco_run(qp, qv, n, 1000)
    mj_state = dataclasses.replace(states, pos=jnp.asarray(mj_qp[..., :3]), quat=jnp.asarray(mj_qp[..., 3:]),
                                   vel=jnp.asarray(mj_qv[..., :3]), omega=jnp.asarray(mj_qv[..., 3:]))
    # each engine continues the other's settled heaps for 1 s (and its own, as the reference)
    jqp, jqv = to_mujoco(jx_final)
    mj_on_jx, _ = _mujoco_run(jqp, jqv, n, 500)
    # MuJoCo's friction is soft: a sustained tangential load slips at a rate set by its
    # regularisation; noslip iterations (a post-pass without it) make its friction hard
    mj_noslip_on_jx, _ = _mujoco_run(jqp, jqv, n, 500, option='noslip_iterations="20"')
    mj_on_mj, _ = _mujoco_run(mj_qp.reshape(len(mj_qp), -1), mj_qv.reshape(len(mj_qv), -1), n, 500)
    jx_on_mj, _ = worlds.batch_rollout(model, scene, params, mj_state, 500, output="final")
    jx_on_jx, _ = worlds.batch_rollout(model, scene, params, jax.tree_util.tree_map(jnp.asarray, jx_final), 500,
                                       output="final")

    def row(z):
        z = 1e3 * np.asarray(z)
        return {"com_mm_mean": float(z.mean()), "per_seed_mm": [float(x) for x in z.mean(1)],
                "on_ground": [int(x) for x in (z < 100).sum(1)]}

    out = {"jaxcontact_2s": row(jx_final.pos[..., 2]), "mujoco_2s": row(mj_qp[..., 2]),
           "mujoco_from_jaxcontact_3s": row(mj_on_jx[..., 2]),
           "mujoco_noslip_from_jaxcontact_3s": row(mj_noslip_on_jx[..., 2]), "jaxcontact_from_jaxcontact_3s": row(jx_on_jx.pos[..., 2]),
           "jaxcontact_from_mujoco_3s": row(jx_on_mj.pos[..., 2]), "mujoco_from_mujoco_3s": row(mj_on_mj[..., 2]),
           "wall_s": time.perf_counter() - t}
    for k, v in out.items():
        print(k, v, flush=True)
    return out


SWAP_ROWS = [("jaxcontact_2s", "jaxcontact, 0–2 s"), ("jaxcontact_from_jaxcontact_3s", "jaxcontact 0–2 s, then jaxcontact 1 s"),
             ("mujoco_from_jaxcontact_3s", "jaxcontact 0–2 s, then MuJoCo C 1 s"),
             ("mujoco_noslip_from_jaxcontact_3s", "jaxcontact 0–2 s, then MuJoCo C with noslip_iterations 20, 1 s"), ("mujoco_2s", "MuJoCo C, 0–2 s"),
             ("mujoco_from_mujoco_3s", "MuJoCo C 0–2 s, then MuJoCo C 1 s"),
             ("jaxcontact_from_mujoco_3s", "MuJoCo C 0–2 s, then jaxcontact 1 s")]


def _head(part, title: str, extra: str = ""):
    """A section's heading (its command and commit) and the blank line after it."""
    sep = " " if title.endswith("?") else ": "
    return [f"## {title}{sep}`{part['provenance']['command']}` (git {part['provenance']['commit'][:7]}{extra})", ""]


def _mm(values) -> str:
    return " ".join("%.1f" % x for x in values)


def _seed_row(label: str, v) -> str:
    """A row: label, mean height, per-seed heights, boxes on the ground."""
    return f"| {label} | {v['com_mm_mean']:.1f} | {_mm(v['per_seed_mm'])} | {' '.join(str(x) for x in v['on_ground'])} |"


def render(res) -> str:
    out = ["# Probes of the heap's height gap (docs/worlds.md)", ""]
    if "creep" in res:
        c = res["creep"]
        out += _head(c, "MuJoCo C's heap over time") + [
            "| seconds | cone | centre-of-mass height (mm), 16 seeds | seeds 0–8 (mm) |", "|---|---|---|---|"]
        out += [f"| {r['seconds']:g} | {r['cone']} | {r['com_mm_mean']:.1f} ± {r['com_mm_sd']:.1f} | "
                f"{_mm(r['per_seed_mm'])} |" for r in c["rows"]]
        out.append("")
    if "softness" in res:
        s = res["softness"]
        out += _head(s, "jaxcontact's heap against the softness") + [
            "| Scene.softness | centre-of-mass height (mm), seeds 0–8 | per seed (mm) | boxes on the ground |",
            "|---|---|---|---|"]
        out += [_seed_row(k.split("_", 1)[1], v) for k, v in s.items() if k.startswith("softness_")]
        out.append("")
    if "speculative" in res:
        s = res["speculative"]
        out += _head(s, "jaxcontact's heap without friction at speculative contacts") + [
            "| μ where φ > 0 | centre-of-mass height (mm), seeds 0–8 | per seed (mm) | boxes on the ground |",
            "|---|---|---|---|", _seed_row("0", s["no_speculative_friction"]), ""]
    if "mjhard" in res:
        c = res["mjhard"]
        out += _head(c, "MuJoCo C's heap as its contact gets harder", "; 2 s") + [
            "| cone | setting | height (mm), 16 seeds | seeds 0–8 mean (mm) | seeds 0–8 (mm) | boxes on the ground, seeds 0–8 |",
            "|---|---|---|---|---|---|"]
        out += [f"| {r['cone']} | {r['setting']} | {r['com_mm_mean']:.1f} ± {r['com_mm_sd']:.1f} | {r['seeds_0_8_mm_mean']:.1f} | "
                f"{_mm(r['per_seed_mm'])} | {' '.join(str(x) for x in r['on_ground'])} |" for r in c["rows"]]
        out.append("")
    if "swap" in res:
        c = res["swap"]
        out += _head(c, "Each engine continued from the other's settled heaps", "; float64, MuJoCo pyramidal") + [
            "| run | height (mm), seeds 0–8 | per seed (mm) | boxes on the ground |", "|---|---|---|---|"]
        out += [_seed_row(label, c[k]) for k, label in SWAP_ROWS]
        out.append("")
    if "reach" in res:
        c = res["reach"]
        out += _head(c, "jaxcontact's heap with speculative contacts only within a fixed margin", "; float64") + [
            "| contacts enter the problem within | height (mm), seeds 0–8 | per seed (mm) | boxes on the ground |",
            "|---|---|---|---|"]
        out += [_seed_row(f"{1e3 * float(k.split('_')[1]) / 2:g} mm (half the margin)", v)
                for k, v in c.items() if k.startswith("margin_")]
        out.append("")
    if "manifold" in res:
        c = res["manifold"]
        out += _head(c, "Can each engine's contacts hold jaxcontact's settled heaps?",
                     f"; float64; contacts with φ ≤ {1e3 * c['touching_m']:g} mm") + [
            "| seed | height (mm) | contacts: jaxcontact / MuJoCo C | smallest μ for a static solution, jaxcontact's contacts | the same, MuJoCo C's contacts | pairs whose contact counts differ (jaxcontact, MuJoCo) |",
            "|---|---|---|---|---|---|"]
        fmt = lambda x: "none up to 5" if x is None else f"{x:.3f}"
        out += [f"| {r['seed']} | {r['com_mm']:.1f} | {r['contacts'][0]} / {r['contacts'][1]} | "
                f"{fmt(r['static_mu_jaxcontact_contacts'])} | {fmt(r['static_mu_mujoco_contacts'])} | "
                f"{', '.join(f'{k}: {v[0]}, {v[1]}' for k, v in r['pairs_differing_jaxcontact_mujoco'].items()) or '—'} |"
                for r in c["rows"]]
        out.append("")
    return "\n".join(out)


def prepare(args, out):
    """Before the parts: float64 (the heaps' states are float64, as ``worlds --only heapcheck``)."""
    import jax

    jax.config.update("jax_enable_x64", True)


def _part(name: str, probe):
    """The runner's ``part_<name>(args, res)``: ``res[name]``, the probe's results with its commit and command."""
    def part(args, res):
        from experiments.provenance import stamp

        res[name] = {**probe(), "provenance": stamp()}
    return part


part_creep, part_softness, part_speculative = _part("creep", creep), _part("softness", softness), _part("speculative", speculative)
part_mjhard, part_swap, part_manifold = _part("mjhard", mjhard), _part("swap", swap), _part("manifold", manifold)
part_reach = _part("reach", reach_probe)


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
