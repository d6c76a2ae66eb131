"""Build a SCIDOCS-style evaluation directory, plus a leakage-free training dir, from any citation corpus.

```
DIR/scidocs/   cite/ and cocite/ {val,test}.qrel; the corpus's labels as the mag/ classification
               task; paper_metadata_view_cite_read.json and paper_metadata_mag_mesh.json
DIR/train/     SPECTER-format training dir without any held-out query or an edge touching one
DIR/benchmark.json
```
Held-out queries are the cite and co-cite queries (two disjoint sets). Every candidate has a title
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

from specter_utils.benchmark.scirepeval_tasks import plan_scirepeval_tasks
from specter_utils.benchmark.splits import sample_ids, split_ids, training_leakage
from specter_utils.config import MULTI_LABEL_RULES, BenchmarkConfig
from specter_utils.data.convert import corpus_to_specter
from specter_utils.data.corpus import Corpus
from specter_utils.data.graph import CitationGraph
from specter_utils.data.scidocs import ScidocsData, scidocs_record, write_scidocs_dir
from specter_utils.data.specter_format import write_specter_dir
from specter_utils.errors import DataError
from specter_utils.io import write_json
from specter_utils.layout import BENCHMARK_FILE, SCIREPEVAL_DIR

SCIDOCS_DIR, TRAIN_DIR = "scidocs", "train"


def _has_text(corpus: Corpus) -> set[str]:
    return {pid for pid, p in corpus.papers.items() if p.title.strip()}


def _random_negatives(pool: list[str], n: int, taken: set[str], rng: random.Random) -> list[str]:
    """``n`` distinct papers of ``pool`` outside ``taken`` (fewer only if the pool runs out)."""
    if len(pool) <= 4 * (n + len(taken)):  # small pool: choose exactly among what is left
        rest = [p for p in pool if p not in taken]
        return rng.sample(rest, min(n, len(rest)))
    chosen: list[str] = []
    seen = set(taken)
    while len(chosen) < n:
        paper = pool[rng.randrange(len(pool))]
        if paper not in seen:
            seen.add(paper)
            chosen.append(paper)
    return chosen


def _cocitations(graph: CitationGraph, text: set[str]) -> dict[str, dict[str, int]]:
    """For each paper with text: how often each other paper with text is cited together with it."""
    papers = sorted(graph.cited_by)
    col = {p: i for i, p in enumerate(papers)}
    citing = sorted(graph.references)
    rows, cols = [], []
    for r, paper in enumerate(citing):
        for cited in graph.references[paper]:
            rows.append(r)
            cols.append(col[cited])
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
        negatives = _random_negatives(pool, config.negatives, exclude_of[query] | {query} | set(positives), rng)
        qrels[query] = {**dict.fromkeys(positives, 1), **dict.fromkeys(negatives, 0)}
    return qrels


def _split_qrels(qrels: dict[str, dict[str, int]], config: BenchmarkConfig, seed: int) -> dict[str, Any]:
    parts = split_ids(qrels, {"val": config.val_fraction, "test": 1 - config.val_fraction}, seed)
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


def _label_slot(corpus: Corpus, config: BenchmarkConfig) -> str:
    """What the mag/ slot holds, in words (benchmark.json)."""
    what = {
        "venue": "Paper.venue: the normalised journal on hep-th, the topic on the synthetic corpus",
        "fields_of_study": "fields of study (S2ORC mag_field_of_study, OpenAlex topic fields or level-0 concepts)",
    }.get(corpus.label_field, f"the records' {corpus.label_field!r} field")
    rule = "its first label" if config.multi_label == "first" else "only papers with exactly one label"
    return f"classification of the corpus labels from {what}; a paper with several labels: {rule}"


def build_benchmark(
    corpus: Corpus,
    out_dir: str | Path,
    seed: int = 0,
    n_queries: int | None = None,
    config: BenchmarkConfig | None = None,
    max_class_papers: int | None = None,
    negative_pool: int | None = None,
    multi_label: str | None = None,
) -> dict[str, Any]:
    """Write ``DIR/scidocs``, ``DIR/train`` and ``DIR/benchmark.json``; return what benchmark.json holds.

    ``n_queries`` (per ranking task, val + test), ``max_class_papers``, ``negative_pool`` and ``multi_label``,
    when given, override the config's values.
    """
    config = config or BenchmarkConfig()
    if n_queries is not None:
        config = replace(config, n_queries=n_queries)
    if max_class_papers is not None:
        config = replace(config, max_class_papers=max_class_papers)
    if negative_pool is not None:
        config = replace(config, negative_pool=negative_pool)
    if config.n_queries < 1:
        raise ValueError(f"n_queries must be at least 1, got {config.n_queries}")
    if multi_label is not None:
        config = replace(config, multi_label=multi_label)
    if config.multi_label not in MULTI_LABEL_RULES:
        raise ValueError(f"multi_label must be one of {', '.join(MULTI_LABEL_RULES)}, got {config.multi_label!r}")
    if (config.max_class_papers or 0) < 0:
        raise ValueError(f"max_class_papers must be a number of papers (0: all), got {config.max_class_papers}")
    if (config.negative_pool or 0) < 0:
        raise ValueError(f"negative_pool must be a number of papers (0: all), got {config.negative_pool}")
    out_dir = Path(out_dir)
    text = _has_text(corpus)
    if not text:
        raise DataError(f"corpus {corpus.name!r} has no paper with a title")
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
    cite_queries = sample_ids(cite_eligible, n_cite, seed)
    cite_pos = {
        q: sorted(rng.sample(refs_with_text[q], min(config.positives, len(refs_with_text[q])))) for q in cite_queries
    }
    cite_qrels = _ranking_task(
        cite_queries, cite_pos, pool, {q: set(refs_with_text[q]) for q in cite_queries}, config, rng
    )

    # 2. cocite: other queries, with the papers most often co-cited with them
    cocite_counts = _cocitations(graph, text)
    cocite_eligible = [p for p, c in cocite_counts.items() if len(c) >= config.min_positives]
    n_cocite = min(config.n_queries, per_task_cap, len(cocite_eligible))
    cocite_queries = sample_ids(cocite_eligible, n_cocite, seed + 1, exclude=cite_queries)
    cocite_pos = {
        q: sorted(p for p, _ in sorted(cocite_counts[q].items(), key=lambda kv: (-kv[1], kv[0]))[: config.positives])
        for q in cocite_queries
    }
    cocite_qrels = _ranking_task(
        cocite_queries, cocite_pos, pool, {q: set(cocite_counts[q]) for q in cocite_queries}, config, rng
    )
    held_out = set(cite_queries) | set(cocite_queries)
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

    # 4. the training dir: no held-out query, no edge touching one (nor a held-out paper of a SciRepEval-format task)
    formats = plan_scirepeval_tasks(corpus, text, graph, held_out, config, seed)
    excluded = held_out | formats.held_out
    train = corpus_to_specter(corpus, exclude=excluded, val_fraction=config.train_val_fraction, seed=seed)
    leakage = training_leakage(train, excluded)
    if not leakage["leak_free"]:
        raise DataError(f"held-out queries leaked into the training dir: {leakage}")
    if not cite_qrels and not cocite_qrels:  # checked before anything is written
        if cite_eligible or cocite_eligible:
            raise DataError(
                f"corpus {corpus.name!r}: no ranking query fits: at most {per_task_cap} held-out queries per task "
                f"({config.max_heldout_fraction} of {len(text)} papers with text, halved)"
            )
        raise DataError(f"corpus {corpus.name!r}: no paper has {config.min_positives}+ references with text")
    for stale in (TRAIN_DIR, SCIDOCS_DIR):  # a rebuild replaces the benchmark whole: no task of an earlier build
        shutil.rmtree(out_dir / stale, ignore_errors=True)
    write_specter_dir(out_dir / TRAIN_DIR, train)

    # 5. SCIDOCS metadata, with the graph the training dir sees
    safe = graph.without_edges_of(excluded)

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

    ranking_ids = sorted({p for qrels in (cite_qrels, cocite_qrels) for q, docs in qrels.items() for p in (q, *docs)})
    class_ids = sorted({pid for rows in classes["rows"].values() for pid, _ in rows})
    scidocs = ScidocsData(root=out_dir / SCIDOCS_DIR)
    if ranking_ids:
        scidocs.metadata["view_cite_read"] = {pid: record(pid) for pid in ranking_ids}
    if cite_qrels:
        scidocs.ranking["cite"] = _split_qrels(cite_qrels, config, seed)
    if cocite_qrels:
        scidocs.ranking["cocite"] = _split_qrels(cocite_qrels, config, seed + 1)
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
        "cite": ranking_counts(scidocs.ranking.get("cite", {}), len(cite_eligible)),
        "cocite": ranking_counts(scidocs.ranking.get("cocite", {}), len(cocite_eligible)),
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
        "the tasks in SciRepEval's formats (as in training)",
        "scirepeval": scirepeval,
    }
    write_json(out_dir / BENCHMARK_FILE, info)
    return info
