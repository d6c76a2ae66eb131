"""How related each mined paper of a run's training triplets is to its query: positives, hard and easy negatives.

For every triplet of ``RUN_DIR/02_mine_triplets/triplets/train.jsonl`` (or ``--triplets``), each of the two papers
(positive, negative) is checked against the query, in the training graph and the corpus records:

- co-cited: some paper of the training graph cites both (what the co-cite task counts as relevant);
- shares an author with the query, and is in the same venue (where both have one).

A hard negative is a paper cited by one of the query's citations but not by the query. If many of them are
co-cited with the query or share its authors, a "hard negative" is often a true neighbour, which would explain why
dropping hard negatives does not hurt on such a corpus. The corpus and training graph are the run's own (its
``pipeline.json`` names the preset and overrides)::

    python experiments/negative_relatedness.py results/hepth --out experiments/measured/negative_relatedness_hepth.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specter_utils.errors import DataError
from specter_utils.studies.negative_relatedness import markdown, measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run folder with notebooks 01 and 02 done")
    parser.add_argument("--triplets", type=Path, help="default: RUN_DIR/02_mine_triplets/triplets/train.jsonl")
    parser.add_argument("--out", type=Path, help="write the table here (and the numbers beside it as .json)")
    args = parser.parse_args(argv)
    try:
        result, source, triplets_file = measure(args.run_dir, args.triplets)
    except (DataError, OSError, KeyError) as exc:
        print(f"negative_relatedness: error: {exc}", file=sys.stderr)
        return 2
    text = markdown(result, source, triplets_file)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
