"""The two-level bootstrap (seeds x units), Holm's correction and the one reading rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specter_utils.evaluation import hierarchical as h
from specter_utils.evaluation.paired import RowScores, detectable_difference


def _rows(rng: np.random.Generator, effect: float, seeds: int = 3, queries: int = 60, seed_sd: float = 1.0):
    """Per-query scores of two rows on the same queries: a shared query difficulty, a model x query interaction,
    seed x query noise and a seed offset; ``effect`` added to the first row."""
    difficulty = rng.normal(50, 20, queries)
    a = difficulty + effect + rng.normal(0, 4, queries) + rng.normal(0, 8, (seeds, queries))
    b = difficulty + rng.normal(0, 8, (seeds, queries))
    return a + rng.normal(0, seed_sd, (seeds, 1)), b + rng.normal(0, seed_sd, (seeds, 1))


def test_a_true_zero_effect_is_rejected_about_five_percent_of_the_time():
    rng = np.random.default_rng(0)
    p = np.array([h.mean_score_test(*_rows(rng, 0.0), n_resamples=400, seed=i).p for i in range(200)])
    assert 0.01 <= float(np.mean(p < 0.05)) <= 0.10
    assert 0.35 <= float(np.median(p)) <= 0.75  # about uniform, if anything a little conservative


def test_a_true_zero_effect_over_five_paired_seeds_alone_is_rejected_about_five_percent_of_the_time():
    rng = np.random.default_rng(7)
    p = np.array([h.seeds_only_test(rng.normal(0, 1, 5), np.zeros(5), n_resamples=400, seed=i).p for i in range(200)])
    assert 0.01 <= float(np.mean(p < 0.05)) <= 0.10  # a plain bootstrap of 5 seeds calls about 14%


def test_a_large_effect_is_detected_with_its_sign():
    rng = np.random.default_rng(1)
    up = h.mean_score_test(*_rows(rng, 8.0, queries=120), n_resamples=2_000)
    assert up.p < 0.01 and up.ci_low > 0 and h.verdict(up) == 1
    down = h.mean_score_test(*reversed(_rows(rng, 8.0, queries=120)), n_resamples=2_000)
    assert down.p < 0.01 and down.ci_high < 0 and h.verdict(down) == -1


def test_the_interval_excludes_zero_exactly_when_p_is_under_005():
    rng = np.random.default_rng(2)
    disagreements = 0
    for i in range(150):
        effect = rng.uniform(-3, 3)
        a, b = _rows(rng, effect, seeds=int(rng.integers(1, 5)), queries=int(rng.integers(5, 40)))
        test = h.mean_score_test(a, b, n_resamples=int(rng.integers(21, 400)), seed=i)
        excludes = test.ci_low > 0 or test.ci_high < 0
        disagreements += excludes != (test.p < 0.05)
    assert disagreements == 0


def test_too_few_resamples_for_the_rule_are_refused():
    a = np.ones((2, 5))
    with pytest.raises(ValueError, match="at least 21"):
        h.mean_score_test(a, a, n_resamples=20)


def test_identical_rows_read_as_no_difference():
    a = np.random.default_rng(3).normal(size=(3, 30))
    test = h.mean_score_test(a, a, n_resamples=500)
    assert test.diff == 0 and test.p == 1.0 and h.verdict(test) == 0


def test_one_seed_per_row_is_the_query_bootstrap_and_says_so():
    rng = np.random.default_rng(4)
    a, b = _rows(rng, 1.0, seeds=1)
    test = h.mean_score_test(a, b, n_resamples=500)
    assert (test.seeds, test.reference_seeds) == (1, 1)
    assert "one seed of A and B" in h.covers(test, "A", "B")
    assert "not that training's randomness" in h.reading_sentence("A", "B", "cite MAP", test)
    several = h.mean_score_test(*_rows(rng, 1.0, seeds=3), n_resamples=500)
    assert h.covers(several) == "seeds and units resampled"


def test_seeds_widen_the_interval_when_seeds_differ_beyond_their_query_noise():
    rng = np.random.default_rng(5)
    a, b = _rows(rng, 0.0, seeds=3, seed_sd=0.0)
    offsets = np.array([[-4.0], [0.0], [4.0]])
    calm = h.mean_score_test(a, b, n_resamples=2_000)
    noisy = h.mean_score_test(a + offsets, b, n_resamples=2_000)
    assert noisy.ci_high - noisy.ci_low > 1.5 * (calm.ci_high - calm.ci_low)


def test_the_macro_f1_test_recomputes_f1_and_matches_sklearn_on_the_observed_papers():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(6)
    truth = [str(c) for c in rng.integers(0, 4, 200)]
    good = [[t if rng.random() < 0.9 else "0" for t in truth] for _ in range(3)]
    bad = [[t if rng.random() < 0.4 else "1" for t in truth]]
    test = h.macro_f1_test(truth, good, bad, n_resamples=500)
    expected = np.mean([100 * f1_score(truth, g, average="macro") for g in good]) - 100 * f1_score(
        truth, bad[0], average="macro"
    )
    assert test.diff == pytest.approx(expected)
    assert h.verdict(test) == 1 and (test.seeds, test.reference_seeds, test.units) == (3, 1, 200)


def test_seeds_only_pairs_the_seeds():
    test = h.seeds_only_test([0.3, 0.35, 0.31, 0.4, 0.33], [0.2, 0.25, 0.3, 0.2, 0.22], n_resamples=2_000)
    assert test.diff == pytest.approx(0.104) and test.ci_low > 0 and test.units == 1
    mixed = h.seeds_only_test([0.3, 0.1, 0.31, 0.2, 0.23], [0.2, 0.25, 0.3, 0.2, 0.22], n_resamples=2_000)
    assert h.verdict(mixed) == 0


def test_ranking_test_pairs_the_queries_every_seed_covers():
    row = RowScores(
        "a", ["f0", "f1"], [{"cite": {"q1": 80.0, "q2": 60.0, "q3": 70.0}}, {"cite": {"q1": 82.0, "q2": 61.0}}]
    )
    ref = RowScores("b", ["g0"], [{"cite": {"q1": 70.0, "q2": 58.0, "q3": 10.0}}])
    test = h.ranking_test(row, ref, "cite", n_resamples=100)
    assert test.units == 2 and test.diff == pytest.approx((81 + 60.5) / 2 - (70 + 58) / 2)


def test_holm_against_a_hand_worked_example():
    # sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04 -> raised to 0.06 (step-down)
    assert h.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert h.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert h.holm([0.2]) == pytest.approx([0.2])


def test_the_reading_rule_follows_the_adjusted_p_only():
    test = {"diff": 0.61, "ci_low": 0.12, "ci_high": 1.11, "p": 0.017, "seeds": 3, "reference_seeds": 3}
    assert h.verdict(test) == 1  # alone, a family of one
    family = [test, {"diff": 0.3, "p": 0.2}, {"diff": 0.1, "p": 0.5}, {"diff": -2.0, "p": 0.0001}]
    h.adjust_family(family)
    assert test["p_adjusted"] == pytest.approx(0.051)
    assert h.verdict(test) == 0 and h.verdict(family[3]) == -1
    sentence = h.reading_sentence("venue", "specter", "co-cite MAP", test)
    assert "no difference detected (adjusted p 0.051" in sentence and "higher" not in sentence
    low = h.reading_sentence(
        "no_abstract",
        "specter",
        "cite MAP",
        {**test, "diff": -10.0, "ci_low": -12.0, "ci_high": -8.0, "p_adjusted": 0.0003},
    )
    assert low.startswith("no_abstract scores lower than specter on cite MAP (Δ -10.00") and "adjusted p < 0.001" in low


def test_the_detectable_difference_is_found_about_80_percent_of_the_time():
    """detectable_difference's size, planted as the true mean over 40 queries with its spread, is detected by a
    paired test at 0.05 in about 80% of draws (t-test; the normal approximation is slightly optimistic)."""
    rng = np.random.default_rng(0)
    queries = [str(q) for q in range(40)]
    sample = rng.normal(0.0, 10.0, len(queries))
    found = detectable_difference(
        {q: float(v) for q, v in zip(queries, sample, strict=True)}, dict.fromkeys(queries, 0.0)
    )
    assert found["queries"] == 40 and found["detectable"] == pytest.approx(2.8016 * found["sd"] / np.sqrt(40), rel=1e-4)
    assert found["queries_for_2"] == np.ceil((2.8016 * found["sd"] / 2) ** 2)
    draws = rng.normal(found["detectable"], found["sd"], size=(4000, 40))
    detected = np.mean(stats.ttest_1samp(draws, 0.0, axis=1).pvalue < 0.05)
    assert 0.74 < detected < 0.83
