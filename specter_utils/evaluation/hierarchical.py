"""One test for two rows that each have seeds and per-unit scores, Holm's correction over a family, one reading rule.

A row is a model trained with one or more seeds, scored unit by unit (a query's AP, a test paper's prediction). The
test is a two-level bootstrap of ``row - reference``: each resample draws the units once, shared by both rows (the
same queries or papers: paired), scores every seed on them, then draws each row's seeds with replacement within the
row. Its 95% interval and its two-sided p come from the same resamples, ``p = 2 min(share <= 0, share >= 0)``
(at least ``1 / B``), and the interval's ends are the order statistics that make "the interval excludes 0" and
"p < 0.05" the same statement.

Two corrections keep the two levels from miscounting. The seeds' scores differ partly because each seed scores
each unit with noise of its own, which the resampled units already carry; so only the seeds' variance beyond that
(their variance less the mean over resamples of the seeds' variance of their unit-resampled change, a method of
moments estimate, at least 0) enters the seed level. And a bootstrap of ``n`` seeds underestimates their variance
by ``(n - 1) / n`` (a third with 3 seeds) and cannot see the heavier tails of a mean of few seeds, so the
resampled seed mean's deviation is scaled up by ``sqrt(n / (n - 1))`` times Student's ``t(0.975, n - 1) / z(0.975)``
(2.2 with 3 seeds, 1.4 with 5): where the seeds dominate, the 95% interval is then as wide as Student's t interval
over the seeds (a bootstrap of 5 seeds alone would otherwise call about 14% of true zero effects, measured on
normal data; with it about 6%). Where the units dominate the seed level adds little and the test is the units'
bootstrap. A row with one seed has no seed level: the test covers the choice of units only, and :func:`covers`
says so.

A family of comparisons (a table's rows x tasks) is read after Holm's step-down correction
(:func:`holm`): "higher" / "lower" only where the adjusted p is under 0.05 (:func:`verdict`,
:func:`reading_sentence`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from specter_utils.evaluation.paired import RowScores, seed_maps

ALPHA = 0.05
N_RESAMPLES = 10_000
CHUNK = 2_000  # resamples drawn at once: bounds the (resamples x units) weight matrix
METHOD = "hierarchical bootstrap"  # what a stored test names itself (a reader tells it from an older test by this)


@dataclass
class HierarchicalTest:
    """``row - reference``: the observed mean difference, its 95% interval and two-sided p from the same resamples."""

    diff: float
    ci_low: float
    ci_high: float
    p: float
    seeds: int  # the row's seeds
    reference_seeds: int
    units: int  # queries or papers, the same for both rows
    n_resamples: int
    method: str = METHOD
    p_adjusted: float | None = None  # Holm over the comparison's family, once the family is known

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def min_resamples(alpha: float = ALPHA) -> int:
    """The fewest resamples for which the interval and the p can agree (the p's floor ``1 / B`` under ``alpha``)."""
    return math.floor(1 / alpha) + 1


def seed_scale(observed: np.ndarray, resampled: np.ndarray) -> float:
    """The factor on a row's resampled seed deviation: Student's small-sample factor ``t(0.975, n - 1) / z(0.975)``
    and ``sqrt(n / (n - 1))`` times the share of the seeds' standard deviation that is seed-level (their variance on the observed units, less the part the unit-level noise of each
    seed explains: the mean over resamples of the seeds' variance of ``resampled - observed``)."""
    n = observed.shape[-1]
    if n < 2:
        return 0.0
    between = float(np.var(observed.ravel(), ddof=1))
    if between <= 0:
        return 0.0
    unit_noise = float(np.mean(np.var(resampled - observed.reshape(1, -1), axis=1, ddof=1)))
    student = float(stats.t.ppf(1 - ALPHA / 2, n - 1) / stats.norm.ppf(1 - ALPHA / 2))
    return student * math.sqrt(n / (n - 1)) * math.sqrt(max(0.0, between - unit_noise) / between)


def _seed_means(per_seed: np.ndarray, scale: float, weights: np.ndarray) -> np.ndarray:
    """Each resample's mean over the seeds (columns), plus ``scale`` times a bootstrap draw's deviation from it."""
    n = per_seed.shape[1]
    mean = per_seed.mean(axis=1)
    if n == 1:
        return mean
    return mean + scale * ((weights * per_seed).sum(axis=1) / n - mean)


def _summarise(
    observed: float, resamples: np.ndarray, seeds: tuple[int, int], units: int, alpha: float
) -> HierarchicalTest:
    """The interval and p of ``resamples``, chosen so that the interval excludes 0 exactly when ``p < alpha``."""
    b = len(resamples)
    ordered = np.sort(resamples)
    j = math.ceil(alpha / 2 * b) - 1  # low > 0 iff at most j resamples are <= 0 iff 2 * share(<= 0) < alpha
    at_most_zero = int(np.count_nonzero(resamples <= 0))
    at_least_zero = int(np.count_nonzero(resamples >= 0))
    p = min(1.0, max(2 * min(at_most_zero, at_least_zero) / b, 1 / b))
    return HierarchicalTest(float(observed), float(ordered[j]), float(ordered[b - 1 - j]), p, *seeds, units, b)


def hierarchical_test(
    per_seed_statistic: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    n_units: int,
    seeds: tuple[int, int],
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    paired_seeds: bool = False,
    alpha: float = ALPHA,
) -> HierarchicalTest:
    """The two-level bootstrap of any statistic scored seed by seed on weighted units.

    ``per_seed_statistic(weights)``: for unit weights ``(B, n_units)`` (each row sums to ``n_units``; all ones is the
    data as observed), each row's statistic per seed, ``(B, seeds[0])`` and ``(B, seeds[1])``. ``paired_seeds``: the
    two rows' seeds are the same draws (e.g. projection seeds), so one draw of seeds serves both."""
    if n_resamples < min_resamples(alpha):
        raise ValueError(f"n_resamples must be at least {min_resamples(alpha)} for alpha {alpha}, got {n_resamples}")
    if n_units < 1:
        raise ValueError("a hierarchical test needs at least one unit")
    if paired_seeds and seeds[0] != seeds[1]:
        raise ValueError(f"paired seeds need the same number of seeds in both rows, got {seeds}")
    rng = np.random.default_rng(seed)
    row_observed, ref_observed = per_seed_statistic(np.ones((1, n_units)))
    observed = float(row_observed.mean() - ref_observed.mean())
    draws = []
    for start in range(0, n_resamples, CHUNK):
        weights = rng.multinomial(n_units, np.full(n_units, 1 / n_units), min(CHUNK, n_resamples - start))
        draws.append(per_seed_statistic(weights.astype(np.float64)))
    row, ref = (np.concatenate(parts) for parts in zip(*draws, strict=True))

    def draw(n: int) -> np.ndarray:
        return rng.multinomial(n, np.full(n, 1 / n), n_resamples)

    row_weights = draw(seeds[0])
    ref_weights = row_weights if paired_seeds else draw(seeds[1])
    if paired_seeds:  # one draw of the shared seeds: the seed level is that of the paired differences
        diffs = row - ref
        scale = seed_scale(row_observed - ref_observed, diffs)
        resampled = _seed_means(diffs, scale, row_weights)
    else:
        resampled = _seed_means(row, seed_scale(row_observed, row), row_weights) - _seed_means(
            ref, seed_scale(ref_observed, ref), ref_weights
        )
    return _summarise(observed, resampled, seeds, n_units, alpha)


def mean_score_test(
    row: np.ndarray, reference: np.ndarray, n_resamples: int = N_RESAMPLES, seed: int = 0, paired_seeds: bool = False
) -> HierarchicalTest:
    """``row - reference`` of the mean score: ``row`` ``(seeds, units)`` and ``reference`` ``(seeds', units)``, the
    same units in the same order (per-query AP of the same queries, a per-paper score of the same papers)."""
    a, b = np.atleast_2d(np.asarray(row, dtype=np.float64)), np.atleast_2d(np.asarray(reference, dtype=np.float64))
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"the rows score different units: {a.shape[1]} and {b.shape[1]}")
    n = a.shape[1]

    def statistic(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return weights @ a.T / n, weights @ b.T / n

    return hierarchical_test(statistic, n, (len(a), len(b)), n_resamples, seed, paired_seeds)


def seeds_only_test(
    row: Sequence[float], reference: Sequence[float], n_resamples: int = N_RESAMPLES, seed: int = 0
) -> HierarchicalTest:
    """One score per seed, the seeds shared by both rows (a projection seed draws the same papers and start for
    each model): the bootstrap of the seeds alone, paired."""
    a, b = np.asarray(row, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired seeds need as many scores in both rows, got {len(a)} and {len(b)}")
    return mean_score_test(a[:, None], b[:, None], n_resamples, seed, paired_seeds=True)


def _f1_of_weights(weights: np.ndarray, truth: np.ndarray, predicted: np.ndarray, n_classes: int) -> np.ndarray:
    """Macro-F1 x 100 of each seed's predictions (rows of ``predicted``) on each weighting of the papers: ``(B,
    seeds)``, over the classes present in truth or prediction of the weighted papers (as sklearn's)."""
    true_onehot = np.eye(n_classes)[truth]  # (papers, classes)
    true_n = weights @ true_onehot  # (B, classes)
    out = np.empty((len(weights), len(predicted)))
    for s, pred in enumerate(predicted):
        pred_onehot = np.eye(n_classes)[pred]
        pred_n = weights @ pred_onehot
        tp = weights @ (pred_onehot * true_onehot)
        total = true_n + pred_n
        present = total > 0
        f1 = np.divide(2 * tp, total, out=np.zeros_like(tp), where=present)
        out[:, s] = 100.0 * f1.sum(axis=1) / present.sum(axis=1)
    return out


def macro_f1_test(
    truth: Sequence[str],
    predicted: Sequence[Sequence[str]],
    reference: Sequence[Sequence[str]],
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> HierarchicalTest:
    """Mean macro-F1 (x 100) over a classifier's seeds minus the reference classifier's, on the same test papers:
    papers resampled once for both, macro-F1 recomputed on each resample for every seed, seeds resampled per row."""
    labels = sorted({str(y) for y in truth} | {str(y) for rows in (predicted, reference) for r in rows for y in r})
    code = {label: i for i, label in enumerate(labels)}
    t = np.array([code[str(y)] for y in truth], dtype=int)
    a = np.array([[code[str(y)] for y in r] for r in predicted], dtype=int).reshape(len(predicted), -1)
    b = np.array([[code[str(y)] for y in r] for r in reference], dtype=int).reshape(len(reference), -1)
    if a.shape[1] != len(t) or b.shape[1] != len(t):
        raise ValueError(f"{len(t)} labels but predictions of {a.shape[1]} and {b.shape[1]} papers")

    def statistic(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _f1_of_weights(weights, t, a, len(labels)), _f1_of_weights(weights, t, b, len(labels))

    return hierarchical_test(statistic, len(t), (len(a), len(b)), n_resamples, seed)


def ranking_test(
    row: RowScores, reference: RowScores, task: str, n_resamples: int = N_RESAMPLES, seed: int = 0
) -> HierarchicalTest:
    """Per-query AP of ``row`` against ``reference`` on ``task``, over the queries every seed of both covers."""
    queries = sorted(set.intersection(*(set(s[task]) for s in (*row.seeds, *reference.seeds))))
    if len(queries) < 2:
        raise ValueError(f"{row.name} against {reference.name} on {task}: {len(queries)} common queries, need 2")
    a = np.array([[s[task][q] for q in queries] for s in row.seeds])
    b = np.array([[s[task][q] for q in queries] for s in reference.seeds])
    return mean_score_test(a, b, n_resamples, seed)


# ---------------------------------------------------------------- a family of comparisons
def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the k-th smallest p times (m - k + 1), made
    non-decreasing in that order and capped at 1."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = stepped
    return [float(v) for v in out]


def adjust_family(tests: Sequence[HierarchicalTest | dict[str, Any]]) -> None:
    """Set ``p_adjusted`` of every test of one family (Holm), in place; tests may be objects or their dicts."""
    adjusted = holm([t["p"] if isinstance(t, dict) else t.p for t in tests])
    for test, value in zip(tests, adjusted, strict=True):
        if isinstance(test, dict):
            test["p_adjusted"] = value
        else:
            test.p_adjusted = value


# ---------------------------------------------------------------- the one reading rule
def _get(test: HierarchicalTest | Mapping[str, Any], key: str) -> Any:
    return test.get(key) if isinstance(test, Mapping) else getattr(test, key)


def is_hierarchical(test: HierarchicalTest | Mapping[str, Any] | None) -> bool:
    """Whether ``test`` is this module's (an older stored test, a permutation p beside a separate interval, is not)."""
    return bool(test) and _get(test, "method") == METHOD


def verdict(test: HierarchicalTest | Mapping[str, Any], alpha: float = ALPHA) -> int:
    """+1 (higher) / -1 (lower) only where the Holm-adjusted p is under ``alpha``; else 0 (no difference detected).
    A test not yet adjusted is its own family of one."""
    p = _get(test, "p_adjusted")
    p = _get(test, "p") if p is None else p
    if p >= alpha:
        return 0
    return 1 if _get(test, "diff") > 0 else -1


def p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def covers(test: HierarchicalTest | Mapping[str, Any], row: str = "the row", reference: str = "the reference") -> str:
    """What the interval covers: seeds and units, or (a row with one seed) only the choice of units."""
    single = [name for name, n in ((row, _get(test, "seeds")), (reference, _get(test, "reference_seeds"))) if n == 1]
    if not single:
        return "seeds and units resampled"
    return (
        f"one seed of {' and '.join(single)}: the interval covers the choice of units, not that training's randomness"
    )


def reading_sentence(
    row: str,
    reference: str,
    what: str,
    test: HierarchicalTest | Mapping[str, Any],
    decimals: int = 2,
    units: str = "queries",
    scope: str | None = None,
) -> str:
    """The sentence of one comparison, by the one rule (:func:`verdict`): higher / lower where the Holm-adjusted p
    is under 0.05, else "no difference detected", with the difference, its interval, the p and the adjusted p, and
    what the interval covers (:func:`covers`, or ``scope``)."""
    diff, low, high, p = (_get(test, k) for k in ("diff", "ci_low", "ci_high", "p"))
    adjusted = _get(test, "p_adjusted")
    adjusted = p if adjusted is None else adjusted
    interval = f"Δ {diff:+.{decimals}f}, 95% interval [{low:+.{decimals}f}, {high:+.{decimals}f}], p {p_text(p)}"
    scope = scope or covers(test, row, reference).replace("units", units)
    shown = verdict(test)
    if shown:
        return (
            f"{row} scores {'higher' if shown > 0 else 'lower'} than {reference} on {what} ({interval}, adjusted p "
            f"{p_text(adjusted)}; {scope})."
        )
    return f"{row} against {reference} on {what}: no difference detected (adjusted p {p_text(adjusted)}; {interval}; {scope})."


# ---------------------------------------------------------------- rows of a table, each against its own reference
def compare_ranking_rows(
    rows: Sequence[RowScores],
    against: Mapping[str, str],
    tasks: Sequence[str],
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Every row's MAP over its seeds, and on each task its :func:`ranking_test` against the row ``against`` names
    (rows it does not name are references only), the whole table one family (Holm). The shape of
    ``paired.compare_rows``' result (``rows.<row>.tasks.<task>.versus.<reference>``), each test with ``queries``,
    ``p_adjusted`` and ``method``; ``family``: the number of comparisons adjusted together."""
    by_name = {row.name: row for row in rows}
    missing = sorted({ref for name, ref in against.items() if name in by_name and ref not in by_name})
    if missing:
        raise ValueError(f"reference row(s) {missing} not among the rows {list(by_name)}")
    out: dict[str, Any] = {
        "tasks": list(tasks),
        "references": sorted({ref for name, ref in against.items() if name in by_name}),
        "method": METHOD,
        "n_resamples": n_resamples,
        "rows": {},
    }
    family = []
    for row in rows:
        entry: dict[str, Any] = {"files": row.files, "seeds": len(row.seeds), "tasks": {}}
        for task in tasks:
            stats: dict[str, Any] = {**seed_maps(row.task_map(task)), "versus": {}}
            ref = against.get(row.name)
            if ref and ref != row.name:
                test = ranking_test(row, by_name[ref], task, n_resamples, seed).as_dict()
                test["queries"] = test["units"]
                stats["versus"][ref] = test
                family.append(test)
            entry["tasks"][task] = stats
        out["rows"][row.name] = entry
    if family:
        adjust_family(family)
    out["family"] = len(family)
    return out
