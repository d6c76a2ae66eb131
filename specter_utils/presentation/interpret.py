"""The "what the numbers say" of each notebook, written from that run's metrics.

Every sentence is chosen by a condition on the numbers it states, never fixed in advance:

- Table 2, the heads and Figure 2: one rule (``evaluation.hierarchical``): the two-level bootstrap over seeds and
  units, its interval and p from the same resamples, each notebook's comparisons one Holm family; higher / lower
  only where the adjusted p is under 0.05, else "no difference detected";
- elsewhere (Table 1, the SVM gap): the direction of a difference (higher, lower, equal at the shown precision),
  whether its 95% paired-bootstrap interval excludes 0 (a difference shown) or not (no difference shown), and
  whether it lies inside the seed spread (then it reads "no difference");
- whether it goes the paper's way (the paper's numbers: ``presentation.tables``), and only where a difference
  was shown; otherwise the paper's direction is said to be neither confirmed nor contradicted;
- what the loss actually was (the triplet margin loss or in-batch negatives), from the training metrics;
- classification against the TF-IDF baseline; homogeneity rising or falling.

Each function returns markdown (one bullet per finding) and reads no file: the notebooks pass what they
wrote to ``metrics.json``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from specter_utils.analysis.geometry import PAPER_FIGURE2
from specter_utils.evaluation.deltas import Delta, heads_delta_label
from specter_utils.evaluation.hierarchical import adjust_family, is_hierarchical, reading_sentence, verdict
from specter_utils.loss_kinds import LOSS_REGISTRY
from specter_utils.presentation.tables import (
    HEADERS,
    PAPER_ABLATION_ROWS,
    PAPER_TABLE1,
    PAPER_TABLE2,
    TABLE1_COLUMNS,
    TABLE2_COLUMNS,
    mean_sd,
    mean_sd_text,
    metric_row,
)
from specter_utils.tasks import CLASSIFICATION, TASKS

CLASSIFICATION_HEADERS = tuple(h for task in TASKS if task.kind == CLASSIFICATION for h in task.headers)
DELTA_METRICS = {"map": "MAP", "f1": "macro-F1"}  # Table 1 metric key -> the metric of evaluation.deltas
SVM_HEAD = "linear SVM (SCIDOCS)"  # heads.SVM_HEAD: the name of the SVM rows of notebook 08


def _fmt(value: float, decimals: int = 2) -> str:
    return f"{value:+.{decimals}f}"


def _direction(diff: float, decimals: int = 2) -> str:
    """higher / lower / equal at the shown precision."""
    if round(diff, decimals) == 0:
        return "equal"
    return "higher" if diff > 0 else "lower"


# ---------------------------------------------------------------- the building blocks
def difference_sentence(
    name: str,
    reference: str,
    what: str,
    diff: float,
    ci: tuple[float, float] | None = None,
    p: float | None = None,
    decimals: int = 2,
) -> str:
    """One sentence on ``name - reference`` on ``what``, chosen by the CI (excludes 0: higher / lower; includes 0:
    no difference shown), else one run (not tested)."""
    d = _fmt(diff, decimals)
    if ci is not None:
        low, high = ci
        interval = f"95% CI [{_fmt(low, decimals)}, {_fmt(high, decimals)}]"
        p_text = "" if p is None else (", p < 0.001" if p < 0.001 else f", p {p:.3f}")
        if low > 0 or high < 0:
            verdict = "higher" if low > 0 else "lower"
            return f"{name} scores {verdict} than {reference} on {what} (Δ {d}, {interval}{p_text}): the interval excludes 0."
        return (
            f"{name} is {d} against {reference} on {what}, but the {interval}{p_text} includes 0: "
            "no difference is shown."
        )
    direction = _direction(diff, decimals)
    if direction == "equal":
        return f"{name} and {reference} are equal on {what} at {decimals} decimals."
    return (
        f"{name} scores {direction} than {reference} on {what} (Δ {d}) in one run; with no interval or seed spread "
        "this is not tested."
    )


def evidence(ci: tuple[float, float] | None) -> int:
    """+1 / -1 where a difference is shown (the CI excludes 0), else 0."""
    if ci is None:
        return 0
    low, high = ci
    return 1 if low > 0 else -1 if high < 0 else 0


def projection_test(test: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A projection comparison (``analysis.geometry.seed_difference``) as the one test reads it; None with under 2
    seeds."""
    return dict(test) if test and test.get("seeds", 0) >= 2 else None


def paper_sentence(shown: int, paper_diff: float, paper_what: str, decimals: int = 1) -> str:
    """Whether a shown difference (``evidence``'s sign) goes the paper's way (``paper_diff``, its sign)."""
    if math.isnan(paper_diff):  # a task the paper did not measure (cite and co-cite with matched negatives)
        return "The paper did not measure this task."
    if paper_diff == 0:
        return f"The paper shows no change here ({paper_what}: Δ 0)."
    paper_dir = "higher" if paper_diff > 0 else "lower"
    paper = f"the paper's direction ({paper_what}: {paper_dir}, Δ {_fmt(paper_diff, decimals)})"
    if shown == 0:
        return f"With no difference shown here, {paper} is neither confirmed nor contradicted."
    if (shown > 0) == (paper_diff > 0):
        return f"This agrees with {paper}."
    return f"This goes against {paper}."


def loss_description(train_metrics: Mapping[str, Any]) -> str:
    """The loss a run trained with, from notebook 03's metrics (``config.loss``, the margin or scale)."""
    config = train_metrics.get("config", train_metrics)
    loss = config.get("loss")
    if loss not in LOSS_REGISTRY:
        derived = (train_metrics.get("derived") or {}).get("loss")
        return f"the {derived} loss" if derived else "an unrecorded loss"
    return LOSS_REGISTRY.get(loss).description.format(
        margin=config.get("triplet_margin", 1.0), scale=config.get("mnrl_scale", 20.0)
    )


# ---------------------------------------------------------------- notebook 03: training
def interpret_training(train_metrics: Mapping[str, Any]) -> str:
    """What the training did: the loss it minimised, the validation loss and triplet accuracy before and after."""
    config = train_metrics.get("config", {})
    results = train_metrics.get("results", {})
    lines = [f"- The model was trained with {loss_description(train_metrics)}."]
    if config.get("loss") in LOSS_REGISTRY and config.get("loss") != "triplet":
        lines.append(
            "- Its loss values are not triplet-loss values: the training curve's loss is the in-batch "
            "cross-entropy and cannot be compared with the paper's margin loss."
        )
    before, after = results.get("val_loss_before"), results.get("val_loss_final")
    if before is not None and after is not None:
        change = "fell" if after < before else "rose" if after > before else "did not change"
        lines.append(f"- The validation loss {change}, from {before:.3f} to {after:.3f}.")
    acc_before = results.get("val_euclidean_accuracy_before")
    acc_after = results.get("val_euclidean_accuracy_final")
    if acc_before is not None and acc_after is not None:
        change = "rose" if acc_after > acc_before else "fell" if acc_after < acc_before else "did not change"
        lines.append(
            f"- The share of validation triplets with the positive closer than the negative (L2) {change}, "
            f"from {100 * acc_before:.1f}% to {100 * acc_after:.1f}%."
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- notebook 05: Table 1
def interpret_table1(
    results: Mapping[str, Mapping[str, Any]],
    deltas: Sequence[Delta] = (),
    trained: str = "trained",
    base: str = "base",
    tfidf: str = "tfidf-svd",
    random: str = "random",
    train_metrics: Mapping[str, Any] | None = None,
) -> str:
    """Notebook 05: the trained model against its base per metric (with the paired CI where ``deltas`` has one),
    against the paper's SPECTER vs SciBERT direction, classification against TF-IDF, and every model against random."""
    rows = {name: metric_row(result) for name, result in results.items()}
    lines = []
    if train_metrics:
        lines.append(f"- The trained model was trained with {loss_description(train_metrics)}.")
    if trained in rows and base in rows:
        by_task = {(d.task, d.metric): d for d in deltas if d.row == trained and d.reference == base}
        paper_specter, paper_scibert = (
            dict(zip(HEADERS, PAPER_TABLE1[m][:-1], strict=True)) for m in ("SPECTER", "SciBERT")
        )
        for key, metric_key, header in TABLE1_COLUMNS:
            if header not in rows[trained] or header not in rows[base]:
                continue
            diff = rows[trained][header] - rows[base][header]
            delta = by_task.get((key, DELTA_METRICS.get(metric_key, "")))
            ci = (delta.ci_low, delta.ci_high) if delta else None
            sentence = difference_sentence(
                trained, base, header, delta.diff if delta else diff, ci, delta.p if delta else None
            )
            shown = evidence(ci)
            paper = paper_sentence(shown, paper_specter[header] - paper_scibert[header], "SPECTER vs SciBERT")
            lines.append(f"- {sentence} {paper}")
    lines.extend(_classification_vs_tfidf(rows, tfidf, exclude=(random, tfidf)))
    if random in rows:
        shared = [h for h in HEADERS if h in rows[random]]
        beaten = [
            n for n, r in rows.items() if n != random and all(r.get(h, -math.inf) > rows[random][h] for h in shared)
        ]
        others = [n for n in rows if n not in (random, *beaten)]
        if beaten:
            lines.append(f"- Above random vectors on every metric: {', '.join(beaten)}.")
        if others:
            lines.append(f"- Not above random vectors on every metric: {', '.join(others)}.")
    return "\n".join(lines)


def _classification_vs_tfidf(rows: Mapping[str, Mapping[str, float]], tfidf: str, exclude: Sequence[str]) -> list[str]:
    lines = []
    if tfidf not in rows:
        return lines
    for header in CLASSIFICATION_HEADERS:
        if header not in rows[tfidf]:
            continue
        reference = rows[tfidf][header]
        models = {n: r[header] for n, r in rows.items() if n not in exclude and header in r}
        if not models:
            continue
        below = sorted(n for n, v in models.items() if v < reference)
        above = sorted(n for n, v in models.items() if v > reference)
        numbers = ", ".join(f"{n} {v:.2f}" for n, v in models.items())
        if below and not above:
            verdict = "every model scores below the TF-IDF baseline"
        elif above and not below:
            verdict = "every model scores above the TF-IDF baseline"
        else:
            verdict = f"above the TF-IDF baseline: {', '.join(above) or 'none'}; below it: {', '.join(below) or 'none'}"
        lines.append(f"- {header}: {verdict} ({tfidf} {reference:.2f}; {numbers}), in one run each.")
    return lines


# ---------------------------------------------------------------- notebook 06: Figure 2
SPACE_WHAT = {"knn_agreement": "k-NN topic agreement", "silhouette": "silhouette by class"}
PROJECTION_NAMES = {"tsne": "t-SNE", "umap": "UMAP"}
KNEE = "1"  # the eps factor of the knee rule itself (analysis.geometry: factors keyed by f"{factor:g}")


def geometry_findings(analysis: Mapping[str, Any], base: str = "base", trained: str = "trained") -> list[dict]:
    """Each Figure 2 difference of ``trained`` against ``base`` with its verdict (``shown``: +1 / -1 / 0) by the one
    rule: the full-space measures (paired over papers) and each projection's homogeneity and completeness at the
    knee (paired over projection seeds) are one family, Holm-adjusted; the verdicts at every ``eps`` of the grid
    (``grid``) another. Each ``test`` carries its ``p_adjusted``."""
    findings = []
    space = analysis.get("space") or {}
    for measure, what in SPACE_WHAT.items():
        test = (space.get("versus") or {}).get(trained, {}).get(measure)
        if test:
            findings.append({"kind": "space", "measure": measure, "what": what, "test": dict(test)})
    grid_tests: list[dict[str, Any]] = []
    for method, per_model in (analysis.get("versus") or {}).items():
        tests = per_model.get(trained)
        if not tests or KNEE not in tests:
            continue
        for measure in ("homogeneity", "completeness"):
            grid = {factor: projection_test(t[measure]) for factor, t in tests.items()}
            grid_tests += [t for t in grid.values() if t]
            what = f"{PROJECTION_NAMES.get(method, method)} {measure}"
            test = projection_test(tests[KNEE][measure]) or dict(tests[KNEE][measure])
            entry = {"kind": "projection", "method": method, "measure": measure}
            findings.append({**entry, "what": what, "test": test, "tests": grid})
    knee = [f["test"] for f in findings if is_hierarchical(f["test"])]
    if knee:
        adjust_family(knee)
    if grid_tests:
        adjust_family(grid_tests)
    for f in findings:
        f["shown"] = verdict(f["test"]) if f["test"].get("p") is not None else 0
        if f["kind"] == "projection":
            f["grid"] = {factor: verdict(t) if t else 0 for factor, t in f.pop("tests").items()}
    return findings


VERDICT = {1: "higher", -1: "lower", 0: "no difference detected"}


def _grid_sentence(grid: Mapping[str, int]) -> str:
    counts = {v: sum(1 for s in grid.values() if s == v) for v in (1, -1, 0)}
    parts = [f"{VERDICT[v]} at {counts[v]}" for v in (1, -1, 0) if counts[v]]
    factors = sorted(grid, key=float)
    return f"over eps = {factors[0]} to {factors[-1]} x the knee: {', '.join(parts)} of {len(grid)} values"


def interpret_geometry(analysis: Mapping[str, Any], base: str = "base", trained: str = "trained") -> str:
    """Notebook 06: ``trained`` against ``base`` in the full space (paired over papers), then on each projection
    (paired over projection seeds, with the eps grid), each read by the verdict rule (:func:`geometry_findings`)."""
    findings = geometry_findings(analysis, base, trained)
    paper = PAPER_FIGURE2
    paper_h = paper["SPECTER"]["homogeneity"] - paper["SciBERT"]["homogeneity"]
    space = analysis.get("space") or {}
    family = sum(1 for f in findings if is_hierarchical(f["test"]))
    lines = [
        f"- The full-space measures and each projection's scores at the knee are one family of {family} comparisons, "
        "Holm-adjusted, and the eps grid another: a difference reads higher or lower only where its adjusted p is "
        "under 0.05."
    ]
    for f in findings:
        test, shown = f["test"], f["shown"]
        if f["kind"] == "space":
            means = space["models"]
            what = (
                f"{f['what']} ({space['k']} nearest papers by cosine, full space)"
                if f["measure"] == "knn_agreement"
                else f"{f['what']} (cosine, full space)"
            )
            sentence = reading_sentence(trained, base, what, test, decimals=3, units="papers")
            lines.append(
                f"- {sentence} ({base} {means[base][f['measure']]:.3f}, {trained} {means[trained][f['measure']]:.3f}; "
                f"paired over {test['queries']:,} papers.) "
                + paper_sentence(shown, paper_h, "SPECTER vs SciBERT homogeneity", decimals=2)
            )
            continue
        scores = analysis["scores"][f["method"]]
        b, t = scores[base], scores[trained]
        m = f["measure"]
        lead = (
            f"- {f['what']} (DBSCAN at the knee, {test['seeds']} projection seeds): {base} {mean_sd_text(b, m)}, "
            f"{trained} {mean_sd_text(t, m)}; "
        )
        if test.get("p") is None:
            reading = f"one seed, Δ {_fmt(test['diff'])}: no interval, so no difference is stated"
        else:
            reading = reading_sentence(
                trained, base, f"{f['what']}", test, scope="projection seeds resampled, the papers fixed"
            ).rstrip(".")
        paper_diff = paper["SPECTER"][m] - paper["SciBERT"][m]
        lines.append(
            f"{lead}{reading}; {_grid_sentence(f['grid'])}. "
            + paper_sentence(shown, paper_diff, f"SPECTER vs SciBERT {m}", decimals=2)
        )
    if space:
        lines.append(
            "- The full-space tests pair the papers of one trained model: they cover the choice of papers, not the "
            "training's randomness; the projection intervals cover the projection's seed, with the papers fixed."
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- notebook 07: Tables 2 and 3
# No hard negatives under in-batch negatives (the run's recipe) and under the paper's triplet loss (against the
# paper's recipe with hard negatives): the pair that tests why the first disagrees with the paper
HARD_NEGATIVE_ROWS = ("no_hard_negatives", "paper_no_hard_negatives")


def hard_negative_sentence(in_batch: tuple[float, int, str], triplet: tuple[float, int, str]) -> str:
    """What removing hard negatives does under the two losses (``(Δ all, shown sign, against)`` each), and whether
    that supports the explanation that in-batch negatives stand in for the one mined hard negative."""
    (d_batch, s_batch, ref_batch), (d_triplet, s_triplet, ref_triplet) = in_batch, triplet
    lead = (
        f"- **hard negatives under two losses**: without them the average moves {_fmt(d_batch, 2)} with in-batch "
        f"negatives (against {ref_batch}: {VERDICT[s_batch]}) and {_fmt(d_triplet, 2)} with the paper's triplet loss "
        f"(against {ref_triplet}: {VERDICT[s_triplet]})."
    )
    if s_triplet < 0 and s_batch >= 0:
        reading = (
            "Hard negatives matter only where the mined negative is the triplet's one negative: this supports the "
            "explanation that the other papers of a batch stand in for them."
        )
    elif s_triplet < 0 and s_batch < 0:
        reading = "Hard negatives help under both losses, as in the paper."
    elif s_triplet == 0 and s_batch == 0:
        reading = "Neither loss shows a difference: at this training budget hard negatives carry no measured signal."
    else:
        reading = (
            "Under the paper's loss, too, the drop that the paper saw does not appear, so the in-batch negatives do "
            "not explain the difference from the paper."
        )
    return f"{lead} {reading}"


def row_verdict(signs: Sequence[int]) -> int:
    """A row's verdict from its tasks' verdicts: the sign every detected difference shares; 0 with none detected
    or with detected differences of both signs."""
    detected = {s for s in signs if s}
    return detected.pop() if len(detected) == 1 else 0


def interpret_ablations(
    statistics: Mapping[str, Any], reference: str = "specter", paper_rows: Mapping[str, str] | None = None
) -> str:
    """Notebook 07: each row against the row it is tested against, by one rule. On each ranking task the two-level
    bootstrap over seeds and queries (``evaluation.hierarchical``), every comparison of the table one Holm family:
    higher / lower only where the adjusted p is under 0.05. A row is higher (lower) when at least one task is and no
    task goes the other way; only then is the paper's direction for that row confirmed or contradicted. The
    average over seeds is stated, not tested."""
    groups, paired = statistics["groups"], statistics.get("paired") or {}
    paper_rows = dict(paper_rows or {})
    lines = []
    tested = any(
        is_hierarchical(test)
        for entry in (paired.get("rows") or {}).values()
        for task in (entry.get("tasks") or {}).values()
        for test in task["versus"].values()
    )
    if tested:
        lines.append(
            f"- Each row is compared with the row it is tested against on each ranking task, seeds and queries "
            f"resampled ({paired.get('n_resamples', 0):,} resamples); the table's {paired.get('family', 0)} "
            "comparisons are one family, Holm-adjusted: a row reads higher or lower only where an adjusted p is "
            "under 0.05."
        )
    effects: dict[str, tuple[float, int, str]] = {}  # row: (Δ all, the row's verdict, the row it is against)
    paper_ref = PAPER_TABLE2["SPECTER"]
    for name, stats in groups.items():
        against = statistics.get("compared_to", {}).get(name, reference)  # the row this one is tested against
        ref = groups.get(against, {})
        if name == reference or "all" not in stats or "all" not in ref:
            continue
        diff = stats["all"]["mean"] - ref["all"]["mean"]
        groups_used = ", ".join(c for c in TABLE2_COLUMNS if c in stats and c != "all")
        n_seeds = len(statistics.get("seeds", {}).get(name, []))
        seeds = "1 seed" if n_seeds == 1 else f"{n_seeds or '?'} seeds"
        average = (
            f"Δ {_fmt(diff)} on the average against {against} ({groups_used}; {seeds}, mean over seeds, not tested)."
        )
        sentences, signs = [], []
        for task, task_stats in (paired.get("rows", {}).get(name, {}).get("tasks") or {}).items():
            test = task_stats["versus"].get(against)
            if test:
                sentences.append(reading_sentence(name, against, f"{task} MAP", test))
                signs.append(verdict(test))
        paper_name = paper_rows.get(name)
        paper_values = PAPER_ABLATION_ROWS.get(paper_name or "")
        paper_what = f"'{paper_name}' vs SPECTER, average of all 12 metrics"
        shown = row_verdict(signs)
        if sentences:
            body = f"{average} {' '.join(sentences)}"
        else:
            body = f"{average} No ranking task compares it per query, so nothing is read from it."
        paper = (
            paper_sentence(shown, paper_values[4] - paper_ref[4], paper_what)
            if paper_values
            else "The paper has no row for this variant."
        )
        lines.append(f"- **{name}**: {body} {paper}".rstrip())
        effects[name] = (diff, shown, against)
    if all(name in effects for name in HARD_NEGATIVE_ROWS):
        lines.append(hard_negative_sentence(*(effects[name] for name in HARD_NEGATIVE_ROWS)))
    run = set(paper_rows.get(n) for n in groups)
    missing = [row for row in PAPER_TABLE2 if row != "SPECTER" and row not in run]
    if missing:
        lines.append(f"- Rows of the paper's Table 2 not run here: {', '.join(missing)}; nothing is said about them.")
    return "\n".join(lines)


# ---------------------------------------------------------------- notebook 08: heads
def _heads_sentence(where: str, row: str, reference: str, what: str, diff: float, delta: Delta | None) -> str:
    """One heads comparison by the one rule where its test is there (``heads_deltas``), else the bare difference."""
    if delta is not None and delta.method:
        return f"- {where}: " + reading_sentence(row, reference, what, delta, units="test papers")
    return (
        f"- {where}: {row} is {_fmt(diff)} against {reference} on {what}; no paired test (the rows carry no "
        "predictions), so nothing is read from it."
    )


def interpret_heads(
    rows: Sequence[Mapping[str, Any]], metric: str = "macro_f1", deltas: Sequence[Delta] | None = None
) -> str:
    """Notebook 08: per encoder, input length and training papers, the SVM against the linear head, each deeper head
    against the linear one, and end to end against the frozen control, each by the one rule: the two-level
    bootstrap over seeds and test papers of ``deltas`` (``evaluation.deltas.heads_deltas``, matched by
    :func:`heads_delta_label`), higher / lower only where its Holm-adjusted p (over every comparison of the
    notebook) is under 0.05."""
    groups: dict[tuple[Any, Any, Any, str, str], list[float]] = {}
    for row in rows:
        key = (row.get("encoder"), row.get("max_length"), row.get("train_papers", ""), row.get("training", "frozen"))
        groups.setdefault((*key, row["head"]), []).append(float(row[metric]))
    tests = {d.row: d for d in deltas or ()}
    label = "macro-F1" if metric == "macro_f1" else metric
    lines = []
    for encoder, length, papers in dict.fromkeys(k[:3] for k in groups):
        where = f"{encoder} encoder at {length} wordpieces" if length else f"{encoder} encoder"
        where += f", {papers} training papers" if papers != "" else ""
        frozen = {k[4]: v for k, v in groups.items() if k[:4] == (encoder, length, papers, "frozen")}
        group = (encoder, length, papers)
        linear = frozen.get("linear")
        if SVM_HEAD in frozen and linear:
            svm = frozen[SVM_HEAD][0]
            mean, sd = mean_sd(linear)
            linear_text = (
                f"{mean:.2f} ± {sd:.2f} over {len(linear)} seeds" if len(linear) > 1 else f"{mean:.2f}, 1 seed"
            )
            what = f"{label} (SVM {svm:.2f}, linear head {linear_text})"
            delta = tests.get(heads_delta_label(*group, SVM_HEAD, "frozen", "linear"))
            lines.append(_heads_sentence(where, "the linear SVM", "the linear head", what, svm - mean, delta))
        for head, values in frozen.items():
            if head in (SVM_HEAD, "linear") or not linear:
                continue
            diff = mean_sd(values)[0] - mean_sd(linear)[0]
            delta = tests.get(heads_delta_label(*group, head, "frozen", "linear"))
            lines.append(_heads_sentence(where, f"the frozen {head} head", "the linear head", label, diff, delta))
        for (enc, ln, pp, training, head), values in groups.items():
            if (enc, ln, pp) != (encoder, length, papers) or training != "end to end" or head not in frozen:
                continue
            diff = mean_sd(values)[0] - mean_sd(frozen[head])[0]
            delta = tests.get(heads_delta_label(*group, head, "end to end", head))
            row, reference = f"the {head} head trained end to end", "the same head on the frozen encoder"
            lines.append(_heads_sentence(where, row, reference, label, diff, delta))
    return "\n".join(lines)


def _plain(value: float) -> str:
    return f"{float(value):.2f}"


SVM_PROTOCOL = "SCIDOCS protocol"  # evaluation.svm_variants: the unchanged protocol
SVM_COMBINED_PREFIX = "standardised + "  # the variant that combines the single changes


def interpret_svm_gap(gap: Mapping[str, Mapping[str, Any]], min_gap: float = 0.5) -> str:
    """Why the SVM and the linear head disagree, from the measured variants (``workflow.heads.svm_gap``). Per
    encoder: the gap between the linear head (mean over seeds) and the SVM under SCIDOCS's protocol; inside
    the head's seed spread (or under ``min_gap`` points) it is no difference. Otherwise the single change of the
    SVM protocol that moves it most and the share of the gap it closes, the classes the protocol's SVM never
    predicts, and whether all changes together reach the head."""
    lines = []
    for encoder, result in gap.items():
        variants = result["variants"]
        protocol = variants.get(SVM_PROTOCOL)
        linear = [float(v) for v in result.get("linear_head_macro_f1") or []]
        if protocol is None or not linear:
            continue
        head, spread = mean_sd(linear)
        svm = float(protocol["macro_f1"])
        diff = head - svm
        if abs(diff) <= max(spread, min_gap):
            lines.append(
                f"- {encoder}: the linear head ({_plain(head)}) and the SVM ({_plain(svm)}) agree: the gap of "
                f"{_plain(abs(diff))} macro-F1 is inside the head's seed spread ({_plain(spread)}) or under {min_gap}."
            )
            continue
        better = "the linear head" if diff > 0 else "the SVM"
        sentence = (
            f"- {encoder}: {better} scores {_plain(abs(diff))} macro-F1 more ({_plain(head)} for the head, {_plain(svm)} "
            f"for the SVM under SCIDOCS's protocol)."
        )
        if protocol["classes_predicted"] < protocol["classes"]:
            sentence += (
                f" The protocol's SVM predicts only {protocol['classes_predicted']} of the {protocol['classes']} "
                f"classes (C = {protocol['C']:g}, chosen by cross-validated {protocol.get('cv_scoring', 'accuracy')})."
            )
        singles = {
            name: row
            for name, row in variants.items()
            if name != SVM_PROTOCOL and not name.startswith(SVM_COMBINED_PREFIX)
        }
        if singles:
            name, row = max(singles.items(), key=lambda item: item[1]["macro_f1"])
            moved = float(row["macro_f1"]) - svm
            share = moved / diff if diff else 0.0
            if moved * diff > 0:
                sentence += (
                    f" Of the single changes, '{name}' moves the SVM most, to {_plain(row['macro_f1'])} "
                    f"({share:.0%} of the gap)."
                )
            else:
                sentence += " No single change of the SVM's protocol moves it toward the head."
        combined = [(n, r) for n, r in variants.items() if n.startswith(SVM_COMBINED_PREFIX)]
        if combined:
            name, row = combined[0]
            reaches = abs(head - float(row["macro_f1"])) <= max(spread, min_gap) or (
                (float(row["macro_f1"]) - head) * diff > 0
            )
            sentence += f" With '{name}' it scores {_plain(row['macro_f1'])}: " + (
                "as the head does, so these settings account for the gap."
                if reaches
                else f"{_plain(abs(head - float(row['macro_f1'])))} short of the head, a part these settings do not explain."
            )
        lines.append(sentence)
    return "\n".join(lines) if lines else "- No SVM protocol variants were measured (heads.svm_variants is off)."
