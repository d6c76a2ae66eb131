"""OpenAlex works (the snapshot's ``works`` records, one JSON object per line, or Parquet) read into a Corpus.

Fields read: ``id`` (``https://openalex.org/W2741809807``, normalised to ``W2741809807``; required),
``title`` (or ``display_name``; required, null drops the paper), ``abstract_inverted_index`` (``{word:
[positions]}``, rebuilt into the abstract), ``referenced_works`` (required: the works it cites, ids normalised
the same way), ``authorships[].author.display_name``, ``publication_year``, the venue from
``primary_location.source.display_name`` (or the older ``host_venue.display_name``), ``topics`` and
``concepts``.

Labels (``label_field``):
- ``fields_of_study`` (default): each topic's ``field.display_name`` (OpenAlex's 26 fields, e.g. "Physics and
  Astronomy"), best-scored first; a work without topics takes its level-0 ``concepts`` (the 19 MAG fields
  SCIDOCS uses), best-scored first;
- ``labels`` / ``topics``: the topics' ``display_name`` (fine topics), or every concept's where there are none;
- ``concepts``: the level-0 concepts only; ``venue``: the source name; any other field: that field's value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.data.corpus import Corpus
from specter_utils.data.generic import label_values, parse_year, read_records
from specter_utils.data.records import Paper
from specter_utils.errors import DataError

REQUIRED_FIELDS = ("id", "referenced_works")
ID_PREFIX = "https://openalex.org/"


def normalise_openalex_id(raw: Any) -> str:
    """``https://openalex.org/W123`` (or ``.../works/W123``, ``W123``) -> ``W123``; ValueError otherwise."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"not an OpenAlex id: {raw!r}")
    token = raw.strip().rstrip("/").rsplit("/", 1)[-1]
    if len(token) < 2 or not token[0].isalpha() or not token[1:].isdigit():
        raise ValueError(f"not an OpenAlex id: {raw!r}")
    return token[0].upper() + token[1:]


def rebuild_abstract(index: Any, path: Path, line: int, paper_id: str) -> str:
    """The abstract text from OpenAlex's ``abstract_inverted_index`` (``{word: [positions]}``); null gives ""."""
    if index is None:
        return ""
    if not isinstance(index, dict):
        raise DataError("'abstract_inverted_index' must be an object {word: [positions]}", path, line, paper_id)
    words: dict[int, str] = {}
    for word, positions in index.items():
        if not isinstance(positions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in positions
        ):
            raise DataError(
                f"'abstract_inverted_index' positions of {word!r} must be a list of integers", path, line, paper_id
            )
        for position in positions:
            words[position] = word
    return " ".join(words[p] for p in sorted(words))


def _by_score(items: Any, name: str, path: Path, line: int, paper_id: str) -> list[dict]:
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise DataError(f"{name!r} must be a list of objects", path, line, paper_id)
    return sorted(items, key=lambda i: -float(i.get("score") or 0.0))  # stable: ties keep the source order


def _names(items: list[dict], key: str, name: str, path: Path, line: int, paper_id: str) -> list[Any]:
    values = []
    for item in items:
        value = item.get(key) if key == "display_name" else (item.get(key) or {}).get("display_name")
        if value is None:
            raise DataError(f"{name!r} entry without {key!r}", path, line, paper_id)
        values.append(value)
    return values


def openalex_labels(row: dict, label_field: str, path: Path, line: int, paper_id: str) -> list[str]:
    """The labels of a work for ``label_field`` (rules in the module docstring)."""
    if label_field not in ("fields_of_study", "labels", "topics", "concepts"):
        return label_values(row.get(label_field), label_field, path, line, paper_id)
    topics = _by_score(row.get("topics"), "topics", path, line, paper_id)
    concepts = _by_score(row.get("concepts"), "concepts", path, line, paper_id)
    top_concepts = [c for c in concepts if c.get("level") == 0]
    if label_field == "fields_of_study":
        if topics:
            values = _names(topics, "field", "topics", path, line, paper_id)
        else:
            values = _names(top_concepts, "display_name", "concepts", path, line, paper_id)
    elif label_field == "concepts":
        values = _names(top_concepts, "display_name", "concepts", path, line, paper_id)
    else:
        values = _names(topics or concepts, "display_name", "topics" if topics else "concepts", path, line, paper_id)
    return label_values(values, label_field, path, line, paper_id)


def _venue(row: dict) -> str | None:
    location = row.get("primary_location") or {}
    source = location.get("source") if isinstance(location, dict) else None
    name = source.get("display_name") if isinstance(source, dict) else None
    if not name and isinstance(row.get("host_venue"), dict):
        name = row["host_venue"].get("display_name")
    return " ".join(name.split()) if isinstance(name, str) and name.strip() else None


def parse_openalex_record(row: Any, path: Path, line: int, label_field: str = "fields_of_study"):
    """One OpenAlex work -> ``(Paper, references, synthetic)``; malformed fields are DataErrors naming file, line, id."""
    if not isinstance(row, dict):
        raise DataError(f"expected a JSON object, got {type(row).__name__}", path, line)
    missing = [name for name in REQUIRED_FIELDS if name not in row]
    if "title" not in row and "display_name" not in row:
        missing.append("title")
    if missing:
        raise DataError(f"missing required field(s) {missing}", path, line, row.get("id"))
    try:
        paper_id = normalise_openalex_id(row["id"])
    except ValueError as exc:
        raise DataError(str(exc), path, line) from None
    referenced = [] if row["referenced_works"] is None else row["referenced_works"]
    if not isinstance(referenced, list):
        raise DataError("'referenced_works' must be a list of work ids", path, line, paper_id)
    try:
        references = [normalise_openalex_id(r) for r in referenced]
    except ValueError as exc:
        raise DataError(f"'referenced_works': {exc}", path, line, paper_id) from None
    title = row.get("title") if "title" in row else row.get("display_name")
    if title is not None and not isinstance(title, str):
        raise DataError(f"'title' must be a string or null, got {type(title).__name__}", path, line, paper_id)
    authorships = row.get("authorships") or []
    if not isinstance(authorships, list):
        raise DataError("'authorships' must be a list", path, line, paper_id)
    authors = []
    for authorship in authorships:
        author = authorship.get("author") if isinstance(authorship, dict) else None
        name = author.get("display_name") if isinstance(author, dict) else None
        if isinstance(name, str) and name.strip():
            authors.append(" ".join(name.split()))
    paper = Paper(
        paper_id=paper_id,
        title=" ".join((title or "").split()),
        abstract=rebuild_abstract(row.get("abstract_inverted_index"), path, line, paper_id),
        authors=authors,
        venue=_venue(row),
        year=parse_year(row.get("publication_year"), path, line, paper_id),
    )
    if label_field != "venue":
        labels = openalex_labels(row, label_field, path, line, paper_id)
        if labels:
            paper.extras["class_labels"] = labels
    synthetic = row.get("synthetic") is True
    if synthetic:
        paper.extras["synthetic"] = True
    return paper, references, synthetic


def read_openalex(
    path: str | Path, label_field: str = "fields_of_study", dangling: str = "drop", name: str = "openalex"
) -> Corpus:
    """Read OpenAlex works (``.jsonl``, ``.jsonl.gz``, ``.parquet``) into a Corpus, streaming; a referenced work
    outside the file is counted (``unknown_reference``) and dropped (``dangling="drop"``)."""
    return read_records(path, parse_openalex_record, name, label_field, dangling)


def paper_to_openalex(
    paper: Paper, references: list[str], fields: list[str] | None = None, topics: list[str] | None = None
) -> dict[str, Any]:
    """An OpenAlex-style work for a Paper (for generated test files): ids as URLs, the abstract inverted."""
    index: dict[str, list[int]] = {}
    for position, word in enumerate(paper.abstract.split()):
        index.setdefault(word, []).append(position)
    fields = fields or []
    record: dict[str, Any] = {
        "id": ID_PREFIX + paper.paper_id,
        "title": paper.title,
        "display_name": paper.title,
        "publication_year": paper.year,
        "authorships": [{"author": {"display_name": name}} for name in paper.authors],
        "primary_location": {"source": {"display_name": paper.venue}} if paper.venue else None,
        "abstract_inverted_index": index or None,
        "referenced_works": [ID_PREFIX + r for r in references],
        "topics": [
            {"display_name": topic, "score": round(1.0 - 0.1 * i, 2), "field": {"display_name": field}}
            for i, (topic, field) in enumerate(zip(topics or fields, fields, strict=True))
        ],
        "concepts": [{"display_name": field, "level": 0, "score": 0.5} for field in fields],
    }
    if paper.extras.get("synthetic"):
        record["synthetic"] = True
    return record
