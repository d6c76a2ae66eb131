"""Leakage-safe splits: held-out evaluation queries never reach a training triplet.

SciNCL found SCIDOCS evaluation papers inside SPECTER's training triplets. Here held-out queries
are removed, with every edge touching them, before the training directory is built
(``data.convert.corpus_to_specter(exclude=...)``), so they can be neither a query, a positive, a
hard negative nor (absent from ``metadata.json``) an easy negative. ``benchmark_ids`` lists a benchmark's
evaluation ids for ``triplets.audit.audit_leakage``, which checks any triplet file against them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from specter_utils.benchmark.scirepeval_folder import format_task_ids
from specter_utils.data.scidocs import CLASSIFICATION_TASKS, RANKING_TASKS, read_scidocs_dir
from specter_utils.data.specter_format import SpecterData
from specter_utils.io import read_json, read_lines
from specter_utils.layout import BENCHMARK_FILE, LATER_PAPERS_FILE


def sample_ids(eligible: Iterable[str], n: int, seed: int, exclude: Iterable[str] = ()) -> list[str]:
    """``n`` ids drawn without replacement from ``eligible`` minus ``exclude``, seeded, sorted."""
    pool = sorted(set(eligible) - set(exclude))
    return sorted(random.Random(seed).sample(pool, min(n, len(pool))))


def random_negatives(pool: list[str], n: int, taken: set[str], rng: random.Random) -> list[str]:
    """``n`` distinct papers of ``pool`` outside ``taken`` (fewer only if the pool runs out), in draw order."""
    if len(pool) <= 4 * (n + len(taken)):  # small pool: choose exactly among what is left
        rest = [p for p in pool if p not in taken]
        return rng.sample(rest, min(n, len(rest)))
    chosen: list[str] = []
    seen = set(taken)
    while len(chosen) < n:
        paper = pool[rng.randrange(len(pool))]
        if paper not in seen:
            seen.add(paper)
            chosen.append(paper)
    return chosen


def paper_draw(pid: str, seed: int, purpose: str) -> float:
    """A paper's own seeded number in [0, 1) for ``purpose``: the same for that paper in every benchmark of the seed,
    whatever else the benchmark holds (blake2b of seed, purpose and id)."""
    digest = hashlib.blake2b(f"{seed}\x1f{purpose}\x1f{pid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def query_split(pid: str, seed: int, val_fraction: float) -> str:
    """``val`` or ``test``: the split a paper falls in whenever it is a ranking query of a benchmark with ``seed``,
    decided by the paper alone, so no benchmark's validation query is another's test query."""
    return "val" if paper_draw(pid, seed, "split") < val_fraction else "test"


def draw_queries(
    eligible: Iterable[str], n: int, seed: int, val_fraction: float, exclude: Iterable[str] = ()
) -> list[str]:
    """``n`` queries from ``eligible`` minus ``exclude``, sorted: ``round(val_fraction * n)`` of the papers whose own
    split (:func:`query_split`) is val and the rest of those whose split is test, each taken first in the seed's
    per-paper order. So a benchmark with more queries holds every query of one with fewer, each in the same split, and
    the split sizes are exact where the corpus has the papers (a short split leaves its share to the other)."""
    excluded = set(exclude)
    ranked = sorted((p for p in set(eligible) if p not in excluded), key=lambda p: (paper_draw(p, seed, "query"), p))
    by_split: dict[str, list[str]] = {"val": [], "test": []}
    for pid in ranked:
        by_split[query_split(pid, seed, val_fraction)].append(pid)
    n_val = min(round(val_fraction * n), len(by_split["val"]))
    n_test = min(n - n_val, len(by_split["test"]))
    n_val = min(n - n_test, len(by_split["val"]))
    return sorted(by_split["val"][:n_val] + by_split["test"][:n_test])


def split_queries(ids: Iterable[str], seed: int, val_fraction: float) -> dict[str, list[str]]:
    """Ranking queries into ``val`` and ``test`` by :func:`query_split`: about ``val_fraction`` of them in val."""
    parts: dict[str, list[str]] = {"val": [], "test": []}
    for pid in sorted(ids):
        parts[query_split(pid, seed, val_fraction)].append(pid)
    return parts


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


def training_leakage(data: SpecterData, held_out: Iterable[str], later: Iterable[str] | None = None) -> dict[str, Any]:
    """Where held-out ids occur in a SPECTER training dir: as query, candidate or easy-negative pool; with
    ``later`` (a time split's papers from the cutoff on), where those occur too."""
    held = set(held_out)
    in_training = set(data.graph) | {c for row in data.graph.values() for c in row} | set(data.metadata)
    queries = held & set(data.graph)
    candidates = {c for row in data.graph.values() for c in row} & held
    pool = held & set(data.metadata)
    out = {
        "held_out": len(held),
        "as_query": len(queries),
        "as_candidate": len(candidates),
        "in_metadata": len(pool),
        "examples": sorted(queries | candidates | pool)[:10],
        "leak_free": not (queries or candidates or pool),
    }
    if later is not None:
        late = set(later) & in_training
        out.update(later_papers=len(set(later)), later_in_training=len(late), later_examples=sorted(late)[:10])
        out["leak_free"] = out["leak_free"] and not late
    return out


def latest_cutoff(
    years: Mapping[str, int | None], eligible: Mapping[str, Iterable[str]], wanted: Mapping[str, int]
) -> int | None:
    """The latest year Y whose eligible papers published in Y or later can give every task its ``wanted``
    queries (tasks drawn in order, each disjoint from those before); None when no year has papers."""
    dated = sorted({y for y in years.values() if y is not None}, reverse=True)
    for year in dated:
        taken = 0
        for task, ids in eligible.items():
            late = {p for p in ids if years.get(p) is not None and years[p] >= year}
            if len(late) - taken < wanted[task]:
                break
            taken += wanted[task]
        else:
            return year
    return dated[-1] if dated else None


def later_papers(years: Mapping[str, int | None], cutoff: int) -> list[str]:
    """The papers a time split keeps out of training: published in ``cutoff`` or later, or of unknown year."""
    return sorted(p for p, year in years.items() if year is None or year >= cutoff)


def read_later_papers(benchmark_dir: str | Path) -> set[str] | None:
    """A time-split benchmark's papers from its cutoff on (``LATER_PAPERS_FILE``); None for a random split."""
    root = Path(benchmark_dir)
    if root.name == "scidocs" and not (root / LATER_PAPERS_FILE).exists():
        root = root.parent
    path = root / LATER_PAPERS_FILE
    return set(read_lines(path)) if path.exists() else None


def ranking_splits(benchmark_dir: str | Path) -> dict[str, dict[str, set[str]]]:
    """Per ranking task present: the query ids of each split (``val``, ``test``)."""
    root = Path(benchmark_dir)
    data = read_scidocs_dir(root / "scidocs" if (root / "scidocs").is_dir() else root)
    return {task: {split: set(qrels) for split, qrels in splits.items()} for task, splits in data.ranking.items()}


def query_split_problems(benchmark_dir: str | Path) -> dict[str, Any] | None:
    """Each ranking query whose split is not the one its own draw gives (``query_split`` with the benchmark's seed
    and val fraction, from ``benchmark.json``): a benchmark built by another rule, or edited by hand. None for a
    folder without ``benchmark.json`` (not built here, e.g. SCIDOCS itself: no rule to check)."""
    root = Path(benchmark_dir)
    if root.name == "scidocs" and not (root / BENCHMARK_FILE).exists():
        root = root.parent
    if not (root / BENCHMARK_FILE).exists():
        return None
    info = read_json(root / BENCHMARK_FILE)
    seed, val_fraction = int(info["seed"]), float(info["config"]["val_fraction"])
    ranking = ranking_splits(root)
    wrong = sorted(
        (task, split, q)
        for task, splits in ranking.items()
        for split, queries in splits.items()
        for q in queries
        if query_split(q, seed, val_fraction) != split
    )
    queries = {q for splits in ranking.values() for ids in splits.values() for q in ids}
    return {
        "seed": seed,
        "val_fraction": val_fraction,
        "queries": len(queries),
        "off_rule": len(wrong),
        "examples": [f"{task}/{split}: {q}" for task, split, q in wrong[:10]],
        "per_paper": not wrong,
    }


def cross_split_overlap(benchmark_dir: str | Path, other_dir: str | Path) -> dict[str, Any]:
    """Papers that are validation queries in one benchmark and test queries in the other (either way round)."""

    def by_split(root: str | Path) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {"val": set(), "test": set()}
        for splits in ranking_splits(root).values():
            for split, queries in splits.items():
                out.setdefault(split, set()).update(queries)
        return out

    ours, theirs = by_split(benchmark_dir), by_split(other_dir)
    overlap = (ours["val"] & theirs["test"]) | (ours["test"] & theirs["val"])
    return {"other": str(other_dir), "val_test_overlap": len(overlap), "examples": sorted(overlap)[:10]}


def benchmark_ids(benchmark_dir: str | Path) -> dict[str, dict[str, set[str]]]:
    """Per ranking task: query ids and candidate ids; per classification task: its paper ids; per task in
    SciRepEval's formats (``DIR/scirepeval``): its ``held_out``, ``candidates`` and ``papers`` ids."""
    root = Path(benchmark_dir)
    if (root / "scidocs").is_dir():
        root = root / "scidocs"
    data = read_scidocs_dir(root)
    out: dict[str, dict[str, set[str]]] = {}
    for task in [task for task in RANKING_TASKS if task in data.ranking]:
        splits = data.ranking[task].values()
        queries = {query for qrels in splits for query in qrels}
        out[task] = {"queries": queries, "candidates": {c for qrels in splits for docs in qrels.values() for c in docs}}
    for task in [task for task in CLASSIFICATION_TASKS if task in data.classification]:
        out[task] = {"papers": {pid for rows in data.classification[task].values() for pid, _ in rows}}
    if data.recomm:
        out["recomm"] = {"queries": {c.query_id for clicks in data.recomm.values() for c in clicks}}
    out.update(format_task_ids(benchmark_dir))
    return out
