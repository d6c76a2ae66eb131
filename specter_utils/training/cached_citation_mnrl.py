"""``mnrl-citation`` with ``cached_mini_batch`` > 0: the citation mask on sentence-transformers' GradCache loss.

``CachedMultipleNegativesRankingLoss`` embeds a large batch one mini-batch at a time without gradients, computes
the loss over the whole batch (its query rows in chunks of ``mini_batch_size``), caches the gradients of the
embeddings and replays each mini-batch's forward with them: the same loss and gradients as the plain loss, with
the memory of one mini-batch. It scores through a wrapped ``MultipleNegativesRankingLoss``; here that is
:class:`~specter_utils.training.citation_mnrl.CitationMaskedMNRL`, whose similarity function masks each chunk of
query rows with the matching rows of the batch's citation mask, so the masked entries are exactly the plain
loss's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss
from torch import Tensor

from specter_utils.training.citation_mnrl import CitationMaskedMNRL


class CachedCitationMaskedMNRL(CachedMultipleNegativesRankingLoss):
    """``CachedMultipleNegativesRankingLoss`` whose scores go through ``CitationMaskedMNRL``'s citation mask."""

    def __init__(
        self,
        model: Any,
        row_papers: Sequence[tuple[str, str, str]],
        links: Mapping[str, Iterable[str]],
        scale: float = 20.0,
        mini_batch_size: int = 32,
        gather_across_devices: bool = False,
    ) -> None:
        super().__init__(
            model, scale=scale, mini_batch_size=mini_batch_size, gather_across_devices=gather_across_devices
        )
        # The library's cached loss keeps its hyper-parameters and its similarity function on this wrapped loss.
        self.loss = CitationMaskedMNRL(
            model, row_papers, links, scale=scale, gather_across_devices=gather_across_devices
        )

    @property
    def masked(self) -> int:
        """In-batch scores masked so far (reported in the model card)."""
        return self.loss.masked

    @property
    def scored(self) -> int:
        """In-batch scores computed so far."""
        return self.loss.scored

    def false_negative_mask(self, rows: Sequence[int], queries: Sequence[int] | None = None) -> Tensor:
        """The wrapped loss's mask: :meth:`CitationMaskedMNRL.false_negative_mask`."""
        return self.loss.false_negative_mask(rows, queries)

    def calculate_loss(
        self, reps: list[list[Tensor]], labels: Tensor | None = None, *, with_backward: bool = False
    ) -> Tensor:
        """The library's chunked loss with the batch's citation mask in place (every query row scored once)."""
        with self.loss.citation_mask(labels):
            return super().calculate_loss(reps, labels, with_backward=with_backward)

    def get_config_dict(self) -> dict[str, Any]:
        return {**self.loss.get_config_dict(), "mini_batch_size": self.mini_batch_size}
