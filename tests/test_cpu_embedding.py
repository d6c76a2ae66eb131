"""Fast CPU embedding: int8 (NNCF) on OpenVINO, ``--dtype auto``'s timed choice, batches by token budget."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specter_utils.cli import main
from specter_utils.data.records import Paper
from specter_utils.embedding.embed import embed_papers, group_batches, length_order, plan_batches, plan_chunks
from specter_utils.embedding.encoder import load_encoder
from specter_utils.embedding.precision_probe import choose, cosine_rows
from specter_utils.embedding.quantize import calibration_sample, sample_digest

WORDS = "brane string duality gauge anomaly black hole entropy lattice inflation soliton instanton".split()


def make_papers(n: int) -> list[Paper]:
    rng = np.random.default_rng(0)
    return [
        Paper(f"p{i}", f"Paper {i} on {WORDS[i % len(WORDS)]}", " ".join(rng.choice(WORDS, 3 + 2 * (i % 9))))
        for i in range(n)
    ]


def write_metadata(path: Path, papers: list[Paper]) -> Path:
    records = {p.paper_id: {"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract} for p in papers}
    path.write_text(json.dumps(records))
    return path


def run_cli(argv: list[str]) -> int:
    """``main``'s exit status, also for the errors argparse raises as SystemExit."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def test_calibration_sample_is_seeded_and_in_input_order() -> None:
    texts = [f"t{i}" for i in range(50)]
    sample = calibration_sample(texts, 10, seed=0)
    assert sample == calibration_sample(texts, 10, seed=0) and len(sample) == 10
    assert sample == sorted(sample, key=texts.index)
    assert calibration_sample(texts, 10, seed=1) != sample
    assert calibration_sample(texts[:5], 10) == texts[:5]
    assert sample_digest(sample) != sample_digest(sample[::-1])


def test_int8_on_a_tiny_model_is_cached_per_model_length_and_scheme(random_tiny_model: Path, monkeypatch) -> None:
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    from specter_utils.embedding import quantize
    from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino

    papers = make_papers(24)
    encoder = load_encoder(str(random_tiny_model), None, max_length=32, device="cpu", dtype="float32")
    texts = [p.text(encoder.sep) for p in papers]
    f32 = embed_papers(to_openvino(encoder, "float32"), papers, batch_size=8, progress=False)
    int8_encoder = to_openvino(encoder, "int8", texts, calibration_size=16)
    int8 = embed_papers(int8_encoder, papers, batch_size=8, progress=False)
    assert int8.ids == f32.ids and np.isfinite(int8.vectors).all()
    assert cosine_rows(int8.vectors, f32.vectors).min() > 0.9
    assert not np.array_equal(int8.vectors, f32.vectors)  # the int8 model really ran
    info = int8.info
    assert info["dtype"] == "openvino-int8" and info["versions"]["nncf"]
    assert info["int8"]["calibration_papers"] == 16 and info["int8"]["scheme"] == "default"
    assert info["int8"]["calibration_sha256"] == sample_digest(calibration_sample(texts, 16))
    assert info["int8"]["quantized_now"]
    cache = Path(int8_encoder.quantization["cache"])
    assert (cache / "model.xml").exists() and (cache / "model.bin").exists()
    assert not list(cache.parent.glob(".*.tmp-*"))  # built in a temporary folder, renamed into place

    def no_quantize(*_args, **_kwargs):
        raise AssertionError("quantized again instead of read from the cache")

    monkeypatch.setattr(quantize, "quantize", no_quantize)
    again = embed_papers(to_openvino(encoder, "int8", texts, calibration_size=16), papers, batch_size=8, progress=False)
    assert np.allclose(again.vectors, int8.vectors, atol=1e-6)
    # another corpus at the same model, length, scheme and sample size: the cached model, calibrated on the first
    other = to_openvino(encoder, "int8", texts[:12], calibration_size=16)
    assert other.quantization["cache"] == str(cache) and not other.quantization["quantized_now"]
    assert other.quantization["calibration_sha256"] == info["int8"]["calibration_sha256"]
    with pytest.raises(BackendUnavailable, match="quantized again"):  # another length is another model
        to_openvino(
            load_encoder(str(random_tiny_model), None, 24, "cpu", "float32"), "int8", texts, calibration_size=16
        )


def test_mixed_scheme_keeps_feed_forward_outputs_and_the_last_layer_in_float(random_tiny_model: Path) -> None:
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    import openvino as ov

    from specter_utils.embedding.openvino_backend import converted_model
    from specter_utils.embedding.quantize import _ignored_scope

    encoder = load_encoder(str(random_tiny_model), None, max_length=32, device="cpu", dtype="float32")
    model, _ = converted_model(encoder, ov.Core())
    kept = _ignored_scope(model, "mixed").names
    assert any("layer.0.output.dense" in name for name in kept)
    assert all("layer.1." in name or "output.dense" in name for name in kept)
    assert not any("layer.0.attention" in name for name in kept)
    assert _ignored_scope(model, "default") is None


def test_int8_unknown_scheme_or_no_papers_is_one_line(random_tiny_model: Path) -> None:
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    from specter_utils.embedding.openvino_backend import BackendUnavailable, to_openvino

    encoder = load_encoder(str(random_tiny_model), None, max_length=32, device="cpu", dtype="float32")
    with pytest.raises(BackendUnavailable, match="scheme 'w4' is not one of"):
        to_openvino(encoder, "int8", ["a text"], scheme="w4")
    with pytest.raises(BackendUnavailable, match="needs papers to calibrate on"):
        to_openvino(encoder, "int8", [])


def test_choose_takes_the_fastest_within_the_cosine_limit() -> None:
    figures = {
        "float32": {"docs_per_s": 10.0, "cos_min": 1.0},
        "bfloat16": {"docs_per_s": 9.0, "cos_min": 0.9999},
        "int8": {"docs_per_s": 20.0, "cos_min": 0.992},
    }
    assert choose(figures, 0.99) == "int8"
    assert choose(figures, 0.999) == "float32"
    figures["bfloat16"]["docs_per_s"] = 15.0
    assert choose(figures, 0.999) == "bfloat16"


def test_dtype_auto_records_its_choice_and_figures_in_the_meta(
    random_tiny_model: Path, tmp_path: Path, monkeypatch
) -> None:
    pytest.importorskip("openvino")
    pytest.importorskip("nncf")
    monkeypatch.setenv("SPECTER_UTILS_CACHE", str(tmp_path / "cache"))  # the probe's cache: the test's own
    meta = write_metadata(tmp_path / "paper_metadata.json", make_papers(140))
    out = tmp_path / "auto.jsonl"
    argv = ["embed", "--model", str(random_tiny_model), "--metadata", str(meta), "--out", str(out)]
    assert main([*argv, "--max-length", "32", "--batch-size", "4", "--dtype", "auto", "--min-cosine", "0.5"]) == 0
    info = json.loads(out.with_suffix(".meta.json").read_text())
    record = info["precision_choice"]
    assert record["min_cosine"] == 0.5 and record["probe_papers"] == 128
    measured = {name: row for name, row in record["candidates"].items() if "docs_per_s" in row}
    assert {"float32", "int8"} <= set(measured) and set(record["candidates"]) == {"float32", "bfloat16", "int8"}
    assert measured["float32"]["cos_min"] == pytest.approx(1.0, abs=1e-5)
    assert record["chosen"] == choose(measured, 0.5)
    assert (
        info["dtype"]
        == {"float32": "openvino-f32", "bfloat16": "openvino-bf16", "int8": "openvino-int8"}[record["chosen"]]
    )


def test_token_budget_batches_by_padded_wordpieces() -> None:
    lengths = np.array([10, 40, 20, 20, 5, 5, 5, 5])
    order = length_order(lengths)
    batches = plan_batches(order, lengths, batch_size=3, token_budget=40)
    assert [len(b) for b in batches] == [1, 2, 4, 1]  # 40 x 1, 20 x 2, 10 x 4, 5 x the one left
    assert all(len(b) * lengths[b[0]] <= 40 for b in batches)
    assert np.array_equal(np.concatenate(batches), order)
    assert [len(b) for b in plan_batches(order, lengths, 3, None)] == [3, 3, 2]
    assert len(plan_batches(order, np.full(8, 100), 3, 40)) == 8  # a paper longer than the budget: alone
    fixed = plan_batches(np.arange(10), np.ones(10), 3, None)
    grouped = [np.concatenate(chunk) for chunk in group_batches(fixed, 7)]
    assert [list(c) for c in grouped] == [list(c) for c in plan_chunks(np.arange(10), 3, 7)]


def test_token_budget_gives_the_same_vectors(random_tiny_model: Path) -> None:
    encoder = load_encoder(str(random_tiny_model), None, max_length=32, device="cpu", dtype="float32")
    papers = make_papers(15)
    fixed = embed_papers(encoder, papers, batch_size=4, progress=False)
    budget = embed_papers(encoder, papers, batch_size=4, token_budget=64, progress=False)
    assert budget.ids == fixed.ids and budget.info["token_budget"] == 64
    assert cosine_rows(budget.vectors, fixed.vectors).min() > 0.99999


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--dtype", "int8", "--backend", "torch"], ("--dtype", "openvino backend", "--backend torch")),
        (["--dtype", "int8", "--engine", "ray"], ("--dtype", "--engine ray")),
        (["--dtype", "fp32", "--min-cosine", "0.99"], ("--min-cosine", "--dtype auto (the default)", "float32")),
        (["--dtype", "auto", "--min-cosine", "1.5"], ("--min-cosine", "(0, 1]")),
        (["--token-budget", "0"], ("--token-budget",)),
        (["--token-budget", "4096", "--multi-gpu"], ("--token-budget", "one device")),
    ],
)
def test_bad_precision_flags_are_one_line(tmp_path: Path, capsys, flags: list[str], words: tuple[str, ...]) -> None:
    meta = write_metadata(tmp_path / "paper_metadata.json", make_papers(3))
    out = tmp_path / "e.jsonl"
    assert run_cli(["embed", "--metadata", str(meta), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specter-utils embed: error:"), err
    assert all(word in err[0] for word in words), err
    assert not out.exists()


def test_int8_without_nncf_is_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nncf" else real(name, *a))
    meta = write_metadata(tmp_path / "paper_metadata.json", make_papers(3))
    assert main(["embed", "--metadata", str(meta), "--out", str(tmp_path / "e.jsonl"), "--dtype", "int8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # without openvino too (a machine without the extra), the line names both
    assert len(err) == 1 and "int8 needs" in err[0] and "nncf" in err[0] and "pip install" in err[0]
