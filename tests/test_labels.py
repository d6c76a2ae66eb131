"""The classification task named for its labels, and kept out of the paper-comparable average unless it is MAG."""

from __future__ import annotations

import json
import math

import pytest

from specter_utils.layout import BENCHMARK_FILE
from specter_utils.presentation import labels
from specter_utils.presentation.tables import comparison_table


def built_benchmark(tmp_path, corpus: str, field: str, source: str = "") -> str:
    scidocs = tmp_path / "benchmark" / "scidocs"
    scidocs.mkdir(parents=True)
    info = {
        "corpus": corpus,
        "corpus_info": {"name": corpus, "label_field": field, "info": {"source": source}},
        "counts": {"mag": {"labels": {"field": field}}},
    }
    (scidocs.parent / BENCHMARK_FILE).write_text(json.dumps(info))
    return str(scidocs)


def result(data_dir: str, f1: float = 60.0) -> dict:
    return {
        "mag": {"f1": f1},
        "cite": {"map": 80.0, "ndcg": 90.0},
        "details": {"mag": {"C": 0.01, "by_macro_f1": {"C": 10.0, "f1": 70.0, "classes_predicted": 21}}},
        "config": {"data_dir": data_dir},
    }


@pytest.mark.parametrize(
    ("corpus", "field", "source", "name"),
    [
        ("hepth", "venue", "", "journal"),
        ("synthetic", "venue", "", "topic"),
        ("citeseer", "topic", "", "topic"),
        ("tables", "label", "/data/arxiv2023", "category"),
        ("s2orc", "fields_of_study", "", "field of study"),
    ],
)
def test_a_built_benchmark_names_the_task_for_its_labels(tmp_path, corpus, field, source, name):
    record = labels.benchmark_record(built_benchmark(tmp_path, corpus, field, source))
    assert labels.classification_header(record) == f"{name} F1"
    assert not labels.paper_comparable(labels.label_source(record))


def test_venue_labels_stay_out_of_the_paper_comparable_average(tmp_path):
    frame = comparison_table(result(built_benchmark(tmp_path, "hepth", "venue")), paper_rows=["SPECTER"])
    ours = frame.loc["ours"]
    assert ours["journal F1"] == 60.0 and math.isnan(ours["MAG F1"])
    assert ours["journal F1 (C by CV macro-F1)"] == 70.0
    assert ours["avg"] == 85.0  # cite MAP and nDCG only
    paper = frame.loc["SPECTER (paper)"]
    assert paper["MAG F1"] == 82.6 and math.isnan(paper["journal F1"])
    assert paper["avg"] == round((88.4 + 94.9) / 2, 2)


def test_real_scidocs_counts_mag_in_the_average(tmp_path):
    scidocs = tmp_path / "scidocs"  # the real SCIDOCS: no benchmark.json beside it
    scidocs.mkdir()
    frame = comparison_table(result(str(scidocs)), paper_rows=["SPECTER"])
    assert "journal F1" not in frame.columns
    assert frame.loc["ours", "MAG F1"] == 60.0 and frame.loc["ours", "MAG F1 (C by CV macro-F1)"] == 70.0
    assert frame.loc["ours", "avg"] == round((60.0 + 80.0 + 90.0) / 3, 2)


def test_the_readme_label_of_the_mag_slot():
    prepared = {
        "corpus": {"name": "hepth", "label_field": "venue"},
        "benchmark": {"mag": {"labels": {"field": "venue"}}},
    }
    header = labels.CLASSIFICATION_HEADER
    assert labels.readme_label(header, "CLS macro-F1 (`mag`)", prepared) == "journal macro-F1 (`mag` slot)"
    assert labels.readme_label(header, "CLS macro-F1 (`mag`)", prepared, "/data/scidocs") == "CLS macro-F1 (`mag`)"
    assert labels.readme_label("cite MAP", "cite MAP", prepared) == "cite MAP"
