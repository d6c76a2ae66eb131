"""Table 1's rows that are not embeddings: rankers that score each query's candidates from the text or from no text.

- ``bm25``: BM25 (the ``bm25s`` package, its defaults unchanged) of the query paper's title + abstract against each
  candidate's. The index holds every paper of the benchmark's metadata files with text, so term statistics (IDF,
  average length) come from the whole benchmark, not from one query's 30 candidates.
- ``in-degree`` (text-free): a candidate's number of citations in the training graph: the metadata's citations
  minus every one from or to a held-out query of any ranking task (either split), as for the ``sgc`` baseline, so
  a query's own citations never count, on cite (its references are the positives) or anywhere else.
- ``year`` (text-free): papers published no later than the query first, the most recent of them first, then those
  published after it, the nearest first: ``gap = year(query) - year(candidate)``, score ``-gap`` when
  ``gap >= 0``, else ``-(AFTER_QUERY + |gap|)``. Citations almost always point back in time, so a paper's year
  relative to the query's is what it can tell without text; plain closeness (``-|gap|``) ignores that direction. A paper without a year takes the median year of the papers that have one.

Each ranker writes the same trec run (``{query: {candidate: score}}``, scores rounded to 5 decimals as
``evaluation.ranking``'s) and is scored by the same pytrec_eval code (``ranking.evaluate_run``), so MAP, nDCG and
per-query AP are computed exactly as for the embedding rows; equal scores (frequent for the two text-free rankers)
are broken by trec_eval's document-id order, as equal distances are. A query or candidate the ranker cannot score
(BM25: no text) is left out as a paper without an embedding is. Classification and recommendation have no value
for these rows (``skipped`` says so); a ranker whose data the benchmark lacks (no citations: the real SCIDOCS
metadata; no years) gives no row and its reason."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import scipy.sparse

from specter_utils.data.graph import CitationGraph, edges_from_paper_lists
from specter_utils.data.records import Paper
from specter_utils.data.scidocs import METADATA_FILES, RANKING_TASKS, available_tasks, read_scidocs_dir
from specter_utils.embedding.inputs import read_metadata_files
from specter_utils.errors import DataError
from specter_utils.evaluation.ranking import SCORE_DECIMALS, RankingResult, coverage_counts, evaluate_run
from specter_utils.tasks import BY_NAME
from specter_utils.vocabularies import EVAL_SPLITS, RANKERS

logger = logging.getLogger(__name__)

RANKER_KEY = "ranker"  # a ranker's result carries its name under config[RANKER_KEY]; an embedding row's does not
TEXT_FREE = ("in-degree", "year")  # the rankers that read no text
DESCRIPTIONS = {
    "bm25": "BM25 (bm25s 0.3: Lucene, k1 1.5, b 0.75; lower case, English stop words, no stemming) of the query's "
    "title + abstract against each candidate's, term statistics over every benchmark paper with text",
    "in-degree": "the candidate's citations in the training graph (no citation from or to a held-out query)",
    "year": "papers no newer than the query first, the most recent first, then newer ones, the nearest first; a "
    "paper without a year at the median year",
}
AFTER_QUERY = 10_000  # larger than any gap between two years: a paper newer than the query ranks below every older one
QueryScorer = Callable[[str, Sequence[str]], dict[str, float] | None]


def _text(paper: Paper) -> str:
    return f"{paper.title} {paper.abstract or ''}".strip()


def _year(value: Any) -> int | None:
    """A year from a record's value (``2000``, ``"2000"``, ``2000.0``); None for anything else."""
    try:
        year = int(float(value))
    except (TypeError, ValueError):
        return None
    return year if 0 < year < 10_000 else None


@dataclass
class RankerData:
    """What the rankers read from a SCIDOCS-layout folder: its papers (every metadata file) and held-out queries."""

    root: Path
    papers: dict[str, Paper]
    held_out: set[str] = field(default_factory=set)

    @cached_property
    def graph(self) -> CitationGraph:
        """The training graph: the metadata's citations less every one from or to a held-out query."""
        return CitationGraph.from_edges(edges_from_paper_lists(self.papers)).without_edges_of(self.held_out)

    @cached_property
    def years(self) -> dict[str, int]:
        """Each paper's publication year: ``Paper.year``, else the metadata record's ``year`` (papers without one
        are left out)."""
        years = {pid: _year(p.year if p.year is not None else p.extras.get("year")) for pid, p in self.papers.items()}
        return {pid: year for pid, year in years.items() if year is not None}

    def unavailable(self, name: str, ranked: set[str]) -> str | None:
        """Why ranker ``name`` cannot rank the papers ``ranked`` (the ranking tasks' queries and candidates) of
        this folder; None when it can."""
        if name not in RANKERS:
            raise DataError(f"unknown ranker {name!r}; known: {', '.join(RANKERS)}")
        if name == "bm25" and not any(_text(self.papers[p]) for p in ranked if p in self.papers):
            return "no query or candidate of the ranking tasks has a title or an abstract in the metadata files"
        if name == "in-degree" and not any(self.graph.cited_by.get(p) for p in ranked):
            return (
                "the metadata records no citation (references / cited_by) of a candidate other than by a held-out "
                "query (the real SCIDOCS metadata records none)"
            )
        if name == "year" and not any(p in self.years for p in ranked):
            return "the metadata records no publication year for a query or candidate of the ranking tasks"
        return None


def ranker_data(scidocs_dir: str | Path) -> RankerData:
    """Every paper of the folder's ``paper_metadata_*.json`` files and the queries of its ranking tasks (all splits)."""
    root = Path(scidocs_dir)
    files = [root / name for name in METADATA_FILES.values() if (root / name).exists()]
    if not files:
        raise DataError("no paper_metadata_*.json: the rankers read the papers from them", root)
    held = {q for by_split in _ranking_data(root).values() for qrels in by_split.values() for q in qrels}
    return RankerData(root, read_metadata_files(files), held)


def _ranking_data(root: Path, tasks: Iterable[str] | None = None) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """``{task folder: {split: qrels}}`` of every ranking task of the registry present (or of ``tasks``)."""
    wanted = set(tasks or ())
    present = [t for t in available_tasks(root) if t in RANKING_TASKS and (not wanted or t in wanted)]
    return read_scidocs_dir(root, present).ranking if present else {}


# ---------------------------------------------------------------- the three rankers
def bm25_scorer(data: RankerData) -> QueryScorer:
    """Scores of BM25 over every paper with text (module docstring); None for a query without text.

    The numbers of ``bm25s.BM25.get_scores``, to the last bit (float32, each query token's precomputed score added in
    the query's token order), computed for the query's candidates only, from each candidate's own tokens; the
    held-out queries are tokenized in one call (bm25s tokenizes each text on its own)."""
    ids = [pid for pid, paper in data.papers.items() if _text(paper)]
    row = {pid: i for i, pid in enumerate(ids)}
    tokens = bm25s.tokenize([_text(data.papers[pid]) for pid in ids], show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    index = retriever.scores  # per vocabulary token: its documents and their scores (rows of a CSR matrix)
    shape = (len(index["indptr"]) - 1, index["num_docs"])
    # per document: its tokens (sorted) and their scores
    by_paper = scipy.sparse.csr_matrix((index["data"], index["indices"], index["indptr"]), shape=shape).tocsc()
    held = [q for q in sorted(data.held_out) if q in data.papers and _text(data.papers[q])]
    held_words = bm25s.tokenize([_text(data.papers[q]) for q in held], return_ids=False, show_progress=False)
    words = dict(zip(held, held_words, strict=True))

    def score(query: str, candidates: Sequence[str]) -> dict[str, float] | None:
        paper = data.papers.get(query)
        if paper is None or not _text(paper):
            return None
        query_words = words.get(query)
        if query_words is None:
            query_words = bm25s.tokenize(_text(paper), return_ids=False, show_progress=False)[0]
        token_ids = [retriever.vocab_dict[w] for w in query_words if w in retriever.vocab_dict]
        scored = [c for c in candidates if c in row]
        if not token_ids:
            return dict.fromkeys(scored, 0.0)
        columns = np.fromiter((row[c] for c in scored), dtype=np.int64, count=len(scored))
        total = _query_scores(by_paper, columns, token_ids)
        return {c: float(v) for c, v in zip(scored, total, strict=True)}

    return score


def _query_scores(by_paper: scipy.sparse.csc_matrix, columns: np.ndarray, token_ids: list[int]) -> np.ndarray:
    """Each document of ``columns``' BM25 score for the query tokens ``token_ids`` (in the query's order, repeats
    kept): its precomputed score of each token (``by_paper``: documents as columns, tokens as rows), added one by one
    in that order in float32, as ``bm25s`` adds them."""
    first, lengths = by_paper.indptr[columns], np.diff(by_paper.indptr)[columns]
    entries = np.repeat(first - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    owner = np.repeat(np.arange(len(columns)), lengths)  # each entry's document
    unique, order = np.unique(token_ids, return_inverse=True)
    place = np.minimum(np.searchsorted(unique, by_paper.indices[entries]), len(unique) - 1)
    kept = unique[place] == by_paper.indices[entries]
    table = np.zeros((len(columns), len(unique)), dtype=by_paper.dtype)  # document x the query's distinct tokens
    table[owner[kept], place[kept]] = by_paper.data[entries[kept]]
    return np.cumsum(table[:, order], axis=1)[:, -1]  # a running sum along the query's tokens: bm25s's order


def in_degree_scorer(data: RankerData) -> QueryScorer:
    """Each candidate's in-degree in the training graph (0 when nothing cites it); every query is scored."""
    cited_by = data.graph.cited_by

    def score(query: str, candidates: Sequence[str]) -> dict[str, float]:
        return {c: float(len(cited_by.get(c, ()))) for c in candidates}

    return score


def year_score(query_year: float, candidate_year: float) -> float:
    """Earlier-or-same-year candidates first, the most recent first; later ones after them, the nearest first."""
    gap = query_year - candidate_year
    return -gap if gap >= 0 else -(AFTER_QUERY - gap)


def year_scorer(data: RankerData) -> QueryScorer:
    """:func:`year_score` of each candidate, the median year standing in for a missing one; every query is scored."""
    years = data.years
    median = float(statistics.median(years.values()))

    def score(query: str, candidates: Sequence[str]) -> dict[str, float]:
        year = years.get(query, median)
        return {c: year_score(year, years.get(c, median)) for c in candidates}

    return score


SCORERS = {"bm25": bm25_scorer, "in-degree": in_degree_scorer, "year": year_scorer}


# ---------------------------------------------------------------- runs and scores
def ranker_run(
    qrels: Mapping[str, Mapping[str, int]], score: QueryScorer
) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """The trec run ``{query: {candidate: score}}`` (5 decimals) and coverage counts, as ``ranking.make_run``'s."""
    run: dict[str, dict[str, float]] = {}
    missing_queries: list[str] = []
    missing_candidates: list[str] = []
    relevant_missing = scored = 0
    for query, docs in qrels.items():
        scores = score(query, list(docs))
        if scores is None:
            missing_queries.append(query)
            continue
        for doc, rel in docs.items():
            if doc not in scores:
                missing_candidates.append(doc)
                relevant_missing += int(rel > 0)
        if scores:
            run[query] = {doc: round(value, SCORE_DECIMALS) for doc, value in scores.items()}
            scored += len(scores)
    return run, coverage_counts(qrels, run, missing_queries, missing_candidates, relevant_missing, scored, "scored")


def rank_task(qrels: Mapping[str, Mapping[str, int]], score: QueryScorer, name: str = "") -> RankingResult:
    """One ranking task scored by a ranker: MAP and nDCG (x 100), coverage and per-query trec_eval values."""
    run, coverage = ranker_run(qrels, score)
    return evaluate_run({q: dict(d) for q, d in qrels.items()}, run, coverage, name, scored_by="the ranker")


def ranking_qrels(scidocs_dir: str | Path, split: str = "test", tasks: Iterable[str] | None = None) -> dict:
    """``{task folder: qrels}`` of ``split`` for every ranking task of the registry present (or of ``tasks``)."""
    return {t: by_split[split] for t, by_split in _ranking_data(Path(scidocs_dir), tasks).items() if split in by_split}


def is_ranker(result: Mapping[str, Any]) -> bool:
    """Whether a Table 1 result is a ranker's row (not an embeddings file's)."""
    return bool((result.get("config") or {}).get(RANKER_KEY))


def score_rankers(
    scidocs_dir: str | Path,
    names: Sequence[str] = RANKERS,
    split: str = "test",
    tasks: Iterable[str] | None = None,
    data: RankerData | None = None,
) -> dict[str, dict[str, Any]]:
    """Each ranker of ``names`` on every ranking task present (of ``tasks``, folder names), shaped as
    ``suite.evaluate``'s result, with each query's AP x 100 in ``details[task]["per_query_ap"]`` and tasks of another
    kind under ``skipped``. A ranker the folder has no data for gives ``{"skipped": {"ranker": reason}, "config"}``."""
    if split not in EVAL_SPLITS:
        raise DataError(f"split must be 'test' or 'val', got {split!r}")
    unknown = [n for n in names if n not in RANKERS]
    if unknown:
        raise DataError(f"unknown ranker(s) {unknown}; known: {', '.join(RANKERS)}")
    root = Path(scidocs_dir)
    qrels = ranking_qrels(root, split, tasks)
    data = data or ranker_data(root)
    others = [t for t in available_tasks(root) if t not in qrels and (not tasks or t in tasks)]
    ranked = {p for task_qrels in qrels.values() for q, docs in task_qrels.items() for p in (q, *docs)}
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        started = time.perf_counter()
        config = {RANKER_KEY: name, "description": DESCRIPTIONS[name], "data_dir": str(root), "split": split}
        config["text_free"] = name in TEXT_FREE
        reason = data.unavailable(name, ranked) if qrels else f"no ranking task with {split} qrels in the folder"
        if reason:
            logger.warning("ranker %s skipped: %s", name, reason)
            out[name] = {"skipped": {RANKER_KEY: reason}, "config": config}
            continue
        score = SCORERS[name](data)
        result: dict[str, Any] = {}
        coverage, details = {}, {}
        for task, task_qrels in qrels.items():
            key = BY_NAME[task].key
            task_started = time.perf_counter()
            scored = rank_task(task_qrels, score, f"{name}/{task}/{split}.qrel")
            result[key], coverage[key] = scored.metrics, scored.coverage
            details[key] = {"seconds": round(time.perf_counter() - task_started, 2)}
            details[key]["per_query_ap"] = {q: 100.0 * v["map"] for q, v in scored.per_query.items()}
            logger.info("%s on %s: MAP %.2f, nDCG %.2f", name, key, scored.metrics["map"], scored.metrics["ndcg"])
        result["coverage"], result["details"] = coverage, details
        result["skipped"] = {BY_NAME[t].key: f"the {name} ranker scores ranking tasks only" for t in others}
        config["tasks"] = [BY_NAME[t].key for t in qrels]
        config["seconds"] = round(time.perf_counter() - started, 2)
        result["config"] = config
        out[name] = result
    return out
