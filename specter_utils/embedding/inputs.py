"""Papers to embed: SPECTER ``metadata.json`` or SCIDOCS ``paper_metadata_*.json`` files, plus an ids file.

Both formats are ``{paper_id: {"title", "abstract", ...}}``, read by ``data.generic.read_any_paper_file`` (its
rule: untitled papers are kept and counted). Several files may be given (SCIDOCS has three); a paper present
in more than one must have the same title and abstract everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from specter_utils.data.generic import read_any_paper_file
from specter_utils.data.records import Paper, ReadReport
from specter_utils.errors import DataError
from specter_utils.io import read_text


def read_metadata_files(paths: Iterable[str | Path], report: ReadReport | None = None) -> dict[str, Paper]:
    """Read and merge metadata files in the order given; a missing title key is a DataError naming the id."""
    report = report if report is not None else ReadReport(source="metadata")
    papers: dict[str, Paper] = {}
    origin: dict[str, Path] = {}
    paths = [Path(p) for p in paths]
    if not paths:
        raise DataError("no metadata file given")
    for path in paths:
        for paper in read_any_paper_file(path).values():
            if paper.paper_id in papers:
                first = papers[paper.paper_id]
                if (first.title, first.abstract) != (paper.title, paper.abstract):
                    raise DataError(
                        f"paper also in {origin[paper.paper_id]} with a different title or abstract",
                        path,
                        record_id=paper.paper_id,
                    )
                report.note("duplicate_across_files", paper.paper_id)
                continue
            if not paper.title:  # counted once per paper, not once per file it appears in
                report.note("empty_title", paper.paper_id)
            if not paper.abstract:
                report.note("empty_abstract", paper.paper_id)
            papers[paper.paper_id] = paper
            origin[paper.paper_id] = path
    return papers


def select_ids(papers: dict[str, Paper], ids_path: str | Path) -> dict[str, Paper]:
    """The papers named in ``ids_path`` (one id per line), in that order; unknown or repeated ids are errors."""
    ids_path = Path(ids_path)
    numbered = [(n, line.strip()) for n, line in enumerate(read_text(ids_path).splitlines(), start=1) if line.strip()]
    if not numbered:
        raise DataError("ids file is empty", ids_path)
    seen: dict[str, int] = {}
    for line, paper_id in numbered:
        if paper_id in seen:
            raise DataError(f"duplicate id (first on line {seen[paper_id]})", ids_path, line, paper_id)
        seen[paper_id] = line
    missing = [(line, paper_id) for line, paper_id in numbered if paper_id not in papers]
    if missing:
        line, paper_id = missing[0]
        raise DataError(f"{len(missing)} id(s) not in the metadata, the first here", ids_path, line, paper_id)
    return {paper_id: papers[paper_id] for _, paper_id in numbered}


def load_papers(
    metadata: Iterable[str | Path], ids_path: str | Path | None = None, report: ReadReport | None = None
) -> dict[str, Paper]:
    """Metadata files (merged) restricted to an optional ids file."""
    papers = read_metadata_files(metadata, report)
    return select_ids(papers, ids_path) if ids_path is not None else papers
