"""The whole SCIDOCS evaluation, as the original ``scidocs`` package scores it.

Same directory layout and files (``data.scidocs``), same result keys and nesting as the original's
``get_scidocs_metrics``::

    {"mag": {"f1": ..}, "mesh": {"f1": ..},
     "co-view": {"map": .., "ndcg": ..}, "co-read": {..}, "cite": {..}, "co-cite": {..},
     "recomm": {"adj-NDCG": .., "adj-P@1": ..}}

values x 100 rounded to 2 decimals. Beside those keys the result carries ``coverage`` (per task: how
many queries, candidates and labelled papers had embeddings), ``details`` (chosen C and the CV accuracy of every C,
per-class F1, the confusion matrix and the predicted labels; recommendation spread over seeds), ``skipped`` (tasks left out and why) and ``config``;
:func:`scidocs_metrics` strips a result down to the original's keys."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.data.scidocs import ScidocsData, available_tasks, read_scidocs_dir, task_paths
from specter_utils.embedding.io import EmbeddingSet, read_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.classification import SVM_VARIANTS, classify
from specter_utils.evaluation.ranking import evaluate_ranking
from specter_utils.evaluation.recomm import DEFAULT_SEEDS, RecommConfig, evaluate_recomm
from specter_utils.io import write_json
from specter_utils.registry import Registry
from specter_utils.tasks import BY_KEY, BY_NAME, CLASSIFICATION, RANKING, RECOMMENDATION, TASKS, grouped
from specter_utils.vocabularies import EVAL_SPLITS

logger = logging.getLogger(__name__)

ALL_TASKS = tuple(task.name for task in TASKS)  # directory names, in the original's order
RESULT_KEYS = {task.name: task.key for task in TASKS}  # directory name -> the original's result key
METRIC_KEYS = {task.key: task.metrics for task in TASKS}  # the original's metric keys under each result key
# The three embedding files of the original: which tasks each one serves.
EMBEDDING_GROUPS = {group: tuple(t.name for t in tasks) for group, tasks in grouped("embeddings").items()}
_GROUP_ALIASES = {"cls": "cls", "classification": "cls", "user-citation": "user-citation"}
_GROUP_ALIASES.update({"user_citation": "user-citation", "user_activity_and_citations": "user-citation"})
_GROUP_ALIASES["recomm"] = "recomm"

EmbeddingSource = str | Path | EmbeddingSet
Outcome = tuple[dict[str, float], dict[str, Any], dict[str, Any]]  # a task's metrics, coverage and details


def task_name(task: str) -> str:
    """Directory name of a task given either spelling (``co-view`` or ``coview``)."""
    found = BY_NAME.get(task) or BY_KEY.get(task)
    if found is None:
        raise DataError(f"unknown task {task!r}; known: {', '.join(BY_NAME)} (or {', '.join(BY_KEY)})")
    return found.name


def group_of(task: str) -> str:
    """The embeddings group (``cls``, ``user-citation``, ``recomm``) that serves a task (directory name)."""
    return BY_NAME[task].embeddings


def _load(source: EmbeddingSource, cache: dict[str, EmbeddingSet]) -> EmbeddingSet:
    if isinstance(source, EmbeddingSet):
        return source
    key = str(Path(source))
    if key not in cache:
        cache[key] = read_embeddings(source)
    return cache[key]


def _embedding_sources(embeddings: EmbeddingSource | Mapping[str, EmbeddingSource]) -> dict[str, EmbeddingSource]:
    """``{group: source}`` for the groups given (one source for all, or a dict by group name)."""
    if isinstance(embeddings, Mapping):
        out = {}
        for name, source in embeddings.items():
            if source is None:
                continue
            group = _GROUP_ALIASES.get(name)
            if group is None:
                raise DataError(f"unknown embeddings group {name!r}; use cls, user-citation or recomm")
            out[group] = source
        if not out:
            raise DataError("no embeddings given")
        return out
    return dict.fromkeys(EMBEDDING_GROUPS, embeddings)


def _describe(source: EmbeddingSource) -> str:
    return "<EmbeddingSet>" if isinstance(source, EmbeddingSet) else str(source)


# ---------------------------------------------------------------- tasks
def _classification(
    data: ScidocsData, task: str, split: str, embeddings: EmbeddingSet, svm_variant: str = "sklearn"
) -> Outcome:
    rows = data.classification[task]
    if split not in rows:
        raise DataError(f"no {split} split for {task}", task_paths(data.root)[f"{task}/{split}"])
    labels = sorted({label for _, label in rows["train"]})
    if len(labels) < 2:
        where = task_paths(data.root)[f"{task}/train"]
        raise DataError(f"the train split has one class ({labels[0]!r}); a classifier needs two", where)
    coverage: dict[str, Any] = {}
    arrays = {}
    for part in ("train", split):
        ids = [pid for pid, _ in rows[part]]
        X, found = embeddings.lookup(ids)  # missing papers stay zero vectors, as in the original
        arrays[part] = (X, np.asarray([label for _, label in rows[part]]))
        coverage[part] = {
            "papers": len(ids),
            "papers_with_embedding": int(found.sum()),
            "zero_filled": int((~found).sum()),
            "example_missing": [pid for pid, ok in zip(ids, found, strict=True) if not ok][:5],
        }
        if not found.any():
            raise DataError(
                f"the embeddings cover none of the {len(ids)} papers of {task}/{part}.csv: wrong embeddings file?",
                task_paths(data.root)[f"{task}/{part}"],
            )
        if not found.all():
            logger.warning(
                f"{task}/{part}: {int((~found).sum())} of {len(ids)} papers have no embedding and are zero vectors "
                f"(as in the original); e.g. {coverage[part]['example_missing'][:3]}"
            )
    logger.info("%s: linear SVM on %d train papers, 7 values of C x 3 folds ...", task, len(rows["train"]))
    result = classify(*arrays["train"], *arrays[split], variant=svm_variant)
    logger.info("%s: F1 %.2f (C=%g) in %.1f s", task, result.f1, result.best_c, result.seconds)
    details = result.as_dict()
    # the labels predicted for the split's papers, in its csv's order: paired comparisons of models need them
    details["predictions"] = [str(label) for label in result.predictions] if result.predictions is not None else []
    return {"f1": result.f1}, coverage, details


def _ranking(data: ScidocsData, task: str, split: str, embeddings: EmbeddingSet) -> Outcome:
    qrels = data.ranking[task].get(split)
    if qrels is None:
        raise DataError(f"no {split} qrels for {task}", task_paths(data.root)[f"{task}/{split}"])
    started = time.perf_counter()
    result = evaluate_ranking(qrels, embeddings, name=f"{task}/{split}.qrel")
    logger.info("%s: MAP %.2f, nDCG %.2f over %d queries", task, *result.metrics.values(), len(result.per_query))
    return result.metrics, result.coverage, {"seconds": round(time.perf_counter() - started, 2)}


def _recomm(
    data: ScidocsData, split: str, embeddings: EmbeddingSet, seeds: tuple[int, ...], config: RecommConfig | None
) -> Outcome:
    started = time.perf_counter()
    metadata = data.metadata.get("recomm")
    if metadata is None:
        raise DataError("recommendation needs paper_metadata_recomm.json", task_paths(data.root)["metadata/recomm"])
    assert data.propensity_scores is not None
    logger.info("recomm: training the ranker with %d seeds ...", len(seeds))
    result = evaluate_recomm(data.recomm, metadata, data.propensity_scores, embeddings, split, seeds, config)
    details = {"spread": result.spread, "config": result.config, "seconds": round(time.perf_counter() - started, 2)}
    return result.metrics, result.coverage, details


# ---------------------------------------------------------------- the kinds: how the tasks of each are scored
# kind (Task.kind) -> evaluator(data, tasks, split, {task: embeddings}, options) -> {task: (metrics, coverage, details)}
KINDS: Registry[Callable[..., dict[str, Outcome]]] = Registry("task kind")


@KINDS.register(CLASSIFICATION)
def _classification_kind(
    data: ScidocsData, tasks: list[str], split: str, embeddings: Mapping[str, EmbeddingSet], options: Mapping
) -> dict[str, Outcome]:
    """A linear SVM per task; ``n_jobs`` > 1 runs the tasks side by side."""
    variant = options.get("svm_variant", "sklearn")
    if options.get("n_jobs", 1) == 1 or len(tasks) == 1:
        return {task: _classification(data, task, split, embeddings[task], variant) for task in tasks}
    from threadpoolctl import threadpool_limits

    # one BLAS thread per task: two tasks side by side use two cores without oversubscription
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        futures = {t: pool.submit(_classification, data, t, split, embeddings[t], variant) for t in tasks}
        return {task: futures[task].result() for task in tasks}


@KINDS.register(RANKING)
def _ranking_kind(
    data: ScidocsData, tasks: list[str], split: str, embeddings: Mapping[str, EmbeddingSet], options: Mapping
) -> dict[str, Outcome]:
    """Each query's candidates ranked by distance: MAP and nDCG."""
    return {task: _ranking(data, task, split, embeddings[task]) for task in tasks}


@KINDS.register(RECOMMENDATION)
def _recomm_kind(
    data: ScidocsData, tasks: list[str], split: str, embeddings: Mapping[str, EmbeddingSet], options: Mapping
) -> dict[str, Outcome]:
    """The recommendation ranker, trained with each seed."""
    seeds, config = options.get("seeds", DEFAULT_SEEDS), options.get("recomm")
    return {task: _recomm(data, split, embeddings[task], seeds, config) for task in tasks}


# ---------------------------------------------------------------- the suite
def evaluate(
    data_dir: str | Path,
    embeddings: EmbeddingSource | Mapping[str, EmbeddingSource],
    tasks: list[str] | tuple[str, ...] | None = None,
    split: str = "test",
    n_jobs: int = 1,
    recomm_seeds: tuple[int, ...] = DEFAULT_SEEDS,
    recomm_config: RecommConfig | None = None,
    svm_variant: str = "sklearn",
) -> dict[str, Any]:
    """Evaluate embeddings on a SCIDOCS-layout directory; see the module docstring for the result.

    ``embeddings``: one file / EmbeddingSet for every task, or ``{"cls": .., "user-citation": .., "recomm": ..}``
    like the original's three files (a group left out skips its tasks). ``tasks``: directory names or result keys;
    default every task whose files are present (the others skipped, saying so). ``n_jobs``: threads for the two
    classification tasks. ``svm_variant``: ``sklearn`` or ``lightning`` (``evaluation.classification``)."""
    started = time.perf_counter()
    if split not in EVAL_SPLITS:
        raise DataError(f"split must be 'test' or 'val', got {split!r}")
    if svm_variant not in SVM_VARIANTS:
        raise DataError(f"svm_variant must be one of {', '.join(SVM_VARIANTS)}, got {svm_variant!r}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError("SCIDOCS data directory not found", data_dir)
    sources = _embedding_sources(embeddings)
    skipped: dict[str, str] = {}
    if tasks:
        wanted = [task_name(t) for t in tasks]
        for task in wanted:
            if group_of(task) not in sources:
                raise DataError(f"task {task} needs the {group_of(task)!r} embeddings, which were not given")
    else:
        present = set(available_tasks(data_dir))
        wanted = []
        for task in ALL_TASKS:
            if task not in present:
                skipped[RESULT_KEYS[task]] = "files not found in the data directory"
            elif group_of(task) not in sources:
                skipped[RESULT_KEYS[task]] = f"no {group_of(task)} embeddings given"
            else:
                wanted.append(task)
        for key, reason in skipped.items():
            logger.warning("skipping %s: %s", key, reason)
        if not wanted:
            raise DataError("no SCIDOCS task can be evaluated (see the skipped tasks above)", data_dir)
    data = read_scidocs_dir(data_dir, wanted)
    cache: dict[str, EmbeddingSet] = {}
    loaded = {group: _load(source, cache) for group, source in sources.items()}

    outcomes: dict[str, Outcome] = {}
    options = {"n_jobs": n_jobs, "svm_variant": svm_variant, "seeds": tuple(recomm_seeds), "recomm": recomm_config}
    for kind, run_kind in KINDS.items():  # each kind's tasks by its registered evaluator
        members = [t for t in wanted if BY_NAME[t].kind == kind]
        if members:
            outcomes.update(run_kind(data, members, split, {t: loaded[group_of(t)] for t in members}, options))

    result: dict[str, Any] = {
        RESULT_KEYS[t]: outcomes[t][0] for t in ALL_TASKS if t in outcomes
    }  # the original's order
    result["coverage"] = {RESULT_KEYS[t]: outcomes[t][1] for t in ALL_TASKS if t in outcomes}
    result["details"] = {RESULT_KEYS[t]: outcomes[t][2] for t in ALL_TASKS if t in outcomes}
    result["skipped"] = skipped
    result["config"] = {
        "data_dir": str(data_dir),
        "split": split,
        "tasks": [RESULT_KEYS[t] for t in wanted],
        "embeddings": {group: _describe(source) for group, source in sources.items()},
        "embedding_dims": {group: emb.dim for group, emb in loaded.items()},
        "classification": {
            "model": "linear SVM, squared hinge, one-vs-rest",
            "C_grid": "logspace(-4, 2, 7)",
            "svm_variant": svm_variant,
        },
        "ranking": {"score": "-L2 distance, rounded to 5 decimals", "metrics": "trec_eval map, ndcg"},
        "recomm_seeds": list(recomm_seeds),
        "seconds": round(time.perf_counter() - started, 2),
    }
    return result


@dataclass(frozen=True)
class SuiteOptions:
    """What the suite is asked for, the same for an embeddings file and for a model (see :func:`evaluate`);
    ``recomm_seeds`` None: ``DEFAULT_SEEDS``."""

    tasks: list[str] | tuple[str, ...] | None = None
    split: str = "test"
    n_jobs: int = 1
    recomm_seeds: list[int] | tuple[int, ...] | None = None
    svm_variant: str = "sklearn"

    def run(self, data_dir: str | Path, embeddings: EmbeddingSource | Mapping[str, EmbeddingSource]) -> dict[str, Any]:
        """:func:`evaluate` of ``embeddings`` on ``data_dir`` with these options."""
        seeds = tuple(self.recomm_seeds or DEFAULT_SEEDS)
        return evaluate(data_dir, embeddings, self.tasks, self.split, self.n_jobs, seeds, None, self.svm_variant)


def scidocs_metrics(result: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Only the original's keys (``{"mag": {"f1": ..}, ...}``) of an :func:`evaluate` result."""
    return {key: {m: result[key][m] for m in METRIC_KEYS[key]} for key in METRIC_KEYS if key in result}


def write_results(path: str | Path, result: Mapping[str, Any]) -> None:
    """Write a result (metrics, coverage, details, config) as JSON, atomically."""
    write_json(path, dict(result))
