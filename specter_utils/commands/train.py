"""``specter-utils train``: train SPECTER on mined triplets with the sentence-transformers trainer.

Every TrainConfig field is a flag (``--learning-rate 3e-5``, ``--no-resume``); its help is the
comment beside the field. Precedence: defaults < ``--preset`` < flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing

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
CHOICES = {"pooling": POOLING_MODES, "precision": PRECISIONS, "loss": LOSSES}


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
        else:
            parser.add_argument(
                _flag(name),
                type=kind,
                default=None,
                choices=CHOICES.get(name),
                metavar=METAVARS.get(name),
                help=help_text,
            )


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig that the parsed flags describe."""
    names = {f.name for f in dataclasses.fields(TrainConfig)} - {"preset", "recipe"}
    overrides = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
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


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    from specter_utils.training.train import is_main_process, train_specter

    final_dir = train_specter(config)
    if is_main_process():  # one line, not one per torchrun process
        print(f"model: {final_dir}")
    return 0
