"""Which encoder embeds the papers: plain torch, OpenVINO (float32 or bf16), OpenVINO int8, or the precision probe.

The choice is made once, by name, from the backends ``backend_kinds`` declares; :func:`load_backend` is the one
call the embed stage makes. The Ray engine is another way to run the torch encoder and is chosen by the stage
itself. OpenVINO and int8 first take the warm route (:func:`specter_utils.embedding.openvino_light.warm_encoder`:
the cached model, without torch) and build the encoder with torch only where it finds nothing to start from.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specter_utils.backend_kinds import BACKEND_REGISTRY, BACKENDS
from specter_utils.config import EmbedConfig
from specter_utils.embedding.embed import as_paper_list, length_order, paper_texts, plan_batches
from specter_utils.embedding.encoder import Encoder, encoder_for, resolve_device
from specter_utils.embedding.openvino_light import warm_encoder
from specter_utils.errors import DataError
from specter_utils.vocabularies import INT8_CALIBRATION

Log = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


@dataclass
class BackendChoice:
    """How the papers are to be embedded: the embedding specification (model, pooling, length, precision, device,
    backend: every stage that embeds defaults to embed's) and what picks among the encoders that can run it."""

    spec: EmbedConfig = field(default_factory=EmbedConfig)
    probe: bool = False  # dtype auto from the embed command: on a CPU, the probe's (cached) choice of precision
    int8_scheme: str = "default"
    calibration_size: int = INT8_CALIBRATION  # int8's calibration sample (the cached model is keyed by it)
    min_cosine: float | None = None  # the probe's parity limit (default EmbedConfig.min_cosine)
    token_budget: int | None = None


def missing_int8_packages() -> list[str]:
    """The packages int8 needs that are not installed."""
    return [name for name in ("openvino", "nncf") if importlib.util.find_spec(name) is None]


def openvino_installed() -> bool:
    """Whether the ``openvino`` package is installed (not imported)."""
    return importlib.util.find_spec("openvino") is not None


def wants_openvino(choice: BackendChoice, devices: list[str] | None) -> bool:
    """``backend auto``: OpenVINO for a float32 run on the CPU, when it is installed (it is faster there
    at cosine 1.0 to torch; docs/benchmarks.md). Explicit ``openvino`` always tries it."""
    spec = choice.spec
    if spec.backend != "auto":
        return spec.backend == "openvino"
    if devices or spec.dtype == "bf16" or not openvino_installed():
        return False
    return resolve_device(spec.torch_device).startswith("cpu")


def no_probe_reason(choice: BackendChoice, devices: list[str] | None) -> str | None:
    """Why ``dtype auto`` cannot take the probe's choice here (None: it can): it runs on one CPU, with OpenVINO,
    unless the torch backend is asked for."""
    spec = choice.spec
    if spec.backend == "torch":
        return "--backend torch"
    if devices:
        return "several GPUs"
    device = resolve_device(spec.torch_device)
    if not device.startswith("cpu"):
        return f"device {device}"
    if not openvino_installed():
        return "openvino is not installed"
    return None


def wants_int8(choice: BackendChoice, devices: list[str] | None) -> bool:
    return choice.spec.dtype == "int8"


def wants_probe(choice: BackendChoice, devices: list[str] | None) -> bool:
    return choice.probe and no_probe_reason(choice, devices) is None


def wants_torch(choice: BackendChoice, devices: list[str] | None) -> bool:
    """``torch`` as asked, or ``auto`` where OpenVINO is not wanted."""
    backend = choice.spec.backend
    return backend == "torch" or (backend == "auto" and not wants_openvino(choice, devices))


def backend_name(choice: BackendChoice, devices: list[str] | None = None) -> str:
    """The first declared backend (``backend_kinds``) that applies to ``choice`` on these devices."""
    for name, spec in BACKEND_REGISTRY.items():
        if spec.picks(choice, devices):
            return name
    raise DataError(
        f"no backend applies to --backend {choice.spec.backend} (known: {', '.join(BACKENDS)})", "--backend"
    )


def visible_gpus(log: Log = _stderr) -> list[str] | None:
    """Every visible GPU for a multi-GPU run; None (one device) with a line saying so when there are fewer than 2."""
    import torch

    count = torch.cuda.device_count()
    if count > 1:
        return [f"cuda:{i}" for i in range(count)]
    log(f"embed: --multi-gpu with {count} visible GPU(s): running on one device")
    return None


def _texts(encoder: Encoder, papers: dict) -> list[str]:
    return paper_texts(as_paper_list(papers), encoder.sep)


def _torch(choice: BackendChoice, devices: list[str] | None, **_: Any) -> tuple[Encoder, dict[str, Any]]:
    """The model loaded with torch, on one device or a multi-process pool over ``devices``."""
    return encoder_for(choice.spec, devices), {}


def _openvino(choice: BackendChoice, devices: list[str] | None, log: Log, **_: Any) -> tuple[Encoder, dict[str, Any]]:
    """The model as an OpenVINO encoder (float32 or bf16), or the torch encoder with one line saying why not."""
    spec = choice.spec
    warm = warm_encoder(spec.model, spec.pooling, spec.max_length, spec.torch_device, spec.torch_dtype, devices)
    if warm is not None:
        return warm, {}
    encoder = encoder_for(spec, devices)
    try:
        from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino
    except ImportError as exc:  # sentence-transformers' module layout changed
        log(f"embed: backend openvino unavailable ({exc}); using torch")
        return encoder, {}
    try:
        return to_openvino(encoder, spec.torch_dtype), {}
    except BackendUnavailable as exc:
        log(f"embed: backend openvino unavailable: {exc}; using torch")
        return encoder, {}


def _int8(choice: BackendChoice, papers: dict, **_: Any) -> tuple[Encoder, dict]:
    """int8: the model quantized on a sample of every paper given (so shards share one model)."""
    spec, scheme, size = choice.spec, choice.int8_scheme, choice.calibration_size
    warm = warm_encoder(
        spec.model, spec.pooling, spec.max_length, spec.torch_device, "int8", scheme=scheme, calibration_size=size
    )
    if warm is not None and papers:  # no papers: the full route says so
        return warm, {}
    from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino

    encoder = encoder_for(spec.but(dtype="fp32"))
    try:
        return to_openvino(encoder, "int8", _texts(encoder, papers), scheme, size), {}
    except BackendUnavailable as exc:
        raise DataError(f"int8 is unavailable: {exc}", "--dtype") from None


def _chosen(choice: BackendChoice, precision: str, papers: dict, log: Log) -> Encoder:
    """The encoder of a precision the probe chose, by its own route (warm where its model is cached)."""
    short = {"float32": "fp32", "bfloat16": "bf16", "int8": "int8"}[precision]
    spec = choice.spec.but(dtype=short, backend="openvino")
    build = _int8 if precision == "int8" else _openvino
    return build(dataclasses.replace(choice, spec=spec, probe=False), papers=papers, devices=None, log=log)[0]


def _unprobed(choice: BackendChoice, papers: dict, log: Log, say: Log, reason: str) -> tuple[Encoder, dict[str, Any]]:
    """float32 on OpenVINO, without a probe, for ``reason``, said in one line."""
    say(f"precision: float32 (auto: {reason})")
    return _chosen(choice, "float32", papers, log), {"precision_choice": {"chosen": "float32", "reason": reason}}


def _probe(choice: BackendChoice, papers: dict, log: Log, say: Log, **_: Any) -> tuple[Encoder, dict[str, Any]]:
    """dtype auto on a CPU: the fastest precision within the parity limit, from the probe cached on this machine
    (:mod:`~specter_utils.embedding.precision_cache`) or measured now and cached; and its record for the meta."""
    from specter_utils.embedding.openvino_light import BackendUnavailable
    from specter_utils.embedding.precision_cache import cache_path, probe_key, read_entry, write_entry
    from specter_utils.embedding.precision_probe import (
        PROBE_PAPERS,
        bf16_reason,
        choose,
        choose_precision,
        measured,
        precision_line,
    )

    min_cosine = choice.min_cosine if choice.min_cosine is not None else choice.spec.min_cosine
    int8_missing = missing_int8_packages()
    if int8_missing and bf16_reason():  # nothing to choose from: no probe, no cache entry
        return _unprobed(choice, papers, log, say, f"int8 needs {' and '.join(int8_missing)}; no bf16 instructions")
    key = probe_key(choice.spec, choice.int8_scheme, choice.calibration_size)
    entry = read_entry(key)
    if entry is not None:
        record = dict(entry["record"], min_cosine=min_cosine, probe_cache=str(cache_path()))
        record.update(chosen=choose(measured(record["candidates"]), min_cosine), probed_at=entry["probed_at"])
        say(precision_line(record, f"probe cached {entry['probed_at']}"))
        return _chosen(choice, record["chosen"], papers, log), {"precision_choice": record}
    if len(papers) < PROBE_PAPERS:  # too few to time; a later, larger run probes
        return _unprobed(
            choice, papers, log, say, f"{len(papers)} papers, too few to time (the probe takes {PROBE_PAPERS})"
        )
    encoder = encoder_for(choice.spec.but(dtype="fp32"))

    def plan(lengths):
        return plan_batches(length_order(lengths), lengths, choice.spec.batch_size, choice.token_budget)

    try:
        chosen, record = choose_precision(
            encoder,
            _texts(encoder, papers),
            plan,
            min_cosine=min_cosine,
            int8_scheme=choice.int8_scheme,
            calibration_size=choice.calibration_size,
            log=say,
        )
    except BackendUnavailable as exc:
        log(f"embed: --dtype auto: openvino cannot run this model ({exc}); float32 with torch")
        return encoder, {"precision_choice": {"chosen": "float32", "reason": str(exc)}}
    probed_at = write_entry(key, record)
    where = f"probed now, cached in {cache_path()}" if probed_at else "probed now; the cache could not be written"
    say(precision_line(record, where))
    return chosen, {"precision_choice": {**record, "probed_at": probed_at, "probe_cache": str(cache_path())}}


# The backends that build an encoder (a live view of backend_kinds.BACKEND_REGISTRY); each builder is called as
# builder(choice, papers=, devices=, log=, say=) -> (encoder, meta info)
ENCODERS = BACKEND_REGISTRY.names(lambda spec: spec.build is not None)


def load_backend(
    choice: BackendChoice, papers: dict, *, devices: list[str] | None = None, log: Log = _stderr, say: Log | None = None
) -> tuple[Encoder, dict[str, Any]]:
    """The encoder ``choice`` asks for, and what it adds to the meta.

    ``papers`` are every paper to embed: int8 calibrates on a sample of them, the probe times another. ``log``
    takes warnings; ``say`` (default ``log``) the precision ``dtype auto`` picked, in one line.
    """
    say = say or log
    name = backend_name(choice, devices)
    encoder, info = BACKEND_REGISTRY.get(name).builder()(choice, papers=papers, devices=devices, log=log, say=say)
    if choice.probe and name != "probe":
        say(f"precision: {encoder.info().get('dtype')} (auto without the probe: {no_probe_reason(choice, devices)})")
    return encoder, info


def load_text_encoder(choice: BackendChoice, papers: dict | None = None, log: Log = _stderr) -> Encoder:
    """The loaded encoder ``choice`` asks for, for a stage that encodes texts itself (``evaluate --model``,
    ``search --text``): the same choice as :func:`load_backend`."""
    return load_backend(choice, papers or {}, log=log)[0]
