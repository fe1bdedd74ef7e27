"""``python -m explain_engine COMMAND ...``: the engine's CLI, usable without a server.

Each module in :mod:`explain_engine.cli` adds one sub-command through ``register(subparsers)``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from explain_engine import cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m explain_engine", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(cli.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{cli.__name__}.{info.name}").register(sub)
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
