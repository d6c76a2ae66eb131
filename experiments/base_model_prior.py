"""What a base model already learned from citations: its own training-data list, read from the model folder.

The all-* sentence-transformers models ship ``data_config.json``: every training dataset with its line count and
its sampling weight. This prints, for each base model given, the datasets built from Semantic Scholar's citation
graph (S2ORC citation pairs, SPECTER's own training triplets) and their share of the training lines and of the
sampling weight, as a Markdown table. A base model that was trained on citation pairs of the same literature starts
near what citation fine-tuning can teach it, which bounds the gain the recipe levers can reach.

The model card (``README.md``) is read where a copy has no ``data_config.json`` (all-mpnet-base-v2 as the [mpnet]
extra ships it): it gives line counts, not sampling weights.

Usage: python experiments/base_model_prior.py [MODEL ...]   (default: minilm; ``mpnet`` needs the [mpnet] extra)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from specter_utils.errors import DataError, OfflineError
from specter_utils.studies.base_model_prior import prior_table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["minilm"], help="base models (default: minilm)")
    args = parser.parse_args(argv)
    try:
        table = prior_table(args.models)
    except (DataError, OfflineError) as exc:
        print(f"base_model_prior: error: {exc}", file=sys.stderr)
        return 2
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
