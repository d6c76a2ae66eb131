"""Triplet mining at the paper's scale: ~146K train queries -> ~684K triplets (docs/protocol.md section 2).

Generates a SPECTER-format graph with SPECTER-like degrees (1-10 direct citations, about 4x as many
citations of citations, as in the sample shipped with the original code; ~6% of queries cite only
leaves and are skipped), mines it with the vectorised sampler on one core, and compares the time per
query with the pure-Python reference (the original's per-query easy pool) run on a subset.

    python bench/bench_mining.py [--queries 146000] [--papers 600000] [--reference-queries 300]

Targets: under 60 s and under 2 GiB peak memory.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core, as the target says

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from specter_utils.data.records import Paper  # noqa: E402
from specter_utils.data.specter_format import SpecterData  # noqa: E402
from specter_utils.train_config import SamplerConfig  # noqa: E402
from specter_utils.triplets.sampler import mine, reference_sample  # noqa: E402


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def generate(n_train: int, n_val: int, n_papers: int, seed: int = 0) -> SpecterData:
    """A SPECTER-format dataset with SPECTER-like degrees and Zipf-like citation popularity."""
    rng = np.random.default_rng(seed)
    ids = [f"{x:040x}" for x in rng.integers(0, 2**62, size=n_papers, dtype=np.int64).tolist()]
    ids = list(dict.fromkeys(ids))
    n_papers = len(ids)
    n_queries = n_train + n_val
    n5 = np.clip(np.rint(rng.lognormal(np.log(4.5), 0.6, n_queries)), 1, 10).astype(int)
    n1 = np.minimum(np.rint(n5 * rng.uniform(1, 7, n_queries)), 70).astype(int)
    n1[rng.random(n_queries) < 0.06] = 0  # cites only leaves: skipped (all candidates share one count)
    popularity = 1.0 / np.arange(1, n_papers + 1) ** 0.8  # a few papers are cited a lot
    popularity /= popularity.sum()
    cited = rng.choice(n_papers, size=int(n5.sum()), p=popularity)
    second = rng.integers(0, n_papers, size=int(n1.sum()))
    graph: dict[str, dict[str, int]] = {}
    i5 = i1 = 0
    for q in range(n_queries):
        query = ids[q]
        row = {ids[c]: 5 for c in cited[i5 : i5 + n5[q]].tolist() if c != q}
        for c in second[i1 : i1 + n1[q]].tolist():
            if c != q and ids[c] not in row:
                row[ids[c]] = 1
        i5 += n5[q]
        i1 += n1[q]
        graph[query] = row
    metadata = {pid: Paper(pid, f"Title {i}", "" if i % 10 == 0 else "Abstract.") for i, pid in enumerate(ids)}
    splits = {"train": ids[:n_train], "val": ids[n_train:n_queries], "test": []}
    return SpecterData(graph=graph, metadata=metadata, splits=splits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=146_000, help="train queries (paper: ~146K)")
    parser.add_argument("--val-queries", type=int, default=32_000, help="val queries (paper: ~32K)")
    parser.add_argument("--papers", type=int, default=600_000, help="papers in metadata.json (easy pool)")
    parser.add_argument("--reference-queries", type=int, default=300, help="subset for the pure-Python reference")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="also time writing train.jsonl/val.jsonl")
    args = parser.parse_args()

    t0 = time.perf_counter()
    data = generate(args.queries, args.val_queries, args.papers, args.seed)
    t_gen = time.perf_counter() - t0
    rss_input = peak_rss_mib()
    print(
        f"generated {len(data.splits['train']):,} train + {len(data.splits['val']):,} val queries, "
        f"{sum(map(len, data.graph.values())):,} candidate entries, {len(data.metadata):,} papers "
        f"in {t_gen:.1f} s (peak RSS so far {rss_input:.0f} MiB)"
    )

    config = SamplerConfig(seed=args.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    result = mine(data, config)
    t_mine, c_mine = time.perf_counter() - t0, time.process_time() - c0
    rss_mine = peak_rss_mib()
    train = result.train.metrics
    print(
        f"mined {train['triplets']['total']:,} train triplets ({train['triplets']['hard']:,} hard, "
        f"{train['triplets']['easy']:,} easy) from {train['queries_used']:,} queries, and "
        f"{result.val.metrics['triplets']['total']:,} val triplets, in {t_mine:.1f} s wall, {c_mine:.1f} s CPU"
    )
    print(f"  skipped train queries: {train['queries_skipped']}")
    print(f"peak RSS {rss_mine:.0f} MiB (input data alone {rss_input:.0f} MiB)")

    c0 = time.process_time()
    result_sp = mine(data, SamplerConfig(seed=args.seed, spectroid=True))
    c_spectroid = time.process_time() - c0
    print(
        f"SPECTROID variant: {result_sp.train.metrics['triplets']['total']:,} train triplets in {c_spectroid:.1f} s CPU"
    )
    del result_sp

    if args.write:
        with tempfile.TemporaryDirectory() as tmp:
            c0 = time.process_time()
            result.train.triplets.write(Path(tmp) / "train.jsonl")
            result.val.triplets.write(Path(tmp) / "val.jsonl")
            print(f"wrote train.jsonl + val.jsonl in {time.process_time() - c0:.1f} s CPU")

    subset = data.splits["train"][: args.reference_queries]
    c0 = time.process_time()
    ref_triplets, _ = reference_sample(data, subset, config)
    c_ref = time.process_time() - c0
    n_total = len(data.splits["train"]) + len(data.splits["val"])
    per_query_ref = c_ref / len(subset)
    per_query_fast = c_mine / n_total
    print(
        f"pure-Python reference: {len(ref_triplets):,} triplets from {len(subset)} queries in {c_ref:.1f} s CPU "
        f"-> {per_query_ref * 1e3:.2f} ms/query, extrapolated {per_query_ref * n_total / 60:.0f} min "
        f"for {n_total:,} queries"
    )
    print(f"vectorised: {per_query_fast * 1e6:.1f} us/query CPU; speed-up x{per_query_ref / per_query_fast:,.0f}")
    ok = c_mine < 60 and rss_mine < 2048
    print(f"targets (< 60 s on one core, < 2 GiB peak): {'met' if ok else 'NOT met'} (CPU time is the one-core figure;")
    print("  wall time is higher when other processes share the machine)")


if __name__ == "__main__":
    main()
