"""``embed --engine ray``: the embedding job as a Ray Data pipeline, on this machine or on a Ray cluster.

1. The driver reads the metadata with the project's readers, builds SPECTER's text per paper, sorts the
   papers by wordpiece length (as the local embedder does) and writes them as parquet input shards, one per
   chunk of whole batches, into ``OUT.ray/input/``.
2. Ray Data reads the shards of the chunks not yet done (``read_parquet``), and ``map_batches`` runs them
   through a pool of actors that each hold one model replica (``compute=ActorPoolStrategy``; one GPU an
   actor where the cluster has GPUs, CPU actors otherwise). Each actor writes every batch's vectors at once
   as a parquet shard under ``OUT.ray/vectors/chunk=N/`` (Ray's own ``write_parquet`` gathers small blocks
   and writes at the end, which would leave nothing to resume from).
3. The driver assembles the vectors in input order and writes the same ``FILE.jsonl`` / ``.npy`` /
   ``.ids.txt`` / ``.meta.json`` set as the local path, then removes ``OUT.ray/``.

A killed run started again with the same arguments reads the vector shards already written (a truncated
one is dropped), and sends only the chunks that are not complete back through Ray.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.embed import (
    _RUN_KEYS,
    DEFAULT_CHUNK_SIZE,
    EmbedRun,
    _ChunkStore,
    _fingerprint,
    _stable_meta,
    as_paper_list,
    length_order,
    paper_texts,
    plan_chunks,
)
from specter_utils.embedding.encoder import encoder_for
from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.errors import DataError
from specter_utils.io import atomic_write, read_json, write_json
from specter_utils.models import prepare_offline_env

ACTORS = "actors.json"  # the actor plan of the run, so a resumed run states the same device
# kept free of CPU actors: Ray Data's file listing asks a whole CPU, and the job waits for ever without it
READ_CPUS = 1.0
# Ray Data's parquet reader for the input shards (a few small files, one per chunk): V1 lists them in one task; V2
# starts footer-reading actors, a Python process each, for every read (bench/bench_ray.py --readers v1 v2)
USE_DATASOURCE_V2 = False


class RayUnavailable(DataError):
    """Ray is not installed, or the cluster named by ``--ray-address`` does not answer."""


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise RayUnavailable("--engine ray needs Ray Data: pip install 'specter-utils[scale]' (ray[data])") from None
    return ray


def check_address(address: str, timeout: float = 5.0) -> None:
    """Fail fast, in one line, when ``address`` (``host:port`` or ``ray://host:port``) does not answer; ``auto``
    (a cluster started on this machine with ``ray start``) is left to ``ray.init``."""
    if address == "auto":
        return
    host, _, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"--ray-address must be HOST:PORT, ray://HOST:PORT or auto, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RayUnavailable(f"Ray address {address} does not answer ({exc.strerror or exc})") from None


def init_ray(ray: Any, kwargs: dict[str, Any], attempts: int = 2) -> None:
    """``ray.init(**kwargs)``; a local start is tried twice, since a loaded machine can miss Ray's fixed 30 s
    wait for its raylet. A failure is one ``RayUnavailable`` line."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(**kwargs)
            return
        except Exception as exc:  # noqa: BLE001 - ray.init raises bare Exceptions (e.g. a node that times out)
            with contextlib.suppress(Exception):
                ray.shutdown()
            if attempt == attempts:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                where = kwargs.get("address") or "a new local instance"
                flag = "--ray-address" if kwargs.get("address") else "--engine ray"
                raise RayUnavailable(f"could not start or reach Ray at {where}: {first}", flag) from None


@contextlib.contextmanager
def ray_session(address: str | None, num_cpus: int | None = None, quiet: bool = True) -> Iterator[Any]:
    """Connect to the cluster at ``address``, or start a local Ray (``ray.init()``) and stop it afterwards. The
    driver's Ray Data settings this job changes (progress bars, parquet reader) are put back afterwards."""
    ray = _ray()
    if address:
        check_address(address)
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": not quiet}
        if quiet:
            kwargs["logging_level"] = logging.WARNING
        kwargs.update({"address": address} if address else {"num_cpus": num_cpus or os.cpu_count() or 1})
        init_ray(ray, kwargs, attempts=1 if address else 2)
    context = ray.data.DataContext.get_current()
    kept = {"enable_progress_bars": context.enable_progress_bars, "use_datasource_v2": context.use_datasource_v2}
    context.enable_progress_bars = not quiet
    context.use_datasource_v2 = USE_DATASOURCE_V2
    try:
        yield ray
    finally:
        for name, value in kept.items():
            setattr(context, name, value)
        if started:
            ray.shutdown()


def plan_actors(resources: dict[str, float], workers: int | None, use_gpu: bool) -> dict[str, Any]:
    """How many model replicas, and what each asks of Ray.

    GPU actors take one GPU each (default: every GPU). CPU actors default to one per CPU but one, and share
    what is left after ``READ_CPUS`` (Ray's logical CPUs, not threads): Ray Data's list, read and write tasks
    need that CPU, and a pool holding every CPU starves them and hangs (a known Ray Data issue).
    """
    cpus = float(resources.get("CPU", 1))
    if use_gpu:
        gpus = int(resources.get("GPU", 0))
        size = workers or gpus
        if size > gpus:
            raise DataError(f"--ray-workers {size} asks for more GPU actors than the cluster's {gpus} GPUs")
        return {"size": size, "num_gpus": 1, "num_cpus": 1.0, "threads": 1, "device": "cuda"}
    if cpus < 1 + READ_CPUS:
        raise DataError(
            f"--engine ray needs at least {1 + READ_CPUS:g} CPUs ({READ_CPUS:g} kept for reading); the cluster has {cpus:g}"
        )
    size = workers or max(1, int(cpus - READ_CPUS))
    if size < 1:
        raise DataError(f"--ray-workers must be at least 1, got {size}")
    per_actor = min(1.0, (cpus - READ_CPUS) / size)
    return {"size": size, "num_gpus": 0, "num_cpus": per_actor, "threads": max(1, int(cpus // size)), "device": "cpu"}


def io_cpus(resources: dict[str, float], actors: dict[str, Any]) -> float:
    """What one read or write task asks: a share of the CPUs the actors leave (Ray's default of 1 CPU a task
    cannot be placed once the actors hold more than ``CPUs - 1``, and the job would wait for ever)."""
    left = float(resources.get("CPU", 1)) - actors["size"] * actors["num_cpus"]
    return max(0.05, min(1.0, left / 2))


class EmbedActor:
    """One model replica in a Ray actor. Each batch of ``text`` rows is embedded and its vectors written at once,
    atomically, as ``vectors/chunk=N/rows-FIRST-COUNT.parquet`` (on a cluster: storage every node can write), so
    a killed run loses at most the batches in flight. Returns the rows done (a few bytes back to the driver)."""

    def __init__(self, spec: EmbedConfig, threads: int, out_dir: str) -> None:
        if spec.device == "cpu":
            torch.set_num_threads(threads)
        prepare_offline_env()
        self.encoder = encoder_for(spec)
        self.out_dir = Path(out_dir)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(text) for text in batch["text"]]
        vectors = self.encoder.encode(texts, max(1, len(texts)))
        chunks, rows = np.asarray(batch["chunk"]), np.asarray(batch["row"])
        for chunk in np.unique(chunks):  # a batch lies within one chunk, but a short last block may mix
            keep = chunks == chunk
            write_vectors(self.out_dir / f"chunk={int(chunk)}", rows[keep], vectors[keep])
        return {"row": rows}


def write_vectors(folder: Path, rows: np.ndarray, vectors: np.ndarray) -> Path:
    """Rows and their vectors as one parquet file, written atomically (``io.atomic_write``)."""
    folder.mkdir(parents=True, exist_ok=True)
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel())
    vector = pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
    table = pa.table({"row": pa.array(rows, pa.int64()), "vector": vector})
    path = folder / f"rows-{int(rows.min()):09d}-{len(rows)}.parquet"
    with atomic_write(path, "wb") as handle:
        pq.write_table(table, handle)
    return path


def _write_input(path: Path, chunk: int, rows: np.ndarray, ids: list[str], texts: list[str]) -> None:
    """One input shard, written atomically (``io.atomic_write``), so a shard on disk is always whole."""
    table = pa.table(
        {
            "chunk": pa.array(np.full(len(rows), chunk), pa.int64()),
            "row": pa.array(rows, pa.int64()),
            "paper_id": pa.array([ids[i] for i in rows], pa.string()),
            "text": pa.array([texts[i] for i in rows], pa.string()),
        }
    )
    with atomic_write(path, "wb") as handle:
        pq.write_table(table, handle)


def finished_rows(vectors_dir: Path, dim: int) -> dict[int, np.ndarray]:
    """Row -> vector from every readable shard under ``vectors_dir``; an unreadable (truncated) shard is removed."""
    done: dict[int, np.ndarray] = {}
    for path in sorted(vectors_dir.rglob("rows-*.parquet")) if vectors_dir.exists() else []:
        try:
            table = pq.read_table(path, columns=["row", "vector"])
        except Exception:  # noqa: BLE001 - pyarrow raises several types for a truncated file
            path.unlink()
            continue
        rows = table.column("row").to_numpy()
        flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        if len(rows) and flat.size != len(rows) * dim:
            raise DataError(f"vector shard holds {flat.size // max(1, len(rows))}-dim vectors, expected {dim}", path)
        for row, vector in zip(rows, flat.reshape(len(rows), dim), strict=True):
            done.setdefault(int(row), vector)
    return done


def embed_with_ray(
    spec: EmbedConfig,
    papers: dict[str, Paper] | list[Paper],
    out: str | Path,
    run: EmbedRun | None = None,
    *,
    workers: int | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
) -> EmbeddingSet:
    """Embed ``papers`` as ``spec`` says on Ray Data and write ``out`` exactly as ``embed_to_file`` does (rows in
    input order). ``run.chunk_size`` papers make an input shard, the unit of resumption (default 1024).

    Args:
        workers: model replicas (default: one per GPU, or one per CPU but one).
        address: an existing cluster (``HOST:PORT``, ``ray://HOST:PORT`` or ``auto``); None starts Ray here.
        num_cpus: CPUs of a Ray started here (default: all of this machine's).
    """
    run = run or EmbedRun()
    batch_size, chunk_size, dtype = spec.batch_size, run.chunk_size, spec.torch_dtype or "auto"

    out = Path(out)
    if out.suffix != ".jsonl":
        raise DataError(f"--out must end in .jsonl, got {out}")
    if batch_size < 1:
        raise DataError(f"--batch-size must be at least 1, got {batch_size}")
    _ray()
    if address:
        check_address(address)  # before the model loads: a dead address is a one-line error, not a minute's wait
    items = as_paper_list(papers)
    started = time.perf_counter()
    # The driver holds the model only to read its settings and tokenizer; the actors load their own.
    probe = encoder_for(spec.but(device="cpu", dtype="fp32"))
    ids = [paper.paper_id for paper in items]
    texts = paper_texts(items, probe.sep)
    order = length_order(probe.token_lengths(texts))
    chunks = plan_chunks(order, batch_size, chunk_size or DEFAULT_CHUNK_SIZE)
    meta = {**probe.info(), "batch_size": batch_size, "sorted_by_length": True, **(run.info or {})}
    dim = probe.dim
    del probe

    work = Path(f"{out}.ray")
    if not run.resume and work.exists():
        shutil.rmtree(work)
    manifest = {
        **{k: meta[k] for k in _RUN_KEYS if k != "dtype"},
        "dtype": dtype,
        "inputs": _fingerprint(ids, texts),
        "count": len(ids),
        "batch_size": batch_size,
        "chunk_size": chunk_size or DEFAULT_CHUNK_SIZE,
    }
    _ChunkStore(work, manifest)  # the local path's rule: resume only a run with the same settings and inputs
    input_dir, vectors_dir = work / "input", work / "vectors"
    input_dir.mkdir(exist_ok=True)
    inputs = [input_dir / f"chunk-{index:06d}.parquet" for index in range(len(chunks))]
    for index, (rows, path) in enumerate(zip(chunks, inputs, strict=True)):
        if not path.exists():
            _write_input(path, index, rows, ids, texts)

    done = finished_rows(vectors_dir, dim)
    pending = [i for i, rows in enumerate(chunks) if any(int(r) not in done for r in rows)]
    resumed = sum(len(chunks[i]) for i in range(len(chunks)) if i not in set(pending))
    actors: dict[str, Any] = {}
    if pending:
        with ray_session(address, num_cpus, quiet=not run.progress) as ray:
            use_gpu = ray.cluster_resources().get("GPU", 0) >= 1
            actors = plan_actors(ray.cluster_resources(), workers, use_gpu)
            write_json(work / ACTORS, actors)
            task_cpus = io_cpus(ray.cluster_resources(), actors)
            dataset = ray.data.read_parquet(
                [str(inputs[i]) for i in pending],
                columns=["chunk", "row", "text"],
                num_cpus=task_cpus,
                override_num_blocks=len(pending),
            )
            # blocks of one batch each, streamed: else Ray may hand all the (small) files to one actor as one input
            dataset = dataset.repartition(target_num_rows_per_block=batch_size)
            embedded = dataset.map_batches(
                EmbedActor,
                fn_constructor_kwargs={
                    "spec": spec.but(dtype=dtype, device=actors["device"]),
                    "threads": actors["threads"],
                    "out_dir": str(vectors_dir.resolve()),
                },
                batch_size=batch_size,
                batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=actors["size"]),
                num_cpus=actors["num_cpus"],
                num_gpus=actors["num_gpus"],
            )
            returned = sum(len(b["row"]) for b in embedded.iter_batches(batch_size=None, batch_format="numpy"))
            if returned != sum(len(chunks[i]) for i in pending):
                raise DataError(f"Ray embedded {returned} rows of {sum(len(chunks[i]) for i in pending)}", work)
        done = finished_rows(vectors_dir, dim)

    if not actors and (work / ACTORS).exists():
        actors = read_json(work / ACTORS)
    missing = [ids[r] for r in range(len(ids)) if r not in done]
    if missing:
        raise DataError(f"Ray returned no vector for {len(missing)} paper(s)", work, record_id=missing[0])
    matrix = np.vstack([done[r] for r in range(len(ids))]).astype(np.float32, copy=False)
    if not np.isfinite(matrix).all():
        bad = int(np.argmax(~np.isfinite(matrix).all(axis=1)))
        raise DataError("model produced NaN or infinity", record_id=ids[bad])
    if actors:
        meta["device"] = f"ray: {actors['size']} {actors['device']} actor(s)"
        meta["dtype"] = "float32" if actors["device"] == "cpu" and dtype == "auto" else dtype
    meta["engine"] = "ray"
    if resumed:
        meta["resumed_papers"] = resumed
    result = EmbeddingSet(ids, matrix, [paper.title for paper in items], meta)
    write_embeddings(out, EmbeddingSet(ids, matrix, result.titles, _stable_meta(meta)))
    shutil.rmtree(work, ignore_errors=True)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    return result
