"""Figure 2 analysis: the DBSCAN rule is deterministic and scores separated clusters near 1."""

from __future__ import annotations

import numpy as np
import pytest

from specter_utils.analysis.geometry import (
    analyse_embeddings,
    dbscan_scores,
    kdistance_knee,
    labels_from_scidocs,
    project,
    sample_labelled,
)
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.presentation.tables import scores_table


def blobs(n_per_class: int = 60, n_classes: int = 4, dim: int = 2, spread: float = 0.3, seed: int = 0):
    """Gaussian blobs centred 10 apart: well separated unless ``spread`` is large."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim)) * 10
    points = np.vstack([c + rng.normal(scale=spread, size=(n_per_class, dim)) for c in centres])
    labels = [f"class{k}" for k in range(n_classes) for _ in range(n_per_class)]
    return points, labels


def test_knee_is_deterministic_and_scale_free() -> None:
    points, _ = blobs()
    eps = kdistance_knee(points, 4)
    assert eps == kdistance_knee(points.copy(), 4)
    assert kdistance_knee(points * 7.0, 4) == pytest.approx(7.0 * eps)


def test_separated_clusters_score_near_one() -> None:
    points, labels = blobs()
    scores = dbscan_scores(points, labels)
    assert scores["min_samples"] == 4  # 2 x dim
    assert scores["n_clusters"] == 4
    assert scores["noise_fraction"] < 0.1  # the knee rule leaves a few blob edges as noise (one mixed "cluster")
    assert scores["homogeneity"] > 0.9
    assert scores["completeness"] > 0.8


def test_random_labels_score_near_zero() -> None:
    points, labels = blobs()
    shuffled = list(np.random.default_rng(1).permutation(labels))
    assert dbscan_scores(points, shuffled)["homogeneity"] < 0.1


def test_dbscan_scores_repeat_exactly() -> None:
    points, labels = blobs(spread=2.0)
    assert dbscan_scores(points, labels) == dbscan_scores(points, labels)


def test_tsne_projection_is_seeded() -> None:
    points, _ = blobs(n_per_class=20, dim=16)
    first = project(points, "tsne", seed=3)
    assert first.shape == (80, 2)
    np.testing.assert_allclose(first, project(points, "tsne", seed=3))


def test_unknown_method_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown projection"):
        project(np.zeros((10, 3)), "pca")


def test_sample_uses_papers_present_in_every_model() -> None:
    ids = [f"p{i}" for i in range(40)]
    full = EmbeddingSet(ids, np.zeros((40, 3), np.float32))
    partial = EmbeddingSet(ids[:30], np.zeros((30, 3), np.float32))
    labels = {pid: "a" if i % 3 else "b" for i, pid in enumerate(ids)}
    sample = sample_labelled({"full": full, "partial": partial}, labels, max_papers=25, seed=0)
    assert len(sample.ids) == 25 and set(sample.ids) <= set(ids[:30])
    assert sample == sample_labelled({"full": full, "partial": partial}, labels, max_papers=25, seed=0)
    top = sample_labelled({"full": full}, labels, max_classes=1)
    assert set(top.labels) == {"a"}


def test_analyse_embeddings_ranks_the_better_model_and_writes_png_and_pdf(tmp_path) -> None:
    points, labels = blobs(n_per_class=40, n_classes=3, dim=16, spread=0.5)
    ids = [f"p{i}" for i in range(len(points))]
    good = EmbeddingSet(ids, points.astype(np.float32))
    noise = EmbeddingSet(ids, np.random.default_rng(0).normal(size=points.shape).astype(np.float32))
    result = analyse_embeddings(
        {"noise": noise, "good": good},
        dict(zip(ids, labels, strict=True)),
        methods=["tsne"],
        seed=0,
        figure_stem=tmp_path / "fig",
    )
    tsne = result["scores"]["tsne"]
    assert tsne["good"]["homogeneity"] > 0.9
    assert tsne["good"]["homogeneity"] > tsne["noise"]["homogeneity"] + 0.5
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").stat().st_size > 0
    assert "min_samples" in result["dbscan_rule"]
    assert "| tsne | good |" in scores_table(result)


def test_labels_from_scidocs_reads_every_split(tmp_path) -> None:
    (tmp_path / "mag").mkdir()
    (tmp_path / "mag" / "train.csv").write_text("pid,class_label\na,x\nb,y\n")
    (tmp_path / "mag" / "test.csv").write_text("pid,class_label\nc,x\n")
    assert labels_from_scidocs(tmp_path) == {"a": "x", "b": "y", "c": "x"}
    with pytest.raises(FileNotFoundError):
        labels_from_scidocs(tmp_path, task="mesh")
