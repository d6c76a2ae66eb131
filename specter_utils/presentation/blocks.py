"""The generated blocks of README.md and docs that are tables of the committed reports: Table 1, the gain under
the controls, SciRepEval's formats, wall times, stages, ablations, and the tables bench and experiment commands
wrote. Each block takes the reports (``presentation.report_folder``) and the links to them."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from specter_utils.layout import PIPELINE_FILE, RESULTS_TABLE
from specter_utils.presentation import labels
from specter_utils.presentation.formats import comparison_frame, comparison_lead
from specter_utils.presentation.interpret import interpret_ablations
from specter_utils.presentation.report_folder import (
    METRICS_DIR,
    Report,
    ablation_statistics_of,
    benchmark_of,
    machine_of,
    matching_keys,
    notebook_runs,
    ranker_rows,
    reused_ablation_rows,
    reused_time_split,
    spec_value,
    table1_rows,
)
from specter_utils.presentation.structure import gain_rows
from specter_utils.presentation.tables import (
    NOT_APPLICABLE,
    PAPER_ROWS,
    RANKER_NOT_APPLICABLE,
    ablation_table_seeds,
    to_markdown,
)
from specter_utils.tasks import TASKS

# Table 1's columns (header, label): the CLS task of the mag slot, cite and co-cite MAP, then the other SCIDOCS
# columns when a run has them (the benchmarks built from a citation corpus have no MeSH, usage or recommendation data)
TABLE1_SHOWN = tuple(column for task in TASKS for column in task.readme_columns)
# (the tasks of ours only, as cite and co-cite with matched negatives, when a run has them)
ALWAYS_SHOWN = tuple(h for task in TASKS if task.citation_corpus and task.in_paper for h, _ in task.readme_columns)
LEVER_TABLE_SPLIT = re.compile(r"Benchmark: (?P<split>\w+) split")  # the first words of a lever table


# ---------------------------------------------------------------- Table 1
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
    prepared, scidocs_dir = report.metrics.get("01_prepare_data"), spec_value(report, "evaluation", "scidocs_dir") or ""
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
    return "\n".join(lines if compact else [*lines, "", controls_note(report)])


def controls_note(report: Report) -> str:
    """What a report's controls rest on, read from its notebooks' record of the benchmark: the features its matched
    negatives were matched on and the publication years of its time split's queries."""
    keys = matching_keys(report)
    matched = (
        f"Matched negatives: matched to the positives on {' and '.join(keys)}."
        if keys
        else "Matched negatives: the benchmark does not record what they were matched on."
    )
    time_split = (report.metrics.get("05_scidocs_eval") or {}).get("time_split") or {}
    years = f"Time split: {query_years(time_split)}." if time_split.get("made") else "Time split: not run."
    return f"{matched} {years}"


def _metrics_link(report: Report, link_of: Mapping[str, str], notebook: str) -> str:
    """``[`preset`](<report>/metrics/<notebook>.json)``: where a block's numbers for ``report`` come from."""
    return f"[`{report.preset}`]({link_of[report.preset]}/{METRICS_DIR}/{notebook}.json)"


# ---------------------------------------------------------------- the trained model's gain under the controls
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
            split_by = spec_value(report, "data", "split_by") or "random"
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


# ---------------------------------------------------------------- wall times per preset
def duration(seconds: float) -> str:
    """``17 s``, ``19 min 19 s``, ``1 h 17 min``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


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
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {total} | {peak} | {commit} | {machine_of(report)} |")
        notes += [
            f"`{report.preset}` {nb[:2]} ran with `{run['overrides']}`" for nb, run in runs.items() if run["overrides"]
        ]
        if len(commits) > 1:
            notes.append(f"`{report.preset}`'s notebooks ran at different commits; its total is their sum")
        reused = reused_ablation_rows(report)
        if reused:
            count, total, seconds, made_by = reused
            notes.append(
                f"`{report.preset}` 07 reused {count} of its {total} rows from an earlier run with the same settings "
                f"(their own training and embedding took {duration(seconds)} more), made by "
                + made_at(made_by, runs.get("07_ablations", {}).get("commit"))
            )
        made = reused_time_split(report)
        if made is not None:
            notes.append(
                f"`{report.preset}` 05 reused its time split (benchmark, model, embeddings) from an earlier run with "
                f"the same settings (making it took {duration(made[0])} more), made by "
                + made_at({made[1]: 1}, runs.get("05_scidocs_eval", {}).get("commit"))
            )
    if notebooks:
        lines += ["", "Notebooks: " + ", ".join(f"{nb[:2]} `{nb[3:]}`" for nb in notebooks) + "."]
    if notes:
        lines.append("Notes: " + "; ".join(notes) + ".")
    return "\n".join(lines)


def made_at(counts: Mapping[str | None, int], commit: str | None) -> str:
    """Which commits made reused rows (``{commit: rows}``), each marked where it is not ``commit``, the report's
    own: its code may differ from what the report shows."""
    parts = []
    for made, count in sorted(counts.items(), key=lambda item: (item[0] is None, item[0] or "")):
        rows = f" ({count} row{'s' if count != 1 else ''})" if len(counts) > 1 else ""
        if made is None:
            parts.append(f"code not recorded{rows} (made before rows kept their commit)")
        elif made == commit:
            parts.append(f"`{made}`{rows}, the report's own")
        else:
            parts.append(f"`{made}`{rows}, other code than the report's")
    return "; ".join(parts)


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
            + f", {machine_of(report)}:",
            "",
            "| stage (notebook) | wall time | peak memory |",
            "|---|---|---|",
        ]
        for nb, run in runs.items():
            memory = run.get("peak_rss_mb")
            lines.append(f"| {nb} | {duration(run['seconds'])} | {f'{memory / 1024:.2f} GiB' if memory else ''} |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections) or "No report records its peak memory yet."


# ---------------------------------------------------------------- ablations (notebook 07)
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


# ---------------------------------------------------------------- tables written by bench and experiment commands
def levers_block(
    measured: Path,
    target: str | Path,
    prefix: str = "recipe_levers_",
    missing: str = "No recipe-lever table is committed yet.",
) -> str:
    """Each ``<prefix><corpus>[_<split>].md`` under ``measured`` (the lever driver's ``--table``), with a link to it
    and to its rows, labelled with its corpus and the split its first line names; per corpus the validation table
    (where settings are chosen) comes first."""

    def link(path: Path) -> str:
        return f"[`{path.name}`]({os.path.relpath(path, Path(target).parent).replace(os.sep, '/')})"

    tables = []
    for table in measured.glob(f"{prefix}*.md"):
        text = table.read_text(encoding="utf-8").strip()
        named = LEVER_TABLE_SPLIT.match(text)
        split = named.group("split") if named else "test"
        corpus = table.stem.removeprefix(prefix).split("_")[0]
        tables.append((corpus, split != "validation", table.name, table, split, text))
    parts = []
    for corpus, _, _, table, split, text in sorted(tables):
        rows = table.with_suffix(".jsonl")
        source = link(table) + (f", from the rows of {link(rows)}" if rows.is_file() else "")
        parts.append(f"**{corpus}, {split} split** ({source}):\n\n{text}")
    return "\n\n".join(parts) or missing


def measured_block(files: list[Path], target: str | Path, missing: str) -> str:
    """Each Markdown table a bench or experiment command wrote (``files``), after a link to it."""
    parts = []
    for table in files:
        link = f"[`{table.name}`]({os.path.relpath(table, Path(target).parent).replace(os.sep, '/')})"
        parts.append(f"From {link}:\n\n{table.read_text(encoding='utf-8').strip()}")
    return "\n\n".join(parts) or missing
