"""The Colab bootstrap every notebook calls in one line: ``from specter_utils.colab import bootstrap; bootstrap()``.

Outside Colab it does nothing. On Colab it installs the repository with what the notebooks import
(``pip install -e .[search]``: notebook 04 builds a FAISS index),
puts the repository first on ``sys.path`` (a package installed in a running kernel is not importable
until the kernel restarts) and makes it the working directory, so ``params/`` and ``results/`` resolve.
The repository itself must already be there: the notebook's first cell clones it to ``REPO`` (or
``$SPECTER_UTILS_DIR``) from ``$SPECTER_UTILS_GIT_URL``, or you upload it there; the package cannot clone itself
before it is importable.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = "/content/specter-utils"  # where the notebooks' first cell clones the repository on Colab
EXTRAS = "search"  # the optional dependencies the notebooks import (faiss for notebook 04's similar papers)
MISSING = (
    "no repository at {root}: set SPECTER_UTILS_GIT_URL to its git address before the first cell, "
    "or upload the repository there (or set SPECTER_UTILS_DIR to where it is)"
)


def in_colab() -> bool:
    return "google.colab" in sys.modules


def bootstrap(repo: str | None = None) -> Path | None:
    """On Colab: install the repository in ``repo`` (default ``$SPECTER_UTILS_DIR`` or ``REPO``) and enter it."""
    if not in_colab():
        return None
    root = Path(repo or os.environ.get("SPECTER_UTILS_DIR", REPO))
    if not (root / "pyproject.toml").exists():
        raise RuntimeError(MISSING.format(root=root))
    marker = root / ".colab-installed"
    if not marker.exists():  # once per Colab machine; later notebooks reuse the install
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--editable", f"{root}[{EXTRAS}]"], check=True
        )
        marker.touch()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    os.chdir(root)
    return root
