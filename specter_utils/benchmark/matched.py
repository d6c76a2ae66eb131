"""Popularity-matched negatives: the cite and co-cite tasks again, with negatives that look like the positives.

SCIDOCS draws each query's 25 negatives uniformly from every paper with text, while its positives are cited
papers: on hep-th the negatives are newer and far less cited than the positives, so a ranker that reads no text,
only the in-degree, scores far above random. The matched version keeps each query and its positives and draws
every negative slot to resemble one positive (in turn): a random non-candidate paper with text of the same
publication year and the same in-degree bucket (``degree_bucket``), the window widened by one year and one bucket
at a time when that cell has none left. The in-degree is counted in the metadata graph: the citation graph
without any edge touching a held-out query (the graph of the training dir), so a positive's in-degree is not
raised by its own query's citation. A corpus without publication years is matched on the in-degree only.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping

from specter_utils.data.graph import CitationGraph

Qrels = dict[str, dict[str, int]]
DRAWS_BEFORE_FILTER = 20  # random picks in a window before its untaken papers are listed


def degree_bucket(degree: int) -> int:
    """0 for no citation, else 1 + floor(log2(degree)): 1, 2-3, 4-7, 8-15, ... share a bucket."""
    return degree.bit_length()


def in_degrees(graph: CitationGraph, papers: list[str]) -> dict[str, int]:
    """How many papers cite each of ``papers`` in ``graph``."""
    return {p: len(graph.cited_by.get(p, ())) for p in papers}


class MatchedSampler:
    """Draws papers of ``pool`` matched to a given paper on (year, in-degree bucket), widening when needed."""

    def __init__(self, pool: list[str], years: Mapping[str, int | None], degree: Mapping[str, int], use_years: bool):
        self.years, self.degree, self.use_years = years, degree, use_years
        self.cells: dict[tuple[int | None, int], list[str]] = defaultdict(list)
        for paper in pool:
            self.cells[self._key(paper)].append(paper)
        known_years = [y for y, _ in self.cells if y is not None]
        buckets = [b for _, b in self.cells]
        year_span = (max(known_years) - min(known_years)) if known_years else 0
        self.max_step = max(year_span, max(buckets) - min(buckets)) if buckets else 0
        self.pool = pool
        self.widened: Counter[int] = Counter()  # window half-width used -> slots; max_step + 1: unmatched
        self.keys = ("year", "in-degree bucket") if use_years else ("in-degree bucket",)
        self._windows: dict[tuple[tuple[int | None, int], int], list[list[str]]] = {}

    def _key(self, paper: str) -> tuple[int | None, int]:
        return (self.years.get(paper) if self.use_years else None, degree_bucket(self.degree.get(paper, 0)))

    def _window(self, key: tuple[int | None, int], step: int) -> list[list[str]]:
        """The cells within ``step`` of ``key``, in the cells' order (computed once per key and step: the cells do
        not change after construction)."""
        cached = self._windows.get((key, step))
        if cached is None:
            year, bucket = key
            cached = self._windows[(key, step)] = [
                papers
                for (y, b), papers in self.cells.items()
                if abs(b - bucket) <= step and (y == year if y is None or year is None else abs(y - year) <= step)
            ]
        return cached

    def draw(self, like: str, taken: set[str], rng: random.Random) -> str | None:
        """A paper of the pool outside ``taken`` matched to ``like``; None when the pool has none left."""
        key = self._key(like)
        for step in range(self.max_step + 1):
            window = self._window(key, step)
            sizes = [len(papers) for papers in window]
            total = sum(sizes)
            if not total:
                continue
            for _ in range(DRAWS_BEFORE_FILTER):
                index = rng.randrange(total)
                for papers in window:
                    if index < len(papers):
                        paper = papers[index]
                        break
                    index -= len(papers)
                if paper not in taken:
                    self.widened[step] += 1
                    return paper
            rest = [p for papers in window for p in papers if p not in taken]
            if rest:
                self.widened[step] += 1
                return rng.choice(rest)
        rest = [p for p in self.pool if p not in taken]  # every cell exhausted (papers without a year left)
        if not rest:
            return None
        self.widened[self.max_step + 1] += 1
        return rng.choice(rest)


def matched_task(
    qrels: Qrels, exclude_of: Mapping[str, set[str]], sampler: MatchedSampler, n: int, rng: random.Random
) -> Qrels:
    """The same queries and positives as ``qrels``, with ``n`` negatives each drawn by ``sampler``: slot ``i``
    matched to the query's ``i``-th positive (cycling through them)."""
    out: Qrels = {}
    for query in sorted(qrels):
        positives = sorted(p for p, rel in qrels[query].items() if rel > 0)
        taken = exclude_of[query] | {query} | set(positives)
        negatives: list[str] = []
        for slot in range(n):
            paper = sampler.draw(positives[slot % len(positives)], taken, rng)
            if paper is None:
                break
            taken.add(paper)
            negatives.append(paper)
        out[query] = {**dict.fromkeys(positives, 1), **dict.fromkeys(negatives, 0)}
    return out


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def popularity_summary(qrels: Qrels, years: Mapping[str, int | None], degree: Mapping[str, int]) -> dict:
    """Year and in-degree of the positives and of the negatives of one task (each judgement counted once), and
    the share of negatives newer than their query's newest positive."""
    sides = {name: {"year": [], "in_degree": []} for name in ("positives", "negatives")}
    newer = dated = 0
    for docs in qrels.values():
        newest = max((years.get(p) for p, rel in docs.items() if rel > 0 and years.get(p) is not None), default=None)
        for paper, rel in docs.items():
            side = sides["positives" if rel > 0 else "negatives"]
            side["in_degree"].append(degree.get(paper, 0))
            year = years.get(paper)
            if year is not None:
                side["year"].append(year)
            if rel == 0 and year is not None and newest is not None:
                dated += 1
                newer += year > newest
    out: dict = {}
    for name, side in sides.items():
        out[name] = {
            "judgements": len(side["in_degree"]),
            "median_year": _median(side["year"]),
            "median_in_degree": _median(side["in_degree"]),
            "mean_in_degree": round(statistics.fmean(side["in_degree"]), 2) if side["in_degree"] else None,
            "share_in_degree_0": round(sum(d == 0 for d in side["in_degree"]) / len(side["in_degree"]), 4)
            if side["in_degree"]
            else None,
        }
    out["negatives"]["share_newer_than_newest_positive"] = round(newer / dated, 4) if dated else None
    return out
