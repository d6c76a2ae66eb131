"""SciRepEval-format results as a reader sees them: one row per task (its format, main metric and score), then
each format's average of its tasks' main scores and the average over every task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from specter_utils.presentation.tables import to_markdown

FORMAT_LABELS = {
    "classification": "classification",
    "regression": "regression",
    "proximity": "proximity",
    "adhoc_search": "ad hoc search",
}


def _kind(task: Mapping[str, Any]) -> str:
    label = FORMAT_LABELS.get(task["type"], task["type"])
    return f"{label} (multi-label)" if task.get("multi_label") else label


def tasks_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """One row per task: format, main metric, score (x 100), and the other metrics measured."""
    rows = []
    for name, task in result["tasks"].items():
        others = ", ".join(
            f"{k} {v:.2f}" for k, v in task["metrics"].items() if k != task["main_score"] and v is not None
        )
        rows.append(
            {
                "task": name,
                "format": _kind(task),
                "metric": task["main_score"],
                "score": task["score"],
                "other metrics": others,
            }
        )
    return pd.DataFrame(rows).set_index("task")


def formats_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """One row per format present, then ``all tasks``: the average of the main scores."""
    rows = [
        {
            "format": FORMAT_LABELS.get(name, name),
            "tasks": len(entry["tasks"]),
            "main score": entry["main_score"],
            "average": entry["average"],
        }
        for name, entry in result["formats"].items()
    ]
    rows.append({"format": "all tasks", "tasks": len(result["tasks"]), "main score": "", "average": result["average"]})
    return pd.DataFrame(rows).set_index("format")


def formats_table(result: Mapping[str, Any]) -> str:
    """The tasks table and the format averages, in markdown (values x 100, as SciRepEval reports them)."""
    return f"{to_markdown(tasks_frame(result), drop_empty=False)}\n\n{to_markdown(formats_frame(result), drop_empty=False)}"
