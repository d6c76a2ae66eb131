"""The ``specter-utils`` command. Each subcommand lives in ``specter_utils.commands.<name>``.

Command modules only build argparse parsers at import time; heavy libraries (torch,
transformers) are imported inside the handlers so that ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from specter_utils import __version__
from specter_utils.commands.common import restore_progress
from specter_utils.errors import DataError, OfflineError

# Order here is the order shown in --help. Each module defines ``register(subparsers)``.
COMMAND_MODULES = tuple("data mine build_benchmark train embed evaluate compare index search run spec report".split())


class DefaultsFormatter(argparse.HelpFormatter):
    """Every default written one way, ``(default: X)``, added where the help does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, argparse.SUPPRESS)
            or default == []
            or not action.option_strings
            or action.nargs == 0
        ):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {str(shown).replace('%', '%%')})"


class RawDefaultsFormatter(argparse.RawDescriptionHelpFormatter, DefaultsFormatter):
    """Examples in the epilog kept as written, defaults as in :class:`DefaultsFormatter`."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``specter-utils CMD: error: WHERE: WHAT``, exit 2)."""

    def __init__(self, *args, **kwargs) -> None:
        formatter = kwargs.get("formatter_class")
        if formatter is argparse.RawDescriptionHelpFormatter:
            kwargs["formatter_class"] = RawDefaultsFormatter
        elif formatter in (None, argparse.HelpFormatter):
            kwargs["formatter_class"] = DefaultsFormatter
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def _one_line(text: str) -> str:
    return " / ".join(line.strip() for line in str(text).splitlines() if line.strip())


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="specter-utils",
        description="SPECTER reproduction: data, triplet mining, training, embedding and SCIDOCS evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the Python traceback of an unexpected error (also accepted after the command, or "
        "SPECTER_UTILS_DEBUG=1)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"specter_utils.commands.{name}").register(subparsers)
    return parser


def _command_name(args: argparse.Namespace) -> str:
    sub = getattr(args, "data_command", None)
    return f"specter-utils {args.command}" + (f" {sub}" if sub else "")


def _error_line(exc: BaseException) -> str:
    """``WHERE: WHAT`` for an error the user can act on (bad input, a full or read-only disk, offline)."""
    if isinstance(exc, OSError) and not isinstance(exc, DataError):
        where = exc.filename if exc.filename is not None else "<output>"
        what = "no space left on device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
        return f"{where}: {what}"
    return _one_line(str(exc))


def main(argv: list[str] | None = None) -> int:
    """Run one command. Every failure is one line on stderr, ``specter-utils CMD: error: WHERE: WHAT``, exit 2;
    an unexpected exception says so in one line and ``--debug`` shows its traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("SPECTER_UTILS_DEBUG", "") not in ("", "0")
    argv = [arg for arg in argv if arg != "--debug"]
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    name = _command_name(args)
    try:
        result = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (DataError, OfflineError, OSError) as exc:
        if debug:
            raise
        print(f"{name}: error: {_error_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug, or a failure no check foresaw: one line, the traceback on request
        if debug:
            raise
        print(
            f"{name}: error: unexpected {type(exc).__name__}: {_one_line(exc) or '(no message)'} "
            "(rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return 2
    finally:
        restore_progress()
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main())
