"""Triplet files: JSONL of paper ids, one ``{"query", "pos", "neg", "kind"}`` per line.

Texts are not copied into triplets; they are looked up in ``metadata.json`` at training time.
A mining output directory holds ``train.jsonl``, ``val.jsonl`` and ``metrics.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from specter_utils.errors import DataError
from specter_utils.io import iter_jsonl, write_jsonl
from specter_utils.layout import TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE

TRIPLET_KINDS = ("hard", "easy")
TRAIN_FILE, VAL_FILE = TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE  # the names this package used before layout.py


@dataclass(frozen=True)
class Triplet:
    query: str
    pos: str
    neg: str
    kind: str  # "hard" (negative is a citation of a citation) or "easy" (random corpus paper)


def write_triplets(path: str | Path, triplets: Iterable[Triplet]) -> int:
    """Write triplets atomically; returns how many were written."""
    return write_jsonl(path, (asdict(t) for t in triplets))


def iter_triplets(path: str | Path) -> Iterator[tuple[int, Triplet]]:
    """``(line_number, Triplet)`` for each line of a triplet JSONL file (the format's one reader); a bad row names
    the file and line."""
    for line_number, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise DataError("expected a JSON object", path, line_number)
        missing = [k for k in ("query", "pos", "neg") if k not in row]
        if missing:
            raise DataError(f"missing field(s) {missing}", path, line_number, row.get("query"))
        kind = row.get("kind", "easy")
        if kind not in TRIPLET_KINDS:
            raise DataError(f"unknown kind {kind!r} (expected hard or easy)", path, line_number, row["query"])
        yield line_number, Triplet(str(row["query"]), str(row["pos"]), str(row["neg"]), kind)


def read_triplets(path: str | Path) -> list[Triplet]:
    """Read a triplet JSONL file; a missing field or unknown kind names the file and line."""
    return [triplet for _, triplet in iter_triplets(path)]
