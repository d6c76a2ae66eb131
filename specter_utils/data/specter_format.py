"""The SPECTER training format: ``data.json``, ``metadata.json`` and ``{train,val,test}.txt``.

``data.json`` maps ``query_id -> {candidate_id: {"count": c}}``; ``count == 5`` is a direct
citation and ``count == 1`` a citation of a citation (see docs/protocol.md section 1).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.data.records import Paper, ReadReport, check_id, read_paper_file
from specter_utils.errors import DataError
from specter_utils.io import atomic_write, read_json, read_lines, write_json
from specter_utils.layout import DATA_FILE, METADATA_FILE

DIRECT_CITATION = 5
CITATION_OF_CITATION = 1
SPLITS = ("train", "val", "test")
INFO_FILE = "info.json"  # optional: where the data came from, e.g. {"corpus": "synthetic", "synthetic": true}


@dataclass
class SpecterData:
    """An in-memory SPECTER training directory."""

    graph: dict[str, dict[str, int]]  # query id -> candidate id -> count
    metadata: dict[str, Paper]
    splits: dict[str, list[str]] = field(default_factory=dict)
    report: ReadReport = field(default_factory=ReadReport)
    info: dict[str, Any] = field(default_factory=dict)  # provenance, written to info.json when not empty


def read_graph(path: str | Path, report: ReadReport | None = None) -> dict[str, dict[str, int]]:
    """Read ``data.json`` into ``{query: {candidate: count}}``, validating its shape."""
    path, report = Path(path), report if report is not None else ReadReport()
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise DataError(f"expected a JSON object of queries, got {type(raw).__name__}", path)
    if not raw:
        raise DataError("empty corpus: no queries", path)
    graph: dict[str, dict[str, int]] = {}
    for query, candidates in raw.items():
        check_id(query, path, what="query id")
        if not isinstance(candidates, dict):
            raise DataError("candidates must be an object {candidate_id: {count: c}}", path, record_id=query)
        row: dict[str, int] = {}
        candidate_id = functools.partial("candidate id of query {!r}".format, query)  # called only for a bad id
        for cand, info in candidates.items():
            check_id(cand, path, what=candidate_id)
            if not isinstance(info, dict) or "count" not in info:
                raise DataError(f"candidate {cand!r} has no 'count'", path, record_id=query)
            count = info["count"]
            if isinstance(count, bool) or not isinstance(count, int):
                raise DataError(f"candidate {cand!r} count {count!r} is not an integer", path, record_id=query)
            if count not in (DIRECT_CITATION, CITATION_OF_CITATION):
                raise DataError(
                    f"candidate {cand!r} count {count}: SPECTER counts are 5 (direct citation) or 1 (citation of a "
                    "citation)",
                    path,
                    record_id=query,
                )
            if cand == query:
                report.note("self_citation_dropped", query)
                continue
            row[str(cand)] = count
        if not row:
            report.note("query_without_candidates", query)
        graph[str(query)] = row
    return graph


def read_metadata(path: str | Path, report: ReadReport | None = None) -> dict[str, Paper]:
    """Read ``metadata.json`` for training: ``records.read_paper_file``, then untitled papers dropped, as in SPECTER."""
    report = report if report is not None else ReadReport()
    kept: dict[str, Paper] = {}
    for paper_id, paper in read_paper_file(path).items():
        if not paper.title:
            report.note("no_title_dropped", paper_id)
            continue
        if not paper.abstract:
            report.note("empty_abstract", paper_id)
        kept[paper_id] = paper
    return kept


def read_split(path: str | Path) -> list[str]:
    """Read a split file (one query id per line); duplicate ids are an error."""
    ids = read_lines(path)
    seen: set[str] = set()
    for line_number, paper_id in enumerate(ids, start=1):
        check_id(paper_id, path, line_number)
        if paper_id in seen:
            raise DataError("duplicate id in split file", path, line_number, paper_id)
        seen.add(paper_id)
    return ids


def read_specter_dir(data_dir: str | Path) -> SpecterData:
    """Read a SPECTER training directory (``data.json`` and ``metadata.json`` required, split files where present)
    and count (never drop silently) its oddities."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError("not a directory", data_dir)
    report = ReadReport(source=str(data_dir))
    graph = read_graph(data_dir / DATA_FILE, report)
    metadata = read_metadata(data_dir / METADATA_FILE, report)
    splits = {name: read_split(data_dir / f"{name}.txt") for name in SPLITS if (data_dir / f"{name}.txt").exists()}
    for query, candidates in graph.items():
        if query not in metadata:
            report.note("query_without_metadata", query)
        for cand in candidates:
            if cand not in metadata:
                report.note("candidate_without_metadata", cand)
    for name, ids in splits.items():
        for paper_id in ids:
            if paper_id not in graph:
                report.note(f"{name}_id_not_in_data_json", paper_id)
    info = read_json(data_dir / INFO_FILE) if (data_dir / INFO_FILE).exists() else {}
    if not isinstance(info, dict):
        raise DataError("expected a JSON object", data_dir / INFO_FILE)
    return SpecterData(graph=graph, metadata=metadata, splits=splits, report=report, info=info)


def write_specter_dir(out_dir: str | Path, data: SpecterData) -> None:
    """Write ``data.json``, ``metadata.json``, the split files and ``info.json`` if any (each atomically)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(
        out_dir / DATA_FILE,
        {q: {c: {"count": n} for c, n in cands.items()} for q, cands in data.graph.items()},
        indent=None,
    )
    # A synthetic corpus says so in every metadata entry too, so a copied file stays labelled.
    flag = {"synthetic": True} if data.info.get("synthetic") else {}
    write_json(
        out_dir / METADATA_FILE,
        {pid: {**p.to_specter_metadata(), **flag} for pid, p in data.metadata.items()},
        indent=None,
    )
    for name, ids in data.splits.items():
        with atomic_write(out_dir / f"{name}.txt") as handle:
            handle.writelines(f"{paper_id}\n" for paper_id in ids)
    if data.info:
        write_json(out_dir / INFO_FILE, data.info)
