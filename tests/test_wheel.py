"""The wheel carries the notebooks and presets, and a run started outside the checkout writes where it starts."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from specter_utils.paths import REPO_ROOT, work_root


def test_runs_write_below_the_folder_they_start_in(tmp_path):
    assert work_root(tmp_path) == tmp_path.resolve()  # outside the checkout: where the command starts
    assert work_root(REPO_ROOT / "notebooks") == REPO_ROOT  # inside it: the checkout, as before


def test_the_wheel_carries_every_notebook_and_preset(installed_wheel):
    _, wheel = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, pattern in (("notebooks", "*.ipynb"), ("params", "*.yaml")):
        for file in (REPO_ROOT / folder).glob(pattern):
            assert f"specter_utils/package_data/{folder}/{file.name}" in names, file.name
    assert "specter_utils/data/bundled/citeseer/citeseer.cites.gz" in names  # the demo's corpus


@pytest.mark.slow
@pytest.mark.notebooks
def test_a_run_from_the_wheel_in_an_empty_folder_writes_there(installed_wheel, fresh_env, tmp_path):
    python, _ = installed_wheel
    empty = tmp_path / "empty"
    empty.mkdir()
    where = subprocess.run(
        [python, "-c", "import specter_utils; print(specter_utils.__file__)"],
        cwd=empty,
        check=True,
        capture_output=True,
        text=True,
        env=fresh_env,
    ).stdout.strip()
    assert REPO_ROOT not in Path(where).parents  # the installed wheel, not this checkout
    command = [python, "-m", "specter_utils", "run", "--preset", "smoke", "--notebooks", "01", "--quiet"]
    subprocess.run(command, cwd=empty, check=True, capture_output=True, text=True, env=fresh_env)
    run = empty / "results" / "smoke"
    assert json.loads((run / "01_prepare_data" / "metrics.json").read_text())
    assert json.loads((run / "pipeline.json").read_text())["notebooks"]["01_prepare_data"]["seconds"] > 0
