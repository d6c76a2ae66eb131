"""Two models' results on the same SciRepEval-format folder, task by task: the difference of each task's main score
(``row - reference``, x 100), its 95% paired-bootstrap interval and a two-sided permutation p.

- proximity, adhoc_search: the per-query scores (``per_query``) through :func:`evaluation.paired.paired_test`
  (queries resampled; each query's two scores swapped for the permutation p);
- classification: the test papers' labels (``per_paper``); single-label macro-F1 through
  :func:`evaluation.deltas.paired_f1_delta`, multi-label macro-F1 over the binarized labels with the same scheme;
- regression: Kendall's tau of the test papers' predictions; papers resampled with the same indices for both
  models, each paper's two predictions swapped for the permutation p.

Only the items both results cover are paired; a task with fewer than two is reported without a test."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from scipy import stats
from scipy.stats import kendalltau

from specter_utils.errors import DataError
from specter_utils.evaluation.deltas import _papers_bootstrap, paired_f1_delta
from specter_utils.evaluation.formats.tasks import CLASSIFICATION, REGRESSION
from specter_utils.evaluation.paired import paired_test

DECIMALS = 4  # a comparison's numbers as written


def multi_label_macro_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Macro-F1 x 100 of two indicator matrices (papers x labels), as scikit-learn's ``f1_score(average="macro")``:
    every column counts, one with nothing true and nothing predicted as 0."""
    tp = (truth & predicted).sum(axis=0).astype(float)
    denominator = truth.sum(axis=0) + predicted.sum(axis=0)
    f1 = np.divide(2 * tp, denominator, out=np.zeros_like(tp), where=denominator > 0)
    return 100.0 * float(f1.mean())


def kendall_tau(truth: np.ndarray, predicted: np.ndarray) -> float:
    """Kendall's tau-b x 100 (scipy); 0 where it is undefined (a resample with constant values)."""
    value = kendalltau(truth, predicted).statistic
    return 100.0 * float(value) if np.isfinite(value) else 0.0


def paired_papers_delta(
    truth: np.ndarray,
    predicted: np.ndarray,
    reference: np.ndarray,
    metric: Callable[[np.ndarray, np.ndarray], float],
    n_resamples: int = 5_000,
    seed: int = 0,
) -> dict[str, float]:
    """``metric(truth, predicted) - metric(truth, reference)`` over the same papers (first axis), with a 95%
    percentile bootstrap CI (papers resampled, both models on the same resample) and a two-sided permutation p
    (each paper's two predictions swapped or not)."""
    n = len(truth)
    if not n == len(predicted) == len(reference):
        raise ValueError(f"{n} true values but {len(predicted)} and {len(reference)} predictions")
    if np.array_equal(predicted, reference):
        return {"diff": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p": 1.0, "papers": n}
    rng = np.random.default_rng(seed)

    def statistic(i: np.ndarray) -> float:
        return metric(truth[i], predicted[i]) - metric(truth[i], reference[i])

    low, high = _papers_bootstrap(statistic, n, n_resamples, rng)
    both = np.concatenate([predicted, reference])

    def swapped(x: np.ndarray, y: np.ndarray) -> float:  # x[j], y[j]: which model's prediction of paper j
        return metric(truth, both[x.astype(int)]) - metric(truth, both[y.astype(int)])

    sides = (np.arange(n), np.arange(n) + n)
    options = {"permutation_type": "samples", "n_resamples": n_resamples, "vectorized": False, "random_state": rng}
    perm = stats.permutation_test(sides, swapped, **options)
    return {"diff": statistic(np.arange(n)), "ci_low": low, "ci_high": high, "p": float(perm.pvalue), "papers": n}


def _paired_papers(task: str, row: Mapping[str, Any], reference: Mapping[str, Any]) -> tuple[list, list, list]:
    """True values and both models' predictions of the test papers both cover, in the row's order."""
    ref = dict(zip(reference["ids"], zip(reference["true"], reference["predicted"], strict=True), strict=True))
    truth, a, b = [], [], []
    for pid, true, predicted in zip(row["ids"], row["true"], row["predicted"], strict=True):
        if pid not in ref:
            continue
        if ref[pid][0] != true:
            raise DataError(f"task {task!r}: the two results disagree on the true value of a test paper", record_id=pid)
        truth.append(true)
        a.append(predicted)
        b.append(ref[pid][1])
    return truth, a, b


def _supervised_test(task: str, row: Mapping[str, Any], reference: Mapping[str, Any], n_resamples: int, seed: int):
    truth, a, b = _paired_papers(task, row["per_paper"], reference["per_paper"])
    if len(truth) < 2:
        return None, len(truth)
    if row["type"] == REGRESSION:
        arrays = (np.asarray(v, dtype=float) for v in (truth, a, b))
        return paired_papers_delta(*arrays, kendall_tau, n_resamples, seed), len(truth)
    if not row.get("multi_label"):
        return paired_f1_delta(truth, a, b, n_resamples, seed), len(truth)
    classes = sorted(set(row["per_paper"].get("classes", ())) | {c for labels in truth + a + b for c in labels})
    column = {label: j for j, label in enumerate(classes)}

    def binarize(rows: list[list[str]]) -> np.ndarray:
        matrix = np.zeros((len(rows), len(classes)), dtype=bool)
        for i, labels in enumerate(rows):
            matrix[i, [column[label] for label in labels]] = True
        return matrix

    arrays = (binarize(v) for v in (truth, a, b))
    return paired_papers_delta(*arrays, multi_label_macro_f1, n_resamples, seed), len(truth)


def compare_task(
    name: str, row: Mapping[str, Any], reference: Mapping[str, Any], n_resamples: int = 5_000, seed: int = 0
) -> dict[str, Any]:
    """One task of two results: both scores, ``delta`` with ``ci_low``/``ci_high``, ``p`` and ``n`` (queries or
    papers paired); without per-item scores or with fewer than two paired items, ``delta`` is None and ``reason``
    says why."""
    supervised = row["type"] in (CLASSIFICATION, REGRESSION)
    kind = {"type": row["type"], "multi_label": bool(row.get("multi_label")), "metric": row["main_score"]}
    unit = "papers" if supervised else "queries"
    scores = {"score": row["score"], "reference_score": reference["score"], "unit": unit}
    entry: dict[str, Any] = {**kind, **scores}
    key = "per_paper" if supervised else "per_query"
    if key not in row or key not in reference:
        return {**entry, "delta": None, "n": 0, "reason": f"a result without {key} (scored before it was kept)"}
    if supervised:
        test, n = _supervised_test(name, row, reference, n_resamples, seed)
    else:
        n = len(set(row["per_query"]) & set(reference["per_query"]))
        test = paired_test(row["per_query"], reference["per_query"], n_resamples, seed) if n >= 2 else None
    if test is None:
        return {**entry, "delta": None, "n": n, "reason": f"{n} {entry['unit']} paired, a test needs 2"}
    names = {"delta": "diff", "ci_low": "ci_low", "ci_high": "ci_high", "p": "p"}
    return {**entry, **{key: round(test[name], DECIMALS) for key, name in names.items()}, "n": n}


def compare_results(
    row: Mapping[str, Any], reference: Mapping[str, Any], n_resamples: int = 5_000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """:func:`compare_task` for every task of ``row`` (a ``score_formats`` result) that ``reference`` scored too."""
    return {
        name: compare_task(name, task, reference["tasks"][name], n_resamples, seed)
        for name, task in row["tasks"].items()
        if name in reference["tasks"]
    }
