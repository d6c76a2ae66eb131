"""The whole evaluate path on a tiny SCIDOCS directory (written with data.scidocs), the CLI, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specter_utils.cli import main
from specter_utils.data.scidocs import RecommClick, ScidocsData, scidocs_record, write_scidocs_dir
from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.suite import evaluate, scidocs_metrics
from specter_utils.presentation.tables import HEADERS, comparison_table, to_markdown

ORIGINAL_KEYS = {  # scidocs.get_scidocs_metrics
    "mag": {"f1"},
    "mesh": {"f1"},
    "co-view": {"map", "ndcg"},
    "co-read": {"map", "ndcg"},
    "cite": {"map", "ndcg"},
    "co-cite": {"map", "ndcg"},
    "recomm": {"adj-NDCG", "adj-P@1"},
}


def tiny_scidocs(root: Path) -> EmbeddingSet:
    """Every task, a few papers each, and embeddings that cover all but a few of them."""
    rng = np.random.default_rng(0)
    ids, vectors = [], []

    def paper(pid: str, centre: np.ndarray, scale: float = 0.3) -> str:
        ids.append(pid)
        vectors.append(centre + rng.normal(scale=scale, size=centre.shape))
        return pid

    centres = rng.normal(size=(3, 8)) * 3
    data = ScidocsData(root=root)
    meta_cls, meta_rank, meta_rec = {}, {}, {}
    for task in ("mag", "mesh"):
        rows = [(paper(f"{task}{i}", centres[i % 3]), f"L{i % 3}") for i in range(60)]
        for pid, _ in rows:
            meta_cls[pid] = scidocs_record(pid, f"title {pid}")
        data.classification[task] = {"train": rows[:36], "val": rows[36:42], "test": rows[42:]}
    for task in ("coview", "coread", "cite", "cocite"):
        qrels = {}
        for q in range(4):
            c = centres[q % 3]
            qid = paper(f"{task}q{q}", c)
            pos = [paper(f"{task}q{q}p{j}", c) for j in range(2)]
            neg = [paper(f"{task}q{q}n{j}", centres[(q + 1) % 3]) for j in range(4)]
            qrels[qid] = {**dict.fromkeys(pos, 1), **dict.fromkeys(neg, 0)}
            for pid in [qid, *pos, *neg]:
                meta_rank[pid] = scidocs_record(pid, f"title {pid}")
        data.ranking[task] = {"val": qrels, "test": qrels}
    clicks = []
    for q in range(24):
        c = centres[q % 3]
        qid = paper(f"rq{q}", c)
        shown = [paper(f"rq{q}s{j}", c if j == q % 4 else centres[(q + 1) % 3], 1.0) for j in range(4)]
        clicks.append(RecommClick(qid, shown[q % 4], shown))
        for pid in [qid, *shown]:
            meta_rec[pid] = scidocs_record(pid, f"title {pid}", year=2010)
    data.recomm = {"train": clicks[:14], "val": clicks[14:18], "test": clicks[18:]}
    data.propensity_scores = [1.0, 0.8, 0.6, 0.5]
    data.metadata = {"mag_mesh": meta_cls, "view_cite_read": meta_rank, "recomm": meta_rec}
    write_scidocs_dir(root, data)
    return EmbeddingSet(ids, np.asarray(vectors, dtype=np.float32))


@pytest.fixture(scope="module")
def scidocs(tmp_path_factory) -> tuple[Path, EmbeddingSet]:
    root = tmp_path_factory.mktemp("scidocs")
    return root, tiny_scidocs(root)


@pytest.fixture(scope="module")
def full_result(scidocs) -> dict:
    root, emb = scidocs
    keep = [i for i, pid in enumerate(emb.ids) if pid not in {"mag0", "citeq0", "citeq1n0", "rq0"}]
    partial = EmbeddingSet([emb.ids[i] for i in keep], emb.vectors[keep])
    return evaluate(root, partial, recomm_seeds=(1, 2))


def test_result_keys_identical_to_the_original(full_result):
    metrics = scidocs_metrics(full_result)
    assert {k: set(v) for k, v in metrics.items()} == ORIGINAL_KEYS
    assert list(metrics) == list(ORIGINAL_KEYS)
    for values in metrics.values():
        for value in values.values():
            assert isinstance(value, float) and 0 <= value <= 100 and value == round(value, 2)
    assert full_result["mag"]["f1"] == 100.0 and full_result["co-cite"]["map"] == 100.0
    assert set(full_result["details"]["recomm"]["spread"]["adj-NDCG"]) >= {"mean", "std", "values"}
    json.dumps(full_result)  # JSON-serialisable as it is


def test_coverage_counts_missing_embeddings(full_result):
    cov = full_result["coverage"]
    assert cov["mag"]["train"] == {
        "papers": 36,
        "papers_with_embedding": 35,
        "zero_filled": 1,
        "example_missing": ["mag0"],
    }
    assert cov["mesh"]["test"]["zero_filled"] == 0
    assert (cov["cite"]["queries"], cov["cite"]["queries_evaluated"]) == (4, 3)
    # citeq0 (a query) is skipped; citeq1n0 (a non-relevant candidate of an evaluated query) is counted
    assert (cov["cite"]["candidates_missing"], cov["cite"]["relevant_candidates_missing"]) == (1, 0)
    assert cov["co-view"]["queries_evaluated"] == 4
    assert cov["recomm"]["train"]["queries_with_embedding"] == 13


def test_missing_candidate_is_counted(scidocs):
    root, emb = scidocs
    keep = [i for i, pid in enumerate(emb.ids) if pid != "citeq1n0"]
    result = evaluate(root, EmbeddingSet([emb.ids[i] for i in keep], emb.vectors[keep]), tasks=["cite"])
    assert result["coverage"]["cite"]["candidates_missing"] == 1
    assert list(scidocs_metrics(result)) == ["cite"]


def test_absent_tasks_are_skipped_saying_so(tmp_path, caplog):
    root = tmp_path / "part"
    emb = tiny_scidocs(tmp_path / "whole")
    (root / "cite").mkdir(parents=True)
    (root / "cite" / "test.qrel").write_text((tmp_path / "whole/cite/test.qrel").read_text())
    with caplog.at_level("WARNING"):
        result = evaluate(root, emb)
    assert list(scidocs_metrics(result)) == ["cite"]
    assert set(result["skipped"]) == {
        *("mag", "mesh", "co-view", "co-read", "co-cite", "recomm", "cite (matched)", "co-cite (matched)")
    }
    assert "skipping mag: files not found" in caplog.text


def test_three_embedding_files_like_the_original(scidocs, tmp_path):
    root, emb = scidocs
    path = tmp_path / "all.jsonl"
    write_embeddings(path, emb)
    result = evaluate(root, {"user-citation": path}, tasks=None)
    assert set(scidocs_metrics(result)) == {"co-view", "co-read", "cite", "co-cite"}
    assert result["skipped"]["mag"] == "no cls embeddings given"


def test_comparison_table_in_table1_order(full_result):
    frame = comparison_table(full_result, ["SPECTER", "Random"])
    # beside the protocol's MAG and MeSH F1: the macro-F1 at the C the same CV chooses by macro-F1, out of avg
    by_f1 = ["MAG F1 (C by CV macro-F1)", "MeSH F1 (C by CV macro-F1)"]
    assert list(frame.columns) == [*HEADERS, *by_f1, "avg", "paper avg"]
    assert frame.loc["ours", by_f1[0]] == full_result["details"]["mag"]["by_macro_f1"]["f1"]
    assert list(frame.index) == ["ours", "SPECTER (paper)", "Random (paper)"]
    assert frame.loc["SPECTER (paper)", "paper avg"] == 80.2
    assert frame.loc["SPECTER (paper)", "avg"] == pytest.approx(80.17, abs=0.01)  # mean of the 12 metrics
    ours = [full_result[k][m] for k, ms in ORIGINAL_KEYS.items() for m in sorted(ms, key=str.lower)]
    assert frame.loc["ours", "avg"] == pytest.approx(round(sum(ours) / 12, 2))
    markdown = to_markdown(frame)
    assert markdown.splitlines()[0].startswith("| model | MAG F1 | MeSH F1 | co-view MAP")
    partial = comparison_table({"cite": {"map": 50.0, "ndcg": 70.0}}, ["SPECTER"])
    assert partial.loc["SPECTER (paper)", "avg"] == pytest.approx((88.4 + 94.9) / 2, abs=0.01)


# ---------------------------------------------------------------- CLI and bad input
def test_cli_writes_results_and_prints_the_table(scidocs, tmp_path, capsys):
    root, emb = scidocs
    path = tmp_path / "emb.jsonl"
    write_embeddings(path, emb)
    out = tmp_path / "results.json"
    args = ["evaluate", "--data-dir", str(root), "--embeddings", str(path), "--tasks", "cite", "co-cite"]
    assert main([*args, "--out", str(out), "--compare", "SPECTER"]) == 0
    saved = json.loads(out.read_text())
    assert saved["cite"] == {"map": 100.0, "ndcg": 100.0} and "coverage" in saved and "config" in saved
    printed = capsys.readouterr().out
    assert "| ours |" in printed and "| SPECTER (paper) |" in printed
    assert not list(tmp_path.glob(".results.json.*"))  # atomic write left no temporary file


def test_cli_lightning_svm_reaches_the_classifier(scidocs, tmp_path):
    root, emb = scidocs
    path = tmp_path / "emb.jsonl"
    write_embeddings(path, emb)
    out = tmp_path / "results.json"
    args = ["evaluate", "--data-dir", str(root), "--embeddings", str(path), "--tasks", "mag", "--out", str(out)]
    assert main([*args, "--svm", "lightning"]) == 0
    saved = json.loads(out.read_text())
    assert saved["details"]["mag"]["solver"]["variant"] == "lightning"
    assert saved["details"]["mag"]["solver"]["tol"] == 1e-3
    assert saved["config"]["classification"]["svm_variant"] == "lightning"
    default = evaluate(root, emb, tasks=["mag"])
    assert default["details"]["mag"]["solver"]["variant"] == "sklearn"
    with pytest.raises(DataError, match="svm_variant"):
        evaluate(root, emb, tasks=["mag"], svm_variant="liblinear")


def bad_lines(kind: str) -> list[str]:
    good = [json.dumps({"paper_id": "citeq0", "embedding": [0.1, 0.2]})]
    return (
        good
        + {
            "malformed": ['{"paper_id": "p1", "embedding": [0.1,'],
            "mixed dims": [json.dumps({"paper_id": "p1", "embedding": [0.1, 0.2, 0.3]})],
            "nan": ['{"paper_id": "p1", "embedding": [NaN, 0.2]}'],
            "duplicate": [json.dumps({"paper_id": "citeq0", "embedding": [0.1, 0.2]})],
        }[kind]
    )


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("malformed", r"bad\.jsonl:2: invalid JSON"),
        ("mixed dims", r"bad\.jsonl:2 \(id 'p1'\): embedding has 3 dimensions"),
        ("nan", r"bad\.jsonl:2 \(id 'p1'\): embedding contains NaN"),
        ("duplicate", r"bad\.jsonl:2 \(id 'citeq0'\): duplicate paper_id"),
    ],
)
def test_bad_embeddings_are_one_line_errors(scidocs, tmp_path, capsys, kind, expected):
    root, _ = scidocs
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(bad_lines(kind)) + "\n")
    code = main(["evaluate", "--data-dir", str(root), "--embeddings", str(path), "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("specter-utils evaluate: error: ")
    import re

    assert re.search(expected, err), err
    assert not (tmp_path / "r.json").exists()


def test_missing_file_of_a_requested_task_is_named(scidocs, tmp_path, capsys):
    root, emb = scidocs
    copy = tmp_path / "copy"
    (copy / "cite").mkdir(parents=True)
    (copy / "cite" / "test.qrel").write_text((root / "cite" / "test.qrel").read_text())
    path = tmp_path / "emb.jsonl"
    write_embeddings(path, emb)
    code = main(
        [
            "evaluate",
            "--data-dir",
            str(copy),
            "--embeddings",
            str(path),
            "--tasks",
            "cite",
            "mag",
            "--out",
            str(tmp_path / "r.json"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and "mag/train.csv: file not found" in err


def test_malformed_qrel_line_is_named(scidocs, tmp_path, capsys):
    root, emb = scidocs
    copy = tmp_path / "copy"
    (copy / "cite").mkdir(parents=True)
    (copy / "cite" / "test.qrel").write_text("q1 0 p1 1\nq1 0 p2 maybe\n")
    path = tmp_path / "emb.jsonl"
    write_embeddings(path, emb)
    code = main(["evaluate", "--data-dir", str(copy), "--embeddings", str(path), "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "cite/test.qrel:2 (id 'q1'): relevance 'maybe' is not an integer" in err
