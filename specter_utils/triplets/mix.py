"""SciNCL neighbourhood triplets mixed with the citation sampler's: ``SamplerConfig.scincl_fraction``.

Both samplers mine every query of a split: the SPECTER sampler (``triplets.sampler``, with the run's strategy and
positives) and SciNCL's neighbourhood sampling (``triplets.scincl``, SciNCL's defaults). The queries that both
can serve are put in a seeded random order; the first ``round(scincl_fraction x n)`` of them take their SciNCL
triplets (positives from the graph-embedding neighbourhood), the others their citation-sampler triplets. A query
only the citation sampler serves keeps its triplets; a query only SciNCL serves is left out (counted), so that a
fraction of 0 gives exactly the citation sampler's triplets. Both give 5 triplets per query (2 hard, 3 easy), so
the share of SciNCL triplets is close to the fraction; ``metrics.json`` records the share reached. The training
cap ``max_triplets`` is applied after the mix, as whole random queries. The same seed gives the same triplets.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.data.specter_format import read_specter_dir
from specter_utils.errors import DataError
from specter_utils.io import write_json
from specter_utils.layout import METRICS_FILE, TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.io import Triplet, write_triplets
from specter_utils.triplets.sampler import _cap_mask, mine
from specter_utils.triplets.scincl import ScinclConfig, graph_embedding, sample_scincl

_MIX_SALT = {"train": 11, "val": 12}  # the mix's own random streams, apart from either sampler's


def _by_query(triplets: list[Triplet]) -> dict[str, list[Triplet]]:
    grouped: dict[str, list[Triplet]] = {}
    for triplet in triplets:
        grouped.setdefault(triplet.query, []).append(triplet)
    return grouped


def mix_split(
    citation: list[Triplet], scincl: list[Triplet], fraction: float, rng: np.random.Generator
) -> tuple[list[Triplet], dict[str, Any]]:
    """The citation sampler's triplets with ``fraction`` of the queries both serve switched to SciNCL's triplets,
    in the citation sampler's query order (the split file's)."""
    if not 0.0 <= fraction <= 1.0:
        raise DataError(f"scincl_fraction must be in [0, 1], got {fraction}", "SamplerConfig")
    by_citation, by_scincl = _by_query(citation), _by_query(scincl)
    both = sorted(set(by_citation) & set(by_scincl))
    order = rng.permutation(len(both))
    chosen = {both[i] for i in order[: round(fraction * len(both))].tolist()}
    mixed = [t for q, triplets in by_citation.items() for t in (by_scincl[q] if q in chosen else triplets)]
    from_scincl = sum(len(by_scincl[q]) for q in chosen)
    metrics = {
        "scincl_fraction": fraction,
        "queries_both_samplers": len(both),
        "queries_scincl": len(chosen),
        "queries_citation": len(by_citation) - len(chosen),
        "queries_scincl_only_left_out": len(set(by_scincl) - set(by_citation)),
        "triplets_scincl": from_scincl,
        "triplets_citation": len(mixed) - from_scincl,
        "scincl_share": round(from_scincl / len(mixed), 4) if mixed else 0.0,
    }
    return mixed, metrics


def cap_queries(triplets: list[Triplet], cap: int, rng: np.random.Generator) -> list[Triplet]:
    """``cap`` triplets as whole queries in a seeded random order (the sampler's own cap), in their input order."""
    if not cap or len(triplets) <= cap:
        return triplets
    index: dict[str, int] = {}
    slot_row = np.array([index.setdefault(t.query, len(index)) for t in triplets], dtype=np.int64)
    keep = _cap_mask(slot_row, cap, rng)
    return [t for t, kept in zip(triplets, keep.tolist(), strict=True) if kept]


def _split_metrics(base: dict[str, Any], triplets: list[Triplet], mix: dict[str, Any]) -> dict[str, Any]:
    """The citation sampler's metrics of a split, with the counts of the mixed triplets and the mix's own."""
    hard = sum(t.kind == "hard" for t in triplets)
    return {
        **base,
        "queries_used": len({t.query for t in triplets}),
        "triplets": {"hard": hard, "easy": len(triplets) - hard, "total": len(triplets)},
        "mix": mix,
    }


def mine_mixed_dir(data_dir: str | Path, out_dir: str | Path, config: SamplerConfig) -> dict[str, Any]:
    """Mine a SPECTER training dir with ``config.scincl_fraction`` of the queries from SciNCL: the three files of
    ``mine`` (``train.jsonl``, ``val.jsonl``, ``metrics.json``) and its metrics, each split with its ``mix``."""
    if config.strategy == "scincl":
        raise DataError("scincl_fraction mixes SciNCL into the specter or spectroid sampler, not into scincl")
    data = read_specter_dir(data_dir)
    citation = mine(data, dataclasses.replace(config, max_triplets=0))
    scincl_config = ScinclConfig(seed=config.seed)
    embedding = graph_embedding(data, scincl_config.dim, scincl_config.seed)
    splits: dict[str, list[Triplet]] = {}
    metrics: dict[str, Any] = {**citation.metrics, "strategy": f"{config.strategy} + scincl"}
    for split, result in (("train", citation.train), ("val", citation.val)):
        scincl, scincl_metrics = sample_scincl(data, data.splits.get(split, []), scincl_config, split, embedding)
        rng = np.random.default_rng([config.seed, _MIX_SALT[split]])
        mixed, mix = mix_split(result.triplets.to_list(), scincl, config.scincl_fraction, rng)
        if split == "train":
            capped = cap_queries(mixed, config.max_triplets, rng)
            mix["capped_from"] = len(mixed) if len(capped) < len(mixed) else None
            mixed = capped
        mix["scincl"] = {key: scincl_metrics[key] for key in ("positive_ranks", "hard_negative_ranks", "graph_nodes")}
        splits[split] = mixed
        metrics[split] = _split_metrics(result.metrics, mixed, mix)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_triplets(out_dir / TRIPLETS_TRAIN_FILE, splits["train"])
    write_triplets(out_dir / TRIPLETS_VAL_FILE, splits["val"])
    write_json(out_dir / METRICS_FILE, metrics)
    return metrics
