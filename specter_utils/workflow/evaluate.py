"""Stage 5 (notebook 05): score every embeddings file of the run on the SCIDOCS-layout benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.config import EvalConfig
from specter_utils.embedding.io import read_embeddings_fast
from specter_utils.evaluation.suite import evaluate as evaluate_suite
from specter_utils.io import atomic_write, write_json
from specter_utils.presentation.tables import FIRST_ROWS, render
from specter_utils.runs import RESULTS_TABLE, corpus_label, resolve


def evaluate_file(
    scidocs_dir: str | Path, embedding_file: str | Path, tasks: list[str] | None = None, split: str = "test"
) -> dict[str, Any]:
    """SCIDOCS results (x 100) of one embeddings file on a SCIDOCS-layout folder."""
    embeddings = read_embeddings_fast(embedding_file)
    return evaluate_suite(resolve(scidocs_dir), embeddings, tasks=tasks, split=split)


def evaluate(
    config: EvalConfig, scidocs_dir: str | Path, embeddings_dir: str | Path, tasks: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Evaluate ``embeddings_dir/<model>.jsonl`` for each of ``config.models`` (empty: every file, trained and base
    first) on ``config.split``, for ``tasks`` (default ``config.tasks``; empty: all)."""
    embeddings_dir = Path(embeddings_dir)
    models = list(config.models)
    if not models:
        found = sorted(p.stem for p in embeddings_dir.glob("*.jsonl"))
        models = [m for m in FIRST_ROWS if m in found] + [m for m in found if m not in FIRST_ROWS]
    if not models:
        raise FileNotFoundError(f"no embeddings (*.jsonl) in {embeddings_dir}")
    tasks = tasks if tasks is not None else config.tasks or None
    return {name: evaluate_file(scidocs_dir, embeddings_dir / f"{name}.jsonl", tasks, config.split) for name in models}


def write_results_table(results: dict[str, dict[str, Any]], out_dir: str | Path) -> str:
    """Write ``out_dir/results.md`` (our rows, then the paper's Table 1) and ``results.json``."""
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
