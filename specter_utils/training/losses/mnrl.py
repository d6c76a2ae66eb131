"""``mnrl``: in-batch negatives plus the mined negative (cached when ``cached_mini_batch`` > 0)."""

from __future__ import annotations

from typing import Any

from sentence_transformers.sentence_transformer import losses


def build(model: Any, config: Any, *, gather_across_devices: bool = False, **_: Any) -> Any:
    """``MultipleNegativesRankingLoss``, or its GradCache form, at the run's scale."""
    gather = {"gather_across_devices": gather_across_devices}
    if config.cached_mini_batch:
        return losses.CachedMultipleNegativesRankingLoss(
            model, scale=config.mnrl_scale, mini_batch_size=config.cached_mini_batch, **gather
        )
    return losses.MultipleNegativesRankingLoss(model, scale=config.mnrl_scale, **gather)
