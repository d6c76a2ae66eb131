"""The vectors a paper index holds and the settings that decide them; FAISS itself (an optional extra).

Vectors are L2-normalised float32 rows before FAISS sees them, so a score is a cosine similarity. A query
made with other settings than the index's is an error, never a silent mismatch (:func:`check_settings`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.errors import DataError

# The settings that decide a vector: a query must match the index on every one of them.
VECTOR_KEYS = (*EmbedConfig.file_keys("model_path", "text", "dtype", "device"), "dim")


def load_faiss() -> Any:
    """The ``faiss`` module; a DataError saying how to install it when it is missing."""
    try:
        import faiss
    except ImportError as exc:  # an optional extra
        raise DataError("search needs faiss: pip install 'specter-utils[search]' (faiss-cpu)") from exc
    return faiss


def set_threads(threads: int | None) -> None:
    """FAISS's OpenMP threads (None: leave FAISS's default, all cores)."""
    if threads:
        load_faiss().omp_set_num_threads(threads)


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 and C-contiguous for FAISS."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def vector_settings(info: dict[str, Any], dim: int) -> dict[str, Any]:
    """The settings of an embeddings file that decide its vectors (missing ones are None)."""
    return {**{key: info.get(key) for key in VECTOR_KEYS}, "dim": dim}


def check_settings(index_settings: dict[str, Any], query_settings: dict[str, Any], what: str) -> None:
    """DataError naming every setting in which ``what`` differs from the index (None means unknown)."""
    differs = [
        f"{key} {query_settings[key]!r} (index: {index_settings.get(key)!r})"
        for key in VECTOR_KEYS
        if query_settings.get(key) is not None
        and index_settings.get(key) is not None
        and query_settings[key] != index_settings[key]
    ]
    if differs:
        raise DataError(f"{what} differ from the index in " + "; ".join(differs))
