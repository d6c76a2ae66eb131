"""Split one embedding job into ``n`` shards (separate cluster jobs) and merge their files.

Shard ``i`` of ``n`` holds papers ``i, i+n, i+2n, ...`` of the input order (round robin: every shard
gets the same number of papers and the same mix of lengths). Each shard file's meta records the
shard, the total and a fingerprint of the full id list, so a merge can check that all ``n`` shards
come from the same inputs and settings and restore the input order exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.embedding.io import EmbeddingSet, read_embeddings, sidecar_paths, write_embeddings
from specter_utils.errors import DataError

# Meta entries that must agree between shards (they decide the vectors).
SETTINGS = EmbedConfig.file_keys("model_path", "device")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/8"`` -> ``(2, 8)``; the index is 0-based (``0/8`` ... ``7/8``)."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"--shard must look like i/n (e.g. 0/4), got {text!r}") from None
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"--shard {text}: need n >= 1 and 0 <= i < n (shards are numbered from 0)")
    return index, count


def ids_fingerprint(ids: Iterable[str]) -> str:
    """sha256 of the id list in order."""
    return hashlib.sha256("".join(f"{paper_id}\n" for paper_id in ids).encode()).hexdigest()


def select_shard(ids: list[str], index: int, count: int) -> list[str]:
    """The ids of shard ``index`` of ``count`` (round robin over the input order)."""
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"bad shard {index}/{count}")
    return ids[index::count]


def shard_info(ids: list[str], index: int, count: int) -> dict[str, Any]:
    """What a shard file's meta records about its place in the whole."""
    return {"index": index, "count": count, "total": len(ids), "fingerprint": ids_fingerprint(ids)}


def _read_shard(path: Path) -> EmbeddingSet:
    """A shard file (.jsonl, for the titles); its meta must carry shard information."""
    if path.suffix != ".jsonl":
        raise DataError("give the shard's .jsonl file", path)
    if not sidecar_paths(path)["meta"].exists():
        raise DataError(f"no {sidecar_paths(path)['meta'].name} beside the shard: is it a shard file?", path)
    shard = read_embeddings(path)
    info = shard.info.get("shard")
    if not isinstance(info, dict) or not {"index", "count", "total", "fingerprint"} <= set(info):
        raise DataError("meta has no 'shard' entry: not written with --shard", sidecar_paths(path)["meta"])
    return shard


def merge_shards(shards: list[tuple[Path, EmbeddingSet]]) -> EmbeddingSet:
    """Put the rows of all ``n`` shards back in input order; any gap, overlap or mismatch is a DataError."""
    if not shards:
        raise DataError("no shard files to merge")
    first_path, first = shards[0]
    ref = first.info["shard"]
    count, total = int(ref["count"]), int(ref["total"])
    by_index: dict[int, Path] = {}
    for path, shard in shards:
        info = shard.info["shard"]
        if (int(info["count"]), int(info["total"]), info["fingerprint"]) != (count, total, ref["fingerprint"]):
            raise DataError(
                f"shard {info['index']}/{info['count']} of {info['total']} papers comes from other inputs than "
                f"{first_path.name} (shard {ref['index']}/{count} of {total})",
                path,
            )
        for key in SETTINGS:
            if shard.info.get(key) != first.info.get(key):
                raise DataError(
                    f"{key} {shard.info.get(key)!r} differs from {first_path.name} ({first.info.get(key)!r})", path
                )
        index = int(info["index"])
        if index in by_index:
            raise DataError(f"shard {index}/{count} given twice (also {by_index[index]})", path)
        expected = len(range(index, total, count))
        if len(shard) != expected:
            raise DataError(f"shard {index}/{count} has {len(shard)} papers, expected {expected}", path)
        by_index[index] = path
    missing = sorted(set(range(count)) - set(by_index))
    if missing:
        raise DataError(f"missing shard(s) {', '.join(f'{i}/{count}' for i in missing)}", first_path.parent)
    ids: list[str] = [""] * total
    titles: list[str] = [""] * total
    vectors = np.zeros((total, first.dim), dtype=np.float32)
    for _, shard in shards:
        index = int(shard.info["shard"]["index"])
        ids[index::count] = shard.ids
        titles[index::count] = shard.titles or [""] * len(shard)
        vectors[index::count] = shard.vectors
    if ids_fingerprint(ids) != ref["fingerprint"]:
        raise DataError("merged ids do not match the fingerprint recorded in the shards", first_path)
    info = {k: v for k, v in first.info.items() if k not in {"shard", "count", "dim", "device"}}
    info["device"] = ",".join(sorted({str(shard.info.get("device")) for _, shard in shards}))
    info["merged_shards"] = count
    return EmbeddingSet(ids, vectors, titles, info)


def merge_shard_files(paths: Iterable[str | Path], out: str | Path) -> EmbeddingSet:
    """Merge shard ``.jsonl`` files into ``out`` (+ sidecars), in the original input order."""
    merged = merge_shards([(Path(p), _read_shard(Path(p))) for p in paths])
    write_embeddings(out, merged)
    return merged
