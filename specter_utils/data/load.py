"""One entry point to get a Corpus by kind: ``hepth``, ``citeseer``, ``tables``, ``s2orc``, ``openalex``, ``jsonl``
or ``synthetic``.

The kind can be detected from the source (:func:`detect_corpus_kind`) when that is unambiguous, and the
class labels come from a ``label_field`` (``venue``, ``fields_of_study``, ``labels`` or any field of the
records; each kind has a default, ``DEFAULT_LABEL_FIELD``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.data.citeseer import CITES_FILE, TEXTS_FILE, bundled_dir, is_citeseer_dir, read_citeseer
from specter_utils.data.corpus import Corpus
from specter_utils.data.generic import is_record_file, peek_record, read_generic
from specter_utils.data.hepth import ABSTRACTS_FILE, EDGES_FILE, read_hepth
from specter_utils.data.openalex import read_openalex
from specter_utils.data.s2orc import read_s2orc
from specter_utils.data.synthetic import generate_synthetic_corpus
from specter_utils.data.tables import MANIFEST, is_tables_source, read_tables
from specter_utils.errors import DataError
from specter_utils.paths import hepth_dir, shared_data_dir
from specter_utils.vocabularies import CORPUS_KINDS

# The labels each kind classifies by default: hep-th has its journal, the synthetic corpus its topic (both in
# Paper.venue); S2ORC and OpenAlex have fields of study (SCIDOCS's MAG task); the generic format its ``labels``;
# CiteSeer its topic; a tables corpus its ``label`` column (or labels file).
DEFAULT_LABEL_FIELD = {
    "hepth": "venue",
    "citeseer": "topic",
    "tables": "label",
    "synthetic": "venue",
    "s2orc": "fields_of_study",
    "openalex": "fields_of_study",
    "jsonl": "labels",
}
# The fields that say which format a record file is in (its first record is looked at).
_SIGNATURES = {
    "openalex": ("abstract_inverted_index", "referenced_works", "authorships"),
    "s2orc": ("outbound_citations", "inbound_citations", "mag_field_of_study"),
}


def detect_corpus_kind(src: str | Path) -> str:
    """The corpus kind of ``src``: a hep-th, CiteSeer or tables folder (or a tables manifest), or a record file
    told apart by its first record's fields; a DataError says why when the kind cannot be told."""
    path = Path(src)
    if not path.exists():
        raise DataError("corpus source not found", path)
    if path.is_dir():
        kinds = [kind for kind in ("hepth", "citeseer", "tables") if source_fits(kind, path)]
        if len(kinds) == 1:
            return kinds[0]
        if kinds:
            raise DataError(f"cannot tell the corpus kind: it looks like {' and '.join(kinds)}; pass --corpus", path)
        raise DataError(
            f"cannot tell the corpus kind of this folder: a hep-th folder holds {EDGES_FILE} and {ABSTRACTS_FILE}, "
            f"a CiteSeer folder {TEXTS_FILE} and {CITES_FILE}, a tables folder an edges table with a papers table "
            f"or a titles file (or a {MANIFEST}); other corpora are one .jsonl, .jsonl.gz or .parquet file",
            path,
        )
    if path.suffix == ".json" and is_tables_source(path):
        return "tables"
    if not is_record_file(path):
        raise DataError(
            "cannot tell the corpus kind: expected a .jsonl, .jsonl.gz or .parquet file, or a hep-th folder", path
        )
    first = peek_record(path)
    matches = [kind for kind, fields in _SIGNATURES.items() if any(f in first for f in fields)]
    if "id" in first and str(first["id"]).startswith("https://openalex.org/") and "openalex" not in matches:
        matches.append("openalex")
    if {"paper_id", "references"} <= set(first):
        matches.append("jsonl")
    if len(matches) == 1:
        return matches[0]
    found = f"it looks like {' and '.join(matches)}" if matches else "no known fields in its first record"
    raise DataError(f"cannot tell the corpus kind ({found}); pass it with --corpus {{s2orc,openalex,jsonl}}", path, 1)


def source_fits(kind: str, src: str | Path) -> bool:
    """Whether ``src`` has the shape corpus ``kind`` reads (a folder with its files, a manifest or a record file),
    without reading it: what lets a preset's kind stand for a source whose kind cannot be detected."""
    path = Path(src)
    if kind == "hepth":
        return (path / EDGES_FILE).exists() and (path / ABSTRACTS_FILE).exists()
    if kind == "citeseer":
        return path.is_dir() and is_citeseer_dir(path)
    if kind == "tables":
        return is_tables_source(path)
    return kind in ("s2orc", "openalex", "jsonl") and path.is_file() and is_record_file(path)


def check_corpus_options(kind: str, src: Any = None, label_field: str | None = None) -> None:
    """A ValueError for an option that does not apply to ``kind`` (e.g. a source for the generated corpus)."""
    if kind not in CORPUS_KINDS:
        raise ValueError(f"unknown corpus kind {kind!r}; expected one of {', '.join(CORPUS_KINDS)}")
    if kind == "synthetic" and src is not None:
        raise ValueError(
            "--src does not apply to --corpus synthetic: the synthetic corpus is generated, it reads no file"
        )
    if kind in ("hepth", "synthetic") and label_field not in (None, "venue"):
        what = "the normalised journal" if kind == "hepth" else "the topic"
        raise ValueError(
            f"--label-field {label_field} does not apply to --corpus {kind}: its only labels are "
            f"{what} (--label-field venue)"
        )
    if kind == "citeseer" and label_field not in (None, "topic"):
        raise ValueError(
            f"--label-field {label_field} does not apply to --corpus citeseer: its only labels are its 6 topics "
            "(--label-field topic)"
        )


def _default_src(kind: str) -> Path:
    if kind == "citeseer":
        return bundled_dir()  # the copy shipped inside the package
    if kind == "hepth":
        src = hepth_dir()
        if src is None:
            raise DataError(
                "no hep-th data: pass its folder (with cit-HepTh.txt and cit-HepTh-abstracts.tar.gz), set "
                "SPECTER_SHARED_DATA to a folder containing hepth/, or fetch it with "
                "'specter-utils data download hepth --out DIR'"
            )
        return src
    if kind != "s2orc":
        raise DataError(f"--corpus {kind} needs a source file (--src FILE): .jsonl, .jsonl.gz or .parquet")
    root = shared_data_dir()
    sample = root / "s2orc" / "sample.jsonl" if root is not None else None
    if sample is None or not sample.exists():
        raise DataError("no S2ORC file given and no shared sample at ../shared/data/s2orc/sample.jsonl")
    return sample


def _reader_options(kw: dict[str, Any], kind: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """The reader options of ``kw`` (those set), a TypeError for one the reader does not take."""
    options = {key: value for key, value in kw.items() if value is not None}
    options.pop("dangling", None)  # data stats asks every reader to keep dangling citations: these two count them
    extra = set(options) - set(allowed)
    if extra:
        raise TypeError(f"the {kind} reader takes no option(s) {sorted(extra)}")
    return options


def load_corpus(kind: str | None, src: str | Path | None = None, label_field: str | None = None, **kw: Any) -> Corpus:
    """Read (or, for ``synthetic``, generate) a corpus of ``kind`` (None or ``auto``: detected from ``src``).

    ``src`` defaults to the shared real data (``../shared/data/hepth``, ``../shared/data/s2orc/sample.jsonl``), for
    ``citeseer`` to the bundled copy; ``label_field`` to the kind's ``DEFAULT_LABEL_FIELD``; ``kw`` go to the reader
    or to ``generate_synthetic_corpus``.
    """
    if kind in (None, "", "auto"):
        if src is None:
            raise DataError("no corpus kind and no source to detect it from: pass --corpus or --src")
        kind = detect_corpus_kind(src)
    check_corpus_options(kind, src, label_field)
    if kind == "synthetic":
        return generate_synthetic_corpus(**kw)
    path = Path(src) if src is not None else _default_src(kind)
    if not path.exists():
        raise DataError(f"{kind} source not found", path)
    label_field = label_field or DEFAULT_LABEL_FIELD[kind]
    if kind == "hepth":
        if kw:
            raise TypeError(f"read_hepth takes no options, got {sorted(kw)}")
        corpus = read_hepth(path)
    elif kind == "citeseer":
        corpus = read_citeseer(path, **_reader_options(kw, "citeseer", ("unknown",)))
    elif kind == "tables":
        corpus = read_tables(path, label_field, **_reader_options(kw, "tables", ("unknown", "edges_by", "edge_order")))
    elif kind == "s2orc":
        corpus = read_s2orc(path, label_field=label_field, **kw)
    elif kind == "openalex":
        corpus = read_openalex(path, label_field=label_field, **kw)
    else:
        corpus = read_generic(path, label_field=label_field, **kw)
    corpus.info.setdefault("source", str(path.resolve()))
    return corpus
