"""Every markdown table a reader sees: results in the paper's Table 1 order beside the paper's rows, Table 2
group averages over seeds, Figure 2's homogeneity and completeness, and the classification heads."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from specter_utils.analysis.geometry import PAPER_FIGURE2
from specter_utils.evaluation.rankers import RANKER_KEY, is_ranker
from specter_utils.presentation import labels
from specter_utils.tasks import PAPER_AVERAGE, PAPER_MODELS, RANKING, TASKS, grouped

TABLE1_COLUMNS = tuple(column for task in TASKS for column in task.columns)  # (result key, metric key, header)
HEADERS = tuple(h for _, _, h in TABLE1_COLUMNS)
FIRST_ROWS = ("trained", "base")  # Table 1 opens with the run's model and the model it started from
# Table 1's rows that are not embeddings (evaluation.rankers): BM25 stands beside this text baseline, the text-free
# rankers close the table as one marked group
BM25_BESIDE = "tfidf-svd"
RANKER_LABELS = {"bm25": "BM25", "in-degree": "text-free: in-degree", "year": "text-free: year"}
NOT_APPLICABLE = "—"  # a ranker row's cell where the metric does not apply (classification, the average)
# the columns a ranker row has no value in: every task that is not a ranking task, and so the average over them
RANKER_NOT_APPLICABLE = (*(h for task in TASKS if task.kind != RANKING for h in task.headers), "avg")

# docs/protocol.md section 5 (the paper's numbers): the 12 metrics, then the paper's average.
PAPER_TABLE1: dict[str, tuple[float, ...]] = {
    model: (*(value for task in TASKS for value in task.paper[model]), PAPER_AVERAGE[model]) for model in PAPER_MODELS
}


def metric_row(result: Mapping[str, Any]) -> dict[str, float]:
    """``{header: value}`` for the Table 1 metrics present in one result (an :func:`evaluate` dict)."""
    row = {}
    for key, metric, header in TABLE1_COLUMNS:
        entry = result.get(key)
        value = entry.get(metric) if isinstance(entry, Mapping) else None
        if isinstance(value, Mapping):  # {"mean": ..} forms
            value = value.get("mean")
        if isinstance(value, (int, float)) and not math.isnan(value):
            row[header] = float(value)
    return row


def row_label(name: str, result: Mapping[str, Any]) -> str:
    """Table 1's name of a row: the embeddings file's name, or a ranker's label (``text-free: in-degree``)."""
    return RANKER_LABELS.get(name, name) if is_ranker(result) else name


def with_rankers(
    results: Mapping[str, Mapping[str, Any]], rankers: Mapping[str, Mapping[str, Any]]
) -> dict[str, Mapping[str, Any]]:
    """The embedding rows and the ranker rows in Table 1's order: BM25 right after TF-IDF-SVD (else after the
    embedding rows), the text-free rankers last."""
    out: dict[str, Mapping[str, Any]] = {}
    text = {n: r for n, r in rankers.items() if not r["config"].get("text_free")}
    for name, result in results.items():
        out[name] = result
        if name == BM25_BESIDE:
            out.update(text)
    out.update(text)
    out.update({n: r for n, r in rankers.items() if r["config"].get("text_free")})
    return out


def comparison_table(
    results: Mapping[str, Any] | Mapping[str, Mapping[str, Any]],
    paper_rows: Iterable[str] | None = tuple(PAPER_TABLE1),
    name: str = "ours",
) -> pd.DataFrame:
    """Our row(s) then the paper's, Table 1 columns, and averages. ``results``: one :func:`evaluate` result (shown as
    ``name``, with its ``rankers`` rows) or ``{model name: result}``; a ranker without a metric gives no row.

    ``avg`` is the mean over the metrics every embedding row has (so rows stay comparable when some tasks are
    absent); a ranker row has no ``avg`` (NaN) and does not narrow those columns. ``paper avg`` is the paper's own."""
    if any(key in results for key, _, _ in TABLE1_COLUMNS):  # one result, with its rankers' rows where it has them
        results = {name: results, **(results.get("rankers") or {})}
    # the mag slot named for its labels (journal F1 on hep-th), C by macro-F1 beside it: not the paper's, not in avg
    ours = {row_label(model, r): labels.classification_columns(metric_row(r), r) for model, r in results.items()}
    rankers = {row_label(model, r) for model, r in results.items() if is_ranker(r)}
    ours = {model: row for model, row in ours.items() if row or model not in rankers}
    own = list(dict.fromkeys(h for row in ours.values() for h in row if h not in HEADERS))
    averaged = [row for model, row in ours.items() if model not in rankers] or list(ours.values())
    shared = [h for h in HEADERS if averaged and all(h in row for row in averaged)]
    records = []
    for model, row in ours.items():
        average = math.nan if model in rankers else _mean(row, shared)
        records.append({"model": model, **row, "avg": average, "paper avg": math.nan})
    for model in paper_rows or ():
        values = PAPER_TABLE1[model]
        row = {h: v for h, v in zip(HEADERS, values[:-1], strict=True) if not math.isnan(v)}  # NaN: not measured
        records.append({"model": f"{model} (paper)", **row, "avg": _mean(row, shared), "paper avg": values[-1]})
    frame = pd.DataFrame.from_records(records, columns=["model", *HEADERS, *own, "avg", "paper avg"])
    frame.attrs["not_applicable"] = sorted(rankers & set(ours))  # rows whose empty cells read "—", not blank
    return frame.set_index("model")


def _mean(row: Mapping[str, float], columns: list[str]) -> float:
    values = [row[c] for c in columns if c in row]
    return round(sum(values) / len(values), 2) if values else math.nan


def to_markdown(frame: pd.DataFrame, decimals: int = 2, drop_empty: bool = True) -> str:
    """A GitHub markdown table of ``frame`` (no extra dependency); all-empty columns dropped. The rows in
    ``frame.attrs["not_applicable"]`` (ranker rows) read "—" (no value) in the columns of :data:`RANKER_NOT_APPLICABLE`,
    not blank."""
    not_applicable = set(frame.attrs.get("not_applicable") or ())
    if drop_empty:
        frame = frame.dropna(axis=1, how="all")
    header = [frame.index.name or "", *map(str, frame.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, row in frame.iterrows():
        na = NOT_APPLICABLE if index in not_applicable else ""
        cells = [_cell_text(v, decimals, na if c in RANKER_NOT_APPLICABLE else "") for c, v in row.items()]
        lines.append("| " + " | ".join([str(index), *cells]) + " |")
    return "\n".join(lines)


def _cell_text(value: Any, decimals: int, empty: str) -> str:
    if pd.isna(value):
        return empty
    return f"{value:.{decimals}f}" if isinstance(value, float) else str(value)


def ranker_note(results: Mapping[str, Mapping[str, Any]]) -> str:
    """What the ranker rows are and which rankers were skipped and why ("" without ranker rows)."""
    rankers = {name: r for name, r in results.items() if is_ranker(r)}
    if not rankers:
        return ""
    shown = [row_label(n, r) for n, r in rankers.items() if metric_row(r)]
    lines = []
    if shown:
        lines.append(
            f"Rows that are not embeddings ({', '.join(shown)}): each ranks a query's candidates without vectors "
            "and is scored by the same trec_eval code; '—': no value (classification, and so no `avg`). BM25 reads "
            "title and abstract; the text-free rows read no text: in-degree counts a candidate's citations in the "
            "training graph (no held-out query's citation counted), year ranks by publication year relative to the "
            "query."
        )
    for name, result in rankers.items():
        reason = (result.get("skipped") or {}).get(RANKER_KEY)
        if reason:
            lines.append(f"{row_label(name, result)}: not shown, {reason}.")
    return "\n".join(lines)


def render(
    results: Mapping[str, Any], paper_rows: Iterable[str] | None = tuple(PAPER_TABLE1), name: str = "ours"
) -> tuple[pd.DataFrame, str]:
    """One call: the comparison DataFrame and its markdown."""
    frame = comparison_table(results, paper_rows, name)
    return frame, to_markdown(frame)


# ---------------------------------------------------------------- Table 2 (ablations)
# docs/protocol.md section 5 (the paper's numbers), Table 2: averages over CLS / USR / CITE / REC / all.
PAPER_TABLE2 = {
    "SPECTER": (84.4, 88.2, 91.5, 37.2, 80.2),
    "- abstract": (82.2, 72.2, 73.6, 34.5, 68.1),
    "+ venue": (84.5, 88.0, 91.2, 36.7, 79.9),
    "+ author": (82.7, 72.3, 71.0, 34.6, 67.3),
    "no hard negatives": (82.4, 85.8, 89.8, 36.8, 78.4),
    "start with BERT-Large": (81.7, 85.9, 87.8, 36.1, 77.5),
}
# The paper's Table 3 (task-specific fine-tuning of SciBERT, same columns); its SPECTER row is Table 2's
PAPER_TABLE3 = {
    "SciBERT fine-tune on co-view": (83.0, 84.2, 84.1, 36.4, 76.0),
    "SciBERT fine-tune on co-read": (82.3, 85.4, 86.7, 36.3, 77.1),
    "SciBERT fine-tune on co-citation": (82.9, 84.3, 85.2, 36.6, 76.4),
    "SciBERT fine-tune on multitask": (83.3, 86.1, 88.2, 36.0, 78.0),
}
# Every paper row an ablation row of notebook 07 may stand beside (workflow.ablations.PAPER_ROWS names them)
PAPER_ABLATION_ROWS = {**PAPER_TABLE2, **PAPER_TABLE3}
# The paper's Table 2 or 3 row each variant of notebook 07 (config.ABLATIONS) stands beside
PAPER_ROWS = {
    "specter": "SPECTER",
    "no_abstract": "- abstract",
    "venue": "+ venue",
    "author": "+ author",
    "no_hard_negatives": "no hard negatives",
    "paper_no_hard_negatives": "no hard negatives",  # the same row of the paper, under the paper's own loss
    "mpnet": "start with BERT-Large",
    "cocitation": "SciBERT fine-tune on co-citation",
    "multitask": "SciBERT fine-tune on multitask",
}


def metric_values(results: dict[str, Any]) -> dict[tuple[str, str], float]:
    """``{(task, metric): value}`` for the Table 1 metrics present in one model's SCIDOCS results."""
    row = metric_row(results)
    return {(task, metric): row[header] for task, metric, header in TABLE1_COLUMNS if header in row}


TABLE2_GROUPS = {  # the paper's Table 2 groups of Table 1 metrics (CLS, USR, CITE, REC): the tasks it measured
    group: tuple(task.key for task in tasks if task.in_paper) for group, tasks in grouped("group").items()
}
TABLE2_TASKS = frozenset(key for keys in TABLE2_GROUPS.values() for key in keys)


def group_averages(results: dict[str, Any]) -> dict[str, float | None]:
    """CLS / USR / CITE / REC averages and ``all`` (over every metric present), as in the paper's Table 2: over the
    tasks the paper measured (the matched versions of cite and co-cite are Table 1's and the paired tests' only)."""
    values = {key: v for key, v in metric_values(results).items() if key[0] in TABLE2_TASKS}
    out: dict[str, float | None] = {}
    for group, tasks in TABLE2_GROUPS.items():
        got = [v for (task, _), v in values.items() if task in tasks]
        out[group] = round(sum(got) / len(got), 2) if got else None
    out["all"] = round(sum(values.values()) / len(values), 2) if values else None
    return out


# ---------------------------------------------------------------- Table 2 over seeds
TABLE2_COLUMNS = (*TABLE2_GROUPS, "all")


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample sd (n - 1) of ``values``; the sd of one value is 0.0 (callers say "1 seed")."""
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return mean, sd


def seed_group_statistics(results_per_seed: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each Table 2 group's mean and sample sd over seeds (``{group: {mean, sd, per_seed}}``; groups with data only)."""
    per_seed = [group_averages(r) for r in results_per_seed]
    out: dict[str, dict[str, Any]] = {}
    for group in TABLE2_COLUMNS:
        values = [a[group] for a in per_seed if a.get(group) is not None]
        if values:
            out[group] = {
                "mean": round(float(np.mean(values)), 2),
                # one seed has no spread: None (unmeasured), never 0, which would read as "no noise"
                "sd": round(float(np.std(values, ddof=1)), 2) if len(values) > 1 else None,
                "per_seed": values,
            }
    return out


def within_spread(row: dict[str, Any], reference: dict[str, Any]) -> bool:
    """True when ``|mean - reference mean|`` is no larger than the larger of the two seed sds (False when either
    row has one seed, so no spread)."""
    if row["sd"] is None or reference["sd"] is None:
        return False
    return abs(row["mean"] - reference["mean"]) <= max(row["sd"], reference["sd"])


def ablation_table_seeds(
    statistics: dict[str, Any], reference: str, paper_rows: dict[str, str] | None = None
) -> tuple[pd.DataFrame, str]:
    """Table 2 over seeds: each row's groups as ``mean ± sd``, the difference to ``reference`` (marked where it is
    inside the seed spread), the paired test per ranking task, and the paper's Table 2 row beside it.

    ``statistics`` is ``workflow.ablations.ablation_statistics``'s result; ``paper_rows`` maps a row to its PAPER_ABLATION_ROWS name.
    """
    groups, paired, seeds = statistics["groups"], statistics.get("paired") or {}, statistics["seeds"]
    paper_rows = paper_rows or {}
    shown = [c for c in TABLE2_COLUMNS if any(c in g for g in groups.values())]
    against_of = statistics.get("compared_to", {})  # a row tested against another row than the reference
    records, notes = [], []
    for name, stats in groups.items():
        against = against_of.get(name, reference)
        ref = groups[against]
        versus = "" if against == reference else f"vs {against}: "
        record: dict[str, Any] = {"row": name, "seeds": len(seeds.get(name, []))}
        for column in shown:
            cell = stats.get(column)
            if cell is None:
                record[column] = ""
            else:
                record[column] = f"{cell['mean']:.2f}" + ("" if cell["sd"] is None else f" ± {cell['sd']:.2f}")
        if name != reference and "all" in stats and "all" in ref:
            diff = stats["all"]["mean"] - ref["all"]["mean"]
            inside = within_spread(stats["all"], ref["all"])
            record["Δ all"] = versus + f"{diff:+.2f}" + (" (inside the seed spread)" if inside else "")
            if inside:
                notes.append(name)
        else:
            record["Δ all"] = ""
        tests = []
        for task, task_stats in (paired.get("rows", {}).get(name, {}).get("tasks", {}) or {}).items():
            test = task_stats["versus"].get(against)
            if test:
                p = "< 0.001" if test["p"] < 0.001 else f"{test['p']:.3f}"
                adjusted = test.get("p_adjusted")  # evaluation.hierarchical's test, Holm over the table
                if adjusted is not None:
                    p += ", adj. p " + ("< 0.001" if adjusted < 0.001 else f"{adjusted:.3f}")
                tests.append(f"{task} MAP {test['diff']:+.2f}, p {p}")
        record["paired test vs " + reference] = versus + "; ".join(tests) if tests else ""
        paper = PAPER_ABLATION_ROWS.get(paper_rows.get(name, ""))
        record["paper (CLS / USR / CITE / REC / all)"] = " / ".join(f"{v:.1f}" for v in paper) if paper else ""
        records.append(record)
    frame = pd.DataFrame.from_records(records).set_index("row")
    text = to_markdown(frame, drop_empty=False)
    test_text = (
        "Paired test: the per-query AP difference to the reference row (each query averaged over seeds), "
        "two-sided sign-flip permutation p."
        if paired.get("method") != "hierarchical bootstrap"
        else "Test: each ranking task's per-query AP against the row it is tested against, seeds resampled within "
        "each row and queries shared (evaluation.hierarchical), its p Holm-adjusted over the table's "
        f"{paired.get('family', 0)} comparisons (adj. p)."
    )
    text += (
        f"\n\nMean ± sample sd over seeds; groups average the metrics present ({', '.join(shown)}). "
        f"{test_text} The paper's row is on the full SCIDOCS (12 metrics), so compare directions, not levels."
    )
    if statistics.get("max_triplets"):
        text += f" Every row, the reference row included, trained on {statistics['max_triplets']:,} triplets."
    others = sorted({against for name, against in against_of.items() if name in groups and against != reference})
    if others:
        text += f"\nA row marked 'vs X' is compared with row X ({', '.join(others)}) instead of {reference}."
    if notes:
        text += (
            f"\nInside the seed spread (|Δ all| ≤ the larger sd): {', '.join(notes)}; the average is not tested, the "
            "reading below is."
        )
    single = [name for name in groups if len(seeds.get(name, [])) < 2]
    if single:
        text += (
            f"\nOne seed ({', '.join(single)}): no seed spread is measured, so a difference there is not a finding; "
            "its paired test covers the choice of queries, not the training's randomness."
        )
    return frame, text


def mean_sd_text(scores: Mapping[str, Any], key: str) -> str:
    """``mean ± sd`` over projection seeds (one seed: the value alone)."""
    sd = scores.get(f"{key}_sd")
    return f"{scores[key]:.2f}" + (f" ± {sd:.2f}" if sd is not None else "")


def interval_text(test: Mapping[str, Any] | None, decimals: int = 2) -> str:
    """``Δ [low, high]`` (and ``p`` where there is one); "" without a test, Δ alone without an interval."""
    if not test:
        return ""
    text = f"{test['diff']:+.{decimals}f}"
    if test.get("ci_low") is not None:
        text += f" [{test['ci_low']:+.{decimals}f}, {test['ci_high']:+.{decimals}f}]"
    if test.get("p") is not None:
        text += ", p < 0.001" if test["p"] < 0.001 else f", p {test['p']:.3f}"
    return text


def scores_table(result: dict[str, Any]) -> str:
    """Markdown table of homogeneity / completeness per method and model (mean ± sd over the projection seeds,
    DBSCAN at the knee), with the paper's values."""
    seeds = len(result.get("projection_seeds") or [result.get("seed")])
    lines = [
        "| projection | model | homogeneity | completeness | V-measure | clusters | noise | seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method, per_model in result["scores"].items():
        for model, s in per_model.items():
            lines.append(
                f"| {method} | {model} | {mean_sd_text(s, 'homogeneity')} | {mean_sd_text(s, 'completeness')} "
                f"| {mean_sd_text(s, 'v_measure')} | {s['n_clusters']:g} | {s['noise_fraction']:.2f} | {seeds} |"
            )
    for model, s in PAPER_FIGURE2.items():
        lines.append(f"| tsne (paper, MAG) | {model} | {s['homogeneity']:.2f} | {s['completeness']:.2f} | | | | 1 |")
    return "\n".join(lines)


def space_table(result: Mapping[str, Any]) -> str:
    """The full-space measures per model (mean over the papers), then each model against the reference: the mean
    per-paper difference, its 95% bootstrap interval over the papers and the permutation p."""
    space = result["space"]
    reference = space["reference"]
    lines = [
        f"| model | k-NN topic agreement (k = {space['k']}, cosine) | silhouette by class (cosine) |",
        "|---|---|---|",
    ]
    for model, measures in space["models"].items():
        lines.append(f"| {model} | {measures['knn_agreement']:.3f} | {measures['silhouette']:.3f} |")
    for model, tests in (space.get("versus") or {}).items():
        cells = [interval_text(tests.get(m), 3) for m in ("knn_agreement", "silhouette")]
        lines.append(f"| {model} − {reference}, paired over {result['n_papers']:,} papers | {' | '.join(cells)} |")
    return "\n".join(lines)


def eps_grid_table(result: Mapping[str, Any]) -> str:
    """DBSCAN's scores over the ``eps`` grid (multiples of the knee's), mean ± sd over the projection seeds, and
    each model's difference to the reference paired by seed with its 95% interval over seeds."""
    reference = result.get("reference")
    lines = [
        "| projection | eps / knee | model | homogeneity | completeness | noise | Δ homogeneity | Δ completeness |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method, per_model in (result.get("eps_grid") or {}).items():
        versus = (result.get("versus") or {}).get(method, {})
        for factor in per_model.get(reference, {}):
            for model, cells in per_model.items():
                s = cells[factor]
                tests = versus.get(model, {}).get(factor, {})
                lines.append(
                    f"| {method} | {factor} | {model} | {mean_sd_text(s, 'homogeneity')} | {mean_sd_text(s, 'completeness')} "
                    f"| {s['noise_fraction']:.2f} | {interval_text(tests.get('homogeneity'))} "
                    f"| {interval_text(tests.get('completeness'))} |"
                )
    return "\n".join(lines)


# ---------------------------------------------------------------- classification heads (notebook 08)
ROW_KEYS = ("encoder", "max_length", "train_papers", "head", "training")


def heads_frame(rows: list[dict[str, Any]], metric: str = "macro_f1") -> pd.DataFrame:
    """One row per (encoder, input length, training papers, head, training), one column per seed, then mean and std
    over seeds; the deterministic SVM's one value is shown in every seed column."""
    seeds = sorted({r["seed"] for r in rows if r.get("seed") is not None})
    grouped: dict[tuple, dict[Any, float]] = {}
    for r in rows:
        key = tuple(r.get(k, "") for k in ROW_KEYS)
        grouped.setdefault(key, {})[r.get("seed")] = float(r[metric])
    records = []
    for key, by_seed in grouped.items():
        values = [by_seed[s] for s in seeds if s in by_seed] or [by_seed[None]]
        record = dict(zip(ROW_KEYS, key, strict=True))
        for s in seeds:
            record[f"seed {s}"] = by_seed.get(s, by_seed.get(None, float("nan")))
        record["mean"] = round(float(np.mean(values)), 2)
        # one value (one seed, or the deterministic SVM) has no spread: NaN, shown blank, never 0.00
        record["std"] = round(float(np.std(values, ddof=1)), 2) if len(values) > 1 else float("nan")
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    return frame.set_index(list(ROW_KEYS)) if len(frame) else frame


def frame_markdown(frame: pd.DataFrame) -> str:
    """A pandas frame (index columns first) as a markdown table, numbers with 2 decimals."""
    flat = frame.reset_index()
    header = "| " + " | ".join(str(c) for c in flat.columns) + " |"
    lines = [header, "|" + "---|" * len(flat.columns)]
    for _, row in flat.iterrows():
        cells = [("" if math.isnan(v) else f"{v:.2f}") if isinstance(v, float) else str(v) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def svm_gap_table(gap: Mapping[str, Mapping[str, Any]]) -> str:
    """The SVM protocol changed one setting at a time, per embedding file: macro-F1, accuracy, chosen C and the
    classes the SVM predicts; the linear head's mean macro-F1 over seeds last (``workflow.heads.svm_gap``)."""
    lines = [
        "| encoder | SVM protocol | macro-F1 | accuracy | chosen C | classes predicted |",
        "|---|---|---|---|---|---|",
    ]
    for encoder, result in gap.items():
        for name, row in result["variants"].items():
            predicted = f"{row['classes_predicted']} of {row['classes']}"
            lines.append(
                f"| {encoder} | {name} | {row['macro_f1']:.2f} | {row['accuracy']:.2f} | {row['C']:g} | {predicted} |"
            )
        linear = list(result.get("linear_head_macro_f1") or [])
        if linear:
            spread = f" ± {np.std(linear, ddof=1):.2f}" if len(linear) > 1 else ""
            lines.append(f"| {encoder} | linear head ({len(linear)} seeds) | {np.mean(linear):.2f}{spread} | | | |")
    return "\n".join(lines)
