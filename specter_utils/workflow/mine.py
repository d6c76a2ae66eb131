"""Stage 2 (notebook 02): mine training triplets with the ``mining`` settings, then audit them for leakage."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd

from specter_utils.benchmark.splits import cross_split_overlap, query_split_problems
from specter_utils.data.specter_format import read_metadata
from specter_utils.errors import DataError
from specter_utils.spec import RunSpec
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.audit import audit_leakage
from specter_utils.triplets.io import TRAIN_FILE, read_triplets
from specter_utils.triplets.mix import mine_mixed_dir
from specter_utils.triplets.sampler import mine_dir
from specter_utils.triplets.scincl import ScinclConfig, mine_scincl_dir


def mine_triplets(config: SamplerConfig, train_data_dir: str | Path, triplets_dir: str | Path) -> dict[str, Any]:
    """Mine with ``config.strategy``: the SPECTER sampler (specter, spectroid) or SciNCL's neighbourhoods; with
    ``config.scincl_fraction`` > 0, the SPECTER sampler with that share of its queries mined by SciNCL."""
    if config.strategy == "scincl":
        return mine_scincl_dir(
            train_data_dir, triplets_dir, ScinclConfig(max_triplets=config.max_triplets or None, seed=config.seed)
        )
    if config.scincl_fraction:
        return mine_mixed_dir(train_data_dir, triplets_dir, config)
    return mine_dir(train_data_dir, triplets_dir, config)


def leakage_audit(triplets: str | Path, benchmark_dir: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every overlap between triplets (a JSONL file or a mining dir) and a benchmark's held-out papers, and its
    summary: ``leak_free`` and the distinct ids of each overlap (queries, candidates, classification papers)."""
    audit = audit_leakage(triplets, benchmark_dir)
    names = ("query_overlap", "candidate_overlap", "classification_overlap", "later_overlap")
    summary = {
        "leak_free": audit["leak_free"],
        **{name: audit[name]["distinct_ids"] for name in names if name in audit},
    }
    return audit, summary


def mine(spec: RunSpec, train_data_dir: str | Path, triplets_dir: str | Path, benchmark_dir: str | Path) -> dict:
    """Mine triplets, then audit them: any held-out query in a triplet (with a time split: any paper from its
    cutoff on) stops the run."""
    mining = mine_triplets(spec.mining, train_data_dir, triplets_dir)
    audit, leakage = leakage_audit(triplets_dir, benchmark_dir)
    if audit["query_overlap"]["distinct_ids"]:
        raise DataError(
            f"{audit['query_overlap']['distinct_ids']} held-out evaluation queries appear in the training triplets: "
            f"{audit['query_overlap']['examples'][:3]}",
            triplets_dir,
        )
    if not audit["leak_free"]:  # a time split: a paper from its cutoff on in a triplet
        raise DataError(
            f"{audit['later_overlap']['distinct_ids']} papers from the time split's cutoff on appear in the training "
            f"triplets: {audit['later_overlap']['examples'][:3]}",
            triplets_dir,
        )
    return {**mining, "leakage": leakage}


def example_triplets(triplets_dir: str | Path, metadata: str | Path, n: int = 3, seed: int = 0) -> pd.DataFrame:
    """``n`` training triplets with their titles (hard ones first), as a table to read."""
    triplets = read_triplets(Path(triplets_dir) / TRAIN_FILE)
    papers = read_metadata(metadata)
    rng = random.Random(seed)
    hard = [t for t in triplets if t.kind == "hard"]
    easy = [t for t in triplets if t.kind != "hard"]
    chosen = rng.sample(hard, min(len(hard), max(1, n - 1))) if hard else []
    chosen += rng.sample(easy, min(len(easy), n - len(chosen)))

    def title(paper_id: str) -> str:
        return papers[paper_id].title if paper_id in papers else paper_id

    rows = [(t.kind, title(t.query), title(t.pos), title(t.neg)) for t in chosen]
    return pd.DataFrame(rows, columns=["kind", "query", "positive (cited by the query)", "negative"])


def split_audit(benchmark_dir: str | Path, against: list[Path]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``data audit``'s split checks: each ranking query against its own per-paper draw (None for a folder not built
    here), and the validation/test overlap with each benchmark of ``against``."""
    return query_split_problems(benchmark_dir), [cross_split_overlap(benchmark_dir, other) for other in against]
