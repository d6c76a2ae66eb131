"""The leakage audit: does any training triplet contain a held-out evaluation paper of a benchmark?

SciNCL found SCIDOCS evaluation papers inside SPECTER's training triplets; ``audit_leakage`` checks any
triplet file (or mining directory) against any benchmark directory (``benchmark.splits.benchmark_ids``). A
time-split benchmark (``data.split_by=date``) also lists its papers from the cutoff on; none may be in a triplet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.benchmark.splits import benchmark_ids, read_later_papers
from specter_utils.errors import DataError
from specter_utils.layout import TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE
from specter_utils.triplets.io import iter_triplets

ROLES = ("query", "pos", "neg")


def _triplet_files(triplets_path: Path) -> list[Path]:
    if triplets_path.is_dir():
        files = [
            triplets_path / name for name in (TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE) if (triplets_path / name).exists()
        ]
        if not files:
            raise DataError(f"no {TRIPLETS_TRAIN_FILE} or {TRIPLETS_VAL_FILE} in the triplet directory", triplets_path)
        return files
    if not triplets_path.exists():
        raise DataError("file not found", triplets_path)
    return [triplets_path]


def audit_leakage(triplets_path: str | Path, benchmark_dir: str | Path) -> dict[str, Any]:
    """Every overlap between triplets (a JSONL file or a mining dir) and a benchmark's evaluation ids, per overlap
    (``query_overlap``: the leakage that matters; ``candidate_overlap``: expected for random negatives) and triplet
    role: how many triplets contain such an id, the distinct ids and examples."""
    groups = benchmark_ids(benchmark_dir)
    eval_queries = set().union(*(g.get("queries", set()) for g in groups.values()))
    eval_candidates = set().union(*(g.get("candidates", set()) for g in groups.values())) - eval_queries
    eval_papers = set().union(*(g.get("papers", set()) for g in groups.values()))
    format_held_out = set().union(*(g.get("held_out", set()) for g in groups.values())) - eval_queries
    targets = {
        "query_overlap": eval_queries,
        "candidate_overlap": eval_candidates,
        "classification_overlap": eval_papers,
        "format_held_out_overlap": format_held_out,  # held-out papers of the tasks in SciRepEval's formats
    }
    later = read_later_papers(benchmark_dir)
    if later is not None:  # a time split: papers from its cutoff on (queries, newer candidates, every later paper)
        targets["later_overlap"] = later
    per_role = {name: dict.fromkeys(ROLES, 0) for name in targets}
    distinct: dict[str, set[str]] = {name: set() for name in targets}
    examples: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
    n_triplets = 0
    files = _triplet_files(Path(triplets_path))
    for path in files:
        for line_number, triplet in iter_triplets(path):
            n_triplets += 1
            for name, ids in targets.items():
                for role in ROLES:
                    paper = getattr(triplet, role)
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
        "format_task_held_out": len(format_held_out),
        # what `specter-utils data audit` and workflow.mine stop on (a time split: any paper from its cutoff on too)
        "leak_free": not distinct["query_overlap"]
        and not distinct["format_held_out_overlap"]
        and not distinct.get("later_overlap"),
    }
    if later is not None:
        report["later_papers"] = len(later)
    for name in targets:
        report[name] = {"by_role": per_role[name], "distinct_ids": len(distinct[name]), "examples": examples[name]}
    return report
