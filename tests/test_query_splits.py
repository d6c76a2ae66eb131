"""Splits decided per paper: no benchmark's validation query is another's test query (same corpus and seed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specter_utils.benchmark.build import build_benchmark
from specter_utils.benchmark.splits import (
    cross_split_overlap,
    draw_queries,
    query_split,
    query_split_problems,
    ranking_splits,
)
from specter_utils.cli import main
from specter_utils.data.synthetic import generate_synthetic_corpus


@pytest.fixture(scope="module")
def two_sizes(tmp_path_factory) -> dict[int, Path]:
    """One corpus and seed, benchmarks built with two values of n_queries (a report's and a study's)."""
    corpus = generate_synthetic_corpus(n_papers=400, n_topics=3, seed=5)
    root = tmp_path_factory.mktemp("sizes")
    out = {}
    for n in (20, 50):
        build_benchmark(corpus, root / f"n{n}", seed=2, n_queries=n)
        out[n] = root / f"n{n}"
    return out


def _by_split(folder: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"val": set(), "test": set()}
    for splits in ranking_splits(folder).values():
        for split, queries in splits.items():
            out[split] |= queries
    return out


def test_no_validation_query_of_one_size_is_a_test_query_of_the_other(two_sizes) -> None:
    small, large = _by_split(two_sizes[20]), _by_split(two_sizes[50])
    assert small["val"] and small["test"] and large["val"] and large["test"]
    assert not small["val"] & large["test"]
    assert not small["test"] & large["val"]
    # a larger benchmark holds every query of a smaller one, each in the same split
    assert small["val"] <= large["val"] and small["test"] <= large["test"]
    assert cross_split_overlap(two_sizes[20], two_sizes[50])["val_test_overlap"] == 0


def test_every_query_sits_in_the_split_its_own_draw_gives(two_sizes) -> None:
    for folder in two_sizes.values():
        problems = query_split_problems(folder)
        assert problems is not None and problems["per_paper"] and problems["off_rule"] == 0
        assert problems["queries"] == len(set().union(*_by_split(folder).values()))


def test_the_draw_is_a_property_of_the_paper_alone() -> None:
    papers = [f"p{i}" for i in range(200)]
    assert draw_queries(papers, 30, 1, 0.2) == draw_queries(list(reversed(papers)), 30, 1, 0.2)
    assert set(draw_queries(papers, 30, 1, 0.2)) <= set(draw_queries(papers, 60, 1, 0.2))
    assert draw_queries(papers, 30, 1, 0.2) != draw_queries(papers, 30, 2, 0.2)
    drawn = draw_queries(papers, 30, 1, 0.2)  # exact split sizes where the papers exist
    assert len(drawn) == 30 and sum(query_split(p, 1, 0.2) == "val" for p in drawn) == 6
    shares = [query_split(p, 0, 0.2) == "val" for p in (f"x{i}" for i in range(5000))]
    assert 0.17 < sum(shares) / len(shares) < 0.23


def test_audit_checks_the_splits_and_fails_on_a_moved_query(two_sizes, tmp_path, capsys) -> None:
    assert main(["data", "audit", "--benchmark", str(two_sizes[20]), "--against", str(two_sizes[50])]) == 0
    assert "no validation query of one is a test query of another across 2 benchmarks" in capsys.readouterr().out
    moved = tmp_path / "moved"
    shutil.copytree(two_sizes[50], moved)
    cite = moved / "scidocs" / "cite"
    val_lines = (cite / "val.qrel").read_text().splitlines(keepends=True)
    query = sorted(ranking_splits(two_sizes[20])["cite"]["val"])[0]  # a validation query of both benchmarks
    kept = [line for line in val_lines if line.split()[0] != query]
    (cite / "val.qrel").write_text("".join(kept))
    with (cite / "test.qrel").open("a") as out:
        out.writelines(line for line in val_lines if line.split()[0] == query)
    assert main(["data", "audit", "--benchmark", str(moved)]) == 1
    assert "1 of" in capsys.readouterr().out
    assert main(["data", "audit", "--benchmark", str(two_sizes[20]), "--against", str(moved)]) == 1
    printed = capsys.readouterr().out
    assert "validation queries in one of" in printed and query in printed
    assert json.loads((two_sizes[20] / "benchmark.json").read_text())["split"]["query_rule"].startswith("per paper")
