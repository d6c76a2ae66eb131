"""Stage 4 (notebook 04): embed the benchmark papers at the run's one evaluation length, the baselines beside
them, and index the trained vectors for similar-paper search."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from specter_utils.benchmark.splits import benchmark_ids
from specter_utils.config import EmbedConfig
from specter_utils.data.graph import CitationGraph, edges_from_paper_lists
from specter_utils.data.scidocs import METADATA_FILES, papers_needed
from specter_utils.data.specter_format import read_metadata
from specter_utils.embedding.baselines import compute_baselines, fit_corpus
from specter_utils.embedding.embed import embed_to_file
from specter_utils.embedding.inputs import read_metadata_files
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.suite import task_name
from specter_utils.runs import resolve
from specter_utils.search import build_index, neighbours_table

EMBEDDING_INFO = ("model", "model_path", "pooling", "max_length", "dtype", "device")  # what a table row records


def papers_to_embed(scidocs_dir: str | Path, split: str = "all", tasks: list[str] | None = None) -> dict[str, Any]:
    """Papers of a SCIDOCS-layout folder to embed (``{paper_id: Paper}``).

    ``split="all"`` takes every paper of the ``paper_metadata_*.json`` files, so either split can be
    scored later; ``"test"`` or ``"val"`` only those the evaluation of that split reads for ``tasks``
    (default: every task present), see :func:`data.scidocs.papers_needed`.
    """
    if split not in ("all", "test", "val"):
        raise ValueError(f"split must be 'all', 'test' or 'val', got {split!r}")
    root = resolve(scidocs_dir)
    files = [root / name for name in METADATA_FILES.values() if (root / name).exists()]
    if not files:
        raise FileNotFoundError(f"no paper_metadata_*.json under {root}")
    papers = read_metadata_files(files)
    if split == "all":
        return papers
    wanted = papers_needed(root, split, [task_name(t) for t in tasks] if tasks else None)
    return {pid: paper for pid, paper in papers.items() if pid in wanted}


def embed(config: EmbedConfig, model: str | Path, papers: dict[str, Any], out: str | Path) -> dict[str, Any]:
    """Embed ``papers`` with ``model`` at the run's one evaluation length (``embedding.max_length``)."""
    started = time.time()
    result = embed_to_file(
        str(model),
        papers,
        out,
        batch_size=config.batch_size,
        max_length=config.max_length,
        pooling=None,  # the model's own pooling: [CLS] or mean, as it was trained
        progress=False,
    )
    return {
        "file": str(out),
        "count": len(result),
        "dim": result.dim,
        **{k: result.info[k] for k in EMBEDDING_INFO if k in result.info},
        "seconds": round(time.time() - started, 1),
    }


def embed_baselines(
    config: EmbedConfig,
    papers: dict[str, Any],
    out_dir: str | Path,
    scidocs_dir: str | Path,
    train_data_dir: str | Path | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Write ``out_dir/<baseline>.jsonl`` for each of ``config.baselines``.

    The citation graph for ``sgc`` is the one in the evaluation metadata (``references``/``cited_by``), minus
    every edge of the held-out ranking queries; TF-IDF and SIF are fitted on the training papers and the
    evaluation papers together (``specter-utils embed --baseline NAME --fit-metadata`` does the same).
    """
    if not config.baselines:
        return {}
    held_out = {q for task in benchmark_ids(resolve(scidocs_dir)).values() for q in task.get("queries", ())}
    metadata = Path(train_data_dir) / "metadata.json" if train_data_dir else None
    extra = read_metadata(metadata) if metadata is not None and metadata.exists() else None
    started = time.time()
    files = compute_baselines(
        papers,
        CitationGraph.from_edges(edges_from_paper_lists(papers)),
        held_out,
        config.baselines,
        out_dir,
        seed=seed,
        fit_papers=fit_corpus(papers, extra) or dict(papers),
    )
    seconds = round(time.time() - started, 1)
    written = {}
    for name, path in files.items():
        result = read_embeddings(Path(path).with_suffix(".npy"))
        written[name] = {"file": str(path), "count": len(result), "dim": result.dim, **result.info}
        written[name]["seconds_all_baselines"] = seconds
    return written


def similar_papers(
    papers: dict[str, Any], embeddings_file: str | Path, index_file: str | Path, n_queries: int = 3, k: int = 5
) -> dict[str, Any]:
    """Index ``embeddings_file`` (FAISS) and find the ``k`` nearest papers of the ``n_queries`` most-cited papers
    in it (citations counted within ``papers``' reference lists).

    Writes the index to ``index_file`` (``specter-utils search --index`` reads it). Returns ``table`` (a
    DataFrame: query, rank, neighbour, score), ``queries`` (id -> in-corpus citations) and ``index`` settings.
    """
    embeddings = read_embeddings(embeddings_file)
    index = build_index(embeddings, titles={pid: p.title for pid, p in papers.items()}, source=str(embeddings_file))
    index.save(index_file)
    cited = Counter(b for _, b in edges_from_paper_lists(papers))
    ranked = sorted((pid for pid in index.ids if cited[pid]), key=lambda pid: (-cited[pid], pid))
    queries = {pid: cited[pid] for pid in ranked[:n_queries]}
    if not queries:
        raise DataError("no embedded paper is cited by another: nothing to search from", embeddings_file)
    return {
        "table": neighbours_table(index, list(queries), k=k),
        "queries": queries,
        "index": {"file": str(index_file), "papers": len(index), **index.settings},
    }
