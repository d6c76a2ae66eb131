"""SciRepEval sample files: SPECTER triplets with texts, and field-of-study / MeSH labelled papers.

- ``specter_small.json``: a JSON list of ``{"query": P, "pos": P, "neg": P}``; each P has ``title``,
  ``abstract`` (may be null), ``corpus_id`` and ``sha``.
- ``fos_small.json`` + ``fos_labels.txt``: papers with ``labels`` (indices into the label file,
  several per paper) and ``labels_text`` (the same labels by name).
- ``mesh_small.json`` + ``mesh_descriptors.txt``: papers with one MeSH ``descriptor`` (a name from the
  descriptor file) and a ``qualifier``.

Paper ids are the Semantic Scholar ``corpus_id`` as strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.data.records import Paper, ReadReport
from specter_utils.errors import DataError
from specter_utils.io import read_json, read_lines

TRIPLET_ROLES = ("query", "pos", "neg")
FOS_LABELS_FILE = "fos_labels.txt"
MESH_DESCRIPTORS_FILE = "mesh_descriptors.txt"

PaperTriple = tuple[Paper, Paper, Paper]


@dataclass
class LabelledPapers:
    """Papers with multi-label classes: ``Paper.extras["labels"]`` holds each paper's label names."""

    papers: dict[str, Paper]
    label_names: list[str]
    report: ReadReport = field(default_factory=ReadReport)

    def labels(self) -> dict[str, list[str]]:
        """Paper id -> its label names."""
        return {pid: list(p.extras["labels"]) for pid, p in self.papers.items()}


def _load_list(path: Path) -> list[Any]:
    raw = read_json(path)
    if not isinstance(raw, list):
        raise DataError(f"expected a JSON list of records, got {type(raw).__name__}", path)
    if not raw:
        raise DataError("empty corpus: no records", path)
    return raw


def _paper_id(record: dict[str, Any], path: Path, where: str) -> str:
    for key in ("corpus_id", "sha"):
        value = record.get(key)
        if value not in (None, ""):
            return str(value)
    raise DataError(f"{where}: missing required field 'corpus_id'", path)


def _text_field(record: dict[str, Any], name: str, path: Path, where: str, paper_id: str) -> str:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise DataError(f"{where}: {name!r} must be a string, got {type(value).__name__}", path, record_id=paper_id)
    return " ".join((value or "").split()) if name == "title" else (value or "").strip()


def _parse_paper(record: Any, path: Path, where: str, report: ReadReport | None) -> Paper:
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a paper object, got {type(record).__name__}", path)
    if "title" not in record:
        cid = record.get("corpus_id", record.get("sha"))
        raise DataError(f"{where}: missing required field 'title'", path, record_id=None if cid is None else str(cid))
    paper_id = _paper_id(record, path, where)
    title = _text_field(record, "title", path, where, paper_id)
    if not title:
        raise DataError(f"{where}: empty title", path, record_id=paper_id)
    abstract = _text_field(record, "abstract", path, where, paper_id)
    if report is not None and not abstract:
        report.note("null_or_empty_abstract", paper_id)
    extras = {k: v for k, v in record.items() if k not in {"title", "abstract"}}
    return Paper(paper_id=paper_id, title=title, abstract=abstract, extras=extras)


def read_specter_triplets(
    path: str | Path, report: ReadReport | None = None
) -> tuple[list[PaperTriple], dict[str, Paper]]:
    """Read ``specter_small.json`` into ``(query, pos, neg)`` Paper triples and ``{paper_id: Paper}``; one id with two
    titles is a DataError, repeated triplets and a negative equal to the query or positive are counted."""
    path = Path(path)
    report = report if report is not None else ReadReport(source=str(path))
    triples: list[PaperTriple] = []
    papers: dict[str, Paper] = {}
    seen: set[tuple[str, str, str]] = set()
    for index, row in enumerate(_load_list(path)):
        if not isinstance(row, dict):
            raise DataError(f"record {index}: expected an object with query/pos/neg", path)
        missing = [role for role in TRIPLET_ROLES if role not in row]
        if missing:
            raise DataError(f"record {index}: missing required field(s) {missing}", path)
        triple = tuple(_parse_paper(row[role], path, f"record {index} {role}", report) for role in TRIPLET_ROLES)
        for paper in triple:
            known = papers.setdefault(paper.paper_id, paper)
            if known.title != paper.title:
                raise DataError(
                    f"record {index}: same id with two titles ({known.title[:40]!r} vs {paper.title[:40]!r})",
                    path,
                    record_id=paper.paper_id,
                )
        ids = tuple(p.paper_id for p in triple)
        if ids in seen:
            report.note("repeated_triplet", "/".join(ids))
        seen.add(ids)
        if ids[0] == ids[1]:
            report.note("positive_is_query", ids[0])
        if ids[2] in (ids[0], ids[1]):
            report.note("negative_is_query_or_positive", ids[0])
        triples.append(triple)  # type: ignore[arg-type]
    return triples, papers


def read_label_names(path: str | Path) -> list[str]:
    """Read a label file (one name per line); a repeated name is a DataError naming its line."""
    path = Path(path)
    names = read_lines(path)
    if not names:
        raise DataError("no label names", path)
    first_line: dict[str, int] = {}
    for line_number, name in enumerate(names, start=1):
        if name in first_line:
            raise DataError(f"label {name!r} repeated (first on line {first_line[name]})", path, line_number)
        first_line[name] = line_number
    return names


def _labelled_papers(path: Path, report: ReadReport) -> list[tuple[int, dict[str, Any], Paper]]:
    out = []
    seen: dict[str, int] = {}
    for index, record in enumerate(_load_list(path)):
        paper = _parse_paper(record, path, f"record {index}", report)
        if paper.paper_id in seen:
            raise DataError(
                f"record {index}: duplicate id (first in record {seen[paper.paper_id]})", path, record_id=paper.paper_id
            )
        seen[paper.paper_id] = index
        out.append((index, record, paper))
    return out


def read_fos(path: str | Path, labels_path: str | Path | None = None) -> LabelledPapers:
    """Read ``fos_small.json`` (multi-label fields of study) checked against ``fos_labels.txt``."""
    path = Path(path)
    labels_path = Path(labels_path) if labels_path is not None else path.with_name(FOS_LABELS_FILE)
    label_names = read_label_names(labels_path)
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    for index, record, paper in _labelled_papers(path, report):
        indices = record.get("labels")
        if not isinstance(indices, list) or not indices:
            raise DataError(
                f"record {index}: 'labels' must be a non-empty list of label indices", path, record_id=paper.paper_id
            )
        names = []
        for label in indices:
            if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(label_names):
                raise DataError(
                    f"record {index}: label {label!r} is not an index into {labels_path.name} "
                    f"({len(label_names)} labels)",
                    path,
                    record_id=paper.paper_id,
                )
            names.append(label_names[label])
        texts = record.get("labels_text")
        if texts is not None and list(texts) != names:
            raise DataError(
                f"record {index}: labels_text {texts} disagrees with labels {names}", path, record_id=paper.paper_id
            )
        if len(names) > 1:
            report.note("multi_label", paper.paper_id)
        paper.extras = {"labels": names, "label_ids": list(indices), "corpus_id": record.get("corpus_id")}
        papers[paper.paper_id] = paper
    return LabelledPapers(papers=papers, label_names=label_names, report=report)


def read_mesh(path: str | Path, descriptors_path: str | Path | None = None) -> LabelledPapers:
    """Read ``mesh_small.json`` (one MeSH descriptor per paper) checked against ``mesh_descriptors.txt``."""
    path = Path(path)
    descriptors_path = Path(descriptors_path) if descriptors_path is not None else path.with_name(MESH_DESCRIPTORS_FILE)
    label_names = read_label_names(descriptors_path)
    known = set(label_names)
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    for index, record, paper in _labelled_papers(path, report):
        descriptor = record.get("descriptor")
        if not isinstance(descriptor, str) or not descriptor.strip():
            raise DataError(f"record {index}: missing required field 'descriptor'", path, record_id=paper.paper_id)
        if descriptor not in known:
            raise DataError(
                f"record {index}: descriptor {descriptor!r} is not in {descriptors_path.name}",
                path,
                record_id=paper.paper_id,
            )
        paper.extras = {
            "labels": [descriptor],
            "qualifier": record.get("qualifier"),
            "corpus_id": record.get("corpus_id"),
            "mag_id": record.get("mag_id"),
        }
        papers[paper.paper_id] = paper
    return LabelledPapers(papers=papers, label_names=label_names, report=report)
