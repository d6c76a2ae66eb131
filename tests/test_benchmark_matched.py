"""Popularity-matched negatives (cite-matched, cocite-matched) and the time split (``data.split_by=date``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from specter_utils.benchmark.build import build_benchmark
from specter_utils.benchmark.matched import MatchedSampler, degree_bucket, popularity_summary
from specter_utils.benchmark.splits import benchmark_ids, latest_cutoff
from specter_utils.cli import main as cli_main
from specter_utils.corpus_config import BenchmarkConfig, CorpusConfig
from specter_utils.data.scidocs import read_scidocs_dir
from specter_utils.data.specter_format import read_specter_dir
from specter_utils.data.synthetic import generate_synthetic_corpus
from specter_utils.errors import DataError
from specter_utils.layout import LATER_PAPERS_FILE
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.audit import audit_leakage
from specter_utils.triplets.io import Triplet, write_triplets
from specter_utils.triplets.sampler import mine_dir
from specter_utils.workflow.mine import mine
from specter_utils.workflow.prepare import benchmark_config


@pytest.fixture(scope="module")
def corpus():
    return generate_synthetic_corpus(n_papers=400, seed=1)


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("random")
    build_benchmark(corpus, out, seed=2, n_queries=40)
    return out


def test_degree_buckets_are_log2() -> None:
    assert [degree_bucket(d) for d in (0, 1, 2, 3, 4, 7, 8, 100)] == [0, 1, 2, 2, 3, 3, 4, 7]


def test_sampler_matches_the_cell_then_widens_and_counts_it() -> None:
    years = {"a": 2000, "b": 2000, "c": 2001, "d": 2005, "like": 2000}
    degree = {"a": 5, "b": 40, "c": 5, "d": 5, "like": 6}
    sampler = MatchedSampler(["a", "b", "c", "d"], years, degree, use_years=True)
    rng = random.Random(0)
    assert sampler.draw("like", set(), rng) == "a"  # same year, same bucket (4-7)
    assert sampler.draw("like", {"a"}, rng) == "c"  # one year off: the window of half-width 1
    assert sampler.widened == {0: 1, 1: 1}
    undated = MatchedSampler(["a", "b", "c", "d"], years, degree, use_years=False)
    assert undated.keys == ("in-degree bucket",)
    assert undated.draw("like", {"a"}, rng) in {"c", "d"} and undated.widened == {0: 1}  # any year goes
    assert sampler.draw("like", {"a", "b", "c", "d"}, rng) is None


def test_matched_tasks_keep_queries_positives_and_splits_and_match_the_positives(built: Path) -> None:
    scidocs = read_scidocs_dir(built / "scidocs")
    info = json.loads((built / "benchmark.json").read_text())
    meta = scidocs.metadata["view_cite_read"]
    for task in ("cite", "cocite"):
        for split, qrels in scidocs.ranking[task].items():
            matched = scidocs.ranking[f"{task}-matched"][split]
            assert set(matched) == set(qrels)  # the same queries, in the same split
            for query, docs in qrels.items():
                positives = {p for p, rel in docs.items() if rel}
                assert {p for p, rel in matched[query].items() if rel} == positives
                assert len(matched[query]) - len(positives) == 25 and query not in matched[query]
        entry = info["negatives"][f"{task}-matched"]
        assert entry["matching_keys"] == ["year", "in-degree bucket"]
        assert entry["widened"]["slots"] == info["counts"][f"{task}-matched"]["negatives"]
        # matched negatives sit closer to the positives than random ones, in in-degree as in year
        summary, plain = entry["summary"], info["negatives"][task]["summary"]
        for key in ("median_in_degree", "median_year"):
            gap = abs(summary["negatives"][key] - summary["positives"][key])
            assert gap <= abs(plain["negatives"][key] - plain["positives"][key])
        assert summary["positives"] == plain["positives"]
    # the summary's in-degree is the metadata graph's (edges of held-out queries removed)
    qrels = {q: d for split in scidocs.ranking["cite"].values() for q, d in split.items()}
    degree = {p: len(r["cited_by"]) for p, r in meta.items()}
    years = {p: r["year"] for p, r in meta.items()}
    assert popularity_summary(qrels, years, degree) == info["negatives"]["cite"]["summary"]
    assert info["split"]["split_by"] == "random" and not (built / LATER_PAPERS_FILE).exists()


def test_popularity_summary_counts_negatives_newer_than_the_newest_positive() -> None:
    qrels = {"q": {"p1": 1, "p2": 1, "n1": 0, "n2": 0}}
    years = {"p1": 1995, "p2": 1997, "n1": 1999, "n2": 1990}
    summary = popularity_summary(qrels, years, {"p1": 10, "p2": 30, "n1": 0, "n2": 1})
    assert summary["positives"]["median_in_degree"] == 20 and summary["negatives"]["median_in_degree"] == 0.5
    assert summary["negatives"]["share_newer_than_newest_positive"] == 0.5
    assert summary["negatives"]["share_in_degree_0"] == 0.5


def test_latest_cutoff_is_the_latest_year_with_enough_queries() -> None:
    years = {str(i): 2000 + i // 10 for i in range(50)}  # 10 papers a year, 2000-2004
    eligible = {"cite": [str(i) for i in range(50)], "cocite": [str(i) for i in range(50)]}
    assert latest_cutoff(years, eligible, {"cite": 5, "cocite": 5}) == 2004
    assert latest_cutoff(years, eligible, {"cite": 8, "cocite": 8}) == 2003  # two tasks, disjoint queries
    assert latest_cutoff(years, eligible, {"cite": 100, "cocite": 1}) == 2000  # never enough: every year


def test_date_split_holds_out_the_latest_period_and_training_precedes_it(corpus, tmp_path: Path, capsys) -> None:
    out = tmp_path / "b"
    info = build_benchmark(corpus, out, seed=2, n_queries=30, config=BenchmarkConfig(split_by="date"))
    cutoff = info["split"]["cutoff_year"]
    scidocs = read_scidocs_dir(out / "scidocs")
    years = {pid: p.year for pid, p in corpus.papers.items()}
    queries = {q for task in scidocs.ranking.values() for qrels in task.values() for q in qrels}
    assert queries and all(years[q] >= cutoff for q in queries)
    assert {"val", "test"} == set(scidocs.ranking["cite"])  # val and test both from the latest period
    train = read_specter_dir(out / "train")
    in_training = set(train.metadata) | set(train.graph) | {c for row in train.graph.values() for c in row}
    assert in_training and max(years[p] for p in in_training) < cutoff
    later = set((out / LATER_PAPERS_FILE).read_text().split())
    assert later == {p for p, y in years.items() if y >= cutoff} and info["split"]["later_papers"] == len(later)
    assert (
        info["counts"]["training_leakage"]["leak_free"] and info["counts"]["training_leakage"]["later_in_training"] == 0
    )
    # the same build with split_by given through the run's data section
    assert benchmark_config(CorpusConfig(split_by="date")).split_by == "date"
    mine_dir(out / "train", tmp_path / "t", SamplerConfig(seed=0))
    audit = audit_leakage(tmp_path / "t", out)
    assert audit["leak_free"] and audit["later_overlap"]["distinct_ids"] == 0 and audit["later_papers"] == len(later)
    # a triplet that reaches a later paper is leakage, named as such
    earlier = next(iter(train.metadata))
    format_held = set().union(*(group.get("held_out", set()) for group in benchmark_ids(out).values()))
    only_later = sorted(later - queries - format_held)[0]  # held out by the time split alone
    leaky = tmp_path / "later.jsonl"
    leaky.write_text(json.dumps({"query": earlier, "pos": only_later, "neg": earlier, "kind": "easy"}) + "\n")
    capsys.readouterr()
    assert cli_main(["data", "audit", "--triplets", str(leaky), "--benchmark", str(out)]) == 1
    assert (
        "LEAKAGE: the triplets touch papers from the time split's held-out period (1 paper)" in capsys.readouterr().out
    )
    # a triplet holding a paper from the cutoff on (not a query) is leakage, and mining stops on it
    late = sorted(later - queries)[0]
    early = sorted(in_training)[:2]
    write_triplets(tmp_path / "bad.jsonl", [Triplet(query=early[0], pos=early[1], neg=late, kind="easy")])
    bad = audit_leakage(tmp_path / "bad.jsonl", out)
    assert (
        not bad["leak_free"] and bad["later_overlap"]["distinct_ids"] == 1 and not bad["query_overlap"]["distinct_ids"]
    )


def test_mine_stops_on_a_later_paper(corpus, tmp_path: Path, monkeypatch) -> None:
    from specter_utils.spec import load_spec
    from specter_utils.workflow import mine as mine_module

    out = tmp_path / "b"
    build_benchmark(corpus, out, seed=2, n_queries=30, config=BenchmarkConfig(split_by="date"))
    late = sorted((out / LATER_PAPERS_FILE).read_text().split())[-1]
    train = read_specter_dir(out / "train")
    early = sorted(train.metadata)[:2]

    def fake_mining(config, data_dir, triplets_dir):
        Path(triplets_dir).mkdir(parents=True, exist_ok=True)
        write_triplets(Path(triplets_dir) / "train.jsonl", [Triplet(early[0], early[1], late, "easy")])
        return {}

    monkeypatch.setattr(mine_module, "mine_triplets", fake_mining)
    with pytest.raises(DataError, match="cutoff"):
        mine(load_spec("smoke"), out / "train", tmp_path / "t", out)


def test_date_split_without_years_is_a_one_line_error_naming_the_corpus(tmp_path: Path, capsys) -> None:
    corpus = generate_synthetic_corpus(n_papers=100, seed=1)
    for paper in corpus.papers.values():
        paper.year = None
    with pytest.raises(DataError, match="no publication year"):
        build_benchmark(corpus, tmp_path / "x", config=BenchmarkConfig(split_by="date"))
    assert not (tmp_path / "x").exists()
    code = cli_main(["build-benchmark", "--corpus", "citeseer", "--split-by", "date", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "citeseer" in err[-1] and "split_by=date" in err[-1] and "Traceback" not in "\n".join(err)


def test_matched_negatives_match_on_in_degree_only_without_years(tmp_path: Path) -> None:
    corpus = generate_synthetic_corpus(n_papers=300, seed=3)
    for paper in corpus.papers.values():
        paper.year = None
    info = build_benchmark(corpus, tmp_path, seed=0, n_queries=20)
    entry = info["negatives"]["cite-matched"]
    assert entry["matching_keys"] == ["in-degree bucket"] and "in-degree only" in entry["note"]
    assert entry["summary"]["negatives"]["median_year"] is None
    medians = [info["negatives"][t]["summary"]["negatives"]["median_in_degree"] for t in ("cite", "cite-matched")]
    positive = info["negatives"]["cite"]["summary"]["positives"]["median_in_degree"]
    assert abs(medians[1] - positive) <= abs(medians[0] - positive)
