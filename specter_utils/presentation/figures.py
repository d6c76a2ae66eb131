"""The notebooks' figures and small tables: training curves, Table 1 and Table 2 charts, counts.

Each function returns a matplotlib Figure (or a pandas DataFrame) for the notebook to show; none
reads files. Figure 2 (t-SNE / UMAP) lives in ``analysis``."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from specter_utils.io import read_json
from specter_utils.layout import TRAIN_CONFIG_FILE
from specter_utils.loss_kinds import LOSS_REGISTRY
from specter_utils.presentation import labels
from specter_utils.presentation.tables import HEADERS, PAPER_ABLATION_ROWS, PAPER_TABLE1, TABLE2_COLUMNS, metric_row
from specter_utils.runs import corpus_label
from specter_utils.tasks import CLASSIFICATION, RANKING_CITATION_FIRST, tasks_of

# The paper's rows drawn beside ours in the Table 1 chart (docs/protocol.md section 5).
PAPER_REFERENCE_ROWS = ("SPECTER", "SciBERT")


def loss_axis(train_config: Mapping[str, Any] | None) -> str:
    """The loss axis label of a training run from its resolved ``TrainConfig`` (``train_config.json``)."""
    if not train_config or train_config.get("loss") not in LOSS_REGISTRY:
        return "training objective (loss not recorded)"
    return LOSS_REGISTRY.get(train_config["loss"]).axis.format(margin=float(train_config.get("triplet_margin", 1.0)))


def benchmark_name(run_dir: str | Path, scidocs_dir: str = "") -> str:
    """The benchmark a run is scored on, as a chart title names it: ``SCIDOCS`` with ``evaluation.scidocs_dir``,
    else the corpus the run's benchmark was built from (``hepth``)."""
    return "SCIDOCS" if scidocs_dir else corpus_label(run_dir)


def show(fig) -> None:
    """Show a figure in the notebook as a PNG output whatever the matplotlib backend (papermill runs with Agg)."""
    from IPython.display import Image, display

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    display(Image(data=buffer.getvalue(), format="png"))


def training_curves_frame(log_history: list[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per logged step: training loss, validation loss and validation triplet accuracy (where logged): the
    eval keys ending in ``accuracy``, whatever the evaluator calls them."""
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


def training_curves(log_history: list[Mapping[str, Any]], title: str = "", train_dir: str | Path | None = None):
    """Loss (training and validation) and validation triplet accuracy against the optimiser step; the loss axis
    names the loss that trained, read from ``train_dir``'s ``train_config.json``."""
    config_file = Path(train_dir) / TRAIN_CONFIG_FILE if train_dir is not None else None
    train_config = read_json(config_file) if config_file is not None and config_file.is_file() else None
    frame = training_curves_frame(log_history)
    accuracy = [c for c in frame.columns if c.endswith("accuracy")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    loss_ax, acc_ax = axes
    for column, style in (("training loss", "-"), ("validation loss", "o-")):
        if column in frame:
            series = frame[column].dropna()
            loss_ax.plot(series.index, series.values, style, label=column)
    loss_ax.set(xlabel="optimiser step", ylabel=loss_axis(train_config), title="loss")
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
    flat = {
        name: {k: str(v) if isinstance(v, (dict, list)) else v for k, v in row.items()} for name, row in counts.items()
    }
    frame = pd.DataFrame.from_dict(flat, orient="index")
    return frame[[c for c in columns if c in frame]] if columns else frame


def benchmark_frames(counts: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Notebook 01's tables from ``build_benchmark``'s counts: the corpus, the ranking tasks, the
    classification task and the training data (each only where present)."""
    frames = {}
    corpus = {k: v for k, v in counts.items() if not isinstance(v, Mapping)}
    if corpus:
        frames["corpus"] = pd.DataFrame.from_dict({"corpus": corpus}, orient="index")
    ranking = {
        t: counts[t] for t in (task.name for task in RANKING_CITATION_FIRST) if isinstance(counts.get(t), Mapping)
    }
    if ranking:
        frames["ranking tasks"] = counts_frame(ranking)
    classification = {t: counts[t] for t in tasks_of(CLASSIFICATION) if isinstance(counts.get(t), Mapping)}
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
    for split, part in ((s, mining[s]) for s in ("train", "val") if s in mining):
        counts = {k: part.get("triplets", {}).get(k) for k in ("hard", "easy", "total")}
        queries = {"queries used": part.get("queries_used"), "queries skipped": part.get("queries_skipped_total")}
        skipped = {f"skipped: {k}": v for k, v in part.get("queries_skipped", {}).items() if v}
        rows[split] = {**counts, **queries, **skipped}
    return pd.DataFrame.from_dict(rows, orient="index").fillna(0)


def results_chart(results: Mapping[str, Mapping[str, Any]], paper_rows: tuple[str, ...] = PAPER_REFERENCE_ROWS):
    """Grouped bars: every metric of this run for each model, beside the paper's Table 1 rows (hatched: on the real
    SCIDOCS, a reference for scale, not a like-for-like comparison unless the benchmark is SCIDOCS itself)."""
    ours = {model: labels.classification_columns(metric_row(result), result) for model, result in results.items()}
    own = list(dict.fromkeys(h for row in ours.values() for h in row if h not in HEADERS))  # e.g. journal F1
    metrics = own + [h for h in HEADERS if any(h in row for row in ours.values())]
    benchmark = labels.benchmark_name(next(iter(results.values()), {}))
    paper = {f"{name} (paper)": dict(zip(HEADERS, PAPER_TABLE1[name][:-1], strict=True)) for name in paper_rows}
    series = {**ours, **paper}
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(metrics) + 2), 4))
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(metrics))
    for i, (name, row) in enumerate(series.items()):
        values = [row.get(m, np.nan) for m in metrics]
        ax.bar(x + i * width - 0.4 + width / 2, values, width, label=name, hatch="//" if "(paper)" in name else None)
    ax.set_xticks(x, metrics, rotation=20, ha="right")
    if benchmark and benchmark != "SCIDOCS":
        title = f"{benchmark} benchmark: this run beside the paper's Table 1 (the paper's bars: on SCIDOCS)"
    else:
        title = f"{benchmark or 'SCIDOCS'} metrics: this run beside the paper's Table 1"
    ax.set(ylabel="score x 100", title=title)
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def embedding_frame(embedded: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Notebook 04's table: model, papers, dimension, seconds (and pooling and length where known)."""
    rows = {
        name: {
            "papers": info.get("count"),
            "dimension": info.get("dim"),
            "seconds": info.get("seconds", info.get("seconds_all_baselines")),
            "pooling": info.get("pooling", ""),
            "max length": info.get("max_length", ""),
        }
        for name, info in embedded.items()
    }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "model"
    return frame


def ablation_seed_chart(
    statistics: Mapping[str, Any], paper_rows: Mapping[str, str] | None = None, reference: str = "specter"
):
    """Table 2 as differences: one panel per Table 2 group present (and "all" where there are several), one line
    per row. A filled dot is the row's mean minus the mean of the row it is tested against (``statistics["compared_to"]``,
    else ``reference``), over seeds, with a bar of ± the larger of the two seed sds: a dot whose bar crosses 0 is
    no difference. A hollow diamond of the same colour is the paper's difference for the same group (its row minus
    the row it stands against, SPECTER unless that row has a paper row of its own), on the real SCIDOCS: compare
    directions, not sizes."""
    groups = statistics["groups"]
    paper_rows = dict(paper_rows or {})
    against = {name: statistics.get("compared_to", {}).get(name, reference) for name in groups if name != reference}
    rows = [name for name in against if against[name] in groups]
    shown = [c for c in TABLE2_COLUMNS if any(c in g for g in groups.values())]
    if len(shown) == 2:  # one group: its average is "all", the same numbers twice
        shown = shown[:1]
    if not rows or not shown:
        raise ValueError(f"no row to draw against {reference!r}")
    colours = plt.get_cmap("tab10")
    ours_label, paper_label = "this run (± the larger seed sd)", "the paper (SCIDOCS)"
    width = 5.0 if len(shown) == 1 else 3.8  # one panel: wide enough that its labelled dots do not crowd
    fig, axes = plt.subplots(
        1, len(shown), figsize=(width * len(shown) + 2.4, max(2.4, 1.2 + 0.75 * len(rows))), sharey=True, squeeze=False
    )
    for ax, column in zip(axes[0], shown, strict=True):
        index, ours_labelled, paper_labelled = TABLE2_COLUMNS.index(column), False, False
        for i, name in enumerate(rows):
            y = len(rows) - 1 - i
            ours, base = groups[name].get(column), groups[against[name]].get(column)
            if ours and base:
                sds = (ours["sd"], base["sd"])
                spread = None if None in sds else max(sds)  # one seed: no spread measured, no bar
                diff = ours["mean"] - base["mean"]
                label = None if ours_labelled else ours_label
                ax.errorbar(diff, y + 0.14, xerr=spread, fmt="o", color=colours(i % 10), capsize=3, label=label)
                _label_point(ax, diff, y + 0.14, f"{diff:+.2f}" + ("" if spread is None else f" ± {spread:.2f}"))
                ours_labelled = True
            paper_name, paper_base = paper_rows.get(name), paper_rows.get(against[name], "SPECTER")
            if paper_name in PAPER_ABLATION_ROWS and paper_base in PAPER_ABLATION_ROWS:
                paper_diff = PAPER_ABLATION_ROWS[paper_name][index] - PAPER_ABLATION_ROWS[paper_base][index]
                label = None if paper_labelled else paper_label
                ax.plot([paper_diff], [y - 0.14], "D", color=colours(i % 10), markerfacecolor="white", label=label)
                _label_point(ax, paper_diff, y - 0.14, f"{paper_diff:+.1f}", colour="dimgrey", above=False)
                paper_labelled = True
        ax.axvline(0, color="grey", lw=0.8)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
        ax.margins(x=0.12)  # room for the labels of the outermost points
        ax.set(title=column, xlabel=f"Δ {column} (score x 100)")
    labels = [name if against[name] == reference else f"{name} vs {against[name]}" for name in rows]
    n_seeds = {name: len(statistics.get("seeds", {}).get(name, [])) for name in rows}
    seeds = {n: "" if not k else " (1 seed)" if k == 1 else f" ({k} seeds)" for n, k in n_seeds.items()}
    labels = [label + seeds[name] for label, name in zip(labels, rows, strict=True)]
    axes[0][0].set_yticks(range(len(rows) - 1, -1, -1), labels)
    axes[0][0].set_ylim(-0.6, len(rows) - 0.4)
    handles = dict(zip(*reversed(axes[0][-1].get_legend_handles_labels()), strict=True))  # label: handle
    names = [label for label in (ours_label, paper_label) if label in handles]  # this run first
    fig.legend([handles[n] for n in names], names, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle(f"Table 2 as differences from {reference} (a bar that crosses 0: no difference)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def _label_point(ax, x: float, y: float, text: str, colour: str = "black", above: bool = True) -> None:
    """Write a point's value just above (or below) it, small, so a reader need not read it off the axis."""
    offset, va = ((0, 5), "bottom") if above else ((0, -6), "top")
    ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", ha="center", va=va, fontsize=7, color=colour)


def save_figure(fig, stem: str | Path) -> list[Path]:
    """Write ``stem.png`` and ``stem.pdf`` (the folder is created); return both paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = {stem.parent / f"{stem.name}.{ext}": dpi for ext, dpi in (("png", 150), ("pdf", None))}
    for path, dpi in written.items():
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return list(written)


def heads_chart(table: pd.DataFrame, metric: str = "macro-F1", n_classes: int | None = None, benchmark: str = ""):
    """Notebook 08: mean macro-F1 over seeds (error bar: std) of every (encoder, length, head, training) row.

    With ``n_classes``, a chance line at 100 / ``n_classes``: the macro-F1 (and accuracy) of guessing a class
    uniformly at random on balanced classes. ``benchmark`` names the benchmark in the title."""
    flat = table.reset_index()
    labels = [
        f"{r['encoder']} @{r['max_length']} ({r['train_papers']} train): {r['head']}, {r['training']}"
        for _, r in flat.iterrows()
    ]
    colours = {"frozen": "#4c72b0", "end to end": "#dd8452"}
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(flat) + 1.2))
    positions = list(range(len(flat)))[::-1]
    flat["std"] = flat["std"].fillna(0.0)  # one seed: no error bar
    bars = [
        colours.get(t, "#999999") if "SVM" not in h else "#55a868"
        for t, h in zip(flat["training"], flat["head"], strict=True)
    ]
    ax.barh(positions, flat["mean"], xerr=flat["std"], color=bars, capsize=2)
    ax.set_yticks(positions, labels, fontsize=7)
    ax.set_xlabel(f"test {metric} (mean over seeds, std as error bar)")
    lower = max(0.0, float((flat["mean"] - flat["std"]).min()) - 5)
    handles = [
        Patch(color=colours["frozen"], label="frozen head"),
        Patch(color=colours["end to end"], label="end to end"),
        Patch(color="#55a868", label="linear SVM (SCIDOCS protocol)"),
    ]
    if n_classes:
        chance = 100.0 / n_classes
        lower = min(lower, max(0.0, chance - 2))
        handles.append(
            ax.axvline(chance, color="black", linestyle="--", linewidth=1, label=f"chance: 1/{n_classes} classes")
        )
    ax.set_xlim(lower, min(100.0, float((flat["mean"] + flat["std"]).max()) + 3))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="x", alpha=0.3)
    what = f"{n_classes}-class " if n_classes else ""
    ax.set_title(f"{benchmark + ' benchmark: ' if benchmark else ''}{what}classification heads", fontsize=10)
    fig.tight_layout()
    return fig
