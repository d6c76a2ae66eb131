"""The OpenVINO encoder, and its warm route: a model already converted (and for int8 quantized) run without torch.

:mod:`specter_utils.embedding.openvino_backend` converts a model's transformer once into
``<model>/openvino/<key>/`` and saves beside it the tokenizer exactly as transformers runs it (the fast
tokenizer's ``tokenizer.json`` and its call settings: separator, padding token and side, truncation side).
:func:`warm_encoder` builds the same :class:`OpenVINOEncoder` from that folder alone, importing neither torch nor
transformers nor sentence-transformers, so a warm call starts in about a second.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from specter_utils.devices import package_version
from specter_utils.embedding.encoder import VERSIONED, Encoder, resolve_device
from specter_utils.embedding.model_cache import key_digest
from specter_utils.embedding.quantize import CALIBRATION_SEED, cache_key, int8_folder
from specter_utils.io import atomic_write, read_json
from specter_utils.models import model_pooling_detail, resolve_model, resolve_pooling
from specter_utils.vocabularies import INT8_CALIBRATION, INT8_SCHEMES, MODEL_POOLING, canonical_pooling

# ``auto`` is f32, as the torch path on a CPU: OpenVINO would pick bf16 by itself on AMX /
# avx512_bf16 CPUs, so a default run could give other vectors on another machine. bf16 is asked for.
# int8: the quantized model's MatMuls run in int8, what is left in float at f32.
PRECISIONS = {"auto": "f32", "float32": "f32", "bfloat16": "bf16", "int8": "f32"}
TOKENIZER_FILE = "tokenizer.json"  # in the conversion folder: the fast tokenizer's backend, as transformers built it
TOKENIZER_CALL = "tokenizer_call.json"  # how transformers calls it: separator, padding, truncation side
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")  # what the tokenizer gives the model


class BackendUnavailable(RuntimeError):
    """OpenVINO cannot run this model here; the message says why (one line)."""


def pool_hidden(hidden: np.ndarray, attention_mask: np.ndarray, pooling: str, normalize: bool) -> np.ndarray:
    """Masked mean (as sentence-transformers: sum over real tokens / their count, count >= 1e-9) or [CLS]."""
    if pooling == "cls":
        vectors = hidden[:, 0, :]
    else:
        mask = attention_mask[:, :, None].astype(hidden.dtype)
        vectors = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    vectors = vectors.astype(np.float32)
    if normalize:
        vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    return vectors


def cache_folder(model_path: str, key: str) -> Path:
    """``<model>/openvino/<key>`` when the model folder is writable, else the user cache."""
    base = Path(model_path)
    if base.is_dir() and os.access(base, os.W_OK):
        return base / "openvino" / key
    user = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specter-utils" / "openvino"
    return user / f"{hashlib.sha256(str(base.resolve()).encode()).hexdigest()[:12]}-{key}"


def conversion_versions(model_path: str, openvino_version: str) -> dict[str, str | None]:
    """What names a converted model: the model folder and the OpenVINO, torch, transformers and
    sentence-transformers versions (from the packages' metadata, the same strings as their ``__version__``)."""
    return {
        "model": str(Path(model_path).resolve()),
        "openvino": openvino_version,
        **{name: package_version(name) for name in VERSIONED},
    }


def conversion_folder(model_path: str, versions: dict[str, Any]) -> Path:
    """The folder of the converted model named by ``versions``."""
    return cache_folder(model_path, key_digest(versions))


def compile_for_cpu(core: Any, model: Any, compiled_dir: Path, dtype: str) -> tuple[Any, str]:
    """``model`` compiled for the CPU at ``dtype``'s precision, OpenVINO's blob cached in ``compiled_dir``;
    and the precision it runs at (``f32``, ``bf16``; ``int8`` for a quantized model)."""
    config = {"CACHE_DIR": str(compiled_dir), "INFERENCE_PRECISION_HINT": PRECISIONS[dtype]}
    compiled = core.compile_model(model, "CPU", config)
    hint = compiled.get_property("INFERENCE_PRECISION_HINT")
    precision = hint.to_string() if hasattr(hint, "to_string") else str(hint)  # "f32", "bf16", ...
    return compiled, "int8" if dtype == "int8" else precision  # int8 MatMuls; the rest at the hint (f32)


@dataclass
class OpenVINOEncoder(Encoder):
    """An Encoder whose forward pass runs in OpenVINO on the CPU (tokenizer and pooling unchanged)."""

    compiled: Any = None  # openvino.CompiledModel
    head: tuple[str, bool] = ("mean", False)
    precision: str = "f32"  # the inference precision OpenVINO actually ran at
    input_names: tuple[str, ...] = ()
    cache_dir: str = ""
    openvino_version: str = ""
    quantization: dict[str, Any] = field(default_factory=dict)  # int8: scheme and calibration sample

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.update(backend="openvino", dtype=f"openvino-{self.precision}", device="cpu", openvino_cache=self.cache_dir)
        out["versions"] = {**out["versions"], "openvino": self.openvino_version}
        if self.quantization:
            out["int8"] = {k: v for k, v in self.quantization.items() if k != "cache"}
            out["versions"]["nncf"] = self.quantization["nncf"]
        return out

    def encode(self, texts: list[str], batch_size: int, pool: Any = None) -> np.ndarray:
        """Embed ``texts`` in order, one ``batch_size`` slice per inference request; float32 rows."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        request = self.compiled.create_infer_request()
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            inputs = self.tokenizer(
                batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
            )
            feed = {name: inputs[name].astype(np.int64) for name in self.input_names if name in inputs}
            hidden = request.infer(feed)[self.compiled.outputs[0]]
            out[start : start + len(batch)] = pool_hidden(hidden, inputs["attention_mask"], *self.head)
        return out


def save_tokenizer(tokenizer: Any, folder: Path) -> bool:
    """Save ``tokenizer`` (transformers' fast tokenizer) into the conversion ``folder`` as it is run, unless there;
    True when the folder holds it. A tokenizer without a ``tokenizers`` backend (a slow one) is not saved."""
    if (folder / TOKENIZER_CALL).exists():
        return True
    backend = getattr(tokenizer, "_tokenizer", None)
    if not isinstance(backend, Tokenizer) or tokenizer.pad_token_id is None:
        return False
    call = {
        "sep_token": tokenizer.sep_token,
        "pad_token": str(tokenizer.pad_token),
        "pad_token_id": int(tokenizer.pad_token_id),
        "pad_token_type_id": int(tokenizer.pad_token_type_id),
        "padding_side": tokenizer.padding_side,
        "truncation_side": tokenizer.truncation_side,
        "split_special_tokens": bool(getattr(tokenizer, "split_special_tokens", False)),
        "model_input_names": list(tokenizer.model_input_names),
    }
    try:
        with atomic_write(folder / TOKENIZER_FILE) as handle:
            handle.write(backend.to_str())
        with atomic_write(folder / TOKENIZER_CALL) as handle:  # written last: the folder holds a tokenizer
            handle.write(json.dumps(call, indent=2) + "\n")
    except OSError:  # a read-only cache: the warm route is not taken, the full one still runs
        return False
    return True


class CachedTokenizer:
    """The tokenizer saved by :func:`save_tokenizer`, run by the ``tokenizers`` library as transformers runs it:
    ``tokenizer(texts, padding=True, truncation=True, max_length=L, return_tensors="np")`` pads to the batch's
    longest text and truncates to ``L`` on the tokenizer's sides, giving the same ids and masks."""

    def __init__(self, folder: Path) -> None:
        self.backend = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self.call = read_json(folder / TOKENIZER_CALL)
        self.sep_token = self.call["sep_token"]
        self.model_input_names = self.call["model_input_names"]
        self.backend.encode_special_tokens = self.call["split_special_tokens"]

    def __call__(
        self,
        texts: list[str],
        padding: bool = False,
        truncation: bool = False,
        max_length: int | None = None,
        add_special_tokens: bool = True,
        return_tensors: str | None = None,
    ) -> dict[str, Any]:
        if truncation:
            if max_length is None:
                raise ValueError("truncation needs max_length")
            self.backend.enable_truncation(max_length, direction=self.call["truncation_side"])
        else:
            self.backend.no_truncation()
        if padding:
            self.backend.enable_padding(
                direction=self.call["padding_side"],
                pad_id=self.call["pad_token_id"],
                pad_type_id=self.call["pad_token_type_id"],
                pad_token=self.call["pad_token"],
            )
        else:
            self.backend.no_padding()
        encodings = self.backend.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        out: dict[str, Any] = {
            "input_ids": [e.ids for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
        }
        out = {name: out[name] for name in self.model_input_names if name in out}
        if return_tensors == "np":
            out = {name: np.asarray(rows, dtype=np.int64) for name, rows in out.items()}
        return out


@dataclass
class WarmOpenVINOEncoder(OpenVINOEncoder):
    """An :class:`OpenVINOEncoder` built from the cache alone: no torch model (``model`` is None); the cached
    tokenizer and the transformer's width stand in for the model's."""

    cached_tokenizer: CachedTokenizer | None = None
    width: int = 0

    @property
    def tokenizer(self) -> Any:
        return self.cached_tokenizer

    @property
    def dim(self) -> int:
        return self.width


def folder_head(path: Path, chosen: str) -> tuple[str, bool] | None:
    """``(pooling, normalize)`` as :func:`specter_utils.models.build_model` would build the head, read from the
    model folder: ``cls``/``mean`` asked for by name, or a sentence-transformers model's own modules (its transformer
    at the folder's root, a mean or [CLS] Pooling, then an optional Normalize); None for anything else."""
    if chosen != MODEL_POOLING:
        return (chosen, False) if chosen in {"cls", "mean"} else None
    modules = read_json(path / "modules.json")
    kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]) or modules[0]["path"]:
        return None
    config = read_json(path / modules[1]["path"] / "config.json")
    modes = {
        key.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
        for key, on in config.items()
        if key.startswith("pooling_mode_") and on is True
    }
    mode = config.get("pooling_mode") or (modes.pop() if len(modes) == 1 else None)
    return (mode, kinds[2:] == ["Normalize"]) if mode in {"cls", "mean"} else None


def position_limit(path: Path) -> int | None:
    """The longest input the model's position embeddings allow (``config.json``; RoBERTa-style models keep 2 of
    them for the padding offset), as :func:`specter_utils.models.position_limit` reads it from the loaded model."""
    config = read_json(path / "config.json")
    positions = config.get("max_position_embeddings")
    if not isinstance(positions, int) or positions <= 0:
        return None
    return positions - (2 if config.get("model_type", "") in {"roberta", "xlm-roberta", "camembert"} else 0)


def warm_encoder(
    model: str,
    pooling: str | None,
    max_length: int,
    device: str | None = None,
    dtype: str | None = "auto",
    devices: list[str] | None = None,
    *,
    scheme: str = "default",
    calibration_size: int = INT8_CALIBRATION,
) -> WarmOpenVINOEncoder | None:
    """The OpenVINO encoder of ``model`` from the cache, without torch, when everything it needs is there.

    The same encoder the full route builds (``load_encoder`` then ``openvino_backend.to_openvino``): the same
    converted model (``dtype="int8"``: the cached quantized model of this scheme, length and calibration size),
    compiled at the same precision, the same token ids and pooling, the same meta. None where the full route must
    run: openvino missing, a GPU or several devices, an unsupported head or input, no cached model or tokenizer,
    a length the model cannot take (the full route names the error), or anything that fails on the way.
    """
    if devices or importlib.util.find_spec("openvino") is None:
        return None
    dtype = dtype or "auto"
    try:
        if max_length < 2 or dtype not in PRECISIONS or not resolve_device(device).startswith("cpu"):
            return None
        path = resolve_model(model)
        request = canonical_pooling(pooling)
        chosen = resolve_pooling(path, request)
        head = folder_head(Path(path), chosen) if Path(path).is_dir() else None
        limit = position_limit(Path(path)) if head else None
        if head is None or (limit is not None and max_length > limit):
            return None
        import openvino as ov

        folder = conversion_folder(path, conversion_versions(path, ov.__version__))
        if not (folder / "model.xml").exists() or not (folder / TOKENIZER_CALL).exists():
            return None
        xml, compiled_dir, quantization = folder / "model.xml", folder / "compiled", {}
        if dtype == "int8":
            nncf_version = package_version("nncf")
            if nncf_version is None or scheme not in INT8_SCHEMES or calibration_size < 1:
                return None
            target = int8_folder(
                folder, cache_key(scheme, max_length, calibration_size, CALIBRATION_SEED, nncf_version)
            )
            if not (target / "model.xml").exists():
                return None
            quantization = {**read_json(target / "calibration.json"), "cache": str(target), "quantized_now": False}
            xml, compiled_dir = target / "model.xml", target / "compiled"
        tokenizer = CachedTokenizer(folder)
        core = ov.Core()
        compiled, precision = compile_for_cpu(core, core.read_model(xml), compiled_dir, dtype)
        names = tuple(port.get_any_name() for port in compiled.inputs)
        width = compiled.outputs[0].get_partial_shape()[-1]
        if not set(names) <= set(tokenizer.model_input_names) & set(MODEL_INPUTS) or width.is_dynamic:
            return None
    except Exception:  # a missing or unreadable file, an odd config: the full route runs (and says what is wrong)
        return None
    return WarmOpenVINOEncoder(
        model=None,
        model_name=str(model),
        model_path=path,
        pooling=chosen,
        pooling_detail=model_pooling_detail(path) if chosen == MODEL_POOLING else chosen,
        max_length=max_length,
        device="cpu",
        dtype=f"openvino-{precision}",
        compiled=compiled,
        head=head,
        precision=precision,
        input_names=names,
        cache_dir=str(folder),
        openvino_version=ov.__version__,
        quantization=quantization,
        cached_tokenizer=tokenizer,
        width=width.get_length(),
    )
