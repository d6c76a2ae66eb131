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

One t-SNE map is one draw: its scores move with the projection's seed and with ``eps``. So every
projection score is taken over several projection seeds (each model projected with the same seeds, so
the difference is paired by seed: :func:`seed_difference`, the seeds' bootstrap of ``evaluation.hierarchical``)
and over a grid of ``eps`` around the knee. Beside the paper's protocol, two measures of the full-dimensional
space need neither a projection nor an ``eps`` (:func:`knn_agreement`, :func:`silhouette_by_class`)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import DBSCAN
from sklearn.manifold import TSNE
from sklearn.metrics import completeness_score, homogeneity_score, silhouette_samples, v_measure_score
from sklearn.neighbors import NearestNeighbors

from specter_utils.config import AnalysisConfig
from specter_utils.data.scidocs import available_tasks, read_classification_splits
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.evaluation.hierarchical import seeds_only_test
from specter_utils.vocabularies import ANALYSIS_METHODS

PAPER_FIGURE2 = {  # docs/protocol.md section 5, Figure 2 (t-SNE of MAG papers)
    "SPECTER": {"homogeneity": 0.41, "completeness": 0.72},
    "SciBERT": {"homogeneity": 0.19, "completeness": 0.63},
}
DBSCAN_RULE = (
    "min_samples = 2 * dim of the projection (4); eps = knee (max distance to the chord, axes scaled to [0, 1]) "
    "of the sorted distances to the min_samples-th nearest neighbour; DBSCAN noise counts as one cluster"
)
SPACE_MEASURES = ("knn_agreement", "silhouette")  # per paper, in the full-dimensional space (cosine)
SEED_MEASURES = ("homogeneity", "completeness", "v_measure", "noise_fraction", "n_clusters", "eps")


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
    """Draw up to ``max_papers`` labelled papers present in every embedding set, uniformly at random;
    ``max_classes`` keeps only the most frequent classes (ties by name) so colours stay legible."""
    common = [pid for pid in sorted(labels) if all(pid in es for es in embedding_sets.values())]
    if max_classes is not None:
        counts = Counter(labels[pid] for pid in common)
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
    """2-D projection by t-SNE (sklearn, random init) or UMAP (umap-learn, 15 neighbours, single-threaded).

    t-SNE starts from a random layout drawn from ``seed``: from PCA's layout every seed would give the same map,
    and the spread over seeds would measure nothing. ``threads`` caps OpenMP/BLAS threads: sklearn's t-SNE slows
    down twenty-fold when its threads compete with other processes for a few cores."""
    from threadpoolctl import threadpool_limits

    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n < 5:
        raise ValueError(f"need at least 5 points to project, got {n}")
    if method == "tsne":
        # t-SNE requires perplexity < n; (n - 1) / 3 keeps 3 * perplexity neighbours available.
        perplexity = min(perplexity, (n - 1) / 3)
        tsne = TSNE(n_components=2, perplexity=perplexity, init="random", learning_rate="auto", random_state=seed)
        with threadpool_limits(limits=threads):
            return tsne.fit_transform(vectors).astype(np.float64)
    if method == "umap":
        os.environ.setdefault("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")
        import umap

        # random_state makes UMAP deterministic (and single-threaded); n_jobs=1 says so explicitly.
        reducer = umap.UMAP(n_components=2, n_neighbors=min(15, n - 1), random_state=seed, n_jobs=1)
        with threadpool_limits(limits=threads):
            return np.asarray(reducer.fit_transform(vectors), dtype=np.float64)
    raise ValueError(f"unknown projection method {method!r}; expected one of {ANALYSIS_METHODS}")


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


def dbscan_scores(
    coords: np.ndarray, labels: list[str], min_samples: int | None = None, eps_factor: float = 1.0
) -> dict[str, Any]:
    """DBSCAN on ``coords`` with the stated rule (``eps`` = ``eps_factor`` x the knee); homogeneity, completeness
    and V-measure against ``labels``."""
    coords = np.asarray(coords, dtype=np.float64)
    min_samples = min_samples or 2 * coords.shape[1]
    eps = eps_factor * kdistance_knee(coords, min_samples)
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


def knn_agreement(vectors: np.ndarray, labels: list[str], k: int = 10) -> np.ndarray:
    """Each paper's share of its ``k`` nearest papers by cosine (itself excluded) that share its class."""
    vectors = np.asarray(vectors, dtype=np.float64)
    n = len(vectors)
    k = min(k, n - 1)
    _, idx = NearestNeighbors(n_neighbors=k + 1, metric="cosine", algorithm="brute").fit(vectors).kneighbors(vectors)
    keep = idx != np.arange(n)[:, None]
    keep[keep.all(axis=1), -1] = False  # a duplicate took the paper's own place: drop the farthest instead
    neighbours = idx[keep].reshape(n, k)
    codes = np.unique(np.asarray(labels), return_inverse=True)[1]
    return (codes[neighbours] == codes[:, None]).mean(axis=1)


def silhouette_by_class(vectors: np.ndarray, labels: list[str]) -> np.ndarray:
    """Each paper's silhouette (cosine distance) with the classes as clusters; NaN where there is one class."""
    if not 2 <= len(set(labels)) <= len(labels) - 1:
        return np.full(len(labels), np.nan)
    return silhouette_samples(np.asarray(vectors, dtype=np.float64), labels, metric="cosine")


def seed_difference(values: list[float], reference: list[float], n_resamples: int = 10_000) -> dict[str, Any]:
    """``values - reference`` paired by projection seed, by the one test of ``evaluation.hierarchical`` (here the
    seeds alone: one DBSCAN score per seed and model): the mean difference, its 95% interval and two-sided p from the
    same resamples (``method`` names the test), and for the tables each seed's difference, their sd, whether every
    seed's difference has the same sign and ``spread``, the larger of the two rows' sds. One seed: no sd, interval,
    p or spread (None)."""
    diffs = np.asarray(values, dtype=np.float64) - np.asarray(reference, dtype=np.float64)
    n = len(diffs)
    out: dict[str, Any] = {"seeds": n, "diffs": [round(float(d), 4) for d in diffs], "diff": float(diffs.mean())}
    if n < 2:
        return {**out, "sd": None, "ci_low": None, "ci_high": None, "p": None, "spread": None, "same_sign": False}
    test = seeds_only_test(values, reference, n_resamples)
    return {
        **out,
        "sd": float(diffs.std(ddof=1)),
        **{key: getattr(test, key) for key in ("ci_low", "ci_high", "p", "method", "n_resamples")},
        "spread": max(float(np.std(values, ddof=1)), float(np.std(reference, ddof=1))),
        "same_sign": bool(np.all(diffs > 0) or np.all(diffs < 0)),
    }


def _summary(per_seed: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """Mean and sd (n - 1; None for one seed) over seeds of each of ``keys``, and the per-seed values."""
    out: dict[str, Any] = {}
    for key in keys:
        values = [float(s[key]) for s in per_seed]
        out[key] = round(float(np.mean(values)), 4)
        out[f"{key}_sd"] = round(float(np.std(values, ddof=1)), 4) if len(values) > 1 else None
    out["per_seed"] = {key: [s[key] for s in per_seed] for key in keys}
    return out


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
            sd = {m: p.scores.get(f"{m}_sd") for m in ("homogeneity", "completeness")}
            shown = {m: f"{p.scores[m]:.2f}" + (f" ± {sd[m]:.2f}" if sd[m] is not None else "") for m in sd}
            subtitle += f"\nDBSCAN homogeneity {shown['homogeneity']}, completeness {shown['completeness']}"
        ax.set(xticks=[], yticks=[])
        ax.set_title(subtitle, fontsize=9)
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
    written = [path_stem.with_name(f"{path_stem.name}.{ext}") for ext in ("png", "pdf")]
    for out in written:
        fig.savefig(out, dpi=150)
    plt.close(fig)
    return written


def analyse_embeddings(
    embedding_sets: dict[str, EmbeddingSet],
    labels: dict[str, str],
    config: AnalysisConfig,
    seed: int = 0,
    figure_stem: str | Path | None = None,
    title: str | None = None,
    figure_models: list[str] | None = None,
) -> dict[str, Any]:
    """Figure 2 for several models: the full-space measures, then project, cluster, score and (optionally) plot
    the same papers, every projection once per seed of ``config.projection_seeds``; ``seed`` draws the papers.

    The first of ``embedding_sets`` is the reference every other model is compared with; ``figure_stem``
    (``figures/figure2_demo``) writes the first projection seed's ``.png`` and ``.pdf`` of ``figure_models``
    (default: all). Returns a JSON-ready dict: ``space`` and ``per_paper`` (the full-space measures, mean and per
    paper), ``scores`` (per method and model the knee rule's DBSCAN scores, mean and sd over seeds), ``eps_grid``
    (the same per eps factor) and ``versus`` (:func:`seed_difference` against the reference)."""
    seeds, knn, methods = list(config.projection_seeds), config.knn, config.methods
    factors = sorted({1.0, *map(float, config.eps_factors)})  # DBSCAN's eps as multiples of the knee's
    max_classes = config.max_classes or None
    sample = sample_labelled(embedding_sets, labels, max_papers=config.max_papers, max_classes=max_classes, seed=seed)
    vectors = {model: embeddings.lookup(sample.ids)[0] for model, embeddings in embedding_sets.items()}
    models = list(embedding_sets)
    reference = models[0]
    per_paper = {
        model: {
            "knn_agreement": knn_agreement(v, sample.labels, knn),
            "silhouette": silhouette_by_class(v, sample.labels),
        }
        for model, v in vectors.items()
    }
    space = {
        "k": min(knn, len(sample.ids) - 1),
        "metric": "cosine",
        "reference": reference,
        "models": {
            model: {measure: round(float(np.mean(values)), 4) for measure, values in measures.items()}
            for model, measures in per_paper.items()
        },
    }
    projections: list[Projection] = []
    scores: dict[str, dict[str, Any]] = {}
    grid: dict[str, dict[str, Any]] = {}
    versus: dict[str, dict[str, Any]] = {}
    for method in methods:
        runs: dict[str, list[dict[str, dict[str, Any]]]] = {}  # model -> per seed: factor -> scores
        for model in models:
            runs[model] = []
            for s in seeds:
                coords = project(vectors[model], method=method, seed=s, perplexity=config.perplexity)
                runs[model].append({f"{f:g}": dbscan_scores(coords, sample.labels, eps_factor=f) for f in factors})
                if s == seeds[0]:
                    projections.append(Projection(model, method, coords, sample.labels))
        scores[method], grid[method], versus[method] = {}, {}, {}
        for model in models:
            knee = [run["1"] for run in runs[model]]
            counts = {k: knee[0][k] for k in ("min_samples", "n_points", "n_classes")}
            scores[method][model] = {**_summary(knee, SEED_MEASURES), **counts, "seeds": seeds}
            grid[method][model] = {
                f"{f:g}": _summary(
                    [run[f"{f:g}"] for run in runs[model]], ("homogeneity", "completeness", "noise_fraction")
                )
                for f in factors
            }
            if model != reference:
                versus[method][model] = {
                    f"{f:g}": {
                        measure: seed_difference(
                            [run[f"{f:g}"][measure] for run in runs[model]],
                            [run[f"{f:g}"][measure] for run in runs[reference]],
                        )
                        for measure in ("homogeneity", "completeness")
                    }
                    for f in factors
                }
        for p in projections:
            if p.method == method:
                p.scores = scores[method][p.model]
    drawn = [p for p in projections if figure_models is None or p.model in figure_models]
    figures = [str(p) for p in plot_projections(drawn, figure_stem, title)] if figure_stem else []
    return {
        "space": space,
        "per_paper": {
            model: {measure: dict(zip(sample.ids, map(float, values), strict=True)) for measure, values in m.items()}
            for model, m in per_paper.items()
        },
        "scores": scores,
        "eps_grid": grid,
        "versus": versus,
        "eps_factors": factors,
        "projection_seeds": seeds,
        "dbscan_rule": DBSCAN_RULE,
        "n_papers": len(sample.ids),
        "n_classes": len(set(sample.labels)),
        "seed": seed,
        "methods": list(methods),
        "models": models,
        "reference": reference,
        "paper_figure2": PAPER_FIGURE2,
        "figures": figures,
    }
