"""A deterministic, seeded SYNTHETIC citation corpus for the tests (the quick start reads the bundled CiteSeer).

Nothing here is real data. Each paper belongs to a topic (its class label, stored in
``Paper.venue``) and a subtopic; titles and abstracts are made of pseudo-words drawn from the
subtopic's, the topic's and a shared general vocabulary, so papers of one topic share words.
Papers are ordered in time and cite only older papers, mostly within their subtopic and topic,
preferring already well-cited papers; each cites a few to ~15 others, so that citations of
citations (SPECTER's count-1 hard negatives) exist. The corpus is named ``synthetic``, carries
``synthetic=True`` and ``"synthetic": true`` in every paper's extras and in ``Corpus.info``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from specter_utils.data.corpus import Corpus
from specter_utils.data.records import Paper, ReadReport

SYNTHETIC_NAME = "synthetic"
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "ch", "tr", "pl", "st")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "eo")
_CODAS = ("", "", "", "n", "r", "s", "l", "x")


class _WordFactory:
    """Unique pronounceable pseudo-words (so no real-word meaning leaks into the texts)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def word(self, min_syllables: int = 2, max_syllables: int = 3) -> str:
        while True:
            n = self.rng.randint(min_syllables, max_syllables)
            word = "".join(self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(n))
            word += self.rng.choice(_CODAS)
            if word not in self.used:
                self.used.add(word)
                return word

    def words(self, n: int) -> list[str]:
        return [self.word() for _ in range(n)]


def _zipf_weights(n: int) -> list[float]:
    return [1.0 / (rank + 1) for rank in range(n)]


def _sample_words(rng: random.Random, sources: Sequence[tuple[list[str], list[float], float]], n: int) -> list[str]:
    """``n`` words, each from one of ``(vocabulary, word_weights, source_weight)`` chosen by source weight."""
    vocabularies = [s[0] for s in sources]
    word_weights = [s[1] for s in sources]
    picks = rng.choices(range(len(sources)), weights=[s[2] for s in sources], k=n)
    return [rng.choices(vocabularies[i], weights=word_weights[i])[0] for i in picks]


def _sentence(words: list[str]) -> str:
    return " ".join([words[0].capitalize(), *words[1:]]) + "."


def _pick_weighted_distinct(
    rng: random.Random, pool: list[str], weights: dict[str, int], exclude: set[str]
) -> str | None:
    candidates = [p for p in pool if p not in exclude]
    if not candidates:
        return None
    # Mild preferential attachment: well-cited papers are cited more, without one paper taking all.
    return rng.choices(candidates, weights=[(1 + weights[c]) ** 0.5 for c in candidates])[0]


@dataclass(frozen=True)
class SyntheticShape:
    """How the synthetic papers are made, beyond their number, topics and seed."""

    subtopics_per_topic: int = 3
    topic_vocab_size: int = 40
    subtopic_vocab_size: int = 15
    general_vocab_size: int = 200
    min_references: int = 2
    max_references: int = 15
    within_topic: float = 0.85  # probability that a reference goes to a paper of the citing paper's topic
    within_subtopic: float = 0.7  # of those, the probability that it goes to the same subtopic
    off_topic_word_rate: float = 0.05  # share of words taken from another topic's vocabulary (noise)
    year_range: tuple[int, int] = (2000, 2019)


def generate_synthetic_corpus(
    n_papers: int = 600, n_topics: int = 6, seed: int = 0, shape: SyntheticShape | None = None
) -> Corpus:
    """Generate the synthetic corpus (same seed and arguments -> identical corpus); ``shape``: vocabularies,
    references and years (default: ``SyntheticShape()``)."""
    shape = shape or SyntheticShape()
    if n_papers < 2 or n_topics < 1 or shape.subtopics_per_topic < 1:
        raise ValueError("need n_papers >= 2, n_topics >= 1 and subtopics_per_topic >= 1")
    if not 0 <= shape.min_references <= shape.max_references:
        raise ValueError("need 0 <= min_references <= max_references")
    rng = random.Random(f"specter-synthetic:{seed}")
    factory = _WordFactory(rng)

    # 1. Vocabularies: general words shared by all topics, then per topic and per subtopic.
    general = factory.words(shape.general_vocab_size)
    general_w = _zipf_weights(shape.general_vocab_size)
    topic_names = [factory.word(2, 3) for _ in range(n_topics)]
    labels = [f"topic_{k}_{name}" for k, name in enumerate(topic_names)]
    topic_vocab = [factory.words(shape.topic_vocab_size) for _ in range(n_topics)]
    subtopic_vocab = [
        [factory.words(shape.subtopic_vocab_size) for _ in range(shape.subtopics_per_topic)] for _ in range(n_topics)
    ]
    topic_w, subtopic_w = _zipf_weights(shape.topic_vocab_size), _zipf_weights(shape.subtopic_vocab_size)
    authors_per_topic = max(6, n_papers // (n_topics * 3))
    author_pool = [
        [f"{rng.choice('ABCDEFGHJKLMNPRSTVW')}. {factory.word(2, 3).capitalize()}" for _ in range(authors_per_topic)]
        for _ in range(n_topics)
    ]

    # 2. Papers in time order; balanced topics, random subtopics.
    topics = [i % n_topics for i in range(n_papers)]
    rng.shuffle(topics)
    width = max(5, len(str(n_papers - 1)))
    first_year, last_year = shape.year_range
    span = last_year - first_year + 1
    papers: dict[str, Paper] = {}
    order: list[str] = []
    where: dict[str, tuple[int, int]] = {}
    for i, topic in enumerate(topics):
        subtopic = rng.randrange(shape.subtopics_per_topic)
        other = rng.choice([k for k in range(n_topics) if k != topic]) if n_topics > 1 else topic
        sources_title = [
            (subtopic_vocab[topic][subtopic], subtopic_w, 0.45),
            (topic_vocab[topic], topic_w, 0.35),
            (general, general_w, 0.20 - shape.off_topic_word_rate),
            (topic_vocab[other], topic_w, shape.off_topic_word_rate),
        ]
        sources_abstract = [
            (subtopic_vocab[topic][subtopic], subtopic_w, 0.15),
            (topic_vocab[topic], topic_w, 0.25),
            (general, general_w, 0.60 - shape.off_topic_word_rate),
            (topic_vocab[other], topic_w, shape.off_topic_word_rate),
        ]
        title = " ".join(_sample_words(rng, sources_title, rng.randint(5, 10))).capitalize()
        sentences = [
            _sentence(_sample_words(rng, sources_abstract, rng.randint(8, 16))) for _ in range(rng.randint(3, 6))
        ]
        own = author_pool[topic]
        n_authors = rng.randint(1, 4)
        authors = [rng.choice(own) if rng.random() < 0.9 else rng.choice(author_pool[other]) for _ in range(n_authors)]
        paper_id = f"syn-{i:0{width}d}"
        papers[paper_id] = Paper(
            paper_id=paper_id,
            title=title,
            abstract=" ".join(sentences),
            authors=list(dict.fromkeys(authors)),
            venue=labels[topic],
            year=first_year + (i * span) // n_papers,
            extras={"synthetic": True, "topic": topic, "subtopic": f"{topic}.{subtopic}"},
        )
        order.append(paper_id)
        where[paper_id] = (topic, subtopic)

    # 3. Citations to older papers: mostly same subtopic / topic, preferring well-cited papers.
    report = ReadReport(source=f"{SYNTHETIC_NAME} corpus (seed={seed}, {n_papers} papers, {n_topics} topics)")
    in_degree = dict.fromkeys(order, 0)
    by_subtopic: dict[tuple[int, int], list[str]] = {}
    by_topic: dict[int, list[str]] = {}
    everyone: list[str] = []
    edges: list[tuple[str, str]] = []
    within, same = shape.within_topic, shape.within_subtopic
    pool_weights = (within * same, within * (1 - same), 1 - within)
    for paper_id in order:
        topic, subtopic = where[paper_id]
        n_refs = min(len(everyone), rng.randint(shape.min_references, shape.max_references))
        pools = (
            by_subtopic.get((topic, subtopic), []),
            [p for p in by_topic.get(topic, []) if where[p][1] != subtopic],
            [p for p in everyone if where[p][0] != topic],
        )
        cited: set[str] = set()
        while len(cited) < n_refs:
            open_pools = [k for k, pool in enumerate(pools) if any(p not in cited for p in pool)]
            choice = rng.choices(open_pools, weights=[pool_weights[k] or 1e-9 for k in open_pools])[0]
            target = _pick_weighted_distinct(rng, pools[choice], in_degree, cited)
            cited.add(target)
            edges.append((paper_id, target))
            in_degree[target] += 1
        if not cited:
            report.note("no_references", paper_id)
        papers[paper_id].extras["references"] = len(cited)
        by_subtopic.setdefault((topic, subtopic), []).append(paper_id)
        by_topic.setdefault(topic, []).append(paper_id)
        everyone.append(paper_id)

    info = {
        "synthetic": True,
        "generator": "specter_utils.data.synthetic.generate_synthetic_corpus",
        "seed": seed,
        "n_papers": n_papers,
        "n_topics": n_topics,
        "subtopics_per_topic": shape.subtopics_per_topic,
        "labels": labels,
        "within_topic": shape.within_topic,
        "within_subtopic": shape.within_subtopic,
        "references": [shape.min_references, shape.max_references],
        "year_range": list(shape.year_range),
    }
    return Corpus(name=SYNTHETIC_NAME, papers=papers, edges=edges, report=report, synthetic=True, info=info)
