"""Write, and read the held-out ids of, a folder of tasks in SciRepEval's formats (its local-path mode).

```
DIR/tasks.jsonl                one SciRepEval task config a line, paths relative to DIR
DIR/<task>/meta.jsonl          classification, regression: {"doc_id", "title", "abstract"} a paper;
                               proximity, adhoc_search: {"doc_id", "query", "candidates"} a query
DIR/<task>/test/train.csv      classification, regression: paper_id,label (multi-label: labels joined by "|")
DIR/<task>/test/test.csv
DIR/<task>/test/test_qrel.jsonl  proximity, adhoc_search: {"query_id", "cand_id", "score"} a judged pair
```
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.io import write_jsonl
from specter_utils.layout import SCIREPEVAL_DIR, SCIREPEVAL_TASKS_FILE

META_FILE, TEST_DIR, TRAIN_CSV, TEST_CSV, QREL_FILE = "meta.jsonl", "test", "train.csv", "test.csv", "test_qrel.jsonl"
LABELLED_TYPES = ("classification", "regression")
KNOWN_ITEM_SCORE = 2  # adhoc_search: the paper a query was made from (its neighbours score 1)
LABEL_SEPARATOR = "|"


@dataclass
class FormatTask:
    """One task in SciRepEval's format, ready to write; ``held_out``: paper ids kept out of the training dir."""

    name: str
    type: str
    metrics: list[str]
    description: str
    meta: list[dict[str, Any]]
    rows: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)  # train/test: (paper id, label)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)  # query id -> candidate id -> score
    held_out: set[str] = field(default_factory=set)
    summary: dict[str, Any] = field(default_factory=dict)
    multi_label: bool = False

    def config(self) -> dict[str, Any]:
        """Its line of tasks.jsonl."""
        line: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "data": {"meta": f"{self.name}/{META_FILE}", "test": f"{self.name}/{TEST_DIR}"},
            "metrics": self.metrics,
        }
        if self.multi_label:
            line["multi_label"] = True
        line["description"] = self.description
        return line


def _label_text(label: Any) -> str:
    if isinstance(label, (list, tuple)):
        return LABEL_SEPARATOR.join(label)
    return f"{label:.6f}" if isinstance(label, float) else str(label)


def write_format_dir(root: str | Path, tasks: list[FormatTask]) -> None:
    """Replace ``root`` with the given tasks' files (no folder at all without a task)."""
    root = Path(root)
    shutil.rmtree(root, ignore_errors=True)
    if not tasks:
        return
    root.mkdir(parents=True)
    for task in tasks:
        folder = root / task.name
        (folder / TEST_DIR).mkdir(parents=True)
        write_jsonl(folder / META_FILE, task.meta)
        if task.type in LABELLED_TYPES:
            for split, name in (("train", TRAIN_CSV), ("test", TEST_CSV)):
                with (folder / TEST_DIR / name).open("w", encoding="utf-8", newline="") as out:
                    writer = csv.writer(out)
                    writer.writerow(["paper_id", "label"])
                    writer.writerows((pid, _label_text(label)) for pid, label in task.rows[split])
        else:
            pairs = [
                {"query_id": q, "cand_id": c, "score": score}
                for q, docs in task.qrels.items()
                for c, score in docs.items()
            ]
            write_jsonl(folder / TEST_DIR / QREL_FILE, pairs)
    write_jsonl(root / SCIREPEVAL_TASKS_FILE, [task.config() for task in tasks])


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _csv_ids(path: Path) -> set[str]:
    with path.open(encoding="utf-8", newline="") as rows:
        return {row["paper_id"] for row in csv.DictReader(rows)}


def format_dir_of(benchmark_dir: str | Path) -> Path | None:
    """The SciRepEval-format folder beside a benchmark's ``scidocs/`` (given the benchmark or its scidocs dir)."""
    root = Path(benchmark_dir)
    for top in (root, root.parent):
        if (top / SCIREPEVAL_DIR / SCIREPEVAL_TASKS_FILE).is_file():
            return top / SCIREPEVAL_DIR
    return None


def format_task_ids(benchmark_dir: str | Path) -> dict[str, dict[str, set[str]]]:
    """Per task of the benchmark's SciRepEval-format folder: ``held_out`` (papers no training triplet may hold:
    proximity queries, adhoc_search known items, regression test papers), ``candidates`` and ``papers``
    (classification papers and regression training papers, allowed in training); empty without the folder."""
    root = format_dir_of(benchmark_dir)
    if root is None:
        return {}
    out: dict[str, dict[str, set[str]]] = {}
    for config in _read_jsonl(root / SCIREPEVAL_TASKS_FILE):
        test = root / config["data"]["test"]
        if config["type"] in LABELLED_TYPES:
            train, tested = _csv_ids(test / TRAIN_CSV), _csv_ids(test / TEST_CSV)
            if config["type"] == "regression":  # a label read off the citation graph training learns from
                out[config["name"]] = {"held_out": tested, "papers": train}
            else:
                out[config["name"]] = {"papers": train | tested}
            continue
        pairs = _read_jsonl(test / QREL_FILE)
        candidates = {p["cand_id"] for p in pairs}
        if config["type"] == "proximity":
            held = {p["query_id"] for p in pairs}
        else:
            held = {p["cand_id"] for p in pairs if p["score"] >= KNOWN_ITEM_SCORE}
        out[config["name"]] = {"held_out": held, "candidates": candidates - held}
    return out
