"""Embedding-space analysis: the paper's Figure 2 and its DBSCAN homogeneity / completeness.

The paper projects the embeddings of a random set of MAG-labelled papers to 2-D with t-SNE, draws
SciBERT beside SPECTER, then runs DBSCAN on each 2-D projection and reports homogeneity and
completeness against the classes (SPECTER 0.41 / 0.72, SciBERT 0.19 / 0.63). The paper does not
give DBSCAN's parameters; here they are fixed by a stated rule so that no number is tuned by hand:

* ``min_samples = 2 * dim`` (= 4 on a 2-D projection; Sander et al. 1998, Schubert et al. 2017);
* ``eps`` = the knee of the sorted k-distance curve (k = ``min_samples``; the distance of each point
  to its k-th nearest neighbour, itself excluded), the knee being the point of that curve farthest
  from the chord joining its ends once both axes are scaled to [0, 1] ("kneedle", Satopaa et al.
  2011). The rule is scale-free, so it applies unchanged to t-SNE and UMAP coordinates.

DBSCAN's noise points (label -1) count as one cluster, as sklearn's metrics treat them; the noise
fraction is reported beside the scores. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import DBSCAN
from sklearn.manifold import TSNE
from sklearn.metrics import completeness_score, homogeneity_score, v_measure_score
from sklearn.neighbors import NearestNeighbors

from specter_utils.config import ANALYSIS_METHODS
from specter_utils.data.scidocs import available_tasks, read_classification_splits
from specter_utils.embedding.io import EmbeddingSet

PAPER_FIGURE2 = {  # docs/protocol.md section 5, Figure 2 (t-SNE of MAG papers)
    "SPECTER": {"homogeneity": 0.41, "completeness": 0.72},
    "SciBERT": {"homogeneity": 0.19, "completeness": 0.63},
}
DBSCAN_RULE = (
    "min_samples = 2 * dim of the projection (4); eps = knee (max distance to the chord, axes scaled to [0, 1]) "
    "of the sorted distances to the min_samples-th nearest neighbour; DBSCAN noise counts as one cluster"
)
METHODS = ANALYSIS_METHODS


@dataclass
class LabelledSample:
    """The papers drawn for the analysis: the same ids (and labels) for every model."""

    ids: list[str]
    labels: list[str]


@dataclass
class Projection:
    """2-D coordinates of one model's embeddings by one method, with its DBSCAN scores."""

    model: str
    method: str
    coords: np.ndarray
    labels: list[str]
    scores: dict[str, Any] = field(default_factory=dict)


def labels_from_scidocs(scidocs_dir: str | Path, task: str = "mag", splits: tuple[str, ...] = ("train", "val", "test")):
    """``{paper_id: class}`` from a SCIDOCS-layout classification task (``mag`` or ``mesh``)."""

    if task not in available_tasks(scidocs_dir):
        raise FileNotFoundError(f"no {task}/{{train,test}}.csv under {scidocs_dir}")
    labels: dict[str, str] = {}
    for split, rows in read_classification_splits(scidocs_dir, task).items():
        if split in splits:
            labels.update(rows)
    if not labels:
        raise FileNotFoundError(f"no {task}/{{{','.join(splits)}}}.csv under {scidocs_dir}")
    return labels


def sample_labelled(
    embedding_sets: dict[str, EmbeddingSet],
    labels: dict[str, str],
    max_papers: int = 2000,
    max_classes: int | None = None,
    seed: int = 0,
) -> LabelledSample:
    """Draw up to ``max_papers`` labelled papers present in every embedding set, uniformly at random.

    ``max_classes`` keeps only the most frequent classes (ties by name) so colours stay legible.
    """
    common = [pid for pid in sorted(labels) if all(pid in es for es in embedding_sets.values())]
    if max_classes is not None:
        counts: dict[str, int] = {}
        for pid in common:
            counts[labels[pid]] = counts.get(labels[pid], 0) + 1
        keep = set(sorted(counts, key=lambda c: (-counts[c], c))[:max_classes])
        common = [pid for pid in common if labels[pid] in keep]
    if len(common) < 10:
        raise ValueError(f"only {len(common)} labelled papers have an embedding in every set; need at least 10")
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(common), size=min(max_papers, len(common)), replace=False).tolist())
    ids = [common[i] for i in chosen]
    return LabelledSample(ids=ids, labels=[labels[pid] for pid in ids])


def project(
    vectors: np.ndarray, method: str = "tsne", seed: int = 0, perplexity: float = 30.0, threads: int | None = 1
) -> np.ndarray:
    """2-D projection by t-SNE (sklearn, PCA init) or UMAP (umap-learn, 15 neighbours, single-threaded).

    ``threads`` caps OpenMP/BLAS threads: sklearn's t-SNE slows down twenty-fold when its threads
    compete with other processes for a few cores, and one thread is fast enough for a few thousand points.
    """
    from threadpoolctl import threadpool_limits

    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n < 5:
        raise ValueError(f"need at least 5 points to project, got {n}")
    if method == "tsne":
        # t-SNE requires perplexity < n; (n - 1) / 3 keeps 3 * perplexity neighbours available.
        tsne = TSNE(n_components=2, perplexity=min(perplexity, (n - 1) / 3), init="pca", random_state=seed)
        with threadpool_limits(limits=threads):
            return tsne.fit_transform(vectors).astype(np.float64)
    if method == "umap":
        os.environ.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")
        import umap

        # random_state makes UMAP deterministic (and single-threaded); n_jobs=1 says so explicitly.
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, n - 1), random_state=seed, n_jobs=1)
        with threadpool_limits(limits=threads):
            return np.asarray(reducer.fit_transform(vectors), dtype=np.float64)
    raise ValueError(f"unknown projection method {method!r}; expected one of {METHODS}")


def kdistance_knee(coords: np.ndarray, k: int) -> float:
    """The knee of the sorted distances to each point's k-th nearest neighbour (see module docstring)."""

    coords = np.asarray(coords, dtype=np.float64)
    k = min(k, len(coords) - 1)
    distances, _ = NearestNeighbors(n_neighbors=k + 1).fit(coords).kneighbors(coords)
    curve = np.sort(distances[:, k])  # column 0 is the point itself
    span = curve[-1] - curve[0]
    if span <= 0:
        return float(curve[-1]) or 1e-9
    x = np.linspace(0.0, 1.0, len(curve))
    y = (curve - curve[0]) / span
    # Distance of each point of the convex, increasing curve below the chord y = x.
    knee = int(np.argmax(x - y))
    return float(max(curve[knee], 1e-12))


def dbscan_scores(coords: np.ndarray, labels: list[str], min_samples: int | None = None) -> dict[str, Any]:
    """DBSCAN on ``coords`` with the stated rule; homogeneity, completeness and V-measure against ``labels``."""

    coords = np.asarray(coords, dtype=np.float64)
    min_samples = min_samples or 2 * coords.shape[1]
    eps = kdistance_knee(coords, min_samples)
    clusters = DBSCAN(eps=eps, min_samples=min_samples).fit_predict(coords)
    return {
        "homogeneity": round(float(homogeneity_score(labels, clusters)), 4),
        "completeness": round(float(completeness_score(labels, clusters)), 4),
        "v_measure": round(float(v_measure_score(labels, clusters)), 4),
        "eps": float(eps),
        "min_samples": int(min_samples),
        "n_clusters": int(len(set(clusters.tolist()) - {-1})),
        "noise_fraction": round(float(np.mean(clusters == -1)), 4),
        "n_points": len(coords),
        "n_classes": len(set(labels)),
    }


def plot_projections(projections: list[Projection], path_stem: str | Path, title: str | None = None) -> list[Path]:
    """Grid of scatter plots (rows: methods, columns: models), coloured by class; writes PNG and PDF."""

    matplotlib.use("Agg")

    models = list(dict.fromkeys(p.model for p in projections))
    methods = list(dict.fromkeys(p.method for p in projections))
    classes = sorted({label for p in projections for label in p.labels})
    cmap = plt.get_cmap("tab20" if len(classes) > 10 else "tab10")
    colour = {c: cmap(i % cmap.N) for i, c in enumerate(classes)}
    fig, axes = plt.subplots(len(methods), len(models), figsize=(4.6 * len(models), 4.4 * len(methods)), squeeze=False)
    for p in projections:
        ax = axes[methods.index(p.method)][models.index(p.model)]
        ax.scatter(p.coords[:, 0], p.coords[:, 1], s=6, c=[colour[label] for label in p.labels], linewidths=0)
        name = {"tsne": "t-SNE", "umap": "UMAP"}.get(p.method, p.method)
        subtitle = f"{p.model} ({name})"
        if p.scores:
            subtitle += (
                f"\nDBSCAN homogeneity {p.scores['homogeneity']:.2f}, completeness {p.scores['completeness']:.2f}"
            )
        ax.set_title(subtitle, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    handles = [
        plt.Line2D([], [], marker="o", linestyle="", markersize=5, color=colour[c], label=c[:28]) for c in classes
    ]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(classes), 5), fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    rows = (len(classes) + 4) // 5
    fig.tight_layout(rect=(0, min(0.05 * rows, 0.3) / len(methods), 1, 0.97 if title else 1))
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for ext in ("png", "pdf"):
        out = path_stem.with_name(f"{path_stem.name}.{ext}")
        fig.savefig(out, dpi=150)
        written.append(out)
    plt.close(fig)
    return written


def analyse_embeddings(
    embedding_sets: dict[str, EmbeddingSet],
    labels: dict[str, str],
    methods: tuple[str, ...] | list[str] = METHODS,
    max_papers: int = 2000,
    max_classes: int | None = None,
    seed: int = 0,
    perplexity: float = 30.0,
    figure_stem: str | Path | None = None,
    title: str | None = None,
    figure_models: list[str] | None = None,
) -> dict[str, Any]:
    """Figure 2 for several models: project, cluster, score and (optionally) plot the same papers.

    Args:
        embedding_sets: model name -> embeddings, e.g. ``{"base": ..., "trained": ...}`` (order = columns).
        labels: paper id -> class.
        figure_stem: ``figures/figure2_demo`` writes ``figure2_demo.png`` and ``.pdf``.
        figure_models: the models drawn (default: all); every model is scored.

    Returns a JSON-ready dict: per method and model the DBSCAN scores, the rule, the sample size
    and the paper's reference values.
    """
    sample = sample_labelled(embedding_sets, labels, max_papers=max_papers, max_classes=max_classes, seed=seed)
    projections: list[Projection] = []
    scores: dict[str, dict[str, Any]] = {}
    for method in methods:
        scores[method] = {}
        for model, embeddings in embedding_sets.items():
            vectors, _ = embeddings.lookup(sample.ids)
            coords = project(vectors, method=method, seed=seed, perplexity=perplexity)
            result = dbscan_scores(coords, sample.labels)
            scores[method][model] = result
            projections.append(Projection(model, method, coords, sample.labels, result))
    drawn = [p for p in projections if figure_models is None or p.model in figure_models]
    figures = [str(p) for p in plot_projections(drawn, figure_stem, title)] if figure_stem else []
    return {
        "scores": scores,
        "dbscan_rule": DBSCAN_RULE,
        "n_papers": len(sample.ids),
        "n_classes": len(set(sample.labels)),
        "seed": seed,
        "methods": list(methods),
        "models": list(embedding_sets),
        "paper_figure2": PAPER_FIGURE2,
        "figures": figures,
    }
