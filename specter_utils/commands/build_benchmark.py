"""``specter-utils build-benchmark``: a SCIDOCS-layout benchmark and a leakage-free training dir."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``build-benchmark`` to the top-level parser."""
    parser = subparsers.add_parser(
        "build-benchmark",
        help="build a SCIDOCS-layout benchmark (cite, cocite, venue classification) plus a training dir",
        description="From a citation corpus, write DIR/scidocs (cite and cocite qrels for held-out queries, the "
        "corpus labels as the mag/ classification task, paper_metadata_*.json), DIR/train (SPECTER-format, "
        "without the held-out queries or their edges) and DIR/benchmark.json (counts).",
    )
    parser.add_argument("--corpus", required=True, choices=("hepth", "synthetic"), help="corpus kind")
    parser.add_argument(
        "--src", type=Path, default=None, help="hepth: folder with the SNAP files (default: ../shared/data/hepth)"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder (created if missing)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--n-queries", type=int, default=1000, help="queries per ranking task, val + test")
    parser.add_argument(
        "--max-class-papers",
        type=int,
        default=0,
        help="cap on the classification task's papers, a stratified sample over all classes (default: 0: all)",
    )
    parser.add_argument(
        "--negative-pool",
        type=int,
        default=0,
        help="draw each query's random negatives from a seeded sample of this many papers, which bounds the papers "
        "to embed per model (default: 0: every paper with text)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the corpus, build, print the counts (also saved in benchmark.json)."""
    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.load import load_corpus

    corpus = load_corpus(args.corpus, args.src) if args.corpus == "hepth" else load_corpus("synthetic", seed=args.seed)
    info = build_benchmark(
        corpus,
        args.out,
        seed=args.seed,
        n_queries=args.n_queries,
        max_class_papers=args.max_class_papers,
        negative_pool=args.negative_pool,
    )
    print(json.dumps(info["counts"], indent=2))
    if info["synthetic"]:
        print("NOTE: SYNTHETIC corpus (benchmark.json says so); its numbers say nothing about real papers")
    print(f"wrote {args.out}/scidocs, {args.out}/train and {args.out}/benchmark.json")
    return 0
