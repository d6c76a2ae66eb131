"""Did training help on this corpus? The base model, the final model and its last checkpoints scored on the
benchmark's validation queries (never its test queries), and the model the run hands over.

Each candidate embeds the papers that the validation split of ``cite`` and ``cocite`` reads, at the run's evaluation
length, and gets per-query AP. The trained candidate with the highest mean validation MAP over the tasks is compared
with the base model, paired over the queries (``evaluation.paired.paired_test``: 95% bootstrap interval). The rule:
the trained model is kept when its mean validation MAP is above the base's; else the run's model folder becomes a
copy of the base model, and the line says so, unless ``training.keep`` is ``last`` (the final model, whatever the
scores). The choice follows the means, as a checkpoint choice does; the line calls the kept model above the base only
where every task's 95% interval is above 0, and says so where an interval includes 0 or lies below it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from specter_utils.config import EmbedConfig
from specter_utils.evaluation.paired import paired_test, score_row
from specter_utils.evaluation.suite import RESULT_KEYS
from specter_utils.io import read_json
from specter_utils.models import resolve_model
from specter_utils.train_config import TrainConfig
from specter_utils.training.model_card import SUMMARY_FILE, write_model_card
from specter_utils.training.run_folder import CHECKPOINT_DIR
from specter_utils.workflow.embed import embed, papers_to_embed
from specter_utils.workflow.sweep import ranking_qrels

TASKS = ("cite", "cocite")
SPLIT = "val"  # the verdict never reads the test split
FINAL_MODEL_DIR = "model_final"  # where the final model goes when the verdict keeps another one
MAX_CHECKPOINTS = 2  # checkpoints scored besides the final model: the last ones before it


def candidate_checkpoints(checkpoint_dir: Path, limit: int = MAX_CHECKPOINTS) -> list[tuple[int, Path]]:
    """The last ``limit`` checkpoints of a training run as ``(step, folder)``, oldest first."""
    found = []
    for folder in checkpoint_dir.glob("checkpoint-*") if checkpoint_dir.is_dir() else []:
        step = folder.name.rsplit("-", 1)[-1]
        if step.isdigit() and (folder / "config.json").exists():
            found.append((int(step), folder))
    return sorted(found)[-limit:] if limit else []


def score_model(
    embedding: EmbedConfig, model: str | Path, papers: Mapping[str, Any], qrels: Mapping, out: Path
) -> dict:
    """Per-query AP (x 100) of ``model`` on each task of ``qrels``, embedding ``papers`` into ``out``."""
    embed(embedding, model, dict(papers), out)
    return score_row(str(model), [out], qrels).seeds[0]


def _mean_map(per_query: Mapping[str, Mapping[str, float]]) -> float:
    return float(np.mean([np.mean(list(ap.values())) for ap in per_query.values()]))


def decide(
    base: Mapping[str, Mapping[str, float]],
    trained: Sequence[tuple[str, int, Mapping[str, Mapping[str, float]]]],
    keep: str = "best",
) -> dict[str, Any]:
    """The verdict from per-query AP: ``base`` and the trained candidates ``(name, step, per-task AP)``, the final
    model last. Returns the kept candidate, each candidate's MAP, the best trained candidate against the base per task
    (difference, 95% interval, p) and one line for the user."""
    maps = {name: {t: float(np.mean(list(ap.values()))) for t, ap in per.items()} for name, _, per in trained}
    maps["base"] = {t: float(np.mean(list(ap.values()))) for t, ap in base.items()}
    best_name, best_step, best = max(trained, key=lambda c: (_mean_map(c[2]), c[1]))
    if keep == "last":
        best_name, best_step, best = trained[-1]
    versus = {task: paired_test(best[task], base[task]) for task in base}
    above = _mean_map(best) > _mean_map(base)
    kept = best_name if (above or keep == "last") else "base"
    queries = ", ".join(f"{RESULT_KEYS.get(t, t)} {len(ap)}" for t, ap in base.items())
    diffs = "; ".join(
        f"{RESULT_KEYS.get(t, t)} {d['diff']:+.2f} [{d['ci_low']:+.2f}, {d['ci_high']:+.2f}]" for t, d in versus.items()
    )
    head = f"validation ({queries} queries), trained (step {best_step}) − base MAP: {diffs}"
    if kept == "base":
        line = (
            f"{head}. No checkpoint has a higher mean validation MAP than the base: the run's model is the base model "
            "(training.keep=last keeps the trained one)."
        )
    elif above:
        line = f"{head}. Kept: the trained model at step {best_step}, for its higher mean validation MAP: {_tested(versus)}"
    else:
        line = (
            f"{head}. Kept: the last trained model (training.keep=last), its mean validation MAP not above the base's."
        )
    return {
        "split": SPLIT,
        "queries": {t: len(ap) for t, ap in base.items()},
        "map": maps,
        "compared": best_name,
        "compared_step": best_step,
        "trained_minus_base": versus,
        "kept": kept,
        "kept_step": best_step if kept != "base" else 0,
        "keep": keep,
        "line": line,
    }


def _tested(versus: Mapping[str, Mapping[str, float]]) -> str:
    """What the intervals say of a kept model: a gain on every task only where every interval is above 0."""
    below = [RESULT_KEYS.get(t, t) for t, d in versus.items() if d["ci_high"] < 0]
    if all(d["ci_low"] > 0 for d in versus.values()):
        return "above the base on every task (each 95% interval above 0)."
    if below:
        return f"below the base on {', '.join(below)} (its 95% interval below 0)."
    return "not a tested gain (a 95% interval includes 0)."


def validation_verdict(
    embedding: EmbedConfig, training: TrainConfig, train_out: Path, model_dir: Path, scidocs: Path
) -> dict[str, Any] | None:
    """Score the base model, the final model and its last checkpoints on ``scidocs``'s validation queries, decide,
    and make ``model_dir`` the kept model (the base model copied in when it is kept). None without validation
    queries (a benchmark without a val split). A ``build-benchmark`` folder is read at its ``scidocs/``."""
    scidocs = scidocs / "scidocs" if (scidocs / "scidocs").is_dir() else scidocs
    tasks = [t for t in TASKS if (scidocs / t / f"{SPLIT}.qrel").exists()]
    if not tasks:
        return None
    qrels = ranking_qrels(scidocs, SPLIT, tasks)
    papers = papers_to_embed(scidocs, SPLIT, tasks)
    work = train_out / "verdict"
    base = score_model(embedding, training.base_model, papers, qrels, work / "base.jsonl")
    saved = candidate_checkpoints(train_out / CHECKPOINT_DIR, MAX_CHECKPOINTS + 1)
    summary_step = _final_step(model_dir, max([step for step, _ in saved] + [0]))
    checkpoints = [(step, folder) for step, folder in saved if step < summary_step][-MAX_CHECKPOINTS:]  # not the final
    trained = [
        (f"checkpoint-{step}", step, score_model(embedding, folder, papers, qrels, work / f"{step}.jsonl"))
        for step, folder in checkpoints
    ]
    trained.append(("final", summary_step, score_model(embedding, model_dir, papers, qrels, work / "final.jsonl")))
    result = decide(base, trained, training.keep)
    kept = result["kept"]
    if kept != "final":  # the trained model stays beside it, as model_final/
        shutil.rmtree(train_out / FINAL_MODEL_DIR, ignore_errors=True)
        shutil.move(str(model_dir), str(train_out / FINAL_MODEL_DIR))
        folders = {f"checkpoint-{step}": folder for step, folder in checkpoints}
        _copy_model(folders.get(kept, training.base_model), model_dir)
        _carry_summary(train_out / FINAL_MODEL_DIR, model_dir, result)
    shutil.rmtree(work, ignore_errors=True)
    return result


def _carry_summary(trained: Path, model_dir: Path, result: Mapping[str, Any]) -> None:
    """The training run's summary and card section in the kept model's folder too, saying which model it holds, so
    that later stages (notebook 05 records its scores there) read the run from the model they are given."""
    if not (trained / SUMMARY_FILE).exists():
        return
    summary = read_json(trained / SUMMARY_FILE)
    held = "the base model" if result["kept"] == "base" else f"the checkpoint at step {result['kept_step']}"
    summary["kept"] = {"model": f"this folder holds {held}, not the final trained model", "verdict": result["line"]}
    write_model_card(model_dir, summary)


def _final_step(model_dir: Path, fallback: int) -> int:
    summary = model_dir / SUMMARY_FILE
    results = (read_json(summary).get("results") or {}) if summary.exists() else {}
    return int(results.get("global_step") or fallback)


def _copy_model(source: str | Path, target: Path) -> None:
    """A model folder at ``target``: a folder (or the local copy a model name resolves to) copied, else the hub
    model downloaded into it."""
    resolved = resolve_model(source) if not Path(source).is_dir() else str(source)
    if Path(resolved).is_dir():
        shutil.copytree(resolved, target)
        return
    from huggingface_hub import snapshot_download

    snapshot_download(resolved, local_dir=str(target))
