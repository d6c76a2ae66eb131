"""Stage 6 (notebook 06): Figure 2, the embedding space of base and trained models coloured by class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specter_utils.analysis.geometry import analyse_embeddings, labels_from_scidocs
from specter_utils.embedding.io import EmbeddingSet, read_embeddings
from specter_utils.runs import RunPaths, corpus_label, label_kind, resolve
from specter_utils.spec import RunSpec


def geometry(
    spec: RunSpec,
    embedding_sets: dict[str, EmbeddingSet],
    labels: dict[str, str],
    figure_stem: Path,
    title: str,
    figure_models: list[str] | None = None,
) -> dict[str, Any]:
    """The ``analysis`` section's projection, sample and DBSCAN rule over ``embedding_sets`` (Figure 2 and the
    heads' before/after figure alike), drawn to ``figure_stem``.png and .pdf."""
    config = spec.analysis
    return analyse_embeddings(
        embedding_sets,
        labels,
        methods=config.methods,
        max_papers=config.max_papers,
        max_classes=config.max_classes or None,
        seed=spec.seed,
        perplexity=config.perplexity,
        figure_stem=figure_stem,
        title=title,
        figure_models=figure_models,
    )


def figure2(spec: RunSpec, paths: RunPaths, figures_dir: str | Path = "figures") -> dict[str, Any]:
    """Project each ``analysis.models`` file (t-SNE / UMAP), score DBSCAN clusters against the ``analysis.task``
    labels and draw ``figures_dir/figure2_<run>.png`` (and .pdf).

    Returns the analysis (per model and method: homogeneity, completeness, ...) with ``labelled_by`` (what the
    labels are), ``papers`` and ``classes`` (the labelled sample) and ``figure`` (the PNG).
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
