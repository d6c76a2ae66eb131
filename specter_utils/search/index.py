"""The paper index: FAISS kinds, how ``auto`` chooses one, building, growing, searching and loading.

An index holds unit vectors (:mod:`specter_utils.search.vectors`), so a score is a cosine similarity, and
the settings that made them. Papers can be added, updated and removed without a rebuild
(:meth:`PaperIndex.add`, :meth:`PaperIndex.remove`); each change rewrites the one file
(:mod:`specter_utils.search.storage`) atomically, so a crash leaves the old index whole.

Kinds (figures in ``docs/benchmarks.md``, measured on this project's 2-core machine by ``bench/bench_index.py``):

- ``flat``: exact; ``auto`` picks it up to ``EXACT_MAX`` vectors.
- ``ivf``: inverted lists (4 sqrt(n)) of float32 vectors, 1,536 bytes a 384-dim paper.
- ``ivf-pq``: inverted lists (sqrt(n)) of 4-bit product-quantised codes scanned with SIMD ("fast
  scan"), whose best ``PQ_RERANK`` x k candidates are re-ranked with
  8-bit scalar codes: 416 bytes a 384-dim paper, so 10M papers fit in about 4.2 GB; ``auto`` picks it
  above ``COMPRESSED_MIN`` vectors.
- ``hnsw``: a graph; fastest queries, slowest build (FAISS built 50,000 vectors in 33 s against
  usearch's 315 s at comparable recall)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.search.storage import read_index_file, write_index_file
from specter_utils.search.vectors import load_faiss, normalise, set_threads, vector_settings

KINDS = ("auto", "flat", "hnsw", "ivf", "ivf-pq")
EXACT_MAX = 200_000  # auto: exact search up to here (tens of ms a query on 2 cores)
COMPRESSED_MIN = 1_000_000  # auto: ivf-pq above this many vectors, ivf from EXACT_MAX to here
HNSW_M = 32  # graph degree: 32 is FAISS's usual choice for 384-dim text vectors
HNSW_EF_CONSTRUCTION = 40  # FAISS default; 80 buys ~1 point of recall for twice the build time
HNSW_EF_SEARCH = 512  # recall@10 0.978 at p50 1.3 ms on 200,000 clustered vectors (128: 0.847; bench_index.py)
IVF_NPROBE = 64  # lists scanned per query: recall@10 >= 0.95 on 1M clustered vectors (bench_index.py)
IVF_TRAIN_PER_LIST = 50  # k-means sample per list (FAISS warns below 39)
PQ_NPROBE = 64  # ivf-pq lists scanned per query (bench_index.py: generated and real embeddings)
PQ_RERANK = 16  # ivf-pq: candidates re-ranked with the 8-bit codes, per neighbour asked
PQ_TRAIN_PER_LIST = 40
RETRAIN_GROWTH = 0.1  # re-train an IVF index grown by this share since training (benchmarks.md: drift)
CHUNK = 100_000  # vectors normalised and added at a time, so a build holds one chunk of float32 beside the index


def ivf_lists(n: int) -> int:
    """Inverted lists for ``n`` vectors: about 4 sqrt(n) (FAISS's guideline), 4,000 at 1M."""
    return int(min(65_536, max(16, round(4 * n**0.5))))


def pq_lists(n: int) -> int:
    """Inverted lists of an ``ivf-pq`` index: sqrt(n), 3,162 at 10M. Fast scan makes long lists cheap to scan,
    and every vector added is compared with every list centre exactly (an HNSW graph over the centres sent vectors
    to the wrong lists and lost recall), so fewer lists build faster."""
    return int(min(65_536, max(8, round(n**0.5))))


def choose_kind(kind: str, n: int) -> str:
    """The kind ``auto`` means for ``n`` vectors (others pass through)."""
    if kind not in KINDS:
        raise DataError(f"index kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind != "auto":
        return kind
    return "flat" if n <= EXACT_MAX else "ivf" if n <= COMPRESSED_MIN else "ivf-pq"


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
        self._rows: dict[str, int] | None = None  # built on first lookup: 10M ids cost ~1 GB as a dict

    @property
    def _row(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {pid: i for i, pid in enumerate(self.ids)}
        return self._rows

    @property
    def dim(self) -> int:
        return int(self.index.d)

    @property
    def kind(self) -> str:
        return str(self.info.get("kind"))

    @property
    def settings(self) -> dict[str, Any]:
        return vector_settings(self.info, self.dim)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self._row

    def row(self, paper_id: str) -> int:
        """Row of ``paper_id``; an unknown id is a DataError."""
        if paper_id not in self._row:
            raise DataError(f"unknown paper id {paper_id!r}: not among the {len(self)} indexed papers", self.path)
        return self._row[paper_id]

    def vector(self, paper_id: str) -> np.ndarray:
        """The indexed (unit) vector of ``paper_id`` (``ivf-pq``: its 8-bit codes decoded)."""
        row = self.row(paper_id)
        store = load_faiss().downcast_index(self.index.refine_index) if self.kind == "ivf-pq" else self.index
        return store.reconstruct(row).reshape(1, -1)

    def set_search_width(self, nprobe: int | None = None, ef_search: int | None = None, k: int = 10) -> None:
        """Set IVF lists scanned (``nprobe``) or HNSW candidates (``ef_search``); the wrong kind is a DataError."""
        if nprobe is not None:
            if self.kind not in ("ivf", "ivf-pq"):
                raise DataError(f"--nprobe applies to an IVF index; {self.path or 'this index'} is {self.kind}")
            load_faiss().extract_index_ivf(self.index).nprobe = nprobe
        if ef_search is not None:
            if self.kind != "hnsw":
                raise DataError(f"--ef-search applies to an HNSW index; {self.path or 'this index'} is {self.kind}")
            self.index.hnsw.efSearch = max(ef_search, k)

    def search(
        self, queries: np.ndarray, k: int = 10, exclude: list[str | None] | None = None
    ) -> list[list[Neighbour]]:
        """The ``k`` most similar papers to each query row (cosine), leaving out ``exclude[i]`` for row i."""
        if k < 1:
            raise DataError(f"k must be positive, got {k}")
        queries = np.atleast_2d(queries)
        if queries.shape[1] != self.dim:
            raise DataError(f"query vectors have {queries.shape[1]} dimensions, the index has {self.dim}", self.path)
        if not len(self):
            return [[] for _ in range(len(queries))]
        extra = 1 if exclude else 0
        scores, rows = self.index.search(normalise(queries), min(k + extra, len(self)))
        results = []
        for i in range(len(queries)):
            skip = exclude[i] if exclude else None
            hits = [(int(r), float(s)) for r, s in zip(rows[i], scores[i], strict=True) if r >= 0]
            hits = [(r, s) for r, s in hits if self.ids[r] != skip][:k]
            results.append([Neighbour(rank + 1, self.ids[r], self.titles[r], s) for rank, (r, s) in enumerate(hits)])
        return results

    # ------------------------------------------------------------ growth
    def add(
        self,
        ids: list[str],
        vectors: np.ndarray,
        titles: list[str] | None = None,
        update: bool = False,
        source: str | None = None,
    ) -> dict[str, int]:
        """Add papers (rows of ``vectors``) without a rebuild; counts of ``added`` and ``updated`` papers. A paper
        already indexed is a DataError unless ``update``, which replaces it. IVF kinds keep their trained lists:
        :meth:`retrain_due` says when the growth calls for a rebuild."""
        if len(ids) != len(vectors):
            raise DataError(f"{len(ids)} ids but {len(vectors)} vectors", source)
        if len(vectors) and np.asarray(vectors).shape[1] != self.dim:
            raise DataError(
                f"embeddings have {np.asarray(vectors).shape[1]} dimensions, the index has {self.dim}", source
            )
        seen: set[str] = set()
        for pid in ids:
            if pid in seen:
                raise DataError("paper id appears twice among the papers to add", source, record_id=pid)
            seen.add(pid)
        present = [pid for pid in ids if pid in self._row]
        if present and not update:
            already = f"{len(present)} of the papers to add are already indexed (use --update to replace them)"
            raise DataError(already, source, record_id=present[0])
        if present:
            self.remove(present)
        titles = list(titles) if titles is not None else [""] * len(ids)
        for start in range(0, len(ids), CHUNK):
            self.index.add(normalise(np.asarray(vectors[start : start + CHUNK])))
        if self.kind == "ivf-pq":
            self.index.ntotal = load_faiss().downcast_index(self.index.base_index).ntotal
        self.ids.extend(ids)
        self.titles.extend(titles)
        self._rows = None
        if self.kind in ("ivf", "ivf-pq"):
            ivf = self.info["ivf"]
            ivf["added_since_training"] = int(ivf.get("added_since_training", 0)) + len(ids)
        self._check_consistent()
        return {"added": len(ids) - len(present), "updated": len(present)}

    def remove(self, paper_ids: list[str], source: str | None = None) -> int:
        """Remove papers by id (an unknown id is a DataError); rows after them move up. Returns the count."""
        faiss = load_faiss()
        missing = [pid for pid in paper_ids if pid not in self._row]
        if missing:
            raise DataError(
                f"{len(missing)} of the papers to remove are not indexed", source or self.path, record_id=missing[0]
            )
        rows = np.unique(np.array([self._row[pid] for pid in paper_ids], dtype=np.int64))
        if not len(rows):
            return 0
        if self.kind == "hnsw":  # FAISS cannot delete from a graph: rebuild it from the stored vectors
            old, self.index = self.index, _new_index("hnsw", self.dim, len(self) - len(rows))
            for start in range(0, len(self), CHUNK):
                block = old.reconstruct_n(start, min(CHUNK, len(self) - start))
                self.index.add(block[~np.isin(np.arange(start, start + len(block)), rows)])
        elif self.kind == "flat":
            self.index.remove_ids(faiss.IDSelectorBatch(rows))
        else:
            base = faiss.downcast_index(self.index.base_index) if self.kind == "ivf-pq" else self.index
            has_map = base.direct_map.type != faiss.DirectMap.NoMap
            if has_map:
                base.set_direct_map_type(faiss.DirectMap.NoMap)
            base.remove_ids(faiss.IDSelectorBatch(rows))
            _renumber_lists(base, rows)
            if has_map:
                base.make_direct_map()
            if self.kind == "ivf-pq":
                faiss.downcast_index(self.index.refine_index).remove_ids(faiss.IDSelectorBatch(rows))
                self.index.ntotal = base.ntotal
        drop = set(rows.tolist())
        self.ids = [pid for i, pid in enumerate(self.ids) if i not in drop]
        self.titles = [t for i, t in enumerate(self.titles) if i not in drop]
        self._rows = None
        self._check_consistent()
        return len(rows)

    def retrain_due(self) -> bool:
        """An IVF index grown by ``RETRAIN_GROWTH`` x its training size since it was trained (recall drifts)."""
        ivf = self.info.get("ivf") if self.kind in ("ivf", "ivf-pq") else None
        if not ivf or not ivf.get("trained_count"):
            return False
        return int(ivf.get("added_since_training", 0)) >= RETRAIN_GROWTH * int(ivf["trained_count"])

    def _check_consistent(self) -> None:
        if self.index.ntotal != len(self.ids) or len(self.titles) != len(self.ids):
            raise RuntimeError(
                f"index holds {self.index.ntotal} vectors, {len(self.ids)} ids, {len(self.titles)} titles"
            )

    # ------------------------------------------------------------ file
    def save(self, path: str | Path) -> None:
        """Write the index as one ``.npz`` (zip) file, atomically; the FAISS index is streamed, not copied."""
        if self.kind in ("ivf", "ivf-pq"):
            self.info["ivf"]["nprobe"] = int(load_faiss().extract_index_ivf(self.index).nprobe)
        write_index_file(path, self.index, self.ids, self.titles, self.info)


def _renumber_lists(ivf: Any, removed: np.ndarray) -> None:
    """After ``remove_ids(removed)``, shift the row numbers an IVF index stores so they stay dense."""
    faiss = load_faiss()
    lists = ivf.invlists
    for number in range(ivf.nlist):
        size = lists.list_size(number)
        if size:
            labels = faiss.rev_swig_ptr(lists.get_ids(number), size)  # a view: edited in place
            labels -= np.searchsorted(removed, labels).astype(np.int64)


def _pq_subquantisers(dim: int) -> int:
    """4-bit product quantiser: one sub-quantiser per 8 dimensions (48 for 384), an even divisor of ``dim``."""
    m = max(2, dim // 8)
    while m > 2 and (dim % m or m % 2):
        m -= 1
    return m if dim % m == 0 else 1


def _new_index(kind: str, dim: int, n: int) -> Any:
    """An empty FAISS index of ``kind`` (``auto`` already resolved) sized for ``n`` vectors."""
    faiss = load_faiss()
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
        return index
    if kind == "ivf":
        nlist = ivf_lists(n)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.nprobe = min(IVF_NPROBE, nlist)
        index.cp.min_points_per_centroid = 1  # the sample is sized here; no FAISS warning for tiny tests
        return index
    nlist = pq_lists(n)
    index = faiss.index_factory(
        dim, f"IVF{nlist},PQ{_pq_subquantisers(dim)}x4fs,Refine(SQ8)", faiss.METRIC_INNER_PRODUCT
    )
    index.k_factor = PQ_RERANK  # index_factory returns the concrete class (downcasting would drop ownership)
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = min(PQ_NPROBE, nlist)
    ivf.cp.min_points_per_centroid = 1
    ivf.cp.niter = 10
    # 16 centroids a sub-quantiser; the sample is sized here
    faiss.downcast_index(index.base_index).pq.cp.min_points_per_centroid = 1
    return index


def train_size(kind: str, n: int) -> int:
    """How many vectors ``kind`` trains on for ``n`` (0: no training)."""
    if kind == "ivf":
        return min(n, ivf_lists(n) * IVF_TRAIN_PER_LIST)
    if kind == "ivf-pq":
        return min(n, max(pq_lists(n) * PQ_TRAIN_PER_LIST, 4096))
    return 0


def build_index_chunks(
    ids: list[str],
    chunks: Iterable[np.ndarray],
    train: np.ndarray | None,
    kind: str = "auto",
    titles: list[str] | None = None,
    info: dict[str, Any] | None = None,
    threads: int | None = None,
) -> PaperIndex:
    """Index vectors given in chunks (row order = ``ids``), so memory holds one chunk beside the index; ``train``
    is a random sample of at least :func:`train_size` rows (IVF kinds; ignored by the others)."""
    faiss = load_faiss()
    n, dim = len(ids), (train.shape[1] if train is not None and train.ndim == 2 else None)
    chosen = choose_kind(kind, n)
    set_threads(threads)
    start = time.perf_counter()
    index, count = None, 0
    for chunk in chunks:
        chunk = normalise(chunk)
        if index is None:
            dim = chunk.shape[1]
            index = _new_index(chosen, dim, n)
            if chosen in ("ivf", "ivf-pq"):
                if train is None or len(train) < faiss.extract_index_ivf(index).nlist:
                    raise ValueError(f"an {chosen} index needs a training sample of about {train_size(chosen, n)} rows")
                index.train(normalise(train))
        index.add(chunk)
        count += len(chunk)
    if index is None or count != n:
        raise DataError(f"{count} vectors for {n} ids" if index is not None else "no embeddings to index")
    if chosen == "ivf":
        index.make_direct_map()  # so that a paper's own vector can be read back (search --paper-id)
    seconds = time.perf_counter() - start
    details: dict[str, Any] = {}
    if chosen == "hnsw":
        details["hnsw"] = {"M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION, "ef_search": HNSW_EF_SEARCH}
    elif chosen in ("ivf", "ivf-pq"):
        ivf = faiss.extract_index_ivf(index)
        details["ivf"] = {"nlist": ivf.nlist, "nprobe": ivf.nprobe, "trained_count": n, "added_since_training": 0}
        if chosen == "ivf-pq":
            details["ivf"].update(
                pq_subquantisers=_pq_subquantisers(dim), pq_bits=4, rerank=PQ_RERANK, rerank_codes="SQ8"
            )
    meta = dict(info or {})
    meta.update(metric="cosine", kind=chosen, **details, build_seconds=round(seconds, 3), faiss=faiss.__version__)
    return PaperIndex(index, list(ids), list(titles) if titles is not None else [""] * n, meta)


def iter_chunks(vectors: np.ndarray, size: int = CHUNK) -> Iterator[np.ndarray]:
    """Row blocks of ``vectors`` (a memory map stays on disk but for one block)."""
    for start in range(0, len(vectors), size):
        yield np.asarray(vectors[start : start + size], dtype=np.float32)


def sample_rows(vectors: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """``count`` rows drawn at random (sorted, so a memory map is read in order)."""
    rows = np.sort(np.random.default_rng(seed).permutation(len(vectors))[:count])
    return np.asarray(vectors[rows], dtype=np.float32)


def build_index(
    embeddings: EmbeddingSet,
    kind: str = "auto",
    titles: dict[str, str] | None = None,
    source: str | None = None,
    threads: int | None = None,
) -> PaperIndex:
    """Index ``embeddings`` (normalised) with an exact, IVF, IVF-PQ or HNSW FAISS index (``kind``, ``auto``:
    :func:`choose_kind`); ``titles`` (paper id -> title) serve embeddings read from ``.npy``, which has none."""
    chosen = choose_kind(kind, len(embeddings))
    if not len(embeddings) or embeddings.dim == 0:
        raise DataError("no embeddings to index")
    own_titles = embeddings.titles or [""] * len(embeddings)
    paper_titles = [own or (titles or {}).get(pid, "") for pid, own in zip(embeddings.ids, own_titles, strict=True)]
    info = {key: embeddings.info.get(key) for key in EmbedConfig.file_keys("text", "dtype", "device")}
    info.update(text=embeddings.info.get("text"), embeddings=source)
    size = train_size(chosen, len(embeddings))
    train = sample_rows(embeddings.vectors, size) if size else None
    return build_index_chunks(
        list(embeddings.ids), iter_chunks(embeddings.vectors), train, chosen, paper_titles, info, threads
    )


def load_index(path: str | Path) -> PaperIndex:
    """Read an index written by ``PaperIndex.save``; a missing or foreign file is a DataError."""
    faiss = load_faiss()
    index, ids, titles, info = read_index_file(path)
    if "ef_search" in info.get("hnsw", {}):
        index.hnsw.efSearch = int(info["hnsw"]["ef_search"])
    if info.get("kind") in ("ivf", "ivf-pq"):
        ivf = faiss.extract_index_ivf(index)
        ivf.nprobe = int(info.get("ivf", {}).get("nprobe", ivf.nprobe))
        if info["kind"] == "ivf" and ivf.direct_map.type == faiss.DirectMap.NoMap:
            ivf.make_direct_map()
        if info["kind"] == "ivf-pq":
            index.k_factor = int(info.get("ivf", {}).get("rerank", PQ_RERANK))
    return PaperIndex(index, ids, titles, info, str(path))


def index_bytes(index: PaperIndex) -> int:
    """Serialised size of the FAISS index (a proxy for its memory)."""
    return int(load_faiss().serialize_index(index.index).nbytes)
