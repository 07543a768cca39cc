"""``jaxcontact simulate --mjcf`` (issue 60 parts 1 and 7): a jointed world runs to the end in
chunks (each chunk continues from the last state of the one before, ``start="continued"``) and
compiles once; a user's loop over ``worlds.rollout`` in chunks gives the unchunked trajectory;
the joints' drift stays within the stabilisation's bound; bad files are one line, exit status 2."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("mujoco", reason="simulate --mjcf needs mujoco (pip install -e '.[mjcf]')")

from jaxcontact import worlds  # noqa: E402
from jaxcontact.cli import main  # noqa: E402
from jaxcontact.rotations import quat_to_mat  # noqa: E402
from jaxcontact.worlds import joints as J  # noqa: E402
from jaxcontact.worlds.mjcf import from_mjcf  # noqa: E402

# Two 0.2 m, 0.185 kg links hinged end to end, the first to the world 1 m up, released from
# horizontal: a swinging two-link chain and nothing else (no ground, no other body: the world of
# joints alone, no contact problem)
CHAIN = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="link0" pos="0.1 0 1.0">
      <joint name="root" type="hinge" pos="-0.1 0 0" axis="0 1 0"/>
      <geom type="box" size="0.1 0.025 0.025" mass="0.185"/>
      <body name="link1" pos="0.2 0 0">
        <joint name="elbow" type="hinge" pos="-0.1 0 0" axis="0 1 0"/>
        <geom type="box" size="0.1 0.025 0.025" mass="0.185"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
CHUNK = 100  # the command's chunk (run_world's default)
STEPS = 1000  # 2 s at 2 ms: the user's loop and the unchunked rollout

COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/backend_compile_duration",
                  "/jax/compilation_cache/cache_retrieval_time_sec")


@pytest.fixture(scope="module")
def chain_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("chain") / "chain.xml"
    path.write_text(CHAIN)
    return path


def _centripetal_gap(params, state):
    """() per state: the largest difference of a joint's two anchors' centripetal accelerations
    (m/s²), the term the velocity-level joint rows miss (``joints.drift_tolerance``)."""
    jp, out = params.joints, []
    for j, (p, c) in enumerate(zip(CHAIN_PARENTS, CHAIN_CHILDREN)):
        def acc(i, r):
            R = quat_to_mat(state.quat[i])
            w = R @ state.omega[i]
            return jnp.cross(w, jnp.cross(w, R @ r))

        a = acc(c, jp.anchor_child[j]) - (acc(p, jp.anchor_parent[j]) if p >= 0 else 0.0)
        out.append(jnp.linalg.norm(a))
    return jnp.max(jnp.stack(out))


CHAIN_PARENTS, CHAIN_CHILDREN = (-1, 0), (0, 1)


def test_a_jointed_world_runs_to_the_end_in_chunks_that_compile_once(chain_file, tmp_path, capsys, monkeypatch):
    """The issue's command: ``simulate --mjcf`` of a swinging chain for 301 steps ran 100 and
    stopped (exit 2: the second chunk's start refused as a user's inconsistent joint). Now every
    chunk runs 100 steps (the last keeps 1 of them), chunks 2–4 start "continued" and compile
    nothing, the summary line states compile and run seconds; a user's loop of 100-step chunks
    (its first chunk the command's program) gives the command's states and the unchunked
    rollout's; the default start refuses the chunk's end with the way out in the message, and a
    continued start still refuses a joint broken by 3 cm."""
    from jax import monitoring

    events, calls = [], []

    def on(event, duration, **kw):
        if event in COMPILE_EVENTS:
            events.append(event)

    real = worlds.rollout

    def counted(model, scene, params, state, n_steps, *args, **kwargs):
        before = len(events)
        out = jax.block_until_ready(real(model, scene, params, state, n_steps, *args, **kwargs))
        calls.append((n_steps, kwargs.get("start", "initial"), len(events) - before))
        return out

    monkeypatch.setattr(worlds, "rollout", counted)
    monitoring.register_event_duration_secs_listener(on)
    try:
        out = tmp_path / "chain.npz"
        assert main(["simulate", "--mjcf", str(chain_file), "--steps", "301", "--out", str(out), "--no-progress"]) == 0
    finally:
        monitoring.unregister_event_duration_listener(on)
        monkeypatch.undo()
    line = capsys.readouterr().out
    assert "2 bodies x 302 states (compile " in line and ", run " in line and "NaN: 0" in line, line
    assert [(n, s) for n, s, _ in calls] == [(CHUNK, "initial")] + [(CHUNK, "continued")] * 3, calls
    assert [k for _, _, k in calls[1:]] == [0, 0, 0], calls  # the second chunk on compiles nothing
    cli = np.load(out)["states"][0]  # (302, 2, 13)

    scene, params, state, model = from_mjcf(chain_file, dtype=jnp.float64)
    pieces, s = [state.to_array()[None]], state
    for k in range(STEPS // CHUNK):
        if k == 1:  # the drift a rollout leaves is no user's state: the default start refuses it, saying so
            assert float(J.drift_tolerance(scene.joints.baumgarte, model.dt)) > 1e-3
            with pytest.raises(ValueError, match=r"joint \d is inconsistent.*start='continued'"):
                worlds.rollout(model, scene, params, s, CHUNK)
            broken = s.replace(pos=s.pos.at[1, 0].add(0.03))
            with pytest.raises(ValueError, match=r"anchor_parent/anchor_child\[1\]: joint 1 is broken: .*0.03"):
                worlds.rollout(model, scene, params, broken, CHUNK, start="continued")
        traj, _ = worlds.rollout(model, scene, params, s, CHUNK, start="initial" if k == 0 else "continued")
        pieces.append(traj.to_array()[1:])
        s = jax.tree_util.tree_map(lambda x: x[-1], traj)
    chunked = np.concatenate(pieces)
    np.testing.assert_array_equal(chunked[:302], cli)  # the command's chunks are the user's
    whole, info = worlds.rollout(model, scene, params, state, STEPS)
    np.testing.assert_allclose(chunked, np.asarray(whole.to_array()), rtol=0, atol=1e-12)

    # the drift over the 2 s swing: as the stabilisation predicts, e_{k+1} = (1 − β) e_k + (h²/2) c_k
    # (c the anchors' centripetal gap), and far under the continued start's tolerance
    err = np.asarray(info.joint_error)
    c = np.asarray(jax.vmap(lambda x: _centripetal_gap(params, x))(whole))
    beta, h = scene.joints.baumgarte, model.dt
    pred = np.zeros(STEPS)
    for k in range(STEPS - 1):
        pred[k + 1] = (1 - beta) * pred[k] + 0.5 * h * h * c[k]
    assert err.max() > 1e-4  # the chain swings hard: ten times the initial-state tolerance
    assert err.max() <= 1.05 * pred.max() and err.max() >= 0.8 * pred.max(), (err.max(), pred.max())
    assert err.max() < 0.25 * J.drift_tolerance(beta, h)
    # it swings down and back: the outer link's centre below 0.75 m, the energy kept to 3 % of the
    # kinetic energy it reaches (semi-implicit Euler, velocity-level joints)
    E = np.asarray(jax.vmap(lambda x: worlds.energy(model, params, x))(whole))
    m = np.asarray(params.body.mass)[None, :, None]
    kinetic = 0.5 * (m * np.asarray(whole.vel) ** 2).sum(axis=(1, 2))
    assert float(whole.pos[:, 1, 2].min()) < 0.75 and np.abs(E - E[0]).max() < 0.03 * kinetic.max()


def test_start_is_refused_by_name_before_any_work(chain_file):
    scene, params, state, model = from_mjcf(chain_file, dtype=jnp.float64)
    for door in (lambda: worlds.rollout(model, scene, params, state, 2, start="resumed"),
                 lambda: worlds.step(model, scene, params, state, start=None)):
        with pytest.raises(ValueError, match="start must be 'initial'.*or 'continued'"):
            door()


def _one_line_exit(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse
        rc = e.code
    err = capsys.readouterr().err.strip().splitlines()
    return rc, err


def _files(tmp_path):
    box = '<body pos="0 0 .2"><freejoint/><geom type="box" size=".05 .05 .05" mass=".37"/></body>'
    plane = '<geom type="plane" size="1 1 .1"/>'
    rng = np.random.default_rng(0)
    v = rng.normal(size=(5000, 3))
    v = 0.05 * v / np.linalg.norm(v, axis=1, keepdims=True)
    files = {
        "malformed": "<mujoco><worldbody><body></worldbody>",
        "nan_key": f'<mujoco><worldbody>{plane}{box}</worldbody><keyframe><key name="k" qpos="0 0 nan 1 0 0 0"/>'
                   "</keyframe></mujoco>",
        "keyed": f'<mujoco><worldbody>{plane}{box}</worldbody><keyframe><key name="k" qpos="0 0 .3 1 0 0 0"/>'
                 "</keyframe></mujoco>",
        "plane_alone": f"<mujoco><worldbody>{plane}</worldbody></mujoco>",
        "mesh_5000": '<mujoco><asset><mesh name="m" vertex="' + " ".join(f"{x:.6f}" for x in v.ravel())
                     + f'"/></asset><worldbody>{plane}<body pos="0 0 .2"><freejoint/><geom type="mesh" mesh="m" '
                     'mass="0.3"/></body></worldbody></mujoco>',
    }
    for name, text in files.items():
        (tmp_path / f"{name}.xml").write_text(text)
    return tmp_path


@pytest.mark.parametrize("case", [
    ["--mjcf", "{d}/missing.xml"],
    ["--mjcf", "{d}/malformed.xml"],
    ["--mjcf", "{d}/nan_key.xml", "--keyframe", "k"],
    ["--mjcf", "{d}/keyed.xml", "--keyframe", "nope"],
    ["--mjcf", "{d}/keyed.xml", "--keyframe", "3"],
    ["--mjcf", "{d}/mesh_5000.xml"],
    ["--mjcf", "{d}"],  # a directory
], ids=["missing", "malformed", "nan-keyframe", "unknown-keyframe", "keyframe-index", "mesh-5000", "directory"])
def test_simulate_mjcf_bad_files_are_one_line_and_exit_2(case, tmp_path, capsys, monkeypatch):
    """Each bad file ends the command with one line on stderr (no traceback) and exit status 2,
    before any rollout (no output file). The wording is the loader's (``worlds.mjcf``), not
    asserted here."""
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings (the NaN) to MUJOCO_LOG.TXT here
    d = _files(tmp_path)
    out = tmp_path / "o.npz"
    rc, err = _one_line_exit(["simulate", *[a.format(d=d) for a in case], "--steps", "5", "--out", str(out),
                              "--no-progress"], capsys)
    assert rc == 2 and len(err) == 1 and "Traceback" not in err[0], (rc, err)
    assert not out.exists()


def test_simulate_mjcf_of_scenery_alone_runs_and_says_it_has_no_bodies(tmp_path, capsys, monkeypatch):
    """A file of a plane alone loads as MuJoCo's does (a world of no bodies, ``worlds.from_mujoco``): the
    command runs, writes its states and says the world has 0 bodies."""
    monkeypatch.chdir(tmp_path)
    d = _files(tmp_path)
    out = tmp_path / "o.npz"
    rc = main(["simulate", "--mjcf", f"{d}/plane_alone.xml", "--steps", "5", "--out", str(out), "--no-progress"])
    text = capsys.readouterr()
    assert rc in (0, None) and out.exists(), (rc, text.err)
    assert "1 world of 0 bodies" in text.out + text.err


def test_the_solver_warning_of_batched_worlds_counts_worlds():
    """``--mjcf --worlds``'s warning counts worlds (it said "throws")."""
    from jaxcontact.simulate import solver_warning
    from jaxcontact.types import Flags

    flags = np.zeros((2, 5), np.int32)
    flags[1, 3] = int(Flags.SOLVER)
    res = np.full((2, 5), 0.2)
    line = solver_warning(flags, res, 10, "worlds")
    assert "for 1 of 2 worlds, at 1 steps in all (first at step 3; largest residual 0.2 m/s" in line, line
    assert "of 2 throws" in solver_warning(flags, res, 10)
