"""Results that stay true: which results files were made by code that has changed since.

The one module that ``benchmarks/`` and ``studies/`` share (they do not import each other): the
provenance stamp, the JSON results writer, the import reader, and the staleness check.

Every results file (``benchmarks/results/**.json``, ``studies/*/results/**.json``; a ``.md`` beside
one is rendered from it) records the commit and the command that made it: the writers
(``write_json`` here, which ``benchmarks.common`` re-exports, and ``studies.common.write_results``)
add ``provenance`` = ``stamp()`` — the full commit, whether the work tree had uncommitted changes,
the command. This check compares, for every results file, the code it depends on at its recorded
commit with HEAD:

    python -m experiments.provenance            # the stale results and the ones with no recorded commit
    python -m experiments.provenance --all      # every results file, with its verdict
    python -m experiments.provenance --json     # the same as JSON

The code a result depends on: the module that made it (``benchmarks/<name>.py`` for
``benchmarks/results/<name>*.json``; the package ``studies/<family>/`` for
``studies/<family>/results/``) and every module of the repository it imports, directly or
lazily, found by reading the imports (``ast``) — so a change to ``jaxcontact/impacts/`` marks the
impacts results stale and not the engine benchmarks. The recorded commit: ``provenance.commit``
(if the run had uncommitted changes, the commit that then added the file, which holds them);
files written before provenance was recorded fall back to the commit that last wrote them and
are listed as such. A stale result is not wrong: it says which numbers to re-run before quoting.
Exit status 0 (it lists, it does not fail).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("jaxcontact", "benchmarks", "studies", "experiments")
RESULT_GLOBS = ("benchmarks/results/**/*.json", "studies/*/results/**/*.json")
# files that write results without changing their numbers (this module: the stamp and the writer)
NOT_MEASURED = ("experiments/provenance.py",)


def _git(*args, cwd=REPO) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else ""


def command_line(argv=None) -> str:
    """The command that is running: ``python -m <module> args`` for a module of the repository
    (``sys.argv[0]`` is its file), else ``python <script> args``."""
    argv = sys.argv if argv is None else list(argv)
    path = Path(argv[0]).resolve() if argv and argv[0] not in ("", "-c") else None
    if path is not None and path.suffix == ".py" and REPO in path.parents:
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__main__":
            parts = parts[:-1]
        head = ["python", "-m", ".".join(parts)]
    else:
        head = ["python"] + ([argv[0]] if argv else [])
    return " ".join(head + [shlex.quote(str(a)) for a in argv[1:]])


@functools.lru_cache(maxsize=1)
def _code_at_start() -> tuple:
    return _git("rev-parse", "HEAD") or None, bool(_git("status", "--porcelain", "--untracked-files=no"))


def stamp(command: str | None = None) -> dict:
    """``{"commit", "dirty", "command"}`` of the running code: the full HEAD commit and whether the
    work tree had uncommitted changes to tracked files, both as they were when this process first
    asked (the writers' modules ask when imported, so a commit made while a long run goes on is
    not recorded as its code), and the command (default: this process's)."""
    commit, dirty = _code_at_start()
    return {"commit": commit, "dirty": dirty, "command": command or command_line()}


def write_json(path: Path, obj) -> None:
    """``obj`` as JSON at ``path`` (the folder made if needed); a dict gets ``provenance`` (``stamp()``)
    unless it has one, for ``python -m experiments.provenance``."""
    path = Path(path)
    if isinstance(obj, dict) and "provenance" not in obj:
        obj = {**obj, "provenance": stamp()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=json_default) + "\n")


def json_default(x):
    """JSON for NumPy scalars and arrays and tuples (``json.dumps(..., default=json_default)``)."""
    import numpy as np

    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(f"not JSON serialisable: {type(x)}")


# ----------------------------------------------------------------------------------- the check


def _file_of(module: str) -> Path | None:
    """The file of a repository module (a package: its ``__init__.py``), or None."""
    base = REPO.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def module_name(path: Path, root: Path = REPO) -> str:
    """The dotted module name of a file below ``root`` (a package's ``__init__.py``: the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def import_statements(tree: ast.AST, module: str, is_package: bool):
    """``(imported module, [names], lineno)`` for every ``import`` / ``from … import`` in ``tree``
    (the parsed source of ``module``; ``is_package``: it is an ``__init__.py``), relative imports
    resolved. The one import reader of the staleness check and of tests/test_structure.py."""
    pkg = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [a.name for a in node.names], node.lineno


def _imports(path: Path) -> set[str]:
    """Repository modules imported anywhere in ``path`` (relative imports resolved; a name that
    is not a module counts as its module; ``importlib.import_module("…")`` calls included)."""
    mod = module_name(path)
    is_package = path.name == "__init__.py"
    pkg = mod if is_package else mod.rsplit(".", 1)[0]
    try:
        tree = ast.parse(path.read_text())
    except (SyntaxError, UnicodeDecodeError):
        return set()
    names = []
    for target, imported, _ in import_statements(tree, mod, is_package):
        names += [target] + [f"{target}.{n}" for n in imported]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            name = node.args[0].value
            names.append(pkg + name if name.startswith(".") else name)
    return {n for n in names if n.split(".")[0] in PACKAGES}


def dependencies(modules) -> list[str]:
    """Repository files reachable by imports from ``modules`` (a package: every module in it),
    with the ``__init__.py`` of every subpackage on the way. A top-level package's own
    ``__init__.py`` (``jaxcontact``'s re-exports) is followed only where it is imported by name:
    Python runs it for every submodule, so following it always would make every result depend on
    the whole package."""
    todo = []
    for m in modules:
        base = REPO.joinpath(*m.split("."))
        todo += sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    seen: set[Path] = set()
    while todo:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        init = f.parent / "__init__.py"
        if init.is_file() and f.parent.parent != REPO:
            todo.append(init)
        for m in _imports(f):
            while m and _file_of(m) is None:
                m = m.rpartition(".")[0]
            if m:
                todo.append(_file_of(m))
    return sorted(r for r in (str(p.relative_to(REPO)) for p in seen) if r not in NOT_MEASURED)


def producer(result: Path) -> list[str]:
    """The module(s) that made a results file, from where it lies."""
    rel = result.relative_to(REPO)
    if rel.parts[0] == "studies":
        return [f"studies.{rel.parts[1]}"]
    # benchmarks/results/[validation/]<name>[_suffix].json: the longest benchmark name it starts with
    names = sorted((p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem not in ("__init__", "common")),
                   key=len, reverse=True)
    own = result.with_suffix(".py")
    if own.is_file():  # a helper script stored beside its result
        return [".".join(own.relative_to(REPO).with_suffix("").parts)] + \
            [f"benchmarks.{n}" for n in names if result.stem.startswith(n)][:1]
    return [f"benchmarks.{n}" for n in names if result.stem.startswith(n)][:1]


def recorded(result: Path) -> tuple[str | None, str]:
    """(commit the result was made at, how it is known)."""
    try:
        doc = json.loads(result.read_text())
    except (OSError, json.JSONDecodeError):
        doc = None
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    last = _git("log", "-1", "--format=%H", "--", str(result.relative_to(REPO))) or None
    if isinstance(prov, dict) and prov.get("commit"):
        if prov.get("dirty") and last:
            return last, "recorded (uncommitted changes: the commit that added it)"
        return prov["commit"], "recorded"
    return last, "no recorded commit: the commit that last wrote it"


def check(paths=None) -> list[dict]:
    """One row per results file: file, producer, commit, how known, changed dependency files."""
    results = sorted({p for g in RESULT_GLOBS for p in REPO.glob(g)}) if paths is None else [Path(p).resolve() for p in paths]
    head = _git("rev-parse", "HEAD")
    rows, deps_cache = [], {}
    for res in results:
        mods = producer(res)
        key = tuple(mods)
        if key not in deps_cache:
            deps_cache[key] = dependencies(mods)
        deps = deps_cache[key]
        commit, how = recorded(res)
        if commit is None:
            changed, verdict = [], "untracked (not committed yet)"
        else:
            changed = _git("diff", "--name-only", commit, head, "--", *deps).splitlines() if deps else []
            verdict = "stale" if changed else "current"
        rows.append({"file": str(res.relative_to(REPO)), "producer": mods, "commit": commit, "known": how,
                     "verdict": verdict, "changed": changed})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="results files to check (default: all)")
    ap.add_argument("--all", action="store_true", help="list current results too")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args(argv)
    rows = check(a.files or None)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        legacy = r["known"].startswith("no recorded")
        if not (a.all or r["verdict"] != "current" or legacy):
            continue
        flag = "" if not legacy else " [no recorded commit]"
        what = f"{len(r['changed'])} changed: " + ", ".join(r["changed"][:4]) + (" …" if len(r["changed"]) > 4 else "") \
            if r["changed"] else ""
        print(f"{r['verdict']:8s} {r['file']} (made by {', '.join(r['producer']) or '?'} at "
              f"{(r['commit'] or '?')[:10]}){flag} {what}".rstrip())
    stale = sum(r["verdict"] == "stale" for r in rows)
    legacy = sum(r["known"].startswith("no recorded") for r in rows)
    print(f"{len(rows)} results files: {stale} stale, {len(rows) - stale} current; "
          f"{legacy} without a recorded commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
