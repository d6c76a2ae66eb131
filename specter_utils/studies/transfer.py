"""Transfer: models trained on some corpora, scored on a corpus none of them saw, each paired against the base model.

The ``general`` preset trains one model on hep-th's and arXiv-2023's citations together, for a user to start from
(``training.base_model``). Whether it helps on a corpus it never saw is this study's question: every trained seed
and the base are embedded as the target run's specification embeds (its length, its papers), scored per query on
the target benchmark's split, and each model is tested against the base with the two-level bootstrap over seeds and
queries (``evaluation.hierarchical``), every comparison of the table one Holm family.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specter_utils.errors import DataError
from specter_utils.evaluation.hierarchical import adjust_family, ranking_test, reading_sentence
from specter_utils.evaluation.paired import RowScores
from specter_utils.evaluation.suite import RESULT_KEYS
from specter_utils.executed import machine_info, source_commit
from specter_utils.io import atomic_write, read_json, write_json
from specter_utils.presentation.tables import mean_sd
from specter_utils.runs import RunPaths, corpus_label
from specter_utils.spec import RunSpec
from specter_utils.studies.levers import (
    BASE,
    TASKS,
    detectable_by_task,
    difference_cell,
    power_line,
    recorded_spec,
    scores,
    screens_line,
    study_papers,
)
from specter_utils.training.model_card import SUMMARY_FILE
from specter_utils.workflow.embed import embed
from specter_utils.workflow.sweep import ranking_qrels


def embed_row(spec: RunSpec, model: str | Path, context: Mapping[str, Any], out: Path) -> dict[str, Any]:
    """Per-query AP of one model on the target's qrels, embedded once into ``out`` (kept: a rerun reads it)."""
    if not out.with_suffix(".meta.json").exists():
        embed(spec.embedding, str(model), context["papers"], out)
    return scores(out, context["qrels"])


def transfer_rows(
    target_run: Path,
    models: Mapping[str, Sequence[str | Path]],
    work: Path,
    split: str = "test",
    tasks: Sequence[str] = TASKS,
    n_resamples: int = 10_000,
) -> dict[str, Any]:
    """Score the base model and every ``{name: [model folder per seed]}`` on ``target_run``'s benchmark ``split``;
    test each name against the base. Embeddings are kept under ``work`` (one file per model and seed)."""
    spec = recorded_spec(target_run)  # embedded as the target run embeds: its length, its papers
    paths = RunPaths.of(target_run)
    scidocs = paths.built_scidocs_dir
    context = {"papers": study_papers(scidocs, tasks, (split,)), "qrels": ranking_qrels(scidocs, split, tasks)}
    base = RowScores(BASE, [str(spec.training.base_model)])
    base.seeds.append(embed_row(spec, spec.training.base_model, context, work / "base.jsonl")["per_query_ap"])
    rows: dict[str, RowScores] = {}
    for name, folders in models.items():
        if not folders:
            raise DataError(f"transfer row {name!r} has no model")
        row = RowScores(name, [str(f) for f in folders])
        for index, folder in enumerate(folders):
            row.seeds.append(embed_row(spec, folder, context, work / f"{name}-{index}.jsonl")["per_query_ap"])
        rows[name] = row
    tests = {(name, task): ranking_test(row, base, task, n_resamples) for name, row in rows.items() for task in tasks}
    adjust_family(list(tests.values()))
    return {
        "target": corpus_label(target_run),
        "target_run": str(target_run),
        "split": split,
        "max_length": spec.embedding.max_length,
        "queries": {task: len(base.seeds[0][task]) for task in tasks},
        "base_model": str(spec.training.base_model),
        "maps": {row.name: {task: row.task_map(task) for task in tasks} for row in (base, *rows.values())},
        "tests": {f"{name}/{task}": test.as_dict() for (name, task), test in tests.items()},
        "train_seconds": {name: [train_seconds(folder) for folder in folders] for name, folders in models.items()},
        "detectable": {name: detectable_by_task(row, base, tasks) for name, row in rows.items()},
        "commit": source_commit(),
        "machine": machine_info(),
        "finished": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def train_seconds(model: str | Path) -> float | None:
    """The training wall time a model folder records (``specter_training.json``), None where it has none."""
    summary = Path(model) / SUMMARY_FILE
    return read_json(summary).get("runtime_s") if summary.is_file() else None


def transfer_table(result: Mapping[str, Any]) -> str:
    """The transfer rows as markdown: MAP (mean ± sd over seeds) per task and each model minus the base."""
    tasks = list(result["queries"])
    head = "| model | seeds | " + " | ".join(f"{RESULT_KEYS[t]} MAP" for t in tasks)
    head += " | " + " | ".join(f"{RESULT_KEYS[t]}: minus base" for t in tasks) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(tasks))]
    seeds = {name: len(maps[tasks[0]]) for name, maps in result["maps"].items() if name != BASE}
    for name, maps in result["maps"].items():
        cells = [_map_cell(maps[t]) for t in tasks]
        diffs = ["" if name == BASE else difference_cell(result["tests"][f"{name}/{t}"]) for t in tasks]
        lines.append(f"| {name} | {len(maps[tasks[0]])} | " + " | ".join(cells + diffs) + " |")
    queries = ", ".join(f"{n} {RESULT_KEYS[t]}" for t, n in result["queries"].items())
    lines.append("")
    lines.append(
        f"{result['target']}, {result['split']} split ({queries} queries), every row embedded at "
        f"{result['max_length']} wordpieces; each difference a two-level bootstrap over seeds and queries, Holm over "
        f"the table's {len(result['tests'])} comparisons."
    )
    for name, seconds in result.get("train_seconds", {}).items():
        known = [s for s in seconds if s]
        if known:
            minutes = ", ".join(f"{s / 60:.0f}" for s in known)
            lines += ["", f"- `{name}` trained in {minutes} min per seed (each model's `{SUMMARY_FILE}`)."]
    if screens := screens_line(seeds):
        lines += ["", screens]
    for key, test in result["tests"].items():
        name, task = key.split("/")
        lines += ["", "- " + reading_sentence(name, BASE, f"{RESULT_KEYS[task]} MAP", test)]
    for name, found in result.get("detectable", {}).items():
        lines += ["", power_line({RESULT_KEYS[task]: f for task, f in found.items()}, name)]
    return "\n".join(lines) + "\n"


def _map_cell(values: Sequence[float]) -> str:
    mean, sd = mean_sd(values)
    return f"{mean:.2f}" + (f" ± {sd:.2f}" if len(values) > 1 else "")


def write_transfer(result: Mapping[str, Any], out: Path) -> None:
    """``out`` (.json) and its table beside it (.md), both written atomically."""
    write_json(out, dict(result))
    with atomic_write(out.with_suffix(".md"), "w") as handle:
        handle.write(transfer_table(result))
