"""The steps several notebooks share, so that the notebooks hold no logic.

Reading a run's corpus (01), embedding the benchmark's papers and the baselines (04), evaluating a
folder of embedding files and the results table beside the paper's Table 1 (05), and one ablation
variant end to end (07; its Table 2 summary is ``evaluation.table.ablation_table``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from specter_utils.io import write_json
from specter_utils.runs import RESULTS_TABLE, RunPaths, corpus_label, resolve


def load_corpus_for_run(corpus: str, data_dir: str = "", n_papers: int = 600, n_topics: int = 6, seed: int = 0):
    """The corpus of a run: generated (``synthetic``) or read from ``data_dir`` (default: the shared data)."""
    from specter_utils.data.load import load_corpus

    if corpus == "synthetic":
        return load_corpus("synthetic", n_papers=n_papers, n_topics=n_topics, seed=seed)
    return load_corpus(corpus, resolve(data_dir) if data_dir else None)


# ---------------------------------------------------------------- embedding (notebooks 04 and 07)
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


def embed_model(
    model: str | Path,
    papers: dict[str, Any],
    out: str | Path,
    max_seq_length: int = 512,
    batch_size: int = 32,
    pooling: str | None = None,
) -> dict[str, Any]:
    """Embed ``papers`` with ``model`` into ``out`` (SCIDOCS jsonl + sidecars); return what was done."""
    from specter_utils.embedding.embed import embed_to_file

    started = time.time()
    result = embed_to_file(
        str(model), papers, out, batch_size=batch_size, max_length=max_seq_length, pooling=pooling, progress=False
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
    names: list[str],
    papers: dict[str, Any],
    out_dir: str | Path,
    scidocs_dir: str | Path,
    train_data_dir: str | Path | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Write ``out_dir/<baseline>.jsonl`` for each of ``names`` (``evaluation.baselines``); return what was written.

    The citation graph for ``sgc`` is the one in the evaluation metadata (``references``/``cited_by``), minus
    every edge of the held-out ranking queries; TF-IDF and SIF are fitted on the training papers and the
    evaluation papers together.
    """
    from specter_utils.benchmark.splits import benchmark_ids
    from specter_utils.data.graph import CitationGraph, edges_from_paper_lists
    from specter_utils.data.specter_format import read_metadata
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.evaluation.baselines import compute_baselines

    if not names:
        return {}
    held_out = {q for task in benchmark_ids(resolve(scidocs_dir)).values() for q in task.get("queries", ())}
    fit = dict(papers)
    metadata = Path(train_data_dir) / "metadata.json" if train_data_dir else None
    if metadata is not None and metadata.exists():
        fit = {**read_metadata(metadata), **fit}
    started = time.time()
    files = compute_baselines(
        papers,
        CitationGraph.from_edges(edges_from_paper_lists(papers)),
        held_out,
        names,
        out_dir,
        seed=seed,
        fit_papers=fit,
    )
    seconds = round(time.time() - started, 1)
    written = {}
    for name, path in files.items():
        result = read_embeddings(Path(path).with_suffix(".npy"))
        written[name] = {"file": str(path), "count": len(result), "dim": result.dim, **result.info}
    for info in written.values():
        info["seconds_all_baselines"] = seconds
    return written


# Each variant of notebook 07: the options it changes in mining (SamplerConfig) and training (TrainConfig).
ABLATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "specter": {"mine": {}, "train": {}},
    "no_hard_negatives": {"mine": {"no_hard_negatives": True}, "train": {}},
    "mean_pooling": {"mine": {}, "train": {"pooling": "mean"}},
    "spectroid": {"mine": {"spectroid": True}, "train": {}},
}


def run_ablation(
    paths: RunPaths,
    name: str,
    base_model: str = "minilm",
    max_seq_length: int = 128,
    max_train_triplets: int = 400,
    epochs: float = 1.0,
    per_device_batch_size: int = 8,
    train_preset: str = "cpu",
    tasks: list[str] | None = None,
    scidocs_dir: str = "",
    seed: int = 0,
) -> dict[str, Any]:
    """One variant of notebook 07: mine, train, embed and evaluate on the test split with the variant's changes.

    The changes of each variant are in ``ABLATIONS``; only the papers the test evaluation of ``tasks`` reads
    are embedded.
    """
    from specter_utils.io import read_json
    from specter_utils.training.config import make_config
    from specter_utils.training.train import train_specter
    from specter_utils.triplets.sampler import SamplerConfig, mine_dir

    if name not in ABLATIONS:
        raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ABLATIONS)}")
    variant, out = ABLATIONS[name], paths.ablation_dir(name)
    started = time.time()
    mining = mine_dir(paths.train_data_dir, out / "triplets", SamplerConfig(seed=seed, **variant["mine"]))
    config = make_config(
        train_preset,
        triplets=str(out / "triplets"),
        metadata=str(paths.train_data_dir / "metadata.json"),
        out=str(out / "train"),
        base_model=base_model,
        max_seq_length=max_seq_length,
        max_train_triplets=max_train_triplets,
        epochs=epochs,
        per_device_batch_size=per_device_batch_size,
        seed=seed,
        overwrite=True,
        progress_bar=False,
        **variant["train"],
    )
    model_dir = train_specter(config)
    scidocs = paths.scidocs_dir(scidocs_dir)
    embedding_file = out / "embeddings.jsonl"
    papers = papers_to_embed(scidocs, split="test", tasks=tasks)  # only what the test evaluation below reads
    embedded = embed_model(model_dir, papers, embedding_file, max_seq_length)
    results = evaluate_file(scidocs, embedding_file, tasks=tasks)
    return {
        "changes": variant,
        "triplets": mining["train"]["triplets"],
        "training": read_json(model_dir / "specter_training.json")["results"],
        "embedding": embedded,
        "results": results,
        "seconds": round(time.time() - started, 1),
    }


# ---------------------------------------------------------------- evaluation and the results table (notebook 05)
def evaluate_file(
    scidocs_dir: str | Path, embedding_file: str | Path, tasks: list[str] | None = None, split: str = "test"
) -> dict[str, Any]:
    """SCIDOCS results (x 100) of one embeddings file on a SCIDOCS-layout folder."""
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.evaluation.suite import evaluate

    embedding_file = Path(embedding_file)
    npy = embedding_file.with_suffix(".npy")
    embeddings = read_embeddings(npy if npy.exists() else embedding_file)
    return evaluate(resolve(scidocs_dir), embeddings, tasks=tasks, split=split)


def evaluate_embeddings(
    scidocs_dir: str | Path,
    embeddings_dir: str | Path,
    models: list[str] | None = None,
    tasks: list[str] | None = None,
    split: str = "test",
) -> dict[str, dict[str, Any]]:
    """Evaluate ``embeddings_dir/<model>.jsonl`` for each model (default: every file, trained and base first)."""
    embeddings_dir = Path(embeddings_dir)
    if not models:
        found = sorted(p.stem for p in embeddings_dir.glob("*.jsonl"))
        models = [m for m in ("trained", "base") if m in found] + [m for m in found if m not in ("trained", "base")]
    if not models:
        raise FileNotFoundError(f"no embeddings (*.jsonl) in {embeddings_dir}")
    return {name: evaluate_file(scidocs_dir, embeddings_dir / f"{name}.jsonl", tasks, split) for name in models}


def write_results_table(results: dict[str, dict[str, Any]], out_dir: str | Path) -> str:
    """Write ``out_dir/results.md`` (our rows, then the paper's Table 1, ``evaluation.table``) and ``results.json``."""
    from specter_utils.evaluation.table import render
    from specter_utils.io import atomic_write

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
