"""Ad hoc search, as SciRepEval's ``IREvaluator`` on a raw text query: the query is encoded as a query (with the
model's query prompt when it has one), the candidates as documents; candidates ranked by negative Euclidean
distance, ``ndcg_cut_10`` (and any other trec_eval measure listed) x 100.

Query vectors come apart from the papers' (a query id may equal a paper id); they are joined under a prefix
for the one run (and ``per_query`` is keyed by the query ids again)."""

from __future__ import annotations

from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.formats.proximity import rank_and_score
from specter_utils.evaluation.formats.tasks import ADHOC_SEARCH, EVALUATORS, FormatTask, RankingData

QUERY_PREFIX = "query\t"  # ids of the query vectors in the joined set; a tab is never in a paper id


@EVALUATORS.register(ADHOC_SEARCH)
def evaluate(
    task: FormatTask,
    data: RankingData,
    embeddings: EmbeddingSet,
    query_embeddings: EmbeddingSet | None = None,
    **_: Any,
) -> dict[str, Any]:
    if query_embeddings is None:
        raise DataError(f"adhoc_search task {task.name!r} needs vectors of its query texts")
    if query_embeddings.dim != embeddings.dim:
        raise DataError(
            f"task {task.name!r}: query vectors have {query_embeddings.dim} dimensions, the papers' {embeddings.dim}"
        )
    query_ids = [q for q in data.qrels if q in query_embeddings]
    vectors, _ = query_embeddings.lookup(query_ids)
    candidate_ids = sorted({c for docs in data.qrels.values() for c in docs if c in embeddings})
    candidate_vectors, _ = embeddings.lookup(candidate_ids)
    joined = EmbeddingSet(
        [QUERY_PREFIX + q for q in query_ids] + candidate_ids,
        np.vstack([vectors.astype(np.float32), candidate_vectors.astype(np.float32)]),
    )
    qrels = {QUERY_PREFIX + q: docs for q, docs in data.qrels.items()}
    scored = rank_and_score(task, qrels, joined)
    scored["per_query"] = {query.removeprefix(QUERY_PREFIX): v for query, v in scored["per_query"].items()}
    return scored
