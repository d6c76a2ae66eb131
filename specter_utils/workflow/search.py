"""Similar-paper search (notebook 04, ``specter-utils index`` and ``search``): index an embeddings file, grow or
shrink an index, and find the neighbours of papers or texts."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils import search as paper_search
from specter_utils.embedding.inputs import read_metadata_files
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError

__all__ = ["format_table"]
format_table = paper_search.format_table  # the terminal table of one query's neighbours


def index_embeddings(
    embeddings_file: str | Path,
    out: str | Path,
    kind: str = "auto",
    titles: dict[str, str] | None = None,
    metadata: list[Path] = (),
    threads: int | None = None,
) -> Any:
    """Index ``embeddings_file`` (FAISS, cosine) and write it to ``out``; titles come from ``titles`` or the
    ``metadata`` files (a .npy carries none). Returns the index."""
    embeddings = read_embeddings(embeddings_file)
    if titles is None and metadata:
        titles = {pid: paper.title for pid, paper in read_metadata_files(metadata).items()}
    index = paper_search.build_index(embeddings, kind, titles, source=str(embeddings_file), threads=threads)
    index.save(out)
    return index


def remove_papers(index_file: Path, paper_ids: list[str], source: str, threads: int | None = None) -> tuple[int, Any]:
    """Remove ``paper_ids`` from the index in ``index_file`` (rewritten atomically); the count removed and the index."""
    paper_search.set_threads(threads)
    index = paper_search.load_index(index_file)
    removed = index.remove(paper_ids, source=source)
    index.save(index_file)
    return removed, index


def add_papers(
    index_file: Path, embeddings_file: Path, update: bool = False, threads: int | None = None
) -> tuple[dict[str, int], Any]:
    """Add the papers of ``embeddings_file`` (made with the index's settings) to the index in ``index_file``,
    replacing those already there with ``update``; the counts (added, updated) and the index."""
    paper_search.set_threads(threads)
    index = paper_search.load_index(index_file)
    new = read_embeddings(embeddings_file)
    if new.dim != index.dim:
        raise DataError(
            f"embeddings have {new.dim} dimensions, the index {index_file} has {index.dim}", embeddings_file
        )
    paper_search.check_settings(
        index.settings, paper_search.vector_settings(new.info, new.dim), f"embeddings {embeddings_file}"
    )
    counts = index.add(list(new.ids), new.vectors, new.titles, update=update, source=str(embeddings_file))
    index.save(index_file)
    return counts, index


def open_index(
    index_file: Path,
    threads: int | None = None,
    nprobe: int | None = None,
    ef_search: int | None = None,
    top_k: int = 10,
) -> Any:
    """The index in ``index_file``, set to search ``top_k`` neighbours with the given IVF/HNSW widths."""
    paper_search.set_threads(threads)
    index = paper_search.load_index(index_file)
    index.set_search_width(nprobe, ef_search, top_k)
    return index


@dataclass
class QuerySettings:
    """What a text query is embedded with (None: the index's own), checked against the index."""

    model: str | None = None
    pooling: str | None = None
    max_length: int | None = None
    device: str | None = None


@dataclass
class SearchResult:
    """The neighbours of each query, and the seconds spent getting the query vectors and searching."""

    hits: list[list[Any]]
    vector_seconds: float
    search_seconds: float


def search_paper(
    index: Any, paper_id: str, top_k: int, settings: QuerySettings, embeddings: Path | None = None
) -> list[Any]:
    """The ``top_k`` neighbours of one paper (its vector from the index, or from ``embeddings``), itself left out."""
    asked = {"model": settings.model, "pooling": settings.pooling, "max_length": settings.max_length}
    paper_search.check_settings(index.settings, {k: v for k, v in asked.items() if v is not None}, "query settings")
    if embeddings is not None:
        vectors = paper_search.query_vectors_from_embeddings(index, embeddings, [paper_id])
    else:
        vectors = index.vector(paper_id)
    return index.search(vectors, top_k, exclude=[paper_id])[0]


def search_papers(
    index: Any, paper_ids: list[str], top_k: int, embeddings: Path | None = None, source: Path | None = None
) -> SearchResult:
    """The ``top_k`` neighbours of each paper (vectors from the index, or from ``embeddings``); an id the index
    lacks is a DataError naming its line of ``source``."""
    start = time.perf_counter()
    if embeddings is not None:
        vectors = paper_search.query_vectors_from_embeddings(index, embeddings, paper_ids)
    else:
        missing = next((pid for pid in paper_ids if pid not in index), None)
        if missing is not None:
            line = paper_ids.index(missing) + 1
            raise DataError(f"unknown paper id {missing!r}: not among the {len(index)} indexed papers", source, line)
        vectors = np.vstack([index.vector(pid) for pid in paper_ids])
    return _timed_search(index, vectors, top_k, paper_ids, start)


def search_texts(index: Any, texts: list[tuple[str, str]], top_k: int, settings: QuerySettings) -> SearchResult:
    """The ``top_k`` neighbours of each ``(title, abstract)``, embedded in one batch with the index's settings."""
    start = time.perf_counter()
    vectors = paper_search.embed_query(
        index, texts, settings.model, settings.pooling, settings.max_length, settings.device
    )
    return _timed_search(index, vectors, top_k, None, start)


def _timed_search(index: Any, vectors: np.ndarray, top_k: int, exclude: list[str] | None, start: float) -> SearchResult:
    embedded = time.perf_counter()
    hits = index.search(vectors, top_k, exclude=exclude)
    searched = time.perf_counter()
    return SearchResult(hits, embedded - start, searched - embedded)
