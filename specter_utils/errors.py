"""Errors that name the file, line and id where input went wrong."""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """Malformed input: carries the file, line and record id it concerns."""

    def __init__(
        self, message: str, path: str | Path | None = None, line: int | None = None, record_id: str | None = None
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.record_id = record_id
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.record_id is not None:
            where += f" (id {self.record_id!r})"
        return f"{where}: {self.message}"


class OfflineError(RuntimeError):
    """Something needs the network and the machine is (or was told to be) offline."""


class DownloadError(DataError):
    """A download failed part-way or its bytes do not match the expected size or checksum."""
