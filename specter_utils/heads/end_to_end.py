"""Classification heads trained end to end: the encoder fine-tuned through the head with cross-entropy.

``train_end_to_end`` reads top to bottom in the training entry point's numbered steps: model, data, loss,
arguments, evaluation (macro-F1 over the whole validation split), trainer, train (the best validation checkpoint
restored), then score on the whole test split and save the encoder as a sentence-transformers model
(``<out>/model``, loadable by ``specter-utils embed --model``) and the head (``<out>/head``).

The Trainer switches the whole module, head included, between train mode (dropout on, BatchNorm on
batch statistics) and eval mode, so the head's BatchNorm and dropout apply while it trains."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import f1_score
from transformers import EarlyStoppingCallback, PrinterCallback, Trainer, TrainerCallback, TrainingArguments, set_seed

from specter_utils.config import EmbedConfig, EndToEndConfig, HeadsConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.heads.frozen import (
    architecture_name,
    build_head,
    check_classification_splits,
    classification_scores,
    split_rows,
    standardization,
)
from specter_utils.layout import LOG_HISTORY_FILE
from specter_utils.models import build_model

Rows = list[tuple[str, str]]
NO_DECAY = ("bias", "LayerNorm", "layer_norm", "norm.", "BatchNorm")


@dataclass
class EndToEndRun:
    """What one end-to-end run trains, beside the settings: no defaults but ``keep_model``."""

    encoder: str  # the encoder to fine-tune: a sentence-transformers folder, ``minilm`` or a hub id
    out: str  # run folder: model/ (the fine-tuned encoder), head/ (the head), log_history.json
    hidden_dims: tuple[int, ...]  # the head's hidden layers (frozen.parse_architecture)
    batch_norm: bool  # BatchNorm1d after each hidden Linear (heads.batch_norm)
    dropout: float  # after each hidden layer's ReLU (heads.dropout)
    seed: int  # head initialisation, dropout, data order
    keep_model: bool = True  # save the fine-tuned encoder and the head under ``out`` (off: scores only)


@dataclass
class EndToEndResult:
    """Scores of one run (JSON-ready ``metrics``) and the fine-tuned encoder's test embeddings."""

    metrics: dict[str, Any]
    test_embeddings: EmbeddingSet
    predictions: list[str]  # the head's class for each test row, in order


def stratified_cap(rows: Rows, limit: int, seed: int) -> Rows:
    """At most ``limit`` rows, each class in proportion and with at least one row; ``limit <= 0``: all rows."""
    if limit <= 0 or len(rows) <= limit:
        return list(rows)
    rng = np.random.default_rng(seed)
    by_class: dict[str, list[int]] = {}  # class -> the positions of its rows
    for position, (_, label) in enumerate(rows):
        by_class.setdefault(label, []).append(position)
    classes = sorted(by_class)
    if limit < len(classes):
        raise DataError(f"cannot keep {limit} papers of {len(classes)} classes: need at least one per class")
    share = {c: len(by_class[c]) * limit / len(rows) for c in classes}
    quota = {c: max(1, int(share[c])) for c in classes}
    for c in sorted(classes, key=lambda c: (quota[c] - share[c], c)):  # largest remainders first
        if sum(quota.values()) >= limit:
            break
        if quota[c] < len(by_class[c]):
            quota[c] += 1
    while sum(quota.values()) > limit:  # the at-least-one rule overshot: trim the largest classes
        biggest = max(classes, key=lambda c: (quota[c], c))
        quota[biggest] -= 1
    kept = {by_class[c][i] for c in classes for i in rng.permutation(len(by_class[c]))[: quota[c]].tolist()}
    return [row for position, row in enumerate(rows) if position in kept]  # the input order


def cap_splits(splits: dict[str, Rows], config: HeadsConfig, seed: int) -> dict[str, Rows]:
    """train / val / test for end-to-end training: val carved from train when absent (``config.val_fraction``),
    train and val capped (``config.end_to_end.max_train_papers`` and ``max_val_papers``), all with ``seed``."""
    check_classification_splits(splits)
    train, val, test, _ = split_rows(splits, config.val_fraction, seed)
    return {
        "train": stratified_cap(train, config.end_to_end.max_train_papers, seed),
        "val": stratified_cap(val, config.end_to_end.max_val_papers, seed),
        "test": list(test),
    }


def paper_texts(papers: dict[str, Paper], rows: Rows, sep: str, split: str) -> list[str]:
    """``title + sep + abstract`` of each row's paper; a paper without metadata is a ``DataError``."""
    missing = [pid for pid, _ in rows if pid not in papers]
    if missing:
        what = f"{len(missing)} paper(s) of the {split} split have no title or abstract in the metadata"
        raise DataError(f"{what}; end-to-end training reads their text", f"{split} split", record_id=missing[0])
    return [papers[pid].text(sep) for pid, _ in rows]


class EncoderWithHead(nn.Module):
    """A sentence-transformers encoder and a classification head; ``forward`` returns loss, logits, embedding."""

    def __init__(self, encoder: Any, head: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = head

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        features = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            features["token_type_ids"] = token_type_ids
        embedding = self.encoder(features)["sentence_embedding"]
        logits = self.head(embedding)
        output = {"logits": logits, "embedding": embedding}
        if labels is not None:
            output = {"loss": F.cross_entropy(logits, labels), **output}
        return output


class _Collator:
    """Tokenises a batch of ``{"text", "labels"}`` rows (truncated to ``max_length`` wordpieces)."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer, self.max_length = tokenizer, max_length

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        texts = [row["text"] for row in rows]
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        batch = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        batch["labels"] = torch.tensor([row["labels"] for row in rows], dtype=torch.long)
        return batch


class EvaluateLastStep(TrainerCallback):
    """Evaluate and checkpoint the last step too, so the best-model choice covers the final weights."""

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps:
            control.should_evaluate = True
            control.should_save = True
        return control


def _macro_f1_metric(eval_prediction) -> dict[str, float]:
    """Macro-F1 x 100 over every row of the evaluated split (the Trainer concatenates all batches first)."""
    predictions = eval_prediction.predictions
    logits = predictions[0] if isinstance(predictions, tuple) else predictions
    predicted = np.asarray(logits).argmax(axis=1)
    return {"macro_f1": round(100 * float(f1_score(eval_prediction.label_ids, predicted, average="macro")), 2)}


def _optimizer(module: nn.Module, config: EndToEndConfig) -> torch.optim.AdamW:
    """AdamW: the encoder at ``learning_rate``, the head at ``head_learning_rate``; no decay on biases and norms."""
    groups: dict[tuple[str, bool], list] = {}
    for name, parameter in module.named_parameters():
        if not parameter.requires_grad:
            continue
        part = "head" if name.startswith("head.") else "encoder"
        is_norm_layer = part == "head" and parameter.ndim == 1  # the head's biases and BatchNorm weights
        decay = not (any(tag in name for tag in NO_DECAY) or is_norm_layer)
        groups.setdefault((part, decay), []).append(parameter)
    rates = {"encoder": config.learning_rate, "head": config.head_learning_rate}
    return torch.optim.AdamW(
        [
            {"params": params, "lr": rates[part], "weight_decay": config.weight_decay if decay else 0.0}
            for (part, decay), params in groups.items()
        ]
    )


def training_arguments(config: EndToEndConfig, seed: int, output_dir: Path) -> TrainingArguments:
    """The Trainer's arguments: evaluation and a checkpoint every ``eval_steps``, the best one restored at the end."""
    return TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=max(config.batch_size, EmbedConfig.batch_size),
        learning_rate=config.learning_rate,  # the scheduler's reference; the optimiser's groups hold the rates
        lr_scheduler_type="linear",
        warmup_steps=config.warmup_ratio,  # a float < 1 is a fraction of the total steps (transformers >= 5)
        eval_strategy="steps",
        eval_steps=config.eval_steps,
        save_strategy="steps",
        save_steps=config.eval_steps,
        save_total_limit=1,  # the best checkpoint is kept besides the latest
        save_only_model=True,  # no optimiser state: a checkpoint only has to restore the best weights
        load_best_model_at_end=True,
        metric_for_best_model="macro_f1",
        greater_is_better=True,
        seed=seed,
        data_seed=seed,
        remove_unused_columns=False,
        logging_strategy="steps",
        logging_steps=max(1, config.eval_steps // 2),
        report_to="none",
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
    )


def train_end_to_end(
    config: EndToEndConfig,
    run: EndToEndRun,
    papers: dict[str, Paper],
    splits: dict[str, Rows],
    start_train_vectors: np.ndarray | None = None,
    callbacks: list | None = None,
) -> EndToEndResult:
    """Fine-tune ``run.encoder`` through a head on ``splits["train"]``; early-stop on val; score on the whole test split.

    ``start_train_vectors``: the untouched encoder's embeddings of the training papers (at ``config.max_length``),
    for the head's fixed standardisation; computed when not given. A ``DataError`` for bad splits, a paper without
    text, or ``config.max_length`` beyond the encoder's positions."""
    started = time.time()
    classes = check_classification_splits(splits)
    if not splits.get("val"):
        raise DataError("end-to-end training early-stops on a val split; cap_splits carves one from train", "val split")
    index = {c: i for i, c in enumerate(classes)}
    out = Path(run.out)
    set_seed(run.seed)

    # 1. Model: the encoder (train mode, on CPU until the Trainer places it) and a fresh head.
    encoder = build_model(run.encoder, max_length=config.max_length)
    sep = getattr(encoder.tokenizer, "sep_token", None) or " "

    # 2. Data: texts and class ids.
    texts = {split: paper_texts(papers, rows, sep, split) for split, rows in splits.items()}
    datasets = {
        split: [{"text": t, "labels": index[label]} for t, (_, label) in zip(texts[split], rows, strict=True)]
        for split, rows in splits.items()
    }
    if run.batch_norm and len(datasets["train"]) % config.batch_size == 1:
        datasets["train"] = datasets["train"][:-1]  # BatchNorm cannot normalise a last batch of one paper
    if start_train_vectors is None:
        start_train_vectors = _encode(encoder, texts["train"], max(config.batch_size, EmbedConfig.batch_size))
    mean, scale = standardization(start_train_vectors, True)  # always: the encoder's scale is unknown to the head
    set_seed(run.seed)  # the head's initialisation depends on the seed only
    dim = encoder.get_embedding_dimension()
    head = build_head(dim, len(classes), run.hidden_dims, run.batch_norm, run.dropout, mean=mean, scale=scale)
    module = EncoderWithHead(encoder, head)

    # 3-6. Loss (in forward), arguments, whole-split macro-F1 on val, the Trainer with early stopping.
    checkpoints = out / "checkpoints"
    trainer = Trainer(
        model=module,
        args=training_arguments(config, run.seed, checkpoints),
        train_dataset=datasets["train"],
        eval_dataset=datasets["val"],
        data_collator=_Collator(encoder.tokenizer, config.max_length),
        compute_metrics=_macro_f1_metric,
        optimizers=(_optimizer(module, config), None),
        callbacks=[
            EarlyStoppingCallback(early_stopping_patience=config.patience),
            EvaluateLastStep(),
            *(callbacks or []),
        ],
    )
    trainer.remove_callback(PrinterCallback)  # the logs go to log_history.json, not to the notebook

    # 7. Train; the best validation checkpoint is loaded back at the end.
    trainer.train()
    state = trainer.state
    evaluations = [e for e in state.log_history if "eval_macro_f1" in e]
    best = max(evaluations, key=lambda e: (e["eval_macro_f1"], -e["step"]))

    # 8. Score on the whole test split (logits and embeddings from one pass) and save.
    prediction = trainer.predict(datasets["test"])
    logits, embeddings = prediction.predictions
    predicted = [classes[i] for i in np.asarray(logits).argmax(axis=1)]
    y_test = [label for _, label in splits["test"]]
    shutil.rmtree(checkpoints, ignore_errors=True)
    metrics: dict[str, Any] = {
        "head": architecture_name(run.hidden_dims),
        "training": "end to end",
        "seed": run.seed,
        **classification_scores(y_test, predicted),
        "best_val_macro_f1": best["eval_macro_f1"],
        "best_step": int(best["step"]),
        "global_step": int(state.global_step),
        "max_steps": int(state.max_steps),
        "stopped_early": bool(state.global_step < state.max_steps),
        "train_papers": len(splits["train"]),
        "val_papers": len(splits["val"]),
        "test_papers": len(splits["test"]),
        "seconds": round(time.time() - started, 1),
        "config": {**asdict(config), **asdict(run), "hidden_dims": list(run.hidden_dims)},
    }
    if run.keep_model:
        module.to("cpu")
        metrics["model_dir"] = str(save_encoder(encoder, out / "model"))
        save_head(head, classes, run, out / "head")
    (out / LOG_HISTORY_FILE).parent.mkdir(parents=True, exist_ok=True)
    (out / LOG_HISTORY_FILE).write_text(json.dumps(state.log_history, indent=1))
    info = {"model": f"{run.encoder} fine-tuned end to end", "max_length": config.max_length}
    test_set = EmbeddingSet([pid for pid, _ in splits["test"]], np.asarray(embeddings, dtype=np.float32), None, info)
    del trainer, module
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return EndToEndResult(metrics, test_set, predicted)


def _encode(encoder: Any, texts: list[str], batch_size: int) -> np.ndarray:
    """Embeddings of ``texts`` by ``encoder`` in eval mode (the mode it was in is restored)."""
    was_training = encoder.training
    encoder.eval()
    try:
        vectors = encoder.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    finally:
        encoder.train(was_training)
    return np.asarray(vectors, dtype=np.float32)


def save_encoder(encoder: Any, model_dir: Path) -> Path:
    """Write the fine-tuned encoder as a sentence-transformers model (to a temp dir, then renamed into place)."""
    tmp = model_dir.with_name(f".{model_dir.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    encoder.save_pretrained(str(tmp))
    shutil.rmtree(model_dir, ignore_errors=True)
    tmp.rename(model_dir)
    return model_dir


def save_head(head: nn.Module, classes: list[str], run: EndToEndRun, head_dir: Path) -> Path:
    """``head.pt`` (the state dict, standardisation included) and ``head.json`` (classes and architecture)."""
    head_dir.mkdir(parents=True, exist_ok=True)
    torch.save(head.state_dict(), head_dir / "head.pt")
    description = {
        "classes": classes,
        "hidden_dims": list(run.hidden_dims),
        "batch_norm": run.batch_norm,
        "dropout": run.dropout,
        "encoder": str(head_dir.parent / "model"),
    }
    (head_dir / "head.json").write_text(json.dumps(description, indent=1))
    return head_dir
