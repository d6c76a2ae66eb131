"""The folder of a training run (``config.out``): what is in it, whether a run may start or resume there, and
the files it writes::

    model/              the final sentence-transformers model (written to a temp dir, then renamed)
    checkpoints/        checkpoint-N/ every save_steps optimiser steps (a killed run resumes from the last)
    train_config.json   the TrainConfig of the run (a resumed run must match it), its world_size and global_batch_size
    log_history.json    every logged training / validation loss

Only the first process (rank 0) writes them; every process writes its part of a checkpoint (its RNG state).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import platform
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sentence_transformers
import torch
import transformers
from transformers import TrainerCallback

from specter_utils.config import renamed_fields
from specter_utils.errors import DataError
from specter_utils.io import read_json, write_json
from specter_utils.layout import TRAIN_CONFIG_FILE
from specter_utils.models import base_model_id
from specter_utils.train_config import TrainConfig
from specter_utils.training.distributed import global_batch_size, is_main_process, wait_for_other_processes, world_size
from specter_utils.training.model_card import write_model_card

logger = logging.getLogger(__name__)

MODEL_DIR, CHECKPOINT_DIR = "model", "checkpoints"
# Written into checkpoint-N by rank 0 once every process has saved its part (model, optimiser, each RNG state).
CHECKPOINT_DONE = "specter_checkpoint.json"


# ---------------------------------------------------------------- checkpoints
def checkpoint_complete(path: Path) -> bool:
    """Rank 0 wrote the trainer state last; a checkpoint of several processes also needs every process's part."""
    if not (path / "trainer_state.json").exists():
        return False
    several_processes = (path / "rng_state_0.pth").exists()  # one process writes rng_state.pth
    return not several_processes or (path / CHECKPOINT_DONE).exists()


def last_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The highest-numbered complete ``checkpoint-N`` directory, if any."""
    if not checkpoint_dir.is_dir():
        return None
    done = [
        p for p in checkpoint_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit() and checkpoint_complete(p)
    ]
    return max(done, key=lambda p: int(p.name.split("-")[-1]), default=None)


class CheckpointDone(TrainerCallback):
    """After each checkpoint: wait for every process to finish its part, then rank 0 marks it complete."""

    def __init__(self, world: int, global_batch: int) -> None:
        self.record = {"world_size": world, "global_batch_size": global_batch}

    def on_save(self, args, state, control, **kwargs) -> None:
        wait_for_other_processes()
        if state.is_world_process_zero:
            write_json(Path(args.output_dir) / f"checkpoint-{state.global_step}" / CHECKPOINT_DONE, self.record)


# ---------------------------------------------------------------- before training
# Fields a resumed run may change freely: those that only say where things go or how to report, and the names of a
# profile or recipe (the values they set are compared).
NOT_COMPARED = {"out", "keep", "benchmark", "resume", "overwrite", "keep_checkpoints", "progress_bar", "logging_steps"}
NOT_COMPARED |= {"dataloader_num_workers", "drop_unknown", "profile", "recipe"}


def differing_fields(saved: Mapping[str, Any], config: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Fields (other than ``NOT_COMPARED``) whose value differs between a saved TrainConfig and ``config``: what a
    resumed run may not change."""
    saved = renamed_fields(saved)
    current = config.to_dict()
    defaults = TrainConfig().to_dict()
    return {
        name: (saved.get(name), value)
        for name, value in current.items()
        if name not in NOT_COMPARED
        and saved.get(name, defaults[name]) != value  # a field added since the save had its default then
    }


def prepare_run_dir(config: TrainConfig, run_dir: Path, world: int = 1) -> Path | None:
    """Check the run dir (writing nothing) and return the checkpoint to resume from (if any); a resumed run may
    have another number of processes (an elastic restart) but must keep the global batch."""
    final_dir = run_dir / MODEL_DIR
    if final_dir.exists() and not config.overwrite:
        raise DataError("a trained model is already there; pass --overwrite to replace it", final_dir)
    checkpoint = last_checkpoint(run_dir / CHECKPOINT_DIR) if config.resume else None
    config_path = run_dir / TRAIN_CONFIG_FILE
    if checkpoint is not None and config_path.exists():
        saved = read_json(config_path)
        changed = differing_fields(saved, config)
        if changed:
            detail = "; ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(changed.items()))
            raise DataError(
                f"cannot resume from {checkpoint.name} with different settings ({detail}); "
                "restore them, pass --no-resume to start over, or use another --out",
                config_path,
            )
        batch = global_batch_size(config, world)
        if saved.get("global_batch_size", batch) != batch:
            raise DataError(
                f"cannot resume from {checkpoint.name}: its global batch was {saved['global_batch_size']} triplets per "
                f"step ({saved.get('world_size')} process(es)), now {batch} ({world}); keep per-process batch x "
                "processes x accumulation the same, pass --no-resume to start over, or use another --out",
                config_path,
            )
        if saved.get("world_size", world) != world:
            logger.warning(
                "resuming %s with %d processes, saved with %d: same global batch, but another split of its rows "
                "and other dropout draws than an uninterrupted run",
                checkpoint.name,
                world,
                saved["world_size"],
            )
    return checkpoint


def record_config(
    config: TrainConfig, run_dir: Path, resolved_pooling: str, world: int = 1, precision: str | None = None
) -> None:
    """Write train_config.json (once the inputs have been read: a run that fails on them leaves nothing);
    ``precision`` is what ``dtype`` resolved to on this machine (``auto`` -> bf16, fp16 or fp32)."""
    config_path = run_dir / TRAIN_CONFIG_FILE
    if is_main_process():
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in run_dir.glob(f".{MODEL_DIR}.tmp-*"):  # a final save killed part-way
            shutil.rmtree(stale, ignore_errors=True)
        write_json(
            config_path,
            {
                **config.to_dict(),
                "resolved_pooling": resolved_pooling,
                "resolved_dtype": precision or config.dtype,
                "world_size": world,
                "global_batch_size": global_batch_size(config, world),
            },
        )


# ---------------------------------------------------------------- after training
def run_summary(
    config: TrainConfig,
    *,
    sep_token: str,
    data_counts: dict[str, Any],
    derived: dict[str, Any],
    state: Any,
    train_metrics: dict[str, Any],
    resumed_from: Path | None,
    started: float,
) -> dict[str, Any]:
    """What the model card states about a finished run: its settings, data, ``derived`` facts (what the run made of
    its settings: pooling, loss class, processes, precision, ...) and results (from the trainer's final ``state``)."""
    return {
        "config": config.to_dict(),
        "base_model_id": base_model_id(config.base_model),
        "sep_token": sep_token,
        "data": data_counts,
        "derived": derived,
        "results": {
            **_results(state.log_history, train_metrics),
            "global_step": state.global_step,
            **_best_checkpoint(state, config),
        },
        "resumed_from": resumed_from.name if resumed_from else None,
        "runtime_s": round(time.time() - started, 1),
        "finished_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": _device_name(),
        "versions": {
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
    }


def save_final_model(model, final_dir: Path, summary: dict[str, Any]) -> Path:
    """Write the model and its card to a temp dir beside ``final_dir``, then rename it into place."""
    tmp_dir = final_dir.with_name(f".{final_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    model.save_pretrained(str(tmp_dir))
    write_model_card(tmp_dir, summary)
    old_dir = None
    if final_dir.exists():
        old_dir = final_dir.with_name(f".{final_dir.name}.old-{os.getpid()}")
        os.rename(final_dir, old_dir)
    os.rename(tmp_dir, final_dir)
    if old_dir is not None:
        shutil.rmtree(old_dir, ignore_errors=True)
    return final_dir


def _results(log_history: list[dict[str, Any]], train_metrics: dict[str, Any]) -> dict[str, Any]:
    """Losses and accuracies worth a line in the model card, from the trainer's log history."""
    results: dict[str, Any] = {}
    train_logs = [e for e in log_history if "loss" in e]
    if train_logs:
        results["train_loss_first_logged"] = train_logs[0]["loss"]
        results["train_loss_last_logged"] = train_logs[-1]["loss"]
    if "train_loss" in train_metrics:
        results["train_loss_mean_this_process"] = train_metrics["train_loss"]
    if "train_samples_per_second" in train_metrics:  # triplets per second of the training loop (the trainer's clock)
        results["train_triplets_per_second"] = train_metrics["train_samples_per_second"]
        results["train_runtime_s"] = train_metrics.get("train_runtime")
    evals = [e for e in log_history if "eval_loss" in e]
    if evals:
        results["val_loss_before"] = evals[0]["eval_loss"]
        results["val_loss_final"] = evals[-1]["eval_loss"]
        for entry, suffix in ((evals[-1], "_final"), (evals[0], "_before")):
            results.update({k.removeprefix("eval_") + suffix: v for k, v in entry.items() if k.endswith("accuracy")})
    return results


def _best_checkpoint(state, config: TrainConfig) -> dict[str, Any]:
    """With ``best_by_val_loss``: the step whose weights became the final model, and its validation loss."""
    if not config.best_by_val_loss or not state.best_model_checkpoint:
        return {}
    return {"best_step": int(state.best_model_checkpoint.rsplit("-", 1)[-1]), "best_val_loss": state.best_metric}


def _device_name() -> str:
    if torch.cuda.is_available():
        return f"{world_size()} x {torch.cuda.get_device_name(0)}"
    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
