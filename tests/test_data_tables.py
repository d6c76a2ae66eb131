"""Tables reader: papers table or aligned one-column files plus an edges table (by row or by id), tiny inputs
written in tmp_path (good and malformed), detection, the command line, and the real arXiv-2023 files."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from test_cli_errors import call, fails, leftovers

from specter_utils.data.load import detect_corpus_kind, load_corpus
from specter_utils.data.tables import read_tables
from specter_utils.errors import DataError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def aligned(folder: Path, titles: int = 4, edges: str = "source,target\n0,1\n2,1\n3,3\n") -> Path:
    """PyG style: ids, titles (one with a comma, quoted), labels, edges by row index; row 3 cites itself."""
    write(folder / "ids.csv.gz", "ids\n2304.1\n2304.2\n2304.3\n2304.4\n")
    rows = ['"Causal models, in string diagrams"', "Graph Nets", "Attention", "Diffusion"][:titles]
    write(folder / "titles.csv.gz", "titles\n" + "\n".join(rows) + "\n")
    write(folder / "labels.csv.gz", "labels\ncs.LO\ncs.LG\ncs.CL\ncs.LG\n")
    write(folder / "edges.csv.gz", edges)
    return folder


def papers_table(folder: Path, edges: str = "citing,cited\nb,a\nc,a\n") -> Path:
    write(
        folder / "papers.csv",
        "id,title,abstract,label\na,First Paper,An abstract.,DB\nb,Second Paper,,IR\nc,Third,Text.,\nd,,No title.,DB\n",
    )
    write(folder / "edges.csv", edges)
    return folder


def test_aligned_files_edges_by_row(tmp_path):
    corpus = read_tables(aligned(tmp_path / "t"))
    assert corpus.name == "tables" and corpus.info["layout"] == "aligned columns" and corpus.info["edges_by"] == "row"
    assert corpus.papers["2304.1"].title == "Causal models, in string diagrams"
    assert corpus.edges == [("2304.1", "2304.2"), ("2304.3", "2304.2")]
    assert corpus.labels()["2304.4"] == "cs.LG" and len(set(corpus.labels().values())) == 3
    assert corpus.report.counts == Counter({"self_link_dropped": 1})


def test_aligned_files_without_ids_use_the_row_number_and_cited_first_order(tmp_path):
    folder = aligned(tmp_path / "t")
    (folder / "ids.csv.gz").unlink()
    corpus = read_tables(folder, edge_order="cited-citing")
    assert sorted(corpus.papers) == ["0", "1", "2", "3"]
    assert corpus.edges == [("1", "0"), ("1", "2")]


def test_papers_table_edges_by_id(tmp_path):
    corpus = read_tables(papers_table(tmp_path / "t"))
    assert corpus.info["layout"] == "papers table" and corpus.info["edges_by"] == "id"
    assert corpus.edges == [("b", "a"), ("c", "a")]
    assert corpus.labels() == {"a": "DB", "b": "IR"}
    assert corpus.report.counts == Counter({"no_title_dropped": 1, "no_label": 1})


def test_parquet_papers_table_and_manifest_with_other_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "t"
    folder.mkdir()
    table = {"paper_id": ["x", "y", "z"], "name": ["X Paper", "Y Paper", "Z Paper"], "topic": ["A", "B", "A"]}
    pq.write_table(pa.table(table), folder / "nodes.parquet")
    pq.write_table(pa.table({"src": [0, 2], "dst": [1, 1]}), folder / "links.parquet")
    manifest = {
        "papers": "nodes.parquet",
        "edges": "links.parquet",
        "edges_by": "row",
        "column_names": {"id": "paper_id", "title": "name", "label": "topic"},
    }
    write(folder / "tables.json", json.dumps(manifest))
    assert detect_corpus_kind(folder) == "tables" and detect_corpus_kind(folder / "tables.json") == "tables"
    corpus = load_corpus("tables", folder / "tables.json")
    assert corpus.edges == [("x", "y"), ("z", "y")] and corpus.labels() == {"x": "A", "y": "B", "z": "A"}
    assert corpus.label_field == "topic"


@pytest.mark.parametrize(
    ("make", "where", "what"),
    [
        (lambda f: aligned(f, titles=3), "ids.csv.gz:5", "no counterpart in titles.csv.gz"),
        (lambda f: aligned(f, edges="source,target\n0,1\n0,9\n"), "edges.csv.gz:3", "row index 9"),
        (lambda f: aligned(f, edges="source,target\n0,1\n0,x\n"), "edges.csv.gz:3", "not a non-negative integer"),
        (lambda f: aligned(f, edges="source,target\n0,1,2\n"), "edges.csv.gz:2", "field(s)"),
        (lambda f: papers_table(f, edges="citing,cited\nb,a\nb,zz\n"), "edges.csv:3", "'zz'"),
        (lambda f: write(papers_table(f) / "papers.csv", "id,title\na,T\na,U\n").parent, "papers.csv:3", "duplicate"),
        (lambda f: write(papers_table(f) / "papers.csv", "id,title\na,T\nb\n").parent, "papers.csv:3", "1 field"),
        (lambda f: write(papers_table(f) / "papers.csv", "id,name\na,T\n").parent, "papers.csv:1", "'title'"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, make, where, what):
    folder = make(tmp_path / "t")
    with pytest.raises(DataError) as err:
        read_tables(folder)
    assert where in str(err.value) and what in str(err.value), str(err.value)


def test_unknown_papers_dropped_on_request(tmp_path):
    corpus = read_tables(aligned(tmp_path / "t", edges="source,target\n0,1\n0,9\n"), unknown="drop")
    assert corpus.edges == [("2304.1", "2304.2")] and corpus.report.counts["edge_to_unknown_paper"] == 1


def test_edges_by_id_on_aligned_files_says_what_to_do(tmp_path):
    with pytest.raises(DataError, match="--edges-by row"):
        read_tables(aligned(tmp_path / "t"), edges_by="id")


def test_ambiguous_and_unknown_folders(tmp_path):
    folder = papers_table(tmp_path / "t")
    write(folder / "titles.csv", "titles\nA\n")
    with pytest.raises(DataError, match="say which with a tables.json"):
        read_tables(folder)
    with pytest.raises(DataError, match="cannot tell the corpus kind"):
        detect_corpus_kind(tmp_path)


def test_real_arxiv2023_reads_through_the_aligned_layout(shared_data):
    src = shared_data / "arxiv2023"
    if not (src / "titles.csv.gz").exists():
        pytest.skip(f"arXiv-2023 files not found under {src}")
    corpus = load_corpus(None, src, edges_by="row")
    assert corpus.name == "tables" and len(corpus.papers) == 33_868
    assert len(corpus.edges) == 305_672 - 17 and corpus.report.counts == Counter({"self_link_dropped": 17})
    assert len(set(corpus.labels().values())) == 39
    assert all(not paper.abstract for paper in corpus.papers.values())


# ---------------------------------------------------------------- the command line
def test_data_stats_and_convert(tmp_path, capsys):
    src = papers_table(tmp_path / "t")
    code, out, err = call(["data", "stats", str(src)], capsys)
    assert code == 0 and "(tables)" in out and "classes: 2" in out, err
    code, out, err = call(
        ["data", "convert", "--src", str(src), "--edges-by", "id", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 0 and (tmp_path / "o" / "data.json").exists(), err


def shorter_labels(folder: Path) -> Path:
    """Aligned files whose labels file ends one row early (row 3 of ids and titles has no label)."""
    aligned(folder)
    write(folder / "labels.csv.gz", "labels\ncs.LO\ncs.LG\ncs.CL\n")
    return folder


def longer_titles(folder: Path) -> Path:
    """Aligned files whose titles file has one row more than the ids and labels."""
    aligned(folder)
    write(folder / "titles.csv.gz", "titles\nA\nB\nC\nD\nE\n")
    return folder


@pytest.mark.parametrize(
    ("make", "where", "what"),
    [
        (lambda f: aligned(f, titles=3), "ids.csv.gz:5", "no counterpart in titles.csv.gz"),
        (shorter_labels, "ids.csv.gz:5", "no counterpart in labels.csv.gz"),
        (longer_titles, "titles.csv.gz:6", "no counterpart in ids.csv.gz, which ends after 4 rows"),
        (lambda f: aligned(f, edges="source,target\n0,1\n0,9\n"), "edges.csv.gz:3", "row index 9"),
        (lambda f: papers_table(f, edges="citing,cited\nb,a\nb,zz\n"), "edges.csv:3", "'zz'"),
    ],
)
@pytest.mark.parametrize("command", ["build-benchmark", "data convert", "data stats"])
def test_cli_one_line_error_and_nothing_left(tmp_path, capsys, make, where, what, command):
    """Bad input: one error line naming file and line, exit 2, no traceback, no output folder or temporary left."""
    src = make(tmp_path / "t")
    out = tmp_path / "out"
    if command == "data stats":
        argv = ["data", "stats", str(src)]
    else:
        argv = [*command.split(), "--corpus", "tables", "--src", str(src), "--out", str(out)]
    fails(argv, capsys, where, what)
    assert not out.exists() and leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_cli_unknown_papers_drop_in_data_stats(tmp_path, capsys):
    src = aligned(tmp_path / "t", edges="source,target\n0,1\n0,9\n")
    code, out, err = call(["data", "stats", str(src), "--unknown-papers", "drop"], capsys)
    assert code == 0 and "edge_to_unknown_paper: 1" in out and "edges: 1" in out, err


def test_cli_flags_that_do_not_apply(tmp_path, capsys):
    fails(
        ["build-benchmark", "--corpus", "citeseer", "--edges-by", "row", "--out", str(tmp_path / "o")],
        capsys,
        "--edges-by",
    )
    fails(
        ["build-benchmark", "--corpus", "synthetic", "--unknown-papers", "drop", "--out", str(tmp_path / "o")], capsys
    )
    assert not (tmp_path / "o").exists()
