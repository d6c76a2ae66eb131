"""The benchmark builder: SCIDOCS layout, no training paper as a query, zero audited leakage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specter_utils.benchmark.build import build_benchmark
from specter_utils.cli import main as cli_main
from specter_utils.corpus_config import BenchmarkConfig
from specter_utils.data.scidocs import read_scidocs_dir
from specter_utils.data.specter_format import read_specter_dir
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.audit import audit_leakage
from specter_utils.triplets.sampler import mine_dir


def _check_layout(out: Path, min_classes: int) -> dict:
    info = json.loads((out / "benchmark.json").read_text())
    scidocs = read_scidocs_dir(out / "scidocs")
    assert set(scidocs.ranking) == {"cite", "cocite", "cite-matched", "cocite-matched"}
    assert set(scidocs.classification) == {"mag"}
    train = read_specter_dir(out / "train")
    training_papers = set(train.graph) | set(train.metadata) | {c for row in train.graph.values() for c in row}
    queries = set()
    for splits in scidocs.ranking.values():
        assert set(splits) == {"val", "test"}
        for qrels in splits.values():
            for query, docs in qrels.items():
                assert 1 <= sum(docs.values()) <= 5 and len(docs) - sum(docs.values()) == 25
                assert query not in docs
                assert set(docs) <= set(scidocs.metadata["view_cite_read"])  # every candidate has text
        task_queries = {q for qrels in splits.values() for q in qrels}
        assert not task_queries & training_papers  # no training paper is an evaluation query
        queries |= task_queries
    assert len(queries) == info["counts"]["held_out_queries"]
    cite = scidocs.ranking["cite"]["test"]
    refs = scidocs.metadata["view_cite_read"]
    assert all(refs[q]["references"] == [] for q in cite)  # held-out edges are not in the metadata either
    rows = scidocs.classification["mag"]
    assert len({label for split in rows.values() for _, label in split}) >= min_classes
    assert not {p for p, _ in rows["train"]} & {p for p, _ in rows["test"]}
    fields = {"paper_id", "title", "abstract", "authors", "cited_by", "references", "year"}
    assert all(set(r) == fields for r in scidocs.metadata["mag_mesh"].values())
    return info


def test_synthetic_benchmark_parses_and_mined_triplets_do_not_leak(tmp_path: Path) -> None:
    from specter_utils.data.synthetic import generate_synthetic_corpus

    corpus = generate_synthetic_corpus(n_papers=400, seed=1)
    info = build_benchmark(corpus, tmp_path / "b", seed=2)
    assert info["synthetic"] is True and info["seed"] == 2
    _check_layout(tmp_path / "b", min_classes=5)
    metrics = mine_dir(tmp_path / "b" / "train", tmp_path / "mined", SamplerConfig(seed=0))
    assert metrics["train"]["triplets"]["total"] > 0
    audit = audit_leakage(tmp_path / "mined", tmp_path / "b")
    assert audit["leak_free"] and audit["query_overlap"]["distinct_ids"] == 0
    assert audit["evaluation_queries"] == info["counts"]["held_out_queries"]
    again = build_benchmark(corpus, tmp_path / "c", seed=2)
    assert again["counts"] == info["counts"]
    for name in ("cite/test.qrel", "cocite/val.qrel", "mag/train.csv"):
        assert (tmp_path / "b" / "scidocs" / name).read_bytes() == (tmp_path / "c" / "scidocs" / name).read_bytes()


def test_build_benchmark_cli_synthetic(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["build-benchmark", "--corpus", "synthetic", "--out", str(tmp_path), "--n-queries", "40"]) == 0
    counts = json.loads((tmp_path / "benchmark.json").read_text())["counts"]
    assert counts["cite"]["queries"] == counts["cocite"]["queries"] == 40
    assert "SYNTHETIC" in capsys.readouterr().out


@pytest.mark.slow
def test_hepth_benchmark_has_1000_queries_per_task_and_5_venues(hepth_benchmark, tmp_path: Path) -> None:
    info, bench = hepth_benchmark
    counts = info["counts"]
    assert counts["cite"]["queries"] == counts["cocite"]["queries"] == 1000
    assert counts["mag"]["classes"] >= 5
    assert counts["training_leakage"]["leak_free"]
    assert info["corpus"] == "hepth" and info["synthetic"] is False
    _check_layout(bench, min_classes=5)
    mine_dir(bench / "train", tmp_path / "mined")
    audit = audit_leakage(tmp_path / "mined" / "train.jsonl", bench)
    assert audit["leak_free"] and audit["query_overlap"]["distinct_ids"] == 0 and audit["triplets"] > 30_000


def test_max_class_papers_samples_every_class_with_the_same_fraction(tmp_path: Path) -> None:
    from collections import Counter

    from specter_utils.data.synthetic import generate_synthetic_corpus

    corpus = generate_synthetic_corpus(n_papers=400, seed=1)
    full = build_benchmark(corpus, tmp_path / "full", seed=2, n_queries=20)["counts"]["mag"]
    capped = build_benchmark(
        corpus, tmp_path / "capped", seed=2, n_queries=20, config=BenchmarkConfig(max_class_papers=120)
    )["counts"]["mag"]
    assert capped["classes"] == full["classes"] and 0 < capped["sampled_fraction"] < 1
    assert abs(sum(capped[s] for s in ("train", "val", "test")) - 120) <= capped["classes"]
    rows = read_scidocs_dir(tmp_path / "capped" / "scidocs").classification["mag"]
    per_class = Counter(label for split in rows.values() for _, label in split)
    for label, n in per_class.items():  # stratified: each class keeps about the same share
        assert abs(n - capped["sampled_fraction"] * full["class_sizes"][label]) <= 1
    assert set(json.loads((tmp_path / "capped" / "benchmark.json").read_text())["counts"]["mag"]) >= {"train", "test"}
    with pytest.raises(ValueError, match="max_class_papers"):
        build_benchmark(corpus, tmp_path / "bad", seed=2, n_queries=20, config=BenchmarkConfig(max_class_papers=-5))


def test_benchmark_and_triplets_do_not_depend_on_the_string_hash_seed(tmp_path):
    """Two processes with different PYTHONHASHSEED build the same data.json and mine the same triplets (each process
    runs both commands through the command line's main, one after the other)."""
    import os
    import subprocess
    import sys

    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"hash{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        commands = [
            ["build-benchmark", "--corpus", "synthetic", "--out", str(out / "b"), "--n-queries", "20"],
            ["mine", "--data-dir", str(out / "b" / "train"), "--out", str(out / "t")],
        ]
        run = f"from specter_utils.cli import main\nfor argv in {commands!r}:\n    assert main(argv) == 0, argv"
        done = subprocess.run([sys.executable, "-c", run], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs.append(((out / "b" / "train" / "data.json").read_bytes(), (out / "t" / "train.jsonl").read_bytes()))
    assert outputs[0] == outputs[1]
