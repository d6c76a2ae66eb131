"""S2ORC metadata records (one JSON object per line) read into a Corpus.

Each record has ``paper_id``, ``title``, ``authors`` (objects with ``first``, ``middle``, ``last``,
``suffix``), ``abstract`` (often null), ``year``, ``venue``, ``journal``, ``mag_field_of_study`` and
``outbound_citations`` / ``inbound_citations`` (lists of S2ORC paper ids). Citation edges come from
``outbound_citations``; a cited id outside the file is a dangling citation, counted in the report.
The file may be ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` (read streaming by ``generic.iter_records``).

Class labels (``label_field``): ``fields_of_study`` (the default; ``labels`` is the same) reads
``mag_field_of_study``, the MAG fields SCIDOCS's MAG task uses; ``venue`` reads ``Paper.venue``; any other
field reads that field of the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.data.corpus import Corpus
from specter_utils.data.generic import iter_records, label_values
from specter_utils.data.records import Paper, ReadReport
from specter_utils.errors import DataError

REQUIRED_FIELDS = ("paper_id", "title")
DANGLING_POLICIES = ("drop", "keep", "error")
# Identifier fields kept in extras when present.
_ID_FIELDS = ("arxiv_id", "acl_id", "pmc_id", "pubmed_id", "doi", "mag_id", "s2_url")


def author_name(author: Any) -> str:
    """``{"first": "Iz", "middle": [], "last": "Beltagy", "suffix": ""}`` -> ``Iz Beltagy``; strings pass through."""
    if isinstance(author, str):
        return " ".join(author.split())
    if not isinstance(author, dict):
        raise TypeError(f"author must be an object or a string, got {type(author).__name__}")
    middle = author.get("middle") or []
    if isinstance(middle, str):
        middle = [middle]
    parts = [author.get("first") or "", *middle, author.get("last") or "", author.get("suffix") or ""]
    return " ".join(" ".join(str(p) for p in parts if p).split())


def _id_list(value: Any, field_name: str, path: Path, line: int, paper_id: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"{field_name!r} must be a list of paper ids", path, line, paper_id)
    return [str(v) for v in value]


def parse_s2orc_record(
    row: Any, path: str | Path, line: int, report: ReadReport | None = None, label_field: str = "venue"
) -> Paper:
    """One S2ORC metadata record -> Paper (labels of a ``label_field`` other than ``venue`` in
    ``extras["class_labels"]``); a missing or mistyped field is a DataError naming file and line."""
    path = Path(path)
    if not isinstance(row, dict):
        raise DataError(f"expected a JSON object, got {type(row).__name__}", path, line)
    missing = [name for name in REQUIRED_FIELDS if name not in row]
    if missing:
        raise DataError(f"missing required field(s) {missing}", path, line, row.get("paper_id"))
    if row["paper_id"] in (None, ""):
        raise DataError("empty 'paper_id'", path, line)
    paper_id = str(row["paper_id"])
    title = row["title"]
    if title is not None and not isinstance(title, str):
        raise DataError(f"'title' must be a string, got {type(title).__name__}", path, line, paper_id)
    abstract = row.get("abstract")
    if abstract is not None and not isinstance(abstract, str):
        raise DataError(f"'abstract' must be a string or null, got {type(abstract).__name__}", path, line, paper_id)
    year = row.get("year")
    if year is not None:
        if isinstance(year, bool) or not isinstance(year, (int, str)) or not str(year).strip().isdigit():
            raise DataError(f"'year' must be an integer or null, got {year!r}", path, line, paper_id)
        year = int(year)
    authors_raw = row.get("authors") or []
    if not isinstance(authors_raw, list):
        raise DataError("'authors' must be a list", path, line, paper_id)
    try:
        authors = [name for name in (author_name(a) for a in authors_raw) if name]
    except TypeError as exc:
        raise DataError(str(exc), path, line, paper_id) from None
    fields_of_study = row.get("mag_field_of_study")
    if fields_of_study is not None and not isinstance(fields_of_study, list):
        fields_of_study = [fields_of_study]
    extras: dict[str, Any] = {
        "journal": row.get("journal"),
        "s2orc_venue": row.get("venue"),
        "mag_field_of_study": fields_of_study or [],
        "outbound_citations": _id_list(row.get("outbound_citations"), "outbound_citations", path, line, paper_id),
        "inbound_citations": _id_list(row.get("inbound_citations"), "inbound_citations", path, line, paper_id),
    }
    extras.update({name: row[name] for name in _ID_FIELDS if row.get(name) is not None})
    if label_field != "venue":
        source = "mag_field_of_study" if label_field in ("fields_of_study", "labels") else label_field
        labels = label_values(row.get(source), source, path, line, paper_id)
        if labels:
            extras["class_labels"] = labels
        elif report is not None:
            report.note("no_label", paper_id)
    if row.get("synthetic") is True:
        extras["synthetic"] = True
    if report is not None:
        if abstract is None:
            report.note("null_abstract", paper_id)
        elif not abstract.strip():
            report.note("empty_abstract", paper_id)
        if fields_of_study is None:
            report.note("no_mag_field_of_study", paper_id)
        if year is None:
            report.note("no_year", paper_id)
    return Paper(
        paper_id=paper_id,
        title=" ".join((title or "").split()),
        abstract=(abstract or "").strip(),
        authors=authors,
        venue=row.get("venue") or row.get("journal") or None,
        year=year,
        extras=extras,
    )


def read_s2orc(
    path: str | Path, dangling: str = "drop", name: str = "s2orc", label_field: str = "fields_of_study"
) -> Corpus:
    """Read an S2ORC metadata file (``.jsonl``, ``.jsonl.gz``, ``.parquet``) into a Corpus, streaming; a citation
    of an id not in the file is dropped (counted as ``dangling_citation``; ``extras`` keeps the full list), kept or
    a DataError, as ``dangling`` says (``drop``, ``keep``, ``error``)."""
    if dangling not in DANGLING_POLICIES:
        raise ValueError(f"dangling must be one of {DANGLING_POLICIES}, got {dangling!r}")
    path = Path(path)
    report = ReadReport(source=str(path))
    papers: dict[str, Paper] = {}
    lines: dict[str, int] = {}
    for line, row in iter_records(path):
        paper = parse_s2orc_record(row, path, line, report, label_field)
        if paper.paper_id in papers:
            raise DataError(
                f"duplicate paper_id (first seen on line {lines[paper.paper_id]})", path, line, paper.paper_id
            )
        lines[paper.paper_id] = line
        if not paper.title:
            report.note("no_title_dropped", paper.paper_id)
            continue
        papers[paper.paper_id] = paper
    if not papers:
        raise DataError("empty corpus: no records with a paper_id and a title", path)
    edges: list[tuple[str, str]] = []
    for paper_id, paper in papers.items():
        for cited in paper.extras["outbound_citations"]:
            if cited not in papers:
                if dangling == "error":
                    raise DataError(f"cites unknown paper id {cited!r}", path, lines[paper_id], paper_id)
                report.note("dangling_citation", f"{paper_id}->{cited}")
                if dangling == "drop":
                    continue
            edges.append((paper_id, cited))
    synthetic = all(p.extras.get("synthetic") for p in papers.values())
    corpus = Corpus(name=name, papers=papers, edges=edges, report=report, synthetic=synthetic, label_field=label_field)
    corpus.info["format"] = "s2orc"
    return corpus
