"""A citation graph from any edge list, and its conversion to SPECTER ``data.json`` counts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from specter_utils.data.records import Paper, ReadReport
from specter_utils.data.specter_format import CITATION_OF_CITATION, DIRECT_CITATION
from specter_utils.errors import DataError
from specter_utils.io import read_text


@dataclass
class CitationGraph:
    """Directed citations: ``references[p]`` are the papers p cites, ``cited_by[p]`` those citing p."""

    references: dict[str, set[str]] = field(default_factory=dict)
    cited_by: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_edges(cls, edges: Iterable[tuple[str, str]], report: ReadReport | None = None) -> CitationGraph:
        graph, report = cls(), report if report is not None else ReadReport()
        for citing, cited in edges:
            if citing == cited:
                report.note("self_citation_dropped", citing)
                continue
            refs = graph.references.setdefault(citing, set())
            if cited in refs:
                report.note("duplicate_edge", f"{citing}->{cited}")
                continue
            refs.add(cited)
            graph.cited_by.setdefault(cited, set()).add(citing)
        return graph

    @property
    def nodes(self) -> set[str]:
        return set(self.references) | set(self.cited_by)

    @property
    def num_edges(self) -> int:
        return sum(len(refs) for refs in self.references.values())

    def edges(self) -> Iterable[tuple[str, str]]:
        for citing, refs in self.references.items():
            for cited in refs:
                yield citing, cited

    def without_edges_of(self, papers: set[str]) -> CitationGraph:
        """Drop every edge touching ``papers`` (for held-out evaluation queries)."""
        return CitationGraph.from_edges((a, b) for a, b in self.edges() if a not in papers and b not in papers)

    def to_specter_graph(
        self, queries: Iterable[str] | None = None, allowed: set[str] | None = None
    ) -> dict[str, dict[str, int]]:
        """SPECTER ``data.json`` counts: 5 for a direct citation, 1 for a citation of a citation (cited by something
        the query cites, not itself cited by the query, nor the query). ``allowed`` restricts candidates."""
        out: dict[str, dict[str, int]] = {}
        for query in queries if queries is not None else self.references:
            direct = {c for c in self.references.get(query, ()) if allowed is None or c in allowed}
            if not direct:
                continue
            row = dict.fromkeys(sorted(direct), DIRECT_CITATION)
            for cited in sorted(direct):
                for second in sorted(self.references.get(cited, ())):  # sorted: no hash order in data.json
                    if second == query or second in direct or (allowed is not None and second not in allowed):
                        continue
                    row.setdefault(second, CITATION_OF_CITATION)
            out[query] = row
        return out


def edges_from_paper_lists(papers: dict[str, Paper]) -> list[tuple[str, str]]:
    """Edges from the ``references`` / ``cited_by`` lists in papers' extras (as SCIDOCS metadata has them)."""
    edges: set[tuple[str, str]] = set()
    for paper_id, paper in papers.items():
        edges.update((paper_id, str(cited)) for cited in paper.extras.get("references") or [])
        edges.update((str(citing), paper_id) for citing in paper.extras.get("cited_by") or [])
    return sorted(edges)


def iter_edge_list(path: str | Path, sep: str | None = None) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line, citing, cited)`` of ``citing<sep>cited`` lines (``#`` comments allowed); ids as strings."""
    path = Path(path)
    found = False
    for line_number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(sep)
        if len(parts) != 2:
            raise DataError(f"expected 'citing cited', got {len(parts)} fields: {line[:60]!r}", path, line_number)
        found = True
        yield line_number, parts[0].strip(), parts[1].strip()
    if not found:
        raise DataError("empty edge list", path)


def read_edge_list(path: str | Path, sep: str | None = None) -> list[tuple[str, str]]:
    """Read ``citing<sep>cited`` lines (``#`` comments allowed); ids are kept as strings."""
    return [(citing, cited) for _, citing, cited in iter_edge_list(path, sep)]
