"""Notebook 05's sentences on the controls: how much a ranking task gives to structure alone (the text-free rankers
of ``evaluation.rankers``) and to text without training (BM25), against random vectors and the trained model; how
much of the trained model's gain over its base remains under popularity-matched negatives and under the time split.
Each number is read from the results and their paired tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specter_utils.evaluation.deltas import Delta
from specter_utils.evaluation.rankers import is_ranker
from specter_utils.presentation.tables import metric_row, row_label
from specter_utils.tasks import RANKING, TASKS

MAIN_HEADERS = tuple(task.headers[task.metrics.index(task.main_score)] for task in TASKS if task.kind == RANKING)
MATCHED_SUFFIX = "-matched"
QUERY_TASKS = (("cite", "cite"), ("cocite", "co-cite"))  # the tasks whose queries a split draws: name, result key
# Each citation task's result key and its popularity-matched version's: (cite, cite (matched)), ...
MATCHED_PAIRS = tuple(
    (plain.key, matched.key)
    for matched in TASKS
    if matched.name.endswith(MATCHED_SUFFIX)
    for plain in TASKS
    if plain.name == matched.name[: -len(MATCHED_SUFFIX)]
)


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


def _gains(deltas: Sequence[Delta | Mapping[str, Any]], trained: str, base: str) -> dict[str, Delta]:
    """``trained`` against ``base`` (MAP) by task."""
    return {d.task: d for d in map(Delta.of, deltas) if d.row == trained and d.reference == base and d.metric == "MAP"}


def gain_sentences(
    deltas: Sequence[Delta | Mapping[str, Any]], trained: str = "trained", base: str = "base"
) -> list[str]:
    """One line per citation task: the trained model's paired gain over ``base`` (MAP, 95% CI over queries) under
    random negatives and under matched negatives, where in-degree and year cannot tell positives from negatives,
    and the share of the gain that remains there; [] without both."""
    lines = []
    for row in gain_rows(deltas, {}, trained, base):
        random_gain, matched_gain = row["random"], row["matched"]
        line = (
            f"- {row['task']}: {trained} - {base} {random_gain.interval} MAP under random negatives, "
            f"{matched_gain.interval} under matched negatives"
        )
        if row["share"] is not None and row["share"] >= 100:  # not growth: the two gains are not tested apart
            line += (
                f": no loss of the gain where popularity cannot help (the matched-negative gain is {row['share']:.0f}%"
                " of it; the two are not tested against each other)"
            )
        elif row["share"] is not None:  # a share only of a gain that is shown
            line += f": {row['share']:.0f}% of the gain remains where popularity cannot help"
        else:
            line += ": no gain shown under random negatives (the interval holds 0), so no share of it is given"
        if matched_gain.excludes_zero:
            line += f"; the matched-negative interval excludes 0 ({matched_gain.n} queries)."
        else:
            line += (
                f"; under matched negatives no difference is shown (the interval holds 0, {matched_gain.n} queries)."
            )
        lines.append(line)
    return lines


def time_split_sentences(
    time_split: Mapping[str, Any],
    random_split_deltas: Sequence[Delta | Mapping[str, Any]] = (),
    trained: str = "trained",
    base: str = "base",
) -> str:
    """Notebook 05's time-split section in words: the cutoff and its queries, what structure alone scores there,
    and the trained model's gain over its base under the time split beside the random split's, task by task."""
    split = time_split["made"]["split"]
    cutoff = split.get("cutoff_year")
    counts = {key: split.get(f"{name}_test_queries") for name, key in QUERY_TASKS}
    queries = ", ".join(f"{n} {key}" for key, n in counts.items() if n is not None)
    lines = [
        f"Queries published in {cutoff} or later ({queries} test queries), the recipe retrained on "
        f"{time_split['made']['triplets']} triplets from papers published before {cutoff} only:"
    ]
    structure = structure_sentences(time_split["results"], trained=trained)
    if structure:
        lines.append(structure)
    lines.extend(gain_sentences(time_split["deltas"], trained, base))
    random_split = _gains(random_split_deltas, trained, base)
    for task, gain in _gains(time_split["deltas"], trained, base).items():
        if task in random_split:
            lines.append(
                f"- {task}: {trained} - {base} {gain.interval} under the time split, "
                f"{random_split[task].interval} under the random split."
            )
    return "\n".join(lines)


def gain_rows(
    deltas: Sequence[Delta | Mapping[str, Any]],
    results: Mapping[str, Mapping[str, Any]],
    trained: str = "trained",
    base: str = "base",
) -> list[dict[str, Any]]:
    """Per citation task with a matched version: the trained model's gain over ``base`` under random and matched
    negatives (``Delta``s), the share that remains (None unless the random-negative gain's interval is above 0),
    and the best text-free ranker's MAP under each (None without one): what :func:`gain_sentences` says, as data."""
    gains = _gains(deltas, trained, base)
    rows = {name: metric_row(r) for name, r in results.items()}
    text_free = [n for n, r in results.items() if is_ranker(r) and r["config"].get("text_free") and rows[n]]
    out = []
    for plain, matched in MATCHED_PAIRS:
        if plain not in gains or matched not in gains:
            continue
        random_gain, matched_gain = gains[plain], gains[matched]
        structure = {}
        for key in (plain, matched):
            scored = [rows[n][f"{key} MAP"] for n in text_free if f"{key} MAP" in rows[n]]
            structure[key] = max(scored) if scored else None
        share = 100 * matched_gain.diff / random_gain.diff if random_gain.ci_low > 0 else None
        gains_of = {"task": plain, "random": random_gain, "matched": matched_gain, "share": share}
        out.append({**gains_of, "text_free_random": structure[plain], "text_free_matched": structure[matched]})
    return out
