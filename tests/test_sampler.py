"""The SPECTER sampler: triplet definitions, skip rules, seeds, SPECTROID, ablation, errors."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specter_utils.cli import main as cli_main
from specter_utils.data.records import Paper
from specter_utils.data.specter_format import SpecterData, read_specter_dir
from specter_utils.errors import DataError
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.io import read_triplets
from specter_utils.triplets.sampler import (
    FEWER_THAN_3,
    NOT_IN_DATA_JSON,
    QUERY_WITHOUT_METADATA,
    SAME_COUNT,
    GraphIndex,
    mine,
    mine_dir,
    reference_sample,
    sample_split,
)


def _paper(pid: str) -> Paper:
    return Paper(pid, f"Title of {pid}", "" if pid.endswith("7") else "An abstract.")


@st.composite
def specter_data(draw, counts=(5, 1), allow_missing_metadata: bool = True) -> SpecterData:
    """Small SPECTER datasets: random rows of count-5/count-1 candidates, some ids without metadata."""
    n_papers = draw(st.integers(8, 40))
    papers = [f"p{i}" for i in range(n_papers)]
    ghosts = [f"x{i}" for i in range(5)] if allow_missing_metadata else []
    n_queries = draw(st.integers(1, 12))
    queries = papers[:n_queries]
    graph: dict[str, dict[str, int]] = {}
    for query in queries:
        others = [p for p in papers + ghosts if p != query]
        cands = draw(st.lists(st.sampled_from(others), max_size=12, unique=True))
        graph[query] = {c: draw(st.sampled_from(counts)) for c in cands}
    metadata = {p: _paper(p) for p in papers}
    train = queries + (["missing_query"] if draw(st.booleans()) else [])
    return SpecterData(graph=graph, metadata=metadata, splits={"train": train, "val": queries[:2]})


def _check_definitions(data: SpecterData, triplets, config: SamplerConfig) -> None:
    per_query = Counter(t.query for t in triplets)
    hard_per_query = Counter(t.query for t in triplets if t.kind == "hard")
    for t in triplets:
        row = data.graph[t.query]
        assert {t.query, t.pos, t.neg} <= set(data.metadata)  # texts can be looked up
        assert row[t.pos] == 5  # positive: a direct citation
        if t.kind == "hard":
            assert row[t.neg] == 1  # hard negative: a citation of a citation, not directly cited
        else:
            assert t.neg not in row and t.neg != t.query  # easy negative: not a candidate, not the query
    for query, n in per_query.items():
        row = data.graph[query]
        assert len(row) >= 3 and len(set(row.values())) > 1  # skip rules of the original
        assert n <= config.triplets_per_query
        assert hard_per_query[query] <= config.hard_per_query


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=specter_data(), seed=st.integers(0, 2**16), spectroid=st.booleans(), no_hard=st.booleans())
def test_every_triplet_respects_its_definition(data: SpecterData, seed: int, spectroid: bool, no_hard: bool) -> None:
    config = SamplerConfig(seed=seed, strategy="spectroid" if spectroid else "specter", no_hard_negatives=no_hard)
    result = sample_split(GraphIndex(data), data.splits["train"], config, "train")
    _check_definitions(data, list(result.triplets), config)
    m = result.metrics
    assert m["queries_used"] + m["queries_skipped_total"] == len(data.splits["train"])
    assert sum(m["queries_skipped"].values()) == m["queries_skipped_total"]
    assert m["triplets"]["total"] == len(result.triplets)
    assert not no_hard or m["triplets"]["hard"] == 0


@settings(max_examples=40, deadline=None)
@given(data=specter_data(allow_missing_metadata=False), seed=st.integers(0, 1000))
def test_counts_per_query_match_the_pure_python_reference(data: SpecterData, seed: int) -> None:
    config = SamplerConfig(seed=seed)
    fast = list(sample_split(GraphIndex(data), data.splits["train"], config).triplets)
    slow, _ = reference_sample(data, data.splits["train"], config)
    _check_definitions(data, slow, config)
    kinds = lambda ts: Counter((t.query, t.kind) for t in ts)  # noqa: E731
    assert kinds(fast) == kinds(slow)
    for query in {t.query for t in fast}:  # 5 per usable query: min(2, n5 * n1) hard, the rest easy
        row = data.graph[query]
        n5, n1 = sum(c == 5 for c in row.values()), sum(c == 1 for c in row.values())
        assert kinds(fast)[(query, "hard")] == min(2, n5 * n1)
        easy_pool = set(data.metadata) - set(row) - {query}
        assert kinds(fast)[(query, "easy")] == (5 - min(2, n5 * n1) if easy_pool else 0)


@settings(max_examples=30, deadline=None)
@given(data=specter_data(counts=(5, 4, 3, 2, 1)), seed=st.integers(0, 1000))
def test_general_counts_follow_the_margin_rules(data: SpecterData, seed: int) -> None:
    """Co-view style counts: a positive always has more than the negative plus the margin."""
    config = SamplerConfig(seed=seed)
    for t in sample_split(GraphIndex(data), data.splits["train"], config).triplets:
        row = data.graph[t.query]
        spread = max(row.values()) - min(row.values())
        margin = 1 if spread == 1 else 0.5 * spread
        assert row[t.pos] > min(row.values()) + margin
        if t.kind == "hard":
            assert row[t.neg] < max(row.values()) - margin and row[t.pos] > row[t.neg] + margin
        else:
            assert t.neg not in row and t.neg != t.query and t.neg in data.metadata


def _toy(n_queries: int = 300, n_papers: int = 400) -> SpecterData:
    """Each query cites the popular paper p0, four rarely cited papers and has 4 count-1 candidates."""
    papers = [f"p{i}" for i in range(n_papers)]
    graph = {}
    for q in range(n_queries):
        query = f"q{q}"
        row = {"p0": 5}
        row.update({papers[1 + (q * 4 + j) % 200]: 5 for j in range(4)})
        row.update({papers[201 + (q + j) % 150]: 1 for j in range(4)})
        graph[query] = row
    metadata = {p: _paper(p) for p in papers + list(graph)}
    queries = list(graph)
    return SpecterData(graph=graph, metadata=metadata, splits={"train": queries[:250], "val": queries[250:]})


def test_same_seed_same_output_other_seed_other_output() -> None:
    data = _toy()
    a, b = mine(data, SamplerConfig(seed=3)), mine(data, SamplerConfig(seed=3))
    assert list(a.train.triplets) == list(b.train.triplets) and list(a.val.triplets) == list(b.val.triplets)
    c = mine(data, SamplerConfig(seed=4))
    assert list(a.train.triplets) != list(c.train.triplets)


def test_spectroid_shifts_positives_toward_highly_cited_papers() -> None:
    data = _toy()
    share = {}
    for spectroid in (False, True):
        triplets = list(
            mine(data, SamplerConfig(seed=0, strategy="spectroid" if spectroid else "specter")).train.triplets
        )
        share[spectroid] = sum(t.pos == "p0" for t in triplets) / len(triplets)
    # p0 has 300 in-citations, the others 6 each: uniform gives 1/5, weighted 300/324
    assert share[False] == pytest.approx(0.2, abs=0.05)
    assert share[True] == pytest.approx(300 / 324, abs=0.04)


def test_no_hard_negatives_gives_only_easy_triplets() -> None:
    result = mine(_toy(), SamplerConfig(no_hard_negatives=True))
    kinds = result.train.triplets.kinds()
    assert kinds["hard"] == 0 and kinds["easy"] == 5 * 250
    normal = mine(_toy()).train.triplets.kinds()
    assert normal["hard"] == 2 * 250 and normal["easy"] == 3 * 250


def test_options_triplets_per_query_hard_ratio_and_cap() -> None:
    config = SamplerConfig(triplets_per_query=8, hard_ratio=0.5, max_triplets=1001)
    result = mine(_toy(), config)
    assert config.hard_per_query == 4 == math.ceil(0.5 * 8)
    assert len(result.train.triplets) == 1001 and result.train.metrics["capped_from"] == 250 * 8
    assert len(result.val.triplets) == 50 * 8  # the cap is on train only, as in SPECTROID
    assert SamplerConfig(triplets_per_query=10, hard_ratio=0.3).hard_per_query == 3  # not 4 from 3.0000000004


def test_skip_reasons_are_counted() -> None:
    meta = {p: _paper(p) for p in ["q1", "q2", "q3", "a", "b", "c", "d"]}
    graph = {
        "q1": {"a": 5, "b": 1},  # fewer than 3 candidates
        "q2": {"a": 5, "b": 5, "c": 5},  # all candidates share one count
        "q3": {"a": 5, "b": 1, "c": 1, "d": 5},  # usable
        "nometa": {"a": 5, "b": 1, "c": 1},
    }
    data = SpecterData(graph, meta, {"train": ["q1", "q2", "q3", "nometa", "absent"]})
    m = mine(data).train.metrics
    assert m["queries_used"] == 1
    assert {k: v for k, v in m["queries_skipped"].items() if v} == {
        FEWER_THAN_3: 1,
        SAME_COUNT: 1,
        QUERY_WITHOUT_METADATA: 1,
        NOT_IN_DATA_JSON: 1,
    }


def test_triplets_with_a_paper_without_metadata_are_dropped_and_counted() -> None:
    meta = {p: _paper(p) for p in ["q", "a", "b", "e1", "e2"]}
    data = SpecterData({"q": {"a": 5, "ghost": 5, "b": 1}}, meta, {"train": ["q"]})
    result = mine(data, SamplerConfig(seed=1))
    dropped = result.train.metrics["triplets_dropped_no_metadata"]["pos_without_metadata"]
    assert dropped > 0 and len(result.train.triplets) + dropped == 5
    assert all(t.pos == "a" for t in result.train.triplets)


def test_specter_sample_raises_a_clear_error(shared_data: Path) -> None:
    with pytest.raises(DataError, match=r"12 train queries.*query_without_metadata: 12.*missing from metadata"):
        mine(read_specter_dir(shared_data / "specter_sample"))


def test_mine_dir_and_cli_write_the_three_files(tmp_path: Path) -> None:
    from specter_utils.data.specter_format import write_specter_dir

    write_specter_dir(tmp_path / "data", _toy())
    metrics = mine_dir(tmp_path / "data", tmp_path / "a", SamplerConfig(seed=5))
    train = read_triplets(tmp_path / "a" / "train.jsonl")
    assert len(train) == metrics["train"]["triplets"]["total"] == 1250
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["val"]["triplets"]["total"] == 250
    assert metrics["papers"]["without_abstract"] == sum(p.endswith("7") for p in _toy().metadata)
    code = cli_main(["mine", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "b"), "--seed", "5"])
    assert code == 0
    assert (tmp_path / "b" / "train.jsonl").read_bytes() == (tmp_path / "a" / "train.jsonl").read_bytes()
    assert cli_main(["mine", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "c"), "--spectroid"]) == 0
