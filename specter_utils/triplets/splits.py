"""Leakage-safe splits: held-out evaluation queries never reach a training triplet, and an audit.

SciNCL found SCIDOCS evaluation papers inside SPECTER's training triplets. Here held-out queries
are removed, with every edge touching them, before the training directory is built
(``data.convert.corpus_to_specter(exclude=...)``), so they can be neither a query, a positive, a
hard negative nor (absent from ``metadata.json``) an easy negative. ``audit_leakage`` checks any
triplet file against any benchmark directory.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from specter_utils.data.scidocs import CLASSIFICATION_TASKS, RANKING_TASKS, read_scidocs_dir
from specter_utils.data.specter_format import SpecterData
from specter_utils.errors import DataError
from specter_utils.io import iter_jsonl
from specter_utils.triplets.io import TRAIN_FILE, VAL_FILE

ROLES = ("query", "pos", "neg")


def sample_ids(eligible: Iterable[str], n: int, seed: int, exclude: Iterable[str] = ()) -> list[str]:
    """``n`` ids drawn without replacement from ``eligible`` minus ``exclude``, seeded, sorted."""
    excluded = set(exclude)
    pool = sorted(set(eligible) - excluded)
    chosen = random.Random(seed).sample(pool, min(n, len(pool)))
    return sorted(chosen)


def split_ids(ids: Iterable[str], fractions: dict[str, float], seed: int) -> dict[str, list[str]]:
    """Split ids by a seeded shuffle into named parts of the given fractions (the last takes the rest)."""
    shuffled = sorted(ids)
    random.Random(seed).shuffle(shuffled)
    names = list(fractions)
    out: dict[str, list[str]] = {}
    start = 0
    for i, name in enumerate(names):
        end = len(shuffled) if i == len(names) - 1 else start + round(fractions[name] * len(shuffled))
        out[name] = sorted(shuffled[start:end])
        start = end
    return out


def training_leakage(data: SpecterData, held_out: Iterable[str]) -> dict[str, Any]:
    """Where held-out ids occur in a SPECTER training dir: as query, candidate or easy-negative pool."""
    held = set(held_out)
    queries = held & set(data.graph)
    candidates = {c for row in data.graph.values() for c in row} & held
    pool = held & set(data.metadata)
    return {
        "held_out": len(held),
        "as_query": len(queries),
        "as_candidate": len(candidates),
        "in_metadata": len(pool),
        "examples": sorted(queries | candidates | pool)[:10],
        "leak_free": not (queries or candidates or pool),
    }


def benchmark_ids(benchmark_dir: str | Path) -> dict[str, dict[str, set[str]]]:
    """Per ranking task: query ids and candidate ids; per classification task: its paper ids."""
    root = Path(benchmark_dir)
    if (root / "scidocs").is_dir():
        root = root / "scidocs"
    data = read_scidocs_dir(root)
    out: dict[str, dict[str, set[str]]] = {}
    for task in RANKING_TASKS:
        if task not in data.ranking:
            continue
        queries: set[str] = set()
        candidates: set[str] = set()
        for qrels in data.ranking[task].values():
            queries.update(qrels)
            for docs in qrels.values():
                candidates.update(docs)
        out[task] = {"queries": queries, "candidates": candidates}
    for task in CLASSIFICATION_TASKS:
        if task in data.classification:
            pids = {pid for rows in data.classification[task].values() for pid, _ in rows}
            out[task] = {"papers": pids}
    if data.recomm:
        out["recomm"] = {"queries": {c.query_id for clicks in data.recomm.values() for c in clicks}}
    return out


def _triplet_files(triplets_path: Path) -> list[Path]:
    if triplets_path.is_dir():
        files = [triplets_path / name for name in (TRAIN_FILE, VAL_FILE) if (triplets_path / name).exists()]
        if not files:
            raise DataError(f"no {TRAIN_FILE} or {VAL_FILE} in the triplet directory", triplets_path)
        return files
    if not triplets_path.exists():
        raise DataError("file not found", triplets_path)
    return [triplets_path]


def audit_leakage(triplets_path: str | Path, benchmark_dir: str | Path) -> dict[str, Any]:
    """Every overlap between triplets (a JSONL file or a mining dir) and a benchmark's evaluation ids.

    ``query_overlap`` (the leakage that matters: evaluation queries seen in training) and
    ``candidate_overlap`` (ranking candidates; expected for random negatives, reported apart) give,
    per triplet role, how many triplets contain such an id, plus the distinct ids and examples.
    """
    groups = benchmark_ids(benchmark_dir)
    eval_queries = set().union(*(g.get("queries", set()) for g in groups.values()))
    eval_candidates = set().union(*(g.get("candidates", set()) for g in groups.values())) - eval_queries
    eval_papers = set().union(*(g.get("papers", set()) for g in groups.values()))
    targets = {
        "query_overlap": eval_queries,
        "candidate_overlap": eval_candidates,
        "classification_overlap": eval_papers,
    }
    per_role = {name: dict.fromkeys(ROLES, 0) for name in targets}
    distinct: dict[str, set[str]] = {name: set() for name in targets}
    examples: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
    n_triplets = 0
    files = _triplet_files(Path(triplets_path))
    for path in files:
        for line_number, row in iter_jsonl(path):
            if not isinstance(row, dict) or any(role not in row for role in ROLES):
                raise DataError("expected an object with query, pos and neg", path, line_number)
            n_triplets += 1
            for name, ids in targets.items():
                for role in ROLES:
                    paper = str(row[role])
                    if paper in ids:
                        per_role[name][role] += 1
                        distinct[name].add(paper)
                        if len(examples[name]) < 10:
                            examples[name].append({"file": path.name, "line": line_number, "role": role, "id": paper})
    by_task = {
        task: {kind: len(ids & set().union(*distinct.values())) for kind, ids in group.items()}
        for task, group in groups.items()
    }
    report: dict[str, Any] = {
        "triplet_files": [str(p) for p in files],
        "benchmark_dir": str(benchmark_dir),
        "triplets": n_triplets,
        "evaluation_queries": len(eval_queries),
        "evaluation_candidates": len(eval_candidates),
        "classification_papers": len(eval_papers),
        "by_task_distinct_ids_in_triplets": by_task,
        "leak_free": not distinct["query_overlap"],
        "ok": not distinct["query_overlap"],  # what `specter-utils data audit` exits on
    }
    for name in targets:
        report[name] = {"by_role": per_role[name], "distinct_ids": len(distinct[name]), "examples": examples[name]}
    return report
