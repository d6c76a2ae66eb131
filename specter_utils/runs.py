"""The run folder: where each notebook of a run reads and writes (everything under ``results/<run>/``).

``RunPaths`` is the one place that says where each notebook leaves its artefacts for the next;
``write_metrics`` / ``read_metrics`` handle each notebook's ``metrics.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specter_utils.io import read_json, write_json
from specter_utils.layout import BENCHMARK_FILE, METRICS_FILE
from specter_utils.paths import WORK_ROOT


def resolve(path: str | Path) -> Path:
    """An absolute path; relative paths are relative to the folder runs write to (``paths.WORK_ROOT``: the checkout
    when started inside it), not the notebook's folder."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else WORK_ROOT / path


@dataclass(frozen=True)
class RunPaths:
    """Where the notebooks of one run read and write (everything under ``results/<run>/``)."""

    run_dir: Path

    @classmethod
    def of(cls, run_dir: str | Path) -> RunPaths:
        return cls(resolve(run_dir))

    def notebook_dir(self, notebook: str) -> Path:
        return self.run_dir / notebook

    @property
    def benchmark_dir(self) -> Path:
        """``build_benchmark`` output: ``scidocs/``, ``train/``, ``benchmark.json``."""
        return self.run_dir / "01_prepare_data" / "benchmark"

    @property
    def built_scidocs_dir(self) -> Path:
        return self.benchmark_dir / "scidocs"

    @property
    def train_data_dir(self) -> Path:
        """SPECTER-format training dir (data.json, metadata.json, train/val/test.txt)."""
        return self.benchmark_dir / "train"

    @property
    def triplets_dir(self) -> Path:
        return self.run_dir / "02_mine_triplets" / "triplets"

    @property
    def train_run_dir(self) -> Path:
        """``TrainConfig.out``: the final model is ``model/`` inside it."""
        return self.run_dir / "03_train_specter" / "train"

    @property
    def model_dir(self) -> Path:
        return self.train_run_dir / "model"

    @property
    def embeddings_dir(self) -> Path:
        return self.run_dir / "04_embed_papers" / "embeddings"

    def embedding_file(self, name: str) -> Path:
        """``04_embed_papers/embeddings/<name>.jsonl`` (SCIDOCS format, with ``.npy`` sidecars)."""
        return self.embeddings_dir / f"{name}.jsonl"

    def ablation_dir(self, name: str) -> Path:
        return self.run_dir / "07_ablations" / name

    def scidocs_dir(self, override: str = "") -> Path:
        """The evaluation data: ``override`` (e.g. the real SCIDOCS) or the benchmark built by notebook 01."""
        return resolve(override) if override else self.built_scidocs_dir


def write_metrics(run_dir: str | Path, notebook: str, metrics: dict[str, Any]) -> Path:
    """Write ``results/<run>/<notebook>/metrics.json`` atomically and return its path."""
    path = RunPaths.of(run_dir).notebook_dir(notebook) / METRICS_FILE
    write_json(path, metrics)
    return path


def read_metrics(run_dir: str | Path, notebook: str) -> dict[str, Any]:
    """The ``metrics.json`` an earlier notebook of the run wrote."""
    return read_json(RunPaths.of(run_dir).notebook_dir(notebook) / METRICS_FILE)


def corpus_label(run_dir: str | Path) -> str:
    """The run's corpus as shown in tables and figures, e.g. ``synthetic corpus (SYNTHETIC data)`` or ``hepth``."""
    info_path = RunPaths.of(run_dir).benchmark_dir / BENCHMARK_FILE
    if not info_path.exists():
        return "unknown corpus"
    info = read_json(info_path)
    name = str(info.get("corpus", "unknown corpus"))
    source = ((info.get("corpus_info") or {}).get("info") or {}).get("source")
    if name == "tables" and source:  # the generic reader: name the folder it read
        name = f"{Path(str(source)).name} (tables)"
    return f"{name} corpus (SYNTHETIC data)" if info.get("synthetic") else name


def label_kind(run_dir: str | Path, scidocs_dir: str = "") -> str:
    """What the run's classification labels are, for figure titles: ``fields of study``, ``journals``, ... (with a
    real SCIDOCS folder, ``evaluation.scidocs_dir``, the mag/ slot holds SCIDOCS's own MAG fields)."""
    if scidocs_dir:
        return "MAG fields of study (SCIDOCS)"
    info_path = RunPaths.of(run_dir).benchmark_dir / BENCHMARK_FILE
    if not info_path.exists():
        return "class labels"
    info = read_json(info_path)
    field = ((info.get("counts") or {}).get("mag") or {}).get("labels", {}).get("field", "venue")
    if field == "venue":
        corpus = info.get("corpus")
        return {"hepth": "journals", "synthetic": "topics"}.get(corpus, "venues")
    return {"fields_of_study": "fields of study", "labels": "labels"}.get(field, f"{field!r} labels")
