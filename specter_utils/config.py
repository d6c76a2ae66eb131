"""The run specification's sections, one dataclass per stage, each field declared once with
:func:`specter_utils.settings.setting` (its default, its help, its choices and its range), and the table that
names them. :mod:`specter_utils.spec` validates a specification (preset, your file, ``--set``) into these classes;
the flags of ``train``, ``mine`` and ``build-benchmark`` are generated from them; library functions take them whole
(the table of sections: ``SECTION_CLASSES``).
This module imports nothing heavy, so ``--help`` stays instant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from specter_utils import vocabularies as vocab
from specter_utils.backend_kinds import BACKENDS
from specter_utils.corpus_config import CorpusConfig
from specter_utils.errors import DataError
from specter_utils.settings import setting, setting_problems
from specter_utils.train_config import TRAIN_RUN_FIELDS, SamplerConfig, TrainConfig


# ---------------------------------------------------------------- 4. embedding (notebook 04, embed)
@dataclass(frozen=True)
class EmbedConfig:
    """Section ``embedding`` (and ``specter-utils embed``, ``evaluate --model``, ``api.load_model``): the one
    specification of how papers are embedded, resolved once where a workflow starts and passed whole to the
    encoder. Its vector settings (``FILE_KEYS``) are what an embeddings file's metadata records; the command or the
    run sets ``WORKFLOW_FIELDS`` (the trained model, its own pooling), not the run specification.
    """

    model: str = setting(vocab.DEFAULT_MODEL, "model name or folder (minilm: bundled, offline)")
    pooling: str = setting(
        "auto",
        "auto: a sentence-transformers model's own pooling (+ normalisation), else final-layer [CLS] (SPECTER's); "
        "cls / mean force one",
        choices=vocab.POOLINGS,
        aliases={vocab.MODEL_POOLING: "auto"},
    )
    max_length: int = setting(
        512,
        "THE length every paper is embedded at, by embed, evaluate --model, api.load_model and every row of Tables 1 "
        "and 2 (SPECTER's by default; beyond a model's position embeddings it is an error, never a silent cap)",
        low=2,
    )
    dtype: str = setting(
        "auto",
        "auto: bf16 autocast on a GPU that supports it, fp32 elsewhere; int8: OpenVINO + NNCF on a CPU",
        choices=vocab.EMBED_DTYPES,
        aliases=vocab.DTYPE_ALIASES,
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
        "the papers embedded: test (those the test evaluation reads) or all (every paper, so val can be scored)",
        choices=vocab.EMBED_SPLITS,
    )
    baselines: list[str] = setting(
        factory=lambda: list(vocab.DEFAULT_BASELINES), help="Table 1's", choices=vocab.BASELINES
    )

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
        object.__setattr__(self, "pooling", vocab.canonical_pooling(self.pooling))
        object.__setattr__(self, "dtype", vocab.canonical_dtype(self.dtype or "auto"))
        object.__setattr__(self, "device", self.device or "")
        for name, problem in setting_problems(self):
            raise DataError(f"embedding.{name} {problem}, got {getattr(self, name)!r}")

    def but(self, **changes: Any) -> EmbedConfig:
        """This specification with ``changes`` (None values leave a field as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def torch_dtype(self) -> str:
        """The precision as the encoder and the file name it (``fp32`` -> ``float32``)."""
        return vocab.torch_dtype_name(self.dtype)

    @property
    def torch_device(self) -> str | None:
        """The device for torch; None lets the encoder pick."""
        return self.device or None


# ---------------------------------------------------------------- 5. evaluation (notebook 05, evaluate)
@dataclass
class EvalConfig:
    """Section ``evaluation``: what is scored, on which data and split."""

    scidocs_dir: str = setting("", 'evaluation data; "": the benchmark built by notebook 01')
    split: str = setting("test", "as reported in the paper", choices=vocab.EVAL_SPLITS)
    tasks: list[str] = setting(factory=list, help="empty: every task present", choices=vocab.TASK_NAMES)
    models: list[str] = setting(factory=list, help="embedding files to score; empty: all, trained and base first")
    rankers: list[str] = setting(
        factory=lambda: list(vocab.RANKERS),
        help="Table 1's rows that are not embeddings: BM25 on title and abstract, and the text-free in-degree and "
        "year rankers (what structure alone scores); one the benchmark has no data for (no citations, no years) is "
        "skipped with its reason",
        choices=vocab.RANKERS,
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
        factory=lambda: ["tsne", "umap"], help="the 2-D maps drawn (t-SNE: the paper's)", choices=vocab.ANALYSIS_METHODS
    )
    task: str = setting("mag", "the classification slot whose labels colour the points")
    max_papers: int = setting(2000, "a random sample of labelled papers, the same for every model", low=1)
    max_classes: int = setting(10, "the most frequent classes keep the colours legible (0: every class)", low=0)
    perplexity: float = setting(30.0, "t-SNE's default", low=0.0, open_ends="low")
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
        factory=lambda: ["cite", "cocite"], help="the citation tasks; empty: every task", choices=vocab.TASK_NAMES
    )
    seeds: list[int] = setting(
        factory=lambda: [0, 1, 2], help="the seeds each row is trained with, for a mean and a spread over them"
    )
    text_fields: list[str] = setting(
        factory=lambda: ["title", "abstract"], help="SPECTER's input text, in this order", choices=vocab.TEXT_FIELDS
    )
    max_triplets: int = setting(
        0,
        "0: every row trains on the main run's budget (training.max_triplets) and the reference row's run seed is the"
        " main model. N: every row trains on N triplets, the reference row's seeds all retrained, so that a main run "
        "with a long budget keeps a Table 2 of many rows x seeds affordable",
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
        choices=vocab.ENCODERS_TO_TUNE,
    )
    architectures: list[str] = setting(
        factory=lambda: ["linear", "1x64"], help="heads tuned with the encoder: the costly part"
    )
    max_length: int = setting(64, "wordpieces per paper in training, scoring and the before/after geometry", low=2)
    max_train_papers: int = setting(480, "a stratified cap on the training papers (0: all)", low=0)
    max_val_papers: int = setting(
        200, "a stratified cap on the validation papers scored at every evaluation (0: all)", low=0
    )
    epochs: float = setting(1.0, "passes over the training papers", low=0.0, open_ends="low")
    learning_rate: float = setting(
        5e-5, "the encoder's AdamW rate (a pretrained transformer: small)", low=0.0, open_ends="low"
    )
    head_learning_rate: float = setting(
        0.01, "the head's rate: it trains from scratch in a few dozen steps", low=0.0, open_ends="low"
    )
    weight_decay: float = setting(0.01, "AdamW's, on weights only (no bias, LayerNorm or BatchNorm)", low=0.0)
    warmup_ratio: float = setting(
        0.1, "linear warm-up over this fraction of the steps", low=0.0, high=1.0, open_ends="high"
    )
    batch_size: int = setting(16, "papers per optimiser step", low=1)
    eval_steps: int = setting(10, "validation macro-F1 every this many optimiser steps (and at the last)", low=1)
    patience: int = setting(2, "evaluations without a better validation macro-F1 before stopping", low=1)


@dataclass
class HeadsConfig:
    """Section ``heads``: SPECTROID's classification heads on frozen embeddings, beside SCIDOCS's linear SVM."""

    models: list[str] = setting(factory=lambda: ["base", "trained"], help="frozen heads read these embedding files")
    task: str = setting("mag", "the classification slot; any SCIDOCS-format task folder works (mag, mesh, ...)")
    architectures: list[str] = setting(factory=lambda: ["linear", "1x64", "3x64", "5x64"], help="frozen heads trained")
    n_seeds: int = setting(3, "seeds seed, seed + 1, ...: every seed, their mean and sd in the table", low=1)
    batch_norm: bool = setting(
        True, "BatchNorm1d after each hidden Linear, as the report's heads (a linear head has none)"
    )
    dropout: float = setting(
        0.2, "after each hidden ReLU (a linear head has none)", low=0.0, high=1.0, open_ends="high"
    )
    learning_rate: float = setting(
        1e-3, "Adam's usual rate; the head is small and trains from scratch", low=0.0, open_ends="low"
    )
    weight_decay: float = setting(1e-4, "mild L2 so that the head does not memorise the training papers", low=0.0)
    batch_size: int = setting(64, "papers per step", low=1)
    max_epochs: int = setting(200, "upper bound; early stopping on validation macro-F1 ends sooner", low=1)
    patience: int = setting(15, "epochs without a better validation macro-F1 before stopping", low=1)
    standardize: bool = setting(True, "z-score inputs with training-split statistics (the SVM sees raw vectors)")
    val_fraction: float = setting(
        0.1, "carved from train (stratified) when the task has no val split", low=0.0, high=1.0, open_ends="both"
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
SECTION_CLASSES: dict[str, type] = {  # each section's stage (notebook)
    "data": CorpusConfig,  # the corpus and its benchmark (01; specter_utils.corpus_config)
    "mining": SamplerConfig,  # training triplets (02; specter_utils.train_config)
    "training": TrainConfig,  # fine-tuning (03 and every ablation row; specter_utils.train_config)
    "embedding": EmbedConfig,  # the one evaluation length of every row (04)
    "evaluation": EvalConfig,  # SCIDOCS scoring (05)
    "analysis": AnalysisConfig,  # Figure 2 (06)
    "ablations": AblationConfig,  # Table 2 / 3 (07)
    "heads": HeadsConfig,  # classification heads (08), with EndToEndConfig
}
# Fields a run's workflow sets from elsewhere (the run's seed, its folders): not part of the specification.
WORKFLOW_FIELDS = {
    "mining": ("seed",),
    "training": TRAIN_RUN_FIELDS,
    "embedding": ("model", "pooling", "dtype", "device", "backend"),
}
DEFAULT_PRESET = "demo"  # the preset a run starts from when it names none (and a file without 'extends' extends)
RUN_SEED = 0  # the experiment seed (triplets, training order, baselines, t-SNE, heads): vary it for a spread

# Deprecated spellings (CHANGELOG.md): a specification or flag using one gets the new name and a warning.
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


def renamed_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with old TrainConfig field names (``max_seq_length``, ...) under the current ones."""
    return {DEPRECATED_TRAIN_FIELDS.get(k, k): v for k, v in values.items()}


def defaults_tree() -> dict[str, Any]:
    """Every setting of a run at its default, as a nested mapping (the specification's shape)."""
    tree: dict[str, Any] = {"seed": RUN_SEED}
    for section, cls in SECTION_CLASSES.items():
        values = dataclasses.asdict(cls())
        for name in WORKFLOW_FIELDS.get(section, ()):
            values.pop(name, None)
        tree[section] = values
    return tree
