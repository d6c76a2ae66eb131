"""The paper record shared by every reader, and a report of recoverable oddities."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Paper:
    """One paper. ``extras`` keeps any source-specific fields (journal-ref, labels, citations...)."""

    paper_id: str
    title: str
    abstract: str = ""
    authors: list[str] = field(default_factory=list)
    venue: str | None = None
    year: int | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def text(self, sep: str = " [SEP] ") -> str:
        """SPECTER input text: ``title + sep + abstract`` (the tokenizer's sep token goes in ``sep``)."""
        return f"{self.title}{sep}{self.abstract or ''}"

    def to_specter_metadata(self) -> dict[str, str]:
        """The ``metadata.json`` entry of the SPECTER training format."""
        return {"paper_id": self.paper_id, "title": self.title, "abstract": self.abstract or ""}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Paper:
        known = {"paper_id", "title", "abstract", "authors", "venue", "year"}
        return cls(
            paper_id=str(row["paper_id"]),
            title=row.get("title") or "",
            abstract=row.get("abstract") or "",
            authors=list(row.get("authors") or []),
            venue=row.get("venue"),
            year=row.get("year"),
            extras={**row.get("extras", {}), **{k: v for k, v in row.items() if k not in known | {"extras"}}},
        )


@dataclass
class ReadReport:
    """Counts of recoverable oddities met while reading, with a few example ids of each.

    Readers never drop anything silently: whatever they skip or repair is counted here.
    """

    source: str = ""
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    max_examples: int = 5

    def note(self, kind: str, example: str | None = None, n: int = 1) -> None:
        """Count ``n`` occurrences of ``kind``, keeping up to ``max_examples`` example ids."""
        self.counts[kind] += n
        if example is not None:
            bucket = self.examples.setdefault(kind, [])
            if len(bucket) < self.max_examples:
                bucket.append(str(example))

    def merge(self, other: ReadReport) -> None:
        self.counts.update(other.counts)
        for kind, ids in other.examples.items():
            bucket = self.examples.setdefault(kind, [])
            bucket.extend(ids[: self.max_examples - len(bucket)])

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "counts": dict(self.counts), "examples": self.examples}

    def summary(self) -> str:
        """One line per oddity, e.g. ``empty_abstract: 12 (e.g. 9201001, ...)``."""
        if not self.counts:
            return f"{self.source}: no oddities"
        lines = [f"{self.source}:"]
        for kind, n in sorted(self.counts.items()):
            ex = self.examples.get(kind)
            lines.append(f"  {kind}: {n}" + (f" (e.g. {', '.join(ex)})" if ex else ""))
        return "\n".join(lines)
