"""``specter-utils evaluate``: the SCIDOCS evaluation of embeddings, as the original ``scripts/run.py``."""

from __future__ import annotations

import argparse
from pathlib import Path

from specter_utils.commands.common import POSITIVE_INT, add_out, add_quiet, check_out_file, input_dir, input_file

EPILOG = """\
examples:
  specter-utils evaluate --data-dir data/scidocs --embeddings emb/specter.jsonl --out results.json
  # the original's three files (each task group skipped when its file is not given):
  specter-utils evaluate --data-dir data/scidocs --cls cls.jsonl --user-citation user-citation.jsonl \\
      --recomm recomm.jsonl --out results.json
  specter-utils evaluate --data-dir DIR --embeddings E.npy --tasks mag cite co-cite --split val --out r.json
  specter-utils evaluate --data-dir DIR --embeddings E.jsonl --tasks mag --svm lightning --out r.json
Tasks whose files are absent from DIR are skipped (and listed); papers without an embedding are
skipped (ranking) or zero vectors (classification), as in the original, and counted under "coverage".
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``evaluate`` to the top-level parser."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score embeddings on SCIDOCS (classification, ranking, recommendation)",
        description="Evaluate embeddings on a SCIDOCS-layout directory with the original protocol; results x 100 "
        "with 2 decimals under the original's keys, plus coverage, details and config, written atomically.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="SCIDOCS directory (mag/, cite/, ...)")
    parser.add_argument("--embeddings", type=Path, help="one embeddings file (.jsonl or .npy) for every task")
    parser.add_argument("--cls", type=Path, help="embeddings for mag and mesh (overrides --embeddings)")
    parser.add_argument("--user-citation", type=Path, help="embeddings for co-view, co-read, cite, co-cite")
    parser.add_argument("--recomm", type=Path, help="embeddings for the recommendation task")
    parser.add_argument("--tasks", nargs="+", help="tasks to run (default: every task present)")
    parser.add_argument("--split", choices=("test", "val"), default="test", help="evaluated split (default: test)")
    add_out(parser, "results JSON file")
    parser.add_argument(
        "--n-jobs", type=POSITIVE_INT, default=1, help="threads for classification (2: MAG and MeSH together)"
    )
    parser.add_argument(
        "--svm",
        choices=("sklearn", "lightning"),
        default="sklearn",
        help="classification SVM: sklearn's LinearSVC (SPEC.md, default) or the released code's lightning one "
        "(no intercept, tol 1e-3)",
    )
    parser.add_argument(
        "--recomm-seeds", type=int, nargs="+", default=None, help="seeds of the recommendation ranker (default: 7-11)"
    )
    parser.add_argument(
        "--compare",
        nargs="*",
        default=None,
        metavar="MODEL",
        help="also print the paper's Table 1 rows (all when no name is given), e.g. --compare SPECTER SciBERT",
    )
    add_quiet(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import logging

    from specter_utils.errors import DataError
    from specter_utils.evaluation.recomm import DEFAULT_SEEDS
    from specter_utils.evaluation.suite import evaluate, write_results
    from specter_utils.presentation.tables import PAPER_TABLE1, render

    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    groups = {"cls": args.cls, "user-citation": args.user_citation, "recomm": args.recomm}
    if args.embeddings is None and not any(groups.values()):
        raise DataError("give --embeddings FILE, or --cls / --user-citation / --recomm files", "--embeddings")
    input_dir(args.data_dir, "--data-dir")
    for flag, path in (("--embeddings", args.embeddings), *((f"--{g}", p) for g, p in groups.items())):
        if path is not None:
            input_file(path, flag)
    check_out_file(args.out, args.overwrite)
    if args.embeddings is not None:
        embeddings = {group: path or args.embeddings for group, path in groups.items()}
    else:
        embeddings = {group: path for group, path in groups.items() if path is not None}
    paper_rows: tuple[str, ...] = ()
    if args.compare is not None:
        unknown = [m for m in args.compare if m not in PAPER_TABLE1]
        if unknown:
            raise DataError(f"unknown paper rows {unknown}; known: {', '.join(PAPER_TABLE1)}")
        paper_rows = tuple(args.compare) or tuple(PAPER_TABLE1)
    result = evaluate(
        args.data_dir,
        embeddings,
        tasks=args.tasks,
        split=args.split,
        n_jobs=args.n_jobs,
        recomm_seeds=tuple(args.recomm_seeds or DEFAULT_SEEDS),
        svm_variant=args.svm,
    )
    write_results(args.out, result)
    _, markdown = render(result, paper_rows)
    print(markdown)
    for key, reason in result["skipped"].items():
        print(f"skipped {key}: {reason}")
    print(f"results: {args.out} ({result['config']['seconds']} s)")
    return 0
