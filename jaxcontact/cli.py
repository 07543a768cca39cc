"""The ``jaxcontact`` command line.

Each model family registers its own sub-command from its own module (``register(subparsers)``),
so families stay independent. Modules are imported only when the command line is built.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that expose ``register(subparsers: argparse._SubParsersAction) -> None``.
SUBCOMMAND_MODULES = [
    "jaxcontact.simulate",
    "jaxcontact.contactnets.cli",
    "jaxcontact.dacm.cli",
    "jaxcontact.impacts.cli",
    "jaxcontact.sysid.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxcontact",
        description="Differentiable rigid-body contact simulation in JAX.",
    )
    parser.add_argument("--x64", action="store_true", help="run in float64 (jax_enable_x64)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.x64:
        import jax

        jax.config.update("jax_enable_x64", True)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"jaxcontact: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
