"""The paper record shared by every reader, the one reader of paper metadata files, and a report of oddities.

Paper metadata files, SPECTER's ``metadata.json`` and SCIDOCS's ``paper_metadata_*.json``, are both
``{paper_id: {"paper_id", "title", "abstract", ...}}`` (a JSON list of such objects, keyed by ``paper_id`` or
``doc_id``, reads the same) and are read by :func:`read_paper_records` alone
(a generic record file, ``.jsonl`` / ``.jsonl.gz`` / ``.parquet``, by ``data.generic.read_any_paper_file``), with one rule:

- a record must be an object with a ``title`` key; its ``paper_id``, when present, must equal its key;
  ``title`` and ``abstract`` are strings or null (null reads as ""), stripped of surrounding spaces;
- a paper with an empty title is **kept** and counted (``empty_title``), an empty abstract likewise
  (``empty_abstract``): every benchmark paper gets a vector, as in SCIDOCS;
- only the SPECTER *training* data then drops untitled papers, as SPECTER does (docs/protocol.md section 1):
  :func:`specter_utils.data.specter_format.read_metadata`, counted as ``no_title_dropped``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.errors import DataError
from specter_utils.io import read_json


@dataclass
class Paper:
    """One paper. ``extras`` keeps any source-specific fields (journal-ref, labels, citations...)."""

    paper_id: str
    title: str
    abstract: str = ""
    authors: list[str] = field(default_factory=list)
    venue: str | None = None
    year: int | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def text(self, sep: str = " [SEP] ") -> str:
        """SPECTER input text: ``title + sep + abstract`` (the tokenizer's sep token goes in ``sep``)."""
        return f"{self.title}{sep}{self.abstract or ''}"

    def to_specter_metadata(self) -> dict[str, str]:
        """The ``metadata.json`` entry of the SPECTER training format."""
        return {"paper_id": self.paper_id, "title": self.title, "abstract": self.abstract or ""}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Paper:
        known = {"paper_id", "title", "abstract", "authors", "venue", "year"}
        return cls(
            paper_id=str(row["paper_id"]),
            title=row.get("title") or "",
            abstract=row.get("abstract") or "",
            authors=list(row.get("authors") or []),
            venue=row.get("venue"),
            year=row.get("year"),
            extras={**row.get("extras", {}), **{k: v for k, v in row.items() if k not in known | {"extras"}}},
        )


@dataclass
class ReadReport:
    """Counts of recoverable oddities met while reading, with a few example ids of each (readers never drop
    anything silently: whatever they skip or repair is counted here)."""

    source: str = ""
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    max_examples: int = 5

    def note(self, kind: str, example: str | None = None, n: int = 1) -> None:
        """Count ``n`` occurrences of ``kind``, keeping up to ``max_examples`` example ids."""
        self.counts[kind] += n
        if example is not None:
            bucket = self.examples.setdefault(kind, [])
            if len(bucket) < self.max_examples:
                bucket.append(str(example))

    def merge(self, other: ReadReport) -> None:
        self.counts.update(other.counts)
        for kind, ids in other.examples.items():
            bucket = self.examples.setdefault(kind, [])
            bucket.extend(ids[: self.max_examples - len(bucket)])

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "counts": dict(self.counts), "examples": self.examples}

    def summary(self) -> str:
        """One line per oddity, e.g. ``empty_abstract: 12 (e.g. 9201001, ...)``."""
        if not self.counts:
            return f"{self.source}: no oddities"
        lines = [f"{self.source}:"]
        for kind, n in sorted(self.counts.items()):
            ex = self.examples.get(kind)
            lines.append(f"  {kind}: {n}" + (f" (e.g. {', '.join(ex)})" if ex else ""))
        return "\n".join(lines)


def is_plain_id(value: Any) -> bool:
    """Whether ``value`` is a non-empty string without whitespace: the common case, checked at C speed."""
    if type(value) is not str:
        return False
    parts = value.split()  # str.split() splits on exactly the characters str.isspace() names
    return len(parts) == 1 and len(parts[0]) == len(value)


def check_id(value: Any, path: str | Path, line: int | None = None, what: str | Callable[[], str] = "paper id") -> str:
    """A paper id as every format allows it: a non-empty string (or number) without whitespace. ``what`` names the
    id in the error; a function giving that name is called only for an id that fails (a reader checking millions of
    ids builds no message for the ones that pass)."""
    if is_plain_id(value):
        return value
    if callable(what):
        what = what()
    if value is None or isinstance(value, (bool, list, dict, float)):
        raise DataError(f"{what} {value!r} is not an id", path, line)
    text = str(value)
    if not text or any(ch.isspace() for ch in text):
        raise DataError(f"{what} is empty or contains whitespace", path, line, text)
    return text


PAPER_FILE_SHAPES = (
    "a JSON object {paper_id: {title, abstract, ...}}, a JSON list of paper objects [{paper_id (or doc_id), title, "
    "abstract, ...}], or JSONL (one paper object a line)"
)
ID_FIELDS = ("paper_id", "doc_id")  # the id of a paper in a list of papers: ours, then SciRepEval's


def _keyed_by_id(records: list[Any], path: Path) -> dict[str, dict[str, Any]]:
    """A JSON list of paper objects as ``{id: record}`` (``paper_id`` set from ``doc_id`` where only that is given);
    an item that is not an object, has no id or repeats one is an error naming its position."""
    keyed: dict[str, dict[str, Any]] = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise DataError(f"item {index} of the list is not a paper object; expected {PAPER_FILE_SHAPES}", path)
        key = next((record[name] for name in ID_FIELDS if record.get(name) is not None), None)
        if key is None:
            raise DataError(f"item {index} of the list has no paper_id or doc_id", path)
        key = str(key)
        if key in keyed:
            raise DataError(f"item {index} of the list repeats the id of an earlier paper", path, record_id=key)
        keyed[key] = {**record, "paper_id": key}
    return keyed


def read_paper_records(path: str | Path) -> dict[str, dict[str, Any]]:
    """The validated records of a paper metadata file, as stored (the rule is in this module's docstring)."""
    path = Path(path)
    raw = read_json(path)
    if isinstance(raw, list):
        raw = _keyed_by_id(raw, path)
    if not isinstance(raw, dict):
        raise DataError(f"expected {PAPER_FILE_SHAPES}, got a JSON {type(raw).__name__}", path)
    if not raw:
        raise DataError("empty file: no papers", path)
    for key, record in raw.items():
        check_id(key, path)
        if not isinstance(record, dict):
            raise DataError("paper record must be an object", path, record_id=key)
        if "paper_id" in record and record["paper_id"] is None:
            raise DataError("paper_id is null", path, record_id=key)
        if "title" not in record:
            raise DataError("missing required field 'title'", path, record_id=key)
        record_id = record.get("paper_id")
        if record_id is not None and str(record_id) != str(key):
            raise DataError(f"key {key!r} differs from its paper_id {str(record_id)!r}", path, record_id=key)
        for name in ("title", "abstract"):
            value = record.get(name)
            if value is not None and not isinstance(value, str):
                raise DataError(
                    f"field {name!r} must be a string or null, got {type(value).__name__}", path, record_id=key
                )
    return raw


def read_paper_file(path: str | Path, report: ReadReport | None = None) -> dict[str, Paper]:
    """``{paper_id: Paper}`` of one JSON metadata file; untitled papers are kept and counted (``empty_title``)."""
    papers: dict[str, Paper] = {}
    for key, record in read_paper_records(path).items():
        title, abstract = (record.get("title") or "").strip(), (record.get("abstract") or "").strip()
        for kind, text in (("empty_title", title), ("empty_abstract", abstract)):
            if report is not None and not text:
                report.note(kind, str(key))
        extras = {k: v for k, v in record.items() if k not in {"paper_id", "title", "abstract"}}
        papers[str(key)] = Paper(paper_id=str(key), title=title, abstract=abstract, extras=extras)
    return papers
