"""Baselines: finite vectors of the right shape, deterministic for a seed; SGC drops held-out citations."""

from __future__ import annotations

import numpy as np
import pytest

from specter_utils.cli import main
from specter_utils.config import EmbedConfig
from specter_utils.data.graph import CitationGraph
from specter_utils.data.records import Paper
from specter_utils.embedding import baselines
from specter_utils.embedding.io import EmbeddingSet, read_embeddings
from specter_utils.embedding.wordvectors import TOKEN_PATTERN, cooccurrence, ppmi, train_word_vectors

PHYSICS = "string brane gauge duality horizon entropy quantum gravity anomaly supersymmetry".split()
BIOLOGY = "protein cell gene enzyme tissue mutation receptor membrane antibody genome".split()


def corpus(n_per_topic: int = 8) -> list[Paper]:
    """Two topics with disjoint vocabularies plus shared filler words."""
    rng = np.random.default_rng(7)
    papers = []
    for topic, words in (("phys", PHYSICS), ("bio", BIOLOGY)):
        for i in range(n_per_topic):
            body = " ".join(rng.choice(words, size=25)) + " we study the results of this model"
            papers.append(Paper(f"{topic}{i}", f"{topic} paper {' '.join(rng.choice(words, size=3))}", body))
    return papers


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize(
    "make, dim",
    [
        (lambda p, s: baselines.random_embeddings(p, seed=s), 25),
        (lambda p, s: baselines.tfidf_embeddings(p, "svd", dim=5, seed=s), 5),
        (lambda p, s: baselines.tfidf_embeddings(p, "raw", dim=10, seed=s), 10),
        (lambda p, s: baselines.tfidf_embeddings(p, "hash", dim=64, seed=s), 64),
        (lambda p, s: baselines.sif_embeddings(p, dim=8, seed=s), 8),
    ],
    ids=["random", "tfidf-svd", "tfidf", "tfidf-hash", "sif"],
)
def test_baseline_is_finite_shaped_and_deterministic(make, dim: int) -> None:
    papers = corpus()
    first, again = make(papers, 3), make(list(papers), 3)
    assert first.ids == [p.paper_id for p in papers]
    assert first.vectors.shape == (len(papers), dim) and first.vectors.dtype == np.float32
    assert np.isfinite(first.vectors).all() and np.abs(first.vectors).sum() > 0
    assert np.array_equal(first.vectors, again.vectors)
    assert first.info["baseline"]


def test_random_depends_on_seed_and_id_only() -> None:
    papers = corpus()
    full = baselines.random_embeddings(papers, seed=1)
    subset = baselines.random_embeddings(papers[3:6], seed=1)
    assert np.array_equal(full.vectors[3:6], subset.vectors)
    assert not np.allclose(full.vectors, baselines.random_embeddings(papers, seed=2).vectors)
    assert abs(float(baselines.random_embeddings(corpus(200), seed=0).vectors.mean())) < 0.05


def test_text_baselines_separate_the_two_topics() -> None:
    papers = corpus()
    for result in (baselines.sif_embeddings(papers, dim=8), baselines.tfidf_embeddings(papers, "svd", dim=4)):
        v = result.vectors
        same = np.mean([cosine(v[0], v[i]) for i in range(1, 8)])
        other = np.mean([cosine(v[0], v[i]) for i in range(8, 16)])
        assert same > other + 0.2, result.info["baseline"]


def test_sif_is_the_weighted_average_minus_the_first_principal_component() -> None:
    from sklearn.feature_extraction.text import CountVectorizer

    papers = corpus()
    texts = [f"{p.title} {p.abstract}" for p in papers]
    words = train_word_vectors(texts, dim=8)
    a = 1e-3
    result = baselines.sif_embeddings(papers, a=a, word_vectors=words)
    counts = CountVectorizer(vocabulary=words.vocab, token_pattern=TOKEN_PATTERN).transform(texts).toarray()
    weights = a / (a + words.counts / words.total_tokens)
    averaged = (counts * weights) @ words.vectors.astype(np.float64) / counts.sum(axis=1, keepdims=True)
    component = np.linalg.eigh(averaged.T @ averaged)[1][:, -1]
    expected = averaged - np.outer(averaged @ component, component)
    assert np.allclose(result.vectors, expected, atol=1e-5)
    assert np.abs(result.vectors @ component).max() < 1e-5
    assert result.info["a"] == a


def test_ppmi_keeps_only_positive_association() -> None:
    counts = cooccurrence([np.array([0, 1, 0, 1]), np.array([2, 2])], vocab_size=3, window=1)
    assert counts[0, 1] == counts[1, 0] == 3 and counts[0, 2] == 0 and counts[2, 2] == 2
    matrix = ppmi(counts)
    assert (matrix.data > 0).all() and matrix[0, 2] == 0


def test_raw_tfidf_refuses_a_matrix_too_big() -> None:
    with pytest.raises(ValueError, match="tfidf-svd"):
        baselines.tfidf_embeddings(corpus(), "raw", dim=4096, max_dense_bytes=1000)


def tiny_graph_case() -> tuple[list[Paper], CitationGraph, EmbeddingSet]:
    papers = [Paper(pid, pid) for pid in ("a", "b", "c", "q")]
    graph = CitationGraph.from_edges([("a", "b"), ("c", "a"), ("q", "a"), ("q", "b"), ("b", "x")])
    features = EmbeddingSet([p.paper_id for p in papers], np.eye(4, dtype=np.float32), info={"baseline": "given"})
    return papers, graph, features


def test_sgc_drops_the_held_out_queries_edges() -> None:
    papers, graph, features = tiny_graph_case()
    result = baselines.sgc_embeddings(papers, graph, held_out={"q"}, k=1, features=features)
    v = {pid: result.vectors[i] for i, pid in enumerate(result.ids)}
    assert np.allclose(v["q"], [0, 0, 0, 1])  # isolated once its citations are gone: only its self loop
    assert v["a"][3] == 0 and v["b"][3] == 0  # nothing flows from q
    # a has neighbours b, c and itself (degree 3); b has a and itself (degree 2): D^-1/2 (A + I) D^-1/2.
    assert np.allclose(v["a"], [1 / 3, 1 / np.sqrt(6), 1 / np.sqrt(6), 0])
    assert result.info["edges_dropped"] == 2 and result.info["edges_used"] == 2 and result.info["held_out"] == 1
    leaky = baselines.sgc_embeddings(papers, graph, held_out=(), k=1, features=features)
    assert leaky.vectors[0, 3] > 0 and leaky.vectors[3, 0] > 0
    assert np.allclose(baselines.sgc_embeddings(papers, graph, {"q"}, k=0, features=features).vectors, np.eye(4))


def test_sgc_propagates_k_hops() -> None:
    papers, graph, features = tiny_graph_case()
    two = baselines.sgc_embeddings(papers, graph, held_out={"q"}, k=2, features=features)
    ids = [p.paper_id for p in papers]
    hop = baselines.normalized_adjacency(ids, graph.without_edges_of({"q"})).toarray()
    assert np.allclose(two.vectors, hop @ hop @ np.eye(4), atol=1e-6)
    assert np.allclose(hop, hop.T)


def test_compute_baselines_writes_readable_files(tmp_path) -> None:
    papers = corpus(4)
    graph = CitationGraph.from_edges([("phys0", "phys1"), ("bio0", "bio1"), ("phys2", "phys1")])
    with pytest.raises(ValueError, match="graph"):
        baselines.compute_baselines(papers, which=["sgc"], out_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown"):
        baselines.compute_baselines(papers, which=["doc2vec"], out_dir=tmp_path)
    paths = baselines.compute_baselines(
        papers,
        baselines.BaselineData(graph, held_out={"phys2"}),
        which=["random", "tfidf-svd", "sif", "sgc", "model-mean"],
        out_dir=tmp_path,
        synthetic=True,
        spec=EmbedConfig(max_length=16),
    )
    assert set(paths) == {"random", "tfidf-svd", "sif", "sgc", "model-mean"}
    for name, path in paths.items():
        result = read_embeddings(path)
        assert len(result) == 8 and np.isfinite(result.vectors).all(), name
        assert result.info["baseline"] == name and result.info["synthetic"] is True
    assert read_embeddings(paths["model-mean"]).info["pooling"] == "mean"
    assert read_embeddings(paths["sgc"]).info["edges_dropped"] == 1


def test_cli_baseline_with_graph_from_scidocs_metadata(tmp_path, capsys) -> None:
    import json

    records = {p.paper_id: {**p.to_specter_metadata(), "references": [], "cited_by": []} for p in corpus(4)}
    records["phys0"]["references"] = ["phys1"]
    records["bio1"]["cited_by"] = ["bio0", "phys3"]
    meta = tmp_path / "paper_metadata_view_cite_read.json"
    meta.write_text(json.dumps(records))
    qrel = tmp_path / "test.qrel"
    qrel.write_text("phys3 0 bio1 1\nphys3 0 bio2 0\n")
    out = tmp_path / "sgc.jsonl"
    argv = ["embed", "--baseline", "sgc", "--metadata", str(meta), "--held-out", str(qrel), "--out", str(out)]
    assert main(argv) == 0
    info = read_embeddings(out).info
    assert (info["held_out"], info["edges_dropped"], info["edges_used"]) == (1, 1, 2)
    assert main(["embed", "--baseline", "doc2vec", "--metadata", str(meta), "--out", str(out)]) == 2
    assert "unknown baseline" in capsys.readouterr().err


def test_cli_and_pipeline_give_the_same_baseline_vectors(tmp_path) -> None:
    import json

    papers = {p.paper_id: p for p in corpus(4)}
    evaluation, training = dict(list(papers.items())[:5]), dict(list(papers.items())[5:])
    meta, fit = tmp_path / "eval.json", tmp_path / "train.json"
    meta.write_text(json.dumps({pid: p.to_specter_metadata() for pid, p in evaluation.items()}))
    fit.write_text(json.dumps({pid: p.to_specter_metadata() for pid, p in training.items()}))
    out = tmp_path / "cli" / "sif.jsonl"
    assert (
        main(["embed", "--baseline", "sif", "--metadata", str(meta), "--fit-metadata", str(fit), "--out", str(out)])
        == 0
    )
    pipeline = baselines.compute_baselines(
        evaluation,
        which=["sif"],
        out_dir=tmp_path / "pipe",
        data=baselines.BaselineData(fit_papers=baselines.fit_corpus(evaluation, training)),
    )
    assert np.allclose(read_embeddings(out).vectors, read_embeddings(pipeline["sif"]).vectors)
    unfitted = tmp_path / "cli" / "sif-own.jsonl"
    assert main(["embed", "--baseline", "sif", "--metadata", str(meta), "--out", str(unfitted)]) == 0
    own, fitted = read_embeddings(unfitted).vectors, read_embeddings(out).vectors
    assert own.shape != fitted.shape or not np.allclose(own, fitted)  # the fit papers matter
