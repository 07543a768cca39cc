"""Sharded batches equal single-device ones; the command line works end to end."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from jaxcontact.cli import main

SHARDED_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jaxcontact as jc
    from jaxcontact.sharding import sharded_batch_rollout, batch_mesh
    from jaxcontact.states import random_throws
    assert len(jax.devices()) == 4, jax.devices()
    law = jc.CoulombLCP()
    model = jc.Model(law=law, max_contacts=4)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(0.3))
    states = random_throws(jax.random.PRNGKey(3), 30, ranges={"height": (0.0, 0.2)})  # 30: not a multiple of 4
    single = jc.batch_rollout(model, params, jax.device_put(states, jax.devices()[0]), 150)
    sharded = sharded_batch_rollout(model, params, states, 150, mesh=batch_mesh())
    diff = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(sharded)))
    # the batch really is split over 4 devices inside the computation
    placed = jax.device_put(states.pos[:28], jax.sharding.NamedSharding(batch_mesh(), jax.sharding.PartitionSpec("batch")))
    print("RESULT", diff, len(placed.sharding.device_set))
    """
)


@pytest.mark.slow
def test_sharded_rollout_equals_single_device():
    env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip(), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED_SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT")][0]
    diff, ndev = float(line.split()[1]), int(line.split()[2])
    assert ndev == 4
    assert diff < 1e-10, diff


WORLDS_SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jaxcontact as jc
    from jaxcontact import worlds
    from jaxcontact.sharding import batch_mesh
    assert len(jax.devices()) == 2, jax.devices()
    # two boxes in the air (no ground: the cheapest world to compile), the first sliding into the
    # second at 0.5, 1.0, 1.5 m/s in three worlds (3: one world of padding on 2 devices)
    scene, body = worlds.make_scene([jc.shapes.box((0.1,) * 3, 0.37)] * 2, ground=False, pair_contacts=1)
    params = jc.Params(body=body, ground=jc.Ground.flat(), law=jc.CoulombLCP.init_params(0.4))
    pos = jnp.array([[[0.0, 0.0, 0.0], [0.101, 0.01 * w, 0.0]] for w in range(3)])
    vel = jnp.array([[[0.5 + 0.5 * w, 0.0, 0.0], [0.0, 0.0, 0.0]] for w in range(3)])
    states = jc.State(pos=pos, quat=jnp.tile(jnp.array([1.0, 0, 0, 0]), (3, 2, 1)), vel=vel, omega=jnp.zeros((3, 2, 3)))
    model = worlds.model()
    single = worlds.batch_rollout(model, scene, params, states, 20, output="final")
    sharded = worlds.sharded_batch_rollout(model, scene, params, states, 20, mesh=batch_mesh(), output="final")
    la, lb = jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(sharded)
    assert [a.shape for a in la] == [b.shape for b in lb]
    diff = max(float(np.abs(np.asarray(a, float) - np.asarray(b, float)).max()) for a, b in zip(la, lb))
    print("RESULT", diff, len(sharded[0].pos.sharding.device_set), *np.asarray(sharded[0].vel[:, 1, 0]))
    try:  # concrete inputs are validated before anything compiles, naming the field
        worlds.sharded_batch_rollout(model, scene, params, states.replace(pos=states.pos.at[2, 0, 0].set(np.nan)), 20)
    except ValueError as e:
        print("RAISED", e)
    """
)


@pytest.mark.slow
def test_sharded_worlds_equal_batch_rollout():
    env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip(), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", WORLDS_SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT")][0].split()
    diff, ndev, v_struck = float(line[1]), int(line[2]), np.array(line[3:], float)
    assert ndev == 2
    assert diff < 1e-12, diff
    # the struck box moves in every world (the pair collided), faster in the faster worlds
    assert np.all(np.diff(v_struck) > 0.2) and v_struck[0] > 0.2, v_struck
    assert "RAISED state.pos: contains NaN or infinite values" in out.stdout, out.stdout


@pytest.mark.slow
def test_cli_simulate_writes_npz_and_plot(tmp_path):
    out = tmp_path / "throws.npz"
    png = tmp_path / "throws.png"
    rc = main(["simulate", "--shape", "box2d", "--throws", "6", "--steps", "120", "--seed", "1",
               "--out", str(out), "--plot", str(png), "--no-progress"])
    assert rc == 0
    d = np.load(out)
    assert d["states"].shape == (6, 121, 6)
    assert np.all(np.isfinite(d["states"]))
    assert png.stat().st_size > 1000
    # same seed, same throws
    out2 = tmp_path / "again.npz"
    main(["simulate", "--shape", "box2d", "--throws", "6", "--steps", "120", "--seed", "1", "--out", str(out2), "--no-progress"])
    np.testing.assert_array_equal(np.load(out2)["states"], d["states"])


def test_cli_reports_bad_arguments(tmp_path, capsys):
    rc = main(["simulate", "--shape", "box", "--throws", "0", "--steps", "10", "--out", str(tmp_path / "x.npz")])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "argument --throws: must be a positive integer (>= 1)" in err[0], err


def test_console_script_is_installed(tmp_path):
    out = subprocess.run(["jaxcontact", "simulate", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--throws" in out.stdout


@pytest.mark.slow
def test_chunked_batch_matches_unchunked():
    import jax

    import jaxcontact as jc
    from jaxcontact.states import random_throws

    law = jc.CoulombLCP()
    model = jc.Model(law=law, max_contacts=4)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(0.3))
    states = random_throws(jax.random.PRNGKey(5), 37, ranges={"height": (0.0, 0.2)})
    whole = jc.batch_rollout(model, params, states, 120, chunk_size=None)
    chunked = jc.batch_rollout(model, params, states, 120, chunk_size=8)  # 37 = 4·8 + 5: padded
    for a, b in zip(jax.tree_util.tree_leaves(whole), jax.tree_util.tree_leaves(chunked)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-9)
