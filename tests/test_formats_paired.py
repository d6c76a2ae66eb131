"""Two models on the same SciRepEval-format folder: the per-query and per-paper scores each evaluator keeps, the
paired comparison per task (queries or test papers resampled together), its table and sentences, and notebook 05's
trained-vs-base step on a synthetic benchmark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import f1_score
from test_formats import NAMES, _query_topic, _topic, multi_label_folder, topic_vectors, write_folder

from specter_utils.cli import main
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.evaluation.formats.paired import compare_results, multi_label_macro_f1, paired_papers_delta
from specter_utils.evaluation.formats.scoring import score_tasks
from specter_utils.evaluation.formats.tasks import load_task_data, read_tasks
from specter_utils.layout import FORMATS_CACHE_DIR, FORMATS_RESULTS, SCIREPEVAL_DIR
from specter_utils.presentation.formats import comparison_sentences, formats_comparison
from specter_utils.runs import RunPaths
from specter_utils.spec import load_spec
from specter_utils.workflow.formats import compare_formats, score_formats

RESAMPLES = 1_000


def score(folder: Path, noise: float, seed: int = 0) -> dict:
    """Every task of ``folder`` scored with topic vectors (small ``noise``: a model that knows the topics)."""
    tasks = read_tasks(folder)
    data = {t.name: load_task_data(t) for t in tasks}
    ids = sorted({pid for d in data.values() for pid in d.papers})
    vectors = topic_vectors(ids, _topic, noise=noise, seed=seed)
    queries = topic_vectors(["q0", "q1", "q2"], _query_topic, noise=noise, seed=seed + 1)
    return score_tasks(tasks, data, vectors, queries)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_folder(tmp_path_factory.mktemp("paired") / "scirepeval", n=120)


@pytest.fixture(scope="module")
def good(folder) -> dict:
    return score(folder, noise=0.3)


@pytest.fixture(scope="module")
def noisy(folder) -> dict:
    return score(folder, noise=20.0, seed=5)


# ---------------------------------------------------------------- what each evaluator keeps
def test_per_item_scores_give_back_each_tasks_metric(folder, good) -> None:
    tasks = good["tasks"]
    related, search = tasks["related"], tasks["search"]
    assert set(related["per_query"]) == {f"p{i}" for i in range(6)}
    assert np.mean(list(related["per_query"].values())) == pytest.approx(related["metrics"]["map"], abs=0.01)
    assert set(search["per_query"]) == {"q0", "q1", "q2"}  # the query ids, without the joined set's prefix
    assert np.mean(list(search["per_query"].values())) == pytest.approx(search["score"], abs=0.01)

    topic = tasks["topic"]["per_paper"]
    assert topic["ids"] == [f"p{i}" for i in range(36, 120)]
    assert topic["true"] == [_topic(p) for p in topic["ids"]]
    recomputed = 100 * f1_score(topic["true"], topic["predicted"], average="macro")
    assert recomputed == pytest.approx(tasks["topic"]["score"], abs=0.01)

    impact = tasks["impact"]["per_paper"]
    assert impact["ids"] == topic["ids"]
    assert all(isinstance(v, float) and round(v, 5) == v for v in impact["predicted"])
    tau = 100 * kendalltau(impact["true"], impact["predicted"]).statistic
    assert tau == pytest.approx(tasks["impact"]["score"], abs=0.01)
    json.dumps(good)  # the result stays JSON


def test_multi_label_papers_keep_their_label_lists(tmp_path) -> None:
    root, ids, labels, vectors, rng = multi_label_folder(tmp_path)
    task = score_formats(root, embeddings=vectors)["tasks"]["fields"]
    papers = task["per_paper"]
    assert papers["classes"] == sorted(NAMES) and papers["true"] == [labels[p] for p in ids[32:]]
    truth = np.array([[c in t for c in papers["classes"]] for t in papers["true"]])
    predicted = np.array([[c in t for c in papers["classes"]] for t in papers["predicted"]])
    assert multi_label_macro_f1(truth, predicted) == pytest.approx(task["score"], abs=0.01)

    rival = EmbeddingSet(ids, rng.normal(size=(48, 8)).astype(np.float32))
    other = score_formats(root, embeddings=rival)
    test = compare_results({"tasks": {"fields": task}}, other, RESAMPLES)["fields"]
    assert test["n"] == 16 and test["unit"] == "papers"
    assert test["delta"] == pytest.approx(task["score"] - other["tasks"]["fields"]["score"], abs=0.01)
    assert test["ci_low"] <= test["delta"] <= test["ci_high"] and 0 < test["p"] <= 1


def test_multi_label_macro_f1_is_scikit_learns() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        truth, predicted = rng.random((30, 6)) < 0.3, rng.random((30, 6)) < 0.3
        truth[:, 5] = predicted[:, 5] = False  # a label nobody has nor is given counts as 0
        expected = 100 * f1_score(truth, predicted, average="macro", zero_division=0)
        assert multi_label_macro_f1(truth, predicted) == pytest.approx(expected)


# ---------------------------------------------------------------- the paired comparison
def test_a_result_against_itself_differs_by_zero_with_p_one(good) -> None:
    paired = compare_results(good, good, RESAMPLES)
    assert list(paired) == ["topic", "impact", "related", "search"]
    for test in paired.values():
        assert (test["delta"], test["ci_low"], test["ci_high"], test["p"]) == (0.0, 0.0, 0.0, 1.0)
    assert [paired[t]["n"] for t in paired] == [84, 84, 6, 3]
    assert "no 95% paired interval excludes 0" in comparison_sentences(paired, "a", "b")


def test_a_clearly_better_model_wins_with_an_interval_above_zero(good, noisy) -> None:
    paired = compare_results(good, noisy, RESAMPLES)
    for name in ("topic", "impact", "related"):
        test = paired[name]
        assert test["delta"] == pytest.approx(good["tasks"][name]["score"] - noisy["tasks"][name]["score"], abs=0.01)
        assert test["delta"] > 0 and test["ci_low"] > 0 and test["p"] < 0.05, (name, test)
    backwards = compare_results(noisy, good, RESAMPLES)
    for name in ("topic", "impact", "related"):
        assert backwards[name]["delta"] == pytest.approx(-paired[name]["delta"], abs=1e-3)
        assert backwards[name]["ci_high"] < 0
    sentences = comparison_sentences(paired, "good", "noisy")
    assert "the 95% paired interval excludes 0 (higher on topic, impact, related" in sentences
    assert "good scores higher than noisy on impact (kendalltau, 84 papers)" in sentences


def test_regression_papers_are_resampled_together() -> None:
    rng = np.random.default_rng(1)
    truth = rng.normal(size=60)
    close, far = truth + 0.1 * rng.normal(size=60), rng.normal(size=60)
    same = paired_papers_delta(truth, close, close.copy(), lambda t, p: kendalltau(t, p).statistic, RESAMPLES)
    assert same == {"diff": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p": 1.0, "papers": 60}
    better = paired_papers_delta(truth, close, far, lambda t, p: 100 * kendalltau(t, p).statistic, RESAMPLES)
    assert better["ci_low"] > 0 and better["p"] < 0.01
    assert better["diff"] == pytest.approx(100 * (kendalltau(truth, close)[0] - kendalltau(truth, far)[0]))


def test_a_task_without_per_item_scores_is_shown_untested(good) -> None:
    old = {"tasks": {name: {k: v for k, v in task.items() if k not in ("per_query", "per_paper")}
                     for name, task in good["tasks"].items()}}  # fmt: skip
    paired = compare_results(good, old, RESAMPLES)
    assert all(test["delta"] is None and "per_" in test["reason"] for test in paired.values())
    compared = {"row": "good", "reference": "old", "paired": paired}
    assert "not tested: a result without per_paper" in formats_comparison(compared)


# ---------------------------------------------------------------- notebook 05's step, on a synthetic benchmark
def test_compare_formats_scores_trained_and_base_on_the_benchmarks_folder(tmp_path, random_tiny_model) -> None:
    paths = RunPaths.of(tmp_path / "run")
    assert (
        main(["build-benchmark", "--corpus", "synthetic", "--out", str(paths.benchmark_dir), "--n-queries", "30"]) == 0
    )
    spec = load_spec("demo", {"embedding.max_length": 32, "training.base_model": str(random_tiny_model)})
    out = paths.notebook_dir("05_scidocs_eval")
    assert "no trained model" in compare_formats(spec, paths, out)["skipped"]
    shutil.copytree(random_tiny_model, paths.model_dir)  # the same weights: trained and base must tie

    compared = compare_formats(spec, paths, out, n_resamples=200, progress=False)
    assert compared["data_dir"] == str(paths.benchmark_dir / SCIREPEVAL_DIR)
    assert (compared["row"], compared["reference"]) == ("trained", "base")
    assert set(compared["paired"]) == {"citations-received", "same-author", "title-search"}
    for name in ("trained", "base"):
        assert compared["results"][name]["config"]["model"]["max_length"] == 32
    for test in compared["paired"].values():
        assert test["delta"] == 0.0 and test["p"] == 1.0 and test["n"] >= 2
    written = json.loads((out / FORMATS_RESULTS).read_text())
    assert written["paired"] == compared["paired"]
    assert any((out / FORMATS_CACHE_DIR).iterdir()) and not (paths.benchmark_dir / ".embeddings-cache").exists()
    table = formats_comparison(compared)
    assert "| citations-received | regression | kendalltau |" in table and "| trained | base |" in table

    shutil.rmtree(paths.benchmark_dir / SCIREPEVAL_DIR)
    skipped = compare_formats(spec, paths, tmp_path / "elsewhere")
    assert "scirepeval/tasks.jsonl" in skipped["skipped"] and not (tmp_path / "elsewhere").exists()
    assert formats_comparison(skipped).startswith("SciRepEval-format tasks not scored: no scirepeval/")
