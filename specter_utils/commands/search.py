"""``specter-utils search``: the papers most similar to a paper id or a free-text query, or to a batch of them."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from specter_utils.commands.common import POSITIVE_INT, check_out_file, input_file, int_at_least
from specter_utils.errors import DataError

EPILOG = """\
examples:
  specter-utils search --index emb/minilm.index.npz --paper-id 9711200
  specter-utils search --index emb/minilm.index.npz --title "Large N limit of superconformal field theories" -k 5
  specter-utils search --index emb/minilm.index.npz --text "black hole entropy from D-branes" --json
  # a paper that is not in the index, from another embeddings file made with the same settings:
  specter-utils search --index emb/minilm.index.npz --paper-id X --embeddings emb/new.jsonl
  # a batch: one paper id (or one query text) a line; JSON lines out, queries/s on stderr
  specter-utils search --index emb/minilm.index.npz --paper-id-file ids.txt --out hits.jsonl
  specter-utils search --index emb/minilm.index.npz --text-file queries.txt -k 5
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
    batch = parser.add_argument_group("a batch of queries (JSON lines out, one a query; queries/s on stderr)")
    batch.add_argument("--paper-id-file", type=Path, help="a file of paper ids, one a line")
    batch.add_argument(
        "--text-file",
        type=Path,
        help='a file of query texts, one a line (a .jsonl file: one {"title", "abstract"} object a line)',
    )
    batch.add_argument("--out", type=Path, help="write the JSON lines here (atomically) instead of stdout")
    batch.add_argument("--overwrite", action="store_true", help="replace an existing --out")
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
    parser.add_argument("--threads", type=POSITIVE_INT, help="FAISS threads (default: all cores)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from specter_utils.workflow.search import QuerySettings, format_table, open_index, search_paper, search_texts

    text_given = any(v is not None for v in (args.title, args.abstract, args.text))
    batch_given = args.paper_id_file is not None or args.text_file is not None
    if args.paper_id_file is not None and args.text_file is not None:
        raise DataError("give --paper-id-file or --text-file, not both")
    if batch_given and (args.paper_id is not None or text_given):
        raise DataError(
            "give a batch (--paper-id-file/--text-file) or one query (--paper-id, --title, --text), not both"
        )
    if args.paper_id is not None and text_given:
        raise DataError("give either --paper-id or a text query (--title/--abstract or --text), not both")
    if args.paper_id is None and not text_given and not batch_given:
        raise DataError("empty query: give --paper-id, --title/--abstract, --text, --paper-id-file or --text-file")
    if args.text is not None and (args.title is not None or args.abstract is not None):
        raise DataError("give --text or --title/--abstract, not both")
    if args.out is not None and not batch_given:
        raise DataError("--out applies to a batch (--paper-id-file or --text-file)")
    if args.top_k < 1:
        raise DataError(f"-k must be positive, got {args.top_k}")
    if args.index.is_dir():
        input_file(args.index, "--index")
    if args.embeddings is not None:
        input_file(args.embeddings, "--embeddings")
    for path, flag in ((args.paper_id_file, "--paper-id-file"), (args.text_file, "--text-file")):
        if path is not None:
            input_file(path, flag)
    if args.out is not None:
        check_out_file(args.out, args.overwrite, suffix=".jsonl")
    index = open_index(args.index, args.threads, args.nprobe, args.ef_search, args.top_k)
    settings = QuerySettings(args.model, args.pooling, args.max_length, args.device)
    if batch_given:
        return _run_batch(args, index, settings)
    if args.paper_id is not None:
        paper_id = args.paper_id.strip()
        if not paper_id:
            raise DataError("empty query: --paper-id is blank")
        hits = search_paper(index, paper_id, args.top_k, settings, args.embeddings)
        query = {"paper_id": paper_id, "title": index.titles[index.row(paper_id)] if paper_id in index else ""}
    else:
        title = args.text if args.text is not None else (args.title or "")
        abstract = "" if args.text is not None else (args.abstract or "")
        hits = search_texts(index, [(title, abstract)], args.top_k, settings).hits[0]
        query = {"title": title, "abstract": abstract}
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


def read_queries(args: argparse.Namespace) -> list[dict]:
    """The batch's queries: ``{"paper_id"}`` or ``{"title", "abstract"}`` each; a bad line is a DataError."""
    from specter_utils.io import iter_jsonl, read_lines

    if args.paper_id_file is not None:
        return [{"paper_id": line.strip()} for line in read_lines(args.paper_id_file) if line.strip()]
    if args.text_file.name.endswith((".jsonl", ".jsonl.gz")):
        queries = []
        for line, obj in iter_jsonl(args.text_file):
            if not isinstance(obj, dict) or not (str(obj.get("title") or "") + str(obj.get("abstract") or "")).strip():
                raise DataError('expected an object with a non-empty "title" or "abstract"', args.text_file, line)
            queries.append({"title": str(obj.get("title") or ""), "abstract": str(obj.get("abstract") or "")})
        return queries
    return [{"title": line.strip(), "abstract": ""} for line in read_lines(args.text_file) if line.strip()]


def _run_batch(args: argparse.Namespace, index, settings) -> int:
    import sys

    from specter_utils.io import atomic_write
    from specter_utils.workflow.search import search_papers, search_texts

    source = args.paper_id_file or args.text_file
    queries = read_queries(args)
    if not queries:
        raise DataError("no queries: the file has no non-blank line", source)
    if args.paper_id_file is not None:
        ids = [q["paper_id"] for q in queries]
        result = search_papers(index, ids, args.top_k, args.embeddings, source)
    else:
        result = search_texts(index, [(q["title"], q["abstract"]) for q in queries], args.top_k, settings)
    lines = [
        json.dumps({"query": query, "neighbours": [h.__dict__ for h in hits]}, ensure_ascii=False)
        for query, hits in zip(queries, result.hits, strict=True)
    ]
    if args.out is not None:
        with atomic_write(args.out) as handle:
            handle.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))
    seconds = result.search_seconds
    total = result.vector_seconds + result.search_seconds
    what = "vectors read" if args.paper_id_file is not None else "queries embedded"
    print(
        f"{len(queries)} queries: search {seconds:.3f} s ({len(queries) / max(seconds, 1e-9):,.0f} queries/s), "
        f"{what} in {result.vector_seconds:.3f} s ({len(queries) / max(total, 1e-9):,.0f} queries/s in all)"
        + (f"; wrote {args.out}" if args.out is not None else ""),
        file=sys.stderr,
    )
    return 0
