"""S2ORC metadata reader on the real 1,000-record sample and on malformed records."""

from __future__ import annotations

import json

import pytest

from specter_utils.data.s2orc import author_name, read_s2orc
from specter_utils.errors import DataError


@pytest.fixture(scope="module")
def s2orc_path(shared_data):
    path = shared_data / "s2orc" / "sample.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


def test_sample_counts(s2orc_path):
    corpus = read_s2orc(s2orc_path)
    rows = [json.loads(line) for line in s2orc_path.read_text().splitlines()]
    assert len(corpus.papers) == 1_000
    null_abstracts = sum(1 for r in rows if r["abstract"] is None)
    assert corpus.report.counts["null_abstract"] == null_abstracts == 512
    assert sum(1 for p in corpus.papers.values() if p.abstract) == 1_000 - null_abstracts
    outbound = sum(len(r["outbound_citations"]) for r in rows)
    internal = sum(1 for r in rows for c in r["outbound_citations"] if c in corpus.papers)
    assert corpus.report.counts["dangling_citation"] + internal == outbound
    assert len(corpus.edges) == internal  # dangling citations dropped from the edges, but counted
    assert not corpus.dangling_edges()


def test_sample_fields(s2orc_path):
    corpus = read_s2orc(s2orc_path)
    paper = corpus.papers["77490025"]
    assert paper.title == "State of external ocular muscles in strabismus of different duration"
    assert paper.authors == ["Pen'kov Ma", "Konstantinovskaia Ke", "Zhukova Sv"]
    assert paper.venue == "Oftalmologicheskii\u0306 zhurnal"  # the journal when venue is empty (text kept as is)
    assert paper.year == 1975
    assert paper.extras["mag_field_of_study"] == ["Medicine"]
    assert paper.extras["outbound_citations"] == []
    assert all(isinstance(a, str) for p in corpus.papers.values() for a in p.authors)
    assert corpus.report.counts["no_year"] == sum(1 for p in corpus.papers.values() if p.year is None)


def test_keep_policy_keeps_dangling_edges(s2orc_path):
    corpus = read_s2orc(s2orc_path, dangling="keep")
    assert len(corpus.edges) == sum(len(p.extras["outbound_citations"]) for p in corpus.papers.values())
    assert len(corpus.dangling_edges()) == corpus.report.counts["dangling_citation"]


def test_author_name():
    assert author_name({"first": "Iz", "middle": ["Q"], "last": "Beltagy", "suffix": "Jr"}) == "Iz Q Beltagy Jr"
    assert author_name("  Arman   Cohan ") == "Arman Cohan"


def _record(paper_id="1", **fields):
    row = {"paper_id": paper_id, "title": f"Paper {paper_id}", "authors": [], "abstract": "A.", "year": 2020}
    row.update(fields)
    return json.dumps(row)


def _write(tmp_path, *lines):
    path = tmp_path / "meta.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_invalid_json_names_the_line(tmp_path):
    path = _write(tmp_path, _record("1"), '{"paper_id": "2", "title": ')
    with pytest.raises(DataError, match=r"meta.jsonl:2.*invalid JSON"):
        read_s2orc(path)


def test_missing_field_names_line_and_id(tmp_path):
    path = _write(tmp_path, _record("1"), json.dumps({"paper_id": "2", "abstract": "x"}))
    with pytest.raises(DataError, match=r"meta.jsonl:2 \(id '2'\).*'title'"):
        read_s2orc(path)


def test_duplicate_id_names_both_lines(tmp_path):
    path = _write(tmp_path, _record("1"), _record("2"), _record("1"))
    with pytest.raises(DataError, match=r"meta.jsonl:3 \(id '1'\).*duplicate.*line 1"):
        read_s2orc(path)


def test_unknown_citation_is_an_error_when_asked(tmp_path):
    path = _write(tmp_path, _record("1", outbound_citations=["2", "99"]), _record("2"))
    with pytest.raises(DataError, match=r"meta.jsonl:1 \(id '1'\).*'99'"):
        read_s2orc(path, dangling="error")
    corpus = read_s2orc(path)
    assert corpus.edges == [("1", "2")]
    assert corpus.report.examples["dangling_citation"] == ["1->99"]


def test_bad_year_names_the_record(tmp_path):
    path = _write(tmp_path, _record("1", year="soon"))
    with pytest.raises(DataError, match=r"meta.jsonl:1 \(id '1'\).*year"):
        read_s2orc(path)


def test_empty_corpus_is_an_error(tmp_path):
    path = _write(tmp_path, "", "  ")
    with pytest.raises(DataError, match=r"meta.jsonl.*empty corpus"):
        read_s2orc(path)


def test_untitled_papers_are_counted_not_silently_dropped(tmp_path):
    path = _write(tmp_path, _record("1"), _record("2", title=None))
    corpus = read_s2orc(path)
    assert set(corpus.papers) == {"1"}
    assert corpus.report.examples["no_title_dropped"] == ["2"]


def test_non_utf8_names_the_line(tmp_path):
    path = tmp_path / "meta.jsonl"
    path.write_bytes(_record("1").encode() + b"\n" + b'{"paper_id": "2", "title": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"meta.jsonl:2.*UTF-8"):
        read_s2orc(path)
