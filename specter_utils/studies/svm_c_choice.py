"""How the SVM's ``C`` is chosen, measured: the protocol's choice by 3-fold CV accuracy beside the same CV's choice
by macro-F1, on one classification task of a SCIDOCS-layout folder and one embeddings file (the command line is
``experiments/svm_c_choice.py``).

For each evaluated split (validation and test): each choice's ``C``, its macro-F1 x 100 and how many of the
classes it predicts for at least one paper; papers without an embedding are zero vectors, as in the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.data.scidocs import read_scidocs_dir
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.classification import classify
from specter_utils.presentation.labels import benchmark_name, benchmark_record, classification_header


def measure(scidocs_dir: str | Path, embeddings_file: str | Path, task: str = "mag") -> dict[str, Any]:
    """``{"task", "classes", "n_train", "embeddings", "splits": {split: {...}}}`` for the task's val and test."""
    rows = read_scidocs_dir(scidocs_dir, [task]).classification.get(task)
    if not rows:
        raise DataError(f"no {task} task", scidocs_dir)
    embeddings = read_embeddings(embeddings_file)

    def arrays(split: str) -> tuple[np.ndarray, np.ndarray, int]:
        X, found = embeddings.lookup([pid for pid, _ in rows[split]])
        return X, np.asarray([label for _, label in rows[split]]), int(found.sum())

    X_train, y_train, covered = arrays("train")
    out: dict[str, Any] = {
        "task": task,
        "classes": len(set(y_train.tolist())),
        "n_train": len(y_train),
        "train_papers_with_embedding": covered,
        "benchmark": benchmark_name({"config": {"data_dir": str(scidocs_dir)}}),
        "labels": classification_header(benchmark_record(scidocs_dir)).removesuffix(" F1"),
        "embeddings": {k: embeddings.info.get(k) for k in ("model", "max_length", "pooling_detail", "dtype")},
        "splits": {},
    }
    for split in ("val", "test"):
        if split not in rows:
            continue
        X, y, found = arrays(split)
        result = classify(X_train, y_train, X, y)
        out["splits"][split] = {
            "papers": len(y),
            "papers_with_embedding": found,
            "by_accuracy": {"C": result.best_c, "f1": result.f1, "classes_predicted": result.classes_predicted},
            "by_macro_f1": {k: v for k, v in result.by_macro_f1.items() if k != "cv_macro_f1"},
            "cv_accuracy": {f"{c:g}": round(v, 4) for c, v in result.cv_accuracy.items()},
            "cv_macro_f1": result.by_macro_f1["cv_macro_f1"],
        }
    return out


def markdown(result: Mapping[str, Any]) -> str:
    """The measurement as a caption and one table row per split."""
    emb = result["embeddings"]
    lines = [
        f"{result['benchmark']} benchmark, `{result['task']}` slot ({result['labels']} labels): {result['classes']} "
        f"classes, {result['n_train']:,} train papers; embeddings of {emb.get('model')} ({emb.get('dtype')}) at "
        f"{emb.get('max_length')} "
        "wordpieces. C over logspace(-4, 2, 7) by 3-fold CV on train (the protocol: "
        "accuracy, as the original's GridSearchCV scores lightning's LinearSVC; beside it the same folds scored by "
        "macro-F1), refit on train; macro-F1 x 100 on the split, and how many classes each SVM predicts.",
        "",
        "| split | papers | C by CV accuracy (protocol) | macro-F1 | classes predicted "
        "| C by CV macro-F1 | macro-F1 | classes predicted |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for split, entry in result["splits"].items():
        a, f = entry["by_accuracy"], entry["by_macro_f1"]
        lines.append(
            f"| {split} | {entry['papers']:,} | {a['C']:g} | {a['f1']:.2f} | {a['classes_predicted']} of "
            f"{result['classes']} | {f['C']:g} | {f['f1']:.2f} | {f['classes_predicted']} of {result['classes']} |"
        )
    return "\n".join(lines)
