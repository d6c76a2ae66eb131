"""What classification and regression share: the papers' vectors for a labelled split, as SciRepEval reads them
(a paper without a vector is left out of its split), how much of each split was covered, and the test papers'
true and predicted values kept in the result (``per_paper``) so that a metric can be recomputed on a resample."""

from __future__ import annotations

from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.formats.tasks import ITEM_DECIMALS

RANDOM_STATE = 42  # SciRepEval's evaluator seed (evaluation/evaluator.py)
CV_FOLDS = 3


def split_vectors(
    rows: list[tuple[str, Any]], embeddings: EmbeddingSet, task: str, split: str
) -> tuple[np.ndarray, list[Any], dict[str, int]]:
    """The vectors and labels of the rows whose paper has a vector, and the coverage counts."""
    ids = [paper_id for paper_id, _ in rows]
    vectors, found = embeddings.lookup(ids)
    if not found.any():
        none = f"the embeddings cover none of the {len(rows)} {split} papers of task {task!r}"
        raise DataError(none, record_id=ids[0])
    labels = [label for (_, label), ok in zip(rows, found, strict=True) if ok]
    return vectors[found].astype(np.float64), labels, {"papers": len(rows), "with_embedding": int(found.sum())}


def covered_ids(rows: list[tuple[str, Any]], embeddings: EmbeddingSet) -> list[str]:
    """The ids of the rows whose paper has a vector, in the split's order (the rows :func:`split_vectors` keeps)."""
    return [paper_id for paper_id, _ in rows if paper_id in embeddings]


def per_paper(ids: list[str], true: list[Any], predicted: list[Any], **extra: Any) -> dict[str, Any]:
    """The test papers' ids, true and predicted values (numbers rounded to ``ITEM_DECIMALS``)."""

    def kept(value: Any) -> Any:
        return round(float(value), ITEM_DECIMALS) if isinstance(value, (float, np.floating)) else value

    return {"ids": ids, "true": [kept(v) for v in true], "predicted": [kept(v) for v in predicted], **extra}
