"""Stage 3 (notebook 03, every ablation row and ``specter-utils train``): fine-tune with the ``training`` settings.

The stage's one front door is :func:`train_model`, which trains with a resolved TrainConfig; :func:`train` resolves
that config from a run's specification and folders first (notebooks), ``specter-utils train`` from its flags
(``spec.train_config``). Either way the values come through the same layers: defaults, profile, recipe, preset,
file, overrides.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.data.records import read_paper_records
from specter_utils.errors import DataError
from specter_utils.io import read_json, write_json
from specter_utils.layout import LOG_HISTORY_FILE, METADATA_FILE, VERDICT_FILE
from specter_utils.spec import RunSpec
from specter_utils.train_config import TrainConfig
from specter_utils.training.distributed import is_main_process
from specter_utils.training.model_card import SUMMARY_FILE
from specter_utils.training.run_folder import CHECKPOINT_DIR
from specter_utils.training.train import train_specter
from specter_utils.workflow.verdict import FINAL_MODEL_DIR, validation_verdict

__all__ = ["is_main_process", "run_config", "train", "train_model"]


def run_config(
    spec: RunSpec, triplets_dir: str | Path, metadata: str | Path, out: str | Path, **run_fields: Any
) -> TrainConfig:
    """The resolved ``training`` section of ``spec`` with a run's folders and the run's seed (``run_fields`` set
    other run-only fields, or another seed)."""
    values = {"triplets": str(triplets_dir), "metadata": str(metadata), "out": str(out), "seed": spec.seed}
    return dataclasses.replace(spec.training, **{**values, **run_fields})


def train_model(config: TrainConfig, embedding: EmbedConfig | None = None) -> Path:
    """Check ``config`` and train; the final model's folder (``OUT/model``). Writes ``OUT/train_config.json``,
    ``OUT/log_history.json`` and the checkpoints; an interrupted run resumes from its last checkpoint. With
    ``config.benchmark``, the validation verdict (``workflow.verdict``) decides which model ``OUT/model`` holds and
    is written to ``OUT/verdict.json``, its line printed; ``embedding`` is how the candidates are embedded (the run's
    evaluation settings; default: ``EmbedConfig()``)."""
    config = config.validate()
    if not config.benchmark:
        return train_specter(config)
    out = Path(config.out)
    shutil.rmtree(out / FINAL_MODEL_DIR, ignore_errors=True)  # an earlier run's trained model, set aside by its verdict
    model_dir = train_specter(dataclasses.replace(config, keep_checkpoints=True))
    result = validation_verdict(embedding or EmbedConfig(), config, out, model_dir, Path(config.benchmark))
    if not config.keep_checkpoints:
        shutil.rmtree(out / CHECKPOINT_DIR, ignore_errors=True)
    if result is not None and is_main_process():
        write_json(out / VERDICT_FILE, result)
        print(result["line"])
    return model_dir


def read_verdict(train_out: str | Path) -> dict[str, Any] | None:
    """The validation verdict a training run wrote (``OUT/verdict.json``), or None."""
    path = Path(train_out) / VERDICT_FILE
    return read_json(path) if path.exists() else None


def train(
    spec: RunSpec, triplets_dir: str | Path, metadata: str | Path, out: str | Path, benchmark: str | Path | None = None
) -> dict[str, Any]:
    """Train with the resolved ``training`` section (profile, recipe, preset, overrides) and the run's seed; with
    ``benchmark`` (notebook 03: the run's), its validation queries decide which model ``OUT/model`` holds. Returns
    ``model_dir``, ``config``, ``summary`` (``specter_training.json``), ``log_history`` and ``verdict``."""
    # overwrite: re-running a notebook retrains
    config = run_config(
        spec, triplets_dir, metadata, out, overwrite=True, progress_bar=False, benchmark=str(benchmark or "")
    )
    model_dir = train_model(config, spec.embedding)
    trained_dir = Path(out) / FINAL_MODEL_DIR if (Path(out) / FINAL_MODEL_DIR).is_dir() else model_dir
    log_file = Path(out) / LOG_HISTORY_FILE
    return {
        "model_dir": model_dir,
        "config": config.to_dict(),
        "summary": read_json(trained_dir / SUMMARY_FILE),
        "log_history": read_json(log_file) if log_file.exists() else [],
        "verdict": read_verdict(out) if benchmark else None,
    }


def merged_metadata(files: list[str], out_dir: Path) -> Path:
    """Several paper files as one ``OUT/metadata.json`` (each read by the one paper reader); a paper id in two of
    them is an error naming both files."""
    merged: dict[str, dict] = {}
    source: dict[str, str] = {}
    for name in files:
        for paper_id, record in read_paper_records(name).items():
            if paper_id in merged:
                raise DataError(f"paper in two --metadata files ({source[paper_id]} and {name})", name, None, paper_id)
            merged[paper_id], source[paper_id] = record, name
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / METADATA_FILE, merged)
    return out_dir / METADATA_FILE
