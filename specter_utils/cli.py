"""The ``specter-utils`` command. Each subcommand lives in ``specter_utils.commands.<name>``.

Command modules only build argparse parsers at import time; heavy libraries (torch,
transformers) are imported inside the handlers so that ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from specter_utils import __version__
from specter_utils.errors import DataError, OfflineError

# Order here is the order shown in --help. Each module defines ``register(subparsers)``.
COMMAND_MODULES = (
    "data",
    "mine",
    "build_benchmark",
    "train",
    "embed",
    "evaluate",
    "compare",
    "index",
    "search",
    "run",
    "report",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specter-utils",
        description="SPECTER reproduction: data, triplet mining, training, embedding and SCIDOCS evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"specter_utils.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        result = args.func(args)
    except (DataError, OfflineError) as exc:
        print(f"specter-utils {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main())
