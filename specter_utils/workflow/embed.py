"""Stage 4 (notebook 04, ``specter-utils embed``): embed papers with a model (on the backend asked for) or a
baseline, at the run's one evaluation length; merge shard files; index the trained vectors for similar-paper
search."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specter_utils.benchmark.splits import benchmark_ids
from specter_utils.config import EmbedConfig
from specter_utils.data.graph import CitationGraph, edges_from_paper_lists, read_edge_list
from specter_utils.data.records import ReadReport
from specter_utils.data.scidocs import METADATA_FILES, papers_needed, read_qrel
from specter_utils.data.specter_format import read_metadata
from specter_utils.embedding.backends import BackendChoice, load_backend, missing_int8_packages, visible_gpus
from specter_utils.embedding.embed import EmbedRun, describe, embed_to_file  # noqa: F401 (EmbedRun: for the CLI)
from specter_utils.embedding.inputs import load_papers, read_metadata_files
from specter_utils.embedding.io import EmbeddingSet, read_embeddings, write_embeddings
from specter_utils.embedding.shards import merge_shard_files as merge_shards
from specter_utils.embedding.shards import parse_shard
from specter_utils.errors import DataError
from specter_utils.io import read_json, read_lines
from specter_utils.layout import BENCHMARK_FILE, METADATA_FILE
from specter_utils.models import prepare_offline_env
from specter_utils.runs import resolve
from specter_utils.search import neighbours_table
from specter_utils.vocabularies import BASELINES, EMBED_SPLITS
from specter_utils.workflow.search import index_embeddings

# What the embed command reads from this stage besides its functions: the baselines it may name, the encoder
# settings it fills in, the one-line summary of a result, the shard merge and a check made before loading anything.
__all__ = ["BASELINES", "BackendChoice", "describe", "merge_shards", "missing_int8_packages"]

EMBEDDING_INFO = EmbedConfig.file_keys("pooling_detail", "text")  # what a table row records


def papers_to_embed(scidocs_dir: str | Path, split: str = "all", tasks: list[str] | None = None) -> dict[str, Any]:
    """Papers of a SCIDOCS-layout folder to embed (``{paper_id: Paper}``).

    ``split="all"`` takes every paper of the ``paper_metadata_*.json`` files, so either split can be
    scored later; ``"test"`` or ``"val"`` only those the evaluation of that split reads for ``tasks``
    (default: every task present), see :func:`data.scidocs.papers_needed`.
    """
    if split not in EMBED_SPLITS:
        named = f"{', '.join(map(repr, EMBED_SPLITS[:-1]))} or {EMBED_SPLITS[-1]!r}"
        raise ValueError(f"split must be {named}, got {split!r}")
    root = resolve(scidocs_dir)
    files = [root / name for name in METADATA_FILES.values() if (root / name).exists()]
    if not files:
        raise FileNotFoundError(f"no paper_metadata_*.json under {root}")
    papers = read_metadata_files(files)
    if split == "all":
        return papers
    from specter_utils.evaluation.suite import task_name  # the suite loads torch: not on the warm OpenVINO route

    wanted = papers_needed(root, split, [task_name(t) for t in tasks] if tasks else None)
    return {pid: paper for pid, paper in papers.items() if pid in wanted}


def read_papers(metadata: list[Path], ids: Path | None = None) -> tuple[dict[str, Any], ReadReport]:
    """The papers of ``metadata`` files (merged), restricted to the ``ids`` file if given, and the oddities met."""
    prepare_offline_env()
    report = ReadReport(source=", ".join(str(p) for p in metadata))
    return load_papers(metadata, ids, report), report


def synthetic_flag(metadata: list[Path]) -> bool | None:
    """The ``synthetic`` flag of a benchmark.json beside (or one level above) the metadata, if any."""
    for path in metadata:
        for folder in (path.parent, path.parent.parent):
            if (folder / BENCHMARK_FILE).exists():
                value = read_json(folder / BENCHMARK_FILE).get("synthetic")
                return bool(value) if value is not None else None
    return None


@dataclass(frozen=True)
class Placement:
    """Where the encoder runs: here (``local``, on one device or, with ``multi_gpu``, every visible GPU) or on Ray
    Data (``ray``: a Ray started here or the cluster at ``ray_address``, ``ray_workers`` replicas)."""

    engine: str = "local"
    ray_address: str | None = None
    ray_workers: int | None = None
    multi_gpu: bool = False


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _silent(message: str) -> None:
    """What --quiet does with a progress message."""


def embed_file(
    choice: BackendChoice,
    papers: dict[str, Any],
    out: str | Path,
    run: EmbedRun | None = None,
    placement: Placement | None = None,
) -> EmbeddingSet:
    """Embed ``papers`` as ``choice.spec`` says into ``out`` (+ .npy, .ids.txt, .meta.json), resumably.

    ``choice`` picks the encoder (:mod:`specter_utils.embedding.backends`); ``placement.engine="ray"`` runs the
    torch encoder on Ray Data instead. ``run.shard=(i, n)`` embeds one shard (:func:`shard_range`).
    """
    run, placement = run or EmbedRun(), placement or Placement()
    say = _stderr if run.progress else _silent  # the precision line is progress: --quiet drops it
    if placement.engine == "ray":
        if choice.probe:
            say("precision: auto on Ray (bf16 autocast on GPU actors, else float32; the probe is for the local engine)")
        from specter_utils.embedding.ray_engine import embed_with_ray  # pyarrow and ray: the scale extra

        return embed_with_ray(
            choice.spec,
            papers,
            out,
            dataclasses.replace(run, info=run.info or None),
            workers=placement.ray_workers,
            address=placement.ray_address,
        )
    devices = visible_gpus() if placement.multi_gpu else None
    encoder, backend_info = load_backend(choice, papers, devices=devices, say=say)
    extra = {**(run.info or {}), **backend_info}
    return embed_to_file(
        encoder,
        papers,
        out,
        dataclasses.replace(run, info=extra or None, token_budget=choice.token_budget),
        batch_size=choice.spec.batch_size,
    )


def embed(config: EmbedConfig, model: str | Path, papers: dict[str, Any], out: str | Path) -> dict[str, Any]:
    """Embed ``papers`` with ``model`` at the run's one evaluation length (``embedding.max_length``), with the
    model's own pooling ([CLS] or mean, as it was trained); returns what a table row records."""
    started = time.time()
    result = embed_file(BackendChoice(config.but(model=str(model))), papers, out)
    return {
        "file": str(out),
        "count": len(result),
        "dim": result.dim,
        **{k: result.info[k] for k in EMBEDDING_INFO if k in result.info},
        "seconds": round(time.time() - started, 1),
    }


def shard_range(text: str | None) -> tuple[int, int] | None:
    """``"i/n"`` as ``(i, n)`` (0 <= i < n); None for none; anything else is a DataError."""
    if not text:
        return None
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise DataError(str(exc), "--shard") from None


def check_ray_address(address: str) -> None:
    """A DataError now, in one line, when no Ray cluster answers at ``address`` (not a minute's wait later)."""
    from specter_utils.embedding.ray_engine import check_address

    check_address(address)


def held_out_ids(paths: list[Path]) -> set[str]:
    """Query ids whose citations a baseline must not see: a .qrel file's queries, else one id a line."""
    return set().union(*(read_qrel(path) if path.suffix == ".qrel" else read_lines(path) for path in paths))


@dataclass(frozen=True)
class BaselineSources:
    """The files a baseline reads besides the papers it embeds: ``edges`` (the citations; None: the papers'
    reference lists), the ``held_out`` query files whose citations it must not see (a .qrel or one id a line) and
    the ``fit_metadata`` TF-IDF and SIF are also fitted on."""

    edges: Path | None = None
    held_out: Sequence[Path] = ()
    fit_metadata: Sequence[Path] = ()


def embed_baseline(
    config: EmbedConfig,
    name: str,
    papers: dict[str, Any],
    out: str | Path,
    *,
    sources: BaselineSources = BaselineSources(),
    seed: int = 0,
    progress: bool = False,
    info: dict[str, Any] | None = None,
) -> EmbeddingSet:
    """Write one baseline's vectors of ``papers`` to ``out`` (a model baseline embeds with ``config``'s model), from
    the files of ``sources`` (as :func:`embed_baselines` fits TF-IDF and SIF on the training papers)."""
    from specter_utils.embedding.baselines import BaselineData, baseline_embeddings, fit_corpus  # scikit-learn

    graph = None
    if name == "sgc":
        pairs = read_edge_list(sources.edges) if sources.edges else edges_from_paper_lists(papers)
        if not pairs:
            raise DataError("sgc needs citations: none in the metadata; pass --edges FILE", "--baseline")
        graph = CitationGraph.from_edges(pairs)
    extra = read_metadata_files(sources.fit_metadata) if sources.fit_metadata else None
    data = BaselineData(graph, held_out_ids(list(sources.held_out)), fit_corpus(papers, extra), seed)
    result = baseline_embeddings(name, papers, data, spec=config, progress=progress)
    write_embeddings(out, EmbeddingSet(result.ids, result.vectors, result.titles, {**result.info, **(info or {})}))
    return result


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
    from specter_utils.embedding.baselines import BaselineData, compute_baselines, fit_corpus  # scikit-learn

    held_out = {q for task in benchmark_ids(resolve(scidocs_dir)).values() for q in task.get("queries", ())}
    metadata = Path(train_data_dir) / METADATA_FILE if train_data_dir else None
    extra = read_metadata(metadata) if metadata is not None and metadata.exists() else None
    started = time.time()
    graph = CitationGraph.from_edges(edges_from_paper_lists(papers))
    data = BaselineData(graph, held_out, fit_corpus(papers, extra) or dict(papers), seed)
    files = compute_baselines(papers, data, config.baselines, out_dir)
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
    titles = {pid: p.title for pid, p in papers.items()}
    index = index_embeddings(embeddings_file, index_file, titles=titles)
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
