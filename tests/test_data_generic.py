"""Bring your own corpus: the generic record format, OpenAlex works, S2ORC labels, detection and the CLI flags."""

from __future__ import annotations

import gzip
import json

import pytest

from specter_utils.benchmark.build import build_benchmark
from specter_utils.cli import main
from specter_utils.corpus_config import BenchmarkConfig
from specter_utils.data.export import export_corpus
from specter_utils.data.generic import read_any_paper_file, read_generic
from specter_utils.data.load import detect_corpus_kind, load_corpus
from specter_utils.data.openalex import normalise_openalex_id, read_openalex
from specter_utils.data.s2orc import read_s2orc
from specter_utils.data.synthetic import generate_synthetic_corpus
from specter_utils.errors import DataError
from specter_utils.io import read_json


def _rec(pid, refs=(), **fields):
    row = {"paper_id": pid, "title": f"Paper {pid}", "abstract": "Words.", "references": list(refs)}
    row.update(fields)
    return row


def _write(path, rows, gz=False):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


ROWS = [
    _rec("a", ["b", "c", "zz"], labels=["Physics", "Math"], year=2001, authors=["A. B"]),
    _rec("b", ["c"], labels=["Biology"]),
    _rec("c", [], labels=None, venue="J"),
]


@pytest.mark.parametrize("suffix", ["jsonl", "jsonl.gz", "parquet"])
def test_generic_reads_every_container(tmp_path, suffix):
    path = tmp_path / f"c.{suffix}"
    if suffix == "parquet":
        import pandas as pd

        pd.DataFrame(ROWS).to_parquet(path)
    else:
        _write(path, ROWS, gz=suffix.endswith("gz"))
    corpus = read_generic(path)
    assert sorted(corpus.papers) == ["a", "b", "c"]
    assert sorted(corpus.edges) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert corpus.report.counts["unknown_reference"] == 1  # a -> zz: counted and dropped
    assert corpus.label_lists() == {"a": ["Physics", "Math"], "b": ["Biology"]}
    assert corpus.labels("first") == {"a": "Physics", "b": "Biology"}
    assert corpus.labels("exactly-one") == {"b": "Biology"}
    assert corpus.report.counts["no_label"] == 1 and not corpus.synthetic
    assert detect_corpus_kind(path) == "jsonl"


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ('{"paper_id": "x", "title": ', r"c.jsonl:2: invalid JSON"),
        (json.dumps({"paper_id": "x", "title": "T", "abstract": ""}), r"c.jsonl:2 \(id 'x'\).*'references'"),
        (json.dumps(_rec("x", labels=["ok", " "])), r"c.jsonl:2 \(id 'x'\): empty label"),
        (json.dumps(_rec("x", references="b")), r"c.jsonl:2 \(id 'x'\).*must be a list"),
        (json.dumps(_rec("a")), r"c.jsonl:2 \(id 'a'\): duplicate paper_id"),
    ],
)
def test_generic_malformed_names_file_line_and_id(tmp_path, line, match):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(_rec("a")) + "\n" + line + "\n")
    with pytest.raises(DataError, match=match):
        read_generic(path)


def test_unknown_reference_can_be_an_error(tmp_path):
    path = _write(tmp_path / "c.jsonl", [_rec("a"), _rec("b", ["nope"])])
    with pytest.raises(DataError, match=r"c.jsonl:2 \(id 'b'\): cites unknown paper id 'nope'"):
        read_generic(path, dangling="error")


def test_openalex_round_trip_and_labels(tmp_path):
    corpus = generate_synthetic_corpus(n_papers=40, n_topics=2, seed=1)
    path = tmp_path / "part_000.gz"  # as the OpenAlex snapshot names its gzipped JSON Lines
    export_corpus(corpus, "openalex", path)
    assert detect_corpus_kind(path) == "openalex"
    works = read_openalex(path)
    first = next(iter(corpus.papers.values()))
    assert works.papers["W1"].abstract == " ".join(first.abstract.split())  # rebuilt from the inverted index
    assert works.papers["W1"].title == first.title and works.synthetic  # every record says synthetic
    assert len(works.edges) == len(corpus.edges)
    assert set(works.labels().values()) == set(corpus.labels().values())  # topic fields
    assert normalise_openalex_id("https://openalex.org/works/w42") == "W42"


def test_openalex_concepts_when_no_topics_and_malformed(tmp_path):
    work = {
        "id": "https://openalex.org/W1",
        "title": "T",
        "referenced_works": ["https://openalex.org/W2"],
        "abstract_inverted_index": {"world": [1], "Hello": [0]},
        "concepts": [{"display_name": "Fine", "level": 2, "score": 0.9}, {"display_name": "Biology", "level": 0}],
    }
    path = _write(tmp_path / "w.jsonl", [work])
    corpus = read_openalex(path)
    assert corpus.papers["W1"].abstract == "Hello world"
    assert corpus.label_lists() == {"W1": ["Biology"]}
    assert corpus.report.counts["unknown_reference"] == 1
    for bad, match in [
        ({**work, "abstract_inverted_index": {"x": "0"}}, r"w.jsonl:1 \(id 'W1'\).*positions"),
        ({k: v for k, v in work.items() if k != "referenced_works"}, r"w.jsonl:1.*'referenced_works'"),
        ({**work, "id": "nonsense"}, r"w.jsonl:1: not an OpenAlex id"),
        ({**work, "topics": [{"display_name": "t", "field": {"display_name": ""}}]}, r"\(id 'W1'\): empty label"),
    ]:
        _write(path, [bad])
        with pytest.raises(DataError, match=match):
            read_openalex(path)


def test_s2orc_fields_of_study_are_labels(tmp_path):
    rows = [
        {"paper_id": "1", "title": "A", "mag_field_of_study": ["Medicine", "Biology"], "outbound_citations": ["2"]},
        {"paper_id": "2", "title": "B", "mag_field_of_study": None, "outbound_citations": []},
    ]
    path = _write(tmp_path / "s.jsonl", rows)
    assert detect_corpus_kind(path) == "s2orc"
    corpus = read_s2orc(path)
    assert corpus.label_field == "fields_of_study" and corpus.labels() == {"1": "Medicine"}
    assert read_s2orc(path, label_field="venue").labels() == {}
    _write(path, [{**rows[0], "mag_field_of_study": [""]}])
    with pytest.raises(DataError, match=r"s.jsonl:1 \(id '1'\): empty label"):
        read_s2orc(path)


def test_ambiguous_file_needs_corpus(tmp_path):
    path = _write(tmp_path / "x.jsonl", [{"paper_id": "1", "references": [], "outbound_citations": []}])
    with pytest.raises(DataError, match="--corpus"):
        detect_corpus_kind(path)


def test_embed_reads_generic_records(tmp_path):
    path = _write(tmp_path / "p.jsonl", [{"paper_id": 7, "title": "T", "abstract": None}, _rec("a", ["7"])])
    papers = read_any_paper_file(path)
    assert papers["7"].title == "T" and papers["a"].extras["references"] == ["7"]


def test_benchmark_records_the_label_rule_and_why_classification_is_absent(tmp_path):
    corpus = generate_synthetic_corpus(n_papers=120, n_topics=3, seed=0)
    path = tmp_path / "c.jsonl"
    export_corpus(corpus, "jsonl", path)
    info = build_benchmark(
        load_corpus(None, path), tmp_path / "b", n_queries=10, config=BenchmarkConfig(multi_label="exactly-one")
    )
    assert info["counts"]["mag"]["classes"] == 3 and info["synthetic"]
    assert info["counts"]["mag"]["labels"]["multi_label"] == "exactly-one"
    assert info["read_oddities"] == {}
    unlabelled = load_corpus("jsonl", path, label_field="no_such_field")
    info = build_benchmark(unlabelled, tmp_path / "u", n_queries=10)
    assert info["counts"]["mag"]["classes"] == 0 and info["counts"]["cite"]["queries"] > 0
    assert "no paper with a title has a label in field 'no_such_field'" in info["slots"]["mag"]
    assert read_json(tmp_path / "u" / "benchmark.json")["counts"]["mag"]["absent_because"]


def test_cli_flags_that_do_not_apply(tmp_path, capsys):
    assert main(["build-benchmark", "--corpus", "synthetic", "--src", "x.jsonl", "--out", str(tmp_path)]) == 2
    assert "--src does not apply" in capsys.readouterr().err
    assert main(["build-benchmark", "--corpus", "hepth", "--label-field", "labels", "--out", str(tmp_path)]) == 2
    assert "does not apply" in capsys.readouterr().err
    assert main(["data", "convert", "--corpus", "synthetic", "--src", "x.jsonl", "--out", str(tmp_path)]) == 2
    assert "--src does not apply" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
