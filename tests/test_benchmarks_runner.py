"""The benchmarks' one runner (``python -m benchmarks NAME``, ``benchmarks/runner.py``), through its command
line (tests do not import benchmark modules): every module of ``benchmarks/`` is declared, each declared
benchmark imports and parses ``--help``, a bad part is refused by name, and benchmarks do not import each
other (what two share lives in ``benchmarks/common.py``, the runner or the package)."""

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
