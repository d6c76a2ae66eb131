"""``specter-utils train``: train SPECTER on mined triplets with the sentence-transformers trainer.

Every TrainConfig field is a flag (``--learning-rate 3e-5``, ``--no-resume``); its help is the
comment beside the field and its default is the field's (``specter_utils.config``). Precedence:
defaults < ``--profile`` < ``--recipe`` < flags.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from specter_utils.commands.common import (
    COUNT,
    POSITIVE_INT,
    QUIET_HELP,
    add_config_flags,
    add_flag,
    check_out_dir,
    float_in,
    given_config_values,
    input_dir,
    input_file,
    int_at_least,
    silence_progress,
)
from specter_utils.errors import DataError
from specter_utils.training.config import (
    DEFAULT_RECIPE,
    LOSSES,
    POOLINGS,
    PROFILES,
    RECIPES,
    TRAIN_DTYPES,
    TrainConfig,
    make_config,
)

# The four flags a training run needs come first; the rest follow in TrainConfig order.
MAIN_FLAGS = ("triplets", "metadata", "base_model", "out")
METAVARS = {"triplets": "DIR", "metadata": "FILE", "base_model": "NAME", "out": "DIR"}
# The dtype spellings of embed are accepted too (one vocabulary of values across commands).
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
CHOICES = {"pooling": POOLINGS, "dtype": (*TRAIN_DTYPES, *DTYPE_NAMES), "loss": LOSSES}
# The old spellings of renamed fields: hidden flags that still work for one release and say so.
OLD_FLAGS = {
    "max_length": "--max-seq-length",
    "batch_size": "--per-device-batch-size",
    "dtype": "--precision",
    "max_triplets": "--max-train-triplets",
}
# Ranges checked by argparse; the rest (and combinations) by TrainConfig.validate.
RANGES = {
    "max_length": int_at_least(2),
    **dict.fromkeys(("effective_batch_size", "batch_size", "save_steps", "eval_steps", "logging_steps"), POSITIVE_INT),
    "save_total_limit": POSITIVE_INT,
    **dict.fromkeys(
        ("max_triplets", "max_val_triplets", "gradient_accumulation_steps", "dataloader_num_workers"), COUNT
    ),
    "cached_mini_batch": COUNT,
    "learning_rate": float_in(0.0, 1.0, low_open=True),
    "warmup_ratio": float_in(0.0, 1.0, high_open=True),
    "merge_with_base": float_in(0.0, 1.0, low_open=True),
}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field, the four main ones first; defaults are None so that only given flags
    override (the help shows the field's own default)."""
    fields = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in ("profile", "recipe")]
    ordered = [*MAIN_FLAGS, *(name for name in fields if name not in MAIN_FLAGS)]
    add_config_flags(
        parser, TrainConfig, ordered, choices=CHOICES, ranges=RANGES, old_flags=OLD_FLAGS, metavars=METAVARS
    )
    parser.add_argument("--quiet", dest="progress_bar", action="store_const", const=False, help=QUIET_HELP)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig that the parsed flags describe."""
    overrides = {k: v for k, v in given_config_values(args, TrainConfig).items() if k not in ("profile", "recipe")}
    if "dtype" in overrides:
        overrides["dtype"] = DTYPE_NAMES.get(overrides["dtype"], overrides["dtype"])
    return make_config(args.profile, getattr(args, "recipe", None), **overrides)


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
        + "; ".join(f"{name}: {_profile_summary(name)}" for name in sorted(PROFILES)),
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
    add_config_arguments(parser)
    parser.set_defaults(func=run)


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


def check_paths(config: TrainConfig) -> None:
    """Inputs exist and are of the right kind, the run folder can be written: before any model is loaded."""
    triplets = input_dir(Path(config.triplets), "--triplets")
    if not (triplets / "train.jsonl").is_file():
        raise DataError("--triplets: no train.jsonl in the folder (run specter-utils mine first)", triplets)
    input_file(Path(config.metadata), "--metadata")
    base = Path(config.base_model)
    if base.is_dir() and not any(base.iterdir()):
        raise DataError("--base-model: the model folder is empty", base)
    # train resumes: an existing run folder is continued; its finished model is replaced only with --overwrite
    check_out_dir(Path(config.out), config.overwrite, resumable=True)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args).validate()
    check_paths(config)
    if not config.progress_bar:
        silence_progress()
    from specter_utils.training.distributed import is_main_process
    from specter_utils.training.train import train_specter

    final_dir = train_specter(config)
    if is_main_process():  # one line, not one per torchrun process
        print(f"model: {final_dir}")
    return 0
