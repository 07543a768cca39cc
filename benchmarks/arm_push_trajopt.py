"""A trajectory optimisation through contact (issue 63, item 6): Adam on the per-step torques of a
two-link arm so that it pushes a box across the floor to a target.

    python -m benchmarks arm_push_trajopt                                  # 10 starts x 200 Adam steps
    python -m benchmarks arm_push_trajopt --starts 1 --iters 20 --name arm_push_trajopt_quick

The world: ``jaxcontact/data/scenes/arm_trajopt.xml`` (two links on torque motors about vertical
axes, their bottoms 3 cm above the floor, joint damping 0.2 and 0.1 N m s; a 6 cm box of 0.2 kg,
μ 0.5, starting at (0.45, 0.15) m; h = 10 ms), loaded by ``worlds.from_mjcf`` at the defaults
(float64), ``--horizon`` steps (default 60: 0.6 s). The decision variables are the controls
u (horizon, 2) N m, one per motor per step, given to ``worlds.rollout(..., controls=u)``; start s
draws u from N(0, 0.3²) with ``jax.random.PRNGKey(s)``, s = 0 … starts − 1. The loss:

    |box_xy(T) − target|²  +  w_reach · max(0, softmin_{t ≥ 1} |lower link_xy(t) − box_xy(t)| − 0.08 m)²  +  w_u · mean(u²)

the first term the task (target (0.35, 0.30) m: a push of 18 cm along the arm's sweep), the second
a shaping term that is zero once the lower link's centre came within 8 cm of the box (it draws an
arm that starts away from the box to it: without contact the box's position has no gradient), the
third a small effort term. The reach is a soft minimum over the steps t = 1 … T (−τ log((1/T) Σ_t
exp(−d_t/τ)), τ = 5 mm: between min_t d_t and it + τ log T), never the initial state: the first run's
hard minimum over t ≥ 0 sat at t = 0 once the arm had swung away (its seed 7), where no control moves
it, so its gradient was zero and that start stayed where it was for 110 Adam steps. All starts are one ``jax.vmap`` of ``jax.value_and_grad`` of the loss
under one ``jax.jit``; ``optax.adam(--lr)``, ``--iters`` steps. Reported per start: the box's final
distance to the target (m) at the last iterate and at the best iterate, the loss at the start and
the end, success = final distance within 1 cm, and each start's whole loss curve (JSON).
Writes ``benchmarks/results/<name>.{json,md}``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .common import SCENES_DIR, fmt, machine_info, md_machine, md_table

SCENE = SCENES_DIR / "arm_trajopt.xml"
TARGET = (0.35, 0.30)
REACH = 0.08
W_REACH, W_EFFORT = 1.0, 1e-5
TAU = 0.005  # m, the soft minimum's width


def problem(horizon: int):
    """(loss(u) -> (loss, box final distance), the world) of the arm pushing the box."""
    import jax
    import jax.numpy as jnp

    from jaxcontact import worlds

    scene, params, state, model = worlds.from_mjcf(str(SCENE))
    target = jnp.asarray(TARGET)

    def loss(u):
        traj, _ = worlds.rollout(model, scene, params, state, horizon, u)
        box = traj.pos[:, 2, :2]
        dist = jnp.linalg.norm(box[-1] - target)
        near = jnp.linalg.norm(traj.pos[1:, 1, :2] - box[1:], axis=-1)  # t = 1 … T (index 0: the start)
        # a soft minimum (log-mean-exp: between the least distance and it + τ log T), every step pulled
        reach = -TAU * (jax.scipy.special.logsumexp(-near / TAU) - jnp.log(near.shape[0]))
        value = dist ** 2 + W_REACH * jnp.maximum(reach - REACH, 0.0) ** 2 + W_EFFORT * jnp.mean(u ** 2)
        return value, dist

    return loss, (scene, params, state, model)


def optimise(starts, iters: int, horizon: int, lr: float, sigma: float = 0.3, log_every: int = 10, report=None):
    """Adam from each seed in ``starts`` at once: dict of the per-start histories (numpy);
    ``report(history, done)`` at each logged iteration (the results written so far)."""
    import jax
    import jax.numpy as jnp
    import optax

    loss, _ = problem(horizon)
    grad = jax.jit(jax.vmap(jax.value_and_grad(loss, has_aux=True)))
    u = jnp.stack([sigma * jax.random.normal(jax.random.PRNGKey(s), (horizon, 2)) for s in starts])
    opt = optax.adam(lr)
    state = opt.init(u)

    @jax.jit
    def update(u, state, g):
        upd, state = opt.update(g, state, u)
        return optax.apply_updates(u, upd), state

    losses, dists, gnorm = [], [], []
    c0 = time.process_time()
    t0 = time.perf_counter()
    t = time.perf_counter()
    (value, dist), g = grad(u)
    compile_s = time.perf_counter() - t
    for i in range(iters + 1):
        if i:
            (value, dist), g = grad(u)
        losses.append(np.asarray(value))
        dists.append(np.asarray(dist))
        gnorm.append(np.asarray(jnp.sqrt(jnp.sum(g ** 2, axis=(1, 2)))))
        if i % log_every == 0 or i == iters:
            print(f"iter {i}: loss {np.round(losses[-1], 6).tolist()} dist {np.round(dists[-1], 4).tolist()} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            if report is not None:
                report({"loss": np.stack(losses), "dist": np.stack(dists), "grad_norm": np.stack(gnorm),
                        "compile_s": compile_s, "wall_s": time.perf_counter() - t0,
                        "cpu_s": time.process_time() - c0}, i)
        if i < iters:
            u, state = update(u, state, g)
    return {"loss": np.stack(losses), "dist": np.stack(dists), "grad_norm": np.stack(gnorm),
            "compile_s": compile_s, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
            "controls": np.asarray(u)}


def arguments(ap):
    ap.add_argument("--starts", type=int, default=10, help="random starts, seeds 0 … starts − 1")
    ap.add_argument("--iters", type=int, default=200, help="Adam steps")
    ap.add_argument("--horizon", type=int, default=60, help="simulation steps of 10 ms")
    ap.add_argument("--lr", type=float, default=0.05, help="Adam's learning rate (N m)")


def run(args, out):
    """``python -m benchmarks arm_push_trajopt``: the run's results into ``out`` as it goes."""
    if args.starts < 1 or args.iters < 1 or args.horizon < 1:
        raise SystemExit("--starts, --iters and --horizon must be >= 1")
    import jax

    jax.config.update("jax_enable_x64", True)
    seeds = list(range(args.starts))
    optimise(seeds, args.iters, args.horizon, args.lr, report=lambda h, done: write(args, out, seeds, h, done))


def write(args, out, seeds, h, done: int):
    """The results after ``done`` Adam steps of ``args.iters`` (written at each logged step, so that a run
    stopped part-way leaves what it reached)."""
    final = h["dist"][-1]
    best = h["dist"].min(axis=0)
    res = {"machine": machine_info("benchmarks.arm_push_trajopt", command=args.command), "scene": "jaxcontact/data/scenes/arm_trajopt.xml",
           "target_m": TARGET, "horizon": args.horizon, "iters": args.iters, "iters_done": done, "lr": args.lr,
           "seeds": seeds,
           "weights": {"reach": W_REACH, "reach_m": REACH, "effort": W_EFFORT},
           "compile_s": h["compile_s"], "wall_s": h["wall_s"], "cpu_s": h["cpu_s"],
           "starts": [{"seed": s, "final_distance_m": float(final[i]), "best_distance_m": float(best[i]),
                       "success_1cm": bool(final[i] <= 0.01), "loss_start": float(h["loss"][0, i]),
                       "loss_end": float(h["loss"][-1, i]), "loss_curve": h["loss"][:, i].tolist(),
                       "distance_curve": h["dist"][:, i].tolist(),
                       "grad_norm_finite": bool(np.all(np.isfinite(h["grad_norm"][:, i])))}
                      for i, s in enumerate(seeds)]}
    res["successes"] = int(sum(r["success_1cm"] for r in res["starts"]))
    rows = [[r["seed"], fmt(r["distance_curve"][0]), fmt(r["final_distance_m"]), fmt(r["best_distance_m"]),
             fmt(r["loss_start"]), fmt(r["loss_end"]), "yes" if r["success_1cm"] else "no"] for r in res["starts"]]
    md = ["# Trajectory optimisation: an arm pushing a box to a target", "", md_machine(res["machine"]), "",
          (f"**Stopped part-way: {done} of {args.iters} Adam steps done** (the results are written as the run goes). "
           if done < args.iters else "") +
          f"Adam ({args.iters} steps, lr {args.lr}) on the per-step torques of `arm_trajopt.xml`, "
          f"{args.horizon} steps of 10 ms, target {TARGET} m, seeds {seeds[0]}…{seeds[-1]} (module docstring). "
          f"**{res['successes']} of {len(seeds)} starts within 1 cm after {done} steps.** One vmapped value-and-gradient "
          f"of all starts: compile {h['compile_s']:.0f} s, the whole run {h['wall_s']:.0f} s wall, "
          f"{h['cpu_s']:.0f} CPU s (user + sys of the process).", "",
          md_table(["seed", "distance at start (m)", "final distance (m)", "best distance (m)", "loss at start",
                    "loss at end", "within 1 cm"], rows)]
    out.write(res, "\n".join(md))
    print(f"wrote {out.json}, {out.md} ({done} steps)")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
