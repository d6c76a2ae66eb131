"""The levers of a stronger CPU recipe: named settings x seeds, trained, embedded and scored on one benchmark.

This file is the study's list of settings (``LEVERS``) and its command line; the rows run through
``specter_utils.studies.levers`` (mine + leakage audit, train, embed, per-query AP; the base model and TF-IDF-SVD
beside them), which appends every finished row as one JSON line to the results file (default
``RUN_DIR/levers/results.jsonl``) and skips a row already there, so a killed run loses at most the row in progress
and a second invocation trains nothing. ``--table`` prints MAP mean ± sd over seeds per setting, the difference to
the base model, TF-IDF and the reference recipe (``--pairwise``: to every other row) by a two-level bootstrap
(seeds resampled within each row, queries shared; 95% interval, p, and Holm's adjusted p over the table's
comparisons), and the training wall time.

The rows are scored on the **validation** split by default (``--split val``, results in
``RUN_DIR/levers/results_val.jsonl``): a setting is chosen there, and the test split (``--split test``, results in
``RUN_DIR/levers/results.jsonl``) is scored once, for the chosen recipe's final number. Every row embeds the papers of
both splits and keeps its embeddings in the run folder, so ``--rescore FILE`` scores the finished rows of another
split's results file on ``--split`` without training again (refused, naming the rows, when a row's embeddings are
gone or lack the split's papers, as they do with ``--embed scored``, which embeds the scored split's papers only).

The run folder comes from notebook 01 (the benchmark); its ``pipeline.json`` names the preset and overrides the
rows start from. For hep-th with >= 400 test queries per ranking task (``data.n_queries`` is val + test, 80% test:
the preset's 200 give 160, and 100 validation queries per task)::

    specter-utils run --preset hepth --run hepth-levers --notebooks 01 02 --set data.n_queries=500
    python experiments/recipe_levers.py results/hepth-levers --seeds 0 1 2     # validation; resumable after a kill
    python experiments/recipe_levers.py results/hepth-levers --table
    python experiments/recipe_levers.py results/hepth-levers --split test --only reference --seeds 0 1 2  # once

``--only NAME ...`` runs some settings; ``--settings FILE.yaml`` replaces ``LEVERS`` (``name: {key: value}``);
``--set KEY=VALUE`` changes every row (recorded in each). The rows run one after another on the CPU; a setting
with ``training.max_triplets: 0`` trains on every mined triplet and takes hours on hep-th.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from specter_utils.errors import DataError
from specter_utils.runs import RunPaths
from specter_utils.spec import parse_override
from specter_utils.studies.levers import (
    REFERENCE,
    SPLIT,
    TASKS,
    LeverScoring,
    lever_table,
    rescore,
    results_path,
    run_levers,
)

CACHED_256 = {"training.batch_size": 256, "training.effective_batch_size": 256, "training.cached_mini_batch": 32}
ALL = {"training.max_triplets": 0}  # every mined triplet, one epoch
LEVERS: dict[str, dict[str, Any]] = {
    REFERENCE: {},
    # a larger global batch of in-batch negatives, in GradCache mini-batches of 32 (the same loss and gradients).
    # A batch holds distinct texts only (NoDuplicatesBatchSampler) and the sampler gives 5 triplets per query, so
    # 3,000 triplets (600 queries) cannot fill batches of 1024: the largest batches go with every triplet.
    "batch256": CACHED_256,
    "batch256-lr1e-4": {**CACHED_256, "training.learning_rate": 1e-4},
    # every mined triplet of the training graph, one epoch
    "all-triplets": ALL,
    "all-triplets-batch256": {**ALL, **CACHED_256},
    "all-triplets-batch1024": {
        **ALL,
        **CACHED_256,
        "training.batch_size": 1024,
        "training.effective_batch_size": 1024,
        "training.learning_rate": 1e-4,
    },
    # within the 60-minute CPU training budget (about 8 triplets/s in cached batches of 256 at 64 wordpieces on
    # 2 cores): more distinct triplets at the larger batch and its learning rate
    "triplets12k": {"training.max_triplets": 12000},  # the same data at today's batch and rate: data or batch?
    "triplets24k": {"training.max_triplets": 24000},  # twice that at today's batch and rate (about 40 min training)
    "triplets12k-batch256-lr1e-4": {**CACHED_256, "training.max_triplets": 12000, "training.learning_rate": 1e-4},
    "triplets24k-batch256-lr1e-4": {**CACHED_256, "training.max_triplets": 24000, "training.learning_rate": 1e-4},
    # the training length at equal wall time: 128 wordpieces cost about twice 64, so half the triplets
    "len128-triplets6k-batch256-lr1e-4": {
        **CACHED_256,
        "training.max_length": 128,
        "training.max_triplets": 6000,
        "training.learning_rate": 1e-4,
    },
    # learning rate and schedule
    "lr1e-4": {"training.learning_rate": 1e-4},
    "lr2e-5": {"training.learning_rate": 2e-5},
    "no-warmup": {"training.warmup_ratio": 0.0},
    "slanted-triangular": {"training.lr_schedule": "slanted_triangular"},
    # the precision of training: bf16 autocast (train --dtype auto on a CPU with avx512_bf16 or amx_bf16) against the
    # reference's fp32, at the same budget
    "bf16": {"training.dtype": "bf16"},
    # SciNCL neighbourhood positives beside citation positives
    "scincl25": {"mining.scincl_fraction": 0.25},
    "scincl50": {"mining.scincl_fraction": 0.5},
}


# ---------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="run folder built by `specter-utils run --notebooks 01 02`")
    parser.add_argument(
        "--split",
        choices=("val", "test"),
        default=SPLIT,
        help="the split every row is scored on: val (the default, where settings are chosen) or test (scored once)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="results file (default RUN_DIR/levers/results_val.jsonl, with --split test RUN_DIR/levers/results.jsonl); "
        "work files stay in RUN_DIR",
    )
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="FILE",
        help="score the finished rows of FILE (another split's results) on --split from their kept embeddings",
    )
    parser.add_argument("--settings", type=Path, help="YAML {name: {key: value}} replacing the built-in levers")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these settings")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--set", dest="common", action="append", default=[], metavar="KEY=VALUE", help="every row")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument(
        "--embed",
        choices=("both", "scored"),
        default="both",
        help="the papers each row embeds: of both splits (the default: a row can be re-scored on the other split) "
        "or of the scored split only (faster; such a row cannot be re-scored on the other split)",
    )
    parser.add_argument("--keep-models", action="store_true", help="keep each row's trained model (~90 MB)")
    parser.add_argument("--table", action="store_true", help="print the table of the results file and stop")
    parser.add_argument("--reference", default=REFERENCE, help="the setting the table compares with")
    parser.add_argument(
        "--pairwise",
        action="store_true",
        help="the table compares every row with every other (each pair once, all in one Holm family)",
    )
    parser.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap resamples of each difference")
    args = parser.parse_args(argv)
    results = args.results or results_path(RunPaths.of(args.run_dir).run_dir, args.split)
    try:
        if args.rescore:
            rescore(args.rescore, args.run_dir, args.split, results)
            return 0
        if args.table:
            print(lever_table(results, args.reference, args.n_resamples, pairwise=args.pairwise))
            return 0
        settings = yaml.safe_load(args.settings.read_text()) if args.settings else LEVERS
        if args.only:
            unknown = [name for name in args.only if name not in settings]
            if unknown:
                raise DataError(f"unknown setting(s) {unknown}; known: {', '.join(settings)}", "--only")
            settings = {name: settings[name] for name in args.only}
        common = dict(parse_override(text) for text in args.common)
        run_levers(
            args.run_dir,
            settings,
            args.seeds,
            results,
            common,
            LeverScoring(args.tasks, args.split, embed_both_splits=args.embed == "both"),
            args.keep_models,
        )
    except DataError as exc:
        print(f"recipe_levers: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
