"""SPECTER training format: the real sample (with its quirk), round trips, and malformed input."""

from __future__ import annotations

import json

import pytest

from specter_utils.data.records import Paper, is_plain_id
from specter_utils.data.specter_format import (
    SpecterData,
    read_graph,
    read_metadata,
    read_specter_dir,
    read_split,
    write_specter_dir,
)
from specter_utils.errors import DataError


def test_specter_sample_counts_its_queries_without_metadata(shared_data):
    data = read_specter_dir(shared_data / "specter_sample")
    assert len(data.graph) == 20
    candidates = {c for cands in data.graph.values() for c in cands}
    assert len(candidates) == 379
    assert len(data.metadata) == 379
    assert {len(data.splits[s]) for s in ("train", "val", "test")} == {12, 2, 3}
    # The quirk: every query id is missing from metadata.json, and the report says so.
    assert data.report.counts["query_without_metadata"] == 20
    assert set(data.report.examples["query_without_metadata"]) <= set(data.graph)
    assert not any(q in data.metadata for q in data.graph)
    assert set(data.graph[next(iter(data.graph))].values()) <= {1, 5}
    assert data.report.counts["empty_abstract"] == sum(1 for p in data.metadata.values() if not p.abstract)


def _small() -> SpecterData:
    papers = {pid: Paper(pid, f"Title {pid}", f"Abstract {pid}") for pid in ("q", "a", "b", "c")}
    return SpecterData(
        graph={"q": {"a": 5, "b": 1}, "a": {"c": 5}},
        metadata=papers,
        splits={"train": ["q"], "val": ["a"], "test": []},
        info={"corpus": "tiny", "synthetic": True},
    )


def test_round_trip(tmp_path):
    write_specter_dir(tmp_path, _small())
    data = read_specter_dir(tmp_path)
    assert data.graph == _small().graph
    assert data.splits == {"train": ["q"], "val": ["a"], "test": []}
    assert data.metadata["a"].title == "Title a"
    assert data.info == {"corpus": "tiny", "synthetic": True}
    raw = json.loads((tmp_path / "metadata.json").read_text())
    assert raw["a"]["synthetic"] is True  # a synthetic corpus is labelled in every entry
    assert json.loads((tmp_path / "data.json").read_text())["q"]["a"] == {"count": 5}


def _write(tmp_path, data_json, metadata_json='{"a": {"paper_id": "a", "title": "T", "abstract": ""}}'):
    (tmp_path / "data.json").write_text(data_json)
    (tmp_path / "metadata.json").write_text(metadata_json)
    return tmp_path


def test_invalid_json_names_file_and_line(tmp_path):
    _write(tmp_path, '{\n  "q": {"a": {"count": 5}},\n  oops\n}')
    with pytest.raises(DataError, match=r"data.json:3.*invalid JSON"):
        read_specter_dir(tmp_path)


def test_duplicate_query_id_is_an_error(tmp_path):
    _write(tmp_path, '{"q": {"a": {"count": 5}}, "q": {"a": {"count": 1}}}')
    with pytest.raises(DataError, match=r"data.json.*'q'.*duplicate"):
        read_specter_dir(tmp_path)


def test_duplicate_metadata_id_is_an_error(tmp_path):
    _write(tmp_path, '{"q": {"a": {"count": 5}}}', '{"a": {"title": "T"}, "a": {"title": "U"}}')
    with pytest.raises(DataError, match=r"metadata.json.*'a'.*duplicate"):
        read_specter_dir(tmp_path)


def test_missing_count_names_the_query(tmp_path):
    _write(tmp_path, '{"q": {"a": {"cnt": 5}}}')
    with pytest.raises(DataError, match=r"data.json.*'q'.*count"):
        read_specter_dir(tmp_path)


def test_missing_title_names_the_paper(tmp_path):
    _write(tmp_path, '{"q": {"a": {"count": 5}}}', '{"a": {"abstract": "x"}}')
    with pytest.raises(DataError, match=r"metadata.json.*'a'.*title"):
        read_specter_dir(tmp_path)


def test_empty_corpus_is_an_error(tmp_path):
    _write(tmp_path, "{}")
    with pytest.raises(DataError, match=r"data.json.*empty"):
        read_specter_dir(tmp_path)


def test_non_utf8_names_file_and_line(tmp_path):
    _write(tmp_path, '{"q": {"a": {"count": 5}}}', '{\n"a": {"title": "caf\xe9"}}')
    (tmp_path / "metadata.json").write_bytes(b'{\n"a": {"title": "caf\xe9"}}')
    with pytest.raises(DataError, match=r"metadata.json:2.*UTF-8"):
        read_specter_dir(tmp_path)


def test_candidates_without_metadata_are_counted(tmp_path):
    _write(tmp_path, '{"q": {"a": {"count": 5}, "zz": {"count": 1}}}')
    data = read_specter_dir(tmp_path)
    assert data.report.counts["candidate_without_metadata"] == 1
    assert data.report.examples["candidate_without_metadata"] == ["zz"]
    assert data.report.counts["query_without_metadata"] == 1


def test_duplicate_id_in_split_names_the_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("q\na\nq\n")
    with pytest.raises(DataError, match=r"train.txt:3.*'q'"):
        read_split(path)


def test_one_metadata_reader_keeps_untitled_papers_and_only_training_drops_them(tmp_path):
    import json

    from specter_utils.data.records import ReadReport, read_paper_file
    from specter_utils.data.scidocs import read_scidocs_metadata
    from specter_utils.embedding.inputs import read_metadata_files

    path = tmp_path / "metadata.json"
    records = {"a": {"paper_id": "a", "title": " A title ", "abstract": None}, "b": {"title": "", "abstract": "x"}}
    path.write_text(json.dumps(records))
    report = ReadReport()
    papers = read_paper_file(path, report)
    assert set(papers) == {"a", "b"} and papers["a"].title == "A title" and papers["a"].abstract == ""
    assert report.counts["empty_title"] == 1 and report.counts["empty_abstract"] == 1
    assert set(read_metadata_files([path])) == {"a", "b"}  # embedding: every paper gets a vector
    assert set(read_scidocs_metadata(path)) == {"a", "b"}  # evaluation: as stored
    training = ReadReport()
    assert set(read_metadata(path, training)) == {"a"}  # SPECTER training data drops the untitled paper
    assert training.counts["no_title_dropped"] == 1


@pytest.mark.parametrize("bad", ["a b", "\u00a0x", "x\u2003", "x\x1c", ""])
def test_a_candidate_id_with_whitespace_names_its_query(tmp_path, bad):
    (tmp_path / "data.json").write_text(json.dumps({"q1": {"ok": {"count": 5}, bad: {"count": 1}}}))
    with pytest.raises(DataError, match="candidate id of query 'q1' is empty or contains whitespace"):
        read_graph(tmp_path / "data.json")


def test_the_fast_id_check_agrees_with_str_isspace_on_every_character():
    odd = [chr(c) for c in range(0x3000 + 1) if is_plain_id(f"a{chr(c)}b") != (not chr(c).isspace())]
    assert odd == [] and is_plain_id("a") and not is_plain_id("") and not is_plain_id(5)
