"""The validation verdict: which model a run hands over, decided on validation queries only, and said in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specter_utils.config import EmbedConfig
from specter_utils.train_config import SamplerConfig, TrainConfig
from specter_utils.workflow.verdict import decide

RNG = np.random.default_rng(0)
QUERIES = [f"q{i}" for i in range(40)]


def _ap(shift: float) -> dict[str, dict[str, float]]:
    base = RNG.uniform(40, 80, size=len(QUERIES))
    return {
        task: dict(zip(QUERIES, (base + shift + RNG.normal(0, 1, len(QUERIES))).tolist(), strict=True))
        for task in ("cite", "cocite")
    }


def test_a_better_trained_model_is_kept_and_the_line_says_by_how_much() -> None:
    base, final = _ap(0.0), None
    final = {t: {q: v + 5 for q, v in ap.items()} for t, ap in base.items()}
    result = decide(base, [("checkpoint-2", 2, base), ("final", 4, final)])
    assert result["kept"] == "final" and result["kept_step"] == 4
    cite = result["trained_minus_base"]["cite"]
    assert cite["diff"] == pytest.approx(5.0) and cite["ci_low"] > 0
    assert "Kept: the trained model at step 4" in result["line"] and "cite +5.00" in result["line"]
    assert result["line"].endswith("above the base on every task (each 95% interval above 0).")


def test_a_kept_model_is_called_above_the_base_only_where_every_interval_says_so() -> None:
    """The keep rule follows the mean; the line's words follow the intervals."""
    base = _ap(0.0)
    untested = {"cite": {q: v + 6 for q, v in base["cite"].items()}, "cocite": dict(base["cocite"])}
    line = decide(base, [("final", 4, untested)])["line"]
    assert "Kept: the trained model at step 4" in line and line.endswith(
        "not a tested gain (a 95% interval includes 0)."
    )
    mixed = {
        "cite": {q: v + 9 for q, v in base["cite"].items()},
        "cocite": {q: v - 3 for q, v in base["cocite"].items()},
    }
    result = decide(base, [("final", 4, mixed)])
    assert result["kept"] == "final" and result["trained_minus_base"]["cocite"]["ci_high"] < 0
    assert result["line"].endswith("below the base on co-cite (its 95% interval below 0).")
    assert "above the base" not in result["line"]


def test_the_best_checkpoint_beats_a_worse_final_model() -> None:
    base = _ap(0.0)
    better = {t: {q: v + 3 for q, v in ap.items()} for t, ap in base.items()}
    worse = {t: {q: v + 1 for q, v in ap.items()} for t, ap in base.items()}
    result = decide(base, [("checkpoint-2", 2, better), ("final", 4, worse)])
    assert result["kept"] == "checkpoint-2" and result["compared_step"] == 2


def test_a_model_below_its_base_is_not_handed_over_unless_asked() -> None:
    base = _ap(0.0)
    worse = {t: {q: v - 2 for q, v in ap.items()} for t, ap in base.items()}
    result = decide(base, [("final", 4, worse)])
    assert result["kept"] == "base" and "the run's model is the base model" in result["line"]
    kept_anyway = decide(base, [("final", 4, worse)], keep="last")
    assert kept_anyway["kept"] == "final" and "training.keep=last" in kept_anyway["line"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A synthetic benchmark and its mined triplets."""
    from specter_utils.benchmark.build import build_benchmark
    from specter_utils.data.synthetic import generate_synthetic_corpus
    from specter_utils.triplets.sampler import mine_dir

    root = tmp_path_factory.mktemp("verdict")
    build_benchmark(generate_synthetic_corpus(n_papers=150, n_topics=3, seed=4), root / "bench", seed=4, n_queries=20)
    mine_dir(root / "bench" / "train", root / "triplets", SamplerConfig(seed=0))
    return root


def tiny_config(small_run: Path, out: Path, model: Path, **changes) -> TrainConfig:
    """A training run of the tiny random model on the small benchmark's triplets, scored on its validation split."""
    settings = dict(
        triplets=str(small_run / "triplets"),
        metadata=str(small_run / "bench" / "train" / "metadata.json"),
        out=str(out),
        base_model=str(model),
        loss="mnrl",
        max_length=32,
        batch_size=8,
        effective_batch_size=8,
        max_val_triplets=8,
        eval_steps=100,
        logging_steps=1,
        progress_bar=False,
        benchmark=str(small_run / "bench"),
        profile="cpu",
    )
    return TrainConfig(**settings | changes)


def test_train_with_a_benchmark_scores_validation_only_and_records_the_verdict(
    small_run, random_tiny_model, monkeypatch
) -> None:
    from specter_utils.workflow import verdict as verdict_module
    from specter_utils.workflow.train import read_verdict, train_model

    embedded: list[set[str]] = []
    scored: list[dict] = []
    score = verdict_module.score_model

    def spy(embedding, model, papers, qrels, out):
        embedded.append(set(papers))
        scored.append(qrels)
        return score(embedding, model, papers, qrels, out)

    monkeypatch.setattr(verdict_module, "score_model", spy)
    out = small_run / "train"
    config = tiny_config(small_run, out, random_tiny_model, max_triplets=32, save_steps=2)
    model_dir = train_model(config, EmbedConfig(max_length=32, batch_size=16))
    result = read_verdict(out)
    assert (
        result is not None
        and result["split"] == "val"
        and result["kept"] in {"final", "base", "checkpoint-4", "checkpoint-6"}
    )
    # every candidate scored the validation qrels and embedded only the papers they read
    from specter_utils.workflow.embed import papers_to_embed
    from specter_utils.workflow.sweep import ranking_qrels

    scidocs = small_run / "bench" / "scidocs"
    assert all(qrels == ranking_qrels(scidocs, "val", ["cite", "cocite"]) for qrels in scored)
    assert ranking_qrels(scidocs, "val", ["cite", "cocite"]) != ranking_qrels(scidocs, "test", ["cite", "cocite"])
    assert all(papers == set(papers_to_embed(scidocs, "val", ["cite", "cocite"])) for papers in embedded)
    assert len(embedded) >= 2  # the base model and the final model at least
    assert (model_dir / "config.json").exists() or (model_dir / "modules.json").exists()
    assert not (out / "checkpoints").exists() and not (out / "verdict").exists()
    if result["kept"] == "base":
        assert (out / "model_final" / "specter_training.json").exists()
    assert json.loads((out / "verdict.json").read_text())["line"] == result["line"]


def test_a_kept_base_model_carries_the_run_summary_and_says_what_it_holds(
    small_run, random_tiny_model, monkeypatch
) -> None:
    """When validation keeps the base model, its copy in OUT/model still has the run's summary (notebook 05 records
    its scores there) and its card says that the folder holds the base model, with the verdict line."""
    from specter_utils.training.model_card import update_model_card
    from specter_utils.workflow import verdict as verdict_module
    from specter_utils.workflow.train import train_model

    decide = verdict_module.decide

    def base_kept(base, trained, keep):
        result = decide(base, trained, keep)
        return {**result, "kept": "base", "kept_step": 0, "line": result["line"] + " (forced: base kept)"}

    monkeypatch.setattr(verdict_module, "decide", base_kept)
    out = small_run / "train_base_kept"
    config = tiny_config(small_run, out, random_tiny_model, max_triplets=16)
    model_dir = train_model(config, EmbedConfig(max_length=32, batch_size=16))
    summary = json.loads((model_dir / "specter_training.json").read_text())
    assert summary["kept"]["model"].startswith("this folder holds the base model")
    assert summary["kept"]["verdict"].endswith("(forced: base kept)")
    card = update_model_card(model_dir, {"cite MAP": 1.0}).read_text()
    assert "**Kept: this folder holds the base model" in card and "| cite MAP | 1" in card
    assert (out / "model_final" / "specter_training.json").exists()
