"""Stage 3 (notebook 03, every ablation row and ``specter-utils train``): fine-tune with the ``training`` settings.

The stage's one front door is :func:`train_model`, which trains with a resolved TrainConfig; :func:`train` resolves
that config from a run's specification and folders first (notebooks), ``specter-utils train`` from its flags
(``spec.train_config``). Either way the values come through the same layers: defaults, profile, recipe, preset,
file, overrides.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from specter_utils.config import TrainConfig
from specter_utils.io import read_json
from specter_utils.layout import LOG_HISTORY_FILE
from specter_utils.spec import RunSpec
from specter_utils.training.distributed import is_main_process
from specter_utils.training.train import train_specter

__all__ = ["is_main_process", "run_config", "train", "train_model"]


def run_config(
    spec: RunSpec, triplets_dir: str | Path, metadata: str | Path, out: str | Path, **run_fields: Any
) -> TrainConfig:
    """The resolved ``training`` section of ``spec`` with a run's folders and the run's seed (``run_fields`` set
    other run-only fields, or another seed)."""
    values = {"seed": spec.seed, **run_fields}
    return dataclasses.replace(
        spec.training, triplets=str(triplets_dir), metadata=str(metadata), out=str(out), **values
    )


def train_model(config: TrainConfig) -> Path:
    """Check ``config`` and train; the final model's folder (``OUT/model``). Writes ``OUT/train_config.json``,
    ``OUT/log_history.json`` and the checkpoints; an interrupted run resumes from its last checkpoint."""
    return train_specter(config.validate())


def train(spec: RunSpec, triplets_dir: str | Path, metadata: str | Path, out: str | Path) -> dict[str, Any]:
    """Train with the resolved ``training`` section (profile, recipe, preset, overrides) and the run's seed.

    Returns ``model_dir``, ``config`` (TrainConfig as a dict), ``summary`` (``specter_training.json``) and
    ``log_history`` (the trainer's log: training and validation losses).
    """
    config = run_config(
        spec,
        triplets_dir,
        metadata,
        out,
        overwrite=True,  # re-running a notebook retrains
        progress_bar=False,
    )
    model_dir = train_model(config)
    log_file = Path(out) / LOG_HISTORY_FILE
    return {
        "model_dir": model_dir,
        "config": config.to_dict(),
        "summary": read_json(model_dir / "specter_training.json"),
        "log_history": read_json(log_file) if log_file.exists() else [],
    }
