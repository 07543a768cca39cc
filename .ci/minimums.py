"""The declared lower bounds hold: install exactly the minimum versions of pyproject.toml's
dependencies in a fresh virtual environment and run a quick subset of the package there.

    python .ci/minimums.py constraints          # print the pins (`pkg==min`) read from pyproject.toml
    python .ci/minimums.py run [--venv DIR]     # make the venv, install the pins + jaxcontact, run the subset
    python .ci/minimums.py subset               # the subset alone, in the current interpreter

pyproject.toml is the one source of truth: every ``name>=version`` of ``[project] dependencies``
becomes ``name==version`` (a dependency declared without a lower bound is an error here). The
subset: one step, a rollout against an analytic fall, ``jax.grad`` of a rollout against a finite
difference, ``sharded_batch_rollout`` over 2 host devices equal to ``batch_rollout``, the
ContactNets loss sharded over those 2 devices, a world's sweeps in the fused CPU kernel equal to the
pure-JAX sweeps, and ``jaxcontact simulate`` on the command line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def constraints(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """``name==min`` for every core dependency (from its ``>=`` lower bound)."""
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = []
    for dep in deps:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,.*)?", dep)
        if m is None:
            raise SystemExit(f"pyproject dependency {dep!r} has no '>=' lower bound")
        pins.append(f"{m.group(1)}=={m.group(2)}")
    return pins


SUBSET = r'''
import os, subprocess, sys, tempfile
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import jaxcontact as jc
from jaxcontact.sharding import batch_mesh, sharded_batch_rollout
from jaxcontact.states import random_throws
assert len(jax.devices()) == 2, jax.devices()

law = jc.CoulombLCP()
model = jc.Model(law=law, dt=0.002)
params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.3))

# step: a body in free flight falls by g h^2 (semi-implicit Euler)
s0 = jc.make_state(pos=[0, 0, 0.5])
s1 = jc.step(model, params, s0)
assert abs(float(s1.pos[2]) - (0.5 - 9.81 * 0.002 ** 2)) < 1e-12, s1.pos

# rollout: dropped from rest onto its face, it comes to rest at half its size
traj = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.2]), 400)
assert abs(float(traj.pos[-1, 2]) - 0.05) < 1e-3, traj.pos[-1]
final, summary = jc.rollout(model, params, jc.make_state(pos=[0, 0, 0.2]), 400, output="final", with_info=True)
assert int(summary.flags) == 0, summary

# grad: d(slide distance)/d mu against a central difference
start = jc.make_state(pos=[0, 0, 0.051], vel=[1.0, 0, 0])
def slide(mu):
    p = params.replace(law=params.law.replace(mu=jnp.stack([mu, mu])))
    return jc.rollout(model, p, start, 150, output="final").pos[0]
g = float(jax.grad(slide)(0.3))
fd = (float(slide(0.3 + 1e-5)) - float(slide(0.3 - 1e-5))) / 2e-5
assert g < 0 and abs(g - fd) < 1e-3 * abs(fd), (g, fd)

# sharding over the 2 host devices equals one device (an odd batch: padded)
states = random_throws(jax.random.PRNGKey(3), 7, ranges={"height": (0.0, 0.2)})
single = jc.batch_rollout(model, params, states, 100)
sharded = sharded_batch_rollout(model, params, states, 100, mesh=batch_mesh())
diff = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
           for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(sharded)))
assert diff < 1e-10, diff

# the ContactNets loss sharded over the same devices: the one-device value and gradient
from jaxcontact.contactnets import ContactFunctions, LossConfig, batch_loss, init_polytope, sharded_batch_loss
V = np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.05, 0.05)])
th = init_polytope(jax.random.PRNGKey(4), V, 0.3)
cmodel = jc.Model(law=law, dt=0.002, max_contacts=8)
xs_all = jnp.asarray(jc.rollout(cmodel, params, jc.make_state(pos=[0, 0, 0.07], vel=[0.5, 0, -1.0]), 8).to_array())
xs, xns = xs_all[:7], xs_all[1:8]
fns, cfg = ContactFunctions("polytope"), LossConfig(chunk=4)
v0, g0 = jax.value_and_grad(lambda t: batch_loss(fns, t, cmodel, params.body, xs, xns, cfg)[0])(th)
v1, g1 = jax.value_and_grad(lambda t: sharded_batch_loss(fns, t, cmodel, params.body, xs, xns, cfg)[0])(th)
assert float(v0) > 0 and abs(float(v1) - float(v0)) <= 1e-10 * float(v0), (v0, v1)
for a, b in zip(jax.tree_util.tree_leaves(g0), jax.tree_util.tree_leaves(g1)):
    assert np.allclose(np.asarray(a), np.asarray(b), rtol=1e-8, atol=1e-12 * float(np.max(np.abs(np.asarray(a))) + 1))

# a world's sweeps in the fused CPU kernel (built against this jaxlib's FFI headers) equal the pure-JAX sweeps
from jaxcontact import worlds
from jaxcontact import native
from jaxcontact.worlds import scenes
assert native.available()
wsc, wp, ws = scenes.stack(4)
ws = ws.replace(vel=ws.vel.at[:, 0].set(0.4), omega=ws.omega.at[:, 2].set(2.0))
wa = worlds.batch_rollout(worlds.model(sweeps="native"), wsc, wp, jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), ws), 20,
                          output="final")[0]
wb = worlds.rollout(worlds.model(sweeps="sequential"), wsc, wp, ws, 20, output="final")[0]
assert float(jnp.abs(wa.pos[1] - wb.pos).max()) < 1e-11, (wa.pos[1], wb.pos)

# a CLI command
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "throws.npz")
    r = subprocess.run([sys.executable, "-m", "jaxcontact.cli", "simulate", "--shape", "box", "--throws", "4",
                        "--steps", "50", "--seed", "1", "--out", out, "--no-progress"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert np.load(out)["states"].shape[:2] == (4, 51)
print("minimum versions: all seven checks hold (step, rollout, grad, sharded rollout, sharded loss, world kernel, CLI)")
'''


def subset() -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(JAX_PLATFORMS="cpu",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip())
    return subprocess.run([sys.executable, "-c", SUBSET], env=env, cwd=tempfile.gettempdir()).returncode


def run(venv: Path) -> int:
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    pins = constraints()
    print("minimums:", " ".join(pins), flush=True)
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + pins, check=True)
    # the package itself, its dependencies held at the pins
    subprocess.run(pip + ["--no-deps", "-e", str(ROOT)], check=True)
    subprocess.run([py, "-m", "pip", "check"], check=True)
    return subprocess.run([py, str(Path(__file__).resolve()), "subset"]).returncode


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "run"
    if cmd == "constraints":
        print("\n".join(constraints()))
    elif cmd == "subset":
        sys.exit(subset())
    elif cmd == "run":
        venv = Path(sys.argv[sys.argv.index("--venv") + 1]) if "--venv" in sys.argv else Path(tempfile.mkdtemp()) / "minenv"
        sys.exit(run(venv))
    else:
        raise SystemExit(__doc__)
