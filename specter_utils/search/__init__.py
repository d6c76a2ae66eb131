"""Similar-paper search: a FAISS index over an embeddings file, queried by paper id or by free text.

The package re-exports its modules' public names (vectors, index, storage, query, render), so
``from specter_utils.search import build_index`` works."""

from __future__ import annotations

from specter_utils.search.index import (
    CHUNK,
    COMPRESSED_MIN,
    EXACT_MAX,
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_M,
    IVF_NPROBE,
    IVF_TRAIN_PER_LIST,
    KINDS,
    PQ_NPROBE,
    PQ_RERANK,
    PQ_TRAIN_PER_LIST,
    RETRAIN_GROWTH,
    Neighbour,
    PaperIndex,
    build_index,
    build_index_chunks,
    choose_kind,
    index_bytes,
    iter_chunks,
    ivf_lists,
    load_index,
    pq_lists,
    sample_rows,
    train_size,
)
from specter_utils.search.query import embed_query, query_vectors_from_embeddings
from specter_utils.search.render import format_table, neighbours_table
from specter_utils.search.storage import FORMAT, LEGACY_FORMATS
from specter_utils.search.vectors import (
    VECTOR_KEYS,
    check_settings,
    load_faiss,
    normalise,
    set_threads,
    vector_settings,
)

__all__ = [
    "CHUNK",
    "COMPRESSED_MIN",
    "EXACT_MAX",
    "FORMAT",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_M",
    "IVF_NPROBE",
    "IVF_TRAIN_PER_LIST",
    "KINDS",
    "LEGACY_FORMATS",
    "PQ_NPROBE",
    "PQ_RERANK",
    "PQ_TRAIN_PER_LIST",
    "RETRAIN_GROWTH",
    "VECTOR_KEYS",
    "Neighbour",
    "PaperIndex",
    "build_index",
    "build_index_chunks",
    "check_settings",
    "choose_kind",
    "embed_query",
    "format_table",
    "index_bytes",
    "iter_chunks",
    "ivf_lists",
    "load_faiss",
    "load_index",
    "neighbours_table",
    "normalise",
    "pq_lists",
    "query_vectors_from_embeddings",
    "sample_rows",
    "set_threads",
    "train_size",
    "vector_settings",
]
