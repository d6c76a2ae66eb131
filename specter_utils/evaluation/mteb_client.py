"""MTEB as a client: a project model through MTEB's own evaluators, on tasks read from local files, offline.

Two task builders turn local data into MTEB tasks (mteb 2.x: an ``AbsTask`` subclass with a ``TaskMetadata`` and a
``load_data`` that fills ``self.dataset``): a BEIR folder as an ``AbsTaskRetrieval`` (main score ``ndcg_at_10``) and
a single-label classification task of a SciRepEval-format folder as an ``AbsTaskClassification``, on which MTEB fits
logistic regression (``max_iter=100``) to undersampled training sets (main score ``f1``, macro).

:func:`run_mteb` loads the model the way the project loads every model (:func:`models.build_model`) and hands it
and the tasks to ``mteb.evaluate``, whose result files land in ``out_dir/results/<model>/<revision>/<task>.json``.
``mteb`` is an optional dependency (the ``mteb`` extra), imported here only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.errors import DataError
from specter_utils.evaluation.beir import read_beir_dir
from specter_utils.evaluation.formats.tasks import CLASSIFICATION, load_task_data, read_tasks

MTEB_SEED = 42  # AbsTask.seed: MTEB's undersampling and its classifier's random_state
_METADATA = {  # what MTEB's TaskMetadata requires of a task; a local task has no dataset card
    "category": "t2t",
    "eval_langs": ["eng-Latn"],
    "modalities": ["text"],
    **dict.fromkeys(
        "reference date dialect domains task_subtypes license annotations_creators sample_creation bibtex_citation".split()
    ),
}


def _metadata(task_type: str, name: str, main_score: str, description: str, source: Path, split: str) -> Any:
    from mteb.abstasks.task_metadata import TaskMetadata

    return TaskMetadata(
        type=task_type,
        name=name,
        main_score=main_score,
        description=description,
        dataset={"path": f"local/{source.name}", "revision": "local"},
        eval_splits=[split],
        **_METADATA,
    )


def local_retrieval_task(
    beir_dir: str | Path, name: str = "LocalRetrieval", split: str = "test", ignore_identical_ids: bool = True
) -> Any:
    """An MTEB retrieval task over a BEIR folder (its ``split`` qrels), checked by the project's BEIR reader;
    ``ignore_identical_ids`` as the project's BEIR scoring (and MTEB's SCIDOCS task)."""
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData

    data = read_beir_dir(beir_dir, split)

    class LocalRetrieval(AbsTaskRetrieval):
        metadata = _metadata("Retrieval", name, "ndcg_at_10", f"BEIR folder {data.root.name}", data.root, split)

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            corpus = [{"id": d, "title": title, "text": text} for d, (title, text) in data.corpus.items()]
            queries = [{"id": q, "text": data.queries[q]} for q in data.queries if q in data.qrels]
            relevant = {q: dict(docs) for q, docs in data.qrels.items()}
            corpus, queries = Dataset.from_list(corpus), Dataset.from_list(queries)
            split_data = RetrievalSplitData(corpus=corpus, queries=queries, relevant_docs=relevant, top_ranked=None)
            self.dataset = {"default": {split: split_data}}
            self.data_loaded = True

    task = LocalRetrieval()
    task.ignore_identical_ids = ignore_identical_ids
    return task


def local_classification_task(
    data_dir: str | Path,
    task_name: str,
    sep: str = " ",
    samples_per_label: int = 8,
    n_experiments: int = 10,
    name: str | None = None,
) -> Any:
    """An MTEB classification task from the single-label classification task ``task_name`` of a SciRepEval-format
    folder: each paper's text is ``title + sep + abstract`` (give the tokenizer's sep token to match the project's
    SPECTER text), labels are numbered in sorted order. ``samples_per_label`` and ``n_experiments`` are MTEB's
    (8 and 10 by default); a ``samples_per_label`` at least the largest label's training count with one experiment
    fits on the whole training split."""
    from datasets import Dataset, DatasetDict
    from mteb.abstasks.classification import AbsTaskClassification

    (task,) = read_tasks(data_dir, [task_name])
    if task.type != CLASSIFICATION or task.multi_label:
        raise DataError(f"task {task_name!r} is not a single-label classification task", task.meta)
    data = load_task_data(task)
    labels = sorted({label for _, label in data.train + data.test})
    number = {label: i for i, label in enumerate(labels)}

    def split(rows: list[tuple[str, Any]]) -> Any:
        texts = [f"{data.papers[pid].title}{sep}{data.papers[pid].abstract}" for pid, _ in rows]
        return Dataset.from_dict({"text": texts, "label": [number[label] for _, label in rows]})

    class LocalClassification(AbsTaskClassification):
        metadata = _metadata(
            "Classification", name or f"Local_{task_name}", "f1", task.description or task_name, Path(data_dir), "test"
        )

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = DatasetDict({"train": split(data.train), "test": split(data.test)})
            self.data_loaded = True

    built = LocalClassification()
    built.samples_per_label = samples_per_label
    built.n_experiments = n_experiments
    return built


def load_model(model: str, max_length: int | None = None) -> Any:
    """The sentence-transformers model as the project builds it (``models.build_model``), named for MTEB's files."""
    from specter_utils.evaluation.model_eval import evaluation_length, model_settings
    from specter_utils.models import build_model, resolve_model

    length, _ = evaluation_length(model_settings(resolve_model(model)), max_length)
    built = build_model(model, max_length=length)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(str(model)).name or str(model)).strip("_") or "model"
    built.model_card_data.model_name = f"specter-utils/{slug}"
    return built


def run_mteb(
    model: Any,
    tasks: list[Any],
    out_dir: str | Path,
    max_length: int | None = None,
    batch_size: int = EmbedConfig.batch_size,
) -> dict[str, dict[str, Any]]:
    """Run ``model`` (a name for :func:`load_model`, or a loaded sentence-transformers model) on ``tasks`` with
    ``mteb.evaluate``, always recomputing; MTEB writes its result files under ``out_dir``. Returns, per task, its
    ``main_score`` (MTEB's scale, [0, 1]), the scores of its evaluated split and the result file."""
    import mteb

    encoder = load_model(model, max_length) if isinstance(model, str | Path) else model
    cache = mteb.ResultCache(cache_path=Path(out_dir))
    options = {"overwrite_strategy": "always", "encode_kwargs": {"batch_size": batch_size}, "show_progress_bar": False}
    result = mteb.evaluate(encoder, tasks, cache=cache, **options)
    out: dict[str, dict[str, Any]] = {}
    for task_result in result.task_results:
        split = next(iter(task_result.scores))
        scores = task_result.scores[split][0]
        files = sorted(Path(out_dir).glob(f"results/*/*/{task_result.task_name}.json"))
        out[task_result.task_name] = {
            "main_score": float(task_result.get_score()),
            "split": split,
            "scores": {k: v for k, v in scores.items() if isinstance(v, int | float)},
            "file": str(files[-1]) if files else None,
        }
    return out
