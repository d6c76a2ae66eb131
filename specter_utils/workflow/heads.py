"""Stage 8 (notebook 08): SPECTROID's classification heads on frozen embeddings and fine-tuned end to end,
beside SCIDOCS's linear SVM, and the embedding space before and after."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from specter_utils.config import EmbedConfig
from specter_utils.embedding.embed import embed_papers
from specter_utils.embedding.io import read_embeddings
from specter_utils.errors import DataError
from specter_utils.heads import (
    EndToEndRun,
    cap_splits,
    frozen_heads,
    head_seeds,
    parse_architecture,
    prediction_columns,
    read_task_splits,
    svm_protocol_variants,
    train_end_to_end,
)
from specter_utils.runs import RunPaths, corpus_label, resolve
from specter_utils.spec import RunSpec
from specter_utils.workflow.analyse import geometry
from specter_utils.workflow.embed import papers_to_embed

HEADS_NOTEBOOK = "08_classification_heads"
ENCODERS = ("trained", "base")  # what heads.end_to_end.model may name


def task_splits(spec: RunSpec, paths: RunPaths) -> dict[str, list[tuple[str, str]]]:
    """The ``heads.task`` splits of the evaluation data, checked (one class, or a class unseen in train: DataError)."""
    return read_task_splits(paths.scidocs_dir(spec.evaluation.scidocs_dir), spec.heads.task)


def frozen(spec: RunSpec, paths: RunPaths) -> dict[str, Any]:
    """Every ``heads.architectures`` x seed on the frozen embeddings of each ``heads.models`` file (notebook 04's,
    at the run's evaluation length), with the linear SVM on the same split: ``{model: heads.frozen_heads(...)}``."""
    config = spec.heads
    splits = task_splits(spec, paths)
    results = {}
    for name in config.models:
        embeddings = read_embeddings(paths.embedding_file(name))
        labels = {
            "encoder": name,
            "max_length": embeddings.info.get("max_length", ""),
            "train_papers": len(splits["train"]),
        }
        results[name] = frozen_heads(embeddings, splits, config, spec.seed, labels=labels)
    return results


def svm_gap(spec: RunSpec, paths: RunPaths, frozen_results: dict[str, Any]) -> dict[str, Any]:
    """Why the SVM and the linear head disagree, measured: for each ``heads.models`` file, the SVM protocol changed
    one setting at a time (``heads.svm_protocol_variants``) beside the linear head's macro-F1 over seeds.
    ``{}`` when ``heads.svm`` or ``heads.svm_variants`` is off."""
    config = spec.heads
    if not (config.svm and config.svm_variants):
        return {}
    splits = task_splits(spec, paths)
    gap = {}
    for name in config.models:
        embeddings = read_embeddings(paths.embedding_file(name))
        linear = [r["macro_f1"] for r in frozen_results[name]["rows"] if r["head"] == "linear"]
        gap[name] = {
            "variants": svm_protocol_variants(embeddings, splits, config, spec.seed),
            "linear_head_macro_f1": linear,
        }
    return gap


def end_to_end_encoder(spec: RunSpec, paths: RunPaths) -> str:
    """The encoder ``heads.end_to_end.model`` names: ``trained`` (notebook 03's model) or ``base``."""
    name = spec.heads.end_to_end.model
    if name == "trained":
        if not paths.model_dir.exists():
            raise DataError("no trained model: run notebook 03 first", paths.model_dir)
        return str(paths.model_dir)
    if name == "base":
        return spec.training.base_model
    raise DataError(f"heads.end_to_end.model must be one of {ENCODERS}, got {name!r}", "run specification")


def end_to_end(spec: RunSpec, paths: RunPaths, figures_dir: str | Path = "figures") -> dict[str, Any]:
    """Fine-tune the encoder through each ``heads.end_to_end.architectures`` head, once per seed, and compare.

    On the same (capped) training papers and at the same input length it also trains the frozen heads and
    the SVM on the untouched encoder's embeddings, so the end-to-end rows have a like-for-like control; the
    geometry of the test papers (notebook 06's) is scored before and after every run.
    """
    config = spec.heads
    settings = config.end_to_end
    architectures, seeds = settings.architectures, head_seeds(config, spec.seed)
    if not architectures:
        return {"rows": [], "runs": [], "geometry": {}, "figure": None}
    started = time.time()
    encoder = end_to_end_encoder(spec, paths)
    scidocs = paths.scidocs_dir(spec.evaluation.scidocs_dir)
    splits = cap_splits(task_splits(spec, paths), config, seed=spec.seed)
    papers = papers_to_embed(scidocs, split="all")
    length = settings.max_length
    labels = {"encoder": settings.model, "max_length": length, "train_papers": len(splits["train"])}

    # The untouched encoder at the end-to-end length: the frozen control, the heads' standardisation, "before".
    wanted = {pid for rows in splits.values() for pid, _ in rows}
    before = embed_papers(
        EmbedConfig(model=encoder, max_length=length),
        {pid: paper for pid, paper in papers.items() if pid in wanted},
        batch_size=spec.embedding.batch_size,
        progress=False,
    )
    control = frozen_heads(before, splits, config, spec.seed, architectures=architectures, labels=labels)
    rows, runs, after = list(control["rows"]), [], {}
    train_vectors, _ = before.lookup([pid for pid, _ in splits["train"]])
    y_test = [label for _, label in splits["test"]]
    for architecture in architectures:
        for seed in seeds:
            run = EndToEndRun(
                encoder=encoder,
                out=str(paths.notebook_dir(HEADS_NOTEBOOK) / "end_to_end" / f"{architecture}-seed{seed}"),
                hidden_dims=parse_architecture(architecture),
                batch_norm=config.batch_norm,
                dropout=config.dropout,
                seed=seed,
            )
            result = train_end_to_end(settings, run, papers, splits, start_train_vectors=train_vectors)
            result.metrics["head"] = architecture
            runs.append(result.metrics)
            rows.append(
                {
                    **labels,
                    **{k: v for k, v in result.metrics.items() if k != "config"},
                    **prediction_columns(y_test, result.predictions),
                }
            )
            after[f"{architecture} seed {seed}"] = result.test_embeddings

    # Geometry of the held-out test papers before and after (the same sample, projection and DBSCAN rule as 06).
    figure_stem = resolve(figures_dir) / f"heads_geometry_{paths.run_dir.name}"
    title = (
        f"{corpus_label(paths.run_dir)}: {config.task} test papers, {settings.model} encoder "
        f"before and after end-to-end head training ({length} wordpieces)"
    )
    figure_models = ["before", *(f"{a} seed {seeds[0]}" for a in architectures)]
    # one projection seed (the run's): the heads' figure draws many models; the full-space measures are paired by paper
    space = geometry(
        spec, {"before": before, **after}, dict(splits["test"]), figure_stem, title, figure_models, [spec.seed]
    )
    return {
        "rows": rows,
        "runs": runs,
        "control": {k: v for k, v in control.items() if k != "rows"},
        "splits": {split: len(rows_) for split, rows_ in splits.items()},
        "encoder": encoder,
        "geometry": space,
        "figure": str(figure_stem.with_suffix(".png")),
        "seconds": round(time.time() - started, 1),
    }
