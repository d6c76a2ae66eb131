"""``specter-utils index``: build a similar-paper search index over an embeddings file."""

from __future__ import annotations

import argparse
from pathlib import Path

from specter_utils.commands.common import POSITIVE_INT, add_out, check_out_file, input_file

EPILOG = """\
examples:
  specter-utils index --embeddings emb/minilm.jsonl --out emb/minilm.index.npz
  specter-utils index --embeddings emb/all.npy --metadata data/metadata.json --kind hnsw --out emb/all.index.npz
  specter-utils search --index emb/minilm.index.npz --paper-id 9711200
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``index`` to the top-level parser."""
    parser = subparsers.add_parser(
        "index",
        help="build a similar-paper search index (FAISS) over an embeddings file",
        description="Index an embeddings file (FILE.jsonl, or FILE.npy + FILE.ids.txt) for cosine search. The index "
        "records the model, pooling, maximum length and dimension from FILE.meta.json, and is written atomically.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--embeddings", type=Path, required=True, help="FILE.jsonl or FILE.npy")
    add_out(parser, "index file to write (.npz)")
    parser.add_argument(
        "--kind",
        choices=("auto", "flat", "hnsw", "ivf"),
        default="auto",
        help="flat: exact; hnsw, ivf: approximate, for millions of papers (ivf builds ~10x faster, hnsw answers "
        "faster); auto: flat up to 200,000 papers, ivf above",
    )
    parser.add_argument(
        "--metadata", type=Path, nargs="+", default=[], help="metadata files for titles (a .npy carries none)"
    )
    parser.add_argument("--threads", type=POSITIVE_INT, help="FAISS threads (default: all cores)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.search import build_index

    input_file(args.embeddings, "--embeddings")
    for path in args.metadata:
        input_file(path, "--metadata")
    check_out_file(args.out, args.overwrite, suffix=".npz")
    embeddings = read_embeddings(args.embeddings)
    titles = None
    if args.metadata:
        from specter_utils.embedding.inputs import read_metadata_files

        titles = {pid: paper.title for pid, paper in read_metadata_files(args.metadata).items()}
    index = build_index(embeddings, args.kind, titles, source=str(args.embeddings), threads=args.threads)
    index.save(args.out)
    info = index.info
    print(
        f"{info['kind']} index of {len(index)} papers x {index.dim} dims (model {info.get('model')}, pooling "
        f"{info.get('pooling_detail') or info.get('pooling')}, max length {info.get('max_length')}) built in "
        f"{info['build_seconds']:.2f} s; wrote {args.out}"
    )
    return 0
