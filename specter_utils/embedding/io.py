"""Embedding files.

``FILE.jsonl`` is the SCIDOCS format, one ``{"paper_id", "title", "embedding"}`` per line. Beside it
the embedder writes ``FILE.npy`` (float32 matrix), ``FILE.ids.txt`` (one id per row) for fast
reuse, and ``FILE.meta.json`` (model, pooling, max length, ...).

The four files are one set. :func:`write_embeddings` writes them all to temporary files first (a full
disk fails there, leaving the old set whole), removes the old manifest, renames the data files into
place and renames ``FILE.meta.json`` last; the meta records each file's size under ``"files"``. A
reader uses a sidecar only when the meta lists it with its current size, so a set interrupted between
two renames is never read as a mix of two runs.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from specter_utils.errors import DataError
from specter_utils.io import _UMASK, iter_jsonl, read_json, read_lines

MANIFEST_KEY = "files"  # in FILE.meta.json: {"jsonl": bytes, "npy": bytes, "ids": bytes} of the set it belongs to


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

    def lookup(self, paper_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
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


ID_KEYS = ("paper_id", "doc_id")  # a line's id: ours (SCIDOCS's), or SciRepEval's embedding generator's


def read_embeddings_jsonl(path: str | Path) -> EmbeddingSet:
    """Read a SCIDOCS embeddings JSONL; malformed lines, mixed dimensions, NaN and duplicate ids are errors."""
    path = Path(path)
    titles: list[str] = []
    rows: list[list[float]] = []
    seen: dict[str, int] = {}
    dim = None
    for line_number, row in iter_jsonl(path):
        key = next((name for name in ID_KEYS if isinstance(row, dict) and name in row), None)
        if key is None or "embedding" not in row:
            raise DataError(
                "expected an object with 'paper_id' (or SciRepEval's 'doc_id') and 'embedding'", path, line_number
            )
        if row[key] is None or isinstance(row[key], (bool, list, dict)):
            raise DataError(f"{key} {row[key]!r} is not an id", path, line_number)
        paper_id = str(row[key])
        if not paper_id.strip() or any(ch.isspace() for ch in paper_id):
            raise DataError("paper_id is empty or contains whitespace", path, line_number, paper_id)
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
        titles.append(str(row.get("title") or ""))
        rows.append(vector)
    if not seen:
        raise DataError("no embeddings in file", path)
    return EmbeddingSet(list(seen), np.asarray(rows, dtype=np.float32), titles, read_meta(path, "jsonl"))


def read_meta(path: str | Path, kind: str) -> dict[str, Any]:
    """``FILE.meta.json`` when its manifest lists ``path`` (of ``kind`` jsonl / npy) at its size, else ``{}``."""
    meta_path = sidecar_paths(path)["meta"]
    if not meta_path.is_file():
        return {}
    info = read_json(meta_path)
    if not isinstance(info, dict):
        raise DataError("expected a JSON object", meta_path)
    return info if set_matches(path, kind, info) else {}


def set_matches(path: str | Path, kind: str, info: dict[str, Any]) -> bool:
    """Whether the meta's manifest lists ``path`` with its size (a meta from before manifests: yes)."""
    files = info.get(MANIFEST_KEY)
    if not isinstance(files, dict):
        return True
    size = files.get(kind)
    return isinstance(size, int) and Path(path).is_file() and Path(path).stat().st_size == size


def read_embeddings(path: str | Path) -> EmbeddingSet:
    """Read embeddings from ``FILE.jsonl`` or ``FILE.npy`` (+ ``FILE.ids.txt``), validating them."""
    path = Path(path)
    if path.suffix == ".npy":
        side = sidecar_paths(path)
        if not side["ids"].exists():
            raise DataError(f"no ids file {side['ids'].name} beside the matrix", path)
        vectors = load_matrix(path)
        ids = read_lines(side["ids"])
        info = read_json(side["meta"]) if side["meta"].is_file() else {}
        if not isinstance(info, dict):
            raise DataError("expected a JSON object", side["meta"])
        if not (set_matches(path, "npy", info) and set_matches(side["ids"], "ids", info)):
            raise DataError(
                f"the matrix, {side['ids'].name} and {side['meta'].name} are not one set (an interrupted write?); "
                "read the .jsonl or embed again",
                path,
            )
        if vectors.ndim != 2 or len(ids) != len(vectors):
            raise DataError(f"matrix shape {vectors.shape} does not match {len(ids)} ids", path)
        bad = ~np.isfinite(vectors).all(axis=1)
        if bad.any():
            row = int(np.argmax(bad))
            raise DataError("embedding contains NaN or infinity", path, row + 1, ids[row])
        if len(set(ids)) != len(ids):
            dup = next(pid for pid in ids if ids.count(pid) > 1)
            raise DataError("duplicate paper_id", side["ids"], ids.index(dup) + 1, dup)
        return EmbeddingSet(ids, vectors.astype(np.float32, copy=False), None, info)
    return read_embeddings_jsonl(path)


def load_matrix(path: Path) -> np.ndarray:
    """A ``.npy`` file of numbers; a corrupt, truncated or pickled (object) file is a DataError."""
    if path.is_dir():
        raise DataError("is a directory, expected a .npy file", path)
    try:
        vectors = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"not a readable .npy matrix ({' '.join(str(exc).split())})", path) from None
    if not isinstance(vectors, np.ndarray) or not np.issubdtype(vectors.dtype, np.number):
        raise DataError(f"expected a numeric matrix, got dtype {getattr(vectors, 'dtype', type(vectors))}", path)
    return vectors


def read_embeddings_fast(path: str | Path) -> EmbeddingSet:
    """:func:`read_embeddings` of ``FILE.npy`` when it sits beside ``FILE.jsonl`` and the meta says they are one
    set, else of ``path``."""
    path = Path(path)
    npy = path.with_suffix(".npy")
    if npy != path and npy.exists() and path.exists():
        if MANIFEST_KEY not in read_meta(path, "jsonl"):
            return read_embeddings(path)  # no manifest tying the matrix to this jsonl: the jsonl is the truth
    return read_embeddings(npy if npy.exists() else path)


def write_embeddings(path: str | Path, embeddings: EmbeddingSet) -> None:
    """Write the SCIDOCS JSONL and its ``.npy``/ids/meta sidecars as one set (module docstring)."""
    path = Path(path)
    side = sidecar_paths(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    titles = embeddings.titles or [""] * len(embeddings)
    temps: dict[str, Path] = {}

    @contextlib.contextmanager
    def temp(kind: str, target: Path, mode: str = "w") -> Iterator[IO[Any]]:
        """A temporary file beside ``target``, flushed to disk when the block ends."""
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.chmod(name, 0o666 & ~_UMASK)
        temps[kind] = Path(name)
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())

    try:
        with temp("jsonl", path) as handle:
            for paper_id, title, vector in zip(embeddings.ids, titles, embeddings.vectors, strict=True):
                row = {"paper_id": paper_id, "title": title, "embedding": [float(x) for x in vector]}
                handle.write(json.dumps(row) + "\n")
        with temp("npy", side["npy"], "wb") as handle:
            np.save(handle, np.asarray(embeddings.vectors, dtype=np.float32))
        with temp("ids", side["ids"]) as handle:
            handle.writelines(f"{pid}\n" for pid in embeddings.ids)
        files = {kind: temps[kind].stat().st_size for kind in temps}
        meta = {**embeddings.info, "count": len(embeddings), "dim": embeddings.dim, MANIFEST_KEY: files}
        with temp("meta", side["meta"]) as handle:
            handle.write(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
        # Commit: the old manifest goes first, the new one comes last.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(side["meta"])
        targets = {"jsonl": path, **side}
        for kind in ("jsonl", "npy", "ids", "meta"):
            os.replace(temps.pop(kind), targets[kind])
    finally:
        for leftover in temps.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
