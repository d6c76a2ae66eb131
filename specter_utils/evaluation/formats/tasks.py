"""The task configs of a SciRepEval-format folder: ``DIR/tasks.jsonl``, one task a line, with local paths.

Each line is one of SciRepEval's task configs (``scirepeval_tasks.jsonl``) with paths relative to ``DIR``::

    {"name": "fos", "type": "classification", "data": {"meta": "fos/meta.jsonl", "test": "fos/test"},
     "metrics": ["f1_macro"], "multi_label": true}

A task's files: ``meta`` (the papers to embed, JSON lines) and, under ``test``, ``train.csv`` and ``test.csv``
(classification, regression: ``paper_id,label``) or ``test_qrel.jsonl`` (proximity, adhoc_search:
``{"query_id", "cand_id", "score"}``). :func:`read_tasks` checks every config and that every file is there
before anything is embedded; :func:`load_task_data` reads and checks one task's files."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytrec_eval

from specter_utils.data.records import Paper
from specter_utils.errors import DataError
from specter_utils.io import iter_jsonl
from specter_utils.layout import SCIREPEVAL_TASKS_FILE
from specter_utils.registry import Registry

CLASSIFICATION, REGRESSION, PROXIMITY, ADHOC_SEARCH = "classification", "regression", "proximity", "adhoc_search"
FORMATS = (CLASSIFICATION, REGRESSION, PROXIMITY, ADHOC_SEARCH)
SUPERVISED = (CLASSIFICATION, REGRESSION)
# format -> evaluate(task, data, embeddings, *, query_embeddings=None, n_jobs=1): each format's module registers it
EVALUATORS: Registry[Callable[..., dict[str, Any]]] = Registry("task format")
TRAIN_FILE, TEST_FILE, QREL_FILE = "train.csv", "test.csv", "test_qrel.jsonl"
LABEL_SEPARATOR = "|"  # a multi-label task's label column: the labels joined by "|"
DEFAULT_FIELDS = ("title", "abstract")
ITEM_DECIMALS = 5  # per-query scores and per-paper predictions kept in a result (for paired tests), rounded
TEXT_FIELDS = ("title", "abstract")  # what the project embeds; SciRepEval joins the fields given with the sep token

# Each format's metrics as SciRepEval's evaluator names them, and the main score the averages use.
CLASSIFICATION_METRICS = ("f1", "accuracy", "precision", "recall")
CLASSIFICATION_AVERAGES = ("macro", "micro", "weighted", "samples")
REGRESSION_METRICS = ("kendalltau", "pearsonr", "r2", "mse")
MAIN_SCORES = {
    CLASSIFICATION: ("f1_macro",),
    REGRESSION: ("kendalltau",),
    PROXIMITY: ("map", "ndcg"),  # map, else ndcg when only ndcg is asked for
    ADHOC_SEARCH: ("ndcg_cut_10",),
}
DEFAULT_METRICS = {
    CLASSIFICATION: ("f1_macro",),
    REGRESSION: ("kendalltau", "pearsonr"),
    PROXIMITY: ("map", "ndcg"),
    ADHOC_SEARCH: ("ndcg_cut_10",),
}


@dataclass(frozen=True)
class FormatTask:
    """One task of the folder: what it is, where its files are, what is measured and which number is its score."""

    name: str
    type: str
    meta: Path
    test: Path
    metrics: tuple[str, ...]
    multi_label: bool = False
    fields: tuple[str, ...] = DEFAULT_FIELDS
    description: str = ""
    line: int = 0  # its line in tasks.jsonl

    @property
    def main_score(self) -> str:
        """Classification f1_macro, regression kendalltau, proximity map (ndcg when only ndcg is listed),
        adhoc_search ndcg_cut_10; always among :attr:`metrics`."""
        wanted = MAIN_SCORES[self.type]
        return next((m for m in wanted if m in self.metrics), wanted[0])

    @property
    def measured(self) -> tuple[str, ...]:
        """The metrics computed: those listed, and the main score when it is not among them."""
        return self.metrics if self.main_score in self.metrics else (*self.metrics, self.main_score)

    def files(self) -> dict[str, Path]:
        """Every file the task reads, by role."""
        if self.type in SUPERVISED:
            return {"meta": self.meta, "train": self.test / TRAIN_FILE, "test": self.test / TEST_FILE}
        return {"meta": self.meta, "qrels": self.test / QREL_FILE}


@dataclass
class SupervisedData:
    """A classification or regression task: the papers, and the labelled training and test splits."""

    papers: dict[str, Paper]
    train: list[tuple[str, Any]]
    test: list[tuple[str, Any]]


@dataclass
class RankingData:
    """A proximity or adhoc_search task: queries (a paper, or a raw text as a title), candidates, judgements."""

    queries: dict[str, Paper]
    candidates: dict[str, Paper]
    qrels: dict[str, dict[str, int]]
    papers: dict[str, Paper] = field(default_factory=dict)  # what is embedded as a document


def is_scirepeval_dir(root: str | Path) -> bool:
    return (Path(root) / SCIREPEVAL_TASKS_FILE).is_file()


def _metric_ok(task_type: str, metric: str) -> bool:
    if task_type == CLASSIFICATION:
        base, _, average = metric.partition("_")
        return base in CLASSIFICATION_METRICS and average in ("", *CLASSIFICATION_AVERAGES)
    if task_type == REGRESSION:
        return metric in REGRESSION_METRICS
    base = re.sub(r"[._]\d+$", "", metric)  # ndcg_cut_10 -> ndcg_cut, P_5 -> P
    return base in pytrec_eval.supported_measures


def _relative_path(value: Any, root: Path, path: Path, line: int, name: str, key: str) -> Path:
    if isinstance(value, dict):
        hub = f"data.{key} names a hub dataset; this folder's tasks read local files (a path relative to the folder)"
        raise DataError(hub, path, line, name)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"data.{key} must be a path relative to the folder", path, line, name)
    return root / value


def parse_task(row: Any, root: Path, path: Path, line: int) -> FormatTask:
    """One line of tasks.jsonl as a :class:`FormatTask`; a DataError names the line and what is wrong."""
    if not isinstance(row, dict):
        raise DataError("expected one task object per line", path, line)
    name = row.get("name")
    if not isinstance(name, str) or not name.strip():
        raise DataError('a task needs a "name"', path, line)
    task_type = row.get("type")
    if task_type not in FORMATS:
        raise DataError(f"type {task_type!r} is not one of {', '.join(FORMATS)}", path, line, name)
    data = row.get("data")
    if not isinstance(data, dict) or "meta" not in data or "test" not in data:
        raise DataError('"data" must hold "meta" and "test" paths', path, line, name)
    meta = _relative_path(data["meta"], root, path, line, name, "meta")
    test = _relative_path(data["test"], root, path, line, name, "test")
    metrics = row.get("metrics", list(DEFAULT_METRICS[task_type]))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise DataError('"metrics" must be a non-empty list of metric names', path, line, name)
    bad = [m for m in metrics if not _metric_ok(task_type, m)]
    if bad:
        raise DataError(f"metric {bad[0]!r} is not one SciRepEval computes for a {task_type} task", path, line, name)
    multi_label = row.get("multi_label", False)
    if not isinstance(multi_label, bool) or (multi_label and task_type != CLASSIFICATION):
        raise DataError('"multi_label" is true or false, and only for a classification task', path, line, name)
    fields = row.get("fields", list(DEFAULT_FIELDS))
    if (
        not isinstance(fields, list)
        or not fields
        or len(set(fields)) != len(fields)
        or not all(f in TEXT_FIELDS for f in fields)
    ):
        raise DataError(f'"fields" must list some of {", ".join(TEXT_FIELDS)}', path, line, name)
    description = str(row.get("description", "") or "")
    metrics = tuple(dict.fromkeys(metrics))
    return FormatTask(name, task_type, meta, test, metrics, multi_label, tuple(fields), description, line)


def read_tasks(root: str | Path, names: list[str] | None = None) -> list[FormatTask]:
    """Every task of ``root/tasks.jsonl`` (or those ``names``), each file checked present: a DataError names
    the first one missing."""
    root = Path(root)
    path = root / SCIREPEVAL_TASKS_FILE
    if not path.is_file():
        raise DataError(f"no {SCIREPEVAL_TASKS_FILE}: not a SciRepEval-format folder", root)
    tasks: list[FormatTask] = []
    seen: dict[str, int] = {}
    for line, row in iter_jsonl(path):
        task = parse_task(row, root, path, line)
        if task.name in seen:
            raise DataError(f"duplicate task name (first on line {seen[task.name]})", path, line, task.name)
        seen[task.name] = line
        tasks.append(task)
    if not tasks:
        raise DataError("no tasks (the file is empty)", path)
    if names:
        unknown = [n for n in names if n not in seen]
        if unknown:
            raise DataError(f"no task {unknown[0]!r} in the folder; its tasks: {', '.join(seen)}", path)
        tasks = [t for t in tasks if t.name in names]
    for task in tasks:
        for role, file in task.files().items():
            if not file.is_file():
                raise DataError(
                    f"missing file: the {role} file of task {task.name!r} ({path.name} line {task.line})", file
                )
    return tasks


# ---------------------------------------------------------------- reading one task's files
def _paper(row: Any, path: Path, line: int, what: str = "paper") -> Paper:
    if not isinstance(row, dict) or row.get("doc_id") is None:
        raise DataError(f'expected a {what} object with "doc_id", "title" and "abstract"', path, line)
    doc_id = str(row["doc_id"])
    title, abstract = str(row.get("title") or ""), str(row.get("abstract") or "")
    if not (title.strip() or abstract.strip()):
        raise DataError(f"{what} has neither title nor abstract", path, line, doc_id)
    return Paper(doc_id, title, abstract)


def read_papers(path: Path) -> dict[str, Paper]:
    """A classification or regression meta.jsonl: ``{"doc_id", "title", "abstract"}`` per line (first id kept,
    as SciRepEval embeds each id once)."""
    papers: dict[str, Paper] = {}
    for line, row in iter_jsonl(path):
        paper = _paper(row, path, line)
        papers.setdefault(paper.paper_id, paper)
    if not papers:
        raise DataError("no papers (the file is empty)", path)
    return papers


def read_labels(path: Path, task: FormatTask) -> list[tuple[str, Any]]:
    """``paper_id,label`` rows: a string label, a tuple of labels (multi-label, "|"-joined) or a number."""
    rows: list[tuple[str, Any]] = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or not {"paper_id", "label"} <= set(reader.fieldnames):
            raise DataError(f"expected the columns paper_id,label, got {reader.fieldnames}", path, 1)
        for line, row in enumerate(reader, start=2):
            paper_id, label = (row.get("paper_id") or "").strip(), (row.get("label") or "").strip()
            if not paper_id:
                raise DataError("empty paper_id", path, line)
            if not label:
                raise DataError("empty label", path, line, paper_id)
            if task.type == REGRESSION:
                try:
                    value: Any = float(label)
                except ValueError:
                    raise DataError(f"label {label!r} is not a number", path, line, paper_id) from None
            elif task.multi_label:
                value = tuple(sorted({part.strip() for part in label.split(LABEL_SEPARATOR) if part.strip()}))
            else:
                value = label
            rows.append((paper_id, value))
    if not rows:
        raise DataError("no labelled rows", path)
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{"query_id", "cand_id", "score"}`` per line; the first judgement of a pair counts, as in SciRepEval."""
    qrels: dict[str, dict[str, int]] = {}
    for line, row in iter_jsonl(path):
        if not isinstance(row, dict) or not {"query_id", "cand_id", "score"} <= set(row):
            raise DataError('expected an object with "query_id", "cand_id" and "score"', path, line)
        try:
            score = int(row["score"])
        except (TypeError, ValueError):
            raise DataError(f"score {row['score']!r} is not a whole number", path, line) from None
        qrels.setdefault(str(row["query_id"]), {}).setdefault(str(row["cand_id"]), score)
    if not any(s > 0 for docs in qrels.values() for s in docs.values()):
        raise DataError("no relevant (score > 0) query-candidate pair", path)
    return qrels


def read_ranking_meta(path: Path, task: FormatTask) -> tuple[dict[str, Paper], dict[str, Paper]]:
    """A proximity or adhoc_search meta.jsonl (SciRepEval's IRDataset rows): queries and candidates."""
    queries: dict[str, Paper] = {}
    candidates: dict[str, Paper] = {}
    for line, row in iter_jsonl(path):
        if not isinstance(row, dict) or row.get("doc_id") is None or "query" not in row:
            raise DataError('expected an object with "doc_id", "query" and "candidates"', path, line)
        query_id, query = str(row["doc_id"]), row["query"]
        if task.type == ADHOC_SEARCH:
            if not isinstance(query, str) or not query.strip():
                raise DataError("an adhoc_search query is a non-empty text", path, line, query_id)
            queries.setdefault(query_id, Paper(query_id, query, ""))
        else:
            paper = _paper(query, path, line, "query paper")  # keyed by its own doc_id, as SciRepEval embeds it
            queries.setdefault(paper.paper_id, paper)
        rows = row.get("candidates")
        if not isinstance(rows, list):
            raise DataError('"candidates" must be a list of papers', path, line, query_id)
        for candidate in rows:
            paper = _paper(candidate, path, line, "candidate")
            candidates.setdefault(paper.paper_id, paper)
    if not queries:
        raise DataError("no queries (the file is empty)", path)
    return queries, candidates


def load_task_data(task: FormatTask) -> SupervisedData | RankingData:
    """Read and check one task's files; every labelled or judged id must be among its papers."""
    files = task.files()
    if task.type in SUPERVISED:
        papers = read_papers(files["meta"])
        splits = {role: read_labels(files[role], task) for role in ("train", "test")}
        for role, rows in splits.items():
            for paper_id, _ in rows:
                if paper_id not in papers:
                    raise DataError(f"paper not in {files['meta'].name}", files[role], record_id=paper_id)
        return SupervisedData(papers, splits["train"], splits["test"])
    queries, candidates = read_ranking_meta(files["meta"], task)
    qrels = read_qrels(files["qrels"])
    known = candidates if task.type == ADHOC_SEARCH else {**candidates, **queries}
    for query_id, docs in qrels.items():
        if query_id not in queries:
            raise DataError(f"query not in {files['meta'].name}", files["qrels"], record_id=query_id)
        for cand_id in docs:
            if cand_id not in known:
                raise DataError(f"candidate not in {files['meta'].name}", files["qrels"], record_id=cand_id)
    papers = dict(candidates) if task.type == ADHOC_SEARCH else {**queries, **candidates}
    return RankingData(queries, candidates, qrels, papers)
