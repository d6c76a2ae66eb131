"""SPECTER training: configuration (``config``), data (``data``), the trainer entry point (``train``).

``TrainConfig`` and ``make_config`` import nothing heavy; ``train_specter`` loads torch on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specter_utils.training.config import PRESETS, TrainConfig, make_config

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["PRESETS", "TrainConfig", "make_config", "train_specter", "update_model_card"]


def train_specter(config: TrainConfig, callbacks: list | None = None) -> Path:
    """Train SPECTER as ``config`` says; returns the final model directory (see ``training.train``)."""
    from specter_utils.training.train import train_specter as _train

    return _train(config, callbacks=callbacks)


def update_model_card(model_dir: Any, results: dict[str, Any], benchmark: str = "SCIDOCS") -> Path:
    """Add evaluation results to a trained model's card (see ``training.model_card``)."""
    from specter_utils.training.model_card import update_model_card as _update

    return _update(model_dir, results, benchmark)
