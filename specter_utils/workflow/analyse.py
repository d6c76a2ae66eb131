"""Stage 6 (notebook 06): Figure 2, the embedding space of base and trained models coloured by class."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from specter_utils.analysis.geometry import SPACE_MEASURES, analyse_embeddings, labels_from_scidocs
from specter_utils.embedding.io import EmbeddingSet, read_embeddings
from specter_utils.evaluation.hierarchical import mean_score_test
from specter_utils.runs import RunPaths, corpus_label, label_kind, resolve
from specter_utils.spec import RunSpec


def space_test(values: dict[str, float], reference: dict[str, float], seed: int = 0) -> dict[str, Any]:
    """A full-space measure of one model against the reference, paper by paper: ``evaluation.hierarchical``'s test
    with one embedding per model (the papers resampled; it covers the choice of papers, not the training's
    randomness); ``queries``: the papers paired."""
    papers = sorted(set(values) & set(reference))
    test = mean_score_test([[values[p] for p in papers]], [[reference[p] for p in papers]], seed=seed).as_dict()
    return {**test, "queries": len(papers)}


def geometry(
    spec: RunSpec,
    embedding_sets: dict[str, EmbeddingSet],
    labels: dict[str, str],
    figure_stem: Path,
    title: str,
    figure_models: list[str] | None = None,
    projection_seeds: list[int] | None = None,
) -> dict[str, Any]:
    """The ``analysis`` section's projection, sample and DBSCAN rule over ``embedding_sets`` (Figure 2 and the
    heads' before/after figure alike), drawn to ``figure_stem``.png and .pdf; ``projection_seeds`` (default:
    ``analysis.projection_seeds``) the projection seeds. Each model after the first is compared with the first in
    the full space, paper by paper (:func:`space_test`), and per projection paired by seed."""
    config = replace(spec.analysis, projection_seeds=projection_seeds) if projection_seeds else spec.analysis
    analysis = analyse_embeddings(embedding_sets, labels, config, spec.seed, figure_stem, title, figure_models)
    per_paper = analysis.pop("per_paper")
    reference = analysis["reference"]
    analysis["space"]["versus"] = {
        model: {
            measure: space_test(values[measure], per_paper[reference][measure], seed=spec.seed)
            for measure in SPACE_MEASURES
            if all(v == v for v in values[measure].values())  # NaN: one class, no silhouette
        }
        for model, values in per_paper.items()
        if model != reference
    }
    return analysis


def figure2(spec: RunSpec, paths: RunPaths, figures_dir: str | Path = "figures") -> dict[str, Any]:
    """Score each ``analysis.models`` file in the full space (k-NN topic agreement, silhouette) against the
    ``analysis.task`` labels, project it (t-SNE / UMAP, each projection seed), score DBSCAN clusters against the
    labels and draw ``figures_dir/figure2_<run>.png`` (and .pdf).

    Returns ``geometry``'s analysis with ``labelled_by`` (what the labels are), ``papers`` and ``classes`` (the
    labelled sample) and ``figure`` (the PNG).
    """
    config = spec.analysis
    scidocs = paths.scidocs_dir(spec.evaluation.scidocs_dir)
    embedding_sets = {name: read_embeddings(paths.embedding_file(name)) for name in config.models}
    labels = labels_from_scidocs(scidocs, config.task)
    labelled_by = label_kind(paths.run_dir, spec.evaluation.scidocs_dir)  # e.g. "fields of study"
    figure_stem = resolve(figures_dir) / f"figure2_{paths.run_dir.name}"
    title = f"{corpus_label(paths.run_dir)}: {labelled_by} ({config.task} slot), run {paths.run_dir.name}"
    analysis = geometry(spec, embedding_sets, labels, figure_stem, title)
    return {
        **analysis,
        "labelled_by": labelled_by,
        "papers": len(labels),
        "classes": len(set(labels.values())),
        "figure": str(figure_stem.with_suffix(".png")),
    }
