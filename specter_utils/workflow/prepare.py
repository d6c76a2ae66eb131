"""Stage 1 (notebook 01, ``specter-utils build-benchmark`` and ``data``): read or generate the corpus, build its
SCIDOCS-layout benchmark, convert it to SPECTER training files, count what a data path holds, download datasets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from specter_utils.benchmark.build import build_benchmark, require_years
from specter_utils.corpus_config import BenchmarkConfig, CorpusConfig
from specter_utils.data.convert import corpus_to_specter
from specter_utils.data.corpus import Corpus
from specter_utils.data.download import download_dataset
from specter_utils.data.load import check_corpus_options, detect_corpus_kind, load_corpus
from specter_utils.data.mix import merge_training, parse_mix_source, prefixed
from specter_utils.data.specter_format import SpecterData, read_specter_dir, write_specter_dir
from specter_utils.data.stats import corpus_stats, detect_format, format_stats
from specter_utils.data.subsample import neighbourhood_sample
from specter_utils.errors import DataError
from specter_utils.io import write_json
from specter_utils.layout import BENCHMARK_FILE
from specter_utils.runs import resolve
from specter_utils.spec import RunSpec

# The reader options of the citeseer and tables corpora, and how the command line spells them.
READER_FLAGS = {"edges_by": "--edges-by", "edge_order": "--edge-order", "unknown": "--unknown-papers"}
TABLE_FLAGS = ("edges_by", "edge_order")  # tables only
CORPUS_FILE = "corpus.json"  # the synthetic benchmark's description of its generated corpus


def load_corpus_for_run(config: CorpusConfig) -> Corpus:
    """The corpus of a run: generated (``synthetic``) or read from ``config.src`` (default: the kind's own data)."""
    label_field = config.label_field or None
    if config.corpus == "synthetic":
        return load_corpus(
            "synthetic", n_papers=config.n_papers, n_topics=config.n_topics, seed=config.seed, label_field=label_field
        )
    corpus = load_corpus(config.corpus, resolve(config.src) if config.src else None, label_field=label_field)
    return neighbourhood_sample(corpus, config.max_papers, config.seed)


def check_reader_options(kind: str, options: dict[str, str]) -> None:
    """A DataError naming the first reader option (by its flag) that does not apply to ``kind``."""
    allowed = {"tables": set(READER_FLAGS), "citeseer": {"unknown"}}.get(kind, set())
    for name in options:
        if name not in allowed:
            which = "tables" if name in TABLE_FLAGS else "citeseer and tables"
            raise DataError(f"{READER_FLAGS[name]} applies to {which} corpora only, not {kind}", READER_FLAGS[name])


def load_corpus_from_source(
    kind: str | None,
    src: Path | None,
    label_field: str | None = None,
    options: dict[str, str] | None = None,
    **generator: Any,
) -> Corpus:
    """The corpus ``kind`` (None: detected from ``src``) read from ``src`` with the reader ``options``
    (``READER_FLAGS``), or generated (``synthetic``, with ``generator``'s settings). An option or a source that
    does not apply is a DataError."""
    options = options or {}
    if kind is None and src is None:
        raise DataError("give --corpus KIND or --src PATH (the kind is detected from it)", "--corpus")
    if kind is not None:
        try:
            check_corpus_options(kind, src, label_field)
        except ValueError as exc:
            raise DataError(str(exc), "--corpus") from None
    if kind == "synthetic":
        if options:
            raise DataError(f"{READER_FLAGS[next(iter(options))]} does not apply to --corpus synthetic", "--corpus")
        return load_corpus("synthetic", **generator)
    kind = kind or detect_corpus_kind(src)
    check_reader_options(kind, options)
    try:
        return load_corpus(kind, src, label_field=label_field, **options)
    except DataError:
        raise
    except ValueError as exc:  # an option that does not apply to the detected kind
        raise DataError(str(exc), src) from None


def benchmark_config(data: CorpusConfig) -> BenchmarkConfig:
    """The benchmark builder's settings for a run's ``data`` section (the protocol's shape stays SCIDOCS's)."""
    return BenchmarkConfig(
        n_queries=data.n_queries,
        max_class_papers=data.max_class_papers,
        negative_pool=data.negative_pool,
        multi_label=data.multi_label,
        scirepeval_tasks=list(data.scirepeval_tasks),
        citation_window_years=data.citation_window_years,
        split_by=data.split_by,
    )


def mix_corpus(data: CorpusConfig) -> tuple[str, Corpus] | None:
    """The second corpus of ``data.mix_with`` (its name and the neighbourhood sample of ``data.mix_papers``), or
    None; a corpus mixed with itself is refused (it would put held-out papers back into training)."""
    if not data.mix_with:
        return None
    kind, src = parse_mix_source(data.mix_with)
    own_src = resolve(data.src) if data.src else None
    if kind == data.corpus and (src is None or own_src is None or resolve(src) == own_src):
        raise DataError(
            f"data.mix_with={data.mix_with!r} is the run's own corpus: its held-out papers would be trained on",
            "data.mix_with",
        )
    corpus = load_corpus(kind, resolve(src) if src else None)
    return kind, neighbourhood_sample(corpus, data.mix_papers, data.seed)


def build_benchmark_dir(corpus: Corpus, benchmark_dir: str | Path, data: CorpusConfig) -> dict[str, Any]:
    """Write ``corpus``'s SCIDOCS-layout benchmark (``scidocs/``, ``train/``, benchmark.json) with the ``data``
    section's sizes and seed, its training folder joined by ``data.mix_with``'s; returns the builder's summary."""
    mixed = mix_corpus(data)  # read before anything is written: a bad source stops here
    info = build_benchmark(corpus, benchmark_dir, seed=data.seed, config=benchmark_config(data))
    if mixed is not None:
        name, other = mixed
        train_dir = Path(benchmark_dir) / "train"
        extra = prefixed(corpus_to_specter(other, seed=data.seed), f"{name}:")
        merged = merge_training(read_specter_dir(train_dir), extra, name)
        write_specter_dir(train_dir, merged)
        info["counts"]["train"]["mixed_with"] = merged.info["mixed_with"]
        write_json(Path(benchmark_dir) / BENCHMARK_FILE, info)
    return info


def synthetic_benchmark(corpus: Corpus, benchmark_dir: str | Path, seed: int = 0) -> dict[str, Any]:
    """The benchmark of a generated corpus, with ``corpus.json`` describing it beside benchmark.json."""
    write_json(Path(benchmark_dir) / CORPUS_FILE, corpus.describe())
    return build_benchmark_dir(corpus, benchmark_dir, CorpusConfig(seed=seed))


def convert_corpus(
    corpus: Corpus,
    out_dir: str | Path,
    val_fraction: float = 0.1,
    test_fraction: float = 0.0,
    seed: int = 0,
    source: str | Path | None = None,
    log: Callable[[str], None] = print,
) -> SpecterData:
    """Write ``corpus`` as SPECTER training files (data.json, metadata.json, train/val/test.txt) to ``out_dir``.
    A corpus without a query (no paper citing another with a title) is a DataError, after ``log``ging what the
    reader dropped (the error names ``source``, default the corpus's); nothing is written then."""
    data = corpus_to_specter(corpus, val_fraction=val_fraction, test_fraction=test_fraction, seed=seed)
    if not data.graph:
        dangling = sum(corpus.report.counts.get(k, 0) for k in ("dangling_citation", "unknown_reference"))
        log(corpus.report.summary())
        raise DataError(
            f"no SPECTER queries: no paper of the corpus cites another paper of it with a title "
            f"({dangling:,} citations point outside the corpus; the "
            f"oddities above say what was dropped). Nothing was written.",
            source or corpus.info.get("source"),
        )
    write_specter_dir(out_dir, data)
    return data


def data_stats(path: str | Path, options: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """The counts of a data path (format detected) with the reader ``options``, and their text form."""
    if options:
        check_reader_options(detect_format(path), options)
    stats = corpus_stats(path, **(options or {}))
    return stats, format_stats(stats)


def download(dataset: str, out_dir: str | Path, include_embeddings: bool = True) -> dict[str, int]:
    """Download ``dataset`` (scidocs, specter, hepth) into ``out_dir``, resumably; counts of files and bytes."""
    results = download_dataset(dataset, out_dir, include_embeddings=include_embeddings)
    return {
        "files": len(results),
        "downloaded": sum(1 for r in results if not r.skipped),
        "bytes": sum(r.bytes for r in results),
    }


def prepare(spec: RunSpec, benchmark_dir: str | Path) -> dict[str, Any]:
    """Read (or generate) the corpus, build the SCIDOCS-layout benchmark, fetch the real SCIDOCS if asked:
    ``{"corpus": Corpus, "benchmark": build_benchmark's summary, "scidocs": stats or None}``."""
    data = spec.data
    corpus = load_corpus_for_run(data)
    if spec["evaluation.time_split"]:  # notebook 05's time split would fail after the run's training: say so now
        require_years(corpus, "evaluation.time_split needs them (set it to false)")
    benchmark = build_benchmark_dir(corpus, benchmark_dir, data)
    scidocs_stats = None
    scidocs_dir = spec.evaluation.scidocs_dir
    if scidocs_dir:
        download("scidocs", resolve(scidocs_dir))
        scidocs_stats = data_stats(resolve(scidocs_dir))[0]
    return {"corpus": corpus, "benchmark": benchmark, "scidocs": scidocs_stats}


def negatives_frame(benchmark: dict[str, Any]) -> pd.DataFrame:
    """Year and in-degree of positives vs negatives in each version of cite and co-cite (benchmark.json's
    ``negatives``), one row per task: what a ranker that reads no text could exploit."""
    rows = []
    for task, entry in benchmark.get("negatives", {}).items():
        if not isinstance(entry, dict) or "summary" not in entry:
            continue
        pos, neg = entry["summary"]["positives"], entry["summary"]["negatives"]
        widened = entry.get("widened", {})
        rows.append(
            {
                "task": task,
                "negatives": "matched" if "widened" in entry else "random",
                "positive median year": pos["median_year"],
                "negative median year": neg["median_year"],
                "positive median in-degree": pos["median_in_degree"],
                "negative median in-degree": neg["median_in_degree"],
                "negatives with in-degree 0": neg["share_in_degree_0"],
                "negatives newer than the newest positive": neg["share_newer_than_newest_positive"],
                "slots widened": widened["slots"] - widened["exact"] if widened else None,
            }
        )
    return pd.DataFrame(rows).set_index("task") if rows else pd.DataFrame()


def negatives_text(benchmark: dict[str, Any]) -> str:
    """The negatives and the split rule in sentences, from benchmark.json's numbers."""
    negatives, lines = benchmark.get("negatives", {}), []
    for task in ("cite", "cocite"):
        plain, matched = negatives.get(task), negatives.get(f"{task}-matched")
        if not plain or not matched or not plain["summary"]["positives"]["judgements"]:
            continue
        pos, rand, match = (
            e["summary"][s] for e, s in ((plain, "positives"), (plain, "negatives"), (matched, "negatives"))
        )
        newer = (
            ""
            if rand["share_newer_than_newest_positive"] is None
            else (
                f"; {rand['share_newer_than_newest_positive']:.0%} of the random negatives are newer than their query's "
                f"newest positive, {match['share_newer_than_newest_positive']:.0%} of the matched ones"
            )
        )
        widened = matched["widened"]
        lines.append(
            f"- **{task}**: the positives' median in-degree is {pos['median_in_degree']:g}, the random negatives' "
            f"{rand['median_in_degree']:g} and the matched negatives' {match['median_in_degree']:g}{newer}. "
            f"{widened['exact']:,} of {widened['slots']:,} matched slots found a paper in their own cell "
            f"({', '.join(matched['matching_keys'])}), {widened['slots'] - widened['exact']:,} needed a wider window"
            + (f", {widened['unmatched']:,} none at all" if widened["unmatched"] else "")
            + "."
        )
    split = benchmark.get("split", {})
    if split:
        lines.append(f"- **split** ({split['split_by']}): {split['rule']}.")
    return "\n".join(lines)
