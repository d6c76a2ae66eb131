"""Embed papers with any model: SPECTER's text recipe, length-sorted batches, resumable output.

Text is ``title + tokenizer.sep_token + abstract`` truncated to ``max_length`` wordpieces (the embedding
specification's, :class:`specter_utils.config.EmbedConfig`). Papers are sorted by wordpiece length so that a batch
carries little padding, cut into fixed chunks of whole batches, and each finished chunk is saved in
``FILE.jsonl.partial/``; a killed run started again with the same inputs and settings skips the
chunks already there, and because batches are the same the result is the same file, bit for bit.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.encoder import Encoder, encoder_for
from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.embedding.shards import select_shard, shard_info
from specter_utils.errors import DataError
from specter_utils.io import atomic_write, read_json, write_json

DEFAULT_BATCH_SIZE = EmbedConfig.batch_size  # papers per forward pass, as the embedding section
DEFAULT_CHUNK_SIZE = 1024  # papers per resumable chunk: a few minutes on a CPU, seconds on a GPU
POOL_CHUNK_SIZE = 16384  # per chunk when a multi-process pool spreads it over several GPUs
# Settings that change the vectors: a part-finished run is resumed only if all of them match.
_RUN_KEYS = EmbedConfig.file_keys("model", "device")


@dataclass(frozen=True)
class EmbedRun:
    """How one embedding run proceeds; none of it changes a vector (the :class:`EmbedConfig` says what does)."""

    chunk_size: int | None = None  # papers per resumable chunk (None: DEFAULT_CHUNK_SIZE, POOL_CHUNK_SIZE on a pool)
    token_budget: int | None = None  # batches of as many papers as fit this many padded wordpieces (one device)
    shard: tuple[int, int] | None = None  # (i, n): papers i, i+n, i+2n, ... of the input order
    resume: bool = True  # False discards a part-finished run instead of continuing it
    progress: bool = True
    info: dict[str, Any] | None = None  # extra entries for the sidecar meta (e.g. ``{"synthetic": True}``)


def as_paper_list(papers: dict[str, Paper] | Iterable[Paper]) -> list[Paper]:
    """Papers in input order; duplicate ids are a DataError."""
    items = list(papers.values()) if isinstance(papers, dict) else list(papers)
    seen: set[str] = set()
    for paper in items:
        if paper.paper_id in seen:
            raise DataError("duplicate paper id in the papers to embed", record_id=paper.paper_id)
        seen.add(paper.paper_id)
    if not items:
        raise DataError("no papers to embed")
    return items


def paper_texts(papers: list[Paper], sep: str) -> list[str]:
    """SPECTER input text per paper: ``title + sep + abstract``."""
    return [paper.text(sep) for paper in papers]


def length_order(lengths: np.ndarray) -> np.ndarray:
    """Indices from longest to shortest; ties keep input order, so the order is deterministic."""
    return np.argsort(-np.asarray(lengths), kind="stable")


def plan_chunks(order: np.ndarray, batch_size: int, chunk_size: int) -> list[np.ndarray]:
    """Consecutive slices of ``order``, each a whole number of batches."""
    per_chunk = max(batch_size, (chunk_size // batch_size) * batch_size)
    return [order[start : start + per_chunk] for start in range(0, len(order), per_chunk)]


def plan_batches(order: np.ndarray, lengths: np.ndarray, batch_size: int, token_budget: int | None) -> list[np.ndarray]:
    """Consecutive slices of ``order`` (longest first): ``batch_size`` papers each, or with ``token_budget``
    as many papers as fit that many padded wordpieces (the batch's longest paper times its size), at least one."""
    if not token_budget:
        return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    batches, start = [], 0
    while start < len(order):
        size = max(1, token_budget // max(1, int(lengths[order[start]])))
        batches.append(order[start : start + size])
        start += size
    return batches


def group_batches(batches: list[np.ndarray], chunk_size: int) -> list[list[np.ndarray]]:
    """Consecutive batches grouped into chunks of at most ``chunk_size`` papers (at least one batch each);
    for fixed-size batches the chunks of :func:`plan_chunks`."""
    chunks: list[list[np.ndarray]] = []
    filled = chunk_size
    for batch in batches:
        if filled + len(batch) > chunk_size:
            chunks.append([])
            filled = 0
        chunks[-1].append(batch)
        filled += len(batch)
    return chunks


def _fingerprint(ids: list[str], texts: list[str]) -> str:
    digest = hashlib.sha256()
    for paper_id, text in zip(ids, texts, strict=True):
        digest.update(f"{paper_id}\0{text}\1".encode())
    return digest.hexdigest()


class _ChunkStore:
    """Finished chunks of a run in ``partial_dir`` (one ``.npy`` each, written atomically)."""

    def __init__(self, partial_dir: Path, manifest: dict[str, Any]) -> None:
        self.dir = partial_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / "manifest.json"
        if path.exists():
            previous = read_json(path)
            differs = sorted(k for k in manifest if previous.get(k) != manifest[k])
            if differs:
                raise DataError(
                    f"holds a part-finished run with different {', '.join(differs)}; "
                    "delete the folder (or pass --no-resume) to start afresh",
                    self.dir,
                )
        else:
            write_json(path, manifest)

    def path(self, index: int) -> Path:
        return self.dir / f"chunk-{index:06d}.npy"

    def load(self, index: int, rows: int, dim: int) -> np.ndarray | None:
        path = self.path(index)
        if not path.exists():
            return None
        vectors = np.load(path)
        if vectors.shape != (rows, dim) or vectors.dtype != np.float32:
            raise DataError(f"chunk has shape {vectors.shape}, expected ({rows}, {dim}); delete the folder", path)
        return vectors

    def save(self, index: int, vectors: np.ndarray) -> None:
        with atomic_write(self.path(index), "wb") as handle:
            np.save(handle, vectors.astype(np.float32, copy=False))


def _save_chunk(store: _ChunkStore | None, index: int, vectors: np.ndarray) -> None:
    """Persist one finished chunk (a separate function so tests can interrupt a run here)."""
    if store is not None:
        store.save(index, vectors)


def embed_papers(
    source: EmbedConfig | Encoder,
    papers: dict[str, Paper] | Iterable[Paper],
    batch_size: int | None = None,
    *,
    chunk_size: int | None = None,
    partial_dir: str | Path | None = None,
    progress: bool = True,
    info: dict[str, Any] | None = None,
    token_budget: int | None = None,
) -> EmbeddingSet:
    """Embed ``papers`` (rows in input order) with the encoder an embedding specification describes, or with an
    already loaded Encoder.

    ``batch_size`` None: the specification's (``EmbedConfig.batch_size`` for an Encoder); ``partial_dir``: where
    finished chunks are kept so an interrupted run can resume; the rest as :class:`EmbedRun` says.
    """
    if batch_size is None:
        batch_size = source.batch_size if isinstance(source, EmbedConfig) else DEFAULT_BATCH_SIZE
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if token_budget is not None and token_budget < 1:
        raise ValueError(f"token_budget must be positive, got {token_budget}")
    items = as_paper_list(papers)
    encoder = source if isinstance(source, Encoder) else encoder_for(source)
    ids = [paper.paper_id for paper in items]
    texts = paper_texts(items, encoder.sep)
    lengths = encoder.token_lengths(texts)
    use_pool = len(encoder.devices) > 1
    if use_pool and token_budget:
        raise ValueError("token_budget batches run on one device, not a multi-process pool")
    chunk_size = chunk_size or (POOL_CHUNK_SIZE if use_pool else DEFAULT_CHUNK_SIZE)
    batched = group_batches(plan_batches(length_order(lengths), lengths, batch_size, token_budget), chunk_size)
    chunks = [np.concatenate(batches) for batches in batched]
    meta = {**encoder.info(), "batch_size": batch_size, "sorted_by_length": True, **(info or {})}
    if token_budget:
        meta["token_budget"] = token_budget

    store = None
    if partial_dir is not None:
        manifest = {k: meta[k] for k in _RUN_KEYS}
        manifest.update(inputs=_fingerprint(ids, texts), count=len(ids), batch_size=batch_size, chunk_size=chunk_size)
        if token_budget:
            manifest["token_budget"] = token_budget
        store = _ChunkStore(Path(partial_dir), manifest)

    vectors = np.zeros((len(items), encoder.dim), dtype=np.float32)
    pending: list[int] = []
    for index, rows in enumerate(chunks):
        done = store.load(index, len(rows), encoder.dim) if store is not None else None
        if done is None:
            pending.append(index)
        else:
            vectors[rows] = done
    resumed = len(items) - sum(len(chunks[i]) for i in pending)
    if resumed:
        meta["resumed_papers"] = resumed  # shown by the CLI, left out of the file's meta

    bar = tqdm(total=len(items), initial=resumed, unit="paper", desc="embed", disable=not progress, file=sys.stderr)
    pool = encoder.model.start_multi_process_pool(encoder.devices) if use_pool and pending else None
    try:
        for index in pending:
            rows = chunks[index]
            if pool is not None:
                chunk_vectors = encoder.encode([texts[i] for i in rows], batch_size, pool=pool)
                bar.update(len(rows))
            else:
                parts = []
                for batch_rows in batched[index]:
                    parts.append(encoder.encode([texts[i] for i in batch_rows], len(batch_rows)))
                    bar.update(len(batch_rows))
                chunk_vectors = np.concatenate(parts)
            if not np.isfinite(chunk_vectors).all():
                bad = rows[int(np.argmax(~np.isfinite(chunk_vectors).all(axis=1)))]
                raise DataError("model produced NaN or infinity", record_id=ids[bad])
            _save_chunk(store, index, chunk_vectors)
            vectors[rows] = chunk_vectors
    finally:
        bar.close()
        if pool is not None:
            encoder.model.stop_multi_process_pool(pool)
    return EmbeddingSet(ids, vectors, [paper.title for paper in items], meta)


def embed_to_file(
    source: EmbedConfig | Encoder,
    papers: dict[str, Paper] | Iterable[Paper],
    out: str | Path,
    run: EmbedRun | None = None,
    batch_size: int | None = None,
) -> EmbeddingSet:
    """Embed and write ``out`` (``.jsonl`` + ``.npy`` + ``.ids.txt`` + ``.meta.json``), resumably.

    Finished chunks live in ``OUT.partial/`` until the files are written, then the folder is removed; merge the
    files of ``run.shard`` with :func:`specter_utils.embedding.shards.merge_shard_files`.
    """
    run = run or EmbedRun()
    out = Path(out)
    if out.suffix != ".jsonl":
        raise ValueError(f"output must be a .jsonl file, got {out}")
    items = as_paper_list(papers)
    extra = dict(run.info or {})
    if run.shard is not None:
        index, count = run.shard
        all_ids = [paper.paper_id for paper in items]
        keep = set(select_shard(all_ids, index, count))
        items = [paper for paper in items if paper.paper_id in keep]
        extra["shard"] = shard_info(all_ids, index, count)
        if not items:
            raise DataError(f"shard {index}/{count} is empty: only {len(all_ids)} papers")
    partial_dir = Path(f"{out}.partial")
    if not run.resume and partial_dir.exists():
        shutil.rmtree(partial_dir)
    result = embed_papers(
        source,
        items,
        batch_size,
        chunk_size=run.chunk_size,
        partial_dir=partial_dir,
        progress=run.progress,
        info=extra,
        token_budget=run.token_budget,
    )
    write_embeddings(out, EmbeddingSet(result.ids, result.vectors, result.titles, _stable_meta(result.info)))
    shutil.rmtree(partial_dir, ignore_errors=True)
    return result


def _stable_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The meta written to disk: the same for a resumed and an uninterrupted run."""
    return {k: v for k, v in meta.items() if k != "resumed_papers"}


def describe(result: EmbeddingSet) -> str:
    """One line for the CLI: count, dimension, model, pooling."""
    info = result.info
    return (
        f"{len(result)} papers x {result.dim} dims, model {info.get('model')}, pooling {info.get('pooling_detail')}, "
        f"max_length {info.get('max_length')}, {info.get('dtype')} on {info.get('device')}"
        + (f" ({info['resumed_papers']} resumed from a previous run)" if info.get("resumed_papers") else "")
    )
