"""``triplet``: SPECTER's margin loss, Euclidean distance (with ``embedding_dropout``, the released code's)."""

from __future__ import annotations

from typing import Any

from sentence_transformers.sentence_transformer import losses

from specter_utils.training.released import DropoutTripletLoss


def build(model: Any, config: Any, **_: Any) -> Any:
    """``TripletLoss`` with the run's margin; ``DropoutTripletLoss`` when ``embedding_dropout`` > 0."""
    euclidean = losses.TripletDistanceMetric.EUCLIDEAN
    if getattr(config, "embedding_dropout", 0.0) > 0:
        return DropoutTripletLoss(
            model, p=config.embedding_dropout, distance_metric=euclidean, triplet_margin=config.triplet_margin
        )
    return losses.TripletLoss(model, distance_metric=euclidean, triplet_margin=config.triplet_margin)
