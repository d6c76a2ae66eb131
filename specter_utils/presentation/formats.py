"""SciRepEval-format results as a reader sees them: one row per task (its format, main metric and score), then
each format's average of its tasks' main scores and the average over every task; and two models side by side,
task by task, with the paired difference and the sentences it supports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from specter_utils.presentation.interpret import difference_sentence
from specter_utils.presentation.tables import to_markdown

FORMAT_LABELS = {"adhoc_search": "ad hoc search"}  # how a table names a format whose name is not plain words


def _kind(task: Mapping[str, Any]) -> str:
    label = FORMAT_LABELS.get(task["type"], task["type"])
    return f"{label} (multi-label)" if task.get("multi_label") else label


def tasks_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """One row per task: format, main metric, score (x 100), and the other metrics measured."""
    rows = []
    for name, task in result["tasks"].items():
        main = task["main_score"]
        others = ", ".join(f"{k} {v:.2f}" for k, v in task["metrics"].items() if k != main and v is not None)
        rows.append(
            {"task": name, "format": _kind(task), "metric": main, "score": task["score"], "other metrics": others}
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


# ---------------------------------------------------------------- two models, paired
def _p(p: float | None) -> str:
    if p is None:
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def comparison_frame(paired: Mapping[str, Mapping[str, Any]], row: str, reference: str) -> pd.DataFrame:
    """One row per task: format, metric, both scores (x 100), ``row - reference`` with its 95% paired-bootstrap
    interval, the permutation p and how many queries or papers were paired
    (:func:`evaluation.formats.paired.compare_results`)."""
    rows = []
    for name, test in paired.items():
        if test["delta"] is not None:
            interval = f"{test['delta']:+.2f} [{test['ci_low']:+.2f}, {test['ci_high']:+.2f}]"
        else:
            interval = f"not tested: {test['reason']}"
        scores = {"task": name, "format": _kind(test), "metric": test["metric"], row: test["score"]}
        pairing = {"Δ [95% CI]": interval, "p": _p(test.get("p")), "n": f"{test['n']} {test['unit']}"}
        rows.append({**scores, reference: test["reference_score"], **pairing})
    return pd.DataFrame(rows).set_index("task")


def comparison_lead(paired: Mapping[str, Mapping[str, Any]], row: str, reference: str) -> str:
    """One sentence: how many tasks were tested and on which the 95% paired interval excludes 0, each way."""
    tested = {name: test for name, test in paired.items() if test["delta"] is not None}
    higher = [name for name, test in tested.items() if test["ci_low"] > 0]
    lower = [name for name, test in tested.items() if test["ci_high"] < 0]
    lead = f"{row} against {reference} on {len(paired)} task(s) in SciRepEval's formats, {len(tested)} tested: "
    if higher or lower:
        parts = [f"higher on {', '.join(higher)}" if higher else "", f"lower on {', '.join(lower)}" if lower else ""]
        lead += f"the 95% paired interval excludes 0 ({'; '.join(p for p in parts if p)})"
        rest = len(tested) - len(higher) - len(lower)
        lead += f" and includes it on {rest} task(s)." if rest else "."
    else:
        lead += "no 95% paired interval excludes 0." if tested else "none has per-item scores to pair."
    return lead


def comparison_sentences(paired: Mapping[str, Mapping[str, Any]], row: str, reference: str) -> str:
    """:func:`comparison_lead`, then one sentence per task (:func:`presentation.interpret.difference_sentence`),
    all from the numbers."""
    tested = {name: test for name, test in paired.items() if test["delta"] is not None}
    sentences = []
    for name, t in tested.items():
        what = f"{name} ({t['metric']}, {t['n']} {t['unit']})"
        sentences.append(difference_sentence(row, reference, what, t["delta"], (t["ci_low"], t["ci_high"]), t["p"]))
    return " ".join([comparison_lead(paired, row, reference), *sentences])


def formats_comparison(compared: Mapping[str, Any]) -> str:
    """``workflow.formats.compare_formats``'s result in markdown: the table and the sentences, or the one-line
    reason it did nothing."""
    if compared.get("skipped"):
        return f"SciRepEval-format tasks not scored: {compared['skipped']}"
    row, reference, paired = compared["row"], compared["reference"], compared["paired"]
    table = to_markdown(comparison_frame(paired, row, reference), drop_empty=False)
    return f"{table}\n\n{comparison_sentences(paired, row, reference)}"
