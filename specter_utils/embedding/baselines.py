"""The paper's baselines (Table 1, appendix A), each an EmbeddingSet that the same evaluator scores.

- ``random``: seeded zero-mean 25-dimensional Gaussian vectors (the paper's Random row); a paper's
  vector depends only on its id and the seed, not on the other papers.
- ``tfidf`` (raw TF-IDF over the 4,096 most frequent terms), ``tfidf-hash`` (hashed
  into 4,096 buckets, no vocabulary) and ``tfidf-svd`` (LSA: full-vocabulary TF-IDF
  reduced to 300 dimensions). Raw TF-IDF is dense in an EmbeddingSet, so its width is capped:
  50K papers x 4,096 terms is 0.8 GB of float32; the SVD variant is the one for large corpora.
- ``sif``: Arora et al. (2017): weighted average of word vectors with weights ``a / (a + p(w))``,
  minus the projection on the first principal component; word vectors are PPMI + SVD vectors
  trained on the corpus itself (the paper used fastText trained on scientific text).
- ``sgc``: SGC without learning (Wu et al. 2019): SIF features propagated ``k`` times through the
  normalised citation adjacency with self loops, ``D^-1/2 (A + I) D^-1/2``, after dropping every
  citation of the held-out query papers (the paper removes test queries' citations).
- ``model-cls`` / ``model-mean``: the off-the-shelf base model (the paper's SciBERT row) with
  ``[CLS]`` or mean pooling, through :func:`specter_utils.embedding.embed.embed_papers`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer, TfidfTransformer, TfidfVectorizer
from sklearn.preprocessing import normalize

from specter_utils.config import EmbedConfig  # noqa: F401 (embedding.baselines.BASELINES: the names)
from specter_utils.data.graph import CitationGraph
from specter_utils.data.records import Paper
from specter_utils.embedding.embed import as_paper_list, embed_papers
from specter_utils.embedding.io import EmbeddingSet, write_embeddings
from specter_utils.embedding.wordvectors import TOKEN_PATTERN, WordVectors, train_word_vectors
from specter_utils.errors import DataError
from specter_utils.vocabularies import BASELINES, DEFAULT_BASELINES  # noqa: F401 (embedding.baselines.BASELINES: the names)

SIF_A = 1e-4  # the paper searched a in [1e-5, 1e-3] and used 1e-4 for SGC's node features
MAX_DENSE_BYTES = 2 * 1024**3  # refuse a raw TF-IDF matrix larger than this (use tfidf-svd)


def _plain_text(paper: Paper) -> str:
    return f"{paper.title} {paper.abstract or ''}".strip()


def _result(papers: list[Paper], vectors: np.ndarray, info: dict[str, Any]) -> EmbeddingSet:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(vectors).all():  # a bug, not bad input: every baseline must stay finite
        raise FloatingPointError(f"baseline {info.get('baseline')} produced non-finite values")
    return EmbeddingSet([p.paper_id for p in papers], vectors, [p.title for p in papers], info)


# ---------------------------------------------------------------- random
def random_embeddings(papers: dict[str, Paper] | Iterable[Paper], dim: int = 25, seed: int = 0) -> EmbeddingSet:
    """Zero-mean Gaussian vectors, one generator per (seed, paper id)."""
    items = as_paper_list(papers)
    vectors = np.empty((len(items), dim), dtype=np.float32)
    for row, paper in enumerate(items):
        key = int.from_bytes(hashlib.sha256(paper.paper_id.encode()).digest()[:8], "little")
        vectors[row] = np.random.default_rng([seed, key]).standard_normal(dim)
    return _result(items, vectors, {"baseline": "random", "dim_requested": dim, "seed": seed})


# ---------------------------------------------------------------- TF-IDF
def tfidf_embeddings(
    papers: dict[str, Paper] | Iterable[Paper],
    variant: str = "svd",
    dim: int | None = None,
    fit_papers: dict[str, Paper] | Iterable[Paper] | None = None,
    seed: int = 0,
    max_dense_bytes: int = MAX_DENSE_BYTES,
) -> EmbeddingSet:
    """TF-IDF (sublinear tf, English stop words, rows L2-normalised) in one of three variants.

    Args:
        variant: ``svd`` (LSA, ``dim`` components, default 300, rows re-normalised), ``raw`` (the ``dim`` most
            frequent terms, default 4096) or ``hash`` (``dim`` hashed buckets, default 4096; no vocabulary to hold).
        fit_papers: papers the vocabulary, idf and SVD are fitted on (default: ``papers``).
    """
    items = as_paper_list(papers)
    fit_items = as_paper_list(fit_papers) if fit_papers is not None else items
    texts, fit_texts = [_plain_text(p) for p in items], [_plain_text(p) for p in fit_items]
    width = {"svd": 300, "raw": 4096, "hash": 4096}.get(variant)
    if width is None:
        raise ValueError(f"variant must be 'svd', 'raw' or 'hash', got {variant!r}")
    width = dim or width
    if variant != "svd" and len(items) * width * 4 > max_dense_bytes:
        raise ValueError(
            f"raw TF-IDF of {len(items):,} papers x {width:,} terms needs {len(items) * width * 4 / 2**30:.1f} GiB "
            f"as dense float32; use variant='svd' (tfidf-svd) or fewer features"
        )
    common = {"sublinear_tf": True, "stop_words": "english", "token_pattern": TOKEN_PATTERN, "dtype": np.float32}
    info: dict[str, Any] = {"baseline": f"tfidf-{variant}" if variant != "raw" else "tfidf", "seed": seed}
    try:
        if variant == "hash":
            hasher = HashingVectorizer(
                n_features=width, alternate_sign=False, norm=None, stop_words="english", token_pattern=TOKEN_PATTERN
            )
            idf = TfidfTransformer(sublinear_tf=True).fit(hasher.transform(fit_texts))
            matrix = idf.transform(hasher.transform(texts))
        else:
            min_df = 2 if len(fit_texts) >= 50 else 1  # terms of one paper ignored, except on tiny corpora
            vectorizer = TfidfVectorizer(min_df=min_df, max_features=width if variant == "raw" else None, **common)
            vectorizer.fit(fit_texts)
            matrix = vectorizer.transform(texts)
            info["vocabulary"] = len(vectorizer.vocabulary_)
    except ValueError as exc:  # e.g. "empty vocabulary; perhaps the documents only contain stop words"
        raise DataError(f"TF-IDF could not be built: {exc}") from None
    if variant == "svd":
        fit_matrix = matrix if fit_papers is None else vectorizer.transform(fit_texts)
        rank = max(1, min(width, fit_matrix.shape[1] - 1, fit_matrix.shape[0] - 1))
        svd = TruncatedSVD(n_components=rank, algorithm="randomized", n_iter=7, random_state=seed).fit(fit_matrix)
        dense = normalize(svd.transform(matrix))
        info["explained_variance"] = round(float(svd.explained_variance_ratio_.sum()), 4)
    else:
        dense = matrix.toarray()
    return _result(items, dense, info)


# ---------------------------------------------------------------- SIF
def sif_embeddings(
    papers: dict[str, Paper] | Iterable[Paper],
    a: float = SIF_A,
    word_vectors: WordVectors | None = None,
    fit_papers: dict[str, Paper] | Iterable[Paper] | None = None,
    dim: int = 300,
    seed: int = 0,
) -> EmbeddingSet:
    """SIF: ``mean_w a/(a+p(w)) v_w`` per paper, minus its projection on the first principal component.

    Word vectors and ``p(w)`` come from ``fit_papers`` (default: ``papers``), as does the principal
    component, so papers embedded later get the same transform. A paper with no known word gets zeros.
    """
    items = as_paper_list(papers)
    fit_items = as_paper_list(fit_papers) if fit_papers is not None else items
    if word_vectors is None:
        word_vectors = train_word_vectors([_plain_text(p) for p in fit_items], dim=dim, seed=seed)
    counter = CountVectorizer(vocabulary=word_vectors.vocab, token_pattern=TOKEN_PATTERN, lowercase=True)
    weights = a / (a + word_vectors.probabilities())

    def weighted_average(batch: list[Paper]) -> np.ndarray:
        counts = counter.transform([_plain_text(p) for p in batch]).astype(np.float64)
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        summed = (counts @ sp.diags(weights)) @ word_vectors.vectors.astype(np.float64)
        return summed / np.maximum(lengths, 1.0)[:, None]

    vectors = weighted_average(items)
    fit_vectors = vectors if fit_papers is None else weighted_average(fit_items)
    # First principal component (uncentred, as in Arora et al.'s code): top eigenvector of X^T X.
    _, eigvecs = np.linalg.eigh(fit_vectors.T @ fit_vectors)
    component = eigvecs[:, -1]
    vectors = vectors - np.outer(vectors @ component, component)
    info = {"baseline": "sif", "a": a, "word_vectors": "ppmi-svd", "vocabulary": len(word_vectors.vocab), "seed": seed}
    return _result(items, vectors, info)


# ---------------------------------------------------------------- SGC
def normalized_adjacency(ids: list[str], graph: CitationGraph) -> sp.csr_matrix:
    """``D^-1/2 (A + I) D^-1/2`` over ``ids``, citations taken as undirected edges."""
    index = {paper_id: i for i, paper_id in enumerate(ids)}
    pairs = [(index[a], index[b]) for a, b in graph.edges() if a in index and b in index]
    rows, cols = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
    n = len(ids)
    adjacency = sp.coo_matrix((np.ones(len(pairs)), (rows, cols)), shape=(n, n)).tocsr()
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.float64) + sp.identity(n, format="csr")
    inv_sqrt = 1.0 / np.sqrt(np.asarray(adjacency.sum(axis=1)).ravel())
    return (sp.diags(inv_sqrt) @ adjacency @ sp.diags(inv_sqrt)).tocsr()


def sgc_embeddings(
    papers: dict[str, Paper] | Iterable[Paper],
    graph: CitationGraph,
    held_out: Iterable[str] = (),
    k: int = 2,
    features: EmbeddingSet | None = None,
    a: float = SIF_A,
    seed: int = 0,
) -> EmbeddingSet:
    """SIF features propagated ``k`` hops over the citation graph minus every edge of ``held_out`` papers.

    The paper chose ``k`` in 1..8 on validation data; SGC's own default is 2.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    items = as_paper_list(papers)
    ids = [p.paper_id for p in items]
    held = set(held_out)
    kept = graph.without_edges_of(held)
    if features is None:
        features = sif_embeddings(items, a=a, seed=seed)
    x, found = features.lookup(ids)
    if not found.all():
        missing = ids[int(np.argmin(found))]
        raise DataError(f"{int((~found).sum())} papers have no feature vector", record_id=missing)
    x = x.astype(np.float64)
    propagate = normalized_adjacency(ids, kept)
    for _ in range(k):
        x = propagate @ x
    members = set(ids)
    info = {
        "baseline": "sgc",
        "k": k,
        "features": features.info.get("baseline", "given"),
        "a": features.info.get("a", a),
        "held_out": len(held),
        "edges_used": sum(1 for s, t in kept.edges() if s in members and t in members),
        "edges_dropped": graph.num_edges - kept.num_edges,
        "seed": seed,
    }
    return _result(items, x, info)


# ---------------------------------------------------------------- the one dispatcher
def fit_corpus(
    papers: dict[str, Paper] | Iterable[Paper], extra: dict[str, Paper] | None = None
) -> dict[str, Paper] | None:
    """The papers TF-IDF and SIF are fitted on: ``extra`` (e.g. the training papers) plus the papers embedded.

    ``None`` without ``extra``: each baseline then fits on the papers it embeds. The pipeline passes the
    run's training ``metadata.json``, the command line its ``--fit-metadata``: the same files give the same vectors.
    """
    return {**extra, **{p.paper_id: p for p in as_paper_list(papers)}} if extra else None


def check_baselines(which: Iterable[str], graph: CitationGraph | None = None) -> list[str]:
    """``which`` as a list; an unknown name, or ``sgc`` without a citation graph, is a ValueError."""
    which = list(which)
    unknown = [name for name in which if name not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baseline(s) {', '.join(unknown)}; known: {', '.join(BASELINES)}")
    if "sgc" in which and graph is None:
        raise ValueError("the sgc baseline needs the citation graph (graph=...)")
    return which


@dataclass(frozen=True)
class BaselineData:
    """What a baseline may use besides the papers it embeds: the citation graph (``sgc``) less the citations of the
    ``held_out`` evaluation queries, the papers TF-IDF and SIF are fitted on (None: the papers embedded), the seed."""

    graph: CitationGraph | None = None
    held_out: Iterable[str] = ()
    fit_papers: dict[str, Paper] | Iterable[Paper] | None = None
    seed: int = 0


def baseline_embeddings(
    name: str,
    papers: dict[str, Paper] | Iterable[Paper],
    data: BaselineData = BaselineData(),
    spec: EmbedConfig | None = None,
    sif: EmbeddingSet | None = None,
    progress: bool = False,
) -> EmbeddingSet:
    """One baseline by name: the only place a baseline name is turned into vectors (CLI, pipeline, ablations).

    ``model-cls`` / ``model-mean`` embed with ``spec``'s model, length and batch size (None: the defaults).
    ``sif`` may pass SIF vectors already computed with the same ``data.fit_papers`` (``sgc`` propagates them).
    """
    check_baselines([name], data.graph)
    items = as_paper_list(papers)
    seed = data.seed
    if name == "random":
        return random_embeddings(items, seed=seed)
    if name.startswith("tfidf"):
        variant = {"tfidf": "raw", "tfidf-hash": "hash", "tfidf-svd": "svd"}[name]
        return tfidf_embeddings(items, variant=variant, fit_papers=data.fit_papers, seed=seed)
    if name in {"sif", "sgc"}:
        if sif is None:
            sif = sif_embeddings(items, fit_papers=data.fit_papers, seed=seed)
        if name == "sif":
            return sif
        return sgc_embeddings(items, data.graph, sorted(set(data.held_out)), features=sif, seed=seed)
    pooling = name.removeprefix("model-")  # the off-the-shelf model (the paper's SciBERT row)
    result = embed_papers((spec or EmbedConfig()).but(pooling=pooling), items, progress=progress)
    result.info["baseline"] = f"model-{pooling}"
    return result


def compute_baselines(
    papers: dict[str, Paper] | Iterable[Paper],
    data: BaselineData = BaselineData(),
    which: Iterable[str] = DEFAULT_BASELINES,
    out_dir: str | Path = "baselines",
    spec: EmbedConfig | None = None,
    synthetic: bool | None = None,
) -> dict[str, Path]:
    """Write ``out_dir/<name>.jsonl`` (+ sidecars) for each baseline in ``which``; return their paths.

    ``sgc`` needs ``data.graph``; ``data.held_out`` are the evaluation query ids whose citations are dropped.
    """
    which = check_baselines(which, data.graph)
    items = as_paper_list(papers)
    out_dir = Path(out_dir)
    paths: dict[str, Path] = {}
    sif: EmbeddingSet | None = None
    for name in which:
        if name in {"sif", "sgc"} and sif is None:  # computed once: sgc propagates the sif vectors
            sif = sif_embeddings(items, fit_papers=data.fit_papers, seed=data.seed)
        result = baseline_embeddings(name, items, data, spec, sif)
        info = {**result.info, **({"synthetic": synthetic} if synthetic is not None else {})}
        paths[name] = out_dir / f"{name}.jsonl"
        write_embeddings(paths[name], EmbeddingSet(result.ids, result.vectors, result.titles, info))
    return paths
