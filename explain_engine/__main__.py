"""``python -m explain_engine COMMAND ...``: the engine's CLI, usable without a server.

Each module in :mod:`explain_engine.cli` adds one sub-command through ``register(subparsers)``; the
modules are found by :func:`explain_engine.registry.discover`, so a new command is a new module.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from explain_engine.registry import discover

COMMANDS = "explain_engine.cli"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m explain_engine", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in discover(COMMANDS):
        importlib.import_module(f"{COMMANDS}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
