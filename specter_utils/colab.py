"""The Colab bootstrap every notebook calls in one line, after its first cell installed the project's wheel.

On Colab a notebook's first cell installs ``specter_utils-<version>-py3-none-any.whl`` from ``/content`` (uploaded
there, or named by ``$SPECTER_UTILS_WHEEL``) without its dependencies, so Colab's own torch, numpy, pandas and
transformers stay as they are; :func:`bootstrap` then installs only the requirements (with the ``search`` extra:
notebook 04 builds a FAISS index) that are not installed at all. The notebooks and presets come inside the wheel,
and results are written below the working folder (``/content``). Outside Colab it does nothing.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from packaging.requirements import Requirement

DISTRIBUTION = "specter-utils"
EXTRAS = ("search",)  # the optional dependencies the notebooks import (faiss for notebook 04's similar papers)


def in_colab() -> bool:
    return "google.colab" in sys.modules


def missing_requirements(distribution: str = DISTRIBUTION, extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """The requirements of ``distribution`` (and ``extras``) with no installed distribution of that name: a package
    Colab already has is kept at Colab's version."""
    missing = []
    for text in metadata.requires(distribution) or []:
        requirement = Requirement(text)
        wanted = requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in ("", *extras))
        if not wanted:
            continue
        try:
            metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(f"{requirement.name}{requirement.specifier}")
    return missing


def bootstrap() -> list[str] | None:
    """On Colab: install what the notebooks import and Colab lacks; returns those requirements (None elsewhere)."""
    if not in_colab():
        return None
    missing = missing_requirements()
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
    return missing
