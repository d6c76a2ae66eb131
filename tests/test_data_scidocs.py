"""SCIDOCS layout: write a small directory with the original paths and read it back; malformed files."""

from __future__ import annotations

import pytest

from specter_utils.data.scidocs import (
    RecommClick,
    ScidocsData,
    available_tasks,
    read_classification_csv,
    read_qrel,
    read_recomm_csv,
    read_scidocs_dir,
    scidocs_record,
    task_paths,
    write_scidocs_dir,
)
from specter_utils.errors import DataError


def _tiny(root) -> ScidocsData:
    records = {pid: scidocs_record(pid, f"Title {pid}", year=2019) for pid in "abcdef"}
    return ScidocsData(
        root=root,
        metadata={"mag_mesh": records, "view_cite_read": records, "recomm": records},
        classification={"mag": {"train": [("a", "0"), ("b", "1")], "val": [("c", "0")], "test": [("d", "1")]}},
        ranking={"cite": {"val": {"a": {"b": 1, "c": 0}}, "test": {"d": {"e": 1, "f": 0}}}},
        recomm={"train": [RecommClick("a", "b", ["c", "b"])], "test": [RecommClick("d", "e", ["e", "f"])]},
        propensity_scores=[1.0, 0.5],
    )


def test_round_trip_uses_the_original_paths(tmp_path):
    write_scidocs_dir(tmp_path, _tiny(tmp_path))
    for rel in ("paper_metadata_mag_mesh.json", "mag/train.csv", "cite/test.qrel", "recomm/propensity_scores.json"):
        assert (tmp_path / rel).exists(), rel
    assert (tmp_path / "cite/test.qrel").read_text() == "d 0 e 1\nd 0 f 0\n"
    assert (tmp_path / "mag/train.csv").read_text().splitlines()[0] == "pid,class_label"
    assert available_tasks(tmp_path) == ["mag", "cite", "recomm"]
    data = read_scidocs_dir(tmp_path)
    assert data.ranking["cite"]["test"] == {"d": {"e": 1, "f": 0}}
    assert data.classification["mag"]["train"] == [("a", "0"), ("b", "1")]
    assert data.recomm["test"][0].clicked_position == 1
    assert data.propensity_scores == [1.0, 0.5]
    assert set(data.metadata) == {"mag_mesh", "view_cite_read", "recomm"}


def test_layout_lists_every_original_file(tmp_path):
    paths = task_paths(tmp_path)
    rel = {str(p.relative_to(tmp_path)) for p in paths.values()}
    matched = {f"{task}-matched/{split}.qrel" for task in ("cite", "cocite") for split in ("val", "test")}
    assert matched <= rel  # the project's popularity-matched versions of cite and co-cite, beside the original's
    assert len(rel - matched) == 3 + 6 + 8 + 4  # the original's 3 metadata files, 6 csv, 8 qrel, 4 recomm files
    assert {"paper_metadata_view_cite_read.json", "coview/val.qrel", "mesh/test.csv", "recomm/val.csv"} <= rel


def test_qrel_with_wrong_field_count_names_line(tmp_path):
    path = tmp_path / "test.qrel"
    path.write_text("q 0 a 1\nq 0 b\n")
    with pytest.raises(DataError, match=r"test.qrel:2"):
        read_qrel(path)


def test_qrel_duplicate_candidate_names_query(tmp_path):
    path = tmp_path / "test.qrel"
    path.write_text("q 0 a 1\nq 0 a 0\n")
    with pytest.raises(DataError, match=r"test.qrel:2.*'q'.*duplicate"):
        read_qrel(path)


def test_classification_csv_missing_column_and_duplicates(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("pid,label\na,1\n")
    with pytest.raises(DataError, match=r"train.csv:1.*pid,class_label"):
        read_classification_csv(path)
    path.write_text("pid,class_label\na,1\nb,2\na,3\n")
    with pytest.raises(DataError, match=r"train.csv:4.*'a'.*duplicate"):
        read_classification_csv(path)


def test_recomm_click_not_shown_is_an_error(tmp_path):
    path = tmp_path / "test.csv"
    path.write_text('pid,clicked_pid,similar_papers_avail_at_time\nq,z,"a,b"\n')
    with pytest.raises(DataError, match=r"test.csv:2.*'q'"):
        read_recomm_csv(path)


def test_missing_requested_task_is_an_error(tmp_path):
    write_scidocs_dir(tmp_path, _tiny(tmp_path))
    with pytest.raises(DataError, match="cocite"):
        read_scidocs_dir(tmp_path, tasks=["cocite"])
