"""``specter-utils mine``: SPECTER (or SPECTROID) triplets from a SPECTER-format training dir."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specter_utils.commands.common import (
    add_config_flags,
    add_flag,
    add_out,
    check_out_dir,
    config_flag,
    given_config_values,
    input_dir,
    staged_dir,
)
from specter_utils.errors import DataError
from specter_utils.layout import DATA_FILE, METADATA_FILE, METRICS_FILE, TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE
from specter_utils.train_config import SamplerConfig

OWNED = (TRIPLETS_TRAIN_FILE, METRICS_FILE)  # an --out folder holding one of these was written by mine
# The SamplerConfig fields that are flags; ``seed`` is one too, as every command's.
FLAG_FIELDS = (
    "strategy",
    "positives",
    "no_hard_negatives",
    "triplets_per_query",
    "hard_ratio",
    "margin_fraction",
    "max_triplets",
    "scincl_fraction",
    "seed",
)
# Options of the SPECTER sampler that SciNCL's neighbourhood sampling does not have.
SPECTER_ONLY = (
    "no_hard_negatives",
    "triplets_per_query",
    "hard_ratio",
    "margin_fraction",
    "positives",
    "scincl_fraction",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``mine`` to the top-level parser."""
    parser = subparsers.add_parser(
        "mine",
        help="mine training triplets (train.jsonl, val.jsonl, metrics.json) from a SPECTER-format dir",
        description="Sample triplets as the original SPECTER code does: per query up to 5, ceil(0.3 * 5) = 2 hard "
        "(negative: a citation of a citation) and the rest easy (negative: a random paper). Queries with fewer "
        "than 3 candidates or a single count are skipped; every skip is counted in metrics.json. Every flag is a "
        "setting of the run specification's mining section (specter_utils.train_config.SamplerConfig).",
    )
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="SPECTER training folder (data.json, metadata.json, train.txt)"
    )
    add_out(parser, "output folder (created if missing; replaced whole with --overwrite)")
    add_config_flags(
        parser,
        SamplerConfig,
        FLAG_FIELDS,
        old_flags={"max_triplets": "--max-train-triplets"},
        metavars={"max_triplets": "N"},
    )
    add_flag(parser, "--spectroid", "--use-spectroid", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Mine, write the three files atomically and print the counts."""
    from specter_utils.spec import section_config
    from specter_utils.workflow.mine import mine_triplets

    values = given_config_values(args, SamplerConfig)
    if args.spectroid:  # the former spelling of --strategy spectroid
        print("specter-utils mine: warning: --spectroid is deprecated; use --strategy spectroid", file=sys.stderr)
        if values.get("strategy", "spectroid") != "spectroid":
            raise DataError(f"--spectroid contradicts --strategy {values['strategy']}", "--strategy")
        values["strategy"] = "spectroid"
    config = section_config("mining", **values)  # the run specification's layers, as train and run resolve
    input_dir(args.data_dir, "--data-dir")
    for name in (DATA_FILE, METADATA_FILE):
        if not (args.data_dir / name).is_file():
            raise DataError(f"--data-dir: no {name} in the folder (a SPECTER training folder)", args.data_dir)
    if config.strategy == "scincl":
        given = [config_flag(name) for name in SPECTER_ONLY if name in values]
        if given:
            raise DataError(
                f"{', '.join(given)} apply to the specter and spectroid strategies only (scincl: 5 positives, 2 hard "
                "and 3 random negatives per query)",
                "--strategy",
            )
    check_out_dir(args.out, args.overwrite, OWNED)
    with staged_dir(args.out) as stage:  # the three files appear together, or the old --out stays whole
        metrics = mine_triplets(config, args.data_dir, stage)  # the workflow's one dispatch over the strategies
    _print_counts(metrics)
    if config.strategy == "scincl":
        train = metrics["train"]
        print(
            f"graph: {train['graph_nodes']:,} nodes; positives = kNN ranks {train['positive_ranks'][0]}-"
            f"{train['positive_ranks'][1]}, hard negatives = ranks {train['hard_negative_ranks'][0]}-"
            f"{train['hard_negative_ranks'][1]} (SciNCL's 20-24 and 3998-3999 of 52.6M, log-rescaled)"
        )
    else:
        print(f"papers: {json.dumps(metrics['papers'])}")
    print(f"wrote {args.out}/{TRIPLETS_TRAIN_FILE}, {TRIPLETS_VAL_FILE}, {METRICS_FILE}")
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
