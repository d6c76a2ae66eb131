"""Every branch of the generated interpretation: each sentence follows from the numbers it is given."""

from __future__ import annotations

import numpy as np
import pytest

from specter_utils.evaluation.deltas import Delta, heads_delta_label
from specter_utils.evaluation.hierarchical import METHOD
from specter_utils.presentation import interpret as it


# ---------------------------------------------------------------- the building blocks
@pytest.mark.parametrize(
    ("diff", "ci", "word"),
    [(0.44, (0.10, 0.80), "scores higher"), (-2.12, (-3.0, -1.2), "scores lower")],
)
def test_difference_with_a_ci_excluding_zero_has_a_direction(diff, ci, word):
    text = it.difference_sentence("A", "B", "cite MAP", diff, ci=ci, p=0.004)
    assert word in text and "excludes 0" in text and "p 0.004" in text


def test_difference_with_a_ci_including_zero_shows_none():
    text = it.difference_sentence("A", "B", "co-cite MAP", -0.45, ci=(-1.1, 0.2), p=0.212)
    assert "includes 0" in text and "no difference is shown" in text
    assert "scores" not in text


def test_one_run_difference_is_not_tested():
    text = it.difference_sentence("trained", "base", "cite nDCG", 1.47)
    assert "scores higher" in text and "one run" in text and "not tested" in text
    assert "equal" in it.difference_sentence("A", "B", "x", 0.001)


def test_evidence():
    assert it.evidence((0.1, 1.0)) == 1
    assert it.evidence((-0.1, 1.0)) == 0
    assert it.evidence((-1.0, -0.1)) == -1
    assert it.evidence(None) == 0  # one run, no interval: nothing shown


@pytest.mark.parametrize(
    ("shown", "paper_diff", "words"),
    [
        (1, 2.0, "agrees with"),
        (-1, 2.0, "goes against"),
        (1, -1.8, "goes against"),
        (0, -1.8, "neither confirmed nor contradicted"),
        (1, 0.0, "no change"),
    ],
)
def test_paper_sentence(shown, paper_diff, words):
    assert words in it.paper_sentence(shown, paper_diff, "X vs SPECTER")


# ---------------------------------------------------------------- the loss (03, 05)
def test_loss_description_names_the_loss_that_ran():
    assert "triplet margin loss" in it.loss_description({"config": {"loss": "triplet", "triplet_margin": 1.0}})
    text = it.loss_description({"config": {"loss": "mnrl-citation", "mnrl_scale": 20.0}})
    assert "in-batch negatives" in text and "triplet" not in text
    assert "CitationMaskedMNRL" in it.loss_description({"config": {}, "derived": {"loss": "CitationMaskedMNRL"}})


@pytest.mark.parametrize(("after", "word"), [(2.06, "fell"), (3.10, "rose"), (2.934, "did not change")])
def test_interpret_training(after, word):
    metrics = {
        "config": {"loss": "mnrl-citation", "mnrl_scale": 20.0},
        "results": {
            "val_loss_before": 2.934,
            "val_loss_final": after,
            "val_euclidean_accuracy_before": 0.625,
            "val_euclidean_accuracy_final": 0.75,
        },
    }
    text = it.interpret_training(metrics)
    assert f"validation loss {word}" in text
    assert "not triplet-loss values" in text
    assert "rose, from 62.5% to 75.0%" in text
    triplet = it.interpret_training({"config": {"loss": "triplet"}, "results": {}})
    assert "not triplet-loss values" not in triplet


# ---------------------------------------------------------------- 05: Table 1
def scidocs_result(f1: float, cite_map: float, cite_ndcg: float) -> dict:
    return {"mag": {"f1": f1}, "cite": {"map": cite_map, "ndcg": cite_ndcg}}


HEPTH = {  # the shape of notebook 05's results on the hep-th benchmark
    "trained": scidocs_result(4.80, 84.23, 93.13),
    "base": scidocs_result(4.56, 81.83, 91.66),
    "random": scidocs_result(3.50, 24.64, 50.34),
    "tfidf-svd": scidocs_result(9.38, 81.57, 91.34),
}


def test_table1_ci_excluding_zero_agrees_with_the_paper():
    deltas = [Delta("trained", "base", "cite", "MAP", 2.40, 1.1, 3.7, 0.001, 160)]
    text = it.interpret_table1(HEPTH, deltas)
    cite = next(line for line in text.splitlines() if "cite MAP" in line and "trained" in line)
    assert "scores higher" in cite and "excludes 0" in cite and "agrees with the paper's direction" in cite
    ndcg = next(line for line in text.splitlines() if "cite nDCG" in line)
    assert "not tested" in ndcg and "neither confirmed nor contradicted" in ndcg


def test_table1_ci_going_against_the_paper():
    deltas = [Delta("trained", "base", "cite", "MAP", -1.5, -2.5, -0.4, 0.01, 160)]
    cite = next(line for line in it.interpret_table1(HEPTH, deltas).splitlines() if "cite MAP" in line)
    assert "scores lower" in cite and "goes against the paper's direction" in cite


def test_table1_classification_below_tfidf():
    text = it.interpret_table1(HEPTH)
    line = next(line for line in text.splitlines() if line.startswith("- MAG F1"))
    assert "every model scores below the TF-IDF baseline" in line and "tfidf-svd 9.38" in line
    assert "as in the paper" not in text


def test_table1_classification_above_and_mixed():
    above = {**HEPTH, "trained": scidocs_result(12.0, 84.2, 93.1), "base": scidocs_result(10.0, 81.8, 91.7)}
    assert "every model scores above the TF-IDF baseline" in it.interpret_table1(above)
    mixed = {**HEPTH, "trained": scidocs_result(12.0, 84.2, 93.1)}
    line = next(line for line in it.interpret_table1(mixed).splitlines() if line.startswith("- MAG F1"))
    assert "above the TF-IDF baseline: trained; below it: base" in line


def test_table1_random_and_loss():
    text = it.interpret_table1(HEPTH, train_metrics={"config": {"loss": "mnrl-citation"}})
    assert "Above random vectors on every metric: trained, base, tfidf-svd" in text
    assert "in-batch negatives" in text
    weak = {**HEPTH, "base": scidocs_result(3.0, 81.8, 91.7)}
    assert "Not above random vectors on every metric: base" in it.interpret_table1(weak)


# ---------------------------------------------------------------- 06: geometry
def seeded(base: list[float], trained: list[float], knn: tuple[float, float, float]) -> dict:
    """Notebook 06's metrics over projection seeds (t-SNE homogeneity; completeness equal) and the full space."""
    from specter_utils.analysis.geometry import seed_difference

    def summary(values: list[float]) -> dict:
        mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
        return {"homogeneity": mean, "homogeneity_sd": sd, "completeness": 0.5, "completeness_sd": 0.01}

    flat = [0.5] * len(base)
    versus = {
        factor: {"homogeneity": seed_difference(trained, base), "completeness": seed_difference(flat, flat)}
        for factor in ("0.5", "1", "2")
    }
    diff, low, high = knn
    return {
        "scores": {"tsne": {"base": summary(base), "trained": summary(trained)}},
        "versus": {"tsne": {"trained": versus}},
        "projection_seeds": list(range(len(base))),
        "space": {
            "k": 10,
            "reference": "base",
            "models": {
                "base": {"knn_agreement": 0.6, "silhouette": 0.01},
                "trained": {"knn_agreement": 0.6 + diff, "silhouette": 0.01},
            },
            "versus": {
                "trained": {
                    "knn_agreement": {
                        "diff": diff,
                        "ci_low": low,
                        "ci_high": high,
                        "p": 0.001 if low > 0 or high < 0 else 0.4,
                        "queries": 450,
                        "seeds": 1,
                        "reference_seeds": 1,
                        "method": METHOD,
                    }
                }
            },
        },
    }


def test_geometry_over_seeds_calls_a_direction_only_by_the_adjusted_p():
    clear = seeded([0.20, 0.21, 0.19, 0.22, 0.20], [0.40, 0.41, 0.42, 0.40, 0.43], (0.05, 0.03, 0.07))
    findings = {f["what"]: f["shown"] for f in it.geometry_findings(clear)}
    assert findings == {"k-NN topic agreement": 1, "t-SNE homogeneity": 1, "t-SNE completeness": 0}
    text = it.interpret_geometry(clear)
    assert "one family of 3 comparisons, Holm-adjusted" in text
    assert "trained scores higher than base on k-NN topic agreement" in text and "adjusted p 0.002" in text
    assert "trained scores higher than base on t-SNE homogeneity" in text and "higher at 3 of 3 values" in text
    assert "projection seeds resampled, the papers fixed" in text and "This agrees with the paper's direction" in text
    # one seed's map on each side would say "falls" or "rises"; over seeds with mixed signs it is no difference
    noisy = seeded([0.20, 0.40, 0.20, 0.40, 0.30], [0.35, 0.10, 0.38, 0.15, 0.30], (0.001, -0.004, 0.006))
    shown = {f["what"]: f["shown"] for f in it.geometry_findings(noisy)}
    assert shown == {"k-NN topic agreement": 0, "t-SNE homogeneity": 0, "t-SNE completeness": 0}
    text = it.interpret_geometry(noisy)
    assert "no difference detected" in text and "scores higher" not in text and "scores lower" not in text


# ---------------------------------------------------------------- 07: ablations
def group(mean: float, sd: float) -> dict:
    return {"CITE": {"mean": mean, "sd": sd}, "all": {"mean": mean, "sd": sd}}


def versus(diff: float, low: float, high: float, p: float, adjusted: float | None = None, seeds: int = 3) -> dict:
    """One task's comparison with specter as ``evaluation.hierarchical`` stores it (seeds and queries resampled)."""
    test = {
        "diff": diff,
        "ci_low": low,
        "ci_high": high,
        "p": p,
        "p_adjusted": p if adjusted is None else adjusted,
        "queries": 160,
        "seeds": seeds,
        "reference_seeds": seeds,
        "method": METHOD,
    }
    return {"versus": {"specter": test}}


STATISTICS = {  # the shape of ablation_statistics, with numbers like the hep-th run's
    "groups": {
        "specter": group(88.56, 0.28),
        "no_hard_negatives": group(88.93, 0.28),
        "cocitation": group(87.33, 0.32),
        "multitask": group(88.50, 0.06),
        "venue": group(88.93, 0.04),
    },
    "paired": {
        "rows": {
            "no_hard_negatives": {
                "tasks": {"cite": versus(0.44, 0.1, 0.8, 0.002, 0.012), "cocite": versus(0.53, 0.2, 0.9, 0.001, 0.008)}
            },
            "cocitation": {
                "tasks": {"cite": versus(-2.12, -2.9, -1.3, 0.0001), "cocite": versus(-1.13, -1.9, -0.3, 0.006, 0.03)}
            },
            "multitask": {"tasks": {"cite": versus(-0.06, -0.6, 0.5, 0.8, 1.0)}},
            # outside the seed spread and one task's p under 0.05 alone, but not after Holm over the table
            "venue": {
                "tasks": {"cite": versus(0.33, -0.13, 0.79, 0.17, 0.5), "cocite": versus(0.61, 0.1, 1.1, 0.017, 0.11)}
            },
        },
        "family": 7,
        "n_resamples": 10_000,
    },
    "seeds": {name: [0, 1, 2] for name in ("specter", "no_hard_negatives", "cocitation", "multitask", "venue")},
}
PAPER_ROWS = {
    "specter": "SPECTER",
    "no_hard_negatives": "no hard negatives",
    "cocitation": "SciBERT fine-tune on co-citation",
    "multitask": "SciBERT fine-tune on multitask",
    "venue": "+ venue",
}


def ablation_lines(statistics: dict | None = None) -> dict[str, str]:
    statistics = statistics or STATISTICS
    text = it.interpret_ablations(statistics, "specter", PAPER_ROWS)
    return {
        name: next(line for line in text.splitlines() if f"**{name}**" in line)
        for name in statistics["groups"]
        if name != "specter"
    } | {"text": text}


def test_ablation_against_the_paper_only_with_every_adjusted_p_under_005():
    line = ablation_lines()["no_hard_negatives"]
    assert "scores higher than specter on cite MAP" in line and "adjusted p 0.012" in line
    assert "goes against the paper's direction" in line and "'no hard negatives' vs SPECTER" in line
    assert "the table's 7 comparisons are one family, Holm-adjusted" in ablation_lines()["text"]


def test_ablation_agreeing_with_the_paper():
    line = ablation_lines()["cocitation"]
    assert "scores lower" in line and "agrees with the paper's direction" in line


def test_ablation_with_nothing_detected_is_no_difference():
    line = ablation_lines()["multitask"]
    assert "no difference detected (adjusted p 1.000" in line and "neither confirmed nor contradicted" in line


def test_ablation_outside_the_seed_spread_with_a_raw_p_under_005_is_no_difference_after_holm():
    # the old rule read this row (Δ all outside the larger sd, a task's interval clear of 0) as against the paper
    line = ablation_lines()["venue"]
    assert "higher" not in line and "no difference detected (adjusted p 0.110" in line
    assert "not tested" in line and "neither confirmed nor contradicted" in line


def test_ablation_lists_the_paper_rows_not_run():
    text = ablation_lines()["text"]
    assert "not run here: - abstract, + author, start with BERT-Large" in text


def test_the_average_over_seeds_is_stated_not_tested():
    # the average inside the seed spread does not overrule a detected difference, nor does outside it make one
    stats = {**STATISTICS, "paired": {"rows": {"multitask": {"tasks": {"cite": versus(1.0, 0.2, 1.8, 0.001, 0.01)}}}}}
    line = ablation_lines(stats)["multitask"]
    assert "Δ -0.06 on the average against specter (CITE; 3 seeds, mean over seeds, not tested)" in line
    assert "scores higher than specter on cite MAP" in line


def test_ablation_tasks_detected_in_both_directions_are_no_row_verdict():
    tasks = {"cite": versus(1.0, 0.2, 1.8, 0.001, 0.01), "cocite": versus(-1.0, -1.8, -0.2, 0.001, 0.01)}
    stats = {**STATISTICS, "paired": {"rows": {"no_hard_negatives": {"tasks": tasks}}}}
    line = ablation_lines(stats)["no_hard_negatives"]
    assert "scores higher" in line and "scores lower" in line and "neither confirmed nor contradicted" in line


def test_ablation_with_one_seed_says_what_its_interval_covers():
    stats = {
        "groups": {"specter": group(83.72, None), "no_hard_negatives": group(84.23, None)},
        "paired": {"rows": {"no_hard_negatives": {"tasks": {"cite": versus(0.61, 0.29, 0.92, 0.0001, seeds=1)}}}},
        "seeds": {"specter": [0], "no_hard_negatives": [0]},
    }
    line = next(line for line in it.interpret_ablations(stats, "specter", PAPER_ROWS).splitlines() if "**no_" in line)
    assert "1 seed, mean over seeds, not tested" in line
    assert "one seed of no_hard_negatives and specter: the interval covers the choice of queries" in line


def _hard_negative_statistics(paper_nhn: tuple[float, float, float, float]) -> dict:
    """The run's recipe with and without hard negatives, and the paper's recipe with and without them; the last
    tested against the paper's recipe (``compared_to``), with ``paper_nhn`` as (diff, ci_low, ci_high, p)."""
    return {
        "groups": {
            "specter": group(88.60, 0.20),
            "no_hard_negatives": group(88.70, 0.20),
            "paper_recipe": group(86.00, 0.20),
            "paper_no_hard_negatives": group(86.00 + paper_nhn[0], 0.20),
        },
        "paired": {
            "rows": {
                "no_hard_negatives": {"tasks": {"cite": versus(0.10, -0.3, 0.5, 0.6)}},
                "paper_recipe": {"tasks": {"cite": versus(-2.60, -3.2, -2.0, 0.0001)}},
                "paper_no_hard_negatives": {
                    "tasks": {"cite": {"versus": {"paper_recipe": versus(*paper_nhn)["versus"]["specter"]}}}
                },
            }
        },
        "seeds": {
            name: [0, 1, 2] for name in ("specter", "no_hard_negatives", "paper_recipe", "paper_no_hard_negatives")
        },
        "compared_to": {
            "no_hard_negatives": "specter",
            "paper_recipe": "specter",
            "paper_no_hard_negatives": "paper_recipe",
        },
    }


def test_a_row_is_tested_against_the_row_it_names():
    stats = _hard_negative_statistics((-1.50, -2.1, -0.9, 0.0001))
    text = it.interpret_ablations(stats, "specter", {**PAPER_ROWS, "paper_no_hard_negatives": "no hard negatives"})
    line = next(line for line in text.splitlines() if "**paper_no_hard_negatives**" in line)
    assert "scores lower than paper_recipe" in line and "specter" not in line
    assert "agrees with the paper's direction" in line  # the paper's no-hard-negatives row is lower
    pair = next(line for line in text.splitlines() if "hard negatives under two losses" in line)
    assert "+0.10 with in-batch negatives" in pair and "-1.50 with the paper's triplet loss" in pair
    assert "supports the explanation" in pair


def test_the_hard_negative_explanation_is_not_supported_when_the_triplet_loss_shows_nothing():
    stats = _hard_negative_statistics((0.05, -0.4, 0.5, 0.8))
    pair = next(
        line for line in it.interpret_ablations(stats, "specter", PAPER_ROWS).splitlines() if "two losses" in line
    )
    assert "Neither loss shows a difference" in pair and "no difference detected" in pair


# ---------------------------------------------------------------- 08: heads
def head_rows(svm: float, linear: list[float], deep: list[float], end_to_end: list[float] | None = None) -> list[dict]:
    base = {"encoder": "trained", "max_length": 256}
    rows = [{**base, "head": it.SVM_HEAD, "training": "frozen", "seed": None, "macro_f1": svm}]
    rows += [{**base, "head": "linear", "training": "frozen", "seed": s, "macro_f1": v} for s, v in enumerate(linear)]
    rows += [{**base, "head": "3x64", "training": "frozen", "seed": s, "macro_f1": v} for s, v in enumerate(deep)]
    for s, v in enumerate(end_to_end or []):
        rows.append({**base, "head": "linear", "training": "end to end", "seed": s, "macro_f1": v})
    return rows


def head_delta(head: str, training: str, reference: str, diff: float, p_adjusted: float, seeds: int = 3) -> Delta:
    """A heads comparison as ``heads_deltas`` makes it (seeds and papers resampled, Holm-adjusted)."""
    row = heads_delta_label("trained", 256, "", head, training, reference)
    low, high = (diff - 1.0, diff + 1.0) if p_adjusted < 0.05 else (diff - 5.0, diff + 5.0)
    reference_seeds = 1 if head == it.SVM_HEAD else 3
    return Delta(
        row,
        "the same encoder's frozen head",
        "mag",
        "macro-F1",
        diff,
        low,
        high,
        p_adjusted / 2,
        600,
        p_adjusted,
        METHOD,
        1 if head == it.SVM_HEAD else seeds,
        reference_seeds if head != it.SVM_HEAD else 3,
    )


def test_heads_read_by_the_adjusted_p_of_their_test():
    deltas = [
        head_delta(it.SVM_HEAD, "frozen", "linear", -8.0, 0.001),
        head_delta("3x64", "frozen", "linear", -0.2, 0.7),
    ]
    text = it.interpret_heads(head_rows(4.6, [12.1, 12.6, 13.1], [12.4, 13.0, 11.9]), deltas=deltas)
    svm = next(line for line in text.splitlines() if "linear SVM" in line)
    assert "scores lower than the linear head" in svm and "SVM 4.60, linear head 12.60 ± 0.50 over 3 seeds" in svm
    assert "one seed of the linear SVM" in svm and "test papers" in svm
    deep = next(line for line in text.splitlines() if "3x64" in line)
    assert "no difference detected (adjusted p 0.700" in deep


def test_heads_without_a_test_state_the_difference_and_read_nothing():
    text = it.interpret_heads(head_rows(50.2, [54.6], [54.3]))
    svm = next(line for line in text.splitlines() if "linear SVM" in line)
    assert "linear head 54.60, 1 seed" in svm and "±" not in svm and "no paired test" in svm
    assert "higher" not in text and "lower" not in text


def test_heads_end_to_end_against_its_control():
    deltas = [
        head_delta("linear", "end to end", "linear", 8.8, 0.002),
        head_delta("3x64", "frozen", "linear", -4.1, 0.02),
    ]
    rows = head_rows(4.6, [12.1, 12.6, 13.1], [8.0, 8.5, 9.0], end_to_end=[20.0, 21.0, 22.0])
    text = it.interpret_heads(rows, deltas=deltas)
    line = next(line for line in text.splitlines() if "end to end" in line)
    assert "scores higher than the same head on the frozen encoder" in line and "seeds and test papers" in line
    deep = next(line for line in text.splitlines() if "3x64" in line)
    assert "scores lower than the linear head" in deep


# ---------------------------------------------------------------- why the SVM and the linear head differ
def svm_row(f1: float, predicted: int = 6, classes: int = 6, c: float = 1.0) -> dict:
    return {"macro_f1": f1, "accuracy": f1, "C": c, "classes_predicted": predicted, "classes": classes}


def gap(protocol: float, singles: dict[str, float], combined: float, head: list[float], predicted: int = 6) -> dict:
    variants = {"SCIDOCS protocol": svm_row(protocol, predicted=predicted, c=0.01)}
    variants.update({name: svm_row(f1) for name, f1 in singles.items()})
    variants["standardised + balanced + C by macro-F1"] = svm_row(combined)
    return {"trained": {"variants": variants, "linear_head_macro_f1": head}}


def test_svm_gap_inside_the_head_spread_is_no_difference():
    text = it.interpret_svm_gap(gap(80.0, {"C by CV macro-F1": 80.2}, 80.1, [80.3, 79.9, 80.8]))
    assert "agree" in text and "more" not in text


def test_svm_gap_attributed_to_the_single_change_that_moves_it_most():
    singles = {"C by CV macro-F1": 13.16, "standardised inputs": 9.72, "class_weight balanced": 6.0}
    text = it.interpret_svm_gap(gap(4.56, singles, 12.5, [12.3, 12.6, 13.0], predicted=3))
    assert "the linear head scores 8.07 macro-F1 more" in text
    assert "predicts only 3 of the 6 classes" in text and "C = 0.01" in text
    assert "'C by CV macro-F1' moves the SVM most, to 13.16 (107% of the gap)" in text
    assert "account for the gap" in text


def test_svm_gap_part_left_unexplained_and_no_single_change_helping():
    text = it.interpret_svm_gap(gap(50.0, {"C by CV macro-F1": 49.0, "standardised inputs": 48.0}, 52.0, [60.0, 60.5]))
    assert "No single change of the SVM's protocol moves it toward the head" in text
    assert "8.25 short of the head, a part these settings do not explain" in text
    assert "predicts only" not in text


def test_svm_gap_without_variants():
    assert "No SVM protocol variants" in it.interpret_svm_gap({})


def test_svm_gap_table_lists_every_variant_and_the_head():
    from specter_utils.presentation.tables import svm_gap_table

    table = svm_gap_table(gap(4.56, {"C by CV macro-F1": 13.16}, 12.5, [12.3, 12.6, 13.0], predicted=3))
    assert "| trained | SCIDOCS protocol | 4.56 | 4.56 | 0.01 | 3 of 6 |" in table
    assert "| trained | linear head (3 seeds) | 12.63 ± 0.35 | | | |" in table


def test_the_hard_negative_explanation_is_refuted_when_the_triplet_loss_gains_without_them():
    stats = _hard_negative_statistics((0.80, 0.4, 1.2, 0.001))
    pair = next(
        line for line in it.interpret_ablations(stats, "specter", PAPER_ROWS).splitlines() if "two losses" in line
    )
    assert "+0.80 with the paper's triplet loss (against paper_recipe: higher)" in pair
    assert "the drop that the paper saw does not appear" in pair and "do not explain" in pair
