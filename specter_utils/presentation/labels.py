"""What a benchmark's classification task is named for: the source of its labels.

The SCIDOCS layout has one classification slot, ``mag/``. On the real SCIDOCS it holds the paper's MAG fields of
study, and its macro-F1 stands beside the paper's MAG values. A benchmark built from a citation corpus fills the
same slot with that corpus's own labels (hep-th: 22 journals; CiteSeer: 6 topics; arXiv: categories), recorded
in its ``benchmark.json`` (``counts.mag.labels.field``, else ``corpus_info.label_field``). Such a task is named
for what its labels are (``journal F1``) and kept out of the average that is compared with the paper's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specter_utils.io import read_json
from specter_utils.layout import BENCHMARK_FILE
from specter_utils.tasks import BY_NAME

SCIDOCS_SOURCE = "mag"  # the label source of the real SCIDOCS: the paper's MAG fields (and MeSH in its own slot)
PAPER_SOURCES = ("mag", "mesh")
CLASSIFICATION_HEADER = BY_NAME["mag"].headers[0]  # "MAG F1": the header of the slot's column in Table 1
# a benchmark's label field (and for ``venue``, its corpus) -> what the labels are, as a table names the task
NAMES = {"venue": "venue", "topic": "topic", "fields_of_study": "field of study", "labels": "label"}
VENUE_NAMES = {"hepth": "journal", "synthetic": "topic"}  # Paper.venue is the journal on hep-th


def label_source(benchmark: Mapping[str, Any] | None) -> str:
    """The field a benchmark's classification labels come from (``benchmark.json`` or notebook 01's metrics, which
    hold the same keys); ``mag`` without a record (the real SCIDOCS)."""
    if not benchmark:
        return SCIDOCS_SOURCE
    labels = ((benchmark.get("counts") or benchmark.get("benchmark") or {}).get("mag") or {}).get("labels") or {}
    corpus = benchmark.get("corpus_info") or benchmark.get("corpus") or {}
    field = labels.get("field") or (corpus.get("label_field") if isinstance(corpus, Mapping) else None)
    return str(field) if field else SCIDOCS_SOURCE


def corpus_name(benchmark: Mapping[str, Any] | None) -> str:
    """The corpus a benchmark was built from (``hepth``, ...; for the generic tables reader the folder it read,
    ``arxiv2023``), ``""`` without a record."""
    benchmark = benchmark or {}
    corpus = benchmark.get("corpus_info") or benchmark.get("corpus")
    if not isinstance(corpus, Mapping):
        return str(corpus or "")
    source = (corpus.get("info") or {}).get("source")
    return Path(str(source)).name if corpus.get("name") == "tables" and source else str(corpus.get("name", ""))


def benchmark_record(scidocs_dir: str | Path | None) -> dict[str, Any] | None:
    """``benchmark.json`` beside a SCIDOCS-layout folder built by ``build-benchmark``; None for the real SCIDOCS."""
    if not scidocs_dir:
        return None
    path = Path(scidocs_dir).parent / BENCHMARK_FILE
    return read_json(path) if path.is_file() else None


def task_name(source: str, corpus: str = "") -> str:
    """How a table names the classification task: ``MAG`` for the paper's labels, else what the labels are."""
    if source in PAPER_SOURCES:
        return BY_NAME[source].label
    if source == "venue":
        return VENUE_NAMES.get(corpus, NAMES["venue"])
    if source == "label" and "arxiv" in corpus.lower():
        return "category"
    return NAMES.get(source, source.replace("_", " "))


def paper_comparable(source: str) -> bool:
    """Whether the classification score may stand beside the paper's MAG/MeSH values and count in their average."""
    return source in PAPER_SOURCES


def classification_header(benchmark: Mapping[str, Any] | None) -> str:
    """Table 1's header of the ``mag`` slot for a benchmark: ``MAG F1`` on the real SCIDOCS, ``journal F1`` on
    hep-th, ``topic F1`` on CiteSeer."""
    source = label_source(benchmark)
    if paper_comparable(source):
        return CLASSIFICATION_HEADER
    return f"{task_name(source, corpus_name(benchmark))} F1"


def result_header(result: Mapping[str, Any]) -> str:
    """The ``mag`` slot's header for one evaluation result, from the benchmark its ``config.data_dir`` names."""
    return classification_header(benchmark_record((result.get("config") or {}).get("data_dir")))


def classification_columns(row: Mapping[str, float], result: Mapping[str, Any]) -> dict[str, float]:
    """A Table 1 row (``{header: value}``) with the ``mag`` slot's column named for its labels, and beside each
    classification column the macro-F1 at the ``C`` the same CV chooses by macro-F1 (``details.<task>.by_macro_f1``,
    ``evaluation.classification``). Neither added column is one of the paper's, so an average over the paper's
    columns leaves them out."""
    header = result_header(result)
    out: dict[str, float] = {}
    for key, value in row.items():
        named = header if key == CLASSIFICATION_HEADER else key
        out[named] = value
        task = next((t for t in PAPER_SOURCES if BY_NAME[t].headers[0] == key), None)
        by_f1 = (((result.get("details") or {}).get(task) or {}).get("by_macro_f1") or {}) if task else {}
        if by_f1.get("f1") is not None:
            out[f"{named} (C by CV macro-F1)"] = float(by_f1["f1"])
    return out


def readme_label(header: str, label: str, prepared: Mapping[str, Any] | None, scidocs_dir: str = "") -> str:
    """The README's Table 1 label of a column: the ``mag`` slot's named for its labels (from notebook 01's metrics)
    unless the report was scored on the real SCIDOCS (``evaluation.scidocs_dir``)."""
    if header != CLASSIFICATION_HEADER or scidocs_dir or not prepared:
        return label
    source = label_source(prepared)
    if paper_comparable(source):
        return label
    return f"{task_name(source, corpus_name(prepared))} macro-F1 (`mag` slot)"


def benchmark_name(result: Mapping[str, Any]) -> str:
    """The benchmark an evaluation result was scored on, as a chart title names it: the corpus its ``benchmark.json``
    names (``hepth``), ``SCIDOCS`` without one, ``""`` when the result does not say where it was scored."""
    data_dir = (result.get("config") or {}).get("data_dir")
    record = benchmark_record(data_dir)
    if record is None:
        return "SCIDOCS" if data_dir else ""
    name = corpus_name(record) or "unknown corpus"
    return f"{name} (SYNTHETIC data)" if record.get("synthetic") else name
