"""Train a SPECTER model with the sentence-transformers trainer (no hand-written loop).

``train_specter(config)`` reads top to bottom: 1 model, 2 data, 3 loss, 4 arguments, 5 evaluator,
6 trainer, 7 train, 8 save with a model card, into the run folder ``config.out`` (training.run_folder).

The same call runs data parallel under ``torchrun`` (one process per GPU, or gloo on CPU; the trainer wraps
the model in DDP); training.distributed holds the process guards. Only the first process (rank 0) logs and
writes the run files, the checkpoints (each process adds its RNG state) and the final model.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import (
    SentenceTransformer,
    SentenceTransformerModelCardData,
    SentenceTransformerTrainer,
    SentenceTransformerTrainingArguments,
)
from sentence_transformers.base.sampler import NoDuplicatesBatchSampler
from sentence_transformers.sentence_transformer.evaluation import TripletEvaluator
from transformers import PrinterCallback, ProgressCallback, TrainerCallback, set_seed

from specter_utils.errors import DataError
from specter_utils.executed import native_bf16_cpu
from specter_utils.io import write_json
from specter_utils.layout import LOG_HISTORY_FILE
from specter_utils.loss_kinds import LOSS_REGISTRY
from specter_utils.models import base_model_id, build_model, model_pooling_detail, resolve_model, resolve_pooling
from specter_utils.train_config import TrainConfig
from specter_utils.training.data import load_training_data
from specter_utils.training.distributed import (
    check_enough_triplets,
    check_gathering,
    check_world_size,
    global_batch_size,
    in_batch_negatives,
    is_main_process,
    mask_counts,
    quiet_other_ranks,
    world_size,
)
from specter_utils.training.losses import build_loss
from specter_utils.training.released import BERT_ADAM_EPS, BertAdam, GradientValueClipping, slanted_triangular_scheduler
from specter_utils.training.run_folder import (
    CHECKPOINT_DIR,
    MODEL_DIR,
    CheckpointDone,
    prepare_run_dir,
    record_config,
    run_summary,
    save_final_model,
)
from specter_utils.training.sampler import EpochSeededBatchSampler, training_batch_sampler
from specter_utils.vocabularies import IN_BATCH_LOSSES

logger = logging.getLogger(__name__)

NO_DECAY_PATTERN = re.compile(r"bias|layernorm|layer_norm|(?:^|\.)norm(?:$|\.)", re.IGNORECASE)


def resolve_precision(precision: str) -> str:
    """``auto`` -> bf16 on GPUs that support it, fp16 on other GPUs; on a CPU, bf16 where it has native bf16
    instructions (``avx512_bf16`` or ``amx_bf16``: autocast runs the matrix products in bf16), else fp32."""
    has_gpu = torch.cuda.is_available()
    cpu_bf16 = not has_gpu and native_bf16_cpu()
    if precision == "auto":
        if not has_gpu:
            return "bf16" if cpu_bf16 else "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if precision == "fp16" and not has_gpu:
        raise DataError("precision='fp16' needs a GPU (none found); use auto, bf16 or fp32", "TrainConfig")
    if precision == "bf16" and not has_gpu and not cpu_bf16:
        raise DataError(
            "precision='bf16' needs a GPU or a CPU with native bf16 (avx512_bf16 or amx_bf16); use auto or fp32",
            "TrainConfig",
        )
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
    """WiSE-FT: set every weight of ``model`` to ``alpha`` x itself + (1 - alpha) x ``base``'s (same architecture);
    return the count."""
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


def describe_budget(config: TrainConfig, triplets: int, batch: int) -> str:
    """The training length in words: optimiser steps and passes over the triplets (a step budget repeats passes)."""
    per_pass = max(1, -(-triplets // batch))
    steps = config.max_steps if config.max_steps > 0 else round(config.epochs * per_pass)
    return f"{steps:,} optimiser steps of {batch}, {steps / per_pass:.1f} passes over {triplets:,} training triplets"


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
        per_epoch = {"load_best_model_at_end": True, "metric_for_best_model": "eval_loss", "greater_is_better": False}
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
        use_cpu=not torch.cuda.is_available(),  # fp32, or bf16 autocast on a CPU with native bf16
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


def train_specter(config: TrainConfig, callbacks: list | None = None) -> Path:
    """Train SPECTER as ``config`` says and return the final model directory (``config.out/model``);
    ``callbacks``: extra ``transformers.TrainerCallback`` objects (for notebooks and tests)."""
    config.validate()
    world = world_size()
    check_world_size(config, world)
    quiet_other_ranks()

    started = time.time()
    run_dir = Path(config.out)
    precision = resolve_precision(config.dtype)
    checkpoint = prepare_run_dir(config, run_dir, world)
    set_seed(config.seed)

    # 1. Model: the base model with its own pooling (auto, for a sentence-transformers base) or [CLS] / mean.
    model = specter_model(config.base_model, config.pooling, config.max_length)
    # The frozen base model: GIST's guide, and the other end of a WiSE-FT merge.
    needs_base = LOSS_REGISTRY.get(config.loss).needs_base or config.merge_with_base < 1.0
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
    with_rows = LOSS_REGISTRY.get(config.loss).needs_citations  # its loss looks each row's paper ids up by index
    train_dataset = data.train.to_dataset(0 if with_rows else None)
    val_dataset = data.val.to_dataset(data.train.used if with_rows else None) if data.val else None
    row_papers = data.train.ids + (data.val.ids if data.val else [])
    check_enough_triplets(config, world, data.train.used, data.val.used if data.val else 0)
    record_config(config, run_dir, describe_pooling(config.base_model, config.pooling), world, precision)

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
            *([GradientValueClipping(config.grad_value_clip)] if config.grad_value_clip else []),
            *(callbacks or []),
        ],
        optimizer_cls_and_kwargs=optimizer_cls_and_kwargs(config),
    )
    if not is_main_process():  # the trainer prints logs on each node's first process; keep rank 0's only
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)

    # 7. Train (resuming from the last checkpoint of an interrupted run).
    if is_main_process() and config.progress_bar:  # not with --quiet
        print(f"budget: {describe_budget(config, data.train.used, global_batch_size(config, world))}", file=sys.stderr)
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
    masked = mask_counts(loss)  # a collective: every process takes part
    if trainer.is_world_process_zero():
        write_json(run_dir / LOG_HISTORY_FILE, trainer.state.log_history)  # every logged loss, as the trainer kept it
        summary = run_summary(
            config,
            sep_token=sep_token,
            data_counts=data.counts(),
            derived={
                "pooling": describe_pooling(config.base_model, config.pooling),
                "loss": type(loss).__name__,
                **masked,
                "world_size": world,
                "global_batch_size": global_batch_size(config, world),
                "in_batch_negatives": in_batch_negatives(config, world, gather),
                "gradient_accumulation_steps": args.gradient_accumulation_steps,
                "precision": precision,
                "total_steps": trainer.state.max_steps,
            },
            state=trainer.state,
            train_metrics=output.metrics,
            resumed_from=checkpoint,
            started=started,
        )
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
