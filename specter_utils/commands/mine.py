"""``specter-utils mine``: SPECTER (or SPECTROID) triplets from a SPECTER-format training dir."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specter_utils.commands.common import (
    POSITIVE_INT,
    add_max_triplets,
    add_out,
    check_out_dir,
    float_in,
    input_dir,
    staged_dir,
)
from specter_utils.errors import DataError

OWNED = ("train.jsonl", "metrics.json")  # an --out folder holding one of these was written by mine

STRATEGIES = ("specter", "spectroid", "scincl")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mine`` to the top-level parser."""
    parser = subparsers.add_parser(
        "mine",
        help="mine training triplets (train.jsonl, val.jsonl, metrics.json) from a SPECTER-format dir",
        description="Sample triplets as the original SPECTER code does: per query up to 5, ceil(0.3 * 5) = 2 hard "
        "(negative: a citation of a citation) and the rest easy (negative: a random paper). Queries with fewer "
        "than 3 candidates or a single count are skipped; every skip is counted in metrics.json.",
    )
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="SPECTER training folder (data.json, metadata.json, train.txt)"
    )
    add_out(parser, "output folder (created if missing; replaced whole with --overwrite)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=None,
        help="specter (the original sampler, default), spectroid (positives drawn in proportion to their "
        "in-citations) or scincl (positives and hard negatives from bands of nearest neighbours in a citation-graph "
        "embedding, SciNCL; see specter_utils.triplets.scincl)",
    )
    parser.add_argument("--spectroid", action="store_true", help="the same as --strategy spectroid")
    parser.add_argument(
        "--no-hard-negatives", action="store_true", help="Table 2 ablation: every triplet easy (random negative)"
    )
    add_max_triplets(parser, None, "cap on train triplets (whole random queries; default: all)")
    parser.add_argument("--triplets-per-query", type=POSITIVE_INT, default=5, help="triplets per query")
    parser.add_argument("--hard-ratio", type=float_in(0.0, 1.0), default=0.3, help="share of hard triplets, rounded up")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Mine, write the three files atomically and print the counts."""
    from specter_utils.triplets.sampler import SamplerConfig, mine_dir

    strategy = args.strategy or ("spectroid" if args.spectroid else "specter")
    if args.spectroid and strategy != "spectroid":
        raise DataError(f"--spectroid contradicts --strategy {strategy}", "--strategy")
    input_dir(args.data_dir, "--data-dir")
    for name in ("data.json", "metadata.json"):
        if not (args.data_dir / name).is_file():
            raise DataError(f"--data-dir: no {name} in the folder (a SPECTER training folder)", args.data_dir)
    check_out_dir(args.out, args.overwrite, OWNED)
    if strategy == "scincl":
        return _run_scincl(args)
    config = SamplerConfig(
        triplets_per_query=args.triplets_per_query,
        hard_ratio=args.hard_ratio,
        no_hard_negatives=args.no_hard_negatives,
        spectroid=strategy == "spectroid",
        max_triplets=args.max_triplets,
        seed=args.seed,
    )
    with staged_dir(args.out) as stage:  # the three files appear together, or the old --out stays whole
        metrics = mine_dir(args.data_dir, stage, config)
    _print_counts(metrics)
    print(f"papers: {json.dumps(metrics['papers'])}")
    print(f"wrote {args.out}/train.jsonl, val.jsonl, metrics.json")
    return 0


def _run_scincl(args: argparse.Namespace) -> int:
    """SciNCL neighbourhood sampling; the SPECTER-only options are errors, not silently ignored."""
    from specter_utils.triplets.scincl import ScinclConfig, mine_scincl_dir

    if args.no_hard_negatives or args.triplets_per_query != 5 or args.hard_ratio != 0.3:
        raise DataError(
            "--no-hard-negatives, --triplets-per-query and --hard-ratio apply to the specter and spectroid "
            "strategies only (scincl: 5 positives, 2 hard and 3 random negatives per query)",
            "--strategy",
        )
    with staged_dir(args.out) as stage:
        metrics = mine_scincl_dir(args.data_dir, stage, ScinclConfig(max_triplets=args.max_triplets, seed=args.seed))
    _print_counts(metrics)
    train = metrics["train"]
    print(
        f"graph: {train['graph_nodes']:,} nodes; positives = kNN ranks {train['positive_ranks'][0]}-"
        f"{train['positive_ranks'][1]}, hard negatives = ranks {train['hard_negative_ranks'][0]}-"
        f"{train['hard_negative_ranks'][1]} (SciNCL's 20-24 and 3998-3999 of 52.6M, log-rescaled)"
    )
    print(f"wrote {args.out}/train.jsonl, val.jsonl, metrics.json")
    return 0


def _print_counts(metrics: dict) -> None:
    """One line per split: triplets by kind, queries used, and why the others were skipped."""
    for split in ("train", "val"):
        m = metrics[split]
        t = m["triplets"]
        skipped = ", ".join(f"{k} {v}" for k, v in m["queries_skipped"].items() if v) or "none"
        print(
            f"{split}: {t['total']:,} triplets ({t['hard']:,} hard, {t['easy']:,} easy) from "
            f"{m['queries_used']:,}/{m['queries']:,} queries; skipped: {skipped}"
        )
