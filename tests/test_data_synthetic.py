"""The synthetic corpus of the tests and the smoke preset: deterministic, labelled synthetic, topic-coherent and learnable."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from specter_utils.data.convert import corpus_to_specter
from specter_utils.data.synthetic import SyntheticShape, generate_synthetic_corpus


@pytest.fixture(scope="module")
def corpus():
    return generate_synthetic_corpus(n_papers=600, n_topics=6, seed=0)


def _snapshot(c):
    return [(p.paper_id, p.title, p.abstract, p.authors, p.venue, p.year) for p in c.papers.values()], c.edges


def test_same_seed_same_corpus(corpus):
    assert _snapshot(generate_synthetic_corpus(seed=0)) == _snapshot(corpus)


def test_other_seed_other_corpus(corpus):
    other = generate_synthetic_corpus(seed=1)
    assert len(other.papers) == len(corpus.papers)
    assert [p.title for p in other.papers.values()] != [p.title for p in corpus.papers.values()]
    assert set(other.edges) != set(corpus.edges)


def test_labelled_synthetic_everywhere(corpus):
    assert corpus.name == "synthetic" and corpus.synthetic is True
    assert corpus.info["synthetic"] is True and corpus.info["seed"] == 0
    assert all(p.extras["synthetic"] is True for p in corpus.papers.values())
    assert corpus.describe()["synthetic"] is True
    data = corpus_to_specter(corpus)
    assert data.info["synthetic"] is True and data.info["corpus"] == "synthetic"


def test_sizes_labels_and_years(corpus):
    assert len(corpus.papers) == 600
    labels = Counter(corpus.labels().values())
    assert len(labels) == 6 and set(labels.values()) == {100}  # balanced classes
    assert labels.keys() == set(corpus.info["labels"])
    assert all(2000 <= p.year <= 2019 for p in corpus.papers.values())
    assert all(p.title and p.abstract and p.authors for p in corpus.papers.values())


def test_citations_point_back_in_time_with_specter_like_degrees(corpus):
    order = list(corpus.papers)
    position = {pid: i for i, pid in enumerate(order)}
    assert all(position[cited] < position[citing] for citing, cited in corpus.edges)
    assert all(corpus.papers[cited].year <= corpus.papers[citing].year for citing, cited in corpus.edges)
    out_degree = Counter(citing for citing, _ in corpus.edges)
    assert len(corpus.edges) == len(set(corpus.edges))
    assert max(out_degree.values()) == 15
    assert sum(1 for pid in order[20:] if 2 <= out_degree[pid] <= 15) == len(order) - 20
    data = corpus_to_specter(corpus)
    pairs = Counter(c for cands in data.graph.values() for c in cands.values())
    assert pairs[5] == len(corpus.edges) and pairs[1] > pairs[5]  # count-1 hard negatives exist


def test_citations_are_topic_coherent(corpus):
    topic = {pid: p.venue for pid, p in corpus.papers.items()}
    within = sum(topic[a] == topic[b] for a, b in corpus.edges) / len(corpus.edges)
    assert within > 0.75
    assert within < 0.95  # some cross-topic citations, so the task is not trivial


def _words(paper):
    return set(re.findall(r"[a-z]+", f"{paper.title} {paper.abstract}".lower()))


def _jaccard(a, b):
    return len(a & b) / len(a | b)


def test_texts_of_cited_papers_share_words(corpus):
    """Learnable: a cited paper is lexically closer to its citer than a random paper is."""
    words = {pid: _words(p) for pid, p in corpus.papers.items()}
    rng = random.Random(0)
    ids = list(corpus.papers)
    cited = sum(_jaccard(words[a], words[b]) for a, b in corpus.edges) / len(corpus.edges)
    chance = sum(_jaccard(words[rng.choice(ids)], words[rng.choice(ids)]) for _ in range(2000)) / 2000
    assert cited > 1.3 * chance
    # A nearest-centroid classifier on word overlap beats the 1-in-6 chance rate by far.
    by_topic: dict[str, Counter] = {}
    for pid in ids[::2]:
        by_topic.setdefault(corpus.papers[pid].venue, Counter()).update(words[pid])
    right = sum(
        max(by_topic, key=lambda t: sum(by_topic[t][w] for w in words[pid])) == corpus.papers[pid].venue
        for pid in ids[1::2]
    )
    assert right / len(ids[1::2]) > 0.8


def test_parameters_are_validated():
    with pytest.raises(ValueError):
        generate_synthetic_corpus(n_papers=1)
    with pytest.raises(ValueError):
        generate_synthetic_corpus(shape=SyntheticShape(min_references=5, max_references=2))
    small = generate_synthetic_corpus(n_papers=50, n_topics=2, seed=3)
    assert len(small.papers) == 50 and len(set(small.labels().values())) == 2
