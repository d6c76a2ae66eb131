"""Process guards of a training run under ``torchrun``: which process this is, how many there are, and whether
the batch settings, the data and the loss fit that many.

Each process trains on its own slice of every global batch (training.sampler); in-batch losses gather the other
processes' embeddings (training.losses); only the first process (rank 0) logs and writes the run folder.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

import torch
import torch.distributed as dist

from specter_utils.errors import DataError
from specter_utils.train_config import TrainConfig
from specter_utils.vocabularies import IN_BATCH_LOSSES

logger = logging.getLogger(__name__)


def world_size() -> int:
    """Number of processes of a ``torchrun`` launch (1 otherwise)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def launch_name(world: int) -> str:
    """Where a process-count error comes from, for its message."""
    return f"torchrun (WORLD_SIZE={world})"


def global_batch_size(config: TrainConfig, world: int) -> int:
    """Triplets per optimiser step over all processes: per-process batch x processes x accumulation."""
    return config.batch_size * world * config.accumulation_steps(world)


def check_world_size(config: TrainConfig, world: int) -> None:
    """Before anything is loaded: the number of processes fits the batch settings (a DataError says why not)."""
    per_step = config.batch_size * world
    if world > 1 and not config.gradient_accumulation_steps and per_step > config.effective_batch_size:
        most = max(1, config.effective_batch_size // config.batch_size)
        raise DataError(
            f"{world} processes x per-process batch {config.batch_size} = {per_step} triplets per step, "
            f"more than effective_batch_size={config.effective_batch_size}: launch at most {most} process(es) "
            "(--nproc_per_node x --nnodes), or lower --batch-size, or raise --effective-batch-size",
            launch_name(world),
        )
    config.accumulation_steps(world)  # a DataError when the effective batch is not a multiple of the step


def check_enough_triplets(config: TrainConfig, world: int, train_triplets: int, val_triplets: int = 0) -> None:
    """Several processes drop an epoch's incomplete global batch: the data must fill at least one (the
    validation triplets too, or the validation loss is left out: a warning)."""
    per_step = config.batch_size * world
    if world > 1 and 0 < val_triplets < per_step:
        logger.warning(
            "%d validation triplets do not fill one batch of %d processes x %d: no validation loss will be logged "
            "(the triplet accuracy still is); raise --max-val-triplets or lower --batch-size",
            val_triplets,
            world,
            config.batch_size,
        )
    if world > 1 and train_triplets < per_step:
        raise DataError(
            f"{train_triplets} training triplets do not fill one batch of {world} processes x "
            f"{config.batch_size}: use fewer processes, a smaller --batch-size or more triplets",
            launch_name(world),
        )


def check_gathering(loss, config: TrainConfig, world: int) -> None:
    """An in-batch loss asked to gather across processes must be able to (else its negatives shrink N times)."""
    if world == 1 or not config.gather_across_devices or config.loss not in IN_BATCH_LOSSES:
        return
    if not getattr(loss, "gather_across_devices", False):
        raise DataError(
            f"loss={config.loss!r} ({type(loss).__name__}) cannot gather embeddings across processes, so each "
            f"process would draw its in-batch negatives from its own 1/{world} of the batch; pass "
            "--no-gather-across-devices to train that way",
            launch_name(world),
            record_id="gather_across_devices",
        )


def quiet_other_ranks() -> None:
    """Logs come from rank 0 only: the other processes report errors (their warnings repeat rank 0's)."""
    if not is_main_process():
        for name in ("specter_utils", "sentence_transformers"):  # transformers': log_level_replica
            logging.getLogger(name).setLevel(logging.ERROR)
        warnings.filterwarnings("ignore")


def wait_for_other_processes() -> None:
    """A barrier when several processes run (nothing otherwise)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def in_batch_negatives(config: TrainConfig, world: int, gather: bool) -> str | None:
    """Where an in-batch loss's negatives came from (None for the triplet loss)."""
    if config.loss not in IN_BATCH_LOSSES:
        return None
    if world == 1:
        return "the batch"
    return f"the global batch (gathered from {world} processes)" if gather else f"each process's 1/{world} of the batch"


def mask_counts(loss) -> dict[str, Any]:
    """How many in-batch scores ``mnrl-citation`` masked as false negatives, summed over processes (else nothing);
    under torchrun every process must call it (an all-reduce)."""
    if not hasattr(loss, "scored"):
        return {}
    counts = [loss.masked, loss.scored]
    if dist.is_available() and dist.is_initialized():
        on_gpu = dist.get_backend() == "nccl"  # NCCL reduces GPU tensors only, gloo CPU ones
        total = torch.tensor(counts, dtype=torch.long, device="cuda" if on_gpu else "cpu")
        dist.all_reduce(total)
        counts = total.tolist()
    if not counts[1]:
        return {}
    return {"false_negatives_masked": counts[0], "in_batch_scores": counts[1]}
