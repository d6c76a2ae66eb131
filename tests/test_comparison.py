"""The comparison figures and what they draw: paired deltas with CIs, per-class F1, the confusion matrix, the C grid."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score

from specter_utils.evaluation.classification import classify
from specter_utils.evaluation.deltas import (
    Delta,
    from_paired,
    heads_delta_label,
    heads_deltas,
    macro_f1,
    paired_f1_delta,
    seeds_f1_delta,
)
from specter_utils.heads import SVM_HEAD
from specter_utils.presentation import comparison
from specter_utils.presentation.interpret import interpret_heads


def blobs(n: int = 240, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, 6)) * 2.5
    y = np.array([f"class{i % 4}" for i in range(n)])
    X = centres[np.arange(n) % 4] + rng.normal(size=(n, 6))
    return X.astype(np.float32), y


def test_classify_reports_per_class_f1_and_the_confusion_matrix():
    X, y = blobs()
    result = classify(X[:160], y[:160], X[160:], y[160:])
    details = result.as_dict()
    labels = details["confusion"]["labels"]
    assert labels == sorted(set(y))
    expected = confusion_matrix(y[160:], result.predictions, labels=labels)
    assert np.array_equal(np.array(details["confusion"]["matrix"]), expected)
    per_class = f1_score(y[160:], result.predictions, labels=labels, average=None)
    for label, value in zip(labels, per_class, strict=True):
        assert details["per_class"][label]["f1"] == pytest.approx(100 * value, abs=0.01)
        assert details["per_class"][label]["support"] == int(np.sum(y[160:] == label))
    assert set(details["cv_accuracy"]) == {"0.0001", "0.001", "0.01", "0.1", "1", "10", "100"}


def test_macro_f1_equals_sklearn_and_the_paired_delta_is_signed():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 5, size=300)
    good = np.where(rng.random(300) < 0.8, truth, rng.integers(0, 5, size=300))
    bad = np.where(rng.random(300) < 0.4, truth, rng.integers(0, 5, size=300))
    assert macro_f1(truth, good, 5) == pytest.approx(100 * f1_score(truth, good, average="macro"))
    # a stack of resampled rows (as scipy's vectorized bootstrap passes them): one score per row, as row by row,
    # a class absent from a row's truth and prediction left out of that row's mean
    rows = rng.integers(0, 300, size=(6, 300))
    rows[0] = np.flatnonzero(truth != 4)[0]  # one paper repeated: a single class present
    stacked = macro_f1(truth[rows], good[rows], 5)
    assert stacked.shape == (6,)
    for row, value in zip(rows, stacked, strict=True):
        assert value == pytest.approx(100 * f1_score(truth[row], good[row], average="macro"))
    labels = [f"c{v}" for v in truth]
    test = paired_f1_delta(labels, [f"c{v}" for v in good], [f"c{v}" for v in bad], n_resamples=400)
    assert test["ci_low"] > 0 and test["diff"] > test["ci_low"] and test["p"] < 0.01
    same = paired_f1_delta(labels, labels, labels)
    assert same["diff"] == 0 and same["p"] == 1.0


def test_from_paired_uses_result_keys():
    comparison_result = {
        "rows": {
            "no_hard_negatives": {
                "tasks": {
                    "cocite": {
                        "versus": {"specter": {"diff": 0.5, "ci_low": 0.2, "ci_high": 0.9, "p": 0.005, "queries": 160}}
                    }
                }
            },
            "specter": {"tasks": {"cocite": {"versus": {}}}},
        }
    }
    (delta,) = from_paired(comparison_result, "specter")
    assert delta.task == "co-cite" and delta.metric == "MAP" and delta.excludes_zero


def test_delta_forest_axis_names_what_is_plotted():
    deltas = [
        Delta("trained", "base", "cite", "MAP", 2.4, 1.1, 3.7, 0.001, 160),
        Delta("trained", "base", "co-cite", "MAP", 1.9, -0.2, 3.5, 0.08, 160),
        Delta("sgc", "base", "cite", "MAP", -1.3, -2.5, -0.1, 0.03, 160).as_dict(),
    ]
    fig = comparison.delta_forest(deltas)
    ax = fig.axes[0]
    assert "difference to base" in ax.get_xlabel() and "95% paired-bootstrap CI" in ax.get_xlabel()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["trained", "sgc"]
    xmin, xmax = ax.get_xlim()
    assert xmin < -2.5 and xmax > 3.7  # every interval inside the axis, 0 on it
    with pytest.raises(ValueError):
        comparison.delta_forest([])


def test_svm_variants_protocol_matches_classify_and_each_variant_changes_one_setting():
    from specter_utils.evaluation.svm_variants import VARIANTS, svm_variants

    X, y = blobs(n=200, seed=3)
    rows = svm_variants(X[:140], y[:140], X[140:], y[140:], ["SCIDOCS protocol", "C by CV macro-F1"])
    ours = classify(X[:140], y[:140], X[140:], y[140:])
    assert rows["SCIDOCS protocol"]["macro_f1"] == pytest.approx(ours.f1, abs=0.01)
    assert rows["SCIDOCS protocol"]["C"] == ours.best_c
    assert rows["C by CV macro-F1"]["cv_scoring"] == "f1_macro"
    assert rows["C by CV macro-F1"]["cv_score"] != rows["SCIDOCS protocol"]["cv_score"]
    # the protocol's row carries the same CV's macro-F1 choice, which is the "C by CV macro-F1" row's
    by_f1 = rows["SCIDOCS protocol"]["by_macro_f1"]
    assert by_f1["C"] == rows["C by CV macro-F1"]["C"] and by_f1["f1"] == rows["C by CV macro-F1"]["macro_f1"]
    weighted = svm_variants(X[:140], y[:140], X[140:], y[140:], ["class_weight balanced"])["class_weight balanced"]
    assert weighted["classes_predicted"] == 4 and len(weighted["cv_score"]) == 7
    assert len(rows["SCIDOCS protocol"]["cv_score"]) == 7
    assert VARIANTS["standardised inputs"] == {"standardise": True}


def test_deltas_from_two_suite_results(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_eval_suite import tiny_scidocs

    from specter_utils.embedding.io import EmbeddingSet
    from specter_utils.evaluation.deltas import classification_deltas, ranking_deltas
    from specter_utils.evaluation.suite import evaluate

    good = tiny_scidocs(tmp_path)
    noisy = EmbeddingSet(good.ids, np.random.default_rng(5).normal(size=good.vectors.shape).astype(np.float32))
    tasks = ["mag", "cite"]
    results = {name: evaluate(tmp_path, emb, tasks=tasks) for name, emb in (("good", good), ("noisy", noisy))}
    assert len(results["good"]["details"]["mag"]["predictions"]) == results["good"]["details"]["mag"]["n_eval"]
    (mag,) = classification_deltas(results, "noisy", tmp_path, n_resamples=300)
    assert mag.task == "mag" and mag.metric == "macro-F1" and mag.row == "good"
    assert mag.diff == pytest.approx(results["good"]["mag"]["f1"] - results["noisy"]["mag"]["f1"], abs=0.01)
    from specter_utils.embedding.io import write_embeddings

    files = {}
    for name, emb in (("good", good), ("noisy", noisy)):
        files[name] = [tmp_path / f"{name}.jsonl"]
        write_embeddings(files[name][0], emb)
    cite = next(d for d in ranking_deltas(tmp_path, files, "noisy", n_resamples=300) if d.task == "cite")
    assert cite.diff == pytest.approx(results["good"]["cite"]["map"] - results["noisy"]["cite"]["map"], abs=0.01)


# ---------------------------------------------------------------- 08: heads, paired over the test papers
def _head_row(head: str, training: str, seed, truth: list[str], predicted: list[str], **extra) -> dict:
    return {
        "encoder": "trained",
        "max_length": 64,
        "train_papers": 40,
        **extra,
        "head": head,
        "training": training,
        "seed": seed,
        "macro_f1": 100 * f1_score(truth, predicted, average="macro"),
        "test_labels": truth,
        "test_predicted": predicted,
    }


def test_seeds_f1_delta_averages_seeds_and_its_interval_and_p_agree():
    rng = np.random.default_rng(0)
    truth = list(rng.choice(["a", "b", "c"], 300))
    good = [[y if rng.random() < 0.9 else "a" for y in truth] for _ in range(3)]
    poor = [[y if rng.random() < 0.5 else "a" for y in truth]]
    test = seeds_f1_delta(truth, good, poor, n_resamples=300)
    expected = np.mean([macro_f1(*_codes(truth, p)) for p in good]) - macro_f1(*_codes(truth, poor[0]))
    assert test["diff"] == pytest.approx(expected) and test["diff"] > 20
    assert test["ci_low"] < test["diff"] < test["ci_high"] and test["ci_low"] > 0 and test["papers"] == 300
    assert test["p"] < 0.05  # the interval excludes 0, so the p from the same resamples is under 0.05
    same = seeds_f1_delta(truth, poor, poor, n_resamples=50)
    assert same["diff"] == 0 and same["ci_low"] == 0 and same["ci_high"] == 0 and same["p"] == 1.0
    with pytest.raises(ValueError, match="300 labels"):
        seeds_f1_delta(truth, [truth[:10]], poor)


def _codes(truth: list[str], predicted: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    labels = sorted({*truth, *predicted})
    code = {label: i for i, label in enumerate(labels)}
    return np.array([code[y] for y in truth]), np.array([code[y] for y in predicted]), len(labels)


def test_heads_deltas_pick_the_like_for_like_reference_and_feed_the_sentences():
    rng = np.random.default_rng(1)
    truth = list(rng.choice(["a", "b", "c", "d"], 200))
    noisy = lambda p: [y if rng.random() < p else "a" for y in truth]  # noqa: E731
    rows = [_head_row(SVM_HEAD, "frozen", None, truth, noisy(0.3))]
    rows += [_head_row("linear", "frozen", s, truth, noisy(0.8)) for s in range(3)]
    rows += [_head_row("1x64", "frozen", s, truth, noisy(0.8)) for s in range(3)]
    rows += [_head_row("1x64", "end to end", s, truth, noisy(0.95)) for s in range(3)]
    rows.append({**_head_row("linear", "frozen", 0, truth, truth), "train_papers": 99})  # another group, no pair
    deltas = {d.row: d for d in heads_deltas(rows, n_resamples=300)}
    svm = heads_delta_label("trained", 64, 40, SVM_HEAD, "frozen", "linear")
    e2e = heads_delta_label("trained", 64, 40, "1x64", "end to end", "1x64")
    assert set(deltas) == {svm, heads_delta_label("trained", 64, 40, "1x64", "frozen", "linear"), e2e}
    assert deltas[svm].ci_high < 0 and deltas[e2e].ci_low > 0 and deltas[svm].p < 0.05
    assert deltas[svm].task == "mag" and deltas[svm].metric == "macro-F1" and deltas[svm].n == 200
    # the notebook's comparisons are one family: each adjusted p is Holm's over the three, never below the raw p
    assert all(d.p_adjusted is not None and d.p_adjusted >= d.p for d in deltas.values())
    assert (deltas[svm].seeds, deltas[svm].reference_seeds) == (1, 3)
    text = interpret_heads(rows, deltas=list(deltas.values()))
    svm_line = next(line for line in text.splitlines() if "linear SVM" in line and "40 training papers" in line)
    assert "scores lower than the linear head" in svm_line and "95% interval [" in svm_line
    assert "adjusted p" in svm_line and "one seed of the linear SVM" in svm_line  # the SVM has no seed level
    e2e_line = next(line for line in text.splitlines() if "end to end" in line)
    assert "scores higher than the same head on the frozen encoder" in e2e_line and "95% interval [" in e2e_line
    comparison.delta_forest(list(deltas.values()))  # draws them
    other = [r for r in rows if r["train_papers"] == 40 and r["head"] != "linear"]
    assert [d.row for d in heads_deltas(other, n_resamples=50)] == [e2e]  # without a frozen linear head, only e2e
    mismatched = [*rows[:4], {**rows[4], "test_labels": truth[::-1]}]
    with pytest.raises(ValueError, match="differ in test papers"):
        heads_deltas(mismatched)
