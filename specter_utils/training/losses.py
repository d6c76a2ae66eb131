"""Training losses: SPECTER's triplet loss and in-batch-negative losses, all from sentence-transformers.

- ``triplet``: ``TripletLoss`` with Euclidean distance and SPECTER's margin of 1 (the paper).
- ``mnrl``: ``MultipleNegativesRankingLoss`` on (query, positive, mined negative): each query is scored
  against its positive, its own mined negative and every other positive and negative of the batch
  (softmax over cosine x scale). ``CachedMultipleNegativesRankingLoss`` when ``cached_mini_batch`` > 0.
- ``mnrl-citation``: ``mnrl`` where an in-batch paper linked to the query in the *training* citation
  graph (it cites the query, the query cites it, or it is a citation of a citation) is a false negative
  and is masked out of the softmax. The query's own positive and own mined negative are never masked.
- ``gist``: ``GISTEmbedLoss`` with the frozen base model as guide: an in-batch negative that the guide
  scores above the query's positive is dropped (the library's own false-negative filter).

Under ``torchrun`` each process embeds only its slice of the global batch. With
``gather_across_devices`` the in-batch losses use the library's option of that name: every process
all-gathers the embeddings (with their gradients) so that its queries are scored against the
candidates of *every* process, as one process with the global batch would score them. For
``mnrl-citation`` the row indices are gathered too and the mask is built over the gathered batch
with global row indices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from sentence_transformers.sentence_transformer import losses
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.util import all_gather, cos_sim, get_rank
from torch import Tensor

from specter_utils.data.specter_format import DIRECT_CITATION, read_graph
from specter_utils.errors import DataError
from specter_utils.training.released import DropoutTripletLoss


def citation_links(graph: Mapping[str, Mapping[str, int]]) -> dict[str, frozenset[str]]:
    """For each paper: the papers it cites, that cite it, or that it reaches through a count-1 path.

    ``graph`` is SPECTER's ``data.json`` (query -> candidate -> count 5 or 1) of the training dir,
    which holds no held-out query, so the mask never reads an evaluation answer.
    """
    links: dict[str, set[str]] = {}
    for query, candidates in graph.items():
        own = links.setdefault(query, set())
        for paper, count in candidates.items():
            own.add(paper)
            if count == DIRECT_CITATION:  # cited-by is the reverse of a direct citation
                links.setdefault(paper, set()).add(query)
    return {paper: frozenset(linked) for paper, linked in links.items()}


def read_citation_links(data_json: str | Path) -> dict[str, frozenset[str]]:
    """:func:`citation_links` of a SPECTER ``data.json``."""
    path = Path(data_json)
    if not path.exists():
        raise DataError("loss='mnrl-citation' needs the training citations (data.json); none found", path)
    return citation_links(read_graph(path))


class CitationMaskedMNRL(MultipleNegativesRankingLoss):
    """``MultipleNegativesRankingLoss`` that masks in-batch papers cited by, citing or near the query.

    The dataset carries a ``label`` column holding each row's index into ``row_papers`` (the collator
    passes it to the loss as ``labels``), so the loss knows which papers sit in the batch. With
    ``gather_across_devices`` those indices are gathered from every process along with the embeddings.
    """

    def __init__(
        self,
        model: Any,
        row_papers: Sequence[tuple[str, str, str]],
        links: Mapping[str, Iterable[str]],
        scale: float = 20.0,
        gather_across_devices: bool = False,
    ) -> None:
        super().__init__(
            model, scale=scale, similarity_fct=self.masked_similarity, gather_across_devices=gather_across_devices
        )
        self.row_papers = list(row_papers)
        self.links = links
        self._mask: Tensor | None = None
        self.masked = 0  # in-batch scores masked so far (reported in the model card)
        self.scored = 0  # in-batch scores computed so far

    def false_negative_mask(self, rows: Sequence[int], queries: Sequence[int] | None = None) -> Tensor:
        """``(len(queries), 2 * len(rows))`` booleans: True where a candidate column is a false negative.

        Args:
            rows: the dataset rows of the batch, in the loss's order (gathered: every process's rows, rank 0 first).
            queries: positions in ``rows`` of the queries scored here (gathered: this process's slice); default all.

        Columns follow the loss's candidate order: every row's positive, then every row's negative.
        """
        n = len(rows)
        queries = range(n) if queries is None else queries
        triplets = [self.row_papers[row] for row in rows]
        candidates = [pos for _, pos, _ in triplets] + [neg for _, _, neg in triplets]
        mask = torch.zeros((len(queries), 2 * n), dtype=torch.bool)
        for i, position in enumerate(queries):
            query, positive, _ = triplets[position]
            linked = self.links.get(query, frozenset())
            for j, paper in enumerate(candidates):
                if j in (position, n + position):  # the row's own positive and own mined negative
                    continue
                if paper == query or paper == positive or paper in linked:
                    mask[i, j] = True
        return mask

    def batch_rows(self, labels: Tensor) -> tuple[list[int], range]:
        """The batch's rows as the loss scores them, and the positions of this process's queries among them.

        Gathering: every process's rows in rank order (the order ``all_gather`` stacks the embeddings in)
        and this process's slice at ``rank x local batch``, as in the library's loss.
        """
        n = len(labels)
        if self.gather_across_devices and dist.is_available() and dist.is_initialized():
            return all_gather(labels).tolist(), range(get_rank() * n, (get_rank() + 1) * n)
        return labels.tolist(), range(n)

    def masked_similarity(self, queries: Tensor, candidates: Tensor) -> Tensor:
        scores = cos_sim(queries, candidates)
        if self._mask is not None:
            if scores.shape != self._mask.shape:
                raise RuntimeError(f"citation mask {tuple(self._mask.shape)} does not fit scores {tuple(scores.shape)}")
            scores = scores.masked_fill(self._mask.to(scores.device), float("-inf"))
        return scores

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        if labels is None:
            raise DataError("mnrl-citation needs the dataset's 'label' column of row indices", "training data")
        rows, queries = self.batch_rows(labels)
        self._mask = self.false_negative_mask([int(row) for row in rows], queries)
        self.masked += int(self._mask.sum())
        self.scored += len(queries) * (2 * len(rows) - 2)
        try:
            return super().forward(sentence_features, labels)
        finally:
            self._mask = None

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "similarity_fct": "cos_sim",
            "mask": "training-graph citations (count 5 and 1)",
            "gather_across_devices": self.gather_across_devices,
        }


def build_loss(
    config: Any,
    model: Any,
    row_papers: Sequence[tuple[str, str, str]],
    base_model: Any = None,
    gather_across_devices: bool = False,
):
    """The loss ``config.loss`` names, bound to ``model``.

    Args:
        row_papers: (query, positive, negative) ids of every dataset row (train rows, then val rows),
            indexed by the ``label`` column (``mnrl-citation`` only).
        base_model: the frozen guide model (``gist`` only).
        gather_across_devices: in-batch losses take their negatives from every process (set it only
            when training runs in several processes; the library warns when there is nothing to gather).
    """
    gather = {"gather_across_devices": gather_across_devices}

    if config.loss == "triplet" and getattr(config, "embedding_dropout", 0.0) > 0:
        return DropoutTripletLoss(
            model,
            p=config.embedding_dropout,
            distance_metric=losses.TripletDistanceMetric.EUCLIDEAN,
            triplet_margin=config.triplet_margin,
        )
    if config.loss == "triplet":
        return losses.TripletLoss(
            model, distance_metric=losses.TripletDistanceMetric.EUCLIDEAN, triplet_margin=config.triplet_margin
        )
    if config.loss == "mnrl":
        if config.cached_mini_batch:
            return losses.CachedMultipleNegativesRankingLoss(
                model, scale=config.mnrl_scale, mini_batch_size=config.cached_mini_batch, **gather
            )
        return losses.MultipleNegativesRankingLoss(model, scale=config.mnrl_scale, **gather)
    if config.loss == "mnrl-citation":
        if config.cached_mini_batch:
            raise DataError("cached_mini_batch is not available with loss='mnrl-citation'", "TrainConfig")
        links = read_citation_links(Path(config.metadata).with_name("data.json"))
        return CitationMaskedMNRL(model, row_papers, links, scale=config.mnrl_scale, **gather)
    if config.loss == "gist":
        if base_model is None:
            raise ValueError("loss='gist' needs the base model as guide")
        for parameter in base_model.parameters():
            parameter.requires_grad_(False)
        temperature = 1.0 / config.mnrl_scale
        if config.cached_mini_batch:
            return losses.CachedGISTEmbedLoss(
                model, base_model, temperature=temperature, mini_batch_size=config.cached_mini_batch, **gather
            )
        return losses.GISTEmbedLoss(model, base_model, temperature=temperature, **gather)
    raise DataError(f"unknown loss {config.loss!r}", "TrainConfig", record_id="loss")
