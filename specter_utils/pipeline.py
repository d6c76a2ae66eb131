"""The one-command pipeline: run the numbered notebooks in order with papermill.

``run_pipeline("demo")`` executes ``notebooks/01_prepare_data.ipynb`` ... ``08_classification_heads``,
each with the preset's parameters from ``params/<notebook>/<preset>.yaml`` plus the run's own
(``run_dir``, ``figures_dir``; ``data_dir`` for the first), and writes every executed copy to
``results/<run>/<notebook>/<notebook>.ipynb`` beside that notebook's ``metrics.json``. It stops at
the first failing cell and says which cell failed and why. Where each notebook's artefacts go is
``runs.RunPaths``; the steps the notebooks call are in ``steps``.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specter_utils.io import write_json
from specter_utils.paths import FIGURES_DIR, NOTEBOOKS_DIR, PARAMS_DIR, REPO_ROOT, RESULTS_DIR
from specter_utils.runs import METRICS_FILE, RESULTS_TABLE, resolve

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
