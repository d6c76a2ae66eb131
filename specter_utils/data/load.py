"""One entry point to get a Corpus by kind: ``hepth``, ``s2orc`` or ``synthetic``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.data.corpus import Corpus
from specter_utils.errors import DataError
from specter_utils.paths import hepth_dir, shared_data_dir

CORPUS_KINDS = ("hepth", "s2orc", "synthetic")


def _default_src(kind: str) -> Path:
    if kind == "hepth":
        src = hepth_dir()
        if src is None:
            raise DataError(
                "no hep-th data: pass its folder (with cit-HepTh.txt and cit-HepTh-abstracts.tar.gz), set "
                "SPECTER_SHARED_DATA to a folder containing hepth/, or fetch it with "
                "'specter-utils data download hepth --out DIR'"
            )
        return src
    root = shared_data_dir()
    sample = root / "s2orc" / "sample.jsonl" if root is not None else None
    if sample is None or not sample.exists():
        raise DataError("no S2ORC file given and no shared sample at ../shared/data/s2orc/sample.jsonl")
    return sample


def load_corpus(kind: str, src: str | Path | None = None, **kw: Any) -> Corpus:
    """Read (or, for ``synthetic``, generate) a corpus.

    ``src`` defaults to the shared real data (``../shared/data/hepth``, ``../shared/data/s2orc/sample.jsonl``);
    ``kw`` go to the reader (``read_s2orc(dangling=...)``) or to ``generate_synthetic_corpus``.
    """
    if kind not in CORPUS_KINDS:
        raise ValueError(f"unknown corpus kind {kind!r}; expected one of {', '.join(CORPUS_KINDS)}")
    if kind == "synthetic":
        if src is not None:
            raise ValueError("the synthetic corpus is generated, it takes no src")
        from specter_utils.data.synthetic import generate_synthetic_corpus

        return generate_synthetic_corpus(**kw)
    path = Path(src) if src is not None else _default_src(kind)
    if not path.exists():
        raise DataError(f"{kind} source not found", path)
    if kind == "hepth":
        from specter_utils.data.hepth import read_hepth

        if kw:
            raise TypeError(f"read_hepth takes no options, got {sorted(kw)}")
        corpus = read_hepth(path)
    else:
        from specter_utils.data.s2orc import read_s2orc

        corpus = read_s2orc(path, **kw)
    corpus.info.setdefault("source", str(path.resolve()))
    return corpus
