"""Training data: triplets of paper ids joined with their texts from ``metadata.json``.

A triplet whose query, positive or negative has no usable metadata entry (absent, or dropped for
having no title) cannot be trained on; such triplets are counted and reported with example ids,
never dropped silently, and a file with none left is an error.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset

from specter_utils.data.records import Paper, ReadReport
from specter_utils.data.specter_format import read_metadata
from specter_utils.errors import DataError
from specter_utils.triplets.io import TRAIN_FILE, VAL_FILE, Triplet, iter_triplets

logger = logging.getLogger(__name__)

COLUMNS = ("anchor", "positive", "negative")  # the order TripletLoss reads them in


@dataclass
class TripletTexts:
    """The usable triplets of one file, as texts, with what was left out and why."""

    path: Path
    anchor: list[str]
    positive: list[str]
    negative: list[str]
    read: int  # triplets in the file
    without_metadata: int  # triplets dropped because a paper has no metadata entry
    capped: int  # usable triplets left out by the max_*_triplets cap
    kinds: dict[str, int] = field(default_factory=dict)  # hard / easy among those used
    report: ReadReport = field(default_factory=ReadReport)
    ids: list[tuple[str, str, str]] = field(default_factory=list)  # (query, positive, negative) of each row

    @property
    def used(self) -> int:
        return len(self.anchor)

    def to_dataset(self, row_offset: int | None = None):
        """A ``datasets.Dataset`` with columns anchor, positive, negative and, with ``row_offset``, ``label``:
        ``row_offset + row``, the row's index into the paper ids a loss such as ``mnrl-citation`` looks up."""
        columns = {"anchor": self.anchor, "positive": self.positive, "negative": self.negative}
        if row_offset is not None:
            columns["label"] = list(range(row_offset, row_offset + self.used))
        return Dataset.from_dict(columns)

    def counts(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "read": self.read,
            "used": self.used,
            "without_metadata": self.without_metadata,
            "capped": self.capped,
            "kinds": self.kinds,
            "missing_paper_ids": self.report.counts.get("paper_without_metadata", 0),
            "missing_examples": self.report.examples.get("paper_without_metadata", []),
        }


def triplet_texts(
    path: str | Path, metadata: dict[str, Paper], sep: str, limit: int = 0, seed: int = 0, drop_unknown: bool = False
) -> TripletTexts:
    """Read a triplet file and look up ``title + sep + abstract`` (``sep``: the tokenizer's) for each paper, keeping
    a seeded sample of at most ``limit`` usable triplets (0: all). A triplet naming a paper missing from
    ``metadata`` is an error naming the file, line and id; with ``drop_unknown`` it is counted and dropped."""
    path = Path(path)
    numbered = list(iter_triplets(path))
    triplets = [triplet for _, triplet in numbered]
    report = ReadReport(source=str(path))
    usable: list[Triplet] = []
    missing_ids: set[str] = set()
    for line, triplet in numbered:
        absent = [pid for pid in (triplet.query, triplet.pos, triplet.neg) if pid not in metadata]
        if absent and not drop_unknown:
            raise DataError(
                f"paper {absent[0]!r} is not in the metadata; pass --drop-unknown to drop such triplets",
                path,
                line,
                record_id=absent[0],
            )
        if absent:
            report.note("triplet_without_metadata", f"{triplet.query}/{triplet.pos}/{triplet.neg}")
            for pid in [pid for pid in dict.fromkeys(absent) if pid not in missing_ids]:
                report.note("paper_without_metadata", pid)
            missing_ids.update(absent)
            continue
        usable.append(triplet)
    dropped = len(triplets) - len(usable)
    if not usable:
        examples = ", ".join(report.examples.get("paper_without_metadata", [])) or "none"
        raise DataError(
            f"no usable triplets: {len(triplets)} read, all {dropped} have a paper missing from metadata.json "
            f"({len(missing_ids)} distinct ids, e.g. {examples})"
            if triplets
            else "no triplets in file",
            path,
        )
    if dropped:  # only with drop_unknown
        logger.warning(
            "%s: %d of %d triplets dropped: %d paper id(s) have no metadata (e.g. %s)",
            path,
            dropped,
            len(triplets),
            len(missing_ids),
            ", ".join(report.examples["paper_without_metadata"]),
        )
    capped = 0
    if limit and len(usable) > limit:
        capped = len(usable) - limit
        usable = random.Random(seed).sample(usable, limit)
    kinds = dict(Counter(triplet.kind for triplet in usable))
    return TripletTexts(
        path=path,
        anchor=[metadata[t.query].text(sep) for t in usable],
        positive=[metadata[t.pos].text(sep) for t in usable],
        negative=[metadata[t.neg].text(sep) for t in usable],
        read=len(triplets),
        without_metadata=dropped,
        capped=capped,
        kinds=kinds,
        report=report,
        ids=[(t.query, t.pos, t.neg) for t in usable],
    )


@dataclass
class TrainingData:
    """Train (and optionally validation) triplet texts for one run."""

    train: TripletTexts
    val: TripletTexts | None
    metadata_path: Path
    metadata_papers: int
    metadata_report: ReadReport

    def counts(self) -> dict[str, Any]:
        return {
            "metadata": str(self.metadata_path),
            "metadata_papers": self.metadata_papers,
            "train": self.train.counts(),
            "val": self.val.counts() if self.val else None,
        }


def load_training_data(
    triplets_dir: str | Path,
    metadata_path: str | Path,
    sep: str,
    max_train: int = 0,
    max_val: int = 0,
    seed: int = 0,
    drop_unknown: bool = False,
) -> TrainingData:
    """``triplets_dir/train.jsonl`` (required) and ``val.jsonl`` (optional) with texts from ``metadata_path``."""
    triplets_dir = Path(triplets_dir)
    if not triplets_dir.is_dir():
        raise DataError("triplets directory not found", triplets_dir)
    if not (triplets_dir / TRAIN_FILE).exists():
        raise DataError(f"no {TRAIN_FILE} in the triplets directory (run specter-utils mine first)", triplets_dir)
    metadata_report = ReadReport(source=str(metadata_path))
    metadata = read_metadata(metadata_path, metadata_report)
    train = triplet_texts(triplets_dir / TRAIN_FILE, metadata, sep, max_train, seed, drop_unknown)
    val = None
    if (triplets_dir / VAL_FILE).exists():
        val = triplet_texts(triplets_dir / VAL_FILE, metadata, sep, max_val, seed, drop_unknown)
    else:
        logger.warning("%s: no %s, so no validation loss will be logged", triplets_dir, VAL_FILE)
    return TrainingData(train, val, Path(metadata_path), len(metadata), metadata_report)
