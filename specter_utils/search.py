"""Similar-paper search: a FAISS index over an embeddings file, queried by paper id or by free text.

An index is one file (``.npz``, written atomically) holding the serialised FAISS index, the paper ids
and titles in row order, and a JSON header with how the vectors were made (model, pooling, maximum
length, dimension). Vectors are L2-normalised before indexing, so a score is a cosine similarity.
A query made with other settings than the index's is an error, never a silent mismatch.

Why FAISS (``docs/benchmarks.md``, measured on this project's 2-core machine): on 50,000 clustered
384-dim vectors FAISS HNSW built in 33 s against usearch's 315 s at comparable recall (0.965 vs
0.990 at efSearch 64, and FAISS reaches usearch's recall by raising efSearch at query time).
Below ``EXACT_MAX`` vectors an exact (flat) index is both fast and exact, so ``auto`` picks it; above, IVF
(inverted lists, 4 sqrt(n) of them): on 1M clustered vectors it built in 6.5 minutes on 2 loaded cores with
recall@10 1.000 at p50 2.9 ms, where HNSW needed 7 minutes for 200,000 (35+ for 1M). HNSW answers faster
once built (``--kind hnsw``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.embedding.io import EmbeddingSet, read_embeddings
from specter_utils.errors import DataError
from specter_utils.io import atomic_write

FORMAT = "specter-utils-index/1"
KINDS = ("auto", "flat", "hnsw", "ivf")
EXACT_MAX = 200_000  # auto: exact search up to here (tens of ms a query on 2 cores), IVF above
HNSW_M = 32  # graph degree: 32 is FAISS's usual choice for 384-dim text vectors
HNSW_EF_CONSTRUCTION = 40  # FAISS default; 80 buys ~1 point of recall for twice the build time
HNSW_EF_SEARCH = 512  # recall@10 0.978 at p50 1.3 ms on 200,000 clustered vectors (128: 0.847; bench_index.py)
IVF_NPROBE = 64  # lists scanned per query: recall@10 >= 0.95 on 1M clustered vectors (bench_index.py)
IVF_TRAIN_PER_LIST = 50  # k-means sample per list (FAISS warns below 39)


def ivf_lists(n: int) -> int:
    """Inverted lists for ``n`` vectors: about 4 sqrt(n) (FAISS's guideline), 4,000 at 1M."""
    return int(min(65_536, max(16, round(4 * n**0.5))))


# The settings that decide a vector: a query must match the index on every one of them.
VECTOR_KEYS = ("model", "pooling", "pooling_detail", "max_length", "dim")


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # an optional extra
        raise DataError("search needs faiss: pip install 'specter-utils[search]' (faiss-cpu)") from exc
    return faiss


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 and C-contiguous for FAISS."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def vector_settings(info: dict[str, Any], dim: int) -> dict[str, Any]:
    """The settings of an embeddings file that decide its vectors (missing ones are None)."""
    settings = {key: info.get(key) for key in VECTOR_KEYS}
    settings["dim"] = dim
    return settings


def check_settings(index_settings: dict[str, Any], query_settings: dict[str, Any], what: str) -> None:
    """DataError naming every setting in which ``what`` differs from the index (None means unknown)."""
    differs = [
        f"{key} {query_settings[key]!r} (index: {index_settings.get(key)!r})"
        for key in VECTOR_KEYS
        if query_settings.get(key) is not None
        and index_settings.get(key) is not None
        and query_settings[key] != index_settings[key]
    ]
    if differs:
        raise DataError(f"{what} differ from the index in " + "; ".join(differs))


@dataclass
class Neighbour:
    rank: int
    paper_id: str
    title: str
    score: float


@dataclass
class PaperIndex:
    """A FAISS index over unit vectors, with row ``i`` being paper ``ids[i]``."""

    index: Any  # faiss.Index
    ids: list[str]
    titles: list[str]
    info: dict[str, Any] = field(default_factory=dict)
    path: str | None = None  # the file it was loaded from, named in errors

    def __post_init__(self) -> None:
        self._row = {pid: i for i, pid in enumerate(self.ids)}

    @property
    def dim(self) -> int:
        return int(self.index.d)

    @property
    def settings(self) -> dict[str, Any]:
        return vector_settings(self.info, self.dim)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self._row

    def vector(self, paper_id: str) -> np.ndarray:
        """The indexed (unit) vector of ``paper_id``; an unknown id is a DataError."""
        if paper_id not in self._row:
            raise DataError(f"unknown paper id {paper_id!r}: not among the {len(self)} indexed papers", self.path)
        return self.index.reconstruct(self._row[paper_id]).reshape(1, -1)

    def search(
        self, queries: np.ndarray, k: int = 10, exclude: list[str | None] | None = None
    ) -> list[list[Neighbour]]:
        """The ``k`` most similar papers to each query row (cosine), leaving out ``exclude[i]`` for row i."""
        if k < 1:
            raise DataError(f"k must be positive, got {k}")
        queries = np.atleast_2d(queries)
        if queries.shape[1] != self.dim:
            raise DataError(f"query vectors have {queries.shape[1]} dimensions, the index has {self.dim}", self.path)
        extra = 1 if exclude else 0
        scores, rows = self.index.search(normalise(queries), min(k + extra, len(self)))
        results = []
        for i in range(len(queries)):
            skip = exclude[i] if exclude else None
            hits = [(int(r), float(s)) for r, s in zip(rows[i], scores[i], strict=True) if r >= 0]
            hits = [(r, s) for r, s in hits if self.ids[r] != skip][:k]
            results.append([Neighbour(rank + 1, self.ids[r], self.titles[r], s) for rank, (r, s) in enumerate(hits)])
        return results

    def save(self, path: str | Path) -> None:
        """Write the index as one ``.npz`` file, atomically (temporary file, then rename)."""
        faiss = _faiss()
        header = {"format": FORMAT, **self.info, "dim": self.dim, "count": len(self)}
        with atomic_write(path, "wb") as handle:
            np.savez(
                handle,
                header=np.array(json.dumps(header)),
                index=faiss.serialize_index(self.index),
                ids=np.array(self.ids, dtype=str),
                titles=np.array(self.titles, dtype=str),
            )


def build_index(
    embeddings: EmbeddingSet,
    kind: str = "auto",
    titles: dict[str, str] | None = None,
    source: str | None = None,
    threads: int | None = None,
) -> PaperIndex:
    """Index ``embeddings`` (normalised) with an exact, an IVF or an HNSW FAISS index.

    Args:
        kind: ``flat`` (exact), ``ivf`` or ``hnsw`` (approximate, for millions of papers) or ``auto``
            (flat up to ``EXACT_MAX`` vectors).
        titles: paper id -> title, for embeddings read from ``.npy`` (which carries no titles).
    """
    faiss = _faiss()
    if kind not in KINDS:
        raise DataError(f"index kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not len(embeddings) or embeddings.dim == 0:
        raise DataError("no embeddings to index")
    if threads:
        faiss.omp_set_num_threads(threads)
    chosen = kind if kind != "auto" else ("flat" if len(embeddings) <= EXACT_MAX else "ivf")
    dim = embeddings.dim
    start = time.perf_counter()
    if chosen == "flat":
        index = faiss.IndexFlatIP(dim)
    elif chosen == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
    else:
        nlist = ivf_lists(len(embeddings))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).permutation(len(embeddings))[: nlist * IVF_TRAIN_PER_LIST]
        index.train(normalise(embeddings.vectors[np.sort(sample)]))
        index.nprobe = min(IVF_NPROBE, nlist)
    index.add(normalise(embeddings.vectors))
    if chosen == "ivf":
        index.make_direct_map()  # so that a paper's own vector can be read back (search --paper-id)
    seconds = time.perf_counter() - start
    own_titles = embeddings.titles or [""] * len(embeddings)
    titles = titles or {}
    paper_titles = [own or titles.get(pid, "") for pid, own in zip(embeddings.ids, own_titles, strict=True)]
    info = {key: embeddings.info.get(key) for key in ("model", "model_path", "pooling", "pooling_detail", "max_length")}
    info.update(
        text=embeddings.info.get("text"),
        metric="cosine",
        kind=chosen,
        **(
            {"hnsw": {"M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION, "ef_search": HNSW_EF_SEARCH}}
            if chosen == "hnsw"
            else {"ivf": {"nlist": index.nlist, "nprobe": index.nprobe}}
            if chosen == "ivf"
            else {}
        ),
        embeddings=source,
        build_seconds=round(seconds, 3),
        faiss=faiss.__version__,
    )
    return PaperIndex(index, list(embeddings.ids), paper_titles, info)


def load_index(path: str | Path) -> PaperIndex:
    """Read an index written by ``PaperIndex.save``; a missing or foreign file is a DataError."""
    faiss = _faiss()
    path = Path(path)
    if not path.exists():
        raise DataError("index file not found", path)
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            raw = data["index"]
            ids = [str(x) for x in data["ids"]]
            titles = [str(x) for x in data["titles"]]
    except (OSError, ValueError, KeyError) as exc:
        raise DataError(f"not a specter-utils index ({type(exc).__name__}: {exc})", path) from None
    if header.get("format") != FORMAT:
        raise DataError(f"index format {header.get('format')!r}, expected {FORMAT!r}", path)
    index = faiss.deserialize_index(raw)
    if index.ntotal != len(ids):
        raise DataError(f"index holds {index.ntotal} vectors but {len(ids)} ids", path)
    if "ef_search" in header.get("hnsw", {}):
        index.hnsw.efSearch = int(header["hnsw"]["ef_search"])
    if "nprobe" in header.get("ivf", {}):
        index.nprobe = int(header["ivf"]["nprobe"])
        if index.direct_map.type == faiss.DirectMap.NoMap:
            index.make_direct_map()
    info = {k: v for k, v in header.items() if k not in {"format", "dim", "count"}}
    return PaperIndex(index, ids, titles, info, str(path))


def query_vectors_from_embeddings(index: PaperIndex, path: str | Path, paper_ids: list[str]) -> np.ndarray:
    """Vectors of ``paper_ids`` from another embeddings file, which must match the index's settings."""
    embeddings = read_embeddings(path)
    if embeddings.dim != index.dim:
        raise DataError(f"embeddings have {embeddings.dim} dimensions, the index {index.path} has {index.dim}", path)
    check_settings(index.settings, vector_settings(embeddings.info, embeddings.dim), f"embeddings {path}")
    vectors, found = embeddings.lookup(paper_ids)
    if not found.all():
        missing = paper_ids[int(np.argmin(found))]
        raise DataError(f"unknown paper id {missing!r}: not in the embeddings", path)
    return vectors


def embed_query(
    index: PaperIndex,
    texts: list[tuple[str, str]],
    model: str | None = None,
    pooling: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
) -> np.ndarray:
    """Embed ``(title, abstract)`` pairs with the index's model, pooling and maximum length.

    An explicit ``model``/``pooling``/``max_length`` that differs from the index is a DataError.
    """
    from specter_utils.data.records import Paper
    from specter_utils.embedding.encoder import load_encoder

    settings = index.settings
    for title, abstract in texts:
        if not (title or "").strip() and not (abstract or "").strip():
            raise DataError("empty query: give a title, an abstract or --text")
    asked = {"model": model, "pooling": pooling, "max_length": max_length}
    check_settings(settings, {k: v for k, v in asked.items() if v is not None}, "query settings")
    model_ref = (
        settings.get("model_path") if settings.get("model_path") and Path(settings["model_path"]).exists() else None
    )
    model_ref = model_ref or settings.get("model")
    if not model_ref or settings.get("max_length") is None:
        raise DataError("the index does not record its model and max length (built from embeddings without .meta.json)")
    pooling_arg = "auto" if settings.get("pooling") == "model" else settings.get("pooling")
    encoder = load_encoder(model_ref, pooling_arg, int(settings["max_length"]), device=device, dtype="float32")
    made = {**settings, "pooling": encoder.pooling, "pooling_detail": encoder.pooling_detail, "dim": encoder.dim}
    made["max_length"] = encoder.max_length
    made["model"] = settings.get("model")
    check_settings(settings, made, "the query encoder's settings")
    papers = [Paper("query", title or "", abstract or "") for title, abstract in texts]
    return encoder.encode([paper.text(encoder.sep) for paper in papers], batch_size=32)


def neighbours_table(index: PaperIndex | str | Path, paper_ids: list[str], k: int = 5) -> Any:
    """A pandas DataFrame of the ``k`` neighbours of each paper (query id, query title, rank, id, title, score).

    The notebook section on similar papers calls this with a few well-known papers.
    """
    import pandas as pd

    index = index if isinstance(index, PaperIndex) else load_index(index)
    queries = np.vstack([index.vector(pid) for pid in paper_ids])
    rows = []
    for pid, hits in zip(paper_ids, index.search(queries, k, exclude=list(paper_ids)), strict=True):
        query_title = index.titles[index._row[pid]]
        rows += [
            {
                "query_id": pid,
                "query_title": query_title,
                "rank": h.rank,
                "paper_id": h.paper_id,
                "title": h.title,
                "score": round(h.score, 4),
            }
            for h in hits
        ]
    return pd.DataFrame(rows)


def format_table(hits: list[Neighbour], width: int = 100) -> str:
    """A plain terminal table: rank, score, paper id, title (cut to fit ``width``)."""
    id_width = max([8] + [len(h.paper_id) for h in hits])
    lines = [f"{'rank':>4}  {'score':>6}  {'paper_id':<{id_width}}  title"]
    room = max(20, width - (4 + 2 + 6 + 2 + id_width + 2))
    for h in hits:
        title = " ".join(h.title.split())
        title = title if len(title) <= room else title[: room - 1] + "…"
        lines.append(f"{h.rank:>4}  {h.score:6.4f}  {h.paper_id:<{id_width}}  {title}")
    return "\n".join(lines)


def index_bytes(index: PaperIndex) -> int:
    """Serialised size of the FAISS index (a proxy for its memory)."""
    return int(_faiss().serialize_index(index.index).nbytes)


__all__ = [
    "PaperIndex",
    "Neighbour",
    "build_index",
    "load_index",
    "embed_query",
    "query_vectors_from_embeddings",
    "neighbours_table",
    "format_table",
]
