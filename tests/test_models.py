"""resolve_model: the bundled offline default loads; a hub id offline fails fast and names the alternative."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from specter_utils.errors import OfflineError
from specter_utils.models import DEFAULT_MODEL, resolve_model


def test_minilm_resolves_to_the_bundled_model():
    path = Path(resolve_model("minilm"))
    assert DEFAULT_MODEL == "minilm"
    assert path.is_dir() and (path / "config.json").exists()
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == str(path)


@pytest.mark.slow
def test_minilm_loads_offline_with_sentence_transformers(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(resolve_model("minilm"), device="cpu")
    vectors = model.encode(["citation-informed embeddings", "SPECTER"])
    assert vectors.shape == (2, 384)


def test_local_path_passes_through(tmp_path):
    assert resolve_model(tmp_path) == str(tmp_path.resolve())


def test_hub_id_offline_fails_fast_naming_minilm(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(OfflineError, match=r"allenai/scibert_scivocab_uncased.*--model minilm"):
        resolve_model("allenai/scibert_scivocab_uncased")
    assert time.monotonic() - start < 3
