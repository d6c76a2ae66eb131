"""Training configuration: one dataclass of plain values, each with the reason for its value.

Defaults are the paper's settings (SPEC.md section 3) except the base model, which is the offline
``minilm``. Presets adjust them for a machine (``cpu``: minutes on a laptop; ``gpu``: the paper's
run), and any field can then be overridden from the command line or from notebook parameters::

    config = make_config("cpu", triplets="runs/mine", metadata="data/metadata.json", out="runs/train")

Kinds of hyper-parameter (tuning playbook): *scientific* are what an experiment studies (base model,
pooling, data); *fixed* are the paper's optimisation settings; *nuisance* depend on the hardware
(per-device batch, precision, workers) and must not change the result beyond noise.

This module imports nothing heavy, so ``specter-utils train --help`` stays instant.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any

from specter_utils.errors import DataError
from specter_utils.models import POOLINGS

POOLING_MODES = POOLINGS  # auto, cls, mean (models.resolve_pooling)
# triplet: the paper's margin loss; mnrl: in-batch negatives (MultipleNegativesRankingLoss) plus the mined negative;
# mnrl-citation: mnrl with in-batch papers linked to the query in the training graph masked out; gist: GISTEmbedLoss
# with the frozen base model as guide (the library's own false-negative filter).
LOSSES = ("triplet", "mnrl", "mnrl-citation", "gist")
IN_BATCH_LOSSES = frozenset({"mnrl", "mnrl-citation", "gist"})
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
OPTIMIZERS = ("adamw", "bert_adam")  # torch AdamW (bias-corrected); BertAdam of the released code (training.released)
LR_SCHEDULES = ("linear", "slanted_triangular")  # warm-up then linear decay to 0; AllenNLP's lr/ratio -> lr -> lr/ratio
# Fields that only say where things go or how to report; a resumed run may change them freely.
RUN_ONLY_FIELDS = frozenset(
    {"out", "resume", "overwrite", "keep_checkpoints", "progress_bar", "logging_steps", "dataloader_num_workers"}
)


@dataclass
class TrainConfig:
    """Everything a SPECTER training run depends on (see the comment on each field)."""

    # --- data (scientific) ---
    triplets: str = ""  # mining output dir with train.jsonl (and val.jsonl for a validation loss); paper ids only
    metadata: str = ""  # SPECTER metadata.json: titles and abstracts are looked up here at training time
    out: str = "runs/train"  # run dir: model/ (final model), checkpoints/, train_config.json, log_history.json
    max_train_triplets: int = 0  # 0 = all; a cap (seeded sample) keeps CPU runs to minutes
    max_val_triplets: int = 0  # 0 = all; the validation loss costs one forward pass per val triplet each time
    # --- model (scientific) ---
    base_model: str = "minilm"  # offline default (all-MiniLM-L6-v2); the paper: allenai/scibert_scivocab_uncased
    pooling: str = "auto"  # auto: a sentence-transformers base keeps its own pooling (+ normalisation), a plain
    # transformers base (SciBERT) gets SPECTER's final-layer [CLS]; cls / mean force one (the paper recipe: cls)
    max_seq_length: int = 512  # SPECTER truncates "title [SEP] abstract" to 512 wordpieces
    # --- loss (scientific) ---
    loss: str = "triplet"  # triplet (the paper), mnrl, mnrl-citation or gist; see LOSSES
    triplet_margin: float = 1.0  # SPECTER's margin; sentence-transformers' TripletLoss default of 5 is not the paper's
    mnrl_scale: float = 20.0  # in-batch losses: cosine x 20 (temperature 0.05), the library's default
    cached_mini_batch: int = 0  # > 0: the Cached variant (GradCache) of mnrl / gist, whose memory depends on this
    # mini-batch, not on the batch: large in-batch-negative batches on a small machine (costs one extra forward)
    gather_across_devices: bool = True  # in-batch losses under torchrun: negatives from every process's slice (the
    # global batch, as one process with that batch would see); off: each process's own slice only (N times fewer)
    merge_with_base: float = 1.0  # WiSE-FT: final weights = a x trained + (1 - a) x base; 1 = no merge
    # --- optimisation (fixed: the paper's values) ---
    learning_rate: float = 2e-5  # paper: Adam lr 2e-5
    weight_decay: float = 0.01  # paper; never applied to biases or LayerNorm weights (checked at train start)
    max_grad_norm: float = 1.0  # paper: gradient clipping at 1.0
    warmup_ratio: float = 0.1  # linear warm-up over the first 10% of steps, then linear decay to 0 (slanted triangular)
    optimizer: str = (
        "adamw"  # adamw; bert_adam: the released code's (no bias correction, eps 1e-6, max_grad_norm per tensor)
    )
    lr_schedule: str = (
        "linear"  # linear (to 0); slanted_triangular: AllenNLP's, lr/ratio up to lr (warmup_ratio) and back
    )
    stlr_ratio: float = 32.0  # slanted_triangular only: the lowest learning rate is learning_rate / stlr_ratio
    grad_value_clip: float = 0.0  # > 0: clamp every gradient value to [-x, x] (AllenNLP grad_clipping; released: 1)
    embedding_dropout: float = (
        0.0  # > 0: dropout on the paper embeddings before the triplet loss, training only (released: 0.5)
    )
    best_by_val_loss: bool = (
        False  # validate and save every epoch, keep the epoch with the lowest validation loss (released)
    )
    effective_batch_size: int = 32  # paper: 4 per step x 8 accumulation on a 12 GB Titan V
    per_device_batch_size: int = 4  # nuisance: as large as memory allows; accumulation makes up the rest
    gradient_accumulation_steps: int = 0  # 0 = effective_batch_size / (per_device_batch_size x number of processes)
    epochs: float = 2.0  # paper: 2 epochs over the 684K training triplets
    max_steps: int = -1  # > 0 stops after this many optimiser steps (tests, benchmarks); -1 = run all epochs
    seed: int = 42  # model head init, data order and dropout; report spread over several seeds
    # --- hardware (nuisance) ---
    precision: str = "auto"  # auto = bf16 on GPUs that support it, fp16 on older GPUs, fp32 on CPU
    torch_compile: bool = False  # torch.compile the model; only worth it on GPU for long runs (compile takes minutes)
    group_by_length: bool = False  # batch similar lengths together: less padding, slightly less random batches
    dataloader_num_workers: int = 0  # tokenisation happens in the collator; workers help a fast GPU, not a CPU run
    # --- checkpoints and logging ---
    save_steps: int = 500  # a checkpoint every N optimiser steps; a killed run resumes from the last one
    save_total_limit: int = 2  # checkpoints kept on disk (each holds the optimiser state: about 3x the model)
    keep_checkpoints: bool = False  # keep checkpoints/ after the final model is written
    eval_steps: int = 500  # validation loss (and triplet accuracy) every N optimiser steps, and at the end
    logging_steps: int = 50  # training loss, learning rate and gradient norm every N optimiser steps
    resume: bool = True  # continue from the last checkpoint in out/checkpoints when there is one
    overwrite: bool = False  # replace an existing final model in out/model (otherwise that is an error)
    progress_bar: bool = True  # tqdm progress bar (turn off in logs of batch jobs)
    preset: str = ""  # which preset these values started from (recorded in the model card)
    recipe: str = ""  # which recipe (RECIPES) was applied on top of the preset (recorded in the model card)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> TrainConfig:
        """Raise a DataError naming the first field with an impossible value; return self."""

        def bad(name: str, why: str) -> DataError:
            return DataError(f"{name}={getattr(self, name)!r}: {why}", "TrainConfig", record_id=name)

        if self.pooling not in POOLING_MODES:
            raise bad("pooling", f"expected one of {POOLING_MODES}")
        if self.loss not in LOSSES:
            raise bad("loss", f"expected one of {LOSSES}")
        if self.loss in IN_BATCH_LOSSES and self.per_device_batch_size < 2:
            raise bad(
                "per_device_batch_size",
                f"loss={self.loss!r} uses the other papers of a batch as negatives, so a batch needs at least 2 "
                "triplets (gradient accumulation does not add in-batch negatives)",
            )
        if self.loss in IN_BATCH_LOSSES and self.cached_mini_batch < 0:
            raise bad("cached_mini_batch", "must be 0 (off) or more")
        if not 0.0 < self.merge_with_base <= 1.0:
            raise bad("merge_with_base", "must be in (0, 1]: the trained model's share of the merged weights")
        if self.mnrl_scale <= 0:
            raise bad("mnrl_scale", "must be positive")
        if self.optimizer not in OPTIMIZERS:
            raise bad("optimizer", f"expected one of {OPTIMIZERS}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise bad("lr_schedule", f"expected one of {LR_SCHEDULES}")
        if self.stlr_ratio < 1.0:
            raise bad("stlr_ratio", "must be at least 1 (the lowest learning rate is learning_rate / stlr_ratio)")
        if self.grad_value_clip < 0:
            raise bad("grad_value_clip", "must be 0 (off) or positive")
        if self.grad_value_clip and self.precision == "fp16":
            raise bad("grad_value_clip", "cannot clamp fp16's loss-scaled gradients; use bf16 or fp32")
        if not 0.0 <= self.embedding_dropout < 1.0:
            raise bad("embedding_dropout", "must be in [0, 1)")
        if self.embedding_dropout and self.loss != "triplet":
            raise bad("embedding_dropout", "is applied in the triplet loss only (loss='triplet')")
        if self.precision not in PRECISIONS:
            raise bad("precision", f"expected one of {PRECISIONS}")
        for name in ("max_seq_length", "effective_batch_size", "per_device_batch_size", "save_steps"):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        for name in ("eval_steps", "logging_steps", "save_total_limit"):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        for name in ("max_train_triplets", "max_val_triplets", "gradient_accumulation_steps", "dataloader_num_workers"):
            if getattr(self, name) < 0:
                raise bad(name, "must be 0 or more")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise bad("warmup_ratio", "must be in [0, 1)")
        if self.learning_rate <= 0:
            raise bad("learning_rate", "must be positive")
        if self.weight_decay < 0 or self.max_grad_norm <= 0 or self.triplet_margin <= 0:
            name = (
                "weight_decay"
                if self.weight_decay < 0
                else "max_grad_norm"
                if self.max_grad_norm <= 0
                else "triplet_margin"
            )
            raise bad(name, "out of range")
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
        per_step = self.per_device_batch_size * world_size
        if self.effective_batch_size % per_step:
            raise DataError(
                f"effective_batch_size={self.effective_batch_size} is not a multiple of per_device_batch_size="
                f"{self.per_device_batch_size} x {world_size} process(es); change one, or set gradient_accumulation_steps",
                "TrainConfig",
                record_id="effective_batch_size",
            )
        return self.effective_batch_size // per_step


# Each preset changes only what differs from the defaults above, and says why.
PRESETS: dict[str, dict[str, Any]] = {
    # Minutes on a laptop CPU: MiniLM, 128 tokens, a few hundred triplets.
    "cpu": {
        "base_model": "minilm",
        # Training length only (embedding for evaluation keeps its own, 128 or more): title and the first ~50
        # words of the abstract, about 2.5x the triplets/s of 128 on 2 cores (docs/benchmarks.md)
        "max_seq_length": 64,
        # 3,000 triplets, one pass: about 10 minutes on 2 cores with the recommended recipe (64 wordpieces), at which
        # it beats its base model on held-out hep-th papers (docs/results.md, "Training recipes")
        "max_train_triplets": 3000,
        "epochs": 1.0,
        "max_val_triplets": 200,  # each evaluation embeds 3 texts per val triplet (loss + triplet accuracy)
        # One forward batch of 32 instead of 8 x 4 accumulation: the same gradient, fewer steps of Python
        # overhead; on 2 cores both run at about 2.5-2.8 triplets/s at 128 wordpieces (bench/bench_losses.py).
        # In-batch recipes raise it to 64.
        "per_device_batch_size": 32,
        "save_steps": 50,  # checkpoints hold the optimiser state (about 270 MB for MiniLM): every ~10 minutes
        "eval_steps": 1000,  # validation before training and at the end (a 1-epoch CPU run has ~50 steps)
        "logging_steps": 5,
    },
    # The paper's run: SciBERT, 512 wordpieces, every triplet, 2 epochs (needs the hub or a local copy).
    "gpu": {
        "base_model": "allenai/scibert_scivocab_uncased",
        "max_seq_length": 512,
        "per_device_batch_size": 32,  # 96 sequences of 512 per step fit an 80 GB GPU in bf16; 1 accumulation step
        "save_steps": 1000,
        "eval_steps": 2000,
        "logging_steps": 50,
        "dataloader_num_workers": 2,  # keep tokenisation off the training process
    },
}


# A recipe is a set of scientific choices (loss, pooling, optimisation) applied on top of a preset, which
# only fits the run to a machine. ``paper`` is SPECTER's recipe, unchanged; the recommended recipe is the one
# that beats its base model on held-out hep-th papers (docs/results.md, "Training recipes").
RECIPES: dict[str, dict[str, Any]] = {
    # SPECTER (SPEC.md section 3): triplet loss, L2 distance, margin 1, final-layer [CLS], batch 32, lr 2e-5.
    "paper": {
        "loss": "triplet",
        "pooling": "cls",
        "triplet_margin": 1.0,
        "learning_rate": 2e-5,
        "effective_batch_size": 32,
    },
    # The released AllenNLP code (docs/recipes.md lists every difference): the paper's loss and pooling, with
    # lr 3e-5 (the paper says 2e-5), BertAdam, AllenNLP's slanted triangular schedule (cut_frac 0.1, ratio 32),
    # per-tensor norm clipping at 1 plus value clipping at 1, dropout 0.5 on the embeddings before the loss,
    # and the epoch with the lowest validation loss as the final model.
    "released": {
        "loss": "triplet",
        "pooling": "cls",
        "triplet_margin": 1.0,
        "learning_rate": 3e-5,
        "effective_batch_size": 32,
        "weight_decay": 0.01,
        "optimizer": "bert_adam",
        "lr_schedule": "slanted_triangular",
        "warmup_ratio": 0.1,  # AllenNLP's cut_frac
        "stlr_ratio": 32.0,
        "max_grad_norm": 1.0,  # per tensor, inside BertAdam
        "grad_value_clip": 1.0,
        "embedding_dropout": 0.5,
        "best_by_val_loss": True,
    },
    # In-batch negatives with the training graph's false negatives masked, the base model's own pooling.
    "citation-mnrl": {
        "loss": "mnrl-citation",
        "pooling": "auto",
        "learning_rate": 5e-5,  # a CPU budget is ~50 steps: 2e-5 barely moves a model that is already good
        "effective_batch_size": 64,  # every row of a batch is a negative of the others: bigger is better
        "per_device_batch_size": 64,  # in-batch negatives come from one forward batch, so no accumulation
    },
}
DEFAULT_RECIPE = {"cpu": "citation-mnrl", "gpu": "paper"}  # a preset's recipe when none is named


def field_comments() -> dict[str, str]:
    """The comment written beside each TrainConfig field (used as command-line help)."""
    comments: dict[str, str] = {}
    current = None
    source = inspect.getsource(TrainConfig)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string == "def":
            current = None  # methods follow the fields
        elif token.type == tokenize.NAME and re.match(rf"\s{{4}}{token.string}\s*:", token.line):
            current = token.string
        elif token.type == tokenize.COMMENT and current and not token.line.lstrip().startswith("#"):
            comments.setdefault(current, token.string.lstrip("#").strip())
    return comments


def _named(table: dict[str, dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
    """The values of preset or recipe ``name``; a DataError listing the known names otherwise."""
    if name not in table:
        raise DataError(f"unknown {kind} {name!r} (expected one of {sorted(table)})", "TrainConfig", record_id=kind)
    return table[name]


def make_config(preset: str | None = None, recipe: str | None = None, **overrides: Any) -> TrainConfig:
    """Defaults, then the preset's values, then the recipe's, then ``overrides`` (CLI flags or notebook parameters).

    ``recipe`` defaults to the preset's (``DEFAULT_RECIPE``); without a preset, to none (the plain defaults,
    which are the paper's optimisation with ``pooling="auto"``).
    """
    values: dict[str, Any] = {}
    if preset:
        values.update(_named(PRESETS, preset, "preset"))
        values["preset"] = preset
    recipe = recipe or (DEFAULT_RECIPE.get(preset, "") if preset else "")
    if recipe:
        values.update(_named(RECIPES, recipe, "recipe"))
        values["recipe"] = recipe
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise DataError(f"unknown setting(s) {unknown}", "TrainConfig", record_id=unknown[0])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return TrainConfig(**values)


def differing_fields(saved: dict[str, Any], config: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Fields (other than run-only ones) whose value differs between a saved config and ``config``."""
    current = config.to_dict()
    defaults = TrainConfig().to_dict()
    return {
        name: (saved.get(name), value)
        for name, value in current.items()
        if name not in RUN_ONLY_FIELDS
        and saved.get(name, defaults[name]) != value  # a field added since the save had its default then
    }
