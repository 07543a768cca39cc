"""The benchmarks' one runner (``python -m benchmarks NAME``, ``benchmarks/runner.py``), through its command
line (tests do not import benchmark modules): every module of ``benchmarks/`` is declared, each declared
benchmark imports and parses ``--help``, a bad part is refused by name, no benchmark keeps a command line of
its own (none has a parser, ``main`` or provenance writer of its own: read from its source), ``python -m
benchmarks.NAME`` is the same command, earlier spellings keep their meaning, and benchmarks do not import each
other (what two share lives in ``benchmarks/common.py``, the runner or the package)."""

import json

import ast
import os
import subprocess
import sys
from pathlib import Path

from experiments.provenance import import_statements, module_name

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
HELPERS = {"__init__", "__main__", "common", "runner"}
# benchmarks that still import another one, each pending its move (none now: what two share lives in
# common.py); the list only shrinks
PENDING: dict = {}
# benchmarks that still parse their own command line and write their own results: none (the last four,
# heap_cpu, mixed_speed, mjcf_census and same_physics, moved onto the runner last); the list stays empty
LEGACY: set = set()


def bench(*args, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def modules():
    return sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in HELPERS)


def test_every_benchmark_is_declared_imports_and_parses_its_help():
    r = bench("--check")
    lines = r.stdout.splitlines()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert sorted(line.split(":")[0] for line in lines) == modules(), lines
    assert all(line.endswith(": ok") for line in lines), [line for line in lines if not line.endswith(": ok")]


def test_the_listing_names_every_benchmark_and_the_parts_of_worlds():
    r = bench()
    assert r.returncode == 0, r.stderr[-3000:]
    listed = {line.split()[0] for line in r.stdout.splitlines()[2:] if line.startswith("  ") and not line.startswith("   ")}
    assert listed == set(modules())
    for part in ("stack", "collision", "heapcheck", "heapspeed", "mjx", "mjcf"):
        assert f"--only {part}:" in r.stdout


def test_an_unknown_benchmark_or_part_is_refused_by_name():
    r = bench("nosuch")
    assert r.returncode != 0 and "no benchmark 'nosuch'" in r.stderr
    r = bench("worlds", "--only", "stack,nosuch", "--out", os.devnull)
    assert r.returncode != 0 and "unknown part 'nosuch'" in r.stderr, r.stderr[-2000:]


def crossing_imports(root: Path = REPO) -> list[str]:
    """``file:line imports benchmarks.X`` for every import of one benchmark by another (helpers excepted)."""
    out = []
    for p in sorted((root / "benchmarks").glob("*.py")):
        rel = str(p.relative_to(root))
        mod = module_name(p, root)
        tree = ast.parse(p.read_text())
        for target, names, line in import_statements(tree, mod, p.name == "__init__.py"):
            targets = [f"{target}.{n}" for n in names] if target == "benchmarks" else [target]
            for t in targets:
                parts = t.split(".")
                if parts[0] == "benchmarks" and len(parts) > 1 and parts[1] not in HELPERS and t != mod \
                        and t not in PENDING.get(rel, ()):
                    out.append(f"{rel}:{line} imports {t}")
    return out


def test_benchmarks_do_not_import_each_other(tmp_path):
    assert not crossing_imports(), crossing_imports()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "a.py").write_text("from .common import log\nfrom . import runner\n")
    (tmp_path / "benchmarks" / "b.py").write_text("def f():\n    from .a import x\n    from benchmarks import a\n")
    assert crossing_imports(tmp_path) == ["benchmarks/b.py:2 imports benchmarks.a", "benchmarks/b.py:3 imports benchmarks.a"]


def own_command_line(path: Path) -> list[str]:
    """What a benchmark on the runner must not have, read from its source: an ``ArgumentParser``, a ``main``, a
    ``write_json`` (the runner's ``Results`` writes with provenance), ``machine_info`` without the runner's
    ``command``; and what it must have: ``run(args, out)`` (or its parts and ``render``) and the runner's alias as
    ``__main__``."""
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("ArgumentParser", "write_json"):
                out.append(f"{path.name}:{node.lineno} calls {name}")
            if name == "machine_info" and not any(k.arg == "command" for k in node.keywords):
                out.append(f"{path.name}:{node.lineno} machine_info without command=args.command")
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "main" in top:
        out.append(f"{path.name}:{top['main'].lineno} defines main")
    parts = "render" in top and "part_" in path.read_text()  # a benchmark of parts: part_<name>(args, res), render
    if not parts and ("run" not in top or len(top["run"].args.args) != 2):
        out.append(f"{path.name}: no run(args, out)")
    mains = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
    if not mains or "alias(" not in ast.unparse(mains[0]):
        out.append(f"{path.name}: __main__ is not the runner's alias")
    return out


def test_every_benchmark_is_on_the_runner_with_no_command_line_or_writer_of_its_own(tmp_path):
    assert not LEGACY, "every benchmark is on the runner: the legacy list stays empty"
    on_runner = modules()
    assert len(on_runner) >= 52
    offenders = [o for m in on_runner for o in own_command_line(BENCH / f"{m}.py")]
    assert not offenders, offenders
    bad = tmp_path / "b.py"
    bad.write_text("import argparse\nfrom .common import machine_info, write_json\n\ndef main(argv=None):\n"
                   "    ap = argparse.ArgumentParser()\n    write_json('x.json', {'m': machine_info('b', argv)})\n\n"
                   "if __name__ == '__main__':\n    main()\n")
    assert own_command_line(bad) == ["b.py:5 calls ArgumentParser", "b.py:6 calls write_json",
                                     "b.py:6 machine_info without command=args.command", "b.py:4 defines main",
                                     "b.py: no run(args, out)", "b.py: __main__ is not the runner's alias"]


def test_the_alias_is_the_same_command_and_options_are_checked_before_the_work():
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    alias = subprocess.run([sys.executable, "-m", "benchmarks.tier_cpu", "--help"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120)
    assert alias.returncode == 0 and alias.stdout == bench("tier_cpu", "--help").stdout, alias.stderr[-2000:]
    r = bench("cone", "--only", "slides,nosuch", "--out", os.devnull)
    assert r.returncode != 0 and "unknown part 'nosuch'" in r.stderr, r.stderr[-2000:]
    r = bench("gpu_run", "--device", "cpu", "--smoke")
    assert r.returncode != 0 and "--out: the run's folder" in r.stderr, r.stderr[-2000:]


def test_out_dir_is_the_folder_and_an_out_named_as_the_results_their_folder_and_stem(tmp_path):
    """``--out-dir D`` writes in D (made if need be) whatever D is called; ``--out D/<name>...`` (an earlier
    command's results path) writes beside it (world_law_defaults --table: one Markdown file, no simulation)."""
    table = "world_gradients_defaults.md"
    r = bench("world_law_defaults", "--table", "--out-dir", str(tmp_path / "world_law_defaults_a"))
    assert r.returncode == 0 and (tmp_path / "world_law_defaults_a" / table).is_file(), r.stderr[-2000:]
    r = bench("world_law_defaults", "--table", "--out", str(tmp_path / "b" / "world_law_defaults_b"))
    assert r.returncode == 0 and (tmp_path / "b" / table).is_file(), r.stderr[-2000:]
    assert not (tmp_path / "b" / "world_law_defaults_b").exists()


def test_mjcf_census_out_is_the_results_stem_and_merge_joins_parts(tmp_path):
    """``mjcf_census --out NAME`` is the results' stem (``--out-dir`` the folder; a path as the stem writes there),
    ``--merge`` joins parts read from the results folder, a later part's record of a file winning (no corpus,
    no simulation)."""
    def part(name, command, files, complete=True):
        (tmp_path / f"{name}.json").write_text(json.dumps({"summary": {"command": command, "sources": ["src"],
                                                                       "complete": complete}, "files": files}))
    refused = {"loads": False, "problems": ["p"], "buckets": ["b"]}
    a = {"file": "a.xml", "status": "compiled", "features": ["geom box"], "nbody": 2,
         "strict": {"loads": True, "deviation_m": 0.02, "follows": False}, "approximate": {"loads": True}}
    part("p1", "run one", [a, {"file": "b.xml", "status": "not a model"}])
    part("p2", "run two", [{**a, "strict": {"loads": True, "deviation_m": 0.001, "follows": True}},
                           {"file": "c.xml", "status": "compiled", "features": [], "nbody": 1, "strict": refused,
                            "approximate": refused}])
    r = bench("mjcf_census", "--steps", "100", "--out-dir", str(tmp_path), "--merge", "p1,p2", "--out", "merged")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((tmp_path / "merged.json").read_text())
    s = got["summary"]
    assert [f["file"] for f in got["files"]] == ["a.xml", "b.xml", "c.xml"]
    assert (s["files"], s["compiled"], s["not_models"], s["strict_loads"], s["strict_follows"]) == (3, 2, 1, 1, 1)
    assert s["command"].startswith("run one ; run two ; merged by python -m benchmarks mjcf_census") and s["complete"]
    assert "provenance" in got and (tmp_path / "merged.md").read_text().startswith("# MJCF census")
    r = bench("mjcf_census", "--out-dir", str(tmp_path), "--merge", "p1", "--out", str(tmp_path / "sub" / "alone"))
    assert r.returncode == 0 and (tmp_path / "sub" / "alone.json").is_file(), r.stderr[-2000:]


def test_same_physics_runs_as_a_script_against_a_tree_and_its_out_is_the_finals_file(tmp_path):
    """``PYTHONPATH=<tree> python benchmarks/same_physics.py`` (how a refactor's base is measured) parses its
    command line through the runner; its ``--out`` is the finals' npz."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, str(BENCH / "same_physics.py"), "--help"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "usage: python -m benchmarks same_physics" in r.stdout, r.stderr[-2000:]
    assert "--out FINALS" in r.stdout and "--compare" in r.stdout and "--throws" in r.stdout
