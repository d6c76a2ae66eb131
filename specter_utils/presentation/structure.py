"""Notebook 05's sentences on the rows that are not embeddings: how much a ranking task gives to structure alone
(the text-free rankers of ``evaluation.rankers``) and to text without training (BM25), against random vectors and
the trained model, each number read from the results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specter_utils.evaluation.rankers import is_ranker
from specter_utils.presentation.tables import metric_row, row_label
from specter_utils.tasks import RANKING, TASKS

MAIN_HEADERS = tuple(task.headers[task.metrics.index(task.main_score)] for task in TASKS if task.kind == RANKING)


def table1_rows(results: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The rows Table 1 shows, under their labels: every embedding row, and each ranker row that has a metric."""
    return {row_label(name, r): r for name, r in results.items() if not is_ranker(r) or metric_row(r)}


def structure_sentences(
    results: Mapping[str, Mapping[str, Any]], trained: str = "trained", random: str = "random"
) -> str:
    """One line per ranking task (main score, MAP): the best text-free ranker against random and the trained model
    (the share of the random-to-trained gap it closes), and BM25 beside them; "" without a ranker row."""
    rows = {name: metric_row(r) for name, r in results.items()}
    text_free = {n for n, r in results.items() if is_ranker(r) and r["config"].get("text_free") and rows[n]}
    lines = []
    for header in MAIN_HEADERS:
        scored = {n: rows[n][header] for n in text_free if header in rows[n]}
        if not scored:
            continue
        best = max(scored, key=scored.get)
        value = scored[best]
        parts = [f"- {header}: structure alone (`{row_label(best, results[best])}`, no text) scores {value:.2f}"]
        base = rows.get(random, {}).get(header)
        top = rows.get(trained, {}).get(header)
        if base is not None:
            parts.append(f"{value - base:+.2f} against random vectors ({base:.2f})")
        if top is not None:
            parts.append(f"{value - top:+.2f} against the trained model ({top:.2f})")
        sentence = ", ".join(parts)
        if base is not None and top is not None and top > base:
            if value >= top:
                sentence += ": at or above the trained model without reading a word"
            else:
                sentence += f": {100 * (value - base) / (top - base):.0f}% of the way from random to the trained model"
        bm25 = rows.get("bm25", {}).get(header)
        if bm25 is not None:
            sentence += f"; BM25 (text, no training) scores {bm25:.2f}"
        lines.append(sentence + ".")
    return "\n".join(lines)
