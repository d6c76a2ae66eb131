"""A corpus given as tables, as OGB-style and PyG-style datasets ship it, streamed into a Corpus.

Papers come in one of two layouts:

- **a papers table**: ``papers.csv``, ``papers.csv.gz`` or ``papers.parquet``, one row per paper, with ``id``,
  ``title``, ``abstract`` and ``label`` columns (other names: the manifest's ``column_names``; the label column
  also with ``--label-field``); only ``id`` and ``title`` are required;
- **aligned one-column files**: row i of each is paper i (PyG style), each a CSV with one header line (``.csv``,
  ``.csv.gz``) or a one-column Parquet file: ``ids``, ``titles``, ``abstracts``, ``labels`` (singular names too);
  only the titles are required; without an ids file a paper's id is its row number (0-based).

Citations: ``edges.csv``, ``edges.csv.gz`` or ``edges.parquet``, two columns, one citation per row, **by paper id
or by row index, as the user says** (``--edges-by id|row``; default: ``row`` for aligned files, ``id`` for a
papers table), citing paper first (``--edge-order citing-cited``, or ``cited-citing``). A CSV's first line is a
header unless it already holds an edge (two row indices, or two known ids).

A folder is read by these names; a ``tables.json`` manifest (in the folder, or given as ``--src FILE.json``) names
other files, relative to itself: ``{"papers": FILE}`` or ``{"columns": {"id": FILE, "title": FILE, ...}}``, plus
``"edges": FILE`` and optionally ``edges_by``, ``edge_order``, ``column_names`` (role -> column of the papers
table). Flags given on the command line win over the manifest.

Errors name the file and line: aligned files of different lengths (the first row with no counterpart), a CSV row
whose field count differs from its header's, an edge whose row index is out of range or whose id is not a paper,
a duplicate id. An edge to an unknown paper is an error by default; ``unknown="drop"`` counts
(``edge_to_unknown_paper``) and drops it. Self-links are counted (``self_link_dropped``) and dropped, papers
without a title are dropped and counted (``no_title_dropped``, with the edges that name them:
``edge_to_untitled_paper``), papers without a label are kept and counted (``no_label``).
"""

from __future__ import annotations

import csv
import gzip
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specter_utils.data.corpus import Corpus
from specter_utils.data.generic import open_parquet
from specter_utils.data.records import Paper, ReadReport
from specter_utils.errors import DataError
from specter_utils.io import read_json
from specter_utils.layout import METADATA_FILE

ROLES = ("id", "title", "abstract", "label")
EDGES_BY = ("row", "id")
EDGE_ORDERS = ("citing-cited", "cited-citing")
UNKNOWN_POLICIES = ("error", "drop")
MANIFEST = "tables.json"
TABLE_SUFFIXES = (".parquet", ".csv", ".csv.gz")
ROLE_FILES = {role: (f"{role}s", role) for role in ROLES}
PARQUET_BATCH = 10_000
_MANIFEST_KEYS = {"papers", "columns", "edges", "edges_by", "edge_order", "column_names"}


@dataclass
class TablesLayout:
    """Which files hold the papers and the citations, and how to read them."""

    edges: Path
    papers: Path | None = None  # a papers table, or
    columns: dict[str, Path] = field(default_factory=dict)  # role -> aligned one-column file
    edges_by: str = ""  # row or id; "": the layout's default
    edge_order: str = "citing-cited"
    column_names: dict[str, str] = field(default_factory=lambda: {role: role for role in ROLES})
    source: Path | None = None  # the folder or manifest it was described by

    def resolved_edges_by(self) -> str:
        return self.edges_by or ("id" if self.papers is not None else "row")


def _table_file(folder: Path, stem: str) -> Path | None:
    return next((path for suffix in TABLE_SUFFIXES if (path := folder / f"{stem}{suffix}").is_file()), None)


def is_tables_source(src: Path) -> bool:
    """Whether ``src`` is a tables manifest, or a folder with a manifest or an edges table plus papers or titles."""
    if src.is_file():
        return src.suffix == ".json" and src.name != METADATA_FILE and _looks_like_manifest(src)
    if not src.is_dir():
        return False
    if (src / MANIFEST).is_file():
        return True
    papers = _table_file(src, "papers") or any(_table_file(src, stem) for stem in ROLE_FILES["title"])
    return bool(papers) and _table_file(src, "edges") is not None


def _looks_like_manifest(path: Path) -> bool:
    try:
        raw = read_json(path)
    except DataError:
        return False
    return isinstance(raw, dict) and "edges" in raw and ("papers" in raw or "columns" in raw)


def read_manifest(path: Path) -> TablesLayout:
    """The layout a ``tables.json`` manifest describes (file names relative to the manifest's folder)."""
    raw = read_json(path)
    if not isinstance(raw, dict):
        raise DataError("a tables manifest is a JSON object", path)
    unknown = set(raw) - _MANIFEST_KEYS
    if unknown:
        raise DataError(f"unknown manifest key(s) {sorted(unknown)}; known: {sorted(_MANIFEST_KEYS)}", path)
    if "edges" not in raw or ("papers" in raw) == ("columns" in raw):
        raise DataError('a tables manifest names "edges" and either "papers" or "columns"', path)
    base = path.parent

    def file(value: Any, what: str) -> Path:
        if not isinstance(value, str) or not value:
            raise DataError(f"{what} must be a file name", path)
        return base / value

    columns = raw.get("columns") or {}
    names = raw.get("column_names") or {}
    for what, mapping in (("columns", columns), ("column_names", names)):
        if not isinstance(mapping, dict) or set(mapping) - set(ROLES):
            raise DataError(f"{what!r} maps roles {list(ROLES)} to names", path)
    layout = TablesLayout(
        edges=file(raw["edges"], "edges"),
        papers=file(raw["papers"], "papers") if "papers" in raw else None,
        columns={role: file(name, f"columns.{role}") for role, name in columns.items()},
        edges_by=raw.get("edges_by", ""),
        edge_order=raw.get("edge_order", "citing-cited"),
        column_names={role: str(names.get(role, role)) for role in ROLES},
        source=path,
    )
    return _checked(layout, path)


def _checked(layout: TablesLayout, where: Path) -> TablesLayout:
    if layout.edges_by not in ("", *EDGES_BY):
        raise DataError(f"edges_by must be one of {EDGES_BY}, got {layout.edges_by!r}", where)
    if layout.edge_order not in EDGE_ORDERS:
        raise DataError(f"edge_order must be one of {EDGE_ORDERS}, got {layout.edge_order!r}", where)
    if layout.papers is None and "title" not in layout.columns:
        raise DataError("aligned one-column files need a titles file", where)
    for path in [layout.edges, layout.papers, *layout.columns.values()]:
        if path is not None and not path.is_file():
            raise DataError("table file not found", path)
    return layout


def discover_layout(src: str | Path) -> TablesLayout:
    """The layout of a folder (by the file names of this module's docstring, or its manifest) or of a manifest."""
    src = Path(src)
    if not src.exists():
        raise DataError("tables source not found", src)
    if src.is_file():
        if src.suffix != ".json":
            raise DataError("a tables corpus is a folder, or a tables.json manifest naming its files", src)
        return read_manifest(src)
    if (src / MANIFEST).is_file():
        return read_manifest(src / MANIFEST)
    edges = _table_file(src, "edges")
    if edges is None:
        raise DataError("no edges table (edges.csv, edges.csv.gz or edges.parquet) in the folder", src)
    papers = _table_file(src, "papers")
    columns = {role: found for role, stems in ROLE_FILES.items() if (found := _first_file(src, stems))}
    if papers is not None and columns:
        raise DataError(
            f"both a papers table ({papers.name}) and one-column files ({', '.join(p.name for p in columns.values())}): "
            f"say which with a {MANIFEST} manifest",
            src,
        )
    if papers is None and "title" not in columns:
        raise DataError("no papers table (papers.csv / .csv.gz / .parquet) and no titles file in the folder", src)
    return _checked(TablesLayout(edges=edges, papers=papers, columns=columns, source=src), src)


def _first_file(folder: Path, stems: tuple[str, ...]) -> Path | None:
    return next(filter(None, (_table_file(folder, stem) for stem in stems)), None)


# ---------------------------------------------------------------- streaming table rows
def iter_table_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    """Yield ``(line, fields)`` of a CSV (``.gz``: gzipped) or Parquet table, the header line included (line 1);
    a CSV row whose field count differs from the header's is a DataError naming its line."""
    if path.name.lower().endswith(".parquet"):
        yield from _iter_parquet_rows(path)
        return
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    width = None
    line = 0
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            for fields in reader:
                line = reader.line_num
                if not fields:
                    continue
                if width is None:
                    width = len(fields)
                elif len(fields) != width:
                    raise DataError(
                        f"row has {len(fields)} field(s), the header {width} (columns of different lengths)", path, line
                    )
                yield line, fields
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 (byte {exc.object[exc.start]:#04x})", path, line + 1) from None
    except csv.Error as exc:
        raise DataError(f"malformed CSV: {exc}", path, line + 1) from None
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read: {exc}", path, line + 1) from None
    if width is None:
        raise DataError("empty table", path)


def _iter_parquet_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    parquet = open_parquet(path)
    yield 1, list(parquet.schema_arrow.names)  # the header, as a CSV has it
    row = 1
    for batch in parquet.iter_batches(batch_size=PARQUET_BATCH):
        for values in zip(*(column.to_pylist() for column in batch.columns), strict=True):
            row += 1
            yield row, list(values)


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return " ".join(str(value).split())


def _id_text(value: Any) -> str:
    """A cell as an id: whitespace collapsed, a float that holds an integer (Parquet, pandas) without ``.0``."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else _text(value)


def _id(value: Any, path: Path, line: int) -> str:
    text = _id_text(value)
    if not text or " " in text:
        raise DataError(f"paper id is empty or holds spaces: {text[:60]!r}", path, line)
    return sys.intern(text)


# ---------------------------------------------------------------- papers
def iter_aligned_papers(columns: dict[str, Path]) -> Iterator[tuple[int, dict[str, Any], Path, int]]:
    """Yield ``(row, {role: value}, path, line)`` over aligned one-column files, row 0 first; files of different
    lengths are a DataError naming the first row that has no counterpart (file and line)."""
    roles = list(columns)
    iterators = {role: iter_table_rows(columns[role]) for role in roles}
    for role in roles:  # the header lines
        _, header = next(iterators[role])
        if len(header) != 1:
            raise DataError(f"expected a one-column file, the header has {len(header)} columns", columns[role], 1)
    row = 0
    while True:
        values: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for role in roles:
            item = next(iterators[role], None)
            if item is not None:
                lines[role], (values[role],) = item[0], item[1]
        if not lines:
            return
        if len(lines) < len(roles):
            longer = next(role for role in roles if role in lines)
            shorter = next(role for role in roles if role not in lines)
            raise DataError(
                f"row {row:,} has no counterpart in {columns[shorter].name}, which ends after {row:,} rows "
                f"(aligned files of different lengths)",
                columns[longer],
                lines[longer],
            )
        yield row, values, columns[roles[0]], lines[roles[0]]
        row += 1


def iter_table_papers(path: Path, names: dict[str, str]) -> Iterator[tuple[int, dict[str, Any], Path, int]]:
    """Yield ``(row, {role: value}, path, line)`` of a papers table (header names mapped to roles)."""
    rows = iter_table_rows(path)
    _, header = next(rows)
    header = [str(name).strip() for name in header]
    where: dict[str, int] = {}
    for role in ROLES:
        if names[role] in header:
            where[role] = header.index(names[role])
        elif role in ("id", "title"):
            raise DataError(f"no {names[role]!r} column (the {role}); columns: {header}", path, 1)
    for row, (line, fields) in enumerate(rows):
        yield row, {role: fields[index] for role, index in where.items()}, path, line


def _read_papers(layout: TablesLayout, report: ReadReport) -> tuple[dict[str, Paper], list[str], set[str]]:
    """``{id: Paper}`` of the titled papers, every row's id (for edges by row) and the ids of untitled rows."""
    if layout.papers is not None:
        rows = iter_table_papers(layout.papers, layout.column_names)
    else:
        rows = iter_aligned_papers(layout.columns)
    label_field = layout.column_names["label"]
    papers: dict[str, Paper] = {}
    row_ids: list[str] = []
    untitled: set[str] = set()
    lines: dict[str, tuple[Path, int]] = {}
    for row, values, path, line in rows:
        paper_id = _id(values["id"], path, line) if "id" in values else sys.intern(str(row))
        if paper_id in lines:
            first_path, first_line = lines[paper_id]
            raise DataError(f"duplicate paper id (first on {first_path.name}:{first_line})", path, line, paper_id)
        lines[paper_id] = (path, line)
        row_ids.append(paper_id)
        title = _text(values.get("title"))
        if not title:
            report.note("no_title_dropped", paper_id)
            untitled.add(paper_id)
            continue
        paper = Paper(paper_id=paper_id, title=title, abstract=_text(values.get("abstract")))
        label = _text(values.get("label"))
        if label:
            paper.extras["class_labels"] = [sys.intern(label)]
            if label_field == "venue":  # Corpus reads the venue label field from Paper.venue
                paper.venue = paper.extras["class_labels"][0]
        elif "label" in values or "label" in layout.columns:
            report.note("no_label", paper_id)
        papers[paper_id] = paper
    if not row_ids:
        raise DataError("no papers: the table has a header and no rows", layout.papers or layout.columns["title"])
    return papers, row_ids, untitled


# ---------------------------------------------------------------- edges
def _edge_ends(fields: list[Any], by: str, known: set[str]) -> tuple[str, str] | None:
    """The two ends of an edge row, or None where they are not ids (the header line)."""
    a, b = _text(fields[0]), _text(fields[1])
    if by == "row":
        return (a, b) if a.isdigit() and b.isdigit() else None
    return (a, b) if a in known and b in known else None


def _read_edges(
    layout: TablesLayout, row_ids: list[str], untitled: set[str], report: ReadReport, unknown: str
) -> list[tuple[str, str]]:
    path, by = layout.edges, layout.resolved_edges_by()
    known = set(row_ids)
    edges: list[tuple[str, str]] = []
    for line, fields in iter_table_rows(path):
        if len(fields) != 2:
            raise DataError(f"an edges table has 2 columns, this one {len(fields)}", path, line)
        if line == 1 and _edge_ends(fields, by, known) is None:
            continue  # the header
        ends = []
        for value in fields:
            text = _id_text(value)
            if by == "row":
                if not text.isdigit():
                    raise DataError(
                        f"row index {text[:40]!r} is not a non-negative integer (--edges-by row)", path, line
                    )
                index = int(text)
                if index >= len(row_ids):
                    if unknown == "error":
                        raise DataError(
                            f"row index {index:,} names no paper: the corpus has {len(row_ids):,} rows (0 to "
                            f"{len(row_ids) - 1:,}); --edges-by id if the edges name paper ids",
                            path,
                            line,
                        )
                    ends.append(None)
                    continue
                ends.append(row_ids[index])
            elif text in known:
                ends.append(sys.intern(text))
            elif unknown == "error":
                raise DataError(
                    f"paper id {text[:60]!r} is not in the papers table (--edges-by row if the edges name row "
                    "indices; --unknown-papers drop counts and drops such edges)",
                    path,
                    line,
                )
            else:
                ends.append(None)
        if None in ends:
            report.note("edge_to_unknown_paper", f"line {line}")
            continue
        citing, cited = ends if layout.edge_order == "citing-cited" else ends[::-1]
        if citing == cited:
            report.note("self_link_dropped", citing)
        elif citing in untitled or cited in untitled:
            report.note("edge_to_untitled_paper", f"{citing}->{cited}")
        else:
            edges.append((citing, cited))
    return edges


def read_tables(
    src: str | Path,
    label_field: str | None = None,
    edges_by: str | None = None,
    edge_order: str | None = None,
    unknown: str = "error",
) -> Corpus:
    """Read a tables corpus (a folder or a manifest: this module's docstring) into a Corpus, streaming;
    ``label_field``, ``edges_by`` and ``edge_order`` override the manifest and the layout's defaults."""
    if unknown not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown must be one of {UNKNOWN_POLICIES}, got {unknown!r}")
    layout = discover_layout(src)
    changes: dict[str, Any] = {k: v for k, v in (("edges_by", edges_by), ("edge_order", edge_order)) if v}
    if label_field and label_field != "label":
        if layout.papers is None:
            raise DataError(
                f"--label-field {label_field}: aligned one-column files take their labels from the labels file", src
            )
        changes["column_names"] = {**layout.column_names, "label": label_field}
    layout = _checked(replace(layout, **changes), Path(src))
    report = ReadReport(source=str(src))
    papers, row_ids, untitled = _read_papers(layout, report)
    edges = _read_edges(layout, row_ids, untitled, report, unknown)
    label_field = layout.column_names["label"] if layout.papers is not None else "label"
    corpus = Corpus(name="tables", papers=papers, edges=edges, report=report, label_field=label_field)
    corpus.info.update(
        format="tables",
        layout="papers table" if layout.papers is not None else "aligned columns",
        edges_by=layout.resolved_edges_by(),
        edge_order=layout.edge_order,
    )
    return corpus
