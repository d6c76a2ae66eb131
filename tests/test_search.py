"""Similar-paper search: index build/load, neighbours by id and by text, settings checks, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")

from specter_utils.cli import main  # noqa: E402
from specter_utils.embedding.io import EmbeddingSet, write_embeddings  # noqa: E402
from specter_utils.errors import DataError  # noqa: E402
from specter_utils.search import build_index, load_index, neighbours_table  # noqa: E402

INFO = {"model": "minilm", "pooling": "model", "pooling_detail": "mean+normalize", "max_length": 64}


def make_embeddings(n: int = 40, dim: int = 8, seed: int = 0, info: dict | None = None) -> EmbeddingSet:
    """Papers in four tight clusters, so each paper's neighbours are its cluster mates."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((4, dim))
    vectors = (centres[np.arange(n) % 4] + 0.05 * rng.standard_normal((n, dim))).astype(np.float32)
    ids = [f"p{i}" for i in range(n)]
    return EmbeddingSet(ids, vectors, [f"Paper {i} of cluster {i % 4}" for i in range(n)], dict(info or INFO))


@pytest.fixture()
def emb_file(tmp_path: Path) -> Path:
    path = tmp_path / "emb.jsonl"
    write_embeddings(path, make_embeddings())
    return path


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_neighbours_are_cluster_mates_and_match_exact_cosine(kind: str, tmp_path: Path) -> None:
    emb = make_embeddings()
    index = build_index(emb, kind)
    index.save(tmp_path / "i.npz")
    loaded = load_index(tmp_path / "i.npz")
    assert loaded.info["kind"] == kind and loaded.settings == {**INFO, "dim": 8}
    hits = loaded.search(loaded.vector("p0"), k=5, exclude=["p0"])[0]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert all(int(h.paper_id[1:]) % 4 == 0 for h in hits) and "p0" not in [h.paper_id for h in hits]
    unit = emb.vectors / np.linalg.norm(emb.vectors, axis=1, keepdims=True)
    exact = unit @ unit[0]
    for h in hits:
        assert h.score == pytest.approx(exact[int(h.paper_id[1:])], abs=1e-5)
    assert hits[0].title == f"Paper {hits[0].paper_id[1:]} of cluster 0"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # atomic write left no temp file


def test_neighbours_table_for_the_notebook() -> None:
    table = neighbours_table(build_index(make_embeddings()), ["p1", "p2"], k=3)
    assert list(table.columns) == ["query_id", "query_title", "rank", "paper_id", "title", "score"]
    assert len(table) == 6 and set(table.query_id) == {"p1", "p2"}


def test_cli_index_and_search_table_and_json(emb_file: Path, tmp_path: Path, capsys) -> None:
    import json

    out = tmp_path / "emb.index.npz"
    assert main(["index", "--embeddings", str(emb_file), "--out", str(out)]) == 0
    assert "flat index of 40 papers x 8 dims" in capsys.readouterr().out
    assert main(["search", "--index", str(out), "--paper-id", "p3", "-k", "3"]) == 0
    table = capsys.readouterr().out
    assert "neighbours of p3: Paper 3 of cluster 3" in table and table.count("of cluster 3") == 4
    assert main(["search", "--index", str(out), "--paper-id", "p3", "-k", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["neighbours"]) == 3 and all(int(n["paper_id"][1:]) % 4 == 3 for n in result["neighbours"])


def test_npy_embeddings_take_titles_from_metadata(emb_file: Path, tmp_path: Path, capsys) -> None:
    import json

    meta = tmp_path / "paper_metadata.json"
    meta.write_text(json.dumps({f"p{i}": {"paper_id": f"p{i}", "title": f"T{i}", "abstract": "a"} for i in range(40)}))
    out = tmp_path / "npy.index.npz"
    assert (
        main(["index", "--embeddings", str(emb_file.with_suffix(".npy")), "--metadata", str(meta), "--out", str(out)])
        == 0
    )
    assert load_index(out).titles[:2] == ["T0", "T1"]


def run_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"specter-utils {argv[0]}: error:")
    return err


def test_bad_input_is_one_line_error(emb_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "emb.index.npz"
    assert main(["index", "--embeddings", str(emb_file), "--out", str(out)]) == 0
    capsys.readouterr()
    assert "unknown paper id 'nope'" in run_error(["search", "--index", str(out), "--paper-id", "nope"], capsys)
    assert "empty query" in run_error(["search", "--index", str(out)], capsys)
    assert "empty query" in run_error(["search", "--index", str(out), "--text", "   "], capsys)
    assert "index file not found" in run_error(
        ["search", "--index", str(tmp_path / "no.npz"), "--paper-id", "p1"], capsys
    )
    assert "not found" in run_error(["index", "--embeddings", str(tmp_path / "no.jsonl"), "--out", str(out)], capsys)
    assert "max_length 512 (index: 64)" in run_error(
        ["search", "--index", str(out), "--text", "x", "--max-length", "512"], capsys
    )
    # query vectors from embeddings of another dimension, or made with another model
    other = tmp_path / "other.jsonl"
    write_embeddings(other, make_embeddings(dim=16))
    err = run_error(["search", "--index", str(out), "--paper-id", "p1", "--embeddings", str(other)], capsys)
    assert "16 dimensions" in err and "has 8" in err
    write_embeddings(other, make_embeddings(info={**INFO, "model": "allenai/specter"}))
    assert "model 'allenai/specter'" in run_error(
        ["search", "--index", str(out), "--paper-id", "p1", "--embeddings", str(other)], capsys
    )
    not_an_index = tmp_path / "bad.npz"
    not_an_index.write_bytes(b"garbage")
    assert "not a specter-utils index" in run_error(
        ["search", "--index", str(not_an_index), "--paper-id", "p1"], capsys
    )


def test_text_query_uses_the_index_model(tmp_path: Path) -> None:
    """A paper's own title and abstract, embedded as a query, finds that paper first."""
    from specter_utils.config import EmbedConfig
    from specter_utils.data.records import Paper
    from specter_utils.embedding.embed import embed_papers
    from specter_utils.search import embed_query

    papers = [
        Paper("a", "Black hole entropy", "Counting D-brane states reproduces the Bekenstein-Hawking entropy."),
        Paper("b", "Lattice QCD", "Quark confinement on a discrete spacetime lattice."),
        Paper("c", "Inflation", "Slow-roll inflation and the cosmic microwave background."),
    ]
    emb = embed_papers(EmbedConfig(batch_size=4, max_length=32, device="cpu"), papers, progress=False)
    index = build_index(emb)
    vector = embed_query(index, [(papers[1].title, papers[1].abstract)])
    hit = index.search(vector, 1)[0][0]
    assert hit.paper_id == "b" and hit.score == pytest.approx(1.0, abs=1e-4)
    with pytest.raises(DataError, match="pooling 'cls'"):
        embed_query(index, [("x", "")], pooling="cls")


def test_text_query_loads_the_index_models_local_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index records the folder its papers were embedded from; a text query loads that folder, not the name."""
    from specter_utils.search import query

    emb = make_embeddings(n=5)
    emb.info.update(model="some-model", model_path=str(Path(__file__).parent), max_length=32, pooling="mean")
    index = build_index(emb)
    loaded: list[str] = []

    def fake_encoder(choice):
        loaded.append(choice.spec.model)
        raise DataError("stop here")

    monkeypatch.setattr(query, "load_text_encoder", fake_encoder)
    with pytest.raises(DataError, match="stop here"):
        query.embed_query(index, [("a title", "")])
    index.info["model_path"] = "/nonexistent/folder"
    with pytest.raises(DataError, match="stop here"):
        query.embed_query(index, [("a title", "")])
    assert loaded == [str(Path(__file__).parent), "some-model"]


def test_ivf_records_its_lists_and_search_takes_nprobe(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ivf.index.npz"
    write_embeddings(tmp_path / "emb.jsonl", make_embeddings(n=200))
    assert main(["index", "--embeddings", str(tmp_path / "emb.jsonl"), "--kind", "ivf", "--out", str(out)]) == 0
    index = load_index(out)
    assert index.info["ivf"]["nlist"] == 57 and index.index.nprobe == 57  # 4 sqrt(200) lists, all scanned
    capsys.readouterr()
    assert main(["search", "--index", str(out), "--paper-id", "p4", "-k", "3", "--nprobe", "2"]) == 0
    assert capsys.readouterr().out.count("of cluster 0") == 4  # the query and 3 cluster mates, 2 of 57 lists scanned
    flat = tmp_path / "flat.index.npz"
    assert main(["index", "--embeddings", str(tmp_path / "emb.jsonl"), "--out", str(flat)]) == 0
    capsys.readouterr()
    assert main(["search", "--index", str(flat), "--paper-id", "p4", "--nprobe", "2"]) == 2
    assert "--nprobe applies to an IVF index" in capsys.readouterr().err
