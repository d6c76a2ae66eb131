"""The recipe-lever study: named settings x seeds, trained, embedded and scored on one benchmark, and its table.

Each setting is a set of overrides of the run's specification (``training.*``, ``mining.*``); each (setting,
seed) row goes through the workflow's own stages: mine + leakage audit (``workflow.mine``), train
(``workflow.train``), embed the papers of the ranking tasks' validation and test splits at the run's one
evaluation length (``workflow.embed``), and per-query AP on each task (``evaluation.paired``) on one split:
**validation** by default, the split settings are chosen on; ``test`` for the one final score of the chosen
recipe. A row embeds both splits' papers (unless told to embed the scored split's only), so :func:`rescore` scores
a finished row on the other split from its kept embeddings, without training again. Two fixed rows stand beside them:
the base model (``training.base_model``, untrained) and the TF-IDF-SVD baseline. The study's list of settings and
its command line are ``experiments/recipe_levers.py``.

The rows run through the sweep runner (``workflow.sweep``): every finished row is appended as one JSON line to the
results file (default ``RUN_DIR/levers/results.jsonl``), so a killed run loses at most the row in progress and a
second invocation trains nothing. The run folder comes from notebook 01 (the benchmark); its ``pipeline.json`` names
the preset and overrides the rows start from.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.embedding.io import read_embeddings_fast
from specter_utils.errors import DataError
from specter_utils.evaluation.hierarchical import (
    ALPHA,
    N_RESAMPLES,
    adjust_family,
    compare_ranking_rows,
    covers,
    p_text,
    verdict,
)
from specter_utils.evaluation.paired import RowScores, detectable_difference, per_query_ap
from specter_utils.executed import machine_info, machine_label, source_commit
from specter_utils.io import read_json
from specter_utils.layout import METADATA_FILE, PIPELINE_FILE
from specter_utils.runs import RunPaths, corpus_label
from specter_utils.spec import RunSpec, load_spec
from specter_utils.vocabularies import EVAL_SPLITS
from specter_utils.workflow.embed import embed, embed_baselines, papers_to_embed
from specter_utils.workflow.mine import mine
from specter_utils.workflow.sweep import (
    RowLines,
    SweepRow,
    ranking_qrels,
    read_rows,
    run_sweep,
    scored_records,
    variant_rows,
)
from specter_utils.workflow.train import train

REFERENCE = "reference"  # the recipe the study started from: the run's specification with STUDY_BASE
# The budget every setting starts from (the cpu profile's when the study began): pinned here, so that a later change
# of the profile moves no row of the study; a setting changes it by its own overrides.
# fp32: the precision the study's rows trained in on the CPU before train's dtype auto chose bf16 where the CPU has it.
# Budgets are one pass over the triplets (max_steps -1), as before the profile's budget became 375 optimiser steps.
STUDY_BASE: dict[str, Any] = {"training.max_triplets": 3000, "training.max_steps": -1, "training.dtype": "fp32"}
# Recorded in each trained row: a finished row whose values differ from what its setting gives now is refused.
RECORDED_CONFIG = ("learning_rate", "lr_schedule", "warmup_ratio", "max_triplets")
BASE, TFIDF = "base", "tfidf-svd"  # the fixed rows: the untrained base model, the TF-IDF-SVD baseline
TASKS = ("cite", "cocite")
RESULTS = "levers/results.jsonl"  # the test split's rows, under the run folder, unless --results says otherwise
SPLIT = "val"  # the split the study scores by default: settings are chosen on validation, test is scored once
SPLIT_NAMES = {"val": "validation", "test": "test"}


def results_path(run_dir: Path, split: str) -> Path:
    """The default results file of a split: ``levers/results.jsonl`` (test), ``levers/results_val.jsonl``."""
    return run_dir / (RESULTS if split == "test" else RESULTS.replace(".jsonl", f"_{split}.jsonl"))


def check_split(split: str) -> str:
    if split not in EVAL_SPLITS:
        raise DataError(f"split must be one of {', '.join(EVAL_SPLITS)}, got {split!r}", "--split")
    return split


def study_papers(scidocs: Path, tasks: Sequence[str], splits: Sequence[str] = EVAL_SPLITS) -> dict[str, Any]:
    """The papers every row embeds: by default those the validation and the test split of ``tasks`` read, so a
    finished row can be scored on either split from its embeddings."""
    papers: dict[str, Any] = {}
    for split in splits:
        papers.update(papers_to_embed(scidocs, split, list(tasks)))
    return papers


def recorded_spec(run_dir: Path, extra: Mapping[str, Any] | None = None) -> RunSpec:
    """The specification the run folder was built with (``pipeline.json``: preset and overrides), then ``extra``."""
    record_file = run_dir / PIPELINE_FILE
    if not record_file.is_file():
        raise DataError(f"no {PIPELINE_FILE}: build the run folder with `specter-utils run --notebooks 01`", run_dir)
    record = read_json(record_file)
    return load_spec(record["preset"], {**record.get("overrides", {}), **(extra or {})})


def run_spec(run_dir: Path, common: Mapping[str, Any]) -> RunSpec:
    """The run folder's recorded specification (:func:`recorded_spec`) with the study's ``STUDY_BASE`` and then
    ``common``."""
    return recorded_spec(run_dir, {**STUDY_BASE, **common})


def scores(embedding_file: Path, qrels: Mapping[str, Mapping[str, Mapping[str, int]]]) -> dict[str, Any]:
    """Per-query AP (x 100) and MAP of one embeddings file on each task."""
    embeddings = read_embeddings_fast(embedding_file)
    per_query = {task: per_query_ap(task_qrels, embeddings, task) for task, task_qrels in qrels.items()}
    return {
        "map": {task: float(np.mean(list(ap.values()))) for task, ap in per_query.items()},
        "per_query_ap": per_query,
    }


def _record(name: str, seed: int, overrides: Mapping[str, Any], common: Mapping[str, Any], **fields) -> dict:
    return {
        "setting": name,
        "seed": seed,
        "overrides": dict(overrides),
        "common": dict(common),
        **fields,
        "commit": source_commit(),
        "machine": machine_info(),  # cores, CPU and its flags: train_seconds means nothing without them
        "finished": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def trained_row(row: SweepRow, paths: RunPaths, work: Path, context: dict) -> dict[str, Any]:
    """Mine, train, embed and score one (setting, seed); the model is removed afterwards unless ``keep_models``."""
    variant = row.spec
    out = work / row.name / f"seed{row.seed}"
    mined = mine(variant, paths.train_data_dir, out / "triplets", paths.benchmark_dir)
    started = time.time()
    trained = train(variant, out / "triplets", paths.train_data_dir / METADATA_FILE, out / "train")
    train_seconds = round(time.time() - started, 1)
    embedding_file = out / "embeddings.jsonl"
    embedded = embed(variant.embedding, trained["model_dir"], context["papers"], embedding_file)
    if not context["keep_models"]:
        shutil.rmtree(trained["model_dir"], ignore_errors=True)
    summary = trained["summary"]
    return {
        "kind": "trained",
        "train_seconds": train_seconds,
        "training": {
            "steps": summary["derived"]["total_steps"],
            "global_batch_size": summary["derived"]["global_batch_size"],
            "loss": summary["derived"]["loss"],
            "precision": summary["derived"].get("precision"),
            "data": summary["data"],
            "results": summary["results"],
            "config": {k: trained["config"][k] for k in RECORDED_CONFIG},
        },
        "triplets": mined["train"]["triplets"],
        "mix": mined["train"].get("mix"),
        "embedding": embedded,
        **scores(embedding_file, context["qrels"]),
    }


def check_recorded_config(row: Mapping[str, Any], variant: RunSpec, results: Path) -> None:
    """Refuse a finished row whose recorded training values differ from what its setting resolves to now (a changed
    default or profile would otherwise put two recipes under one name)."""
    recorded = (row.get("training") or {}).get("config") or {}
    for key in RECORDED_CONFIG:
        if key in recorded and recorded[key] != variant[f"training.{key}"]:
            raise DataError(
                f"row {row['setting']!r} seed {row['seed']} trained with {key}={recorded[key]!r}, its setting gives "
                f"{variant[f'training.{key}']!r} now: rename the setting or use another --results file",
                results,
            )


def fixed_row(spec: RunSpec, paths: RunPaths, name: str, work: Path, context: dict) -> dict[str, Any]:
    """The base model, or the TF-IDF-SVD baseline fitted as notebook 04 fits it, on the same papers."""
    out = work / name
    if name == BASE:
        embedding_file = out / "embeddings.jsonl"
        embedded = embed(spec.embedding, spec.training.base_model, context["papers"], embedding_file)
    else:
        config = dataclasses.replace(spec.embedding, baselines=[TFIDF])
        written = embed_baselines(
            config, context["papers"], out, context["scidocs"], paths.train_data_dir, seed=spec.seed
        )
        embedding_file, embedded = Path(written[TFIDF]["file"]), written[TFIDF]
    return {"kind": "baseline", "train_seconds": 0.0, "embedding": embedded, **scores(embedding_file, context["qrels"])}


def check_finished_rows(
    done: Mapping[tuple[str, int], Mapping[str, Any]],
    settings: Mapping[str, Mapping[str, Any]],
    common: Mapping[str, Any],
    spec: RunSpec,
    results: Path,
) -> None:
    """Refuse, before anything runs, a finished row of a setting whose overrides or common settings changed under
    its name, or whose recorded training values its setting no longer gives (:func:`check_recorded_config`)."""
    for (name, seed), row in done.items():
        wanted = settings.get(name) if row.get("kind") == "trained" else {}
        if wanted is not None and (row["overrides"] != dict(wanted) or row.get("common", {}) != common):
            raise DataError(
                f"row {name!r} seed {seed} ran with overrides {row['overrides']} and common {row.get('common')}, "
                f"now {dict(wanted)} and {common}: rename the setting or use another --results file",
                results,
            )
        if wanted is not None and row.get("kind") == "trained":
            check_recorded_config(row, spec.with_overrides(dict(wanted)), results)


@dataclasses.dataclass(frozen=True)
class LeverScoring:
    """What every row is scored on: the ranking ``tasks``, the ``split`` (``val`` by default: the split a setting is
    chosen on), and whether the papers of both splits are embedded (``embed_both_splits=False``: those of ``split``
    only, faster; such a row cannot be re-scored on the other split)."""

    tasks: Sequence[str] = TASKS
    split: str = SPLIT
    embed_both_splits: bool = True


def run_levers(
    run_dir: str | Path,
    settings: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    results: str | Path | None = None,
    common: Mapping[str, Any] | None = None,
    scoring: LeverScoring = LeverScoring(),
    keep_models: bool = False,
    echo: Any = print,
) -> list[dict[str, Any]]:
    """Run every (setting, seed) missing from the results file, and the fixed rows (first, at the run's seed), each
    scored as ``scoring`` says; return the rows run now."""
    tasks = scoring.tasks
    paths, common = RunPaths.of(run_dir), dict(common or {})
    split = check_split(scoring.split)
    spec = run_spec(paths.run_dir, common)
    results = Path(results) if results else results_path(paths.run_dir, split)
    work = paths.run_dir / "levers" / "rows"  # triplets, models, embeddings: in the run folder, wherever --results is
    store = RowLines(results, name_key="setting")
    check_finished_rows(store.rows, settings, common, spec, results)
    check_one_split(store.rows.values(), split, results)
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    embedded_splits = list(EVAL_SPLITS if scoring.embed_both_splits else (split,))
    context = {
        "papers": study_papers(scidocs, tasks, embedded_splits),
        "qrels": ranking_qrels(scidocs, split, tasks),
        "scidocs": scidocs,
        "keep_models": keep_models,
    }
    queries = {task: len(qrels) for task, qrels in context["qrels"].items()}
    echo(f"benchmark: {corpus_label(paths.run_dir)}, {split} queries {queries}, length {spec['embedding.max_length']}")
    if split == "test" and min(queries.values(), default=0) < 400:
        echo("note: fewer than 400 test queries per task; build the run with --set data.n_queries=500 for 400")
    rows = [SweepRow(name, spec.seed, None, spec) for name in (BASE, TFIDF)]
    rows += variant_rows(spec, settings, seeds)

    def make(row: SweepRow) -> dict[str, Any]:
        if row.overrides is None:
            fields = fixed_row(spec, paths, row.name, work, context)
        else:
            fields = trained_row(row, paths, work, context)
        record = _record(row.name, row.seed, row.overrides or {}, common, split=split, queries=queries, **fields)
        record["eval_max_length"] = spec["embedding.max_length"]
        record["embedded_splits"] = embedded_splits
        return record

    ran = []

    def finished(row: SweepRow, record: dict[str, Any], reused: bool) -> None:
        if reused:
            return
        ran.append(record)
        maps = ", ".join(f"{task} {value:.2f}" for task, value in record["map"].items())
        echo(f"[{row.name} seed {row.seed}] MAP {maps}; trained in {record['train_seconds']:.0f} s")

    run_sweep(rows, make, store, lambda row: echo(f"[{row.name} seed {row.seed}] running"), finished)
    return ran


def check_one_split(rows: Any, split: str, results: Path) -> None:
    """Refuse a results file that holds rows of another split (a table's numbers are all of one split)."""
    other = sorted({row.get("split", "test") for row in rows} - {split})
    if other:
        raise DataError(
            f"holds rows scored on the {', '.join(other)} split, not {split}: use --split {other[0]} or another "
            "--results file",
            results,
        )


def rescore(
    source: str | Path, run_dir: str | Path, split: str = SPLIT, results: str | Path | None = None, echo: Any = print
) -> list[dict[str, Any]]:
    """Score the finished rows of ``source`` (a results file of another split) on ``split`` from their kept
    embeddings, without training again; each row is written to ``results`` (default: the split's results file of
    the run folder) with ``rescored_from`` naming its source. Refused, before any row is scored, when a row's
    embeddings file is gone or lacks papers the split reads (the row would have to be trained and embedded again)."""
    paths, split = RunPaths.of(run_dir), check_split(split)
    source = Path(source)
    rows = read_rows(source)
    if not rows:
        raise DataError("no rows to re-score", source)
    results = Path(results) if results else results_path(paths.run_dir, split)
    store = RowLines(results, name_key="setting")
    check_one_split(store.rows.values(), split, results)
    spec = run_spec(paths.run_dir, rows[0].get("common", {}))
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    tasks = list(rows[0]["per_query_ap"])
    qrels = ranking_qrels(scidocs, split, tasks)
    needed = set(papers_to_embed(scidocs, split, tasks))
    todo = [row for row in rows if (row["setting"], row["seed"]) not in store.rows]
    missing = []
    for row in todo:
        file = Path(row["embedding"]["file"])
        ids = file.with_suffix(".ids.txt")
        if not file.is_file():
            missing.append(f"{row['setting']} seed {row['seed']}: {file} is gone")
        elif ids.is_file() and (lack := len(needed - set(ids.read_text(encoding="utf-8").split()))):
            missing.append(f"{row['setting']} seed {row['seed']}: {file} lacks {lack} of the {len(needed)} papers")
    if missing:
        raise DataError(
            f"{len(missing)} of {len(todo)} rows cannot be re-scored on the {split} split without training and "
            f"embedding them again ({'; '.join(missing[:3])}{'; ...' if len(missing) > 3 else ''}); run the study "
            f"with --split {split} instead",
            source,
        )
    queries = {task: len(task_qrels) for task, task_qrels in qrels.items()}
    done = []
    for row in todo:
        record = {**row, "split": split, "queries": queries, **scores(Path(row["embedding"]["file"]), qrels)}
        record["rescored_from"] = {"file": str(source), "split": row.get("split", "test")}
        store.record(SweepRow(row["setting"], row["seed"], None, spec), record)
        done.append(record)
        maps = ", ".join(f"{task} {value:.2f}" for task, value in record["map"].items())
        echo(f"[{row['setting']} seed {row['seed']}] {split} MAP {maps} (re-scored)")
    return done


# ---------------------------------------------------------------- the table
def machines(rows: Sequence[Mapping[str, Any]]) -> str:
    """The machines the trained rows ran on, each with its row count ("not recorded" for rows written without)."""
    counts: dict[str, int] = {}
    for row in rows:
        if row.get("kind") != "trained":
            continue
        label = machine_label(row["machine"]) if row.get("machine") else "machine not recorded"
        counts[label] = counts.get(label, 0) + 1
    return "; ".join(f"{label}: {n} row{'s' * (n != 1)}" for label, n in counts.items()) or "no trained row yet"


def lever_comparisons(
    scored: Sequence[RowScores], references: Sequence[str], tasks: Sequence[str], n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """Every row against each of ``references`` on each task by the two-level bootstrap (seeds within each row,
    queries shared: ``evaluation.hierarchical.compare_ranking_rows``), the whole table one Holm family (``family``: its
    size). A pair of rows is tested once; where both are references, the other row's cell reads it from its side."""
    names = [row.name for row in scored]
    compared = compare_ranking_rows(scored, {}, tasks, n_resamples=n_resamples)  # every row's MAP, no test yet
    tested: set[frozenset[str]] = set()
    for ref in references:
        against = {name: ref for name in names if name != ref and frozenset((name, ref)) not in tested}
        tested |= {frozenset(pair) for pair in against.items()}
        part = compare_ranking_rows(scored, against, tasks, n_resamples=n_resamples)
        for name, entry in part["rows"].items():
            for task in tasks:
                compared["rows"][name]["tasks"][task]["versus"].update(entry["tasks"][task]["versus"])
    family = [
        test
        for entry in compared["rows"].values()
        for stats in entry["tasks"].values()
        for test in stats["versus"].values()
    ]
    if family:
        adjust_family(family)
    for name, entry in compared["rows"].items():
        for task, stats in entry["tasks"].items():
            for ref in references:
                mirrored = compared["rows"][ref]["tasks"][task]["versus"].get(name)
                if ref != name and ref not in stats["versus"] and mirrored:
                    stats["versus"][ref] = _from_other_side(mirrored)
    compared["references"], compared["family"] = list(references), len(family)
    return compared


def _from_other_side(test: Mapping[str, Any]) -> dict[str, Any]:
    """``reference - row`` from the test of ``row - reference``: the same resamples read from the other row."""
    return {
        **test,
        "diff": -test["diff"],
        "ci_low": -test["ci_high"],
        "ci_high": -test["ci_low"],
        "seeds": test["reference_seeds"],
        "reference_seeds": test["seeds"],
    }


def difference_cell(test: Mapping[str, Any]) -> str:
    """``+1.85 [+1.12, +2.59] p < 0.001, adj. p < 0.001``: a difference, its 95% interval, its p and Holm's."""
    interval = f"{test['diff']:+.2f} [{test['ci_low']:+.2f}, {test['ci_high']:+.2f}]"
    return f"{interval} p {p_text(test['p'])}, adj. p {p_text(test['p_adjusted'])}"


def lever_table(
    results: str | Path, reference: str = REFERENCE, n_resamples: int = N_RESAMPLES, pairwise: bool = False
) -> str:
    """Markdown: per setting, MAP mean ± sd over seeds per task, its difference to the base model, TF-IDF and the
    reference recipe (or, ``pairwise``, to every other row: each pair tested once), by :func:`lever_comparisons`
    (seeds and queries resampled, 95% interval, p and Holm-adjusted p over the table's comparisons), and the mean
    training wall time; then :func:`lever_reading`."""
    rows = read_rows(Path(results))
    if not rows:
        raise DataError("no rows yet", results)
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_setting.setdefault(row["setting"], []).append(row)
    tasks = list(rows[0]["per_query_ap"])
    split = rows[0].get("split", "test")
    check_one_split(rows, split, Path(results))
    scored = scored_records(by_setting, lambda r: r["embedding"].get("file", ""))
    references = [name for name in (BASE, TFIDF, reference) if name in by_setting]
    if pairwise:
        references += [name for name in by_setting if name not in references]
    compared = lever_comparisons(scored, references, tasks, n_resamples=n_resamples)
    first = rows[0]
    queries = ", ".join(f"{task} {n}" for task, n in first["queries"].items())
    family = compared["family"]
    lines = [
        f"Benchmark: {SPLIT_NAMES.get(split, split)} split (`{split}`: every number below is scored on it), "
        f"queries {queries}, evaluation length {first['eval_max_length']}; "
        f"MAP x 100, mean ± sd over seeds; each difference is a two-level bootstrap ({n_resamples:,} resamples: the "
        f"queries drawn once for both rows, then each row's seeds drawn within it; a row with one seed has no seed "
        f"level, so its interval covers the choice of queries only), its 95% interval and two-sided p from the same "
        f"resamples; adj. p: Holm over the table's {family} comparison{'s' * (family != 1)} (a pair of rows shown "
        f"in both rows' lines counts once). A difference is read as higher or lower only where its adj. p is under "
        f"{ALPHA}.",
        "",
        f"Training times on: {machines(rows)}.",
        "",
    ]
    common = next((row.get("common") for row in rows if row.get("common")), None)
    if common:  # the study's --set values, the same in every row (a finished row with others is refused)
        settings = ", ".join(f"`{key}={value}`" for key, value in common.items())
        lines[-1:-1] = ["", f"Set for every row (`--set`): {settings}."]
    if split == "test":
        lines[1:1] = [
            "",
            "Test-split numbers are for the chosen recipe's one final score; a choice between settings made from "
            "them is made on test. Settings are chosen on the validation split (`--split val`, the default).",
        ]
    columns = (h for t in tasks for h in (f"{t} MAP ({split})", *(f"{t} Δ {ref} ({split})" for ref in references)))
    header = ["setting", "seeds", *columns, "train min"]
    speeds = {name: _triplets_per_second(results) for name, results in by_setting.items()}
    if any(speeds.values()):
        header.append("triplets/s")
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, entry in compared["rows"].items():
        cells = [name, str(entry["seeds"])]
        for task in tasks:
            stats = entry["tasks"][task]
            cells.append(f"{stats['map_mean']:.2f}" + (f" ± {stats['map_sd']:.2f}" if entry["seeds"] > 1 else ""))
            for ref in references:
                test = stats["versus"].get(ref)
                cells.append("" if test is None else difference_cell(test))
        minutes = np.mean([r["train_seconds"] for r in by_setting[name]]) / 60
        cells.append(f"{minutes:.1f}" if minutes else "")
        if any(speeds.values()):
            cells.append(f"{speeds[name]:.2f}" if speeds[name] else "")
        lines.append("| " + " | ".join(cells) + " |")
    reading = lever_reading(compared, by_setting, tasks, reference, references)
    return "\n".join(lines + (["", *reading] if reading else []))


def _triplets_per_second(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The mean over seeds of the training loop's triplets per second (the trainer's clock), where recorded."""
    speeds = [r.get("training", {}).get("results", {}).get("train_triplets_per_second") for r in rows]
    speeds = [s for s in speeds if s]
    return float(np.mean(speeds)) if speeds else None


FINDING_SEEDS = 3  # a setting with fewer seeds is a screen: its spread over training randomness is not measured
# the one reading rule's words (hierarchical.verdict: +1, -1, or 0 where the Holm-adjusted p is 0.05 or more)
READING = {1: "higher than", -1: "lower than", 0: "no difference detected against"}
READING_TASK = {1: "higher", -1: "lower", 0: "no difference detected"}


def lever_reading(
    compared: Mapping[str, Any],
    by_setting: Mapping[str, Sequence[Mapping[str, Any]]],
    tasks: Sequence[str],
    reference: str,
    others: Sequence[str] = (BASE, TFIDF),
) -> list[str]:
    """Sentences computed from the table by the one reading rule (``evaluation.hierarchical.verdict``): each trained
    setting with ``FINDING_SEEDS`` seeds or more against the reference, then each of ``others`` (the base model and
    TF-IDF, or every row of a pairwise table), with what each interval covers and its slowest seed's training time;
    and which settings are screens."""

    def against(name: str, other: str) -> str:
        tests = {task: compared["rows"][name]["tasks"][task]["versus"].get(other) for task in tasks}
        if any(test is None for test in tests.values()):
            return ""
        signs = {task: verdict(test) for task, test in tests.items()}
        parts = {task: difference_cell(test) for task, test in tests.items()}
        scope = covers(next(iter(tests.values())), f"`{name}`", f"`{other}`").replace("units", "queries")
        if len(set(signs.values())) == 1:
            word = READING[signs[tasks[0]]]
            return f"{word} `{other}` on {' and '.join(tasks)} ({'; '.join(f'{t} {part}' for t, part in parts.items())}; {scope})"
        listed = ", ".join(f"{READING_TASK[signs[task]]} on {task} ({parts[task]})" for task in tasks)
        return f"against `{other}`: {listed} ({scope})"

    lines: list[str] = []
    screens: dict[str, int] = {}
    for name, entry in compared["rows"].items():
        group = by_setting[name]
        if group[0].get("kind") != "trained" or name == reference:
            continue
        if entry["seeds"] < FINDING_SEEDS:
            screens[name] = entry["seeds"]
            continue
        sentences = [
            v
            for other in dict.fromkeys((reference, *others))
            if other != name and other in compared["rows"] and (v := against(name, other))
        ]
        slowest = max(r["train_seconds"] for r in group) / 60
        lines.append(
            f"- `{name}` ({entry['seeds']} seeds): "
            + "; ".join(sentences)
            + f"; slowest seed trained in {slowest:.1f} min."
        )
    lines += [line for line in (screens_line(screens), power_sentence(by_setting, tasks, reference)) if line]
    return ["Reading, computed from the rows above:", "", *lines] if lines else []


def screens_line(seeds: Mapping[str, int]) -> str:
    """The settings (``{name: seeds}``) with fewer than ``FINDING_SEEDS`` seeds, as one line; empty where none."""
    screens = [f"`{name}` ({n} seed{'s' * (n != 1)})" for name, n in seeds.items() if n < FINDING_SEEDS]
    return f"- Screens, not findings (fewer than {FINDING_SEEDS} seeds): {', '.join(screens)}." if screens else ""


def detectable_by_task(row: RowScores, base: RowScores, tasks: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per task, what the queries can detect for ``row`` against ``base``, each row's AP averaged over its seeds
    (:func:`evaluation.paired.detectable_difference`)."""
    return {task: detectable_difference(row.query_means(task), base.query_means(task)) for task in tasks}


def power_sentence(by_setting: Mapping[str, Sequence[Mapping[str, Any]]], tasks: Sequence[str], reference: str) -> str:
    """What these queries can detect, from the spread of the per-query differences between the reference
    setting (its AP averaged over seeds) and the base model (:func:`evaluation.paired.detectable_difference`);
    empty where either row is missing."""
    if BASE not in by_setting or reference not in by_setting:
        return ""
    base, row = (RowScores(name, [], [r["per_query_ap"] for r in by_setting[name]]) for name in (BASE, reference))
    return power_line(detectable_by_task(row, base, tasks), reference)


def power_line(found: Mapping[str, Mapping[str, float]], row: str) -> str:
    """One sentence: per task, the difference its queries can detect and the queries 2 MAP would need."""
    parts = [
        f"{task}: {f['detectable']:.1f} MAP with its {f['queries']} queries (a difference of 2 would need about "
        f"{f['queries_for_2']:,.0f})"
        for task, f in found.items()
    ]
    return (
        f"- What these queries can detect (80% power, two-sided 0.05 before Holm; normal approximation from the spread "
        f"of `{row}` − `{BASE}` over queries; the seeds' spread and the adjustment make the table's test see "
        f"less): " + "; ".join(parts) + "."
    )
