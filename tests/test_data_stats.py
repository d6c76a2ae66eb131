"""corpus_stats: format detection and counts on every real format."""

from __future__ import annotations

import pytest

from specter_utils.data.stats import corpus_counts, corpus_stats, detect_format, format_stats
from specter_utils.data.synthetic import generate_synthetic_corpus
from specter_utils.errors import DataError


def test_detects_every_real_format(shared_data):
    assert detect_format(shared_data / "specter_sample") == "specter"
    assert detect_format(shared_data / "hepth") == "hepth"
    assert detect_format(shared_data / "s2orc" / "sample.jsonl") == "s2orc"
    assert detect_format(shared_data / "scirepeval") == "scirepeval"
    assert detect_format(shared_data / "scirepeval" / "specter_small.json") == "specter_triplets"
    assert detect_format(shared_data / "scirepeval" / "fos_small.json") == "fos"
    assert detect_format(shared_data / "scirepeval" / "mesh_small.json") == "mesh"


def test_specter_sample_stats(shared_data):
    stats = corpus_stats(shared_data / "specter_sample")
    counts = stats["counts"]
    assert counts["queries"] == 20 and counts["candidates"] == 379 and counts["papers"] == 379
    assert counts["queries_without_metadata"] == 20 and counts["dangling_ids"] == 20
    assert counts["direct_citation_pairs"] == 85 and counts["citation_of_citation_pairs"] == 337
    assert counts["splits"] == {"train": 12, "val": 2, "test": 3}
    assert stats["oddities"]["query_without_metadata"] == 20
    assert "queries_without_metadata: 20" in format_stats(stats)


def test_s2orc_stats(shared_data):
    stats = corpus_stats(shared_data / "s2orc" / "sample.jsonl")
    counts = stats["counts"]
    assert counts["papers"] == 1_000 and counts["with_abstract"] == 488
    assert counts["edges"] == 3_107 and counts["self_citations"] == 4
    assert counts["duplicate_edges"] == 13 and counts["dangling_ids"] == 3_085
    assert stats["oddities"]["null_abstract"] == 512


def test_scirepeval_folder_stats(shared_data):
    stats = corpus_stats(shared_data / "scirepeval")
    parts = stats["parts"]
    assert parts["specter_small.json"]["counts"]["triplets"] == 200
    assert parts["fos_small.json"]["counts"]["multi_label_papers"] == 32
    assert parts["mesh_small.json"]["counts"]["papers"] == 206
    assert "[fos_small.json]" in format_stats(stats)


def test_hepth_counts(hepth_corpus):
    counts = corpus_counts(hepth_corpus)
    assert counts["papers"] == 28_555 and counts["edges"] == 135_672
    assert counts["dangling_ids"] == 0 and counts["papers_with_edges"] == 13_610
    assert counts["top_venues"].keys() >= {"Phys.Lett.B", "Nucl.Phys.B"}


def test_synthetic_counts_say_synthetic():
    counts = corpus_counts(generate_synthetic_corpus(n_papers=60, n_topics=3))
    assert counts["synthetic"] is True and counts["distinct_venues"] == 3


def test_unknown_paths_are_errors(tmp_path):
    with pytest.raises(DataError, match="not found"):
        corpus_stats(tmp_path / "missing")
    with pytest.raises(DataError, match="unrecognised folder"):
        corpus_stats(tmp_path)
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(DataError, match="unrecognised file"):
        corpus_stats(tmp_path / "x.csv")
