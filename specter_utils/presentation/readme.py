"""The generated blocks of README.md and docs/results.md: every number in them is read from ``reports/<preset>/``.

A block sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``; ``specter-utils report --readme``
rewrites each block in place from the reports, and ``--check`` fails when a file differs from what the reports give
(``tests/test_readme.py`` runs the check on the committed files). Blocks:

- ``results``: Table 1 of every report (trained, base and baseline rows, and the ranker rows that are not
  embeddings, BM25 and the text-free in-degree and year, with "—" where they have no value; CLS macro-F1 of the
  ``mag`` slot, cite and co-cite MAP, and the other SCIDOCS columns a run has), captioned with its benchmark:
  corpus, split, queries per task and the evaluation length;
- ``figure2``: notebook 06's full-space measures of base and trained (k-NN topic agreement, silhouette, paired
  over papers), then its DBSCAN homogeneity and completeness over projection seeds and eps beside the paper's,
  and a sentence per report read by the verdict rule;
- ``times``: each preset's measured wall time per notebook, the total, the largest peak memory, the commit and the
  machine;
- ``ablations``: each report's ``ablations.md`` (notebook 07's table), captioned with its benchmark;
- ``levers``: each committed recipe-lever table, ``experiments/measured/recipe_levers_*.md`` beside ``reports/``
  (written by ``experiments/recipe_levers.py --table``, which names its benchmark in its first line).
- ``commands``: each whole-command benchmark, ``bench/measured/commands_*.md`` (``bench/bench_commands.py``), and
  int8's calibration sizes, ``bench/measured/int8_calibration_*.md`` (``bench/bench_int8_calibration.py``).
- ``train_dtype``: bf16 against fp32 training: throughput, ``bench/measured/train_dtype_*.md``
  (``bench/bench_train_dtype.py``), and MAP over seeds, ``experiments/measured/train_dtype_*.md``
  (``experiments/train_dtype.sh``).
- ``structure``: what rows that read no text score on a preset's ranking tasks, random and matched negatives,
  ``experiments/measured/structure_controls_*.md`` (``experiments/structure_controls.py``).
- ``embedding``: the in-process embedding benchmark, ``bench/measured/embedding_*.md`` (``bench/bench_embedding.py
  --out``).

A report holds ``pipeline.json``, ``spec.yaml`` and ``metrics/<notebook>.json`` (each notebook's own
``metrics.json``); every number is read from them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from specter_utils.analysis.geometry import PAPER_FIGURE2
from specter_utils.errors import DataError
from specter_utils.executed import machine_label
from specter_utils.io import atomic_write, read_json
from specter_utils.layout import PIPELINE_FILE, RESULTS_TABLE
from specter_utils.presentation import labels, overview
from specter_utils.presentation.formats import comparison_frame, comparison_lead
from specter_utils.presentation.interpret import VERDICT, geometry_findings, interpret_ablations
from specter_utils.presentation.structure import gain_rows
from specter_utils.presentation.tables import (
    FIRST_ROWS,
    NOT_APPLICABLE,
    PAPER_ROWS,
    RANKER_NOT_APPLICABLE,
    ablation_table_seeds,
    interval_text,
    is_ranker,
    metric_row,
    row_label,
    to_markdown,
)
from specter_utils.spec import DEFAULTS, flatten, load_spec
from specter_utils.tasks import RANKING_CITATION_FIRST, TASKS

LEVER_TABLE_SPLIT = re.compile(r"Benchmark: (?P<split>\w+) split")  # the first words of a lever table
BLOCK = re.compile(r"<!-- generated:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /generated:(?P=name) -->", re.DOTALL)
METRICS_DIR = "metrics"  # reports/<preset>/metrics/<notebook>.json: each notebook's metrics.json
# Table 1's columns (header, label): the CLS task of the mag slot, cite and co-cite MAP, then the other SCIDOCS
# columns when a run has them (the benchmarks built from a citation corpus have no MeSH, usage or recommendation data)
TABLE1_SHOWN = tuple(column for task in TASKS for column in task.readme_columns)
# (the tasks of ours only, as cite and co-cite with matched negatives, when a run has them)
ALWAYS_SHOWN = tuple(h for task in TASKS if task.citation_corpus and task.in_paper for h, _ in task.readme_columns)
# each ranking task of the results and its key in benchmark.json (and notebook 01's tables); citation tasks first
TASK_SLOTS = {task.key: task.name for task in RANKING_CITATION_FIRST}


# ---------------------------------------------------------------- one report folder
@dataclass(frozen=True)
class Report:
    """What one ``reports/<preset>/`` folder holds."""

    preset: str
    folder: Path
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)  # notebook -> its metrics.json
    pipeline: dict[str, Any] = field(default_factory=dict)  # pipeline.json
    spec: dict[str, Any] = field(default_factory=dict)  # spec.yaml

    def has(self, name: str) -> bool:
        return (self.folder / name).exists()

    def text(self, name: str) -> str:
        return (self.folder / name).read_text(encoding="utf-8")


def load_report(folder: str | Path) -> Report:
    """Read one report folder (its metrics, pipeline.json and spec.yaml, where present)."""
    folder = Path(folder)
    metrics = {p.stem: read_json(p) for p in sorted((folder / METRICS_DIR).glob("*.json"))}
    pipeline = read_json(folder / PIPELINE_FILE) if (folder / PIPELINE_FILE).exists() else {}
    spec: dict[str, Any] = {}
    if (folder / "spec.yaml").exists():
        try:
            spec = yaml.safe_load((folder / "spec.yaml").read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise DataError(f"not valid YAML: {exc}".splitlines()[0], folder / "spec.yaml") from None
    return Report(str(pipeline.get("preset") or folder.name), folder, metrics, pipeline, spec)


def load_reports(root: str | Path) -> list[Report]:
    """Every report under ``root`` (``reports/``), by preset name."""
    return [load_report(p) for p in sorted(Path(root).iterdir()) if p.is_dir() and not p.name.startswith(".")]


def preset_drift(report: Report, params_dir: str | Path) -> list[str]:
    """Where the specification a report ran with differs from what its preset (with the report's overrides) gives
    today: one ``key: VALUE in the report, VALUE today`` per setting. A setting added since the report is drift only
    when today's value differs from its default (a new field at its default changes nothing). Empty for a report
    without a recorded specification or whose preset is not in ``params_dir``."""
    if not report.spec or not (Path(params_dir) / f"{report.preset}.yaml").is_file():
        return []
    recorded = flatten({k: v for k, v in report.spec.items() if k != "preset"})
    today = load_spec(report.preset, report.pipeline.get("overrides") or {}, params_dir)
    drift = []
    for key, value in today.items():
        before = recorded.get(key, DEFAULTS.get(key))
        if before != value:
            drift.append(f"{key}: {before!r} in the report, {value!r} today")
    return drift


def _spec(report: Report, section: str, key: str) -> Any:
    """``section.key`` of the report's specification, else of the first notebook that recorded it."""
    recorded = [(m.get("spec") or {}) for m in report.metrics.values()]  # each notebook records the spec it read
    for spec in (report.spec, *recorded):
        value = (spec.get(section) or {}).get(key)
        if value not in (None, ""):
            return value
    return None


def training_length(report: Report) -> str:
    """How long the report's main model trained (notebook 03): optimiser steps, triplets used and minutes, as one
    phrase; "" for a report that does not record it."""
    trained = report.metrics.get("03_train_specter") or {}
    results, data = trained.get("results") or {}, trained.get("data") or {}
    steps, used = results.get("global_step"), (data.get("train") or {}).get("used")
    if not steps or not used:
        return ""
    minutes = (results.get("train_runtime_s") or 0) / 60
    return f"trained {steps:,} optimiser steps on {used:,} triplets, {minutes:.1f} min"


# ---------------------------------------------------------------- the benchmark a report was scored on
@dataclass(frozen=True)
class Benchmark:
    """What a caption names: corpus, split, queries per ranking task, classification papers, evaluation length."""

    corpus: str
    split: str
    queries: dict[str, int]  # ranking task -> queries scored on the split
    class_papers: int | None  # papers of the split in the mag slot
    length: int | None  # wordpieces every row was embedded at

    def caption(self) -> str:
        """One sentence naming the benchmark."""
        parts = [f"**{self.corpus}**, {self.split} split"]
        counts = sorted(set(self.queries.values()))
        if len(counts) == 1:
            tasks = list(self.queries)
            tasks = ", ".join(tasks[:-1]) + f" and {tasks[-1]}" if len(tasks) > 1 else tasks[0]
            parts.append(f"{counts[0]:,} queries per ranking task ({tasks})")
        elif counts:
            parts.append(", ".join(f"{n:,} {task} queries" for task, n in self.queries.items()))
        else:
            parts.append("query count not recorded")
        if self.class_papers:
            parts.append(f"{self.class_papers:,} {self.split} papers in the `mag` slot")
        parts.append(f"every row embedded at {self.length} wordpieces" if self.length else "length not recorded")
        return ", ".join(parts)


def benchmark_of(report: Report) -> Benchmark:
    """The benchmark of a report: from its metrics (05, then 01) and spec."""
    evaluation = report.metrics.get("05_scidocs_eval") or {}
    prepared = report.metrics.get("01_prepare_data") or {}
    split = str(evaluation.get("split") or _spec(report, "evaluation", "split") or "test")
    scidocs_dir = _spec(report, "evaluation", "scidocs_dir")
    corpus_info = prepared.get("corpus") or {}
    if scidocs_dir:
        corpus = "SCIDOCS"
    elif corpus_info.get("name"):
        corpus = str(corpus_info["name"]) + (" (SYNTHETIC data)" if corpus_info.get("synthetic") else "")
        source = (corpus_info.get("info") or {}).get("source")
        if corpus_info["name"] == "tables" and source:  # the generic reader: name the folder it read
            corpus = f"{Path(str(source)).name} (tables)"
    else:
        corpus = str(_spec(report, "data", "corpus") or report.preset)
    queries: dict[str, int] = {}
    class_papers = None
    results = evaluation.get("results") or {}
    first = next(iter(results.values()), {}) if results else {}
    coverage = first.get("coverage") or {}
    for task in TASK_SLOTS:
        count = (coverage.get(task) or {}).get("queries")
        if count is None:
            count = ((prepared.get("benchmark") or {}).get(TASK_SLOTS[task]) or {}).get(f"{split}_queries")
        if count is not None:
            queries[task] = int(count)
    mag = coverage.get("mag") or {}
    if (mag.get(split) or {}).get("papers") is not None:
        class_papers = int(mag[split]["papers"])
    elif ((prepared.get("benchmark") or {}).get("mag") or {}).get(split) is not None:
        class_papers = int(prepared["benchmark"]["mag"][split])
    length = _spec(report, "embedding", "max_length")
    return Benchmark(corpus, split, queries, class_papers, int(length) if length else None)


# ---------------------------------------------------------------- Table 1
def table1_rows(report: Report) -> dict[str, dict[str, float]]:
    """``{model: {Table 1 header: value}}`` from metrics/05_scidocs_eval.json."""
    results = (report.metrics.get("05_scidocs_eval") or {}).get("results") or {}
    rows = {row_label(model, result): metric_row(result) for model, result in results.items()}
    rows = {model: row for model, row in rows.items() if row}  # a skipped ranker has no metric, so no row
    order = [m for m in FIRST_ROWS if m in rows] + [m for m in rows if m not in FIRST_ROWS]
    return {model: rows[model] for model in order}


def ranker_rows(report: Report) -> set[str]:
    """The Table 1 labels of a report's ranker rows (``evaluation.rankers``), whose empty cells read "—"."""
    results = (report.metrics.get("05_scidocs_eval") or {}).get("results") or {}
    return {row_label(model, result) for model, result in results.items() if is_ranker(result)}


def _cell(value: float | None) -> str:
    return "" if value is None or math.isnan(value) else f"{value:.2f}"


# The rows a README block shows: the model, its start, the strongest text baselines, what needs no text, chance;
# the report's results.md has every row (sif, sgc, ...)
README_COLUMNS = 8  # the widest table the README shows, the model column included
BLOCK_ROWS = ("trained", "base", "tfidf-svd", "BM25", "text-free: in-degree", "text-free: year", "random")


def table1_block(report: Report, link: str, compact: bool = False) -> str:
    """One report's Table 1 with its caption (``link``: the report folder relative to the file being written); with
    ``compact`` (the README) the rows of :data:`BLOCK_ROWS` it has (every row where it has none of them)."""
    every = table1_rows(report)
    rows = ({model: row for model, row in every.items() if model in BLOCK_ROWS} if compact else {}) or every
    if not rows:
        return ""
    present = {h for row in rows.values() for h in row}
    shown = [(h, label) for h, label in TABLE1_SHOWN if h in present or (h in ALWAYS_SHOWN and not compact)]
    if compact:  # the README's tables stay narrow: the model and at most 7 metrics, the rest in results.md
        shown = shown[: README_COLUMNS - 1]
    source = f"{METRICS_DIR}/05_scidocs_eval.json"
    prepared, scidocs_dir = report.metrics.get("01_prepare_data"), _spec(report, "evaluation", "scidocs_dir") or ""
    benchmark = benchmark_of(report)
    title = (
        f"**Table 1, preset `{report.preset}` on {benchmark.corpus}**: "
        + benchmark.caption().removeprefix(f"**{benchmark.corpus}**, ")
        if compact
        else f"Table 1 on {benchmark.caption()}"
    )
    lines = [
        f"{title} ([`{link}/{source}`]({link}/{source}), preset `{report.preset}`"
        + (f"; every row in [`results.md`]({link}/{RESULTS_TABLE})" if len(rows) < len(every) else "")
        + "):",
        "",
        "| model | " + " | ".join(labels.readme_label(h, label, prepared, scidocs_dir) for h, label in shown) + " |",
        "|" + "---|" * (len(shown) + 1),
    ]
    rankers = ranker_rows(report)
    for model, row in rows.items():
        na = NOT_APPLICABLE if model in rankers else ""
        cells = [_cell(row.get(h)) or (na if h in RANKER_NOT_APPLICABLE else "") for h, _ in shown]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _metrics_link(report: Report, link_of: Mapping[str, str], notebook: str) -> str:
    """``[`preset`](<report>/metrics/<notebook>.json)``: where a block's numbers for ``report`` come from."""
    return f"[`{report.preset}`]({link_of[report.preset]}/{METRICS_DIR}/{notebook}.json)"


# ---------------------------------------------------------------- the trained model's gain under the controls
def matching_keys(report: Report) -> list[str]:
    """What a report's matched negatives were matched on (notebook 01's benchmark: year and in-degree bucket, or the
    in-degree bucket alone on a corpus without years)."""
    matched = next(task.name for task in RANKING_CITATION_FIRST if task.name.endswith("-matched"))
    negatives = ((report.metrics.get("01_prepare_data") or {}).get("negatives") or {}).get(matched) or {}
    return list(negatives.get("matching_keys") or [])


def query_years(time_split: Mapping[str, Any]) -> str:
    """The publication years of a time split's queries, as counted in its benchmark: "queries from 1999 (328), 2000
    (71), 2001 (1)"; the cutoff alone where the counts are not recorded."""
    split = (time_split.get("made") or {}).get("split") or {}
    by_year = split.get("queries_by_year") or {}
    if by_year:
        return "queries from " + ", ".join(f"{year} ({n})" for year, n in sorted(by_year.items()))
    return f"queries from {split.get('cutoff_year')} on"


def controls_block(reports: Iterable[Report], link_of: Mapping[str, str]) -> str:
    """Per report whose notebook 05 kept its paired tests: the trained model's gain over its base under random and
    under popularity-matched negatives, the share that remains, and what structure alone scores, on the report's
    split and, where notebook 05 ran one, the time split."""
    reports = list(reports)
    lines = []
    for report in reports:
        evaluation = report.metrics.get("05_scidocs_eval") or {}
        source = _metrics_link(report, link_of, "05_scidocs_eval")
        parts = []
        if evaluation.get("deltas"):
            split_by = _spec(report, "data", "split_by") or "random"
            parts.append((f"{split_by} (the report's)", evaluation["deltas"], evaluation.get("results") or {}))
        time_split = evaluation.get("time_split") or {}
        if time_split.get("deltas"):
            parts.append((f"date ({query_years(time_split)})", time_split["deltas"], time_split.get("results") or {}))
        for split, deltas, results in parts:
            for row in gain_rows(deltas, results):
                text_free = " → ".join(_cell(row[k]) or "—" for k in ("text_free_random", "text_free_matched"))
                share = f"{row['share']:.0f}%" if row["share"] is not None else "— (no gain shown)"
                lines.append(
                    f"| {source} | {split} | {row['task']} | {row['random'].n} | {text_free} | "
                    f"{row['random'].interval} | {row['matched'].interval} | {share} |"
                )
    if not lines:
        return (
            "No report keeps notebook 05's paired tests yet (its `deltas`): regenerate one with the current notebooks."
        )
    matched = [f"`{report.preset}` on {' and '.join(keys)}" for report in reports if (keys := matching_keys(report))]
    header = [
        "Trained against base on each report's test queries, MAP x 100, paired over queries (95% bootstrap interval). "
        "Text-free: the better of the in-degree and year rankers, under random → matched negatives. Share: the "
        "matched-negative gain as a percentage of the random-negative one, given only where the latter's interval "
        "lies above 0 (at 100% or more: no loss of the gain, not growth; the two gains are not tested against each "
        "other). Matched negatives are matched to the positives "
        + ("on: " + "; ".join(matched) + "." if matched else "as each report's benchmark.json states."),
        "",
        "| report | split | task | queries | text-free MAP | trained − base, random negatives | "
        "trained − base, matched negatives | matched / random gain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(header + lines)


# ---------------------------------------------------------------- SciRepEval's formats, trained against base
def formats_block(reports: Iterable[Report], link_of: Mapping[str, str]) -> str:
    """Per report whose notebook 05 scored the benchmark's SciRepEval-format tasks with two models: each task's
    scores, the paired difference with its interval and p, and the notebook's summary sentence."""
    parts = []
    for report in reports:
        compared = (report.metrics.get("05_scidocs_eval") or {}).get("formats") or {}
        if not compared.get("paired"):
            continue
        row, reference, paired = compared["row"], compared["reference"], compared["paired"]
        source = _metrics_link(report, link_of, "05_scidocs_eval")
        table = to_markdown(comparison_frame(paired, row, reference), drop_empty=False)
        benchmark = benchmark_of(report)
        length = compared.get("max_length") or benchmark.length  # the formats' length, else the run's one length
        where = f"**{benchmark.corpus}**, embedded at {length} wordpieces, {source}"
        parts.append(f"{where}: {comparison_lead(paired, row, reference)}\n\n{table}")
    return "\n\n".join(parts) or "No report holds SciRepEval-format tasks scored with two models yet."


# ---------------------------------------------------------------- Figure 2 (the full space, then DBSCAN on the maps)
def _figure2_where(report: Report, link_of: Mapping[str, str]) -> str:
    analysis = report.metrics.get("06_embedding_analysis") or {}
    source = f"{link_of[report.preset]}/{METRICS_DIR}/06_embedding_analysis.json"
    papers = f"{analysis['n_papers']:,}" if analysis.get("n_papers") is not None else "?"
    return f"[{benchmark_of(report).corpus}]({source}), {papers} `mag` papers of {analysis.get('n_classes')} classes"


def figure2_rows(report: Report) -> list[dict[str, Any]]:
    """Notebook 06's homogeneity and completeness per projection for base and trained (mean and sd over the
    projection seeds; an older report: one seed, no sd), none without its metrics."""
    analysis = report.metrics.get("06_embedding_analysis") or {}
    rows = []
    for method, per_model in (analysis.get("scores") or {}).items():
        for model in reversed(FIRST_ROWS):  # base, then trained: before and after
            scores = per_model.get(model)
            if scores:
                rows.append(
                    {
                        "model": model,
                        "method": method,
                        **{
                            k: scores.get(k)
                            for k in ("homogeneity", "homogeneity_sd", "completeness", "completeness_sd")
                        },
                        "seeds": len(analysis.get("projection_seeds") or [analysis.get("seed")]),
                        "papers": analysis.get("n_papers"),
                        "classes": analysis.get("n_classes"),
                    }
                )
    return rows


def _mean_sd(row: Mapping[str, Any], key: str) -> str:
    sd = row.get(f"{key}_sd")
    return f"{row[key]:.2f}" + (f" ± {sd:.2f}" if sd is not None else "")


def _grid_cell(grid: Mapping[str, int]) -> str:
    return (
        ", ".join(
            f"{label} {sum(1 for v in grid.values() if v == sign)}"
            for sign, label in ((1, "higher"), (-1, "lower"), (0, "none"))
        )
        + f" (of {len(grid)})"
    )


def figure2_block(reports: Iterable[Report], link_of: Mapping[str, str], compact: bool = False) -> str:
    """Every report with notebook 06's metrics: the full-space measures (paired over papers) first, then the
    paper's protocol (DBSCAN on the maps, over projection seeds and the eps grid) beside the paper's values, then
    one sentence per report, each difference read by the verdict rule (``interpret.geometry_findings``). With
    ``compact`` (the README): the full-space table only, each benchmark named by its preset too."""
    space_lines = [
        "| benchmark | measure (full space, cosine) | base | trained | trained − base [95% CI over papers], p | verdict |",
        "|---|---|---|---|---|---|",
    ]
    map_lines = [
        "| benchmark | projection | measure | base | trained | trained − base [95% CI over seeds] | verdict "
        "| verdicts over the eps grid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sentences = []
    paper_h = PAPER_FIGURE2["SPECTER"]["homogeneity"] - PAPER_FIGURE2["SciBERT"]["homogeneity"]
    for report in reports:
        rows = figure2_rows(report)
        if not rows:
            continue
        analysis = report.metrics["06_embedding_analysis"]
        where = _figure2_where(report, link_of)
        if compact:
            where = f"`{report.preset}`: {where}"
        findings = geometry_findings(analysis)
        space = analysis.get("space") or {}
        for f in (f for f in findings if f["kind"] == "space"):
            means = space["models"]
            what = f"{f['what']} (k = {space['k']})" if f["measure"] == "knn_agreement" else f["what"]
            space_lines.append(
                f"| {where} | {what} | {means['base'][f['measure']]:.3f} | {means['trained'][f['measure']]:.3f} "
                f"| {interval_text(f['test'], 3)} | {VERDICT[f['shown']]} |"
            )
        tested = {(f["method"], f["measure"]): f for f in findings if f["kind"] == "projection"}
        by_key = {(r["method"], r["model"]): r for r in rows}
        for method in dict.fromkeys(r["method"] for r in rows):
            base, trained = by_key.get((method, "base")), by_key.get((method, "trained"))
            if not base or not trained:
                continue
            for measure in ("homogeneity", "completeness"):
                f = tested.get((method, measure))
                seeds = f"{base['seeds']} projection seed{'s' if base['seeds'] != 1 else ''}"
                cells = (
                    f"{interval_text(f['test'], 2)} | {VERDICT[f['shown']]} | {_grid_cell(f['grid'])}"
                    if f and f["test"]["seeds"] > 1
                    else f"{trained[measure] - base[measure]:+.2f} | not tested ({seeds}) | "
                )
                map_lines.append(
                    f"| {where} | {method} | {measure} | {_mean_sd(base, measure)} | {_mean_sd(trained, measure)} "
                    f"| {cells} |"
                )
        name = f"**{benchmark_of(report).corpus}** ([`{report.preset}`]({link_of[report.preset]}))"
        if not findings:
            sentences.append(
                f"- {name}: one projection seed and no full-space measures (the report predates them): "
                "no direction is stated."
            )
            continue
        in_space = [f"{f['what']} {VERDICT[f['shown']]}" for f in findings if f["kind"] == "space"]
        on_maps = [f"{f['what']} {VERDICT[f['shown']]}" for f in findings if f["kind"] == "projection"]
        space_shown = {f["shown"] for f in findings if f["kind"] == "space"}
        if space_shown == {1}:
            paper = (
                "the paper's direction (a more topic-homogeneous space after training) is confirmed in the full space"
            )
        elif space_shown == {-1}:
            paper = "the full space goes against the paper's direction (a more topic-homogeneous space after training)"
        else:
            paper = "the full space neither confirms nor contradicts the paper's direction as a whole"
        if paper_h <= 0:
            paper = "the paper shows no rise in homogeneity"
        seeds = len(analysis.get("projection_seeds") or [])
        length = training_length(report)
        sentences.append(
            f"- {name}, trained against base{f' ({length})' if length else ''}: in the full space {', '.join(in_space)}, so {paper}; on the maps "
            f"(DBSCAN at the knee, {seeds} projection seeds) {', '.join(on_maps)}."
        )
    if compact and len(space_lines) > 2:
        return "\n".join(
            [
                "Trained against base in the full space (no projection): each model's mean over the papers, the "
                "difference paired paper by paper (95% bootstrap interval, p), higher or lower only where the "
                "Holm-adjusted p is under 0.05. The maps' DBSCAN scores beside the paper's: "
                "[docs/results.md](docs/results.md#figure-2-the-embedding-space-notebook-06).",
                "",
                *space_lines,
            ]
        )
    if len(space_lines) == 2 and len(map_lines) == 2:
        return "\n".join(
            [
                *map_lines,
                *(_paper_figure2_rows()),
                "",
                "No report holds notebook 06's metrics yet; the rows above are the paper's.",
            ]
        )
    return "\n".join(
        [
            "In the full space (no projection, no eps): each model's mean over the papers, and trained − base paired "
            "paper by paper (95% bootstrap interval and p; a report written before evaluation.hierarchical keeps a "
            "permutation p and reads as pending); the verdict is higher or lower only where the Holm-adjusted p "
            "(the full space and the maps at the knee one family) is under 0.05.",
            "",
            *space_lines,
            "",
            "The paper's protocol: DBSCAN (eps at the knee) on each t-SNE / UMAP map, mean ± sd over the projection "
            "seeds, trained − base paired by seed with its 95% interval over seeds and p (the seeds' bootstrap of "
            "evaluation.hierarchical); the verdict is higher or lower only where the Holm-adjusted p is under 0.05, "
            "at the knee and at each eps of the grid (eps / knee from 0.5 to 2, a family of its own).",
            "",
            *map_lines,
            *_paper_figure2_rows(),
            "",
            *sentences,
        ]
    )


def _paper_figure2_rows() -> list[str]:
    """The paper's values: SPECTER paper, Section 6 and Figure 2 (t-SNE of SCIDOCS MAG papers, DBSCAN), one map."""
    sci, spe = PAPER_FIGURE2["SciBERT"], PAPER_FIGURE2["SPECTER"]
    return [
        f"| SCIDOCS MAG (paper, Section 6 / Figure 2) | tsne | {m} | {sci[m]:.2f} (SciBERT) | {spe[m]:.2f} (SPECTER) "
        f"| {spe[m] - sci[m]:+.2f} | one map, not tested | |"
        for m in ("homogeneity", "completeness")
    ]


# ---------------------------------------------------------------- the README's two images
def figure2_pick(reports: Iterable[Report], root: Path) -> tuple[Report, Path] | None:
    """The report whose Figure 2 the README shows, and its image: of the reports whose notebook 06 wrote a figure
    still under ``root``, the one whose labels carry the most topic signal (the base model's full-space k-NN topic
    agreement, highest first), so the maps show classes a reader can see."""
    best: tuple[float, Report, Path] | None = None
    for report in reports:
        analysis = report.metrics.get("06_embedding_analysis") or {}
        agreement = (((analysis.get("space") or {}).get("models") or {}).get("base") or {}).get("knn_agreement")
        figure = root / str(analysis.get("figure") or "")
        if agreement is None or not analysis.get("figure") or not figure.is_file():
            continue
        if best is None or agreement > best[0]:
            best = (float(agreement), report, figure)
    return (best[1], best[2]) if best else None


def chart_points(reports: Iterable[Report]) -> list[overview.Point]:
    """The Table 1 chart's dots of every report with notebook 05's metrics."""
    return [
        point
        for report in reports
        for point in overview.chart_points(
            report.preset, benchmark_of(report).corpus, report.metrics.get("05_scidocs_eval") or {}
        )
    ]


def write_table1_chart(reports_root: str | Path) -> Path | None:
    """Draw the Table 1 chart from the reports to ``<repository>/figures/table1_map.png`` (None: no report has
    notebook 05's metrics, nothing is written)."""
    reports_root = Path(reports_root)
    points = chart_points(load_reports(reports_root) if reports_root.is_dir() else [])
    if not points:
        return None
    return overview.write_chart(overview.table1_chart(points), reports_root.parent / overview.CHART_FILE)


def overview_block(reports: list[Report], root: Path, target: str | Path) -> str:
    """The README's images, Figure 2's maps then the Table 1 chart, each with what it shows and where it comes
    from (links relative to ``target``)."""

    def link(path: Path) -> str:
        return os.path.relpath(path, Path(target).parent).replace(os.sep, "/")

    lines = []
    picked = figure2_pick(reports, root)
    if picked:
        report, figure = picked
        analysis = report.metrics["06_embedding_analysis"]
        agreement = analysis["space"]["models"]["base"]["knn_agreement"]
        corpus = benchmark_of(report).corpus
        lines += [
            f"![Figure 2, preset {report.preset} on {corpus}: t-SNE and UMAP maps of base and trained]({link(figure)})",
            "",
            f"*Figure 2 (notebook 06), preset `{report.preset}` on {corpus}: {analysis.get('n_papers', 0):,} papers "
            f"coloured by their {analysis.get('labelled_by', 'labels')} ({analysis.get('n_classes')} classes), "
            "base model left, trained right, t-SNE above and UMAP below, DBSCAN's scores over the projection seeds "
            "in each title. Shown because its labels carry the most topic signal of the committed reports (the base "
            f"model's k-NN topic agreement {agreement:.3f}, [metrics]({link(report.folder)}/{METRICS_DIR}/"
            "06_embedding_analysis.json)).*",
        ]
    points = chart_points(reports)
    if points:
        presets = list(dict.fromkeys(p.preset for p in points))
        without = [preset for preset in presets if not any(p.preset == preset and p.low is not None for p in points)]
        lines += [
            "",
            f"![Table 1 as a chart: cite and co-cite MAP against the base model per preset]({link(root / overview.CHART_FILE)})",
            "",
            "*Table 1 (notebook 05) per committed report: the trained model, TF-IDF-SVD and BM25 as their difference "
            "to the base model in MAP points, with the paired 95% interval over queries where the report kept one "
            "(hollow dot: none"
            + (f"; BM25 everywhere, and every row of {', '.join(f'`{p}`' for p in without)}" if without else "")
            + "). Drawn by `specter-utils report --readme` from each `reports/<preset>/metrics/05_scidocs_eval.json`.*",
        ]
    return "\n".join(lines).strip() or "No report holds notebook 05 or 06 metrics yet."


# ---------------------------------------------------------------- wall times per preset
def notebook_runs(report: Report) -> dict[str, dict[str, Any]]:
    """``{notebook: {seconds, peak_rss_mb, commit, overrides}}`` from pipeline.json."""
    entries = report.pipeline.get("notebooks") or {}
    return {
        nb: {
            "seconds": float(e["seconds"]),
            "peak_rss_mb": e.get("peak_rss_mb"),
            "commit": e.get("commit") or _one_commit(report.pipeline.get("commit")),
            "overrides": ", ".join(f"{k}={v}" for k, v in (e.get("overrides") or {}).items()),
        }
        for nb, e in sorted(entries.items())
        if e.get("seconds") is not None
    }


def _one_commit(commit: Any) -> str | None:
    """pipeline.json's ``commit``: one hash, or a list when the report is mixed (then no single one applies)."""
    return commit if isinstance(commit, str) and commit != "?" else None


def _machine(report: Report) -> str:
    """pipeline.json's machine as one label ("not recorded" where it has none)."""
    machine = report.pipeline.get("machine")
    return machine_label(machine) if isinstance(machine, Mapping) else "not recorded"


def duration(seconds: float) -> str:
    """``17 s``, ``19 min 19 s``, ``1 h 17 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def reused_ablation_rows(report: Report) -> tuple[int, int, float] | None:
    """Notebook 07's rows reused from an earlier run (``workflow.ablations.finished_ablation``): how many, of how
    many, and the seconds they took when they ran; None when none was reused."""
    variants = (report.metrics.get("07_ablations") or {}).get("variants") or {}
    rows = [row for by_seed in variants.values() for row in by_seed.values()]
    reused = [row for row in rows if row.get("reused")]
    if not reused:
        return None
    return len(reused), len(rows), sum(float(row.get("seconds") or 0.0) for row in reused)


def reused_time_split(report: Report) -> float | None:
    """The seconds notebook 05's time split (``workflow.time_split``) took when it was made, where this report read
    it back from an earlier run; None otherwise."""
    made = ((report.metrics.get("05_scidocs_eval") or {}).get("time_split") or {}).get("made") or {}
    return float(made.get("seconds") or 0.0) if made.get("reused") else None


def times_block(reports: Iterable[Report], link_of: Mapping[str, str], compact: bool = False) -> str:
    """One row per preset: each notebook's measured wall time (with ``compact``, the README: the slowest one
    only), the total, the commit(s) and the machine."""
    timed = [(r, runs) for r in reports if (runs := notebook_runs(r))]
    notebooks = sorted({nb for _, runs in timed for nb in runs})
    columns = ["slowest notebook"] if compact else [nb[:2] for nb in notebooks]
    lines = [
        "| preset | " + " | ".join(columns) + " | total | peak memory | commit | machine |",
        "|" + "---|" * (len(columns) + 5),
    ]
    notes = []
    for report, runs in timed:
        cells = [duration(runs[nb]["seconds"]) if nb in runs else "" for nb in notebooks]
        if compact:
            slowest = max(runs, key=lambda nb: runs[nb]["seconds"])
            cells = [f"{slowest[:2]} `{slowest[3:]}`, {duration(runs[slowest]['seconds'])}"]
        commits = list(dict.fromkeys(run["commit"] for run in runs.values() if run["commit"]))
        unrecorded = [nb[:2] for nb, run in runs.items() if not run["commit"]]
        commit = ", ".join(f"`{c}`" for c in commits) or "not recorded"
        if commits and unrecorded:
            commit += f" ({', '.join(unrecorded)}: not recorded)"
        total = duration(sum(run["seconds"] for run in runs.values()))
        peaks = [run["peak_rss_mb"] for run in runs.values() if run.get("peak_rss_mb")]
        peak = f"{max(peaks) / 1024:.1f} GiB" if peaks else ""
        name = f"[`{report.preset}`]({link_of[report.preset]}/{PIPELINE_FILE})"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {total} | {peak} | {commit} | {_machine(report)} |")
        notes += [
            f"`{report.preset}` {nb[:2]} ran with `{run['overrides']}`" for nb, run in runs.items() if run["overrides"]
        ]
        if len(commits) > 1:
            notes.append(f"`{report.preset}`'s notebooks ran at different commits; its total is their sum")
        reused = reused_ablation_rows(report)
        if reused:
            count, total, seconds = reused
            notes.append(
                f"`{report.preset}` 07 reused {count} of its {total} rows from an earlier run with the same settings "
                f"(their own training and embedding took {duration(seconds)} more)"
            )
        made = reused_time_split(report)
        if made is not None:
            notes.append(
                f"`{report.preset}` 05 reused its time split (benchmark, model, embeddings) from an earlier run with "
                f"the same settings (making it took {duration(made)} more)"
            )
    if notebooks:
        lines += ["", "Notebooks: " + ", ".join(f"{nb[:2]} `{nb[3:]}`" for nb in notebooks) + "."]
    if notes:
        lines.append("Notes: " + "; ".join(notes) + ".")
    return "\n".join(lines)


# ---------------------------------------------------------------- ablations (notebook 07)
def ablation_statistics_of(report: Report) -> dict[str, Any] | None:
    """Notebook 07's statistics from its metrics; None when not recorded."""
    statistics = (report.metrics.get("07_ablations") or {}).get("statistics")
    return statistics if statistics and statistics.get("groups") else None


def ablations_block(report: Report, link: str, repo_root: Path | None = None, root_link: str = "..") -> str:
    """Notebook 07's table (from its metrics, else the report's ablations.md), captioned with its benchmark; then
    its chart (``figures/table2_<preset>.png`` under ``repo_root``, linked through ``root_link``) and the reading
    written from its numbers (``interpret.interpret_ablations``, as the notebook writes it)."""
    statistics = ablation_statistics_of(report)
    if statistics is not None and "specter" in statistics["groups"]:
        table = ablation_table_seeds(statistics, "specter", PAPER_ROWS)[1]
    elif report.has("ablations.md"):
        table = report.text("ablations.md").strip()
    else:
        return ""
    parts = [
        f"Ablations on {benchmark_of(report).caption()} ([`{link}/ablations.md`]({link}/ablations.md), "
        f"preset `{report.preset}`):\n\n{table}"
    ]
    charts = [f for f in (report.metrics.get("07_ablations") or {}).get("figures") or [] if f.endswith(".png")]
    if charts and repo_root is not None and (repo_root / charts[0]).is_file():
        parts.append(f"![Table 2 on the {report.preset} benchmark as differences]({root_link}/{charts[0]})")
    if statistics is not None and len(statistics["groups"]) > 1:
        reading = interpret_ablations(statistics, "specter", PAPER_ROWS)
        parts.append(f"What the `{report.preset}` rows say, written from the numbers:\n\n{reading}")
    return "\n\n".join(parts)


def stages_block(reports: Iterable[Report], link_of: Mapping[str, str]) -> str:
    """Per report that records memory: each notebook (stage) with its wall time and peak memory."""
    sections = []
    for report in reports:
        runs = notebook_runs(report)
        if not any(run.get("peak_rss_mb") for run in runs.values()):
            continue
        lines = [
            f"[`{report.preset}`]({link_of[report.preset]}/{PIPELINE_FILE}), commit "
            + ", ".join(f"`{c}`" for c in dict.fromkeys(r["commit"] for r in runs.values() if r["commit"]))
            + f", {_machine(report)}:",
            "",
            "| stage (notebook) | wall time | peak memory |",
            "|---|---|---|",
        ]
        for nb, run in runs.items():
            memory = run.get("peak_rss_mb")
            lines.append(f"| {nb} | {duration(run['seconds'])} | {f'{memory / 1024:.2f} GiB' if memory else ''} |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections) or "No report records its peak memory yet."


def levers_block(measured: Path, target: str | Path) -> str:
    """Each ``recipe_levers_<corpus>[_<split>].md`` under ``measured`` (the lever driver's ``--table``), with a link
    to it and to its rows, labelled with its corpus and the split its first line names; per corpus the validation
    table (where settings are chosen) comes first."""

    def link(path: Path) -> str:
        return f"[`{path.name}`]({os.path.relpath(path, Path(target).parent).replace(os.sep, '/')})"

    tables = []
    for table in measured.glob("recipe_levers_*.md"):
        text = table.read_text(encoding="utf-8").strip()
        named = LEVER_TABLE_SPLIT.match(text)
        split = named.group("split") if named else "test"
        corpus = table.stem.removeprefix("recipe_levers_").split("_")[0]
        tables.append((corpus, split != "validation", table.name, table, split, text))
    parts = []
    for corpus, _, _, table, split, text in sorted(tables):
        rows = table.with_suffix(".jsonl")
        source = link(table) + (f", from the rows of {link(rows)}" if rows.is_file() else "")
        parts.append(f"**{corpus}, {split} split** ({source}):\n\n{text}")
    return "\n\n".join(parts) or "No recipe-lever table is committed yet."


def measured_block(files: list[Path], target: str | Path, missing: str) -> str:
    """Each Markdown table a bench or experiment command wrote (``files``), after a link to it."""
    parts = []
    for table in files:
        link = f"[`{table.name}`]({os.path.relpath(table, Path(target).parent).replace(os.sep, '/')})"
        parts.append(f"From {link}:\n\n{table.read_text(encoding='utf-8').strip()}")
    return "\n\n".join(parts) or missing


# ---------------------------------------------------------------- blocks in a file
BLOCK_NAMES = (
    "results",
    "figure2",
    "times",
    "ablations",
    "stages",
    "levers",
    "commands",
    "train_dtype",
    "structure",
    "embedding",
    "controls",
    "formats",
)


def render_blocks(reports_root: str | Path, target: str | Path) -> dict[str, str]:
    """Every block's text for the file ``target`` (links relative to it), from the reports under ``reports_root``."""
    reports_root = Path(reports_root)
    reports = load_reports(reports_root) if reports_root.is_dir() else []
    base = os.path.relpath(reports_root, Path(target).parent)
    link_of = {r.preset: f"{base}/{r.folder.name}".replace(os.sep, "/") for r in reports}
    compact = Path(target).name == "README.md"  # the README shows the headline rows, docs/results.md every row
    sections = [table1_block(r, link_of[r.preset], compact) for r in reports]
    root_link = os.path.relpath(reports_root.parent, Path(target).parent).replace(os.sep, "/")
    ablations = [ablations_block(r, link_of[r.preset], reports_root.parent, root_link) for r in reports]
    return {
        "results": "\n\n".join(s for s in sections if s) or "No report holds a results table yet.",
        "figure2": figure2_block(reports, link_of, compact),
        "overview": overview_block(reports, reports_root.parent, target),
        "times": times_block(reports, link_of, compact),
        "ablations": "\n\n".join(s for s in ablations if s) or "No report holds an ablations table yet.",
        "stages": stages_block(reports, link_of),
        "levers": levers_block(reports_root.parent / "experiments" / "measured", target),
        "commands": measured_block(
            [
                *sorted((reports_root.parent / "bench" / "measured").glob("commands_*.md"), key=_papers_in_name),
                *sorted((reports_root.parent / "bench" / "measured").glob("int8_calibration_*.md")),
            ],
            target,
            "No whole-command benchmark is committed yet (python bench/bench_commands.py).",
        ),
        "train_dtype": measured_block(
            [
                *sorted((reports_root.parent / "bench" / "measured").glob("train_dtype_*.md")),
                *sorted((reports_root.parent / "experiments" / "measured").glob("train_dtype_*.md")),
            ],
            target,
            "No bf16-against-fp32 training table is committed yet (bench/bench_train_dtype.py, experiments/train_dtype.sh).",
        ),
        "structure": measured_block(
            sorted((reports_root.parent / "experiments" / "measured").glob("structure_controls_*.md")),
            target,
            "No structure-control table is committed yet (python experiments/structure_controls.py).",
        ),
        "controls": controls_block(reports, link_of),
        "formats": formats_block(reports, link_of),
        "embedding": measured_block(
            sorted((reports_root.parent / "bench" / "measured").glob("embedding_*.md")),
            target,
            "No in-process embedding benchmark is committed yet (python bench/bench_embedding.py --out FILE).",
        ),
    }


def _papers_in_name(path: Path) -> tuple[int, str]:
    """``commands_hepth_1000.md`` before ``commands_hepth_20000.md``."""
    tail = path.stem.rsplit("_", 1)[-1]
    return (int(tail) if tail.isdigit() else 0, path.name)


def replace_blocks(text: str, blocks: Mapping[str, str], path: str | Path = "<text>") -> str:
    """``text`` with the body of every generated block replaced; an unknown block name is a DataError."""

    def body(match: re.Match) -> str:
        name = match.group("name")
        if name not in blocks:
            line = text.count("\n", 0, match.start()) + 1
            raise DataError(f"unknown generated block {name!r} (known: {', '.join(blocks)})", path, line)
        return f"<!-- generated:{name} -->\n{blocks[name].strip()}\n<!-- /generated:{name} -->"

    return BLOCK.sub(body, text)


def stale_blocks(path: str | Path, blocks: Mapping[str, str]) -> list[str]:
    """The names of the blocks of ``path`` whose text differs from ``blocks``."""
    text = Path(path).read_text(encoding="utf-8")
    fresh = {m.group("name"): m.group(0) for m in BLOCK.finditer(replace_blocks(text, blocks, path))}
    return [m.group("name") for m in BLOCK.finditer(text) if m.group(0) != fresh[m.group("name")]]


def update_file(path: str | Path, reports_root: str | Path) -> list[str]:
    """Rewrite the generated blocks of ``path`` from the reports (atomically); returns the names of those changed."""
    path = Path(path)
    if not path.exists():
        raise DataError("no such file", path)
    blocks = render_blocks(reports_root, path)
    text = path.read_text(encoding="utf-8")
    if not BLOCK.search(text):
        raise DataError("no generated block (<!-- generated:NAME --> ... <!-- /generated:NAME -->)", path)
    changed = stale_blocks(path, blocks)
    if changed:
        with atomic_write(path) as handle:
            handle.write(replace_blocks(text, blocks, path))
    return changed


def check_file(path: str | Path, reports_root: str | Path) -> list[str]:
    """The names of the blocks of ``path`` that differ from what the reports give (empty: up to date)."""
    path = Path(path)
    if not path.exists():
        raise DataError("no such file", path)
    return stale_blocks(path, render_blocks(reports_root, path))
