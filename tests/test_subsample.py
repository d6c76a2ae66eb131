"""A small corpus cut from a large one keeps its citations (data.max_papers)."""

from __future__ import annotations

from specter_utils.corpus_config import CorpusConfig
from specter_utils.data.subsample import neighbourhood_sample
from specter_utils.data.synthetic import generate_synthetic_corpus


def test_a_neighbourhood_sample_keeps_n_papers_and_the_citations_among_them() -> None:
    corpus = generate_synthetic_corpus(n_papers=500, n_topics=4, seed=1)
    small = neighbourhood_sample(corpus, 120, seed=3)
    assert len(small.papers) == 120 and set(small.papers) <= set(corpus.papers)
    kept = set(small.papers)
    assert small.edges == [(a, b) for a, b in corpus.edges if a in kept and b in kept]
    # grown over citations: far denser than a uniform sample of the same size would be (about 120/500 of the edges)
    uniform_share = (120 / 500) ** 2
    assert len(small.edges) / len(corpus.edges) > 3 * uniform_share
    assert small.info["subsample"]["papers"] == 120 and small.info["subsample"]["of_papers"] == 500
    assert neighbourhood_sample(corpus, 120, seed=3).papers.keys() == small.papers.keys()  # seeded
    assert neighbourhood_sample(corpus, 120, seed=4).papers.keys() != small.papers.keys()
    assert neighbourhood_sample(corpus, 0, seed=3) is corpus and neighbourhood_sample(corpus, 900, seed=3) is corpus


def test_max_papers_is_a_declared_setting_of_the_data_section() -> None:
    assert CorpusConfig().max_papers == 0
    assert CorpusConfig(max_papers=2000).max_papers == 2000
