"""Counts for any data path the project meets, after detecting its format.

Formats: a SPECTER training dir, a SCIDOCS dir, a benchmark dir (``scidocs/`` + ``train/``),
the hep-th folder, a CiteSeer folder, a tables corpus (folder or ``tables.json`` manifest), an S2ORC ``.jsonl``
file, and the SciRepEval sample files (or their folder).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from specter_utils.data import scirepeval
from specter_utils.data.citeseer import is_citeseer_dir
from specter_utils.data.corpus import Corpus
from specter_utils.data.generic import is_record_file
from specter_utils.data.hepth import read_hepth
from specter_utils.data.load import detect_corpus_kind, load_corpus
from specter_utils.data.records import ReadReport
from specter_utils.data.scidocs import METADATA_FILES, available_tasks, read_scidocs_dir
from specter_utils.data.specter_format import CITATION_OF_CITATION, DIRECT_CITATION, read_specter_dir
from specter_utils.data.tables import is_tables_source
from specter_utils.errors import DataError
from specter_utils.io import read_json
from specter_utils.layout import BENCHMARK_FILE, DATA_FILE, METADATA_FILE

FORMATS = tuple(
    "specter scidocs benchmark hepth citeseer tables s2orc openalex jsonl scirepeval specter_triplets fos mesh".split()
)
_SCIREPEVAL_FILES = {"specter_small.json": "specter_triplets", "fos_small.json": "fos", "mesh_small.json": "mesh"}


def detect_format(path: str | Path) -> str:
    """Name the format of ``path`` (one of FORMATS); a DataError says what was expected otherwise."""
    path = Path(path)
    if not path.exists():
        raise DataError("path not found", path)
    if path.is_dir():
        if (path / DATA_FILE).exists() and (path / METADATA_FILE).exists():
            return "specter"
        if (path / "scidocs").is_dir() and (path / "train").is_dir():
            return "benchmark"
        if available_tasks(path) or any((path / name).exists() for name in METADATA_FILES.values()):
            return "scidocs"
        if (path / "cit-HepTh.txt").exists() or (path / "cit-HepTh-abstracts.tar.gz").exists():
            return "hepth"
        if any((path / name).exists() for name in _SCIREPEVAL_FILES):
            return "scirepeval"
        if is_citeseer_dir(path) or is_tables_source(path):
            return detect_corpus_kind(path)
        raise DataError(
            "unrecognised folder: expected a SPECTER dir (data.json, metadata.json), a SCIDOCS dir "
            "(paper_metadata_*.json, cite/test.qrel, ...), a benchmark dir (scidocs/, train/), hep-th "
            "(cit-HepTh.txt), CiteSeer (citeseer_texts.txt, citeseer.cites), a tables corpus (edges.csv with "
            "papers.csv or titles.csv) or SciRepEval files (specter_small.json, ...)",
            path,
        )
    if is_record_file(path):
        return detect_corpus_kind(path)
    if path.name in _SCIREPEVAL_FILES:
        return _SCIREPEVAL_FILES[path.name]
    if is_tables_source(path):
        return "tables"
    if path.suffix == ".json":
        raw = read_json(path)
        first = raw[0] if isinstance(raw, list) and raw and isinstance(raw[0], dict) else {}
        if {"query", "pos", "neg"} <= set(first):
            return "specter_triplets"
        if "labels" in first:
            return "fos"
        if "descriptor" in first:
            return "mesh"
    raise DataError(
        "unrecognised file: expected an S2ORC, OpenAlex or generic record file (.jsonl, .jsonl.gz, .parquet) or a "
        "SciRepEval .json file",
        path,
    )


def _result(fmt: str, path: Path, counts: dict[str, Any], report: ReadReport | None) -> dict[str, Any]:
    out: dict[str, Any] = {"format": fmt, "path": str(path), "counts": counts}
    if report is not None:
        out["oddities"] = dict(sorted(report.counts.items()))
        out["examples"] = report.examples
    return out


def corpus_counts(corpus: Corpus) -> dict[str, Any]:
    """Papers, texts, venues, years and edge counts of a Corpus (dangling ids included)."""
    papers = corpus.papers
    pairs = Counter(corpus.edges)
    unique_edges = [e for e in pairs if e[0] != e[1]]
    dangling_ids = {pid for edge in unique_edges for pid in edge if pid not in papers}
    internal = [(a, b) for a, b in unique_edges if a in papers and b in papers]
    touched = {pid for edge in internal for pid in edge}
    years = [p.year for p in papers.values() if p.year is not None]
    venues = Counter(p.venue for p in papers.values() if p.venue)
    return {
        "papers": len(papers),
        "with_abstract": sum(1 for p in papers.values() if p.abstract.strip()),
        "with_venue": sum(venues.values()),
        "distinct_venues": len(venues),
        "top_venues": dict(venues.most_common(5)),
        "year_range": [min(years), max(years)] if years else None,
        "label_field": corpus.label_field,
        "labelled_papers": len(labels := corpus.labels()),
        "classes": len(set(labels.values())),
        "edges": len(corpus.edges),
        "unique_edges": len(unique_edges),
        "duplicate_edges": sum(n - 1 for n in pairs.values()),
        "self_citations": sum(n for (a, b), n in pairs.items() if a == b),
        "edges_between_known_papers": len(internal),
        "dangling_edges": len(unique_edges) - len(internal),
        "dangling_ids": len(dangling_ids),
        "papers_with_edges": len(touched),
        "papers_without_edges": len(papers) - len(touched),
        "synthetic": corpus.synthetic,
    }


def _specter_stats(path: Path) -> dict[str, Any]:
    data = read_specter_dir(path)
    counts_by_value = Counter(c for cands in data.graph.values() for c in cands.values())
    candidates = {c for cands in data.graph.values() for c in cands}
    ids = set(data.graph) | candidates
    split_of: dict[str, list[str]] = {}
    for name, split_ids in data.splits.items():
        for pid in split_ids:
            split_of.setdefault(pid, []).append(name)
    counts = {
        "queries": len(data.graph),
        "candidates": len(candidates),
        "direct_citation_pairs": counts_by_value.get(DIRECT_CITATION, 0),
        "citation_of_citation_pairs": counts_by_value.get(CITATION_OF_CITATION, 0),
        "other_count_pairs": sum(
            n for c, n in counts_by_value.items() if c not in (DIRECT_CITATION, CITATION_OF_CITATION)
        ),
        "papers": len(data.metadata),
        "with_abstract": sum(1 for p in data.metadata.values() if p.abstract.strip()),
        "queries_without_metadata": sum(1 for q in data.graph if q not in data.metadata),
        "candidates_without_metadata": sum(1 for c in candidates if c not in data.metadata),
        "dangling_ids": len(ids - set(data.metadata)),
        "splits": {name: len(v) for name, v in data.splits.items()},
        "ids_in_several_splits": sum(1 for names in split_of.values() if len(names) > 1),
        "synthetic": bool(data.info.get("synthetic", False)),
    }
    return _result("specter", path, counts, data.report)


def _scidocs_stats(path: Path) -> dict[str, Any]:
    data = read_scidocs_dir(path)
    counts: dict[str, Any] = {"tasks": available_tasks(path)}
    report = ReadReport(source=str(path))
    known = set().union(*(set(records) for records in data.metadata.values())) if data.metadata else set()
    for group, records in data.metadata.items():
        counts[f"metadata/{group}"] = {
            "papers": len(records),
            "with_abstract": sum(1 for r in records.values() if (r.get("abstract") or "").strip()),
        }
    for task, splits in data.classification.items():
        for split, rows in splits.items():
            counts[f"{task}/{split}"] = {"papers": len(rows), "classes": len({label for _, label in rows})}
            for pid, _ in rows:
                if known and pid not in known:
                    report.note(f"{task}_paper_without_metadata", pid)
    for task, splits in data.ranking.items():
        for split, qrels in splits.items():
            counts[f"{task}/{split}"] = {
                "queries": len(qrels),
                "candidates": sum(len(docs) for docs in qrels.values()),
                "positives": sum(1 for docs in qrels.values() for rel in docs.values() if rel > 0),
            }
            for query, docs in qrels.items():
                for pid in (query, *docs):
                    if known and pid not in known:
                        report.note(f"{task}_id_without_metadata", pid)
    for split, clicks in data.recomm.items():
        counts[f"recomm/{split}"] = {"clicks": len(clicks)}
    return _result("scidocs", path, counts, report)


def _scirepeval_stats(path: Path, fmt: str) -> dict[str, Any]:
    if fmt == "specter_triplets":
        report = ReadReport(source=str(path))
        triples, papers = scirepeval.read_specter_triplets(path, report)
        counts = {
            "triplets": len(triples),
            "papers": len(papers),
            "queries": len({t[0].paper_id for t in triples}),
            "with_abstract": sum(1 for p in papers.values() if p.abstract),
        }
        return _result(fmt, path, counts, report)
    labelled = scirepeval.read_fos(path) if fmt == "fos" else scirepeval.read_mesh(path)
    used = Counter(label for labels in labelled.labels().values() for label in labels)
    counts = {
        "papers": len(labelled.papers),
        "with_abstract": sum(1 for p in labelled.papers.values() if p.abstract),
        "label_names": len(labelled.label_names),
        "labels_used": len(used),
        "multi_label_papers": sum(1 for labels in labelled.labels().values() if len(labels) > 1),
    }
    return _result(fmt, path, counts, labelled.report)


def corpus_stats(path: str | Path, **reader_options: Any) -> dict[str, Any]:
    """Detect the format of ``path`` and count what it holds, with the reader's oddity report:
    ``{"format", "path", "counts", "oddities", "examples"}`` (folders of several parts: ``{"format", "path",
    "parts": {name: stats}}``). ``reader_options`` go to the citeseer and tables readers."""
    path = Path(path)
    fmt = detect_format(path)
    if reader_options and fmt not in ("citeseer", "tables"):
        raise ValueError(f"reader options {sorted(reader_options)} apply to citeseer and tables only, not {fmt}")
    if fmt == "specter":
        return _specter_stats(path)
    if fmt == "scidocs":
        return _scidocs_stats(path)
    if fmt == "benchmark":
        parts = {"scidocs": _scidocs_stats(path / "scidocs"), "train": _specter_stats(path / "train")}
        out: dict[str, Any] = {"format": fmt, "path": str(path), "parts": parts}
        if (path / BENCHMARK_FILE).exists():
            out["benchmark"] = read_json(path / BENCHMARK_FILE)
        return out
    if fmt == "scirepeval":
        parts = {
            name: _scirepeval_stats(path / name, kind)
            for name, kind in _SCIREPEVAL_FILES.items()
            if (path / name).exists()
        }
        return {"format": fmt, "path": str(path), "parts": parts}
    if fmt in ("specter_triplets", "fos", "mesh"):
        return _scirepeval_stats(path, fmt)
    # dangling citations kept, so that they are counted
    corpus = read_hepth(path) if fmt == "hepth" else load_corpus(fmt, path, dangling="keep", **reader_options)
    return _result(fmt, path, corpus_counts(corpus), corpus.report)


def format_stats(stats: dict[str, Any], indent: str = "") -> str:
    """Human-readable lines for the result of ``corpus_stats``."""
    lines = [f"{indent}{stats['path']} ({stats['format']})"]
    for name, part in stats.get("parts", {}).items():
        lines += [f"{indent}  [{name}]", format_stats(part, indent + "    ")]
    for key, value in stats.get("counts", {}).items():
        if isinstance(value, dict) and value and all(isinstance(v, int) for v in value.values()):
            value = ", ".join(f"{k}={v:,}" for k, v in value.items())
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}"
        lines.append(f"{indent}  {key}: {value}")
    oddities = stats.get("oddities")
    if oddities is not None:
        lines.append(f"{indent}  oddities:" + ("" if oddities else " none"))
        for kind, n in oddities.items():
            examples = stats.get("examples", {}).get(kind)
            suffix = f" (e.g. {', '.join(examples[:3])})" if examples else ""
            lines.append(f"{indent}    {kind}: {n:,}{suffix}")
    return "\n".join(lines)
