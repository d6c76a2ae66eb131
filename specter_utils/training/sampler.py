"""Batch samplers whose order depends only on (seed, epoch), optionally grouping similar lengths.

Each epoch's permutation comes from a generator seeded with ``seed`` and the epoch number, so a run
resumed mid-epoch (the trainer skips the batches already seen) trains on exactly the batches of an
uninterrupted one. sentence-transformers' default sampler gets the same property only through
accelerate swapping in its SeedableRandomSampler (transformers' default ``use_seedable_sampler=True``);
this one does not depend on that setting, and adds length grouping, which sentence-transformers'
samplers lack (transformers' ``group_by_length`` is ignored by its trainer).

Under ``torchrun`` the trainer's accelerate wraps a batch sampler so that batch ``i`` goes to process
``i mod world_size``. Both samplers here therefore yield *global* batches (``world_size x
batch_size`` rows, cut in the order of a one-process run with that batch) as ``world_size``
consecutive per-process batches: each process gets disjoint rows, together they are the global
batch, and two processes x batch B train on the same rows per step as one process x batch 2B.
With more than one process the last, incomplete global batch of an epoch is dropped, so every
process runs the same number of equal-sized steps (what the collectives and gathering need).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from sentence_transformers.base.sampler import DefaultBatchSampler, NoDuplicatesBatchSampler

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
        world_size: int = 1,
    ) -> None:
        # Several processes: drop the incomplete last batch, so every process gets the same number of full batches.
        super().__init__(dataset, batch_size, drop_last or world_size > 1, valid_label_columns, generator, seed)
        self.world_size = world_size
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
        mega = self.batch_size * self.world_size * MEGA_BATCH_MULTIPLIER  # global batches: as one process would
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
        return (self.num_rows + (0 if self.drop_last else self.batch_size - 1)) // self.batch_size


class ShardedNoDuplicatesBatchSampler(DefaultBatchSampler):
    """sentence-transformers' ``NoDuplicatesBatchSampler`` over global batches (``world_size x batch_size`` rows,
    each text at most once, incomplete ones dropped), handed out per process; ``batch_size`` is the per-process one."""

    def __init__(
        self,
        dataset,
        batch_size: int,
        drop_last: bool,
        valid_label_columns: list[str] | None = None,
        generator: torch.Generator | None = None,
        seed: int = 0,
        world_size: int = 2,
    ) -> None:
        super().__init__(dataset, batch_size, True, valid_label_columns, generator, seed)
        self.world_size = world_size
        self.global_batches = NoDuplicatesBatchSampler(
            dataset, batch_size * world_size, True, valid_label_columns, generator, seed
        )

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.global_batches.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches:
            for rank in range(self.world_size):
                yield batch[rank * self.batch_size : (rank + 1) * self.batch_size]

    def __len__(self) -> int:
        return len(self.global_batches) * self.world_size


def training_batch_sampler(
    dataset,
    batch_size: int,
    in_batch_negatives: bool,
    world_size: int = 1,
    group_by_length: bool = False,
    valid_label_columns: list[str] | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
) -> DefaultBatchSampler:
    """The training batch sampler: no duplicate texts in a (global) batch for in-batch losses, else seeded order."""
    if in_batch_negatives:
        if world_size == 1:
            return NoDuplicatesBatchSampler(dataset, batch_size, False, valid_label_columns, generator, seed)
        return ShardedNoDuplicatesBatchSampler(
            dataset, batch_size, True, valid_label_columns, generator, seed, world_size=world_size
        )
    return EpochSeededBatchSampler(
        dataset, batch_size, False, valid_label_columns, generator, seed, group_by_length, world_size
    )
