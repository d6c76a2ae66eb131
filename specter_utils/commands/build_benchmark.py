"""``specter-utils build-benchmark``: a SCIDOCS-layout benchmark and a leakage-free training dir."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specter_utils.commands.common import COUNT, POSITIVE_INT, add_out, check_out_dir, staged_dir

OWNED = ("benchmark.json",)  # an --out folder holding this was written by a benchmark build


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
    add_out(parser, "output folder; the build owns it: a rebuild (--overwrite) replaces it whole")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--n-queries", type=POSITIVE_INT, default=1000, help="queries per ranking task, val + test")
    parser.add_argument(
        "--max-class-papers",
        type=COUNT,
        default=0,
        help="cap on the classification task's papers, a stratified sample over all classes; each class keeps at "
        "least 3 (one per split), so many small classes can exceed it (default: 0, all)",
    )
    parser.add_argument(
        "--negative-pool",
        type=COUNT,
        default=0,
        help="draw each query's random negatives from a seeded sample of this many papers, which bounds the papers "
        "to embed per model (default: 0, every paper with text)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the corpus, build, print the counts (also saved in benchmark.json)."""
    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.load import load_corpus

    check_out_dir(args.out, args.overwrite, OWNED)
    corpus = load_corpus(args.corpus, args.src) if args.corpus == "hepth" else load_corpus("synthetic", seed=args.seed)
    with staged_dir(args.out) as stage:  # built aside, then put in place of --out whole (nothing left on failure)
        info = build_benchmark(
            corpus,
            stage,
            seed=args.seed,
            n_queries=args.n_queries,
            max_class_papers=args.max_class_papers,
            negative_pool=args.negative_pool,
        )
    print(json.dumps(info["counts"], indent=2))
    note_class_cap(info["counts"]["mag"], args.max_class_papers)
    if info["synthetic"]:
        print("NOTE: SYNTHETIC corpus (benchmark.json says so); its numbers say nothing about real papers")
    print(f"wrote {args.out}/scidocs, {args.out}/train and {args.out}/benchmark.json")
    return 0


def note_class_cap(mag: dict, cap: int) -> None:
    """Say why the classification task holds more papers than ``--max-class-papers`` (each class keeps 3)."""
    kept = sum(mag.get(split, 0) for split in ("train", "val", "test"))
    if cap and kept > cap:
        print(
            f"note: --max-class-papers {cap}: the classification task has {kept} papers, because each of its "
            f"{mag.get('classes', 0)} classes keeps at least 3 (one per split)",
            file=sys.stderr,
        )
