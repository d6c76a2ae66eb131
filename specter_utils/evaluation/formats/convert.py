"""Labelled papers (SciRepEval's ``fos_small.json`` read by :func:`data.scirepeval.read_fos`, ``mesh_small.json``
by ``read_mesh``) as one classification task of the SciRepEval-format folder: ``<task>/meta.jsonl``,
``<task>/test/train.csv`` and ``test.csv``, split with a seed, and the task's config line for ``tasks.jsonl``."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path
from typing import Any

from sklearn.model_selection import train_test_split

from specter_utils.data.scirepeval import LabelledPapers
from specter_utils.errors import DataError
from specter_utils.evaluation.formats.tasks import CLASSIFICATION, LABEL_SEPARATOR, TEST_FILE, TRAIN_FILE
from specter_utils.io import atomic_write, write_jsonl
from specter_utils.layout import SCIREPEVAL_TASKS_FILE

META_FILE = "meta.jsonl"
TEST_DIR = "test"


def _write_csv(path: Path, rows: list[tuple[str, str]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["paper_id", "label"])
    writer.writerows(rows)
    with atomic_write(path) as handle:
        handle.write(buffer.getvalue())


def convert_labelled(
    labelled: LabelledPapers,
    root: str | Path,
    name: str,
    *,
    multi_label: bool,
    min_count: int = 5,
    test_fraction: float = 0.3,
    seed: int = 0,
    description: str = "",
) -> dict[str, Any]:
    """Write the task ``name`` under ``root`` and return its config line. Labels held by fewer than ``min_count``
    papers are dropped (and a paper left with none), so that 3-fold grid search sees each label; a single-label task
    is split stratified by label, a multi-label one at random; both with ``seed``."""
    root = Path(root)
    labels = labelled.labels()
    for pid, found in labels.items():
        bad = [label for label in found if LABEL_SEPARATOR in label]
        if bad:
            raise DataError(f"label {bad[0]!r} contains {LABEL_SEPARATOR!r}", record_id=pid)
        if not multi_label and len(found) != 1:
            raise DataError(f"{len(found)} labels on a single-label task", record_id=pid)
    counts = Counter(label for found in labels.values() for label in found)
    kept = {label for label, count in counts.items() if count >= min_count}
    labels = {pid: sorted(label for label in found if label in kept) for pid, found in labels.items()}
    ids = sorted(pid for pid, found in labels.items() if found)
    if len(kept) < 2 or len(ids) < 2 * min_count:
        raise DataError(f"fewer than two labels held by {min_count} papers each", labelled.report.source or None)
    strata = None if multi_label else [labels[pid][0] for pid in ids]
    train_ids, test_ids = train_test_split(ids, test_size=test_fraction, random_state=seed, stratify=strata)
    task_dir = root / name
    (task_dir / TEST_DIR).mkdir(parents=True, exist_ok=True)
    papers = labelled.papers
    rows = ({"doc_id": pid, "title": papers[pid].title, "abstract": papers[pid].abstract or ""} for pid in ids)
    write_jsonl(task_dir / META_FILE, rows)
    for file, split in ((TRAIN_FILE, train_ids), (TEST_FILE, test_ids)):
        _write_csv(task_dir / TEST_DIR / file, [(pid, LABEL_SEPARATOR.join(labels[pid])) for pid in sorted(split)])
    config: dict[str, Any] = {
        "name": name,
        "type": CLASSIFICATION,
        "data": {"meta": f"{name}/{META_FILE}", "test": f"{name}/{TEST_DIR}"},
        "metrics": ["f1_macro"],
    }
    if multi_label:
        config["multi_label"] = True
    if description:
        config["description"] = description
    return config


def write_tasks_file(root: str | Path, configs: list[dict[str, Any]]) -> Path:
    """``root/tasks.jsonl`` with one config a line, written atomically."""
    path = Path(root) / SCIREPEVAL_TASKS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, configs)
    return path
