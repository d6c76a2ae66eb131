"""Build a SCIDOCS-style evaluation directory, plus a leakage-free training dir, from any citation corpus.

```
DIR/scidocs/   cite/ and cocite/ {val,test}.qrel, and cite-matched/ and cocite-matched/ (the same queries and
               positives, negatives matched to the positives: benchmark.matched); the corpus's labels as the
               mag/ classification task; paper_metadata_view_cite_read.json and paper_metadata_mag_mesh.json
DIR/train/     SPECTER-format training dir without any held-out query or an edge touching one
DIR/benchmark.json
DIR/later_papers.txt   with split_by=date only: the papers from the cutoff on, none of them in training
```
Held-out queries are the cite and co-cite queries (two disjoint sets). ``split_by=date`` draws them from the latest
period (``splits.latest_cutoff``) and keeps every paper of that period out of training. Every candidate has a title
(it must be embeddable). Metadata ``cited_by``/``references`` come from the same graph as training
(edges touching held-out queries removed), so a graph-based baseline cannot read the answers there.
"""

from __future__ import annotations

import random
import shutil
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from specter_utils.benchmark.matched import MatchedSampler, in_degrees, matched_task, popularity_summary
from specter_utils.benchmark.scirepeval_tasks import plan_scirepeval_tasks
from specter_utils.benchmark.splits import (
    draw_queries,
    later_papers,
    latest_cutoff,
    random_negatives,
    sample_ids,
    split_ids,
    split_queries,
    training_leakage,
)
from specter_utils.corpus_config import BenchmarkConfig
from specter_utils.data.convert import corpus_to_specter
from specter_utils.data.corpus import Corpus
from specter_utils.data.graph import CitationGraph
from specter_utils.data.scidocs import ScidocsData, scidocs_record, write_scidocs_dir
from specter_utils.data.specter_format import write_specter_dir
from specter_utils.errors import DataError
from specter_utils.io import atomic_write, write_json
from specter_utils.layout import BENCHMARK_FILE, LATER_PAPERS_FILE, SCIREPEVAL_DIR
from specter_utils.memory import collector_paused
from specter_utils.vocabularies import MULTI_LABEL_RULES, SPLIT_RULES

SCIDOCS_DIR, TRAIN_DIR = "scidocs", "train"
# How queries are drawn and split (benchmark.json split.query_rule; ``data audit`` checks a benchmark against it)
QUERY_RULE = (
    "per paper: each paper's own seeded draws put it in val or test and order the eligible papers; a task's queries "
    "are the first of each split in that order (val_fraction of them from val), so a benchmark with more queries holds "
    "every query of one with fewer, and with one corpus and seed no benchmark's validation query is another's test query"
)


def require_years(corpus: Corpus, needs: str, ids: set[str] | None = None) -> None:
    """A DataError (naming the corpus's source) when no paper of ``corpus`` (of ``ids``) has a publication year;
    ``needs`` says which setting needs them and what to do instead."""
    papers = corpus.papers if ids is None else {pid: corpus.papers[pid] for pid in ids}
    if not any(paper.year is not None for paper in papers.values()):
        raise DataError(
            f"corpus {corpus.name!r} has no publication year: {needs}",
            corpus.info.get("source") or corpus.report.source or None,
        )


def _cocitations(graph: CitationGraph, text: set[str]) -> dict[str, dict[str, int]]:
    """For each paper with text: how often each other paper with text is cited together with it."""
    papers = sorted(graph.cited_by)
    col = {p: i for i, p in enumerate(papers)}
    citing = sorted(graph.references)
    rows = [r for r, paper in enumerate(citing) for _ in graph.references[paper]]
    cols = [col[cited] for paper in citing for cited in graph.references[paper]]
    incidence = sparse.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(len(citing), len(papers)))
    with_text = np.array([p in text for p in papers], dtype=np.int64)
    co = (incidence.T @ incidence.multiply(with_text).tocsr()).tocsr()  # co[i, j]: papers citing both i and j
    co.setdiag(0)
    co.eliminate_zeros()
    out: dict[str, dict[str, int]] = {}
    for i, paper in enumerate(papers):
        start, end = co.indptr[i], co.indptr[i + 1]
        if paper in text and end > start:
            out[paper] = {
                papers[j]: int(n)
                for j, n in zip(co.indices[start:end].tolist(), co.data[start:end].tolist(), strict=True)
            }
    return out


def _ranking_task(
    queries: list[str],
    positives_of: dict[str, list[str]],
    pool: list[str],
    exclude_of: dict[str, set[str]],
    config: BenchmarkConfig,
    rng: random.Random,
) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for query in queries:
        positives = positives_of[query]
        negatives = random_negatives(pool, config.negatives, exclude_of[query] | {query} | set(positives), rng)
        qrels[query] = {**dict.fromkeys(positives, 1), **dict.fromkeys(negatives, 0)}
    return qrels


def _split_qrels(qrels: dict[str, dict[str, int]], config: BenchmarkConfig, seed: int) -> dict[str, Any]:
    """val and test by each query paper's own draw (``splits.query_split``), the same in every benchmark of ``seed``."""
    parts = split_queries(qrels, seed, config.val_fraction)
    return {name: {q: qrels[q] for q in ids} for name, ids in parts.items()}


def _classification(corpus: Corpus, text: set[str], config: BenchmarkConfig, seed: int) -> dict[str, Any]:
    lists = {pid: labels for pid, labels in corpus.label_lists().items() if pid in text}
    labels = {pid: label for pid, label in corpus.labels(config.multi_label).items() if pid in text}
    sizes = Counter(labels.values())
    min_size = config.min_class_size
    if min_size is None:  # 100 on hep-th (20K labelled papers); 2% of the labelled papers, at least 10, below
        min_size = min(100, max(10, len(labels) // 50))
    kept = sorted((c for c, n in sizes.items() if n >= min_size), key=lambda c: (-sizes[c], c))
    if config.max_classes is not None:
        kept = kept[: config.max_classes]
    rows: dict[str, list[tuple[str, str]]] = {"train": [], "val": [], "test": []}
    fractions = dict(zip(("train", "val", "test"), config.classification_split, strict=True))
    total = sum(sizes[c] for c in kept)
    keep_fraction = 1.0 if not config.max_class_papers else min(1.0, config.max_class_papers / max(total, 1))
    for label in kept:  # stratified: each class sampled and split with the same fractions
        members = [pid for pid, lab in labels.items() if lab == label]
        if keep_fraction < 1.0:
            members = sample_ids(members, max(3, round(keep_fraction * len(members))), seed)
        for split, ids in split_ids(members, fractions, seed).items():
            rows[split].extend((pid, label) for pid in ids)
    for split in rows:
        rows[split].sort()
    multi = sum(1 for ls in lists.values() if len(ls) > 1)
    if not lists:
        why = f"no paper with a title has a label in field {corpus.label_field!r}"
    elif not labels:
        why = f"every labelled paper has several labels and the multi-label rule is {config.multi_label!r}"
    elif len(kept) < 2:
        why = (
            f"{len(kept)} class(es) with at least {min_size} papers (of {len(sizes)} labels over {len(labels)} "
            "papers); a classification task needs 2"
        )
    else:
        why = ""
    return {
        "rows": rows,
        "classes": kept,
        "class_sizes": {c: sizes[c] for c in kept},
        "labelled": len(labels),
        "min_class_size": min_size,
        "sampled_fraction": round(keep_fraction, 4),
        "labels": {
            "field": corpus.label_field,
            "multi_label": config.multi_label,
            "papers_with_labels": len(lists),
            "multi_label_papers": multi,
            "dropped_multi_label": len(lists) - len(labels),
            "distinct_labels": len(sizes),
        },
        "why_absent": why,
    }


def _negatives_info(
    tasks: dict[str, dict[str, dict[str, int]]],
    widened: dict[str, dict[int, int]],
    sampler: MatchedSampler,
    years: dict[str, int | None],
    degree: dict[str, int],
) -> dict[str, Any]:
    """The build's account of both versions of cite and co-cite: each one's negative rule and, for the
    matched ones, the keys and how many slots needed a wider window; year and in-degree of positives vs negatives."""
    keys = " and ".join(sampler.keys)
    out: dict[str, Any] = {
        "in_degree": "papers citing it in the metadata graph (metadata_graph: no edge touching a held-out query), "
        "so a cite positive's in-degree does not count its own query",
        "degree_bucket": "0 for in-degree 0, else 1 + floor(log2(in-degree)): 1 | 2-3 | 4-7 | 8-15 | ...",
    }
    for name, qrels in tasks.items():
        entry: dict[str, Any] = {}
        if name in widened:
            entry["rule"] = (
                f"negative slot i is matched to the query's i-th positive (in turn): a random paper with text, not a "
                f"candidate of the query, with the same {keys}; when none is left, the window widens by one year and "
                "one bucket at a time"
            )
            entry["matching_keys"] = list(sampler.keys)
            if "year" not in sampler.keys:
                entry["note"] = "the corpus gives no publication years: matched on the in-degree only"
            entry["widened"] = {
                "slots": sum(widened[name].values()),
                "exact": widened[name].get(0, 0),
                "by_window_half_width": {str(k): n for k, n in widened[name].items()},
                "unmatched": widened[name].get(sampler.max_step + 1, 0),
            }
        else:
            entry["rule"] = "uniformly random papers with text that are not a candidate of the query (SCIDOCS)"
        entry["summary"] = popularity_summary(qrels, years, degree)
        out[name] = entry
    return out


def _split_info(
    config: BenchmarkConfig,
    cutoff: int | None,
    later: set[str],
    years: dict[str, int | None],
    ranking: dict[str, dict[str, dict[str, dict[str, int]]]],
) -> dict[str, Any]:
    """How the ranking queries were drawn (benchmark.json ``split``)."""
    if cutoff is None:
        return {
            "split_by": "random",
            "rule": "ranking queries drawn at random from every eligible paper (SCIDOCS)",
            "query_rule": QUERY_RULE,
        }
    queries = {q for task in ("cite", "cocite") for qrels in ranking.get(task, {}).values() for q in qrels}
    query_years = Counter(years[q] for q in queries)
    return {
        "split_by": "date",
        "query_rule": QUERY_RULE,
        "cutoff_year": cutoff,
        "rule": f"ranking queries (val and test) drawn from eligible papers published in {cutoff} or later (the "
        "latest period with enough of them), split val/test at random within it; training holds only papers "
        f"published before {cutoff}",
        "why_val_in_the_latest_period": "val chooses checkpoints and settings for the test distribution, so it "
        "comes from the same period as test; both lie after the training papers, so neither is seen in training",
        "later_papers": len(later),
        "queries_by_year": {str(y): n for y, n in sorted(query_years.items())},
        **{
            f"{task}_{split}_queries": len(qrels)
            for task in ("cite", "cocite")
            for split, qrels in ranking.get(task, {}).items()
        },
    }


def _label_slot(corpus: Corpus, config: BenchmarkConfig) -> str:
    """What the mag/ slot holds, in words (benchmark.json)."""
    what = {
        "venue": "Paper.venue: the normalised journal on hep-th, the topic on the synthetic corpus",
        "fields_of_study": "fields of study (S2ORC mag_field_of_study, OpenAlex topic fields or level-0 concepts)",
    }.get(corpus.label_field, f"the records' {corpus.label_field!r} field")
    rule = "its first label" if config.multi_label == "first" else "only papers with exactly one label"
    return f"classification of the corpus labels from {what}; a paper with several labels: {rule}"


@collector_paused()
def build_benchmark(
    corpus: Corpus,
    out_dir: str | Path,
    seed: int = 0,
    n_queries: int | None = None,
    config: BenchmarkConfig | None = None,
) -> dict[str, Any]:
    """Write ``DIR/scidocs``, ``DIR/train`` and ``DIR/benchmark.json``; return what benchmark.json holds.
    ``n_queries`` (per ranking task, val + test), when given, overrides the config's value."""
    config = config or BenchmarkConfig()
    if n_queries is not None:
        config = replace(config, n_queries=n_queries)
    if config.n_queries < 1:
        raise ValueError(f"n_queries must be at least 1, got {config.n_queries}")
    if config.multi_label not in MULTI_LABEL_RULES:
        raise ValueError(f"multi_label must be one of {', '.join(MULTI_LABEL_RULES)}, got {config.multi_label!r}")
    if (config.max_class_papers or 0) < 0:
        raise ValueError(f"max_class_papers must be a number of papers (0: all), got {config.max_class_papers}")
    if config.split_by not in SPLIT_RULES:
        raise ValueError(f"split_by must be one of {', '.join(SPLIT_RULES)}, got {config.split_by!r}")
    if (config.negative_pool or 0) < 0:
        raise ValueError(f"negative_pool must be a number of papers (0: all), got {config.negative_pool}")
    out_dir = Path(out_dir)
    text = {pid for pid, p in corpus.papers.items() if p.title.strip()}  # every candidate must be embeddable
    if not text:
        raise DataError(f"corpus {corpus.name!r} has no paper with a title")
    years = {pid: corpus.papers[pid].year for pid in sorted(text)}
    if config.split_by == "date":
        require_years(corpus, "data.split_by=date needs them (use random)", text)
    graph = corpus.graph()
    rng = random.Random(seed)
    pool = sorted(text)
    if config.negative_pool and config.negative_pool < len(pool):
        pool = sorted(sample_ids(pool, config.negative_pool, seed + 2))

    # 1. cite: queries with enough references that have text
    refs_with_text = {p: sorted(r for r in refs if r in text) for p, refs in graph.references.items() if p in text}
    cite_eligible = [p for p, refs in refs_with_text.items() if len(refs) >= config.min_positives]
    per_task_cap = int(config.max_heldout_fraction * len(text) / 2)
    n_cite = min(config.n_queries, per_task_cap, len(cite_eligible))
    cocite_counts = _cocitations(graph, text)
    cocite_eligible = [p for p, c in cocite_counts.items() if len(c) >= config.min_positives]
    n_cocite = min(config.n_queries, per_task_cap, len(cocite_eligible))
    cutoff, later = None, set()
    cite_drawn_from, cocite_drawn_from = cite_eligible, cocite_eligible
    if config.split_by == "date":  # queries from the latest period, training before it
        cutoff = latest_cutoff(
            years, {"cite": cite_eligible, "cocite": cocite_eligible}, {"cite": n_cite, "cocite": n_cocite}
        )
        later = set(later_papers({pid: p.year for pid, p in corpus.papers.items()}, cutoff))
        cite_drawn_from = [p for p in cite_eligible if p in later and years[p] is not None]
        cocite_drawn_from = [p for p in cocite_eligible if p in later and years[p] is not None]
    cite_queries = draw_queries(cite_drawn_from, n_cite, seed, config.val_fraction)
    cite_pos = {
        q: sorted(rng.sample(refs_with_text[q], min(config.positives, len(refs_with_text[q])))) for q in cite_queries
    }
    cite_qrels = _ranking_task(
        cite_queries, cite_pos, pool, {q: set(refs_with_text[q]) for q in cite_queries}, config, rng
    )

    # 2. cocite: other queries, with the papers most often co-cited with them
    cocite_queries = draw_queries(cocite_drawn_from, n_cocite, seed, config.val_fraction, exclude=cite_queries)
    cocite_pos = {
        q: sorted(p for p, _ in sorted(cocite_counts[q].items(), key=lambda kv: (-kv[1], kv[0]))[: config.positives])
        for q in cocite_queries
    }
    cocite_qrels = _ranking_task(
        cocite_queries, cocite_pos, pool, {q: set(cocite_counts[q]) for q in cocite_queries}, config, rng
    )
    held_out = set(cite_queries) | set(cocite_queries)
    formats = plan_scirepeval_tasks(corpus, text, graph, held_out, config, seed)  # their held-out papers, chosen now
    # the graph of training and of the metadata: no edge touching a held-out query or a held-out paper of a
    # SciRepEval-format task (nor, by date, a later paper)
    safe = graph.without_edges_of(held_out | formats.held_out | later)

    # 2b. the same queries and positives, negatives matched to the positives on year and in-degree (in ``safe``)
    degree = in_degrees(safe, sorted(text))
    sampler = MatchedSampler(pool, years, degree, use_years=any(years[p] is not None for p in pool))
    matched_rng = random.Random(seed + 3)
    cite_matched = matched_task(
        cite_qrels, {q: set(refs_with_text[q]) for q in cite_queries}, sampler, config.negatives, matched_rng
    )
    cite_widened, sampler.widened = dict(sorted(sampler.widened.items())), type(sampler.widened)()
    cocite_matched = matched_task(
        cocite_qrels, {q: set(cocite_counts[q]) for q in cocite_queries}, sampler, config.negatives, matched_rng
    )
    cocite_widened = dict(sorted(sampler.widened.items()))
    if not cite_qrels and not cocite_qrels:
        dangling = sum(corpus.report.counts.get(k, 0) for k in ("dangling_citation", "unknown_reference"))
        raise DataError(
            f"corpus {corpus.name!r}: no ranking task can be built: no paper has {config.min_positives}+ references "
            f"to papers of the corpus with a title ({graph.num_edges:,} citations inside the corpus; {dangling:,} "
            "citations of papers outside it were dropped). Nothing was written.",
            corpus.info.get("source"),
        )

    # 3. classification from the corpus labels, in the mag/ slot
    classes = _classification(corpus, text, config, seed)

    # 4. the training dir: no held-out query, no edge touching one (nor a held-out paper of a SciRepEval-format task,
    # nor, by date, a later paper)
    excluded = held_out | formats.held_out
    train = corpus_to_specter(corpus, exclude=excluded | later, val_fraction=config.train_val_fraction, seed=seed)
    leakage = training_leakage(train, excluded, sorted(later) if cutoff is not None else None)
    if not leakage["leak_free"]:
        raise DataError(f"held-out queries leaked into the training dir: {leakage}")
    for stale in (TRAIN_DIR, SCIDOCS_DIR):  # a rebuild replaces the benchmark whole: no task of an earlier build
        shutil.rmtree(out_dir / stale, ignore_errors=True)
    write_specter_dir(out_dir / TRAIN_DIR, train)
    if cutoff is not None:
        with atomic_write(out_dir / LATER_PAPERS_FILE) as out:
            out.write("".join(f"{pid}\n" for pid in sorted(later)))

    # 5. SCIDOCS metadata, with the graph the training dir sees (``safe``)

    def record(pid: str) -> dict[str, Any]:
        paper = corpus.papers[pid]
        return scidocs_record(
            pid,
            paper.title,
            paper.abstract or "",
            list(paper.authors),
            sorted(safe.cited_by.get(pid, ())),
            sorted(safe.references.get(pid, ())),
            paper.year,
        )

    every_qrels = (cite_qrels, cocite_qrels, cite_matched, cocite_matched)
    ranking_ids = sorted({p for qrels in every_qrels for q, docs in qrels.items() for p in (q, *docs)})
    class_ids = sorted({pid for rows in classes["rows"].values() for pid, _ in rows})
    scidocs = ScidocsData(root=out_dir / SCIDOCS_DIR)
    if ranking_ids:
        scidocs.metadata["view_cite_read"] = {pid: record(pid) for pid in ranking_ids}
    tasks = {"cite": cite_qrels, "cocite": cocite_qrels, "cite-matched": cite_matched, "cocite-matched": cocite_matched}
    for name, qrels in tasks.items():  # matched or not, the same rule: the same queries in val and in test
        if qrels:
            scidocs.ranking[name] = _split_qrels(qrels, config, seed)
    if not classes["why_absent"] and not all(classes["rows"].values()):
        classes["why_absent"] = "a class sample too small to fill train, val and test"
    if not classes["why_absent"]:
        scidocs.classification["mag"] = classes["rows"]
        scidocs.metadata["mag_mesh"] = {pid: record(pid) for pid in class_ids}
    write_scidocs_dir(out_dir / SCIDOCS_DIR, scidocs)
    scirepeval = formats.write(out_dir / SCIREPEVAL_DIR)

    def ranking_counts(splits: dict[str, dict[str, dict[str, int]]], eligible: int) -> dict[str, Any]:
        every = [docs for qrels in splits.values() for docs in qrels.values()]
        return {
            "eligible_queries": eligible,
            "queries": sum(len(q) for q in splits.values()),
            **{f"{name}_queries": len(q) for name, q in splits.items()},
            "positives": sum(sum(d.values()) for d in every),
            "negatives": sum(len(d) - sum(d.values()) for d in every),
        }

    counts: dict[str, Any] = {
        "papers": len(corpus.papers),
        "papers_with_text": len(text),
        "edges": graph.num_edges,
        "held_out_queries": len(held_out),
        **{
            name: ranking_counts(scidocs.ranking.get(name, {}), len(cocite_eligible if "co" in name else cite_eligible))
            for name in tasks
        },
        "mag": {
            "classes": len(classes["classes"]) if "mag" in scidocs.classification else 0,
            "labelled_papers": classes["labelled"],
            "min_class_size": classes["min_class_size"],
            "sampled_fraction": classes["sampled_fraction"],
            "labels": classes["labels"],
            **({"absent_because": classes["why_absent"]} if classes["why_absent"] else {}),
            "class_sizes": classes["class_sizes"] if "mag" in scidocs.classification else {},
            **{split: len(rows) for split, rows in scidocs.classification.get("mag", {}).items()},
        },
        "train": {
            "queries": len(train.graph),
            **{f"{name}_queries": len(ids) for name, ids in train.splits.items()},
            "papers": len(train.metadata),
            "candidate_entries": sum(len(row) for row in train.graph.values()),
        },
        "training_leakage": leakage,
    }
    info = {
        "corpus": corpus.name,
        "synthetic": corpus.synthetic,
        "corpus_info": corpus.describe(),
        # what the reader counted: references to ids outside the corpus (dropped), untitled papers, papers without labels
        "read_oddities": dict(corpus.report.counts),
        "seed": seed,
        "config": asdict(config),
        "counts": counts,
        "slots": {
            "cite": "held-out query papers; relevance 1: up to 5 papers each cites, 0: 25 random uncited papers",
            "cocite": "held-out query papers (disjoint from cite); 1: up to 5 papers most often co-cited with it, "
            "0: 25 random papers never co-cited with it",
            "cite-matched": "the cite queries and positives; 0: 25 uncited papers, each matched to a positive on "
            "year and in-degree (negatives, below)",
            "cocite-matched": "the cocite queries and positives; 0: 25 papers never co-cited with it, each matched "
            "to a positive on year and in-degree (negatives, below)",
            "mag": _label_slot(corpus, config)
            if "mag" in scidocs.classification
            else f"absent: {classes['why_absent']}",
            "mesh": "absent",
            "coview": "absent (no usage data)",
            "coread": "absent (no usage data)",
            "recomm": "absent (no usage data)",
            "train": "SPECTER-format training dir without held-out queries or their edges",
        },
        "metadata_graph": "cited_by/references exclude every edge touching a held-out query or a held-out paper of "
        "the tasks in SciRepEval's formats (as in training)"
        + (f", and every edge touching a paper of {cutoff} or later" if cutoff is not None else ""),
        "scirepeval": scirepeval,
        "negatives": _negatives_info(
            tasks, {"cite-matched": cite_widened, "cocite-matched": cocite_widened}, sampler, years, degree
        ),
        "split": _split_info(config, cutoff, later, years, scidocs.ranking),
    }
    write_json(out_dir / BENCHMARK_FILE, info)
    return info
