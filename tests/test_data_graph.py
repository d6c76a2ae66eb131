"""Citation graph -> SPECTER counts (5 direct, 1 citation of a citation), and corpus -> SPECTER dir."""

from __future__ import annotations

from specter_utils.data.convert import corpus_to_specter
from specter_utils.data.corpus import Corpus
from specter_utils.data.graph import CitationGraph
from specter_utils.data.records import Paper, ReadReport

# q cites a and b; a cites c and b; b cites d; c cites q (a cycle back to the query).
EDGES = [("q", "a"), ("q", "b"), ("a", "c"), ("a", "b"), ("b", "d"), ("c", "q")]


def test_specter_counts():
    graph = CitationGraph.from_edges(EDGES)
    row = graph.to_specter_graph(queries=["q"])["q"]
    assert row == {"a": 5, "b": 5, "c": 1, "d": 1}  # b is cited directly, so it stays 5


def test_allowed_restricts_candidates():
    graph = CitationGraph.from_edges(EDGES)
    row = graph.to_specter_graph(queries=["q"], allowed={"q", "a", "c"})["q"]
    assert row == {"a": 5, "c": 1}


def test_self_citations_and_duplicate_edges_are_counted():
    report = ReadReport()
    graph = CitationGraph.from_edges([("a", "a"), ("a", "b"), ("a", "b")], report)
    assert graph.num_edges == 1
    assert report.counts == {"self_citation_dropped": 1, "duplicate_edge": 1}


def test_without_edges_of_held_out_papers():
    graph = CitationGraph.from_edges(EDGES).without_edges_of({"a"})
    assert set(graph.edges()) == {("q", "b"), ("b", "d"), ("c", "q")}


def test_corpus_to_specter_excludes_held_out_and_splits_by_seed():
    papers = {pid: Paper(pid, f"T {pid}") for pid in "qabcd"}
    papers["d"] = Paper("d", "")  # no title: dropped and counted
    corpus = Corpus("tiny", papers, EDGES)
    data = corpus_to_specter(corpus, exclude={"c"}, val_fraction=0.5, seed=1)
    assert "c" not in data.metadata and "d" not in data.metadata
    assert data.report.counts["no_title_dropped"] == 1
    assert data.graph == {"q": {"a": 5, "b": 5}, "a": {"b": 5}}
    assert sorted(data.splits["train"] + data.splits["val"]) == ["a", "q"]
    assert len(data.splits["val"]) == 1
    assert corpus_to_specter(corpus, exclude={"c"}, val_fraction=0.5, seed=1).splits == data.splits


def test_edges_from_paper_lists_merges_references_and_cited_by():
    from specter_utils.data.graph import edges_from_paper_lists
    from specter_utils.data.records import Paper

    papers = {
        "a": Paper("a", "A", extras={"references": ["b", 7], "cited_by": ["c"]}),
        "b": Paper("b", "B", extras={"cited_by": ["a"], "references": None}),
        "c": Paper("c", "C"),
    }
    assert edges_from_paper_lists(papers) == [("a", "7"), ("a", "b"), ("c", "a")]
