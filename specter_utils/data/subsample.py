"""A small corpus cut from a large one: a seeded citation neighbourhood, as a user's own topical corpus would be.

A uniform sample of 2,000 of hep-th's 28K papers keeps about (2/28)^2 of its citations; a user's small corpus is a
field's papers, which cite each other. So the sample grows breadth first over citations (either direction) from a
seeded random paper, neighbours taken in a seeded order, and from another random paper when a component is spent,
until it holds ``n`` papers; it keeps every citation between two kept papers.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import replace

from specter_utils.data.corpus import Corpus


def neighbourhood_sample(corpus: Corpus, n: int, seed: int) -> Corpus:
    """``corpus`` cut to ``n`` papers grown over citations from seeded random papers (all of it when ``n`` is 0 or
    at least its size), with the citations among them; ``info["subsample"]`` says how it was cut."""
    if n <= 0 or n >= len(corpus.papers):
        return corpus
    graph = corpus.graph()
    rng = random.Random(seed)
    order = sorted(corpus.papers)
    rng.shuffle(order)
    kept: set[str] = set()
    starts = 0
    for start in order:
        if len(kept) >= n:
            break
        if start in kept:
            continue
        starts += 1
        kept.add(start)
        queue = deque([start])
        while queue and len(kept) < n:
            paper = queue.popleft()
            neighbours = sorted((graph.references.get(paper, set()) | graph.cited_by.get(paper, set())) - kept)
            rng.shuffle(neighbours)
            for other in neighbours[: n - len(kept)]:
                if other in corpus.papers:
                    kept.add(other)
                    queue.append(other)
    edges = [(a, b) for a, b in corpus.edges if a in kept and b in kept]
    info = {
        **corpus.info,
        "subsample": {
            "rule": "breadth first over citations from seeded random papers (data.subsample)",
            "papers": len(kept),
            "of_papers": len(corpus.papers),
            "edges": len(edges),
            "of_edges": len(corpus.edges),
            "start_papers": starts,
            "seed": seed,
        },
    }
    return replace(corpus, papers={p: corpus.papers[p] for p in sorted(kept)}, edges=edges, info=info)
