"""Leakage-safe splits and the leakage audit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specter_utils.benchmark.splits import sample_ids, split_ids, training_leakage
from specter_utils.data.records import Paper
from specter_utils.data.scidocs import ScidocsData, write_scidocs_dir
from specter_utils.data.specter_format import SpecterData
from specter_utils.errors import DataError
from specter_utils.triplets.audit import audit_leakage
from specter_utils.triplets.io import Triplet, write_triplets

ids = st.lists(st.text("abc123", min_size=1, max_size=4), unique=True, max_size=40)


@settings(max_examples=50, deadline=None)
@given(eligible=ids, excluded=ids, n=st.integers(0, 50), seed=st.integers(0, 100))
def test_sample_ids_is_seeded_and_respects_exclusions(eligible, excluded, n, seed) -> None:
    chosen = sample_ids(eligible, n, seed, exclude=excluded)
    assert chosen == sample_ids(list(reversed(eligible)), n, seed, exclude=excluded)  # order-independent
    assert len(chosen) == min(n, len(set(eligible) - set(excluded)))
    assert set(chosen) <= set(eligible) - set(excluded)


@settings(max_examples=50, deadline=None)
@given(pool=ids, frac=st.floats(0, 1), seed=st.integers(0, 100))
def test_split_ids_partitions(pool, frac, seed) -> None:
    parts = split_ids(pool, {"val": frac, "test": 1 - frac}, seed)
    assert sorted(parts["val"] + parts["test"]) == sorted(pool)
    assert not set(parts["val"]) & set(parts["test"])


def test_training_leakage_finds_every_role() -> None:
    meta = {p: Paper(p, p) for p in ["a", "b", "c", "h3"]}
    data = SpecterData({"h1": {"a": 5}, "a": {"h2": 1, "b": 5}}, meta, {"train": ["a"]})
    report = training_leakage(data, {"h1", "h2", "h3", "h4"})
    assert (report["as_query"], report["as_candidate"], report["in_metadata"]) == (1, 1, 1)
    assert not report["leak_free"]
    assert training_leakage(data, {"zzz"})["leak_free"]


def _benchmark(root: Path) -> None:
    qrels = {"q1": {"c1": 1, "c2": 0}, "q2": {"c3": 1, "c1": 0}}
    data = ScidocsData(root=root)
    data.ranking["cite"] = {"val": {"q1": qrels["q1"]}, "test": {"q2": qrels["q2"]}}
    data.classification["mag"] = {"train": [("m1", "A")], "val": [("m2", "B")], "test": [("m3", "A")]}
    write_scidocs_dir(root / "scidocs", data)


def test_audit_reports_query_overlap_by_role_and_candidates_apart(tmp_path: Path) -> None:
    _benchmark(tmp_path / "bench")
    write_triplets(
        tmp_path / "mined" / "train.jsonl",
        [Triplet("x", "y", "z", "easy"), Triplet("q1", "c1", "z", "hard"), Triplet("x", "q2", "m1", "easy")],
    )
    write_triplets(tmp_path / "mined" / "val.jsonl", [Triplet("a", "b", "q1", "easy")])
    report = audit_leakage(tmp_path / "mined", tmp_path / "bench")
    assert report["triplets"] == 4
    assert report["query_overlap"]["by_role"] == {"query": 1, "pos": 1, "neg": 1}
    assert report["query_overlap"]["distinct_ids"] == 2
    assert report["candidate_overlap"]["by_role"] == {"query": 0, "pos": 1, "neg": 0}
    assert report["classification_overlap"]["by_role"]["neg"] == 1
    assert report["leak_free"] is False
    assert {e["file"] for e in report["query_overlap"]["examples"]} == {"train.jsonl", "val.jsonl"}
    # a single file, and the scidocs dir itself, work too
    clean = audit_leakage(tmp_path / "mined" / "train.jsonl", tmp_path / "bench" / "scidocs")
    assert clean["triplets"] == 3 and clean["query_overlap"]["by_role"]["neg"] == 0


def test_audit_on_clean_triplets_and_bad_input(tmp_path: Path) -> None:
    _benchmark(tmp_path / "bench")
    write_triplets(tmp_path / "t.jsonl", [Triplet("x", "y", "z", "easy")])
    assert audit_leakage(tmp_path / "t.jsonl", tmp_path / "bench")["leak_free"] is True
    (tmp_path / "bad.jsonl").write_text('{"query": "x"}\n')
    with pytest.raises(DataError, match="bad.jsonl:1"):
        audit_leakage(tmp_path / "bad.jsonl", tmp_path / "bench")
    with pytest.raises(DataError):
        audit_leakage(tmp_path / "missing.jsonl", tmp_path / "bench")
