"""``specter-utils train``: train SPECTER on mined triplets with the sentence-transformers trainer.

Every TrainConfig field is a flag (``--learning-rate 3e-5``, ``--no-resume``); its help is the
comment beside the field. Precedence: defaults < ``--preset`` < flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path

from specter_utils.commands.common import (
    COUNT,
    POSITIVE_INT,
    QUIET_HELP,
    add_flag,
    check_out_dir,
    float_in,
    input_dir,
    input_file,
    int_at_least,
    silence_progress,
)
from specter_utils.errors import DataError
from specter_utils.training.config import (
    LOSSES,
    POOLING_MODES,
    PRECISIONS,
    PRESETS,
    RECIPES,
    TrainConfig,
    field_comments,
    make_config,
)

# The four flags the issue names first; the rest follow in TrainConfig order.
MAIN_FLAGS = ("triplets", "metadata", "base_model", "out")
METAVARS = {"triplets": "DIR", "metadata": "FILE", "base_model": "NAME", "out": "DIR"}
# The dtype spellings of embed are accepted too (one vocabulary of values across commands).
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
CHOICES = {"pooling": POOLING_MODES, "precision": (*PRECISIONS, *DTYPE_NAMES), "loss": LOSSES}
# Fields whose flag is the common one (commands/common.py); the field name stays as a hidden, deprecated alias.
COMMON_FLAGS = {
    "max_seq_length": "--max-length",
    "per_device_batch_size": "--batch-size",
    "precision": "--dtype",
    "max_train_triplets": "--max-triplets",
}
# Ranges checked by argparse; the rest (and combinations) by TrainConfig.validate.
RANGES = {
    "max_seq_length": int_at_least(2),
    **dict.fromkeys(
        ("effective_batch_size", "per_device_batch_size", "save_steps", "eval_steps", "logging_steps"), POSITIVE_INT
    ),
    "save_total_limit": POSITIVE_INT,
    **dict.fromkeys(
        ("max_train_triplets", "max_val_triplets", "gradient_accumulation_steps", "dataloader_num_workers"), COUNT
    ),
    "cached_mini_batch": COUNT,
    "learning_rate": float_in(0.0, 1.0, low_open=True),
    "warmup_ratio": float_in(0.0, 1.0, high_open=True),
    "merge_with_base": float_in(0.0, 1.0, low_open=True),
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field; defaults are None so that only given flags override."""
    comments = field_comments()
    hints = typing.get_type_hints(TrainConfig)
    fields = {f.name: f for f in dataclasses.fields(TrainConfig) if f.name not in ("preset", "recipe")}
    ordered = [*MAIN_FLAGS, *(name for name in fields if name not in MAIN_FLAGS)]
    for name in ordered:
        default = fields[name].default
        help_text = f"{comments.get(name, '')} (default: {default})".replace("%", "%%")
        kind = hints[name]
        if kind is bool:
            parser.add_argument(_flag(name), action=argparse.BooleanOptionalAction, default=None, help=help_text)
            if name == "progress_bar":
                parser.add_argument("--quiet", dest=name, action="store_const", const=False, help=QUIET_HELP)
        elif name in COMMON_FLAGS:
            add_flag(
                parser,
                COMMON_FLAGS[name],
                _flag(name),
                type=RANGES.get(name, kind),
                default=None,
                choices=CHOICES.get(name),
                dest=name,
                metavar=COMMON_FLAGS[name][2:].upper().replace("-", "_"),
                help=help_text,
            )
        else:
            parser.add_argument(
                _flag(name),
                type=RANGES.get(name, kind),
                default=None,
                choices=CHOICES.get(name),
                metavar=METAVARS.get(name),
                help=help_text,
            )


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig that the parsed flags describe."""
    names = {f.name for f in dataclasses.fields(TrainConfig)} - {"preset", "recipe"}
    overrides = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    if "precision" in overrides:
        overrides["precision"] = DTYPE_NAMES.get(overrides["precision"], overrides["precision"])
    return make_config(args.preset, getattr(args, "recipe", None), **overrides)


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
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="cpu: MiniLM, 128 tokens, 400 triplets, minutes; gpu: the paper's settings (SciBERT, 512 tokens)",
    )
    parser.add_argument(
        "--recipe",
        choices=sorted(RECIPES),
        default=None,
        help="the scientific choices on top of the preset: paper (SPECTER: triplet loss, [CLS], batch 32) or "
        "citation-mnrl (in-batch negatives, citation false negatives masked, the base model's own pooling); "
        "default: the preset's (cpu: citation-mnrl, gpu: paper)",
    )
    add_config_arguments(parser)
    parser.set_defaults(func=run)


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
    from specter_utils.training.train import is_main_process, train_specter

    final_dir = train_specter(config)
    if is_main_process():  # one line, not one per torchrun process
        print(f"model: {final_dir}")
    return 0
