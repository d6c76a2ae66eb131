"""Stage 7 (notebook 07): the Table 2 / Table 3 ablations, each the run's specification plus a few overrides.

Every variant runs through the same stages as the main run (mine + audit, train, embed, evaluate). Its reference
row is the main run's own trained model, evaluated on the same papers at the same length; the reference row's
other seeds are retrained with the main recipe, so every row has the same seeds and the same budget. Where
``ablations.max_triplets`` gives Table 2 a budget of its own, every row trains on that many triplets and the
reference row's seeds are all retrained.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specter_utils.config import ABLATIONS, COMPARED_TO, REFERENCE, TEXT_FIELDS  # noqa: F401 (ABLATIONS: notebook 07)
from specter_utils.data.records import read_paper_file
from specter_utils.data.scidocs import RANKING_TASKS, available_tasks, read_scidocs_dir
from specter_utils.evaluation.deltas import Delta, from_paired
from specter_utils.evaluation.paired import compare_rows, score_row
from specter_utils.evaluation.suite import task_name
from specter_utils.io import read_json, write_json
from specter_utils.presentation.tables import PAPER_ROWS, seed_group_statistics  # noqa: F401 (notebook 07)
from specter_utils.runs import RunPaths
from specter_utils.spec import RunSpec
from specter_utils.workflow.embed import embed, papers_to_embed
from specter_utils.workflow.evaluate import evaluate_file
from specter_utils.workflow.mine import mine
from specter_utils.workflow.prepare import load_corpus_for_run
from specter_utils.workflow.train import train

def compared_to(name: str, rows: Mapping[str, Any]) -> str:
    """The row ``name`` is tested against: its ``COMPARED_TO`` row where that ran, else the reference row."""
    other = COMPARED_TO.get(name)
    return other if other in rows else REFERENCE


def ablation_spec(spec: RunSpec, name: str, seed: int | None = None) -> RunSpec:
    """The specification of one ablation variant: ``spec`` plus the variant's overrides (and ``seed``, if given).

    ``name`` may be the reference row only with a seed (a retrained seed of the main run's recipe).
    """
    if name not in ABLATIONS and not (name == REFERENCE and seed is not None):
        raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ABLATIONS)} (and {REFERENCE}, the main run)")
    overrides = dict(ABLATIONS.get(name, {}))
    if spec["ablations.max_triplets"]:
        overrides["training.max_triplets"] = spec["ablations.max_triplets"]
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
    """For a text-field variant: a copy of the training dir's metadata.json (and data.json) with the variant's
    texts, and the corpus records that supply venues and authors. Otherwise the training metadata as it is."""
    fields = spec["ablations.text_fields"]
    metadata = paths.train_data_dir / "metadata.json"
    if list(fields) == ["title", "abstract"]:
        return metadata, None
    extra = None
    if any(f in fields for f in ("venue", "authors")):
        extra = load_corpus_for_run(dataclasses.replace(spec.data, label_field="")).papers
    papers = paper_text_fields(read_paper_file(metadata), fields, extra)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "metadata.json", {pid: p.to_specter_metadata() for pid, p in papers.items()}, indent=None)
    shutil.copyfile(paths.train_data_dir / "data.json", out / "data.json")  # mnrl-citation reads it beside metadata
    return out / "metadata.json", extra


def reference_row(spec: RunSpec, paths: RunPaths) -> dict[str, Any]:
    """The ablation table's reference row: the main run's trained model (its embeddings of notebook 04),
    evaluated on the ablation tasks; nothing is retrained, so it equals the main results' trained row."""
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    tasks = spec["ablations.tasks"] or None
    mined = read_json(paths.notebook_dir("02_mine_triplets") / "metrics.json")
    trained = read_json(paths.notebook_dir("03_train_specter") / "metrics.json")
    embedded = read_json(paths.notebook_dir("04_embed_papers") / "metrics.json")["embeddings"]["trained"]
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


def run_ablation(spec: RunSpec, paths: RunPaths, name: str, seed: int | None = None) -> dict[str, Any]:
    """One variant (and seed) of notebook 07 through the same stages as the main run: mine + audit, train, embed,
    evaluate. ``name`` may be the reference row with a seed other than the run's (the main recipe, retrained).

    Only the papers the evaluation of ``ablations.tasks`` reads are embedded, at the run's evaluation length.
    """
    variant = ablation_spec(spec, name, seed)
    out = paths.ablation_dir(name) if seed is None else paths.ablation_dir(name) / f"seed{variant.seed}"
    done = finished_ablation(variant, out)
    if done is not None:
        return done
    started = time.time()
    metadata, extra = _variant_papers(variant, paths, out / "texts")
    mined = mine(variant, paths.train_data_dir, out / "triplets", paths.benchmark_dir)
    trained = train(variant, out / "triplets", metadata, out / "train")
    scidocs = paths.scidocs_dir(variant["evaluation.scidocs_dir"])
    tasks, split = variant["ablations.tasks"] or None, variant["evaluation.split"]
    embedding_file = out / "embeddings.jsonl"
    papers = paper_text_fields(papers_to_embed(scidocs, split, tasks), variant["ablations.text_fields"], extra)
    embedded = embed(variant.embedding, trained["model_dir"], papers, embedding_file)
    row = {
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
    write_json(out / ROW_FILE, {"settings": ablation_settings(variant), "row": row})  # last: marks the row done
    return row


# A finished row's record: the settings it ran with and its result. A later run of notebook 07 (after a crash, or
# with more variants or seeds) reuses a row whose settings are unchanged instead of retraining it.
ROW_FILE = "row.json"
# Settings that say which rows to run, not how one row is made: they may differ between runs sharing a row.
GRID_KEYS = ("variants", "seeds")
# Settings that make a row only through another key the row's settings keep: ablations.max_triplets is written
# into training.max_triplets, so a row trained on N triplets is the same row however N was set.
DERIVED_KEYS = ("max_triplets",)


def ablation_settings(variant: RunSpec) -> dict[str, Any]:
    """The settings that make one ablation row: the variant's whole specification less ``GRID_KEYS`` and
    ``DERIVED_KEYS``."""
    settings = variant.to_dict()
    for key in (*GRID_KEYS, *DERIVED_KEYS):
        settings.get("ablations", {}).pop(key, None)
    return settings


def finished_ablation(variant: RunSpec, out: Path) -> dict[str, Any] | None:
    """The row recorded in ``out/row.json`` when it ran with ``variant``'s settings and its embeddings are still
    there; None otherwise (not run, interrupted, or run with other settings: it is then run again)."""
    record_file = out / ROW_FILE
    if not record_file.is_file():
        return None
    record = read_json(record_file)
    row = record.get("row", {})
    if record.get("settings") != ablation_settings(variant) or not Path(row.get("embedding_file", "")).is_file():
        return None
    return {**row, "reused": str(record_file)}


def run_ablations(spec: RunSpec, paths: RunPaths, progress: Any = print) -> dict[str, dict[int, dict[str, Any]]]:
    """Every row of notebook 07 for every seed of ``ablations.seeds``: ``{row: {seed: run_ablation's result}}``.

    The reference row's run seed is the main run's model (not retrained) unless ``ablations.max_triplets`` sets
    another budget; its other seeds are retrained with the main recipe, so every row has the same seeds and budget.
    """
    seeds = list(spec["ablations.seeds"]) or [spec.seed]
    rows: dict[str, dict[int, dict[str, Any]]] = {REFERENCE: {}}
    for seed in seeds:
        if seed == spec.seed and reuses_main_model(spec):
            rows[REFERENCE][seed] = reference_row(spec, paths)
        else:
            rows[REFERENCE][seed] = run_ablation(spec, paths, REFERENCE, seed)
    for name in spec["ablations.variants"]:
        rows[name] = {}
        for seed in seeds:
            rows[name][seed] = run_ablation(spec, paths, name, seed)
            if progress:
                row = rows[name][seed]
                done = f"reused from {row['reused']}" if "reused" in row else f"done in {row['seconds']} s"
                progress(f"{name} seed {seed} {done}")
    return rows


def ablation_statistics(
    spec: RunSpec, paths: RunPaths, rows: dict[str, dict[int, dict[str, Any]]], n_resamples: int = 10_000
) -> dict[str, Any]:
    """Group averages (CLS / USR / CITE / REC / all) per row as mean ± sd over seeds, and a paired test of each
    ranking task's per-query AP against the reference row (``evaluation.paired``, each query averaged over seeds)."""
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    split = spec["evaluation.split"]
    groups = {name: seed_group_statistics([r["results"] for r in by_seed.values()]) for name, by_seed in rows.items()}
    wanted = {task_name(t) for t in spec["ablations.tasks"]} or None
    ranking = [t for t in available_tasks(scidocs) if t in RANKING_TASKS and (wanted is None or t in wanted)]
    data = read_scidocs_dir(scidocs, ranking or None)
    qrels = {task: data.ranking[task][split] for task in ranking if split in data.ranking.get(task, {})}
    paired: dict[str, Any] = {}
    if qrels:
        scored = [
            score_row(name, [r["embedding_file"] for r in by_seed.values()], qrels) for name, by_seed in rows.items()
        ]
        references = [REFERENCE, *sorted({compared_to(name, rows) for name in rows} - {REFERENCE})]
        paired = compare_rows(scored, references, list(qrels), n_resamples=n_resamples)
    return {
        "groups": groups,
        "paired": paired,
        "seeds": {name: sorted(by_seed) for name, by_seed in rows.items()},
        "max_triplets": ablation_budget(spec),
        "compared_to": {name: compared_to(name, rows) for name in rows if name != REFERENCE},
    }


def ablation_deltas(statistics: Mapping[str, Any]) -> list[Delta]:
    """Each row's paired difference per ranking task against the row it is tested against (``compared_to``)."""
    paired = statistics.get("paired") or {}
    against = statistics.get("compared_to", {})
    deltas = []
    for reference in paired.get("references", [REFERENCE]):
        deltas += [d for d in from_paired(paired, reference) if against.get(d.row, REFERENCE) == reference]
    return deltas
