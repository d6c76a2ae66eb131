"""``specter-utils build-benchmark``: a SCIDOCS-layout benchmark and a leakage-free training dir."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specter_utils.commands.common import add_config_flags, add_out, check_out_dir, given_config_values, staged_dir
from specter_utils.corpus_config import CorpusConfig
from specter_utils.layout import BENCHMARK_FILE
from specter_utils.vocabularies import CORPUS_KINDS

OWNED = (BENCHMARK_FILE,)  # an --out folder holding this was written by a benchmark build

CORPUS_HELP = (
    "corpus kind: hepth (the SNAP folder), citeseer (the folder with citeseer_texts.txt and citeseer.cites; without "
    "--src, the copy bundled with the package), tables (papers and edges tables, OGB/PyG style: a folder or a "
    "tables.json manifest, data/README.md), s2orc (S2ORC metadata), openalex (OpenAlex works), jsonl (the generic "
    "record format of data/README.md; the last three from one .jsonl, .jsonl.gz or .parquet file) or synthetic "
    "(generated, takes no --src). Default: detected from --src when unambiguous"
)
LABEL_FIELD_HELP = (
    "where the classification labels (the mag/ slot) come from: venue, fields_of_study (S2ORC mag_field_of_study; "
    "OpenAlex topic fields, or level-0 concepts), labels (the generic records' labels; OpenAlex topics) or any "
    "other field of the records. Default: fields_of_study for s2orc and openalex, labels for jsonl, venue for "
    "hepth and synthetic, topic for citeseer (their only labels: another value is an error), label for tables (the "
    "papers table's column; aligned files: the labels file)"
)
READER_OPTIONS = ("edges_by", "edge_order", "unknown")  # the reader flags' dests (workflow.prepare.READER_FLAGS)


def add_corpus_arguments(parser: argparse.ArgumentParser, src_help: str, labels: bool = True) -> None:
    """``--corpus``, ``--src`` and (where labels are used) ``--label-field``: build-benchmark and data convert."""
    parser.add_argument("--corpus", choices=CORPUS_KINDS, default=None, help=CORPUS_HELP)
    parser.add_argument("--src", type=Path, default=None, help=src_help)
    if labels:
        parser.add_argument("--label-field", default=None, metavar="FIELD", help=LABEL_FIELD_HELP)
    else:
        parser.set_defaults(label_field=None)
    add_reader_arguments(parser)


def add_reader_arguments(parser: argparse.ArgumentParser) -> None:
    """``--edges-by``, ``--edge-order`` (tables) and ``--unknown-papers`` (citeseer and tables)."""
    parser.add_argument(
        "--edges-by",
        choices=("row", "id"),
        default=None,
        help="tables: the edges table names papers by row index (0-based) or by paper id (default: row for aligned "
        "one-column files, id for a papers table, or the manifest's edges_by)",
    )
    parser.add_argument(
        "--edge-order",
        choices=("citing-cited", "cited-citing"),
        default=None,
        help="tables: which paper of an edge row comes first (default: citing-cited, or the manifest's edge_order)",
    )
    parser.add_argument(
        "--unknown-papers",
        dest="unknown",
        choices=("error", "drop"),
        default=None,
        help="citeseer and tables: an edge naming a paper the corpus does not hold is an error (default) or counted "
        "and dropped (drop). CiteSeer's 141 keys cited without text are always counted and dropped",
    )


def reader_flags(args: argparse.Namespace) -> dict[str, str]:
    """The reader options the command line set (``--edges-by``, ``--edge-order``, ``--unknown-papers``)."""
    options = {name: getattr(args, name, None) for name in READER_OPTIONS}
    return {name: value for name, value in options.items() if value is not None}


def load_corpus_from_args(args: argparse.Namespace, **generator):
    """The corpus the flags name; an option that does not apply is a DataError (one line, exit 2)."""
    from specter_utils.workflow.prepare import load_corpus_from_source

    return load_corpus_from_source(args.corpus, args.src, args.label_field, reader_flags(args), **generator)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``build-benchmark`` to the top-level parser."""
    parser = subparsers.add_parser(
        "build-benchmark",
        help="build a SCIDOCS-layout benchmark (cite, cocite, label classification) plus a training dir",
        description="From a citation corpus, write DIR/scidocs (cite and cocite qrels for held-out queries, and "
        "cite-matched and cocite-matched: the same queries with negatives matched to the positives on year and "
        "in-degree; the "
        "corpus labels as the mag/ classification task, paper_metadata_*.json), DIR/train (SPECTER-format, "
        "without the held-out queries or their edges) and DIR/benchmark.json (counts, the label field and "
        "multi-label rule, and why classification is absent when it is). A corpus without usable labels still "
        "gets the ranking tasks. References to ids outside the corpus are counted and dropped.",
    )
    add_corpus_arguments(
        parser,
        "hepth: folder with the SNAP files (default ../shared/data/hepth); citeseer: its folder (default: the bundled "
        "copy); tables: a folder or a tables.json manifest; s2orc, openalex, jsonl: the record file (.jsonl, "
        ".jsonl.gz, .parquet); not allowed with synthetic",
    )
    add_out(parser, "output folder; the build owns it: a rebuild (--overwrite) replaces it whole")
    # The benchmark's sizes are the run specification's data section (CorpusConfig): one default each.
    add_config_flags(
        parser, CorpusConfig, ("n_queries", "max_class_papers", "negative_pool", "multi_label", "seed", "split_by")
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the corpus, build, print the counts (also saved in benchmark.json)."""
    from specter_utils.spec import section_config
    from specter_utils.workflow.prepare import build_benchmark_dir

    check_out_dir(args.out, args.overwrite, OWNED)
    data = section_config("data", **given_config_values(args, CorpusConfig))  # the specification's layers
    corpus = load_corpus_from_args(args, seed=data.seed)
    print(
        f"read {corpus.name} ({'SYNTHETIC, ' if corpus.synthetic else ''}labels: {corpus.label_field}): "
        f"{len(corpus.papers):,} papers, {len(corpus.edges):,} citations inside the corpus"
    )
    print(corpus.report.summary())
    with staged_dir(args.out) as stage:  # built aside, then put in place of --out whole (nothing left on failure)
        info = build_benchmark_dir(corpus, stage, data)
    print(json.dumps(info["counts"], indent=2))
    note_class_cap(info["counts"]["mag"], data.max_class_papers)
    if "absent_because" in info["counts"]["mag"]:
        print(f"no classification task: {info['counts']['mag']['absent_because']}")
    if info["split"]["split_by"] == "date":
        print(f"time split: {info['split']['rule']} ({info['split']['later_papers']:,} papers held out of training)")
    if info["synthetic"]:
        print(f"NOTE: SYNTHETIC corpus ({BENCHMARK_FILE} says so); its numbers say nothing about real papers")
    print(f"wrote {args.out}/scidocs, {args.out}/train and {args.out}/{BENCHMARK_FILE}")
    formats = info["scirepeval"]
    if formats["tasks"]:
        print(f"wrote {args.out}/{formats['folder']}: tasks in SciRepEval's formats: {', '.join(formats['tasks'])}")
    for task, why in formats["absent"].items():
        print(f"no {task} task: {why}")
    return 0


def note_class_cap(mag: dict, cap: int) -> None:
    """Say why the classification task holds more papers than ``--max-class-papers`` (each class keeps 3)."""
    kept = sum(mag.get(split, 0) for split in ("train", "val", "test"))
    if cap and kept > cap:
        print(
            f"note: --max-class-papers {cap}: the classification task has {kept} papers, because each of its "
            f"{mag.get('classes', 0)} classes keeps at least 3 (one per split)",
            file=sys.stderr,
        )
