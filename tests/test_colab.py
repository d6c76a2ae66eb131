"""Colab: the notebooks' first cell installs the project's wheel from /content (and says what to upload when there is
none), ``bootstrap()`` adds only the requirements Colab lacks, and notebooks 01-04 run under a simulated Colab from
the wheel installed in a fresh environment."""

from __future__ import annotations

import json
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
def test_first_cell_says_what_to_upload_when_there_is_no_wheel(name, fake_colab, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTER_UTILS_WHEEL", str(tmp_path / "absent" / "specter_utils-*.whl"))
    with pytest.raises(RuntimeError, match="upload specter_utils-<version>-py3-none-any.whl") as caught:
        exec(compile(_first_cell(name), name, "exec"), {})
    assert "SPECTER_UTILS_WHEEL" in str(caught.value)


def test_bootstrap_installs_only_what_is_missing(fake_colab, monkeypatch):
    calls = []
    monkeypatch.setattr(colab.subprocess, "run", lambda args, check: calls.append(args))
    requires = ["numpy==2.4.6", "nothing-installed-by-this-name==1.0", 'faiss-cpu==1.15.1; extra == "search"']
    requires.append('ray[data]==2.60.0; extra == "scale"')
    monkeypatch.setattr(colab.metadata, "requires", lambda name: requires)
    found = {"numpy": "1.26.4", "faiss-cpu": "1.7.0"}  # Colab's own versions, whatever they are

    def version(name):
        if name not in found:
            raise colab.metadata.PackageNotFoundError(name)
        return found[name]

    monkeypatch.setattr(colab.metadata, "version", version)
    assert colab.bootstrap() == ["nothing-installed-by-this-name==1.0"]  # not numpy, not an extra outside search
    assert calls == [[sys.executable, "-m", "pip", "install", "--quiet", "nothing-installed-by-this-name==1.0"]]
    found["nothing-installed-by-this-name"] = "1.0"
    assert colab.bootstrap() == [] and len(calls) == 1  # nothing missing: pip is not called


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
def test_notebooks_01_to_04_run_under_a_simulated_colab_from_the_wheel(
    installed_wheel, fresh_env, tmp_path, random_tiny_model
):
    """The wheel installed in a fresh environment stands for Colab's; the kernel has a fake ``google.colab`` and a
    recording ``pip``; notebooks 01-04 of the smoke preset run from an empty /content, from the wheel's own copies.

    What is checked is the install and the paths, not a score (tests/test_notebooks.py scores the smoke run): the
    tiny random model is trained and embedded."""
    python, wheel = installed_wheel
    log = tmp_path / "pip.log"
    site = _fake_colab_site(tmp_path / "site", log)
    imported = tmp_path / "imported.txt"  # where each kernel found the package
    (site / "sitecustomize.py").write_text(
        "import atexit, sys\nimport google.colab  # noqa: F401\n"
        f"atexit.register(lambda: open({str(imported)!r}, 'a').write("
        "getattr(sys.modules.get('specter_utils'), '__file__', 'none') + '\\n'))\n"
    )
    content = tmp_path / "content"
    content.mkdir()
    env = {
        **fresh_env,
        "PYTHONPATH": str(site),
        "SPECTER_UTILS_WHEEL": str(wheel),
    }
    shipped = Path(
        subprocess.run(
            [python, "-c", "from specter_utils.paths import NOTEBOOKS_DIR; print(NOTEBOOKS_DIR)"],
            env=env,
            cwd=content,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    assert shipped.parent.name == "package_data" and REPO_ROOT not in shipped.parents
    overrides = {"training.base_model": str(random_tiny_model)}
    parameters = json.dumps({"run_dir": "results/colab", "preset": "smoke", "overrides": overrides})
    # one papermill process runs the four in turn, each in a kernel of its own, as a Colab user runs them
    run = (
        "import json, sys, papermill as pm\n"
        f"for name in {list(FIRST_FOUR)!r}:\n"
        f"    pm.execute_notebook(f'{shipped}/{{name}}.ipynb', f'{tmp_path}/{{name}}.ipynb', "
        f"parameters=json.loads({parameters!r}), kernel_name='python3', cwd={str(content)!r}, progress_bar=False)"
    )
    subprocess.run([python, "-c", run], env=env, cwd=content, check=True)
    installs = [json.loads(line) for line in log.read_text().splitlines()]
    assert installs and all(args == ["install", "--quiet", "--no-deps", str(wheel)] for args in installs)
    assert (content / "results" / "colab" / "04_embed_papers" / "metrics.json").exists()  # where Colab works
    kernels = [line for line in imported.read_text().splitlines() if line != "none"]
    assert kernels and all(REPO_ROOT not in Path(path).parents for path in kernels)  # the wheel, not the checkout
