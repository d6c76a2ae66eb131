"""File helpers: atomic writes and JSON / JSONL readers that report file and line on error."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from specter_utils.errors import DataError


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once at import: os.umask is process-wide, so never toggle it while writing


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and rename it into place only on success: a crash part-way leaves
    the previous file (or no file) untouched, never a half-written one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file normal permissions
    binary = "b" in mode
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON, atomically."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False)  # one C-encoder call; json.dump streams slowly
    with atomic_write(path) as handle:
        handle.write(text)
        handle.write("\n")


def write_jsonl(path: str | Path, rows: Any) -> int:
    """Write an iterable of JSON-serialisable rows, one per line, atomically; return the count."""
    count = 0
    with atomic_write(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_text(path: str | Path) -> str:
    """Read a UTF-8 text file; non-UTF-8 bytes raise a DataError with the line they are on."""
    path = Path(path)
    if not path.exists():
        raise DataError("file not found", path)
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start})", path, line) from None


def _reject_duplicate_keys(path: Path):
    def hook(pairs: list[tuple[str, object]]) -> dict:
        seen: dict[str, object] = {}
        for key, value in pairs:
            if key in seen:
                raise DataError("duplicate id in one JSON object", path, record_id=key)
            seen[key] = value
        return seen

    return hook


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (the package's one JSON reader), rejecting duplicate keys (``json`` would silently keep the
    last); errors name file and line."""
    path = Path(path)
    text = read_text(path)
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_keys(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL file (``.gz``: gzip-compressed)."""
    path = Path(path)
    if not path.exists():
        raise DataError("file not found", path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for line_number, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(f"not valid UTF-8 (offset {exc.start} in line)", path, line_number) from None
                if not line.strip():
                    continue
                try:
                    yield line_number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, line_number) from None
    except (OSError, EOFError) as exc:  # a truncated or non-gzip .gz file
        raise DataError(f"cannot read: {exc}", path) from None


def iter_text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` of a UTF-8 text file (``.gz``: gzip-compressed), streaming, newline stripped,
    blank lines included; a byte that is not UTF-8 or a corrupt ``.gz`` is a DataError."""
    path = Path(path)
    if not path.exists():
        raise DataError("file not found", path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    line_number = 0
    try:
        with opener(path, "rb") as handle:
            for line_number, raw in enumerate(handle, start=1):
                try:
                    yield line_number, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    raise DataError(f"not valid UTF-8 (offset {exc.start} in line)", path, line_number) from None
    except (OSError, EOFError) as exc:  # a truncated or non-gzip .gz file
        raise DataError(f"cannot read: {exc}", path, line_number + 1) from None


def read_lines(path: str | Path) -> list[str]:
    """Non-blank, stripped lines of a text file (for example a split file of ids)."""
    return [line.strip() for line in read_text(path).splitlines() if line.strip()]
