"""Embedding papers: vectors, sidecar meta, length sorting, resume after a crash, bad input, shards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from specter_utils.cli import main
from specter_utils.data.records import Paper
from specter_utils.embedding import embed as embed_module
from specter_utils.embedding.embed import EmbedRun, embed_papers, embed_to_file, length_order, plan_chunks
from specter_utils.embedding.encoder import load_encoder
from specter_utils.embedding.inputs import load_papers
from specter_utils.embedding.io import read_embeddings, sidecar_paths
from specter_utils.embedding.shards import merge_shard_files, parse_shard, select_shard
from specter_utils.errors import DataError
from specter_utils.models import resolve_pooling

WORDS = "string theory brane gauge field duality black hole entropy quantum gravity anomaly".split()


def make_papers(n: int = 10) -> list[Paper]:
    """Papers of very different lengths, so that sorting by length changes the batches."""
    return [
        Paper(f"p{i}", f"On {WORDS[i % len(WORDS)]} number {i}", " ".join(WORDS[: (i * 5) % 23 + 1]) * (1 + i % 3))
        for i in range(n)
    ]


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def cls_encoder():
    return load_encoder("minilm", pooling="cls", max_length=32, device="cpu")


def test_vectors_shape_determinism_and_meta(cls_encoder) -> None:
    papers = make_papers()
    first = embed_papers(cls_encoder, papers, batch_size=4, progress=False)
    again = embed_papers(cls_encoder, {p.paper_id: p for p in papers}, batch_size=4, progress=False)
    assert first.ids == [p.paper_id for p in papers]
    assert first.vectors.shape == (10, 384) and first.vectors.dtype == np.float32
    assert np.array_equal(first.vectors, again.vectors)
    assert first.titles == [p.title for p in papers]
    info = first.info
    assert (info["pooling"], info["max_length"], info["dtype"], info["device"]) == ("cls", 32, "float32", "cpu")
    assert info["text"] == "title + '[SEP]' + abstract"


def test_sorted_batches_match_the_plain_transformers_recipe(cls_encoder) -> None:
    """Unsorted, padded batches as in the SPECTER README give the same [CLS] vectors."""
    import torch

    papers = make_papers(12)
    ours = embed_papers(cls_encoder, papers, batch_size=4, progress=False).vectors
    tokenizer, model = cls_encoder.tokenizer, cls_encoder.model[0].auto_model
    texts = [p.title + tokenizer.sep_token + p.abstract for p in papers]
    with torch.no_grad():
        reference = []
        for start in range(0, len(texts), 4):
            inputs = tokenizer(
                texts[start : start + 4], padding=True, truncation=True, return_tensors="pt", max_length=32
            )
            reference.append(model(**inputs).last_hidden_state[:, 0, :].numpy())
    assert cosine_rows(ours, np.vstack(reference)).min() >= 0.999
    lengths = cls_encoder.token_lengths(texts)
    assert lengths.max() == 32 and lengths.min() < 32  # the test papers do differ in length


def test_pooling_choice(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    assert resolve_pooling(str(plain), None) == "cls"
    assert resolve_pooling(str(plain), "mean") == "mean"
    (plain / "modules.json").write_text("[]")
    assert resolve_pooling(str(plain), "auto") == "model"
    with pytest.raises(ValueError, match="pooling"):
        resolve_pooling(str(plain), "max")
    own = load_encoder("minilm", pooling=None, max_length=16, device="cpu")
    result = embed_papers(own, make_papers(3), progress=False)
    assert (result.info["pooling"], result.info["pooling_detail"]) == ("model", "mean+normalize")
    assert np.allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-5)


def test_embed_to_file_writes_all_four_files(cls_encoder, tmp_path: Path) -> None:
    out = tmp_path / "emb.jsonl"
    result = embed_to_file(
        cls_encoder, make_papers(5), out, EmbedRun(progress=False, info={"synthetic": True}), batch_size=2
    )
    side = sidecar_paths(out)
    assert all(p.exists() for p in side.values()) and not Path(f"{out}.partial").exists()
    back = read_embeddings(out)
    assert back.ids == result.ids and np.allclose(back.vectors, result.vectors)
    assert side["ids"].read_text().split() == result.ids
    meta = json.loads(side["meta"].read_text())
    assert meta["count"] == 5 and meta["dim"] == 384 and meta["synthetic"] is True and meta["pooling"] == "cls"
    assert np.array_equal(read_embeddings(side["npy"]).vectors, result.vectors)


def _file_bytes(out: Path) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in {"jsonl": out, **sidecar_paths(out)}.items()}


def test_interrupted_run_resumes_to_the_same_files(cls_encoder, tmp_path: Path, monkeypatch) -> None:
    papers = make_papers(10)
    whole = tmp_path / "whole.jsonl"
    embed_to_file(cls_encoder, papers, whole, EmbedRun(chunk_size=4, progress=False), batch_size=2)

    out = tmp_path / "resumed.jsonl"
    real_save = embed_module._save_chunk
    saved: list[int] = []

    def crash_after_two(store, index, vectors):
        if len(saved) == 2:
            raise KeyboardInterrupt("killed")
        real_save(store, index, vectors)
        saved.append(index)

    monkeypatch.setattr(embed_module, "_save_chunk", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        embed_to_file(cls_encoder, papers, out, EmbedRun(chunk_size=4, progress=False), batch_size=2)
    partial = Path(f"{out}.partial")
    assert sorted(p.name for p in partial.glob("chunk-*.npy")) == ["chunk-000000.npy", "chunk-000001.npy"]
    assert not out.exists()

    monkeypatch.setattr(embed_module, "_save_chunk", real_save)
    result = embed_to_file(cls_encoder, papers, out, EmbedRun(chunk_size=4, progress=False), batch_size=2)
    assert result.info["resumed_papers"] == 8
    assert not partial.exists()
    assert _file_bytes(out) == _file_bytes(whole)


def test_resume_refuses_other_settings(cls_encoder, tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "e.jsonl"
    monkeypatch.setattr(embed_module, "_save_chunk", lambda *a: (_ for _ in ()).throw(RuntimeError("stop")))
    with pytest.raises(RuntimeError):
        embed_to_file(cls_encoder, make_papers(6), out, EmbedRun(chunk_size=2, progress=False), batch_size=2)
    monkeypatch.undo()
    with pytest.raises(DataError, match="batch_size"):
        embed_to_file(cls_encoder, make_papers(6), out, EmbedRun(chunk_size=2, progress=False), batch_size=3)
    result = embed_to_file(
        cls_encoder, make_papers(6), out, EmbedRun(chunk_size=2, progress=False, resume=False), batch_size=3
    )
    assert len(result) == 6


def test_chunks_are_whole_batches_in_length_order() -> None:
    order = length_order(np.array([3, 9, 9, 1, 5]))
    assert order.tolist() == [1, 2, 4, 0, 3]
    chunks = plan_chunks(np.arange(10), batch_size=3, chunk_size=7)
    assert [len(c) for c in chunks] == [6, 4]


def write_metadata(path: Path, records: dict) -> Path:
    path.write_text(json.dumps(records))
    return path


def test_bad_metadata_and_ids_name_the_paper(tmp_path: Path) -> None:
    good = write_metadata(
        tmp_path / "m.json", {"a": {"paper_id": "a", "title": "A", "abstract": "x"}, "b": {"title": "B"}}
    )
    no_title = write_metadata(tmp_path / "bad.json", {"a": {"title": "A"}, "zz9": {"abstract": "no title"}})
    with pytest.raises(DataError) as err:
        load_papers([no_title])
    assert err.value.record_id == "zz9" and "title" in str(err.value)
    ids = tmp_path / "ids.txt"
    ids.write_text("b\n\nmissing1\na\n")
    with pytest.raises(DataError) as err:
        load_papers([good], ids)
    assert (err.value.record_id, err.value.line) == ("missing1", 3)
    ids.write_text("b\na\nb\n")
    with pytest.raises(DataError, match="duplicate"):
        load_papers([good], ids)
    ids.write_text("b\na\n")
    assert list(load_papers([good], ids)) == ["b", "a"]
    clash = write_metadata(tmp_path / "clash.json", {"a": {"title": "Another A"}})
    with pytest.raises(DataError, match="different title"):
        load_papers([good, clash])


@given(st.integers(0, 60), st.integers(1, 9))
def test_shards_cover_every_id_exactly_once(n: int, count: int) -> None:
    ids = [f"id{i}" for i in range(n)]
    shards = [select_shard(ids, i, count) for i in range(count)]
    assert sorted(x for shard in shards for x in shard) == sorted(ids)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_parse_shard() -> None:
    assert parse_shard("2/8") == (2, 8)
    for bad in ("8/8", "-1/3", "1", "a/b", "0/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_merged_shards_equal_the_unsharded_file(cls_encoder, tmp_path: Path) -> None:
    papers = make_papers(11)
    whole = embed_to_file(cls_encoder, papers, tmp_path / "whole.jsonl", EmbedRun(progress=False), batch_size=2)
    parts = [tmp_path / f"part-{i}.jsonl" for i in range(3)]
    for i, part in enumerate(parts):
        embed_to_file(cls_encoder, papers, part, EmbedRun(shard=(i, 3), progress=False), batch_size=2)
    with pytest.raises(DataError, match="missing shard"):
        merge_shard_files(parts[:2], tmp_path / "bad.jsonl")
    with pytest.raises(DataError, match="twice"):
        merge_shard_files([*parts, parts[0]], tmp_path / "bad.jsonl")
    assert main(["embed", "--merge", *map(str, reversed(parts)), "--out", str(tmp_path / "merged.jsonl")]) == 0
    merged = read_embeddings(tmp_path / "merged.jsonl")
    assert merged.ids == whole.ids and merged.titles == whole.titles
    assert np.allclose(merged.vectors, whole.vectors, atol=1e-5)
    assert merged.info["merged_shards"] == 3 and "shard" not in merged.info
    other = embed_to_file(
        cls_encoder, papers[:10], tmp_path / "other.jsonl", EmbedRun(shard=(2, 3), progress=False), batch_size=2
    )
    assert len(other) == 3
    with pytest.raises(DataError, match="other inputs"):
        merge_shard_files([*parts[:2], tmp_path / "other.jsonl"], tmp_path / "bad.jsonl")
    # a shard embedded where --dtype auto chose another precision (another machine's probe) is refused by name
    meta_path = sidecar_paths(parts[1])["meta"]
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "dtype": "int8"}))
    with pytest.raises(DataError, match="dtype 'int8' differs from part-0.jsonl"):
        merge_shard_files(parts, tmp_path / "bad.jsonl")
    assert not (tmp_path / "bad.jsonl").exists()


def test_cli_embeds_scidocs_metadata_files_with_ids(tmp_path: Path, capsys) -> None:
    first = write_metadata(
        tmp_path / "paper_metadata_mag_mesh.json", {p.paper_id: p.to_specter_metadata() for p in make_papers(4)}
    )
    second = write_metadata(
        tmp_path / "paper_metadata_recomm.json", {"r1": {"paper_id": "r1", "title": "Recomm", "abstract": None}}
    )
    ids = tmp_path / "ids.txt"
    ids.write_text("r1\np2\np0\n")
    out = tmp_path / "out" / "e.jsonl"
    argv = ["embed", "--model", "minilm", "--metadata", str(first), str(second), "--ids", str(ids), "--out", str(out)]
    assert main([*argv, "--max-length", "16", "--pooling", "cls", "--quiet"]) == 0
    assert "wrote" in capsys.readouterr().out
    result = read_embeddings(out)
    assert result.ids == ["r1", "p2", "p0"] and result.info["pooling"] == "cls" and result.info["max_length"] == 16
    ids.write_text("nope\n")
    assert main([*argv, "--quiet"]) == 2  # a finished --out is not replaced without --overwrite
    assert "--overwrite" in capsys.readouterr().err
    assert main([*argv, "--quiet", "--overwrite"]) == 2
    assert "nope" in capsys.readouterr().err
    assert read_embeddings(out).ids == ["r1", "p2", "p0"]  # a failed run leaves the earlier set whole


@pytest.mark.slow
def test_multi_process_pool_gives_the_same_vectors(cls_encoder) -> None:
    """The multi-GPU path (a sentence-transformers process pool), exercised with two CPU workers."""
    papers = make_papers(6)
    single = embed_papers(cls_encoder, papers, batch_size=2, progress=False)
    pooled_encoder = load_encoder("minilm", pooling="cls", max_length=32, device="cpu", devices=["cpu", "cpu"])
    pooled = embed_papers(pooled_encoder, papers, batch_size=2, progress=False)
    assert pooled.info["device"] == "cpu,cpu"
    assert cosine_rows(single.vectors, pooled.vectors).min() >= 0.9999
