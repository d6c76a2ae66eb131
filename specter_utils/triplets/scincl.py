"""SciNCL neighbourhood sampling (Ostendorff et al., EMNLP 2022), rescaled to the corpus at hand.

SciNCL embeds the citation graph, then for each query paper draws positives from a band of its
nearest neighbours in that graph space (ranks 20-25 of 52.6M S2ORC nodes: 5 positives) and hard
negatives from a band much further out (ranks 3998-4000: 2 hard negatives), plus random papers as
easy negatives (3), so one query gives 5 triplets (2 hard, 3 easy), as SPECTER's sampler does.

**Graph embedding.** A truncated SVD of the symmetrically normalised adjacency
``D^-1/2 (A + A^T) D^-1/2`` of the *training* citation graph (direct citations of the training dir's
``data.json``, which holds no held-out query), with ``scipy.sparse.linalg.svds``. Why not
SciNCL's PyTorch-BigGraph: it is unmaintained, heavy to install and random; the spectral embedding
needs only scipy, is deterministic for a seed, and takes seconds on 10^5 nodes (the same family as
NetMF / ProNE, which match BigGraph-style embeddings on link prediction at this scale). Each node's
vector is ``U * sqrt(S)``, compared by cosine.

**Neighbours.** Exact cosine kNN with scikit-learn's brute-force ``NearestNeighbors`` (a corpus of
10^4-10^5 training nodes needs no approximate index).

**Rescaling the bands.** Scaling ranks in proportion to the node count would put both bands at
rank 0-2 on a corpus of 10^4 papers, so the ranks are rescaled on a log scale instead:
``rank' = round(exp(ln(rank) * ln(N) / ln(52.6M)))``, which keeps "how deep into the neighbourhood"
a band sits relative to the size of the graph (a rank r in a graph of M nodes sits at the same
fraction of ln M). Band widths (5 positives, 2 hard negatives) stay as in SciNCL. On 20K nodes the
bands become ranks 5-10 and 101-103. A graph too small for the rescaled bands is an error that names
the sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import svds
from sklearn.neighbors import NearestNeighbors

from specter_utils.data.specter_format import DIRECT_CITATION, SpecterData, read_specter_dir
from specter_utils.errors import DataError
from specter_utils.io import write_json
from specter_utils.layout import METRICS_FILE, TRIPLETS_TRAIN_FILE, TRIPLETS_VAL_FILE
from specter_utils.triplets.io import Triplet, write_triplets

SCINCL_NODES = 52_600_000  # nodes of SciNCL's S2ORC citation graph, the scale its bands were tuned at
POSITIVE_BAND = (20, 25)  # SciNCL: positives are kNN ranks 20..24 (5 papers)
HARD_NEGATIVE_BAND = (3998, 4000)  # SciNCL: hard negatives are kNN ranks 3998..3999 (2 papers)


@dataclass(frozen=True)
class ScinclConfig:
    """SciNCL sampling options; the defaults are SciNCL's, with the bands rescaled to the graph."""

    dim: int = 64  # graph-embedding dimensions (truncated SVD rank)
    easy_negatives: int = 3  # random papers per query, as SciNCL (and SPECTER's 3 easy)
    positive_band: tuple[int, int] = POSITIVE_BAND  # [start, end) at SciNCL's scale
    hard_negative_band: tuple[int, int] = HARD_NEGATIVE_BAND
    reference_nodes: int = SCINCL_NODES
    max_triplets: int | None = None  # cap on train triplets (whole random queries)
    seed: int = 0


def rescale_rank(rank: int, n_nodes: int, reference_nodes: int = SCINCL_NODES) -> int:
    """A kNN rank at SciNCL's scale mapped to a graph of ``n_nodes`` on a log scale (at least 1)."""
    if n_nodes >= reference_nodes:
        return rank
    return max(1, round(math.exp(math.log(rank) * math.log(n_nodes) / math.log(reference_nodes))))


def rescaled_bands(n_nodes: int, config: ScinclConfig = ScinclConfig()) -> tuple[tuple[int, int], tuple[int, int]]:
    """The positive and hard-negative rank bands ``[start, end)`` for a graph of ``n_nodes`` (a DataError where the
    graph cannot hold both bands apart)."""
    (p0, p1), (n0, n1) = config.positive_band, config.hard_negative_band
    pos_start = rescale_rank(p0, n_nodes, config.reference_nodes)
    neg_start = rescale_rank(n0, n_nodes, config.reference_nodes)
    positives = (pos_start, pos_start + (p1 - p0))
    negatives = (max(neg_start, positives[1]), max(neg_start, positives[1]) + (n1 - n0))
    if negatives[1] > n_nodes - 1:
        raise DataError(
            f"graph too small for SciNCL sampling: {n_nodes} nodes with citations, but the rescaled bands need "
            f"kNN ranks up to {negatives[1]} (positives {positives[0]}-{positives[1] - 1}, hard negatives "
            f"{negatives[0]}-{negatives[1] - 1}) plus the query itself"
        )
    return positives, negatives


def graph_embedding(data: SpecterData, dim: int = 64, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Node ids and ``U * sqrt(S)`` of the normalised, symmetrised direct-citation adjacency."""
    edges = [(q, c) for q, row in data.graph.items() for c, count in row.items() if count == DIRECT_CITATION]
    nodes = sorted({p for edge in edges for p in edge})
    if len(nodes) < 3:
        raise DataError(f"graph too small for SciNCL sampling: {len(nodes)} nodes with direct citations")
    index = {p: i for i, p in enumerate(nodes)}
    rows = np.fromiter((index[q] for q, _ in edges), dtype=np.int64, count=len(edges))
    cols = np.fromiter((index[c] for _, c in edges), dtype=np.int64, count=len(edges))
    n = len(nodes)
    adjacency = sparse.coo_matrix((np.ones(len(edges)), (rows, cols)), shape=(n, n)).tocsr()
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.float64)
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    scale = sparse.diags(1.0 / np.sqrt(np.maximum(degree, 1.0)))
    normalised = scale @ adjacency @ scale
    k = max(1, min(dim, n - 2))
    v0 = np.random.default_rng(seed).standard_normal(n)  # svds' start vector: seeded, so runs repeat
    u, s, _ = svds(normalised, k=k, v0=v0)
    return nodes, (u * np.sqrt(s)).astype(np.float32)


def neighbour_ranks(vectors: np.ndarray, rows: np.ndarray, depth: int) -> np.ndarray:
    """For each row in ``rows``: the indices of its ``depth`` nearest other nodes by cosine, nearest first."""
    index = NearestNeighbors(n_neighbors=min(depth + 1, len(vectors)), metric="cosine", algorithm="brute")
    index.fit(vectors)
    _, found = index.kneighbors(vectors[rows])
    out = np.empty((len(rows), depth), dtype=np.int64)
    for i, (row, hits) in enumerate(zip(rows, found, strict=True)):
        others = hits[hits != row][:depth]  # the query itself is rank 0 (or tied there)
        out[i, : len(others)] = others
        out[i, len(others) :] = -1
    return out


def sample_scincl(
    data: SpecterData, query_ids: Sequence[str], config: ScinclConfig, split: str, embedding=None
) -> tuple[list[Triplet], dict[str, Any]]:
    """SciNCL triplets of ``query_ids``: 5 positives from the positive band, 2 hard + 3 random negatives."""
    nodes, vectors = embedding if embedding is not None else graph_embedding(data, config.dim, config.seed)
    (p0, p1), (n0, n1) = rescaled_bands(len(nodes), config)
    node_index = {p: i for i, p in enumerate(nodes)}
    has_text = np.array([p in data.metadata for p in nodes])
    queries = [q for q in query_ids if q in node_index and q in data.metadata]
    skipped = {
        "not_in_graph": sum(1 for q in query_ids if q not in node_index),
        "query_without_metadata": sum(1 for q in query_ids if q in node_index and q not in data.metadata),
        "band_without_text": 0,
    }
    rng = np.random.default_rng([config.seed, {"train": 1, "val": 2}.get(split, 3)])
    triplets: list[Triplet] = []
    if queries:
        rows = np.array([node_index[q] for q in queries])
        ranks = neighbour_ranks(vectors, rows, n1)
        text_ids = list(data.metadata)
        for query, near in zip(queries, ranks, strict=True):
            positives = [nodes[j] for j in near[p0 - 1 : p1 - 1] if j >= 0 and has_text[j]]
            hard = [nodes[j] for j in near[n0 - 1 : n1 - 1] if j >= 0 and has_text[j]]
            if not positives or not hard:
                skipped["band_without_text"] += 1
                continue
            close = {nodes[j] for j in near[: n0 - 1] if j >= 0} | {query}
            easy: list[str] = []
            while len(easy) < config.easy_negatives:
                paper = text_ids[int(rng.integers(len(text_ids)))]
                if paper not in close:
                    easy.append(paper)
            negatives = [(p, "hard") for p in hard] + [(p, "easy") for p in easy]
            triplets += [
                Triplet(query, positives[k % len(positives)], n, kind) for k, (n, kind) in enumerate(negatives)
            ]
    if split == "train" and config.max_triplets and len(triplets) > config.max_triplets:
        per_query: dict[str, list[Triplet]] = {}
        for t in triplets:
            per_query.setdefault(t.query, []).append(t)
        order = list(per_query)
        rng.shuffle(order)
        kept: list[Triplet] = []
        for q in order:
            if len(kept) + len(per_query[q]) > config.max_triplets:
                break
            kept.extend(per_query[q])
        triplets = kept
    metrics = {
        "queries": len(query_ids),
        "queries_used": len({t.query for t in triplets}),
        "queries_skipped": skipped,
        "triplets": {
            "total": len(triplets),
            "hard": sum(t.kind == "hard" for t in triplets),
            "easy": sum(t.kind == "easy" for t in triplets),
        },
        "graph_nodes": len(nodes),
        "positive_ranks": [p0, p1 - 1],
        "hard_negative_ranks": [n0, n1 - 1],
    }
    return triplets, metrics


def mine_scincl_dir(data_dir: str | Path, out_dir: str | Path, config: ScinclConfig | None = None) -> dict[str, Any]:
    """SciNCL triplets of a SPECTER training dir: ``train.jsonl``, ``val.jsonl``, ``metrics.json`` (as ``mine``)."""
    config = config or ScinclConfig()
    data = read_specter_dir(data_dir)
    if "train" not in data.splits:
        raise DataError("no train split (train.txt) in the SPECTER data", data_dir)
    embedding = graph_embedding(data, config.dim, config.seed)
    train, train_metrics = sample_scincl(data, data.splits["train"], config, "train", embedding)
    if not train:
        raise DataError(f"no SciNCL training triplets from {len(data.splits['train'])} train queries: {train_metrics}")
    val, val_metrics = sample_scincl(data, data.splits.get("val", []), config, "val", embedding)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_triplets(out_dir / TRIPLETS_TRAIN_FILE, train)
    write_triplets(out_dir / TRIPLETS_VAL_FILE, val)
    metrics = {"strategy": "scincl", "config": asdict(config), "train": train_metrics, "val": val_metrics}
    write_json(out_dir / METRICS_FILE, metrics)
    return metrics
