"""Ranking: MAP / nDCG equal to trec_eval (pytrec_eval) and by hand, deterministic ties, coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.ranking import evaluate_ranking, make_run


def emb(points: dict[str, list[float]]) -> EmbeddingSet:
    return EmbeddingSet(list(points), np.asarray(list(points.values()), dtype=np.float32))


def test_map_and_ndcg_by_hand_and_equal_to_trec_eval():
    # distances from q: a 1, b 2, c 3 -> ranking a (rel), b (not), c (rel)
    vectors = emb({"q": [0, 0], "a": [1, 0], "b": [0, 2], "c": [3, 0]})
    qrels = {"q": {"c": 1, "b": 0, "a": 1}}
    result = evaluate_ranking(qrels, vectors)
    ap = (1 / 1 + 2 / 3) / 2
    ndcg = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert result.metrics == {"map": round(100 * ap, 2), "ndcg": round(100 * ndcg, 2)}
    run = {"q": {"a": -1.0, "b": -2.0, "c": -3.0}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)["q"]
    assert result.per_query["q"] == pytest.approx(ref)


def test_random_queries_match_pytrec_eval_mean():
    rng = np.random.default_rng(0)
    ids = [f"p{i}" for i in range(200)]
    vectors = EmbeddingSet(ids, rng.normal(size=(200, 6)).astype(np.float32))
    qrels = {}
    for _ in range(20):
        cands = rng.choice(200, size=12, replace=False)
        qrels[f"p{cands[0]}"] = {f"p{c}": int(i < 4) for i, c in enumerate(cands[1:])}
    result = evaluate_ranking(qrels, vectors)
    run, _ = make_run(qrels, vectors)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
    for measure in ("map", "ndcg"):
        expected = np.mean([m[measure] for m in per_query.values()])
        assert result.metrics[measure] == round(100 * expected, 2)
    # the scores are minus the L2 distance, rounded to 5 decimals
    q, docs = next(iter(run.items()))
    d, score = next(iter(docs.items()))
    vec = dict(zip(ids, vectors.vectors.astype(np.float64), strict=True))
    assert score == round(-float(np.linalg.norm(vec[q] - vec[d])), 5)


def test_ties_are_deterministic_and_broken_like_trec_eval():
    # "x" and "y" are at the same distance; one relevant. Float noise far below 1e-5 is rounded away.
    base = {"q": [0.0, 0.0], "x": [1.0, 0.0], "y": [0.0, 1.0], "z": [2.0, 0.0]}
    noisy = dict(base, y=[0.0, 1.0 + 1e-7])
    qrels = {"q": {"x": 0, "y": 1, "z": 0}}
    got = {evaluate_ranking(qrels, emb(points)).metrics["map"] for points in (base, noisy)}
    reordered = {"q": {"z": 0, "y": 1, "x": 0}}
    got |= {evaluate_ranking(reordered, emb(base)).metrics["map"]}
    assert len(got) == 1
    # trec_eval orders equal scores by document id, descending: y before x, so y is at rank 1
    assert got == {100.0}
    swapped = {"q": {"x": 1, "y": 0, "z": 0}}
    assert evaluate_ranking(swapped, emb(base)).metrics["map"] == 50.0


def test_missing_embeddings_are_skipped_and_counted(caplog):
    vectors = emb({"q1": [0, 0], "a": [1, 0], "b": [2, 0]})
    qrels = {"q1": {"a": 0, "b": 1, "gone": 1}, "q2": {"a": 1, "b": 0}}
    with caplog.at_level("WARNING"):
        result = evaluate_ranking(qrels, vectors, name="cite/test.qrel")
    cov = result.coverage
    assert (cov["queries"], cov["queries_evaluated"], cov["example_missing_queries"]) == (2, 1, ["q2"])
    assert (cov["candidates"], cov["candidates_with_embedding"], cov["candidates_missing"]) == (5, 2, 1)
    assert cov["relevant_candidates_missing"] == 1
    assert "cite/test.qrel: 1 of 2 queries skipped" in caplog.text
    # ranking a, b (relevant, precision 1/2); the missing relevant 'gone' is never retrieved: AP = (1/2 + 0) / 2
    assert result.metrics["map"] == 25.0


def test_no_covered_query_is_an_error():
    with pytest.raises(DataError, match="cover none"):
        evaluate_ranking({"q": {"a": 1}}, emb({"z": [0.0]}))
