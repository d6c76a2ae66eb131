"""The notebooks' figures and small tables: training curves, Table 1 and Table 2 charts, counts.

Each function returns a matplotlib Figure (or a pandas DataFrame) for the notebook to show; none
reads files except ``read_log_history``. Figure 2 (t-SNE / UMAP) lives in ``analysis``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from specter_utils.io import read_json
from specter_utils.presentation.tables import (
    HEADERS,
    PAPER_ABLATION_ROWS,
    PAPER_TABLE1,
    PAPER_TABLE2,
    TABLE2_COLUMNS,
    TABLE2_GROUPS,
    group_averages,
    metric_row,
)

# The paper's rows drawn beside ours in the Table 1 chart (docs/protocol.md section 5).
PAPER_REFERENCE_ROWS = ("SPECTER", "SciBERT")


def show(fig) -> None:
    """Show a figure in the notebook as a PNG output whatever the matplotlib backend (papermill runs with Agg)."""

    from IPython.display import Image, display

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    display(Image(data=buffer.getvalue(), format="png"))


def read_log_history(path: str | Path) -> list[dict[str, Any]]:
    """The trainer's ``log_history.json`` (a list of log dicts); empty when the file is absent."""

    path = Path(path)
    return list(read_json(path)) if path.exists() else []


def training_curves_frame(log_history: list[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per logged step: training loss, validation loss and validation triplet accuracy (where logged).

    Accuracy columns are the eval keys ending in ``accuracy`` (e.g. ``eval_val_euclidean_accuracy``),
    whatever the evaluator calls them.
    """
    rows: dict[float, dict[str, float]] = {}
    for entry in log_history:
        step = entry.get("step", entry.get("epoch"))
        if step is None:
            continue
        row = rows.setdefault(float(step), {})
        if "loss" in entry:
            row["training loss"] = float(entry["loss"])
        if "eval_loss" in entry:
            row["validation loss"] = float(entry["eval_loss"])
        for key, value in entry.items():
            if key.startswith("eval_") and key.endswith("accuracy") and isinstance(value, (int, float)):
                name = key.removeprefix("eval_").removeprefix("val_").replace("_", " ")
                row[f"validation {name}"] = float(value)
    frame = pd.DataFrame.from_dict(rows, orient="index").sort_index()
    frame.index.name = "step"
    return frame


def training_curves(log_history: list[Mapping[str, Any]], title: str = ""):
    """Loss (training and validation) and validation triplet accuracy against the optimiser step."""

    frame = training_curves_frame(log_history)
    accuracy = [c for c in frame.columns if c.endswith("accuracy")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    loss_ax, acc_ax = axes
    for column, style in (("training loss", "-"), ("validation loss", "o-")):
        if column in frame:
            series = frame[column].dropna()
            loss_ax.plot(series.index, series.values, style, label=column)
    loss_ax.set(xlabel="optimiser step", ylabel="triplet loss (margin 1)", title="loss")
    for column in accuracy:
        series = frame[column].dropna()
        acc_ax.plot(series.index, series.values, "o-", label=column)
    acc_ax.set(xlabel="optimiser step", ylabel="share of triplets with d(q, p) < d(q, n)", title="triplet accuracy")
    if accuracy:
        acc_ax.set_ylim(0, 1.02)
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "nothing logged", ha="center", va="center", transform=ax.transAxes)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def counts_frame(counts: Mapping[str, Mapping[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    """``{row: {column: value}}`` as a table, nested values shown as text (e.g. a benchmark's task counts)."""
    frame = pd.DataFrame.from_dict(
        {
            name: {k: v if not isinstance(v, (dict, list)) else str(v) for k, v in row.items()}
            for name, row in counts.items()
        },
        orient="index",
    )
    return frame[[c for c in columns if c in frame]] if columns else frame


def benchmark_frames(counts: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Notebook 01's tables from ``build_benchmark``'s counts: the corpus, the ranking tasks, the
    classification task and the training data (each only where present)."""
    frames = {}
    corpus = {k: v for k, v in counts.items() if not isinstance(v, Mapping)}
    if corpus:
        frames["corpus"] = pd.DataFrame.from_dict({"corpus": corpus}, orient="index")
    ranking = {t: counts[t] for t in ("cite", "cocite", "coview", "coread") if isinstance(counts.get(t), Mapping)}
    if ranking:
        frames["ranking tasks"] = counts_frame(ranking)
    classification = {t: counts[t] for t in ("mag", "mesh") if isinstance(counts.get(t), Mapping)}
    if classification:
        columns = ["classes", "labelled_papers", "min_class_size", "sampled_fraction", "train", "val", "test"]
        frames["classification"] = counts_frame(classification, columns)
    if isinstance(counts.get("train"), Mapping):
        leakage = counts.get("training_leakage", {})
        train = {**counts["train"], **{f"leakage {k}": v for k, v in leakage.items() if isinstance(v, (int, bool))}}
        frames["training data"] = counts_frame({"train": train})
    return frames


def triplet_counts_frame(mining: Mapping[str, Any]) -> pd.DataFrame:
    """Per split: hard / easy / total triplets, queries used, and queries skipped with the reason (``mine_dir``'s metrics)."""
    rows = {}
    for split in ("train", "val"):
        if split not in mining:
            continue
        part = mining[split]
        row = {k: part.get("triplets", {}).get(k) for k in ("hard", "easy", "total")}
        row["queries used"] = part.get("queries_used")
        row["queries skipped"] = part.get("queries_skipped_total")
        row.update({f"skipped: {k}": v for k, v in part.get("queries_skipped", {}).items() if v})
        rows[split] = row
    return pd.DataFrame.from_dict(rows, orient="index").fillna(0)


def results_chart(results: Mapping[str, Mapping[str, Any]], paper_rows: tuple[str, ...] = PAPER_REFERENCE_ROWS):
    """Grouped bars: every metric of this run for each model, beside the paper's Table 1 rows (hatched).

    Only the metrics this run has are drawn; the paper's bars are on the real SCIDOCS, so they are a
    reference for scale, not a like-for-like comparison unless the benchmark is SCIDOCS itself.
    """

    ours = {model: metric_row(result) for model, result in results.items()}
    metrics = [h for h in HEADERS if any(h in row for row in ours.values())]
    paper = {f"{name} (paper)": dict(zip(HEADERS, PAPER_TABLE1[name][:12], strict=True)) for name in paper_rows}
    series = {**ours, **paper}
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(metrics) + 2), 4))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(metrics))
    for i, (name, row) in enumerate(series.items()):
        values = [row.get(m, np.nan) for m in metrics]
        ax.bar(x + i * width - 0.4 + width / 2, values, width, label=name, hatch="//" if "(paper)" in name else None)
    ax.set_xticks(x, metrics, rotation=20, ha="right")
    ax.set(ylabel="score x 100", title="SCIDOCS metrics: this run beside the paper's Table 1", ylim=(0, 100))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def ablation_chart(variants: Mapping[str, Mapping[str, Any]]):
    """Table 2 chart: each variant's group averages (CLS / USR / CITE / REC / all) beside the paper's."""

    columns = [*TABLE2_GROUPS, "all"]
    averages = {name: group_averages(v["results"]) for name, v in variants.items()}
    shown = [c for c in columns if any(a.get(c) is not None for a in averages.values())]
    paper = {
        f"{name} (paper)": dict(zip(columns, PAPER_TABLE2[name], strict=True))
        for name in ("SPECTER", "no hard negatives")
    }
    series = {**averages, **paper}
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 1]})
    x = np.arange(len(shown))
    for ax, group in zip(axes, (averages, paper), strict=True):
        width = 0.8 / max(len(group), 1)
        for i, (name, row) in enumerate(group.items()):
            values = [row.get(c) if row.get(c) is not None else np.nan for c in shown]
            ax.bar(x + i * width - 0.4 + width / 2, values, width, label=name)
        ax.set_xticks(x, shown)
        ax.legend(fontsize=8)
    low = min((v for row in series.values() for c in shown if (v := row.get(c)) is not None), default=0)
    for ax in axes:
        ax.set_ylim(max(0, low - 10), 100)
    axes[0].set(ylabel="average score x 100", title="this run (Table 2 groups)")
    axes[1].set(title="the paper's Table 2 (SCIDOCS)")
    fig.tight_layout()
    return fig


def embedding_frame(embedded: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Notebook 04's table: model, papers, dimension, seconds (and pooling and length where known)."""
    rows = {}
    for name, info in embedded.items():
        rows[name] = {
            "papers": info.get("count"),
            "dimension": info.get("dim"),
            "seconds": info.get("seconds", info.get("seconds_all_baselines")),
            "pooling": info.get("pooling", ""),
            "max length": info.get("max_length", ""),
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "model"
    return frame


def ablation_seed_chart(statistics: Mapping[str, Any], paper_rows: Mapping[str, str] | None = None):
    """Table 2 over seeds: each row's group averages as bars with ± sd error bars (left), the paper's Table 2
    and 3 rows that the variants stand for (right, hatched; SCIDOCS, so a reference for direction, not level)."""

    groups = statistics["groups"]
    shown = [c for c in TABLE2_COLUMNS if any(c in g for g in groups.values())]
    paper = {
        f"{name} ({paper_name})": dict(zip(TABLE2_COLUMNS, PAPER_ABLATION_ROWS[paper_name], strict=True))
        for name, paper_name in (paper_rows or {}).items()
        if name in groups and paper_name in PAPER_ABLATION_ROWS
    }
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1, 1]})
    x = np.arange(len(shown))
    width = 0.8 / max(len(groups), 1)
    for i, (name, stats) in enumerate(groups.items()):
        means = [stats[c]["mean"] if c in stats else np.nan for c in shown]
        sds = [(stats[c]["sd"] or 0.0) if c in stats else 0.0 for c in shown]
        n = len(next(iter(stats.values()))["per_seed"]) if stats else 0
        axes[0].bar(x + i * width - 0.4 + width / 2, means, width, yerr=sds, capsize=3, label=f"{name} ({n} seeds)")
    columns = list(TABLE2_COLUMNS)
    px = np.arange(len(columns))
    pwidth = 0.8 / max(len(paper), 1)
    for i, (name, row) in enumerate(paper.items()):
        axes[1].bar(px + i * pwidth - 0.4 + pwidth / 2, [row[c] for c in columns], pwidth, label=name, hatch="//")
    axes[0].set_xticks(x, shown)
    axes[1].set_xticks(px, columns)
    values = [s[c]["mean"] for s in groups.values() for c in shown if c in s] + [
        v for r in paper.values() for v in r.values()
    ]
    low = min(values, default=0)
    for ax in axes:
        ax.set_ylim(max(0, low - 10), 100)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    axes[0].set(ylabel="average score x 100 (mean ± sd over seeds)", title="this run (Table 2 groups)")
    axes[1].set(title="the paper's Tables 2 and 3 (SCIDOCS)")
    fig.tight_layout()
    return fig


def save_figure(fig, stem: str | Path) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` (the folder is created); return both paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for ext, dpi in (("png", 150), ("pdf", None)):
        path = stem.parent / f"{stem.name}.{ext}"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        written.append(path)
    return written


def heads_chart(table: pd.DataFrame, metric: str = "macro-F1"):
    """Notebook 08: mean macro-F1 over seeds (error bar: std) of every (encoder, length, head, training) row."""

    flat = table.reset_index()
    labels = [
        f"{r['encoder']} @{r['max_length']} ({r['train_papers']} train): {r['head']}, {r['training']}"
        for _, r in flat.iterrows()
    ]
    colours = {"frozen": "#4c72b0", "end to end": "#dd8452"}
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(flat) + 1.2))
    positions = list(range(len(flat)))[::-1]
    flat["std"] = flat["std"].fillna(0.0)  # one seed: no error bar
    ax.barh(
        positions,
        flat["mean"],
        xerr=flat["std"],
        color=[
            colours.get(t, "#999999") if "SVM" not in h else "#55a868"
            for t, h in zip(flat["training"], flat["head"], strict=True)
        ],
        capsize=2,
    )
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel(f"test {metric} (mean over seeds, std as error bar)")
    lower = max(0.0, float((flat["mean"] - flat["std"]).min()) - 5)
    ax.set_xlim(lower, min(100.0, float((flat["mean"] + flat["std"]).max()) + 3))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
