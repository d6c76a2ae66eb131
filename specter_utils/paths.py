"""Where things live: the repository, the shared real data, results and figures."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "results"
FIGURES_DIR = REPO_ROOT / "figures"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
PARAMS_DIR = REPO_ROOT / "params"  # one run specification per preset: params/<preset>.yaml
REPORTS_DIR = REPO_ROOT / "reports"  # executed notebooks of reference runs, committed with their outputs


def presets(params_dir: str | Path = PARAMS_DIR) -> tuple[str, ...]:
    """The presets shipped in ``params_dir``: one ``<name>.yaml`` each."""
    return tuple(sorted(p.stem for p in Path(params_dir).glob("*.yaml")))


def shared_data_dir() -> Path | None:
    """The real-data folder: ``$SPECTER_SHARED_DATA`` or ``../shared/data`` beside the repo, if present."""
    env = os.environ.get("SPECTER_SHARED_DATA")
    candidates = [Path(env)] if env else []
    candidates += [REPO_ROOT.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return None


def hepth_dir() -> Path | None:
    """The SNAP hep-th folder inside the shared data, if present."""
    root = shared_data_dir()
    if root is not None and (root / "hepth" / "cit-HepTh.txt").exists():
        return root / "hepth"
    return None
