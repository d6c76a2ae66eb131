"""The stages of a run: prepare, mine (+ leakage audit), train, embed, evaluate; and an ablation made of them.

Each stage takes the run specification (``spec.RunSpec``) and the folders it reads and writes, so that the
notebooks (01-05), the ablations (07) and the command line run one and the same code. An ablation variant
is the specification plus a few overrides (``ABLATIONS``), run through the same stages; its reference row is
the main run's own trained model, evaluated on the same papers at the same length.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from specter_utils.errors import DataError
from specter_utils.io import read_json, write_json
from specter_utils.runs import RESULTS_TABLE, RunPaths, corpus_label, resolve
from specter_utils.spec import RunSpec


# ---------------------------------------------------------------- 1. prepare (notebook 01)
def load_corpus_for_run(
    corpus: str, data_dir: str = "", n_papers: int = 600, n_topics: int = 6, seed: int = 0, label_field: str = ""
):
    """The corpus of a run: generated (``synthetic``) or read from ``data_dir`` (default: the shared data).

    ``corpus`` ``auto`` detects the kind from ``data_dir``; ``label_field`` "" is the kind's default.
    """
    from specter_utils.data.load import load_corpus

    if corpus == "synthetic":
        return load_corpus(
            "synthetic", n_papers=n_papers, n_topics=n_topics, seed=seed, label_field=label_field or None
        )
    return load_corpus(corpus, resolve(data_dir) if data_dir else None, label_field=label_field or None)


def prepare(spec: RunSpec, benchmark_dir: str | Path) -> dict[str, Any]:
    """Read (or generate) the corpus, build the SCIDOCS-layout benchmark, fetch the real SCIDOCS if asked.

    Returns ``corpus`` (the Corpus), ``benchmark`` (``build_benchmark``'s summary) and ``scidocs`` (stats or None).
    """
    from specter_utils.benchmark.build import build_benchmark

    data = spec.section("data")
    corpus = load_corpus_for_run(
        data["corpus"], data["data_dir"], data["n_papers"], data["n_topics"], data["seed"], data["label_field"]
    )
    benchmark = build_benchmark(
        corpus,
        benchmark_dir,
        seed=data["seed"],
        n_queries=data["n_queries"],
        max_class_papers=data["max_class_papers"],
        negative_pool=data["negative_pool"],
        multi_label=data["multi_label"],
    )
    scidocs_stats = None
    if spec["evaluation.scidocs_dir"]:
        from specter_utils.data.download import download_dataset
        from specter_utils.data.stats import corpus_stats

        download_dataset("scidocs", resolve(spec["evaluation.scidocs_dir"]))
        scidocs_stats = corpus_stats(resolve(spec["evaluation.scidocs_dir"]))
    return {"corpus": corpus, "benchmark": benchmark, "scidocs": scidocs_stats}


# ---------------------------------------------------------------- 2. mine + audit (notebook 02)
def mine(spec: RunSpec, train_data_dir: str | Path, triplets_dir: str | Path, benchmark_dir: str | Path) -> dict:
    """Mine triplets with the ``mining`` settings, then audit them: any held-out query in a triplet stops the run."""
    from specter_utils.triplets.audit import audit_leakage
    from specter_utils.triplets.sampler import SamplerConfig, mine_dir

    settings = spec.section("mining")
    settings["max_triplets"] = settings.get("max_triplets") or None  # 0 in the spec: no cap
    mining = mine_dir(train_data_dir, triplets_dir, SamplerConfig(seed=spec.seed, **settings))
    audit = audit_leakage(triplets_dir, benchmark_dir)
    if not audit["leak_free"]:
        raise DataError(
            f"{audit['query_overlap']['distinct_ids']} held-out evaluation queries appear in the training triplets: "
            f"{audit['query_overlap']['examples'][:3]}",
            triplets_dir,
        )
    leakage = {
        "leak_free": audit["leak_free"],
        **{
            name: audit[name]["distinct_ids"]
            for name in ("query_overlap", "candidate_overlap", "classification_overlap")
        },
    }
    return {**mining, "leakage": leakage}


def example_triplets(triplets_dir: str | Path, metadata: str | Path, n: int = 3, seed: int = 0):
    """``n`` training triplets with their titles (hard ones first), as a table to read."""
    import random

    import pandas as pd

    from specter_utils.data.specter_format import read_metadata
    from specter_utils.triplets.io import TRAIN_FILE, read_triplets

    triplets = read_triplets(Path(triplets_dir) / TRAIN_FILE)
    papers = read_metadata(metadata)
    rng = random.Random(seed)
    hard = [t for t in triplets if t.kind == "hard"]
    easy = [t for t in triplets if t.kind != "hard"]
    chosen = rng.sample(hard, min(len(hard), max(1, n - 1))) if hard else []
    chosen += rng.sample(easy, min(len(easy), n - len(chosen)))

    def title(paper_id: str) -> str:
        return papers[paper_id].title if paper_id in papers else paper_id

    rows = [(t.kind, title(t.query), title(t.pos), title(t.neg)) for t in chosen]
    return pd.DataFrame(rows, columns=["kind", "query", "positive (cited by the query)", "negative"])


# ---------------------------------------------------------------- 3. train (notebook 03)
def train(spec: RunSpec, triplets_dir: str | Path, metadata: str | Path, out: str | Path) -> dict[str, Any]:
    """Train with the ``training`` settings (its ``preset`` and ``recipe``, then any TrainConfig field) and the
    run's seed; return the model's summary.

    Returns ``model_dir``, ``config`` (TrainConfig as a dict), ``summary`` (``specter_training.json``) and
    ``log_history`` (the trainer's log: training and validation losses).
    """
    from specter_utils.training.config import make_config
    from specter_utils.training.train import train_specter

    settings = spec.section("training")
    preset = settings.pop("preset", None) or None
    config = make_config(
        preset,
        triplets=str(triplets_dir),
        metadata=str(metadata),
        out=str(out),
        seed=spec.seed,
        overwrite=True,  # re-running a notebook retrains
        progress_bar=False,
        **settings,
    )
    model_dir = train_specter(config)
    log_file = Path(out) / "log_history.json"
    return {
        "model_dir": model_dir,
        "config": config.to_dict(),
        "summary": read_json(model_dir / "specter_training.json"),
        "log_history": read_json(log_file) if log_file.exists() else [],
    }


# ---------------------------------------------------------------- 4. embed (notebook 04)
def papers_to_embed(scidocs_dir: str | Path, split: str = "all", tasks: list[str] | None = None) -> dict[str, Any]:
    """Papers of a SCIDOCS-layout folder to embed (``{paper_id: Paper}``).

    ``split="all"`` takes every paper of the ``paper_metadata_*.json`` files, so either split can be
    scored later; ``"test"`` or ``"val"`` only those the evaluation of that split reads for ``tasks``
    (default: every task present), see :func:`data.scidocs.papers_needed`.
    """
    from specter_utils.data.scidocs import METADATA_FILES, papers_needed
    from specter_utils.embedding.inputs import read_metadata_files
    from specter_utils.evaluation.suite import task_name

    if split not in ("all", "test", "val"):
        raise ValueError(f"split must be 'all', 'test' or 'val', got {split!r}")
    root = resolve(scidocs_dir)
    files = [root / name for name in METADATA_FILES.values() if (root / name).exists()]
    if not files:
        raise FileNotFoundError(f"no paper_metadata_*.json under {root}")
    papers = read_metadata_files(files)
    if split == "all":
        return papers
    wanted = papers_needed(root, split, [task_name(t) for t in tasks] if tasks else None)
    return {pid: paper for pid, paper in papers.items() if pid in wanted}


def embed(spec: RunSpec, model: str | Path, papers: dict[str, Any], out: str | Path) -> dict[str, Any]:
    """Embed ``papers`` with ``model`` at the run's one evaluation length (``embedding.max_seq_length``)."""
    from specter_utils.embedding.embed import embed_to_file

    started = time.time()
    result = embed_to_file(
        str(model),
        papers,
        out,
        batch_size=spec["embedding.batch_size"],
        max_length=spec["embedding.max_seq_length"],
        pooling=None,  # the model's own pooling: [CLS] or mean, as it was trained
        progress=False,
    )
    keep = ("model", "model_path", "pooling", "max_length", "dtype", "device")
    return {
        "file": str(out),
        "count": len(result),
        "dim": result.dim,
        **{k: result.info[k] for k in keep if k in result.info},
        "seconds": round(time.time() - started, 1),
    }


def embed_baselines(
    spec: RunSpec,
    papers: dict[str, Any],
    out_dir: str | Path,
    scidocs_dir: str | Path,
    train_data_dir: str | Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Write ``out_dir/<baseline>.jsonl`` for each of ``embedding.baselines`` (``embedding.baselines``' dispatcher).

    The citation graph for ``sgc`` is the one in the evaluation metadata (``references``/``cited_by``), minus
    every edge of the held-out ranking queries; TF-IDF and SIF are fitted on the training papers and the
    evaluation papers together (``specter-utils embed --baseline NAME --fit-metadata`` does the same).
    """
    from specter_utils.benchmark.splits import benchmark_ids
    from specter_utils.data.graph import CitationGraph, edges_from_paper_lists
    from specter_utils.data.specter_format import read_metadata
    from specter_utils.embedding.baselines import compute_baselines, fit_corpus
    from specter_utils.embedding.io import read_embeddings

    names = spec["embedding.baselines"]
    if not names:
        return {}
    held_out = {q for task in benchmark_ids(resolve(scidocs_dir)).values() for q in task.get("queries", ())}
    metadata = Path(train_data_dir) / "metadata.json" if train_data_dir else None
    extra = read_metadata(metadata) if metadata is not None and metadata.exists() else None
    started = time.time()
    files = compute_baselines(
        papers,
        CitationGraph.from_edges(edges_from_paper_lists(papers)),
        held_out,
        names,
        out_dir,
        seed=spec.seed,
        fit_papers=fit_corpus(papers, extra) or dict(papers),
    )
    seconds = round(time.time() - started, 1)
    written = {}
    for name, path in files.items():
        result = read_embeddings(Path(path).with_suffix(".npy"))
        written[name] = {"file": str(path), "count": len(result), "dim": result.dim, **result.info}
        written[name]["seconds_all_baselines"] = seconds
    return written


# ---------------------------------------------------------------- 5. evaluate (notebook 05)
def evaluate_file(
    scidocs_dir: str | Path, embedding_file: str | Path, tasks: list[str] | None = None, split: str = "test"
) -> dict[str, Any]:
    """SCIDOCS results (x 100) of one embeddings file on a SCIDOCS-layout folder."""
    from specter_utils.embedding.io import read_embeddings_fast
    from specter_utils.evaluation.suite import evaluate as evaluate_suite

    embeddings = read_embeddings_fast(embedding_file)
    return evaluate_suite(resolve(scidocs_dir), embeddings, tasks=tasks, split=split)


def evaluate(
    spec: RunSpec, scidocs_dir: str | Path, embeddings_dir: str | Path, tasks: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Evaluate ``embeddings_dir/<model>.jsonl`` for each of ``evaluation.models`` (empty: every file,
    trained and base first) on ``evaluation.split``, for ``tasks`` (default ``evaluation.tasks``; empty: all)."""
    embeddings_dir = Path(embeddings_dir)
    models = spec["evaluation.models"]
    if not models:
        found = sorted(p.stem for p in embeddings_dir.glob("*.jsonl"))
        models = [m for m in ("trained", "base") if m in found] + [m for m in found if m not in ("trained", "base")]
    if not models:
        raise FileNotFoundError(f"no embeddings (*.jsonl) in {embeddings_dir}")
    tasks = tasks if tasks is not None else spec["evaluation.tasks"] or None
    split = spec["evaluation.split"]
    return {name: evaluate_file(scidocs_dir, embeddings_dir / f"{name}.jsonl", tasks, split) for name in models}


def write_results_table(results: dict[str, dict[str, Any]], out_dir: str | Path) -> str:
    """Write ``out_dir/results.md`` (our rows, then the paper's Table 1, ``evaluation.table``) and ``results.json``."""
    from specter_utils.io import atomic_write
    from specter_utils.presentation.tables import render

    _, table = render(results)
    table = f"Benchmark: {corpus_label(Path(out_dir).parent)}\n\n{table}"
    note = (
        "Rows without '(paper)': this run, every model on the same benchmark and split. '(paper)' rows: SCIDOCS "
        "Table 1, comparable only when the benchmark is the real SCIDOCS; `avg` is over the metrics this run has "
        "(the same columns in every row), `paper avg` the paper's own 12-metric average."
    )
    out_dir = Path(out_dir)
    with atomic_write(out_dir / RESULTS_TABLE) as handle:
        handle.write(f"{table}\n\n{note}\n")
    write_json(out_dir / "results.json", results)
    return table


# ---------------------------------------------------------------- ablations (notebook 07)
REFERENCE = "specter"  # the reference row of the ablation table: the main run's model (notebooks 02-04)

# Each variant of notebook 07: the run specification's keys it overrides, and nothing else.
ABLATIONS: dict[str, dict[str, Any]] = {
    # Table 2
    "no_abstract": {"ablations.text_fields": ["title"]},  # "- abstract": the title alone, in training and evaluation
    "venue": {"ablations.text_fields": ["title", "abstract", "venue"]},  # "+ venue": the venue's name appended
    "author": {"ablations.text_fields": ["title", "abstract", "authors"]},  # "+ author": the author names appended
    "no_hard_negatives": {"mining.no_hard_negatives": True},  # every negative a random paper
    "mean_pooling": {"training.pooling": "mean"},  # mean of the token vectors
    "cls_pooling": {"training.pooling": "cls"},  # final-layer [CLS] (SPECTER's), whatever the base model's own
    "spectroid": {"mining.spectroid": True},  # positives drawn in proportion to their in-citations
    "mpnet": {
        "training.base_model": "mpnet"
    },  # another start: all-mpnet-base-v2 (the extra [mpnet]); the paper: BERT-Large
    # Table 3: task-specific training signals instead of citations
    "cocitation": {"mining.positives": "cocitation"},  # positives co-cited with the query (triplets.sampler)
    "multitask": {"mining.positives": "mix"},  # citation and co-citation positives in one pool
}
# The paper's Table 2 or 3 row each variant stands beside (evaluation.table.PAPER_ABLATION_ROWS)
PAPER_ROWS = {
    REFERENCE: "SPECTER",
    "no_abstract": "- abstract",
    "venue": "+ venue",
    "author": "+ author",
    "no_hard_negatives": "no hard negatives",
    "mpnet": "start with BERT-Large",
    "cocitation": "SciBERT fine-tune on co-citation",
    "multitask": "SciBERT fine-tune on multitask",
}
TEXT_FIELDS = ("title", "abstract", "venue", "authors")


def ablation_spec(spec: RunSpec, name: str, seed: int | None = None) -> RunSpec:
    """The specification of one ablation variant: ``spec`` plus the variant's overrides (and ``seed``, if given).

    ``name`` may be the reference row only with a seed (a retrained seed of the main run's recipe).
    """
    if name not in ABLATIONS and not (name == REFERENCE and seed is not None):
        raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ABLATIONS)} (and {REFERENCE}, the main run)")
    variant = spec.with_overrides(ABLATIONS.get(name, {}))
    return variant.with_overrides({"seed": seed}) if seed is not None and seed != spec.seed else variant


def paper_text_fields(papers: dict[str, Any], fields: list[str], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``papers`` with each abstract replaced by the text of ``fields`` after the title.

    ``["title"]`` leaves the abstract empty (the input is ``title [SEP]``); ``venue`` and ``authors`` are
    appended after the abstract as ``Venue: ...`` / ``Authors: a, b`` (taken from ``extra``, the corpus
    records, where the paper itself lacks them). The title always comes first, as in SPECTER.
    """
    import dataclasses

    unknown = [f for f in fields if f not in TEXT_FIELDS]
    if unknown or not fields or fields[0] != "title":
        raise ValueError(f"text fields must start with 'title' and be among {TEXT_FIELDS}, got {fields}")
    if list(fields) == ["title", "abstract"]:
        return papers
    extra = extra or {}
    out = {}
    for pid, paper in papers.items():
        source = extra.get(pid)
        parts = []
        if "abstract" in fields and paper.abstract:
            parts.append(paper.abstract)
        venue = paper.venue or (source.venue if source is not None else None)
        authors = list(paper.authors or (source.authors if source is not None else []))
        if "venue" in fields and venue:
            parts.append(f"Venue: {venue}")
        if "authors" in fields and authors:
            parts.append("Authors: " + ", ".join(authors))
        out[pid] = dataclasses.replace(paper, abstract=" ".join(parts))
    return out


def _variant_papers(spec: RunSpec, paths: RunPaths, out: Path) -> tuple[Path, dict[str, Any] | None]:
    """For a text-field variant: a copy of the training dir's metadata.json (and data.json) with the variant's
    texts, and the corpus records that supply venues and authors. Otherwise the training metadata as it is."""
    fields = spec["ablations.text_fields"]
    metadata = paths.train_data_dir / "metadata.json"
    if list(fields) == ["title", "abstract"]:
        return metadata, None
    import shutil

    from specter_utils.data.records import read_paper_file

    extra = None
    if any(f in fields for f in ("venue", "authors")):
        data = spec.section("data")
        corpus = load_corpus_for_run(data["corpus"], data["data_dir"], data["n_papers"], data["n_topics"], data["seed"])
        extra = corpus.papers
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
    embedded = embed(variant, trained["model_dir"], papers, embedding_file)
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


def ablation_settings(variant: RunSpec) -> dict[str, Any]:
    """The settings that make one ablation row: the variant's whole specification less the grid's ``GRID_KEYS``."""
    settings = variant.to_dict()
    for key in GRID_KEYS:
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

    The reference row's run seed is the main run's model (not retrained); its other seeds are retrained with the
    main recipe, so every row has the same seeds and the same budget.
    """
    seeds = list(spec["ablations.seeds"]) or [spec.seed]
    rows: dict[str, dict[int, dict[str, Any]]] = {REFERENCE: {}}
    for seed in seeds:
        if seed == spec.seed:
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
    from specter_utils.data.scidocs import RANKING_TASKS, available_tasks, read_scidocs_dir
    from specter_utils.evaluation.paired import compare_rows, score_row
    from specter_utils.evaluation.suite import task_name
    from specter_utils.presentation.tables import seed_group_statistics

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
        paired = compare_rows(scored, [REFERENCE], list(qrels), n_resamples=n_resamples)
    return {"groups": groups, "paired": paired, "seeds": {name: sorted(by_seed) for name, by_seed in rows.items()}}


# ---------------------------------------------------------------- 8. classification heads (notebook 08)
HEADS_NOTEBOOK = "08_classification_heads"


def head_seeds(spec: RunSpec) -> list[int]:
    """The heads' seeds: the run's seed and the ``heads.n_seeds - 1`` after it."""
    return [spec.seed + i for i in range(max(1, spec["heads.n_seeds"]))]


def head_config(spec: RunSpec):
    """``heads.HeadConfig`` of the frozen heads (the architecture and seed are set per run)."""
    from specter_utils.heads import HeadConfig

    settings = spec.section("heads")
    return HeadConfig(
        hidden_dims=(),
        batch_norm=settings["batch_norm"],
        dropout=settings["dropout"],
        lr=settings["learning_rate"],
        weight_decay=settings["weight_decay"],
        batch_size=settings["batch_size"],
        max_epochs=settings["max_epochs"],
        patience=settings["patience"],
        seed=spec.seed,
    )


def heads_task_splits(spec: RunSpec, paths: RunPaths) -> dict[str, list[tuple[str, str]]]:
    """The ``heads.task`` splits of the evaluation data, checked (one class, or a class unseen in train: DataError)."""
    from specter_utils.heads import read_task_splits

    return read_task_splits(paths.scidocs_dir(spec["evaluation.scidocs_dir"]), spec["heads.task"])


def frozen_heads(spec: RunSpec, paths: RunPaths) -> dict[str, Any]:
    """Every ``heads.architectures`` x seed on the frozen embeddings of each ``heads.models`` file (notebook 04's,
    at the run's evaluation length), with the linear SVM on the same split: ``{model: heads.frozen_heads(...)}``."""
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.heads import frozen_heads as train_frozen

    splits = heads_task_splits(spec, paths)
    results = {}
    for name in spec["heads.models"]:
        embeddings = read_embeddings(paths.embedding_file(name))
        labels = {
            "encoder": name,
            "max_length": embeddings.info.get("max_length", ""),
            "train_papers": len(splits["train"]),
        }
        results[name] = train_frozen(
            embeddings,
            splits,
            spec["heads.architectures"],
            head_seeds(spec),
            head_config(spec),
            spec["heads.svm"],
            labels,
        )
    return results


def end_to_end_encoder(spec: RunSpec, paths: RunPaths) -> str:
    """The encoder ``heads.end_to_end.model`` names: ``trained`` (notebook 03's model) or ``base``."""
    name = spec["heads.end_to_end.model"]
    if name == "trained":
        if not paths.model_dir.exists():
            raise DataError("no trained model: run notebook 03 first", paths.model_dir)
        return str(paths.model_dir)
    if name == "base":
        return spec["training.base_model"]
    raise DataError(f"heads.end_to_end.model must be 'trained' or 'base', got {name!r}", "run specification")


def end_to_end_heads(spec: RunSpec, paths: RunPaths, figures_dir: str | Path = "figures") -> dict[str, Any]:
    """Fine-tune the encoder through each ``heads.end_to_end.architectures`` head, once per seed, and compare.

    On the same (capped) training papers and at the same input length it also trains the frozen heads and
    the SVM on the untouched encoder's embeddings, so the end-to-end rows have a like-for-like control. The
    geometry (notebook 06's t-SNE / UMAP, DBSCAN homogeneity and completeness) of the test papers is scored
    before and after every run and drawn for the first seed of each architecture.

    Returns ``rows`` (the table's long format), ``runs`` (each run's metrics), ``geometry`` and ``figure``.
    """
    from specter_utils.analysis.geometry import analyse_embeddings
    from specter_utils.embedding.embed import embed_papers
    from specter_utils.heads import frozen_heads as train_frozen
    from specter_utils.heads import parse_architecture
    from specter_utils.heads_end_to_end import EndToEndConfig, cap_splits, train_end_to_end

    settings = spec.section("heads")["end_to_end"]
    architectures, seeds = settings["architectures"], head_seeds(spec)
    if not architectures:
        return {"rows": [], "runs": [], "geometry": {}, "figure": None}
    started = time.time()
    encoder = end_to_end_encoder(spec, paths)
    scidocs = paths.scidocs_dir(spec["evaluation.scidocs_dir"])
    splits = cap_splits(
        heads_task_splits(spec, paths), settings["max_train_papers"], settings["max_val_papers"], seed=spec.seed
    )
    papers = papers_to_embed(scidocs, split="all")
    length = settings["max_length"]
    labels = {"encoder": settings["model"], "max_length": length, "train_papers": len(splits["train"])}

    # The untouched encoder at the end-to-end length: the frozen control, the heads' standardisation, "before".
    wanted = {pid for rows in splits.values() for pid, _ in rows}
    before = embed_papers(
        encoder,
        {pid: paper for pid, paper in papers.items() if pid in wanted},
        batch_size=spec["embedding.batch_size"],
        max_length=length,
        progress=False,
    )
    control = train_frozen(before, splits, architectures, seeds, head_config(spec), spec["heads.svm"], labels)
    rows, runs, after = list(control["rows"]), [], {}
    train_vectors, _ = before.lookup([pid for pid, _ in splits["train"]])
    for architecture in architectures:
        for seed in seeds:
            config = EndToEndConfig(
                model=encoder,
                out=str(paths.notebook_dir(HEADS_NOTEBOOK) / "end_to_end" / f"{architecture}-seed{seed}"),
                hidden_dims=parse_architecture(architecture),
                batch_norm=spec["heads.batch_norm"],
                dropout=spec["heads.dropout"],
                max_seq_length=length,
                epochs=settings["epochs"],
                learning_rate=settings["learning_rate"],
                head_learning_rate=settings["head_learning_rate"],
                batch_size=settings["batch_size"],
                eval_steps=settings["eval_steps"],
                patience=settings["patience"],
                seed=seed,
            )
            result = train_end_to_end(config, papers, splits, start_train_vectors=train_vectors)
            result.metrics["head"] = architecture
            runs.append(result.metrics)
            rows.append({**labels, **{k: v for k, v in result.metrics.items() if k != "config"}})
            after[f"{architecture} seed {seed}"] = result.test_embeddings

    # Geometry of the held-out test papers before and after (the same sample, projection and DBSCAN rule as 06).
    figure_stem = resolve(figures_dir) / f"heads_geometry_{paths.run_dir.name}"
    geometry = analyse_embeddings(
        {"before": before, **after},
        dict(splits["test"]),
        methods=spec["analysis.methods"],
        max_papers=spec["analysis.max_papers"],
        max_classes=spec["analysis.max_classes"] or None,
        seed=spec.seed,
        perplexity=spec["analysis.perplexity"],
        figure_stem=figure_stem,
        title=f"{corpus_label(paths.run_dir)}: {spec['heads.task']} test papers, {settings['model']} encoder "
        f"before and after end-to-end head training ({length} wordpieces)",
        figure_models=["before", *(f"{a} seed {seeds[0]}" for a in architectures)],
    )
    return {
        "rows": rows,
        "runs": runs,
        "control": {k: v for k, v in control.items() if k != "rows"},
        "splits": {split: len(rows_) for split, rows_ in splits.items()},
        "encoder": encoder,
        "geometry": geometry,
        "figure": str(figure_stem.with_suffix(".png")),
        "seconds": round(time.time() - started, 1),
    }


# ---------------------------------------------------------------- similar papers (notebook 04, section 5)
def similar_papers(
    papers: dict[str, Any], embeddings_file: str | Path, index_file: str | Path, n_queries: int = 3, k: int = 5
) -> dict[str, Any]:
    """Index ``embeddings_file`` (FAISS, exact up to ``search.EXACT_MAX``) and find the ``k`` nearest papers of
    the ``n_queries`` most-cited papers in it (citations counted within ``papers``' reference lists).

    Writes the index to ``index_file`` (``specter-utils search --index`` reads it). Returns ``table`` (a
    DataFrame: query, rank, neighbour, score), ``queries`` (id -> in-corpus citations) and ``index`` settings.
    """
    from collections import Counter

    from specter_utils.data.graph import edges_from_paper_lists
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.search import build_index, neighbours_table

    embeddings = read_embeddings(embeddings_file)
    index = build_index(embeddings, titles={pid: p.title for pid, p in papers.items()}, source=str(embeddings_file))
    index.save(index_file)
    cited = Counter(b for _, b in edges_from_paper_lists(papers))
    ranked = sorted((pid for pid in index.ids if cited[pid]), key=lambda pid: (-cited[pid], pid))
    queries = {pid: cited[pid] for pid in ranked[:n_queries]}
    if not queries:
        raise DataError("no embedded paper is cited by another: nothing to search from", embeddings_file)
    return {
        "table": neighbours_table(index, list(queries), k=k),
        "queries": queries,
        "index": {"file": str(index_file), "papers": len(index), **index.settings},
    }
