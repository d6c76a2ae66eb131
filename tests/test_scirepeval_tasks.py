"""Tasks in SciRepEval's formats built beside the SCIDOCS layout: files, ids, held-out papers out of training."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from specter_utils.benchmark.build import build_benchmark
from specter_utils.benchmark.scirepeval_folder import KNOWN_ITEM_SCORE
from specter_utils.benchmark.scirepeval_tasks import arxiv_month, author_key, citing_coverage, date_span
from specter_utils.benchmark.splits import benchmark_ids
from specter_utils.corpus_config import BenchmarkConfig
from specter_utils.data.corpus import Corpus
from specter_utils.data.records import Paper
from specter_utils.data.specter_format import read_specter_dir
from specter_utils.data.synthetic import generate_synthetic_corpus
from specter_utils.layout import BENCHMARK_FILE, SCIREPEVAL_DIR, SCIREPEVAL_TASKS_FILE
from specter_utils.triplets.audit import audit_leakage
from specter_utils.triplets.io import Triplet, write_triplets

TYPES = {"citations-received": "regression", "same-author": "proximity", "title-search": "adhoc_search"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _csv(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as rows:
        return list(csv.DictReader(rows))


def check_format_dir(bench: Path) -> dict[str, dict]:
    """Every file the layout names is there, meta and qrels/csvs hold the same ids, no held-out paper trains."""
    root = bench / SCIREPEVAL_DIR
    configs = {c["name"]: c for c in _jsonl(root / SCIREPEVAL_TASKS_FILE)}
    train = read_specter_dir(bench / "train")
    training = set(train.graph) | set(train.metadata) | {c for row in train.graph.values() for c in row}
    held_out: set[str] = set()
    for name, config in configs.items():
        assert config["data"] == {"meta": f"{name}/meta.jsonl", "test": f"{name}/test"} and config["description"]
        meta = _jsonl(root / config["data"]["meta"])
        test = root / config["data"]["test"]
        if config["type"] in ("regression", "classification"):
            rows = {split: _csv(test / f"{split}.csv") for split in ("train", "test")}
            labelled = [r["paper_id"] for split in rows.values() for r in split]
            assert sorted(labelled) == sorted(m["doc_id"] for m in meta) and len(set(labelled)) == len(labelled)
            assert all(set(m) == {"doc_id", "title", "abstract"} and m["title"] for m in meta)
            if config["type"] == "regression":
                assert all(float(r["label"]) >= 0 for split in rows.values() for r in split)
                held_out |= {r["paper_id"] for r in rows["test"]}
            continue
        pairs = _jsonl(test / "test_qrel.jsonl")
        judged: dict[str, set[str]] = {}
        for pair in pairs:
            judged.setdefault(pair["query_id"], set()).add(pair["cand_id"])
        assert {m["doc_id"] for m in meta} == set(judged)
        for row in meta:
            assert {c["doc_id"] for c in row["candidates"]} == judged[row["doc_id"]]
            assert all(c["title"] for c in row["candidates"])
            if config["type"] == "proximity":
                assert row["query"]["doc_id"] == row["doc_id"] and row["doc_id"] not in judged[row["doc_id"]]
                held_out.add(row["doc_id"])
            else:
                assert isinstance(row["query"], str) and row["query"]
        if config["type"] == "adhoc_search":
            known = {p["cand_id"] for p in pairs if p["score"] == KNOWN_ITEM_SCORE}
            assert len(known) == len(judged)
            held_out |= known
        positives = [p for p in pairs if p["score"] > 0]
        assert positives and len(positives) < len(pairs)
    assert not held_out & training  # no held-out paper is a training query, candidate or easy negative
    ids = benchmark_ids(bench)
    assert set().union(*(ids[name].get("held_out", set()) for name in configs)) == held_out
    return configs


def test_synthetic_benchmark_writes_the_three_tasks_and_the_audit_sees_their_held_out_papers(tmp_path: Path) -> None:
    corpus = generate_synthetic_corpus(n_papers=300, seed=3)
    info = build_benchmark(corpus, tmp_path / "b", seed=1, n_queries=30)
    configs = check_format_dir(tmp_path / "b")
    assert {name: c["type"] for name, c in configs.items()} == TYPES
    assert configs["citations-received"]["metrics"] == ["kendalltau", "pearsonr"]
    assert (
        configs["title-search"]["metrics"] == ["ndcg_cut_10"] and "stand-in" in configs["title-search"]["description"]
    )
    recorded = json.loads((tmp_path / "b" / BENCHMARK_FILE).read_text())["scirepeval"]
    assert recorded == info["scirepeval"] and set(recorded["tasks"]) == set(TYPES)
    assert "fos" in recorded["absent"]  # the synthetic corpus gives one label a paper
    regression = recorded["tasks"]["citations-received"]
    assert regression["window_years"] == 2 and regression["test"] == 30 and regression["train"] == 90
    assert recorded["tasks"]["same-author"]["queries"] == recorded["tasks"]["title-search"]["queries"] == 30
    # a triplet holding a held-out paper of these tasks fails the audit
    ids = benchmark_ids(tmp_path / "b")
    queries = set().union(*(group.get("queries", set()) for group in ids.values()))
    held = sorted(ids["citations-received"]["held_out"] - queries)[0]  # held out by this task alone
    other = sorted(read_specter_dir(tmp_path / "b" / "train").graph)[:2]
    write_triplets(tmp_path / "t.jsonl", [Triplet(other[0], held, other[1], "easy")])
    audit = audit_leakage(tmp_path / "t.jsonl", tmp_path / "b")
    assert not audit["leak_free"] and audit["format_held_out_overlap"]["distinct_ids"] == 1
    assert audit["evaluation_queries"] == info["counts"]["held_out_queries"]  # the SCIDOCS queries alone
    write_triplets(tmp_path / "ok.jsonl", [Triplet(other[0], other[1], other[1], "easy")])
    assert audit_leakage(tmp_path / "ok.jsonl", tmp_path / "b")["leak_free"]
    # the same seed, the same files
    build_benchmark(corpus, tmp_path / "c", seed=1, n_queries=30)
    for name in ("tasks.jsonl", "same-author/test/test_qrel.jsonl", "citations-received/test/test.csv"):
        assert (tmp_path / "b" / SCIREPEVAL_DIR / name).read_bytes() == (
            tmp_path / "c" / SCIREPEVAL_DIR / name
        ).read_bytes()


def test_the_setting_chooses_the_tasks_and_none_writes_no_folder(tmp_path: Path) -> None:
    corpus = generate_synthetic_corpus(n_papers=200, seed=4)
    one = BenchmarkConfig(n_queries=20, scirepeval_tasks=["same-author"])
    build_benchmark(corpus, tmp_path, seed=0, config=one)
    assert [c["name"] for c in _jsonl(tmp_path / SCIREPEVAL_DIR / SCIREPEVAL_TASKS_FILE)] == ["same-author"]
    info = build_benchmark(corpus, tmp_path, seed=0, config=BenchmarkConfig(n_queries=20, scirepeval_tasks=[]))
    assert not (tmp_path / SCIREPEVAL_DIR).exists() and info["scirepeval"]["tasks"] == {}
    with pytest.raises(ValueError, match="scirepeval_tasks"):
        build_benchmark(corpus, tmp_path, config=BenchmarkConfig(n_queries=20, scirepeval_tasks=["search"]))


def test_multi_label_task_where_papers_have_several_labels(tmp_path: Path) -> None:
    corpus = generate_synthetic_corpus(n_papers=300, seed=5)
    topics = sorted({p.venue for p in corpus.papers.values()})
    for i, paper in enumerate(corpus.papers.values()):
        paper.extras["class_labels"] = [paper.venue, topics[i % len(topics)]] if i % 3 else [paper.venue]
    corpus.label_field = "fields_of_study"
    info = build_benchmark(corpus, tmp_path, seed=0, n_queries=20)
    configs = check_format_dir(tmp_path)
    assert configs["fos"]["type"] == "classification" and configs["fos"]["multi_label"] is True
    labels = [r["label"] for r in _csv(tmp_path / SCIREPEVAL_DIR / "fos" / "test" / "train.csv")]
    assert any("|" in label for label in labels) and info["scirepeval"]["tasks"]["fos"]["labels"] == len(topics)


def test_dates_authors_and_coverage() -> None:
    assert arxiv_month("2304.07638") == 2023 * 12 + 3 and arxiv_month("hep-th/9201003") == 1992 * 12
    assert arxiv_month("162972") is None and arxiv_month("2313.00001") is None
    hepth = Corpus("hepth", {"1013": Paper("1013", "t")}, [])
    assert date_span(hepth, "1013") == (2000 * 12, 2000 * 12) and date_span(hepth, "9912292") == (1999 * 12 + 11,) * 2
    other = Corpus("tables", {"12116": Paper("12116", "t", year=2001), "5": Paper("5", "t")}, [])
    assert date_span(other, "12116") == (2001 * 12, 2001 * 12 + 11) and date_span(other, "5") is None
    assert author_key("J.-B. Zuber") == "zuber j" and author_key('G\\"unter Sch\\"afer') == "schafer g"
    assert author_key("Ashoke Sen") == author_key("A. Sen") and author_key("Jr.") is None
    spans = [(m, m) for m in range(100, 200) for _ in range(10)] + [(200, 200), (250, 250)]
    assert citing_coverage(spans) == (100, 199)  # a straggler does not stretch the coverage


@pytest.mark.slow
def test_hepth_tasks_validate_against_the_layout(hepth_benchmark) -> None:
    info, bench = hepth_benchmark
    configs = check_format_dir(bench)
    assert set(configs) == set(TYPES)
    tasks = info["scirepeval"]["tasks"]
    assert tasks["citations-received"]["test"] == 1000 and tasks["citations-received"]["citing_dates"][0] == "1992-01"
    assert tasks["same-author"]["queries"] == tasks["title-search"]["queries"] == 1000
    assert info["counts"]["training_leakage"]["leak_free"] and info["scirepeval"]["absent"]["fos"]
