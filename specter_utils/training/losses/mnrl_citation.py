"""``mnrl-citation``: ``mnrl`` with in-batch papers linked to the query in the training graph masked out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specter_utils.layout import DATA_FILE
from specter_utils.training.cached_citation_mnrl import CachedCitationMaskedMNRL
from specter_utils.training.citation_mnrl import CitationMaskedMNRL, read_citation_links


def build(
    model: Any,
    config: Any,
    *,
    row_papers: Sequence[tuple[str, str, str]],
    gather_across_devices: bool = False,
    **_: Any,
) -> Any:
    """The citation-masked loss over the training citations beside ``config.metadata`` (cached when asked)."""
    gather = {"gather_across_devices": gather_across_devices}
    links = read_citation_links(Path(config.metadata).with_name(DATA_FILE))
    if config.cached_mini_batch:
        return CachedCitationMaskedMNRL(
            model, row_papers, links, scale=config.mnrl_scale, mini_batch_size=config.cached_mini_batch, **gather
        )
    return CitationMaskedMNRL(model, row_papers, links, scale=config.mnrl_scale, **gather)
