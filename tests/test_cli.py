"""The command line as a whole: --version, help text of every option (default and unit), the optional
plotting dependency, toss identity by content (not by path) and checkpoints without absolute paths."""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxcontact
from jaxcontact.cli import build_parser, main


def _walk(parser, path=()):
    yield path, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _walk(sub, path + (name,))


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"jaxcontact {jaxcontact.__version__}"
    assert jaxcontact.__version__.count(".") >= 2


def test_every_option_has_help_and_shows_its_default():
    parsers = list(_walk(build_parser()))
    assert len(parsers) >= 15  # root, families and their sub-commands
    for path, p in parsers:
        text = p.format_help()
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction)):
                continue
            opt = a.option_strings[0] if a.option_strings else a.dest
            assert a.help, f"jaxcontact {' '.join(path)} {opt}: no help text"
            if a.default is not None and a.default is not argparse.SUPPRESS:
                # the help of this option (up to the next option) says "default"
                m = re.search(r"\n  " + re.escape(opt) + r"[ \n,]", text[text.index("\noptions:"):])
                start = text.index("\noptions:") + m.start() + 1
                end = text.find("\n  -", start + 1)
                chunk = text[start:end if end > 0 else None]
                assert "default" in chunk.lower(), f"jaxcontact {' '.join(path)} {opt}: default not shown:\n{chunk}"


def _no_work_parser(calls):
    """build_parser whose sub-commands only record that they were called."""
    def build():
        parser = build_parser()
        for _, p in _walk(parser):
            if p.get_default("func") is not None:
                p.set_defaults(func=lambda args: calls.append(args) or 0)
        return parser
    return build


@pytest.mark.parametrize("argv", [
    ["simulate", "--out", "{tmp}/s.npz", "--plot", "{tmp}/s.png"],
    ["contactnets", "evaluate", "--checkpoint", "{tmp}/ckpt", "--plot", "{tmp}/r.png"],
    ["impacts", "evaluate", "--train", "{tmp}/a.npz", "--test", "{tmp}/b.npz", "--plots", "{tmp}/figs"],
    ["sysid", "--synthetic", "--plot", "{tmp}/fit.png"],
])
def test_plot_options_without_matplotlib_fail_before_any_work(argv, tmp_path, monkeypatch, capsys):
    import jaxcontact.cli as cli

    mpl = pytest.importorskip("matplotlib")
    calls = []
    monkeypatch.setattr(cli, "build_parser", _no_work_parser(calls))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    rc = cli.main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and not calls  # nothing was computed
    assert len(err.splitlines()) == 1 and 'pip install "jaxcontact[plot]"' in err, err
    assert not any(tmp_path.iterdir())
    # with matplotlib present the same command line reaches the sub-command
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    assert cli.main([a.format(tmp=tmp_path) for a in argv]) == 0 and len(calls) == 1


def test_plot_modules_without_matplotlib_say_how_to_install(monkeypatch):
    from jaxcontact.plotting import PlottingUnavailable
    from jaxcontact.contactnets import plots as cn_plots
    from jaxcontact.sysid import plots as sysid_plots

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.delitem(sys.modules, "jaxcontact.impacts.plots", raising=False)
    for call in (lambda: cn_plots.plot_rollout(None, None, None, "x.png"),
                 lambda: cn_plots.plot_data_efficiency({}, "x.png"),
                 lambda: sysid_plots.plot_history([], "x.png"),
                 lambda: __import__("jaxcontact.impacts.plots")):
        with pytest.raises(PlottingUnavailable, match=r'pip install "jaxcontact\[plot\]"'):
            call()


def test_package_and_commands_import_without_matplotlib():
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import jaxcontact, jaxcontact.contactnets, jaxcontact.dacm, jaxcontact.sysid, jaxcontact.impacts\n"
        "import jaxcontact.chains, jaxcontact.contactnets.train, jaxcontact.dacm.evaluate\n"
        "from jaxcontact.cli import build_parser; build_parser()\n"
        "assert sys.modules['matplotlib'] is None\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(jaxcontact.__file__).parents[1]), JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ toss identity, checkpoint paths


def _absolute_paths(obj, found):
    if isinstance(obj, dict):
        for v in obj.values():
            _absolute_paths(v, found)
    elif isinstance(obj, list):
        for v in obj:
            _absolute_paths(v, found)
    elif isinstance(obj, str) and (os.path.isabs(obj) or "/tmp" in obj or str(Path.cwd()) in obj):
        found.append(obj)
    return found


@pytest.fixture(scope="module")
def tiny_lcp_checkpoint(tmp_path_factory):
    """Six short real tosses in a file and an lcp checkpoint of four of them (no training: the
    checkpoint's meta as train writes it, with fixed Coulomb parameters)."""
    from jaxcontact.contactnets.data import load_tosses, split_train_val
    from jaxcontact.contactnets.train import TrainConfig, _meta, save_checkpoint

    d = tmp_path_factory.mktemp("cn")
    full = load_tosses()
    sub = full.subset(range(6))
    sub.states = [s[:12] for s in sub.states]
    sub.save(d / "tosses.npz")
    data = load_tosses(d / "tosses.npz")
    tr, va = split_train_val(data.n_tosses, 4, 0)
    meta = _meta("lcp", data, 4, 0, TrainConfig(), tr, va)
    meta["lcp"] = {"mu": 0.15, "restitution": 0.0, "ground": 0.0}
    save_checkpoint(d / "ckpt", meta, None)
    return d, data, tr, va


def test_held_out_tosses_are_matched_by_content_not_by_path(tiny_lcp_checkpoint, tmp_path, monkeypatch, capsys):
    d, data, tr, va = tiny_lcp_checkpoint
    ids = np.asarray(data.toss_ids)
    want_held = sorted(set(ids.tolist()) - set(ids[tr].tolist()) - set(ids[va].tolist()))
    assert len(want_held) == 2
    (tmp_path / "link.npz").symlink_to(d / "tosses.npz")
    (tmp_path / "copy.npz").write_bytes((d / "tosses.npz").read_bytes())
    monkeypatch.chdir(d)
    results = []
    for f in (str(d / "tosses.npz"), "tosses.npz", str(tmp_path / "link.npz"), str(tmp_path / "copy.npz")):
        assert main(["contactnets", "evaluate", "--checkpoint", "ckpt", "--data", f, "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out))
    for r in results:
        assert r["held_out_ids"] == want_held
        assert r["train_ids"] == sorted(ids[tr].tolist()) and r["val_ids"] == sorted(ids[va].tolist())
        assert r["held_out"] == results[0]["held_out"] and r["held_out"]["n_tosses"] == 2
        assert r["data"]["same_file_as_training"] and "content hash" in r["toss_match"]
        assert r["units"]["rot_error_deg"].startswith("deg") and "block widths" in r["units"]["pos_error"]
    # text mode: a units column and the ids
    assert main(["contactnets", "evaluate", "--checkpoint", "ckpt", "--data", "tosses.npz", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "block widths" in out and "deg" in out and f"held_out_ids   {want_held}" in out


def test_held_out_tosses_found_inside_a_larger_file(tiny_lcp_checkpoint, tmp_path, capsys):
    """The checkpoint's tosses inside another file (more tosses, other order) keep their roles."""
    from jaxcontact.contactnets.data import load_tosses

    d, data, tr, va = tiny_lcp_checkpoint
    full = load_tosses()
    big = full.subset([9, 5, 4, 3, 2, 1, 0, 8])
    big.states = [s[:12] for s in big.states]
    big.save(tmp_path / "big.npz")
    assert main(["contactnets", "evaluate", "--checkpoint", str(d / "ckpt"), "--data", str(tmp_path / "big.npz"),
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    ids = np.asarray(data.toss_ids)
    assert sorted(r["train_ids"]) == sorted(ids[tr].tolist())
    assert sorted(r["val_ids"]) == sorted(ids[va].tolist())
    assert len(r["held_out_ids"]) == 8 - 4 and not r["data"]["same_file_as_training"]


def test_contactnets_checkpoint_has_no_absolute_path(tiny_lcp_checkpoint):
    d, data, _, _ = tiny_lcp_checkpoint
    meta = json.loads((d / "ckpt" / "meta.json").read_text())
    assert _absolute_paths(meta, []) == []
    assert meta["data_file"] == "tosses.npz" and meta["data_sha256"] == data.file_sha256
    assert "data_source" not in meta


def test_dacm_checkpoint_data_record_has_no_absolute_path(tmp_path):
    from jaxcontact.dacm.cli import data_record

    (tmp_path / "data").mkdir()
    f = tmp_path / "data" / "box.npz"
    np.savez(f, seed=np.array(3), slide_fraction=np.array(0.0))
    rec = data_record(f, tmp_path / "ckpt" / "box", dict(np.load(f)))
    assert _absolute_paths(rec, []) == []
    assert (tmp_path / "ckpt" / "box" / rec["data_file"]).resolve() == f.resolve()
    assert rec["data_seed"] == 3 and rec["data_tip_seed"] is None and len(rec["data_sha256"]) == 64


def test_contactnets_presets_and_explicit_flags():
    from jaxcontact.contactnets.cli import resolve_preset

    parse = lambda *a: build_parser().parse_args(["contactnets", "train", "--out", "x", *a])
    assert resolve_preset(parse()) == {"lr": None, "schedule": "cosine", "deep_features": "pR"}
    assert resolve_preset(parse("--preset", "paper")) == {"lr": 5e-4, "schedule": "constant", "deep_features": "pR"}
    assert resolve_preset(parse("--preset", "paper", "--variant", "e2e"))["lr"] == 3e-5
    assert resolve_preset(parse("--preset", "paper", "--lr", "1e-3", "--schedule", "cosine")) == {
        "lr": 1e-3, "schedule": "cosine", "deep_features": "pR"}


# ------------------------------------------------------------------ fail before computing


def _one_line_exit(argv, capsys, code=2):
    """Run the command line; (exit status, the one stderr line, seconds)."""
    import time

    t0 = time.perf_counter()
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse
        rc = e.code
    dt = time.perf_counter() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == code and len(err) == 1, (rc, err)
    assert "Traceback" not in err[0]
    return err[0], dt


@pytest.mark.parametrize("argv, says", [
    (["simulate", "--steps", "0"], "--steps"),
    (["simulate", "--throws", "-3"], "--throws"),
    (["simulate", "--throws", "two"], "--throws"),
    (["simulate", "--dt", "inf"], "--dt"),
    (["simulate", "--dt", "nan"], "--dt"),
    (["simulate", "--dt", "0"], "--dt"),
    (["simulate", "--mu", "-0.1"], "--mu"),
    (["simulate", "--mu", "nan"], "--mu"),
    (["simulate", "--restitution", "1.5"], "--restitution"),
    (["simulate", "--out", "{tmp}/no/such/dir/s.npz"], "does not exist"),
    (["simulate", "--out", "{tmp}"], "is a directory"),
    (["simulate", "--plot", "{tmp}"], "is a directory"),
    (["dacm", "evaluate", "--checkpoint", "{tmp}/ck", "--steps", "0"], "--steps"),
    (["dacm", "generate", "--throws", "0", "--out", "{tmp}/d.npz"], "--throws"),
    (["dacm", "train", "--data", "{tmp}/d.npz", "--out", "{tmp}/ck", "--clf-epochs", "0"], "--clf-epochs"),
    (["dacm", "chain", "--checkpoint", "{tmp}/ck", "--swings", "0"], "--swings"),
    (["sysid", "--synthetic", "--window", "0"], "--window"),
    (["sysid", "--synthetic", "--substeps", "0"], "--substeps"),
    (["sysid", "--synthetic", "--schedule", "fast"], "--schedule"),
    (["contactnets", "train", "--out", "{tmp}/ck", "--max-epochs", "0"], "--max-epochs"),
    (["contactnets", "evaluate", "--checkpoint", "{tmp}/ck", "--plot-toss", "-1"], "--plot-toss"),
    (["contactnets", "evaluate", "--checkpoint", "{tmp}/ck", "--per-toss", "{tmp}/no/p.json"], "does not exist"),
    (["impacts", "evaluate", "--train", "a", "--test", "b", "--learned-steps", "0"], "--learned-steps"),
    (["impacts", "split", "--data", "a", "--out-dir", "/proc/version/sub"], "not a directory"),
    # names over the file system's limit (255 bytes) and directories that take no files (/proc),
    # refused while parsing (issue 38: tracebacks after the work)
    (["simulate", "--out", "{tmp}/" + "n" * 300], "longer than the file system's limit"),
    (["simulate", "--out", "{tmp}/" + "n" * 253], "longer than the file system's limit"),  # with ".npz"
    (["simulate", "--plot", "{tmp}/" + "p" * 300 + ".png"], "longer than the file system's limit"),
    (["simulate", "--out", "/proc/s.npz"], "cannot create files in /proc"),
    (["sysid", "--data", "x.npz", "--plot", "{tmp}/" + "p" * 300 + ".png"], "longer than the file system's limit"),
    (["sysid", "--data", "x.npz", "--plot", "/proc/x.png", "--json"], "cannot create files in /proc"),
    (["impacts", "split", "--data", "a", "--out-dir", "{tmp}/" + "d" * 300], "longer than the file system's limit"),
    (["impacts", "split", "--data", "a", "--out-dir", "{tmp}/ok/" + "d" * 300 + "/x"], "longer than"),
    (["impacts", "split", "--data", "a", "--out-dir", "/proc/split"], "cannot create files in /proc"),
    (["impacts", "evaluate", "--train", "a", "--test", "b", "--plots", "/proc/figs"], "/proc"),
    (["contactnets", "evaluate", "--checkpoint", "{tmp}/ck", "--per-toss", "{tmp}/" + "t" * 300 + ".json"],
     "longer than the file system's limit"),
    (["contactnets", "evaluate", "--checkpoint", "{tmp}/ck", "--per-toss", "/proc/p.json"], "/proc"),
    (["dacm", "generate", "--out", "{tmp}/" + "g" * 300 + ".npz"], "longer than the file system's limit"),
    # seeds out of range (the issue: an OverflowError traceback from the random generator)
    (["simulate", "--seed", "1180591620717411303424"], "--seed"),
    (["simulate", "--seed", "4294967296"], "--seed"),
    (["dacm", "generate", "--out", "{tmp}/d.npz", "--seed", "1180591620717411303424"], "--seed"),
    (["dacm", "evaluate", "--checkpoint", "{tmp}/ck", "--seed", "-1"], "--seed"),
    (["sysid", "--synthetic", "--seed", "1180591620717411303424"], "--seed"),
    (["sysid", "--synthetic", "--sample-period", "0.01"], "--sample-period is the sample period of a --data file"),
    (["sysid", "--synthetic", "--substeps", "4"], "--substeps 4 contradicts the synthetic data"),
    (["sysid", "--data", "x.npz", "--sample-period", "0"], "--sample-period"),
    (["impacts", "split", "--data", "a", "--out-dir", "{tmp}/o", "--seed", "99999999999999999999"], "--seed"),
    (["contactnets", "train", "--out", "{tmp}/ck", "--seed", "99999999999999999999"], "--seed"),
])
def test_bad_counts_values_and_output_paths_fail_in_one_line_before_any_work(argv, says, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in argv]
    if argv[0] == "simulate" and "--out" not in argv:
        argv += ["--out", str(tmp_path / "s.npz")]
    line, dt = _one_line_exit(argv, capsys)
    assert says in line and "error" in line, line
    assert dt < 5 and sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written


def test_unwritable_output_directory_fails_before_any_work(tmp_path, capsys, monkeypatch):
    import jaxcontact.cliargs as cliargs

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.geteuid() == 0:  # root may write anywhere: deny it the way a read-only directory would
        real = os.access
        monkeypatch.setattr(cliargs.os, "access", lambda p, m: False if Path(p) == ro else real(p, m))
    try:
        for argv in (["simulate", "--out", str(ro / "s.npz")], ["simulate", "--out", str(tmp_path / "s"),
                                                                 "--plot", str(ro / "f.png")],
                     ["impacts", "split", "--data", "x.npz", "--out-dir", str(ro / "split")]):
            line, _ = _one_line_exit(argv, capsys)
            assert "not writable" in line and str(ro) in line, line
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_simulate_refuses_what_does_not_fit_in_memory_instantly(tmp_path, capsys):
    from jaxcontact.cliargs import check_memory

    line, dt = _one_line_exit(["simulate", "--throws", "200000000", "--steps", "800", "--out", str(tmp_path / "s"),
                               "--no-progress"], capsys)
    assert "needs about" in line and "available" in line and "fewer --throws or --steps" in line, line
    assert dt < 10 and not any(tmp_path.iterdir())
    with pytest.raises(MemoryError, match=r"needs about 2.0 GiB of memory but 1.0 GiB is available; hint"):
        check_memory(2 * 2**30, "x", "hint", available=2**30)
    check_memory(2**30, "x", "hint", available=2 * 2**30)


@pytest.mark.slow
def test_simulate_prints_the_file_it_wrote_and_a_failed_plot_comes_after_it(tmp_path, capsys, monkeypatch):
    import jaxcontact.simulate as S

    assert main(["simulate", "--throws", "2", "--steps", "3", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'run.npz'}:" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]
    f = np.load(tmp_path / "run.npz")
    assert f["states"].shape == (2, 4, 13) and float(f["sample_period"]) == float(f["engine_dt"]) == 0.002

    # results first: the trajectories are written and said before --plot; a failing figure is one
    # line after them and exit status 2
    def broken(*a, **k):
        raise RuntimeError("the figure could not be drawn")

    monkeypatch.setattr(S, "plot_trajectories", broken)
    rc = main(["simulate", "--throws", "2", "--steps", "3", "--out", str(tmp_path / "again"), "--no-progress",
               "--plot", str(tmp_path / "again.png")])
    cap = capsys.readouterr()
    assert rc == 2 and f"wrote {tmp_path / 'again.npz'}:" in cap.out
    assert cap.err.strip() == ("jaxcontact: error: --plot: the figure could not be drawn (the result was written "
                               "before it)")
    assert np.load(tmp_path / "again.npz")["states"].shape == (2, 4, 13)


def test_plot_toss_out_of_range_is_refused_before_the_rollouts(tiny_lcp_checkpoint, tmp_path, capsys, monkeypatch):
    import jaxcontact.contactnets.evaluate as E

    pytest.importorskip("matplotlib")
    d, data, _, _ = tiny_lcp_checkpoint
    monkeypatch.setattr(E, "rollout_tosses", lambda *a, **k: pytest.fail("rolled out before checking --plot-toss"))
    line, _ = _one_line_exit(["contactnets", "evaluate", "--checkpoint", str(d / "ckpt"), "--data",
                              str(d / "tosses.npz"), "--plot", str(tmp_path / "r.png"), "--plot-toss", "999"], capsys)
    assert "--plot-toss 999" in line and "0..5" in line, line
    assert not any(tmp_path.iterdir())


def test_os_errors_and_ctrl_c_anywhere_are_one_line(tmp_path, monkeypatch, capsys):
    import jaxcontact.cli as cli

    def fail(exc):
        def build():
            parser = build_parser()
            for _, p in _walk(parser):
                if p.get_default("func") is not None:
                    p.set_defaults(func=lambda args: (_ for _ in ()).throw(exc))
            return parser
        monkeypatch.setattr(cli, "build_parser", build)

    argv = ["simulate", "--out", str(tmp_path / "s.npz")]
    for exc, want in ((PermissionError(13, "Permission denied", "/data/x.npz"), "Permission denied (/data/x.npz)"),
                      (OSError(28, "No space left on device", "/data/x.npz"), "No space left on device (/data/x.npz)"),
                      (IsADirectoryError(21, "Is a directory", "/data"), "Is a directory (/data)")):
        fail(exc)
        line, _ = _one_line_exit(argv, capsys)
        assert line == f"jaxcontact: error: {want}"
        with pytest.raises(type(exc)):  # --debug: the traceback
            cli.main(["--debug"] + argv)
    fail(KeyboardInterrupt())
    line, _ = _one_line_exit(argv, capsys, code=130)
    assert line == "jaxcontact: interrupted"


@pytest.mark.parametrize("status", ["empty", "file"])
def test_contactnets_train_refuses_a_non_empty_out_before_loading_anything(status, tmp_path, capsys, monkeypatch):
    import jaxcontact.contactnets.data as cd

    out = tmp_path / "ck"
    if status == "empty":
        out.mkdir()
        (out / "meta.json").write_text("{}")
    else:
        out.write_text("x")
    monkeypatch.setattr(cd, "load_tosses", lambda *a, **k: pytest.fail("loaded data before checking --out"))
    line, dt = _one_line_exit(["contactnets", "train", "--out", str(out), "--no-progress"], capsys)
    assert ("--force" if status == "empty" else "not a directory") in line and dt < 5, line


@pytest.mark.slow
def test_ctrl_c_during_training_saves_best_so_far_marked_interrupted(tiny_lcp_checkpoint, tmp_path, capsys):
    """contactnets train in a subprocess, SIGINT once its first checkpoint is written: one line on
    stderr, exit status 130, the checkpoint loads and is marked interrupted; evaluate warns."""
    import signal
    import time

    from jaxcontact.contactnets.train import load_checkpoint

    d, *_ = tiny_lcp_checkpoint
    out = tmp_path / "cn"
    env = dict(os.environ, PYTHONPATH=str(Path(jaxcontact.__file__).parents[1]), JAX_PLATFORMS="cpu",
               TF_CPP_MIN_LOG_LEVEL="3")
    # the child handles Ctrl-C as one started from a terminal does, whatever this runner's own SIGINT
    # disposition (a suite launched as a background job of a non-interactive shell ignores SIGINT,
    # and an ignored signal stays ignored across exec, so `python -m` alone would never see it)
    start = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "runpy.run_module('jaxcontact.cli', run_name='__main__', alter_sys=True)")
    cmd = [sys.executable, "-c", start, "contactnets", "train", "--data", str(d / "tosses.npz"),
           "--tosses", "4", "--out", str(out), "--max-steps", "1000000", "--max-epochs", "1000000",
           "--patience", "1000000", "--batch-size", "8", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        while not (out / "meta.json").exists():  # the epoch-0 checkpoint: training has started
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "training did not start"
            time.sleep(0.2)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = err.strip().splitlines()
    assert proc.returncode == 130 and len(lines) == 1, err
    assert lines[0].startswith("interrupted: saved best-so-far checkpoint (epoch ") and str(out) in lines[0]
    meta, theta = load_checkpoint(out)
    assert meta["status"] == "interrupted" and theta is not None and meta["reached"]["step"] >= 0
    assert not [p for p in tmp_path.iterdir() if p.name != "cn"]  # no temporary folders left
    assert main(["contactnets", "evaluate", "--checkpoint", str(out), "--data", str(d / "tosses.npz"), "--json"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning:") and "interrupted" in err[0]


def _fake_trajectories(path, samples=9):
    """A measured-data file for sysid (no engine step recorded): one still cube on the ground."""
    S = np.zeros((1, samples, 13))
    S[..., 2], S[..., 3] = 0.05, 1.0
    np.savez(path, states=S, dt=0.01, gravity=9.81)
    return path


def _sizes_at_ten_times_the_memory():
    """Size options at which the bare minimum of each command (one copy of its trajectories or
    weights) is 10x the memory available now."""
    from jaxcontact.cliargs import available_memory

    ten = 10 * (available_memory() or 2**40)
    per = lambda nbytes: str(int(ten // nbytes) + 1)
    return {
        "simulate": ["simulate", "--throws", per(801 * 13 * 8), "--out", "{tmp}/s.npz"],
        "sysid --synthetic": ["sysid", "--synthetic", "--throws", per(401 * 13 * 8)],
        "sysid --substeps": ["sysid", "--data", "{data}/traj.npz", "--substeps", per(2 * 4 * 13 * 8)],
        "dacm generate": ["dacm", "generate", "--throws", per(801 * 13 * 8), "--out", "{tmp}/d.npz"],
        "dacm train": ["dacm", "train", "--data", "{data}/dacm.npz", "--out", "{tmp}/ck",
                       "--hidden-scale", str((ten / 4 / (512 * 360 + 360 * 180)) ** 0.5)],
        "dacm evaluate": ["dacm", "evaluate", "--checkpoint", "{tmp}/ck", "--throws", per(801 * 13 * 8)],
        "dacm chain": ["dacm", "chain", "--checkpoint", "{tmp}/ck", "--swings", per(501 * 2 * 13 * 8)],
        "dacm chain-data": ["dacm", "chain-data", "--data", "{data}/dacm.npz", "--out", "{tmp}/c.npz",
                            "--tip-throws", per(401 * 13 * 8)],
        "contactnets train": ["contactnets", "train", "--out", "{tmp}/ck", "--batch-size", per(2 * 13 * 8)],
        "contactnets train --inner-iters": ["contactnets", "train", "--out", "{tmp}/ck", "--inner-iters", per(8)],
        "impacts evaluate": ["impacts", "evaluate", "--train", "{data}/a.npz", "--test", "{data}/b.npz",
                             "--learned-steps", per(8)],
    }


@pytest.mark.parametrize("name", list(_sizes_at_ten_times_the_memory()))
def test_every_size_option_is_checked_against_memory_before_any_work(name, tmp_path, tmp_path_factory, capsys,
                                                                    fake_dacm_data):
    """Issue 38: dacm train --hidden-scale and dacm evaluate --throws were killed by the kernel, sysid
    --substeps 1000000 ended in a RESOURCE_EXHAUSTED traceback. At 10x the memory every command
    says the estimate and what is available in one line, exit status 2, before any work."""
    data = tmp_path_factory.mktemp("inputs")
    fake_dacm_data(data / "dacm.npz")
    _fake_trajectories(data / "traj.npz")
    argv = [a.format(tmp=tmp_path, data=data) for a in _sizes_at_ten_times_the_memory()[name]]
    line, dt = _one_line_exit(argv + ["--no-progress"] * (argv[0] in ("simulate", "sysid")), capsys)
    assert "needs about" in line and "is available" in line and "memory" in line, line
    assert dt < 10 and not any(tmp_path.iterdir()), (dt, list(tmp_path.iterdir()))


@pytest.mark.parametrize("content", ["empty", "truncated", "text", "npy"])
@pytest.mark.parametrize("command", [
    ["sysid", "--data", "{f}"],
    ["impacts", "split", "--data", "{f}", "--out-dir", "{tmp}/split"],
    ["impacts", "evaluate", "--train", "{f}", "--test", "{f}"],
    ["dacm", "train", "--data", "{f}", "--out", "{tmp}/ck"],
    ["contactnets", "train", "--data", "{f}", "--out", "{tmp}/ck"],
])
def test_unreadable_npz_files_are_one_line_for_every_command(command, content, tmp_path_factory, capsys):
    """One reader (``files.read_npz``) for every command's .npz input: an empty, truncated, plain-text
    or single-array file is one line naming it (issue 38: tracebacks from sysid and impacts)."""
    d = tmp_path_factory.mktemp("bad")
    f = d / "in.npz"
    if content == "empty":
        f.write_bytes(b"")
    elif content == "truncated":
        np.savez(f, states=np.zeros((50, 13)), dt=0.01)
        f.write_bytes(f.read_bytes()[:-200])
    elif content == "text":
        f.write_text("t,x,y,z\n0,0,0,1\n")
    else:
        with open(f, "wb") as fh:
            np.save(fh, np.zeros(3))
    out = d / "out"
    out.mkdir()
    line, _ = _one_line_exit([a.format(f=f, tmp=out) for a in command], capsys)
    assert str(f) in line and ("not a readable .npz archive" in line or "not an .npz archive" in line), line
    assert not any(out.iterdir())

