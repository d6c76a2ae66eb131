"""``specter-utils evaluate``: the SCIDOCS evaluation of embeddings, as the original ``scripts/run.py``, or of a model
(``--model``: embeds what the tasks read, cached) on a SCIDOCS or a BEIR (MTEB) folder; on a SciRepEval-format
folder (``tasks.jsonl``), its classification, regression, proximity and adhoc_search tasks as SciRepEval scores them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from specter_utils.commands.common import (
    POSITIVE_INT,
    add_batch_size,
    add_flag,
    add_max_length,
    add_out,
    add_quiet,
    check_out_file,
    input_dir,
    input_file,
    silence_progress,
)
from specter_utils.config import EmbedConfig
from specter_utils.vocabularies import EVAL_SPLITS

EPILOG = """\
examples:
  specter-utils evaluate --data-dir data/scidocs --embeddings emb/specter.jsonl --out results.json
  # the original's three files (each task group skipped when its file is not given):
  specter-utils evaluate --data-dir data/scidocs --cls cls.jsonl --user-citation user-citation.jsonl \\
      --recomm recomm.jsonl --out results.json
  specter-utils evaluate --data-dir DIR --embeddings E.npy --tasks mag cite co-cite --split val --out r.json
  specter-utils evaluate --data-dir DIR --embeddings E.jsonl --tasks mag --svm lightning --out r.json
  # any model in one command: embeds exactly the papers the tasks read (cached under DIR/.embeddings-cache):
  specter-utils evaluate --model minilm --data-dir data/scidocs --max-length 256 --out results.json
  # MTEB's SCIDOCS (BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv): nDCG@10, MAP@100, Recall@100
  specter-utils evaluate --model PATH_OR_HUB_ID --data-dir scidocs-beir --out r.json
  # SciRepEval's four formats (DIR/tasks.jsonl; docs/protocol.md): a model, or a file plus the queries' vectors
  specter-utils evaluate --model minilm --data-dir BENCH/scirepeval --out formats.json
  specter-utils evaluate --embeddings E.jsonl --query-embeddings Q.jsonl --data-dir BENCH/scirepeval --out f.json
Tasks whose files are absent from DIR are skipped (and listed); papers without an embedding are
skipped (ranking) or zero vectors (classification), as in the original, and counted under "coverage".
On a SciRepEval-format folder a paper without a vector is left out of its task (as SciRepEval does); an
adhoc_search task encodes its query texts, so with --embeddings it needs --query-embeddings (vectors keyed by
the queries' doc_id) or is left out with --tasks; --model encodes the queries itself (with the model's query
prompt). --tasks then names the folder's tasks.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``evaluate`` to the top-level parser."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score embeddings, or a model (--model), on SCIDOCS or MTEB's SCIDOCS (BEIR layout)",
        description="Evaluate embeddings on a SCIDOCS-layout directory with the original protocol; results x 100 "
        "with 2 decimals under the original's keys, plus coverage, details and config, written atomically. With "
        "--model, embed exactly the papers the tasks read (cached) and score them; a BEIR folder (MTEB's SCIDOCS) "
        "gets nDCG@10, MAP@100 and Recall@100 in [0, 1].",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="SCIDOCS directory (mag/, cite/, ...), a SciRepEval-format folder (tasks.jsonl) or, with --model, a BEIR "
        "folder (corpus.jsonl, queries.jsonl, qrels/)",
    )
    parser.add_argument(
        "--model",
        help="a model (minilm, a local folder or a cached hub id) to embed the papers with, instead of embeddings files",
    )
    add_max_length(
        parser, None, "with --model: wordpieces per paper (default: the model's recorded max_seq_length, else 512)"
    )
    add_batch_size(
        parser, EmbedConfig.batch_size, f"with --model: papers per forward pass (default: {EmbedConfig.batch_size})"
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="with --model: where the vectors are kept for the next call (default: DATA_DIR/.embeddings-cache)",
    )
    parser.add_argument("--embeddings", type=Path, help="one embeddings file (.jsonl or .npy) for every task")
    parser.add_argument(
        "--query-embeddings",
        type=Path,
        help="SciRepEval-format folder with --embeddings: vectors of the adhoc_search query texts, keyed by the "
        "queries' doc_id (required when such a task is scored; --model encodes them itself)",
    )
    parser.add_argument("--cls", type=Path, help="embeddings for mag and mesh (overrides --embeddings)")
    parser.add_argument("--user-citation", type=Path, help="embeddings for co-view, co-read, cite, co-cite")
    parser.add_argument("--recomm", type=Path, help="embeddings for the recommendation task")
    parser.add_argument("--tasks", nargs="+", help="tasks to run (default: every task present)")
    parser.add_argument("--split", choices=EVAL_SPLITS, default="test", help="evaluated split (default: test)")
    add_out(parser, "results JSON file")
    add_flag(
        parser,
        "--threads",
        "--n-jobs",
        dest="n_jobs",
        type=POSITIVE_INT,
        default=1,
        help="threads for classification (2: MAG and MeSH together)",
    )
    parser.add_argument(
        "--svm",
        choices=("sklearn", "lightning"),
        default="sklearn",
        help="classification SVM: sklearn's LinearSVC (docs/protocol.md, default) or the released code's lightning one "
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
    from specter_utils.workflow.evaluate import check_scidocs_dir, score_embeddings

    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s")
    groups = {"cls": args.cls, "user-citation": args.user_citation, "recomm": args.recomm}
    if args.quiet:
        silence_progress()
    if _layout(args.data_dir) == "scirepeval":
        scidocs_only = {
            "--cls": args.cls,
            "--user-citation": args.user_citation,
            "--recomm": args.recomm,
            "--split": args.split != "test",
            "--svm": args.svm != "sklearn",
            "--recomm-seeds": args.recomm_seeds,
            "--compare": args.compare is not None,
        }
        given = [flag for flag, value in scidocs_only.items() if value]
        if given:
            raise DataError(
                f"{given[0]} is for a SCIDOCS folder; a SciRepEval-format folder has its own tasks", given[0]
            )
        return _run_formats(args)
    if args.query_embeddings is not None:
        raise DataError("--query-embeddings is for a SciRepEval-format folder (tasks.jsonl)", "--query-embeddings")
    if args.model is not None:
        if args.embeddings is not None or any(groups.values()):
            raise DataError("give --model or embeddings files (--embeddings, --cls, ...), not both", "--model")
        return _run_model(args)
    if args.embeddings is None and not any(groups.values()):
        raise DataError(
            "give --model NAME, --embeddings FILE, or --cls / --user-citation / --recomm files", "--embeddings"
        )
    input_dir(args.data_dir, "--data-dir")
    check_scidocs_dir(args.data_dir)
    for flag, path in (("--embeddings", args.embeddings), *((f"--{g}", p) for g, p in groups.items())):
        if path is not None:
            input_file(path, flag)
    check_out_file(args.out, args.overwrite)
    if args.embeddings is not None:
        embeddings = {group: path or args.embeddings for group, path in groups.items()}
    else:
        embeddings = {group: path for group, path in groups.items() if path is not None}
    paper_rows = _paper_rows(args.compare)
    result = score_embeddings(args.data_dir, embeddings, _suite_options(args), args.out)
    return _report_scidocs(args, result, paper_rows)


def _suite_options(args: argparse.Namespace) -> Any:
    """What the SCIDOCS suite takes from the flags (a ``SuiteOptions``), the same for an embeddings file and for
    ``--model``."""
    from specter_utils.workflow.evaluate import SuiteOptions

    return SuiteOptions(args.tasks, args.split, args.n_jobs, args.recomm_seeds, args.svm)


def _paper_rows(compare: list[str] | None) -> tuple[str, ...]:
    from specter_utils.errors import DataError
    from specter_utils.presentation.tables import PAPER_TABLE1

    if compare is None:
        return ()
    unknown = [m for m in compare if m not in PAPER_TABLE1]
    if unknown:
        raise DataError(f"unknown paper rows {unknown}; known: {', '.join(PAPER_TABLE1)}")
    return tuple(compare) or tuple(PAPER_TABLE1)


def _report_scidocs(args: argparse.Namespace, result: dict, paper_rows: tuple[str, ...]) -> int:
    """Print the table of a written SCIDOCS result (and the paper's rows asked for), what was skipped, and where."""
    from specter_utils.presentation.tables import render

    _, markdown = render(result, paper_rows)
    print(markdown)
    for key, reason in result["skipped"].items():
        print(f"skipped {key}: {reason}")
    model = result["config"].get("model")
    if model:
        print(
            f"embeddings: {model['papers']} papers ({model['embedded_now']} embedded now in {model['embed_seconds']} s, "
            f"{model['from_cache']} from the cache {model['file']}), {model.get('max_length')} wordpieces "
            f"({model['length_source']})"
        )
    print(f"results: {args.out} ({result['config']['seconds']} s)")
    return 0


def _run_model(args: argparse.Namespace) -> int:
    """``--model``: a BEIR folder gets MTEB's retrieval scores, a SCIDOCS folder the whole suite."""
    from specter_utils.workflow.evaluate import ModelRun, evaluate_model

    input_dir(args.data_dir, "--data-dir")
    check_out_file(args.out, args.overwrite)
    paper_rows = _paper_rows(args.compare)
    run = ModelRun(args.model, args.max_length, args.batch_size, progress=not args.quiet)
    kind, result = evaluate_model(run, args.data_dir, args.out, args.cache_dir, _suite_options(args))
    if kind == "scidocs":
        return _report_scidocs(args, result, paper_rows)
    config = result["config"]
    print(
        f"nDCG@10 {100 * result['ndcg_at_10']:.2f}, MAP@100 {100 * result['map_at_100']:.2f}, "
        f"Recall@100 {100 * result['recall_at_100']:.2f} (x 100) over {config['queries']} queries and "
        f"{config['documents']} documents, {config['similarity']} similarity"
    )
    for part, record in config["embeddings"].items():
        print(
            f"{part}: {record['papers']} embedded at {record.get('max_length')} wordpieces "
            f"({config['length_source']}), {record['embedded_now']} now in {record['embed_seconds']} s, "
            f"{record['from_cache']} from the cache"
        )
    print(f"results: {args.out} ({config['seconds']} s)")
    return 0


def _layout(data_dir: Path) -> str:
    """The folder's layout (``scirepeval``, ``beir`` or ``scidocs``); a DataError when it is none of them."""
    from specter_utils.workflow.formats import detect_layout

    input_dir(data_dir, "--data-dir")
    return detect_layout(data_dir)


def _run_formats(args: argparse.Namespace) -> int:
    """A SciRepEval-format folder: every task scored as SciRepEval scores it; the table printed, the JSON written."""
    from specter_utils.errors import DataError
    from specter_utils.presentation.formats import formats_table
    from specter_utils.workflow.formats import ModelRun, score_formats

    if (args.model is None) == (args.embeddings is None):
        raise DataError(
            "give --model NAME or --embeddings FILE (with --query-embeddings for adhoc_search tasks)", "--model"
        )
    if args.model is not None and args.query_embeddings is not None:
        raise DataError(
            "--query-embeddings is for --embeddings; --model encodes the queries itself", "--query-embeddings"
        )
    for flag, path in (("--embeddings", args.embeddings), ("--query-embeddings", args.query_embeddings)):
        if path is not None:
            input_file(path, flag)
    check_out_file(args.out, args.overwrite)
    run = (
        None if args.model is None else ModelRun(args.model, args.max_length, args.batch_size, progress=not args.quiet)
    )
    result = score_formats(
        args.data_dir,
        model=run,
        embeddings=args.embeddings,
        query_embeddings=args.query_embeddings,
        out=args.out,
        tasks=args.tasks,
        cache_dir=args.cache_dir,
        n_jobs=args.n_jobs,
    )
    print(formats_table(result))
    model = result["config"].get("model")
    if model:
        for part, record in model["embeddings"].items():
            print(
                f"{part}: {record['papers']} embedded at {model['max_length']} wordpieces ({model['length_source']}), "
                f"{record['embedded_now']} now in {record['embed_seconds']} s, {record['from_cache']} from the cache"
            )
    print(f"results: {args.out} ({result['config']['seconds']} s)")
    return 0
