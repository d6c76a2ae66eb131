"""``gist``: ``GISTEmbedLoss`` with the frozen base model as guide (the library's false-negative filter)."""

from __future__ import annotations

from typing import Any

from sentence_transformers.sentence_transformer import losses


def build(model: Any, config: Any, *, base_model: Any, gather_across_devices: bool = False, **_: Any) -> Any:
    """The guide is frozen; temperature is ``1 / mnrl_scale`` (cached when ``cached_mini_batch`` > 0)."""
    for parameter in base_model.parameters():
        parameter.requires_grad_(False)
    gather = {"gather_across_devices": gather_across_devices}
    temperature = 1.0 / config.mnrl_scale
    if config.cached_mini_batch:
        return losses.CachedGISTEmbedLoss(
            model, base_model, temperature=temperature, mini_batch_size=config.cached_mini_batch, **gather
        )
    return losses.GISTEmbedLoss(model, base_model, temperature=temperature, **gather)
