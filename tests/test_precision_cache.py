"""``embed``'s default precision: the probe's choice, cached per machine, said in one line; explicit --dtype kept."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specter_utils.cli import main
from specter_utils.config import EmbedConfig
from specter_utils.embedding import backends, precision_probe
from specter_utils.embedding.encoder import encoder_for
from specter_utils.embedding.precision_cache import CACHE_FILE, cache_path, probe_key, read_entry, write_entry
from specter_utils.embedding.precision_probe import choose, precision_line

WORDS = "brane string duality gauge anomaly black hole entropy lattice inflation soliton instanton".split()
FIGURES = {
    "float32": {"docs_per_s": 10.0, "cos_min": 1.0, "cos_mean": 1.0},
    "int8": {"docs_per_s": 21.0, "cos_min": 0.9951, "cos_mean": 0.998},
}
SKIPPED = {"bfloat16": {"skipped": "this CPU has no bf16 instructions (OpenVINO reports FP32, INT8)"}}


def write_metadata(path: Path, n: int) -> Path:
    rng = np.random.default_rng(0)
    records = {
        f"p{i}": {"paper_id": f"p{i}", "title": f"Paper {i}", "abstract": " ".join(rng.choice(WORDS, 3 + i % 9))}
        for i in range(n)
    }
    path.write_text(json.dumps(records))
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SPECTER_UTILS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / CACHE_FILE


@pytest.fixture
def fake_probe(monkeypatch) -> list[str]:
    """A CPU with OpenVINO and NNCF, where the probe (counted) finds int8 twice as fast; every encoder is the torch
    float32 one, so the test needs neither package."""
    calls: list[str] = []

    def probe(encoder, texts, plan, min_cosine, log, **_):
        calls.append(encoder.model_path)
        record = {"chosen": choose(FIGURES, min_cosine), "min_cosine": min_cosine, "probe_papers": 128}
        return encoder, {**record, "candidates": {**FIGURES, **SKIPPED}}

    monkeypatch.setattr(backends, "openvino_installed", lambda: True)
    monkeypatch.setattr(backends, "missing_int8_packages", lambda: [])
    monkeypatch.setattr(precision_probe, "bf16_reason", lambda: SKIPPED["bfloat16"]["skipped"])
    monkeypatch.setattr(precision_probe, "choose_precision", probe)
    monkeypatch.setattr(
        backends, "_chosen", lambda choice, precision, papers, log: encoder_for(choice.spec.but(dtype="fp32"))
    )
    return calls


def embed(model: Path, meta: Path, out: Path, *flags: str) -> dict:
    argv = ["embed", "--model", str(model), "--metadata", str(meta), "--out", str(out), "--overwrite"]
    assert main([*argv, "--max-length", "16", *flags]) == 0
    return json.loads(out.with_suffix(".meta.json").read_text())


def test_a_bare_embed_probes_once_then_reads_the_cache(
    random_tiny_model: Path, tmp_path: Path, cache: Path, fake_probe: list[str], capsys
) -> None:
    meta = write_metadata(tmp_path / "m.json", 130)
    first = embed(random_tiny_model, meta, tmp_path / "a.jsonl")
    assert len(fake_probe) == 1 and cache.exists()
    assert first["precision_choice"]["chosen"] == "int8" and first["precision_choice"]["probed_at"]
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("precision:")]
    assert lines == [
        f"precision: int8 (probed now, cached in {cache}: int8 2.10x float32, min cosine 0.9951 >= 0.99; "
        "bfloat16 skipped: this CPU has no bf16 instructions)"
    ]
    second = embed(random_tiny_model, meta, tmp_path / "b.jsonl")
    assert len(fake_probe) == 1  # no second probe
    assert second["precision_choice"]["candidates"] == first["precision_choice"]["candidates"]
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("precision:")]
    assert len(lines) == 1 and lines[0].startswith("precision: int8 (probe cached 20")
    # a stricter limit chooses again from the cached figures, without probing
    strict = embed(random_tiny_model, meta, tmp_path / "c.jsonl", "--min-cosine", "0.999", "--quiet")
    assert len(fake_probe) == 1 and strict["precision_choice"]["chosen"] == "float32"
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("precision:")]
    # another length is another entry: probed once more
    embed(random_tiny_model, meta, tmp_path / "d.jsonl", "--max-length", "24")
    assert len(fake_probe) == 2


def test_explicit_dtype_and_small_runs_bypass_the_probe(
    random_tiny_model: Path, tmp_path: Path, cache: Path, fake_probe: list[str], capsys
) -> None:
    meta = write_metadata(tmp_path / "m.json", 130)
    info = embed(random_tiny_model, meta, tmp_path / "a.jsonl", "--dtype", "fp32")
    assert not fake_probe and not cache.exists() and "precision_choice" not in info
    assert "precision:" not in capsys.readouterr().err
    few = embed(random_tiny_model, write_metadata(tmp_path / "few.json", 20), tmp_path / "b.jsonl")
    assert not fake_probe and not cache.exists()
    assert few["precision_choice"] == {
        "chosen": "float32",
        "reason": "20 papers, too few to time (the probe takes 128)",
    }


def test_a_corrupt_cache_is_probed_again_and_rewritten(
    random_tiny_model: Path, tmp_path: Path, cache: Path, fake_probe: list[str]
) -> None:
    meta = write_metadata(tmp_path / "m.json", 130)
    cache.parent.mkdir(parents=True)
    for text in ("{not json", '{"format": 1, "entries": []}', "\x00\xff"):
        cache.write_text(text)
        embed(random_tiny_model, meta, tmp_path / "a.jsonl")
        assert json.loads(cache.read_text())["format"] == 1
    assert len(fake_probe) == 3
    assert [p.name for p in cache.parent.iterdir()] == [CACHE_FILE]  # the atomic write left no temporary file


def test_without_openvino_auto_runs_torch_and_says_so(
    random_tiny_model: Path, tmp_path: Path, cache: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(backends, "openvino_installed", lambda: False)
    info = embed(random_tiny_model, write_metadata(tmp_path / "m.json", 130), tmp_path / "a.jsonl")
    assert info["dtype"] == "float32" and "precision_choice" not in info and not cache.exists()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("precision:")]
    assert lines == ["precision: float32 (auto without the probe: openvino is not installed)"]


def test_the_key_names_model_length_and_pooling(random_tiny_model: Path, tmp_path: Path) -> None:
    spec = EmbedConfig(model=str(random_tiny_model), max_length=16)
    key = probe_key(spec, "default", 300)
    assert key == probe_key(spec, "default", 300) and key["model"] == str(random_tiny_model.resolve())
    assert {"cpu", "cpu_flags", "model_files", "openvino", "nncf"} <= set(key)
    assert probe_key(spec.but(max_length=32), "default", 300) != key
    assert probe_key(spec.but(pooling="cls"), "default", 300) != key
    assert probe_key(spec, "mixed", 300) != key
    assert probe_key(spec.but(model="minilm"), "default", 300)["model"] != key["model"]
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in random_tiny_model.iterdir():  # the model's own files (an openvino/ conversion may sit beside them)
        if path.is_file():
            (copy / path.name).write_bytes(path.read_bytes())
    changed = probe_key(spec.but(model=str(copy)), "default", 300)
    (copy / "config.json").write_text((copy / "config.json").read_text() + " ")
    assert probe_key(spec.but(model=str(copy)), "default", 300)["model_files"] != changed["model_files"]


def test_entries_round_trip_and_bad_ones_read_as_missing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPECTER_UTILS_CACHE", str(tmp_path))
    assert cache_path() == tmp_path / CACHE_FILE
    key, other = {"model": "a", "max_length": 16}, {"model": "b", "max_length": 16}
    record = {"chosen": "int8", "min_cosine": 0.99, "candidates": {**FIGURES, **SKIPPED}}
    assert read_entry(key) is None
    assert write_entry(key, record) and write_entry(other, {**record, "chosen": "float32"})
    assert read_entry(key)["record"] == record and read_entry(other)["record"]["chosen"] == "float32"
    data = json.loads(cache_path().read_text())
    (entry_id,) = [k for k, v in data["entries"].items() if v["key"] == key]
    data["entries"][entry_id]["record"]["candidates"]["int8"] = {"docs_per_s": "fast"}
    cache_path().write_text(json.dumps(data))
    assert read_entry(key) is None and read_entry(other) is not None


def test_bf16_must_keep_0999_and_the_line_says_why_not() -> None:
    figures = {**FIGURES, "bfloat16": {"docs_per_s": 30.0, "cos_min": 0.998}}
    assert choose(figures, 0.99) == "int8"  # bf16 is faster but under its own 0.999
    figures["bfloat16"]["cos_min"] = 0.9995
    assert choose(figures, 0.99) == "bfloat16"
    record = {"chosen": choose(FIGURES, 0.996), "min_cosine": 0.996, "candidates": FIGURES}
    assert precision_line(record, "probe cached X") == (
        "precision: float32 (probe cached X: int8 2.10x float32, min cosine 0.9951 < 0.996)"
    )
