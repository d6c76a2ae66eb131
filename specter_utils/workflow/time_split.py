"""Table 1 under a time split (notebook 05, ``evaluation.time_split``): the main run's stages once more, on a
benchmark whose ranking queries are the latest papers.

The benchmark is built again with ``data.split_by=date`` (queries from the latest period; training and validation
from the earlier papers only), triplets are mined and the recipe trained on it, the test papers embedded by the base
model, the trained one and Table 1's baselines, and Table 1 scored with the rankers and trained-vs-base paired
tests. Everything lives under ``<run>/05_scidocs_eval/time_split/``, laid out as a run of its own (notebooks 01-04's
folders). What is costly (benchmark, triplets, model, embeddings) is recorded once made, with the settings it was
made with, and read back by a later run with the same settings; the scoring is redone each time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from specter_utils.evaluation.deltas import ranking_deltas
from specter_utils.layout import METADATA_FILE
from specter_utils.runs import RunPaths
from specter_utils.spec import RunSpec
from specter_utils.workflow.embed import embed, embed_baselines, papers_to_embed
from specter_utils.workflow.evaluate import evaluate
from specter_utils.workflow.mine import mine
from specter_utils.workflow.prepare import prepare
from specter_utils.workflow.sweep import finished_row, record_row, row_settings
from specter_utils.workflow.train import train

TIME_SPLIT_DIR = "time_split"  # under notebook 05's folder
# The sections the made part depends on: a change elsewhere (evaluation, analysis, ...) reuses it.
MADE_SECTIONS = ("seed", "data", "mining", "training", "embedding")


def time_split_paths(paths: RunPaths) -> RunPaths:
    """The time split's own run folder, inside notebook 05's."""
    return RunPaths(paths.notebook_dir("05_scidocs_eval") / TIME_SPLIT_DIR)


def made_settings(spec: RunSpec) -> dict[str, Any]:
    """The settings the benchmark, triplets, model and embeddings are made from (``MADE_SECTIONS``)."""
    return row_settings(spec, MADE_SECTIONS)


def make(spec: RunSpec, paths: RunPaths, progress: Callable[[str], Any] = print) -> dict[str, Any]:
    """Build, mine, train and embed under ``paths`` with ``spec`` (already split by date); a summary of each stage,
    recorded last in ``paths.run_dir/row.json`` (which marks it made)."""
    started = time.time()
    progress("time split: building the benchmark by date")
    benchmark = prepare(spec, paths.benchmark_dir)["benchmark"]
    progress(f"time split: cutoff {benchmark['split'].get('cutoff_year')}; mining triplets")
    mined = mine(spec, paths.train_data_dir, paths.triplets_dir, paths.benchmark_dir)
    progress(f"time split: training (triplets mined: {mined['train']['triplets']})")
    trained = train(spec, paths.triplets_dir, paths.train_data_dir / METADATA_FILE, paths.train_run_dir)
    scidocs = paths.built_scidocs_dir
    papers = papers_to_embed(scidocs, split=spec.embedding.split)
    progress(f"time split: embedding {len(papers)} papers")
    embedded = {
        "base": embed(spec.embedding, spec.training.base_model, papers, paths.embedding_file("base")),
        "trained": embed(spec.embedding, trained["model_dir"], papers, paths.embedding_file("trained")),
    }
    embedded.update(
        embed_baselines(spec.embedding, papers, paths.embeddings_dir, scidocs, paths.train_data_dir, seed=spec.seed)
    )
    made = {
        "split": benchmark["split"],
        "counts": benchmark["counts"],
        "triplets": trained["summary"]["data"]["train"]["used"],  # trained on (training.max_triplets caps it)
        "mined": mined["train"]["triplets"],
        "leakage": mined["leakage"],
        "training": trained["summary"]["results"],
        "embedding": embedded,
        "embedding_file": str(paths.embedding_file("trained")),
        "seconds": round(time.time() - started, 1),
    }
    return record_row(paths.run_dir, made_settings(spec), made)


def time_split_table(spec: RunSpec, paths: RunPaths, progress: Callable[[str], Any] = print) -> dict[str, Any]:
    """Table 1 under the time split: ``made`` (the stages' summaries; ``reused`` names the record when read back),
    ``results`` (every row, rankers included, on ``evaluation.split``) and ``deltas`` (trained vs base, paired over
    queries on each ranking task)."""
    # the spec with its ranking queries drawn by date (and no time split of its own)
    split_spec = spec.with_overrides({"data.split_by": "date", "evaluation.time_split": False})
    split_paths = time_split_paths(paths)
    made = finished_row(split_paths.run_dir, made_settings(split_spec)) or make(split_spec, split_paths, progress)
    scidocs = split_paths.built_scidocs_dir
    results = evaluate(split_spec.evaluation, scidocs, split_paths.embeddings_dir)
    files = {name: [split_paths.embedding_file(name)] for name in ("base", "trained")}
    deltas = ranking_deltas(scidocs, files, "base", split=split_spec.evaluation.split)
    return {"made": made, "scidocs_dir": str(scidocs), "results": results, "deltas": [d.as_dict() for d in deltas]}
