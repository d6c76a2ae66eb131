"""Download the real datasets over HTTPS: resumable, size-checked, atomic.

- SCIDOCS: AI2's public bucket ``ai2-s2-research-public``, prefix ``specter/scidocs/`` (~4.6 GB, CC BY).
- SPECTER training data: same bucket, ``specter/training-data/{train,val}.pkl`` (15.6 GB + 3.5 GB;
  pickled AllenNLP instances, as released in allenai/specter issue #2).
- SNAP arXiv hep-th: ``cit-HepTh.txt.gz`` (unpacked to ``cit-HepTh.txt``) and ``cit-HepTh-abstracts.tar.gz``.

Bytes go to ``FILE.part`` (an interrupted download resumes from it with an HTTP Range request)
and the file is renamed into place only once its size matches the server's Content-Length (and
its SHA-256, where one is known). Offline, a download fails at once with an OfflineError.
"""

from __future__ import annotations

import gzip
import http.client
import os
import shutil
import socket
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from specter_utils.data.scidocs import task_paths
from specter_utils.errors import DataError, DownloadError, OfflineError
from specter_utils.io import atomic_write, file_sha256, read_json, write_json

BUCKET_URL = "https://ai2-s2-research-public.s3-us-west-2.amazonaws.com/"
SCIDOCS_URL = BUCKET_URL + "specter/scidocs/"
SPECTER_URL = BUCKET_URL + "specter/"
SNAP_URL = "https://snap.stanford.edu/data/"
DATASETS = ("scidocs", "specter", "hepth")
MANIFEST_FILE = "download_manifest.json"
CHUNK_BYTES = 1 << 20
USER_AGENT = "specter-utils (research reproduction; https://github.com/allenai/specter)"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RemoteFile:
    """One file to fetch: its URL, where it goes under the output folder, what it must look like."""

    url: str
    relpath: str
    size: int | None = None  # expected bytes where known (else the server's Content-Length is used)
    sha256: str | None = None  # expected checksum where known
    gunzip_to: str | None = None  # unpack a .gz to this relative path after download


def scidocs_files(include_embeddings: bool = True) -> list[RemoteFile]:
    """Every file of the SCIDOCS layout (``data/scidocs.py``), plus the released SPECTER embeddings."""
    root = Path("/scidocs-root")
    relpaths = sorted(str(p.relative_to(root)) for p in task_paths(root).values())
    relpaths.append("recomm/train_similar_papers_model.json")  # the recommender's config in the original
    if include_embeddings:
        relpaths += [f"specter-embeddings/{name}.jsonl" for name in ("cls", "user-citation", "recomm")]
    return [RemoteFile(SCIDOCS_URL + rel, rel) for rel in relpaths]


def hepth_files() -> list[RemoteFile]:
    """SNAP's arXiv hep-th citation graph and abstracts, in the layout ``read_hepth`` expects."""
    return [
        RemoteFile(SNAP_URL + "cit-HepTh.txt.gz", "cit-HepTh.txt.gz", gunzip_to="cit-HepTh.txt"),
        RemoteFile(SNAP_URL + "cit-HepTh-abstracts.tar.gz", "cit-HepTh-abstracts.tar.gz"),
    ]


def dataset_files(name: str, include_embeddings: bool = True) -> list[RemoteFile]:
    """The files of dataset ``name`` (one of DATASETS)."""
    if name == "scidocs":
        return scidocs_files(include_embeddings)
    if name == "specter":  # the released training instances (pickled, for the original AllenNLP trainer)
        return [RemoteFile(SPECTER_URL + f"training-data/{file}", file) for file in ("train.pkl", "val.pkl")]
    if name == "hepth":
        return hepth_files()
    raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(DATASETS)}")


def _offline_error(url: str, dest: Path, why: str) -> OfflineError:
    return OfflineError(
        f"cannot download {url}: {why}. This machine looks offline. Download it on a machine with "
        f"internet (for example: curl -L -C - -o {dest.name} '{url}') and copy it to {dest}, "
        f"or use the offline quick start (specter-utils run --preset demo, on the bundled CiteSeer)"
    )


def check_reachable(url: str, dest: Path, timeout: float = 5.0) -> None:
    """One quick TCP connection to the URL's host; raises OfflineError at once if it fails."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return
    except OSError as exc:
        raise _offline_error(url, dest, f"{parts.hostname}:{port} is not reachable ({exc})") from None


def _total_from_content_range(value: str | None) -> tuple[int | None, int | None]:
    """``bytes 100-199/1000`` -> (100, 1000); ``bytes */1000`` -> (None, 1000)."""
    if not value or not value.startswith("bytes "):
        return None, None
    span, _, total = value[len("bytes ") :].partition("/")
    start = int(span.split("-", 1)[0]) if span and span != "*" else None
    return start, int(total) if total.isdigit() else None


@dataclass
class DownloadResult:
    path: Path
    bytes: int
    sha256: str | None  # None for a file found complete and not re-hashed
    resumed_from: int  # bytes already in the .part file when this run started
    skipped: bool = False  # the file was already complete


def download_file(
    url: str,
    dest: str | Path,
    expected_size: int | None = None,
    sha256: str | None = None,
    timeout: float = 60.0,
    progress: Progress | None = None,
) -> DownloadResult:
    """Fetch ``url`` to ``dest``, resuming from ``dest.part``; the size (and checksum) are checked first. An
    unreachable host is an OfflineError; an HTTP error, an interrupted transfer (the .part is kept for resuming) or a
    size or checksum mismatch a DownloadError."""
    dest = Path(dest)
    if dest.exists():  # only ever renamed into place after its checks passed
        digest = file_sha256(dest) if sha256 is not None else None
        if digest is not None and digest != sha256.lower():
            raise DownloadError(f"existing file's SHA-256 {digest} differs from the expected {sha256}", dest)
        return DownloadResult(dest, dest.stat().st_size, digest, 0, skipped=True)
    check_reachable(url, dest, timeout=min(timeout, 5.0))
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            _, total = _total_from_content_range(exc.headers.get("Content-Range"))
            if total is not None and total == offset:  # the .part already holds the whole file
                return _finish(url, part, dest, offset, total, expected_size, sha256, resumed_from=offset)
            part.unlink()  # the .part is longer than the file or unusable: start over
            return download_file(url, dest, expected_size, sha256, timeout, progress)
        raise DownloadError(f"HTTP {exc.code} {exc.reason} for {url}", dest) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _offline_error(url, dest, f"connection failed ({reason})") from None
    with response:
        if response.status == 206:
            start, total = _total_from_content_range(response.headers.get("Content-Range"))
            if start != offset:
                raise DownloadError(f"server resumed at byte {start}, expected {offset} ({url})", part)
            mode = "ab"
        else:  # 200: the server sent the whole file (it ignored or was not asked for a range)
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            offset, mode = 0, "wb"
        resumed_from = offset
        received = offset
        last_report = time.monotonic()
        with open(part, mode) as handle:
            try:
                while block := response.read(CHUNK_BYTES):
                    handle.write(block)
                    received += len(block)
                    if progress is not None and time.monotonic() - last_report > 10:
                        last_report = time.monotonic()
                        of = f" of {total:,}" if total else ""
                        progress(f"  {dest.name}: {received:,}{of} bytes")
            except (http.client.IncompleteRead, OSError) as exc:
                handle.flush()
                raise DownloadError(
                    f"download of {url} interrupted after {received:,} bytes ({exc}); run the same command "
                    f"again to resume from {part.name}",
                    part,
                ) from None
            handle.flush()
            os.fsync(handle.fileno())
    return _finish(url, part, dest, received, total, expected_size, sha256, resumed_from)


def _finish(
    url: str,
    part: Path,
    dest: Path,
    received: int,
    total: int | None,
    expected_size: int | None,
    sha256: str | None,
    resumed_from: int,
) -> DownloadResult:
    size = part.stat().st_size
    for what, want in (("Content-Length", total), ("expected size", expected_size)):
        if want is not None and size != want:
            if size > want:
                part.unlink()
                hint = "the partial file was removed; run again to download from scratch"
            else:
                hint = f"the partial file is kept; run again to resume from {part.name}"
            raise DownloadError(f"size mismatch for {url}: got {size:,} bytes, {what} says {want:,}; {hint}", part)
    digest = file_sha256(part)
    if sha256 is not None and digest != sha256.lower():
        part.unlink()
        raise DownloadError(f"SHA-256 mismatch for {url}: got {digest}, expected {sha256}; file removed", part)
    os.replace(part, dest)
    return DownloadResult(dest, size, digest, resumed_from)


def gunzip_file(src: Path, dest: Path) -> None:
    """Unpack ``src`` (.gz) to ``dest`` atomically."""
    try:
        with gzip.open(src, "rb") as compressed, atomic_write(dest, "wb") as out:
            shutil.copyfileobj(compressed, out, CHUNK_BYTES)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # atomic_write leaves no partial dest
        raise DataError(f"not a readable .gz file (corrupt or truncated?): {exc}", src) from None


def download_dataset(
    name: str, out_dir: str | Path, include_embeddings: bool = True, progress: Progress | None = print
) -> list[DownloadResult]:
    """Download every file of dataset ``name`` into ``out_dir`` (already complete files are skipped), with
    ``out_dir/download_manifest.json`` naming each file's URL, size and SHA-256."""
    out_dir = Path(out_dir)
    files = dataset_files(name, include_embeddings)
    manifest_path = out_dir / MANIFEST_FILE
    manifest = read_json(manifest_path) if manifest_path.exists() else {"dataset": name, "files": {}}
    results = []
    for remote in files:
        dest = out_dir / remote.relpath
        if progress is not None:
            progress(f"{remote.url} -> {dest}")
        result = download_file(remote.url, dest, remote.size, remote.sha256, progress=progress)
        results.append(result)
        if remote.gunzip_to and not (out_dir / remote.gunzip_to).exists():
            gunzip_file(dest, out_dir / remote.gunzip_to)
        previous = manifest["files"].get(remote.relpath, {})
        manifest["files"][remote.relpath] = {
            "url": remote.url,
            "bytes": result.bytes,
            "sha256": result.sha256 or previous.get("sha256"),
        }
        write_json(manifest_path, manifest)
    return results
