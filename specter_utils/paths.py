"""Where things live: the notebooks and presets, the folder a run writes to, the shared real data.

Run from a checkout, the notebooks and presets are the checkout's ``notebooks/`` and ``params/``; installed from a
wheel, they are the copies the wheel carries in ``specter_utils/package_data/`` (setup.py puts them there). Results,
figures and relative paths resolve against the folder the command starts in (:data:`WORK_ROOT`), which is the
checkout only when that folder is inside it.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent  # the checkout, where the package runs from one
PACKAGE_DATA_DIR = PACKAGE_DIR / "package_data"  # a wheel's copies of notebooks/ and params/
SHIPPED_FOLDERS = ("notebooks", "params")  # what a wheel carries beside the code


def is_checkout(root: Path = REPO_ROOT) -> bool:
    """Whether ``root`` is the project's source checkout (not the site-packages a wheel was installed into)."""
    return (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() and (root / "params").is_dir()


def work_root(cwd: str | Path | None = None) -> Path:
    """The folder a run writes to: the checkout when ``cwd`` (default: the current folder) is inside it, else
    ``cwd`` itself."""
    here = Path(cwd if cwd is not None else Path.cwd()).resolve()
    inside = here == REPO_ROOT or REPO_ROOT in here.parents
    return REPO_ROOT if inside and is_checkout() else here


_SOURCE = REPO_ROOT if is_checkout() else PACKAGE_DATA_DIR
NOTEBOOKS_DIR = _SOURCE / "notebooks"
PARAMS_DIR = _SOURCE / "params"  # one run specification per preset: params/<preset>.yaml
WORK_ROOT = work_root()  # fixed when the package is first imported (a notebook's kernel starts in it too)
RESULTS_DIR = WORK_ROOT / "results"
FIGURES_DIR = WORK_ROOT / "figures"
REPORTS_DIR = WORK_ROOT / "reports"  # executed notebooks of reference runs, committed with their outputs


def presets(params_dir: str | Path = PARAMS_DIR) -> tuple[str, ...]:
    """The presets shipped in ``params_dir``: one ``<name>.yaml`` each."""
    return tuple(sorted(p.stem for p in Path(params_dir).glob("*.yaml")))


def shared_data_dir() -> Path | None:
    """The real-data folder: ``$SPECTER_SHARED_DATA`` or ``../shared/data`` beside the repo, if present."""
    env = os.environ.get("SPECTER_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates += [REPO_ROOT.parent / "shared" / "data", WORK_ROOT.parent / "shared" / "data"]
    return next((candidate.resolve() for candidate in candidates if candidate.is_dir()), None)


def hepth_dir() -> Path | None:
    """The SNAP hep-th folder inside the shared data, if present."""
    root = shared_data_dir()
    return root / "hepth" if root is not None and (root / "hepth" / "cit-HepTh.txt").exists() else None
