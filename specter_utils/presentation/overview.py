"""The README's two images: a Figure 2 map picked from the committed reports, and a chart of Table 1.

The Table 1 chart is a forest plot: for each committed report (preset and corpus) and each of cite and co-cite MAP,
the trained model, TF-IDF-SVD and BM25 drawn as their difference to the base model (the reference row) in MAP points,
with the paired 95% interval over queries that notebook 05 kept (``metrics/05_scidocs_eval.json``, ``deltas``); a row
without one (BM25, a report written before the paired tests) is a hollow dot with no interval. It is read from the
reports only, so ``specter-utils report --readme`` redraws it without running a notebook."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # a file, never a window: report --readme runs anywhere

import matplotlib.pyplot as plt  # noqa: E402

from specter_utils.presentation.tables import metric_row, row_label  # noqa: E402

CHART_FILE = "figures/table1_map.png"  # written by report --readme, linked from the README
CHART_TASKS = (("cite", "cite MAP"), ("co-cite", "co-cite MAP"))  # (task key in the metrics, Table 1 header)
CHART_ROWS = ("trained", "tfidf-svd", "BM25")  # drawn against the reference row
REFERENCE = "base"
COLOURS = {"trained": "tab:blue", "tfidf-svd": "tab:orange", "BM25": "tab:green"}


@dataclass(frozen=True)
class Point:
    """One dot of the chart: a row's MAP minus the reference's, with its paired interval where there is one."""

    preset: str
    group: str  # "demo: citeseer", the preset then its corpus
    row: str
    task: str
    diff: float
    low: float | None
    high: float | None
    reference_value: float


def chart_points(preset: str, corpus: str, evaluation: Mapping[str, Any]) -> list[Point]:
    """The chart's dots for one report from its notebook 05 metrics (``results`` and ``deltas``)."""
    results = evaluation.get("results") or {}
    rows = {row_label(name, result): metric_row(result) for name, result in results.items()}
    reference = rows.get(REFERENCE) or {}
    intervals = {
        (d.get("row"), d.get("task")): d
        for d in evaluation.get("deltas") or []
        if d.get("reference") == REFERENCE and d.get("metric") == "MAP"
    }
    # a delta names the row by its results key (bm25), the table by its label (BM25)
    labels = {name: row_label(name, result) for name, result in results.items()}
    intervals = {(labels.get(row, row), task): d for (row, task), d in intervals.items()}
    group = f"{preset}: {corpus}"
    points = []
    for task, header in CHART_TASKS:
        if header not in reference:
            continue
        for row in CHART_ROWS:
            value = (rows.get(row) or {}).get(header)
            if value is None:
                continue
            delta = intervals.get((row, task))
            low = high = None
            if delta and delta.get("ci_low") is not None and delta.get("ci_high") is not None:
                low, high = float(delta["ci_low"]), float(delta["ci_high"])
            diff = float(delta["diff"]) if delta else value - reference[header]
            points.append(Point(preset, group, row, task, diff, low, high, reference[header]))
    return points


def table1_chart(points: Iterable[Point]):
    """The forest plot: one panel per task, one line per (report, row), the reference at 0."""
    points = list(points)
    groups = list(dict.fromkeys(p.group for p in points))
    lines = [(g, r) for g in groups for r in CHART_ROWS if any(p.group == g and p.row == r for p in points)]
    fig, axes = plt.subplots(1, len(CHART_TASKS), figsize=(10, 0.32 * len(lines) + 1.6), sharey=True)
    y_of = {line: len(lines) - i for i, line in enumerate(lines)}
    for ax, (task, header) in zip(axes, CHART_TASKS, strict=True):
        ax.axvline(0, color="grey", lw=1)
        for p in (p for p in points if p.task == task):
            y = y_of[(p.group, p.row)]
            colour = COLOURS[p.row]
            if p.low is not None and p.high is not None:
                ax.plot([p.low, p.high], [y, y], color=colour, lw=2)
                ax.plot(p.diff, y, "o", color=colour)
            else:
                ax.plot(p.diff, y, "o", mfc="white", color=colour)
        for previous in groups[:-1]:  # a rule between reports
            first = min(y_of[(g, r)] for g, r in lines if g == previous)
            ax.axhline(first - 0.5, color="lightgrey", lw=0.8)
        bases = {p.preset: p.reference_value for p in points if p.task == task}
        base = ", ".join(f"{preset} {v:.1f}" for preset, v in bases.items())
        ax.set_title(f"{header}: difference to base\n(base: {base})", fontsize=9)
        ax.set_xlabel("MAP points; line: paired 95% interval over queries", fontsize=8)
    axes[0].set_yticks([y_of[line] for line in lines], [f"{g}: {r}" for g, r in lines], fontsize=8)
    axes[0].set_ylim(0.5, len(lines) + 0.5)
    fig.suptitle(
        "Table 1 per committed report: trained, TF-IDF-SVD and BM25 against the base model "
        "(hollow: no paired interval)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def write_chart(fig, path: str | Path) -> Path:
    """Save ``fig`` as a PNG with no timestamp in it (the same reports give the same bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path
