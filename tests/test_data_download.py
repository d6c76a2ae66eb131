"""Downloads against a local HTTP server on 127.0.0.1 only: resume, size check, offline error."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import socket
import threading
import time

import pytest

from specter_utils.data import download
from specter_utils.data.download import dataset_files, download_dataset, download_file
from specter_utils.errors import DownloadError, OfflineError

PAYLOAD = bytes(range(256)) * 400  # 102,400 bytes


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD with Range support; ``short_by`` sends fewer bytes than Content-Length says."""

    payload = PAYLOAD
    short_by = 0
    ranges: list[str | None] = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        range_header = self.headers.get("Range")
        type(self).ranges.append(range_header)
        start = int(range_header.split("=")[1].rstrip("-")) if range_header else 0
        body = self.payload[start:]
        self.send_response(206 if range_header else 200)
        if range_header:
            self.send_header("Content-Range", f"bytes {start}-{len(self.payload) - 1}/{len(self.payload)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) - self.short_by])

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.ranges = []
    _Handler.short_by = 0
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_full_download_is_checked_and_renamed(server, tmp_path):
    dest = tmp_path / "file.bin"
    result = download_file(f"{server}/file.bin", dest, sha256=hashlib.sha256(PAYLOAD).hexdigest())
    assert dest.read_bytes() == PAYLOAD
    assert result.bytes == len(PAYLOAD) and result.resumed_from == 0
    assert not (tmp_path / "file.bin.part").exists()
    assert _Handler.ranges == [None]
    again = download_file(f"{server}/file.bin", dest)  # complete files are not fetched again
    assert again.skipped and _Handler.ranges == [None]


def test_resume_from_part_file(server, tmp_path):
    dest = tmp_path / "file.bin"
    (tmp_path / "file.bin.part").write_bytes(PAYLOAD[:40_000])
    result = download_file(f"{server}/file.bin", dest)
    assert _Handler.ranges == ["bytes=40000-"]
    assert result.resumed_from == 40_000
    assert dest.read_bytes() == PAYLOAD


def test_short_transfer_keeps_part_then_resumes(server, tmp_path):
    dest = tmp_path / "file.bin"
    _Handler.short_by = 1_000
    with pytest.raises(DownloadError, match="size mismatch.*resume"):
        download_file(f"{server}/file.bin", dest)
    assert not dest.exists()
    assert (tmp_path / "file.bin.part").stat().st_size == len(PAYLOAD) - 1_000
    _Handler.short_by = 0
    download_file(f"{server}/file.bin", dest)
    assert _Handler.ranges[-1] == f"bytes={len(PAYLOAD) - 1_000}-"
    assert dest.read_bytes() == PAYLOAD


def test_expected_size_and_checksum_mismatch(server, tmp_path):
    with pytest.raises(DownloadError, match="expected size"):
        download_file(f"{server}/file.bin", tmp_path / "a.bin", expected_size=5)
    with pytest.raises(DownloadError, match="SHA-256 mismatch"):
        download_file(f"{server}/file.bin", tmp_path / "b.bin", sha256="0" * 64)
    assert not (tmp_path / "b.bin").exists() and not (tmp_path / "b.bin.part").exists()


def test_offline_fails_at_once_naming_the_url(tmp_path):
    with socket.socket() as sock:  # a port with nothing listening on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/scidocs/cite/test.qrel"
    start = time.monotonic()
    with pytest.raises(OfflineError, match=f"{url}.*offline.*curl"):
        download_file(url, tmp_path / "test.qrel")
    assert time.monotonic() - start < 5


def test_dataset_download_unpacks_and_writes_manifest(server, tmp_path, monkeypatch):
    edges = b"# header\n1013\t1002\n"
    monkeypatch.setattr(_Handler, "payload", gzip.compress(edges))
    monkeypatch.setattr(
        download,
        "hepth_files",
        lambda: [download.RemoteFile(f"{server}/cit-HepTh.txt.gz", "cit-HepTh.txt.gz", gunzip_to="cit-HepTh.txt")],
    )
    results = download_dataset("hepth", tmp_path, progress=None)
    assert (tmp_path / "cit-HepTh.txt").read_bytes() == edges
    manifest = (tmp_path / "download_manifest.json").read_text()
    assert "cit-HepTh.txt.gz" in manifest and results[0].sha256 in manifest


def test_dataset_file_lists():
    scidocs = {f.relpath: f.url for f in dataset_files("scidocs")}
    assert scidocs["cite/test.qrel"] == (
        "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com/specter/scidocs/cite/test.qrel"
    )
    assert {"paper_metadata_mag_mesh.json", "recomm/propensity_scores.json", "mesh/val.csv"} <= set(scidocs)
    assert "specter-embeddings/cls.jsonl" not in {f.relpath for f in dataset_files("scidocs", False)}
    assert [f.relpath for f in dataset_files("specter")] == ["train.pkl", "val.pkl"]
    assert all(f.url.startswith("https://") for name in ("scidocs", "specter", "hepth") for f in dataset_files(name))
    with pytest.raises(ValueError):
        dataset_files("mnist")
