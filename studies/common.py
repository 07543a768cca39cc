"""Helpers shared by the study entry points: work directories, recorded commands, results files, sub-commands.

The shared data's paths are the package's (``jaxcontact.files.shared_dir``); the provenance stamp is
``experiments.provenance``'s, the one module the studies share with the benchmarks."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from experiments.provenance import stamp

REPO = Path(__file__).resolve().parents[1]

stamp()  # the code's commit as this run starts (experiments.provenance)


def default_work(family: str) -> str:
    """The default ``--work`` directory of a family: ``work/<family>`` under the current directory."""
    return str(Path("work") / family)


def cube_tosses_path() -> Path:
    """The real cube tosses, the studies' default ``--data``: the package's ``files.cube_tosses_path``
    (imported when asked: this module stays light)."""
    from jaxcontact.files import cube_tosses_path as path

    return path()


def command_line(prog: str, argv=None) -> str:
    """The command that ran ``prog`` (e.g. ``studies.dacm oracle``) with ``argv`` (default: sys.argv[1:])."""
    args = sys.argv[1:] if argv is None else list(argv)
    return " ".join(["python", "-m", prog] + [shlex.quote(str(a)) for a in args])


def write_results(prefix, doc: dict, render) -> None:
    """Write a study's results: ``doc`` as ``prefix.json`` and ``render(doc)`` as ``prefix.md``
    (the folder made if needed); studies call it after every run, so a cut-off run keeps its rows.
    ``doc`` gets ``provenance`` (commit, uncommitted changes, the command:
    ``experiments.provenance.stamp``) unless it has one, for ``python -m experiments.provenance``."""
    if "provenance" not in doc:
        doc["provenance"] = stamp()
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    prefix.with_suffix(".md").write_text(render(doc))


def in_work(path, work) -> Path:
    """``path`` as given if it exists or is absolute, else inside the work directory ``work``."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else Path(work) / p


def dispatch(prog: str, doc: str, commands: dict, argv=None) -> int:
    """A sub-command entry point: ``python -m prog COMMAND [options]``; ``commands`` maps a name to
    (module with ``main(argv, prog)``, one-line summary). ``COMMAND --help`` lists its options."""
    import importlib

    argv = sys.argv[1:] if argv is None else list(argv)
    width = max(map(len, commands))
    usage = (f"usage: python -m {prog} COMMAND [options]   (python -m {prog} COMMAND --help)\n\n"
             + doc.strip() + "\n\ncommands:\n"
             + "\n".join(f"  {name:<{width}}  {summary}" for name, (_, summary) in commands.items()) + "\n")
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0
    if argv[0] not in commands:
        print(f"unknown command {argv[0]!r}\n\n{usage}", file=sys.stderr)
        return 2
    module = importlib.import_module(commands[argv[0]][0], package=prog.split()[0])
    return module.main(argv[1:], prog=f"{prog} {argv[0]}") or 0
