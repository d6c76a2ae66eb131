"""The OpenVINO CPU backend: same vectors as the torch path, cached conversion, clean fallback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specter_utils.cli import main
from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.embed import embed_papers
from specter_utils.embedding.encoder import load_encoder

PAPERS = [
    Paper("a", "Black hole entropy", "Counting D-brane states reproduces the Bekenstein-Hawking entropy " * 3),
    Paper("b", "Lattice QCD", "Quark confinement on a lattice."),
    Paper("c", "Inflation", "Slow-roll inflation and the cosmic microwave background, with many more words here."),
]


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize("pooling", [None, "cls"])
def test_openvino_matches_torch(pooling: str | None) -> None:
    pytest.importorskip("openvino")
    from specter_utils.embedding.openvino_backend import to_openvino

    encoder = load_encoder("minilm", pooling, max_length=32, device="cpu", dtype="float32")
    torch_vectors = embed_papers(encoder, PAPERS, batch_size=2, progress=False)
    ov_encoder = to_openvino(encoder, "float32")
    ov_vectors = embed_papers(ov_encoder, PAPERS, batch_size=2, progress=False)
    assert ov_vectors.ids == torch_vectors.ids
    assert cosine_rows(ov_vectors.vectors, torch_vectors.vectors).min() >= 0.9999
    if pooling is None:  # mean+normalize: unit vectors, as the model's own head
        assert np.allclose(np.linalg.norm(ov_vectors.vectors, axis=1), 1.0, atol=1e-5)
    info = ov_vectors.info
    assert info["backend"] == "openvino" and info["dtype"] == f"openvino-{ov_encoder.precision}"
    assert ov_encoder.precision == "f32" and "openvino" in info["versions"]
    assert (Path(ov_encoder.cache_dir) / "model.xml").exists()  # converted once, reused next time


def test_a_gpu_device_is_refused_with_a_reason() -> None:
    pytest.importorskip("openvino")
    from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino

    encoder = load_encoder("minilm", None, max_length=16, device="cpu")
    with pytest.raises(BackendUnavailable, match="runs on the CPU"):
        to_openvino(type(encoder)(**{**encoder.__dict__, "device": "cuda"}))


def test_cli_falls_back_to_torch_with_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    from specter_utils.embedding import backends, openvino_backend

    def unavailable(*_args, **_kwargs):
        raise openvino_backend.BackendUnavailable("openvino is not installed")

    monkeypatch.setattr(backends, "warm_encoder", lambda *_args, **_kwargs: None)  # no cached model to start from
    monkeypatch.setattr(openvino_backend, "to_openvino", unavailable)
    meta = tmp_path / "paper_metadata.json"
    meta.write_text(
        json.dumps({p.paper_id: {"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract} for p in PAPERS})
    )
    out = tmp_path / "emb.jsonl"
    argv = ["embed", "--metadata", str(meta), "--out", str(out), "--max-length", "16", "--backend", "openvino"]
    assert main([*argv, "--quiet"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "openvino" in line]
    assert err == ["embed: backend openvino unavailable: openvino is not installed; using torch"]
    assert json.loads((tmp_path / "emb.meta.json").read_text())["dtype"] == "float32"


def test_backend_auto_choice(monkeypatch) -> None:
    """auto: OpenVINO only for a float32 CPU run with openvino installed; torch and explicit choices kept."""
    import importlib.util

    from specter_utils.embedding.backends import BackendChoice
    from specter_utils.embedding.backends import wants_openvino as _wants_openvino

    def args(**kw):
        return BackendChoice(EmbedConfig(**{"backend": "auto", "dtype": "auto", "device": "cpu", **kw}))

    installed = importlib.util.find_spec("openvino") is not None
    assert _wants_openvino(args(), None) is installed
    assert not _wants_openvino(args(dtype="bfloat16"), None)
    assert not _wants_openvino(args(device="cuda"), None)
    assert not _wants_openvino(args(), ["cuda:0", "cuda:1"])
    assert not _wants_openvino(args(backend="torch"), None)
    assert _wants_openvino(args(backend="openvino", device="cuda"), None)  # tries, then falls back saying why


def test_backend_registry_names(monkeypatch) -> None:
    """The encoder is picked by name: int8 first, then the probe (dtype auto asked for, on one CPU), then openvino."""
    from specter_utils.embedding import backends
    from specter_utils.embedding.backends import ENCODERS, BackendChoice, backend_name

    monkeypatch.setattr(backends, "wants_openvino", lambda choice, devices: choice.spec.backend != "torch")
    monkeypatch.setattr(backends, "openvino_installed", lambda: True)
    assert set(ENCODERS) == {"torch", "openvino", "int8", "probe"}
    assert backend_name(BackendChoice(EmbedConfig(dtype="int8"))) == "int8"
    assert backend_name(BackendChoice(EmbedConfig(backend="auto", device="cpu"), probe=True)) == "probe"
    assert backend_name(BackendChoice(EmbedConfig(backend="torch", device="cpu"), probe=True)) == "torch"
    cpu = EmbedConfig(backend="auto", device="cpu")
    assert backend_name(BackendChoice(cpu, probe=True), ["cuda:0", "cuda:1"]) == "openvino"
    assert backend_name(BackendChoice(EmbedConfig(backend="openvino", device="cpu"))) == "openvino"
    # every stage's default is the embed command's: backend auto (OpenVINO float32 on a CPU where it is installed)
    assert BackendChoice().spec.backend == "auto" and backend_name(BackendChoice()) == "openvino"
    assert backend_name(BackendChoice(EmbedConfig(backend="torch"))) == "torch"
    monkeypatch.setattr(backends, "openvino_installed", lambda: False)  # no probe without openvino
    assert backend_name(BackendChoice(EmbedConfig(backend="auto", device="cpu"), probe=True)) == "openvino"
