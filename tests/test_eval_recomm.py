"""Recommendation: the metric by hand (0.5 ties, propensity weights), the 11 features, seeds and spread."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specter_utils.data.scidocs import RecommClick
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.evaluation.recomm import (
    BLANK,
    FEATURES,
    Featurizer,
    click_metrics,
    evaluate_recomm,
    normalised_propensities,
)


def test_propensities_are_normalised_to_mean_one():
    assert normalised_propensities([2.0, 1.0, 1.0]).tolist() == [1.5, 0.75, 0.75]


def test_click_metric_by_hand_with_ties_and_weights():
    propensity = normalised_propensities([2.0, 1.0, 1.0])  # 1.5, 0.75, 0.75
    clicked = np.array([0.7, 0.3, 0.9])
    others = [np.array([0.5, 0.9]), np.array([0.3]), np.array([0.1, 0.2])]
    positions = np.array([1, 2, 3])
    # r: 1 above; one tie -> 0.5; none above
    ndcg = [1 / math.log2(3), 1 / math.log2(2.5), 1.0]
    p1 = [0.0, 0.0, 1.0]  # a tie is not a win
    weights = [1 / 1.5, 1 / 0.75, 1 / 0.75]
    got = click_metrics(clicked, others, positions, propensity)
    assert got["adj-NDCG"] == pytest.approx(np.dot(weights, ndcg) / sum(weights))
    assert got["adj-P@1"] == pytest.approx(np.dot(weights, p1) / sum(weights))


def metadata() -> dict:
    return {
        "q": {
            "title": "Deep nets for graphs",
            "authors": ["a1", "a2"],
            "cited_by": ["x", "c"],
            "references": ["r1", "r2"],
            "year": 2015,
        },
        "c": {
            "title": "Graphs, deep nets",
            "authors": ["a2", "a3"],
            "cited_by": ["x"],
            "references": ["r1", "q"],
            "year": 2010,
        },
        "n": {"title": "", "authors": [], "cited_by": [], "references": [], "year": None},
    }


def test_features_by_hand():
    emb = EmbeddingSet(["q", "c"], np.array([[1.0, 0.0], [1.0, 1.0]], dtype=np.float32))
    feats = dict(zip(FEATURES, Featurizer(metadata(), emb).features("q", "c"), strict=True))
    assert feats["author_jaccard"] == pytest.approx(1 / 3)
    assert feats["position"] == 0.0
    # tokens {Deep, nets, for, graphs} vs {Graphs, ",", deep, nets}: case kept, only "nets" shared
    assert feats["title_jaccard"] == pytest.approx(1 / 7)
    assert feats["embedding_cosine"] == pytest.approx(1 / math.sqrt(2))
    assert feats["cited_by_jaccard"] == pytest.approx(1 / 2)
    assert feats["references_jaccard"] == pytest.approx(1 / 3)
    assert feats["candidate_cites_query"] == 1.0  # c is in q's cited_by (and q in c's references)
    assert feats["query_cites_candidate"] == 0.0
    assert feats["oldness"] == pytest.approx(0.5)
    assert feats["relative_oldness"] == pytest.approx(0.25)
    assert feats["log_citations"] == pytest.approx(math.log(2) / 10)
    blank = dict(zip(FEATURES, Featurizer(metadata(), emb).features("n", "missing"), strict=True))
    assert blank["title_jaccard"] == 0.0 and blank["embedding_cosine"] == 0.0 and blank["oldness"] == 0.0


def synthetic_clicks(n: int, seed: int) -> tuple[dict, dict, EmbeddingSet]:
    rng = np.random.default_rng(seed)
    meta, ids, vecs, clicks = {}, [], [], []
    for i in range(n):
        q = f"q{i}"
        centre = rng.normal(size=4)
        shown = [f"s{i}_{j}" for j in range(5)]
        clicked = shown[int(rng.integers(0, 5))]
        for pid in [q, *shown]:
            meta[pid] = {"title": f"paper {pid}", "authors": [], "cited_by": [], "references": [], "year": 2010}
            ids.append(pid)
            near = pid in (q, clicked)
            vecs.append(centre + rng.normal(scale=0.2 if near else 2.0, size=4))
        clicks.append(RecommClick(q, clicked, shown))
    return meta, {"all": clicks}, EmbeddingSet(ids, np.asarray(vecs, dtype=np.float32))


def test_ranker_learns_the_cosine_and_reports_spread():
    meta, clicks, emb = synthetic_clicks(160, 0)
    rows = clicks["all"]
    splits = {"train": rows[:100], "val": rows[100:120], "test": rows[120:]}
    result = evaluate_recomm(splits, meta, [1.0] * 5, emb, seeds=(1, 2))
    assert result.metrics["adj-P@1"] > 60  # the clicked paper is the near one: easy
    assert result.spread["adj-NDCG"]["seeds"] == [1, 2] and len(result.spread["adj-NDCG"]["values"]) == 2
    assert result.coverage["test"]["queries_with_embedding"] == 40
    again = evaluate_recomm(splits, meta, [1.0] * 5, emb, seeds=(1, 2))
    assert again.metrics == result.metrics  # deterministic per seed


def test_click_beyond_the_propensity_list_names_the_line():
    meta, clicks, emb = synthetic_clicks(4, 1)
    rows = clicks["all"]
    rows[1] = RecommClick(rows[1].query_id, rows[1].shown_ids[4], rows[1].shown_ids)
    with pytest.raises(DataError, match=r"recomm/train.csv:3 \(id 'q1'\): clicked position 5"):
        evaluate_recomm({"train": rows, "test": rows}, meta, [1.0] * 4, emb, seeds=(1,))


def test_two_blank_titles_share_nothing():
    """Decision (recomm module docstring): two blank titles give title Jaccard 0, not 1 as the shared
    <blank> placeholder token would; one blank title against a real one gives 0 too."""
    meta = {"a": {"title": ""}, "b": {"title": "   "}, "c": {"title": None}, "d": {"title": "Deep nets"}}
    emb = EmbeddingSet(["a"], np.ones((1, 2), dtype=np.float32))
    featurizer = Featurizer(meta, emb)
    title = FEATURES.index("title_jaccard")
    assert featurizer.title_tokens("a") == featurizer.title_tokens("b") == [BLANK]
    for query, candidate in (("a", "b"), ("a", "c"), ("b", "b"), ("a", "d"), ("d", "a"), ("a", "unknown")):
        assert featurizer.features(query, candidate)[title] == 0.0, (query, candidate)
    assert featurizer.features("d", "d")[title] == 1.0
