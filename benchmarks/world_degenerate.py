"""Which steps would a "degenerate contact" flag mark, by criterion and threshold (issue 60 part 4).

    python -m benchmarks world_degenerate            # prints the table (float64, about 10 min on 2 shared cores)
    python -m benchmarks world_degenerate --save FILE.pkl   # the same, the collection kept (--load FILE.pkl: the table again)

Rolls out the cases of ``benchmarks.world_gradients`` (pushes, the two 3-box trains, the drop, the
slide) and two shots of the worlds notebook's billiards at the default law, recording every coupled
solve's impulses z, velocities after the impulse w, free velocities and friction (a debug callback on
``solvers.degenerate``'s inputs), and the trains' trajectories at friction ± eps·friction. Then, for a
grid of (impulse, velocity) thresholds relative to the problem's largest normal impulse and velocity:

* N: a contact with normal impulse and gap velocity ~0 while its manifold (the same two bodies) carries load;
* F: a loaded contact's friction row at its bound |z_t| = μ z_n with slip ~0;
* S: a manifold whose every loaded contact is at its bound along a tangent row with slip ~0;
* T: a manifold whose net friction over its loaded contacts is at its bound along a tangent row,
  every slip ~0 (what ``solvers.degenerate`` flags, ``Flags.DEGENERATE``, at (1e-2, 3e-5)); under the
  disc (the default cone) the norm of the net tangent pair against Σ μ z_n;
* D (the disc): a manifold whose loaded contacts (above 1e-2 of the largest normal impulse, as the
  flag) all stick (slip ~0) while one of them carries friction within dz of its own disc, |z_t| ≥ (1 − dz) μ z_n, and whose net friction is at least half its
  bound, |Σ z_t| ≥ ½ Σ μ z_n (not a split cancelling inside the face); ``solvers.degenerate`` under
  the disc at (1e-1, 3e-5), with T; ``--net F`` another fraction than ½;

and the steps where the trains' trajectories at ± eps part (their difference over 2 eps grows more
than 3× in one step: the events that make their central differences jump).
"""
import sys


def collect():
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from jaxcontact.solvers import entry
    import jaxcontact as jc
    from jaxcontact import worlds
    from jaxcontact.worlds import scenes
    import warnings; warnings.simplefilter("ignore")
    store = []
    orig = entry.degenerate
    def deg(problem, z, mu, target=None, cone="box", **kw):
        target = problem.target if target is None else target
        N = problem.v_free.shape[0]
        idx = entry.ground_index(problem.bodies, N)
        p = jnp.einsum("csdk,cd->csk", problem.rows, z)
        pb = jnp.zeros((N + 1, 6), z.dtype).at[idx.reshape(-1)].add(p.reshape(-1, 6))[:N]
        v = problem.v_free + jnp.einsum("nij,nj->ni", problem.mobility, pb)
        vg = jnp.concatenate([v, jnp.zeros((1, 6), z.dtype)]); vf = jnp.concatenate([problem.v_free, jnp.zeros((1, 6), z.dtype)])
        w = jnp.einsum("csdk,csk->cd", problem.rows, vg[idx]).at[:, 0].add(-target)
        free = jnp.einsum("csdk,csk->cd", problem.rows, vf[idx]).at[:, 0].add(-target)
        out = orig(problem, z, mu, target, cone, **kw)
        jax.debug.callback(lambda *a: store.append([np.asarray(x) for x in a]), z, w, free, problem.valid, problem.bodies,
                           jnp.broadcast_to(mu, z[:, 1:].shape), ordered=True)
        return out
    entry.degenerate = deg
    model = worlds.model(dt=0.002)
    def run(scene, p, s, n, mdl=None):
        store.clear()
        traj, info = worlds.rollout(mdl or model, scene, p, s, n)
        jax.effects_barrier()
        return np.asarray(traj.pos), [list(x) for x in store]
    res = {}
    scene, params, s0 = scenes.cradle(2, gap=0.005, speed=1.0, restitution=0.0)
    for v, mu in ((1.5, 0.3), (1.0, 0.5)):
        res[f"push {v} {mu}"] = run(scene, params.replace(law=jc.CoulombLCP.init_params(mu=mu)), s0.replace(vel=s0.vel.at[0, 0].set(v)), 300)
        print("done push", flush=True)
    scene3, params3, s3 = scenes.cradle(3, gap=0.005, speed=1.5, restitution=0.0)
    params3 = params3.replace(law=jc.CoulombLCP.init_params(mu=0.3))
    for fr in ((0.4, 0.5, 0.3), (0.5, 0.4, 0.3)):
        f = lambda x: params3.replace(body=params3.body.replace(friction=jnp.array(x)))
        res[f"train {fr}"] = run(scene3, f(fr), s3, 300)
        for k in range(3):
            for e in (1e-4, 1e-5):
                for sg in (1, -1):
                    x = np.array(fr); x[k] += sg * e * x[k]
                    store.clear()
                    traj, _ = worlds.rollout(model, scene3, f(x), s3, 300)
                    res[f"train {fr} k{k} e{e} s{sg}"] = (np.asarray(traj.pos), None)
        print("done train", flush=True)
    scene2, params2, s2 = scenes.stack(2, mu=0.5)
    tilt = 0.2
    q = jnp.array([[1.0, 0.0, 0.0, 0.0], [np.cos(tilt / 2), 0.0, np.sin(tilt / 2), 0.0]])
    lifted = s2.replace(pos=s2.pos.at[1, 2].add(0.02 + 0.05 * np.sin(tilt)), quat=q)
    res["drop"] = run(scene2, params2.replace(law=jc.CoulombLCP.init_params(mu=0.5)), lifted.replace(vel=lifted.vel.at[1, 0].set(0.3)), 200)
    res["slide"] = run(scene2, params2.replace(law=jc.CoulombLCP.init_params(mu=0.3)), s2.replace(vel=s2.vel.at[1, 0].set(0.6)), 150)
    from jaxcontact.worlds import billiards
    m, sc, pb, sb = billiards.world()
    res["billiards (2, 0)"] = run(sc, pb, billiards.launched(sb, jnp.array([2.0, 0.0])), 500, m)
    res["billiards (2.24, 0.1)"] = run(sc, pb, billiards.launched(sb, jnp.array([2.24, 0.1])), 500, m)
    return res


def steps_flagged(data, dz, dv, mode, cone="box", net_frac=0.5):
    out = []
    for k, (z, w, free, valid, bodies, mu) in enumerate(data):
        V = np.abs(free[valid]).max() if valid.any() else 0.0
        zn = np.where(valid, z[:, 0], 0.0); L = zn.max()
        key = bodies[:, 0] * 1000 + bodies[:, 1]
        run = np.concatenate([[0], np.cumsum(key[1:] != key[:-1])])
        M = np.array([zn[run == r].max() for r in run])
        flag = False
        if L > 0 and V > 0:
            if "N" in mode:
                nd = valid & (z[:, 0] <= dz * M) & (np.abs(w[:, 0]) < dv * V) & (M > dz * L)
                flag |= nd.any()
            loaded = valid & (z[:, 0] > dz * L)
            atb = loaded[:, None] & (mu > 0) & (np.abs(np.abs(z[:, 1:]) - mu * z[:, :1]) <= dz * mu * z[:, :1])
            slip0 = np.abs(w[:, 1:]) < dv * V
            if "F" in mode:
                flag |= (atb & slip0).any()
            if "T" in mode and cone == "box":  # the manifold's net friction along a direction at its bound, every slip ~0
                for r in np.unique(run[loaded]):
                    sel = (run == r) & loaded
                    for j in range(mu.shape[1]):
                        net = abs(z[sel, 1 + j].sum()); cap = (mu[sel, j] * z[sel, 0]).sum()
                        if cap > 0 and net >= (1 - dz) * cap and slip0[sel, j].all():
                            flag = True
            if ("T" in mode and cone != "box") or "D" in mode:  # the disc: norms of the tangent pairs
                still = np.linalg.norm(w[:, 1:], axis=1) < dv * V
                held = valid & (z[:, 0] > 1e-2 * L) if "D" in mode else loaded  # D: dz is the margin, loaded at 1e-2
                for r in np.unique(run[held]):
                    sel = (run == r) & held
                    if not still[sel].all():
                        continue
                    cap = mu[sel, 0] * z[sel, 0]
                    if "T" in mode and np.linalg.norm(z[sel, 1:].sum(0)) >= (1 - dz) * cap.sum() > 0:
                        flag = True
                    if ("D" in mode and np.linalg.norm(z[sel, 1:].sum(0)) >= net_frac * cap.sum()
                            and np.any((cap > 0) & (np.linalg.norm(z[sel, 1:], axis=1) >= (1 - dz) * cap))):
                        flag = True
            if "S" in mode:  # a manifold's friction saturated along a direction: every loaded row at bound, slip ~0
                for r in np.unique(run[loaded]):
                    sel = (run == r) & loaded
                    for j in range(mu.shape[1]):
                        if atb[sel, j].all() and slip0[sel, j].all() and np.abs(z[sel, 1 + j]).max() > 0:
                            flag = True
        if flag:
            out.append(k)
    return out
def events(res, name, k, e):
    p, m = res[f"{name} k{k} e{e} s1"][0], res[f"{name} k{k} e{e} s-1"][0]
    d = np.abs(p - m).max(axis=(1, 2))
    return d

import numpy as np


def arguments(ap):
    ap.add_argument("--save", metavar="FILE.pkl", help="keep the collection (pickle)")
    ap.add_argument("--load", metavar="FILE.pkl", help="the table again from a kept collection")
    ap.add_argument("--net", type=float, default=0.5, help="D: the net friction's fraction of its bound")


def run(args, out):
    """``python -m benchmarks world_degenerate``: prints the table (no results file)."""
    import pickle
    if args.load:
        with open(args.load, "rb") as fh:
            res = pickle.load(fh)
    else:
        res = collect()
        if args.save:
            with open(args.save, "wb") as fh:
                pickle.dump(res, fh)
    from jaxcontact.worlds import DEFAULT_LAW
    cone = DEFAULT_LAW.solver.cone
    net = args.net
    print("cone", cone)
    grid = [(1e-3, 1e-3), (1e-2, 1e-3), (1e-2, 3e-4), (1e-2, 1e-4), (1e-2, 3e-5), (1e-2, 1e-2), (1e-4, 1e-4)]
    modes = ["N", "F", "S", "T"] + (["D"] if cone != "box" else [])
    for mode in modes:
        print("== mode", mode)
        for dz, dv in grid + ([(2e-2, 3e-5), (5e-2, 3e-5), (5e-2, 1e-4), (1e-1, 3e-5), (1e-1, 1e-4), (2e-1, 3e-5)] if mode == "D" else []):
            line = []
            for name, (pos, data) in res.items():
                if data is None: continue
                f = steps_flagged(data, dz, dv, mode, cone, net)
                line.append(f"{name}: {len(f)} {f[:8]}")
            print(f"dz {dz:g} dv {dv:g} | " + " | ".join(line))
    if True:
        for name in ("train (0.4, 0.5, 0.3)", "train (0.5, 0.4, 0.3)"):
            for k in range(3):
                for e in (1e-4, 1e-5):
                    d = events(res, name, k, e) / (2 * e)
                    jumps = [i for i in range(1, len(d)) if d[i] > 3 * d[i - 1] + 1e-9 and d[i] > 1e-3]
                    print(name, k, e, "d at 50,100,200,300:", np.round(d[[50, 100, 200, 300]], 4), "jumps at", jumps[:12])


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
