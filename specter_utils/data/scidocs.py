"""The SCIDOCS evaluation layout, read and written with exactly the original paths.

```
paper_metadata_mag_mesh.json  paper_metadata_view_cite_read.json  paper_metadata_recomm.json
mag/{train,val,test}.csv      mesh/{train,val,test}.csv             (columns pid,class_label)
cite|cocite|coview|coread/{val,test}.qrel                            (query_id 0 paper_id relevance)
recomm/{train,val,test}.csv   recomm/propensity_scores.json          ({"scores": [...]})
```
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.data.records import check_id, read_paper_records
from specter_utils.errors import DataError
from specter_utils.io import atomic_write, read_json, read_text, write_json
from specter_utils.tasks import CLASSIFICATION, RANKING, TASKS, tasks_of

CLASSIFICATION_TASKS = tasks_of(CLASSIFICATION)
RANKING_TASKS = tasks_of(RANKING)
RECOMM_HEADER = ("pid", "clicked_pid", "similar_papers_avail_at_time")
METADATA_FILES = {
    "mag_mesh": "paper_metadata_mag_mesh.json",
    "view_cite_read": "paper_metadata_view_cite_read.json",
    "recomm": "paper_metadata_recomm.json",
}
# Which metadata file describes the papers of each task.
TASK_METADATA = {task.name: task.metadata for task in TASKS}


@dataclass
class RecommClick:
    """One recommendation impression: the query, the clicked paper, the papers shown (in order)."""

    query_id: str
    clicked_id: str
    shown_ids: list[str]

    @property
    def clicked_position(self) -> int:
        """1-based position of the clicked paper among those shown."""
        return self.shown_ids.index(self.clicked_id) + 1


@dataclass
class ScidocsData:
    """Whatever parts of a SCIDOCS directory exist, parsed."""

    root: Path
    metadata: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # group -> id -> record
    classification: dict[str, dict[str, list[tuple[str, str]]]] = field(default_factory=dict)  # task -> split -> rows
    ranking: dict[str, dict[str, dict[str, dict[str, int]]]] = field(default_factory=dict)  # task -> split -> qrels
    recomm: dict[str, list[RecommClick]] = field(default_factory=dict)  # split -> clicks
    propensity_scores: list[float] | None = None


# ---------------------------------------------------------------- qrels
def read_qrel(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a ``.qrel`` file into ``{query_id: {paper_id: relevance}}``."""
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    for line_number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise DataError(f"expected 'query_id 0 paper_id relevance', got {len(parts)} fields", path, line_number)
        query_id, _, paper_id, relevance = parts
        try:
            rel = int(relevance)
        except ValueError:
            raise DataError(f"relevance {relevance!r} is not an integer", path, line_number, query_id) from None
        if paper_id == query_id:
            raise DataError(
                "the query is its own candidate (distance 0 would inflate MAP)", path, line_number, query_id
            )
        docs = qrels.setdefault(query_id, {})
        if paper_id in docs:
            raise DataError(f"duplicate candidate {paper_id!r} for this query", path, line_number, query_id)
        docs[paper_id] = rel
    if not qrels:
        raise DataError("empty qrel file", path)
    return qrels


def write_qrel(path: str | Path, qrels: dict[str, dict[str, int]]) -> None:
    with atomic_write(path) as handle:
        for query_id, docs in qrels.items():
            for paper_id, rel in docs.items():
                handle.write(f"{query_id} 0 {paper_id} {int(rel)}\n")


# ---------------------------------------------------------------- classification csv
def read_classification_csv(path: str | Path) -> list[tuple[str, str]]:
    """Read ``pid,class_label`` rows; a missing column or duplicate pid is an error."""
    path = Path(path)
    reader = csv.DictReader(io.StringIO(read_text(path)))
    if reader.fieldnames is None or not {"pid", "class_label"} <= set(reader.fieldnames):
        raise DataError(f"expected header 'pid,class_label', got {reader.fieldnames}", path, 1)
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for line_number, row in enumerate(reader, start=2):
        pid, label = (row.get("pid") or "").strip(), (row.get("class_label") or "").strip()
        if not pid or not label:
            raise DataError("empty pid or class_label", path, line_number, pid or None)
        check_id(pid, path, line_number, "pid")
        if pid in seen:
            raise DataError("duplicate pid", path, line_number, pid)
        seen.add(pid)
        rows.append((pid, label))
    if not rows:
        raise DataError("no rows", path)
    return rows


def _write_csv(path: str | Path, header: list[str], rows: Any) -> None:
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


# ---------------------------------------------------------------- recommendation
def read_recomm_csv(path: str | Path) -> list[RecommClick]:
    """Read ``recomm/{split}.csv`` (header, then ``query,clicked,"shown1,shown2,..."``)."""
    path = Path(path)
    rows = list(csv.reader(io.StringIO(read_text(path))))
    if not rows or [cell.strip() for cell in rows[0]] != list(RECOMM_HEADER):
        raise DataError(
            f"expected the header '{','.join(RECOMM_HEADER)}', got {rows[0] if rows else 'an empty file'} (without "
            "it, the first click would be read as the header and dropped)",
            path,
            1,
        )
    clicks: list[RecommClick] = []
    for line_number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 3:
            raise DataError(f"expected 3 columns, got {len(row)}", path, line_number)
        query_id, clicked_id, shown = (cell.strip() for cell in row)
        check_id(query_id, path, line_number, "pid")
        check_id(clicked_id, path, line_number, "clicked_pid")
        shown_ids = [s.strip() for s in shown.split(",") if s.strip()]
        if clicked_id not in shown_ids:
            raise DataError(f"clicked paper {clicked_id!r} is not among the papers shown", path, line_number, query_id)
        clicks.append(RecommClick(query_id, clicked_id, shown_ids))
    return clicks


# ---------------------------------------------------------------- metadata
read_scidocs_metadata = read_paper_records  # a ``paper_metadata_*.json`` file as stored: the one rule


def scidocs_record(
    paper_id: str,
    title: str,
    abstract: str = "",
    authors: list[str] | None = None,
    cited_by: list[str] | None = None,
    references: list[str] | None = None,
    year: int | None = None,
) -> dict[str, Any]:
    """A metadata record with exactly the SCIDOCS fields."""
    return {
        "paper_id": paper_id,
        "title": title,
        "abstract": abstract,
        "authors": authors or [],
        "cited_by": cited_by or [],
        "references": references or [],
        "year": year,
    }


# ---------------------------------------------------------------- whole directory
def task_paths(root: str | Path) -> dict[str, Path]:
    """Every file of the layout, keyed like ``cite/test`` or ``metadata/mag_mesh``."""
    root = Path(root)
    paths = {f"metadata/{group}": root / name for group, name in METADATA_FILES.items()}
    for task in TASKS:
        paths.update({f"{task.name}/{split}": root / task.name / f"{split}{task.suffix}" for split in task.splits})
    paths["recomm/propensity"] = root / "recomm" / "propensity_scores.json"
    return paths


def available_tasks(root: str | Path) -> list[str]:
    """Tasks whose files are all present (classification needs train+test, ranking test, recomm all)."""
    p = task_paths(root)
    tasks = [t for t in CLASSIFICATION_TASKS if p[f"{t}/train"].exists() and p[f"{t}/test"].exists()]
    tasks += [t for t in RANKING_TASKS if p[f"{t}/test"].exists()]
    if all(p[k].exists() for k in ("recomm/train", "recomm/test", "recomm/propensity")):
        tasks.append("recomm")
    return tasks


def _read_splits(root: str | Path, task: str, read: Any, splits: tuple[str, ...] = ("train", "val", "test")) -> dict:
    """``{split: read(file)}`` of a task's split files: val is optional, every other split must exist."""
    p = task_paths(root)
    return {split: read(p[f"{task}/{split}"]) for split in splits if p[f"{task}/{split}"].exists() or split != "val"}


def read_classification_splits(root: str | Path, task: str) -> dict[str, list[tuple[str, str]]]:
    """``{split: rows}`` of a classification task: train and test must exist, val is optional."""
    return _read_splits(root, task, read_classification_csv)


def read_scidocs_dir(root: str | Path, tasks: list[str] | None = None) -> ScidocsData:
    """Parse the given tasks (default: all present). A requested task with a missing file is an error."""
    root = Path(root)
    if not root.is_dir():
        raise DataError("SCIDOCS data directory not found", root)
    present = available_tasks(root)
    tasks = list(tasks) if tasks is not None else present
    if not tasks:
        raise DataError("no SCIDOCS task files found (expected e.g. cite/test.qrel, mag/train.csv)", root)
    p = task_paths(root)
    data = ScidocsData(root=root)
    for task in tasks:
        group = TASK_METADATA.get(task)
        if group is None:
            raise DataError(f"unknown task {task!r}; known: {', '.join(TASK_METADATA)}", root)
        if group not in data.metadata and p[f"metadata/{group}"].exists():
            data.metadata[group] = read_scidocs_metadata(p[f"metadata/{group}"])
        if task in CLASSIFICATION_TASKS:
            data.classification[task] = read_classification_splits(root, task)
        elif task in RANKING_TASKS:
            data.ranking[task] = _read_splits(root, task, read_qrel, ("val", "test"))
        else:
            data.recomm = _read_splits(root, "recomm", read_recomm_csv)
            scores = read_json(p["recomm/propensity"])
            if not isinstance(scores, dict) or not isinstance(scores.get("scores"), list):
                raise DataError('expected {"scores": [...]}', p["recomm/propensity"])
            data.propensity_scores = read_propensity_scores(scores["scores"], p["recomm/propensity"])
    return data


def read_propensity_scores(values: list[Any], path: Path) -> list[float]:
    """The propensity scores: finite positive numbers (a score divides a click's weight)."""
    scores = []
    for index, value in enumerate(values):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")
        if not ok:
            raise DataError(f"score {index} is {value!r}: expected a positive number", path)
        scores.append(float(value))
    return scores


def papers_needed(root: str | Path, split: str, tasks: list[str] | None = None) -> set[str]:
    """Ids whose embeddings the evaluation of ``split`` reads (default tasks: every task present): every row of a
    classification task (the heads early-stop on val), the ``split`` queries and candidates of a ranking task, and
    every paper of the recommendation metadata."""
    if split not in ("val", "test"):
        raise DataError(f"split must be 'test' or 'val', got {split!r}")
    root = Path(root)
    p = task_paths(root)
    ids: set[str] = set()
    for task in list(tasks) if tasks is not None else available_tasks(root):
        if task in CLASSIFICATION_TASKS:
            ids.update(pid for rows in read_classification_splits(root, task).values() for pid, _ in rows)
        elif task in RANKING_TASKS:
            for query, docs in read_qrel(p[f"{task}/{split}"]).items():
                ids.add(query)
                ids.update(docs)
        elif task == "recomm":
            ids.update(read_scidocs_metadata(p["metadata/recomm"]))
        else:
            raise DataError(f"unknown task {task!r}; known: {', '.join(TASK_METADATA)}", root)
    return ids


def write_scidocs_dir(root: str | Path, data: ScidocsData) -> None:
    """Write every part present in ``data`` with the original file names."""
    root = Path(root)
    p = task_paths(root)
    for group, records in data.metadata.items():
        write_json(p[f"metadata/{group}"], records, indent=None)
    for task, splits in data.classification.items():
        for split, rows in splits.items():
            _write_csv(p[f"{task}/{split}"], ["pid", "class_label"], rows)
    for task, splits in data.ranking.items():
        for split, qrels in splits.items():
            write_qrel(p[f"{task}/{split}"], qrels)
    for split, clicks in data.recomm.items():
        rows = [[click.query_id, click.clicked_id, ",".join(click.shown_ids)] for click in clicks]
        _write_csv(p[f"recomm/{split}"], list(RECOMM_HEADER), rows)
    if data.propensity_scores is not None:
        write_json(p["recomm/propensity"], {"scores": data.propensity_scores})
