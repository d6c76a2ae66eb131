"""SciRepEval's four formats (``specter-utils evaluate --data-dir DIR`` where ``DIR/tasks.jsonl`` is): embed every
task's papers with a model (cached, as ``evaluate --model`` embeds a SCIDOCS folder) or read an embeddings file,
and score classification, regression, proximity and adhoc_search as SciRepEval's evaluator does; and for a run
(notebook 05), its trained and base models on the benchmark's SciRepEval-format folder, compared task by task."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.backends import BackendChoice, load_text_encoder
from specter_utils.embedding.encoder import Encoder
from specter_utils.embedding.io import EmbeddingSet, read_embeddings_fast
from specter_utils.errors import DataError
from specter_utils.evaluation.beir import is_beir_dir
from specter_utils.evaluation.formats.paired import compare_results
from specter_utils.evaluation.formats.scoring import score_tasks
from specter_utils.evaluation.formats.tasks import (
    ADHOC_SEARCH,
    DEFAULT_FIELDS,
    FormatTask,
    is_scirepeval_dir,
    load_task_data,
    read_tasks,
)
from specter_utils.evaluation.model_eval import (
    CachedEmbedding,
    ModelRun,
    cache_file,
    cached_embeddings,
    document_prompt,
    evaluation_length,
    model_settings,
    plain_text,
)
from specter_utils.io import write_json
from specter_utils.layout import FORMATS_CACHE_DIR, FORMATS_RESULTS, SCIREPEVAL_DIR, SCIREPEVAL_TASKS_FILE
from specter_utils.models import resolve_model
from specter_utils.runs import RunPaths
from specter_utils.spec import RunSpec
from specter_utils.tasks import TASKS
from specter_utils.workflow.evaluate import embeddings_cache_dir

__all__ = ["compare_formats", "detect_layout", "is_scirepeval_dir", "score_formats"]


def detect_layout(data_dir: str | Path) -> str:
    """``scirepeval``, ``beir`` or ``scidocs``; a folder of none of them is a DataError naming what is missing."""
    root = Path(data_dir)
    if is_scirepeval_dir(root):
        return "scirepeval"
    if is_beir_dir(root):
        return "beir"
    if any((root / task.name).is_dir() for task in TASKS) or any(root.glob("paper_metadata_*.json")):
        return "scidocs"
    raise DataError(
        f"not an evaluation folder: no {SCIREPEVAL_TASKS_FILE} (SciRepEval formats), no SCIDOCS task folder "
        f"({', '.join(t.name + '/' for t in TASKS[:3])}, ...) or paper_metadata_*.json, no corpus.jsonl (BEIR)",
        root,
    )


def _texts(papers: dict[str, Paper], fields: tuple[str, ...], prompt: str) -> tuple[dict[str, Paper], bool]:
    """The papers as the encoder takes them for ``fields``, and whether the text is plain (no sep token):
    title and abstract (either order) are joined by the tokenizer's sep token, one field alone is its text."""
    out = {}
    for pid, paper in papers.items():
        values = [paper.title if field == "title" else paper.abstract for field in fields]
        out[pid] = Paper(pid, prompt + values[0], values[1] if len(values) == 2 else "")
    return out, len(fields) == 1


def _loader(model: str, length: int, plain: bool, device: str | None, loaded: dict[str, Encoder]) -> Callable:
    """The encoder on the backend every embedding stage picks by default, loaded once for every group of papers."""

    def load() -> Encoder:
        if "encoder" not in loaded:
            loaded["encoder"] = load_text_encoder(
                BackendChoice(EmbedConfig(model=model, max_length=length, device=device))
            )
        return plain_text(loaded["encoder"]) if plain else loaded["encoder"]

    return load


def _record(result: CachedEmbedding) -> dict[str, Any]:
    info = result.embeddings.info
    record = {k: info[k] for k in ("model", "model_path", "max_length", "prompt", "dtype", "device") if k in info}
    record.update(file=str(result.file), papers=len(result.embeddings), embedded_now=result.embedded)
    record.update(from_cache=result.cached, embed_seconds=result.seconds)
    return record


def embed_tasks(
    run: ModelRun, tasks: list[FormatTask], data: dict[str, Any], cache_dir: Path
) -> tuple[dict[str, EmbeddingSet], EmbeddingSet | None, dict[str, Any]]:
    """Every task's papers (documents, with the model's document prompt, from the task's ``fields``) and
    adhoc_search queries (with its query prompt), cached in ``cache_dir``; returns each task's paper vectors, the
    queries' (None without adhoc tasks) and a record of how they were made."""
    model_path = resolve_model(run.model)
    settings = model_settings(model_path)
    length, length_source = evaluation_length(settings, run.max_length)
    doc_prompt, query_prompt = document_prompt(settings["prompts"]), settings["prompts"].get("query", "")
    loaded: dict[str, Encoder] = {}
    groups: dict[tuple[str, ...], dict[str, Paper]] = {}
    for task in tasks:
        for pid, paper in data[task.name].papers.items():
            groups.setdefault(task.fields, {}).setdefault(pid, paper)
    parts: dict[str, CachedEmbedding] = {}
    by_fields: dict[tuple[str, ...], EmbeddingSet] = {}
    for fields, papers in groups.items():
        texts, plain = _texts(papers, fields, doc_prompt)
        recipe = f"{'plain' if plain else 'specter-sep'}\0{'+'.join(fields)}\0{doc_prompt}"
        part = "scirepeval-" + "-".join(fields)
        path = cache_file(cache_dir, run.model, model_path, length, part, recipe)
        load = _loader(run.model, length, plain, run.device, loaded)
        parts[part] = cached_embeddings(
            load, texts, path, model_path, run.batch_size, run.progress, {"prompt": doc_prompt}
        )
        by_fields[fields] = parts[part].embeddings
    queries: dict[str, Paper] = {}
    for task in [task for task in tasks if task.type == ADHOC_SEARCH]:
        for qid, query in data[task.name].queries.items():
            queries.setdefault(qid, Paper(qid, query_prompt + query.title, ""))
    query_vectors = None
    if queries:
        path = cache_file(
            cache_dir, run.model, model_path, length, "scirepeval-queries", f"plain\0query\0{query_prompt}"
        )
        load = _loader(run.model, length, True, run.device, loaded)
        parts["queries"] = cached_embeddings(
            load, queries, path, model_path, run.batch_size, run.progress, {"prompt": query_prompt}
        )
        query_vectors = parts["queries"].embeddings
    vectors = {task.name: by_fields[task.fields] for task in tasks}
    record = {
        "model": run.model,
        "max_length": length,
        "length_source": length_source,
        "prompts": {"document": doc_prompt, "query": query_prompt},
        "embeddings": {part: _record(result) for part, result in parts.items()},
    }
    return vectors, query_vectors, record


def score_formats(
    data_dir: str | Path,
    *,
    model: ModelRun | None = None,
    embeddings: str | Path | EmbeddingSet | None = None,
    query_embeddings: str | Path | EmbeddingSet | None = None,
    out: str | Path | None = None,
    tasks: list[str] | None = None,
    cache_dir: Path | None = None,
    n_jobs: int = 1,
) -> dict[str, Any]:
    """Score a SciRepEval-format folder with ``model`` (embedded here, cached in ``cache_dir``) or with
    ``embeddings`` (a file or a set keyed by ``doc_id``; adhoc_search tasks then need ``query_embeddings``), every
    task config, file and row checked first; the result (``score_tasks``'s, plus ``config``) goes to ``out`` if given.
    """
    started = time.perf_counter()
    data_dir = Path(data_dir)
    if (model is None) == (embeddings is None):
        raise DataError("give a model or an embeddings file, not both and not neither", "--model")
    if model is not None and query_embeddings is not None:
        raise DataError(
            "query embeddings are for an embeddings file; a model encodes the queries", "--query-embeddings"
        )
    chosen = read_tasks(data_dir, tasks)
    data: dict[str, Any] = {task.name: load_task_data(task) for task in chosen}
    adhoc = [t.name for t in chosen if t.type == ADHOC_SEARCH]
    if embeddings is not None and adhoc and query_embeddings is None:
        raise DataError(
            f"adhoc_search task {adhoc[0]!r} encodes its query texts: give --query-embeddings FILE "
            "(vectors keyed by the queries' doc_id), score with --model, or leave it out with --tasks",
            "--query-embeddings",
        )
    config: dict[str, Any] = {"data_dir": str(data_dir), "layout": "scirepeval", "tasks": [t.name for t in chosen]}
    if model is not None:
        vectors, query_vectors, config["model"] = embed_tasks(
            model, chosen, data, embeddings_cache_dir(data_dir, cache_dir)
        )
    else:

        def read(given: Any) -> tuple[EmbeddingSet, str | None]:
            return (given, None) if isinstance(given, EmbeddingSet) else (read_embeddings_fast(given), str(given))

        vectors, file = read(embeddings)
        config["embeddings"] = {"file": file}
        query_vectors = None
        if adhoc:
            query_vectors, config["embeddings"]["queries"] = read(query_embeddings)
    result = score_tasks(chosen, data, vectors, query_vectors, n_jobs=n_jobs)
    config["fields_default"] = list(DEFAULT_FIELDS)
    config["protocol"] = (
        "SciRepEval: classification LinearSVC, C in logspace(-2, 2, 5) by 3-fold grid search (multi-label one-vs-rest); "
        "regression LinearSVR, C in logspace(-4, 2, 7); proximity and adhoc_search ranked by -L2 distance, pytrec_eval; "
        "values x 100"
    )
    config["seconds"] = round(time.perf_counter() - started, 2)
    result["config"] = config
    if out is not None:
        write_json(out, result)
    return result


def compare_formats(
    spec: RunSpec,
    paths: RunPaths,
    out_dir: str | Path,
    *,
    models: Mapping[str, str | Path] | None = None,
    reference: str = "base",
    n_resamples: int = 5_000,
    progress: bool = True,
) -> dict[str, Any]:
    """Score the run's models (default: ``trained``, notebook 03's model, and ``base``, ``training.base_model``) on
    the SciRepEval-format folder beside the run's evaluation data (``<benchmark_dir>/scirepeval/``), all at
    ``embedding.max_length``, with the embeddings cached in ``out_dir``; compare each with ``reference`` task by
    task (:func:`evaluation.formats.paired.compare_results`) and write it all to ``out_dir/formats.json``; returns
    what it wrote, or ``{"skipped": reason}`` (nothing written) without such a folder or a trained model."""
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    data_dir = scidocs.parent / SCIREPEVAL_DIR
    if not is_scirepeval_dir(data_dir):
        return {"skipped": f"no {SCIREPEVAL_DIR}/{SCIREPEVAL_TASKS_FILE} beside {scidocs} (the benchmark has none)"}
    if models is None:
        if not paths.model_dir.exists():
            return {"skipped": f"no trained model at {paths.model_dir}"}
        models = {"trained": paths.model_dir, "base": spec.training.base_model}
    if reference not in models or len(models) != 2:
        raise DataError(f"compare two models, one of them {reference!r}; got {list(models)}")
    out_dir = Path(out_dir)
    cache = out_dir / FORMATS_CACHE_DIR
    cache.mkdir(parents=True, exist_ok=True)
    length = spec.embedding.max_length
    results = {
        name: score_formats(
            data_dir, model=ModelRun(str(model), length, spec.embedding.batch_size, progress=progress), cache_dir=cache
        )
        for name, model in models.items()
    }
    row = next(name for name in models if name != reference)
    compared = {
        "data_dir": str(data_dir),
        "row": row,
        "reference": reference,
        "max_length": length,
        "models": {name: str(model) for name, model in models.items()},
        "results": results,
        "paired": compare_results(results[row], results[reference], n_resamples),
    }
    write_json(out_dir / FORMATS_RESULTS, compared)
    return compared
