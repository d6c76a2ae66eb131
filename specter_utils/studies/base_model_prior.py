"""What a base model already learned from citations: its own training-data list, read from the model folder.

The all-* sentence-transformers models ship ``data_config.json``: every training dataset with its line count and
its sampling weight. :func:`citation_share` gives, for a base model, the datasets built from Semantic Scholar's
citation graph (S2ORC citation pairs, SPECTER's own training triplets) and their share of the training lines and of
the sampling weight, as Markdown rows. A base model that was trained on citation pairs of the same literature starts
near what citation fine-tuning can teach it, which bounds the gain the recipe levers can reach.

The model card (``README.md``) is read where a copy has no ``data_config.json`` (all-mpnet-base-v2 as the [mpnet]
extra ships it): it gives line counts, not sampling weights. ``experiments/base_model_prior.py`` is the command line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from specter_utils.errors import DataError
from specter_utils.models import base_model_id, resolve_model

# Datasets of the all-* training mix that come from citations between papers (names as in data_config.json)
CITATION_SETS = {
    "S2ORC_citation_pairs.jsonl.gz": "S2ORC citation pairs (titles)",
    "S2ORC_citation_pairs_abstract.jsonl.gz": "S2ORC citation pairs (abstracts)",
    "specter_train_triples.jsonl.gz": "SPECTER's training triplets",
}


# The model card's "Training data" table names the same sets (a copy without data_config.json has only the card)
CARD_CITATION_SETS = {
    "S2ORC Citation pairs (Titles)": CITATION_SETS["S2ORC_citation_pairs.jsonl.gz"],
    "S2ORC Citation pairs (Abstracts)": CITATION_SETS["S2ORC_citation_pairs_abstract.jsonl.gz"],
    "SPECTER citation triplets": CITATION_SETS["specter_train_triples.jsonl.gz"],
}
CARD_ROW = re.compile(r"^\|(?P<name>[^|]+)\|[^|]*\|\s*(?P<lines>\d[\d,]*)\s*\|", re.MULTILINE)


def training_mix(model: str) -> list[dict]:
    """The model's training datasets (``name``, ``lines``, ``weight``): its ``data_config.json``, else the table of
    its model card (``README.md``), which gives no sampling weights (``weight`` None)."""
    folder = Path(resolve_model(model))
    path = folder / "data_config.json"
    if path.is_file():
        entries = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e for e in entries):
            raise DataError("expected a list of {name, lines, weight}", path)
        return [{**e, "label": CITATION_SETS.get(e["name"])} for e in entries]
    card = folder / "README.md"
    rows = CARD_ROW.findall(card.read_text(encoding="utf-8")) if card.is_file() else []
    if not rows:
        raise DataError("the model folder lists no training data (no data_config.json, no table in README.md)", folder)
    entries = []
    for name, lines in rows:
        name = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", name).strip()  # the dataset's name without its link
        entries.append({"name": name, "lines": int(lines.replace(",", "")), "weight": None})
        entries[-1]["label"] = CARD_CITATION_SETS.get(name)
    return entries


def citation_share(model: str) -> list[str]:
    """Markdown rows: each citation dataset of ``model`` and the citation sets' share of lines and weight."""
    entries = training_mix(model)
    weighted = all(e.get("weight") is not None for e in entries)
    total_lines = sum(int(e.get("lines", 0)) for e in entries)
    total_weight = sum(float(e["weight"]) for e in entries) if weighted else 0.0

    def weight_share(weight: float) -> str:
        return f"{100 * weight / total_weight:.2f}%" if weighted else "not listed (model card only)"

    cited = [e for e in entries if e["label"]]
    rows = [
        f"| {base_model_id(model)} | {entry['label']} | {int(entry['lines']):,} "
        f"| {100 * int(entry['lines']) / total_lines:.1f}% | {weight_share(float(entry['weight'] or 0))} |"
        for entry in cited
    ]
    lines = sum(int(e["lines"]) for e in cited)
    weight = sum(float(e["weight"] or 0) for e in cited)
    rows.append(
        f"| {base_model_id(model)} | **all citation sets** ({len(cited)} of {len(entries)} datasets) | {lines:,} "
        f"| {100 * lines / total_lines:.1f}% | {weight_share(weight)} |"
    )
    return rows


TABLE_HEADER = (
    "| base model | training set | lines | share of lines | share of sampling weight |",
    "|---|---|---|---|---|",
)


def prior_table(models: Sequence[str]) -> str:
    """The Markdown table of :func:`citation_share` over ``models``."""
    rows = [row for model in models for row in citation_share(model)]
    return "\n".join([*TABLE_HEADER, "\n".join(rows)])
