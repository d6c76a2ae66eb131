"""A cached model folder built once, safe under concurrent runs and a ``kill -9``.

:func:`build_once` holds a lock file beside the folder while it checks for it and builds it; the build writes into
a temporary folder that is renamed into place in one step, so the folder exists only when complete. A second run
that needs the same folder at the same time waits on the lock, then reads what the first wrote. A run killed
part-way leaves a temporary folder (removed by the next build) and a lock file that the kernel released with the
process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

LOCK_TIMEOUT_S = 3600  # a build (conversion or int8 calibration) takes seconds to minutes; an hour means a stuck run


def key_digest(key: dict[str, Any]) -> str:
    """A short, stable name for a cache key (16 hex digits of the SHA-256 of its sorted JSON)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def lock_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.lock")


def build_once(target: Path, build: Callable[[Path], None], marker: str = "model.xml") -> bool:
    """Make ``target`` with ``build(tmp_folder)`` unless ``target/marker`` is there; True when it was built now."""
    if (target / marker).exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path(target)), timeout=LOCK_TIMEOUT_S):
        if (target / marker).exists():  # another run built it while this one waited
            return False
        for stale in target.parent.glob(f".{target.name}.tmp-*"):  # left by a killed run
            shutil.rmtree(stale, ignore_errors=True)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        tmp.mkdir()
        try:
            build(tmp)
            if target.exists():  # an incomplete folder of an older layout: replaced
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return True
