"""The index file: one ``.npz`` (a zip) holding the FAISS index, the paper ids and titles, and a JSON header.

Layout (``FORMAT``)::

    header.json    {"format": FORMAT, how the vectors were made (model, pooling, ...), the index kind and its
                    settings, "dim": d, "count": n}
    ids.npy        paper ids in row order
    titles.npy     titles in row order
    index.faiss    the FAISS index, streamed in and out (never copied whole in memory)

A file is written atomically (temporary file, then rename), so a crash leaves the old one whole. Files of the
earlier layout (``LEGACY_FORMATS``: the FAISS index serialised as one npy array beside ``header``, ``ids`` and
``titles``) are still read."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.errors import DataError
from specter_utils.io import atomic_write
from specter_utils.search.vectors import load_faiss

FORMAT = "specter-utils-index/2"
LEGACY_FORMATS = ("specter-utils-index/1",)  # the FAISS index serialised as one npy array
HEADER_ONLY_KEYS = frozenset({"format", "dim", "count"})  # written from the index itself, not kept in its info


def write_index_file(path: str | Path, index: Any, ids: list[str], titles: list[str], info: dict[str, Any]) -> None:
    """Write ``index`` (a FAISS index) with its ids, titles and ``info`` as one zip file, atomically."""
    faiss = load_faiss()
    header = {"format": FORMAT, **info, "dim": int(index.d), "count": len(ids)}
    with atomic_write(path, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("header.json", json.dumps(header))
        for name, values in (("ids", ids), ("titles", titles)):
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.array(values, dtype=str), allow_pickle=False)
        with archive.open("index.faiss", "w", force_zip64=True) as member:
            faiss.write_index(index, faiss.PyCallbackIOWriter(member.write))


def read_index_file(path: str | Path) -> tuple[Any, list[str], list[str], dict[str, Any]]:
    """The FAISS index, ids, titles and info (the header less ``HEADER_ONLY_KEYS``) of an index file; a missing or
    foreign file, or one whose counts disagree, is a DataError."""
    faiss = load_faiss()
    path = Path(path)
    if not path.exists():
        raise DataError("index file not found", path)
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "header.json" not in names:
                index, ids, titles, header = _read_legacy(path)
            else:
                header = json.loads(archive.read("header.json"))
                ids, titles = (_read_member(archive, f"{name}.npy") for name in ("ids", "titles"))
                if header.get("format") != FORMAT:
                    raise DataError(f"index format {header.get('format')!r}, expected {FORMAT!r}", path)
                with archive.open("index.faiss") as member:
                    index = faiss.read_index(faiss.PyCallbackIOReader(member.read))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, RuntimeError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(
            f"not a specter-utils index ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})", path
        ) from None
    if index.ntotal != len(ids) or len(titles) != len(ids):
        raise DataError(f"index holds {index.ntotal} vectors but {len(ids)} ids and {len(titles)} titles", path)
    info = {k: v for k, v in header.items() if k not in HEADER_ONLY_KEYS}
    return index, [str(x) for x in ids], [str(x) for x in titles], info


def _read_member(archive: zipfile.ZipFile, name: str) -> list:
    with archive.open(name) as member:
        return np.lib.format.read_array(member, allow_pickle=False).tolist()


def _read_legacy(path: Path) -> tuple[Any, list[str], list[str], dict[str, Any]]:
    """An index written before the zip layout: the FAISS index serialised as one npy array."""
    faiss = load_faiss()
    with np.load(path, allow_pickle=False) as data:
        header = json.loads(str(data["header"]))
        raw = data["index"]
        ids = [str(x) for x in data["ids"]]
        titles = [str(x) for x in data["titles"]]
    if header.get("format") not in LEGACY_FORMATS:
        raise DataError(f"index format {header.get('format')!r}, expected {FORMAT!r}", path)
    return faiss.deserialize_index(raw), ids, titles, header
