"""The recommendation task: a small pairwise ranker over 11 features, propensity-adjusted nDCG and P@1.

Mirrors ``scidocs/recommender`` (``simclick_data_reader.py``, ``simpaper_recommender.py``) with the
released config ``train_similar_papers_model.json``: feed-forward 11 -> 50 (ReLU, dropout 0.4) -> 1
(sigmoid), margin ranking loss (margin 0.1) between the clicked paper and each non-clicked paper shown
with it, Adadelta (rho 0.95), gradient values clipped at 5, batch 128, 5 epochs, the epoch with the
lowest validation loss kept. Differences, each deliberate:

- ``max_negatives`` defaults to 5 (docs/protocol.md, "Recommendation"); the released config uses ``max_results_per_query: 10``.
- The original overwrites every position feature with 0 and, because its loss looks the propensity up
  at ``round(position * 10 - 1)``, weights every training pair by ``1 / propensity[-1]`` (a constant).
  ``weighting="clicked"`` (default) weights by the propensity of the clicked position as intended;
  ``weighting="original"`` reproduces the constant. The position feature is 0 either way.
- Results vary with the seed (the original trains once): we train ``seeds`` models and report the
  mean, with the standard deviation, min and max beside it.
- Title tokens: ``\\w+`` words and single punctuation marks, case kept (the original uses spaCy's
  tokenizer, which splits a few more cases such as hyphens inside words).
- Blank titles: a missing or blank title becomes the one token ``<blank>`` (``BLANK``), and when both
  titles of a pair are blank the title Jaccard is 0, not the 1 that the shared placeholder would give:
  two unknown titles are no evidence that the papers are alike (the test
  ``test_two_blank_titles_share_nothing`` holds it). Pairs with one blank title score 0 either way."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from specter_utils.data.scidocs import RecommClick
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError

logger = logging.getLogger(__name__)

FEATURES = (
    "author_jaccard",
    "position",  # always 0, as in the original
    "title_jaccard",
    "embedding_cosine",
    "cited_by_jaccard",
    "references_jaccard",
    "candidate_cites_query",
    "query_cites_candidate",
    "oldness",  # clip((2020 - year) / 20, -1, 1)
    "relative_oldness",  # clip((query year - candidate year) / 20, -1, 1)
    "log_citations",  # log(1 + |cited_by|) / 10
)
DEFAULT_SEEDS = (7, 8, 9, 10, 11)  # the original's config uses seed 7
BLANK = "<blank>"
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class RecommConfig:
    """Hyper-parameters of the ranker (fixed: the released config's values unless noted)."""

    hidden: int = 50
    dropout: float = 0.4
    margin: float = 0.1
    epochs: int = 5
    batch_size: int = 128
    rho: float = 0.95  # Adadelta
    grad_value_clip: float = 5.0
    max_negatives: int = 5  # docs/protocol.md; the released config has 10
    weighting: str = "clicked"  # or "original" (a constant 1 / propensity[-1], the original's effective weight)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RecommResult:
    """Mean over seeds of adj-NDCG and adj-P@1 (x 100, 2 decimals), the spread, and coverage."""

    metrics: dict[str, float]
    spread: dict[str, dict[str, Any]]
    coverage: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- features
def _jaccard(a: set, b: set) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _year(record: dict[str, Any] | None) -> float | None:
    if not record or record.get("year") in (None, ""):
        return None
    try:
        return float(record["year"])
    except (TypeError, ValueError):
        return None


class Featurizer:
    """The 11 features of a (query, candidate) pair from the recomm metadata and the embeddings."""

    def __init__(self, metadata: dict[str, dict[str, Any]], embeddings: EmbeddingSet) -> None:
        self.meta = metadata
        self.sets = {
            pid: {key: set(rec.get(key) or []) for key in ("authors", "cited_by", "references")}
            for pid, rec in metadata.items()
        }
        self.titles: dict[str, list[str]] = {}
        self.embeddings = embeddings
        self._index = {pid: i for i, pid in enumerate(embeddings.ids)}
        norms = np.linalg.norm(embeddings.vectors.astype(np.float64), axis=1)
        self._unit = embeddings.vectors.astype(np.float64) / np.maximum(norms, 1e-8)[:, None]

    def title_tokens(self, pid: str) -> list[str]:
        if pid not in self.titles:
            title = (self.meta.get(pid) or {}).get("title") or ""
            self.titles[pid] = _TOKEN.findall(title) or [BLANK]
        return self.titles[pid]

    def _overlap(self, query: str, candidate: str, key: str) -> float:
        if query not in self.sets or candidate not in self.sets:
            return 0.0
        return _jaccard(self.sets[query][key], self.sets[candidate][key])

    def _cites(self, cited: str, citing: str) -> float:
        """1 if ``citing`` cites ``cited`` according to either paper's record."""
        by_cited = cited in self.sets and citing in self.sets[cited]["cited_by"]
        by_citing = citing in self.sets and cited in self.sets[citing]["references"]
        return float(by_cited or by_citing)

    def _cosine(self, query: str, candidate: str) -> float:
        q, c = self._index.get(query), self._index.get(candidate)
        if q is None or c is None:
            return 0.0  # the original's zero vector gives cosine 0
        return float(self._unit[q] @ self._unit[c])

    def features(self, query: str, candidate: str) -> list[float]:
        q_tokens, c_tokens = self.title_tokens(query), self.title_tokens(candidate)
        both_blank = q_tokens == [BLANK] and c_tokens == [BLANK]
        c_year, q_year = _year(self.meta.get(candidate)), _year(self.meta.get(query))
        oldness = max(-1.0, min(1.0, (2020.0 - c_year) / 20.0)) if c_year is not None else 0.0
        relative = (
            max(-1.0, min(1.0, (q_year - c_year) / 20.0))
            if q_year is not None and c_year is not None and query in self.meta
            else 0.0
        )
        citations = math.log(len(self.sets[candidate]["cited_by"]) + 1) / 10.0 if candidate in self.sets else 0.0
        return [
            self._overlap(query, candidate, "authors"),
            0.0,
            0.0 if both_blank else _jaccard(set(q_tokens), set(c_tokens)),
            self._cosine(query, candidate),
            self._overlap(query, candidate, "cited_by"),
            self._overlap(query, candidate, "references"),
            self._cites(query, candidate),
            self._cites(candidate, query),
            oldness,
            relative,
            citations,
        ]


# ---------------------------------------------------------------- data
def normalised_propensities(scores: list[float]) -> np.ndarray:
    """Propensity scores scaled to mean 1 (as the original)."""
    arr = np.asarray(scores, dtype=np.float64)
    if len(arr) == 0 or not np.all(arr > 0):
        raise DataError("propensity scores must be a non-empty list of positive numbers")
    return arr * len(arr) / arr.sum()


def _check_position(click: RecommClick, index: int, propensity: np.ndarray, split: str) -> int:
    position = click.clicked_position
    if position > len(propensity):
        raise DataError(
            f"clicked position {position} has no propensity score (only {len(propensity)} given)",
            f"recomm/{split}.csv",
            index + 2,  # header line, then one click per line
            click.query_id,
        )
    return position


def training_pairs(
    clicks: list[RecommClick], featurizer: Featurizer, propensity: np.ndarray, config: RecommConfig, split: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature rows of (clicked, non-clicked) pairs and each pair's loss weight."""
    pos, neg, weight = [], [], []
    constant = 1.0 / propensity[-1]
    for index, click in enumerate(clicks):
        position = _check_position(click, index, propensity, split)
        clicked = featurizer.features(click.query_id, click.clicked_id)
        others = [pid for pid in click.shown_ids if pid != click.clicked_id][: config.max_negatives]
        for other in others:
            pos.append(clicked)
            neg.append(featurizer.features(click.query_id, other))
            weight.append(constant if config.weighting == "original" else 1.0 / propensity[position - 1])
    return (
        np.asarray(pos, dtype=np.float32).reshape(-1, len(FEATURES)),
        np.asarray(neg, dtype=np.float32).reshape(-1, len(FEATURES)),
        np.asarray(weight, dtype=np.float32),
    )


# ---------------------------------------------------------------- metric
def click_metrics(
    clicked_scores: np.ndarray, other_scores: list[np.ndarray], clicked_positions: np.ndarray, propensity: np.ndarray
) -> dict[str, float]:
    """Propensity-adjusted nDCG and P@1 (fractions, not x 100) over test clicks.

    ``r`` = shown non-clicked papers scored above the clicked one, ties counting 0.5;
    nDCG = 1 / log2(2 + r), P@1 = [r == 0]; each click weighted by 1 / propensity[clicked position]."""
    ndcg_sum = p1_sum = weight_sum = 0.0
    for score, others, position in zip(clicked_scores, other_scores, clicked_positions, strict=True):
        above = float(np.sum(others > score)) + 0.5 * float(np.sum(others == score))
        weight = 1.0 / propensity[int(position) - 1]
        ndcg_sum += weight / math.log2(2 + above)
        p1_sum += weight * (above == 0)
        weight_sum += weight
    return {"adj-NDCG": ndcg_sum / weight_sum, "adj-P@1": p1_sum / weight_sum}


# ---------------------------------------------------------------- model
def _train_one(
    train: tuple[np.ndarray, np.ndarray, np.ndarray],
    val: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    config: RecommConfig,
    seed: int,
) -> Any:
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(len(FEATURES), config.hidden),
        nn.ReLU(),
        nn.Dropout(config.dropout),
        nn.Linear(config.hidden, 1),
        nn.Sigmoid(),
    )
    optimizer = torch.optim.Adadelta(model.parameters(), rho=config.rho)
    loss_fn = nn.MarginRankingLoss(margin=config.margin, reduction="none")
    pos, neg, weight = (torch.from_numpy(a) for a in train)

    def batch_loss(p: Any, n: Any, w: Any) -> Any:
        sp, sn = model(p), model(n)
        return (loss_fn(sp, sn, torch.ones_like(sp)).squeeze(1) * w).mean()

    best_state, best_val = None, math.inf
    for _ in range(config.epochs):
        model.train()
        order = torch.randperm(len(pos), generator=generator)
        for start in range(0, len(order), config.batch_size):
            rows = order[start : start + config.batch_size]
            optimizer.zero_grad()
            batch_loss(pos[rows], neg[rows], weight[rows]).backward()
            nn.utils.clip_grad_value_(model.parameters(), config.grad_value_clip)
            optimizer.step()
        if val is not None and len(val[0]):
            model.eval()
            with torch.no_grad():
                val_loss = float(batch_loss(*(torch.from_numpy(a) for a in val)))
            if val_loss < best_val:
                best_val = val_loss
                best_state = {k: v.clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return model


def _score(model: Any, rows: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(rows, dtype=np.float32))).squeeze(1).numpy()


def recomm_coverage(clicks: dict[str, list[RecommClick]], featurizer: Featurizer) -> dict[str, Any]:
    """Per split: clicks, and how many queries / shown papers had an embedding and metadata."""
    out: dict[str, Any] = {}
    for split, rows in clicks.items():
        queries = {c.query_id for c in rows}
        shown = {pid for c in rows for pid in c.shown_ids}
        emb = featurizer._index
        out[split] = {
            "clicks": len(rows),
            "queries": len(queries),
            "queries_with_embedding": sum(q in emb for q in queries),
            "candidates": len(shown),
            "candidates_with_embedding": sum(p in emb for p in shown),
            "papers_with_metadata": sum(p in featurizer.meta for p in queries | shown),
            "papers": len(queries | shown),
            "example_missing": sorted(p for p in queries | shown if p not in emb)[:5],
        }
    return out


def evaluate_recomm(
    clicks: dict[str, list[RecommClick]],
    metadata: dict[str, dict[str, Any]],
    propensity_scores: list[float],
    embeddings: EmbeddingSet,
    split: str = "test",
    seeds: tuple[int, ...] = DEFAULT_SEEDS,
    config: RecommConfig | None = None,
) -> RecommResult:
    """Train the ranker on ``train`` (model selection on ``val`` when evaluating test) for each seed; score ``split``."""
    config = config or RecommConfig()
    if config.weighting not in ("clicked", "original"):
        raise ValueError(f"weighting must be 'clicked' or 'original', got {config.weighting!r}")
    if not seeds:
        raise ValueError("at least one seed is needed")
    for needed in ("train", split):
        if not clicks.get(needed):
            raise DataError(f"no clicks in recomm/{needed}.csv")
    propensity = normalised_propensities(propensity_scores)
    featurizer = Featurizer(metadata, embeddings)
    coverage = recomm_coverage(clicks, featurizer)
    for name, cov in coverage.items():
        no_query = cov["queries"] - cov["queries_with_embedding"]
        no_candidate = cov["candidates"] - cov["candidates_with_embedding"]
        if no_query or no_candidate:
            logger.warning(
                f"recomm/{name}: {no_query} of {cov['queries']} queries and {no_candidate} of {cov['candidates']} "
                f"shown papers have no embedding (cosine feature 0); e.g. {cov['example_missing'][:3]}"
            )
    train = training_pairs(clicks["train"], featurizer, propensity, config, "train")
    # the original validates on val.csv when testing, and on nothing when val is the evaluated split
    validate = split == "test" and clicks.get("val")
    val = training_pairs(clicks["val"], featurizer, propensity, config, "val") if validate else None

    test_clicks = clicks[split]
    clicked_rows, other_rows, positions = [], [], []
    for index, click in enumerate(test_clicks):
        positions.append(_check_position(click, index, propensity, split))
        clicked_rows.append(featurizer.features(click.query_id, click.clicked_id))
        other_rows.append([featurizer.features(click.query_id, o) for o in click.shown_ids if o != click.clicked_id])
    flat_others = np.asarray([row for rows in other_rows for row in rows], dtype=np.float32).reshape(-1, len(FEATURES))
    bounds = np.cumsum([0] + [len(rows) for rows in other_rows])

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: threads only add overhead and run-to-run noise
    try:
        per_seed: dict[str, list[float]] = {"adj-NDCG": [], "adj-P@1": []}
        for seed in seeds:
            model = _train_one(train, val, config, seed)
            clicked_scores = _score(model, np.asarray(clicked_rows, dtype=np.float32))
            other_scores = _score(model, flat_others) if len(flat_others) else np.zeros(0, dtype=np.float32)
            split_scores = [other_scores[bounds[i] : bounds[i + 1]] for i in range(len(test_clicks))]
            got = click_metrics(clicked_scores, split_scores, np.asarray(positions), propensity)
            for key, value in got.items():
                per_seed[key].append(100 * value)
    finally:
        torch.set_num_threads(threads)
    metrics = {key: float(np.round(np.mean(values), 2)) for key, values in per_seed.items()}
    spread = {
        key: {
            "mean": metrics[key],
            "std": float(np.round(np.std(values, ddof=1), 2)) if len(values) > 1 else 0.0,
            "min": float(np.round(min(values), 2)),
            "max": float(np.round(max(values), 2)),
            "values": [float(np.round(v, 2)) for v in values],
            "seeds": list(seeds),
        }
        for key, values in per_seed.items()
    }
    coverage["training_pairs"] = len(train[0])
    return RecommResult(metrics, spread, coverage, {**config.as_dict(), "seeds": list(seeds)})
