"""Train a SPECTER model with the sentence-transformers trainer (no hand-written loop).

``train_specter(config)`` reads top to bottom: 1 model, 2 data, 3 loss, 4 arguments, 5 evaluator,
6 trainer, 7 train, 8 save with a model card. The run directory ``config.out`` holds::

    model/              the final sentence-transformers model (written to a temp dir, then renamed)
    checkpoints/        checkpoint-N/ every save_steps optimiser steps (a killed run resumes from the last)
    train_config.json   the TrainConfig of the run (a resumed run must match it), its world_size and global_batch_size
    log_history.json    every logged training / validation loss

The same call runs data parallel under ``torchrun`` (one process per GPU, or gloo on CPU; the trainer wraps
the model in DDP). Each process trains on its own slice of every global batch (training.sampler); in-batch
losses gather the other processes' embeddings (training.losses); only the first process (rank 0) logs
and writes the run files, the checkpoints (each process adds its RNG state) and the final model.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import os
import platform
import re
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import sentence_transformers
import torch
import torch.distributed as dist
import transformers
from sentence_transformers import (
    SentenceTransformer,
    SentenceTransformerModelCardData,
    SentenceTransformerTrainer,
    SentenceTransformerTrainingArguments,
)
from sentence_transformers.base.sampler import NoDuplicatesBatchSampler
from sentence_transformers.sentence_transformer.evaluation import TripletEvaluator
from transformers import PrinterCallback, ProgressCallback, TrainerCallback, set_seed

from specter_utils.config import IN_BATCH_LOSSES, TrainConfig, differing_fields
from specter_utils.errors import DataError
from specter_utils.io import read_json, write_json
from specter_utils.models import (
    base_model_id,
    build_model,
    model_pooling_detail,
    resolve_model,
    resolve_pooling,
)
from specter_utils.training.data import load_training_data
from specter_utils.training.losses import build_loss
from specter_utils.training.model_card import write_model_card
from specter_utils.training.released import BERT_ADAM_EPS, BertAdam, GradientValueClipping, slanted_triangular_scheduler
from specter_utils.training.sampler import EpochSeededBatchSampler, training_batch_sampler

logger = logging.getLogger(__name__)

MODEL_DIR, CHECKPOINT_DIR, CONFIG_FILE, LOG_FILE = "model", "checkpoints", "train_config.json", "log_history.json"
# Written into checkpoint-N by rank 0 once every process has saved its part (model, optimiser, each RNG state).
CHECKPOINT_DONE = "specter_checkpoint.json"
NO_DECAY_PATTERN = re.compile(r"bias|layernorm|layer_norm|(?:^|\.)norm(?:$|\.)", re.IGNORECASE)


def world_size() -> int:
    """Number of processes of a ``torchrun`` launch (1 otherwise)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def launch_name(world: int) -> str:
    """Where a process-count error comes from, for its message."""
    return f"torchrun (WORLD_SIZE={world})"


def global_batch_size(config: TrainConfig, world: int) -> int:
    """Triplets per optimiser step over all processes: per-process batch x processes x accumulation."""
    return config.batch_size * world * config.accumulation_steps(world)


def check_world_size(config: TrainConfig, world: int) -> None:
    """Before anything is loaded: the number of processes fits the batch settings (a DataError says why not)."""
    per_step = config.batch_size * world
    if world > 1 and not config.gradient_accumulation_steps and per_step > config.effective_batch_size:
        most = max(1, config.effective_batch_size // config.batch_size)
        raise DataError(
            f"{world} processes x per-process batch {config.batch_size} = {per_step} triplets per step, "
            f"more than effective_batch_size={config.effective_batch_size}: launch at most {most} process(es) "
            "(--nproc_per_node x --nnodes), or lower --batch-size, or raise --effective-batch-size",
            launch_name(world),
        )
    config.accumulation_steps(world)  # a DataError when the effective batch is not a multiple of the step


def check_enough_triplets(config: TrainConfig, world: int, train_triplets: int, val_triplets: int = 0) -> None:
    """Several processes drop an epoch's incomplete global batch: the data must fill at least one (the
    validation triplets too, or the validation loss is left out: a warning)."""
    per_step = config.batch_size * world
    if world > 1 and 0 < val_triplets < per_step:
        logger.warning(
            "%d validation triplets do not fill one batch of %d processes x %d: no validation loss will be logged "
            "(the triplet accuracy still is); raise --max-val-triplets or lower --batch-size",
            val_triplets,
            world,
            config.batch_size,
        )
    if world > 1 and train_triplets < per_step:
        raise DataError(
            f"{train_triplets} training triplets do not fill one batch of {world} processes x "
            f"{config.batch_size}: use fewer processes, a smaller --batch-size or more triplets",
            launch_name(world),
        )


def check_gathering(loss, config: TrainConfig, world: int) -> None:
    """An in-batch loss asked to gather across processes must be able to (else its negatives shrink N times)."""
    if world == 1 or not config.gather_across_devices or config.loss not in IN_BATCH_LOSSES:
        return
    if not getattr(loss, "gather_across_devices", False):
        raise DataError(
            f"loss={config.loss!r} ({type(loss).__name__}) cannot gather embeddings across processes, so each "
            f"process would draw its in-batch negatives from its own 1/{world} of the batch; pass "
            "--no-gather-across-devices to train that way",
            launch_name(world),
            record_id="gather_across_devices",
        )


def quiet_other_ranks() -> None:
    """Logs come from rank 0 only: the other processes report errors (their warnings repeat rank 0's)."""
    if not is_main_process():
        for name in ("specter_utils", "sentence_transformers"):  # transformers': log_level_replica
            logging.getLogger(name).setLevel(logging.ERROR)
        warnings.filterwarnings("ignore")


def resolve_precision(precision: str) -> str:
    """``auto`` -> bf16 on GPUs that support it, fp16 on other GPUs, fp32 on CPU."""

    has_gpu = torch.cuda.is_available()
    if precision == "auto":
        if not has_gpu:
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if precision in {"bf16", "fp16"} and not has_gpu:
        raise DataError(f"precision={precision!r} needs a GPU (none found); use auto or fp32", "TrainConfig")
    return precision


def describe_pooling(base_model: str, pooling: str) -> str:
    """What the trained model's pooling is, e.g. ``mean+normalize (the base model's own)`` or ``cls``."""
    resolved = resolve_pooling(resolve_model(base_model), pooling)
    if resolved == "model":
        return f"{model_pooling_detail(resolve_model(base_model))} (the base model's own)"
    return resolved


def specter_model(base_model: str, pooling: str, max_length: int) -> SentenceTransformer:
    """The model to train: ``models.build_model`` (the project's one builder and its length rule) with the
    model card that names the recipe's pooling and the base model."""
    detail = describe_pooling(base_model, pooling)
    card = SentenceTransformerModelCardData(
        model_name=f"SPECTER reproduction ({detail} pooling) from {base_model_id(base_model)}",
        local_files_only=True,  # never look the base model or data up on the hub
        generate_widget_examples=False,
    )
    return build_model(base_model, pooling, max_length=max_length, model_card_data=card)


def merge_with_base(model, base, alpha: float) -> int:
    """WiSE-FT: set every weight of ``model`` to ``alpha`` x itself + (1 - alpha) x ``base``'s; return the count.

    Both models must have the same architecture (the same state-dict keys and shapes).
    """

    trained, original = model.state_dict(), base.state_dict()
    if trained.keys() != original.keys():
        raise DataError("cannot merge: the trained and base models have different modules", "merge_with_base")
    merged = 0
    with torch.no_grad():
        for name, tensor in trained.items():
            if tensor.shape != original[name].shape:
                raise DataError(f"cannot merge {name}: shapes {tuple(tensor.shape)} and {tuple(original[name].shape)}")
            if tensor.is_floating_point():
                tensor.mul_(alpha).add_(original[name].to(tensor.device, tensor.dtype), alpha=1.0 - alpha)
                merged += 1
    return merged


class WeightDecayCheck(TrainerCallback):
    """At train start, fail if a bias or LayerNorm weight would be decayed (the paper: never)."""

    def __init__(self) -> None:
        self.decayed: list[str] = []
        self.not_decayed: list[str] = []

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs) -> None:
        names = {id(p): n for n, p in model.named_parameters()}
        self.decayed, self.not_decayed = [], []
        for group in optimizer.param_groups:
            target = self.decayed if group["weight_decay"] > 0 else self.not_decayed
            target.extend(names.get(id(p), "?") for p in group["params"])
        wrong = [n for n in self.decayed if NO_DECAY_PATTERN.search(n)]
        if wrong:
            raise RuntimeError(f"weight decay would apply to bias / LayerNorm parameters: {wrong[:5]}")
        logger.info(
            "weight decay on %d tensors, none on %d (bias, LayerNorm)", len(self.decayed), len(self.not_decayed)
        )


def training_arguments(config: TrainConfig, output_dir: Path, precision: str, has_val: bool):
    """The trainer's arguments: the paper's optimisation, seeded data order, checkpoints, logging."""

    if config.loss in IN_BATCH_LOSSES:
        # In-batch negatives: a text twice in one batch would be its own false negative.
        batch_sampler = NoDuplicatesBatchSampler
    else:
        batch_sampler = functools.partial(EpochSeededBatchSampler, group_by_length=config.group_by_length)
    eval_strategy = "steps" if has_val else "no"
    per_epoch: dict[str, Any] = {}
    if config.best_by_val_loss:
        if not has_val:
            raise DataError("best_by_val_loss needs validation triplets (val.jsonl)", config.triplets)
        # The released code validates after each epoch and keeps the best: evaluate and save per epoch, reload the best.
        eval_strategy = "epoch"
        per_epoch = {
            "load_best_model_at_end": True,
            "metric_for_best_model": "eval_loss",
            "greater_is_better": False,
        }
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        gradient_accumulation_steps=config.accumulation_steps(world_size()),
        optim="adamw_torch",  # AdamW; weight decay groups exclude bias and LayerNorm (WeightDecayCheck)
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        # BertAdam clips each tensor's gradient itself (training.released); the trainer's clipping is global
        max_grad_norm=0.0 if config.optimizer == "bert_adam" else config.max_grad_norm,
        lr_scheduler_type="linear",  # replaced by SlantedTriangularTrainer.create_scheduler for slanted_triangular
        warmup_steps=config.warmup_ratio,  # a float < 1 is a fraction of the total steps (transformers >= 5)
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        use_cpu=precision == "fp32" and not _cuda_available(),
        torch_compile=config.torch_compile,
        seed=config.seed,
        data_seed=config.seed,
        batch_sampler=batch_sampler,
        dataloader_num_workers=config.dataloader_num_workers,
        dataloader_drop_last=world_size() > 1,  # under DDP every process needs full batches (the library sets it too)
        save_strategy="epoch" if config.best_by_val_loss else "steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        eval_strategy=eval_strategy,
        eval_steps=config.eval_steps if eval_strategy == "steps" else None,
        eval_on_start=has_val,  # the validation loss before training, as a baseline
        logging_strategy="steps",
        logging_steps=config.logging_steps,
        logging_first_step=True,
        log_level_replica="error",  # logs from rank 0 only
        report_to="none",
        disable_tqdm=not config.progress_bar or not is_main_process(),
        **per_epoch,
    )


def optimizer_cls_and_kwargs(config: TrainConfig):
    """``(BertAdam, kwargs)`` for ``optimizer="bert_adam"`` (the trainer builds the weight-decay groups); None for AdamW."""
    if config.optimizer != "bert_adam":
        return None

    return BertAdam, {"lr": config.learning_rate, "eps": BERT_ADAM_EPS, "max_grad_norm": config.max_grad_norm}


def trainer_class(config: TrainConfig):
    """SentenceTransformerTrainer whose training batches come from training.sampler (per process slices of
    global batches); a subclass of it whose scheduler is AllenNLP's slanted triangular one where asked."""

    class SpecterTrainer(SentenceTransformerTrainer):
        def get_batch_sampler(self, dataset, batch_size, drop_last, valid_label_columns=None, generator=None, seed=0):
            if dataset is not self.train_dataset:  # evaluation: the library's sampler, which accelerate shards evenly
                return super().get_batch_sampler(dataset, batch_size, drop_last, valid_label_columns, generator, seed)
            return training_batch_sampler(
                dataset,
                batch_size,
                in_batch_negatives=config.loss in IN_BATCH_LOSSES,
                world_size=world_size(),
                group_by_length=config.group_by_length,
                valid_label_columns=valid_label_columns,
                generator=generator,
                seed=seed,
            )

    if config.lr_schedule != "slanted_triangular":
        return SpecterTrainer

    class SlantedTriangularTrainer(SpecterTrainer):
        def create_scheduler(self, num_training_steps: int, optimizer=None):

            if self.lr_scheduler is None:
                self.lr_scheduler = slanted_triangular_scheduler(
                    optimizer or self.optimizer, num_training_steps, config.warmup_ratio, config.stlr_ratio
                )
                self._created_lr_scheduler = True
            return self.lr_scheduler

    return SlantedTriangularTrainer


def recipe_callbacks(config: TrainConfig) -> list:
    """Callbacks a recipe's fields ask for (gradient value clipping)."""
    if not config.grad_value_clip:
        return []

    return [GradientValueClipping(config.grad_value_clip)]


def _cuda_available() -> bool:

    return torch.cuda.is_available()


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

        if dist.is_available() and dist.is_initialized():
            dist.barrier()
        if state.is_world_process_zero:
            write_json(Path(args.output_dir) / f"checkpoint-{state.global_step}" / CHECKPOINT_DONE, self.record)


def _prepare_run_dir(config: TrainConfig, run_dir: Path, world: int = 1) -> Path | None:
    """Check the run dir (writing nothing) and return the checkpoint to resume from (if any).

    A resumed run may have another number of processes (an elastic restart) but must keep the global batch.
    """
    final_dir = run_dir / MODEL_DIR
    if final_dir.exists() and not config.overwrite:
        raise DataError("a trained model is already there; pass --overwrite to replace it", final_dir)
    checkpoint = last_checkpoint(run_dir / CHECKPOINT_DIR) if config.resume else None
    config_path = run_dir / CONFIG_FILE
    if checkpoint is not None and config_path.exists():
        changed = differing_fields(read_json(config_path), config)
        if changed:
            detail = "; ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(changed.items()))
            raise DataError(
                f"cannot resume from {checkpoint.name} with different settings ({detail}); "
                "restore them, pass --no-resume to start over, or use another --out",
                config_path,
            )
        saved = read_json(config_path)
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


def _record_config(config: TrainConfig, run_dir: Path, world: int = 1) -> None:
    """Write train_config.json (once the inputs have been read: a run that fails on them leaves nothing)."""
    config_path = run_dir / CONFIG_FILE
    if is_main_process():
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in run_dir.glob(f".{MODEL_DIR}.tmp-*"):  # a final save killed part-way
            shutil.rmtree(stale, ignore_errors=True)
        write_json(
            config_path,
            {
                **config.to_dict(),
                "resolved_pooling": describe_pooling(config.base_model, config.pooling),
                "world_size": world,
                "global_batch_size": global_batch_size(config, world),
            },
        )


def _device_name() -> str:

    if torch.cuda.is_available():
        return f"{world_size()} x {torch.cuda.get_device_name(0)}"
    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def _results(log_history: list[dict[str, Any]], train_metrics: dict[str, Any]) -> dict[str, Any]:
    """Losses and accuracies worth a line in the model card, from the trainer's log history."""
    results: dict[str, Any] = {}
    train_logs = [e for e in log_history if "loss" in e]
    if train_logs:
        results["train_loss_first_logged"] = train_logs[0]["loss"]
        results["train_loss_last_logged"] = train_logs[-1]["loss"]
    if "train_loss" in train_metrics:
        results["train_loss_mean_this_process"] = train_metrics["train_loss"]
    evals = [e for e in log_history if "eval_loss" in e]
    if evals:
        results["val_loss_before"] = evals[0]["eval_loss"]
        results["val_loss_final"] = evals[-1]["eval_loss"]
        for key, value in evals[-1].items():
            if key.endswith("accuracy"):
                results[key.removeprefix("eval_") + "_final"] = value
        for key, value in evals[0].items():
            if key.endswith("accuracy"):
                results[key.removeprefix("eval_") + "_before"] = value
    return results


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


def train_specter(config: TrainConfig, callbacks: list | None = None) -> Path:
    """Train SPECTER as ``config`` says and return the final model directory (``config.out/model``).

    Args:
        callbacks: extra ``transformers.TrainerCallback`` objects (for notebooks and tests).
    """
    config.validate()
    world = world_size()
    check_world_size(config, world)
    quiet_other_ranks()

    started = time.time()
    run_dir = Path(config.out)
    precision = resolve_precision(config.dtype)
    checkpoint = _prepare_run_dir(config, run_dir, world)
    set_seed(config.seed)

    # 1. Model: the base model with its own pooling (auto, for a sentence-transformers base) or [CLS] / mean.
    model = specter_model(config.base_model, config.pooling, config.max_length)
    # The frozen base model: GIST's guide, and the other end of a WiSE-FT merge.
    needs_base = config.loss == "gist" or config.merge_with_base < 1.0
    base = specter_model(config.base_model, config.pooling, config.max_length) if needs_base else None
    sep_token = model.tokenizer.sep_token or " "

    # 2. Data: triplets of paper ids -> "title [SEP] abstract" texts from metadata.json.
    data = load_training_data(
        config.triplets,
        config.metadata,
        sep_token,
        max_train=config.max_triplets,
        max_val=config.max_val_triplets,
        seed=config.seed,
        drop_unknown=config.drop_unknown,
    )
    with_rows = config.loss == "mnrl-citation"  # its loss looks each row's paper ids up by index
    train_dataset = data.train.to_dataset(0 if with_rows else None)
    val_dataset = data.val.to_dataset(data.train.used if with_rows else None) if data.val else None
    row_papers = data.train.ids + (data.val.ids if data.val else [])
    check_enough_triplets(config, world, data.train.used, data.val.used if data.val else 0)
    _record_config(config, run_dir, world)

    # 3. Loss: the paper's triplet loss (Euclidean, margin 1), or in-batch negatives (training.losses), which under
    # torchrun gather every process's embeddings so the negatives span the global batch.
    gather = config.gather_across_devices and world > 1
    loss = build_loss(config, model, row_papers, base_model=base, gather_across_devices=gather)
    check_gathering(loss, config, world)

    # 4. Arguments: the paper's optimisation, seeded data order, checkpoints, precision.
    args = training_arguments(config, run_dir / CHECKPOINT_DIR, precision, has_val=val_dataset is not None)

    # 5. Evaluator: on validation triplets, how often the positive is closer than the negative.
    evaluator = None
    if data.val:
        evaluator = TripletEvaluator(
            data.val.anchor,
            data.val.positive,
            data.val.negative,
            main_similarity_function="euclidean",
            similarity_fn_names=["euclidean"],
            name="val",
            batch_size=config.batch_size,
        )

    # 6. Trainer.
    decay_check = WeightDecayCheck()
    trainer = trainer_class(config)(
        model=model,
        args=args,
        train_dataset=train_dataset,
        eval_dataset=val_dataset,
        loss=loss,
        evaluator=evaluator,
        callbacks=[
            decay_check,
            CheckpointDone(world, global_batch_size(config, world)),
            *recipe_callbacks(config),
            *(callbacks or []),
        ],
        optimizer_cls_and_kwargs=optimizer_cls_and_kwargs(config),
    )
    if not is_main_process():  # the trainer prints logs on each node's first process; keep rank 0's only
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)

    # 7. Train (resuming from the last checkpoint of an interrupted run).
    if checkpoint is not None:
        logger.info("resuming from %s", checkpoint)
    output = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    evaluated = [entry for entry in trainer.state.log_history if "eval_loss" in entry]
    if val_dataset is not None and (not evaluated or evaluated[-1].get("step") != trainer.state.global_step):
        trainer.evaluate()  # the validation loss of the final weights

    # 8. Save the final model with its card (main process only), then tidy the checkpoints.
    final_dir = run_dir / MODEL_DIR
    if base is not None and config.merge_with_base < 1.0:
        merged = merge_with_base(trainer.model, base, config.merge_with_base)
        logger.info("merged %d weight tensors with the base model (alpha %.2f)", merged, config.merge_with_base)
    mask_counts = _mask_counts(loss)  # a collective: every process takes part
    if trainer.is_world_process_zero():
        log_history = trainer.state.log_history
        write_json(run_dir / LOG_FILE, log_history)
        summary = {
            "config": config.to_dict(),
            "base_model_id": base_model_id(config.base_model),
            "sep_token": sep_token,
            "data": data.counts(),
            "derived": {
                "pooling": describe_pooling(config.base_model, config.pooling),
                "loss": type(loss).__name__,
                **mask_counts,
                "world_size": world,
                "global_batch_size": global_batch_size(config, world),
                "in_batch_negatives": _in_batch_negatives(config, world, gather),
                "gradient_accumulation_steps": args.gradient_accumulation_steps,
                "precision": precision,
                "total_steps": trainer.state.max_steps,
            },
            "results": {
                **_results(log_history, output.metrics),
                "global_step": trainer.state.global_step,
                **_best_checkpoint(trainer.state, config),
            },
            "resumed_from": checkpoint.name if checkpoint else None,
            "runtime_s": round(time.time() - started, 1),
            "finished_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "device": _device_name(),
            "versions": _versions(),
        }
        card = trainer.model.model_card_data
        card.base_model = base_model_id(config.base_model)  # the trainer resets it to the resolved local path
        card.widget = []  # full abstracts as widget examples only bloat the card
        save_final_model(trainer.model, final_dir, summary)
        if not config.keep_checkpoints:
            shutil.rmtree(run_dir / CHECKPOINT_DIR, ignore_errors=True)
        logger.info("final model written to %s", final_dir)
        print(json.dumps({"model": str(final_dir), **summary["results"]}, indent=None))
    trainer.accelerator.wait_for_everyone()
    return final_dir


def _best_checkpoint(state, config: TrainConfig) -> dict[str, Any]:
    """With ``best_by_val_loss``: the step whose weights became the final model, and its validation loss."""
    if not config.best_by_val_loss or not state.best_model_checkpoint:
        return {}
    return {"best_step": int(state.best_model_checkpoint.rsplit("-", 1)[-1]), "best_val_loss": state.best_metric}


def _in_batch_negatives(config: TrainConfig, world: int, gather: bool) -> str | None:
    """Where an in-batch loss's negatives came from (None for the triplet loss)."""
    if config.loss not in IN_BATCH_LOSSES:
        return None
    if world == 1:
        return "the batch"
    return f"the global batch (gathered from {world} processes)" if gather else f"each process's 1/{world} of the batch"


def _mask_counts(loss) -> dict[str, Any]:
    """How many in-batch scores ``mnrl-citation`` masked as false negatives, summed over processes (else nothing).

    Under torchrun every process must call it (an all-reduce).
    """
    if not hasattr(loss, "scored"):
        return {}
    counts = [loss.masked, loss.scored]

    if dist.is_available() and dist.is_initialized():
        on_gpu = dist.get_backend() == "nccl"  # NCCL reduces GPU tensors only, gloo CPU ones
        total = torch.tensor(counts, dtype=torch.long, device="cuda" if on_gpu else "cpu")
        dist.all_reduce(total)
        counts = total.tolist()
    if not counts[1]:
        return {}
    return {"false_negatives_masked": counts[0], "in_batch_scores": counts[1]}


def _versions() -> dict[str, str]:

    return {
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
