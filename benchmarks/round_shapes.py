"""Round shapes against the ground (issue 62, first slice): the closed-form checks over longer
horizons than the tests, in float64 and float32, and a box's resting drift beside them.

    python -m benchmarks round_shapes            # about a minute on 2 cores

Prints and writes ``benchmarks/results/round_shapes.{json,md}``: a sliding sphere's and
cylinder's time, distance and speed at rolling against 2 v0/(7 μ g), 12 v0²/(49 μ g), 5/7 v0 and
v0/(3 μ g), 5 v0²/(18 μ g), 2/3 v0; a ball's first bounces against e²; the largest displacement of
a capsule and a cylinder lying, a cylinder on its end, an ellipsoid on its shortest axis and the
0.1 m box on a face over 10 s at rest.
"""

from __future__ import annotations

import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxcontact as jc  # noqa: E402
from jaxcontact import shapes  # noqa: E402


G, H = 9.81, 0.002
QX = (np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0)  # body z along world −y: lying on the side


def _cast(tree, dtype):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype) if jnp.issubdtype(jnp.result_type(x), jnp.floating)
                                  else x, tree)


def _params(body, mu, restitution, dtype):
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=H, gravity=G)
    return model, _cast(jc.Params(body=body, ground=jc.Ground.flat(3), law=law.init_params(mu=mu, restitution=restitution)),
                        dtype)


def rolling(kind, dtype):
    if kind == "sphere":
        r, v0, mu = 0.05, 3.0, 0.2
        body, quat, spin = shapes.sphere(r, 1.0), (1.0, 0, 0, 0), lambda tr: np.asarray(tr.omega[:, 1], float)
        t, x, v = 2 * v0 / (7 * mu * G), 12 * v0 ** 2 / (49 * mu * G), 5 * v0 / 7
    else:
        r, v0, mu = 0.04, 2.0, 0.3
        body, quat, spin = shapes.cylinder(r, 0.06, 1.0), QX, lambda tr: -np.asarray(tr.omega[:, 2], float)
        t, x, v = v0 / (3 * mu * G), 5 * v0 ** 2 / (18 * mu * G), 2 * v0 / 3
    model, params = _params(body, mu, 0.0, dtype)
    tr = jc.rollout(model, params, _cast(jc.make_state(pos=(0, 0, r), quat=quat, vel=(v0, 0, 0)), dtype), 1000)
    vel = np.asarray(tr.vel[:, 0], float)
    k = int(np.argmax(np.abs(vel - spin(tr) * r) < 1e-3 * v0))
    return dict(time=k * H, time_closed_form=t, distance=float(tr.pos[k, 0]), distance_closed_form=x,
                speed=float(vel[k]), final_speed=float(vel[-1]), speed_closed_form=v,
                height_range=float(np.ptp(np.asarray(tr.pos[:, 2], float))))


def bounce(dtype, e=0.8, h=0.3, r=0.05):
    model, params = _params(shapes.sphere(r, 1.0), 0.5, e, dtype)
    z = np.asarray(jc.rollout(model, params, _cast(jc.make_state(pos=(0, 0, r + h)), dtype), 700).pos[:, 2], float) - r
    peaks = [float(z[i]) for i in range(1, len(z) - 1) if z[i] >= z[i - 1] and z[i] > z[i + 1]][:4]
    ratios = [peaks[0] / h] + [b / a for a, b in zip(peaks, peaks[1:])]
    return dict(restitution=e, drop=h, peaks=peaks, ratios=ratios, e_squared=e * e)


def resting(dtype, steps=5000):
    cases = {"capsule lying": (shapes.capsule(0.03, 0.08, 0.5), (0, 0, 0.03), QX),
             "cylinder lying": (shapes.cylinder(0.04, 0.06, 0.5), (0, 0, 0.04), QX),
             "cylinder on its end": (shapes.cylinder(0.04, 0.06, 0.5), (0, 0, 0.06), (1.0, 0, 0, 0)),
             "ellipsoid (0.05, 0.04, 0.03) on c": (shapes.ellipsoid((0.05, 0.04, 0.03), 0.5), (0, 0, 0.03), (1.0, 0, 0, 0)),
             "box 0.1 m on a face": (shapes.box(0.1, 0.37), (0, 0, 0.05), (1.0, 0, 0, 0))}
    out = {}
    for name, (body, pos, quat) in cases.items():
        model, params = _params(body, 0.5, 0.0, dtype)
        tr = jc.rollout(model, params, _cast(jc.make_state(pos=pos, quat=quat), dtype), steps)
        out[name] = dict(displacement=float(np.max(np.linalg.norm(np.asarray(tr.pos, float) - np.asarray(pos), axis=-1))),
                         final_height=float(tr.pos[-1, 2]), seconds=steps * H)
    return out


def run(args, results) -> int:
    """``python -m benchmarks round_shapes``: ``results`` (``runner.Results``) gets the JSON and the .md."""
    res = {}
    for dtype in (jnp.float64, jnp.float32):
        name = jnp.dtype(dtype).name
        res[name] = dict(sphere=rolling("sphere", dtype), cylinder=rolling("cylinder", dtype), bounce=bounce(dtype),
                         resting=resting(dtype))
    lines = ["# Round shapes against the ground", "", "`python -m benchmarks round_shapes`", ""]
    for name, r in res.items():
        lines += [f"## {name}", "", "| rolling | t* | closed form | x* | closed form | v* | closed form |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for k in ("sphere", "cylinder"):
            a = r[k]
            lines.append(f"| {k} | {a['time']:.4f} s | {a['time_closed_form']:.4f} s | {a['distance']:.4f} m | "
                         f"{a['distance_closed_form']:.4f} m | {a['speed']:.5f} m/s | {a['speed_closed_form']:.5f} m/s |")
        b = r["bounce"]
        lines += ["", f"Bounces (e = {b['restitution']}, e² = {b['e_squared']:.3f}): each peak over the last "
                      + ", ".join(f"{x:.4f}" for x in b["ratios"]), "", "| at rest, 10 s | largest displacement | final height |",
                  "| --- | --- | --- |"]
        for k, a in r["resting"].items():
            lines.append(f"| {k} | {a['displacement'] * 1e6:.3g} µm | {a['final_height']:.6f} m |")
        lines.append("")
    print("\n".join(lines))
    results.write(dict(results=res), "\n".join(lines))
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
