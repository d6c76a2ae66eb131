"""What every command shares: the flag vocabulary, range types, and the checks made before any work.

One concept has one flag everywhere (docs/command-line.md's table of common flags lists them, with their old
spellings); deprecated spellings stay as hidden aliases that print one deprecation line on stderr.
This module imports nothing heavy, so ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import shutil
import sys
import tempfile
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from specter_utils.errors import DataError
from specter_utils.io import _UMASK
from specter_utils.settings import canonical_value, setting, setting_choices, setting_problem, setting_range

OVERWRITE_HELP = "replace an existing --out (default: an existing --out is an error)"
QUIET_HELP = "no progress bar or progress messages (warnings and results still print)"


# ---------------------------------------------------------------- aliases
class DeprecatedAlias(argparse.Action):
    """An old spelling of a flag: hidden from --help, stores into the new flag's dest, says so once on stderr."""

    def __init__(self, option_strings, dest, new: str = "", store_const: Any = None, **kwargs) -> None:
        self.new = new
        self.store_const = store_const
        if store_const is not None:
            kwargs["nargs"] = 0
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"{parser.prog}: warning: {option_string} is deprecated; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, self.store_const if self.store_const is not None else values)


def add_flag(parser: argparse.ArgumentParser, flag: str, *aliases: str, **kwargs: Any) -> argparse.Action:
    """Add ``flag`` and, for each old spelling in ``aliases``, a hidden deprecated alias with the same dest."""
    action = parser.add_argument(flag, **kwargs)
    for alias in aliases:
        alias_kwargs = {k: v for k, v in kwargs.items() if k in ("type", "choices", "nargs", "metavar")}
        if kwargs.get("action") == "store_true":
            alias_kwargs = {"store_const": True}
        parser.add_argument(
            alias, dest=action.dest, action=DeprecatedAlias, new=flag, help=argparse.SUPPRESS, **alias_kwargs
        )
    return action


# ---------------------------------------------------------------- flags generated from a config class
def config_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def config_type(f: dataclasses.Field, kind: type) -> Callable[[str], Any]:
    """An argparse type for field ``f``: a number of its ``kind``, in the range the field declares."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        problem = setting_problem(f, value)
        if problem:
            raise argparse.ArgumentTypeError(f"{problem}, got {text}")
        return value

    parse.__name__ = f"{'integer' if kind is int else 'number'} {f.name or setting_range(f)}"
    return parse


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``low``."""
    return config_type(setting(low=low), int)


POSITIVE_INT = int_at_least(1)
FRACTION = config_type(setting(low=0.0, high=1.0, open_ends="high"), float)  # a share of items, 0 <= f < 1


def add_config_flags(
    parser: argparse.ArgumentParser,
    cls: type,
    fields: Iterable[str],
    *,
    old_flags: Mapping[str, str] | None = None,
    metavars: Mapping[str, str] | None = None,
) -> None:
    """One flag per field of ``cls`` (``specter_utils.config``), made from its declaration: its help and default, its
    choices (and their aliases), its range. The flag's own default is None, so only a given flag overrides
    (``given_config_values``)."""
    hints = typing.get_type_hints(cls)
    declared = {f.name: f for f in dataclasses.fields(cls)}
    old_flags, metavars = old_flags or {}, metavars or {}
    metavars_or_old = {*old_flags, *metavars}  # flags whose metavar hides their choices: the help lists them
    for name in fields:
        f = declared[name]
        kind = hints[name]
        choices = setting_choices(f)
        allowed = setting_range(f) or (f"one of {', '.join(choices)}" if choices and name in metavars_or_old else "")
        shown = [f"default: {f.default}"] if f.default not in ("", None) else []  # no "(default: )" for an empty one
        notes = "; ".join([*shown, *([allowed] if allowed else [])])
        help_text = f"{f.metadata.get('help', '')}" + (f" ({notes})" if notes else "")
        help_text = help_text.replace("%", "%%")
        if kind is bool:
            # a field named no_X is one switch, --no-X (BooleanOptionalAction would add --no-no-X)
            action = "store_true" if name.startswith("no_") else argparse.BooleanOptionalAction
            parser.add_argument(config_flag(name), action=action, default=None, help=help_text)
            continue
        kwargs = {
            "type": config_type(f, kind) if kind in (int, float) else kind,
            "default": None,
            "choices": (*choices, *f.metadata.get("aliases", {})) if choices is not None else None,
            "dest": name,
            "metavar": metavars.get(name, name.upper() if name in old_flags else None),
            "help": help_text,
        }
        add_flag(parser, config_flag(name), *([old_flags[name]] if name in old_flags else []), **kwargs)


def given_config_values(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The fields of ``cls`` that a flag set (the others keep their defaults), an alias of a choice read as the
    choice (``--dtype bfloat16`` is ``bf16``)."""
    return {
        f.name: canonical_value(f, getattr(args, f.name))
        for f in dataclasses.fields(cls)
        if getattr(args, f.name, None) is not None
    }


# ---------------------------------------------------------------- the common flags
def add_max_length(parser: argparse.ArgumentParser, default: int | None, help: str, **kwargs: Any) -> None:
    add_flag(parser, "--max-length", "--max-seq-length", type=int_at_least(2), default=default, help=help, **kwargs)


def add_batch_size(parser: argparse.ArgumentParser, default: int | None, help: str, **kwargs: Any) -> None:
    add_flag(parser, "--batch-size", "--per-device-batch-size", type=POSITIVE_INT, default=default, help=help, **kwargs)


def add_dtype(parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str | None, help: str) -> None:
    add_flag(parser, "--dtype", "--precision", choices=choices, default=default, help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def add_out(parser: argparse.ArgumentParser, help: str, required: bool = True, overwrite: bool = True) -> None:
    """``--out`` and, unless the command always resumes, ``--overwrite``."""
    parser.add_argument("--out", type=Path, required=required, help=help)
    if overwrite:
        parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


def silence_progress() -> None:
    """``--quiet``: no progress bars from the libraries either (model loading, downloads). The variable silences
    what is imported later (transformers reads it through huggingface_hub); what is imported already is told here,
    so a command that never loads transformers does not import it for this."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TQDM_DISABLE"] = "1"  # tqdm reads it when first imported (this process's later imports, children)
    # bars drawn by plain tqdm that no library switch reaches (sentence-transformers' model card widget examples)
    import tqdm.std

    if "__init__" not in _TQDM_INIT:
        _TQDM_INIT["__init__"] = tqdm.std.tqdm.__init__
        tqdm.std.tqdm.__init__ = functools.partialmethod(tqdm.std.tqdm.__init__, disable=True)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


_TQDM_INIT: dict[str, Any] = {}  # tqdm's own __init__ while --quiet has replaced it


def restore_progress() -> None:
    """Undo :func:`silence_progress`'s tqdm switch when a command ends (the CLI runs in-process in tests and
    notebooks)."""
    if "__init__" in _TQDM_INIT:
        import tqdm.std

        tqdm.std.tqdm.__init__ = _TQDM_INIT.pop("__init__")
        os.environ.pop("TQDM_DISABLE", None)


# ---------------------------------------------------------------- checks before work
def input_file(path: Path, flag: str) -> Path:
    """``path`` must be an existing file (not a folder)."""
    if not path.exists():
        raise DataError(f"{flag}: file not found", path)
    if path.is_dir():
        raise DataError(f"{flag}: is a directory, expected a file", path)
    if not os.access(path, os.R_OK):
        raise DataError(f"{flag}: file not readable (permission denied)", path)
    return path


def input_dir(path: Path, flag: str) -> Path:
    """``path`` must be an existing folder."""
    if not path.exists():
        raise DataError(f"{flag}: folder not found", path)
    if not path.is_dir():
        raise DataError(f"{flag}: is a file, expected a folder", path)
    return path


def _writable_parent(path: Path) -> None:
    """The nearest existing ancestor of ``path`` must be a writable folder."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise DataError(f"--out: {parent} is a file, so nothing can be created under it", path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DataError(f"--out: cannot write in {parent} (read-only or permission denied)", path)


def check_out_file(path: Path, overwrite: bool, suffix: str | None = None, resumable: bool = False) -> Path:
    """An ``--out`` file: not a folder, the right suffix, absent unless ``overwrite`` (or ``resumable``), writable."""
    if suffix is not None and path.suffix != suffix:
        raise DataError(f"--out must end in {suffix}", path)
    if path.is_dir():
        raise DataError("--out: is a directory, expected a file name", path)
    if path.exists() and not (overwrite or resumable):
        raise DataError("--out: file exists; pass --overwrite to replace it", path)
    _writable_parent(path)
    return path


def check_out_dir(path: Path, overwrite: bool, owned_by: tuple[str, ...] = (), resumable: bool = False) -> Path:
    """An ``--out`` folder: not a file; empty or absent unless ``overwrite`` (or ``resumable``); writable. With
    ``overwrite``, a non-empty folder is replaced only when it holds one of ``owned_by`` (a file the command writes)."""
    if path.exists() and not path.is_dir():
        raise DataError("--out: is a file, expected a folder", path)
    if path.is_dir() and any(path.iterdir()) and not resumable:
        if not overwrite:
            raise DataError("--out: folder exists and is not empty; pass --overwrite to replace it", path)
        if owned_by and not any((path / name).exists() for name in owned_by):
            raise DataError(
                f"--out: folder is not empty and holds none of {', '.join(owned_by)}; refusing to replace a "
                "folder this command did not write",
                path,
            )
    _writable_parent(path / "x")
    return path


@contextlib.contextmanager
def staged_dir(out: Path) -> Iterator[Path]:
    """Write a whole output folder into a temporary sibling, then put it in place of ``out`` in one step (on failure
    ``out`` is untouched: no half-written output, and a rebuild never keeps files of an earlier build)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    os.chmod(stage, 0o777 & ~_UMASK)  # mkdtemp makes 0700; the finished folder gets normal permissions
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / "dir")
    os.replace(stage, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
