"""CiteSeer reader: tiny folders written in tmp_path (good and malformed), the bundled copy, the real files."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from test_cli_errors import call, fails, leftovers

from specter_utils.data.citeseer import (
    bundled_dir,
    keys_without_text,
    read_citeseer,
    split_title_abstract,
)
from specter_utils.data.load import detect_corpus_kind, load_corpus
from specter_utils.errors import DataError

TEXTS = [
    ("p1", "Argument in Multi-Agent Systems Multi-agent systems research is concerned with societies.", "Agents"),
    ("p2", "Decomposition in Data Mining: An Industrial Case Study Data mining offers tools.", "ML"),
    ("p3", "Exploration versus Exploitation in Topic Driven Crawlers Topic driven crawlers are seen.", "IR"),
    ("p4", "ALL CAPS TEXT WITH NO ABSTRACT", "DB"),
]


def write_citeseer(folder: Path, texts=TEXTS, cites: str | None = None, gz: bool = False) -> Path:
    """A CiteSeer folder: the texts in 3-line blocks and ``cites`` (default: p2 and p3 cite p1, p1 cites itself)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n".join(line for block in texts for line in block) + "\n"
    cites = "p1\tp2\np1\tp3\np1\tp1\n" if cites is None else cites
    for name, content in (("citeseer_texts.txt", text), ("citeseer.cites", cites)):
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(content.encode()))
        else:
            (folder / name).write_text(content, encoding="utf-8")
    return folder


@pytest.mark.parametrize("gz", [False, True])
def test_reads_papers_labels_and_edges_cited_first(tmp_path, gz):
    corpus = read_citeseer(write_citeseer(tmp_path / "c", gz=gz))
    assert corpus.name == "citeseer" and corpus.label_field == "topic" and not corpus.synthetic
    assert sorted(corpus.edges) == [("p2", "p1"), ("p3", "p1")]  # the file says CITED<TAB>CITING
    assert corpus.labels() == {"p1": "Agents", "p2": "ML", "p3": "IR", "p4": "DB"}
    assert corpus.papers["p1"].title == "Argument in Multi-Agent Systems"
    assert corpus.papers["p1"].abstract.startswith("Multi-agent systems research")
    assert corpus.papers["p2"].title == "Decomposition in Data Mining: An Industrial Case Study"
    assert corpus.papers["p4"].title == "ALL CAPS TEXT WITH NO ABSTRACT" and corpus.papers["p4"].abstract == ""
    assert corpus.report.counts == Counter({"self_link_dropped": 1, "text_not_split": 1})


@pytest.mark.parametrize(
    ("text", "title"),
    [
        (
            "Contextual Rules for Text Analysis In this paper we describe a formalism.",
            "Contextual Rules for Text Analysis",
        ),
        ("Violations and Independence this paper we discuss deontic logic.", "Violations and Independence"),
        ("Through Bipartite Graphs The Web harbors a large number of communities.", "Through Bipartite Graphs"),
        ("lowercase start of a text with no title case at all", None),
        ("A Title In Title Case To The End", None),
    ],
)
def test_title_abstract_split(text, title):
    split = split_title_abstract(text)
    if title is None:
        assert split is None
    else:
        assert split[0] == title and f"{split[0]} {split[1]}" == text


@pytest.mark.parametrize(
    ("texts", "cites", "where", "what"),
    [
        (TEXTS[:3] + [("p4", "Some Title Words then an abstract.")], None, ":10", "not a multiple of 3"),
        (TEXTS, "p1\tp2\np1\tnobody\n", "citeseer.cites:2", "'nobody'"),
        (TEXTS, "p1\tp2\np1 p3\n", "citeseer.cites:2", "CITED<TAB>CITING"),
        (TEXTS, "p1\tp2\np1\tp2\n", "citeseer.cites:2", "repeats line 1"),
        (TEXTS + [("p1", "A Title Again the abstract.", "ML")], None, ":13", "duplicate paper key"),
        ([("p1", "A Title the abstract.", "two words")], None, ":3", "label line"),
        ([("p 1", "A Title the abstract.", "ML")], None, ":1", "paper key"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, texts, cites, where, what):
    texts = [block for block in texts if len(block) == 3] + [block for block in texts if len(block) == 2]
    folder = write_citeseer(tmp_path / "c", texts=texts, cites=cites)
    with pytest.raises(DataError) as err:
        read_citeseer(folder)
    assert where in str(err.value) and what in str(err.value), str(err.value)


def test_keys_cited_without_text_are_counted_and_other_unknown_keys_dropped_on_request(tmp_path):
    known_gap = sorted(keys_without_text())[0]
    folder = write_citeseer(tmp_path / "c", cites=f"p1\tp2\n{known_gap}\tp3\np1\tnobody\n")
    with pytest.raises(DataError, match="citeseer.cites:3"):
        read_citeseer(folder)
    corpus = read_citeseer(folder, unknown="drop")
    assert corpus.edges == [("p2", "p1")]
    assert corpus.report.counts["edge_to_key_without_text"] == 1
    assert corpus.report.counts["edge_to_unknown_key"] == 1


def test_detection_and_bundled_default(tmp_path):
    assert detect_corpus_kind(write_citeseer(tmp_path / "c")) == "citeseer"
    assert detect_corpus_kind(bundled_dir()) == "citeseer"
    corpus = load_corpus("citeseer")  # no source: the copy shipped in the package
    assert corpus.info["bundled"] and len(corpus.papers) == 3_186 and len(corpus.edges) == 4_277
    with pytest.raises(ValueError, match="only labels are its 6 topics"):
        load_corpus("citeseer", label_field="venue")


def test_bundled_copy_is_small_and_has_its_licence():
    files = {p.name: p.stat().st_size for p in bundled_dir().iterdir()}
    assert {"citeseer_texts.txt.gz", "citeseer.cites.gz", "keys_without_text.txt", "README.md"} <= set(files)
    assert sum(files.values()) < 1_300_000
    readme = (bundled_dir() / "README.md").read_text()
    assert "MIT License" in readme and "Sen" in readme


def test_real_files_read_cleanly(shared_data):
    src = shared_data / "citeseer"
    if not (src / "citeseer_texts.txt").exists():
        pytest.skip(f"CiteSeer files not found under {src}")
    corpus = read_citeseer(src)
    assert len(corpus.papers) == 3_186 and len(corpus.edges) == 4_277
    assert Counter(corpus.labels().values()) == Counter(
        {"DB": 685, "IR": 641, "ML": 569, "Agents": 562, "HCI": 490, "AI": 239}
    )
    counts = corpus.report.counts
    assert counts["edge_to_key_without_text"] + counts["self_link_dropped"] + len(corpus.edges) == 4_732
    assert sum(1 for p in corpus.papers.values() if p.abstract) > 0.95 * 3_186


# ---------------------------------------------------------------- the command line
def test_data_stats_on_a_citeseer_folder(tmp_path, capsys):
    src = write_citeseer(tmp_path / "c")
    code, out, err = call(["data", "stats", str(src)], capsys)
    assert code == 0 and "(citeseer)" in out and "classes: 4" in out, err


def test_build_benchmark_on_the_bundled_copy_has_6_classes(tmp_path, capsys):
    code, out, err = call(["build-benchmark", "--corpus", "citeseer", "--out", str(tmp_path / "b")], capsys)
    assert code == 0, err
    benchmark = json.loads((tmp_path / "b" / "benchmark.json").read_text())
    assert benchmark["counts"]["mag"]["classes"] == 6 and benchmark["counts"]["mag"]["labels"]["field"] == "topic"


@pytest.mark.parametrize(
    ("cites", "texts", "where", "what"),
    [
        ("p1\tp2\np1\tnobody\n", TEXTS, "citeseer.cites:2", "'nobody'"),
        (None, TEXTS + [("p5", "A Title the abstract.")], "citeseer_texts.txt:13", "14 lines is not a multiple of 3"),
        (None, TEXTS + [("p5",)], "citeseer_texts.txt:13", "no text or label line"),
    ],
)
@pytest.mark.parametrize("command", ["build-benchmark", "data convert", "data stats"])
def test_cli_one_line_error_and_nothing_left(tmp_path, capsys, cites, texts, where, what, command):
    """Bad input: one error line naming file and line, exit 2, no traceback, no output folder or temporary left."""
    texts = [b for b in texts if len(b) == 3] + [b for b in texts if len(b) < 3]
    src = write_citeseer(tmp_path / "c", texts=texts, cites=cites)
    out = tmp_path / "out"
    if command == "data stats":
        argv = ["data", "stats", str(src)]
    else:
        argv = [*command.split(), "--corpus", "citeseer", "--src", str(src), "--out", str(out)]
    fails(argv, capsys, where, what)
    assert not out.exists() and leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_cli_unknown_papers_drop_counts_the_lines(tmp_path, capsys):
    """--unknown-papers drop: the unknown key's line is counted and dropped, by every command that reads a corpus."""
    src = write_citeseer(tmp_path / "c", cites="p1\tp2\np1\tp3\np1\tnobody\n")
    code, out, err = call(["data", "stats", str(src), "--unknown-papers", "drop"], capsys)
    assert code == 0 and "edge_to_unknown_key: 1 (e.g. nobody)" in out and "edges: 2" in out, err
    argv = ["data", "convert", "--corpus", "citeseer", "--src", str(src), "--unknown-papers", "drop"]
    code, out, err = call([*argv, "--out", str(tmp_path / "o")], capsys)
    assert code == 0 and "edge_to_unknown_key" in out + err, out + err
    fails(["data", "stats", str(src), "--edges-by", "row"], capsys, "--edges-by applies to tables corpora only")
