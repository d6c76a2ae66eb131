"""Query vectors for an index: papers of another embeddings file, or free text embedded as the index's were.

Either way the query's settings (model, pooling, maximum length, dimension) must match the index's; a
difference is a DataError naming it, never a silent mismatch."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.backends import BackendChoice, load_text_encoder
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError
from specter_utils.search.index import PaperIndex
from specter_utils.search.vectors import check_settings, vector_settings


def query_vectors_from_embeddings(index: PaperIndex, path: str | Path, paper_ids: list[str]) -> np.ndarray:
    """Vectors of ``paper_ids`` from another embeddings file, which must match the index's settings."""
    embeddings = read_embeddings(path)
    if embeddings.dim != index.dim:
        raise DataError(f"embeddings have {embeddings.dim} dimensions, the index {index.path} has {index.dim}", path)
    check_settings(index.settings, vector_settings(embeddings.info, embeddings.dim), f"embeddings {path}")
    vectors, found = embeddings.lookup(paper_ids)
    if not found.all():
        missing = paper_ids[int(np.argmin(found))]
        raise DataError(f"unknown paper id {missing!r}: not in the embeddings", path)
    return vectors


def embed_query(
    index: PaperIndex,
    texts: list[tuple[str, str]],
    model: str | None = None,
    pooling: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
) -> np.ndarray:
    """Embed ``(title, abstract)`` pairs with the index's model, pooling and maximum length; an explicit
    ``model``/``pooling``/``max_length`` that differs from the index is a DataError."""
    settings = index.settings
    for title, abstract in texts:
        if not (title or "").strip() and not (abstract or "").strip():
            raise DataError("empty query: give a title, an abstract or --text")
    asked = {"model": model, "pooling": pooling, "max_length": max_length}
    check_settings(settings, {k: v for k, v in asked.items() if v is not None}, "query settings")
    local = index.info.get("model_path")  # the folder the papers were embedded from, where it still exists
    model_ref = local if local and Path(local).exists() else settings.get("model")
    if not model_ref or settings.get("max_length") is None:
        raise DataError("the index does not record its model and max length (built from embeddings without .meta.json)")
    pooling, length = settings.get("pooling"), int(settings["max_length"])
    # fp32: embed's default on a CPU
    spec = EmbedConfig(model=model_ref, pooling=pooling, max_length=length, dtype="fp32", device=device)
    encoder = load_text_encoder(BackendChoice(spec))
    made = {**settings, "pooling": encoder.pooling, "pooling_detail": encoder.pooling_detail, "dim": encoder.dim}
    made["max_length"] = encoder.max_length
    check_settings(settings, made, "the query encoder's settings")
    papers = [Paper("query", title or "", abstract or "") for title, abstract in texts]
    return encoder.encode([paper.text(encoder.sep) for paper in papers], batch_size=spec.batch_size)
