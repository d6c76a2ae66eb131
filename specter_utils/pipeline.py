"""The one-command pipeline: run the numbered notebooks in order with papermill.

``run_pipeline("demo")`` executes ``notebooks/01_prepare_data.ipynb`` ... ``08_classification_heads``.
Every notebook gets the same three parameters, ``run_dir``, ``preset`` and ``overrides`` (plus
``figures_dir`` where declared), and reads its slice of the run specification ``params/<preset>.yaml``
itself (``spec.load_spec``), so no two notebooks of a run can read different values of one setting.
The resolved specification is written to ``results/<run>/spec.yaml``; every executed copy goes to
``results/<run>/<notebook>/<notebook>.ipynb`` beside that notebook's ``metrics.json``. It stops at the
first failing cell and says which cell failed and why. Each executed copy keeps what a reader wants (tables,
figures, Markdown); its logs and progress bars go to ``<notebook>.log`` beside it (``executed``).
``report.write_report`` copies a finished run to ``reports/<preset>/``. Where each notebook's artefacts go is
``runs.RunPaths``; the stages the notebooks call are in ``workflow``.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specter_utils.config import DEFAULT_PRESET
from specter_utils.data.load import check_corpus_options, detect_corpus_kind, source_fits
from specter_utils.errors import DataError
from specter_utils.executed import PeakMemory, clean_executed_notebook, machine_info, source_commit
from specter_utils.io import atomic_write, read_json, write_json
from specter_utils.layout import METRICS_FILE, PIPELINE_FILE, RESULTS_TABLE
from specter_utils.paths import FIGURES_DIR, NOTEBOOKS_DIR, PARAMS_DIR, RESULTS_DIR, WORK_ROOT
from specter_utils.runs import resolve
from specter_utils.spec import load_spec

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
RUN_PARAMETERS = ("run_dir", "preset", "overrides")  # what every notebook declares; figures_dir where it draws one
SPEC_FILE = "spec.yaml"  # the resolved run specification, in the run folder


# ---------------------------------------------------------------- parameters
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
    """Make sure the Jupyter kernel exists; return the interpreter it runs (a spec whose ``argv[0]`` is ``python``
    runs the current one: jupyter_client substitutes ``sys.executable``)."""
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


@dataclass(frozen=True)
class PipelineSetup:
    """Where a run's files go and how its notebooks run: the results root (``<root>/<run>``), the figures folder,
    where the specifications and the notebooks are read, the Jupyter kernel, whether papermill echoes the notebooks'
    output and shows its progress bar, and where the progress lines go (``echo``)."""

    results_root: str | Path = RESULTS_DIR
    figures_dir: str | Path = FIGURES_DIR
    params_dir: Path = PARAMS_DIR
    notebooks_dir: Path = NOTEBOOKS_DIR
    kernel: str = "python3"
    log_output: bool = False
    progress_bar: bool = True
    echo: Any = print


def execute_notebook(notebook: str, parameters: dict[str, Any], output: Path, setup: PipelineSetup) -> Path:
    """Run one notebook with papermill (working directory: the folder runs write to, ``paths.WORK_ROOT``)."""
    import papermill as pm

    source = setup.notebooks_dir / f"{notebook}.ipynb"
    declared = notebook_parameters(source)
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ValueError(f"{notebook}: parameters {unknown} are not declared in its parameters cell")
    output.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(
        str(source),
        str(output),
        parameters=parameters,
        kernel_name=setup.kernel,
        cwd=str(WORK_ROOT),
        log_output=setup.log_output,
        progress_bar=setup.progress_bar,
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
        lines += [f"  {name}: {info['seconds']:.0f} s -> {info['output']}" for name, info in self.notebooks.items()]
        total = sum(info["seconds"] for info in self.notebooks.values())
        lines.append(f"  total: {total / 60:.1f} min")
        if self.results_table.exists():
            table = self.results_table.read_text(encoding="utf-8").rstrip()
            lines += ["", f"results table: {self.results_table}", table]
        figures = sorted(self.figures_dir.glob(f"*{self.run_dir.name}*.png")) if self.figures_dir.is_dir() else []
        if figures:
            lines += ["", f"figures ({self.figures_dir}, PNG + PDF):", *(f"  {p.name}" for p in figures)]
        lines.append(f"metrics: {self.run_dir}/<notebook>/{METRICS_FILE}")
        trained = self.run_dir / "03_train_specter" / METRICS_FILE
        verdict = (read_json(trained).get("verdict") or {}) if trained.exists() else {}
        if verdict.get("line"):
            lines += ["", f"did training help? {verdict['line']}"]
        return "\n".join(lines)


def run_overrides(
    preset: str,
    overrides: dict[str, Any] | None = None,
    data_dir: str | None = None,
    params_dir: Path = PARAMS_DIR,
    corpus: str | None = None,
) -> dict[str, Any]:
    """The run's overrides of its specification: ``overrides`` plus what ``--data-dir`` (``data.src``) and
    ``--corpus`` (else the kind detected from the data dir, or the preset's where the source has its shape) imply."""
    merged = dict(overrides or {})
    if corpus is not None:
        check_corpus_options(corpus, data_dir or None)
        merged["data.corpus"] = corpus
    if data_dir:
        merged["data.src"] = str(resolve(data_dir))
        if corpus is None:
            try:
                merged["data.corpus"] = detect_corpus_kind(merged["data.src"])
            except DataError:
                if not source_fits(load_spec(preset, merged, params_dir)["data.corpus"], merged["data.src"]):
                    raise
    return merged


def run_parameters(
    preset: str,
    run_dir: Path,
    figures_dir: Path,
    overrides: dict[str, Any] | None = None,
    declared: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters every notebook gets: the run folder, the preset and the overrides (and ``figures_dir``
    where the notebook declares it). Settings are not passed one by one: each notebook reads them from the spec."""
    parameters: dict[str, Any] = {"run_dir": str(run_dir), "preset": preset, "overrides": dict(overrides or {})}
    if declared is None or "figures_dir" in declared:
        parameters["figures_dir"] = str(figures_dir)
    return parameters


def run_pipeline(
    preset: str = DEFAULT_PRESET,
    run: str | None = None,
    data_dir: str | None = None,
    notebooks: list[str] | tuple[str, ...] | None = None,
    overrides: dict[str, Any] | None = None,
    corpus: str | None = None,
    setup: PipelineSetup = PipelineSetup(),
) -> PipelineResult:
    """Execute the notebooks in order; raise ``PipelineError`` at the first failure.

    ``preset`` is a preset of ``setup.params_dir`` or your own specification file; ``run`` names ``results/<run>``
    (default: the preset's name, a file's stem); ``data_dir`` is notebook 01's real data, its kind detected (or
    ``corpus``); ``notebooks`` a subset (names or ``01``-style prefixes), still run in the canonical order. The
    notebooks themselves always read ``params/``.
    """
    selected = list(NOTEBOOKS)
    if notebooks:
        wanted = [str(n) for n in notebooks]
        selected = [nb for nb in NOTEBOOKS if any(nb == w or nb.startswith(f"{w}_") for w in wanted)]
        if not selected:
            raise ValueError(f"no notebook matches {wanted}; notebooks: {', '.join(NOTEBOOKS)}")
    check_kernel(setup.kernel)
    params_dir, notebooks_dir, echo = setup.params_dir, setup.notebooks_dir, setup.echo
    overrides = run_overrides(preset, overrides, data_dir, params_dir, corpus)
    spec = load_spec(preset, overrides, params_dir)  # an unknown key or a wrong type fails here, before any notebook
    run_dir = resolve(setup.results_root) / (run or Path(preset).stem)
    figures = resolve(setup.figures_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with atomic_write(run_dir / SPEC_FILE) as handle:
        handle.write(f"# preset {preset}, overrides {overrides}\n{spec.to_yaml(sources=True)}")
    result = PipelineResult(preset=preset, run_dir=run_dir, figures_dir=figures)
    for notebook in selected:
        declared = notebook_parameters(notebooks_dir / f"{notebook}.ipynb")
        parameters = run_parameters(preset, run_dir, figures, overrides, declared)
        output = run_dir / notebook / f"{notebook}.ipynb"
        echo(f"[{notebook}] running (preset {preset}) -> {output}")
        started = time.time()
        try:
            with PeakMemory() as peak:  # the kernel's (and its children's) resident memory, sampled
                execute_notebook(notebook, parameters, output, setup)
        except Exception as exc:  # papermill raises its own error for a failing cell, others for setup problems
            raise PipelineError(notebook, output, describe_failure(notebook, output, exc)) from exc
        seconds = time.time() - started
        clean_executed_notebook(output)  # streams (logs, progress bars) to <notebook>.log; paths relative
        metrics_path = run_dir / notebook / METRICS_FILE
        result.notebooks[notebook] = {
            "output": str(output),
            "seconds": round(seconds, 1),
            "peak_rss_mb": peak.mb,
            "metrics": str(metrics_path) if metrics_path.exists() else None,
        }
        record_notebook(run_dir, preset, overrides, data_dir, notebook, result.notebooks[notebook])
        echo(f"[{notebook}] done in {seconds:.0f} s")
    return result


# ---------------------------------------------------------------- the run's record
def record_notebook(
    run_dir: Path, preset: str, overrides: dict[str, Any], data_dir: str | None, notebook: str, entry: dict[str, Any]
) -> None:
    """Merge one finished notebook into ``run_dir/pipeline.json`` as soon as it finishes, keeping the entries of
    the other notebooks (each with its overrides, commit and time); a record of another preset is started afresh."""
    path = run_dir / PIPELINE_FILE
    previous = read_json(path) if path.exists() else {}
    entries = dict(previous.get("notebooks", {})) if previous.get("preset") == preset else {}
    entries[notebook] = {
        **entry,
        "overrides": overrides,
        "commit": source_commit(),
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    ordered = {nb: entries[nb] for nb in NOTEBOOKS if nb in entries}
    record = {"preset": preset, "overrides": overrides, "data_dir": data_dir, "machine": machine_info()}
    write_json(path, {**record, "notebooks": ordered})
