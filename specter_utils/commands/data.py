"""``specter-utils data``: convert, inspect, download and generate corpora; audit splits for leakage."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from specter_utils.commands.common import (
    FRACTION,
    DeprecatedAlias,
    add_out,
    check_out_dir,
    input_dir,
    input_file,
    int_at_least,
    staged_dir,
)
from specter_utils.errors import DataError
from specter_utils.layout import BENCHMARK_FILE, DATA_FILE, METADATA_FILE
from specter_utils.vocabularies import CORPUS_KINDS

SPECTER_OWNED = (DATA_FILE, METADATA_FILE)  # an --out folder holding these was written by data convert
BENCHMARK_OWNED = (BENCHMARK_FILE, "corpus.json")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``data`` and its subcommands to the top-level parser."""
    parser = subparsers.add_parser(
        "data",
        help="convert, inspect, download and generate corpora",
        description="Data commands: convert a corpus to SPECTER training files, print counts of any data "
        "path, download the real datasets, generate the synthetic corpus of the tests, audit leakage.",
    )
    parser.set_defaults(func=lambda args: _print_help(parser))
    commands = parser.add_subparsers(dest="data_command", metavar="SUBCOMMAND")

    convert = commands.add_parser(
        "convert",
        help="write SPECTER-format training files (data.json, metadata.json, splits) from a corpus",
        description="Read a citation corpus and write the SPECTER training format: data.json (count 5 = direct "
        "citation, 1 = citation of a citation), metadata.json and train/val/test.txt. Prints counts and "
        "every oddity met while reading.",
    )
    from specter_utils.commands.build_benchmark import add_corpus_arguments, add_reader_arguments

    add_corpus_arguments(
        convert,
        "what to read. hepth: the folder with cit-HepTh.txt and cit-HepTh-abstracts.tar.gz; citeseer: its folder "
        "(default: the bundled copy); tables: a folder or a tables.json manifest; s2orc, openalex, jsonl: the record "
        "file (.jsonl, .jsonl.gz or .parquet), required. A record file whose papers cite none of each other (such as "
        "a small S2ORC sample) has no citations to convert. Not allowed with synthetic",
        labels=False,  # the SPECTER training format holds no class labels: build-benchmark takes --label-field
    )
    convert.add_argument(  # the old name
        "--format", dest="corpus", choices=CORPUS_KINDS, action=DeprecatedAlias, new="--corpus", help=argparse.SUPPRESS
    )
    add_out(convert, "output folder (created if missing; replaced whole with --overwrite)")
    convert.add_argument("--seed", type=int, default=0, help="seed of the train/val/test query split")
    convert.add_argument("--val-fraction", type=FRACTION, default=0.1, help="share of queries in val.txt, in [0, 1)")
    convert.add_argument("--test-fraction", type=FRACTION, default=0.0, help="share of queries in test.txt, in [0, 1)")
    convert.set_defaults(func=run_convert)

    convert.add_argument(
        "--papers", type=int_at_least(20), default=None, help="synthetic only: number of papers (default: 600)"
    )

    stats = commands.add_parser(
        "stats",
        help="print counts of a data path (format detected)",
        description="Detect the format of PATH (SPECTER dir, SCIDOCS dir, benchmark dir, hep-th, CiteSeer or tables "
        "folder, tables.json manifest, S2ORC .jsonl, SciRepEval files) and print papers, abstracts, edges, dangling ids, duplicates, queries "
        "without metadata and the other oddities met while reading.",
    )
    stats.add_argument("path", type=Path, help="file or folder to inspect")
    stats.add_argument("--json", action="store_true", help="print the counts as JSON")
    add_reader_arguments(stats)
    stats.set_defaults(func=run_stats)

    download = commands.add_parser(
        "download",
        help="download SCIDOCS, the SPECTER training data or SNAP hep-th (needs internet)",
        description="Download a real dataset over HTTPS into --out: resumable (FILE.part), size-checked, renamed "
        "into place only when complete. scidocs: AI2's bucket specter/scidocs/ (~4.6 GB); specter: the "
        "released training pickles (~19 GB); hepth: SNAP cit-HepTh (edges unpacked to cit-HepTh.txt). "
        "Offline it fails at once and says what to do instead.",
    )
    download.add_argument("dataset", choices=("scidocs", "specter", "hepth"), help="which dataset")
    download.add_argument("--out", type=Path, required=True, help="destination folder")
    download.add_argument(
        "--no-embeddings",
        action="store_true",
        help="scidocs: skip the released SPECTER embeddings (specter-embeddings/*.jsonl)",
    )
    download.set_defaults(func=run_download)

    synthetic = commands.add_parser(
        "synthetic",
        help="generate the SYNTHETIC corpus of the tests as a benchmark (SCIDOCS layout + SPECTER training dir)",
        description="Generate a deterministic synthetic citation corpus (topics with their own pseudo-word "
        "vocabularies, citations mostly within topic, topic = class label) and write it as a benchmark: "
        "OUT/scidocs (SCIDOCS layout), OUT/train (SPECTER format), OUT/benchmark.json and OUT/corpus.json. "
        "Everything written is labelled synthetic.",
    )
    add_out(synthetic, "output folder; a rebuild (--overwrite) replaces it whole")
    synthetic.add_argument("--papers", type=int_at_least(20), default=600, help="number of papers (at least 20)")
    synthetic.add_argument("--topics", type=int_at_least(2), default=6, help="number of topics = classes (at least 2)")
    synthetic.add_argument("--seed", type=int, default=0, help="generator and split seed")
    synthetic.set_defaults(func=run_synthetic)

    audit = commands.add_parser(
        "audit",
        help="check a benchmark's splits, and that training triplets do not touch its held-out papers",
        description="Audit a benchmark folder: every ranking query in the split its own per-paper draw gives (so no "
        "benchmark of the corpus and seed has it as a validation query and another as a test query); with "
        "--against, no paper a validation query in one and a test query in the other; with --triplets, no "
        "held-out query paper or its citation edges in the training triplets. Prints the audit and exits 1 if "
        "anything fails.",
    )
    audit.add_argument(
        "--triplets", type=Path, help="a triplets folder (mine's --out) or one triplet .jsonl file (e.g. train.jsonl)"
    )
    audit.add_argument("--benchmark", type=Path, required=True, help="benchmark folder (with scidocs/ and train/)")
    audit.add_argument(
        "--against",
        type=Path,
        nargs="+",
        default=[],
        help="other benchmark folders of the same corpus and seed (e.g. a study's): no validation query of one may be "
        "a test query of another",
    )
    audit.set_defaults(func=run_audit)


def _print_help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 1


def _specter_counts(data: Any) -> str:
    pairs = [c for cands in data.graph.values() for c in cands.values()]
    splits = ", ".join(f"{name} {len(ids):,}" for name, ids in data.splits.items())
    return (
        f"papers {len(data.metadata):,}; queries {len(data.graph):,} ({splits}); "
        f"direct citations {pairs.count(5):,}; citations of citations {pairs.count(1):,}"
    )


def run_convert(args: argparse.Namespace) -> int:
    """Read a corpus and write it in the SPECTER training format."""
    from specter_utils.commands.build_benchmark import load_corpus_from_args
    from specter_utils.workflow.prepare import convert_corpus

    if args.val_fraction + args.test_fraction >= 1:
        raise DataError(
            f"--val-fraction {args.val_fraction} + --test-fraction {args.test_fraction} leave no training queries",
            "--val-fraction",
        )
    if args.corpus != "synthetic" and args.papers is not None:
        raise DataError("applies to --corpus synthetic only", "--papers")
    check_out_dir(args.out, args.overwrite, SPECTER_OWNED)
    corpus = load_corpus_from_args(args, n_papers=args.papers or 600, seed=args.seed)
    print(
        f"read {corpus.name} from {corpus.info.get('source')}: {len(corpus.papers):,} papers, {len(corpus.edges):,} edges"
    )
    with staged_dir(args.out) as stage:
        data = convert_corpus(corpus, stage, args.val_fraction, args.test_fraction, args.seed, source=args.src)
    print(f"wrote {args.out}: {_specter_counts(data)}")
    print(corpus.report.summary())
    print(data.report.summary())
    return 0


def run_stats(args: argparse.Namespace) -> int:
    """Print the counts of a data path."""
    from specter_utils.commands.build_benchmark import reader_flags
    from specter_utils.workflow.prepare import data_stats

    if not args.path.exists():
        raise DataError("no such file or folder", args.path)
    stats, text = data_stats(args.path, reader_flags(args))
    print(json.dumps(stats, indent=2, default=str) if args.json else text)
    return 0


def run_download(args: argparse.Namespace) -> int:
    """Download one dataset."""
    from specter_utils.workflow.prepare import download

    counts = download(args.dataset, args.out, include_embeddings=not args.no_embeddings)
    print(
        f"{args.dataset}: {counts['files']} files in {args.out} ({counts['downloaded']} downloaded, "
        f"{counts['bytes']:,} bytes)"
    )
    return 0


def run_synthetic(args: argparse.Namespace) -> int:
    """Generate the synthetic corpus and write it as a benchmark (SCIDOCS layout + SPECTER training dir)."""
    from specter_utils.corpus_config import CorpusConfig
    from specter_utils.workflow.prepare import load_corpus_for_run, synthetic_benchmark

    if args.papers < 10 * args.topics:
        raise DataError(f"{args.papers}: give at least 10 per topic ({10 * args.topics})", "--papers")
    check_out_dir(args.out, args.overwrite, BENCHMARK_OWNED)
    corpus = load_corpus_for_run(CorpusConfig(n_papers=args.papers, n_topics=args.topics, seed=args.seed))
    print(
        f"SYNTHETIC corpus (seed {args.seed}): {len(corpus.papers):,} papers, "
        f"{len(corpus.edges):,} citations, {args.topics} topics"
    )
    # the benchmark (OUT/scidocs, OUT/train without held-out queries, benchmark.json) and corpus.json are built
    # aside and put in place of --out whole.
    with staged_dir(args.out) as stage:
        result = synthetic_benchmark(corpus, stage, seed=args.seed)
    print(json.dumps(result, indent=2, default=str))
    print(f"wrote the SYNTHETIC benchmark to {args.out} (labelled synthetic in {BENCHMARK_FILE} and corpus.json)")
    return 0


# What the audit stops on, in words: a held-out query, a paper of a SciRepEval-format task, a paper of a time split's
# later period (triplets.audit's leak_free)
LEAKS = {
    "query_overlap": "held-out benchmark queries",
    "format_held_out_overlap": "papers held out for the SciRepEval-format tasks",
    "later_overlap": "papers from the time split's held-out period",
}


def _audit_splits(benchmark: Path, against: list[Path]) -> bool:
    """Print the split checks of ``data audit``; True when they pass."""
    from specter_utils.workflow.mine import split_audit

    splits, overlaps = split_audit(benchmark, against)
    print(json.dumps({"query_splits": splits, "against": overlaps}, indent=2))
    ok = True
    if splits is None:
        print(f"splits: {benchmark} has no benchmark.json (not built by build-benchmark): no per-paper rule to check")
    elif not splits["per_paper"]:
        print(
            f"SPLITS: {splits['off_rule']} of {splits['queries']} ranking queries are not in the split their own draw "
            "gives (a benchmark built by an earlier rule, or edited): its validation queries may be another "
            "benchmark's test queries; rebuild it"
        )
        ok = False
    for overlap in overlaps:
        if overlap["val_test_overlap"]:
            print(
                f"SPLITS: {overlap['val_test_overlap']} papers are validation queries in one of {benchmark} and "
                f"{overlap['other']} and test queries in the other, e.g. {overlap['examples'][:3]}"
            )
            ok = False
    if ok and splits is not None:
        print(
            f"splits per paper: {splits['queries']} ranking queries, each in the split its own draw gives"
            + (
                f"; no validation query of one is a test query of another across {len(against) + 1} benchmarks"
                if against
                else ""
            )
        )
    return ok


def run_audit(args: argparse.Namespace) -> int:
    """Audit a benchmark's splits (and against others), and training triplets against it; exit 1 on a problem."""
    from specter_utils.workflow.mine import leakage_audit

    input_dir(args.benchmark, "--benchmark")
    for other in args.against:
        input_dir(other, "--against")
    if args.triplets is not None and not args.triplets.is_dir():
        input_file(args.triplets, "--triplets")
    splits_ok = _audit_splits(args.benchmark, args.against)
    if args.triplets is None:
        return 0 if splits_ok else 1
    audit, summary = leakage_audit(args.triplets, args.benchmark)
    print(json.dumps(audit, indent=2, default=str))
    if not audit["leak_free"]:
        found = [
            f"{what} ({n} paper{'s' * (n != 1)})"
            for name, what in LEAKS.items()
            if (n := (audit.get(name) or {}).get("distinct_ids", 0))
        ]
        print(f"LEAKAGE: the triplets touch {'; '.join(found)}")
        return 1
    if not splits_ok:
        return 1
    others = {name: summary[name] for name in ("candidate_overlap", "classification_overlap") if summary[name]}
    if others:
        listed = ", ".join(f"{name.replace('_', ' ')}: {count} papers" for name, count in others.items())
        print(
            f"no held-out query in the triplets (the leakage that matters); other overlaps, expected for random "
            f"negatives and shown above: {listed}"
        )
    else:
        print("no overlap between the triplets and the held-out benchmark papers")
    return 0
