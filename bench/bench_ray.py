"""``embed --engine ray`` against the local embedder, on the same hep-th papers, in one process.

Times the local embedder (torch, the model's own pooling), then Ray Data with 1 and 2 CPU actors on a
local Ray this script starts (its start-up is timed apart and counted in the end-to-end figure), and prints
docs/s, each Ray run's ratio to the local run, and the minimum cosine of its vectors to the local ones.

    python bench/bench_ray.py                          # 2,000 hep-th papers, 256 wordpieces, 1 and 2 actors
    python bench/bench_ray.py --n 200 --workers 1      # a quick look
    python bench/bench_ray.py --n 48 --max-length 48 --workers 2 --readers v1 v2 --repeat 2   # fixed cost per job

``--readers``: Ray Data's parquet reader for the input shards (v1: the engine's; v2: Ray Data's default), each
actor count run once per reader and repeat, alternating (A B A B), so both see the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_embedding import pick_papers  # noqa: E402

from specter_utils.config import EmbedConfig  # noqa: E402
from specter_utils.embedding import ray_engine  # noqa: E402
from specter_utils.embedding.embed import EmbedRun, embed_to_file  # noqa: E402
from specter_utils.embedding.ray_engine import embed_with_ray, init_ray  # noqa: E402
from specter_utils.executed import machine_info  # noqa: E402
from specter_utils.models import prepare_offline_env  # noqa: E402
from specter_utils.paths import hepth_dir  # noqa: E402


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="hep-th papers (default 2,000)")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="CPU actor counts (default 1 2)")
    parser.add_argument("--src", type=Path, default=None, help="hep-th folder (default ../shared/data/hepth)")
    parser.add_argument(
        "--readers", nargs="+", choices=["v1", "v2"], default=["v1"], help="parquet readers (default v1)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each actor count and reader (default 1)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    import ray

    prepare_offline_env()
    papers = pick_papers(args.src or hepth_dir(), args.n)
    spec = EmbedConfig(model=args.model, batch_size=args.batch_size, max_length=args.max_length)
    run = EmbedRun(progress=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        local = embed_to_file(spec, papers, Path(tmp) / "local.jsonl", run)
        local_s = time.perf_counter() - start
        rows.append({"engine": "local (torch)", "actors": "-", "seconds": local_s, "docs_per_s": len(papers) / local_s})

        start = time.perf_counter()
        init_ray(ray, {"num_cpus": os.cpu_count(), "include_dashboard": False, "log_to_driver": False})
        ray.data.DataContext.get_current().enable_progress_bars = False
        startup_s = time.perf_counter() - start
        runs = [(w, reader) for _ in range(args.repeat) for w in args.workers for reader in args.readers]
        for index, (workers, reader) in enumerate(runs):
            out = Path(tmp) / f"ray-{index}.jsonl"
            ray_engine.USE_DATASOURCE_V2 = reader == "v2"
            start = time.perf_counter()
            result = embed_with_ray(spec, papers, out, run, workers=workers)
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "engine": f"ray ({reader})",
                    "actors": workers,
                    "seconds": seconds,
                    "docs_per_s": len(papers) / seconds,
                    "min_cosine": min_cosine(result.vectors, local.vectors),
                    "same_ids": result.ids == local.ids,
                }
            )
        ray.shutdown()

    cpu = os.cpu_count()
    print(
        f"{len(papers)} hep-th papers, {args.model}, {args.max_length} wordpieces, batch {args.batch_size}, {cpu} CPUs"
    )
    print(f"Ray start-up (ray.init, local): {startup_s:.1f} s, not in the Ray rows below")
    print(f"{'engine':<14} {'actors':>6} {'seconds':>8} {'docs/s':>8} {'vs local':>9} {'min cos':>9}  same ids")
    for row in rows:
        ratio = row["docs_per_s"] / rows[0]["docs_per_s"]
        cos = f"{row['min_cosine']:.6f}" if "min_cosine" in row else "-"
        same = row.get("same_ids", "-")
        print(
            f"{row['engine']:<14} {row['actors']!s:>6} {row['seconds']:8.1f} {row['docs_per_s']:8.1f} "
            f"{ratio:8.2f}x {cos:>9}  {same}"
        )
    for row in rows[1:]:
        overhead = row["seconds"] - rows[0]["seconds"]
        print(f"ray, {row['actors']} actor(s): {overhead:+.1f} s against local ({overhead / rows[0]['seconds']:+.0%})")
    readers = sorted(set(args.readers))
    if len(readers) > 1:  # both readers: each one's mean time per job, and their ratio
        by_reader = {r: [x for x in rows[1:] if x["engine"] == f"ray ({r})"] for r in readers}
        for reader, runs_of in by_reader.items():
            for workers in args.workers:
                times = [x["seconds"] for x in runs_of if x["actors"] == workers]
                print(f"{reader}, {workers} actor(s): mean {np.mean(times):.1f} s over {len(times)} run(s)")
        mean = {r: np.mean([x["seconds"] for x in runs_of]) for r, runs_of in by_reader.items()}
        print(f"v2 / v1 time per job: {mean['v2'] / mean['v1']:.2f}x")
    if args.json:
        settings = {**vars(args), "src": str(args.src), "json": str(args.json)}
        record = {"startup_s": startup_s, "machine": machine_info(), "settings": settings, "rows": rows}
        args.json.write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
