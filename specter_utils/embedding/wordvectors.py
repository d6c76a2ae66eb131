"""Word vectors trained on a corpus itself: PPMI of windowed co-occurrences, reduced by SVD.

Levy, Goldberg & Dagan (2015) show this count-based recipe (context-distribution smoothing 0.75,
eigenvalue weighting 0.5) is on a par with word2vec; it needs only numpy/scipy/scikit-learn. The SIF
and SGC baselines use these vectors where the paper used fastText trained on scientific text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.utils.extmath import randomized_svd

from specter_utils.errors import DataError

TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # scikit-learn's default: words of two or more characters


def make_analyzer() -> Callable[[str], list[str]]:
    """Lower-cased word tokens in text order (the same tokenisation as the TF-IDF baselines)."""
    return CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN).build_analyzer()


@dataclass
class WordVectors:
    """``vectors[vocab[w]]`` is the vector of word ``w``; ``counts`` are corpus frequencies."""

    vocab: dict[str, int]
    vectors: np.ndarray
    counts: np.ndarray
    total_tokens: int

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def probabilities(self) -> np.ndarray:
        """Unigram probability ``p(w)`` of each vocabulary word in the training corpus."""
        return self.counts / max(1, self.total_tokens)


def _vocabulary(docs: list[list[str]], min_count: int, max_vocab: int) -> tuple[dict[str, int], np.ndarray]:
    """Words seen at least ``min_count`` times, most frequent first (ties alphabetical: deterministic)."""
    counter = Counter(token for doc in docs for token in doc)
    kept = sorted((w for w, c in counter.items() if c >= min_count), key=lambda w: (-counter[w], w))[:max_vocab]
    vocab = {w: i for i, w in enumerate(kept)}
    return vocab, np.array([counter[w] for w in kept], dtype=np.float64)


def cooccurrence(doc_ids: list[np.ndarray], vocab_size: int, window: int) -> sp.csr_matrix:
    """Symmetric co-occurrence counts within ``window`` tokens of one document, weighted 1/distance."""
    if not doc_ids:
        return sp.csr_matrix((vocab_size, vocab_size))
    tokens = np.concatenate(doc_ids)
    owner = np.concatenate([np.full(len(ids), n, dtype=np.int64) for n, ids in enumerate(doc_ids)])
    total = sp.csr_matrix((vocab_size, vocab_size), dtype=np.float64)
    for distance in range(1, window + 1):
        if distance >= len(tokens):
            break
        same_doc = owner[:-distance] == owner[distance:]
        left, right = tokens[:-distance][same_doc], tokens[distance:][same_doc]
        weights = np.full(len(left), 1.0 / distance)
        total = total + sp.coo_matrix((weights, (left, right)), shape=(vocab_size, vocab_size)).tocsr()
    return (total + total.T).tocsr()


def ppmi(counts: sp.csr_matrix, alpha: float = 0.75) -> sp.csr_matrix:
    """Positive PMI with the context distribution raised to ``alpha`` (smoothing rare contexts)."""
    counts = counts.tocoo()
    row_sums = np.asarray(counts.sum(axis=1)).ravel()
    col_sums = np.asarray(counts.sum(axis=0)).ravel() ** alpha
    context_p = col_sums / max(col_sums.sum(), 1e-300)
    with np.errstate(divide="ignore"):
        pmi = np.log(counts.data) - np.log(row_sums[counts.row]) - np.log(context_p[counts.col])
    keep = pmi > 0
    return sp.csr_matrix((pmi[keep], (counts.row[keep], counts.col[keep])), shape=counts.shape)


def train_word_vectors(
    texts: list[str],
    dim: int = 300,
    window: int = 5,
    min_count: int = 2,
    max_vocab: int = 50_000,
    alpha: float = 0.75,
    seed: int = 0,
) -> WordVectors:
    """PPMI + SVD word vectors (``U * sqrt(S)``) from ``texts``; deterministic for a seed."""
    analyzer = make_analyzer()
    docs = [analyzer(text) for text in texts]
    vocab, counts = _vocabulary(docs, min_count, max_vocab)
    if len(vocab) < 2:
        raise DataError(f"too few words seen {min_count}+ times to train word vectors ({len(vocab)})")
    doc_ids = [np.array([vocab[t] for t in doc if t in vocab], dtype=np.int64) for doc in docs]
    matrix = ppmi(cooccurrence(doc_ids, len(vocab), window), alpha)
    rank = max(1, min(dim, len(vocab) - 1))
    u, s, _ = randomized_svd(matrix, n_components=rank, n_iter=5, random_state=seed)
    vectors = (u * np.sqrt(s)).astype(np.float32)
    return WordVectors(vocab=vocab, vectors=vectors, counts=counts, total_tokens=sum(len(doc) for doc in docs))
