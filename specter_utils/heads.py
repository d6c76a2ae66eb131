"""Classification heads on frozen paper embeddings (the SPECTROID "Classification Heads" extension).

An MLP head (torch) is trained on fixed embeddings of the training split, early-stopped on the
validation split's macro-F1, and compared on the test split with SCIDOCS's own classifier, the
linear SVM (squared hinge, ``C`` by 3-fold CV on train), both seeing exactly the same papers and
vectors. Scores are macro-F1 and accuracy x 100, as SCIDOCS reports them.

Out of scope here: SPECTROID also trained heads on top of an encoder fine-tuned end to end; that
needs a GPU (hours per task in the original) and is not run by this CPU-first module.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet


@dataclass
class HeadConfig:
    """Hyper-parameters of the MLP head (nuisance parameters: tuned once, fixed for every model compared)."""

    hidden_dims: tuple[int, ...] = (512,)  # one hidden layer, as SPECTROID's MLP heads
    dropout: float = 0.2  # regularises the head; embeddings are few per class on small benchmarks
    lr: float = 1e-3  # Adam's usual rate; the head is small and trains from scratch
    weight_decay: float = 1e-4  # mild L2 so that the head does not memorise the training papers
    batch_size: int = 64
    max_epochs: int = 200  # upper bound; early stopping ends training much sooner
    patience: int = 15  # epochs without a better validation macro-F1 before stopping
    standardize: bool = True  # z-score features with training-split statistics (the SVM sees raw vectors)
    val_fraction: float = 0.1  # carved from train (stratified) when the task has no val split
    seed: int = 0


def classification_scores(y_true: list[str] | np.ndarray, y_pred: list[str] | np.ndarray) -> dict[str, float]:
    """Macro-F1 and accuracy, x 100 with 2 decimals (SCIDOCS's convention)."""
    from sklearn.metrics import accuracy_score, f1_score

    return {
        "macro_f1": round(100 * float(f1_score(y_true, y_pred, average="macro")), 2),
        "accuracy": round(100 * float(accuracy_score(y_true, y_pred)), 2),
    }


class MLPHead:
    """A fitted MLP classifier over fixed vectors: ``predict(vectors) -> labels``."""

    def __init__(self, network: Any, classes: list[str], mean: np.ndarray, scale: np.ndarray, history: list[dict]):
        self.network = network
        self.classes = classes
        self.mean = mean
        self.scale = scale
        self.history = history

    def predict(self, vectors: np.ndarray) -> list[str]:
        import torch

        x = torch.from_numpy(((np.asarray(vectors, dtype=np.float32) - self.mean) / self.scale).astype(np.float32))
        self.network.eval()
        with torch.inference_mode():
            index = self.network(x).argmax(dim=1).numpy()
        return [self.classes[i] for i in index]


def _build_network(in_dim: int, n_classes: int, config: HeadConfig):
    import torch.nn as nn

    layers: list[nn.Module] = []
    width = in_dim
    for hidden in config.hidden_dims:
        layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(config.dropout)]
        width = hidden
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def train_mlp_head(
    x_train: np.ndarray,
    y_train: list[str],
    x_val: np.ndarray,
    y_val: list[str],
    config: HeadConfig | None = None,
) -> MLPHead:
    """Train an MLP head with cross-entropy and Adam; keep the epoch with the best validation macro-F1."""
    import torch
    import torch.nn.functional as F
    from sklearn.metrics import f1_score

    config = config or HeadConfig()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    classes = sorted(set(y_train))
    index = {c: i for i, c in enumerate(classes)}
    x_train = np.asarray(x_train, dtype=np.float32)
    mean = x_train.mean(axis=0) if config.standardize else np.zeros(x_train.shape[1], np.float32)
    scale = x_train.std(axis=0) + 1e-6 if config.standardize else np.ones(x_train.shape[1], np.float32)
    xt = torch.from_numpy(((x_train - mean) / scale).astype(np.float32))
    yt = torch.tensor([index[c] for c in y_train])
    xv = torch.from_numpy(((np.asarray(x_val, dtype=np.float32) - mean) / scale).astype(np.float32))
    network = _build_network(xt.shape[1], len(classes), config)
    optimiser = torch.optim.Adam(network.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    best_f1, best_state, best_epoch, history = -1.0, None, 0, []
    for epoch in range(1, config.max_epochs + 1):
        network.train()
        order = torch.randperm(len(xt), generator=generator)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start : start + config.batch_size]
            loss = F.cross_entropy(network(xt[batch]), yt[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(batch)
        network.eval()
        with torch.inference_mode():
            predicted = [classes[i] for i in network(xv).argmax(dim=1).tolist()]
        val_f1 = float(f1_score(y_val, predicted, average="macro"))
        history.append({"epoch": epoch, "train_loss": total / len(xt), "val_macro_f1": round(100 * val_f1, 2)})
        if val_f1 > best_f1:
            best_f1, best_epoch = val_f1, epoch
            best_state = {k: v.detach().clone() for k, v in network.state_dict().items()}
        elif epoch - best_epoch >= config.patience:
            break
    network.load_state_dict(best_state)
    return MLPHead(network, classes, mean, scale, history)


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


def compare_heads(
    embeddings: EmbeddingSet,
    splits: dict[str, list[tuple[str, str]]],
    config: HeadConfig | None = None,
    svm: bool = True,
) -> dict[str, Any]:
    """Train the MLP head (and the linear SVM) on ``splits["train"]``; score both on ``splits["test"]``.

    Papers without an embedding are zero-filled, as SCIDOCS does, and counted in ``coverage``.
    The SVM follows SCIDOCS: fitted on the whole train split, its 3-fold CV picking ``C``. The MLP
    early-stops on the val split (or, without one, on a stratified slice carved from train, which
    it then does not train on).
    """
    config = config or HeadConfig()
    train, val, test, carved = _split_rows(splits, config)
    coverage: dict[str, Any] = {}
    data: dict[str, tuple[np.ndarray, list[str]]] = {}
    for name, rows in (("mlp_train", train), ("val", val), ("test", test), ("train", splits["train"])):
        ids = [pid for pid, _ in rows]
        vectors, found = embeddings.lookup(ids)
        data[name] = (vectors, [label for _, label in rows])
        coverage[name] = {"papers": len(ids), "with_embedding": int(found.sum())}
    head = train_mlp_head(*data["mlp_train"], *data["val"], config=config)
    x_test, y_test = data["test"]
    results: dict[str, Any] = {
        "mlp": {
            **classification_scores(y_test, head.predict(x_test)),
            "epochs": len(head.history),
            "best_epoch": max(head.history, key=lambda h: h["val_macro_f1"])["epoch"],
            "best_val_macro_f1": max(h["val_macro_f1"] for h in head.history),
        }
    }
    if svm:
        from specter_utils.evaluation.classification import classify

        svm_result = classify(*data["train"], x_test, y_test)
        results["linear_svm"] = {
            **classification_scores(y_test, svm_result.predictions),
            "C": float(svm_result.best_c),
        }
    return {
        **results,
        "n_classes": len(set(data["train"][1])),
        "coverage": coverage,
        "val_carved_from_train": carved,
        "config": {**asdict(config), "hidden_dims": list(config.hidden_dims)},
        "dim": embeddings.dim,
    }


def compare_heads_on_task(
    scidocs_dir: str | Path,
    embedding_sets: dict[str, EmbeddingSet],
    task: str = "mag",
    config: HeadConfig | None = None,
    svm: bool = True,
) -> dict[str, Any]:
    """``compare_heads`` for each model on a SCIDOCS-layout classification task (``mag`` or ``mesh``)."""
    from specter_utils.data.scidocs import available_tasks, read_classification_splits

    if task not in available_tasks(scidocs_dir):
        raise FileNotFoundError(f"{Path(scidocs_dir) / task} needs train.csv and test.csv")
    splits = read_classification_splits(scidocs_dir, task)  # val is optional
    return {model: compare_heads(es, splits, config=config, svm=svm) for model, es in embedding_sets.items()}


def heads_table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown table: macro-F1 and accuracy of the MLP head and the linear SVM for each model."""
    lines = ["| model | classifier | macro-F1 | accuracy |", "|---|---|---|---|"]
    for model, result in results.items():
        for name, label in (("linear_svm", "linear SVM (SCIDOCS)"), ("mlp", "MLP head")):
            if name in result:
                lines.append(f"| {model} | {label} | {result[name]['macro_f1']:.2f} | {result[name]['accuracy']:.2f} |")
    return "\n".join(lines)
