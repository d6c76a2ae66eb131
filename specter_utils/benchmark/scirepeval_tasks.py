"""Tasks in SciRepEval's formats built from a corpus, beside the SCIDOCS-layout tasks (``DIR/scirepeval``).

- ``citations-received`` (regression): log1p of the citations a paper receives, inside the corpus, in its first
  ``citation_window_years`` years; only papers whose whole window lies inside the citing papers' dates.
- ``same-author`` (proximity): a query paper; relevance 1: up to 5 other papers sharing an author (last name +
  first initial); 0: 25 random papers sharing none.
- ``title-search`` (adhoc_search): a paper's title as the query; relevance 2: the paper itself; 1: up to 5 of the
  papers it cites or that cite it; 0: 25 random papers outside that neighbourhood.
- ``fos`` (multi-label classification): where the corpus gives several labels per paper (S2ORC, OpenAlex).

Held out of the training dir (with every edge touching them, as SCIDOCS's queries): proximity queries, the
title-search known items and the regression test papers (their label is read off the citation graph training
learns from). Candidates, regression training papers and classification papers may be training papers, as
SCIDOCS's candidates and classification papers are. Queries are drawn first among the papers the SCIDOCS tasks
already hold out, so these tasks take training data only where those run out; the regression test papers are a
uniform sample (drawing them from cite/co-cite queries would favour cited papers).
"""

from __future__ import annotations

import math
import random
import re
import statistics
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.benchmark.scirepeval_folder import KNOWN_ITEM_SCORE, FormatTask, write_format_dir
from specter_utils.benchmark.splits import random_negatives, sample_ids, split_ids
from specter_utils.corpus_config import BenchmarkConfig
from specter_utils.data.corpus import Corpus
from specter_utils.data.graph import CitationGraph
from specter_utils.vocabularies import SCIREPEVAL_FORMAT_TASKS

REGRESSION_TEST_FRACTION = 0.25  # of the labelled papers; the rest is the regressor's training split
COVERAGE_SHARE = 0.5  # a month of citing papers counts as covered with half the median month's count
MIN_TASK_ITEMS = 10  # fewer eligible queries or labelled papers: the task is absent (benchmark.json says why)
_NEW_ARXIV = re.compile(r"^(?:arxiv:)?(\d\d)(\d\d)\.\d+(?:v\d+)?$", re.IGNORECASE)
_OLD_ARXIV = re.compile(r"^[a-z-]+(?:\.[a-z]{2})?/(\d\d)(\d\d)\d{3}(?:v\d+)?$", re.IGNORECASE)
_NOT_A_NAME = {"et", "al", "al.", "jr", "jr.", "sr", "sr.", "ii", "iii", "collaboration"}


# ---------------------------------------------------------------- dates
def _month(yy: str, mm: str) -> int | None:
    month = int(mm)
    if not 1 <= month <= 12:
        return None
    year = int(yy) + (1900 if int(yy) >= 91 else 2000)  # arXiv began in August 1991
    return year * 12 + month - 1


def arxiv_month(arxiv_id: str) -> int | None:
    """Months since year 0 of an arXiv id's submission month (``2304.07638``, ``hep-th/9201003``); else None."""
    match = _NEW_ARXIV.match(arxiv_id.strip()) or _OLD_ARXIV.match(arxiv_id.strip())
    return _month(*match.groups()) if match else None


def date_span(corpus: Corpus, pid: str) -> tuple[int, int] | None:
    """The first and last month a paper may date from: its arXiv month where its id (or, on hep-th, its SNAP number
    ``YYMMNNN`` with leading zeros dropped) gives one, else its whole ``Paper.year``; None if undated."""
    if corpus.name == "hepth" and pid.isdigit():
        month = _month(f"{int(pid):07d}"[:2], f"{int(pid):07d}"[2:4])
    else:
        paper = corpus.papers.get(pid)
        month = arxiv_month(pid) or (arxiv_month(str(paper.extras.get("arxiv_id") or "")) if paper else None)
    if month is not None:
        return month, month
    paper = corpus.papers.get(pid)
    if paper is not None and paper.year:
        return paper.year * 12, paper.year * 12 + 11
    return None


def month_text(month: int) -> str:
    return f"{month // 12}-{month % 12 + 1:02d}"


def citing_coverage(spans: list[tuple[int, int]]) -> tuple[int, int]:
    """First and last month the citing papers cover: from the first citing paper to the last month whose citing
    papers number at least ``COVERAGE_SHARE`` of the median month's (between the first and the last citing month)
    and no later (hep-th's graph holds citing papers to early 2000, a handful after, though its abstracts run to
    2003)."""
    per_month = Counter(span[0] for span in spans)
    first, last = min(per_month), max(per_month)
    threshold = COVERAGE_SHARE * statistics.median(per_month.get(m, 0) for m in range(first, last + 1))
    end = max(span[1] for span in spans if per_month[span[0]] >= threshold)
    return first, end


# ---------------------------------------------------------------- authors
def author_key(name: str) -> str | None:
    """``"J.-B. Zuber"`` -> ``"zuber j"``: the last name and the first initial, accents and TeX marks dropped."""
    plain = unicodedata.normalize("NFKD", re.sub(r"\\[a-zA-Z]+|[\\{}\"'`^~]", "", name))
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch)).lower()
    tokens = [t for t in re.split(r"[\s.]+", plain) if t and t not in _NOT_A_NAME]
    tokens = [re.sub(r"[^a-z-]", "", t).strip("-") for t in tokens]
    tokens = [t for t in tokens if t]
    return None if len(tokens) < 2 else f"{tokens[-1]} {tokens[0][0]}"


# ---------------------------------------------------------------- shared helpers
@dataclass
class FormatTasks:
    """What the hook built: the tasks, the ids they hold out of training, and benchmark.json's account."""

    tasks: list[FormatTask] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)
    held_out: set[str] = field(default_factory=set)

    def write(self, root: str | Path) -> dict[str, Any]:
        """Write the folder (replacing an earlier one) and return benchmark.json's ``scirepeval`` entry."""
        write_format_dir(root, self.tasks)
        return {
            "folder": Path(root).name if self.tasks else None,
            "held_out_papers": len(self.held_out),
            "tasks": {task.name: {"type": task.type, **task.summary} for task in self.tasks},
            "absent": self.absent,
        }


def _paper_row(corpus: Corpus, pid: str) -> dict[str, str]:
    paper = corpus.papers[pid]
    return {"doc_id": pid, "title": paper.title, "abstract": paper.abstract or ""}


def _preferring(eligible: list[str], preferred: set[str], n: int, seed: int) -> list[str]:
    """``n`` of ``eligible``: first a seeded sample of those in ``preferred``, then of the rest."""
    first = sample_ids([p for p in eligible if p in preferred], n, seed)
    return sorted(first + sample_ids(eligible, n - len(first), seed + 1, exclude=first))


def _cap(config: BenchmarkConfig, text: set[str]) -> int:
    """Held-out items per task: ``n_queries``, at most SCIDOCS's per-task share of the papers with text."""
    return min(config.n_queries, int(config.max_heldout_fraction * len(text) / 2))


# ---------------------------------------------------------------- citations-received (regression)
def citations_received(
    corpus: Corpus, text: set[str], graph: CitationGraph, config: BenchmarkConfig, seed: int
) -> FormatTask | str:
    """The regression task, or why it is absent."""
    window = config.citation_window_years * 12
    citers = {c for c, refs in graph.references.items() if refs}
    spans = {pid: date_span(corpus, pid) for pid in citers | text}
    dated_citers = [spans[c] for c in citers if spans[c] is not None]
    if not dated_citers:
        return "no citing paper has a date (an arXiv id or a year)"
    start, end = citing_coverage(dated_citers)
    # a paper outside the graph (hep-th: its citations could not be recovered) would read as never cited
    dated = [p for p in text if spans[p] is not None and (p in graph.references or p in graph.cited_by)]
    eligible = sorted(p for p in dated if spans[p][0] >= start and spans[p][0] + window - 1 <= end)
    if len(eligible) < MIN_TASK_ITEMS:
        return (
            f"{len(eligible)} papers with a title have their whole {config.citation_window_years}-year window inside "
            f"the citing papers' dates {month_text(start)} to {month_text(end)} ({len(dated)} dated papers in the graph)"
        )
    n_test = min(_cap(config, text), round(REGRESSION_TEST_FRACTION * len(eligible)))
    if n_test < 1:
        return f"no test paper fits: at most {_cap(config, text)} held-out papers per task"
    n_total = min(len(eligible), round(n_test / REGRESSION_TEST_FRACTION))
    chosen = sample_ids(eligible, n_total, seed + 20)
    split = split_ids(chosen, {"test": n_test / n_total, "train": 1 - n_test / n_total}, seed + 21)
    counts: dict[str, int] = {}
    undated = before = 0
    for pid in chosen:
        first = spans[pid][0]
        n = 0
        for citer in graph.cited_by.get(pid, ()):
            span = spans[citer]
            if span is None:
                undated += 1
            elif span[1] < first:
                before += 1
            elif span[1] <= first + window - 1:
                n += 1
        counts[pid] = n
    values = [counts[p] for p in chosen]
    rows = {name: [(p, math.log1p(counts[p])) for p in ids] for name, ids in split.items()}
    summary = {
        "rule": f"log1p of the citations received inside the corpus from papers dated in the paper's first "
        f"{config.citation_window_years} years (months {window}; a year-only date counts as its whole year)",
        "window_years": config.citation_window_years,
        "citing_dates": [month_text(start), month_text(end)],
        "coverage_rule": f"from the first citing paper to the last month with {COVERAGE_SHARE} of the median "
        "month's citing papers",
        "last_eligible_publication": month_text(end - window + 1),
        "dated_papers_with_text_in_the_graph": len(dated),
        "eligible_papers": len(eligible),
        "labelled_papers": len(chosen),
        "train": len(split["train"]),
        "test": len(split["test"]),
        "zero_citation_papers": sum(1 for v in values if v == 0),
        "mean_citations": round(sum(values) / len(values), 3),
        "max_citations": max(values),
        "citations_from_undated_papers": undated,
        "citations_dated_before_the_paper": before,
        "held_out": "the test papers (with their edges); training papers may be in training triplets",
        "seed": seed + 20,
    }
    return FormatTask(
        name="citations-received",
        type="regression",
        metrics=["kendalltau", "pearsonr"],
        description=f"log1p of the citations a paper receives inside the corpus in its first "
        f"{config.citation_window_years} years after publication",
        meta=[_paper_row(corpus, p) for p in chosen],
        rows=rows,
        held_out=set(split["test"]),
        summary=summary,
    )


# ---------------------------------------------------------------- same-author (proximity)
def same_author(
    corpus: Corpus, text: set[str], held_out: set[str], config: BenchmarkConfig, seed: int
) -> FormatTask | str:
    keys = {p: {k for k in map(author_key, corpus.papers[p].authors) if k} for p in sorted(text)}
    keys = {p: ks for p, ks in keys.items() if ks}
    if not keys:
        return "no paper with a title names an author"
    by_author: dict[str, set[str]] = defaultdict(set)
    for pid, ks in keys.items():
        for k in ks:
            by_author[k].add(pid)
    shared = {p: set().union(*(by_author[k] for k in ks)) - {p} for p, ks in keys.items()}
    eligible = sorted(p for p, others in shared.items() if len(others) >= config.min_positives)
    if len(eligible) < MIN_TASK_ITEMS:
        return f"{len(eligible)} papers share an author with {config.min_positives}+ other papers with a title"
    queries = _preferring(eligible, held_out, _cap(config, text), seed + 30)
    rng = random.Random(seed + 31)
    pool = sorted(keys)
    qrels: dict[str, dict[str, int]] = {}
    for q in queries:
        positives = sorted(rng.sample(sorted(shared[q]), min(config.positives, len(shared[q]))))
        negatives = sorted(random_negatives(pool, config.negatives, shared[q] | {q}, rng))
        qrels[q] = {**dict.fromkeys(positives, 1), **dict.fromkeys(negatives, 0)}
    meta = [
        {"doc_id": q, "query": _paper_row(corpus, q), "candidates": [_paper_row(corpus, c) for c in qrels[q]]}
        for q in queries
    ]
    return FormatTask(
        name="same-author",
        type="proximity",
        metrics=["map", "ndcg"],
        description="a query paper ranks papers sharing an author with it (last name and first initial) above "
        "random papers sharing none",
        meta=meta,
        qrels=qrels,
        held_out=set(queries),
        summary={
            "rule": f"author names as last name + first initial; relevance 1: up to {config.positives} papers "
            f"sharing one with the query; 0: {config.negatives} random papers naming authors, sharing none",
            "papers_with_authors": len(keys),
            "distinct_author_keys": len(by_author),
            "eligible_queries": len(eligible),
            "queries": len(queries),
            "queries_already_held_out": len(set(queries) & held_out),
            "positives": sum(sum(d.values()) for d in qrels.values()),
            "negatives": sum(len(d) - sum(d.values()) for d in qrels.values()),
            "held_out": "the query papers (with their edges); candidates may be training papers",
            "seed": seed + 30,
        },
    )


# ---------------------------------------------------------------- title-search (adhoc_search)
def title_search(
    corpus: Corpus, text: set[str], graph: CitationGraph, held_out: set[str], config: BenchmarkConfig, seed: int
) -> FormatTask | str:
    neighbours = {
        p: ((set(graph.references.get(p, ())) | set(graph.cited_by.get(p, ()))) & text) - {p} for p in sorted(text)
    }
    eligible = sorted(p for p, ns in neighbours.items() if ns)
    if len(eligible) < MIN_TASK_ITEMS:
        return f"{len(eligible)} papers with a title cite or are cited by another paper with a title"
    queries = _preferring(eligible, held_out, _cap(config, text), seed + 40)
    rng = random.Random(seed + 41)
    pool = sorted(text)
    qrels: dict[str, dict[str, int]] = {}
    meta = []
    for pid in queries:
        related = sorted(rng.sample(sorted(neighbours[pid]), min(config.positives, len(neighbours[pid]))))
        negatives = sorted(random_negatives(pool, config.negatives, neighbours[pid] | {pid}, rng))
        docs = {pid: KNOWN_ITEM_SCORE, **dict.fromkeys(related, 1), **dict.fromkeys(negatives, 0)}
        qrels[f"title:{pid}"] = docs
        meta.append(
            {
                "doc_id": f"title:{pid}",
                "query": corpus.papers[pid].title,
                "candidates": [_paper_row(corpus, c) for c in docs],
            }
        )
    return FormatTask(
        name="title-search",
        type="adhoc_search",
        metrics=["ndcg_cut_10"],
        description="a stand-in for real search queries: a paper's title as the query finds the paper itself "
        "(relevance 2, a known item) and the papers it cites or that cite it (relevance 1) among random papers",
        meta=meta,
        qrels=qrels,
        held_out=set(queries),
        summary={
            "rule": f"query: a paper's title; relevance {KNOWN_ITEM_SCORE}: the paper; 1: up to {config.positives} "
            f"papers it cites or that cite it; 0: {config.negatives} random papers outside that neighbourhood",
            "eligible_queries": len(eligible),
            "queries": len(queries),
            "queries_already_held_out": len(set(queries) & held_out),
            "neighbours": sum(sum(1 for s in d.values() if s == 1) for d in qrels.values()),
            "negatives": sum(sum(1 for s in d.values() if s == 0) for d in qrels.values()),
            "held_out": "the papers whose titles are queries (with their edges); neighbours and negatives may be "
            "training papers",
            "seed": seed + 40,
        },
    )


# ---------------------------------------------------------------- fos (multi-label classification)
def multi_label_classes(corpus: Corpus, text: set[str], config: BenchmarkConfig, seed: int) -> FormatTask | str:
    lists = {p: sorted(set(ls)) for p, ls in corpus.label_lists().items() if p in text}
    several = sum(1 for ls in lists.values() if len(ls) > 1)
    if not several:
        return f"no paper has several labels in field {corpus.label_field!r} ({len(lists)} papers have one)"
    sizes = Counter(label for ls in lists.values() for label in ls)
    min_size = config.min_class_size or min(100, max(10, len(lists) // 50))
    kept = {c for c, n in sizes.items() if n >= min_size}
    rows = {p: [c for c in ls if c in kept] for p, ls in lists.items()}
    rows = {p: ls for p, ls in rows.items() if ls}
    if len(kept) < 2 or len(rows) < MIN_TASK_ITEMS:
        return f"{len(kept)} labels on {min_size}+ papers, {len(rows)} papers keep one"
    chosen = sorted(rows)
    if config.max_class_papers and config.max_class_papers < len(chosen):
        chosen = sample_ids(chosen, config.max_class_papers, seed + 50)
    split = split_ids(chosen, {"train": 0.8, "test": 0.2}, seed + 51)
    return FormatTask(
        name="fos",
        type="classification",
        metrics=["f1_macro"],
        description=f"multi-label classification of the corpus's {corpus.label_field!r} labels",
        meta=[_paper_row(corpus, p) for p in chosen],
        rows={name: [(p, rows[p]) for p in ids] for name, ids in split.items()},
        multi_label=True,
        summary={
            "rule": f"every label of the paper's {corpus.label_field!r} list held by {min_size}+ papers",
            "labels": len(kept),
            "papers_with_several_labels": several,
            "train": len(split["train"]),
            "test": len(split["test"]),
            "held_out": "none (as SCIDOCS's classification papers)",
            "seed": seed + 50,
        },
    )


# ---------------------------------------------------------------- the hook
def plan_scirepeval_tasks(
    corpus: Corpus, text: set[str], graph: CitationGraph, held_out: set[str], config: BenchmarkConfig, seed: int
) -> FormatTasks:
    """Build the tasks ``config.scirepeval_tasks`` names (those the corpus supports); ``held_out``: the SCIDOCS
    queries, preferred as queries here. The caller keeps ``FormatTasks.held_out`` out of the training dir."""
    unknown = [t for t in config.scirepeval_tasks if t not in SCIREPEVAL_FORMAT_TASKS]
    if unknown:
        raise ValueError(f"scirepeval_tasks must hold only {', '.join(SCIREPEVAL_FORMAT_TASKS)}; got {unknown}")
    if config.citation_window_years < 1:
        raise ValueError(f"citation_window_years must be at least 1, got {config.citation_window_years}")
    builders = {
        "citations-received": lambda: citations_received(corpus, text, graph, config, seed),
        "same-author": lambda: same_author(corpus, text, held_out, config, seed),
        "title-search": lambda: title_search(corpus, text, graph, held_out, config, seed),
        "fos": lambda: multi_label_classes(corpus, text, config, seed),
    }
    out = FormatTasks()
    for name in SCIREPEVAL_FORMAT_TASKS:
        if name not in config.scirepeval_tasks:
            continue
        built = builders[name]()
        if isinstance(built, str):
            out.absent[name] = built
        else:
            out.tasks.append(built)
            out.held_out |= built.held_out
    return out
