"""The ``jaxcontact`` command line.

Each model family registers its own sub-command from its own module (``register(subparsers)``),
so families stay independent. Modules are imported only when the command line is built.

Every parser of the tree is a ``Parser`` (sub-parsers inherit the class of their parent), whose
``--help`` shows each option's default (``HelpFormatter``); units are in the help strings.
Options that write figures (``PLOT_OPTIONS``) are checked for matplotlib right after parsing,
before any computation; counts, physical values and output paths are checked while parsing
(``jaxcontact.cliargs`` types). Errors are one line on stderr (``jaxcontact: error: ...``, exit
status 2; ``--debug`` shows the traceback instead), Ctrl-C is one line and exit status 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .cliargs import error_line
from .plotting import PlottingUnavailable, require_matplotlib
from .validation import MissingExtra
from .version import __version__

# Modules that expose ``register(subparsers: argparse._SubParsersAction) -> None``.
SUBCOMMAND_MODULES = [
    "jaxcontact.simulate",
    "jaxcontact.contactnets.cli",
    "jaxcontact.dacm.cli",
    "jaxcontact.impacts.cli",
    "jaxcontact.sysid.cli",
]


# argparse destinations of the options that write figures (need the "plot" extra)
PLOT_OPTIONS = ("plot", "plots", "animate")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" to every option's help, except where the help already states its
    default or the default is None (the help then says what happens without the option)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default is None or action.default is argparse.SUPPRESS or "default" in text.lower():
            return text
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return text
        shown = "off" if action.default is False and action.nargs == 0 else "%(default)s"
        return f"{text} (default: {shown})" if text else f"(default: {shown})"

    def _fill_text(self, text, width, indent):
        # a description laid out in lines (e.g. a table of presets) is kept as written
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class Parser(argparse.ArgumentParser):
    """``ArgumentParser`` with ``HelpFormatter``; sub-parsers made from it are ``Parser`` too.
    A usage error is one line (the full usage is in ``--help``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="jaxcontact",
        description="Differentiable rigid-body contact simulation in JAX.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the package version and exit")
    parser.add_argument("--x64", action="store_true", help="run in float64 (jax_enable_x64)")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of its one-line message")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The program (``argv`` None: ``sys.argv``) or a call with its arguments; returns the exit status."""
    program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _run(argv)
    except KeyboardInterrupt as err:  # Ctrl-C: one line (training says what it saved), no traceback
        if "--debug" in argv:
            raise
        print(str(err) or "jaxcontact: interrupted", file=sys.stderr)
        if program:
            # a Ctrl-C can leave an XLA compilation running in a background thread, and the
            # interpreter's normal teardown under it can crash (segfault); the program's work is
            # saved and said, so it ends here
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130


def _run(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # a usage error (already printed, one line) is an exit status like the others
        if e.code in (0, None):  # --help, --version
            raise
        return int(e.code) if isinstance(e.code, int) else 2
    try:
        for name in PLOT_OPTIONS:  # fail before any work, not after it
            if getattr(args, name, None):
                require_matplotlib("--" + name.replace("_", "-"))
    except PlottingUnavailable as err:
        print(f"jaxcontact: error: {err}", file=sys.stderr)
        return 2
    if args.x64:
        import jax

        jax.config.update("jax_enable_x64", True)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError, MemoryError, PlottingUnavailable, MissingExtra) as err:
        if args.debug:
            raise
        print(f"jaxcontact: error: {error_line(err)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
