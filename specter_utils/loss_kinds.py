"""The training losses, declared: one :class:`LossSpec` per loss, what every list of losses is read from.

A declaration is plain data (what the loss is called, how a table and a figure name it, what it needs); its
implementation is a ``build(model, config, **inputs)`` function in ``specter_utils.training.losses.<module>``,
imported only when a run builds the loss. ``config.LOSSES`` (the setting's choices), ``config.IN_BATCH_LOSSES``,
``presentation.interpret`` and ``presentation.figures`` read this registry. A new loss is one module under
``training/losses/`` and one ``LossSpec`` line below (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specter_utils.registry import Registry, load


@dataclass(frozen=True)
class LossSpec:
    """One loss: its name (``TrainConfig.loss``), its labels and what it needs; ``build`` implements it."""

    name: str
    description: str  # notebook 03's sentence ("trained with ..."); {margin} and {scale} are the run's values
    axis: str  # the loss axis of the training curves; {margin} is the run's value
    build: str | Callable[..., Any]  # "module:function", or the function itself
    in_batch: bool = False  # scores each query against the other papers of its batch
    needs_citations: bool = False  # looks each row's paper ids up in the training citation graph
    needs_base: bool = False  # needs the frozen base model (as a guide)

    def builder(self) -> Callable[..., Any]:
        """The implementation (imported now)."""
        return load(self.build)


LOSS_REGISTRY: Registry[LossSpec] = Registry("loss")


def register_loss(spec: LossSpec) -> LossSpec:
    """Add a loss to :data:`LOSS_REGISTRY`."""
    return LOSS_REGISTRY.register(spec.name, spec)


_IMPL = "specter_utils.training.losses"
_MNRL = "multiple negatives ranking loss, scale {scale:g}): each query against its positive, its mined negative and "
_MNRL += "every other paper of the batch"
for _spec in (
    LossSpec(
        "triplet",
        description="the triplet margin loss (L2 distance, margin {margin:g}), as the paper",
        axis="triplet loss (margin {margin:g})",
        build=f"{_IMPL}.triplet:build",
    ),
    LossSpec(
        "mnrl",
        description=f"in-batch negatives ({_MNRL}",
        axis="in-batch softmax loss (MNRL)",
        build=f"{_IMPL}.mnrl:build",
        in_batch=True,
    ),
    LossSpec(
        "mnrl-citation",
        description=f"in-batch negatives with citation masking ({_MNRL}, except papers it cites or that cite it",
        axis="in-batch softmax loss (MNRL, citation-masked)",
        build=f"{_IMPL}.mnrl_citation:build",
        in_batch=True,
        needs_citations=True,
    ),
    LossSpec(
        "gist",
        description="GISTEmbed (in-batch negatives filtered by the base model as guide)",
        axis="in-batch softmax loss (GISTEmbed, guide-filtered)",
        build=f"{_IMPL}.gist:build",
        in_batch=True,
        needs_base=True,
    ),
):
    register_loss(_spec)
