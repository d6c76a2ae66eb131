"""What one committed report folder, ``reports/<preset>/``, holds and what its metrics say: the benchmark it was
scored on, its Table 1 rows, its notebooks' wall times. Every number is read from its ``pipeline.json``,
``spec.yaml`` and ``metrics/<notebook>.json`` (each notebook's own ``metrics.json``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from specter_utils.errors import DataError
from specter_utils.executed import machine_label
from specter_utils.io import read_json
from specter_utils.layout import PIPELINE_FILE
from specter_utils.presentation.tables import FIRST_ROWS, is_ranker, metric_row, row_label
from specter_utils.tasks import RANKING_CITATION_FIRST

METRICS_DIR = "metrics"  # reports/<preset>/metrics/<notebook>.json: each notebook's metrics.json
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


def spec_value(report: Report, section: str, key: str) -> Any:
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
    split = str(evaluation.get("split") or spec_value(report, "evaluation", "split") or "test")
    scidocs_dir = spec_value(report, "evaluation", "scidocs_dir")
    corpus_info = prepared.get("corpus") or {}
    if scidocs_dir:
        corpus = "SCIDOCS"
    elif corpus_info.get("name"):
        corpus = str(corpus_info["name"]) + (" (SYNTHETIC data)" if corpus_info.get("synthetic") else "")
        source = (corpus_info.get("info") or {}).get("source")
        if corpus_info["name"] == "tables" and source:  # the generic reader: name the folder it read
            corpus = f"{Path(str(source)).name} (tables)"
    else:
        corpus = str(spec_value(report, "data", "corpus") or report.preset)
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
    length = spec_value(report, "embedding", "max_length")
    return Benchmark(corpus, split, queries, class_papers, int(length) if length else None)


# ---------------------------------------------------------------- what its notebooks measured
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


def matching_keys(report: Report) -> list[str]:
    """What a report's matched negatives were matched on (notebook 01's benchmark: year and in-degree bucket, or the
    in-degree bucket alone on a corpus without years)."""
    matched = next(task.name for task in RANKING_CITATION_FIRST if task.name.endswith("-matched"))
    negatives = ((report.metrics.get("01_prepare_data") or {}).get("negatives") or {}).get(matched) or {}
    return list(negatives.get("matching_keys") or [])


def figure2_rows(report: Report) -> list[dict[str, Any]]:
    """Notebook 06's homogeneity and completeness per projection for base and trained (mean and sd over the
    projection seeds; an older report: one seed, no sd), none without its metrics."""
    analysis = report.metrics.get("06_embedding_analysis") or {}
    keys = ("homogeneity", "homogeneity_sd", "completeness", "completeness_sd")
    seeds = len(analysis.get("projection_seeds") or [analysis.get("seed")])
    sample = {"seeds": seeds, "papers": analysis.get("n_papers"), "classes": analysis.get("n_classes")}
    return [
        {"model": model, "method": method, **{k: per_model[model].get(k) for k in keys}, **sample}
        for method, per_model in (analysis.get("scores") or {}).items()
        for model in reversed(FIRST_ROWS)  # base, then trained: before and after
        if per_model.get(model)
    ]


def ablation_statistics_of(report: Report) -> dict[str, Any] | None:
    """Notebook 07's statistics from its metrics; None when not recorded."""
    statistics = (report.metrics.get("07_ablations") or {}).get("statistics")
    return statistics if statistics and statistics.get("groups") else None


# ---------------------------------------------------------------- wall times per notebook
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


def machine_of(report: Report) -> str:
    """pipeline.json's machine as one label ("not recorded" where it has none)."""
    machine = report.pipeline.get("machine")
    return machine_label(machine) if isinstance(machine, Mapping) else "not recorded"


def reused_ablation_rows(report: Report) -> tuple[int, int, float, dict[str | None, int]] | None:
    """Notebook 07's rows reused from an earlier run (``workflow.ablations.finished_ablation``): how many, of how
    many, the seconds they took when they ran, and how many each commit made (None: a row recorded before rows
    kept their commit); None when none was reused."""
    variants = (report.metrics.get("07_ablations") or {}).get("variants") or {}
    rows = [row for by_seed in variants.values() for row in by_seed.values()]
    reused = [row for row in rows if row.get("reused")]
    if not reused:
        return None
    commits = Counter(row.get("commit") for row in reused)
    return len(reused), len(rows), sum(float(row.get("seconds") or 0.0) for row in reused), dict(commits)


def reused_time_split(report: Report) -> tuple[float, str | None] | None:
    """Where this report read notebook 05's time split (``workflow.time_split``) back from an earlier run: the
    seconds making it took and the commit that made it (None: not recorded); None otherwise."""
    made = ((report.metrics.get("05_scidocs_eval") or {}).get("time_split") or {}).get("made") or {}
    return (float(made.get("seconds") or 0.0), made.get("commit")) if made.get("reused") else None
