"""int8 post-training static quantization of an OpenVINO model with NNCF, calibrated on the user's papers.

``nncf.quantize`` with ``ModelType.TRANSFORMER`` inserts int8 quantizers on the MatMuls' inputs and
weights, with ranges measured on a calibration sample: a seeded sample of the papers (``INT8_CALIBRATION``, ``embed --calibration``)
being embedded, one paper per inference (so that padding never enters the ranges), truncated as the
run truncates them. The quantized model is cached beside the f32 one, keyed by the NNCF version, the
scheme, the maximum length and the sample's size and seed (not by the papers): the first corpus
embedded at those settings calibrates it, and every later run, on any corpus, starts in seconds.

Schemes (``INT8_SCHEMES``):
- ``default``: NNCF's transformer preset (SmoothQuant at alpha 0.95 on the MatMuls, then min/max
  ranges and fast bias correction).
- ``smoothquant-0.5``: SmoothQuant at alpha 0.5 (more of the activations' outliers left in the weights).
- ``no-smoothquant``: the preset without SmoothQuant.
- ``mixed``: the preset, with the sensitive layers kept in f32: every feed-forward output projection
  (``output.dense``, whose inputs carry the GELU outliers) and the last layer whole.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.embedding.model_cache import build_once, key_digest
from specter_utils.vocabularies import INT8_CALIBRATION, INT8_SCHEMES

CALIBRATION_SEED = 0


class QuantizationUnavailable(RuntimeError):
    """int8 cannot be made here (NNCF missing, a bad scheme, no papers); the message says why in one line."""


def calibration_sample(texts: list[str], size: int = INT8_CALIBRATION, seed: int = CALIBRATION_SEED) -> list[str]:
    """A seeded sample of ``size`` texts (all of them when there are fewer), in input order."""
    if not texts:
        raise QuantizationUnavailable("int8 needs papers to calibrate on, and there are none")
    if size < 1:
        raise QuantizationUnavailable(f"the calibration sample must hold at least 1 paper, got {size}")
    if len(texts) <= size:
        return list(texts)
    chosen = sorted(random.Random(seed).sample(range(len(texts)), size))
    return [texts[i] for i in chosen]


def sample_digest(texts: list[str]) -> str:
    """SHA-256 of the calibration texts, in order: the sample's identity in the cache key and the meta."""
    return hashlib.sha256("".join(f"{text}\0" for text in texts).encode()).hexdigest()


def _ignored_scope(model: Any, scheme: str) -> Any:
    """``mixed``: every feed-forward output MatMul and all of the last layer's MatMuls stay in f32."""
    import nncf

    if scheme != "mixed":
        return None
    matmuls = [op.get_friendly_name() for op in model.get_ordered_ops() if op.get_type_name() == "MatMul"]
    layers = sorted({int(part) for name in matmuls for part in _layer_numbers(name)})
    last = f".{layers[-1]}." if layers else None
    keep = [n for n in matmuls if "output.dense" in n and "attention" not in n or (last and last in n)]
    if not keep:
        raise QuantizationUnavailable("scheme 'mixed' found no feed-forward output layer to keep in f32")
    return nncf.IgnoredScope(names=keep)


def _layer_numbers(name: str) -> list[str]:
    """The layer index of a name such as ``__module.encoder.layer.5.output.dense/aten::linear/MatMul``."""
    parts = name.replace("/", ".").split(".")
    return [parts[i + 1] for i, part in enumerate(parts[:-1]) if part == "layer" and parts[i + 1].isdigit()]


def _advanced_parameters(scheme: str) -> Any:
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, AdvancedSmoothQuantParameters

    alpha = {"smoothquant-0.5": 0.5, "no-smoothquant": -1.0}.get(scheme, 0.95)
    return AdvancedQuantizationParameters(smooth_quant_alphas=AdvancedSmoothQuantParameters(matmul=alpha))


def quantize(model: Any, calibration: list[dict[str, np.ndarray]], scheme: str = "default") -> Any:
    """``nncf.quantize`` of an ``openvino.Model`` on ``calibration`` (one input dict per paper)."""
    import nncf

    return nncf.quantize(
        model,
        nncf.Dataset(calibration),
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=len(calibration),
        ignored_scope=_ignored_scope(model, scheme),
        advanced_parameters=_advanced_parameters(scheme),
    )


def cache_key(scheme: str, max_length: int, size: int, seed: int, nncf_version: str) -> dict[str, Any]:
    """What names one cached int8 model of a converted model: the scheme, the length, the sample's size and seed
    and the NNCF version; not the papers, so that another corpus at the same settings reuses it."""
    return dict(scheme=scheme, max_length=max_length, calibration_size=size, calibration_seed=seed, nncf=nncf_version)


def int8_folder(folder: Path, key: dict[str, Any]) -> Path:
    """Where the int8 model named by ``key`` (:func:`cache_key`) of the converted model in ``folder`` is cached."""
    return folder / "int8" / key_digest(key)


def quantized_model(
    model: Any,
    folder: Path,
    texts: list[str],
    tokenize: Callable[[str], dict[str, np.ndarray]],
    max_length: int,
    scheme: str = "default",
    size: int = INT8_CALIBRATION,
    seed: int = CALIBRATION_SEED,
) -> tuple[Any, dict[str, Any]]:
    """The int8 model of ``model`` (an f32 ``openvino.Model`` cached in ``folder``), from the cache or made now
    (keyed as the module docstring says; built once under a lock by ``model_cache.build_once``).

    Returns ``(openvino.Model, record)``; the record (scheme, sample size, seed and digest, NNCF version,
    cache folder, whether it was quantized now) goes into the embeddings' meta. Raises QuantizationUnavailable
    with a one-line reason.
    """
    try:
        import nncf
    except ImportError:
        raise QuantizationUnavailable("--dtype int8 needs nncf (pip install 'specter-utils[openvino]')") from None
    import openvino as ov

    if scheme not in INT8_SCHEMES:
        raise QuantizationUnavailable(f"int8 scheme {scheme!r} is not one of {', '.join(INT8_SCHEMES)}")
    sample = calibration_sample(texts, size, seed)  # checks there are papers before anything is loaded
    key = cache_key(scheme, max_length, size, seed, nncf.__version__)
    target = int8_folder(folder, key)

    def calibrate(tmp: Path) -> None:
        record = {**key, "calibration_papers": len(sample), "calibration_sha256": sample_digest(sample)}
        quantized = quantize(model, [tokenize(text) for text in sample], scheme)
        ov.save_model(quantized, tmp / "model.xml", compress_to_fp16=False)
        (tmp / "calibration.json").write_text(json.dumps(record, indent=2) + "\n")

    made = build_once(target, calibrate)
    record = json.loads((target / "calibration.json").read_text())
    record.update(cache=str(target), quantized_now=made)
    return ov.Core().read_model(target / "model.xml"), record
