"""The repository's shape: no import cycles in the package (lazy imports included), jaxopt only
under ``jaxcontact/solvers``, no private names imported across modules, the layers' rule
(``studies/`` and ``benchmarks/`` do not import each other, tests import neither, the package imports
none of them; docs/ARCHITECTURE.md), and the map itself short enough to read."""

import ast
from pathlib import Path

from experiments.provenance import import_statements, module_name

PKG = Path(__file__).resolve().parents[1] / "jaxcontact"
REPO = PKG.parent
# what each top-level folder may not import (the layers, docs/ARCHITECTURE.md): experiments are
# built on the package; benchmarks and studies share only the package and ``experiments/``
FORBIDDEN = {
    "jaxcontact": {"benchmarks", "studies", "experiments", "tests"},
    "experiments": {"benchmarks", "studies", "tests"},
    "benchmarks": {"studies", "tests"},
    "studies": {"benchmarks", "tests"},
    "tests": {"benchmarks", "studies"},
}


def _module_name(path: Path) -> str:
    return module_name(path, PKG.parent)


def _imports(path: Path):
    """(imported module, [names], lineno) for every import in the file, relative ones resolved."""
    return import_statements(ast.parse(path.read_text()), _module_name(path), path.name == "__init__.py")


def _graph():
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph = {m: set() for m in files}
    for m, p in files.items():
        for target, names, _ in _imports(p):
            if not target.startswith("jaxcontact"):
                continue
            # `from pkg import sub` imports the submodule pkg.sub
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in files]
            deps = subs if subs and len(subs) == len(names) else [target] + subs
            for t in deps:
                if t in files and t != m:
                    graph[m].add(t)
    return files, graph


def _ancestors(m):
    parts = m.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycles():
    files, graph = _graph()
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    edges = {m: {t for t in ts if t not in _ancestors(m)} for m, ts in graph.items()}
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_jaxopt_only_in_the_solvers_package():
    offenders = []
    for p in PKG.rglob("*.py"):
        for target, _, line in _imports(p):
            if target.split(".")[0] == "jaxopt" and "solvers" not in p.relative_to(PKG).parts:
                offenders.append(f"{p.relative_to(PKG)}:{line}")
    assert not offenders, offenders


def test_no_private_names_across_modules():
    offenders = []
    for p in PKG.rglob("*.py"):
        for target, names, line in _imports(p):
            if not target.startswith("jaxcontact"):
                continue
            private = lambda n: n.startswith("_") and not (n.startswith("__") and n.endswith("__"))
            if any(private(part) for part in target.split(".")) or any(private(n) for n in names):
                offenders.append(f"{p.relative_to(PKG)}:{line} {target} {names}")
    assert not offenders, offenders


def test_every_law_implements_the_protocol():
    from jaxcontact.contactnets.laws import ContactNetsLaw, E2ELaw
    from jaxcontact.dacm.law import DACMLaw, PDDLaw
    from jaxcontact.laws import CoulombLCP, NoContact, RelaxedCoulomb
    from jaxcontact.laws.base import ContactLaw

    for cls in (CoulombLCP, RelaxedCoulomb, NoContact, DACMLaw, PDDLaw, ContactNetsLaw, E2ELaw):
        law = cls()
        assert isinstance(law, ContactLaw), cls
        hash(law)  # a jit static argument


def test_results_record_their_commit_and_the_check_follows_imports(tmp_path):
    """Results files written through the helpers carry provenance (commit, command); the
    staleness check's dependencies are the import closure of the module that made them."""
    import json
    import subprocess

    from experiments import provenance

    deps = provenance.dependencies(["studies.impacts"])
    assert "jaxcontact/impacts/models.py" in deps and "studies/impacts/__main__.py" in deps
    assert "jaxcontact/dynamics.py" not in deps  # the 3D engine does not make the impacts numbers
    assert "jaxcontact/solvers/lcp.py" in provenance.dependencies(["benchmarks.stress"])
    assert provenance.producer(PKG.parent / "benchmarks/results/validation/sysid_random_starts_val1.json") == \
        ["benchmarks.sysid_random_starts"]
    provenance.write_json(tmp_path / "r.json", {"x": 1})
    prov = json.loads((tmp_path / "r.json").read_text())["provenance"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PKG.parent, capture_output=True, text=True).stdout.strip()
    assert prov["commit"] == (head or None) and prov["command"].startswith("python")
    assert provenance.command_line([str(PKG.parent / "benchmarks/stress.py"), "--quick"]) == \
        "python -m benchmarks.stress --quick"


def layer_offenders(root: Path = REPO) -> list[str]:
    """``file:line imported`` for every import (``import``, ``from … import``, relative ones
    resolved, lazy ones included, ``importlib.import_module("…")`` with a literal name) that crosses
    the layers' rule in ``FORBIDDEN``."""
    out = []
    for top, banned in FORBIDDEN.items():
        for p in sorted((root / top).rglob("*.py")):
            mod = module_name(p, root)
            tree = ast.parse(p.read_text())
            found = [(t, line) for t, _, line in import_statements(tree, mod, p.name == "__init__.py")]
            found += [(n.args[0].value, n.lineno) for n in ast.walk(tree)
                      if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == "import_module"
                      and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)
                      and not n.args[0].value.startswith(".")]
            out += [f"{p.relative_to(root)}:{line} imports {t}" for t, line in found if t.split(".")[0] in banned]
    return out


def test_studies_benchmarks_and_tests_keep_to_their_layers():
    """studies/ and benchmarks/ do not import each other (what they share lives in the package or in
    experiments/), tests import neither (a test may run one as a command), the package imports none."""
    offenders = layer_offenders()
    assert not offenders, "imports across the layers (docs/ARCHITECTURE.md): " + "; ".join(offenders)


def test_the_layer_rule_catches_a_crossing_import(tmp_path):
    """The rule above can fail: a copy of the layout with one bad import of each kind."""
    for top in FORBIDDEN:
        (tmp_path / top).mkdir()
        (tmp_path / top / "__init__.py").write_text("")
    (tmp_path / "studies" / "a.py").write_text("def f():\n    from benchmarks.common import log\n")
    (tmp_path / "benchmarks" / "b.py").write_text("import studies.common\n")
    (tmp_path / "tests" / "test_c.py").write_text("import importlib\nimportlib.import_module('benchmarks.stress')\n")
    (tmp_path / "benchmarks" / "ok.py").write_text("from . import common\nfrom experiments.provenance import stamp\n")
    assert sorted(layer_offenders(tmp_path)) == ["benchmarks/b.py:1 imports studies.common",
                                                 "studies/a.py:2 imports benchmarks.common",
                                                 "tests/test_c.py:2 imports benchmarks.stress"]


def test_the_architecture_map_stays_readable():
    """docs/ARCHITECTURE.md, the page a newcomer reads first: lines of at most 120 characters, about
    200 lines at most (the family pages hold the detail)."""
    lines = (REPO / "docs" / "ARCHITECTURE.md").read_text().splitlines()
    long = [f"line {i}: {len(l)} characters" for i, l in enumerate(lines, 1) if len(l) > 120]
    assert not long, long
    assert len(lines) <= 200, len(lines)


def test_the_architecture_map_names_what_exists():
    """The map stays true where a test can tell: every file it names (`x.py`, `dir/x.py`, `x.cc`) exists in
    the repository, and it names every top-level module and subpackage of ``jaxcontact`` and every module
    of ``worlds/`` (the step's house); the families' own modules are on their pages (docs/*.md)."""
    import re

    text = (REPO / "docs" / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"`([A-Za-z0-9_/]+\.(?:py|cc|h))`", text))
    files = [p for p in REPO.rglob("*") if p.suffix in (".py", ".cc", ".h") and ".git" not in p.parts]
    missing = sorted(n for n in named if not any(p.as_posix().endswith("/" + n) for p in files))
    assert not missing, f"docs/ARCHITECTURE.md names files that do not exist: {missing}"
    pkg = REPO / "jaxcontact"
    bare = {n.rsplit("/", 1)[-1] for n in named}
    wanted = [p for p in pkg.glob("*.py") if p.name != "__init__.py"] + \
             [p for p in (pkg / "worlds").glob("*.py") if p.name != "__init__.py"]
    unnamed = sorted(p.relative_to(pkg).as_posix() for p in wanted if p.name not in bare)
    subpackages = sorted(p.name for p in pkg.iterdir() if (p / "__init__.py").exists() and f"`{p.name}/`" not in text)
    assert not unnamed and not subpackages, f"docs/ARCHITECTURE.md does not name {unnamed + subpackages}"


def test_every_planted_bug_still_finds_its_target():
    """``tests/mutations.py``: each mutation's ``old`` text occurs in its file exactly ``count`` times, its
    name is unique and its catching tests' files exist, so a change to the engine that moves a target is
    caught here, in the default tier, not only when the mutation check runs (a merge once left four stale)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("planted_bugs", REPO / "tests" / "mutations.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    names = [m.name for m in module.MUTATIONS]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    stale = [f"{m.name}: found {(REPO / m.path).read_text().count(m.old)} of {m.count}" for m in module.MUTATIONS
             if (REPO / m.path).read_text().count(m.old) != m.count]
    assert not stale, stale
    missing = sorted({t.split("::")[0] for m in module.MUTATIONS for t in m.tests if not (REPO / t.split("::")[0]).exists()})
    assert not missing, missing
