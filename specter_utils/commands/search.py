"""``specter-utils search``: the papers most similar to a paper id or to a free-text query."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from specter_utils.commands.common import POSITIVE_INT, input_file, int_at_least

EPILOG = """\
examples:
  specter-utils search --index emb/minilm.index.npz --paper-id 9711200
  specter-utils search --index emb/minilm.index.npz --title "Large N limit of superconformal field theories" -k 5
  specter-utils search --index emb/minilm.index.npz --text "black hole entropy from D-branes" --json
  # a paper that is not in the index, from another embeddings file made with the same settings:
  specter-utils search --index emb/minilm.index.npz --paper-id X --embeddings emb/new.jsonl
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``search`` to the top-level parser."""
    parser = subparsers.add_parser(
        "search",
        help="find the papers most similar to a paper id or a title/abstract",
        description="Search an index built by 'specter-utils index'. A text query is embedded with the index's "
        "model, pooling and maximum length; asking for other settings is an error.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--index", type=Path, required=True, help="index file (.npz) from 'specter-utils index'")
    query = parser.add_argument_group("query (a paper id, or text)")
    query.add_argument("--paper-id", help="a paper of the index (or of --embeddings)")
    query.add_argument("--title", help="title of a query paper")
    query.add_argument("--abstract", help="abstract of a query paper")
    query.add_argument("--text", help="free text, embedded as a title")
    parser.add_argument("--embeddings", type=Path, help="take --paper-id's vector from this embeddings file")
    parser.add_argument("-k", "--top-k", type=POSITIVE_INT, default=10, help="neighbours to show (default: 10)")
    parser.add_argument("--model", help="check: the model the query must be embedded with (default: the index's)")
    parser.add_argument("--pooling", help="check: pooling (default: the index's)")
    parser.add_argument("--max-length", type=int_at_least(2), help="check: wordpieces (default: the index's)")
    parser.add_argument("--device", help="torch device for a text query (default: cuda if visible, else cpu)")
    parser.add_argument(
        "--ef-search", type=POSITIVE_INT, help="HNSW index: candidates per query (higher: better recall, slower)"
    )
    parser.add_argument(
        "--nprobe",
        type=POSITIVE_INT,
        help="IVF index: inverted lists scanned per query (higher: better recall, slower)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from specter_utils.errors import DataError
    from specter_utils.search import (
        check_settings,
        embed_query,
        format_table,
        load_index,
        query_vectors_from_embeddings,
    )

    text_given = any(v is not None for v in (args.title, args.abstract, args.text))
    if args.paper_id is not None and text_given:
        raise DataError("give either --paper-id or a text query (--title/--abstract or --text), not both")
    if args.paper_id is None and not text_given:
        raise DataError("empty query: give --paper-id, --title/--abstract or --text")
    if args.text is not None and (args.title is not None or args.abstract is not None):
        raise DataError("give --text or --title/--abstract, not both")
    if args.top_k < 1:
        raise DataError(f"-k must be positive, got {args.top_k}")
    if args.index.is_dir():
        input_file(args.index, "--index")
    if args.embeddings is not None:
        input_file(args.embeddings, "--embeddings")
    index = load_index(args.index)
    if args.nprobe is not None:
        if index.info.get("kind") != "ivf":
            raise DataError(f"--nprobe applies to an IVF index; {args.index} is {index.info.get('kind')}")
        index.index.nprobe = args.nprobe
    if args.ef_search is not None:
        if index.info.get("kind") != "hnsw":
            raise DataError(f"--ef-search applies to an HNSW index; {args.index} is {index.info.get('kind')}")
        index.index.hnsw.efSearch = max(args.ef_search, args.top_k)
    exclude = None
    if args.paper_id is not None:
        paper_id = args.paper_id.strip()
        if not paper_id:
            raise DataError("empty query: --paper-id is blank")
        asked = {"model": args.model, "pooling": args.pooling, "max_length": args.max_length}
        check_settings(index.settings, {k: v for k, v in asked.items() if v is not None}, "query settings")
        if args.embeddings is not None:
            vectors = query_vectors_from_embeddings(index, args.embeddings, [paper_id])
        else:
            vectors = index.vector(paper_id)
        exclude = [paper_id]
        query = {"paper_id": paper_id, "title": index.titles[index.ids.index(paper_id)] if paper_id in index else ""}
    else:
        title = args.text if args.text is not None else (args.title or "")
        abstract = "" if args.text is not None else (args.abstract or "")
        vectors = embed_query(index, [(title, abstract)], args.model, args.pooling, args.max_length, args.device)
        query = {"title": title, "abstract": abstract}
    hits = index.search(vectors, args.top_k, exclude=exclude)[0]
    if args.json:
        print(
            json.dumps(
                {"query": query, "index": str(args.index), "neighbours": [h.__dict__ for h in hits]},
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    if query.get("paper_id"):
        print(f"neighbours of {query['paper_id']}: {' '.join(query['title'].split())}")
    print(format_table(hits, shutil.get_terminal_size((100, 20)).columns))
    return 0
