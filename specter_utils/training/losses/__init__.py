"""Training losses: SPECTER's triplet loss and in-batch-negative losses, all from sentence-transformers.

One module per loss, each a ``build(model, config, **inputs)`` function; what each loss is called and needs is
declared in ``specter_utils.loss_kinds`` (the registry every list of losses reads):

- ``triplet``: ``TripletLoss`` with Euclidean distance and SPECTER's margin of 1 (the paper).
- ``mnrl``: ``MultipleNegativesRankingLoss`` on (query, positive, mined negative): each query is scored
  against its positive, its own mined negative and every other positive and negative of the batch
  (softmax over cosine x scale). ``CachedMultipleNegativesRankingLoss`` when ``cached_mini_batch`` > 0.
- ``mnrl-citation``: ``mnrl`` with the training graph's false negatives masked out (``training.citation_mnrl``;
  with ``cached_mini_batch`` > 0 the same mask on the library's GradCache loss, ``training.cached_citation_mnrl``).
- ``gist``: ``GISTEmbedLoss`` with the frozen base model as guide: an in-batch negative that the guide
  scores above the query's positive is dropped (the library's own false-negative filter).

Under ``torchrun`` with ``gather_across_devices`` the in-batch losses use the library's option of that name: every
process all-gathers the embeddings (with their gradients) so that its queries are scored against the candidates of
every process (for ``mnrl-citation`` the row indices too, the mask built over the gathered batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specter_utils.loss_kinds import LOSS_REGISTRY
from specter_utils.training.cached_citation_mnrl import CachedCitationMaskedMNRL
from specter_utils.training.citation_mnrl import CitationMaskedMNRL, citation_links, read_citation_links

# The citation-masked losses live in their own modules; importers of this package find them here too.
__all__ = ["CachedCitationMaskedMNRL", "CitationMaskedMNRL", "build_loss", "citation_links", "read_citation_links"]


def build_loss(
    config: Any,
    model: Any,
    row_papers: Sequence[tuple[str, str, str]],
    base_model: Any = None,
    gather_across_devices: bool = False,
):
    """The loss ``config.loss`` names (``loss_kinds.LOSS_REGISTRY``), bound to ``model``: ``row_papers`` are the
    (query, positive, negative) ids of every dataset row (train, then val), indexed by the ``label`` column;
    ``base_model`` the frozen guide; ``gather_across_devices`` only when training runs in several processes."""
    spec = LOSS_REGISTRY.get(config.loss)
    if spec.needs_base and base_model is None:
        raise ValueError(f"loss={config.loss!r} needs the base model as guide")
    build = spec.builder()
    return build(
        model, config, row_papers=row_papers, base_model=base_model, gather_across_devices=gather_across_devices
    )
