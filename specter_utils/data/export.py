"""Write a Corpus out as record files in the S2ORC, OpenAlex or generic format (``.jsonl``, ``.jsonl.gz``, ``.parquet``).

This is how the test and benchmark inputs for the readers are made: from the real hep-th corpus or the
generated synthetic one, never hand-written. The class labels written (S2ORC ``mag_field_of_study``, OpenAlex
topic fields and level-0 concepts, generic ``labels``) are the corpus's own (``Corpus.label_lists``: the
journal on hep-th, the topic on the synthetic corpus). A synthetic corpus's records carry ``"synthetic": true``,
so reading the file back labels the corpus synthetic again.

    python -m specter_utils.data.export --corpus synthetic --papers 600 --format jsonl --out /tmp/syn.jsonl
    python -m specter_utils.data.export --corpus hepth --format s2orc --out /tmp/hepth-s2orc.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from specter_utils.data.corpus import Corpus
from specter_utils.data.generic import PARQUET_BATCH, paper_to_record
from specter_utils.data.load import load_corpus
from specter_utils.data.openalex import paper_to_openalex
from specter_utils.io import atomic_write

EXPORT_FORMATS = ("jsonl", "s2orc", "openalex")


def _s2orc_record(paper, references: list[str], labels: list[str]) -> dict[str, Any]:
    record = {
        "paper_id": paper.paper_id,
        "title": paper.title,
        "authors": [{"first": "", "middle": [], "last": name, "suffix": ""} for name in paper.authors],
        "abstract": paper.abstract or None,
        "year": paper.year,
        "venue": paper.venue or "",
        "journal": paper.venue,
        "mag_field_of_study": labels or None,
        "outbound_citations": references,
        "inbound_citations": [],
    }
    if paper.extras.get("synthetic"):
        record["synthetic"] = True
    return record


def corpus_records(corpus: Corpus, fmt: str) -> Iterator[dict[str, Any]]:
    """The records of ``corpus`` in format ``fmt`` (one of ``EXPORT_FORMATS``), in paper order."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {EXPORT_FORMATS}, got {fmt!r}")
    references: dict[str, list[str]] = {}
    for citing, cited in corpus.edges:
        if citing in corpus.papers:
            references.setdefault(citing, []).append(cited)
    labels = corpus.label_lists()
    openalex_id = {pid: f"W{i + 1}" for i, pid in enumerate(corpus.papers)}
    for pid, paper in corpus.papers.items():
        refs, paper_labels = references.get(pid, []), labels.get(pid, [])
        if corpus.synthetic:
            paper.extras["synthetic"] = True
        if fmt == "jsonl":
            yield paper_to_record(paper, refs, paper_labels)
        elif fmt == "s2orc":
            yield _s2orc_record(paper, refs, paper_labels)
        else:
            renamed = replace(paper, paper_id=openalex_id[pid])
            work_refs = [openalex_id.get(r, f"W9{zlib.crc32(r.encode()):010d}") for r in refs]
            topics = [f"{label} (topic)" for label in paper_labels]
            yield paper_to_openalex(renamed, work_refs, paper_labels, topics)


def write_records(path: str | Path, records: Any) -> int:
    """Write records to ``.jsonl``, ``.jsonl.gz`` or ``.parquet`` (by the suffix), atomically; return the count."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".parquet"):
        rows = list(records)
        with atomic_write(path, "wb", encoding=None) as handle:
            pq.write_table(pa.Table.from_pylist(rows), handle, row_group_size=PARQUET_BATCH)  # streams by group
        return len(rows)
    count = 0
    with atomic_write(path, "wb", encoding=None) as raw:
        handle = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if name.endswith(".gz") else raw
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
            count += 1
        if handle is not raw:
            handle.close()
    return count


def export_corpus(corpus: Corpus, fmt: str, path: str | Path) -> int:
    """Write ``corpus`` to ``path`` in format ``fmt``; return the number of records."""
    return write_records(path, corpus_records(corpus, fmt))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write hep-th or a synthetic corpus as an S2ORC, OpenAlex or "
        "generic record file (the readers' test inputs)"
    )
    parser.add_argument("--corpus", choices=("hepth", "synthetic"), default="synthetic")
    parser.add_argument("--src", type=Path, default=None, help="hepth folder (default ../shared/data/hepth)")
    parser.add_argument("--papers", type=int, default=600, help="synthetic: papers")
    parser.add_argument("--topics", type=int, default=6, help="synthetic: topics (the labels)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=EXPORT_FORMATS, required=True)
    parser.add_argument("--out", type=Path, required=True, help=".jsonl, .jsonl.gz or .parquet")
    args = parser.parse_args(argv)

    synthetic = {"n_papers": args.papers, "n_topics": args.topics, "seed": args.seed}
    corpus = load_corpus("hepth", args.src) if args.corpus == "hepth" else load_corpus("synthetic", **synthetic)
    n = export_corpus(corpus, args.format, args.out)
    print(f"wrote {n:,} {args.format} records of the {corpus.name} corpus to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
