"""The precision probe's results, kept per machine, so that ``embed``'s default precision is measured once.

An entry is keyed by what decides the figures: the CPU (model name and the flags that decide the fast paths:
AVX2, the AVX-512 kinds, AVX-VNNI, AMX), the model (its resolved path or name and a cheap fingerprint of its
files: names, sizes, modification times), the length, the pooling, int8's scheme and calibration size, and the
OpenVINO and NNCF versions. Its value is the choice and the probe's figures. The file is ``precision_probe.json``
in ``$SPECTER_UTILS_CACHE`` (default ``~/.cache/specter_utils``), replaced atomically; a file or entry that does
not read as this cache is ignored, so the probe runs again and rewrites it.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.devices import package_version
from specter_utils.embedding.model_cache import key_digest
from specter_utils.executed import cpu_flags, machine_info
from specter_utils.io import atomic_write
from specter_utils.models import model_cache_dir, resolve_model

CACHE_FILE = "precision_probe.json"
FORMAT = 1


def cache_path() -> Path:
    """The cache file: ``$SPECTER_UTILS_CACHE/precision_probe.json`` (default ``~/.cache/specter_utils``)."""
    return model_cache_dir() / CACHE_FILE


def model_fingerprint(model_path: str) -> str:
    """A digest of the model folder's own files (name, size, modification time; the ``openvino`` cache beside
    them left out); ``"name"`` for a model known only by name."""
    folder = Path(model_path)
    if not folder.is_dir():
        return "name"
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def probe_key(spec: EmbedConfig, int8_scheme: str, calibration_size: int) -> dict[str, Any]:
    """What the probe's figures depend on, for ``spec`` on this machine."""
    model_path = resolve_model(spec.model)
    model = str(Path(model_path).resolve()) if Path(model_path).is_dir() else str(model_path)
    return {
        "cpu": machine_info()["cpu"],
        "cpu_flags": cpu_flags(),
        "model": model,
        "model_files": model_fingerprint(model_path),
        "max_length": spec.max_length,
        "pooling": spec.pooling,
        "int8_scheme": int8_scheme,
        "calibration": calibration_size,
        "openvino": package_version("openvino"),
        "nncf": package_version("nncf"),
    }


def _entries(path: Path) -> dict[str, Any]:
    """The file's entries; {} for a missing file or one that is not this cache (corrupt, another format)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def _valid(entry: Any, key: dict[str, Any]) -> bool:
    if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("probed_at"), str):
        return False
    record = entry.get("record")
    if not isinstance(record, dict) or not isinstance(record.get("candidates"), dict):
        return False
    rows = record["candidates"].values()
    if "float32" not in record["candidates"] or not all(isinstance(row, dict) for row in rows):
        return False
    figures = [row.get(name) for row in rows if "skipped" not in row for name in ("docs_per_s", "cos_min")]
    return all(isinstance(figure, (int, float)) for figure in figures)


def read_entry(key: dict[str, Any], path: Path | None = None) -> dict[str, Any] | None:
    """The cached probe of ``key`` (``record``: the probe's record, ``probed_at``: when), or None."""
    entry = _entries(path or cache_path()).get(key_digest(key))
    return entry if _valid(entry, key) else None


def write_entry(key: dict[str, Any], record: dict[str, Any], path: Path | None = None) -> str | None:
    """Keep ``record`` for ``key`` (atomically, beside the other entries); when it was probed, or None when the
    cache cannot be written (a read-only home: the next run probes again)."""
    path = path or cache_path()
    probed_at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    entries = {k: v for k, v in _entries(path).items() if isinstance(v, dict)}
    entries[key_digest(key)] = {"key": key, "probed_at": probed_at, "record": record}
    try:
        with atomic_write(path) as handle:
            handle.write(json.dumps({"format": FORMAT, "entries": entries}, indent=1) + "\n")
    except OSError:
        return None
    return probed_at
