"""The SCIDOCS tasks, once: one declarative :class:`Task` per task and :data:`TASKS`, the registry in Table 1 order.

Every other list of tasks is derived from this one: the folders of the SCIDOCS layout (``data.scidocs``), the
result and metric keys of the evaluation (``evaluation.suite``), the columns of Table 1 and the groups of Table 2
(``presentation.tables``) and the README's results block (``presentation.readme``). It imports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CLASSIFICATION, RANKING, RECOMMENDATION = "classification", "ranking", "recommendation"
METRIC_LABELS = {"f1": "F1", "map": "MAP", "ndcg": "nDCG", "adj-NDCG": "nDCG", "adj-P@1": "P@1"}


@dataclass(frozen=True)
class Task:
    """One SCIDOCS task: where its files are, how it is scored, how tables name it, what the paper measured."""

    name: str  # the task's folder in the SCIDOCS layout, and its key in ``benchmark.json``
    key: str  # the original ``scidocs`` package's result key (``co-view`` for ``coview``)
    kind: str  # classification, ranking or recommendation: how it is read and scored
    label: str  # how a table names it (``MAG F1``, ``co-view MAP`` are ``label`` + a metric's label)
    metrics: tuple[str, ...]  # the original's metric keys under ``key``, in Table 1's order
    main_score: str  # the metric a paired comparison and a one-number summary use
    group: str  # the paper's Table 2 group (CLS, USR, CITE, REC)
    embeddings: str  # which of the original's three embedding files serves it
    metadata: str  # which ``paper_metadata_*.json`` describes its papers
    splits: tuple[str, ...]  # the splits stored in its folder, each as ``<split><suffix>``
    suffix: str  # the file ending of its splits (``.csv`` rows, ``.qrel`` relevance judgements)
    citation_corpus: bool  # whether a benchmark built from a citation corpus has it too (the README always shows it)
    # the README's Table 1 label of each metric it shows
    readme: Mapping[str, str] = field(default_factory=dict, compare=False)
    # the SPECTER paper's Table 1 values: model -> one value per metric
    paper: Mapping[str, tuple[float, ...]] = field(default_factory=dict, compare=False)

    @property
    def headers(self) -> tuple[str, ...]:
        """Table 1's column header of each metric (``co-view MAP``, ``co-view nDCG``)."""
        return tuple(f"{self.label} {METRIC_LABELS[metric]}" for metric in self.metrics)

    @property
    def in_paper(self) -> bool:
        """Whether the paper's Table 1 has it (a task of ours holds :data:`NOT_IN_PAPER` there)."""
        return all(value == value for values in self.paper.values() for value in values)  # NaN != NaN

    @property
    def columns(self) -> tuple[tuple[str, str, str], ...]:
        """``(result key, metric key, header)`` of each metric."""
        return tuple((self.key, metric, header) for metric, header in zip(self.metrics, self.headers, strict=True))

    @property
    def readme_columns(self) -> tuple[tuple[str, str], ...]:
        """``(header, README label)`` of each metric the README's Table 1 shows."""
        return tuple((h, self.readme[m]) for m, h in zip(self.metrics, self.headers, strict=True) if m in self.readme)


# The paper's Table 1 rows, in its order; each task holds its own columns of them (docs/protocol.md section 5).
PAPER_MODELS = ("Random", "SIF", "Citeomatic", "SGC", "SciBERT", "Sent-BERT", "SPECTER")
NOT_IN_PAPER = float("nan")  # the value of a metric the paper did not measure (a task of ours only)
# The paper's own average over its 12 metrics, per model.
PAPER_AVERAGE = {
    "Random": 32.5,
    "SIF": 75.9,
    "Citeomatic": 76.0,
    "SGC": 76.9,
    "SciBERT": 59.6,
    "Sent-BERT": 67.5,
    "SPECTER": 80.2,
}


def _paper(*values: tuple[float, ...]) -> dict[str, tuple[float, ...]]:
    """One value per metric for each of :data:`PAPER_MODELS`, in that order."""
    return dict(zip(PAPER_MODELS, values, strict=True))


def _classification(name: str, label: str, readme: str, citation_corpus: bool, paper: dict) -> Task:
    """A MAG-style task: a linear SVM on ``pid,class_label`` rows, macro-F1."""
    return Task(
        name=name,
        key=name,
        kind=CLASSIFICATION,
        label=label,
        metrics=("f1",),
        main_score="f1",
        group="CLS",
        embeddings="cls",
        metadata="mag_mesh",
        splits=("train", "val", "test"),
        suffix=".csv",
        citation_corpus=citation_corpus,
        readme={"f1": readme},
        paper=paper,
    )


def _ranking(name: str, key: str, group: str, citation_corpus: bool, paper: dict) -> Task:
    """A cite-style task: candidates of each query ranked by distance, MAP and nDCG."""
    return Task(
        name=name,
        key=key,
        kind=RANKING,
        label=key,
        metrics=("map", "ndcg"),
        main_score="map",
        group=group,
        embeddings="user-citation",
        metadata="view_cite_read",
        splits=("val", "test"),
        suffix=".qrel",
        citation_corpus=citation_corpus,
        readme={"map": f"{key} MAP"},
        paper=paper,
    )


TASKS: tuple[Task, ...] = (  # Table 1's order, which is also the original's result order
    _classification(
        "mag", "MAG", "CLS macro-F1 (`mag`)", True,
        _paper((4.8,), (78.4,), (67.1,), (76.8,), (79.7,), (80.5,), (82.6,)),
    ),
    _classification(
        "mesh", "MeSH", "MeSH macro-F1", False,
        _paper((9.4,), (81.4,), (75.7,), (82.7,), (80.7,), (69.1,), (86.3,)),
    ),
    _ranking(
        "coview", "co-view", "USR", False,
        _paper((25.2, 51.6), (79.4, 89.4), (81.1, 90.2), (77.2, 88.0), (50.7, 73.1), (68.2, 83.3), (83.8, 91.8)),
    ),
    _ranking(
        "coread", "co-read", "USR", False,
        _paper((25.6, 51.9), (78.2, 88.9), (80.5, 90.2), (75.7, 87.5), (47.7, 71.1), (64.8, 81.3), (84.5, 92.7)),
    ),
    _ranking(
        "cite", "cite", "CITE", True,
        _paper((25.1, 51.5), (79.4, 90.5), (86.3, 94.1), (91.6, 96.2), (48.3, 71.7), (63.5, 81.6), (88.4, 94.9)),
    ),
    _ranking(
        "cocite", "co-cite", "CITE", True,
        _paper((24.9, 51.4), (80.8, 90.9), (84.4, 92.8), (84.1, 92.5), (49.7, 72.6), (66.4, 82.8), (87.9, 94.7)),
    ),
    Task(
        name="recomm", key="recomm", kind=RECOMMENDATION, label="recomm", metrics=("adj-NDCG", "adj-P@1"),
        main_score="adj-NDCG", group="REC", embeddings="recomm", metadata="recomm", splits=("train", "val", "test"),
        suffix=".csv", citation_corpus=False, readme={"adj-NDCG": "recomm nDCG", "adj-P@1": "recomm P@1"},
        paper=_paper((51.3, 16.8), (53.4, 19.5), (52.5, 17.3), (52.7, 18.2), (52.1, 17.9), (51.6, 17.1), (54.0, 20.4)),
    ),
    # cite and co-cite again, same queries and positives, negatives matched to the positives on year and in-degree
    # (benchmark/matched.py); not in the paper, so no paper values
    _ranking("cite-matched", "cite (matched)", "CITE", True, _paper(*[(NOT_IN_PAPER,) * 2] * len(PAPER_MODELS))),
    _ranking("cocite-matched", "co-cite (matched)", "CITE", True, _paper(*[(NOT_IN_PAPER,) * 2] * len(PAPER_MODELS))),
)  # fmt: skip
# The ranking tasks, those a citation corpus has first (cite, co-cite, co-view, co-read): the benchmark's own order
RANKING_CITATION_FIRST = tuple(sorted((t for t in TASKS if t.kind == RANKING), key=lambda t: not t.citation_corpus))
BY_NAME: dict[str, Task] = {task.name: task for task in TASKS}
BY_KEY: dict[str, Task] = {task.key: task for task in TASKS}


def tasks_of(kind: str) -> tuple[str, ...]:
    """The folder names of the tasks of one kind, in Table 1's order."""
    return tuple(task.name for task in TASKS if task.kind == kind)


def grouped(attribute: str) -> dict[str, tuple[Task, ...]]:
    """The tasks by the value of one of their fields (``group``, ``embeddings``), values in Table 1's order."""
    values = dict.fromkeys(getattr(task, attribute) for task in TASKS)
    return {value: tuple(task for task in TASKS if getattr(task, attribute) == value) for value in values}
