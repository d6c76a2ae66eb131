"""``embed --dtype auto`` on a CPU: the fastest of f32, bf16 and int8, measured here, within a parity limit.

A short timed probe embeds a seeded sample of the user's papers (sorted by length and batched as the
run batches them) with each precision on the OpenVINO backend, twice in alternating order, and keeps
the faster pass of each, so that a load change on a shared machine favours no one. int8's vectors must
have a minimum cosine to f32 over the probe sample of at least the user's limit (default 0.99: the int8
model's task scores are within 0.3 MAP of f32's, bench/measured/int8_calibration_hepth.md); bf16's at
least 0.999, and bf16 is left out, with the reason, on a CPU without bf16 instructions (OpenVINO would
run it at f32). The choice and every figure go into the embeddings' meta (``precision_choice``);
:mod:`specter_utils.embedding.precision_cache` keeps them per machine, so a later run does not probe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.embedding.encoder import Encoder
from specter_utils.embedding.openvino_light import BackendUnavailable  # light: a cached choice loads no torch
from specter_utils.embedding.quantize import calibration_sample
from specter_utils.executed import cpu_flags
from specter_utils.vocabularies import INT8_CALIBRATION

PROBE_PAPERS = 128
PROBE_SEED = 1  # not the calibration sample's seed, so the probe mostly sees papers int8 was not fitted on
PROBE_ROUNDS = 2
BF16_MIN_COSINE = 0.999  # bf16 only rounds: below this its vectors are not the same model's


def bf16_reason() -> str | None:
    """Why bf16 would not run as bf16 on this CPU (None when OpenVINO reports bf16 support)."""
    import openvino as ov

    capabilities = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    if "BF16" in capabilities:
        return None
    return f"this CPU has no bf16 instructions (OpenVINO reports {', '.join(capabilities)}): it would run at f32"


def _timed_pass(encoder: Encoder, texts: list[str], batches: list[np.ndarray]) -> tuple[float, np.ndarray]:
    vectors = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    started = time.perf_counter()
    for rows in batches:
        vectors[rows] = encoder.encode([texts[i] for i in rows], len(rows))
    return time.perf_counter() - started, vectors


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity."""
    norms = np.clip(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12, None)
    return (a * b).sum(1) / norms


def probe(
    encoders: dict[str, Encoder], texts: list[str], plan: Callable[[np.ndarray], list[np.ndarray]]
) -> dict[str, dict[str, float]]:
    """docs/s (best of ``PROBE_ROUNDS`` alternating passes) and cosine to ``float32`` for each encoder on ``texts``.

    ``plan`` turns the texts' wordpiece lengths into batches (row indices), as the run plans them.
    """
    reference = encoders["float32"]
    batches = plan(reference.token_lengths(texts))
    for encoder in encoders.values():  # warm-up: first-inference allocations stay out of the clock
        encoder.encode([texts[i] for i in batches[0]], len(batches[0]))
    seconds = {name: float("inf") for name in encoders}
    vectors: dict[str, np.ndarray] = {}
    names = list(encoders)
    for number in range(PROBE_ROUNDS):
        for name in names if number % 2 == 0 else names[::-1]:
            elapsed, vectors[name] = _timed_pass(encoders[name], texts, batches)
            seconds[name] = min(seconds[name], elapsed)
    figures = {}
    for name in names:
        cosine = cosine_rows(vectors[name], vectors["float32"])
        figures[name] = {
            "docs_per_s": round(len(texts) / seconds[name], 2),
            "cos_min": round(float(cosine.min()), 6),
            "cos_mean": round(float(cosine.mean()), 6),
        }
    return figures


def limit(name: str, min_cosine: float) -> float:
    """The least cosine to f32 candidate ``name`` must keep: ``min_cosine``, and at least 0.999 for bf16."""
    return max(min_cosine, BF16_MIN_COSINE) if name == "bfloat16" else min_cosine


def measured(candidates: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The candidates the probe timed (not those it skipped, with their reason)."""
    return {name: row for name, row in candidates.items() if "skipped" not in row}


def choose(figures: dict[str, dict[str, float]], min_cosine: float) -> str:
    """The fastest candidate whose minimum cosine to f32 reaches its :func:`limit` (f32 always does)."""
    allowed = [name for name, row in figures.items() if name == "float32" or row["cos_min"] >= limit(name, min_cosine)]
    return max(allowed, key=lambda name: figures[name]["docs_per_s"])


def precision_line(record: dict[str, Any], source: str) -> str:
    """The one line ``embed`` says of its choice: "precision: int8 (probe cached ...: int8 2.10x float32, min
    cosine 0.9951 >= 0.99; bfloat16 skipped: this CPU has no bf16 instructions)"."""
    candidates = record["candidates"]
    base = candidates["float32"]["docs_per_s"]
    parts = []
    for name, row in candidates.items():
        if name == "float32":
            continue
        if "skipped" in row:
            parts.append(f"{name} skipped: {row['skipped'].split(' (')[0]}")
            continue
        bar = limit(name, record["min_cosine"])
        sign = ">=" if row["cos_min"] >= bar else "<"
        parts.append(f"{name} {row['docs_per_s'] / base:.2f}x float32, min cosine {row['cos_min']:.4f} {sign} {bar}")
    return f"precision: {record['chosen']} ({source}: {'; '.join(parts) or 'float32 only'})"


def choose_precision(
    encoder: Encoder,
    texts: list[str],
    plan: Callable[[np.ndarray], list[np.ndarray]],
    min_cosine: float = EmbedConfig.min_cosine,
    int8_scheme: str = "default",
    calibration_size: int = INT8_CALIBRATION,
    log: Callable[[str], None] = print,
) -> tuple[Encoder, dict[str, Any]]:
    """The OpenVINO encoder of the fastest precision within ``min_cosine``, and the record for the meta.

    ``encoder`` is the loaded float32 model; ``texts`` are every paper to embed (int8 calibrates on a
    sample of them, the probe times another). Raises BackendUnavailable when OpenVINO cannot run the model.
    """
    from specter_utils.embedding.openvino_backend import to_openvino  # torch: only where the probe runs

    sample = calibration_sample(texts, PROBE_PAPERS, PROBE_SEED)
    encoders: dict[str, Encoder] = {"float32": to_openvino(encoder, "float32")}
    skipped: dict[str, str] = {}
    reason = bf16_reason()
    if reason:
        skipped["bfloat16"] = reason
    else:
        encoders["bfloat16"] = to_openvino(encoder, "bfloat16")
    try:
        encoders["int8"] = to_openvino(
            encoder, "int8", calibration_texts=texts, scheme=int8_scheme, calibration_size=calibration_size
        )
    except BackendUnavailable as exc:  # nncf missing: int8 is not a candidate, f32 and bf16 still are
        skipped["int8"] = str(exc)
    log(f"embed: --dtype auto: timing {', '.join(encoders)} on {len(sample)} of the papers, once on this machine")
    figures = probe(encoders, sample, plan)
    chosen = choose(figures, min_cosine)
    record = {
        "chosen": chosen,
        "min_cosine": min_cosine,
        "probe_papers": len(sample),
        "probe_seed": PROBE_SEED,
        "probe_rounds": PROBE_ROUNDS,
        "candidates": {**figures, **{name: {"skipped": why} for name, why in skipped.items()}},
        "cpu_flags": cpu_flags(),
    }
    return encoders[chosen], record
