"""Ball joints, composite joints, welds and equalities against MuJoCo C (issue 63, items 1, 3, 4).

The scenes of ``jaxcontact/data/scenes/`` (``ball_pendulum``, and it with a ball spring, ``universal_joint``,
``three_hinges``, ``planar_body``,
``four_bar``, ``welds``), loaded by ``worlds.from_mjcf`` from their keyframe ``k`` (``welds``: at
rest), 100 steps of 1 ms in float64 against MuJoCo C (``mj_step``, positions after each step by
``mj_kinematics``): the largest distance of a body's centre of mass from MuJoCo's (``welds``: the
arm and its welded tip; MuJoCo's soft weld lets the box sag, reported apart), and of a composite's
joint coordinates from MuJoCo's qpos. Then the undamped ball pendulum at 0.2 ms over 2 s: its
length and energy (kinetic + m g z) against the start. The four-bar's loop gap over 2 s. Each
scene in float32 for 1 s: its largest joint error and flags. Prints a
table and writes ``benchmarks/results/joint_rows.{json,md}``::

    python -m benchmarks.joint_rows
"""

from __future__ import annotations

import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxcontact import worlds  # noqa: E402
from jaxcontact.worlds import joints as J  # noqa: E402
from jaxcontact.worlds import mjcf  # noqa: E402

from .common import SCENES_DIR as SCENES  # noqa: E402

COMMAND = "python -m benchmarks joint_rows"


def mujoco_run(xml: str, steps: int, key: bool):
    import mujoco

    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    if key:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    return mjcf.mujoco_trajectory(m, d, steps)


def against_mujoco() -> list:
    rows = []
    for name in ("ball_pendulum", "ball_spring", "universal_joint", "three_hinges", "planar_body", "four_bar", "welds"):
        xml = (SCENES / f"{name.replace('ball_spring', 'ball_pendulum')}.xml").read_text()
        if name == "ball_spring":  # the pendulum with a ball spring (MuJoCo's stiffness toward its zero) instead
            xml = xml.replace('damping="0.05" armature="0.01"', 'stiffness="3" damping="0.02"')
        key = name != "welds"
        scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k" if key else None)
        traj, info = worlds.rollout(model, scene, params, state, 100)
        ref, qpos = mujoco_run(xml, 100, key)
        bodies = slice(0, 2) if name == "welds" else slice(None)
        dev = float(np.max(np.linalg.norm(np.asarray(traj.pos)[:, bodies] - ref[:, bodies], axis=-1)))
        row = dict(scene=name, kinds=[scene.joints.kind(j) for j in range(scene.joints.num_joints)], rows=scene.joints.num_rows, body_mm=1e3 * dev,
                   flags=int(np.bitwise_or.reduce(np.asarray(info.flags))))
        if name in ("universal_joint", "three_hinges", "planar_body"):
            q = np.asarray(jax.vmap(lambda s: J.coordinates(scene.joints, params.joints, s)[0])(traj))
            row["qpos"] = float(np.max(np.abs(q - qpos)))
        if name == "welds":
            row["mujoco_box_sag_mm"] = 1e3 * float(np.max(np.linalg.norm(ref[:, 2] - ref[0, 2], axis=-1)))
            row["box_mm"] = 1e3 * float(np.max(np.linalg.norm(np.asarray(traj.pos)[:, 2] - np.asarray(state.pos[2]), axis=-1)))
        rows.append(row)
    return rows


def ball_energy(dt: float = 0.0002, seconds: float = 2.0) -> dict:
    xml = (SCENES / "ball_pendulum.xml").read_text().replace('timestep="0.001"', f'timestep="{dt}"')
    xml = xml.replace(' damping="0.05" armature="0.01"', "")
    scene, params, state, model = mjcf.from_mjcf(xml, keyframe="k")
    traj, info = worlds.rollout(model, scene, params, state, int(round(seconds / dt)))
    pos, vel, om = (np.asarray(x[:, 0]) for x in (traj.pos, traj.vel, traj.omega))
    m, inertia = float(params.body.mass[0]), np.asarray(params.body.inertia[0])
    E = 0.5 * m * np.sum(vel ** 2, 1) + 0.5 * np.einsum("ti,ij,tj->t", om, inertia, om) + m * 9.81 * pos[:, 2]
    return dict(dt=dt, seconds=seconds, energy_rel=float(np.max(np.abs(E - E[0])) / abs(E[0])),
                length_m=float(np.max(np.abs(np.linalg.norm(pos - [0, 0, 1], axis=1) - 0.2))))


def four_bar_gap(steps: int = 2000) -> float:
    scene, params, state, model = mjcf.from_mjcf((SCENES / "four_bar.xml").read_text(), keyframe="k")
    traj, _ = worlds.rollout(model, scene, params, state, steps)
    jp = params.joints
    gap = jax.vmap(lambda s: jnp.linalg.norm(J.point_rows(jp.anchor_parent[3], jp.anchor_child[3],
                                                           jax.tree_util.tree_map(lambda x: x[2], s),
                                                           jax.tree_util.tree_map(lambda x: x[1], s))[2]))(traj)
    return float(jnp.max(gap))


def float32_drift(steps: int = 1000) -> dict:
    """float32, 1 s of each scene: the largest joint error (``WorldInfo.joint_error``) and the flags."""
    out = {}
    for name in ("ball_pendulum", "three_hinges", "planar_body", "four_bar", "welds"):
        scene, params, state, model = mjcf.from_mjcf((SCENES / f"{name}.xml").read_text(),
                                                     keyframe=None if name == "welds" else "k", dtype=jnp.float32)
        traj, info = worlds.rollout(model, scene, params, state, steps)
        out[name] = dict(joint_error_m=float(np.max(np.asarray(info.joint_error, float))),
                         flags=int(np.bitwise_or.reduce(np.asarray(info.flags))),
                         finite=bool(np.all(np.isfinite(np.asarray(traj.pos, float)))))
    return out


def run(args, out) -> int:
    """``python -m benchmarks joint_rows``: ``out`` (``runner.Results``) gets the JSON and the .md."""
    rows = against_mujoco()
    energy = ball_energy()
    gap = four_bar_gap()
    f32 = float32_drift()
    lines = [f"# Ball, composite, weld and equality rows against MuJoCo C (`{COMMAND}`)", "",
             "100 steps of 1 ms, float64; the largest distance of a body's centre of mass from MuJoCo C's.", "",
             "| scene | kinds | rows | bodies (mm) | qpos | flags |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        qpos = f"{r['qpos']:.2g}" if "qpos" in r else "–"
        lines.append(f"| {r['scene']} | {', '.join(r['kinds'])} | {r['rows']} | {r['body_mm']:.3g} | {qpos} | {r['flags']} |")
    w = rows[-1]
    lines += ["", f"welds: the box held by the weld moves {w['box_mm']:.2g} mm here; MuJoCo's soft weld lets it sag "
              f"{w['mujoco_box_sag_mm']:.3g} mm in the 100 steps.",
              f"Undamped ball pendulum, {energy['dt']} s steps over {energy['seconds']} s: energy within "
              f"{energy['energy_rel']:.2g} of its start, length within {energy['length_m']:.2g} m.",
              f"Four-bar closed by a connect, 2 s: the loop's gap at most {gap:.2g} m.",
              "float32, 1 s (1,000 steps): the largest joint error " + ", ".join(
                  f"{k} {v['joint_error_m']:.2g} m (flags {v['flags']}{'' if v['finite'] else ', NaN'})" for k, v in f32.items())
              + "."]
    print("\n".join(lines))
    out.write(dict(command=COMMAND, scenes=rows, ball_energy=energy, four_bar_gap_m=gap, float32=f32), "\n".join(lines))
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
