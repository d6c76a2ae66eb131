"""Section ``data`` of the run specification (:class:`CorpusConfig`, notebook 01): which corpus a run reads, and
the protocol its SCIDOCS-layout benchmark is cut by (:class:`BenchmarkConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from specter_utils.settings import setting
from specter_utils.vocabularies import CORPUS_KINDS, MULTI_LABEL_RULES, SCIREPEVAL_FORMAT_TASKS, SPLIT_RULES


@dataclass
class CorpusConfig:
    """Section ``data``: which corpus a run reads and how its SCIDOCS-layout benchmark is cut."""

    corpus: str = setting(
        "synthetic",
        "hepth, citeseer, tables, s2orc, openalex, jsonl or synthetic (generated, no data)",
        choices=CORPUS_KINDS,
    )
    src: str = setting(
        "", 'the corpus file or folder; "": the kind\'s default (../shared/data/<kind>, or the bundled copy)'
    )
    n_papers: int = setting(600, "synthetic corpus only: its size (small enough for the tests on a CPU)", low=1)
    n_topics: int = setting(6, "synthetic corpus only: its classes", low=1)
    max_papers: int = setting(
        0,
        "0: every paper; N: a seeded citation neighbourhood of N papers (grown breadth first over citations, "
        "data.subsample), a small topical corpus cut from a large one",
        low=0,
    )
    mix_with: str = setting(
        "",
        'a second corpus whose citations join the training data (data.mix): KIND or KIND:PATH, e.g. "hepth" or '
        '"tables:../shared/data/arxiv2023"; its papers are never queries; "": the run\'s corpus alone',
    )
    mix_papers: int = setting(2000, "papers of data.mix_with taken, as a seeded citation neighbourhood; 0: all", low=0)
    n_queries: int = setting(1000, "held-out queries per ranking task (80% test; SCIDOCS's size by default)", low=1)
    max_class_papers: int = setting(
        0, "0: every labelled paper in the classification task; a number: a stratified sample", low=0
    )
    negative_pool: int = setting(
        0, "0: random negatives from every paper with text; a number bounds the papers to embed", low=0
    )
    label_field: str = setting(
        "", 'classification labels: venue, fields_of_study, labels or any field; "": the kind\'s own'
    )
    multi_label: str = setting(
        "first",
        "a paper with several labels: first (its first label) or exactly-one (kept with one)",
        choices=MULTI_LABEL_RULES,
    )
    seed: int = setting(0, "the benchmark's seed, fixed so that runs with other seeds share one benchmark")
    # Tasks in SciRepEval's formats built beside scidocs/ (benchmark.scirepeval_tasks; docs/protocol.md)
    scirepeval_tasks: list[str] = setting(
        factory=lambda: list(SCIREPEVAL_FORMAT_TASKS),
        help="tasks in SciRepEval's formats written to DIR/scirepeval, each where the corpus supports it; empty: none",
        choices=SCIREPEVAL_FORMAT_TASKS,
    )
    citation_window_years: int = setting(
        2,
        "citations-received counts the citations a paper gets in its first N years: 2 keeps hep-th papers to April "
        "2001 and arXiv-2023 papers to August 2021 inside the citing papers' dates; a longer window loses the "
        "newest years",
        low=1,
    )
    split_by: str = setting(
        "random",
        "random: ranking queries drawn from every eligible paper (SCIDOCS); date: from the latest period (the newest "
        "years with enough eligible papers), val and test alike, and training only on papers published before it "
        "(needs publication years)",
        choices=SPLIT_RULES,
    )


@dataclass(frozen=True)
class BenchmarkConfig:
    """The benchmark builder's protocol: SCIDOCS's shape (<= 5 positives + 25 negatives per query). The sizes a run
    chooses (``n_queries``, ``max_class_papers``, ``negative_pool``, ``multi_label``) default to ``CorpusConfig``'s."""

    n_queries: int = setting(CorpusConfig.n_queries, "per ranking task, val + test together")
    val_fraction: float = setting(
        0.2, "of each ranking task's queries written to val.qrel", low=0.0, high=1.0, open_ends="high"
    )
    positives: int = setting(
        5, "positives per query: papers it cites (cite) or is co-cited with (co-cite), as SCIDOCS", low=1
    )
    negatives: int = setting(25, "random papers per query, as SCIDOCS", low=0)
    min_positives: int = setting(3, "a query needs this many candidates with text to be eligible", low=1)
    max_heldout_fraction: float = setting(
        0.3, "of the papers with text, over both tasks: small corpora keep training data"
    )
    min_class_size: int | None = setting(None, "papers per label to keep a class; None: 100, less on small corpora")
    max_classes: int | None = setting(None, "the most frequent classes kept; None: every class")
    max_class_papers: int | None = setting(
        CorpusConfig.max_class_papers,
        "Labelled papers kept over all classes (stratified sample); None or 0: all. Each kept class keeps at least 3 "
        "papers (one per split), so with many small classes the total can exceed the cap by up to 3 per class.",
    )
    multi_label: str = setting(
        CorpusConfig.multi_label,
        'several labels: "first" takes the first, "exactly-one" drops it',
        choices=MULTI_LABEL_RULES,
    )
    negative_pool: int | None = setting(
        CorpusConfig.negative_pool,
        "Random negatives come from a seeded uniform sample of this many papers (None or 0: every paper with text). "
        "Each negative is still a uniformly random paper, but the papers to embed per model stop growing with "
        "n_queries x negatives: on hep-th, 800 queries draw from 4,000 papers instead of about 15K distinct ones.",
    )
    classification_split: tuple[float, float, float] = setting((0.6, 0.2, 0.2), "train, val, test")
    train_val_fraction: float = setting(0.1, "of training queries in DIR/train/val.txt")
    scirepeval_tasks: list[str] = setting(
        factory=lambda: list(CorpusConfig().scirepeval_tasks),
        help="tasks in SciRepEval's formats (DIR/scirepeval)",
        choices=SCIREPEVAL_FORMAT_TASKS,
    )
    citation_window_years: int = setting(CorpusConfig.citation_window_years, "citations-received's window", low=1)
    split_by: str = setting(CorpusConfig.split_by, "random or date: how ranking queries are drawn", choices=SPLIT_RULES)
