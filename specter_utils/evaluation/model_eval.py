"""Score any model in one call: embed exactly the papers the evaluation reads, cache them, score them.

Two layouts of the evaluation folder: **SCIDOCS** (every paper embedded as SPECTER embeds it, ``title +
tokenizer.sep_token + abstract``, scored by :func:`suite.evaluate`) and **BEIR**, MTEB's SCIDOCS retrieval task
(documents as ``title + " " + text`` and queries as their text, as MTEB feeds a sentence-transformers model).
Prompts come from the model's ``config_sentence_transformers.json`` where it has them: ``query`` before each BEIR
query, ``document`` (else ``passage``) before each document or paper. The length is the one given, else
``EmbedConfig.max_length`` (as ``embed``'s; a model's recorded ``max_seq_length`` is reported, not used).

Vectors are cached in ``cache_dir``, one embeddings file per model, length, prompt and text recipe; a model
folder retrained in place keeps its path, so its cached files must then be deleted."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.backends import BackendChoice, load_text_encoder
from specter_utils.embedding.embed import embed_papers
from specter_utils.embedding.encoder import Encoder
from specter_utils.embedding.io import EmbeddingSet, read_embeddings_fast, sidecar_paths, write_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.beir import TOP_K, read_beir_dir, retrieval_metrics, retrieve
from specter_utils.evaluation.suite import SuiteOptions
from specter_utils.models import resolve_model

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = EmbedConfig.batch_size  # papers per forward pass, as the embedding section
ST_CONFIG = "config_sentence_transformers.json"
ST_LENGTH_CONFIG = "sentence_bert_config.json"


# ---------------------------------------------------------------- what the model records
def model_settings(model_path: str | Path) -> dict[str, Any]:
    """``prompts``, ``similarity`` and ``max_seq_length`` from a sentence-transformers model folder (empty when absent)."""
    root = Path(model_path)
    out: dict[str, Any] = {"prompts": {}, "similarity": "cosine", "max_seq_length": None}
    for name in (ST_CONFIG, ST_LENGTH_CONFIG):
        path = root / name
        if not path.is_file():
            continue
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read the model's config: {exc}", path) from None
        if name == ST_CONFIG:
            prompts = config.get("prompts") or {}
            out["prompts"] = {str(k): str(v) for k, v in prompts.items() if isinstance(v, str)}
            out["similarity"] = config.get("similarity_fn_name") or "cosine"
        elif isinstance(config.get("max_seq_length"), int):
            out["max_seq_length"] = config["max_seq_length"]
    return out


def evaluation_length(settings: dict[str, Any], max_length: int | None) -> tuple[int, str]:
    """The length to embed at and where it came from (``given``, or ``default``: the embedding specification's, as
    ``embed`` uses; a length the model records in its ``sentence_bert_config.json`` is named beside it)."""
    if max_length:
        return int(max_length), "given"
    recorded = settings.get("max_seq_length")
    differs = recorded and recorded != EmbedConfig.max_length
    note = f"; the model records {recorded} ({ST_LENGTH_CONFIG})" if differs else ""
    return EmbedConfig.max_length, f"default{note}"


def document_prompt(prompts: dict[str, str]) -> str:
    return prompts.get("document", prompts.get("passage", ""))


# ---------------------------------------------------------------- the cache
def plain_text(encoder: Encoder) -> Encoder:
    """The encoder joining title and text with a space (MTEB's document text), not the tokenizer's sep token."""
    return dataclasses.replace(encoder, text_sep=" ")


def cache_file(cache_dir: str | Path, model: str, model_path: str, max_length: int, part: str, recipe: str) -> Path:
    """``cache_dir/<model>-<hash>-len<L>-<part>.jsonl``; the hash covers the model's path, the prompt and text recipe."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(model)).name or str(model)).strip("_") or "model"
    digest = hashlib.sha256(f"{model_path}\0{recipe}".encode()).hexdigest()[:10]
    return Path(cache_dir) / f"{slug}-{digest}-len{max_length}-{part}.jsonl"


@dataclass
class CachedEmbedding:
    """The vectors of the papers asked for, and what the call did: papers embedded now and read from the cache."""

    embeddings: EmbeddingSet
    file: Path
    embedded: int
    cached: int
    seconds: float


def cached_embeddings(
    load: Callable[[], Encoder],
    papers: dict[str, Paper],
    path: Path,
    model_path: str,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = True,
    info: dict[str, Any] | None = None,
) -> CachedEmbedding:
    """Vectors of ``papers`` from ``path``; those it lacks are embedded (``load()`` gives the encoder) and added,
    the file rewritten atomically. It is reused only when its meta names the same model path and ``info``
    (prompt, recipe); otherwise a DataError says to delete it."""
    have: EmbeddingSet | None = None
    if sidecar_paths(path)["meta"].exists():
        have = read_embeddings_fast(path)
        expected = {"model_path": model_path, **(info or {})}
        differs = sorted(k for k, v in expected.items() if have.info.get(k) != v)
        if differs:
            raise DataError(f"cached embeddings made with another {', '.join(differs)}; delete the file", path)
    missing = [paper for pid, paper in papers.items() if have is None or pid not in have]
    started = time.perf_counter()
    if missing:
        encoder = load()
        logger.info(
            "embedding %d papers with %s at %d wordpieces ...", len(missing), encoder.model_name, encoder.max_length
        )
        partial = Path(f"{path}.partial")
        new = embed_papers(encoder, missing, batch_size=batch_size, partial_dir=partial, progress=progress, info=info)
        new.info.pop("resumed_papers", None)
        new.titles = [paper.title[:200] for paper in missing]  # the start of each text: the file stays small
        have = new if have is None else have.merged(new)
        have.info = {**new.info}
        write_embeddings(path, have)
        shutil.rmtree(partial, ignore_errors=True)
    seconds = time.perf_counter() - started
    assert have is not None
    wanted = list(papers)
    vectors, _ = have.lookup(wanted)
    subset = EmbeddingSet(wanted, vectors, None, dict(have.info))
    return CachedEmbedding(subset, path, len(missing), len(papers) - len(missing), round(seconds, 2))


def _loader(model: str, max_length: int, plain: bool, device: str | None) -> Callable[[], Encoder]:
    """The encoder, on the backend every embedding stage picks by default (``embed``'s: OpenVINO float32 on a CPU
    where it is installed, else torch)."""

    def load() -> Encoder:
        encoder = load_text_encoder(BackendChoice(EmbedConfig(model=model, max_length=max_length, device=device)))
        return plain_text(encoder) if plain else encoder

    return load


def _embedding_record(result: CachedEmbedding) -> dict[str, Any]:
    info = result.embeddings.info
    keep = (*EmbedConfig.file_keys("pooling"), "prompt")
    record = {k: info[k] for k in keep if k in info}
    record.update(file=str(result.file), papers=len(result.embeddings), embedded_now=result.embedded)
    record.update(from_cache=result.cached, embed_seconds=result.seconds)
    if result.embedded and result.seconds > 0:
        record["papers_per_second"] = round(result.embedded / result.seconds, 2)
    return record


# ---------------------------------------------------------------- the two layouts
@dataclass(frozen=True)
class ModelRun:
    """How a model embeds what a benchmark reads: the model (name or folder), the length (None: the embedding
    specification's, see :func:`evaluation_length`), papers per forward pass, the device (None: picked) and
    whether to show progress."""

    model: str
    max_length: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    device: str | None = None
    progress: bool = True


def evaluate_model_scidocs(
    run: ModelRun, data_dir: str | Path, papers: dict[str, Paper], cache_dir: str | Path, suite: SuiteOptions
) -> dict[str, Any]:
    """Embed ``papers`` (those the tasks read) as ``run`` says (cached in ``cache_dir``) and score them on a
    SCIDOCS-layout folder with :func:`suite.evaluate`; ``config["model"]`` of the suite's result says how the
    vectors were made."""
    model_path = resolve_model(run.model)
    settings = model_settings(model_path)
    length, length_source = evaluation_length(settings, run.max_length)
    prompt = document_prompt(settings["prompts"])
    info = {"prompt": prompt}
    prompted = {pid: _prompted(paper, prompt) for pid, paper in papers.items()}
    path = cache_file(cache_dir, run.model, model_path, length, "papers", f"specter-sep\0{prompt}")
    result = cached_embeddings(
        _loader(run.model, length, False, run.device), prompted, path, model_path, run.batch_size, run.progress, info
    )
    scores = suite.run(data_dir, result.embeddings)
    scores["config"]["model"] = {**_embedding_record(result), "length_source": length_source}
    return scores


def _prompted(paper: Paper, prompt: str) -> Paper:
    return Paper(paper.paper_id, prompt + paper.title, paper.abstract) if prompt else paper


def evaluate_model_beir(
    run: ModelRun, data_dir: str | Path, cache_dir: str | Path, split: str = "test", ignore_identical_ids: bool = True
) -> dict[str, Any]:
    """MTEB's retrieval scores of ``run.model`` on a BEIR folder: ``ndcg_at_10``, ``map_at_100``, ``recall_at_100``
    in [0, 1], then ``config`` (data, model, length, prompts, similarity, timings)."""
    started = time.perf_counter()
    data = read_beir_dir(data_dir, split)
    model_path = resolve_model(run.model)
    settings = model_settings(model_path)
    length, length_source = evaluation_length(settings, run.max_length)
    query_prompt, doc_prompt = settings["prompts"].get("query", ""), document_prompt(settings["prompts"])
    queried = [q for q in data.queries if q in data.qrels]  # only queries with judgements are scored, as MTEB
    queries = {q: Paper(q, query_prompt + data.queries[q], "") for q in queried}
    documents = {d: Paper(d, doc_prompt + f"{title} {text}".strip(), "") for d, (title, text) in data.corpus.items()}
    load_once = functools.cache(_loader(run.model, length, True, run.device))  # one encoder for both parts
    parts = {}
    for part, papers, prompt in (("corpus", documents, doc_prompt), ("queries", queries, query_prompt)):
        path = cache_file(cache_dir, run.model, model_path, length, part, f"mteb-space\0{prompt}")
        parts[part] = cached_embeddings(
            load_once, papers, path, model_path, run.batch_size, run.progress, {"prompt": prompt}
        )
    similarity = settings["similarity"]
    query_vectors, document_vectors = parts["queries"].embeddings.vectors, parts["corpus"].embeddings.vectors
    ranked = retrieve(
        queried, query_vectors, list(documents), document_vectors, similarity, ignore_identical_ids=ignore_identical_ids
    )
    metrics = retrieval_metrics(data.qrels, ranked)
    return {
        **metrics,
        "main_score": metrics["ndcg_at_10"],
        "config": {
            "data_dir": str(data_dir),
            "layout": "beir",
            "split": split,
            "queries": len(queried),
            "queries_in_file": len(data.queries),
            "documents": len(data.corpus),
            "relevant_pairs": int(sum(r > 0 for docs in data.qrels.values() for r in docs.values())),
            "similarity": similarity,
            "top_k": TOP_K,
            "ignore_identical_ids": ignore_identical_ids,
            "prompts": {"query": query_prompt, "document": doc_prompt},
            "length_source": length_source,
            "embeddings": {part: _embedding_record(result) for part, result in parts.items()},
            "metrics": "pytrec_eval ndcg_cut.10, map_cut.100, recall.100; mean over queries, in [0, 1]",
            "seconds": round(time.perf_counter() - started, 2),
        },
    }
