"""Retrieval in the BEIR layout, as MTEB scores SCIDOCS: nDCG@10 (MTEB's main score), MAP@100, Recall@100.

A BEIR folder holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` per line), ``queries.jsonl``
(``{"_id", "text"}``) and ``qrels/<split>.tsv`` (``query-id  corpus-id  score`` with a header line).
Each query is scored against every corpus document by the model's similarity (cosine unless its
sentence-transformers config names another); the ``TOP_K`` best documents of each query, a document
with the query's own id left out (BEIR's ``ignore_identical_ids``), go to trec_eval through pytrec_eval.
Values are in [0, 1], as MTEB writes them."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytrec_eval
from scipy.spatial.distance import cdist

from specter_utils.errors import DataError
from specter_utils.io import iter_jsonl

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
TOP_K = 1000  # documents kept per query, as MTEB's retrieval evaluator
# result key -> pytrec_eval measure
MEASURES = {"ndcg_at_10": "ndcg_cut_10", "map_at_100": "map_cut_100", "recall_at_100": "recall_100"}
SIMILARITIES = ("cosine", "dot", "euclidean", "manhattan")
_SCORE_CHUNK = 256  # queries per block of the score matrix


@dataclass
class BeirData:
    """One split of a BEIR folder: documents as ``(title, text)``, queries, and graded qrels."""

    root: Path
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str = "test"


def beir_paths(root: str | Path, split: str = "test") -> dict[str, Path]:
    root = Path(root)
    return {"corpus": root / CORPUS_FILE, "queries": root / QUERIES_FILE, "qrels": root / QRELS_DIR / f"{split}.tsv"}


def is_beir_dir(root: str | Path) -> bool:
    """True when ``root`` holds any file of the BEIR layout (so a missing one is an error, not another layout)."""
    root = Path(root)
    return any((root / name).exists() for name in (CORPUS_FILE, QUERIES_FILE, QRELS_DIR))


def _read_corpus(path: Path) -> dict[str, tuple[str, str]]:
    corpus: dict[str, tuple[str, str]] = {}
    for line, row in iter_jsonl(path):
        if not isinstance(row, dict) or "_id" not in row:
            raise DataError('expected an object with "_id", "title" and "text"', path, line)
        doc_id = str(row["_id"])
        if doc_id in corpus:
            raise DataError("duplicate document id", path, line, doc_id)
        title, text = str(row.get("title") or ""), str(row.get("text") or "")
        if not (title.strip() or text.strip()):
            raise DataError("document has neither title nor text", path, line, doc_id)
        corpus[doc_id] = (title, text)
    if not corpus:
        raise DataError("no documents (the file is empty)", path)
    return corpus


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for line, row in iter_jsonl(path):
        if not isinstance(row, dict) or "_id" not in row:
            raise DataError('expected an object with "_id" and "text"', path, line)
        query_id = str(row["_id"])
        if query_id in queries:
            raise DataError("duplicate query id", path, line, query_id)
        text = str(row.get("text") or "")
        if not text.strip():
            raise DataError("query has no text", path, line, query_id)
        queries[query_id] = text
    if not queries:
        raise DataError("no queries (the file is empty)", path)
    return queries


def _read_qrels(path: Path, queries: dict[str, str], corpus: dict[str, tuple[str, str]]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for line, fields in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not fields or not "".join(fields).strip():
                continue
            if line == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue  # the header
            if len(fields) < 3:
                columns = f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(fields)}"
                raise DataError(columns, path, line)
            query_id, doc_id, score = fields[0].strip(), fields[1].strip(), fields[2].strip()
            try:
                relevance = int(float(score))
            except ValueError:
                raise DataError(f"score {score!r} is not a number", path, line) from None
            if query_id not in queries:
                raise DataError(f"query id not in {QUERIES_FILE}", path, line, query_id)
            if doc_id not in corpus:
                raise DataError(f"corpus id not in {CORPUS_FILE}", path, line, doc_id)
            qrels.setdefault(query_id, {})[doc_id] = relevance
    if not any(r > 0 for docs in qrels.values() for r in docs.values()):
        raise DataError("no relevant (score > 0) query-document pair", path)
    return qrels


def read_beir_dir(root: str | Path, split: str = "test") -> BeirData:
    """Read and check one split of a BEIR folder; a DataError names the file (and line, id) that is wrong."""
    paths = beir_paths(root, split)
    for name, path in paths.items():
        if not path.is_file():
            raise DataError(f"BEIR layout: the {name} file is missing", path)
    corpus = _read_corpus(paths["corpus"])
    queries = _read_queries(paths["queries"])
    qrels = _read_qrels(paths["qrels"], queries, corpus)
    return BeirData(Path(root), corpus, queries, qrels, split)


# ---------------------------------------------------------------- scoring
def similarity_scores(queries: np.ndarray, documents: np.ndarray, similarity: str = "cosine") -> np.ndarray:
    """``(n_queries, n_docs)`` scores, higher is closer (distances negated), as sentence-transformers defines them."""
    queries = np.asarray(queries, dtype=np.float32)
    documents = np.asarray(documents, dtype=np.float32)
    if similarity == "cosine":

        def unit(x: np.ndarray) -> np.ndarray:
            return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

        return unit(queries) @ unit(documents).T
    if similarity == "dot":
        return queries @ documents.T
    if similarity in ("euclidean", "manhattan"):
        return -cdist(queries, documents, "euclidean" if similarity == "euclidean" else "cityblock").astype(np.float32)
    raise ValueError(f"similarity must be one of {', '.join(SIMILARITIES)}, got {similarity!r}")


def retrieve(
    query_ids: list[str],
    query_vectors: np.ndarray,
    doc_ids: list[str],
    doc_vectors: np.ndarray,
    similarity: str = "cosine",
    top_k: int = TOP_K,
    ignore_identical_ids: bool = True,
) -> dict[str, dict[str, float]]:
    """The run: each query's ``top_k`` documents with their scores (``{query: {doc: score}}``)."""
    doc_index = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    keep = min(top_k + 1, len(doc_ids))  # one more, in case the query's own id is among them
    run: dict[str, dict[str, float]] = {}
    for start in range(0, len(query_ids), _SCORE_CHUNK):
        block = similarity_scores(query_vectors[start : start + _SCORE_CHUNK], doc_vectors, similarity)
        if keep < block.shape[1]:
            top = np.argpartition(-block, keep - 1, axis=1)[:, :keep]
        else:
            top = np.tile(np.arange(block.shape[1]), (len(block), 1))
        for row, query_id in enumerate(query_ids[start : start + _SCORE_CHUNK]):
            columns = top[row]
            if ignore_identical_ids and query_id in doc_index:
                columns = columns[columns != doc_index[query_id]]
            columns = columns[np.argsort(-block[row, columns], kind="stable")][:top_k]
            run[query_id] = {doc_ids[c]: float(block[row, c]) for c in columns}
    return run


def retrieval_metrics(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    """nDCG@10, MAP@100 and Recall@100 (pytrec_eval), each the mean over the queries scored (in both the qrels and
    the run, as MTEB), in [0, 1] (5 decimals)."""
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.100", "recall.100"})
    per_query = evaluator.evaluate(run)
    if not per_query:
        raise ValueError("no query of the qrels is in the run")
    return {
        key: round(float(np.mean([scores[measure] for scores in per_query.values()])), 5)
        for key, measure in MEASURES.items()
    }
