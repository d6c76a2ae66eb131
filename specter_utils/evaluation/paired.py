"""Compare models over the same queries: mean and spread over seeds, and a paired test per query.

A row is a model trained with one or more seeds (one embeddings file per seed). For each ranking task the row's
MAP is the mean over seeds of each seed's MAP, with the spread over seeds; against a reference row, each query's AP
is first averaged over the row's seeds (and over the reference's), then the per-query differences are tested
(:func:`paired_test`). Only queries that every compared file covers enter a comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from specter_utils.embedding.io import read_embeddings_fast
from specter_utils.evaluation.ranking import evaluate_ranking

MEASURE = "map"  # trec_eval's average precision; MAP is its mean over queries


@dataclass
class RowScores:
    """Per-query AP (x 100) of one row: ``seeds[i][task][query]``."""

    name: str
    files: list[str]
    seeds: list[dict[str, dict[str, float]]] = field(default_factory=list)

    def task_map(self, task: str) -> list[float]:
        """The MAP of each seed on ``task``."""
        return [float(np.mean(list(seed[task].values()))) for seed in self.seeds]

    def query_means(self, task: str) -> dict[str, float]:
        """Each query's AP averaged over the seeds (queries every seed covers)."""
        common = set.intersection(*(set(seed[task]) for seed in self.seeds))
        return {q: float(np.mean([seed[task][q] for seed in self.seeds])) for q in sorted(common)}


def per_query_table(rows: Sequence[RowScores], tasks: Sequence[str], decimals: int = 4) -> dict[str, Any]:
    """Every row's per-query AP per seed in a compact form a metrics file can keep (each task's query ids once,
    then per row one list of AP per seed in that order, rounded), so a comparison can be read again later."""
    out: dict[str, Any] = {"decimals": decimals, "tasks": {}}
    for task in tasks:
        queries = sorted(set().union(*(set(seed[task]) for row in rows for seed in row.seeds)))
        out["tasks"][task] = {
            "queries": queries,
            "rows": {
                row.name: [
                    [round(seed[task][q], decimals) if q in seed[task] else None for q in queries] for seed in row.seeds
                ]
                for row in rows
            },
        }
    return out


def rows_from_table(table: Mapping[str, Any]) -> list[RowScores]:
    """The rows :func:`per_query_table` wrote (without their files), each seed's AP per task and query."""
    seeds: dict[str, list[dict[str, dict[str, float]]]] = {}
    for task, entry in table["tasks"].items():
        for name, per_seed in entry["rows"].items():
            rows = seeds.setdefault(name, [{} for _ in per_seed])
            for i, values in enumerate(per_seed):
                rows[i][task] = {q: v for q, v in zip(entry["queries"], values, strict=True) if v is not None}
    return [RowScores(name, [], per_seed) for name, per_seed in seeds.items()]


def per_query_ap(qrels: Mapping[str, Mapping[str, int]], embeddings: Any, name: str = "") -> dict[str, float]:
    """AP x 100 of each evaluated query (``evaluation.ranking``: -L2 scores, trec_eval through pytrec_eval)."""
    result = evaluate_ranking(dict(qrels), embeddings, name)
    return {query: 100.0 * scores[MEASURE] for query, scores in result.per_query.items()}


def score_row(
    name: str, files: Sequence[str | Path], qrels_by_task: Mapping[str, Mapping[str, Mapping[str, int]]]
) -> RowScores:
    """Per-query AP of each embeddings file (one per seed) on each task."""
    row = RowScores(name=name, files=[str(f) for f in files])
    for file in files:
        embeddings = read_embeddings_fast(file)
        row.seeds.append(
            {task: per_query_ap(qrels, embeddings, f"{name}/{task}") for task, qrels in qrels_by_task.items()}
        )
    return row


def paired_test(
    row: Mapping[str, float], reference: Mapping[str, float], n_resamples: int = 10_000, seed: int = 0
) -> dict[str, Any]:
    """Mean per-query difference ``row - reference`` with a 95% bootstrap CI and a two-sided permutation p."""
    queries = sorted(set(row) & set(reference))
    if len(queries) < 2:
        raise ValueError(f"a paired test needs at least 2 common queries, got {len(queries)}")
    diff = np.array([row[q] - reference[q] for q in queries])
    rng = np.random.default_rng(seed)
    mean = float(diff.mean())
    if np.allclose(diff, diff[0]):  # no variation: the interval is the point, no permutation can differ
        return {"queries": len(queries), "diff": mean, "ci_low": mean, "ci_high": mean, "p": 1.0 if mean == 0 else 0.0}
    boot = stats.bootstrap(
        (diff,), np.mean, n_resamples=n_resamples, confidence_level=0.95, method="percentile", random_state=rng
    )
    # one sample: each query's sign flipped, i.e. the two models swapped
    options = {"permutation_type": "samples", "n_resamples": n_resamples, "alternative": "two-sided"}
    perm = stats.permutation_test((diff,), np.mean, **options, random_state=rng)
    low, high = float(boot.confidence_interval.low), float(boot.confidence_interval.high)
    return {"queries": len(queries), "diff": mean, "ci_low": low, "ci_high": high, "p": float(perm.pvalue)}


def detectable_difference(
    row: Mapping[str, float], reference: Mapping[str, float], alpha: float = 0.05, power: float = 0.8
) -> dict[str, float]:
    """What a paired test over these queries can see, by the normal approximation: the smallest true mean
    difference a two-sided test at ``alpha`` detects with probability ``power`` ((z(1 - alpha/2) + z(power)) x sd /
    sqrt(n), sd the spread of the per-query differences ``row - reference``), and the queries that a difference of
    2 points would need. It ignores a table's multiple-comparison adjustment and the seeds' spread, so the real
    test sees less."""
    queries = sorted(set(row) & set(reference))
    if len(queries) < 2:
        raise ValueError(f"a detectable difference needs at least 2 common queries, got {len(queries)}")
    sd = float(np.std([row[q] - reference[q] for q in queries], ddof=1))
    factor = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    return {
        "queries": len(queries),
        "sd": sd,
        "detectable": factor * sd / np.sqrt(len(queries)),
        "queries_for_2": float(np.ceil((factor * sd / 2.0) ** 2)),
    }


def seed_maps(maps: Sequence[float]) -> dict[str, Any]:
    """A row's MAP on one task over its seeds: each seed's (2 decimals), the mean and the sample sd (0.0 for one)."""
    return {
        "map_per_seed": [round(m, 2) for m in maps],
        "map_mean": float(np.mean(maps)),
        "map_sd": float(np.std(maps, ddof=1)) if len(maps) > 1 else 0.0,
    }


def compare_rows(
    rows: Sequence[RowScores], references: Sequence[str], tasks: Sequence[str], n_resamples: int = 10_000, seed: int = 0
) -> dict[str, Any]:
    """Every row's MAP (mean, spread over seeds) and its paired test against each reference row."""
    by_name = {row.name: row for row in rows}
    missing = [name for name in references if name not in by_name]
    if missing:
        raise ValueError(f"reference row(s) {missing} not among the rows {list(by_name)}")
    out: dict[str, Any] = {"tasks": list(tasks), "references": list(references), "rows": {}}
    for row in rows:
        entry: dict[str, Any] = {"files": row.files, "seeds": len(row.seeds), "tasks": {}}
        for task in tasks:
            maps = row.task_map(task)
            stats = {**seed_maps(maps), "map_min": float(min(maps)), "map_max": float(max(maps)), "versus": {}}
            for ref in references:
                if ref != row.name:
                    stats["versus"][ref] = paired_test(
                        row.query_means(task), by_name[ref].query_means(task), n_resamples=n_resamples, seed=seed
                    )
            entry["tasks"][task] = stats
        out["rows"][row.name] = entry
    return out


def render_comparison(result: Mapping[str, Any]) -> str:
    """A markdown table: MAP mean ± sd (seeds) per task, and the difference to each reference with CI and p."""
    tasks, refs = result["tasks"], result["references"]
    header = ["row", "seeds"]
    for task in tasks:
        header.append(f"{task} MAP")
        header.extend(f"{task} vs {ref}" for ref in refs)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, entry in result["rows"].items():
        cells = [name, str(entry["seeds"])]
        for task in tasks:
            stats = entry["tasks"][task]
            spread = f" ± {stats['map_sd']:.2f}" if entry["seeds"] > 1 else ""
            cells.append(f"{stats['map_mean']:.2f}{spread}")
            for ref in refs:
                test = stats["versus"].get(ref)
                if test is None:
                    cells.append("")
                    continue
                p = "< 0.001" if test["p"] < 0.001 else f"{test['p']:.3f}"
                cells.append(f"{test['diff']:+.2f} [{test['ci_low']:+.2f}, {test['ci_high']:+.2f}], p {p}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
