"""Load a model for embedding papers: pooling choice, maximum length, device and precision.

Every model is wrapped as a sentence-transformers ``SentenceTransformer`` so that one code path
serves a plain Hugging Face model (SPECTER, SciBERT: ``[CLS]`` pooling, as the HF ``allenai/specter``
port does), a sentence-transformers model (its own pooling and normalisation) and several GPUs
(sentence-transformers' multi-process pool).

torch is imported by the functions that run it (the forward pass, the GPU queries), not at the top: the embed
stage's warm OpenVINO route (:mod:`specter_utils.embedding.openvino_light`) builds on :class:`Encoder` and starts
without torch (docs/architecture.md lists the exception).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.devices import cuda_visible, package_version
from specter_utils.models import build_model, model_pooling_detail, resolve_model, resolve_pooling
from specter_utils.vocabularies import MODEL_POOLING, canonical_pooling

DTYPES = ("auto", "float32", "bfloat16")
VERSIONED = ("torch", "transformers", "sentence_transformers")  # the packages whose versions a meta records


def resolve_device(device: str | None) -> str:
    """``None`` -> ``cuda`` when a GPU is visible, else ``cpu`` (torch is asked only where a GPU is possible)."""
    return device or ("cuda" if cuda_visible() else "cpu")


def resolve_dtype(dtype: str | None, device: str) -> str:
    """``auto`` -> bfloat16 on a GPU that supports it, float32 elsewhere (exact on CPU)."""
    dtype = (dtype or "auto").lower()
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "auto" or not device.startswith("cuda"):
        return "float32" if dtype == "auto" else dtype
    import torch

    return "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"


@dataclass
class Encoder:
    """A loaded model plus the settings that decide its vectors (all recorded in the output's meta)."""

    model: Any  # sentence_transformers.SentenceTransformer
    model_name: str
    model_path: str
    pooling: str  # "cls", "mean" or MODEL_POOLING
    pooling_detail: str  # e.g. "mean+normalize" for a sentence-transformers model's own pooling
    max_length: int
    device: str
    dtype: str  # "float32", "bfloat16" (autocast) or "bfloat16-weights" (multi-process pool)
    devices: list[str] = field(default_factory=list)  # >1 entries: multi-process pool
    text_sep: str | None = None  # another separator between title and abstract (" ": MTEB's plain document text)

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    @property
    def sep(self) -> str:
        """The separator between title and abstract: the tokenizer's sep token (SPECTER's recipe), or ``text_sep``."""
        return self.text_sep if self.text_sep is not None else getattr(self.tokenizer, "sep_token", None) or " "

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def info(self) -> dict[str, Any]:
        """What the sidecar ``meta.json`` states about how the vectors were made."""
        return {
            "model": self.model_name,
            "model_path": self.model_path,
            "pooling": self.pooling,
            "pooling_detail": self.pooling_detail,
            "max_length": self.max_length,
            "text": f"title + {self.sep!r} + abstract",
            "dtype": self.dtype,
            "device": ",".join(self.devices) if len(self.devices) > 1 else self.device,
            "versions": {name: package_version(name) for name in VERSIONED},
        }

    def token_lengths(self, texts: list[str], batch: int = 2048) -> np.ndarray:
        """Wordpiece counts after truncation (used to sort texts so batches carry little padding)."""
        lengths = np.zeros(len(texts), dtype=np.int64)
        for start in range(0, len(texts), batch):
            encoded = self.tokenizer(
                texts[start : start + batch], truncation=True, max_length=self.max_length, add_special_tokens=True
            )["input_ids"]
            lengths[start : start + len(encoded)] = [len(ids) for ids in encoded]
        return lengths

    def encode(self, texts: list[str], batch_size: int, pool: Any = None) -> np.ndarray:
        """Embed ``texts`` in their given order as one batch per ``batch_size`` slice; float32 rows."""
        if pool is not None:
            vectors = self.model.encode(
                texts, batch_size=batch_size, pool=pool, convert_to_numpy=True, show_progress_bar=False
            )
            return np.asarray(vectors, dtype=np.float32)
        import torch

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # bf16: autocast (matmuls in bf16, LayerNorm/softmax kept in fp32)
        autocast = (
            torch.autocast(device_type=self.device.split(":")[0], dtype=torch.bfloat16)
            if self.dtype == "bfloat16"
            else contextlib.nullcontext()
        )
        with torch.inference_mode(), autocast:
            for start in range(0, len(texts), batch_size):
                batch = texts[start : start + batch_size]
                out[start : start + len(batch)] = self.model.encode(
                    batch, batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False
                )
        return out


def encoder_for(spec: EmbedConfig, devices: list[str] | None = None) -> Encoder:
    """The encoder ``spec`` describes (its model, pooling, length, device and precision), loaded with torch."""
    return load_encoder(spec.model, spec.pooling, spec.max_length, spec.torch_device, spec.torch_dtype, devices)


def load_encoder(
    model_name_or_path: str,
    pooling: str | None,
    max_length: int,
    device: str | None = None,
    dtype: str | None = "auto",
    devices: list[str] | None = None,
) -> Encoder:
    """Load ``model_name_or_path`` (``minilm``, a local directory or a cached hub id) for embedding.

    Args:
        pooling: any spelling :func:`specter_utils.vocabularies.canonical_pooling` reads (``auto``: the model's own
            pooling for a sentence-transformers model, else ``cls``; ``cls``; ``mean``).
        max_length: wordpieces kept per paper; beyond the model's position embeddings it is an error
            (``models.build_model``'s one rule), never a silent cap.
    """
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2, got {max_length}")
    path = resolve_model(model_name_or_path)
    request = canonical_pooling(pooling)
    chosen = resolve_pooling(path, request)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    model = build_model(model_name_or_path, request, max_length=max_length)
    model.eval()
    devices = list(devices or [])
    if len(devices) > 1 and dtype == "bfloat16":
        # Pool workers run outside our autocast context: give them bf16 weights instead.
        model.bfloat16()
        dtype = "bfloat16-weights"
    if len(devices) <= 1:
        model.to(devices[0] if devices else device)
    return Encoder(
        model=model,
        model_name=str(model_name_or_path),
        model_path=path,
        pooling=chosen,
        pooling_detail=model_pooling_detail(path) if chosen == MODEL_POOLING else chosen,
        max_length=max_length,
        device=devices[0] if len(devices) == 1 else device,
        dtype=dtype,
        devices=devices,
    )
