"""SciRepEval sample readers on the real files and on malformed ones."""

from __future__ import annotations

import json

import pytest

from specter_utils.data.records import ReadReport
from specter_utils.data.scirepeval import read_fos, read_label_names, read_mesh, read_specter_triplets
from specter_utils.errors import DataError


@pytest.fixture(scope="module")
def scirepeval_dir(shared_data):
    path = shared_data / "scirepeval"
    if not (path / "specter_small.json").exists():
        pytest.skip(f"SciRepEval samples not found under {path}")
    return path


def test_specter_triplets(scirepeval_dir):
    report = ReadReport()
    triples, papers = read_specter_triplets(scirepeval_dir / "specter_small.json", report)
    assert len(triples) == 200
    assert len(papers) == 596
    query, pos, neg = triples[0]
    assert query.paper_id == "12871252"
    assert query.title == "The Effect of Aesthetic on the Usability of Data Visualization"
    assert query.extras["sha"] == "d15ca38d2fb1250222132b5bf3fed8d249bcac45"
    assert pos.title.startswith("Aesthetics and Apparent Usability")
    assert neg.paper_id in papers
    assert report.counts["null_or_empty_abstract"] == 16


def test_fos(scirepeval_dir):
    fos = read_fos(scirepeval_dir / "fos_small.json")
    assert len(fos.papers) == 205
    assert len(fos.label_names) == 23 and fos.label_names[16] == "Mathematics"
    assert fos.labels()["121676082"] == ["Mathematics"]
    assert sum(1 for labels in fos.labels().values() if len(labels) > 1) == 32
    assert fos.report.counts["multi_label"] == 32


def test_mesh(scirepeval_dir):
    mesh = read_mesh(scirepeval_dir / "mesh_small.json")
    assert len(mesh.papers) == 206
    assert len(mesh.label_names) == 30  # the descriptor file has no final newline
    assert mesh.labels()["7571069"] == ["Liver Neoplasms"]
    assert len({labels[0] for labels in mesh.labels().values()}) == 30
    assert all(p.extras["qualifier"] for p in mesh.papers.values())


def _paper(cid, title=None, abstract="A."):
    return {"corpus_id": cid, "title": title or f"Paper {cid}", "abstract": abstract}


def test_triplet_missing_role_is_an_error(tmp_path):
    path = tmp_path / "triplets.json"
    path.write_text(json.dumps([{"query": _paper(1), "pos": _paper(2)}]))
    with pytest.raises(DataError, match=r"triplets.json.*record 0.*'neg'"):
        read_specter_triplets(path)


def test_triplet_same_id_two_titles_names_the_id(tmp_path):
    path = tmp_path / "triplets.json"
    rows = [
        {"query": _paper(1), "pos": _paper(2), "neg": _paper(3)},
        {"query": _paper(1, "Another title"), "pos": _paper(2), "neg": _paper(3)},
    ]
    path.write_text(json.dumps(rows))
    with pytest.raises(DataError, match=r"triplets.json \(id '1'\).*record 1"):
        read_specter_triplets(path)


def test_triplet_paper_without_title_names_the_id(tmp_path):
    path = tmp_path / "triplets.json"
    path.write_text(json.dumps([{"query": _paper(1), "pos": {"corpus_id": 2}, "neg": _paper(3)}]))
    with pytest.raises(DataError, match=r"\(id '2'\).*record 0 pos.*'title'"):
        read_specter_triplets(path)


def test_repeated_triplets_are_counted(tmp_path):
    path = tmp_path / "triplets.json"
    row = {"query": _paper(1), "pos": _paper(2), "neg": _paper(3)}
    path.write_text(json.dumps([row, row]))
    report = ReadReport()
    triples, papers = read_specter_triplets(path, report)
    assert len(triples) == 2 and len(papers) == 3
    assert report.counts["repeated_triplet"] == 1


def test_empty_and_invalid_files(tmp_path):
    path = tmp_path / "triplets.json"
    path.write_text("[]")
    with pytest.raises(DataError, match="empty corpus"):
        read_specter_triplets(path)
    path.write_text('[\n{"query": ]')
    with pytest.raises(DataError, match=r"triplets.json:2.*invalid JSON"):
        read_specter_triplets(path)
    path.write_bytes(b'[{"query": {"title": "\xff"}}]')
    with pytest.raises(DataError, match=r"triplets.json:1.*UTF-8"):
        read_specter_triplets(path)


def test_fos_label_out_of_range_and_duplicates(tmp_path):
    (tmp_path / "fos_labels.txt").write_text("Art\nBiology\n")
    path = tmp_path / "fos_small.json"
    path.write_text(json.dumps([{**_paper(7), "labels": [5]}]))
    with pytest.raises(DataError, match=r"fos_small.json \(id '7'\).*label 5"):
        read_fos(path)
    path.write_text(json.dumps([{**_paper(7), "labels": [0]}, {**_paper(7), "labels": [1]}]))
    with pytest.raises(DataError, match=r"\(id '7'\).*duplicate"):
        read_fos(path)
    path.write_text(json.dumps([{**_paper(7), "labels": [0], "labels_text": ["Biology"]}]))
    with pytest.raises(DataError, match=r"\(id '7'\).*disagrees"):
        read_fos(path)


def test_mesh_unknown_descriptor_names_the_id(tmp_path):
    (tmp_path / "mesh_descriptors.txt").write_text("Brain\nLiver")
    path = tmp_path / "mesh_small.json"
    path.write_text(json.dumps([{**_paper(9), "descriptor": "Heart", "qualifier": "surgery"}]))
    with pytest.raises(DataError, match=r"mesh_small.json \(id '9'\).*'Heart'"):
        read_mesh(path)


def test_repeated_label_name_names_the_line(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("Art\nBiology\nArt\n")
    with pytest.raises(DataError, match=r"labels.txt:3.*'Art'.*line 1"):
        read_label_names(path)
