"""What classification and regression share: the papers' vectors for a labelled split, as SciRepEval reads them
(a paper without a vector is left out of its split), and how much of each split was covered."""

from __future__ import annotations

from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError

RANDOM_STATE = 42  # SciRepEval's evaluator seed (evaluation/evaluator.py)
CV_FOLDS = 3


def split_vectors(
    rows: list[tuple[str, Any]], embeddings: EmbeddingSet, task: str, split: str
) -> tuple[np.ndarray, list[Any], dict[str, int]]:
    """The vectors and labels of the rows whose paper has a vector, and the coverage counts."""
    ids = [paper_id for paper_id, _ in rows]
    vectors, found = embeddings.lookup(ids)
    if not found.any():
        raise DataError(
            f"the embeddings cover none of the {len(rows)} {split} papers of task {task!r}", record_id=ids[0]
        )
    labels = [label for (_, label), ok in zip(rows, found, strict=True) if ok]
    return vectors[found].astype(np.float64), labels, {"papers": len(rows), "with_embedding": int(found.sum())}
