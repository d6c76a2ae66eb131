"""``mnrl-citation``: ``MultipleNegativesRankingLoss`` with the training graph's false negatives masked out.

An in-batch paper linked to the query in the *training* citation graph (it cites the query, the query cites it,
or it is a citation of a citation) is a false negative: its score is set to -inf before the softmax, so it is
neither pushed away nor counted. The query's own positive and own mined negative are never masked.

The mask is built once per batch (``citation_mask``) and read by the similarity function row block by row
block, in the order the loss scores its queries: the plain loss scores every query at once, the cached loss
(``training.cached_citation_mnrl``) one mini-batch of queries after another.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from sentence_transformers.util import all_gather, cos_sim, get_rank
from torch import Tensor

from specter_utils.data.specter_format import DIRECT_CITATION, read_graph
from specter_utils.errors import DataError


def citation_links(graph: Mapping[str, Mapping[str, int]]) -> dict[str, frozenset[str]]:
    """For each paper: the papers it cites, that cite it, or that it reaches through a count-1 path; ``graph`` is
    SPECTER's ``data.json`` (query -> candidate -> count 5 or 1) of the training dir,
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
    """``MultipleNegativesRankingLoss`` that masks in-batch papers cited by, citing or near the query; the dataset's
    ``label`` column (the loss's ``labels``) holds each row's index into ``row_papers``."""

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
        self._mask = None
        self.masked = 0  # in-batch scores masked so far (reported in the model card)
        self.scored = 0  # in-batch scores computed so far

    @property
    def _mask(self) -> Tensor | None:
        """The batch's mask (queries x candidates); setting it starts the row cursor at its first row."""
        return self._mask_rows

    @_mask.setter
    def _mask(self, mask: Tensor | None) -> None:
        self._mask_rows = mask
        self._next_row = 0

    def false_negative_mask(self, rows: Sequence[int], queries: Sequence[int] | None = None) -> Tensor:
        """``(len(queries), 2 * len(rows))`` booleans: True where a candidate column is a false negative. ``rows``:
        the dataset rows of the batch, in the loss's order; ``queries``: positions in ``rows`` of the queries scored
        here (default all). Columns follow the loss's candidate order: every row's positive, then every row's negative. A column is a
        false negative of a query when its paper is the query, the query's positive, or linked to the query.
        """
        n = len(rows)
        queries = range(n) if queries is None else queries
        triplets = [self.row_papers[row] for row in rows]
        columns: dict[str, list[int]] = {}
        for j, paper in enumerate([pos for _, pos, _ in triplets] + [neg for _, _, neg in triplets]):
            columns.setdefault(paper, []).append(j)
        mask = torch.zeros((len(queries), 2 * n), dtype=torch.bool)
        for i, position in enumerate(queries):
            query, positive, _ = triplets[position]
            linked = self.links.get(query, frozenset())
            if len(linked) < len(columns):  # look the query's links up in the batch, or the batch in its links
                papers = [p for p in (query, positive, *linked) if p in columns]
            else:
                papers = [p for p in columns if p in (query, positive) or p in linked]
            hits = [j for paper in papers for j in columns[paper]]
            if hits:
                mask[i, hits] = True
                mask[i, [position, n + position]] = False  # the row's own positive and own mined negative
        return mask

    def batch_rows(self, labels: Tensor) -> tuple[list[int], range]:
        """The batch's rows as the loss scores them, and the positions of this process's queries among them;
        gathering: every process's rows in rank order (the order ``all_gather`` stacks the embeddings in)
        and this process's slice at ``rank x local batch``, as in the library's loss.
        """
        n = len(labels)
        if self.gather_across_devices and dist.is_available() and dist.is_initialized():
            return all_gather(labels).tolist(), range(get_rank() * n, (get_rank() + 1) * n)
        return labels.tolist(), range(n)

    @contextmanager
    def citation_mask(self, labels: Tensor | None) -> Iterator[Tensor]:
        """Mask the batch of ``labels`` (dataset rows) while the loss is computed; every query row must be scored."""
        if labels is None:
            raise DataError("mnrl-citation needs the dataset's 'label' column of row indices", "training data")
        rows, queries = self.batch_rows(labels)
        self._mask = self.false_negative_mask([int(row) for row in rows], queries)
        self.masked += int(self._mask.sum())
        self.scored += len(queries) * (2 * len(rows) - 2)
        try:
            yield self._mask
            if self._next_row != len(self._mask):
                raise RuntimeError(
                    f"the loss scored {self._next_row} of the citation mask's {len(self._mask)} query rows"
                )
        finally:
            self._mask = None

    def masked_similarity(self, queries: Tensor, candidates: Tensor) -> Tensor:
        """Cosine scores of the next ``len(queries)`` query rows of the batch, their false negatives at -inf."""
        scores = cos_sim(queries, candidates)
        mask = self._mask
        if mask is None:
            return scores
        start = self._next_row
        block = mask[start : start + len(queries)]
        if scores.shape != block.shape:
            raise RuntimeError(
                f"citation mask rows {start}-{start + len(block)} of {tuple(mask.shape)} do not fit scores "
                f"{tuple(scores.shape)}"
            )
        self._next_row = start + len(queries)
        return scores.masked_fill(block.to(scores.device), float("-inf"))

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor) -> Tensor:
        with self.citation_mask(labels):
            return super().forward(sentence_features, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "similarity_fct": "cos_sim",
            "mask": "training-graph citations (count 5 and 1)",
            "gather_across_devices": self.gather_across_devices,
        }
