"""``specter-utils index``: build a similar-paper search index over an embeddings file, or grow one."""

from __future__ import annotations

import argparse
from pathlib import Path

from specter_utils.commands.common import POSITIVE_INT, check_out_file, input_file
from specter_utils.errors import DataError

EPILOG = """\
examples:
  specter-utils index --embeddings emb/minilm.jsonl --out emb/minilm.index.npz
  specter-utils index --embeddings emb/all.npy --metadata data/metadata.json --kind ivf-pq --out emb/all.index.npz
  # grow an index in place (atomically: a crash leaves the old index whole)
  specter-utils index --index emb/minilm.index.npz --add emb/new.jsonl
  specter-utils index --index emb/minilm.index.npz --add emb/revised.jsonl --update
  specter-utils index --index emb/minilm.index.npz --remove withdrawn.txt     # one id a line
  specter-utils index --index emb/minilm.index.npz --remove 9711200,9802150
  specter-utils search --index emb/minilm.index.npz --paper-id 9711200
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``index`` to the top-level parser."""
    parser = subparsers.add_parser(
        "index",
        help="build a similar-paper search index (FAISS) over an embeddings file, or add/remove papers",
        description="Index an embeddings file (FILE.jsonl, or FILE.npy + FILE.ids.txt) for cosine search. The index "
        "records the model, pooling, maximum length and dimension from FILE.meta.json, and is written atomically. "
        "With --index, add (--add) or remove (--remove) papers of an existing index without a rebuild.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build = parser.add_argument_group("build a new index")
    build.add_argument("--embeddings", type=Path, help="FILE.jsonl or FILE.npy")
    build.add_argument("--out", type=Path, help="index file to write (.npz)")
    build.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    build.add_argument(
        "--kind",
        choices=("auto", "flat", "hnsw", "ivf", "ivf-pq"),
        default="auto",
        help="flat: exact; ivf: float32 inverted lists; ivf-pq: compressed (416 bytes a 384-dim paper, 10M papers "
        "in about 4.2 GB); hnsw: a graph (fastest queries, slowest build); auto: flat up to 200,000 papers, ivf up "
        "to 1,000,000, ivf-pq above",
    )
    build.add_argument(
        "--metadata", type=Path, nargs="+", default=[], help="metadata files for titles (a .npy carries none)"
    )
    grow = parser.add_argument_group("change an existing index (rewritten in place, atomically)")
    grow.add_argument("--index", type=Path, help="the index file (.npz) to change")
    grow.add_argument("--add", type=Path, metavar="NEW", help="embeddings file of papers to add (.jsonl or .npy)")
    grow.add_argument(
        "--update", action="store_true", help="with --add: replace papers already indexed (default: an error)"
    )
    grow.add_argument(
        "--remove", metavar="IDS", help="papers to remove: a file with one id a line, or ids separated by commas"
    )
    parser.add_argument("--threads", type=POSITIVE_INT, help="FAISS threads (default: all cores)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.index is not None or args.add is not None or args.remove is not None:
        return _change(args)
    if args.embeddings is None or args.out is None:
        raise DataError("give --embeddings and --out to build an index, or --index with --add or --remove")
    from specter_utils.workflow.search import index_embeddings

    input_file(args.embeddings, "--embeddings")
    for path in args.metadata:
        input_file(path, "--metadata")
    check_out_file(args.out, args.overwrite, suffix=".npz")
    index = index_embeddings(args.embeddings, args.out, args.kind, metadata=args.metadata, threads=args.threads)
    info = index.info
    print(
        f"{info['kind']} index of {len(index)} papers x {index.dim} dims (model {info.get('model')}, pooling "
        f"{info.get('pooling_detail') or info.get('pooling')}, max length {info.get('max_length')}) built in "
        f"{info['build_seconds']:.2f} s; wrote {args.out}"
    )
    return 0


def read_id_list(spec: str) -> tuple[list[str], str | None]:
    """Ids from a file (one a line, blank lines skipped) or from a comma-separated list; and the file, if any."""
    path = Path(spec)
    if path.is_file():
        from specter_utils.io import read_lines

        return [line.strip() for line in read_lines(path) if line.strip()], str(path)
    if path.is_dir():
        raise DataError("--remove: is a directory, expected a file of ids or a comma-separated list", path)
    ids = [part.strip() for part in spec.split(",") if part.strip()]
    if not ids:
        raise DataError("--remove: no paper ids given")
    return ids, None


def _change(args: argparse.Namespace) -> int:
    from specter_utils.workflow.search import add_papers, remove_papers

    if args.index is None:
        raise DataError("--add and --remove change an existing index: give it with --index")
    if args.embeddings is not None or args.out is not None:
        raise DataError("--index changes an index in place: --embeddings and --out build a new one, not both")
    if (args.add is None) == (args.remove is None):
        raise DataError("with --index give one of --add NEW or --remove IDS")
    if args.update and args.add is None:
        raise DataError("--update applies to --add")
    input_file(args.index, "--index")
    if args.remove is not None:
        paper_ids, source = read_id_list(args.remove)
        removed, index = remove_papers(args.index, paper_ids, source or "--remove", args.threads)
        print(f"removed {removed} papers; {len(index)} remain in {args.index}")
        return 0
    input_file(args.add, "--add")
    counts, index = add_papers(args.index, args.add, args.update, args.threads)
    print(f"added {counts['added']} and updated {counts['updated']} papers; {len(index)} in {args.index}")
    if index.retrain_due():
        ivf = index.info["ivf"]
        print(
            f"note: {ivf['added_since_training']} papers were added since the lists were trained on "
            f"{ivf['trained_count']}; rebuild the index (specter-utils index --embeddings ... --overwrite) to keep "
            "its recall"
        )
    return 0
