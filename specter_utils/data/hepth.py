"""SNAP arXiv hep-th (KDD Cup 2003): ``cit-HepTh.txt`` edges and ``.abs`` files read from the tarball.

Ids are numeric arXiv ids with leading zeros dropped (hep-th/0001013 -> ``1013``), the same in
both files.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from pathlib import Path

from specter_utils.data.corpus import Corpus
from specter_utils.data.graph import iter_edge_list
from specter_utils.data.records import Paper, ReadReport
from specter_utils.errors import DataError

EDGES_FILE = "cit-HepTh.txt"
ABSTRACTS_FILE = "cit-HepTh-abstracts.tar.gz"

_HEADER_KEY = re.compile(r"^([A-Za-z][A-Za-z-]*(?: \([^)]*\))?):\s?(.*)$")
_JOURNAL = re.compile(r"^\s*([A-Za-z][A-Za-z.&' -]*?)\s*(?:\b([A-Z])\s*)?(?=\d)")
_YEAR = re.compile(r"\((1[89]\d\d|20\d\d)\)")


def normalise_id(raw: str) -> str:
    """``0001013`` -> ``1013``; ``hep-th/9201003`` -> ``9201003``."""
    token = raw.strip().rsplit("/", 1)[-1]
    token = token.removesuffix(".abs")
    if not token.isdigit():
        raise ValueError(f"not a numeric arXiv id: {raw!r}")
    return str(int(token))


def normalise_venue(journal_ref: str | None) -> str | None:
    """``Phys.Lett. B346 (1995) 262-268`` -> ``Phys.Lett.B``; ``JHEP 0010 (2000) 019`` -> ``JHEP``."""
    if not journal_ref:
        return None
    match = _JOURNAL.match(journal_ref)
    if not match or not match.group(1).strip():
        return None
    name = re.sub(r"\.?\s+", ".", match.group(1).strip()).rstrip(".")
    series = match.group(2)
    if series is None:
        # "Nucl.Phys.B" style where the series letter ends the name: "Phys.Rev.D" is kept as is.
        tail = re.match(r"^(.*\.)([A-Z])$", name)
        if tail:
            name, series = tail.group(1).rstrip("."), tail.group(2)
    return f"{name}.{series}" if series else name


def parse_abs(text: str, paper_id: str, source: str = "") -> Paper:
    """Parse one arXiv listing (``.abs``) into a Paper; a missing title is a DataError."""
    blocks = text.split("\\\\")
    if len(blocks) < 3:
        raise DataError("expected a header block and an abstract between '\\\\' lines", source, record_id=paper_id)
    header_lines = blocks[1].splitlines()
    header: dict[str, str] = {}
    current = None
    for line in header_lines:
        if not line.strip():
            continue
        match = _HEADER_KEY.match(line)
        if match and not line[0].isspace():
            current = match.group(1)
            header[current] = match.group(2).strip()
        elif current is not None:
            header[current] = f"{header[current]} {line.strip()}"
    title = re.sub(r"\s+", " ", header.get("Title", "")).strip()
    if not title:
        raise DataError("missing 'Title:' line", source, record_id=paper_id)
    abstract = re.sub(r"\s+", " ", blocks[2]).strip()
    # "Authors:" in most listings, "Author:" in about 4,300; affiliations are in parentheses.
    authors_raw = re.sub(r"\([^()]*\)", "", header.get("Authors") or header.get("Author") or "")
    authors = [a.strip() for a in re.split(r",|\band\b|&", re.sub(r"\s+", " ", authors_raw)) if a.strip()]
    journal_ref = header.get("Journal-ref")
    journal_year = _YEAR.search(journal_ref or "")
    extras = {
        "arxiv_id": header.get("Paper", ""),
        "journal_ref": journal_ref,
        "journal_year": int(journal_year.group(1)) if journal_year else None,
        "comments": header.get("Comments"),
        "report_no": header.get("Report-no"),
        "date": header.get("Date"),
    }
    return Paper(
        paper_id=paper_id,
        title=title,
        abstract=abstract,
        authors=authors,
        venue=normalise_venue(journal_ref),
        extras=extras,
    )


def read_abstracts(path: str | Path, report: ReadReport | None = None) -> dict[str, Paper]:
    """Read every ``YEAR/ID.abs`` member of the tarball without extracting it."""
    path = Path(path)
    if not path.exists():
        raise DataError("file not found", path)
    if path.is_dir():
        raise DataError("is a directory, expected a .tar.gz archive", path)
    try:
        papers = _read_archive(path, report)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:  # corrupt, truncated, or not an archive
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise DataError(f"not a readable .tar.gz archive (corrupt or truncated?): {detail[:200]}", path) from None
    if not papers:
        raise DataError("no .abs files in archive", path)
    return papers


def _read_archive(path: Path, report: ReadReport | None) -> dict[str, Paper]:
    papers: dict[str, Paper] = {}
    with tarfile.open(path, "r:*") as archive:
        for member in archive:
            if not member.isfile() or not member.name.endswith(".abs"):
                continue
            where = f"{path}:{member.name}"
            try:
                paper_id = normalise_id(Path(member.name).name)
            except ValueError as exc:
                raise DataError(str(exc), where) from None
            raw = archive.extractfile(member).read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
                if report is not None:
                    report.note("latin1_decoded", paper_id)
            paper = parse_abs(text, paper_id, where)
            folder = Path(member.name).parent.name
            paper.year = int(folder) if folder.isdigit() else None
            if paper_id in papers:
                raise DataError("duplicate paper id in archive", where, record_id=paper_id)
            for kind, present in (("empty_abstract", paper.abstract), ("no_authors", paper.authors)):
                if report is not None and not present:
                    report.note(kind, paper_id)
            papers[paper_id] = paper
    return papers


def read_edges(path: str | Path) -> list[tuple[str, str]]:
    """Read SNAP ``citing<TAB>cited`` edges with ids normalised; a malformed line: DataError naming the line."""
    path = Path(path)
    edges = []
    for line_number, citing, cited in iter_edge_list(path):
        try:
            edges.append((normalise_id(citing), normalise_id(cited)))
        except ValueError as exc:
            raise DataError(str(exc), path, line_number) from None
    return edges


def read_hepth(src: str | Path) -> Corpus:
    """Read the hep-th folder (both files). An edge end with no abstract is kept and counted (``edge_cited_unknown_id``, ``edge_citing_unknown_id``):
    SNAP's graph cites papers its abstracts do not hold, a known gap of the distribution (as CiteSeer's keys
    without text), not an error; a malformed line is a DataError naming the file and line.
    """
    src = Path(src)
    report = ReadReport(source=str(src))
    papers = read_abstracts(src / ABSTRACTS_FILE, report)
    edges = read_edges(src / EDGES_FILE)
    for citing, cited in edges:
        if citing not in papers:
            report.note("edge_citing_unknown_id", citing)
        if cited not in papers:
            report.note("edge_cited_unknown_id", cited)
    return Corpus(name="hepth", papers=papers, edges=edges, report=report)
