"""``specter-utils compare``: models on the same ranking queries, with seeds and paired tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from specter_utils.commands.common import add_out, check_out_file, input_dir, int_at_least
from specter_utils.config import RUN_SEED
from specter_utils.errors import DataError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``compare`` to the top-level parser."""
    parser = subparsers.add_parser(
        "compare",
        help="compare models on the ranking tasks: MAP mean and spread over seeds, paired tests over queries",
        description="Each --row is a model: a name, then one embeddings file per training seed. Prints MAP "
        "(mean ± sd over seeds) per task and, against each --reference row, the mean per-query difference of AP "
        "(each query averaged over seeds first), a 95% bootstrap interval and a paired permutation p-value.",
        epilog="example:\n  specter-utils compare --data-dir runs/b/scidocs --tasks cite co-cite \\\n"
        "      --row base emb/base.jsonl --row tfidf emb/tfidf-svd.jsonl \\\n"
        "      --row trained emb/s0.jsonl emb/s1.jsonl emb/s2.jsonl --reference base tfidf --out cmp.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="a SCIDOCS-layout folder (cite/, cocite/, ...)")
    parser.add_argument(
        "--row",
        nargs="+",
        action="append",
        required=True,
        metavar="NAME FILE",
        help="a row: its name, then one embeddings file (.jsonl or .npy) per seed; repeat for each row",
    )
    parser.add_argument(
        "--reference", nargs="+", default=None, help="rows to test every row against (default: the first)"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=["cite", "co-cite"],
        help="ranking tasks, named as evaluate names them (co-view, co-read, cite, co-cite; the folder names "
        "coview, coread, cocite are accepted too) (default: cite co-cite)",
    )
    parser.add_argument("--split", choices=("test", "val"), default="test", help="qrels split (default: test)")
    parser.add_argument(
        "--resamples", type=int_at_least(100), default=10_000, help="bootstrap and permutation resamples"
    )
    parser.add_argument("--seed", type=int, default=RUN_SEED, help="seed of the bootstrap and permutation draws")
    add_out(parser, "also write the comparison as JSON", required=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from specter_utils.io import write_json
    from specter_utils.workflow.evaluate import compare_models

    input_dir(args.data_dir, "--data-dir")
    if args.out is not None:
        check_out_file(args.out, args.overwrite)
    rows_spec = []
    for spec in args.row:
        if len(spec) < 2:
            raise DataError(f"row {spec[0]!r} needs a name and at least one embeddings file", "--row")
        for file in spec[1:]:
            if Path(file).is_dir():
                raise DataError(f"row {spec[0]!r}: is a directory, expected an embeddings file", file)
            if not Path(file).is_file() and not Path(file).with_suffix(".npy").is_file():
                raise DataError(f"row {spec[0]!r}: embeddings file not found", file)
        rows_spec.append((spec[0], spec[1:]))
    names = [name for name, _ in rows_spec]
    if len(set(names)) != len(names):
        raise DataError(f"row names must be unique, got {names}", "--row")
    if args.resamples < 100:
        raise DataError(f"{args.resamples}: use at least 100", "--resamples")
    references = args.reference or [names[0]]
    unknown = [ref for ref in references if ref not in names]
    if unknown:
        raise DataError(f"{unknown}: not a row name ({names})", "--reference")
    result, table = compare_models(
        args.data_dir, rows_spec, references, args.tasks, args.split, args.resamples, args.seed
    )
    print(table)
    if args.out:
        write_json(args.out, result)
        print(f"wrote {args.out}")
    return 0
