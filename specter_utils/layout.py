"""Every file name of a run folder, a benchmark folder, a triplets folder and a training run, once.

The folders themselves are placed by :class:`specter_utils.runs.RunPaths`; this module only names the files
inside them, so that a writer and its readers cannot drift apart. It imports nothing.

==========================  =======================================================================
name                        what it is
==========================  =======================================================================
``BENCHMARK_FILE``          a built benchmark's description: corpus, counts, seeds, split sizes
``METADATA_FILE``           SPECTER's ``metadata.json``: id -> title, abstract (and more)
``DATA_FILE``               SPECTER's ``data.json``: id -> {cited id: {"count": n}}
``METRICS_FILE``            a notebook's or a stage's measured numbers (``metrics.json``)
``LOG_HISTORY_FILE``        a training run's logged losses and learning rates
``VERDICT_FILE``            a training run's validation verdict (base, final model, checkpoints; the one kept)
``TRAIN_CONFIG_FILE``       a training run's resolved ``TrainConfig``
``TRIPLETS_TRAIN_FILE``     mined training triplets (one JSON object a line)
``TRIPLETS_VAL_FILE``       mined validation triplets
``RESULTS_TABLE``           a rendered results table written beside its ``metrics.json``
``PIPELINE_FILE``           how and when each notebook of a run (or a report) last ran
``LATER_PAPERS_FILE``       a time-split benchmark's papers from its cutoff on (kept out of training)
``FORMATS_RESULTS``         two models' SciRepEval-format results and their paired comparison (notebook 05)
``FORMATS_CACHE_DIR``       the embeddings cache of those results, inside the run folder
==========================  =======================================================================
"""

from __future__ import annotations

BENCHMARK_FILE = "benchmark.json"
METADATA_FILE = "metadata.json"
DATA_FILE = "data.json"
METRICS_FILE = "metrics.json"
LOG_HISTORY_FILE = "log_history.json"
VERDICT_FILE = "verdict.json"  # a training run's validation verdict: which model it hands over, and why
TRAIN_CONFIG_FILE = "train_config.json"
TRIPLETS_TRAIN_FILE = "train.jsonl"
TRIPLETS_VAL_FILE = "val.jsonl"
RESULTS_TABLE = "results.md"
PIPELINE_FILE = "pipeline.json"
SCIREPEVAL_DIR = "scirepeval"
SCIREPEVAL_TASKS_FILE = "tasks.jsonl"
LATER_PAPERS_FILE = "later_papers.txt"
FORMATS_RESULTS = "formats.json"
FORMATS_CACHE_DIR = "formats-embeddings"
