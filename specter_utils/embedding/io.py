"""Embedding files.

``FILE.jsonl`` is the SCIDOCS format, one ``{"paper_id", "title", "embedding"}`` per line. Beside it
the embedder writes ``FILE.npy`` (float32 matrix), ``FILE.ids.txt`` (one id per row) for fast
reuse, and ``FILE.meta.json`` (model, pooling, max length, ...).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.errors import DataError
from specter_utils.io import atomic_write, iter_jsonl, read_json, read_lines, write_json


@dataclass
class EmbeddingSet:
    """Row ``i`` of ``vectors`` is the embedding of ``ids[i]``."""

    ids: list[str]
    vectors: np.ndarray
    titles: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.vectors):
            raise ValueError(f"{len(self.ids)} ids but {len(self.vectors)} vectors")
        self._index = {pid: i for i, pid in enumerate(self.ids)}

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 and len(self.vectors) else 0

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self._index

    def __len__(self) -> int:
        return len(self.ids)

    def as_dict(self) -> dict[str, np.ndarray]:
        return {pid: self.vectors[i] for pid, i in self._index.items()}

    def lookup(self, paper_ids: list[str], fill_zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Vectors for ``paper_ids`` and a boolean mask of which were found (missing rows are zeros)."""
        found = np.array([pid in self._index for pid in paper_ids], dtype=bool)
        out = np.zeros((len(paper_ids), self.dim), dtype=self.vectors.dtype)
        rows = [self._index[pid] for pid in paper_ids if pid in self._index]
        out[found] = self.vectors[rows]
        return out, found

    def merged(self, other: EmbeddingSet) -> EmbeddingSet:
        """Union of two sets; an id present in both must not be duplicated."""
        dup = set(self.ids) & set(other.ids)
        if dup:
            raise DataError(f"{len(dup)} ids present in both embedding sets", record_id=sorted(dup)[0])
        titles = (self.titles or [""] * len(self)) + (other.titles or [""] * len(other))
        return EmbeddingSet(self.ids + other.ids, np.vstack([self.vectors, other.vectors]), titles, {**self.info})


def sidecar_paths(path: str | Path) -> dict[str, Path]:
    """``FILE.jsonl`` -> ``FILE.npy``, ``FILE.ids.txt``, ``FILE.meta.json``."""
    path = Path(path)
    stem = path.with_suffix("") if path.suffix in {".jsonl", ".npy"} else path
    return {"npy": Path(f"{stem}.npy"), "ids": Path(f"{stem}.ids.txt"), "meta": Path(f"{stem}.meta.json")}


def read_embeddings_jsonl(path: str | Path) -> EmbeddingSet:
    """Read a SCIDOCS embeddings JSONL; malformed lines, mixed dimensions, NaN and duplicate ids are errors."""
    path = Path(path)
    ids: list[str] = []
    titles: list[str] = []
    rows: list[list[float]] = []
    seen: dict[str, int] = {}
    dim = None
    for line_number, row in iter_jsonl(path):
        if not isinstance(row, dict) or "paper_id" not in row or "embedding" not in row:
            raise DataError("expected an object with 'paper_id' and 'embedding'", path, line_number)
        paper_id = str(row["paper_id"])
        vector = row["embedding"]
        if not isinstance(vector, list) or not vector:
            raise DataError("'embedding' must be a non-empty list of numbers", path, line_number, paper_id)
        if dim is None:
            dim = len(vector)
        elif len(vector) != dim:
            raise DataError(
                f"embedding has {len(vector)} dimensions, earlier lines have {dim}", path, line_number, paper_id
            )
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector):
            raise DataError("embedding contains NaN, infinity or a non-number", path, line_number, paper_id)
        if paper_id in seen:
            raise DataError(f"duplicate paper_id (first on line {seen[paper_id]})", path, line_number, paper_id)
        seen[paper_id] = line_number
        ids.append(paper_id)
        titles.append(str(row.get("title") or ""))
        rows.append(vector)
    if not ids:
        raise DataError("no embeddings in file", path)
    info = read_json(sidecar_paths(path)["meta"]) if sidecar_paths(path)["meta"].exists() else {}
    return EmbeddingSet(ids, np.asarray(rows, dtype=np.float32), titles, info)


def read_embeddings(path: str | Path) -> EmbeddingSet:
    """Read embeddings from ``FILE.jsonl`` or ``FILE.npy`` (+ ``FILE.ids.txt``), validating them."""
    path = Path(path)
    if path.suffix == ".npy":
        side = sidecar_paths(path)
        if not side["ids"].exists():
            raise DataError(f"no ids file {side['ids'].name} beside the matrix", path)
        vectors = np.load(path)
        ids = read_lines(side["ids"])
        if vectors.ndim != 2 or len(ids) != len(vectors):
            raise DataError(f"matrix shape {vectors.shape} does not match {len(ids)} ids", path)
        bad = ~np.isfinite(vectors).all(axis=1)
        if bad.any():
            row = int(np.argmax(bad))
            raise DataError("embedding contains NaN or infinity", path, row + 1, ids[row])
        if len(set(ids)) != len(ids):
            dup = next(pid for pid in ids if ids.count(pid) > 1)
            raise DataError("duplicate paper_id", side["ids"], ids.index(dup) + 1, dup)
        info = read_json(side["meta"]) if side["meta"].exists() else {}
        return EmbeddingSet(ids, vectors.astype(np.float32, copy=False), None, info)
    return read_embeddings_jsonl(path)


def read_embeddings_fast(path: str | Path) -> EmbeddingSet:
    """:func:`read_embeddings` of ``FILE.npy`` when it sits beside ``FILE.jsonl`` (written with it), else of ``path``."""
    path = Path(path)
    npy = path.with_suffix(".npy")
    return read_embeddings(npy if npy.exists() else path)


def write_embeddings(path: str | Path, embeddings: EmbeddingSet, write_npy: bool = True) -> None:
    """Write the SCIDOCS JSONL (and the ``.npy``/ids/meta sidecars), each file atomically."""
    path = Path(path)
    titles = embeddings.titles or [""] * len(embeddings)
    with atomic_write(path) as handle:
        for paper_id, title, vector in zip(embeddings.ids, titles, embeddings.vectors, strict=True):
            handle.write(json.dumps({"paper_id": paper_id, "title": title, "embedding": [float(x) for x in vector]}))
            handle.write("\n")
    side = sidecar_paths(path)
    if write_npy:
        with atomic_write(side["npy"], "wb") as handle:
            np.save(handle, np.asarray(embeddings.vectors, dtype=np.float32))
        with atomic_write(side["ids"]) as handle:
            handle.writelines(f"{pid}\n" for pid in embeddings.ids)
    write_json(side["meta"], {**embeddings.info, "count": len(embeddings), "dim": embeddings.dim})
