"""One evaluator per format, run over a folder's tasks: each task's metrics, each format's average of its tasks'
main scores, the average over every task, and one row per task for the table."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.evaluation.formats import adhoc_search, classification, proximity, regression  # noqa: F401 (register)
from specter_utils.evaluation.formats.tasks import EVALUATORS, FORMATS, FormatTask, RankingData, SupervisedData

logger = logging.getLogger(__name__)


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.round(np.mean(kept), 2)) if kept else None


def score_tasks(
    tasks: list[FormatTask],
    data: dict[str, SupervisedData | RankingData],
    embeddings: EmbeddingSet | Mapping[str, EmbeddingSet],
    query_embeddings: EmbeddingSet | None = None,
    n_jobs: int = 1,
) -> dict[str, Any]:
    """Score each task with ``embeddings`` (one set for every task, or a set per task name, as a model embeds
    each task's ``fields``): ``{"tasks": {name: {type, metrics, main_score, score, coverage, ...}}, "formats": {format: {average,
    main_score, tasks}}, "average": mean over tasks, "table": [row per task]}``; values x 100 as SciRepEval."""
    results: dict[str, dict[str, Any]] = {}
    for task in tasks:
        logger.info("%s (%s) ...", task.name, task.type)
        vectors = embeddings if isinstance(embeddings, EmbeddingSet) else embeddings[task.name]
        evaluate = EVALUATORS.get(task.type)  # each format module registers its evaluator
        scored = evaluate(task, data[task.name], vectors, query_embeddings=query_embeddings, n_jobs=n_jobs)
        about = {"type": task.type, "multi_label": task.multi_label, "description": task.description}
        score = scored["metrics"][task.main_score]
        results[task.name] = {**about, "main_score": task.main_score, "score": score, **scored}
    formats: dict[str, dict[str, Any]] = {}
    for name in FORMATS:
        members = [t for t in tasks if t.type == name]
        if members:
            formats[name] = {
                "average": _mean([results[t.name]["score"] for t in members]),
                "main_score": members[0].main_score if len({t.main_score for t in members}) == 1 else "mixed",
                "tasks": [t.name for t in members],
            }
    table = [
        {"task": t.name, "format": t.type, "metric": t.main_score, "score": results[t.name]["score"]} for t in tasks
    ]
    average = _mean([r["score"] for r in results.values()])
    return {"tasks": results, "formats": formats, "average": average, "table": table}
