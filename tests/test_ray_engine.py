"""``embed --engine ray``: the same vectors as the local embedder, resumption, actor planning, clear errors.

The end-to-end tests share one local 2-CPU Ray (started once for the module, as CI does).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest
from test_embed import cosine_rows, make_papers  # the same papers of very different lengths

from specter_utils.cli import main
from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding import ray_engine
from specter_utils.embedding.embed import EmbedRun, embed_to_file
from specter_utils.embedding.io import read_embeddings
from specter_utils.embedding.ray_engine import RayUnavailable, check_address, embed_with_ray, plan_actors
from specter_utils.errors import DataError


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- planning and addresses (no Ray needed)
def test_cpu_actors_leave_room_for_reads() -> None:
    one = plan_actors({"CPU": 2.0}, None, use_gpu=False)
    assert one["size"] == 1 and one["num_cpus"] == 1.0 and one["device"] == "cpu"
    two = plan_actors({"CPU": 2.0}, 2, use_gpu=False)
    assert two["size"] == 2 and two["num_cpus"] * 2 <= 2.0 - ray_engine.READ_CPUS
    with pytest.raises(DataError, match="at least 2 CPUs"):
        plan_actors({"CPU": 1.0}, None, use_gpu=False)
    assert plan_actors({"CPU": 16.0}, None, use_gpu=False)["size"] == 15


def test_gpu_actors_take_one_gpu_each() -> None:
    plan = plan_actors({"CPU": 16.0, "GPU": 2.0}, None, use_gpu=True)
    assert plan == {"size": 2, "num_gpus": 1, "num_cpus": 1.0, "threads": 1, "device": "cuda"}
    with pytest.raises(DataError, match="more GPU actors"):
        plan_actors({"CPU": 16.0, "GPU": 1.0}, 3, use_gpu=True)


def test_address_that_does_not_answer_is_a_clear_error() -> None:
    with pytest.raises(RayUnavailable, match="does not answer"):
        check_address(f"127.0.0.1:{closed_port()}", timeout=1.0)
    with pytest.raises(RayUnavailable, match="HOST:PORT"):
        check_address("no-port-here")


def write_metadata(path: Path, papers: list[Paper]) -> Path:
    path.write_text(
        json.dumps({p.paper_id: {"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract} for p in papers})
    )
    return path


def test_cli_dead_address_and_clashing_flags(tmp_path: Path, capsys) -> None:
    pytest.importorskip("ray")
    meta = write_metadata(tmp_path / "metadata.json", make_papers(4))
    out = tmp_path / "emb.jsonl"
    base = ["embed", "--metadata", str(meta), "--out", str(out), "--engine", "ray"]
    assert main([*base, "--ray-address", f"127.0.0.1:{closed_port()}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not answer" in err and "Traceback" not in err and err.count("\n") == 0
    assert main([*base, "--shard", "0/2"]) == 2
    assert "--shard cannot be used with --engine ray" in capsys.readouterr().err
    assert not out.exists() and not Path(f"{out}.ray").exists()


# ---------------------------------------------------------------- end to end on a local 2-CPU Ray
@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray_engine.init_ray(ray, {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False})
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def test_ray_matches_the_local_embedder_and_a_rerun_embeds_only_unfinished_chunks(
    local_ray, tmp_path: Path, monkeypatch
) -> None:
    """One Ray run killed before its files were written, then resumed: its vectors match the local embedder's, and
    the rerun sends only the chunk that lost rows back through Ray (one test, so the actor pool starts twice, not
    three times; two actors the first time, one for the rerun's single chunk)."""
    papers, out = make_papers(24), tmp_path / "ray.jsonl"
    spec, run = EmbedConfig(batch_size=4, max_length=48), EmbedRun(chunk_size=8, progress=False)
    local = embed_to_file(spec, papers, tmp_path / "local.jsonl", EmbedRun(progress=False))

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed before the files were written")

    monkeypatch.setattr(ray_engine, "write_embeddings", crash)
    with pytest.raises(KeyboardInterrupt):
        embed_with_ray(spec, papers, out, run, workers=2)
    monkeypatch.undo()
    vectors_dir = Path(f"{out}.ray") / "vectors"
    assert json.loads((Path(f"{out}.ray") / ray_engine.ACTORS).read_text())["size"] == 2  # a pool of two actors
    first = ray_engine.finished_rows(vectors_dir, 384)
    assert sorted(first) == list(range(len(papers))) and not out.exists()
    by_row = np.vstack([first[r] for r in range(len(papers))])
    assert cosine_rows(by_row, local.vectors).min() >= 0.9999  # Ray's actors embed as the local embedder does

    # lose the shard holding row 0 (as a kill would before it was written), and leave a truncated one
    import pyarrow.parquet as pq

    holding = [
        p
        for p in vectors_dir.rglob("rows-*.parquet")
        if 0 in pq.read_table(p, columns=["row"]).column("row").to_pylist()
    ]
    lost_chunks = {int(holding[0].parent.name.removeprefix("chunk="))}  # vectors/chunk=N/rows-*.parquet
    holding[0].unlink()
    (vectors_dir / "chunk=1" / "rows-000000099-4.parquet").write_bytes(b"PAR1 not a whole file")
    kept = len(ray_engine.finished_rows(vectors_dir, 384))
    assert 0 < len(papers) - kept and not (vectors_dir / "chunk=1" / "rows-000000099-4.parquet").exists()

    read, readers = [], []
    original = local_ray.data.read_parquet
    context = local_ray.data.DataContext.get_current()
    before = context.use_datasource_v2

    def spy(paths, **kwargs):
        read.extend(paths)
        readers.append(context.use_datasource_v2)
        return original(paths, **kwargs)

    monkeypatch.setattr(local_ray.data, "read_parquet", spy)
    result = embed_with_ray(spec, papers, out, run, workers=1)  # one chunk left: one actor (one model load)
    # the V1 reader during the job (no footer-reading actors), the driver's own setting after it
    assert readers == [ray_engine.USE_DATASOURCE_V2] == [False] and context.use_datasource_v2 == before
    # only the chunk that lost rows went back through Ray
    assert sorted(Path(p).name for p in read) == [f"chunk-{c:06d}.parquet" for c in sorted(lost_chunks)]
    assert result.info["resumed_papers"] == len(papers) - 8 * len(lost_chunks)
    assert len(result) == len(papers)
    written = read_embeddings(out)
    assert written.ids == local.ids == [p.paper_id for p in papers]
    assert cosine_rows(written.vectors, by_row).min() >= 0.9999
    assert cosine_rows(written.vectors, local.vectors).min() >= 0.9999
    assert written.info["engine"] == "ray" and written.info["device"] == "ray: 1 cpu actor(s)"  # the rerun's plan
    assert written.info["pooling_detail"] == local.info["pooling_detail"]
    assert "resumed_papers" not in json.loads(out.with_suffix(".meta.json").read_text())
    assert not Path(f"{out}.ray").exists()  # the work folder goes once the files are written
