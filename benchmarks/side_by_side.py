"""Three mixed scenes in jaxcontact, MuJoCo C and Bullet, side by side (issue 62 item 7).

    python -m benchmarks side_by_side                  # about 4 min on 2 cores
    python -m benchmarks side_by_side --only ramp --name side_by_side_ramp
    python -m benchmarks side_by_side --engines jaxcontact,jaxcontact_box,mujoco,mujoco_elliptic,bullet --name side_by_side_disc

Each scene is one description (``SCENES``: shapes, sizes, poses, masses, friction, start
velocities), written once as MJCF (``mjcf_text``). jaxcontact loads that text with
``worlds.from_mjcf`` (float64, the package's defaults: hard contact, the default cone, Coulomb's disc;
the engine ``jaxcontact_box`` the same with the square, ``LCPSettings(cone="box")``), MuJoCo C 4
compiles the same text (its defaults: soft contact, pyramidal cone, Newton solver, Euler; the
elliptic cone as a second column), and Bullet (pybullet, ``DIRECT``) is built from the same
description (``bullet_world``: a collision shape per geom, the masses and MuJoCo's compiled
inertias, ``lateralFriction`` (below), no rolling or spinning friction, restitution 0, no velocity
damping (pybullet's default 0.04 on both would slow a rolling ball by 10 % in 0.7 s), its default
solver: sequential impulses with split impulse, 50 iterations, ERP 0.2, at the same 2 ms step).
Friction: one μ per scene for every pair. MuJoCo combines a pair's friction by the maximum and
jaxcontact's loader does as MuJoCo, so every geom gets μ; Bullet multiplies the two, so every Bullet
object (the floor and the scenery too) gets √μ.

The scenes and what is compared (tolerances written before any run; PASS/FAIL per quantity):

- ``bin``: 16 bodies (4 boxes, 4 spheres, 4 capsules, 4 cylinders, 0.1 kg each, random
  orientations, seed 0) dropped in four layers into a 0.24 × 0.24 m bin of four fixed box walls on
  the floor, μ 0.5, 2 s. Per engine (invariants, must hold in each): every body inside the walls
  (its centre within the inner faces), none sunk (every centre at least its smallest half-extent
  less 1 mm above the floor), settled (every speed below 0.05 m/s at the end). Across engines (the
  arrangement is chaotic, so compared as a distribution): the mean final centre height within
  20 % of each other, the highest within 30 %.
- ``ramp``: a ball (r 0.03 m, 0.1 kg, μ 0.8, rolls without slipping) released on a fixed board
  tilted 0.25 rad, rolls off its low end and lands on a fixed table top 0.1 m lower, 1.2 s. Compared:
  the time it leaves the board (within 10 ms), its speed there (within 2 %; also against rolling
  without slipping, v = √(10/7 g Δh)), the time and place it lands on the table (within 10 ms and
  10 mm), its speed just before (within 3 %).
- ``dominoes``: a capsule (r 0.025 m, half-length 0.04 m, 0.2 kg) thrown at 2.5 m/s into a row of
  five standing boxes (0.02 × 0.08 × 0.12 m, 0.05 kg, 7 cm apart), μ 0.5, 1.5 s. Compared: how
  many boxes fall (tilt beyond 45°: equal), the mean final x of the boxes (within 30 mm), the
  spread of their final x (within 30 mm), the capsule's final x (within 50 mm).

Differences by design (measured in the results): MuJoCo's soft contact lets bodies sink and creep
(depth at rest of order 1 mm for these masses); Bullet's split impulse and ERP correct penetration
over several steps; jaxcontact's contacts are hard (velocity-level complementarity with a
stabilisation speed cap, ``Model.max_correction_speed``).

Writes ``benchmarks/results/<name>.{json,md}`` with the command and the machine.
"""

from __future__ import annotations

import sys

from experiments.peer_scenes import DT, ENGINES, MEASURES, SCENES

from .common import fmt, machine_info, md_machine, md_table

# (quantity, kind, tolerance): "rel" relative to the larger, "abs" absolute, "eq" equal, "true" must hold in each
CHECKS = {
    "bin": [("inside", "true", None), ("not_sunk", "true", None), ("settled", "true", None),
            ("mean_height_m", "rel", 0.20), ("highest_m", "rel", 0.30)],
    "ramp": [("leave_time_s", "abs", 0.010), ("leave_speed_m_s", "rel", 0.02), ("land_time_s", "abs", 0.010),
             ("land_x_m", "abs", 0.010), ("land_speed_m_s", "rel", 0.03)],
    "dominoes": [("fallen", "eq", None), ("mean_x_m", "abs", 0.030), ("spread_x_m", "abs", 0.030),
                 ("capsule_x_m", "abs", 0.050)],
}


def compare(name, measured):
    """PASS/FAIL rows: each invariant per engine, each quantity per pair of engines."""
    rows = []
    engines = list(measured)
    for q, kind, tol in CHECKS[name]:
        if kind == "true":
            for e in engines:
                rows.append({"quantity": q, "engines": e, "tolerance": "holds", "difference": None,
                             "pass": bool(measured[e][q])})
            continue
        for i, a in enumerate(engines):
            for b in engines[i + 1:]:
                x, y = measured[a][q], measured[b][q]
                if x is None or y is None:
                    rows.append({"quantity": q, "engines": f"{a} – {b}", "tolerance": tol, "difference": None,
                                 "pass": False})
                    continue
                diff = abs(x - y)
                if kind == "rel":
                    diff = diff / max(abs(x), abs(y), 1e-300)
                ok = diff == 0 if kind == "eq" else diff <= tol
                shown = "equal" if kind == "eq" else (f"{tol:.0%}" if kind == "rel" else f"{tol} abs")
                rows.append({"quantity": q, "engines": f"{a} – {b}", "tolerance": shown,
                             "difference": float(diff), "pass": bool(ok)})
    return rows


def run_scene(name, engines):
    scene = SCENES[name]()
    measured, depths, errors = {}, {}, {}
    for e in engines:
        try:
            out = ENGINES[e](scene)
        except Exception as exc:  # noqa: BLE001 - a scene that fails in one engine is reported, not hidden
            errors[e] = f"{type(exc).__name__}: {exc}"
            print(f"{name}: {e} failed: {errors[e]}", flush=True)
            continue
        measured[e] = MEASURES[name](scene, out)
        depths[e] = out["depth"]
        if "flags" in out:
            from jaxcontact.types import Flags

            measured[e]["flags"] = [f.name for f in Flags if out["flags"] & f]
        print(f"{name}: {e}: {measured[e]} (deepest {out['depth']:.2e} m)", flush=True)
    return {"steps": scene["steps"], "dt": DT, "mu": scene["mu"], "measured": measured, "deepest_m": depths,
            "errors": errors, "checks": compare(name, measured)}


def markdown(res) -> str:
    out = ["# Side by side: jaxcontact, MuJoCo C and Bullet on three mixed scenes", "",
           md_machine(res["machine"]), "",
           "Scenes, engines' settings and the tolerances (stated before the first run): the module docstring of "
           "`benchmarks/side_by_side.py`. `mujoco` is MuJoCo C with its defaults (pyramidal cone), "
           "`mujoco_elliptic` the same with the elliptic cone; `jaxcontact` at its defaults (Coulomb's disc), "
           "`jaxcontact_box` the same with the square (`LCPSettings(cone=\"box\")`). Deepest: the deepest penetration each engine "
           "reported over the run.", ""]
    for name, r in res["scenes"].items():
        out += [f"## {name} ({r['steps']} steps of {r['dt'] * 1000:g} ms, μ {r['mu']})", ""]
        engines = list(r["measured"])
        keys = [k for k in next(iter(r["measured"].values()), {}) if k != "flags"]
        out.append(md_table(["quantity"] + engines,
                            [[k] + [fmt(r["measured"][e].get(k)) if not isinstance(r["measured"][e].get(k), bool)
                                    else str(r["measured"][e][k]) for e in engines] for k in keys]
                            + [["deepest penetration (m)"] + [fmt(r["deepest_m"][e]) for e in engines]]))
        out.append("")
        out.append(md_table(["check", "engines", "tolerance", "difference", "result"],
                            [[c["quantity"], c["engines"], c["tolerance"], fmt(c["difference"]),
                              "PASS" if c["pass"] else "**FAIL**"] for c in r["checks"]]))
        for e in engines:
            if r["measured"][e].get("flags"):
                out.append(f"\n{e} flagged (some step, `WorldInfo.flags`): {', '.join(r['measured'][e]['flags'])}")
        for e, err in r["errors"].items():
            out.append(f"\n{e} failed: `{err}`")
        out.append("")
    return "\n".join(out)


def arguments(ap):
    ap.add_argument("--engines", default="jaxcontact,mujoco,mujoco_elliptic,bullet")


def run(args, out):
    """``python -m benchmarks side_by_side [--only bin,ramp,dominoes]``: the scenes into ``out``."""
    for part in args.only.split(","):
        if part not in SCENES:
            raise SystemExit(f"--only: unknown scene {part!r} (one of {', '.join(SCENES)})")
    engines = args.engines.split(",")
    for e in engines:
        if e not in ENGINES:
            raise SystemExit(f"--engines: unknown engine {e!r} (one of {', '.join(ENGINES)})")
    import jax

    jax.config.update("jax_enable_x64", True)
    res = {"machine": machine_info("benchmarks.side_by_side", command=args.command), "scenes": {}}
    for part in args.only.split(","):
        res["scenes"][part] = run_scene(part, engines)
    out.write(res, markdown(res))
    print(f"wrote {out.json}, {out.md}")


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
