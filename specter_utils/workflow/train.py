"""Stage 3 (notebook 03 and every ablation row): fine-tune with the ``training`` settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from specter_utils.io import read_json
from specter_utils.spec import RunSpec
from specter_utils.training.train import train_specter


def train(spec: RunSpec, triplets_dir: str | Path, metadata: str | Path, out: str | Path) -> dict[str, Any]:
    """Train with the resolved ``training`` section (profile, recipe, preset, overrides) and the run's seed.

    Returns ``model_dir``, ``config`` (TrainConfig as a dict), ``summary`` (``specter_training.json``) and
    ``log_history`` (the trainer's log: training and validation losses).
    """
    config = dataclasses.replace(
        spec.training,
        triplets=str(triplets_dir),
        metadata=str(metadata),
        out=str(out),
        seed=spec.seed,
        overwrite=True,  # re-running a notebook retrains
        progress_bar=False,
    )
    model_dir = train_specter(config.validate())
    log_file = Path(out) / "log_history.json"
    return {
        "model_dir": model_dir,
        "config": config.to_dict(),
        "summary": read_json(model_dir / "specter_training.json"),
        "log_history": read_json(log_file) if log_file.exists() else [],
    }
