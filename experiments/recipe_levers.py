"""The levers of a stronger CPU recipe: named settings x seeds, trained, embedded and scored on one benchmark.

Each setting is a set of overrides of the run's specification (``training.*``, ``mining.*``); each (setting,
seed) row goes through the workflow's own stages: mine + leakage audit (``workflow.mine``), train
(``workflow.train``), embed the test papers of the ranking tasks at the run's one evaluation length
(``workflow.embed``), and per-query AP on each task (``evaluation.paired``). Two fixed rows stand beside them:
the base model (``training.base_model``, untrained) and the TF-IDF-SVD baseline.

Every finished row is appended as one JSON line to the results file (default ``RUN_DIR/levers/results.jsonl``),
in one write; a row already there is skipped, so a killed run loses at most the row in progress and a second
invocation trains nothing. ``--table`` prints MAP mean ± sd over seeds per setting, the difference to the base
model, TF-IDF and the reference recipe with a paired test over queries (``evaluation.paired.compare_rows``:
bootstrap CI, sign-flip permutation p; each query averaged over seeds), and the training wall time.

The run folder comes from notebook 01 (the benchmark); its ``pipeline.json`` names the preset and overrides the
rows start from. For hep-th with >= 400 test queries per ranking task (``data.n_queries`` is val + test, 80% test:
the preset's 200 give 160)::

    specter-utils run --preset hepth --run hepth-levers --notebooks 01 02 --set data.n_queries=500
    python experiments/recipe_levers.py results/hepth-levers --seeds 0 1 2     # resumable; re-run after a kill
    python experiments/recipe_levers.py results/hepth-levers --table

``--only NAME ...`` runs some settings; ``--settings FILE.yaml`` replaces ``LEVERS`` (``name: {key: value}``);
``--set KEY=VALUE`` changes every row (recorded in each). The rows run one after another on the CPU; a setting
with ``training.max_triplets: 0`` trains on every mined triplet and takes hours on hep-th.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from specter_utils.data.scidocs import read_scidocs_dir
from specter_utils.embedding.io import read_embeddings_fast
from specter_utils.errors import DataError
from specter_utils.evaluation.paired import RowScores, compare_rows, per_query_ap
from specter_utils.executed import machine_info, machine_label
from specter_utils.io import read_json
from specter_utils.pipeline import PIPELINE_FILE, source_commit
from specter_utils.presentation.interpret import evidence
from specter_utils.presentation.tables import within_spread
from specter_utils.runs import RunPaths, corpus_label
from specter_utils.spec import RunSpec, load_spec, parse_override
from specter_utils.workflow.embed import embed, embed_baselines, papers_to_embed
from specter_utils.workflow.mine import mine
from specter_utils.workflow.train import train

REFERENCE = "reference"  # the recipe the study started from: the run's specification with STUDY_BASE
# The budget every setting starts from (the cpu profile's when the study began): pinned here, so that a later change
# of the profile moves no row of the study; a setting changes it by its own overrides.
STUDY_BASE: dict[str, Any] = {"training.max_triplets": 3000}
# Recorded in each trained row: a finished row whose values differ from what its setting gives now is refused.
RECORDED_CONFIG = ("learning_rate", "lr_schedule", "warmup_ratio", "max_triplets")
BASE, TFIDF = "base", "tfidf-svd"  # the fixed rows: the untrained base model, the TF-IDF-SVD baseline
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
    # SciNCL neighbourhood positives beside citation positives
    "scincl25": {"mining.scincl_fraction": 0.25},
    "scincl50": {"mining.scincl_fraction": 0.5},
}
TASKS = ("cite", "cocite")
RESULTS = "levers/results.jsonl"  # under the run folder, unless --results says otherwise


# ---------------------------------------------------------------- the results file
def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every complete row of the results file (a line cut by a kill, only ever the last, is left out)."""
    if not path.exists():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if number < len(lines):  # a complete line (a newline follows it) that does not parse: not ours
                raise DataError(f"not a JSON row: {exc}", path, number) from exc
    return rows


def append_row(path: Path, row: Mapping[str, Any]) -> None:
    """Append ``row`` as one line in one write, after cutting a partial last line a killed write left."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    with open(path, "a+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size:
            handle.seek(max(0, size - 65536))
            tail = handle.read()
            if not tail.endswith(b"\n"):
                cut = tail.rfind(b"\n")
                handle.truncate(size - len(tail) + cut + 1 if cut >= 0 else max(0, size - len(tail)))
        os.write(handle.fileno(), data)
        handle.flush()
        os.fsync(handle.fileno())


# ---------------------------------------------------------------- one row
def run_spec(run_dir: Path, common: Mapping[str, Any]) -> RunSpec:
    """The specification the run folder was built with (``pipeline.json``: preset and overrides), with the study's
    ``STUDY_BASE`` and then ``common``."""
    record_file = run_dir / PIPELINE_FILE
    if not record_file.is_file():
        raise DataError(f"no {PIPELINE_FILE}: build the run folder with `specter-utils run --notebooks 01`", run_dir)
    record = read_json(record_file)
    return load_spec(record["preset"], {**record.get("overrides", {}), **STUDY_BASE, **common})


def qrels_of(scidocs: Path, split: str, tasks: Sequence[str]) -> dict[str, dict[str, dict[str, int]]]:
    data = read_scidocs_dir(scidocs, list(tasks))
    return {task: data.ranking[task][split] for task in tasks if split in data.ranking.get(task, {})}


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


def trained_row(
    spec: RunSpec, paths: RunPaths, name: str, overrides: Mapping[str, Any], seed: int, work: Path, context: dict
) -> dict[str, Any]:
    """Mine, train, embed and score one (setting, seed); the model is removed afterwards unless ``keep_models``."""
    variant = spec.with_overrides(dict(overrides)).with_overrides({"seed": seed})
    out = work / name / f"seed{seed}"
    mined = mine(variant, paths.train_data_dir, out / "triplets", paths.benchmark_dir)
    started = time.time()
    trained = train(variant, out / "triplets", paths.train_data_dir / "metadata.json", out / "train")
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


def run_levers(
    run_dir: str | Path,
    settings: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    results: str | Path | None = None,
    common: Mapping[str, Any] | None = None,
    tasks: Sequence[str] = TASKS,
    keep_models: bool = False,
    echo: Any = print,
) -> list[dict[str, Any]]:
    """Run every (setting, seed) missing from the results file, and the fixed rows; return the rows run now."""
    paths, common = RunPaths.of(run_dir), dict(common or {})
    spec = run_spec(paths.run_dir, common)
    results = Path(results) if results else paths.run_dir / RESULTS
    work = paths.run_dir / "levers" / "rows"  # triplets, models, embeddings: in the run folder, wherever --results is
    done = {}
    for row in read_rows(results):
        done[(row["setting"], row["seed"])] = row
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
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    split = spec["evaluation.split"]
    context = {
        "papers": papers_to_embed(scidocs, split, list(tasks)),
        "qrels": qrels_of(scidocs, split, tasks),
        "scidocs": scidocs,
        "keep_models": keep_models,
    }
    queries = {task: len(qrels) for task, qrels in context["qrels"].items()}
    echo(f"benchmark: {corpus_label(paths.run_dir)}, {split} queries {queries}, length {spec['embedding.max_length']}")
    if min(queries.values(), default=0) < 400:
        echo("note: fewer than 400 test queries per task; build the run with --set data.n_queries=500 for 400")
    todo = [(name, spec.seed, None) for name in (BASE, TFIDF)]
    todo += [(name, seed, overrides) for name, overrides in settings.items() for seed in seeds]
    ran = []
    for name, seed, overrides in todo:
        if (name, seed) in done:
            continue
        echo(f"[{name} seed {seed}] running")
        if overrides is None:
            fields = fixed_row(spec, paths, name, work, context)
        else:
            fields = trained_row(spec, paths, name, overrides, seed, work, context)
        row = _record(name, seed, overrides or {}, common, split=split, queries=queries, **fields)
        row["eval_max_length"] = spec["embedding.max_length"]
        append_row(results, row)
        ran.append(row)
        maps = ", ".join(f"{task} {value:.2f}" for task, value in row["map"].items())
        echo(f"[{name} seed {seed}] MAP {maps}; trained in {row['train_seconds']:.0f} s")
    return ran


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


def lever_table(results: str | Path, reference: str = REFERENCE, n_resamples: int = 10_000) -> str:
    """Markdown: per setting, MAP mean ± sd over seeds per task, its paired difference to the base model, TF-IDF
    and the reference recipe (95% bootstrap CI, permutation p over queries), and the mean training wall time."""
    rows = read_rows(Path(results))
    if not rows:
        raise DataError("no rows yet", results)
    by_setting: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_setting.setdefault(row["setting"], []).append(row)
    tasks = list(rows[0]["per_query_ap"])
    scored = [
        RowScores(name, [r["embedding"].get("file", "") for r in group], [r["per_query_ap"] for r in group])
        for name, group in by_setting.items()
    ]
    references = [name for name in (BASE, TFIDF, reference) if name in by_setting]
    compared = compare_rows(scored, references, tasks, n_resamples=n_resamples)
    first = rows[0]
    queries = ", ".join(f"{task} {n}" for task, n in first["queries"].items())
    lines = [
        f"Benchmark: {first['split']} split, queries {queries}, evaluation length {first['eval_max_length']}; "
        f"MAP x 100, mean ± sd over seeds; differences are paired over queries (each averaged over seeds), "
        f"95% bootstrap CI and permutation p. A difference no larger than the larger sd over seeds of the two "
        f"rows is marked as inside the seed spread: no difference.",
        "",
        f"Training times on: {machines(rows)}.",
        "",
    ]
    header = ["setting", "seeds", *(h for t in tasks for h in (f"{t} MAP", *(f"{t} Δ {ref}" for ref in references)))]
    header.append("train min")
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, entry in compared["rows"].items():
        cells = [name, str(entry["seeds"])]
        for task in tasks:
            stats = entry["tasks"][task]
            cells.append(f"{stats['map_mean']:.2f}" + (f" ± {stats['map_sd']:.2f}" if entry["seeds"] > 1 else ""))
            for ref in references:
                test = stats["versus"].get(ref)
                if test is None:
                    cells.append("")
                    continue
                p = "< 0.001" if test["p"] < 0.001 else f"{test['p']:.3f}"
                cell = f"{test['diff']:+.2f} [{test['ci_low']:+.2f}, {test['ci_high']:+.2f}] p {p}"
                # the larger sd over seeds of the two rows (a 1-seed row of a trained setting has none measured)
                other = compared["rows"][ref]
                if entry["seeds"] > 1 or other["seeds"] > 1:
                    row_map, ref_map = (
                        {"mean": t["map_mean"], "sd": t["map_sd"]} for t in (stats, other["tasks"][task])
                    )
                    if within_spread(row_map, ref_map):
                        cell += f", inside the seed spread (sd {max(row_map['sd'], ref_map['sd']):.2f})"
                cells.append(cell)
        minutes = np.mean([r["train_seconds"] for r in by_setting[name]]) / 60
        cells.append(f"{minutes:.1f}" if minutes else "")
        lines.append("| " + " | ".join(cells) + " |")
    reading = lever_reading(compared, by_setting, tasks, reference)
    return "\n".join(lines + (["", *reading] if reading else []))


FINDING_SEEDS = 3  # a setting with fewer seeds is a screen: its spread over training randomness is not measured


def lever_reading(
    compared: Mapping[str, Any],
    by_setting: Mapping[str, Sequence[Mapping[str, Any]]],
    tasks: Sequence[str],
    reference: str,
) -> list[str]:
    """Sentences computed from the table: each trained setting with ``FINDING_SEEDS`` seeds or more against the
    reference, the base model and TF-IDF (higher, lower or no difference: inside the seed spread, or an interval
    that holds 0), its slowest seed's training time, and which settings are screens."""

    def verdict(entry: Mapping[str, Any], other: str) -> str:
        parts, signs = [], set()
        for task in tasks:
            stats, test = entry["tasks"][task], entry["tasks"][task]["versus"].get(other)
            if test is None:
                return ""
            against = compared["rows"][other]["tasks"][task]
            inside = within_spread(
                {"mean": stats["map_mean"], "sd": stats["map_sd"]},
                {"mean": against["map_mean"], "sd": against["map_sd"]},
            )
            signs.add(0 if inside else evidence(test["diff"], (test["ci_low"], test["ci_high"])))
            p = "p < 0.001" if test["p"] < 0.001 else f"p {test['p']:.3f}"
            parts.append(f"{task} {test['diff']:+.2f} ({p}{', inside the seed spread' if inside else ''})")
        verdicts = {1: "higher than", -1: "lower than", 0: "no different from"}
        word = verdicts[signs.pop()] if len(signs) == 1 else "not uniformly different from"
        return f"{word} `{other}` on {' and '.join(tasks)}: {', '.join(parts)}"

    lines, screens = [], []
    for name, entry in compared["rows"].items():
        group = by_setting[name]
        if group[0].get("kind") != "trained" or name == reference:
            continue
        if entry["seeds"] < FINDING_SEEDS:
            screens.append(f"`{name}` ({entry['seeds']} seed{'s' * (entry['seeds'] != 1)})")
            continue
        against = [
            v for other in (reference, BASE, TFIDF) if other in compared["rows"] and (v := verdict(entry, other))
        ]
        slowest = max(r["train_seconds"] for r in group) / 60
        lines.append(
            f"- `{name}` ({entry['seeds']} seeds): "
            + "; ".join(against)
            + f"; slowest seed trained in {slowest:.1f} min."
        )
    if screens:
        lines.append(f"- Screens, not findings (fewer than {FINDING_SEEDS} seeds): {', '.join(screens)}.")
    return ["Reading, computed from the rows above:", "", *lines] if lines or screens else []


# ---------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="run folder built by `specter-utils run --notebooks 01 02`")
    parser.add_argument(
        "--results", type=Path, help=f"results file (default RUN_DIR/{RESULTS}); work files stay in RUN_DIR"
    )
    parser.add_argument("--settings", type=Path, help="YAML {name: {key: value}} replacing the built-in levers")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these settings")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--set", dest="common", action="append", default=[], metavar="KEY=VALUE", help="every row")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--keep-models", action="store_true", help="keep each row's trained model (~90 MB)")
    parser.add_argument("--table", action="store_true", help="print the table of the results file and stop")
    parser.add_argument("--reference", default=REFERENCE, help="the setting the table compares with")
    parser.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap and permutation resamples")
    args = parser.parse_args(argv)
    results = args.results or RunPaths.of(args.run_dir).run_dir / RESULTS
    try:
        if args.table:
            print(lever_table(results, args.reference, args.n_resamples))
            return 0
        settings = yaml.safe_load(args.settings.read_text()) if args.settings else LEVERS
        if args.only:
            unknown = [name for name in args.only if name not in settings]
            if unknown:
                raise DataError(f"unknown setting(s) {unknown}; known: {', '.join(settings)}", "--only")
            settings = {name: settings[name] for name in args.only}
        common = dict(parse_override(text) for text in args.common)
        run_levers(args.run_dir, settings, args.seeds, results, common, args.tasks, args.keep_models)
    except DataError as exc:
        print(f"recipe_levers: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
