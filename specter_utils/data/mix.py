"""Citation pairs of a public corpus beside a user's own: ``data.mix_with``.

A small corpus gives few training triplets. Its training directory can take in a second corpus's: a seeded citation
neighbourhood of ``data.mix_papers`` papers of it (``data.subsample``), every id prefixed with the corpus's name so
no id meets one of the user's, written into the same ``train/`` folder (metadata, citations, query splits). The
benchmark's queries stay the user's own; the second corpus is never scored. A corpus mixed with itself would put
held-out papers back into training, so that is refused.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specter_utils.data.specter_format import SpecterData


def parse_mix_source(text: str) -> tuple[str, str | None]:
    """``KIND`` or ``KIND:PATH`` (a corpus kind and, optionally, where its files are)."""
    kind, _, src = text.partition(":")
    return kind.strip(), (src.strip() or None)


def prefixed(data: SpecterData, prefix: str) -> SpecterData:
    """``data`` with every paper id written ``prefix`` + id."""

    def pid(paper: str) -> str:
        return f"{prefix}{paper}"

    return SpecterData(
        graph={pid(q): {pid(c): n for c, n in row.items()} for q, row in data.graph.items()},
        metadata={pid(p): replace(paper, paper_id=pid(p)) for p, paper in data.metadata.items()},
        splits={name: [pid(p) for p in ids] for name, ids in data.splits.items()},
        info=dict(data.info),
    )


def merge_training(own: SpecterData, other: SpecterData, name: str) -> SpecterData:
    """``own`` with ``other``'s queries, citations and papers added (ids already apart); ``info["mixed_with"]``
    counts what came from each."""
    clash = set(own.metadata) & set(other.metadata)
    if clash:
        raise ValueError(f"papers in both training sets: {sorted(clash)[:3]}")
    names = dict.fromkeys([*own.splits, *other.splits])
    splits = {split: [*own.splits.get(split, []), *other.splits.get(split, [])] for split in names}
    counts: dict[str, Any] = {
        "corpus": name,
        "own_queries": len(own.graph),
        "own_papers": len(own.metadata),
        "mixed_queries": len(other.graph),
        "mixed_papers": len(other.metadata),
    }
    return SpecterData(
        graph={**own.graph, **other.graph},
        metadata={**own.metadata, **other.metadata},
        splits=splits,
        report=own.report,
        info={**own.info, "mixed_with": counts},
    )
