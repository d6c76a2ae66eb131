"""Classification heads on paper embeddings (the SPECTROID "Classification Heads" extension).

A head is a small torch network over an embedding: a fixed standardisation (z-scores with the
training split's statistics), then ``hidden_dims`` blocks of Linear -> [BatchNorm1d] -> ReLU ->
[Dropout], then a Linear layer to the classes. SPECTROID's configurations are ``linear``, ``1x64``,
``3x64`` and ``5x64`` (:func:`parse_architecture`). The same module is trained two ways:

* **frozen** (this module): on fixed embeddings of the training split, with Adam, keeping the epoch
  with the best validation macro-F1 and stopping after ``patience`` epochs without a better one;
* **end to end** (``heads_end_to_end``): the encoder fine-tuned through the head with cross-entropy
  by the transformers ``Trainer``.

Scores are macro-F1 and accuracy x 100 over the whole held-out split (never an average of
per-batch scores), beside SCIDOCS's own classifier, the linear SVM (squared hinge, ``C`` by 3-fold
CV on train), on the same papers and vectors. A task whose train split has one class, or whose val
or test split has a class that train lacks, is a ``DataError`` naming the file
(:func:`check_classification_splits`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError

SVM_HEAD = "linear SVM (SCIDOCS)"  # the name of the SVM rows in the tables
SPECTROID_ARCHITECTURES = ("linear", "1x64", "3x64", "5x64")  # the report's head configurations


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
    if len(set(dims)) == 1:
        return f"{len(dims)}x{dims[0]}"
    return ",".join(str(d) for d in dims)


@dataclass
class HeadConfig:
    """Hyper-parameters of a head (nuisance parameters: set once, the same for every encoder compared)."""

    hidden_dims: tuple[int, ...] = (512,)  # one hidden layer; SPECTROID's are (), (64,), (64,)*3, (64,)*5
    batch_norm: bool = False  # BatchNorm1d after each hidden Linear (a linear head has none)
    dropout: float = 0.2  # after each hidden layer's ReLU (a linear head has none)
    lr: float = 1e-3  # Adam's usual rate; the head is small and trains from scratch
    weight_decay: float = 1e-4  # mild L2 so that the head does not memorise the training papers
    batch_size: int = 64
    max_epochs: int = 200  # upper bound; early stopping ends training much sooner
    patience: int = 15  # epochs without a better validation macro-F1 before stopping
    standardize: bool = True  # z-score inputs with training-split statistics (the SVM sees raw vectors)
    val_fraction: float = 0.1  # carved from train (stratified) when the task has no val split
    seed: int = 0


def classification_scores(y_true: list[str] | np.ndarray, y_pred: list[str] | np.ndarray) -> dict[str, float]:
    """Macro-F1 and accuracy over the whole split, x 100 with 2 decimals (SCIDOCS's convention)."""
    from sklearn.metrics import accuracy_score, f1_score

    return {
        "macro_f1": round(100 * float(f1_score(y_true, y_pred, average="macro")), 2),
        "accuracy": round(100 * float(accuracy_score(y_true, y_pred)), 2),
    }


# ---------------------------------------------------------------- bad input
def check_classification_splits(
    splits: dict[str, list[tuple[str, str]]], source: str | Path | None = None, task: str = ""
) -> list[str]:
    """The classes of train (sorted); a ``DataError`` for one class in train or a held-out class unseen in train.

    Args:
        source: the task folder (``<scidocs>/mag``): errors then name ``<source>/<split>.csv``.
    """

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


def read_task_splits(scidocs_dir: str | Path, task: str = "mag") -> dict[str, list[tuple[str, str]]]:
    """``{split: [(paper_id, label)]}`` of a SCIDOCS-layout classification task, checked for heads."""
    from specter_utils.data.scidocs import read_classification_csv

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
def build_head(
    in_dim: int,
    n_classes: int,
    hidden_dims: tuple[int, ...] | list[int] = (),
    batch_norm: bool = False,
    dropout: float = 0.0,
    mean: np.ndarray | None = None,
    scale: np.ndarray | None = None,
):
    """The head as an ``nn.Sequential``: [Standardize], (Linear, [BatchNorm1d], ReLU, [Dropout]) x hidden, Linear."""
    import torch
    import torch.nn as nn

    class Standardize(nn.Module):
        """Fixed z-scores: ``(x - mean) / scale`` with the training split's statistics (buffers, not trained)."""

        def __init__(self, mean: np.ndarray, scale: np.ndarray) -> None:
            super().__init__()
            self.register_buffer("mean", torch.as_tensor(np.asarray(mean, dtype=np.float32)))
            self.register_buffer("scale", torch.as_tensor(np.asarray(scale, dtype=np.float32)))

        def forward(self, x):
            return (x - self.mean) / self.scale

    layers: list[nn.Module] = []
    if mean is not None and scale is not None:
        layers.append(Standardize(mean, scale))
    width = in_dim
    for hidden in hidden_dims:
        layers.append(nn.Linear(width, hidden))
        if batch_norm:
            layers.append(nn.BatchNorm1d(hidden))
        layers.append(nn.ReLU())
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        width = hidden
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def standardization(x_train: np.ndarray, standardize: bool = True) -> tuple[np.ndarray, np.ndarray]:
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
        import torch

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
    config: HeadConfig | None = None,
) -> MLPHead:
    """Train a head on frozen vectors with cross-entropy and Adam; keep the epoch with the best validation macro-F1.

    The network is in train mode for every optimiser step (BatchNorm batch statistics, dropout on)
    and in eval mode for every validation pass.
    """
    import torch

    config = config or HeadConfig()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a small network: one thread is faster, five-fold when other processes share the cores
    try:
        return _train_mlp_head(x_train, y_train, x_val, y_val, config)
    finally:
        torch.set_num_threads(threads)


def _train_mlp_head(x_train, y_train, x_val, y_val, config: HeadConfig) -> MLPHead:
    import torch
    import torch.nn.functional as F
    from sklearn.metrics import f1_score

    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    classes = sorted(set(y_train))
    index = {c: i for i, c in enumerate(classes)}
    x_train = np.asarray(x_train, dtype=np.float32)
    mean, scale = standardization(x_train, config.standardize)
    xt = torch.from_numpy(x_train)
    yt = torch.tensor([index[c] for c in y_train])
    xv = torch.from_numpy(np.asarray(x_val, dtype=np.float32))
    network = build_head(
        xt.shape[1], len(classes), config.hidden_dims, config.batch_norm, config.dropout, mean=mean, scale=scale
    )
    optimiser = torch.optim.Adam(network.parameters(), lr=config.lr, weight_decay=config.weight_decay)
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


def _split_rows(
    splits: dict[str, list[tuple[str, str]]], config: HeadConfig
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]], bool]:
    """(train, val, test) rows; without a val split, a stratified ``val_fraction`` of train is held out."""
    from sklearn.model_selection import train_test_split

    train, test = list(splits["train"]), list(splits["test"])
    if splits.get("val"):
        return train, list(splits["val"]), test, False
    labels = [label for _, label in train]
    counts = {c: labels.count(c) for c in set(labels)}
    stratify = labels if min(counts.values()) >= 2 else None
    fit, held = train_test_split(train, test_size=config.val_fraction, random_state=config.seed, stratify=stratify)
    return list(fit), list(held), test, True


def _head_result(head: MLPHead, x_test: np.ndarray, y_test: list[str]) -> dict[str, Any]:
    best = max(head.history, key=lambda h: h["val_macro_f1"])
    return {
        **classification_scores(y_test, head.predict(x_test)),
        "epochs": len(head.history),
        "best_epoch": best["epoch"],
        "best_val_macro_f1": best["val_macro_f1"],
    }


@dataclass
class _Prepared:
    data: dict[str, tuple[np.ndarray, list[str]]]
    coverage: dict[str, Any]
    carved: bool


def _prepare(embeddings: EmbeddingSet, splits: dict[str, list[tuple[str, str]]], config: HeadConfig) -> _Prepared:
    """Vectors and labels per split (papers without an embedding zero-filled, as SCIDOCS does, and counted)."""
    check_classification_splits(splits)
    train, val, test, carved = _split_rows(splits, config)
    coverage: dict[str, Any] = {}
    data: dict[str, tuple[np.ndarray, list[str]]] = {}
    for name, rows in (("mlp_train", train), ("val", val), ("test", test), ("train", splits["train"])):
        ids = [pid for pid, _ in rows]
        vectors, found = embeddings.lookup(ids)
        data[name] = (vectors, [label for _, label in rows])
        coverage[name] = {"papers": len(ids), "with_embedding": int(found.sum())}
    return _Prepared(data, coverage, carved)


def svm_scores(prepared: _Prepared) -> dict[str, Any]:
    """SCIDOCS's linear SVM, fitted on the whole train split, scored on the whole test split."""
    from specter_utils.evaluation.classification import classify

    x_test, y_test = prepared.data["test"]
    result = classify(*prepared.data["train"], x_test, y_test)
    return {**classification_scores(y_test, result.predictions), "C": float(result.best_c)}


def compare_heads(
    embeddings: EmbeddingSet,
    splits: dict[str, list[tuple[str, str]]],
    config: HeadConfig | None = None,
    svm: bool = True,
) -> dict[str, Any]:
    """Train one head (and the linear SVM) on ``splits["train"]``; score both on ``splits["test"]``.

    The SVM follows SCIDOCS: fitted on the whole train split, its 3-fold CV picking ``C``. The head
    early-stops on the val split (or, without one, on a stratified slice carved from train, which
    it then does not train on).
    """
    config = config or HeadConfig()
    prepared = _prepare(embeddings, splits, config)
    head = train_mlp_head(*prepared.data["mlp_train"], *prepared.data["val"], config=config)
    results: dict[str, Any] = {"mlp": _head_result(head, *prepared.data["test"])}
    if svm:
        results["linear_svm"] = svm_scores(prepared)
    return {
        **results,
        "n_classes": len(set(prepared.data["train"][1])),
        "coverage": prepared.coverage,
        "val_carved_from_train": prepared.carved,
        "config": {**asdict(config), "hidden_dims": list(config.hidden_dims)},
        "dim": embeddings.dim,
    }


def frozen_heads(
    embeddings: EmbeddingSet,
    splits: dict[str, list[tuple[str, str]]],
    architectures: list[str] | tuple[str, ...] = SPECTROID_ARCHITECTURES,
    seeds: list[int] | tuple[int, ...] = (0,),
    config: HeadConfig | None = None,
    svm: bool = True,
    labels: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every architecture x seed trained on the frozen ``embeddings``, plus the SVM once: long-format ``rows``.

    Args:
        labels: extra columns of every row, e.g. ``{"encoder": "trained", "max_length": 256}``.
    """
    config = config or HeadConfig()
    prepared = _prepare(embeddings, splits, config)
    extra = dict(labels or {})
    rows: list[dict[str, Any]] = []
    if svm:
        rows.append({**extra, "head": SVM_HEAD, "training": "frozen", "seed": None, **svm_scores(prepared)})
    for name in architectures:
        for seed in seeds:
            run = replace(config, hidden_dims=parse_architecture(name), seed=int(seed))
            head = train_mlp_head(*prepared.data["mlp_train"], *prepared.data["val"], config=run)
            rows.append(
                {
                    **extra,
                    "head": name,
                    "training": "frozen",
                    "seed": int(seed),
                    **_head_result(head, *prepared.data["test"]),
                }
            )
    return {
        "rows": rows,
        "n_classes": len(set(prepared.data["train"][1])),
        "coverage": prepared.coverage,
        "val_carved_from_train": prepared.carved,
        "config": {**asdict(config), "hidden_dims": None, "seed": None},
        "dim": embeddings.dim,
    }


def compare_heads_on_task(
    scidocs_dir: str | Path,
    embedding_sets: dict[str, EmbeddingSet],
    task: str = "mag",
    config: HeadConfig | None = None,
    svm: bool = True,
) -> dict[str, Any]:
    """``compare_heads`` for each model on a SCIDOCS-layout classification task (``mag``, ``mesh`` or another folder)."""
    splits = read_task_splits(scidocs_dir, task)
    return {model: compare_heads(es, splits, config=config, svm=svm) for model, es in embedding_sets.items()}


# ---------------------------------------------------------------- tables
def heads_table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown table of ``compare_heads_on_task``: macro-F1 and accuracy of the head and the SVM per model."""
    lines = ["| model | classifier | macro-F1 | accuracy |", "|---|---|---|---|"]
    for model, result in results.items():
        for name, label in (("linear_svm", SVM_HEAD), ("mlp", "MLP head")):
            if name in result:
                lines.append(f"| {model} | {label} | {result[name]['macro_f1']:.2f} | {result[name]['accuracy']:.2f} |")
    return "\n".join(lines)


ROW_KEYS = ("encoder", "max_length", "train_papers", "head", "training")


def heads_frame(rows: list[dict[str, Any]], metric: str = "macro_f1"):
    """One row per (encoder, input length, training papers, head, training), one column per seed, then mean and std over seeds.

    The SVM is deterministic: its one value is shown in every seed column.
    """
    import pandas as pd

    seeds = sorted({r["seed"] for r in rows if r.get("seed") is not None})
    grouped: dict[tuple, dict[Any, float]] = {}
    for r in rows:
        key = tuple(r.get(k, "") for k in ROW_KEYS)
        grouped.setdefault(key, {})[r.get("seed")] = float(r[metric])
    records = []
    for key, by_seed in grouped.items():
        values = [by_seed[s] for s in seeds if s in by_seed] or [by_seed[None]]
        record = dict(zip(ROW_KEYS, key, strict=True))
        for s in seeds:
            record[f"seed {s}"] = by_seed.get(s, by_seed.get(None, float("nan")))
        record["mean"] = round(float(np.mean(values)), 2)
        record["std"] = round(float(np.std(values, ddof=1)), 2) if len(values) > 1 else 0.0
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    return frame.set_index(list(ROW_KEYS)) if len(frame) else frame


def frame_markdown(frame) -> str:
    """A pandas frame (index columns first) as a markdown table, numbers with 2 decimals."""
    flat = frame.reset_index()
    header = "| " + " | ".join(str(c) for c in flat.columns) + " |"
    lines = [header, "|" + "---|" * len(flat.columns)]
    for _, row in flat.iterrows():
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
