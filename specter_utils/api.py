"""The few calls a user makes most, from Python: load a model, embed papers, search them, score them.

Each call is the one the command line and the notebooks use (no second implementation):

- :func:`load_model`: ``embedding.encoder.load_encoder`` (what ``specter-utils embed --model`` loads);
- :func:`paper_text`: ``Paper.text`` with the model's own separator, the ``title [SEP] abstract`` text of ``embed``;
- :func:`embed`: ``embedding.embed.embed_papers`` (the same text, pooling, length and batching as ``embed``);
- :func:`build_index`, :func:`load_index`, :func:`search`: ``search.build_index`` / ``load_index`` and the index's
  own ``search`` (``specter-utils index`` and ``search``);
- :func:`score`: ``evaluation.suite.evaluate`` (``specter-utils evaluate --embeddings``).

    >>> from specter_utils import api
    >>> model = api.load_model("minilm")                       # or OUT/model of specter-utils train
    >>> papers = [{"paper_id": "a", "title": "Attention is all you need", "abstract": "..."}]
    >>> vectors = api.embed(papers, model)                      # vectors.ids, vectors.vectors (unit rows)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.embed import embed_papers
from specter_utils.embedding.encoder import Encoder, encoder_for
from specter_utils.embedding.io import EmbeddingSet, read_embeddings
from specter_utils.errors import DataError
from specter_utils.evaluation.suite import evaluate
from specter_utils.search import index as paper_index
from specter_utils.search.index import Neighbour, PaperIndex

__all__ = [
    "EmbeddingSet",
    "Encoder",
    "Neighbour",
    "Paper",
    "PaperIndex",
    "build_index",
    "embed",
    "load_index",
    "load_model",
    "paper_text",
    "score",
    "search",
]

PaperLike = Paper | Mapping[str, Any]


def load_model(
    model: str | Path | EmbedConfig = EmbedConfig.model,
    max_length: int | None = None,
    pooling: str | None = None,
    device: str | None = None,
) -> Encoder:
    """Load a model for embedding papers, as ``specter-utils embed --model`` does.

    ``model``: ``minilm`` (bundled, offline), a local folder (``OUT/model`` of ``specter-utils train``), a Hugging
    Face id in the local cache, or a whole :class:`EmbedConfig` (the other arguments then change it).
    ``max_length``: wordpieces kept per paper (None: ``EmbedConfig.max_length``, as ``embed`` uses; beyond the
    model's limit is an error). ``pooling``: ``None``/``auto`` (the model's own; [CLS] for a plain transformers
    model), ``cls`` or ``mean``. ``device``: ``cpu``, ``cuda``, ``cuda:1``...; ``None`` picks a GPU when there is one.
    """
    spec = model if isinstance(model, EmbedConfig) else EmbedConfig(model=str(model))
    return encoder_for(spec.but(max_length=max_length, pooling=pooling, device=device))


def as_paper(paper: PaperLike) -> Paper:
    """A :class:`Paper` from a Paper or a mapping with ``paper_id``, ``title`` and optionally ``abstract``."""
    if isinstance(paper, Paper):
        return paper
    missing = [key for key in ("paper_id", "title") if key not in paper]
    if missing:
        raise DataError(f"a paper needs {' and '.join(repr(k) for k in missing)}", record_id=paper.get("paper_id"))
    return Paper(str(paper["paper_id"]), str(paper["title"] or ""), str(paper.get("abstract") or ""))


def paper_text(paper: PaperLike, model: Encoder) -> str:
    """The text ``embed`` gives the model for ``paper``: its title, the tokenizer's separator, its abstract."""
    return as_paper(paper).text(model.sep)


def embed(
    papers: Iterable[PaperLike],
    model: Encoder | EmbedConfig | str | Path = EmbedConfig.model,
    batch_size: int | None = None,
) -> EmbeddingSet:
    """Embed ``papers`` (Paper objects or ``{"paper_id", "title", "abstract"}`` mappings) in their given order.

    ``model`` is a model from :func:`load_model` or anything :func:`load_model` takes (at its defaults);
    ``batch_size`` None is the specification's (``EmbedConfig.batch_size``). Returns an
    :class:`EmbeddingSet`: ``ids``, ``vectors`` (float32, one row a paper) and ``info`` (model, pooling, length).
    """
    encoder = model if isinstance(model, Encoder) else load_model(model)
    return embed_papers(encoder, [as_paper(p) for p in papers], batch_size=batch_size, progress=False)


def build_index(embeddings: EmbeddingSet | str | Path, kind: str = "auto") -> PaperIndex:
    """A FAISS index (cosine) over ``embeddings`` (an :class:`EmbeddingSet` or an embeddings file);
    ``index.save(path)`` writes it as ``specter-utils index`` does. Needs ``pip install -e '.[search]'``."""
    source = None if isinstance(embeddings, EmbeddingSet) else str(embeddings)
    embeddings = embeddings if source is None else read_embeddings(embeddings)
    return paper_index.build_index(embeddings, kind, source=source)


def load_index(path: str | Path) -> PaperIndex:
    """An index written by ``specter-utils index`` or ``PaperIndex.save``."""
    return paper_index.load_index(path)


def search(index: PaperIndex, query: str | PaperLike, k: int = 10, model: Encoder | None = None) -> list[Neighbour]:
    """The ``k`` papers of ``index`` most similar to ``query``: an indexed paper id (the paper itself left out),
    or a paper (a mapping with a title and an abstract) embedded with ``model``, which must be the index's model
    (the text is built as :func:`embed` builds it). Each hit has ``rank``, ``paper_id``, ``title``, ``score``."""
    if isinstance(query, str):
        return index.search(index.vector(query), k, exclude=[query])[0]
    if model is None:
        raise DataError("searching by text needs the index's model: search(index, paper, k, model=load_model(...))")
    paper = as_paper({"paper_id": "query", **query}) if not isinstance(query, Paper) else query
    return index.search(embed([paper], model).vectors, k)[0]


def score(
    data_dir: str | Path, embeddings: EmbeddingSet | str | Path, tasks: list[str] | None = None, split: str = "test"
) -> dict[str, Any]:
    """SCIDOCS scores of ``embeddings`` on a SCIDOCS-layout folder (``build-benchmark``'s ``scidocs/``, or the
    original SCIDOCS data), as ``specter-utils evaluate --embeddings``: one entry per task, x 100, and
    ``coverage``. ``tasks`` (e.g. ``["cite", "co-cite"]``) defaults to every task whose files are present."""
    return evaluate(data_dir, embeddings, tasks=tasks, split=split)
