"""load_corpus: one entry point for hep-th, S2ORC and the synthetic corpus."""

from __future__ import annotations

import pytest

from specter_utils.data import load
from specter_utils.data.load import load_corpus
from specter_utils.errors import DataError


def test_synthetic_kind_passes_options():
    corpus = load_corpus("synthetic", n_papers=80, n_topics=3, seed=2)
    assert corpus.synthetic and len(corpus.papers) == 80


def test_s2orc_defaults_to_the_shared_sample(shared_data):
    corpus = load_corpus("s2orc")
    assert corpus.name == "s2orc" and len(corpus.papers) == 1_000
    assert corpus.info["source"].endswith("sample.jsonl")
    assert not corpus.synthetic


def test_hepth_without_data_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(load, "hepth_dir", lambda: None)
    with pytest.raises(DataError, match="data download hepth"):
        load_corpus("hepth")


def test_missing_source_and_unknown_kind(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_corpus("hepth", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="unknown corpus kind"):
        load_corpus("dblp")
    with pytest.raises(ValueError, match="--src does not apply"):
        load_corpus("synthetic", tmp_path)
