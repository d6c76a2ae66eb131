"""Each row's difference to a reference row, per task, with a 95% paired-bootstrap interval: what a forest plot draws.

One long format for every comparison (``Delta``): ranking tasks from per-query AP (``evaluation.paired``,
queries averaged over seeds; notebook 07's Table 2 by ``evaluation.hierarchical``, seeds and queries resampled),
classification from the predicted labels of the same test papers (macro-F1 of a bootstrap resample of the papers,
both rows on the same resample; notebook 08's heads by ``evaluation.hierarchical``, seeds and papers resampled,
every comparison of the notebook one Holm family)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from specter_utils.data.scidocs import (
    CLASSIFICATION_TASKS,
    RANKING_TASKS,
    available_tasks,
    read_classification_splits,
    read_scidocs_dir,
)
from specter_utils.evaluation.hierarchical import adjust_family, macro_f1_test
from specter_utils.evaluation.paired import compare_rows, score_row
from specter_utils.evaluation.suite import RESULT_KEYS

PREDICTION_KEYS = ("test_labels", "test_predicted")  # the per-paper labels a classifier's row carries (heads_deltas)


@dataclass
class Delta:
    """``row - reference`` on one task's metric (x 100), its 95% paired-bootstrap CI and two-sided p."""

    row: str
    reference: str
    task: str
    metric: str
    diff: float
    ci_low: float
    ci_high: float
    p: float | None = None
    n: int = 0  # queries or papers paired
    p_adjusted: float | None = None  # Holm over the comparison's family (evaluation.hierarchical), where it has one
    method: str = ""  # evaluation.hierarchical.METHOD for its test; "" for the per-query test of evaluation.paired
    seeds: int = 0  # the row's seeds and the reference's, where the test resampled them
    reference_seeds: int = 0

    @classmethod
    def of(cls, item: Delta | Mapping[str, Any]) -> Delta:
        """``item`` itself, or the Delta its dict (``as_dict``, as metrics.json keeps it) describes."""
        return item if isinstance(item, cls) else cls(**{k: item[k] for k in cls.__dataclass_fields__ if k in item})

    @property
    def interval(self) -> str:
        """``+1.23 [+0.45, +2.01]``: the difference and its 95% interval."""
        return f"{self.diff:+.2f} [{self.ci_low:+.2f}, {self.ci_high:+.2f}]"

    @property
    def excludes_zero(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0

    @property
    def detected(self) -> bool:
        """The one reading rule where the test has an adjusted p (``evaluation.hierarchical.verdict``: adjusted p
        under 0.05); otherwise the interval excluding 0."""
        if self.p_adjusted is not None:
            return self.p_adjusted < 0.05
        return self.excludes_zero

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _delta(row: str, reference: str, task: str, metric: str, test: Mapping[str, Any], n: int) -> Delta:
    """The Delta of a test's dict: ``diff``, ``ci_low``, ``ci_high``, ``p`` and, where it has them, ``p_adjusted``,
    ``method`` and the two rows' seeds."""
    seeds = (test.get("seeds", 0), test.get("reference_seeds", 0))
    interval = (test["diff"], test["ci_low"], test["ci_high"], test["p"])
    return Delta(row, reference, task, metric, *interval, n, test.get("p_adjusted"), test.get("method", ""), *seeds)


def from_paired(comparison: Mapping[str, Any], reference: str, metric: str = "MAP") -> list[Delta]:
    """Deltas from ``paired.compare_rows``'s result (or ``workflow.ablations.ablation_statistics``' ``paired``); tasks under
    their result keys (``co-cite``)."""
    out = []
    for name, entry in comparison.get("rows", {}).items():
        for task, task_stats in entry["tasks"].items():
            test = task_stats["versus"].get(reference)
            if test:
                out.append(_delta(name, reference, RESULT_KEYS.get(task, task), metric, test, test["queries"]))
    return out


def ranking_deltas(
    scidocs_dir: str | Path,
    rows: Mapping[str, Sequence[str | Path]],
    reference: str,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    n_resamples: int = 10_000,
) -> list[Delta]:
    """Per-query AP of each row's embedding files (one per seed) against ``reference``'s, on every ranking task."""
    present = [t for t in available_tasks(scidocs_dir) if t in RANKING_TASKS and (not tasks or t in tasks)]
    data = read_scidocs_dir(scidocs_dir, present or None)
    qrels = {t: data.ranking[t][split] for t in present if split in data.ranking.get(t, {})}
    if not qrels:
        return []
    scored = [score_row(name, files, qrels) for name, files in rows.items()]
    return from_paired(compare_rows(scored, [reference], list(qrels), n_resamples), reference)


def macro_f1(codes_true: np.ndarray, codes_pred: np.ndarray, n_classes: int) -> np.ndarray | float:
    """Macro-F1 x 100 over the classes present in truth or prediction (sklearn's ``average="macro"``); a float for
    one row of papers, an array for a stack of rows (the last axis: papers), as scipy's vectorized resamples give."""
    truth, pred = np.atleast_2d(codes_true), np.atleast_2d(codes_pred)
    rows = truth.reshape(-1, truth.shape[-1]) * n_classes + pred.reshape(-1, pred.shape[-1])
    square = n_classes * n_classes
    offsets = np.arange(len(rows))[:, None] * square
    counts = np.bincount((rows + offsets).ravel(), minlength=len(rows) * square).reshape(-1, n_classes, n_classes)
    tp = np.diagonal(counts, axis1=1, axis2=2).astype(float)
    both = counts.sum(axis=2) + counts.sum(axis=1)  # true + predicted per class
    present = both > 0
    f1 = np.divide(2 * tp, both, out=np.zeros_like(tp), where=present)
    scores = 100.0 * f1.sum(axis=1) / present.sum(axis=1)
    if np.ndim(codes_true) == 1 and np.ndim(codes_pred) == 1:
        return float(scores[0])
    return scores.reshape(np.broadcast_shapes(np.shape(codes_true), np.shape(codes_pred))[:-1])


ROWS_AT_ONCE = 256  # resampled rows scored in one block: memory stays at a few blocks x papers, whatever the resamples


def _by_blocks(score: Callable[..., Any], *stacks: np.ndarray) -> np.ndarray:
    """``score`` over stacks of resampled rows (the last axis: papers) in blocks of ``ROWS_AT_ONCE`` rows, so a
    test's extra memory does not grow with its resamples; a single row is one call."""
    if np.ndim(stacks[0]) == 1:
        return np.asarray(score(*stacks))
    blocks = range(0, len(stacks[0]), ROWS_AT_ONCE)
    return np.concatenate([np.atleast_1d(score(*(s[b : b + ROWS_AT_ONCE] for s in stacks))) for b in blocks])


def _label_codes(*label_lists: Sequence[str]) -> tuple[list[np.ndarray], int]:
    """Each list of labels as integer codes over the sorted union of all of them, and the number of labels."""
    code = {label: i for i, label in enumerate(sorted({str(y) for labels in label_lists for y in labels}))}
    return [np.array([code[str(y)] for y in labels], dtype=int) for labels in label_lists], len(code)


def _papers_bootstrap(
    statistic: Callable[[np.ndarray], Any],
    n_papers: int,
    n_resamples: int,
    rng: np.random.Generator,
    vectorized: bool = False,
) -> tuple[float, float]:
    """95% percentile bootstrap CI of ``statistic(indices)`` over the papers (scipy's ``stats.bootstrap``). With
    ``vectorized``, ``statistic`` takes a stack of index rows (every resample at once) and returns one value per
    row; else one row of indices and a float."""

    def on_indices(i: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(statistic(np.asarray(i, dtype=int)))

    indices = (np.arange(n_papers),)
    boot = stats.bootstrap(
        indices, on_indices, n_resamples=n_resamples, method="percentile", vectorized=vectorized, random_state=rng
    )
    return float(boot.confidence_interval.low), float(boot.confidence_interval.high)


def paired_f1_delta(
    y_true: Sequence[str],
    predicted: Sequence[str],
    predicted_reference: Sequence[str],
    n_resamples: int = 5_000,
    seed: int = 0,
) -> dict[str, float]:
    """Macro-F1 (x 100) of ``predicted`` minus ``predicted_reference`` on the same papers, with a 95% percentile
    bootstrap CI (papers resampled, both rows on the same resample) and a two-sided paired permutation p."""
    (truth, a, b), k = _label_codes(y_true, predicted, predicted_reference)
    if not len(truth) == len(a) == len(b):
        raise ValueError(f"{len(truth)} labels but {len(a)} and {len(b)} predictions")
    diff = macro_f1(truth, a, k) - macro_f1(truth, b, k)
    if np.array_equal(a, b):
        return {"diff": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p": 1.0, "papers": len(truth)}
    rng = np.random.default_rng(seed)

    def statistic(i: np.ndarray) -> np.ndarray:
        return _by_blocks(lambda j: macro_f1(truth[j], a[j], k) - macro_f1(truth[j], b[j], k), i)

    low, high = _papers_bootstrap(statistic, len(truth), n_resamples, rng, vectorized=True)

    def swapped(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:  # each paper's predictions swapped or not
        def diff(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            x, y = x.astype(int), y.astype(int)
            return macro_f1(np.broadcast_to(truth, x.shape), x, k) - macro_f1(np.broadcast_to(truth, y.shape), y, k)

        return _by_blocks(diff, np.asarray(x), np.asarray(y))

    perm = stats.permutation_test(
        (a, b), swapped, permutation_type="samples", n_resamples=n_resamples, vectorized=True, random_state=rng
    )
    return {"diff": diff, "ci_low": low, "ci_high": high, "p": float(perm.pvalue), "papers": len(truth)}


def classification_deltas(
    results: Mapping[str, Mapping[str, Any]],
    reference: str,
    scidocs_dir: str | Path,
    split: str = "test",
    n_resamples: int = 5_000,
) -> list[Delta]:
    """Macro-F1 deltas of every row of ``{row: suite.evaluate result}`` against ``reference`` on mag / mesh,
    from the predictions each result records (``details[task]["predictions"]``, the split's csv order)."""
    out = []
    ref = results[reference]
    for task in CLASSIFICATION_TASKS:
        key = RESULT_KEYS[task]
        ref_pred = (ref.get("details", {}).get(key) or {}).get("predictions")
        if not ref_pred:
            continue
        truth = [label for _, label in read_classification_splits(scidocs_dir, task)[split]]
        for name, result in results.items():
            pred = (result.get("details", {}).get(key) or {}).get("predictions")
            if name == reference or not pred:
                continue
            test = paired_f1_delta(truth, pred, ref_pred, n_resamples)
            out.append(_delta(name, reference, key, "macro-F1", test, len(truth)))
    return out


def seeds_f1_delta(
    y_true: Sequence[str],
    predicted: Sequence[Sequence[str]],
    reference: Sequence[Sequence[str]],
    n_resamples: int = 2_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Mean macro-F1 (x 100) over a row's seeds minus the reference row's, on the same test papers, by the two-level
    bootstrap (``evaluation.hierarchical.macro_f1_test``): papers resampled once for both rows, macro-F1 recomputed
    for every seed, each row's seeds resampled within it (one seed, as the SVM's: that row has no seed level).
    The 95% interval and the two-sided p come from the same resamples and agree."""
    test = macro_f1_test(y_true, predicted, reference, n_resamples, seed).as_dict()
    return {**test, "papers": test["units"]}


def heads_delta_label(encoder: Any, length: Any, papers: Any, head: str, training: str, reference_head: str) -> str:
    """The row name of one :func:`heads_deltas` comparison (what a forest plot shows, and how sentences find it)."""
    where = f"{encoder} @{length}" + (f" ({papers} train)" if papers != "" else "")
    return f"{where}: {head}, {training} vs {reference_head}, frozen"


def heads_deltas(
    rows: Sequence[Mapping[str, Any]], task: str = "mag", n_resamples: int = 2_000, seed: int = 0
) -> list[Delta]:
    """Each classifier of notebook 08 against a frozen head of the same encoder, length and training papers, on
    macro-F1 by :func:`seeds_f1_delta` (seeds and papers resampled): a frozen head or the SVM against the frozen
    ``linear`` head, a head trained end to end against the same head frozen (the like-for-like control). Every
    comparison of ``rows`` is one family: each ``p_adjusted`` is Holm's over all of them.

    ``rows``: the heads' long format (``heads.frozen_heads`` / ``workflow.heads.end_to_end`` rows), each with its
    test labels and predictions (``PREDICTION_KEYS``); rows without them are skipped."""
    labels_key, predicted_key = PREDICTION_KEYS
    groups: dict[tuple, dict[tuple[str, str], list[Mapping[str, Any]]]] = {}
    for row in rows:
        if predicted_key not in row:
            continue
        group = (row.get("encoder", ""), row.get("max_length", ""), row.get("train_papers", ""))
        groups.setdefault(group, {}).setdefault((str(row["head"]), str(row["training"])), []).append(row)
    out, tests = [], []
    for (encoder, length, papers), classifiers in groups.items():
        for (head, training), members in classifiers.items():
            ref_head = head if training == "end to end" else "linear"
            reference = classifiers.get((ref_head, "frozen"))
            if not reference or (head, training) == (ref_head, "frozen"):
                continue
            truth = members[0][labels_key]
            if any(list(r[labels_key]) != list(truth) for r in (*members, *reference)):
                raise ValueError(f"{encoder} at {length}: {head} ({training}) and its reference differ in test papers")
            test = seeds_f1_delta(
                truth, [r[predicted_key] for r in members], [r[predicted_key] for r in reference], n_resamples, seed
            )
            tests.append(test)
            label = heads_delta_label(encoder, length, papers, head, training, ref_head)
            out.append(_delta(label, "the same encoder's frozen head", task, "macro-F1", test, test["papers"]))
    if tests:
        adjust_family(tests)
        for delta, test in zip(out, tests, strict=True):
            delta.p_adjusted = test["p_adjusted"]
    return out
