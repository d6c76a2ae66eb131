"""Sections ``mining`` (:class:`SamplerConfig`, notebook 02) and ``training`` (:class:`TrainConfig`, notebook 03 and
every ablation row) of the run specification: how triplets are mined and how a model is trained on them."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from specter_utils import vocabularies as vocab
from specter_utils.errors import DataError
from specter_utils.recipes import PROFILES, RECIPES
from specter_utils.settings import setting, setting_problems


@dataclass
class SamplerConfig:
    """Section ``mining``: the original SPECTER sampler's settings (docs/protocol.md, "Triplets")."""

    strategy: str = setting(
        "specter",
        "specter (the original), spectroid (positives weighted by in-citations) or scincl",
        choices=vocab.STRATEGIES,
    )
    triplets_per_query: int = setting(5, "the original's samples_per_query", low=1)
    hard_ratio: float = setting(
        0.3, "ceil(0.3 * 5) = 2 hard triplets (a citation of a citation), 3 easy (a random paper)", low=0.0, high=1.0
    )
    margin_fraction: float = setting(
        0.5, "the original's default; with counts {5, 1} it makes the margin 2", low=0.0, high=1.0
    )
    no_hard_negatives: bool = setting(False, "the Table 2 ablation: every negative a random paper")
    positives: str = setting(
        "citation",
        "citation (SPECTER); cocitation or mix: Table 3's task-specific signals",
        choices=vocab.POSITIVE_SIGNALS,
    )
    max_triplets: int = setting(
        0, "0: mine every query; a cap takes whole random queries (SPECTROID's max_training_triplets)", low=0
    )
    scincl_fraction: float = setting(
        0.0,
        "share of the queries (of those both samplers serve) mined by SciNCL instead (triplets.mix), seeded: SciNCL's"
        " graph-neighbourhood positives beside citation positives; 0: citations only",
        low=0.0,
        high=1.0,
    )
    seed: int = setting(0, "seed of the triplet draws (a run sets it from its own seed)")

    def __post_init__(self) -> None:
        if self.max_triplets is None:  # None: no cap, as 0
            self.max_triplets = 0
        for name, problem in setting_problems(self):
            raise DataError(f"{name} {problem}, got {getattr(self, name)!r}")
        if self.scincl_fraction and self.strategy == "scincl":
            raise DataError("scincl_fraction mixes SciNCL into the specter or spectroid sampler; strategy is scincl")

    @property
    def hard_per_query(self) -> int:
        """Hard triplets wanted per query: ``ceil(hard_ratio * k)``, 0 without hard negatives."""
        if self.no_hard_negatives:
            return 0
        # round() first so that 0.3 * 10 = 3.0000000000000004 does not become 4
        return math.ceil(round(self.hard_ratio * self.triplets_per_query, 9))

    @property
    def spectroid(self) -> bool:
        """SPECTROID's positive sampling (``strategy: spectroid``)."""
        return self.strategy == "spectroid"


@dataclass
class TrainConfig:
    """Section ``training`` (and ``specter-utils train``): everything a SPECTER training run depends on.

    Kinds of hyper-parameter (tuning playbook): *scientific* are what an experiment studies (base model,
    pooling, data); *fixed* are the paper's optimisation settings; *nuisance* depend on the hardware
    (batch per device, precision, workers) and must not change the result beyond noise.
    """

    # --- data (scientific) ---
    triplets: str = setting(
        "", "mining output dir with train.jsonl (and val.jsonl for a validation loss); paper ids only"
    )
    metadata: str = setting("", "SPECTER metadata.json: titles and abstracts are looked up here at training time")
    out: str = setting("runs/train", "run dir: model/ (final model), checkpoints/, train_config.json, log_history.json")
    max_triplets: int = setting(0, "0 = all; a cap (seeded sample) keeps CPU runs to minutes", low=0)
    max_val_triplets: int = setting(
        0, "0 = all; the validation loss costs one forward pass per val triplet each time", low=0
    )
    drop_unknown: bool = setting(
        False, "a triplet naming a paper missing from metadata is an error; True drops and counts it"
    )
    # --- model (scientific) ---
    base_model: str = setting(
        vocab.DEFAULT_MODEL, "offline default (all-MiniLM-L6-v2); the paper: allenai/scibert_scivocab_uncased"
    )
    pooling: str = setting(
        "auto",
        "auto: a sentence-transformers base keeps its own pooling (+ normalisation), a plain transformers base "
        "(SciBERT) gets SPECTER's final-layer [CLS]; cls / mean force one (the paper recipe: cls)",
        choices=vocab.POOLINGS,
    )
    max_length: int = setting(512, 'wordpieces of "title [SEP] abstract" in training (the paper\'s by default)', low=2)
    # --- loss (scientific) ---
    loss: str = setting(
        "triplet", "the training loss; triplet is the paper's (each is declared in loss_kinds)", choices=vocab.LOSSES
    )
    triplet_margin: float = setting(
        1.0,
        "SPECTER's margin; sentence-transformers' TripletLoss default of 5 is not the paper's",
        low=0.0,
        open_ends="low",
    )
    mnrl_scale: float = setting(
        20.0, "in-batch losses: cosine x 20 (temperature 0.05), the library's default", low=0.0, open_ends="low"
    )
    cached_mini_batch: int = setting(
        0,
        "> 0: the Cached variant (GradCache) of mnrl / mnrl-citation / gist, whose memory depends on this mini-batch,"
        " not on the batch: large in-batch-negative batches (batch_size = effective_batch_size, e.g. 256-1024) on a "
        "small machine, at the same loss and gradients (costs one extra forward)",
        low=0,
    )
    gather_across_devices: bool = setting(
        True,
        "in-batch losses under torchrun: negatives from every process's slice (the global batch, as one process with "
        "that batch would see); off: each process's own slice only (N times fewer)",
    )
    merge_with_base: float = setting(
        1.0, "WiSE-FT: final weights = a x trained + (1 - a) x base; 1 = no merge", low=0.0, high=1.0, open_ends="low"
    )
    # --- optimisation (fixed: the paper's values) ---
    learning_rate: float = setting(2e-5, "peak rate (the paper's by default)", low=0.0, high=1.0, open_ends="low")
    weight_decay: float = setting(
        0.01, "paper; never applied to biases or LayerNorm weights (checked at train start)", low=0.0
    )
    max_grad_norm: float = setting(1.0, "gradient norm clipping (the paper's by default)", low=0.0, open_ends="low")
    warmup_ratio: float = setting(
        0.1,
        "linear warm-up over this fraction of the steps, then decay (the paper's slanted triangular)",
        low=0.0,
        high=1.0,
        open_ends="high",
    )
    optimizer: str = setting(
        "adamw",
        "adamw; bert_adam: the released code's (no bias correction, eps 1e-6, per-tensor clip)",
        choices=vocab.OPTIMIZERS,
    )
    lr_schedule: str = setting(
        "linear",
        "linear (to 0); slanted_triangular: AllenNLP's, lr/ratio up to lr and back",
        choices=vocab.LR_SCHEDULES,
    )
    stlr_ratio: float = setting(
        32.0, "slanted_triangular only: the lowest learning rate is learning_rate / stlr_ratio", low=1.0
    )
    grad_value_clip: float = setting(
        0.0, "> 0: clamp every gradient value to [-x, x] (AllenNLP grad_clipping; released: 1)", low=0.0
    )
    embedding_dropout: float = setting(
        0.0,
        "> 0: dropout on the embeddings before the triplet loss (released: 0.5)",
        low=0.0,
        high=1.0,
        open_ends="high",
    )
    best_by_val_loss: bool = setting(False, "validate and save every epoch, keep the lowest validation loss (released)")
    effective_batch_size: int = setting(32, "triplets per optimiser step (the paper's by default)", low=1)
    batch_size: int = setting(4, "triplets per device in one forward pass (nuisance: as large as memory allows)", low=1)
    gradient_accumulation_steps: int = setting(
        0, "0 = effective_batch_size / (batch_size x number of processes)", low=0
    )
    epochs: float = setting(2.0, "passes over the training triplets (the paper's by default)")
    max_steps: int = setting(
        -1,
        "> 0: the training budget in optimiser steps (passes over the triplets repeat until it is spent, so a small"
        " corpus makes more passes); -1 = run all epochs. Naming epochs without max_steps sets the budget in passes",
    )
    seed: int = setting(
        0, "model head init, data order and dropout (a run sets it from its own seed); report a spread over seeds"
    )
    # --- hardware (nuisance) ---
    dtype: str = setting(
        "auto",
        "auto = bf16 on GPUs that support it, fp16 on older GPUs; on a CPU bf16 where it has avx512_bf16 or amx_bf16, "
        "else fp32 (train_config.json records what it resolved to)",
        choices=vocab.TRAIN_DTYPES,
        aliases=vocab.DTYPE_ALIASES,
    )
    torch_compile: bool = setting(
        False, "torch.compile the model; only worth it on GPU for long runs (compile takes minutes)"
    )
    group_by_length: bool = setting(False, "batch similar lengths together: less padding, slightly less random batches")
    dataloader_num_workers: int = setting(
        0, "tokenisation happens in the collator; workers help a fast GPU, not a CPU run", low=0
    )
    # --- checkpoints and logging ---
    save_steps: int = setting(
        500, "a checkpoint every N optimiser steps; a killed run resumes from the last one", low=1
    )
    save_total_limit: int = setting(
        2, "checkpoints kept on disk (each holds the optimiser state: about 3x the model)", low=1
    )
    keep_checkpoints: bool = setting(False, "keep checkpoints/ after the final model is written")
    keep: str = setting(
        "best",
        "which model the run hands over, decided on the validation queries of the run's benchmark (workflow.verdict): "
        "best: the final model or one of its last checkpoints, whichever scores highest, or the base model when none "
        "is above it; last: the final model whatever validation says",
        choices=vocab.KEEP_RULES,
    )
    benchmark: str = setting(
        "",
        "a SCIDOCS-layout folder (build-benchmark's OUT/scidocs) whose validation queries decide which model is kept "
        '(training.keep) and print the verdict; "": no verdict (notebook 03 uses the run\'s benchmark)',
    )
    eval_steps: int = setting(
        500, "validation loss (and triplet accuracy) every N optimiser steps, and at the end", low=1
    )
    logging_steps: int = setting(50, "training loss, learning rate and gradient norm every N optimiser steps", low=1)
    resume: bool = setting(True, "continue from the last checkpoint in out/checkpoints when there is one")
    overwrite: bool = setting(False, "replace an existing final model in out/model (otherwise that is an error)")
    progress_bar: bool = setting(True, "tqdm progress bar (turn off in logs of batch jobs)")
    profile: str = setting(
        "", "the machine profile these values started from (PROFILES; recorded in the model card)", choices=PROFILES
    )
    recipe: str = setting(
        "", "the recipe (RECIPES) applied after the profile (recorded in the model card)", choices=RECIPES
    )

    def __post_init__(self) -> None:
        self.dtype = vocab.canonical_dtype(self.dtype)  # bfloat16 is bf16

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> TrainConfig:
        """Raise a DataError naming the first field with an impossible value; return self."""

        def bad(name: str, why: str) -> DataError:
            return DataError(f"{name}={getattr(self, name)!r}: {why}", "TrainConfig", record_id=name)

        for name, problem in setting_problems(self):  # each field against its declared choices and range
            raise bad(name, problem)
        if self.loss in vocab.IN_BATCH_LOSSES and self.batch_size < 2:
            raise bad(
                "batch_size",
                f"loss={self.loss!r} uses the other papers of a batch as negatives, so a batch needs at least 2 "
                "triplets (gradient accumulation does not add in-batch negatives)",
            )
        if self.grad_value_clip and self.dtype == "fp16":
            raise bad("grad_value_clip", "cannot clamp fp16's loss-scaled gradients; use bf16 or fp32")
        if self.embedding_dropout and self.loss != "triplet":
            raise bad("embedding_dropout", "is applied in the triplet loss only (loss='triplet')")
        if self.epochs <= 0 and self.max_steps <= 0:
            raise bad("epochs", "must be positive (or set max_steps)")
        if not self.triplets:
            raise bad("triplets", "required: the mining output dir holding train.jsonl")
        if not self.metadata:
            raise bad("metadata", "required: the SPECTER metadata.json with titles and abstracts")
        if not self.out:
            raise bad("out", "required: the run directory")
        return self

    def accumulation_steps(self, world_size: int = 1) -> int:
        """Gradient accumulation giving ``effective_batch_size`` over ``world_size`` processes."""
        if self.gradient_accumulation_steps:
            return self.gradient_accumulation_steps
        per_step = self.batch_size * world_size
        if self.effective_batch_size % per_step:
            raise DataError(
                f"effective_batch_size={self.effective_batch_size} is not a multiple of batch_size="
                f"{self.batch_size} x {world_size} process(es); change one, or set gradient_accumulation_steps",
                "TrainConfig",
                record_id="effective_batch_size",
            )
        return self.effective_batch_size // per_step


# Fields of TrainConfig that a run's workflow sets (paths, the run's seed, reporting), not its specification.
TRAIN_RUN_FIELDS = ("triplets", "metadata", "out", "seed", "resume", "overwrite", "progress_bar", "benchmark")
