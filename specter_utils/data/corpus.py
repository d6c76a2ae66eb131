"""A citation corpus: papers plus directed citation edges, whatever format it came from.

Classification labels, where a corpus has them, are ``Paper.venue`` (hep-th: the normalised
journal; the synthetic corpus: its topic).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specter_utils.data.graph import CitationGraph
from specter_utils.data.records import Paper, ReadReport


@dataclass
class Corpus:
    name: str
    papers: dict[str, Paper]
    edges: list[tuple[str, str]]  # (citing, cited)
    report: ReadReport = field(default_factory=ReadReport)
    synthetic: bool = False  # True for the generated quick-start corpus; say so wherever it is used
    info: dict[str, Any] = field(default_factory=dict)  # where it came from (source path, generator settings)
    _graph: CitationGraph | None = field(default=None, init=False, repr=False, compare=False)
    _graph_edges: int = field(default=-1, init=False, repr=False, compare=False)

    def graph(self) -> CitationGraph:
        """The citation graph (self-citations and duplicate edges dropped and counted in ``report``).

        Built once and reused (rebuilt if ``edges`` changed length), so the oddities are counted once.
        """
        if self._graph is None or self._graph_edges != len(self.edges):
            self._graph = CitationGraph.from_edges(self.edges, self.report)
            self._graph_edges = len(self.edges)
        return self._graph

    def labels(self) -> dict[str, str]:
        """Paper id -> class label (the venue), for papers that have one."""
        return {pid: p.venue for pid, p in self.papers.items() if p.venue}

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
            **({"info": self.info} if self.info else {}),
        }
