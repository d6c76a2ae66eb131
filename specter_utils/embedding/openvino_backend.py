"""Fast CPU embedding with OpenVINO: the model's transformer converted once, pooled as the model pools.

``openvino.convert_model`` traces the Hugging Face transformer (dynamic batch and sequence length); the converted
model is saved next to the model folder (``<model>/openvino/<key>/``, or the user cache when that folder is
read-only), keyed by the model, the OpenVINO, torch and transformers versions, built once under a lock and renamed
into place whole (:mod:`specter_utils.embedding.model_cache`), with OpenVINO's compiled blob and the tokenizer (for
:mod:`specter_utils.embedding.openvino_light`'s warm route) beside it. Pooling is done in numpy exactly as the
model's own head: masked mean or ``[CLS]``, then L2 normalisation when the model has a Normalize module. Any other
head (dense layers, weighted mean, ...) is unsupported and the caller falls back to torch.

Why not sentence-transformers' ``backend="openvino"``: it needs optimum, whose current release pins
transformers < 5 and would downgrade the project's pin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

from specter_utils.embedding.encoder import Encoder
from specter_utils.embedding.model_cache import build_once
from specter_utils.embedding.openvino_light import (  # noqa: F401 (cache_folder: read from here too)
    PRECISIONS,
    BackendUnavailable,
    OpenVINOEncoder,
    cache_folder,
    compile_for_cpu,
    conversion_folder,
    conversion_versions,
    save_tokenizer,
)
from specter_utils.vocabularies import INT8_CALIBRATION


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


def converted_model(encoder: Encoder, core: Any) -> tuple[Any, Path]:
    """The encoder's transformer as an f32 ``openvino.Model``, converted once and cached; and its folder."""
    import openvino as ov

    versions = conversion_versions(encoder.model_path, ov.__version__)
    folder = conversion_folder(encoder.model_path, versions)

    def convert(tmp: Path) -> None:
        example = encoder.tokenizer(["a title", "a somewhat longer abstract"], padding=True, return_tensors="pt")
        with torch.no_grad():
            model = ov.convert_model(encoder.model[0].auto_model.float(), example_input=dict(example))
        ov.save_model(model, tmp / "model.xml", compress_to_fp16=False)  # keep fp32 weights: vectors as torch's
        (tmp / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
        save_tokenizer(encoder.tokenizer, tmp)

    build_once(folder, convert)  # under a lock, renamed into place whole: safe for concurrent runs and kill -9
    save_tokenizer(encoder.tokenizer, folder)  # a folder converted before the tokenizer was saved with it
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
    try:
        import openvino as ov
    except ImportError:
        raise BackendUnavailable("openvino is not installed (pip install 'specter-utils[openvino]')") from None
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
        compiled, precision = compile_for_cpu(core, model, compiled_dir, dtype)
    except BackendUnavailable:
        raise
    except Exception as exc:  # conversion or compilation failed: the caller falls back to torch
        raise BackendUnavailable(
            f"openvino could not convert or compile the model ({type(exc).__name__}: {exc})"
        ) from exc
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
