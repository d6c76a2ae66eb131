"""Training configuration: ``TrainConfig`` (defined in :mod:`specter_utils.config`, the one place of every
default), its profiles and recipes, and the order they apply in::

    config = make_config("cpu", triplets="runs/mine", metadata="data/metadata.json", out="runs/train")

Precedence: defaults, then the profile (``cpu``: minutes on a laptop; ``gpu``: the paper's run), then the recipe
(the profile's own unless one is named), then ``overrides`` (command-line flags or notebook parameters).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from specter_utils.config import (
    DEFAULT_RECIPE,
    DEPRECATED_TRAIN_FIELDS,
    IN_BATCH_LOSSES,
    LOSSES,
    LR_SCHEDULES,
    OPTIMIZERS,
    POOLINGS,
    PROFILES,
    RECIPES,
    TRAIN_DTYPES,
    TrainConfig,
)
from specter_utils.config import field_comments as _field_comments
from specter_utils.errors import DataError

__all__ = [
    "DEFAULT_RECIPE",
    "IN_BATCH_LOSSES",
    "LOSSES",
    "LR_SCHEDULES",
    "OPTIMIZERS",
    "POOLINGS",
    "PROFILES",
    "RECIPES",
    "RUN_ONLY_FIELDS",
    "TRAIN_DTYPES",
    "TrainConfig",
    "differing_fields",
    "field_comments",
    "make_config",
]

# Fields that only say where things go or how to report; a resumed run may change them freely.
RUN_ONLY_FIELDS = frozenset(
    {
        "out",
        "resume",
        "overwrite",
        "keep_checkpoints",
        "progress_bar",
        "logging_steps",
        "dataloader_num_workers",
        "drop_unknown",
    }
)


def field_comments() -> dict[str, str]:
    """The comment written beside each TrainConfig field (used as command-line help)."""
    return _field_comments(TrainConfig)


def _named(table: dict[str, dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
    """The values of profile or recipe ``name``; a DataError listing the known names otherwise."""
    if name not in table:
        raise DataError(f"unknown {kind} {name!r} (expected one of {sorted(table)})", "TrainConfig", record_id=kind)
    return table[name]


def renamed_fields(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with old field names (``max_seq_length``, ``per_device_batch_size``, ...) under the current ones."""
    return {DEPRECATED_TRAIN_FIELDS.get(k, k): v for k, v in values.items()}


def make_config(profile: str | None = None, recipe: str | None = None, **overrides: Any) -> TrainConfig:
    """Defaults, then the profile's values, then the recipe's, then ``overrides`` (flags or notebook parameters).

    ``recipe`` defaults to the profile's (``DEFAULT_RECIPE``); without a profile, to none (the plain defaults,
    which are the paper's optimisation with ``pooling="auto"``).
    """
    values: dict[str, Any] = {}
    if profile:
        values.update(_named(PROFILES, profile, "profile"))
        values["profile"] = profile
    recipe = recipe or (DEFAULT_RECIPE.get(profile, "") if profile else "")
    if recipe:
        values.update(_named(RECIPES, recipe, "recipe"))
        values["recipe"] = recipe
    overrides = renamed_fields(overrides)
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise DataError(f"unknown setting(s) {unknown}", "TrainConfig", record_id=unknown[0])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return TrainConfig(**values)


def differing_fields(saved: dict[str, Any], config: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Fields (other than run-only ones) whose value differs between a saved config and ``config``."""
    saved = renamed_fields(saved)
    current = config.to_dict()
    defaults = TrainConfig().to_dict()
    return {
        name: (saved.get(name), value)
        for name, value in current.items()
        if name not in RUN_ONLY_FIELDS
        and saved.get(name, defaults[name]) != value  # a field added since the save had its default then
    }
