"""hep-th reader on the real SNAP files, plus its parsing helpers on small inputs."""

from __future__ import annotations

import io
import tarfile
from collections import Counter

import pytest

from specter_utils.data.hepth import (
    normalise_id,
    normalise_venue,
    parse_abs,
    read_abstracts,
    read_edges,
    read_hepth,
)
from specter_utils.errors import DataError


def test_hepth_counts_match_the_distribution(hepth_corpus):
    assert len(hepth_corpus.papers) == 28_555
    assert len(hepth_corpus.edges) == 135_672


def test_hepth_ids_match_between_edges_and_abstracts(hepth_corpus):
    ends = {pid for edge in hepth_corpus.edges for pid in edge}
    assert ends <= set(hepth_corpus.papers)
    assert len(ends) == 13_610  # the "Nodes:" figure in the edge file's header
    assert not hepth_corpus.dangling_edges()
    assert all(pid == str(int(pid)) for pid in hepth_corpus.papers)  # numeric, no leading zeros
    assert "1013" in hepth_corpus.papers  # hep-th/0001013


def test_hepth_venues_are_normalised(hepth_corpus):
    venues = Counter(p.venue for p in hepth_corpus.papers.values() if p.venue)
    top = {name for name, _ in venues.most_common(6)}
    assert {"Phys.Lett.B", "Nucl.Phys.B", "JHEP", "Phys.Rev.D"} <= top
    assert venues["Phys.Lett.B"] > 3_000


def test_hepth_paper_fields(hepth_corpus):
    papers = hepth_corpus.papers.values()
    assert all(p.title and "\n" not in p.title for p in papers)
    assert all("\n" not in p.abstract for p in papers)
    assert sum(1 for p in papers if p.abstract) > 28_000
    assert {p.year for p in papers} == set(range(1992, 2004))
    with_authors = [p for p in papers if p.authors]
    assert len(with_authors) == 28_555 - hepth_corpus.report.counts["no_authors"] > 28_500  # "Author:" too
    assert all(isinstance(a, str) and a for p in with_authors for a in p.authors)


def test_hepth_graph_and_specter_counts(hepth_corpus):
    graph = hepth_corpus.graph()
    assert graph.num_edges == 135_672 - hepth_corpus.report.counts["self_citation_dropped"]
    queries = sorted(graph.references)[:300]  # the whole conversion is the CLI test's job (on a subset)
    specter_graph = graph.to_specter_graph(queries=queries, allowed=set(hepth_corpus.papers))
    pairs = Counter(c for cands in specter_graph.values() for c in cands.values())
    assert pairs[5] == sum(len(graph.references[q] - {q}) for q in queries)
    assert pairs[1] > 0
    for query, candidates in specter_graph.items():
        cited = graph.references[query]
        for cand, n in candidates.items():
            assert cand != query
            assert (n == 5) == (cand in cited)
            if n == 1:  # cited by something the query cites
                assert any(cand in graph.references.get(p, ()) for p in cited)


@pytest.mark.parametrize(
    ("journal_ref", "venue"),
    [
        ("Phys.Lett. B346 (1995) 262-268", "Phys.Lett.B"),
        ("Nucl.Phys. B451 (1995) 96-108", "Nucl.Phys.B"),
        ("JHEP 0010 (2000) 019", "JHEP"),
        ("Phys.Rev. D52 (1995) 5412", "Phys.Rev.D"),
        (None, None),
        ("", None),
    ],
)
def test_normalise_venue(journal_ref, venue):
    assert normalise_venue(journal_ref) == venue


def test_normalise_id():
    assert normalise_id("0001013") == "1013"
    assert normalise_id("hep-th/9201003") == "9201003"
    assert normalise_id("2003/0301001.abs") == "301001"
    with pytest.raises(ValueError):
        normalise_id("hep-th/abc")


ABS = """------------------------------------------------------------------------------
\\\\
Paper: hep-th/9201001
From: someone@example.org
Date: Wed, 1 Jan 1992 00:00:00 GMT

Title: A title that
  spans two lines
Authors: A. Author, B. Author and C. Author (Some University)
Journal-ref: Phys.Lett. B346 (1995) 262-268
\\\\
  An abstract on
  two lines.
\\\\
"""


def test_parse_abs_joins_lines_and_splits_authors():
    paper = parse_abs(ABS, "9201001")
    assert paper.title == "A title that spans two lines"
    assert paper.abstract == "An abstract on two lines."
    assert paper.authors == ["A. Author", "B. Author", "C. Author"]
    assert paper.venue == "Phys.Lett.B"
    assert paper.extras["journal_year"] == 1995


def test_parse_abs_without_title_names_the_id():
    with pytest.raises(DataError, match="9201001.*Title"):
        parse_abs(ABS.replace("Title:", "Titel:"), "9201001", "x.tar.gz:1992/9201001.abs")


def test_bad_edge_line_names_file_and_line(tmp_path):
    path = tmp_path / "cit-HepTh.txt"
    path.write_text("# header\n1013\t1002\n1033 1002 7\n")
    with pytest.raises(DataError, match=r"cit-HepTh.txt:3"):
        read_edges(path)


def test_non_numeric_edge_id_is_an_error(tmp_path):
    path = tmp_path / "cit-HepTh.txt"
    path.write_text("# header\n1013\t1002\n1013\tabc\n")
    with pytest.raises(DataError, match="cit-HepTh.txt:3.*abc"):
        read_edges(path)


def test_empty_edge_file_is_an_error(tmp_path):
    path = tmp_path / "cit-HepTh.txt"
    path.write_text("# only a header\n")
    with pytest.raises(DataError, match="empty"):
        read_edges(path)


def test_non_utf8_edge_file_names_the_line(tmp_path):
    path = tmp_path / "cit-HepTh.txt"
    path.write_bytes(b"1013\t1002\n10\xff33\t1002\n")
    with pytest.raises(DataError, match=r"cit-HepTh.txt:2.*UTF-8"):
        read_edges(path)


def test_parse_abs_reads_the_singular_author_header():
    paper = parse_abs(ABS.replace("Authors: A. Author, B. Author and C. Author", "Author: D. Solo"), "9201001")
    assert paper.authors == ["D. Solo"]


def _tar(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_empty_archive_is_an_error(tmp_path):
    path = _tar(tmp_path / "cit-HepTh-abstracts.tar.gz", [("README", "nothing here")])
    with pytest.raises(DataError, match=r"cit-HepTh-abstracts.tar.gz.*no .abs files"):
        read_abstracts(path)


def test_duplicate_paper_in_archive_names_member_and_id(tmp_path):
    path = _tar(tmp_path / "a.tar.gz", [("1992/9201001.abs", ABS), ("1993/9201001.abs", ABS)])
    with pytest.raises(DataError, match=r"a.tar.gz:1993/9201001.abs \(id '9201001'\).*duplicate"):
        read_abstracts(path)


def test_dangling_edges_are_counted(tmp_path):
    _tar(tmp_path / "cit-HepTh-abstracts.tar.gz", [("1992/9201001.abs", ABS)])
    (tmp_path / "cit-HepTh.txt").write_text("9201001\t9999999\n")
    corpus = read_hepth(tmp_path)
    assert corpus.report.counts["edge_cited_unknown_id"] == 1
    assert corpus.dangling_edges() == [("9201001", "9999999")]
