"""Colab: the notebooks' first cell says what to set when the repository is missing, ``bootstrap()`` installs what
the notebooks import, and notebooks 01-04 run under a simulated Colab on a local clone of the repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from specter_utils import colab
from specter_utils.paths import REPO_ROOT

NOTEBOOKS = REPO_ROOT / "notebooks"
FIRST_FOUR = ("01_prepare_data", "02_mine_triplets", "03_train_specter", "04_embed_papers")


@pytest.fixture
def fake_colab(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))


def _first_cell(name: str) -> str:
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells[1].source


def test_bootstrap_does_nothing_outside_colab(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert colab.bootstrap() is None


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")))
def test_first_cell_names_what_to_set_when_the_repository_is_missing(name, fake_colab, monkeypatch, tmp_path):
    monkeypatch.delenv("SPECTER_UTILS_GIT_URL", raising=False)
    monkeypatch.setenv("SPECTER_UTILS_DIR", str(tmp_path / "absent"))
    with pytest.raises(RuntimeError, match="SPECTER_UTILS_GIT_URL") as caught:
        exec(compile(_first_cell(name), name, "exec"), {})
    assert "upload" in str(caught.value) and str(tmp_path / "absent") in str(caught.value)


def test_bootstrap_without_a_repository_names_what_to_set(fake_colab, tmp_path):
    with pytest.raises(RuntimeError, match="SPECTER_UTILS_GIT_URL"):
        colab.bootstrap(str(tmp_path))


def test_bootstrap_installs_the_search_extra_once(fake_colab, monkeypatch, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    calls = []
    monkeypatch.setattr(colab.subprocess, "run", lambda args, check: calls.append(args))
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert colab.bootstrap(str(tmp_path)) == tmp_path
    assert calls[0][-2:] == ["--editable", f"{tmp_path}[search]"] and Path.cwd() == tmp_path
    assert sys.path[0] == str(tmp_path)
    colab.bootstrap(str(tmp_path))
    assert len(calls) == 1  # the marker: a later notebook reuses the install


def _fake_colab_site(folder: Path, log: Path) -> Path:
    """A folder for PYTHONPATH: ``google.colab`` importable and imported at start-up (sitecustomize), and a ``pip``
    that records its arguments instead of installing (no network; the environment stays as it is)."""
    (folder / "google" / "colab").mkdir(parents=True)  # no google/__init__.py: the namespace stays shared
    (folder / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s module."""\n')
    (folder / "sitecustomize.py").write_text("import google.colab  # noqa: F401\n")
    (folder / "pip").mkdir()
    (folder / "pip" / "__init__.py").write_text("")
    (folder / "pip" / "__main__.py").write_text(
        f"import json, sys\nwith open({str(log)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    return folder


@pytest.mark.slow
@pytest.mark.notebooks
def test_notebooks_01_to_04_run_under_a_simulated_colab(tmp_path, random_tiny_model):
    """A clone of the repository (its last commit) stands for Colab's /content/specter-utils; the kernel has a
    fake ``google.colab`` and a recording ``pip``; notebooks 01-04 of the smoke preset run from another folder.

    What is checked is the bootstrap and the paths, not a score (tests/test_notebooks.py scores the smoke run):
    the tiny random model is trained and embedded."""
    import papermill as pm

    clone = tmp_path / "specter-utils"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True)
    log = tmp_path / "pip.log"
    site = _fake_colab_site(tmp_path / "site", log)
    env = {
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "SPECTER_UTILS_DIR": str(clone),
    }
    overrides = {"training.base_model": str(random_tiny_model)}
    elsewhere = tmp_path / "content"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    old = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        for name in FIRST_FOUR:
            pm.execute_notebook(
                str(clone / "notebooks" / f"{name}.ipynb"),
                str(tmp_path / "out" / f"{name}.ipynb"),
                parameters={"run_dir": "results/colab", "preset": "smoke", "overrides": overrides},
                kernel_name="python3",
                cwd=str(elsewhere),
                progress_bar=False,
            )
    finally:
        for key, value in old.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    installs = [json.loads(line) for line in log.read_text().splitlines()]
    assert installs == [["install", "--quiet", "--editable", f"{clone}[search]"]]  # once, with the search extra
    assert (clone / "results" / "colab" / "04_embed_papers" / "metrics.json").exists()
