"""``specter-utils spec show``: the resolved run specification, each value with where it came from."""

from __future__ import annotations

import argparse
from pathlib import Path

from specter_utils.config import DEFAULT_PRESET
from specter_utils.errors import DataError
from specter_utils.paths import presets


def add_spec_arguments(parser: argparse.ArgumentParser, preset_default: str | None) -> None:
    """``--preset``, ``--spec`` and ``--set``: what makes a run's specification (shared by ``run`` and ``spec``)."""
    parser.add_argument(
        "--preset",
        choices=presets(),
        default=None,  # not given: the default below, and --spec may be given instead
        help="a shipped run specification, params/<preset>.yaml"
        + (f" (default: {preset_default})" if preset_default else ""),
    )
    parser.set_defaults(default_preset=preset_default)
    parser.add_argument(
        "--spec",
        type=Path,
        default=None,
        metavar="FILE",
        help="your own specification (.yaml); it starts from the preset it names with 'extends: hepth', or from "
        f"{DEFAULT_PRESET}",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change one setting for this run, e.g. --set training.epochs=1.0 --set ablations.variants=[no_abstract] "
        "(repeatable; the key must exist and keep its type)",
    )


def spec_name(args: argparse.Namespace) -> str:
    """What ``--preset``/``--spec`` name: the absolute path of the file, the preset, or the command's default."""
    if args.spec is not None:
        if not args.spec.is_file():
            raise DataError("--spec: no such file", args.spec)
        if args.preset:
            raise DataError("give --spec or --preset, not both: start the file with 'extends: <preset>'", "--spec")
        return str(args.spec.expanduser().absolute())
    return args.preset or getattr(args, "default_preset", None) or DEFAULT_PRESET


def resolve_spec_args(args: argparse.Namespace):
    """The RunSpec that ``--preset``/``--spec``/``--set`` describe, and its name; errors name the flag."""
    from specter_utils.spec import load_spec, parse_override

    try:
        overrides = dict(parse_override(text) for text in args.overrides)
    except ValueError as exc:
        raise DataError(str(exc), "--set") from None
    name = spec_name(args)
    try:
        return load_spec(name, overrides), name
    except (KeyError, TypeError, ValueError, FileNotFoundError) as exc:
        message = str(exc.args[0] if exc.args else exc)
        where = "--set" if message.startswith("override") else ("--spec" if args.spec else "--preset")
        raise DataError(message, where) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``spec`` to the top-level parser."""
    parser = subparsers.add_parser(
        "spec",
        help="show a run specification, resolved, each value with its source",
        description="Resolve a run specification as a run would (defaults, training profile, recipe, preset, your "
        "file, overrides) and print it as YAML, each value commented with where it came from.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show",
        help="print the resolved specification as YAML with sources",
        description="Print every setting of a run as YAML: the preset's file and your --spec and --set layered over "
        "the defaults, the profile and the recipe, each value with the layer it came from (default, profile, recipe, "
        "preset, file, flag).",
    )
    add_spec_arguments(show, preset_default=DEFAULT_PRESET)
    show.add_argument(
        "--explain",
        action="store_true",
        help="above each setting, a comment with what it does, why it has its default and the values it allows",
    )
    show.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    spec, name = resolve_spec_args(args)
    print(f"# run specification {name}" + (f", overrides {spec.overrides}" if spec.overrides else ""))
    print(spec.to_yaml(sources=True, explain=args.explain), end="")
    return 0
