"""The SVM's C chosen by CV accuracy (the SCIDOCS protocol) beside C chosen by CV macro-F1, on a benchmark's
classification task with one embeddings file (``specter_utils.studies.svm_c_choice``). For hep-th's 22 journals
with the base model (embed the task's papers first, at the run's evaluation length)::

    specter-utils embed --model minilm --metadata BENCH/scidocs/paper_metadata_mag_mesh.json --ids MAG_IDS \\
        --out EMB/base_mag.jsonl --max-length 256
    python experiments/svm_c_choice.py BENCH/scidocs --embeddings EMB/base_mag.jsonl \\
        --out experiments/measured/svm_c_choice_hepth.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specter_utils.errors import DataError
from specter_utils.io import atomic_write, write_json
from specter_utils.studies.svm_c_choice import markdown, measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scidocs_dir", type=Path, help="a SCIDOCS-layout folder (a benchmark's scidocs/)")
    parser.add_argument("--embeddings", type=Path, required=True, help="embeddings of the task's papers (.jsonl)")
    parser.add_argument("--task", default="mag", help="the classification slot (default: mag)")
    parser.add_argument("--out", type=Path, help="write the table here (and the numbers beside it as .json)")
    args = parser.parse_args(argv)
    try:
        result = measure(args.scidocs_dir, args.embeddings, args.task)
    except (DataError, OSError) as exc:
        print(f"svm_c_choice: error: {exc}", file=sys.stderr)
        return 2
    text = markdown(result)
    print(text)
    if args.out:
        with atomic_write(args.out) as handle:
            handle.write(text + "\n")
        write_json(args.out.with_suffix(".json"), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
