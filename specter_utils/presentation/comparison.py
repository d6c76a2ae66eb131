"""Figures that show a comparison: differences to a reference row with their intervals, on an axis centred on 0
(so 84.2 against 81.8 reads as +2.4, not as two equal bars on a 0-100 axis). Reads no file."""

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
    else the CI excluding 0), each labelled with its p (and adjusted p). ``deltas``: Delta objects or their dicts."""
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
            label = task if task not in ax.get_legend_handles_labels()[1] else None
            face = colour if d.detected else "white"
            ax.plot([d.diff], [y], "o", color=colour, markerfacecolor=face, markersize=7, label=label)
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
