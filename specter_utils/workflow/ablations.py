"""Stage 7 (notebook 07): the Table 2 / Table 3 ablations, each the run's specification plus a few overrides.

Every variant runs through the same stages as the main run (mine + audit, train, embed, evaluate), one row per
(variant, seed) through the sweep runner (``workflow.sweep``), each kept in its own folder. Its reference
row is the main run's own trained model, evaluated on the same papers at the same length; the reference row's
other seeds are retrained with the main recipe, so every row has the same seeds and the same budget. Where
``ablations.max_triplets`` gives Table 2 a budget of its own, every row trains on that many triplets and the
reference row's seeds are all retrained.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from specter_utils.config import ABLATIONS, COMPARED_TO, REFERENCE  # noqa: F401 (ABLATIONS: notebook 07)
from specter_utils.data.records import read_paper_file
from specter_utils.data.scidocs import RANKING_TASKS, available_tasks
from specter_utils.evaluation.deltas import Delta
from specter_utils.evaluation.suite import task_name
from specter_utils.io import read_json, write_json
from specter_utils.layout import DATA_FILE, METADATA_FILE, METRICS_FILE
from specter_utils.presentation.tables import PAPER_ROWS, seed_group_statistics  # noqa: F401 (notebook 07)
from specter_utils.runs import RunPaths
from specter_utils.spec import RunSpec
from specter_utils.vocabularies import TEXT_FIELDS  # noqa: F401 (ABLATIONS: notebook 07)
from specter_utils.workflow.embed import embed, papers_to_embed
from specter_utils.workflow.evaluate import evaluate_file
from specter_utils.workflow.mine import mine
from specter_utils.workflow.prepare import load_corpus_for_run
from specter_utils.workflow.sweep import (
    ROW_FILE,  # noqa: F401 (the record finished_ablation reads: tests and readers of a run name it from here)
    RowFolders,
    SweepRow,
    finished_row,
    paired_by_seeds,
    paired_deltas,
    ranking_qrels,
    row_settings,
    run_sweep,
    scored_files,
    variant_rows,
)
from specter_utils.workflow.train import train


def compared_to(name: str, rows: Mapping[str, Any]) -> str:
    """The row ``name`` is tested against: its ``COMPARED_TO`` row where that ran, else the reference row."""
    other = COMPARED_TO.get(name)
    return other if other in rows else REFERENCE


def ablation_spec(spec: RunSpec, name: str, seed: int | None = None) -> RunSpec:
    """The specification of one ablation variant: ``spec`` plus the variant's overrides (and ``seed``, if given);
    ``name`` may be the reference row only with a seed (a retrained seed of the main run's recipe)."""
    if name not in ABLATIONS and not (name == REFERENCE and seed is not None):
        raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ABLATIONS)} (and {REFERENCE}, the main run)")
    overrides = dict(ABLATIONS.get(name, {}))
    if spec["ablations.max_triplets"]:  # Table 2's own budget: one pass over that many triplets
        overrides["training.max_triplets"] = spec["ablations.max_triplets"]
        overrides["training.max_steps"] = -1
    variant = spec.with_overrides(overrides)
    return variant.with_overrides({"seed": seed}) if seed is not None and seed != spec.seed else variant


def ablation_budget(spec: RunSpec) -> int:
    """The triplets each row of notebook 07 trains on (0: every triplet mined)."""
    return spec["ablations.max_triplets"] or spec["training.max_triplets"]


def reuses_main_model(spec: RunSpec) -> bool:
    """Whether the reference row's run seed is the main run's model: only when Table 2 trains on the main budget."""
    return ablation_budget(spec) == spec["training.max_triplets"]


def paper_text_fields(papers: dict[str, Any], fields: list[str], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``papers`` with each abstract replaced by the text of ``fields`` after the title, in the order given.

    ``["title"]`` leaves the abstract empty (the input is ``title [SEP]``); ``venue`` and ``authors`` become
    ``Venue: ...`` / ``Authors: a, b`` (taken from ``extra``, the corpus records, where the paper itself lacks them)
    wherever they stand in ``fields``. The title always comes first, as in SPECTER.
    """
    unknown = [f for f in fields if f not in TEXT_FIELDS]
    if unknown or not fields or fields[0] != "title" or len(set(fields)) != len(fields):
        raise ValueError(f"text fields must start with 'title' and be distinct ones of {TEXT_FIELDS}, got {fields}")
    if list(fields) == ["title", "abstract"]:
        return papers
    extra = extra or {}
    out = {}
    for pid, paper in papers.items():
        source = extra.get(pid)
        venue = paper.venue or (source.venue if source is not None else None)
        authors = list(paper.authors or (source.authors if source is not None else []))
        texts = {
            "abstract": paper.abstract,
            "venue": f"Venue: {venue}." if venue else "",
            "authors": ("Authors: " + ", ".join(authors) + ".") if authors else "",
        }
        parts = [texts[name] for name in fields[1:] if texts[name]]
        out[pid] = dataclasses.replace(paper, abstract=" ".join(parts))
    return out


def _variant_papers(spec: RunSpec, paths: RunPaths, out: Path) -> tuple[Path, dict[str, Any] | None]:
    """For a text-field variant: a copy of the training dir's metadata (and citation graph) with the variant's
    texts, and the corpus records that supply venues and authors. Otherwise the training metadata as it is."""
    fields = spec["ablations.text_fields"]
    metadata = paths.train_data_dir / METADATA_FILE
    if list(fields) == ["title", "abstract"]:
        return metadata, None
    extra = None
    if any(f in fields for f in ("venue", "authors")):
        extra = load_corpus_for_run(dataclasses.replace(spec.data, label_field="")).papers
    papers = paper_text_fields(read_paper_file(metadata), fields, extra)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / METADATA_FILE, {pid: p.to_specter_metadata() for pid, p in papers.items()}, indent=None)
    shutil.copyfile(paths.train_data_dir / DATA_FILE, out / DATA_FILE)  # mnrl-citation reads it beside metadata
    return out / METADATA_FILE, extra


def reference_row(spec: RunSpec, paths: RunPaths) -> dict[str, Any]:
    """The ablation table's reference row: the main run's trained model (its embeddings of notebook 04),
    evaluated on the ablation tasks; nothing is retrained, so it equals the main results' trained row."""
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    tasks = spec["ablations.tasks"] or None
    mined = read_json(paths.notebook_dir("02_mine_triplets") / METRICS_FILE)
    trained = read_json(paths.notebook_dir("03_train_specter") / METRICS_FILE)
    embedded = read_json(paths.notebook_dir("04_embed_papers") / METRICS_FILE)["embeddings"]["trained"]
    return {
        "changes": {},
        "seed": spec.seed,
        "source": "the main run (notebooks 02-04)",
        "embedding_file": str(paths.embedding_file("trained")),
        "triplets": mined["train"]["triplets"],
        "training": trained["results"],
        "embedding": embedded,
        "results": evaluate_file(scidocs, paths.embedding_file("trained"), tasks, spec["evaluation.split"]),
    }


def _row_folder(paths: RunPaths, per_seed: bool = True) -> Callable[[SweepRow], Path]:
    """Where a row of notebook 07 is made and kept: ``ABLATIONS_DIR/name/seedN`` (``ABLATIONS_DIR/name`` for the
    one row of a variant run without a seed)."""
    return lambda row: paths.ablation_dir(row.name) / f"seed{row.seed}" if per_seed else paths.ablation_dir(row.name)


def _row_store(paths: RunPaths, per_seed: bool = True) -> RowFolders:
    return RowFolders(_row_folder(paths, per_seed), ablation_settings)


def _make_row(spec: RunSpec, paths: RunPaths, per_seed: bool = True) -> Callable[[SweepRow], dict[str, Any]]:
    """The sweep's row maker for notebook 07: the reference row from the main run's notebooks where it is not
    retrained (a row not recorded), else the row's variant through every stage (:func:`make_ablation_row`)."""
    folder = _row_folder(paths, per_seed)

    def make(row: SweepRow) -> dict[str, Any]:
        if not row.record:
            return reference_row(spec, paths)
        return make_ablation_row(row.spec, paths, row.name, folder(row))

    return make


def make_ablation_row(variant: RunSpec, paths: RunPaths, name: str, out: Path) -> dict[str, Any]:
    """One variant (and seed) of notebook 07 through the same stages as the main run, in ``out``: mine + audit,
    train, embed, evaluate. Only the papers the evaluation of ``ablations.tasks`` reads are embedded, at the run's
    evaluation length."""
    started = time.time()
    metadata, extra = _variant_papers(variant, paths, out / "texts")
    mined = mine(variant, paths.train_data_dir, out / "triplets", paths.benchmark_dir)
    trained = train(variant, out / "triplets", metadata, out / "train")
    scidocs = paths.scidocs_dir(variant["evaluation.scidocs_dir"])
    tasks, split = variant["ablations.tasks"] or None, variant["evaluation.split"]
    embedding_file = out / "embeddings.jsonl"
    papers = paper_text_fields(papers_to_embed(scidocs, split, tasks), variant["ablations.text_fields"], extra)
    embedded = embed(variant.embedding, trained["model_dir"], papers, embedding_file)
    return {
        "changes": ABLATIONS.get(name, {}),
        "seed": variant.seed,
        "embedding_file": str(embedding_file),
        "triplets": mined["train"]["triplets"],
        "leakage": mined["leakage"],
        "training": trained["summary"]["results"],
        "embedding": embedded,
        "results": evaluate_file(scidocs, embedding_file, tasks, split),
        "seconds": round(time.time() - started, 1),
    }


def run_ablation(spec: RunSpec, paths: RunPaths, name: str, seed: int | None = None) -> dict[str, Any]:
    """One variant (and seed) of notebook 07 (:func:`make_ablation_row`), or the reference row retrained at another
    seed; a row finished earlier with the same settings is reused (:func:`finished_ablation`)."""
    variant = ablation_spec(spec, name, seed)
    row = SweepRow(name, variant.seed, ABLATIONS.get(name, {}), variant)
    per_seed = seed is not None
    rows = run_sweep([row], _make_row(spec, paths, per_seed), _row_store(paths, per_seed))
    return rows[name][variant.seed]


# The sections a row is made from (mine + audit, train, embed, evaluate); the other notebooks' sections (analysis,
# heads) do not make a row, so a later run that changes only them reuses it.
ROW_SECTIONS = ("seed", "data", "mining", "training", "embedding", "evaluation", "ablations")
# Settings that say which rows to run, not how one row is made: they may differ between runs sharing a row, so a
# later run of notebook 07 (after a crash, or with more variants or seeds) reuses a row whose settings are unchanged.
GRID_KEYS = ("ablations.variants", "ablations.seeds")
# Settings that make a row only through another key the row's settings keep: ablations.max_triplets is written
# into training.max_triplets, so a row trained on N triplets is the same row however N was set.
DERIVED_KEYS = ("ablations.max_triplets",)
# Settings of a row section that only notebooks 04 and 05 read: Table 1's extra rows and its time-split section.
TABLE1_KEYS = ("embedding.baselines", "evaluation.models", "evaluation.rankers", "evaluation.time_split")


def ablation_settings(variant: RunSpec) -> dict[str, Any]:
    """The settings that make one ablation row: the variant's ``ROW_SECTIONS`` less ``GRID_KEYS``,
    ``DERIVED_KEYS`` and ``TABLE1_KEYS``."""
    return row_settings(variant, ROW_SECTIONS, (*GRID_KEYS, *DERIVED_KEYS, *TABLE1_KEYS))


def finished_ablation(variant: RunSpec, out: Path) -> dict[str, Any] | None:
    """The row recorded in ``out/row.json`` when it ran with ``variant``'s settings and its embeddings are still
    there; None otherwise (not run, interrupted, or run with other settings: it is then run again)."""
    return finished_row(out, ablation_settings(variant))


def ablation_rows(spec: RunSpec) -> list[SweepRow]:
    """The rows of notebook 07, row by row, each at every seed of ``ablations.seeds``: the reference row first
    (its run seed read from the main run, not recorded, unless Table 2 has a budget of its own), then each variant."""
    seeds = list(spec["ablations.seeds"]) or [spec.seed]
    rows = [
        SweepRow(REFERENCE, seed, {}, ablation_spec(spec, REFERENCE, seed))
        if not (seed == spec.seed and reuses_main_model(spec))
        else SweepRow(REFERENCE, seed, None, spec, record=False)
        for seed in seeds
    ]
    variants = {name: ABLATIONS.get(name, {}) for name in spec["ablations.variants"]}
    return rows + variant_rows(
        spec, variants, seeds, lambda base, name, _overrides, seed: ablation_spec(base, name, seed)
    )


def run_ablations(
    spec: RunSpec,
    paths: RunPaths,
    progress: Any = print,
    on_row: Callable[[SweepRow, dict[str, Any], bool], Any] | None = None,
) -> dict[str, dict[int, dict[str, Any]]]:
    """Every row of notebook 07 (:func:`ablation_rows`): ``{row: {seed: run_ablation's result}}``;
    ``on_row(row, result, reused)`` is called after every row, the reference rows included (a benchmark's hook)."""

    def report(row: SweepRow, result: dict[str, Any], reused: bool) -> None:
        if progress and row.name != REFERENCE:
            done = f"reused from {result['reused']}" if "reused" in result else f"done in {result['seconds']} s"
            progress(f"{row.name} seed {row.seed} {done}")
        if on_row:
            on_row(row, result, reused)

    return run_sweep(ablation_rows(spec), _make_row(spec, paths), _row_store(paths), finished=report)


def ablation_statistics(
    spec: RunSpec, paths: RunPaths, rows: dict[str, dict[int, dict[str, Any]]], n_resamples: int = 10_000
) -> dict[str, Any]:
    """Group averages (CLS / USR / CITE / REC / all) per row as mean ± sd over seeds, and each row's comparison with
    the row it is tested against (:func:`compared_to`) on each ranking task: the two-level bootstrap over seeds and
    queries, the table's comparisons one Holm family (``workflow.sweep.paired_by_seeds``), with the per-query AP of
    every row and seed kept in ``paired.per_query_ap`` for a later reading."""
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    groups = {name: seed_group_statistics([r["results"] for r in by_seed.values()]) for name, by_seed in rows.items()}
    wanted = {task_name(t) for t in spec["ablations.tasks"]} or None
    ranking = [t for t in available_tasks(scidocs) if t in RANKING_TASKS and (wanted is None or t in wanted)]
    qrels = ranking_qrels(scidocs, spec["evaluation.split"], ranking)
    against = {name: compared_to(name, rows) for name in rows if name != REFERENCE}
    comparison: dict[str, Any] = {}
    if qrels:
        files = {name: [r["embedding_file"] for r in by_seed.values()] for name, by_seed in rows.items()}
        comparison = paired_by_seeds(scored_files(files, qrels), against, list(qrels), n_resamples=n_resamples)
    return {
        "groups": groups,
        "paired": comparison,
        "seeds": {name: sorted(by_seed) for name, by_seed in rows.items()},
        "max_triplets": ablation_budget(spec),
        "compared_to": against,
    }


def ablation_deltas(statistics: Mapping[str, Any]) -> list[Delta]:
    """Each row's paired difference per ranking task against the row it is tested against (``compared_to``)."""
    return paired_deltas(statistics.get("paired") or {}, statistics.get("compared_to", {}), REFERENCE)
