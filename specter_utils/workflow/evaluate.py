"""Stage 5 (notebook 05, ``specter-utils evaluate`` and ``compare``): score embeddings files, or a model, on a
SCIDOCS-layout benchmark (or a BEIR folder), and compare models on the ranking tasks with paired tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specter_utils.config import EvalConfig
from specter_utils.data.scidocs import read_qrel
from specter_utils.embedding.io import read_embeddings_fast
from specter_utils.errors import DataError
from specter_utils.evaluation.beir import is_beir_dir
from specter_utils.evaluation.model_eval import ModelRun, evaluate_model_beir, evaluate_model_scidocs
from specter_utils.evaluation.paired import compare_rows, render_comparison, score_row
from specter_utils.evaluation.rankers import score_rankers
from specter_utils.evaluation.recomm import DEFAULT_SEEDS
from specter_utils.evaluation.suite import SuiteOptions, task_name, write_results
from specter_utils.io import atomic_write, write_json
from specter_utils.layout import RESULTS_TABLE
from specter_utils.presentation.tables import (
    FIRST_ROWS,
    HEADERS,
    comparison_table,
    ranker_note,
    to_markdown,
    with_rankers,
)
from specter_utils.runs import corpus_label, resolve
from specter_utils.tasks import BY_NAME
from specter_utils.workflow.embed import papers_to_embed

__all__ = ["DEFAULT_SEEDS"]  # the recommendation ranker's seeds when none are given


def evaluate_file(
    scidocs_dir: str | Path, embedding_file: str | Path, tasks: list[str] | None = None, split: str = "test"
) -> dict[str, Any]:
    """SCIDOCS results (x 100) of one embeddings file on a SCIDOCS-layout folder."""
    embeddings = read_embeddings_fast(embedding_file)
    return score_embeddings(resolve(scidocs_dir), embeddings, SuiteOptions(tasks, split))


def score_embeddings(
    scidocs_dir: str | Path,
    embeddings: Any,
    suite: SuiteOptions | None = None,
    out: str | Path | None = None,
    rankers: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """The SCIDOCS suite (x 100) of ``embeddings`` (one file or set for every task, or ``{"cls": ..,
    "user-citation": .., "recomm": ..}``) on ``scidocs_dir``, with each of ``rankers`` scored on the same ranking
    tasks under ``result["rankers"]``; written to ``out`` as JSON when given."""
    suite = suite or SuiteOptions()
    result = suite.run(scidocs_dir, embeddings)
    if rankers:
        folders = [task_name(t) for t in suite.tasks] if suite.tasks else None
        result["rankers"] = score_rankers(resolve(scidocs_dir), list(rankers), suite.split, folders)
    if out is not None:
        write_results(out, result)
    return result


def check_scidocs_dir(data_dir: Path) -> None:
    """A DataError when ``data_dir`` is a BEIR folder, which only a model (not embeddings files) is scored on."""
    if is_beir_dir(data_dir):
        raise DataError("a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) is scored with --model", data_dir)


def embeddings_cache_dir(data_dir: Path, cache_dir: Path | None = None) -> Path:
    """``cache_dir`` or ``data_dir/.embeddings-cache``, checked writable before any work."""
    cache = cache_dir or data_dir / ".embeddings-cache"
    parent = cache if cache.exists() else cache.parent
    if cache.exists() and not cache.is_dir():
        raise DataError("--cache-dir: is a file, expected a folder", cache)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DataError("cannot write the embeddings cache here; pass --cache-dir DIR", cache)
    return cache


def evaluate_model(
    run: ModelRun, data_dir: Path, out: str | Path, cache_dir: Path | None = None, suite: SuiteOptions | None = None
) -> tuple[str, dict[str, Any]]:
    """Embed what the tasks read with ``run.model`` (cached) and score it, writing ``out``: a BEIR folder gets
    MTEB's retrieval scores, a SCIDOCS folder the whole suite. Returns ``("beir" or "scidocs", result)``."""
    suite = suite or SuiteOptions()
    if is_beir_dir(data_dir):
        if suite.tasks:
            raise DataError("--tasks is for a SCIDOCS folder; a BEIR folder has one retrieval task", "--tasks")
        split = "test" if suite.split == "test" else "dev"
        result = evaluate_model_beir(run, data_dir, embeddings_cache_dir(data_dir, cache_dir), split)
        write_json(out, result)
        return "beir", result
    try:
        # an absolute path: papers_to_embed resolves a relative one against the repository, not the working directory
        papers = papers_to_embed(data_dir.resolve(), suite.split, suite.tasks)
    except FileNotFoundError:
        raise DataError(
            "no paper_metadata_*.json: neither a SCIDOCS folder with paper metadata nor a BEIR folder", data_dir
        ) from None
    if not papers:
        raise DataError("the tasks read no paper of the metadata files", data_dir)
    result = evaluate_model_scidocs(run, data_dir, papers, embeddings_cache_dir(data_dir, cache_dir), suite)
    write_results(out, result)
    return "scidocs", result


def compare_models(
    data_dir: Path,
    rows: list[tuple[str, list[str]]],
    references: list[str],
    tasks: list[str],
    split: str = "test",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[dict[str, Any], str]:
    """Each row (a name and one embeddings file per seed) on the ``tasks``' ranking queries: MAP mean and spread
    over seeds, and paired tests against each of ``references``. Returns the comparison and its text table."""
    qrels = {}
    for task in tasks:  # either spelling (co-cite or cocite); results and tables name the task as evaluate does
        name = task_name(task)
        path = data_dir / name / f"{split}.qrel"
        if not path.is_file():
            raise DataError(f"no {split} qrels for task {BY_NAME[name].key!r}", path)
        qrels[BY_NAME[name].key] = read_qrel(path)
    scored = [score_row(name, files, qrels) for name, files in rows]
    result = compare_rows(scored, references, list(qrels), n_resamples=n_resamples, seed=seed)
    return result, render_comparison(result)


def evaluate(
    config: EvalConfig, scidocs_dir: str | Path, embeddings_dir: str | Path, tasks: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Evaluate ``embeddings_dir/<model>.jsonl`` for each of ``config.models`` (empty: every file, trained and base
    first) on ``config.split``, for ``tasks`` (default ``config.tasks``; empty: all), and score each of
    ``config.rankers`` on the same ranking tasks: ``{row: result}`` in Table 1's order (a ranker the benchmark has
    no data for carries only its reason under ``skipped``)."""
    embeddings_dir = Path(embeddings_dir)
    models = list(config.models)
    if not models:
        found = sorted(p.stem for p in embeddings_dir.glob("*.jsonl"))
        models = [m for m in FIRST_ROWS if m in found] + [m for m in found if m not in FIRST_ROWS]
    if not models:
        raise FileNotFoundError(f"no embeddings (*.jsonl) in {embeddings_dir}")
    clash = sorted(set(models) & set(config.rankers))
    if clash:
        raise DataError(f"embeddings named like a ranker ({', '.join(clash)}): rename the file or drop the ranker")
    tasks = tasks if tasks is not None else config.tasks or None
    results = {
        name: evaluate_file(scidocs_dir, embeddings_dir / f"{name}.jsonl", tasks, config.split) for name in models
    }
    if not config.rankers:
        return results
    folders = [task_name(t) for t in tasks] if tasks else None
    return with_rankers(results, score_rankers(resolve(scidocs_dir), config.rankers, config.split, folders))


def results_markdown(results: dict[str, dict[str, Any]], benchmark: str) -> str:
    """The text of ``results.md``: the run's rows (ranker rows among them) with the columns they have, then the
    paper's Table 1 apart, in those of its columns the run also has (its own average beside them)."""
    frame = comparison_table(results)
    paper = frame.index.str.endswith("(paper)")
    ours = frame[~paper].drop(columns=["paper avg"]).dropna(axis=1, how="all")
    ours.attrs = frame.attrs
    shared = [c for c in ours.columns if c in HEADERS]
    theirs = frame[paper][[*shared, "paper avg"]].dropna(axis=1, how="all")
    note = (
        "This run: every model on the same benchmark and split; `avg` is over the metrics its embedding rows have "
        "(the same columns in every row)."
    )
    rankers = ranker_note(results)
    if rankers:
        note += f"\n{rankers}"
    text = f"Benchmark: {benchmark}\n\n{to_markdown(ours)}\n\n{note}\n"
    if not theirs.empty:
        text += (
            "\n## The paper's Table 1 (on SCIDOCS)\n\n"
            "For scale only: comparable to the rows above only when the benchmark is the real SCIDOCS. Its columns "
            "that this run also has; `paper avg` is the paper's own 12-metric average.\n\n"
            f"{to_markdown(theirs)}\n"
        )
    return text


def write_results_table(results: dict[str, dict[str, Any]], out_dir: str | Path) -> str:
    """Write ``out_dir/results.md`` (:func:`results_markdown`) and ``results.json``; return the markdown."""
    out_dir = Path(out_dir)
    text = results_markdown(results, corpus_label(out_dir.parent))
    with atomic_write(out_dir / RESULTS_TABLE) as handle:
        handle.write(text)
    write_json(out_dir / "results.json", results)
    return text
