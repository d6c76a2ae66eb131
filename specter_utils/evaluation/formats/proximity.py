"""Proximity, as SciRepEval's ``IREvaluator``: a paper is the query; its judged candidates are ranked by
negative Euclidean distance and scored with pytrec_eval (``map``, ``ndcg`` or any trec_eval measure), x 100.

The run and the coverage are the SCIDOCS ranking tasks' (:func:`evaluation.ranking.make_run`): a query without a
vector is left out, a candidate without one is left out of its query's ranking, as SciRepEval does. The result
keeps each evaluated query's main score (x 100, ``per_query``) for a paired test over queries."""

from __future__ import annotations

from typing import Any

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.formats.tasks import EVALUATORS, ITEM_DECIMALS, PROXIMITY, FormatTask, RankingData
from specter_utils.evaluation.ranking import make_run, trec_metrics


def rank_and_score(task: FormatTask, qrels: dict[str, dict[str, int]], embeddings: EmbeddingSet) -> dict[str, Any]:
    """MAP, nDCG, ... of the candidates ranked by ``-||query - candidate||`` (both vectors from ``embeddings``)."""
    run, coverage = make_run(qrels, embeddings)
    if not run:
        none = (
            f"the embeddings cover none of the {len(qrels)} queries of task {task.name!r} (or none of their candidates)"
        )
        raise DataError(none, record_id=next(iter(qrels)))
    metrics, per_query = trec_metrics(qrels, run, task.measured)
    keep = ("queries", "queries_evaluated", "candidates", "candidates_with_embedding", "relevant_candidates_missing")
    main = {query: round(100 * scores[task.main_score], ITEM_DECIMALS) for query, scores in per_query.items()}
    return {"metrics": metrics, "coverage": {key: coverage[key] for key in keep}, "per_query": main}


@EVALUATORS.register(PROXIMITY)
def evaluate(task: FormatTask, data: RankingData, embeddings: EmbeddingSet, **_: Any) -> dict[str, Any]:
    return rank_and_score(task, data.qrels, embeddings)
