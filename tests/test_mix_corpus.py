"""A public corpus's citations beside a user's own in training (data.mix_with); its papers are never scored."""

from __future__ import annotations

import json

import pytest

from specter_utils.benchmark.splits import benchmark_ids
from specter_utils.corpus_config import CorpusConfig
from specter_utils.data.specter_format import read_specter_dir
from specter_utils.errors import DataError
from specter_utils.workflow.prepare import build_benchmark_dir, load_corpus_for_run


def test_mixed_papers_join_training_under_their_own_ids_and_never_the_benchmark(tmp_path) -> None:
    data = CorpusConfig(corpus="synthetic", n_papers=200, n_topics=3, n_queries=20, mix_with="citeseer", mix_papers=300)
    own = CorpusConfig(corpus="synthetic", n_papers=200, n_topics=3, n_queries=20)
    corpus = load_corpus_for_run(data)
    build_benchmark_dir(corpus, tmp_path / "alone", own)
    info = build_benchmark_dir(corpus, tmp_path / "mixed", data)
    alone, mixed = read_specter_dir(tmp_path / "alone" / "train"), read_specter_dir(tmp_path / "mixed" / "train")
    added = set(mixed.metadata) - set(alone.metadata)
    assert set(alone.metadata) <= set(mixed.metadata) and len(added) == 300
    assert all(pid.startswith("citeseer:") for pid in added)
    assert {q: row for q, row in mixed.graph.items() if q in alone.graph} == alone.graph  # the user's citations kept
    assert any(q.startswith("citeseer:") for q in mixed.graph)
    # the benchmark (queries, candidates) is the same with or without the mix: the second corpus is never scored
    assert benchmark_ids(tmp_path / "alone") == benchmark_ids(tmp_path / "mixed")
    recorded = json.loads((tmp_path / "mixed" / "benchmark.json").read_text())["counts"]["train"]["mixed_with"]
    assert recorded == info["counts"]["train"]["mixed_with"] and recorded["mixed_papers"] == 300


def test_a_corpus_mixed_with_itself_is_refused_before_anything_is_written(tmp_path) -> None:
    data = CorpusConfig(corpus="synthetic", n_papers=100, n_topics=2, n_queries=10, mix_with="synthetic")
    with pytest.raises(DataError, match="the run's own corpus"):
        build_benchmark_dir(load_corpus_for_run(data), tmp_path / "b", data)
    assert not (tmp_path / "b").exists()
