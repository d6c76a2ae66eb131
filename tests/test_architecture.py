"""The package's structure: one front door per stage, one home per file name, studies imported as a package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from specter_utils import layout
from specter_utils.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "specter_utils"
# What a command may not reach past the workflow: the packages that hold a stage's logic
BEHIND_THE_WORKFLOW = ("data", "triplets", "training", "embedding", "evaluation", "benchmark", "search", "heads")
BEHIND_THE_WORKFLOW += ("analysis",)


def imported_modules(path: Path) -> set[str]:
    """Every ``specter_utils...`` module a file imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.startswith("specter_utils")}


@pytest.mark.parametrize("path", sorted((PACKAGE / "commands").glob("*.py")), ids=lambda p: p.name)
def test_commands_reach_every_stage_through_the_workflow(path: Path) -> None:
    reached = {
        name for name in imported_modules(path) if name.split(".")[1:2] and name.split(".")[1] in BEHIND_THE_WORKFLOW
    }
    assert not reached, f"{path.name} imports {sorted(reached)}: call the stage in specter_utils.workflow instead"


def test_the_training_config_builder_is_gone() -> None:
    """One precedence engine: a TrainConfig is resolved by spec's layers, never by a second builder."""
    assert not (PACKAGE / "training" / "config.py").exists()
    assert not any("make_config" in p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize(
    "name", [layout.BENCHMARK_FILE, layout.METADATA_FILE, layout.METRICS_FILE, layout.LOG_HISTORY_FILE]
)
def test_each_run_folder_file_name_is_written_once(name: str) -> None:
    literal = re.compile(rf"""["']{re.escape(name)}["']""")
    places = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line)
    ]
    assert places == [f"specter_utils/layout.py:{_line_of(name)}"], places


def _line_of(name: str) -> int:
    lines = (PACKAGE / "layout.py").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if f'"{name}"' in line)


def test_no_test_loads_an_experiments_script_by_path() -> None:
    """A study's logic is package code, tested by import; experiments/ keeps its command line only (a test may run
    a script as a subprocess, never import it from its path)."""
    offenders = [
        p.name
        for p in (REPO_ROOT / "tests").glob("*.py")
        if p.name != Path(__file__).name and "importlib.util" in (text := p.read_text()) and "experiments" in text
    ]
    assert offenders == []


MAX_PARAMETERS = 8  # more, and a group of settings should travel as the object that holds them


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of a function, ``self``/``cls`` not counted, ``*args`` and ``**kwargs`` one each."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    own = 1 if names[:1] in (["self"], ["cls"]) else 0
    return len(names) - own + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)


def test_no_function_takes_more_than_eight_parameters() -> None:
    over = [
        f"{path.relative_to(PACKAGE)}:{node.name} ({count})"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (count := parameter_count(node)) > MAX_PARAMETERS
    ]
    assert not over, f"functions over {MAX_PARAMETERS} parameters (pass their settings object): {', '.join(over)}"


def test_the_parameter_count_sees_star_arguments_and_skips_self() -> None:
    source = "class A:\n    def f(self, a, /, b, *args, c, **kwargs): ...\ndef g(cls, d): ..."
    counts = {n.name: parameter_count(n) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert counts == {"f": 5, "g": 1}
