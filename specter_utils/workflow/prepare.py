"""Stage 1 (notebook 01): read or generate the corpus and build its SCIDOCS-layout benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.benchmark.build import build_benchmark
from specter_utils.config import BenchmarkConfig, CorpusConfig
from specter_utils.data.corpus import Corpus
from specter_utils.data.download import download_dataset
from specter_utils.data.load import load_corpus
from specter_utils.data.stats import corpus_stats
from specter_utils.runs import resolve
from specter_utils.spec import RunSpec


def load_corpus_for_run(config: CorpusConfig) -> Corpus:
    """The corpus of a run: generated (``synthetic``) or read from ``config.src`` (default: the kind's own data)."""
    label_field = config.label_field or None
    if config.corpus == "synthetic":
        return load_corpus(
            "synthetic", n_papers=config.n_papers, n_topics=config.n_topics, seed=config.seed, label_field=label_field
        )
    return load_corpus(config.corpus, resolve(config.src) if config.src else None, label_field=label_field)


def benchmark_config(data: CorpusConfig) -> BenchmarkConfig:
    """The benchmark builder's settings for a run's ``data`` section (the protocol's shape stays SCIDOCS's)."""
    return BenchmarkConfig(
        n_queries=data.n_queries,
        max_class_papers=data.max_class_papers,
        negative_pool=data.negative_pool,
        multi_label=data.multi_label,
    )


def prepare(spec: RunSpec, benchmark_dir: str | Path) -> dict[str, Any]:
    """Read (or generate) the corpus, build the SCIDOCS-layout benchmark, fetch the real SCIDOCS if asked.

    Returns ``corpus`` (the Corpus), ``benchmark`` (``build_benchmark``'s summary) and ``scidocs`` (stats or None).
    """
    data = spec.data
    corpus = load_corpus_for_run(data)
    benchmark = build_benchmark(corpus, benchmark_dir, seed=data.seed, config=benchmark_config(data))
    scidocs_stats = None
    scidocs_dir = spec.evaluation.scidocs_dir
    if scidocs_dir:
        download_dataset("scidocs", resolve(scidocs_dir))
        scidocs_stats = corpus_stats(resolve(scidocs_dir))
    return {"corpus": corpus, "benchmark": benchmark, "scidocs": scidocs_stats}
