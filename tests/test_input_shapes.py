"""Paper files as a JSON object, a JSON list or JSONL; embeddings keyed by paper_id or doc_id; else one clear line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specter_utils.cli import main
from specter_utils.data.generic import read_any_paper_file
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError

PAPERS = [
    {"paper_id": "a1", "title": "Citation embeddings", "abstract": "We embed papers."},
    {"paper_id": "b2", "title": "Graph neighbours", "abstract": ""},
]


def _titles(path) -> dict[str, tuple[str, str]]:
    return {pid: (p.title, p.abstract) for pid, p in read_any_paper_file(path).items()}


def test_a_json_object_a_json_list_and_jsonl_read_alike(tmp_path) -> None:
    keyed, listed, by_doc_id, lines = (tmp_path / n for n in ("k.json", "l.json", "d.json", "p.jsonl"))
    keyed.write_text(json.dumps({p["paper_id"]: p for p in PAPERS}))
    listed.write_text(json.dumps(PAPERS))
    by_doc_id.write_text(
        json.dumps([{"doc_id": p["paper_id"], **{k: p[k] for k in ("title", "abstract")}} for p in PAPERS])
    )
    lines.write_text("".join(json.dumps(p) + "\n" for p in PAPERS))
    expected = {"a1": ("Citation embeddings", "We embed papers."), "b2": ("Graph neighbours", "")}
    assert _titles(keyed) == _titles(listed) == _titles(by_doc_id) == _titles(lines) == expected


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('"just a string"', "got a JSON str"),
        ("[1, 2]", "item 0 of the list is not a paper object"),
        ('[{"title": "no id"}]', "item 0 of the list has no paper_id or doc_id"),
        ('[{"paper_id": "x", "title": "t"}, {"doc_id": "x", "title": "u"}]', "item 1 of the list repeats the id"),
    ],
)
def test_any_other_shape_is_one_error_naming_the_file_and_the_shapes(tmp_path, content, words) -> None:
    path = tmp_path / "papers.json"
    path.write_text(content)
    with pytest.raises(DataError) as caught:
        read_any_paper_file(path)
    message = str(caught.value)
    assert str(path) in message and words in message
    if "got a JSON" in words:
        assert "a JSON list of paper objects" in message and "JSONL" in message


def test_embeddings_keyed_by_doc_id_read_and_index(tmp_path, capsys) -> None:
    vectors = np.random.default_rng(0).normal(size=(3, 4)).round(4)
    by_doc, by_paper = tmp_path / "doc.jsonl", tmp_path / "paper.jsonl"
    by_doc.write_text(
        "".join(json.dumps({"doc_id": f"p{i}", "embedding": v.tolist()}) + "\n" for i, v in enumerate(vectors))
    )
    by_paper.write_text(
        "".join(json.dumps({"paper_id": f"p{i}", "embedding": v.tolist()}) + "\n" for i, v in enumerate(vectors))
    )
    a, b = read_embeddings(by_doc), read_embeddings(by_paper)
    assert a.ids == b.ids == ["p0", "p1", "p2"] and np.allclose(a.vectors, b.vectors)
    assert main(["index", "--embeddings", str(by_doc), "--out", str(tmp_path / "i.npz")]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "p0", "embedding": [1.0]}) + "\n")
    assert main(["index", "--embeddings", str(bad), "--out", str(tmp_path / "j.npz")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{bad}:1" in err and "'doc_id'" in err
