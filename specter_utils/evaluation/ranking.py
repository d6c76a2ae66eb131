"""Ranking tasks (cite, co-cite, co-view, co-read): minus L2 distance, MAP and nDCG as trec_eval computes them.

As the original: a query without an embedding is left out of the run (so trec_eval does not evaluate
it); a candidate without an embedding is left out of its query's ranking, but stays in the qrels, so a
missing relevant paper counts as never retrieved. Scores are ``-distance`` rounded to 5 decimals (the
original writes ``np.round(score, 5)`` into its run file), which also makes ties reproducible:
distances that differ only by floating-point noise become equal scores, and trec_eval breaks equal
scores by document id."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytrec_eval

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError

logger = logging.getLogger(__name__)

MEASURES = ("map", "ndcg")  # pytrec_eval / trec_eval names: full ranking, no cutoff
SCORE_DECIMALS = 5
_CHUNK = 8192  # candidate pairs per distance batch


@dataclass
class RankingResult:
    """MAP and nDCG x 100 (2 decimals), and how much of the qrels the embeddings covered."""

    metrics: dict[str, float]
    coverage: dict[str, Any]
    per_query: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)


def l2_scores(embeddings: EmbeddingSet, query_rows: np.ndarray, candidate_rows: np.ndarray) -> np.ndarray:
    """``-||q - c||`` for each (query row, candidate row) pair, in float64, rounded to 5 decimals."""
    vectors = embeddings.vectors
    out = np.empty(len(query_rows), dtype=np.float64)
    for start in range(0, len(query_rows), _CHUNK):
        stop = start + _CHUNK
        diff = vectors[query_rows[start:stop]].astype(np.float64) - vectors[candidate_rows[start:stop]]
        out[start:stop] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return np.round(-out, SCORE_DECIMALS)


def make_run(
    qrels: dict[str, dict[str, int]], embeddings: EmbeddingSet
) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """The trec run ``{query: {candidate: score}}`` and the coverage counts."""
    index = {pid: i for i, pid in enumerate(embeddings.ids)}
    pairs: list[tuple[int, int]] = []  # (query row, candidate row) of each scored (query, candidate) in keys
    keys: list[tuple[str, str]] = []
    missing_queries: list[str] = []
    missing_docs: list[str] = []
    relevant_missing = 0
    for query, docs in qrels.items():
        q_row = index.get(query)
        if q_row is None:
            missing_queries.append(query)
            continue
        for doc, rel in docs.items():
            c_row = index.get(doc)
            if c_row is None:
                missing_docs.append(doc)
                relevant_missing += int(rel > 0)
                continue
            pairs.append((q_row, c_row))
            keys.append((query, doc))
    rows = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    scores = l2_scores(embeddings, rows[:, 0], rows[:, 1])
    run: dict[str, dict[str, float]] = {}
    for (query, doc), score in zip(keys, scores.tolist(), strict=True):
        run.setdefault(query, {})[doc] = score
    return run, coverage_counts(qrels, run, missing_queries, missing_docs, relevant_missing, len(keys))


def coverage_counts(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    missing_queries: list[str],
    missing_candidates: list[str],
    relevant_missing: int,
    found: int,
    how: str = "with_embedding",
) -> dict[str, Any]:
    """How much of ``qrels`` a run covers: queries and candidates ``how`` (``with_embedding``, ``scored``), those
    evaluated, those missing and a few examples."""
    return {
        "queries": len(qrels),
        f"queries_{how}": len(qrels) - len(missing_queries),
        "queries_evaluated": len(run),
        "candidates": sum(len(docs) for docs in qrels.values()),
        "candidates_of_evaluated_queries": sum(len(qrels[q]) for q in run),
        f"candidates_{how}": found,
        "candidates_missing": len(missing_candidates),
        "relevant_candidates_missing": relevant_missing,
        "example_missing_queries": missing_queries[:5],
        "example_missing_candidates": missing_candidates[:5],
    }


def trec_metrics(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], measures: tuple[str, ...] = MEASURES
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Mean of each trec_eval measure over the evaluated queries, x 100 and rounded to 2 decimals."""
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(d) for q, d in qrels.items()}, set(measures))
    per_query = evaluator.evaluate(run)
    metrics = {}
    for measure in sorted(measures):
        values = [scores[measure] for scores in per_query.values()]
        metrics[measure] = float(np.round(100 * pytrec_eval.compute_aggregated_measure(measure, values), 2))
    return metrics, per_query


def evaluate_ranking(qrels: dict[str, dict[str, int]], embeddings: EmbeddingSet, name: str = "") -> RankingResult:
    """One ranking task: run, trec_eval metrics, coverage (with a warning when anything was skipped)."""
    run, coverage = make_run(qrels, embeddings)
    return evaluate_run(qrels, run, coverage, name, scored_by="the embeddings")


def evaluate_run(
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    coverage: dict[str, Any],
    name: str = "",
    scored_by: str = "the embeddings",
) -> RankingResult:
    """The trec_eval metrics of a finished ``run`` (embeddings' or a ranker's, ``evaluation.rankers``), with a warning
    when ``coverage`` says a query or a candidate was left out; a run that covers no query is a DataError."""
    if not run:
        raise DataError(
            f"{scored_by} cover none of the {len(qrels)} queries of {name or 'the qrels'} (or none of their "
            "candidates)" + (": wrong embeddings file?" if scored_by == "the embeddings" else ""),
            record_id=next(iter(qrels), None),
        )
    skipped_q = coverage["queries"] - coverage["queries_evaluated"]
    if skipped_q or coverage["candidates_missing"]:
        examples = (coverage["example_missing_queries"] + coverage["example_missing_candidates"])[:3]
        logger.warning(
            f"{name or 'ranking'}: {skipped_q} of {coverage['queries']} queries skipped (not scored by {scored_by}), "
            f"{coverage['candidates_missing']} of {coverage['candidates']} candidates not scored "
            f"({coverage['relevant_candidates_missing']} relevant, counted as not retrieved); e.g. {examples}"
        )
    metrics, per_query = trec_metrics(qrels, run)
    return RankingResult(metrics, coverage, per_query)
