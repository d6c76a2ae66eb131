"""One runner for a grid of named variants x seeds: each row made once, resumably, then paired against a reference.

A sweep is a base specification, named variants (each a few overrides of it) and seeds. Each (variant, seed) row
is made by a function the caller gives (notebook 07's Table 2 and the recipe-lever study: mine + audit, train,
embed, evaluate) and recorded in a row store the moment it is made, in one write; a later run reuses every
finished row and makes only the rest, so a killed sweep loses at most the row in progress.

Two stores: :class:`RowFolders` (a folder per row, its record ``row.json`` with the settings the row was made
with; notebook 07) and :class:`RowLines` (one JSON line per row in one results file; the lever study). The rows are
then paired over queries against a reference row by the two-level bootstrap of ``evaluation.hierarchical``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from specter_utils.data.scidocs import read_scidocs_dir
from specter_utils.errors import DataError
from specter_utils.evaluation.deltas import Delta, from_paired
from specter_utils.evaluation.hierarchical import N_RESAMPLES, compare_ranking_rows
from specter_utils.evaluation.paired import RowScores, per_query_table, rows_from_table, score_row
from specter_utils.executed import source_commit
from specter_utils.io import read_json, write_json
from specter_utils.memory import release_memory
from specter_utils.spec import RunSpec

# A row folder's record: the settings the row was made with and its result (written last: it marks the row done).
ROW_FILE = "row.json"
Rows = dict[str, dict[int, dict[str, Any]]]  # {variant: {seed: result}}


@dataclass(frozen=True)
class SweepRow:
    """One (variant, seed) of a sweep: its ``overrides`` of the base specification (None for a fixed row, such as a
    baseline, that is no variant of it) and its own resolved ``spec``. A row with ``record`` False is made afresh
    each time and never stored (notebook 07's reference row read from the main run's notebooks)."""

    name: str
    seed: int
    overrides: Mapping[str, Any] | None
    spec: RunSpec
    record: bool = True


def variant_spec(spec: RunSpec, overrides: Mapping[str, Any], seed: int) -> RunSpec:
    """``spec`` with a variant's ``overrides``, then ``seed``."""
    return spec.with_overrides(dict(overrides)).with_overrides({"seed": seed})


def variant_rows(
    spec: RunSpec,
    variants: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    row_spec: Callable[[RunSpec, str, Mapping[str, Any], int], RunSpec] | None = None,
) -> list[SweepRow]:
    """Every (variant, seed), variant by variant; ``row_spec(spec, name, overrides, seed)`` resolves a row's
    specification (default: :func:`variant_spec`)."""
    resolve = row_spec or (lambda base, _name, overrides, seed: variant_spec(base, overrides, seed))
    return [
        SweepRow(name, seed, overrides, resolve(spec, name, overrides, seed))
        for name, overrides in variants.items()
        for seed in seeds
    ]


class RowStore(Protocol):
    """Where a sweep's finished rows are kept."""

    def finished(self, row: SweepRow) -> dict[str, Any] | None:
        """The recorded result of ``row``, or None when it is still to be made."""

    def record(self, row: SweepRow, result: dict[str, Any]) -> dict[str, Any]:
        """Keep ``result`` as ``row``'s, in one write; returns it."""


def run_sweep(
    rows: Iterable[SweepRow],
    make: Callable[[SweepRow], dict[str, Any]],
    store: RowStore,
    started: Callable[[SweepRow], Any] | None = None,
    finished: Callable[[SweepRow, dict[str, Any], bool], Any] | None = None,
) -> Rows:
    """Each row's result, in order: the store's where the row is finished there, else ``make(row)`` recorded in the
    store. ``started(row)`` is called before a row is made; ``finished(row, result, reused)`` after each row. After
    each row made, its model, trainer and optimizer (held in reference cycles) are freed and the heap trimmed
    (:func:`memory.release_memory`), so that the process's memory stays that of one row, not of every row so far.
    """
    out: Rows = {}
    for row in rows:
        result = store.finished(row) if row.record else None
        reused = result is not None
        if result is None:
            if started:
                started(row)
            result = make(row)
            if row.record:
                result = store.record(row, result)
            release_memory()
        out.setdefault(row.name, {})[row.seed] = result
        if finished:
            finished(row, result, reused)
    return out


# ---------------------------------------------------------------- a folder per row
def row_settings(spec: RunSpec, sections: Sequence[str], ignored: Sequence[str] = ()) -> dict[str, Any]:
    """The settings a row is made from, as its record keeps them: ``spec``'s ``sections`` less the ``ignored``
    dotted keys (settings of those sections that do not change the row)."""
    settings = {name: value for name, value in spec.to_dict().items() if name in sections}
    for key in ignored:
        section, name = key.split(".")
        settings.get(section, {}).pop(name, None)
    return settings


def finished_row(out: Path, settings: Mapping[str, Any], files: Sequence[str] = ("embedding_file",)) -> dict | None:
    """The row recorded in ``out/row.json`` when it was made with ``settings`` and the files its ``files`` keys name
    are still there; None otherwise (not made, interrupted, or made with other settings: it is then made again).
    The row keeps the ``commit`` that made it (None for a row recorded before commits were stamped)."""
    record_file = out / ROW_FILE
    if not record_file.is_file():
        return None
    record = read_json(record_file)
    row = record.get("row", {})
    if record.get("settings") != settings or not all(Path(row.get(key, "")).is_file() for key in files):
        return None
    return {**row, "commit": row.get("commit"), "reused": str(record_file)}


def record_row(out: Path, settings: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``out/row.json`` for a row just made, stamped with the commit of the code that made it (None outside a
    git checkout); returns the stamped row, which a later run reads back with :func:`finished_row`."""
    stamped = {**row, "commit": source_commit()}
    write_json(out / ROW_FILE, {"settings": dict(settings), "row": stamped})
    return stamped


@dataclass(frozen=True)
class RowFolders:
    """Rows kept each in its own folder (``folder(row)``), as ``row.json``: ``{"settings": settings(row.spec),
    "row": result}``; a row is reused only with the same settings and while its embeddings file is there."""

    folder: Callable[[SweepRow], Path]
    settings: Callable[[RunSpec], dict[str, Any]]

    def finished(self, row: SweepRow) -> dict[str, Any] | None:
        return finished_row(self.folder(row), self.settings(row.spec))

    def record(self, row: SweepRow, result: dict[str, Any]) -> dict[str, Any]:
        return record_row(self.folder(row), self.settings(row.spec), result)


# ---------------------------------------------------------------- one results file, a JSON line per row
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


class RowLines:
    """Rows kept as JSON lines of one results file, each naming its variant (``name_key``) and ``seed``."""

    def __init__(self, path: Path, name_key: str = "name") -> None:
        self.path, self.name_key = Path(path), name_key
        self.rows = {(row[name_key], row["seed"]): row for row in read_rows(self.path)}

    def finished(self, row: SweepRow) -> dict[str, Any] | None:
        return self.rows.get((row.name, row.seed))

    def record(self, row: SweepRow, result: dict[str, Any]) -> dict[str, Any]:
        append_row(self.path, result)
        self.rows[(row.name, row.seed)] = result
        return result


# ---------------------------------------------------------------- pairing the rows
def ranking_qrels(scidocs: Path, split: str, tasks: Sequence[str]) -> dict[str, dict[str, dict[str, int]]]:
    """The relevance judgements of ``split`` for each ranking task of ``tasks`` that has that split."""
    data = read_scidocs_dir(scidocs, list(tasks) or None)
    return {task: data.ranking[task][split] for task in tasks if split in data.ranking.get(task, {})}


def scored_files(rows: Mapping[str, Sequence[str | Path]], qrels: Mapping[str, Any]) -> list[RowScores]:
    """Per-query AP of each row's embeddings files (one per seed) on each task of ``qrels``."""
    return [score_row(name, list(files), qrels) for name, files in rows.items()]


def scored_records(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], file_of: Callable[[Mapping[str, Any]], str]
) -> list[RowScores]:
    """Each row's per-query AP as its seeds recorded it (``per_query_ap``), with each seed's embeddings file."""
    return [
        RowScores(name, [file_of(r) for r in results], [r["per_query_ap"] for r in results])
        for name, results in rows.items()
    ]


def paired_by_seeds(
    scored: Sequence[RowScores], against: Mapping[str, str], tasks: Sequence[str], n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """Each row against the row ``against`` names, on each task, by the two-level bootstrap (seeds x queries), the
    whole table one Holm family (``evaluation.hierarchical.compare_ranking_rows``); ``per_query_ap``: every row's
    per-query AP per task and seed, rounded to 4 decimals, what :func:`reread` needs."""
    comparison = compare_ranking_rows(scored, against, list(tasks), n_resamples=n_resamples)
    return {**comparison, "per_query_ap": per_query_table(scored, list(tasks))}


def reread(comparison: Mapping[str, Any], against: Mapping[str, str], n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """:func:`paired_by_seeds` again from a stored result's ``per_query_ap`` (no embeddings, no training)."""
    table = comparison["per_query_ap"]
    return paired_by_seeds(rows_from_table(table), against, list(table["tasks"]), n_resamples)


def paired_deltas(comparison: Mapping[str, Any], against: Mapping[str, str], reference: str) -> list[Delta]:
    """Each row's paired difference per task against the row it is tested against (``against``; ``reference``
    for a row it does not name)."""
    deltas = []
    for other in comparison.get("references", [reference]):
        deltas += [d for d in from_paired(comparison, other) if against.get(d.row, reference) == other]
    return deltas
