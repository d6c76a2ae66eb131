"""SPECTER triplet mining, as the original ``triplet_sampling_parallel.py`` does it, vectorised.

Per query (docs/protocol.md section 2): queries with fewer than 3 candidates, or whose candidates all share
one count, are skipped; otherwise up to ``ceil(hard_ratio * k)`` hard triplets (positive: a direct
citation; negative: a citation of a citation) and the rest easy (negative: a random paper of
``metadata.json`` that is neither the query nor one of its candidates). Draws are with replacement,
as in the original. Triplets whose positive or negative has no metadata are dropped afterwards, as
the original does when it looks their texts up (every drop is counted).

The common case (counts only 5 and 1) is sampled with numpy for all queries at once; a query with
other counts (co-view style data) goes through the general per-query rules in ``plan_query``, the
same function the pure-Python ``reference_sample`` uses.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from specter_utils.data.specter_format import CITATION_OF_CITATION, DIRECT_CITATION, SpecterData, read_specter_dir
from specter_utils.errors import DataError
from specter_utils.io import atomic_write, write_json
from specter_utils.layout import METRICS_FILE, TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE
from specter_utils.train_config import SamplerConfig
from specter_utils.triplets.io import Triplet

# Skip reasons, in the order they are checked; each skipped query gets exactly one.
NOT_IN_DATA_JSON = "not_in_data_json"
QUERY_WITHOUT_METADATA = "query_without_metadata"
FEWER_THAN_3 = "fewer_than_3_candidates"
SAME_COUNT = "all_candidates_same_count"
NO_VALID_POSITIVE = "no_valid_positive"
NO_EASY_POOL = "no_easy_negative_pool"
ALL_DROPPED = "all_triplets_dropped_no_metadata"
CAPPED = "dropped_by_max_triplets"
SKIP_REASONS = (
    NOT_IN_DATA_JSON,
    QUERY_WITHOUT_METADATA,
    FEWER_THAN_3,
    SAME_COUNT,
    NO_VALID_POSITIVE,
    NO_EASY_POOL,
    ALL_DROPPED,
    CAPPED,
)
_SPLIT_SALT = {"train": 1, "val": 2, "test": 3}
_MAX_REJECTION_ROUNDS = 64


def cocitation_graph(graph: dict[str, dict[str, int]], mix: bool = False) -> dict[str, dict[str, int]]:
    """A ``data.json``-shaped graph of the training graph whose positives (count 5) are the papers co-cited with each
    query (one paper cites both); count 1 (the hard negatives): papers the query cites or is cited by that are not
    co-cited with it. ``mix=True`` keeps the citation graph's entries too: one pool with both signals (Table 3's
    multitask mix)."""
    cited_by: dict[str, set[str]] = {}
    for citing, row in graph.items():
        for paper, count in row.items():
            if count == DIRECT_CITATION:
                cited_by.setdefault(paper, set()).add(citing)
    out: dict[str, dict[str, int]] = {}
    for paper, citers in cited_by.items():
        co_cited = {o for citer in citers for o, count in graph[citer].items() if count == DIRECT_CITATION} - {paper}
        neighbours = (set(graph.get(paper, {})) | citers) - co_cited - {paper}
        row = dict.fromkeys(sorted(co_cited), DIRECT_CITATION)  # sorted: the same rows whatever the hash seed
        row.update(dict.fromkeys(sorted(neighbours), CITATION_OF_CITATION))
        if row:
            out[paper] = row
    if mix:
        for query, row in graph.items():
            merged = out.setdefault(query, {})
            for paper, count in row.items():
                merged[paper] = max(merged.get(paper, 0), count)
    return out


# ---------------------------------------------------------------- the general per-query rules
def plan_query(
    candidates: Sequence[tuple[Any, int]],
    config: SamplerConfig,
    pick: Callable[[int], int],
    pick_positive: Callable[[list[tuple[Any, int]]], Any],
    draw_easy: Callable[[], Any | None],
) -> tuple[list[tuple[Any, Any, str]], str | None]:
    """The original rules for one query: ``([(pos, neg, kind)], skip_reason)``. ``pick(n)`` draws an index below n,
    ``pick_positive(pool)`` a positive id from ``pool``, ``draw_easy()`` an easy negative id (``None``: none)."""
    cands = sorted(candidates, key=lambda c: c[1], reverse=True)
    if len(cands) < 3:
        return [], FEWER_THAN_3
    spread = cands[0][1] - cands[-1][1]
    margin = config.margin_fraction * spread
    if spread == 1:  # integer counts one apart: any margin fraction would pass, so use 1
        margin = math.ceil(margin)
    if margin == 0:
        return [], SAME_COUNT
    results: list[tuple[Any, Any, str]] = []
    hard_pool = [c for c in cands if c[1] < cands[0][1] - margin]
    if hard_pool:
        n_hard = min(config.hard_per_query, (len(cands) - len(hard_pool)) * len(hard_pool))
        for _ in range(n_hard):
            neg = hard_pool[pick(len(hard_pool))]
            pos_pool = [c for c in cands if c[1] > neg[1] + margin]
            if pos_pool:
                results.append((pick_positive(pos_pool), neg[0], "hard"))
    pos_pool = [c for c in cands if c[1] > margin + cands[-1][1]]
    if pos_pool:
        for _ in range(config.triplets_per_query - len(results)):
            neg = draw_easy()
            if neg is None:
                break
            results.append((pick_positive(pos_pool), neg, "easy"))
    return results, (None if results else NO_VALID_POSITIVE)


# ---------------------------------------------------------------- results
@dataclass
class TripletBatch:
    """Triplets as index arrays into ``ids`` (compact for ~10^6 triplets); iterate for ``Triplet``s."""

    ids: Sequence[str]
    query: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    hard: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.query)

    def __iter__(self) -> Iterator[Triplet]:
        ids = self.ids
        for q, p, n, h in zip(
            self.query.tolist(), self.pos.tolist(), self.neg.tolist(), self.hard.tolist(), strict=True
        ):
            yield Triplet(ids[q], ids[p], ids[n], "hard" if h else "easy")

    def to_list(self) -> list[Triplet]:
        return list(self)

    def kinds(self) -> dict[str, int]:
        n_hard = int(self.hard.sum())
        return {"hard": n_hard, "easy": len(self) - n_hard, "total": len(self)}

    def write(self, path: str | Path) -> int:
        """Write JSONL (the ``triplets.io`` format) atomically; returns the number of lines."""
        used = np.unique(np.concatenate([self.query, self.pos, self.neg])) if len(self) else np.array([], int)
        encoded = np.empty(len(self.ids), dtype=object)
        encoded[used] = [json.dumps(self.ids[i], ensure_ascii=False) for i in used.tolist()]
        kinds = np.where(self.hard, '"hard"', '"easy"')
        chunk = 200_000
        with atomic_write(path) as handle:
            for start in range(0, len(self), chunk):
                part = slice(start, start + chunk)
                handle.writelines(
                    f'{{"query": {q}, "pos": {p}, "neg": {n}, "kind": {k}}}\n'
                    for q, p, n, k in zip(
                        encoded[self.query[part]].tolist(),
                        encoded[self.pos[part]].tolist(),
                        encoded[self.neg[part]].tolist(),
                        kinds[part].tolist(),
                        strict=True,
                    )
                )
        return len(self)


@dataclass
class SplitResult:
    triplets: TripletBatch
    metrics: dict[str, Any]


@dataclass
class MiningResult:
    train: SplitResult
    val: SplitResult
    metrics: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- the indexed graph
class GraphIndex:
    """``data.json`` as integer arrays. Ids ``0..n_meta-1`` are the papers of ``metadata.json``."""

    def __init__(self, data: SpecterData) -> None:
        graph = data.graph
        meta_ids = list(data.metadata)
        self.n_meta = len(meta_ids)
        queries = list(graph)
        keys: list[str] = []
        counts: list[int] = []
        lengths = np.fromiter((len(row) for row in graph.values()), dtype=np.int64, count=len(graph))
        for row in graph.values():
            keys.extend(row)
            counts.extend(row.values())
        codes, uniques = pd.factorize(np.array(meta_ids + queries + keys, dtype=object), sort=False)
        self.ids: list[str] = uniques.tolist()
        codes = codes.astype(np.int64)
        self.row_query = codes[self.n_meta : self.n_meta + len(queries)]
        self.cand = codes[self.n_meta + len(queries) :]
        self.count = np.asarray(counts, dtype=np.int64)
        self.offsets = np.zeros(len(queries) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.row_of = {q: r for r, q in enumerate(queries)}
        self.graph = graph
        is5, is1 = self.count == DIRECT_CITATION, self.count == CITATION_OF_CITATION
        self.n_cand = lengths
        self.n5 = self._segment_sum(is5)
        self.n1 = self._segment_sum(is1)
        self.five = self.cand[is5]  # count-5 candidates, grouped by row in row order
        self.one = self.cand[is1]
        self.five_off = np.concatenate([[0], np.cumsum(self.n5)])
        self.one_off = np.concatenate([[0], np.cumsum(self.n1)])
        self.incitations = np.bincount(self.five, minlength=len(self.ids)).astype(np.int64)
        self.cand_in_meta = self._segment_sum(self.cand < self.n_meta)
        # (row, candidate) pairs as sorted int64 keys, for easy-negative rejection
        row_of_entry = np.repeat(np.arange(len(queries), dtype=np.int64), lengths)
        self.pair_keys = np.sort(row_of_entry * len(self.ids) + self.cand)
        self._five_cum: np.ndarray | None = None

    def _segment_sum(self, mask: np.ndarray) -> np.ndarray:
        cum = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
        return cum[self.offsets[1:]] - cum[self.offsets[:-1]]

    def five_cumulative(self) -> np.ndarray:
        """Inclusive cumulative in-citations over ``five`` (for weighted positives)."""
        if self._five_cum is None:
            self._five_cum = np.cumsum(self.incitations[self.five])
        return self._five_cum

    def is_candidate(self, rows: np.ndarray, papers: np.ndarray) -> np.ndarray:
        keys = rows * len(self.ids) + papers
        at = np.minimum(np.searchsorted(self.pair_keys, keys), max(len(self.pair_keys) - 1, 0))
        return self.pair_keys[at] == keys if len(self.pair_keys) else np.zeros(len(keys), bool)


# ---------------------------------------------------------------- fast sampling of one split
def _draw_easy_negatives(index: GraphIndex, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform papers of metadata that are neither the row's query nor one of its candidates."""
    out = rng.integers(0, index.n_meta, size=len(rows))
    bad = np.flatnonzero((out == index.row_query[rows]) | index.is_candidate(rows, out))
    for _ in range(_MAX_REJECTION_ROUNDS):
        if not len(bad):
            return out
        out[bad] = rng.integers(0, index.n_meta, size=len(bad))
        still = (out[bad] == index.row_query[rows[bad]]) | index.is_candidate(rows[bad], out[bad])
        bad = bad[still]
    for i in bad.tolist():  # tiny pools: draw exactly from what is left
        row = rows[i]
        taken = np.append(index.cand[index.offsets[row] : index.offsets[row + 1]], index.row_query[row])
        pool = np.setdiff1d(np.arange(index.n_meta), taken)
        out[i] = pool[rng.integers(0, len(pool))]
    return out


def _sample_fast_rows(
    index: GraphIndex, rows: np.ndarray, config: SamplerConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows with counts only 5 and 1 (both present, >= 3 candidates): (slot row, pos, neg, hard)."""
    n5, n1 = index.n5[rows], index.n1[rows]
    k = config.triplets_per_query
    n_hard = np.minimum(config.hard_per_query, n5 * n1)
    avail_easy = index.n_meta - index.cand_in_meta[rows] - 1
    n_easy = np.where(avail_easy > 0, k - n_hard, 0)
    per_row = n_hard + n_easy
    slot_row = np.repeat(rows, per_row)
    starts = np.repeat(np.cumsum(per_row) - per_row, per_row)
    hard = (np.arange(len(slot_row)) - starts) < np.repeat(n_hard, per_row)
    # positives: uniform over the row's direct citations, or weighted by in-citations
    if config.spectroid:
        cum = index.five_cumulative()
        lo, hi = index.five_off[slot_row], index.five_off[slot_row + 1]
        base = np.where(lo > 0, cum[np.maximum(lo - 1, 0)], 0)
        total = cum[hi - 1] - base
        target = base + rng.integers(0, total)
        pos = index.five[np.searchsorted(cum, target, side="right")]
    else:
        pos = index.five[index.five_off[slot_row] + rng.integers(0, index.n5[slot_row])]
    neg = np.empty(len(slot_row), dtype=np.int64)
    hard_rows = slot_row[hard]
    neg[hard] = index.one[index.one_off[hard_rows] + rng.integers(0, index.n1[hard_rows])]
    neg[~hard] = _draw_easy_negatives(index, slot_row[~hard], rng)
    return slot_row, pos, neg, hard


def _sample_general_row(
    index: GraphIndex, row: int, config: SamplerConfig, rng: np.random.Generator
) -> tuple[list[tuple[int, int, str]], str | None]:
    """Any other count pattern: the original per-query rules with numpy draws."""
    lo, hi = index.offsets[row], index.offsets[row + 1]
    cand = index.cand[lo:hi].tolist()
    taken = set(cand) | {int(index.row_query[row])}
    candidates = list(zip(cand, index.count[lo:hi].tolist(), strict=True))

    def pick(n: int) -> int:
        return int(rng.integers(0, n))

    def pick_positive(pool: list[tuple[int, int]]) -> int:
        if not config.spectroid:
            return pool[pick(len(pool))][0]
        weights = np.array([max(index.incitations[c], 0) for c, _ in pool], dtype=float)
        if weights.sum() == 0:
            return pool[pick(len(pool))][0]
        return pool[int(rng.choice(len(pool), p=weights / weights.sum()))][0]

    available = index.n_meta - sum(1 for c in taken if c < index.n_meta)

    def draw_easy() -> int | None:
        if available <= 0:
            return None
        while True:
            paper = int(rng.integers(0, index.n_meta))
            if paper not in taken:
                return paper

    return plan_query(candidates, config, pick, pick_positive, draw_easy)


def sample_split(
    index: GraphIndex, query_ids: Sequence[str], config: SamplerConfig, split: str = "train"
) -> SplitResult:
    """Triplets for ``query_ids`` (in order: per query, hard then easy) and their counts."""
    rng = np.random.default_rng([config.seed, _SPLIT_SALT.get(split, 0)])
    skipped: Counter = Counter()
    examples: dict[str, list[str]] = {}

    def skip(reason: str, query: str, n: int = 1) -> None:
        skipped[reason] += n
        bucket = examples.setdefault(reason, [])
        if len(bucket) < 5:
            bucket.append(query)

    def skip_rows(reason: str, skipped_rows: np.ndarray) -> None:
        for row in skipped_rows[:5].tolist():
            skip(reason, index.ids[index.row_query[row]], 0)
        skipped[reason] += len(skipped_rows)

    rows_list: list[int] = []
    for query in query_ids:
        row = index.row_of.get(query)
        if row is None:
            skip(NOT_IN_DATA_JSON, query)
        elif index.row_query[row] >= index.n_meta:
            skip(QUERY_WITHOUT_METADATA, query)
        else:
            rows_list.append(row)
    rows = np.asarray(rows_list, dtype=np.int64)
    n, n5, n1 = index.n_cand[rows], index.n5[rows], index.n1[rows]
    general = (n >= 3) & (n5 + n1 < n)
    fast = (n >= 3) & ~general & (n5 > 0) & (n1 > 0)
    skip_rows(FEWER_THAN_3, rows[n < 3])
    skip_rows(SAME_COUNT, rows[(n >= 3) & ~general & ~fast])
    slot_row, pos, neg, hard = _sample_fast_rows(index, rows[fast], config, rng)
    easy_unavailable = int(((index.n_meta - index.cand_in_meta[rows[fast]] - 1) <= 0).sum())
    skip_rows(NO_EASY_POOL, np.setdiff1d(rows[fast], slot_row))  # only without hard negatives and no easy pool
    extra: list[tuple[int, int, int, bool]] = []
    for row in rows[general].tolist():
        planned, reason = _sample_general_row(index, row, config, rng)
        if reason:
            skip(reason, index.ids[index.row_query[row]])
        extra.extend((row, p, q, kind == "hard") for p, q, kind in planned)
    if extra:
        e_row, e_pos, e_neg, e_hard = (np.asarray(col) for col in zip(*extra, strict=True))
        slot_row = np.concatenate([slot_row, e_row.astype(np.int64)])
        pos = np.concatenate([pos, e_pos.astype(np.int64)])
        neg = np.concatenate([neg, e_neg.astype(np.int64)])
        hard = np.concatenate([hard, e_hard.astype(bool)])
    # output in the order of the split file (rows are in data.json order, so sort by position)
    position = np.empty(len(index.offsets) - 1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    order = np.argsort(position[slot_row], kind="stable")
    slot_row, pos, neg, hard = slot_row[order], pos[order], neg[order], hard[order]
    # the original looks texts up afterwards and drops triplets whose papers have no metadata
    pos_missing, neg_missing = pos >= index.n_meta, neg >= index.n_meta
    keep = ~(pos_missing | neg_missing)
    sampled_rows = np.unique(slot_row)
    slot_row, pos, neg, hard = slot_row[keep], pos[keep], neg[keep], hard[keep]
    kept_rows = np.unique(slot_row)
    skip_rows(ALL_DROPPED, np.setdiff1d(sampled_rows, kept_rows))
    capped_from = None
    if config.max_triplets and split == "train" and len(slot_row) > config.max_triplets:
        capped_from = len(slot_row)
        keep_cap = _cap_mask(slot_row, config.max_triplets, rng)
        slot_row, pos, neg, hard = slot_row[keep_cap], pos[keep_cap], neg[keep_cap], hard[keep_cap]
        skipped[CAPPED] += len(kept_rows) - len(np.unique(slot_row))
    batch = TripletBatch(index.ids, index.row_query[slot_row], pos, neg, hard)
    used = len(np.unique(slot_row))
    metrics: dict[str, Any] = {
        "queries": len(query_ids),
        "queries_used": used,
        "queries_skipped": {reason: skipped[reason] for reason in SKIP_REASONS},
        "queries_skipped_total": len(query_ids) - used,
        "skip_examples": examples,
        "triplets": batch.kinds(),
        "triplets_dropped_no_metadata": {
            "pos_without_metadata": int(pos_missing.sum()),
            "neg_without_metadata": int((neg_missing & ~pos_missing).sum()),
        },
        "queries_without_easy_negative_pool": easy_unavailable,
        "capped_from": capped_from,
    }
    return SplitResult(batch, metrics)


def _cap_mask(slot_row: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Keep ``cap`` triplets: whole queries in a seeded random order (a split file may be sorted)."""
    rows, first, sizes = np.unique(slot_row, return_index=True, return_counts=True)
    order = rng.permutation(len(rows))
    cum = np.cumsum(sizes[order])
    chosen = order[cum <= cap]
    mask = np.zeros(len(slot_row), dtype=bool)
    for start, size in zip(first[chosen].tolist(), sizes[chosen].tolist(), strict=True):
        mask[start : start + size] = True
    short = cap - int(mask.sum())
    if short > 0:  # fill up from the next query in the random order
        nxt = order[len(chosen)]
        mask[first[nxt] : first[nxt] + short] = True
    return mask


# ---------------------------------------------------------------- whole data dir
def _abstract_counts(data: SpecterData, batches: dict[str, TripletBatch]) -> dict[str, Any]:
    ids = list(data.metadata)
    empty = np.fromiter((not p.abstract.strip() for p in data.metadata.values()), dtype=bool, count=len(ids))
    out: dict[str, Any] = {"metadata_papers": len(ids), "without_abstract": int(empty.sum())}
    for split, batch in batches.items():
        used = np.unique(np.concatenate([batch.query, batch.pos, batch.neg])) if len(batch) else np.array([], int)
        out[f"{split}_papers_used"] = len(used)
        out[f"{split}_papers_used_without_abstract"] = int(empty[used].sum())
    return out


def _explain_nothing(metrics: dict[str, Any], n_queries: int, total_without_metadata: int = 0) -> str:
    reasons = ", ".join(f"{k}: {v}" for k, v in metrics["queries_skipped"].items() if v)
    examples = {k: v for k, v in metrics["skip_examples"].items() if v}
    hint = ""
    if metrics["queries_skipped"].get(QUERY_WITHOUT_METADATA) == n_queries:
        hint = " Every train query id is missing from metadata.json, so no triplet text could be looked up."
    if total_without_metadata:
        hint += f" {total_without_metadata} query id(s) of data.json in all have no metadata."
    return f"no training triplets could be produced from {n_queries} train queries ({reasons}; e.g. {examples}).{hint}"


def mine(data: SpecterData, config: SamplerConfig | None = None) -> MiningResult:
    """Train and val triplets from SPECTER data; a DataError when no train triplet can be made."""
    config = config or SamplerConfig()
    if "train" not in data.splits:
        raise DataError("no train split (train.txt) in the SPECTER data")
    if config.positives != "citation":
        data = dataclasses.replace(data, graph=cocitation_graph(data.graph, mix=config.positives == "mix"))
    index = GraphIndex(data)
    train = sample_split(index, data.splits["train"], config, "train")
    if not len(train.triplets):
        missing = data.report.counts.get("query_without_metadata", 0)
        raise DataError(_explain_nothing(train.metrics, len(data.splits["train"]), missing), data.report.source or None)
    val = sample_split(index, data.splits.get("val", []), config, "val")
    metrics = {
        "config": asdict(config),
        "source": data.report.source,
        "hard_per_query": config.hard_per_query,
        "train": train.metrics,
        "val": val.metrics,
        "papers": _abstract_counts(data, {"train": train.triplets, "val": val.triplets}),
        "read_report": data.report.as_dict(),
    }
    return MiningResult(train, val, metrics)


def mine_dir(data_dir: str | Path, out_dir: str | Path, config: SamplerConfig | None = None) -> dict[str, Any]:
    """Read a SPECTER dir, mine, write ``train.jsonl``, ``val.jsonl``, ``metrics.json``; return metrics."""
    result = mine(read_specter_dir(data_dir), config)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result.train.triplets.write(out_dir / TRIPLETS_TRAIN_FILE)
    result.val.triplets.write(out_dir / TRIPLETS_VAL_FILE)
    write_json(out_dir / METRICS_FILE, result.metrics)
    return result.metrics


# ---------------------------------------------------------------- pure-Python reference
def reference_sample(
    data: SpecterData, query_ids: Sequence[str], config: SamplerConfig | None = None
) -> tuple[list[Triplet], Counter]:
    """A straightforward per-query implementation (easy pool rebuilt per query, as the original): slow (O(papers)
    per query), kept to check and time the vectorised sampler against."""
    config = config or SamplerConfig()
    rng = random.Random(config.seed)
    meta_ids = list(data.metadata)
    incitations = Counter(c for row in data.graph.values() for c, n in row.items() if n == DIRECT_CITATION)
    counts: Counter = Counter()
    triplets: list[Triplet] = []

    def pick_positive(pool: list[tuple[str, int]]) -> str:
        if config.spectroid:
            return rng.choices([c for c, _ in pool], weights=[incitations[c] for c, _ in pool])[0]
        return pool[rng.randrange(len(pool))][0]

    for query in query_ids:
        row = data.graph.get(query)
        if row is None:
            counts[NOT_IN_DATA_JSON] += 1
            continue
        if query not in data.metadata:
            counts[QUERY_WITHOUT_METADATA] += 1
            continue
        taken = set(row) | {query}
        pool = [p for p in meta_ids if p not in taken]

        def draw_easy(pool: list[str] = pool) -> str | None:
            return pool[rng.randrange(len(pool))] if pool else None

        planned, reason = plan_query(list(row.items()), config, rng.randrange, pick_positive, draw_easy)
        if reason:
            counts[reason] += 1
        kept = [Triplet(query, p, n, k) for p, n, k in planned if p in data.metadata and n in data.metadata]
        counts["triplets_dropped_no_metadata"] += len(planned) - len(kept)
        if planned and not kept:
            counts[ALL_DROPPED] += 1
        triplets.extend(kept)
    return triplets, counts
