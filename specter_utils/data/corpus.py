"""A citation corpus: papers plus directed citation edges, whatever format it came from.

Classification labels, where a corpus has them, come from ``label_field``: ``venue`` reads ``Paper.venue``
(hep-th: the normalised journal; the synthetic corpus: its topic); any other field was resolved by the reader
into ``Paper.extras["class_labels"]`` (a list: S2ORC's ``mag_field_of_study``, OpenAlex topics, a generic
record's ``labels``). A paper with several labels follows ``MULTI_LABEL_RULES``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specter_utils.data.graph import CitationGraph
from specter_utils.data.records import Paper, ReadReport
from specter_utils.vocabularies import MULTI_LABEL_RULES

# What a paper with several labels becomes: ``first``: its first label (the source's order: S2ORC and OpenAlex
# list the main field first); ``exactly-one``: kept only if it has exactly one label.


@dataclass
class Corpus:
    name: str
    papers: dict[str, Paper]
    edges: list[tuple[str, str]]  # (citing, cited)
    report: ReadReport = field(default_factory=ReadReport)
    synthetic: bool = False  # True for the generated corpus of the tests; say so wherever it is used
    info: dict[str, Any] = field(default_factory=dict)  # where it came from (source path, generator settings)
    label_field: str = "venue"  # where the class labels come from: Paper.venue, or extras["class_labels"]
    _graph: CitationGraph | None = field(default=None, init=False, repr=False, compare=False)
    _graph_edges: int = field(default=-1, init=False, repr=False, compare=False)

    def graph(self) -> CitationGraph:
        """The citation graph (self-citations and duplicate edges dropped and counted in ``report``), built once and
        reused (rebuilt if ``edges`` changed length), so the oddities are counted once."""
        if self._graph is None or self._graph_edges != len(self.edges):
            self._graph = CitationGraph.from_edges(self.edges, self.report)
            self._graph_edges = len(self.edges)
        return self._graph

    def label_lists(self) -> dict[str, list[str]]:
        """Paper id -> its labels (from ``label_field``), for papers that have any."""
        if self.label_field == "venue":
            return {pid: [p.venue] for pid, p in self.papers.items() if p.venue}
        return {pid: list(p.extras["class_labels"]) for pid, p in self.papers.items() if p.extras.get("class_labels")}

    def labels(self, multi_label: str = "first") -> dict[str, str]:
        """Paper id -> one class label, for papers that have one, after the multi-label rule."""
        if multi_label not in MULTI_LABEL_RULES:
            raise ValueError(f"multi_label must be one of {MULTI_LABEL_RULES}, got {multi_label!r}")
        lists = self.label_lists()
        if multi_label == "exactly-one":
            return {pid: labels[0] for pid, labels in lists.items() if len(labels) == 1}
        return {pid: labels[0] for pid, labels in lists.items()}

    def dangling_edges(self) -> list[tuple[str, str]]:
        """Edges with an end that is not a paper of the corpus."""
        return [(a, b) for a, b in self.edges if a not in self.papers or b not in self.papers]

    def describe(self) -> dict[str, Any]:
        """Name, synthetic flag and sizes, for run records and ``metrics.json``."""
        return {
            "name": self.name,
            "synthetic": self.synthetic,
            "papers": len(self.papers),
            "edges": len(self.edges),
            "label_field": self.label_field,
            **({"info": self.info} if self.info else {}),
        }
