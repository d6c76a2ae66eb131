"""The warm OpenVINO route: a cached model run without torch gives the full route's vectors and meta, and falls back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from specter_utils.data.records import Paper
from specter_utils.embedding.embed import embed_papers
from specter_utils.embedding.encoder import load_encoder
from specter_utils.errors import DataError
from specter_utils.models import resolve_model
from specter_utils.paths import REPO_ROOT

pytest.importorskip("openvino")

PAPERS = [
    Paper("long", "Black hole entropy", "Counting D-brane states reproduces the Bekenstein-Hawking entropy. " * 20),
    Paper("empty", "Lattice QCD", ""),
    Paper("unicode", "Ünïcode ☃ 中文 — naïve café", "émigré 😀 ﬁne Ⅻ \u00a0spaced\ttabs\ncontrol\x07 end"),
    Paper("sep", "A [SEP] inside", "and [CLS] [PAD] [UNK] tokens, UPPER case and   spaces  "),
    Paper("short", "x", "y"),
]
TEXTS = [
    "",
    " ",
    "a",
    "Black hole entropy[SEP]" + "Counting D-brane states. " * 60,
    "Ünïcode ☃ 中文 — naïve café[SEP]émigré 😀 ﬁne Ⅻ",
    "tabs\tand\nnewlines\r\n and\u200bzero width",
    "A [SEP] inside [CLS] [PAD] [MASK] tokens",
    "ALL CAPS Title[SEP]",
]
HEAVY = ("torch", "transformers", "sentence_transformers")


def tiny_sentence_model(model: Path, out: Path, pooling: str = "mean") -> Path:
    """``model`` (a plain BERT) as a sentence-transformers model: Transformer, Pooling(``pooling``), Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    transformer = Transformer(str(model), max_seq_length=64)
    pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)
    SentenceTransformer(modules=[transformer, pool, Normalize()], device="cpu").save(str(out))
    return out


def full_route(model: str, pooling: str | None, max_length: int, dtype: str = "float32", texts=(), **kwargs):
    """The encoder the full route builds: the torch model loaded, then converted (or read) and compiled."""
    from specter_utils.embedding.openvino_backend import to_openvino

    encoder = load_encoder(model, pooling, max_length, "cpu", "float32")
    return to_openvino(encoder, dtype, list(texts), **kwargs)


def test_package_versions_are_the_modules_versions() -> None:
    """The conversion's key reads versions from the packages' metadata: the same strings as their ``__version__``,
    so a folder converted before is found again."""
    import openvino as ov
    import sentence_transformers
    import torch
    import transformers

    from specter_utils.embedding.openvino_light import conversion_versions

    path = resolve_model("minilm")
    assert conversion_versions(path, ov.__version__) == {
        "model": str(Path(path).resolve()),
        "openvino": ov.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }


@pytest.mark.parametrize("which", ["minilm", "tiny"])
def test_cached_tokenizer_gives_transformers_ids(which: str, random_tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from specter_utils.embedding.openvino_light import CachedTokenizer, save_tokenizer

    hf = AutoTokenizer.from_pretrained(resolve_model("minilm") if which == "minilm" else str(random_tiny_model))
    assert save_tokenizer(hf, tmp_path)
    cached = CachedTokenizer(tmp_path)
    assert cached.sep_token == hf.sep_token == "[SEP]"
    texts = TEXTS + [paper.text(hf.sep_token) for paper in PAPERS]
    for max_length in (2, 16, 128, 512):
        for batch in (texts, texts[:1], texts[3:5]):
            want = hf(batch, padding=True, truncation=True, max_length=max_length, return_tensors="np")
            got = cached(batch, padding=True, truncation=True, max_length=max_length, return_tensors="np")
            assert set(got) == set(want) == {"input_ids", "token_type_ids", "attention_mask"}
            for name in got:
                assert np.array_equal(got[name], want[name]), (name, max_length)
        lengths = cached(texts, truncation=True, max_length=max_length)["input_ids"]
        assert lengths == hf(texts, truncation=True, max_length=max_length)["input_ids"]


def test_warm_route_gives_the_full_routes_vectors_and_meta() -> None:
    """minilm (mean + Normalize), f32: the same vectors bit for bit and the same meta, with no torch model."""
    from specter_utils.embedding.openvino_light import WarmOpenVINOEncoder, warm_encoder

    full = embed_papers(full_route("minilm", None, 32), PAPERS, batch_size=2, progress=False)
    warm_encoder_ = warm_encoder("minilm", None, 32, "cpu", "auto")
    assert isinstance(warm_encoder_, WarmOpenVINOEncoder) and warm_encoder_.model is None
    warm = embed_papers(warm_encoder_, PAPERS, batch_size=2, progress=False)
    assert warm.ids == full.ids
    assert np.abs(warm.vectors - full.vectors).max() == 0.0
    assert warm.info == full.info
    assert warm.info["dtype"] == "openvino-f32" and warm.info["pooling_detail"] == "mean+normalize"


def test_warm_route_on_a_copied_model_falls_back_then_matches(random_tiny_model: Path, tmp_path: Path) -> None:
    """No cache: None (the full route runs and converts); then the warm route, the same vectors and meta. A plain
    transformers model pools [CLS] by default; mean asked for by name reads the same converted model."""
    from specter_utils.embedding.openvino_light import warm_encoder

    model = str(shutil.copytree(random_tiny_model, tmp_path / "model"))
    assert warm_encoder(model, None, 24, "cpu") is None  # nothing cached yet
    for pooling in (None, "mean"):
        full = embed_papers(full_route(model, pooling, 24), PAPERS, batch_size=3, progress=False)
        warm = embed_papers(warm_encoder(model, pooling, 24, "cpu"), PAPERS, batch_size=3, progress=False)
        assert np.abs(warm.vectors - full.vectors).max() == 0.0 and warm.info == full.info
        assert warm.info["pooling_detail"] == (pooling or "cls")


def test_warm_route_reads_a_sentence_transformers_head(random_tiny_model: Path, tmp_path: Path) -> None:
    from specter_utils.embedding.openvino_light import folder_head, warm_encoder

    model = tiny_sentence_model(random_tiny_model, tmp_path / "st")
    assert folder_head(model, "model") == ("mean", True)
    full = embed_papers(full_route(str(model), "auto", 24), PAPERS, batch_size=2, progress=False)
    warm = embed_papers(warm_encoder(str(model), "auto", 24, "cpu"), PAPERS, batch_size=2, progress=False)
    assert np.abs(warm.vectors - full.vectors).max() == 0.0 and warm.info == full.info
    # what the warm route does not run: another head, a GPU, several devices, too long an input, a deleted tokenizer
    other = tiny_sentence_model(random_tiny_model, tmp_path / "max", pooling="max")
    assert folder_head(other, "model") is None and warm_encoder(str(other), None, 24, "cpu") is None
    assert warm_encoder(str(model), None, 24, "cuda") is None
    assert warm_encoder(str(model), None, 24, None, devices=["cpu", "cpu"]) is None
    assert warm_encoder(str(model), None, 513, "cpu") is None
    with pytest.raises(DataError, match="exceeds the 512 positions"):
        load_encoder(str(model), None, 513, "cpu")
    (Path(warm.info["openvino_cache"]) / "tokenizer_call.json").unlink()
    assert warm_encoder(str(model), None, 24, "cpu") is None
    full_route(str(model), None, 24)  # the full route saves it again
    assert warm_encoder(str(model), None, 24, "cpu") is not None


def test_warm_int8_reads_the_cached_quantized_model(random_tiny_model: Path, tmp_path: Path) -> None:
    pytest.importorskip("nncf")
    from specter_utils.embedding.openvino_light import warm_encoder

    model = str(shutil.copytree(random_tiny_model, tmp_path / "model"))
    texts = [paper.text("[SEP]") for paper in PAPERS] * 4
    assert warm_encoder(model, None, 24, "cpu", "int8", calibration_size=8) is None  # not quantized yet
    full_route(model, None, 24, "int8", texts, calibration_size=8)  # quantizes and caches
    full = embed_papers(full_route(model, None, 24, "int8", texts, calibration_size=8), PAPERS, progress=False)
    warm = embed_papers(warm_encoder(model, None, 24, "cpu", "int8", calibration_size=8), PAPERS, progress=False)
    assert np.abs(warm.vectors - full.vectors).max() == 0.0 and warm.info == full.info
    assert warm.info["dtype"] == "openvino-int8" and warm.info["int8"]["quantized_now"] is False
    assert warm_encoder(model, None, 24, "cpu", "int8", calibration_size=9) is None  # another sample size
    assert warm_encoder(model, None, 24, "cpu", "int8", scheme="mixed", calibration_size=8) is None


def _cli_modules(argv: list[str]) -> dict:
    """Run the command line in a fresh interpreter; its exit status, stderr and the heavy modules it imported."""
    code = (
        "import json, sys\n"
        "from specter_utils.cli import main\n"
        f"rc = main({argv!r})\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'sentence_transformers'})\n"
        "print(json.dumps({'rc': rc, 'heavy': heavy, 'workflow': 'specter_utils.workflow.embed' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_a_warm_embed_command_imports_no_torch(tmp_path: Path) -> None:
    """The second ``embed`` of a model (converted and its tokenizer saved by the first) starts without torch,
    transformers or sentence-transformers, and writes the first's file."""
    meta = tmp_path / "papers.json"
    records = {p.paper_id: {"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract} for p in PAPERS}
    meta.write_text(json.dumps(records))
    argv = ["embed", "--metadata", str(meta), "--max-length", "32", "--quiet", "--overwrite"]
    full = embed_papers(full_route("minilm", None, 32), PAPERS, progress=False)  # the cache, as a first run leaves it
    warm = _cli_modules([*argv, "--out", str(tmp_path / "warm.jsonl")])
    assert warm["rc"] == 0 and warm["heavy"] == [], warm
    vectors = np.load(tmp_path / "warm.npy")
    order = [line.strip() for line in (tmp_path / "warm.ids.txt").read_text().splitlines()]
    assert np.abs(vectors - full.vectors[[full.ids.index(i) for i in order]]).max() == 0.0
    written = json.loads((tmp_path / "warm.meta.json").read_text())
    assert written["dtype"] == "openvino-f32" and written["versions"] == full.info["versions"]


def test_a_missing_metadata_file_fails_before_the_embedding_stack(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    done = _cli_modules(["embed", "--metadata", str(missing), "--out", str(tmp_path / "e.jsonl"), "--dtype", "int8"])
    assert done["rc"] == 2 and not done["workflow"] and done["heavy"] == []
    lines = done["stderr"].strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0] and "not found" in lines[0]


def test_the_device_is_known_without_torch_where_no_gpu_can_be(monkeypatch) -> None:
    """``resolve_device(None)`` asks torch only where a GPU is possible: not with a CPU-only torch build, on macOS,
    or on Linux without a GPU driver's device file."""
    from specter_utils import devices
    from specter_utils.embedding import encoder

    monkeypatch.setattr(devices.sys, "platform", "linux")
    monkeypatch.setattr(devices, "package_version", lambda name: "2.13.0+cpu")
    assert not devices.gpu_possible() and encoder.resolve_device(None) == "cpu"
    monkeypatch.setattr(devices, "package_version", lambda name: "2.13.0")
    monkeypatch.setattr(devices.glob, "glob", lambda pattern: [])
    assert not devices.gpu_possible()
    monkeypatch.setattr(devices.glob, "glob", lambda pattern: ["/dev/nvidia0"] if pattern == "/dev/nvidia*" else [])
    assert devices.gpu_possible()
    monkeypatch.setattr(devices.sys, "platform", "darwin")
    assert not devices.gpu_possible()
    monkeypatch.setattr(devices.sys, "platform", "win32")
    assert devices.gpu_possible()
    assert encoder.resolve_device("cpu") == "cpu"
