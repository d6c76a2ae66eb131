"""Neighbours as tables: a pandas DataFrame for notebooks, plain text for the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from specter_utils.search.index import Neighbour, PaperIndex, load_index


def neighbours_table(index: PaperIndex | str | Path, paper_ids: list[str], k: int = 5) -> Any:
    """A pandas DataFrame of the ``k`` neighbours of each paper (query id, query title, rank, id, title, score)."""
    index = index if isinstance(index, PaperIndex) else load_index(index)
    queries = np.vstack([index.vector(pid) for pid in paper_ids])
    rows = []
    for pid, hits in zip(paper_ids, index.search(queries, k, exclude=list(paper_ids)), strict=True):
        query_title = index.titles[index._row[pid]]
        query = {"query_id": pid, "query_title": query_title}
        rows += [
            {**query, "rank": h.rank, "paper_id": h.paper_id, "title": h.title, "score": round(h.score, 4)}
            for h in hits
        ]
    return pd.DataFrame(rows)


def format_table(hits: list[Neighbour], width: int = 100) -> str:
    """A plain terminal table: rank, score, paper id, title (cut to fit ``width``)."""
    id_width = max([8] + [len(h.paper_id) for h in hits])
    lines = [f"{'rank':>4}  {'score':>6}  {'paper_id':<{id_width}}  title"]
    room = max(20, width - (4 + 2 + 6 + 2 + id_width + 2))
    for h in hits:
        title = " ".join(h.title.split())
        title = title if len(title) <= room else title[: room - 1] + "…"
        lines.append(f"{h.rank:>4}  {h.score:6.4f}  {h.paper_id:<{id_width}}  {title}")
    return "\n".join(lines)
