"""The task registry (``specter_utils.tasks``) is the one list of SCIDOCS tasks: every reader derives from it."""

from __future__ import annotations

import ast
from pathlib import Path

import specter_utils
from specter_utils.data import scidocs
from specter_utils.evaluation import deltas, suite
from specter_utils.presentation import blocks, figure_blocks, figures, interpret, readme, report_folder, tables
from specter_utils.tasks import (
    BY_KEY,
    BY_NAME,
    CLASSIFICATION,
    PAPER_AVERAGE,
    PAPER_MODELS,
    RANKING,
    RANKING_CITATION_FIRST,
    RECOMMENDATION,
    TASKS,
    tasks_of,
)

PACKAGE = Path(specter_utils.__file__).parent


def test_registry_describes_every_task_once():
    assert [t.name for t in TASKS] == [
        *("mag", "mesh", "coview", "coread", "cite", "cocite", "recomm"),  # the paper's, in its Table 1 order
        *("cite-matched", "cocite-matched"),  # ours: cite and co-cite with popularity-matched negatives
    ]
    assert len(BY_NAME) == len(BY_KEY) == len(TASKS)
    for task in TASKS:
        assert task.kind in (CLASSIFICATION, RANKING, RECOMMENDATION)
        assert task.main_score in task.metrics
        assert set(task.readme) <= set(task.metrics)
        assert set(task.paper) == set(PAPER_MODELS)
        assert all(len(values) == len(task.metrics) for values in task.paper.values())
    assert set(PAPER_AVERAGE) == set(PAPER_MODELS)
    assert [t.name for t in RANKING_CITATION_FIRST] == [
        *("cite", "cocite", "cite-matched", "cocite-matched", "coview", "coread")
    ]


def test_data_layout_comes_from_the_registry():
    assert scidocs.CLASSIFICATION_TASKS == tasks_of(CLASSIFICATION)
    assert scidocs.RANKING_TASKS == tasks_of(RANKING)
    assert scidocs.TASK_METADATA == {t.name: t.metadata for t in TASKS}
    paths = scidocs.task_paths("root")
    for task in TASKS:
        for split in task.splits:
            assert paths[f"{task.name}/{split}"] == Path("root", task.name, f"{split}{task.suffix}")


def test_evaluation_suite_comes_from_the_registry():
    assert suite.ALL_TASKS == tuple(t.name for t in TASKS)
    assert suite.RESULT_KEYS == {t.name: t.key for t in TASKS}
    assert suite.METRIC_KEYS == {t.key: t.metrics for t in TASKS}
    assert {t for group in suite.EMBEDDING_GROUPS.values() for t in group} == set(BY_NAME)
    for task in TASKS:
        assert suite.task_name(task.key) == suite.task_name(task.name) == task.name
        assert task.name in suite.EMBEDDING_GROUPS[suite.group_of(task.name)]


def test_tables_and_readme_come_from_the_registry():
    assert tables.TABLE1_COLUMNS == tuple(c for t in TASKS for c in t.columns)
    assert tables.HEADERS == tuple(h for t in TASKS for h in t.headers)
    for model, row in tables.PAPER_TABLE1.items():
        assert row == (*(v for t in TASKS for v in t.paper[model]), PAPER_AVERAGE[model])
    assert {key for keys in tables.TABLE2_GROUPS.values() for key in keys} == {t.key for t in TASKS if t.in_paper}
    assert [h for h, _ in blocks.TABLE1_SHOWN] == [h for h in tables.HEADERS if h in dict(blocks.TABLE1_SHOWN)]
    assert set(blocks.ALWAYS_SHOWN) <= {h for h, _ in blocks.TABLE1_SHOWN}
    assert report_folder.TASK_SLOTS == {t.key: t.name for t in RANKING_CITATION_FIRST}
    assert set(interpret.CLASSIFICATION_HEADERS) == {h for t in TASKS if t.kind == CLASSIFICATION for h in t.headers}


def test_no_second_hand_written_task_list():
    """Outside the registry, the modules that read tasks name none that only a task list would name."""
    only_tasks = {name for t in TASKS for name in (t.name, t.key, *t.headers)} - {"mag", "cite", "recomm"}
    modules = [scidocs, suite, deltas, tables, readme, report_folder, blocks, figure_blocks, interpret, figures]
    modules += [PACKAGE / "evaluation" / name for name in ("ranking.py", "recomm.py", "paired.py", "beir.py")]
    for module in modules:
        path = Path(module.__file__) if hasattr(module, "__file__") else module
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node) is not None
        }
        named = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in only_tasks and id(node) not in docstrings
        ]
        assert not named, f"{path.name} names tasks {named}: derive them from specter_utils.tasks"
