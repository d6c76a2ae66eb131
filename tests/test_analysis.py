"""Figure 2 analysis: the DBSCAN rule is deterministic and scores separated clusters near 1."""

from __future__ import annotations

import numpy as np
import pytest

from specter_utils.analysis.geometry import (
    analyse_embeddings,
    dbscan_scores,
    kdistance_knee,
    knn_agreement,
    labels_from_scidocs,
    project,
    sample_labelled,
    seed_difference,
    silhouette_by_class,
)
from specter_utils.config import AnalysisConfig
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.evaluation.hierarchical import verdict
from specter_utils.presentation.interpret import projection_test
from specter_utils.presentation.tables import eps_grid_table, scores_table, space_table


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


def test_tsne_seeds_draw_different_maps() -> None:
    """Each projection seed is a different draw (random init): a spread over seeds measures something."""
    points, _ = blobs(n_per_class=20, dim=16, spread=3.0)
    assert not np.allclose(project(points, "tsne", seed=0), project(points, "tsne", seed=1))


def test_eps_factor_scales_the_knee() -> None:
    points, labels = blobs(spread=2.0)
    knee = dbscan_scores(points, labels)
    assert dbscan_scores(points, labels, eps_factor=2.0)["eps"] == pytest.approx(2.0 * knee["eps"])
    assert dbscan_scores(points, labels, eps_factor=0.5)["noise_fraction"] >= knee["noise_fraction"]


def test_knn_agreement_and_silhouette_in_the_full_space() -> None:
    points, labels = blobs(n_per_class=30, n_classes=3, dim=16, spread=0.5)
    agreement = knn_agreement(points, labels, k=5)
    assert agreement.shape == (90,) and agreement.min() == 1.0  # separated blobs: every neighbour shares the class
    shuffled = list(np.random.default_rng(0).permutation(labels))
    assert knn_agreement(points, shuffled, k=5).mean() < 0.6
    assert silhouette_by_class(points, labels).mean() > 0.9
    assert np.isnan(silhouette_by_class(points, ["a"] * 90)).all()  # one class: no silhouette


def test_knn_agreement_excludes_the_paper_itself_even_with_duplicates() -> None:
    points = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.1, 1.0]])
    labels = ["a", "b", "c", "c", "c"]
    agreement = knn_agreement(points, labels, k=1)
    assert agreement.tolist() == [0.0, 0.0, 1.0, 1.0, 1.0]


def seed_evidence(test: dict) -> int:
    """The verdict over projection seeds by the one rule: +1 / -1 where its p is under 0.05; 0 with one seed."""
    tested = projection_test(test)
    return verdict(tested) if tested else 0


def test_seed_difference_and_its_verdict() -> None:
    """Read by the one rule: the seeds' paired bootstrap (``evaluation.hierarchical``), its interval and p from the
    same resamples; a direction only where p is under 0.05, whatever the signs or the spread alone say."""
    clear = seed_difference([0.50, 0.52, 0.51, 0.53, 0.50], [0.30, 0.31, 0.29, 0.32, 0.30])
    assert clear["seeds"] == 5 and clear["same_sign"] and clear["ci_low"] > 0 and clear["p"] < 0.05
    assert clear["method"] == "hierarchical bootstrap" and seed_evidence(clear) == 1
    assert seed_evidence(seed_difference([0.30, 0.31, 0.29], [0.50, 0.52, 0.51])) == -1
    mixed = seed_difference([0.30, 0.10, 0.35, 0.05, 0.40], [0.20, 0.20, 0.20, 0.20, 0.20])
    assert not mixed["same_sign"] and mixed["p"] >= 0.05 and seed_evidence(mixed) == 0  # the maps flip the direction
    # every seed of one sign is not enough: two seeds far above, three barely, is no difference detected
    noisy = seed_difference([0.21, 0.60, 0.22, 0.58, 0.23], [0.20, 0.20, 0.21, 0.20, 0.20])
    assert noisy["same_sign"] and noisy["ci_low"] <= 0 and noisy["p"] >= 0.05 and seed_evidence(noisy) == 0
    one = seed_difference([0.5], [0.2])
    assert one["sd"] is None and one["p"] is None and seed_evidence(one) == 0  # one map: a direction, never a verdict


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
        AnalysisConfig(methods=["tsne"], max_classes=0, projection_seeds=[0, 1, 2], eps_factors=[0.5, 2.0]),
        figure_stem=tmp_path / "fig",
    )
    tsne = result["scores"]["tsne"]
    assert tsne["good"]["homogeneity"] > 0.9 and tsne["good"]["homogeneity_sd"] is not None
    assert tsne["good"]["homogeneity"] > tsne["noise"]["homogeneity"] + 0.5
    assert len(tsne["good"]["per_seed"]["homogeneity"]) == 3 and result["projection_seeds"] == [0, 1, 2]
    assert result["eps_factors"] == [0.5, 1.0, 2.0] and set(result["eps_grid"]["tsne"]["good"]) == {"0.5", "1", "2"}
    assert seed_evidence(result["versus"]["tsne"]["good"]["1"]["homogeneity"]) == 1  # the reference: the first
    assert "noise" not in result["versus"]["tsne"]
    space = result["space"]
    assert space["reference"] == "noise" and space["models"]["good"]["knn_agreement"] == 1.0
    assert space["models"]["good"]["silhouette"] > space["models"]["noise"]["silhouette"] + 0.5
    assert set(result["per_paper"]["good"]["knn_agreement"]) == set(ids)
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").stat().st_size > 0
    assert "min_samples" in result["dbscan_rule"]
    assert "| tsne | good |" in scores_table(result) and " ± " in scores_table(result)
    assert "| tsne | 0.5 | good |" in eps_grid_table(result)
    assert "| good | 1.000 |" in space_table(result)


def test_labels_from_scidocs_reads_every_split(tmp_path) -> None:
    (tmp_path / "mag").mkdir()
    (tmp_path / "mag" / "train.csv").write_text("pid,class_label\na,x\nb,y\n")
    (tmp_path / "mag" / "test.csv").write_text("pid,class_label\nc,x\n")
    assert labels_from_scidocs(tmp_path) == {"a": "x", "b": "y", "c": "x"}
    with pytest.raises(FileNotFoundError):
        labels_from_scidocs(tmp_path, task="mesh")


def test_the_stage_pairs_the_full_space_over_papers(tmp_path) -> None:
    from specter_utils.spec import load_spec
    from specter_utils.workflow.analyse import geometry

    points, labels = blobs(n_per_class=40, n_classes=3, dim=16, spread=0.5)
    ids = [f"p{i}" for i in range(len(points))]
    good = EmbeddingSet(ids, points.astype(np.float32))
    noise = EmbeddingSet(ids, np.random.default_rng(0).normal(size=points.shape).astype(np.float32))
    spec = load_spec("smoke", {"analysis.projection_seeds": [0, 1], "analysis.eps_factors": [1.0]})
    result = geometry(spec, {"noise": noise, "good": good}, dict(zip(ids, labels, strict=True)), tmp_path / "f", "t")
    test = result["space"]["versus"]["good"]["knn_agreement"]
    assert test["queries"] == 120 and test["ci_low"] > 0.5 and test["p"] < 0.01
    assert "silhouette" in result["space"]["versus"]["good"] and "per_paper" not in result
    assert result["projection_seeds"] == [0, 1]
