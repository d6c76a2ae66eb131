"""The real SciRepEval samples (``fos_small.json`` + ``fos_labels.txt``, ``mesh_small.json``) converted into the
folder layout and scored with the offline model: multi-label fields of study and single-label MeSH."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from specter_utils.cli import main
from specter_utils.data.scirepeval import read_fos, read_mesh
from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.evaluation.formats.convert import convert_labelled, write_tasks_file
from specter_utils.evaluation.formats.tasks import load_task_data, read_tasks
from specter_utils.workflow.formats import ModelRun, score_formats


@pytest.fixture(scope="module")
def samples(shared_data: Path) -> Path:
    root = shared_data / "scirepeval"
    if not (root / "fos_small.json").is_file() or not (root / "mesh_small.json").is_file():
        pytest.skip(f"SciRepEval samples fos_small.json / mesh_small.json not found under {root}")
    return root


def _labels(path: Path) -> dict[str, str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["paper_id"]: row["label"] for row in csv.DictReader(handle)}


def test_conversion_is_seeded_and_keeps_labels_with_enough_papers(samples, tmp_path) -> None:
    fos = read_fos(samples / "fos_small.json", samples / "fos_labels.txt")
    first = convert_labelled(fos, tmp_path / "a", "fos", multi_label=True, min_count=8, seed=1)
    convert_labelled(fos, tmp_path / "b", "fos", multi_label=True, min_count=8, seed=1)
    convert_labelled(fos, tmp_path / "c", "fos", multi_label=True, min_count=8, seed=2)
    split = {root: _labels(tmp_path / root / "fos" / "test" / "test.csv") for root in "abc"}
    assert split["a"] == split["b"] and split["a"] != split["c"]
    train = _labels(tmp_path / "a" / "fos" / "test" / "train.csv")
    assert not set(train) & set(split["a"])
    labels = {label for joined in [*train.values(), *split["a"].values()] for label in joined.split("|")}
    counts = {name: sum(name in p.extras["labels"] for p in fos.papers.values()) for name in labels}
    assert min(counts.values()) >= 8 and "Art" not in labels  # Art labels one paper of the sample
    assert any("|" in joined for joined in train.values())  # some papers keep two fields of study
    assert first["multi_label"] is True and first["data"] == {"meta": "fos/meta.jsonl", "test": "fos/test"}


def write_samples_folder(samples: Path, root: Path) -> Path:
    fos = convert_labelled(
        read_fos(samples / "fos_small.json", samples / "fos_labels.txt"), root, "fos", multi_label=True, min_count=8
    )
    mesh = convert_labelled(read_mesh(samples / "mesh_small.json"), root, "mesh", multi_label=False, min_count=6)
    write_tasks_file(root, [fos, mesh])
    return root


def test_fos_and_mesh_scored_from_an_embeddings_file(samples, tmp_path, capsys) -> None:
    """TF-IDF vectors of the same texts through ``evaluate --embeddings``: the multi-label route end to end."""
    root = write_samples_folder(samples, tmp_path / "scirepeval")
    papers = {**load_task_data(read_tasks(root)[0]).papers, **load_task_data(read_tasks(root)[1]).papers}
    ids = sorted(papers)
    tfidf = TfidfVectorizer(sublinear_tf=True).fit_transform([papers[p].text(" ") for p in ids])
    vectors = TruncatedSVD(64, random_state=0).fit_transform(tfidf).astype(np.float32)
    write_embeddings(tmp_path / "tfidf.jsonl", EmbeddingSet(ids, vectors))
    out = tmp_path / "r.json"
    argv = ["evaluate", "--embeddings", str(tmp_path / "tfidf.jsonl"), "--data-dir", str(root), "--out", str(out)]
    assert main([*argv, "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["tasks"]["fos"]["multi_label"] is True and result["tasks"]["fos"]["labels"] == 14
    assert result["tasks"]["fos"]["coverage"]["test"] == {"papers": 55, "with_embedding": 55}
    assert 0 < result["tasks"]["fos"]["score"] < 100 and 0 < result["tasks"]["mesh"]["score"] < 100
    assert "| fos | classification (multi-label) | f1_macro |" in capsys.readouterr().out


@pytest.mark.slow
def test_fos_and_mesh_scored_with_the_offline_model(samples, tmp_path) -> None:
    """About 20 s on two busy cores: 334 papers embedded with MiniLM."""
    root = tmp_path / "scirepeval"
    write_samples_folder(samples, root)
    tasks = read_tasks(root)
    assert [(t.name, t.multi_label) for t in tasks] == [("fos", True), ("mesh", False)]
    assert all(isinstance(label, tuple) for _, label in load_task_data(tasks[0]).train)
    result = score_formats(root, model=ModelRun("minilm", max_length=64, progress=False))
    fos_score, mesh_score = result["tasks"]["fos"], result["tasks"]["mesh"]
    assert fos_score["main_score"] == mesh_score["main_score"] == "f1_macro"
    # better than chance: a constant guess of the commonest label scores well under these on macro-F1
    assert fos_score["score"] > 20 and mesh_score["score"] > 20, (fos_score, mesh_score)
    assert result["formats"]["classification"]["average"] == pytest.approx(
        round((fos_score["score"] + mesh_score["score"]) / 2, 2)
    )
