"""Indexes that grow: add, update and remove without a rebuild, atomic rewrites, batch search, kind auto."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from specter_utils import search  # noqa: E402
from specter_utils.cli import main  # noqa: E402
from specter_utils.embedding.io import EmbeddingSet, write_embeddings  # noqa: E402
from specter_utils.errors import DataError  # noqa: E402
from specter_utils.search import build_index, choose_kind, load_index  # noqa: E402

INFO = {"model": "minilm", "pooling": "model", "pooling_detail": "mean+normalize", "max_length": 64}
KINDS = ["flat", "ivf", "ivf-pq", "hnsw"]


def papers(n: int, dim: int = 16, start: int = 0, seed: int = 0) -> EmbeddingSet:
    """Papers in 8 tight clusters (cluster = number % 8), ids p<start>.. ."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).standard_normal((8, dim))
    numbers = np.arange(start, start + n)
    vectors = (centres[numbers % 8] + 0.3 * rng.standard_normal((n, dim))).astype(np.float32)
    return EmbeddingSet([f"p{i}" for i in numbers], vectors, [f"T{i}" for i in numbers], dict(INFO))


def exact_neighbours(emb: EmbeddingSet, query: np.ndarray, k: int) -> list[str]:
    unit = emb.vectors / np.linalg.norm(emb.vectors, axis=1, keepdims=True)
    return [emb.ids[i] for i in np.argsort(-(unit @ (query / np.linalg.norm(query))))[:k]]


def wide(index):
    """Scan every list, so that an IVF index answers exactly as far as its codes allow."""
    if index.kind in ("ivf", "ivf-pq"):
        index.set_search_width(nprobe=faiss.extract_index_ivf(index.index).nlist)
    return index


@pytest.mark.parametrize("kind", KINDS)
def test_add_then_remove_matches_a_rebuild(kind: str, tmp_path: Path) -> None:
    first, more = papers(300), papers(60, start=300, seed=1)
    index = build_index(first, kind)
    assert index.add(more.ids, more.vectors, more.titles) == {"added": 60, "updated": 0}
    removed = ["p0", "p5", "p301", "p359"]
    assert index.remove(removed) == 4
    index.save(tmp_path / "i.npz")
    loaded = wide(load_index(tmp_path / "i.npz"))
    everything = first.merged(more)
    keep = [i for i, pid in enumerate(everything.ids) if pid not in removed]
    truth = EmbeddingSet([everything.ids[i] for i in keep], everything.vectors[keep])
    assert loaded.ids == truth.ids and len(loaded) == 356 and loaded.index.ntotal == 356
    assert loaded.titles[loaded.row("p302")] == "T302"
    for query in ("p1", "p300", "p358"):  # an old paper, a new one; every row's label points at its own id
        hits = [h.paper_id for h in loaded.search(loaded.vector(query), 5)[0]]
        assert hits[0] == query
        assert set(hits) == set(exact_neighbours(truth, truth.vectors[truth.ids.index(query)], 5))
        assert not set(hits) & set(removed)
    if kind in ("ivf", "ivf-pq"):
        assert loaded.info["ivf"]["added_since_training"] == 60 and loaded.info["ivf"]["trained_count"] == 300


@pytest.mark.parametrize("kind", ["flat", "ivf-pq"])
def test_update_replaces_a_paper_and_duplicates_are_errors(kind: str) -> None:
    index = build_index(papers(200), kind)
    moved = papers(1, start=1)  # p1 is in cluster 1; give it cluster 2's position
    moved.vectors[:] = papers(1, start=2).vectors
    with pytest.raises(DataError, match="already indexed .*--update") as error:
        index.add(moved.ids, moved.vectors, ["new title"])
    assert error.value.record_id == "p1" and len(index) == 200
    assert index.add(moved.ids, moved.vectors, ["new title"], update=True) == {"added": 0, "updated": 1}
    assert len(index) == 200 and index.titles[index.row("p1")] == "new title"
    hits = [h.paper_id for h in wide(index).search(index.vector("p1"), 4, exclude=["p1"])[0]]
    assert all(int(pid[1:]) % 8 == 2 for pid in hits)
    with pytest.raises(DataError, match="appears twice"):
        index.add(["q1", "q1"], np.ones((2, 16), dtype=np.float32))
    with pytest.raises(DataError, match="not indexed") as error:
        index.remove(["p3", "nope"])
    assert error.value.record_id == "nope" and len(index) == 200


def test_retrain_due_after_growth() -> None:
    index = build_index(papers(200), "ivf")
    assert not index.retrain_due()
    more = papers(int(200 * search.RETRAIN_GROWTH), start=200)
    index.add(more.ids, more.vectors)
    assert index.retrain_due()


def test_kind_auto_by_size(monkeypatch, tmp_path: Path, capsys) -> None:
    assert choose_kind("auto", search.EXACT_MAX) == "flat"
    assert choose_kind("auto", search.EXACT_MAX + 1) == "ivf"
    assert choose_kind("auto", search.COMPRESSED_MIN + 1) == "ivf-pq"
    monkeypatch.setattr(search.index, "EXACT_MAX", 50)  # where choose_kind reads them
    monkeypatch.setattr(search.index, "COMPRESSED_MIN", 100)
    write_embeddings(tmp_path / "e.jsonl", papers(120))
    assert main(["index", "--embeddings", str(tmp_path / "e.jsonl"), "--out", str(tmp_path / "i.npz")]) == 0
    assert "ivf-pq index of 120 papers" in capsys.readouterr().out
    assert load_index(tmp_path / "i.npz").info["ivf"]["pq_bits"] == 4


def test_crash_while_saving_leaves_the_old_index(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "i.npz"
    index = build_index(papers(100), "ivf-pq")
    index.save(path)
    before = path.read_bytes()
    more = papers(10, start=100)
    index.add(more.ids, more.vectors)

    def crash(*args):  # fail after the ids and part of the index are written
        raise OSError("disk full")

    monkeypatch.setattr(faiss, "write_index", crash)
    with pytest.raises(OSError, match="disk full"):
        index.save(path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["i.npz"]
    assert len(load_index(path)) == 100


def test_kill_9_during_add_leaves_the_old_index(tmp_path: Path) -> None:
    """A real SIGKILL half-way through writing the grown index: the old file is whole and loads."""
    path = tmp_path / "i.npz"
    build_index(papers(100), "ivf").save(path)
    write_embeddings(tmp_path / "new.jsonl", papers(50, start=100))
    before = path.read_bytes()
    script = (
        "import os, signal, sys, faiss\n"
        "real = faiss.write_index\n"
        "def write_then_die(index, writer):\n"
        "    real(index, writer)\n"  # the whole FAISS index is in the temporary file, the zip is not closed
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "faiss.write_index = write_then_die\n"
        "from specter_utils.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", script, "index", "--index", str(path), "--add", str(tmp_path / "new.jsonl")], env=env
    )
    assert done.returncode == -signal.SIGKILL
    assert path.read_bytes() == before and len(load_index(path)) == 100
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".i.npz.")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0  # the half-written copy, never renamed


def test_cli_add_update_remove(tmp_path: Path, capsys) -> None:
    index = tmp_path / "i.npz"
    write_embeddings(tmp_path / "a.jsonl", papers(100))
    write_embeddings(tmp_path / "b.jsonl", papers(20, start=100))
    assert main(["index", "--embeddings", str(tmp_path / "a.jsonl"), "--out", str(index)]) == 0
    assert main(["index", "--index", str(index), "--add", str(tmp_path / "b.jsonl")]) == 0
    assert "added 20 and updated 0 papers; 120 in" in capsys.readouterr().out
    err = run_error(["index", "--index", str(index), "--add", str(tmp_path / "b.jsonl")], capsys)
    assert "already indexed (use --update" in err and "p100" in err
    assert main(["index", "--index", str(index), "--add", str(tmp_path / "b.jsonl"), "--update"]) == 0
    assert "added 0 and updated 20 papers; 120 in" in capsys.readouterr().out
    (tmp_path / "gone.txt").write_text("p1\n\np2\n")
    assert main(["index", "--index", str(index), "--remove", str(tmp_path / "gone.txt")]) == 0
    assert main(["index", "--index", str(index), "--remove", "p3,p4"]) == 0
    assert "removed 2 papers; 116 remain" in capsys.readouterr().out
    assert "p1" not in load_index(index) and "p100" in load_index(index)
    err = run_error(["index", "--index", str(index), "--remove", "p1"], capsys)
    assert "not indexed" in err and "'p1'" in err
    other = papers(5, dim=8, start=500)
    write_embeddings(tmp_path / "c.jsonl", other)
    assert "8 dimensions" in run_error(["index", "--index", str(index), "--add", str(tmp_path / "c.jsonl")], capsys)
    write_embeddings(
        tmp_path / "d.jsonl", EmbeddingSet(["z"], np.ones((1, 16), np.float32), ["z"], {**INFO, "max_length": 512})
    )
    assert "max_length 512" in run_error(["index", "--index", str(index), "--add", str(tmp_path / "d.jsonl")], capsys)
    assert "give it with --index" in run_error(["index", "--add", str(tmp_path / "b.jsonl")], capsys)
    assert "--update applies to --add" in run_error(
        ["index", "--index", str(index), "--remove", "p5", "--update"], capsys
    )
    assert "give --embeddings and --out" in run_error(["index", "--kind", "ivf"], capsys)
    assert len(load_index(index)) == 116  # no failed command changed it


def run_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"specter-utils {argv[0]}: error:")
    return err


def test_batch_search_by_ids_and_texts(tmp_path: Path, capsys, monkeypatch) -> None:
    index = tmp_path / "i.npz"
    write_embeddings(tmp_path / "a.jsonl", papers(80))
    assert main(["index", "--embeddings", str(tmp_path / "a.jsonl"), "--out", str(index)]) == 0
    (tmp_path / "ids.txt").write_text("p1\np2\n\np3\n")
    capsys.readouterr()
    assert main(["search", "--index", str(index), "--paper-id-file", str(tmp_path / "ids.txt"), "-k", "3"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["query"]["paper_id"] for r in rows] == ["p1", "p2", "p3"]
    for row in rows:
        number = int(row["query"]["paper_id"][1:])
        assert [int(h["paper_id"][1:]) % 8 for h in row["neighbours"]] == [number % 8] * 3
    assert "3 queries: search" in captured.err and "queries/s" in captured.err
    out = tmp_path / "hits.jsonl"
    args = ["search", "--index", str(index), "--paper-id-file", str(tmp_path / "ids.txt"), "--out", str(out)]
    assert main(args) == 0 and len(out.read_text().splitlines()) == 3
    assert "wrote" in capsys.readouterr().err
    assert "file exists" in run_error(args, capsys)
    (tmp_path / "bad.txt").write_text("p1\nnope\n")
    err = run_error(["search", "--index", str(index), "--paper-id-file", str(tmp_path / "bad.txt")], capsys)
    assert "bad.txt:2" in err and "'nope'" in err
    (tmp_path / "empty.txt").write_text("\n\n")
    assert "no queries" in run_error(
        ["search", "--index", str(index), "--text-file", str(tmp_path / "empty.txt")], capsys
    )
    (tmp_path / "q.jsonl").write_text('{"title": "x"}\n{"abstract": ""}\n')
    assert "q.jsonl:2" in run_error(["search", "--index", str(index), "--text-file", str(tmp_path / "q.jsonl")], capsys)
    assert "not both" in run_error(
        ["search", "--index", str(index), "--paper-id-file", str(tmp_path / "ids.txt"), "--paper-id", "p1"], capsys
    )

    # texts: embedded in one batch with the index's settings (a stand-in encoder keeps the test fast)
    def fake_embed(index, texts, *rest):
        return np.vstack([papers(1, start=int(title[1:])).vectors for title, _ in texts])

    monkeypatch.setattr(search, "embed_query", fake_embed)
    (tmp_path / "texts.txt").write_text("t5\nt6\n")
    assert main(["search", "--index", str(index), "--text-file", str(tmp_path / "texts.txt"), "-k", "1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["query"]["title"] for r in rows] == ["t5", "t6"]
    assert [int(r["neighbours"][0]["paper_id"][1:]) % 8 for r in rows] == [5, 6]
