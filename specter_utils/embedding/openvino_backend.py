"""Fast CPU embedding with OpenVINO: the model's transformer converted once, pooled as the model pools.

``openvino.convert_model`` traces the Hugging Face transformer (dynamic batch and sequence length);
the converted model is saved next to the model folder (``<model>/openvino/<key>/``, or the user cache
when that folder is read-only), keyed by the model, the OpenVINO, torch and transformers versions,
built once under a lock and renamed into place whole (:mod:`specter_utils.embedding.model_cache`), and
OpenVINO's compiled blob is cached there too, so later runs start in about a second. Pooling is
done in numpy exactly as the model's own head: masked mean or ``[CLS]``, then L2 normalisation when
the model has a Normalize module. Any other head (dense layers, weighted mean, ...) is unsupported and
the caller falls back to torch.

Why not sentence-transformers' ``backend="openvino"``: it needs optimum, whose current release pins
transformers < 5 and would downgrade the project's pin.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sentence_transformers
import torch
import transformers
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

from specter_utils.config import INT8_CALIBRATION
from specter_utils.embedding.encoder import Encoder
from specter_utils.embedding.model_cache import build_once

# ``auto`` is f32, as the torch path on a CPU: OpenVINO would pick bf16 by itself on AMX /
# avx512_bf16 CPUs, so a default run could give other vectors on another machine. bf16 is asked for.
# int8: the quantized model's MatMuls run in int8, what is left in float at f32.
PRECISIONS = {"auto": "f32", "float32": "f32", "bfloat16": "bf16", "int8": "f32"}


class BackendUnavailable(RuntimeError):
    """OpenVINO cannot run this model here; the message says why (one line)."""


def model_head(encoder: Encoder) -> tuple[str, bool]:
    """``(pooling, normalize)`` of the encoder's sentence-transformers head; unsupported heads raise."""

    pooling, normalize = None, False
    for module in list(encoder.model)[1:]:
        if isinstance(module, Pooling):
            mode = module.get_config_dict().get("pooling_mode")
            if mode not in {"mean", "cls"}:
                raise BackendUnavailable(f"pooling mode {mode!r} is not supported by the openvino backend")
            pooling = mode
        elif isinstance(module, Normalize):
            normalize = True
        else:
            raise BackendUnavailable(f"model module {type(module).__name__} is not supported by the openvino backend")
    if pooling is None:
        raise BackendUnavailable("the model has no pooling module")
    return pooling, normalize


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
        out.update(
            backend="openvino",
            dtype=f"openvino-{self.precision}",
            device="cpu",
            openvino_cache=self.cache_dir,
        )
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


def _import_openvino() -> Any:
    try:
        import openvino as ov
    except ImportError:
        raise BackendUnavailable("openvino is not installed (pip install 'specter-utils[openvino]')") from None
    return ov


def converted_model(encoder: Encoder, core: Any) -> tuple[Any, Path]:
    """The encoder's transformer as an f32 ``openvino.Model``, converted once and cached; and its folder."""
    import openvino as ov

    versions = {
        "model": str(Path(encoder.model_path).resolve()),
        "openvino": ov.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }
    key = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_folder(encoder.model_path, key)

    def convert(tmp: Path) -> None:
        example = encoder.tokenizer(["a title", "a somewhat longer abstract"], padding=True, return_tensors="pt")
        with torch.no_grad():
            model = ov.convert_model(encoder.model[0].auto_model.float(), example_input=dict(example))
        ov.save_model(model, tmp / "model.xml", compress_to_fp16=False)  # keep fp32 weights: vectors as torch's
        (tmp / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")

    build_once(folder, convert)  # under a lock, renamed into place whole: safe for concurrent runs and kill -9
    return core.read_model(folder / "model.xml"), folder


def to_openvino(
    encoder: Encoder,
    dtype: str | None = "auto",
    calibration_texts: list[str] | None = None,
    scheme: str = "default",
    calibration_size: int = INT8_CALIBRATION,
) -> OpenVINOEncoder:
    """Convert (or load from the cache) ``encoder``'s transformer and compile it for the CPU.

    ``dtype="int8"`` quantizes the converted model with NNCF, calibrated on a seeded sample of
    ``calibration_texts`` (the papers to embed), see :mod:`specter_utils.embedding.quantize`.
    Raises BackendUnavailable, with a one-line reason, where OpenVINO cannot run it.
    """
    ov = _import_openvino()
    if len(encoder.devices) > 1 or not encoder.device.startswith("cpu"):
        raise BackendUnavailable(f"the openvino backend runs on the CPU, not {encoder.device}")
    dtype = dtype or "auto"
    if dtype not in PRECISIONS:
        raise BackendUnavailable(f"dtype {dtype!r} is not one of {', '.join(PRECISIONS)}")
    head = model_head(encoder)
    core = ov.Core()
    quantization: dict[str, Any] = {}
    try:
        model, folder = converted_model(encoder, core)
        compiled_dir = folder / "compiled"
        if dtype == "int8":
            from specter_utils.embedding.quantize import QuantizationUnavailable, quantized_model

            names = [port.get_any_name() for port in model.inputs]
            try:
                model, quantization = quantized_model(
                    model,
                    folder,
                    list(calibration_texts or []),
                    lambda text: _tokenize(encoder, [text], names),
                    encoder.max_length,
                    scheme,
                    calibration_size,
                )
            except QuantizationUnavailable as exc:
                raise BackendUnavailable(str(exc)) from None
            compiled_dir = Path(quantization["cache"]) / "compiled"
        config = {"CACHE_DIR": str(compiled_dir), "INFERENCE_PRECISION_HINT": PRECISIONS[dtype]}
        compiled = core.compile_model(model, "CPU", config)
    except BackendUnavailable:
        raise
    except Exception as exc:  # conversion or compilation failed: the caller falls back to torch
        raise BackendUnavailable(
            f"openvino could not convert or compile the model ({type(exc).__name__}: {exc})"
        ) from exc
    hint = compiled.get_property("INFERENCE_PRECISION_HINT")
    precision = hint.to_string() if hasattr(hint, "to_string") else str(hint)  # "f32", "bf16", ...
    if dtype == "int8":
        precision = "int8"  # int8 MatMuls; what was left in float runs at the hint (f32)
    names = tuple(port.get_any_name() for port in compiled.inputs)
    fields = {name: getattr(encoder, name) for name in encoder.__dataclass_fields__}
    fields.update(dtype=f"openvino-{precision}", device="cpu")
    return OpenVINOEncoder(
        **fields,
        compiled=compiled,
        head=head,
        precision=precision,
        input_names=names,
        cache_dir=str(folder),
        openvino_version=ov.__version__,
        quantization=quantization,
    )


def _tokenize(encoder: Encoder, texts: list[str], names: list[str] | tuple[str, ...]) -> dict[str, np.ndarray]:
    """The model's int64 inputs for ``texts``, padded to the longest and truncated as the run truncates."""
    inputs = encoder.tokenizer(texts, padding=True, truncation=True, max_length=encoder.max_length, return_tensors="np")
    return {name: inputs[name].astype(np.int64) for name in names if name in inputs}
