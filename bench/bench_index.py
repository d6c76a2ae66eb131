"""Similar-paper index: build time, memory, query latency (p50/p99) and recall@10 against exact search.

Vectors are generated, 384-dim and clustered (a mixture of 1,000 Gaussian clusters, unit length),
because uniform random vectors have no neighbourhood structure and make every ANN index look bad.
Queries are perturbed copies of indexed vectors; the truth is exact inner-product search (FAISS flat).

    python bench/bench_index.py                        # 200,000 vectors, FAISS HNSW vs exact
    python bench/bench_index.py --n 1000000 --backends faiss-ivf --nprobe 16,32,64,128   # 1M on 2 cores
    python bench/bench_index.py --n 1000000 --threads 16
    python bench/bench_index.py --n 50000 --backends faiss-hnsw,usearch   # the measurement behind the choice
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from specter_utils.embedding.io import EmbeddingSet  # noqa: E402
from specter_utils.search import HNSW_EF_SEARCH, IVF_NPROBE, build_index, index_bytes  # noqa: E402


def clustered_vectors(n: int, dim: int, clusters: int, seed: int) -> np.ndarray:
    """``n`` unit vectors around ``clusters`` random centres (built in blocks to bound memory)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        block = centres[rng.integers(0, clusters, m)] + 0.5 * rng.standard_normal((m, dim)).astype(np.float32)
        out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def recall_at(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


def latencies(search_one, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One query at a time (the interactive case): per-query milliseconds and the found rows."""
    times, rows = [], []
    for q in queries:
        start = time.perf_counter()
        rows.append(search_one(q[None, :]))
        times.append((time.perf_counter() - start) * 1e3)
    return np.array(times), np.vstack(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000, help="indexed vectors (default 200,000)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument(
        "--backends", default="faiss-hnsw", help="comma list of faiss-flat, faiss-hnsw, faiss-ivf, usearch"
    )
    parser.add_argument(
        "--ef-search", default=f"128,256,{HNSW_EF_SEARCH}", help="HNSW efSearch values to try on one build (comma list)"
    )
    parser.add_argument(
        "--nprobe",
        default=f"16,32,{IVF_NPROBE},128",
        help="IVF lists scanned per query to try on one build (comma list)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import faiss
    import psutil

    faiss.omp_set_num_threads(args.threads)
    print(
        f"{args.n:,} x {args.dim} clustered vectors, {args.queries} queries, k={args.k}, {args.threads} threads, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    vectors = clustered_vectors(args.n, args.dim, 1000, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    queries = vectors[rng.choice(args.n, args.queries, replace=False)]
    queries = queries + 0.05 * rng.standard_normal(queries.shape).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    start = time.perf_counter()
    exact = faiss.IndexFlatIP(args.dim)
    exact.add(vectors)
    _, truth = exact.search(queries, args.k)
    print(f"exact truth: {time.perf_counter() - start:.1f} s for {args.queries} queries (batched)")
    emb = EmbeddingSet([str(i) for i in range(args.n)], vectors, None, {"model": "generated"})
    process = psutil.Process()
    for backend in args.backends.split(","):
        rss = process.memory_info().rss
        start = time.perf_counter()
        if backend.startswith("faiss"):
            index = build_index(emb, backend.removeprefix("faiss-"), threads=args.threads)
            build = time.perf_counter() - start
            size = index_bytes(index)
            settings = {
                "faiss-hnsw": [("efSearch", int(e)) for e in args.ef_search.split(",")],
                "faiss-ivf": [("nprobe", int(e)) for e in args.nprobe.split(",")],
            }.get(backend, [None])

            def search_one(q, index=index):
                return index.index.search(q, args.k)[1]
        elif backend == "usearch":
            from usearch.index import Index

            index = Index(ndim=args.dim, metric="ip", dtype="f32", connectivity=16)
            index.add(np.arange(args.n), vectors, threads=args.threads)
            build = time.perf_counter() - start
            size = index.memory_usage

            settings = [None]

            def search_one(q, index=index):
                return index.search(q, args.k, threads=1).keys.reshape(1, -1)
        else:
            raise SystemExit(f"unknown backend {backend}")
        grown = (process.memory_info().rss - rss) / 1e6
        print(f"{backend:<11} build {build:7.1f} s  size {size / 1e6:7.0f} MB (RSS +{grown:.0f} MB)")
        for setting in settings:
            if setting is not None and setting[0] == "efSearch":
                index.index.hnsw.efSearch = setting[1]
            elif setting is not None:
                index.index.nprobe = setting[1]
            ms, found = latencies(search_one, queries)
            print(
                f"    {f'{setting[0]} {setting[1]}' if setting else 'search':<13} recall@{args.k} {recall_at(found, truth):.3f}  "
                f"latency p50 {np.percentile(ms, 50):.2f} ms  p99 {np.percentile(ms, 99):.2f} ms",
                flush=True,
            )
        del index


if __name__ == "__main__":
    main()
