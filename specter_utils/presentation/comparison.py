"""Figures that show a comparison: differences to a reference row with their intervals, and what a classifier did.

- :func:`delta_forest`: one point per row and task, ``row - reference`` with its 95% paired-bootstrap CI, on
  an axis centred on 0 (so 84.2 against 81.8 reads as +2.4, not as two equal bars on a 0-100 axis), filled where
  the difference is detected (``Delta.detected``: the Holm-adjusted p under 0.05 where the test has one);
- :func:`classification_figure`: per-class F1 (with each class's test support), the confusion matrix
  (rows normalised) and the cross-validation accuracy of every ``C`` of the grid, the chosen one marked;
  its parts are :func:`per_class_f1_chart`, :func:`confusion_chart` and :func:`c_grid_chart`.

Every function returns a matplotlib Figure and reads no file; ``plots.save_figure`` and ``plots.show``
write and display it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from specter_utils.evaluation.deltas import Delta


# ---------------------------------------------------------------- Δ against the reference row
def delta_forest(deltas: Sequence[Delta | Mapping[str, Any]], title: str = "", ax: Any = None):
    """Forest plot: ``row - reference`` per task with its 95% paired-bootstrap CI; filled where the difference is
    detected (``Delta.detected``: its Holm-adjusted p under 0.05 where the test is ``evaluation.hierarchical``'s,
    else the CI excluding 0), each labelled with its p (and adjusted p).

    ``deltas``: ``evaluation.deltas.Delta`` objects or their ``as_dict()`` (rows, tasks and metrics as given).
    """

    items = [Delta.of(d) for d in deltas]
    if not items:
        raise ValueError("no differences to draw")
    references = sorted({d.reference for d in items})
    tasks = list(dict.fromkeys(f"{d.task} {d.metric}" for d in items))
    rows = list(dict.fromkeys(d.row for d in items))
    colours = plt.get_cmap("tab10")
    if ax is None:
        label_inches = 0.075 * max(len(row) for row in rows)  # long row names (the heads') get room of their own
        fig, ax = plt.subplots(figsize=(max(7.5, 5.0 + label_inches), 0.9 + 0.38 * len(items) + 0.25 * len(rows)))
    else:
        fig = ax.figure
    labels, y = [], 0.0
    for row in rows:
        for t, task in enumerate(tasks):
            match = [d for d in items if d.row == row and f"{d.task} {d.metric}" == task]
            if not match:
                continue
            d = match[0]
            colour = colours(t % 10)
            ax.plot([d.ci_low, d.ci_high], [y, y], color=colour, lw=2)
            ax.plot(
                [d.diff],
                [y],
                "o",
                color=colour,
                markerfacecolor=colour if d.detected else "white",
                markersize=7,
                label=task if task not in ax.get_legend_handles_labels()[1] else None,
            )
            p = "" if d.p is None else (", p < 0.001" if d.p < 0.001 else f", p {d.p:.3f}")
            if d.p_adjusted is not None:
                p += ", adj. p < 0.001" if d.p_adjusted < 0.001 else f", adj. p {d.p_adjusted:.3f}"
            ax.annotate(f"{d.diff:+.2f}{p}", (d.ci_high, y), xytext=(4, -3), textcoords="offset points", fontsize=8)
            labels.append((y, row if len(references) == 1 else f"{row} vs {d.reference}"))
            y -= 1.0
        y -= 0.6
    ax.axvline(0.0, color="black", lw=0.8)
    low = min(0.0, *(d.ci_low for d in items))
    high = max(0.0, *(d.ci_high for d in items))
    span = (high - low) or 1.0
    ax.set_xlim(low - 0.05 * span, high + 0.35 * span)  # room on the right for the labels
    ticks: dict[str, list[float]] = {}
    for position, row in labels:
        ticks.setdefault(row, []).append(position)
    ax.set_yticks([float(np.mean(v)) for v in ticks.values()], list(ticks))
    metrics = ", ".join(dict.fromkeys(d.metric for d in items))
    adjusted = any(d.p_adjusted is not None for d in items)
    ax.set_xlabel(
        f"difference to {' / '.join(references)} ({metrics} x 100 points), 95% "
        + ("bootstrap CI over seeds and units; filled: Holm-adjusted p < 0.05" if adjusted else "paired-bootstrap CI")
        + ("" if adjusted else "; filled: the CI excludes 0")
    )
    ax.set_title(title or f"each row minus {' / '.join(references)}, per task")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- classification
def per_class_f1_chart(per_class: Mapping[str, Mapping[str, Any]], title: str = "", ax: Any = None):
    """Horizontal bars: each class's test F1 (x 100), the class labelled with its test support and prediction count."""

    order = sorted(per_class, key=lambda c: (-per_class[c].get("support", 0), c))
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 0.6 + 0.28 * len(order)))
    else:
        fig = ax.figure
    values = [per_class[c]["f1"] for c in order]
    names = [
        f"{c[:28]} (n={per_class[c].get('support', '?')}, predicted {per_class[c].get('predicted', '?')})"
        for c in order
    ]
    ax.barh(range(len(order)), values, color="tab:blue")
    ax.set_yticks(range(len(order)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("F1 of the class on the test split (x 100)")
    ax.set_title(title or "per-class F1 (classes by test support)")
    return fig


def confusion_chart(confusion: Mapping[str, Any], title: str = "", ax: Any = None, max_label: int = 18):
    """The confusion matrix, each row divided by its true class's test papers (rows: true class, columns: predicted)."""

    labels = list(confusion["labels"])
    matrix = np.asarray(confusion["matrix"], dtype=float)
    shares = np.divide(
        matrix,
        matrix.sum(axis=1, keepdims=True),
        out=np.zeros_like(matrix),
        where=matrix.sum(axis=1, keepdims=True) > 0,
    )
    if ax is None:
        size = 2.5 + 0.3 * len(labels)
        fig, ax = plt.subplots(figsize=(size + 1.2, size))
    else:
        fig = ax.figure
    image = ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    short = [label[:max_label] for label in labels]
    ax.set_xticks(range(len(labels)), short, rotation=90, fontsize=7)
    ax.set_yticks(range(len(labels)), short, fontsize=7)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    ax.set_title(title or "confusion matrix (share of each true class)")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of the true class's test papers")
    return fig


def c_grid_chart(cv_accuracy: Mapping[str | float, float], best_c: float, title: str = "", ax: Any = None):
    """Mean 3-fold CV accuracy on train for every C of the grid, the chosen C marked."""

    points = sorted((float(c), float(a)) for c, a in cv_accuracy.items())
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.0, 3.2))
    else:
        fig = ax.figure
    cs, accs = zip(*points, strict=True)
    ax.plot(cs, [100 * a for a in accs], "o-", color="tab:blue")
    best = dict(points).get(float(best_c))
    if best is not None:
        ax.plot([best_c], [100 * best], "*", color="tab:red", markersize=14, label=f"chosen C = {best_c:g}")
        ax.legend(fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("C of the linear SVM (log scale)")
    ax.set_ylabel("mean 3-fold CV accuracy on train (%)")
    ax.set_title(title or "the C grid: cross-validation score of every C")
    return fig


def classification_figure(details: Mapping[str, Any], title: str = ""):
    """One figure of a classification result (``suite.evaluate``'s ``details["mag"]``): per-class F1, the
    confusion matrix and the C grid with the chosen C."""

    n = len(details["per_class"])
    height = max(4.0, 0.6 + 0.28 * n)
    fig = plt.figure(figsize=(17, height))
    grid = fig.add_gridspec(1, 3, width_ratios=[1.1, 1.2, 0.9])
    per_class_f1_chart(details["per_class"], ax=fig.add_subplot(grid[0]))
    confusion_chart(details["confusion"], ax=fig.add_subplot(grid[1]))
    c_grid_chart(details["cv_accuracy"], details["C"], ax=fig.add_subplot(grid[2]))
    fig.suptitle(title or f"linear SVM: macro-F1 {details['f1']:.2f} on {details['n_eval']} test papers")
    fig.tight_layout()
    return fig
