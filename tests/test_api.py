"""specter_utils.api: the public calls give what the command line gives (same text, pooling, vectors, scores), and
``import specter_utils`` stays light."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from specter_utils import api
from specter_utils.cli import main
from specter_utils.data.records import Paper
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError
from specter_utils.io import write_json

PAPERS = [
    {"paper_id": "a", "title": "Citation-informed transformers", "abstract": "Document embeddings from citations."},
    {"paper_id": "b", "title": "Scientific text encoders", "abstract": "A language model pretrained on papers."},
    {"paper_id": "c", "title": "Image recognition with residual networks", "abstract": "Very deep networks."},
    {"paper_id": "d", "title": "Graph neural networks for citation graphs", "abstract": ""},
]


@pytest.fixture(scope="module")
def model():
    return api.load_model("minilm", max_length=64, device="cpu")


def test_import_stays_light():
    code = "import sys, specter_utils; print('torch' in sys.modules, callable(specter_utils.embed))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]  # the api loads on first use only


def test_paper_text_is_the_embed_commands_text(model):
    assert api.paper_text(PAPERS[0], model) == Paper("a", PAPERS[0]["title"], PAPERS[0]["abstract"]).text(model.sep)
    assert model.sep == "[SEP]" and api.paper_text(PAPERS[3], model).endswith("[SEP]")
    with pytest.raises(DataError, match="'title'"):
        api.as_paper({"paper_id": "x"})


def test_embed_equals_the_embed_command(model, tmp_path):
    vectors = api.embed(PAPERS, model)
    assert vectors.ids == ["a", "b", "c", "d"] and vectors.vectors.shape == (4, model.dim)
    write_json(tmp_path / "metadata.json", {p["paper_id"]: p for p in PAPERS})
    out = tmp_path / "emb.jsonl"
    argv = ["embed", "--model", "minilm", "--metadata", str(tmp_path / "metadata.json"), "--out", str(out)]
    assert main([*argv, "--max-length", "64", "--backend", "torch", "--quiet"]) == 0
    command = read_embeddings(out)
    rows = [command.ids.index(pid) for pid in vectors.ids]
    cosines = np.sum(vectors.vectors * command.vectors[rows], axis=1)
    assert np.all(cosines > 0.9999), cosines


def test_index_search_and_score(model, tmp_path):
    vectors = api.embed(PAPERS, model)
    index = api.build_index(vectors)
    hits = api.search(index, "a", k=3)
    assert [h.rank for h in hits] == [1, 2, 3] and "a" not in [h.paper_id for h in hits]
    by_text = api.search(index, {"title": "Residual networks for images", "abstract": ""}, k=1, model=model)
    assert by_text[0].paper_id == "c"
    with pytest.raises(DataError, match="model"):
        api.search(index, {"title": "x"}, k=1)
    index.save(tmp_path / "i.npz")
    assert api.load_index(tmp_path / "i.npz").ids == index.ids
    (tmp_path / "scidocs" / "cite").mkdir(parents=True)
    (tmp_path / "scidocs" / "cite" / "test.qrel").write_text("a 0 b 1\na 0 c 0\na 0 d 0\nc 0 d 1\nc 0 a 0\nc 0 b 0\n")
    scores = api.score(tmp_path / "scidocs", vectors, tasks=["cite"])
    assert 0 <= scores["cite"]["map"] <= 100
