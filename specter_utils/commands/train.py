"""``specter-utils train``: train SPECTER on mined triplets with the sentence-transformers trainer.

Every TrainConfig field is a flag (``--learning-rate 3e-5``, ``--no-resume``); its help, choices and range are the
field's declaration (``specter_utils.config``). The run's settings come through the same layers as ``run``'s
(``spec.train_config``): defaults < ``--profile`` (default: the machine's, cpu without CUDA, gpu with it) <
``--recipe`` (default: the profile's) < ``--spec FILE`` (and the preset it extends) < flags. Training itself is the
stage's front door, ``workflow.train.train_model``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from specter_utils.commands.common import (
    QUIET_HELP,
    add_config_flags,
    add_flag,
    check_out_dir,
    given_config_values,
    input_dir,
    input_file,
    silence_progress,
)
from specter_utils.devices import device_profile
from specter_utils.errors import DataError
from specter_utils.layout import TRIPLETS_TRAIN_FILE
from specter_utils.recipes import DEFAULT_RECIPE, PROFILES, RECIPES
from specter_utils.train_config import TrainConfig

# The four flags a training run needs come first; the rest follow in TrainConfig order.
MAIN_FLAGS = ("triplets", "metadata", "base_model", "out")
METAVARS = {"triplets": "DIR", "metadata": "FILE", "base_model": "NAME", "out": "DIR"}
# The old spellings of renamed fields: hidden flags that still work and say so.
OLD_FLAGS = {
    "max_length": "--max-seq-length",
    "batch_size": "--per-device-batch-size",
    "dtype": "--precision",
    "max_triplets": "--max-train-triplets",
}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field, the four main ones first; defaults are None so that only given flags
    override (the help shows the field's own default)."""
    fields = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("profile", "recipe")]
    ordered = [*MAIN_FLAGS, *(name for name in fields if name not in MAIN_FLAGS)]
    add_config_flags(parser, TrainConfig, ordered, old_flags=OLD_FLAGS, metavars=METAVARS)
    metadata = next(a for a in parser._actions if "--metadata" in a.option_strings)
    metadata.nargs = "+"  # one file or several, as embed and index take them (merged into OUT/metadata.json)
    metadata.help = f"{metadata.help}; several files are merged (a paper id in two of them is an error)"
    parser.add_argument("--quiet", dest="progress_bar", action="store_const", const=False, help=QUIET_HELP)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig that the parsed flags describe, resolved through the specification's layers; without
    ``--profile`` (here or in ``--spec``), the profile follows the machine."""
    from specter_utils.spec import train_config

    flags = {k: v for k, v in given_config_values(args, TrainConfig).items() if k not in ("profile", "recipe")}
    if isinstance(flags.get("metadata"), list):  # several files: the first stands in until run() merges them
        flags["metadata"] = str(flags["metadata"][0])
    spec = getattr(args, "spec", None)
    if spec is not None and not Path(spec).is_file():
        raise DataError("--spec: no such file", spec)
    try:
        return train_config(
            args.profile,
            getattr(args, "recipe", None),
            str(Path(spec).expanduser().absolute()) if spec is not None else None,
            device="" if args.profile else device_profile(),
            **flags,
        )
    except DataError:  # a bad value (it names its key and source), or a file that is not YAML (file and line)
        raise
    except (KeyError, TypeError, ValueError, FileNotFoundError) as exc:  # a bad --spec file
        raise DataError(str(exc.args[0] if exc.args else exc), "--spec") from None


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a SPECTER model on mined triplets",
        description=(
            "Train SPECTER with the sentence-transformers trainer (--recipe paper: triplet loss, [CLS]; or an in-batch "
            "negatives recipe). Writes OUT/model "
            "(a sentence-transformers model with a model card), OUT/checkpoints and OUT/log_history.json; an "
            "interrupted run resumes from its last checkpoint. Runs data parallel under torchrun."
        ),
    )
    add_flag(
        parser,
        "--profile",
        "--preset",
        choices=sorted(PROFILES),
        default=None,
        help="fits the run to a machine: "
        + "; ".join(f"{name}: {_profile_summary(name)}" for name in sorted(PROFILES))
        + " (default: the machine's: cpu without CUDA, gpu with it)",
    )
    parser.add_argument(
        "--recipe",
        choices=sorted(RECIPES),
        default=None,
        help="the scientific choices on top of the profile: "
        + "; ".join(f"{name}: {_recipe_summary(name)}" for name in sorted(RECIPES))
        + "; default: the profile's ("
        + ", ".join(f"{p}: {r}" for p, r in DEFAULT_RECIPE.items())
        + ")",
    )
    parser.add_argument(
        "--spec",
        type=Path,
        default=None,
        metavar="FILE",
        help="a run specification (.yaml) whose training section the flags start from; it starts from the preset "
        "it names with 'extends: hepth', or from demo",
    )
    add_config_arguments(parser)
    parser.set_defaults(func=run)
    plain_help = parser.format_help
    parser.format_help = lambda: (_show_machine_defaults(parser), plain_help())[1]  # type: ignore[method-assign]


def _show_machine_defaults(parser: argparse.ArgumentParser) -> None:
    """Rewrite each flag's "default: ..." as the value a bare ``train`` uses on this machine: the defaults with the
    machine's profile and its recipe (computed when --help is asked for, since finding the profile imports torch)."""
    from specter_utils.spec import train_config

    profile = device_profile()
    bare = train_config(device=profile)
    declared = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for action in parser._actions:
        field = declared.get(action.dest)
        if field is None or field.default in ("", None) or not action.help or action.help == argparse.SUPPRESS:
            continue
        plain = f"default: {field.default}"
        value = getattr(bare, action.dest)
        if plain in action.help and value != field.default:
            action.help = action.help.replace(plain, f"default here: {value}")
    parser.description = (parser.description or "").split(" Defaults shown")[0] + (
        f" Defaults shown are what a bare call uses on this machine: the {profile} profile and its recipe "
        f"({bare.recipe})."
    )


def _profile_summary(name: str) -> str:
    """A profile's values in one phrase, read from ``PROFILES`` so that the help cannot go stale."""
    values = {**dataclasses.asdict(TrainConfig()), **PROFILES[name]}
    return f"{values['base_model']}, {values['max_length']} wordpieces, " + (
        f"{values['max_triplets']:,} triplets" if values["max_triplets"] else "every triplet"
    )


def _recipe_summary(name: str) -> str:
    """A recipe's values in one phrase, read from ``RECIPES``."""
    values = RECIPES[name]
    return f"loss {values['loss']}, pooling {values['pooling']}, lr {values['learning_rate']:g}"


def check_inputs(triplets: str | Path | None, metadata: str | Path | None) -> None:
    """The triplets folder and the metadata file exist and are of the right kind (those given)."""
    if triplets is not None:
        folder = input_dir(Path(triplets), "--triplets")
        if not (folder / TRIPLETS_TRAIN_FILE).is_file():
            raise DataError(
                f"--triplets: no {TRIPLETS_TRAIN_FILE} in the folder (run specter-utils mine first)", folder
            )
    if metadata is not None:
        input_file(Path(metadata), "--metadata")


def check_paths(config: TrainConfig) -> None:
    """Inputs exist and are of the right kind, the run folder can be written: before any model is loaded."""
    check_inputs(config.triplets, config.metadata)
    base = Path(config.base_model)
    if base.is_dir() and not any(base.iterdir()):
        raise DataError("--base-model: the model folder is empty", base)
    # train resumes: an existing run folder is continued; its finished model is replaced only with --overwrite
    check_out_dir(Path(config.out), config.overwrite, resumable=True)


def run(args: argparse.Namespace) -> int:
    files = [str(name) for name in (args.metadata or [])]
    check_inputs(args.triplets, None)  # first: the machine's profile needs torch to see it
    for name in files:
        check_inputs(None, name)
    config = config_from_args(args).validate()
    check_paths(config)
    if len(files) > 1:
        from specter_utils.workflow.train import merged_metadata

        config = dataclasses.replace(config, metadata=str(merged_metadata(files, Path(config.out))))
    if not config.progress_bar:
        silence_progress()
    from specter_utils.workflow.train import is_main_process, train_model

    final_dir = train_model(config)
    if is_main_process():  # one line, not one per torchrun process
        print(f"model: {final_dir}")
    return 0
