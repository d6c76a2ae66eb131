"""The generic corpus record format, read from ``.jsonl``, ``.jsonl.gz`` or ``.parquet``, streamed into a Corpus.

One record per paper (``data/README.md`` has the schema and an example):

- required: ``paper_id`` (string or integer), ``title`` (string; null or empty: the paper is dropped and
  counted), ``abstract`` (string or null), ``references`` (list of the ``paper_id`` values it cites);
- optional: ``authors`` (list of strings), ``venue`` (string), ``year`` (integer), ``labels`` (list of
  strings, or one string), ``synthetic`` (true on generated data; a corpus whose every record says so is
  labelled synthetic). Any other field is ignored unless ``label_field`` names it.

Reading streams (JSON Lines a line at a time, so that an error names its line; Parquet a record batch at a time):
only the compact ``Paper`` and the citation edges of each record are kept. Duplicate ids are errors, untitled
papers are dropped and counted, and a cited id that is not a paper of the file is counted (``unknown_reference``)
and dropped, or an error with ``dangling="error"``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from specter_utils.data.corpus import Corpus
from specter_utils.data.records import Paper, ReadReport, read_paper_file
from specter_utils.errors import DataError
from specter_utils.io import iter_jsonl

REQUIRED_FIELDS = ("paper_id", "title", "abstract", "references")
DANGLING_POLICIES = ("drop", "keep", "error")
RECORD_SUFFIXES = (".jsonl", ".gz", ".parquet")  # .gz: gzipped JSON Lines (.jsonl.gz, OpenAlex's part_000.gz)
PARQUET_BATCH = 10_000  # rows per pyarrow record batch: the most rows held as dicts at once


def is_record_file(path: str | Path) -> bool:
    """Whether ``path`` has a record-file suffix (``.jsonl``, ``.jsonl.gz`` or any ``.gz`` but ``.tar.gz``, ``.parquet``)."""
    name = str(path).lower()
    return name.endswith(RECORD_SUFFIXES) and not name.endswith(".tar.gz")


def iter_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, record)`` for each record of a ``.jsonl`` / ``.jsonl.gz`` / ``.parquet`` file, streaming;
    ``line`` is the line number (JSON Lines, blank lines skipped) or the 1-based row number (Parquet)."""
    path = Path(path)
    if not path.exists():
        raise DataError("file not found", path)
    if path.name.lower().endswith(".parquet"):
        yield from _iter_parquet(path)
        return
    yield from iter_jsonl(path)  # jsonl, or jsonl.gz


def open_parquet(path: Path) -> pq.ParquetFile:
    """A Parquet file opened to stream (column chunks read in 1 MB pieces); a bad file is a DataError."""
    try:
        return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    except Exception as exc:  # pyarrow raises ArrowInvalid and OSError subclasses for a bad file
        raise DataError(f"not a Parquet file: {exc}", path) from None


def _iter_parquet(path: Path) -> Iterator[tuple[int, Any]]:
    row = 0
    for batch in open_parquet(path).iter_batches(batch_size=PARQUET_BATCH):
        for record in batch.to_pylist():
            row += 1
            yield row, record


def peek_record(path: str | Path) -> dict[str, Any]:
    """The first record of a record file (for format detection)."""
    for line, record in iter_records(path):
        if not isinstance(record, dict):
            raise DataError(f"expected a JSON object, got {type(record).__name__}", path, line)
        return record
    raise DataError("empty file: no records", path)


# ---------------------------------------------------------------- labels
def label_values(value: Any, field_name: str, path: Path, line: int, paper_id: str) -> list[str]:
    """A label field's value as a list of labels: null or ``[]`` is no label, a string or number one; a list holds
    strings or numbers (objects with a ``display_name``, as OpenAlex writes them, give that name). An empty label is
    a DataError."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    labels: list[str] = []
    for item in items:
        if isinstance(item, dict) and "display_name" in item:
            item = item["display_name"]
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise DataError(
                f"label field {field_name!r} must hold strings, got {type(item).__name__}", path, line, paper_id
            )
        label = sys.intern(" ".join(str(item).split()))  # a few distinct labels over millions of papers: share them
        if not label:
            raise DataError(f"empty label in field {field_name!r}", path, line, paper_id)
        if label not in labels:
            labels.append(label)
    return labels


# ---------------------------------------------------------------- the shared corpus builder
class CorpusBuilder:
    """Collects Papers and their reference lists record by record, then resolves the references into edges (ids
    interned: the ids in ``papers`` and in every edge are one string object each)."""

    def __init__(self, path: Path, name: str, label_field: str = "venue", dangling: str = "drop") -> None:
        if dangling not in DANGLING_POLICIES:
            raise ValueError(f"dangling must be one of {DANGLING_POLICIES}, got {dangling!r}")
        self.path, self.name, self.label_field, self.dangling = path, name, label_field, dangling
        self.report = ReadReport(source=str(path))
        self.papers: dict[str, Paper] = {}
        self.lines: dict[str, int] = {}
        self.edges: list[tuple[str, str]] = []
        self.synthetic_records = 0
        self.records = 0

    def add(self, paper: Paper, references: list[str], line: int, synthetic: bool = False) -> None:
        """Add one paper (dropped and counted when untitled) with the ids it cites."""
        self.records += 1
        self.synthetic_records += bool(synthetic)
        paper_id = sys.intern(paper.paper_id)
        if paper_id in self.lines:
            raise DataError(
                f"duplicate paper_id (first seen on line {self.lines[paper_id]})", self.path, line, paper_id
            )
        self.lines[paper_id] = line
        if not paper.title:
            self.report.note("no_title_dropped", paper_id)
            return
        paper.paper_id = paper_id
        self.papers[paper_id] = paper
        if not paper.abstract:
            self.report.note("empty_abstract", paper_id)
        if self.label_field != "venue" and not paper.extras.get("class_labels"):
            self.report.note("no_label", paper_id)
        self.edges.extend((paper_id, sys.intern(str(cited))) for cited in references)

    def corpus(self) -> Corpus:
        """The Corpus; references to ids outside it are counted (``unknown_reference``) and dropped, or an error."""
        if not self.papers:
            raise DataError("empty corpus: no record with a paper_id and a title", self.path)
        kept: list[tuple[str, str]] = []
        for citing, cited in self.edges:
            if cited not in self.papers:
                if self.dangling == "error":
                    raise DataError(f"cites unknown paper id {cited!r}", self.path, self.lines[citing], citing)
                self.report.note("unknown_reference", f"{citing}->{cited}")
                if self.dangling == "drop":
                    continue
            kept.append((citing, cited))
        self.edges = []
        synthetic = self.synthetic_records > 0 and self.synthetic_records == self.records
        if 0 < self.synthetic_records < self.records:
            self.report.note("synthetic_records", n=self.synthetic_records)
        corpus = Corpus(name=self.name, papers=self.papers, edges=kept, report=self.report, synthetic=synthetic)
        corpus.label_field = self.label_field
        corpus.info["format"] = self.name
        return corpus


def read_records(
    path: str | Path,
    parse: Callable[[Any, Path, int, str], tuple[Paper, list[str], bool]],
    name: str,
    label_field: str,
    dangling: str = "drop",
) -> Corpus:
    """Stream a record file through ``parse(row, path, line, label_field) -> (paper, references, synthetic)``."""
    path = Path(path)
    builder = CorpusBuilder(path, name, label_field, dangling)
    for line, row in iter_records(path):
        paper, references, synthetic = parse(row, path, line, label_field)
        builder.add(paper, references, line, synthetic)
    return builder.corpus()


# ---------------------------------------------------------------- the generic record format
def _string(row: dict, name: str, path: Path, line: int, paper_id: str | None) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataError(f"{name!r} must be a string or null, got {type(value).__name__}", path, line, paper_id)
    return " ".join(value.split())


def parse_year(value: Any, path: Path, line: int, paper_id: str) -> int | None:
    """An integer year (or a string of digits, or an integral float as pandas writes a column with gaps); null
    (or NaN) is no year; anything else is a DataError."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise DataError(f"'year' must be an integer or null, got {value!r}", path, line, paper_id)
    return int(value)


def parse_paper_id(value: Any, path: Path, line: int) -> str:
    """A non-empty string or integer id."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise DataError(f"'paper_id' must be a non-empty string or integer, got {value!r}", path, line)
    return str(value).strip()


def parse_generic_record(
    row: Any, path: Path, line: int, label_field: str = "labels", need_references: bool = True
) -> tuple[Paper, list[str], bool]:
    """One generic record -> ``(Paper, references, synthetic)``; the class labels go to ``extras["class_labels"]``."""
    if not isinstance(row, dict):
        raise DataError(f"expected a JSON object, got {type(row).__name__}", path, line)
    required = REQUIRED_FIELDS if need_references else REQUIRED_FIELDS[:3]
    missing = [name for name in required if name not in row]
    if missing:
        raise DataError(f"missing required field(s) {missing}", path, line, row.get("paper_id"))
    paper_id = parse_paper_id(row["paper_id"], path, line)
    references_raw = row.get("references")
    if references_raw is None and not need_references:
        references_raw = []
    if not isinstance(references_raw, list):
        raise DataError("'references' must be a list of paper ids", path, line, paper_id)
    references = [parse_paper_id(r, path, line) for r in references_raw]
    authors = row.get("authors") or []
    if not isinstance(authors, list) or not all(isinstance(a, str) for a in authors):
        raise DataError("'authors' must be a list of strings", path, line, paper_id)
    paper = Paper(
        paper_id=paper_id,
        title=_string(row, "title", path, line, paper_id),
        abstract=_string(row, "abstract", path, line, paper_id),
        authors=[" ".join(a.split()) for a in authors if a.strip()],
        venue=sys.intern(_string(row, "venue", path, line, paper_id)) or None,
        year=parse_year(row.get("year"), path, line, paper_id),
    )
    if label_field != "venue":
        labels = label_values(row.get(label_field), label_field, path, line, paper_id)
        if labels:
            paper.extras["class_labels"] = labels
    synthetic = row.get("synthetic") is True
    if synthetic:
        paper.extras["synthetic"] = True
    return paper, references, synthetic


def read_generic(path: str | Path, label_field: str = "labels", dangling: str = "drop", name: str = "jsonl") -> Corpus:
    """Read a generic record file (``.jsonl``, ``.jsonl.gz`` or ``.parquet``) into a Corpus, streaming."""
    return read_records(path, parse_generic_record, name, label_field, dangling)


def read_generic_papers(path: str | Path, report: ReadReport | None = None) -> dict[str, Paper]:
    """``{paper_id: Paper}`` of a generic record file for embedding: untitled kept, ``references`` optional (when
    present, in ``extras["references"]``: the SGC baseline reads them)."""
    path = Path(path)
    papers: dict[str, Paper] = {}
    lines: dict[str, int] = {}
    for line, row in iter_records(path):
        paper, references, _ = parse_generic_record(row, path, line, "venue", need_references=False)
        if paper.paper_id in lines:
            raise DataError(
                f"duplicate paper_id (first seen on line {lines[paper.paper_id]})", path, line, paper.paper_id
            )
        lines[paper.paper_id] = line
        if references:
            paper.extras["references"] = references
        for kind, text in (("empty_title", paper.title), ("empty_abstract", paper.abstract)):
            if report is not None and not text:
                report.note(kind, paper.paper_id)
        papers[paper.paper_id] = paper
    if not papers:
        raise DataError("empty file: no papers", path)
    return papers


def paper_to_record(paper: Paper, references: list[str], labels: list[str] | None = None) -> dict[str, Any]:
    """The generic record of a Paper (for writing a corpus out in this format)."""
    record: dict[str, Any] = {
        "paper_id": paper.paper_id,
        "title": paper.title,
        "abstract": paper.abstract or "",
        "references": references,
        "authors": list(paper.authors),
        "venue": paper.venue,
        "year": paper.year,
    }
    if labels is not None:
        record["labels"] = labels
    if paper.extras.get("synthetic"):
        record["synthetic"] = True
    return record


def read_any_paper_file(path: str | Path, report: ReadReport | None = None) -> dict[str, Paper]:
    """``{paper_id: Paper}`` of a metadata file of either kind: a generic record file (``.jsonl``, ``.jsonl.gz``,
    ``.parquet``; ``references`` optional) or a JSON metadata file (``records.read_paper_file``)."""
    return read_generic_papers(path, report) if is_record_file(path) else read_paper_file(path, report)
