"""Every file name of a run folder, a benchmark folder, a triplets folder and a training run, once.

The folders themselves are placed by :class:`specter_utils.runs.RunPaths`; this module only names the files
inside them, so that a writer and its readers cannot drift apart. It imports nothing.
"""

from __future__ import annotations

BENCHMARK_FILE = "benchmark.json"  # a built benchmark's description: corpus, counts, seeds, split sizes
METADATA_FILE = "metadata.json"  # SPECTER's ``metadata.json``: id -> title, abstract (and more)
DATA_FILE = "data.json"  # SPECTER's ``data.json``: id -> {cited id: {"count": n}}
METRICS_FILE = "metrics.json"  # a notebook's or a stage's measured numbers (``metrics.json``)
LOG_HISTORY_FILE = "log_history.json"  # a training run's logged losses and learning rates
VERDICT_FILE = "verdict.json"  # a training run's validation verdict: which model it hands over, and why
TRAIN_CONFIG_FILE = "train_config.json"  # a training run's resolved ``TrainConfig``
TRIPLETS_TRAIN_FILE = "train.jsonl"  # mined training triplets (one JSON object a line)
TRIPLETS_VAL_FILE = "val.jsonl"  # mined validation triplets
RESULTS_TABLE = "results.md"  # a rendered results table written beside its ``metrics.json``
PIPELINE_FILE = "pipeline.json"  # how and when each notebook of a run (or a report) last ran
SCIREPEVAL_DIR = "scirepeval"
SCIREPEVAL_TASKS_FILE = "tasks.jsonl"
LATER_PAPERS_FILE = "later_papers.txt"  # a time-split benchmark's papers from its cutoff on (kept out of training)
FORMATS_RESULTS = "formats.json"  # two models' SciRepEval-format results and their paired comparison (notebook 05)
FORMATS_CACHE_DIR = "formats-embeddings"  # the embeddings cache of those results, inside the run folder
