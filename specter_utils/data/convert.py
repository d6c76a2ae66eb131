"""Turn any citation corpus into a SPECTER training directory."""

from __future__ import annotations

import random
from collections.abc import Iterable

from specter_utils.data.corpus import Corpus
from specter_utils.data.records import ReadReport
from specter_utils.data.specter_format import SpecterData


def corpus_to_specter(
    corpus: Corpus, exclude: Iterable[str] = (), val_fraction: float = 0.1, test_fraction: float = 0.0, seed: int = 0
) -> SpecterData:
    """SPECTER data from a corpus, leaving out ``exclude`` (held-out papers) and every edge touching them: queries
    are papers citing a paper with a title, split by a seeded shuffle; ``metadata`` holds every usable paper."""
    excluded = set(exclude)
    report = ReadReport(source=f"{corpus.name} -> SPECTER format")
    usable = {pid: p for pid, p in corpus.papers.items() if pid not in excluded and p.title.strip()}
    for pid, paper in corpus.papers.items():
        if pid not in excluded and not paper.title.strip():
            report.note("no_title_dropped", pid)
    graph = corpus.graph().without_edges_of(excluded)
    for citing, cited in graph.edges():
        if citing not in usable or cited not in usable:
            report.note("edge_to_paper_without_metadata", f"{citing}->{cited}")
    specter_graph = graph.to_specter_graph(queries=sorted(graph.references), allowed=set(usable))
    specter_graph = {q: cands for q, cands in specter_graph.items() if q in usable}
    queries = sorted(specter_graph)
    random.Random(seed).shuffle(queries)
    n_val, n_test = round(val_fraction * len(queries)), round(test_fraction * len(queries))
    splits = {
        "val": sorted(queries[:n_val]),
        "test": sorted(queries[n_val : n_val + n_test]),
        "train": sorted(queries[n_val + n_test :]),
    }
    report.note("queries", n=len(queries))
    report.note("papers", n=len(usable))
    info = {
        "corpus": corpus.name,
        "synthetic": corpus.synthetic,
        "seed": seed,
        "val_fraction": val_fraction,
        "test_fraction": test_fraction,
        "excluded_papers": len(excluded),
        "queries": len(queries),
        "papers": len(usable),
    }
    return SpecterData(graph=specter_graph, metadata=usable, splits=splits, report=report, info=info)
