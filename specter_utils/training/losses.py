"""Training losses: SPECTER's triplet loss and in-batch-negative losses, all from sentence-transformers.

- ``triplet``: ``TripletLoss`` with Euclidean distance and SPECTER's margin of 1 (the paper).
- ``mnrl``: ``MultipleNegativesRankingLoss`` on (query, positive, mined negative): each query is scored
  against its positive, its own mined negative and every other positive and negative of the batch
  (softmax over cosine x scale). ``CachedMultipleNegativesRankingLoss`` when ``cached_mini_batch`` > 0.
- ``mnrl-citation``: ``mnrl`` where an in-batch paper linked to the query in the *training* citation
  graph (it cites the query, the query cites it, or it is a citation of a citation) is a false negative
  and is masked out of the softmax. The query's own positive and own mined negative are never masked
  (``training.citation_mnrl``). With ``cached_mini_batch`` > 0 the same mask on the library's GradCache loss
  (``training.cached_citation_mnrl``): the same loss and gradients, the memory of one mini-batch.
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

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sentence_transformers.sentence_transformer import losses

from specter_utils.errors import DataError
from specter_utils.layout import DATA_FILE
from specter_utils.training.cached_citation_mnrl import CachedCitationMaskedMNRL
from specter_utils.training.citation_mnrl import CitationMaskedMNRL, citation_links, read_citation_links
from specter_utils.training.released import DropoutTripletLoss

# The citation-masked losses live in their own modules (one per loss); importers of this module find them here too.
__all__ = ["CachedCitationMaskedMNRL", "CitationMaskedMNRL", "build_loss", "citation_links", "read_citation_links"]


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
        links = read_citation_links(Path(config.metadata).with_name(DATA_FILE))
        if config.cached_mini_batch:
            return CachedCitationMaskedMNRL(
                model, row_papers, links, scale=config.mnrl_scale, mini_batch_size=config.cached_mini_batch, **gather
            )
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
