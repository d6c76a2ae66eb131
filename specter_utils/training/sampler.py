"""A batch sampler whose order depends only on (seed, epoch), optionally grouping similar lengths.

Each epoch's permutation comes from a generator seeded with ``seed`` and the epoch number, so a run
resumed mid-epoch (the trainer skips the batches already seen) trains on exactly the batches of an
uninterrupted one. sentence-transformers' default sampler gets the same property only through
accelerate swapping in its SeedableRandomSampler (transformers' default ``use_seedable_sampler=True``);
this one does not depend on that setting, and adds length grouping, which sentence-transformers'
samplers lack (transformers' ``group_by_length`` is ignored by its trainer).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from sentence_transformers.base.sampler import DefaultBatchSampler

MEGA_BATCH_MULTIPLIER = 50  # as transformers' LengthGroupedSampler: sort within 50 batches, not globally


class EpochSeededBatchSampler(DefaultBatchSampler):
    """Shuffled batches, reproducible per epoch; with ``group_by_length``, less padding per batch."""

    def __init__(
        self,
        dataset,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
        group_by_length: bool = False,
    ) -> None:
        super().__init__(dataset, batch_size, drop_last, valid_label_columns, generator, seed)
        self.num_rows = len(dataset)
        self.lengths: list[int] | None = None
        if group_by_length:
            # A triplet's three texts are padded together (one merged forward), so its cost is its longest text.
            columns = [dataset[name] for name in dataset.column_names]
            self.lengths = [max(len(text) for text in row) for row in zip(*columns, strict=True)]

    def order(self) -> list[int]:
        """Row indices for the current epoch."""
        generator = torch.Generator()
        generator.manual_seed((self.seed or 0) * 1_000_003 + self.epoch)
        order = torch.randperm(self.num_rows, generator=generator).tolist()
        if self.lengths is None:
            return order
        lengths = self.lengths
        mega = self.batch_size * MEGA_BATCH_MULTIPLIER
        chunks = [sorted(order[i : i + mega], key=lambda row: -lengths[row]) for i in range(0, len(order), mega)]
        return [row for chunk in chunks for row in chunk]

    def __iter__(self) -> Iterator[list[int]]:
        order = self.order()
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return self.num_rows // self.batch_size
        return (self.num_rows + self.batch_size - 1) // self.batch_size
