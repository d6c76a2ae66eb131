"""The one-command pipeline: run the numbered notebooks in order with papermill.

``run_pipeline("demo")`` executes ``notebooks/01_prepare_data.ipynb`` ... ``08_classification_heads``,
each with the preset's parameters from ``params/<notebook>/<preset>.yaml`` plus the run's own
(``run_dir``, ``figures_dir``; ``data_dir`` for the first), and writes every executed copy to
``results/<run>/<notebook>/<notebook>.ipynb`` beside that notebook's ``metrics.json``. It stops at
the first failing cell and says which cell failed and why.

``RunPaths`` is the one place that says where each notebook leaves its artefacts for the next. The
steps that several notebooks share (embedding the benchmark's papers, the baselines, evaluating a
folder of embedding files, one ablation variant end to end, the results tables with the paper's
Table 1 and Table 2 numbers) live here too, so that the notebooks hold no logic.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.io import read_json, write_json
from specter_utils.paths import FIGURES_DIR, NOTEBOOKS_DIR, PARAMS_DIR, REPO_ROOT, RESULTS_DIR

NOTEBOOKS = (
    "01_prepare_data",
    "02_mine_triplets",
    "03_train_specter",
    "04_embed_papers",
    "05_scidocs_eval",
    "06_embedding_analysis",
    "07_ablations",
    "08_classification_heads",
)
PRESETS = ("smoke", "demo", "hepth", "scidocs")
METRICS_FILE = "metrics.json"
RESULTS_TABLE = "results.md"  # written by 05_scidocs_eval beside its metrics.json


def resolve(path: str | Path) -> Path:
    """An absolute path; relative paths are relative to the repository root (not the notebook's folder)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else REPO_ROOT / path


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


def load_corpus_for_run(corpus: str, data_dir: str = "", n_papers: int = 600, n_topics: int = 6, seed: int = 0):
    """The corpus of a run: generated (``synthetic``) or read from ``data_dir`` (default: the shared data)."""
    from specter_utils.data.load import load_corpus

    if corpus == "synthetic":
        return load_corpus("synthetic", n_papers=n_papers, n_topics=n_topics, seed=seed)
    return load_corpus(corpus, resolve(data_dir) if data_dir else None)


# ---------------------------------------------------------------- parameters
def params_file(notebook: str, preset: str, params_dir: Path = PARAMS_DIR) -> Path:
    return params_dir / notebook / f"{preset}.yaml"


def load_params(notebook: str, preset: str, params_dir: Path = PARAMS_DIR) -> dict[str, Any]:
    """The preset's parameters for one notebook (``params/<notebook>/<preset>.yaml``)."""
    import yaml

    path = params_file(notebook, preset, params_dir)
    if not path.exists():
        available = sorted(p.stem for p in (params_dir / notebook).glob("*.yaml"))
        raise FileNotFoundError(f"no parameters {path} (presets of {notebook}: {', '.join(available) or 'none'})")
    values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(values, dict):
        raise ValueError(f"{path}: expected a mapping of parameter names to values")
    return values


def notebook_parameters(notebook_path: Path) -> dict[str, Any]:
    """Names and defaults declared in a notebook's ``parameters`` cell (papermill's own parser)."""
    import papermill as pm

    return {name: spec["default"] for name, spec in pm.inspect_notebook(str(notebook_path)).items()}


# ---------------------------------------------------------------- execution
class PipelineError(RuntimeError):
    """A notebook failed: which one, which cell, the cell's source and the error."""

    def __init__(self, notebook: str, output: Path, message: str) -> None:
        self.notebook = notebook
        self.output = output
        super().__init__(message)


def check_kernel(name: str = "python3") -> str:
    """Make sure the Jupyter kernel exists; return the interpreter it runs.

    A spec whose ``argv[0]`` is ``python`` runs the current interpreter (jupyter_client substitutes
    ``sys.executable``); ipykernel provides ``python3`` even without an installed spec.
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        raise RuntimeError(
            f"no Jupyter kernel {name!r}; install one for this interpreter with "
            f"'{sys.executable} -m ipykernel install --user --name {name}'"
        ) from None
    exe = spec.argv[0] if spec.argv else ""
    return sys.executable if exe in {"python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"} else exe


def _cell_excerpt(source: str, max_lines: int = 15) -> str:
    lines = source.splitlines()
    shown = lines[:max_lines] + ([f"... ({len(lines) - max_lines} more lines)"] if len(lines) > max_lines else [])
    return "\n".join(f"    {line}" for line in shown)


def describe_failure(notebook: str, output: Path, exc: Exception) -> str:
    """A readable account of a papermill failure: notebook, cell number, cell source, error."""
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        tail = [line for line in (exc.traceback or []) if line.strip()][-6:]
        ansi = re.compile(r"\x1b\[[0-9;]*m")
        return (
            f"notebook {notebook} failed in cell {exc.cell_index} (execution count {exc.exec_count}):\n"
            f"{_cell_excerpt(exc.source)}\n"
            f"{exc.ename}: {exc.evalue}\n"
            + "\n".join(ansi.sub("", line) for line in tail)
            + f"\nexecuted copy with the error: {output}"
        )
    return f"notebook {notebook} failed: {type(exc).__name__}: {exc}\nexecuted copy (partial): {output}"


def execute_notebook(
    notebook: str,
    parameters: dict[str, Any],
    output: Path,
    kernel: str = "python3",
    notebooks_dir: Path = NOTEBOOKS_DIR,
    log_output: bool = False,
    progress_bar: bool = True,
) -> Path:
    """Run one notebook with papermill (working directory: the repository root)."""
    import papermill as pm

    source = notebooks_dir / f"{notebook}.ipynb"
    declared = notebook_parameters(source)
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ValueError(f"{notebook}: parameters {unknown} are not declared in its parameters cell")
    output.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(
        str(source),
        str(output),
        parameters=parameters,
        kernel_name=kernel,
        cwd=str(REPO_ROOT),
        log_output=log_output,
        progress_bar=progress_bar,
    )
    return output


@dataclass
class PipelineResult:
    """What a run produced: per notebook its executed copy, metrics and wall time."""

    preset: str
    run_dir: Path
    figures_dir: Path
    notebooks: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def results_table(self) -> Path:
        return self.run_dir / "05_scidocs_eval" / RESULTS_TABLE

    def summary(self) -> str:
        lines = [f"run {self.run_dir.name} (preset {self.preset}): {len(self.notebooks)} notebook(s)"]
        for name, info in self.notebooks.items():
            lines.append(f"  {name}: {info['seconds']:.0f} s -> {info['output']}")
        total = sum(info["seconds"] for info in self.notebooks.values())
        lines.append(f"  total: {total / 60:.1f} min")
        if self.results_table.exists():
            lines += [
                "",
                f"results table: {self.results_table}",
                self.results_table.read_text(encoding="utf-8").rstrip(),
            ]
        figures = sorted(self.figures_dir.glob(f"*{self.run_dir.name}*.png")) if self.figures_dir.is_dir() else []
        if figures:
            lines += ["", f"figures ({self.figures_dir}, PNG + PDF):", *(f"  {p.name}" for p in figures)]
        lines.append(f"metrics: {self.run_dir}/<notebook>/{METRICS_FILE}")
        return "\n".join(lines)


def run_parameters(
    notebook: str,
    preset: str,
    run_dir: Path,
    figures_dir: Path,
    data_dir: str | None = None,
    params_dir: Path = PARAMS_DIR,
    declared: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters one notebook gets: the preset's, then the run's own (which always win).

    ``run_dir`` goes to every notebook; ``figures_dir`` to those that declare it; ``data_dir`` to the first.
    """
    parameters = load_params(notebook, preset, params_dir)
    parameters["run_dir"] = str(run_dir)
    if declared is None or "figures_dir" in declared:
        parameters["figures_dir"] = str(figures_dir)
    if data_dir and notebook == NOTEBOOKS[0]:
        parameters["data_dir"] = str(resolve(data_dir))
        if parameters.get("corpus", "synthetic") == "synthetic":
            parameters["corpus"] = "hepth"  # a data dir replaces the generated corpus with the real one
    return parameters


def run_pipeline(
    preset: str = "demo",
    run: str | None = None,
    data_dir: str | None = None,
    notebooks: list[str] | tuple[str, ...] | None = None,
    results_root: str | Path = RESULTS_DIR,
    figures_dir: str | Path = FIGURES_DIR,
    kernel: str = "python3",
    log_output: bool = False,
    progress_bar: bool = True,
    params_dir: Path = PARAMS_DIR,
    notebooks_dir: Path = NOTEBOOKS_DIR,
    echo: Any = print,
) -> PipelineResult:
    """Execute the notebooks in order; raise ``PipelineError`` at the first failure.

    Args:
        run: name of ``results/<run>``; default: the preset's name.
        data_dir: real data for notebook 01 (a hep-th folder turns the demo's synthetic corpus into hep-th).
        notebooks: a subset (names or ``01``-style prefixes), still run in the canonical order.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    selected = list(NOTEBOOKS)
    if notebooks:
        wanted = [str(n) for n in notebooks]
        selected = [nb for nb in NOTEBOOKS if any(nb == w or nb.startswith(f"{w}_") for w in wanted)]
        if not selected:
            raise ValueError(f"no notebook matches {wanted}; notebooks: {', '.join(NOTEBOOKS)}")
    check_kernel(kernel)
    run_dir = resolve(results_root) / (run or preset)
    figures = resolve(figures_dir)
    result = PipelineResult(preset=preset, run_dir=run_dir, figures_dir=figures)
    for notebook in selected:
        declared = notebook_parameters(notebooks_dir / f"{notebook}.ipynb")
        parameters = run_parameters(notebook, preset, run_dir, figures, data_dir, params_dir, declared)
        output = run_dir / notebook / f"{notebook}.ipynb"
        echo(f"[{notebook}] running (preset {preset}) -> {output}")
        started = time.time()
        try:
            execute_notebook(notebook, parameters, output, kernel, notebooks_dir, log_output, progress_bar)
        except Exception as exc:  # papermill raises its own error for a failing cell, others for setup problems
            raise PipelineError(notebook, output, describe_failure(notebook, output, exc)) from exc
        seconds = time.time() - started
        metrics_path = run_dir / notebook / METRICS_FILE
        result.notebooks[notebook] = {
            "output": str(output),
            "seconds": round(seconds, 1),
            "metrics": str(metrics_path) if metrics_path.exists() else None,
        }
        echo(f"[{notebook}] done in {seconds:.0f} s")
    write_json(run_dir / "pipeline.json", {"preset": preset, "data_dir": data_dir, "notebooks": result.notebooks})
    return result


# ---------------------------------------------------------------- steps shared by notebooks 04, 05 and 07
def papers_to_embed(scidocs_dir: str | Path, split: str = "all", tasks: list[str] | None = None) -> dict[str, Any]:
    """Papers of a SCIDOCS-layout folder to embed (``{paper_id: Paper}``).

    ``split="all"`` takes every paper of the ``paper_metadata_*.json`` files, so either split can be
    scored later; ``"test"`` or ``"val"`` only those the evaluation of that split reads for ``tasks``
    (default: every task present), see :func:`data.scidocs.papers_needed`.
    """
    from specter_utils.data.scidocs import METADATA_FILES, papers_needed, read_scidocs_metadata
    from specter_utils.embedding.inputs import read_metadata_files
    from specter_utils.evaluation.suite import task_name

    if split not in ("all", "test", "val"):
        raise ValueError(f"split must be 'all', 'test' or 'val', got {split!r}")
    root = resolve(scidocs_dir)
    files = [root / name for name in METADATA_FILES.values() if (root / name).exists()]
    if not files:
        raise FileNotFoundError(f"no paper_metadata_*.json under {root}")
    papers = read_metadata_files(files)
    if split == "all":
        return papers
    wanted, whole_groups = papers_needed(root, split, [task_name(t) for t in tasks] if tasks else None)
    for group in whole_groups:
        wanted.update(read_scidocs_metadata(root / METADATA_FILES[group]))
    return {pid: paper for pid, paper in papers.items() if pid in wanted}


def embed_model(
    model: str | Path,
    papers: dict[str, Any],
    out: str | Path,
    max_seq_length: int = 512,
    batch_size: int = 32,
    pooling: str | None = None,
) -> dict[str, Any]:
    """Embed ``papers`` with ``model`` into ``out`` (SCIDOCS jsonl + sidecars); return what was done."""
    from specter_utils.embedding.embed import embed_to_file

    started = time.time()
    result = embed_to_file(
        str(model), papers, out, batch_size=batch_size, max_length=max_seq_length, pooling=pooling, progress=False
    )
    keep = ("model", "model_path", "pooling", "max_length", "dtype", "device")
    return {
        "file": str(out),
        "count": len(result),
        "dim": result.dim,
        **{k: result.info[k] for k in keep if k in result.info},
        "seconds": round(time.time() - started, 1),
    }


def embed_baselines(
    names: list[str],
    papers: dict[str, Any],
    out_dir: str | Path,
    scidocs_dir: str | Path,
    train_data_dir: str | Path | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Write ``out_dir/<baseline>.jsonl`` for each of ``names`` (``evaluation.baselines``); return what was written.

    The citation graph for ``sgc`` is the one in the evaluation metadata (``references``/``cited_by``), minus
    every edge of the held-out ranking queries; TF-IDF and SIF are fitted on the training papers and the
    evaluation papers together.
    """
    from specter_utils.data.graph import CitationGraph, edges_from_paper_lists
    from specter_utils.data.specter_format import read_metadata
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.evaluation.baselines import compute_baselines
    from specter_utils.triplets.splits import benchmark_ids

    if not names:
        return {}
    held_out = {q for task in benchmark_ids(resolve(scidocs_dir)).values() for q in task.get("queries", ())}
    fit = dict(papers)
    metadata = Path(train_data_dir) / "metadata.json" if train_data_dir else None
    if metadata is not None and metadata.exists():
        fit = {**read_metadata(metadata), **fit}
    started = time.time()
    files = compute_baselines(
        papers,
        CitationGraph.from_edges(edges_from_paper_lists(papers)),
        held_out,
        names,
        out_dir,
        seed=seed,
        fit_papers=fit,
    )
    seconds = round(time.time() - started, 1)
    written = {}
    for name, path in files.items():
        result = read_embeddings(Path(path).with_suffix(".npy"))
        written[name] = {"file": str(path), "count": len(result), "dim": result.dim, **result.info}
    for info in written.values():
        info["seconds_all_baselines"] = seconds
    return written


# Each variant of notebook 07: the options it changes in mining (SamplerConfig) and training (TrainConfig).
ABLATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "specter": {"mine": {}, "train": {}},
    "no_hard_negatives": {"mine": {"no_hard_negatives": True}, "train": {}},
    "mean_pooling": {"mine": {}, "train": {"pooling": "mean"}},
    "spectroid": {"mine": {"spectroid": True}, "train": {}},
}
# SPEC.md section 5, Table 2: averages over CLS / USR / CITE / REC / all.
PAPER_TABLE2 = {
    "SPECTER": (84.4, 88.2, 91.5, 37.2, 80.2),
    "- abstract": (82.2, 72.2, 73.6, 34.5, 68.1),
    "+ venue": (84.5, 88.0, 91.2, 36.7, 79.9),
    "+ author": (82.7, 72.3, 71.0, 34.6, 67.3),
    "no hard negatives": (82.4, 85.8, 89.8, 36.8, 78.4),
    "start with BERT-Large": (81.7, 85.9, 87.8, 36.1, 77.5),
}


def run_ablation(
    paths: RunPaths,
    name: str,
    base_model: str = "minilm",
    max_seq_length: int = 128,
    max_train_triplets: int = 400,
    epochs: float = 1.0,
    per_device_batch_size: int = 8,
    train_preset: str = "cpu",
    tasks: list[str] | None = None,
    scidocs_dir: str = "",
    seed: int = 0,
) -> dict[str, Any]:
    """One variant of notebook 07: mine, train, embed and evaluate on the test split with the variant's changes.

    The changes of each variant are in ``ABLATIONS``; only the papers the test evaluation of ``tasks`` reads
    are embedded.
    """
    from specter_utils.io import read_json
    from specter_utils.training.config import make_config
    from specter_utils.training.train import train_specter
    from specter_utils.triplets.sampler import SamplerConfig, mine_dir

    if name not in ABLATIONS:
        raise ValueError(f"unknown ablation {name!r}; known: {', '.join(ABLATIONS)}")
    variant, out = ABLATIONS[name], paths.ablation_dir(name)
    started = time.time()
    mining = mine_dir(paths.train_data_dir, out / "triplets", SamplerConfig(seed=seed, **variant["mine"]))
    config = make_config(
        train_preset,
        triplets=str(out / "triplets"),
        metadata=str(paths.train_data_dir / "metadata.json"),
        out=str(out / "train"),
        base_model=base_model,
        max_seq_length=max_seq_length,
        max_train_triplets=max_train_triplets,
        epochs=epochs,
        per_device_batch_size=per_device_batch_size,
        seed=seed,
        overwrite=True,
        progress_bar=False,
        **variant["train"],
    )
    model_dir = train_specter(config)
    scidocs = paths.scidocs_dir(scidocs_dir)
    embedding_file = out / "embeddings.jsonl"
    papers = papers_to_embed(scidocs, split="test", tasks=tasks)  # only what the test evaluation below reads
    embedded = embed_model(model_dir, papers, embedding_file, max_seq_length)
    results = evaluate_file(scidocs, embedding_file, tasks=tasks)
    return {
        "changes": variant,
        "triplets": mining["train"]["triplets"],
        "training": read_json(model_dir / "specter_training.json")["results"],
        "embedding": embedded,
        "results": results,
        "seconds": round(time.time() - started, 1),
    }


# ---------------------------------------------------------------- evaluation and tables (notebooks 05 and 07)
def metric_values(results: dict[str, Any]) -> dict[tuple[str, str], float]:
    """``{(task, metric): value}`` for the Table 1 metrics present in one model's SCIDOCS results."""
    from specter_utils.evaluation.table import TABLE1_COLUMNS, metric_row

    row = metric_row(results)
    return {(task, metric): row[header] for task, metric, header in TABLE1_COLUMNS if header in row}


def evaluate_file(
    scidocs_dir: str | Path, embedding_file: str | Path, tasks: list[str] | None = None, split: str = "test"
) -> dict[str, Any]:
    """SCIDOCS results (x 100) of one embeddings file on a SCIDOCS-layout folder."""
    from specter_utils.embedding.io import read_embeddings
    from specter_utils.evaluation.suite import evaluate

    embedding_file = Path(embedding_file)
    npy = embedding_file.with_suffix(".npy")
    embeddings = read_embeddings(npy if npy.exists() else embedding_file)
    return evaluate(resolve(scidocs_dir), embeddings, tasks=tasks, split=split)


def evaluate_embeddings(
    scidocs_dir: str | Path,
    embeddings_dir: str | Path,
    models: list[str] | None = None,
    tasks: list[str] | None = None,
    split: str = "test",
) -> dict[str, dict[str, Any]]:
    """Evaluate ``embeddings_dir/<model>.jsonl`` for each model (default: every file, trained and base first)."""
    embeddings_dir = Path(embeddings_dir)
    if not models:
        found = sorted(p.stem for p in embeddings_dir.glob("*.jsonl"))
        models = [m for m in ("trained", "base") if m in found] + [m for m in found if m not in ("trained", "base")]
    if not models:
        raise FileNotFoundError(f"no embeddings (*.jsonl) in {embeddings_dir}")
    return {name: evaluate_file(scidocs_dir, embeddings_dir / f"{name}.jsonl", tasks, split) for name in models}


TABLE2_GROUPS = {  # the paper's Table 2 groups of Table 1 metrics
    "CLS": ("mag", "mesh"),
    "USR": ("co-view", "co-read"),
    "CITE": ("cite", "co-cite"),
    "REC": ("recomm",),
}


def group_averages(results: dict[str, Any]) -> dict[str, float | None]:
    """CLS / USR / CITE / REC averages and ``all`` (over every metric present), as in the paper's Table 2."""
    values = metric_values(results)
    out: dict[str, float | None] = {}
    for group, tasks in TABLE2_GROUPS.items():
        got = [v for (task, _), v in values.items() if task in tasks]
        out[group] = round(sum(got) / len(got), 2) if got else None
    out["all"] = round(sum(values.values()) / len(values), 2) if values else None
    return out


def ablation_table(variants: dict[str, dict[str, Any]]) -> str:
    """Markdown: each variant's Table 2 group averages, then the paper's Table 2 rows for reference."""
    columns = [*TABLE2_GROUPS, "all"]
    averages = {name: group_averages(v["results"]) for name, v in variants.items()}
    shown = [c for c in columns if any(a.get(c) is not None for a in averages.values())]
    lines = ["| variant | " + " | ".join(shown) + " |", "|" + "---|" * (len(shown) + 1)]
    for name, avg in averages.items():
        lines.append(f"| {name} | " + " | ".join("" if avg[c] is None else f"{avg[c]:.2f}" for c in shown) + " |")
    lines.append("| *paper, Table 2 (SCIDOCS, all 12 metrics)* |" + " |" * len(shown))
    for name, numbers in PAPER_TABLE2.items():
        paper = dict(zip(columns, numbers, strict=True))
        lines.append(f"| {name} (paper) | " + " | ".join(f"{paper[c]:.1f}" for c in shown) + " |")
    return "\n".join(lines)


def corpus_label(run_dir: str | Path) -> str:
    """The run's corpus as shown in tables and figures, e.g. ``synthetic corpus (SYNTHETIC data)`` or ``hepth``."""
    info_path = RunPaths.of(run_dir).benchmark_dir / "benchmark.json"
    if not info_path.exists():
        return "unknown corpus"
    from specter_utils.io import read_json

    info = read_json(info_path)
    name = str(info.get("corpus", "unknown corpus"))
    return f"{name} corpus (SYNTHETIC data)" if info.get("synthetic") else name


def write_results_table(results: dict[str, dict[str, Any]], out_dir: str | Path) -> str:
    """Write ``out_dir/results.md`` (our rows, then the paper's Table 1, ``evaluation.table``) and ``results.json``."""
    from specter_utils.evaluation.table import render
    from specter_utils.io import atomic_write

    _, table = render(results)
    table = f"Benchmark: {corpus_label(Path(out_dir).parent)}\n\n{table}"
    note = (
        "Rows without '(paper)': this run, every model on the same benchmark and split. '(paper)' rows: SCIDOCS "
        "Table 1, comparable only when the benchmark is the real SCIDOCS; `avg` is over the metrics this run has "
        "(the same columns in every row), `paper avg` the paper's own 12-metric average."
    )
    out_dir = Path(out_dir)
    with atomic_write(out_dir / RESULTS_TABLE) as handle:
        handle.write(f"{table}\n\n{note}\n")
    write_json(out_dir / "results.json", results)
    return table
