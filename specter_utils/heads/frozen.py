"""Classification heads on frozen paper embeddings (the SPECTROID "Classification Heads" extension).

A head is a small torch network over an embedding: a fixed standardisation (z-scores with the
training split's statistics), then ``hidden_dims`` blocks of Linear -> [BatchNorm1d] -> ReLU ->
[Dropout], then a Linear layer to the classes. SPECTROID's configurations are ``linear``, ``1x64``,
``3x64`` and ``5x64`` (:func:`parse_architecture`). The same module is trained two ways:

* **frozen** (this module): on fixed embeddings of the training split, with Adam, keeping the epoch
  with the best validation macro-F1 and stopping after ``patience`` epochs without a better one;
* **end to end** (:mod:`specter_utils.heads.end_to_end`): the encoder fine-tuned through the head with
  cross-entropy by the transformers ``Trainer``.

Scores are macro-F1 and accuracy x 100 over the whole held-out split (never an average of
per-batch scores), beside SCIDOCS's own classifier, the linear SVM (squared hinge, ``C`` by 3-fold
CV on train), on the same papers and vectors."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import train_test_split

from specter_utils.config import HeadsConfig
from specter_utils.data.scidocs import read_classification_csv
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.classification import classify
from specter_utils.evaluation.deltas import PREDICTION_KEYS
from specter_utils.evaluation.svm_variants import svm_variants

SVM_HEAD = "linear SVM (SCIDOCS)"  # the name of the SVM rows in the tables


def parse_architecture(name: str) -> tuple[int, ...]:
    """Hidden layer widths of a head: ``linear`` -> (), ``3x64`` -> (64, 64, 64), ``512,64`` -> (512, 64)."""
    text = str(name).strip().lower()
    if text == "linear":
        return ()
    repeated = re.fullmatch(r"(\d+)x(\d+)", text)
    if repeated:
        count, width = int(repeated.group(1)), int(repeated.group(2))
        dims = (width,) * count
    elif re.fullmatch(r"\d+(,\d+)*", text.replace(" ", "")):
        dims = tuple(int(part) for part in text.replace(" ", "").split(","))
    else:
        raise ValueError(f"unknown head architecture {name!r}: expected 'linear', 'NxW' (e.g. 3x64) or '512,64'")
    if not dims or min(dims) < 1:
        raise ValueError(f"head architecture {name!r} needs at least one layer of positive width (or 'linear')")
    return dims


def architecture_name(hidden_dims: tuple[int, ...] | list[int]) -> str:
    """The inverse of :func:`parse_architecture`: () -> ``linear``, (64, 64, 64) -> ``3x64``."""
    dims = tuple(hidden_dims)
    if not dims:
        return "linear"
    return f"{len(dims)}x{dims[0]}" if len(set(dims)) == 1 else ",".join(map(str, dims))


def head_seeds(config: HeadsConfig, seed: int) -> list[int]:
    """The seeds of every head: ``seed`` and the ``config.n_seeds - 1`` after it."""
    return [seed + i for i in range(max(1, config.n_seeds))]


def frozen_settings(config: HeadsConfig) -> dict[str, Any]:
    """The settings of the frozen heads as a JSON-ready mapping (``config`` without its ``end_to_end`` section)."""
    return {k: v for k, v in asdict(config).items() if k != "end_to_end"}


def classification_scores(y_true: list[str] | np.ndarray, y_pred: list[str] | np.ndarray) -> dict[str, float]:
    """Macro-F1 and accuracy over the whole split, x 100 with 2 decimals (SCIDOCS's convention)."""
    return {
        "macro_f1": round(100 * float(f1_score(y_true, y_pred, average="macro")), 2),
        "accuracy": round(100 * float(accuracy_score(y_true, y_pred)), 2),
    }


# ---------------------------------------------------------------- bad input
def check_classification_splits(
    splits: dict[str, list[tuple[str, str]]], source: str | Path | None = None, task: str = ""
) -> list[str]:
    """The classes of train (sorted); a ``DataError`` for one class in train or a held-out class unseen in train.
    With ``source`` (the task folder), errors name ``<source>/<split>.csv``."""

    def where(split: str) -> str | None:
        return str(Path(source) / f"{split}.csv") if source is not None else f"{task or 'task'} {split} split"

    train = splits.get("train") or []
    if not train:
        raise DataError("the train split is empty: a head needs labelled training papers", where("train"))
    classes = sorted({label for _, label in train})
    if len(classes) < 2:
        raise DataError(
            f"the train split has one class ({classes[0]!r}, {len(train)} papers); classification needs at least 2",
            where("train"),
        )
    known = set(classes)
    for split in ("val", "test"):
        rows = splits.get(split) or []
        unseen = sorted({label for _, label in rows if label not in known})
        if unseen:
            first = next(pid for pid, label in rows if label not in known)
            count = sum(label not in known for _, label in rows)
            raise DataError(
                f"{len(unseen)} class(es) of the {split} split are missing from train ({', '.join(map(repr, unseen[:5]))}"
                f"{', ...' if len(unseen) > 5 else ''}; {count} papers): a classifier cannot predict a class it never "
                "saw; move papers of these classes into train or drop them",
                where(split),
                record_id=first,
            )
    return classes


def read_task_splits(scidocs_dir: str | Path, task: str) -> dict[str, list[tuple[str, str]]]:
    """``{split: [(paper_id, label)]}`` of a SCIDOCS-layout classification task (``config.task``), checked for heads."""
    folder = Path(scidocs_dir) / task
    if not (folder / "train.csv").exists() or not (folder / "test.csv").exists():
        raise FileNotFoundError(f"{folder} needs train.csv and test.csv (val.csv is optional)")
    splits = {
        s: read_classification_csv(folder / f"{s}.csv")
        for s in ("train", "val", "test")
        if (folder / f"{s}.csv").exists()
    }
    check_classification_splits(splits, folder, task)
    return splits


# ---------------------------------------------------------------- the head module
class Standardize(nn.Module):
    """Fixed z-scores: ``(x - mean) / scale`` with the training split's statistics (buffers, not trained)."""

    def __init__(self, mean: np.ndarray, scale: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean, dtype=np.float32)))
        self.register_buffer("scale", torch.as_tensor(np.asarray(scale, dtype=np.float32)))

    def forward(self, x):
        return (x - self.mean) / self.scale


def build_head(
    in_dim: int,
    n_classes: int,
    hidden_dims: tuple[int, ...] | list[int],
    batch_norm: bool,
    dropout: float,
    mean: np.ndarray | None = None,
    scale: np.ndarray | None = None,
) -> nn.Sequential:
    """The head as an ``nn.Sequential``: [Standardize], (Linear, [BatchNorm1d], ReLU, [Dropout]) x hidden, Linear."""
    layers: list[nn.Module] = [Standardize(mean, scale)] if mean is not None and scale is not None else []
    widths = (in_dim, *hidden_dims)
    for width, hidden in pairwise(widths):
        layers.append(nn.Linear(width, hidden))
        if batch_norm:
            layers.append(nn.BatchNorm1d(hidden))
        layers.append(nn.ReLU())
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(widths[-1], n_classes))
    return nn.Sequential(*layers)


def standardization(x_train: np.ndarray, standardize: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-dimension mean and scale of the training vectors (zeros and ones when ``standardize`` is off)."""
    x_train = np.asarray(x_train, dtype=np.float32)
    if not standardize:
        return np.zeros(x_train.shape[1], np.float32), np.ones(x_train.shape[1], np.float32)
    return x_train.mean(axis=0), x_train.std(axis=0) + 1e-6


class MLPHead:
    """A fitted head over fixed vectors: ``predict(vectors) -> labels`` (the network standardises its input)."""

    def __init__(self, network: Any, classes: list[str], history: list[dict]):
        self.network = network
        self.classes = classes
        self.history = history

    def logits(self, vectors: np.ndarray) -> np.ndarray:
        self.network.eval()  # BatchNorm uses its running statistics, dropout is off
        with torch.inference_mode():
            return self.network(torch.from_numpy(np.asarray(vectors, dtype=np.float32))).numpy()

    def predict(self, vectors: np.ndarray) -> list[str]:
        return [self.classes[i] for i in self.logits(vectors).argmax(axis=1)]


def train_mlp_head(
    x_train: np.ndarray,
    y_train: list[str],
    x_val: np.ndarray,
    y_val: list[str],
    config: HeadsConfig,
    hidden_dims: tuple[int, ...] | list[int],
    seed: int,
) -> MLPHead:
    """Train a head on frozen vectors with cross-entropy and Adam; keep the epoch with the best validation macro-F1.
    ``seed`` sets the head's initialisation, dropout and batch order."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a small network: one thread is faster, five-fold when other processes share the cores
    try:
        return _train_mlp_head(x_train, y_train, x_val, y_val, config, tuple(hidden_dims), seed)
    finally:
        torch.set_num_threads(threads)


def _train_mlp_head(x_train, y_train, x_val, y_val, config: HeadsConfig, hidden_dims: tuple, seed: int) -> MLPHead:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    classes = sorted(set(y_train))
    index = {c: i for i, c in enumerate(classes)}
    x_train = np.asarray(x_train, dtype=np.float32)
    mean, scale = standardization(x_train, config.standardize)
    xt = torch.from_numpy(x_train)
    yt = torch.tensor([index[c] for c in y_train])
    xv = torch.from_numpy(np.asarray(x_val, dtype=np.float32))
    network = build_head(
        xt.shape[1], len(classes), hidden_dims, config.batch_norm, config.dropout, mean=mean, scale=scale
    )
    optimiser = torch.optim.Adam(network.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    best_f1, best_state, best_epoch, history = -1.0, None, 0, []
    for epoch in range(1, config.max_epochs + 1):
        network.train()
        order = torch.randperm(len(xt), generator=generator)
        total, seen = 0.0, 0
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            if config.batch_norm and len(batch) < 2 and seen:
                continue  # BatchNorm cannot normalise a batch of one paper
            loss = F.cross_entropy(network(xt[batch]), yt[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(batch)
            seen += len(batch)
        network.eval()
        with torch.inference_mode():
            predicted = [classes[i] for i in network(xv).argmax(dim=1).tolist()]
        val_f1 = float(f1_score(y_val, predicted, average="macro"))
        history.append({"epoch": epoch, "train_loss": total / max(seen, 1), "val_macro_f1": round(100 * val_f1, 2)})
        if val_f1 > best_f1:
            best_f1, best_epoch = val_f1, epoch
            best_state = {k: v.detach().clone() for k, v in network.state_dict().items()}
        elif epoch - best_epoch >= config.patience:
            break
    network.load_state_dict(best_state)
    network.eval()
    return MLPHead(network, classes, history)


def split_rows(
    splits: dict[str, list[tuple[str, str]]], val_fraction: float, seed: int
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]], bool]:
    """(train, val, test, carved) rows; without a val split, a stratified ``val_fraction`` of train is held out."""
    train, test = list(splits["train"]), list(splits["test"])
    if splits.get("val"):
        return train, list(splits["val"]), test, False
    labels = [label for _, label in train]
    stratify = labels if min(map(labels.count, set(labels))) >= 2 else None
    fit, held = train_test_split(train, test_size=val_fraction, random_state=seed, stratify=stratify)
    return list(fit), list(held), test, True


def _head_result(head: MLPHead, x_test: np.ndarray, y_test: list[str]) -> dict[str, Any]:
    best = max(head.history, key=lambda h: h["val_macro_f1"])
    predicted = head.predict(x_test)
    scores = {"epochs": len(head.history), "best_epoch": best["epoch"], "best_val_macro_f1": best["val_macro_f1"]}
    return {**classification_scores(y_test, predicted), **scores, **prediction_columns(y_test, predicted)}


def prediction_columns(y_test: Sequence[str], predicted: Sequence[str]) -> dict[str, list[str]]:
    """The test labels and a row's predicted labels, in test-split order: what a paired comparison of two rows
    needs (``evaluation.deltas.heads_deltas``). Rows carry them in memory; ``without_predictions`` drops them."""
    return {PREDICTION_KEYS[0]: [str(y) for y in y_test], PREDICTION_KEYS[1]: [str(y) for y in predicted]}


def without_predictions(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` without its per-paper labels (for metrics files: one number per row, not one per paper)."""
    return {k: v for k, v in row.items() if k not in PREDICTION_KEYS}


@dataclass
class _Prepared:
    data: dict[str, tuple[np.ndarray, list[str]]]
    coverage: dict[str, Any]
    carved: bool


def _prepare(
    embeddings: EmbeddingSet, splits: dict[str, list[tuple[str, str]]], config: HeadsConfig, seed: int
) -> _Prepared:
    """Vectors and labels per split (papers without an embedding zero-filled, as SCIDOCS does, and counted)."""
    check_classification_splits(splits)
    train, val, test, carved = split_rows(splits, config.val_fraction, seed)
    coverage: dict[str, Any] = {}
    data: dict[str, tuple[np.ndarray, list[str]]] = {}
    for name, rows in (("mlp_train", train), ("val", val), ("test", test), ("train", splits["train"])):
        vectors, found = embeddings.lookup([pid for pid, _ in rows])
        data[name] = (vectors, [label for _, label in rows])
        coverage[name] = {"papers": len(rows), "with_embedding": int(found.sum())}
    return _Prepared(data, coverage, carved)


def _summary(prepared: _Prepared, embeddings: EmbeddingSet, settings: dict[str, Any]) -> dict[str, Any]:
    """What every heads result states besides its scores: classes, coverage, the val split's origin, settings."""
    return {
        "n_classes": len(set(prepared.data["train"][1])),
        "coverage": prepared.coverage,
        "val_carved_from_train": prepared.carved,
        "config": settings,
        "dim": embeddings.dim,
    }


def svm_scores(prepared: _Prepared) -> dict[str, Any]:
    """SCIDOCS's linear SVM, fitted on the whole train split, scored on the whole test split."""
    x_test, y_test = prepared.data["test"]
    result = classify(*prepared.data["train"], x_test, y_test)
    return {
        **classification_scores(y_test, result.predictions),
        "C": float(result.best_c),
        **prediction_columns(y_test, result.predictions),
    }


def svm_protocol_variants(
    embeddings: EmbeddingSet,
    splits: dict[str, list[tuple[str, str]]],
    config: HeadsConfig,
    seed: int,
    variants: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The SVM protocol changed one setting at a time (``evaluation.svm_variants``) on the heads' own split:
    fitted on the whole train split, scored on the test split, as :func:`svm_scores` does."""
    prepared = _prepare(embeddings, splits, config, seed)
    return svm_variants(*prepared.data["train"], *prepared.data["test"], variants)


def compare_heads(
    embeddings: EmbeddingSet,
    splits: dict[str, list[tuple[str, str]]],
    config: HeadsConfig,
    hidden_dims: tuple[int, ...] | list[int],
    seed: int,
) -> dict[str, Any]:
    """Train one head (and, if ``config.svm``, the linear SVM) on ``splits["train"]``; score both on ``splits["test"]``.
    The head early-stops on the val split (or, without one, on a stratified slice carved from train with ``seed``,
    which it then does not train on)."""
    prepared = _prepare(embeddings, splits, config, seed)
    head = train_mlp_head(*prepared.data["mlp_train"], *prepared.data["val"], config, hidden_dims, seed)
    results: dict[str, Any] = {"mlp": without_predictions(_head_result(head, *prepared.data["test"]))}
    if config.svm:
        results["linear_svm"] = without_predictions(svm_scores(prepared))
    settings = {**frozen_settings(config), "hidden_dims": list(hidden_dims), "seed": seed}
    return {**results, **_summary(prepared, embeddings, settings)}


def frozen_heads(
    embeddings: EmbeddingSet,
    splits: dict[str, list[tuple[str, str]]],
    config: HeadsConfig,
    seed: int,
    architectures: Sequence[str] | None = None,
    labels: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every architecture (``None``: ``config.architectures``) x :func:`head_seeds` trained on the frozen
    ``embeddings``, plus the SVM once: long-format ``rows``, each with the extra columns ``labels``."""
    prepared = _prepare(embeddings, splits, config, seed)
    extra = dict(labels or {})
    rows: list[dict[str, Any]] = []
    if config.svm:
        rows.append({**extra, "head": SVM_HEAD, "training": "frozen", "seed": None, **svm_scores(prepared)})
    for name in config.architectures if architectures is None else architectures:
        hidden_dims = parse_architecture(name)
        for head_seed in head_seeds(config, seed):
            head = train_mlp_head(*prepared.data["mlp_train"], *prepared.data["val"], config, hidden_dims, head_seed)
            result = _head_result(head, *prepared.data["test"])
            rows.append({**extra, "head": name, "training": "frozen", "seed": head_seed, **result})
    return {"rows": rows, **_summary(prepared, embeddings, frozen_settings(config))}


def compare_heads_on_task(
    scidocs_dir: str | Path,
    embedding_sets: dict[str, EmbeddingSet],
    config: HeadsConfig,
    hidden_dims: tuple[int, ...] | list[int],
    seed: int,
) -> dict[str, Any]:
    """``compare_heads`` for each model on the SCIDOCS-layout classification task ``config.task`` (``mag``, ``mesh``...)."""
    splits = read_task_splits(scidocs_dir, config.task)
    return {model: compare_heads(es, splits, config, hidden_dims, seed) for model, es in embedding_sets.items()}
