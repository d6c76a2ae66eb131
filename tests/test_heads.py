"""Classification heads: separable data gives a high macro-F1; runs are seeded."""

from __future__ import annotations

import numpy as np
import pytest

from specter_utils.embedding.io import EmbeddingSet
from specter_utils.heads import HeadConfig, classification_scores, compare_heads, compare_heads_on_task, heads_table


def labelled(n: int = 240, n_classes: int = 3, dim: int = 16, spread: float = 1.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim)) * 4
    classes = rng.integers(0, n_classes, size=n)
    vectors = centres[classes] + rng.normal(scale=spread, size=(n, dim))
    ids = [f"p{i}" for i in range(n)]
    rows = [(pid, f"c{k}") for pid, k in zip(ids, classes, strict=True)]
    return EmbeddingSet(ids, vectors.astype(np.float32)), rows


FAST = HeadConfig(hidden_dims=(32,), max_epochs=40, patience=5, seed=0)


def test_scores_are_percent_with_two_decimals() -> None:
    assert classification_scores(["a", "b", "b"], ["a", "b", "a"]) == {"macro_f1": 66.67, "accuracy": 66.67}


def test_separable_classes_give_high_f1_for_both_classifiers() -> None:
    embeddings, rows = labelled()
    result = compare_heads(embeddings, {"train": rows[:160], "val": rows[160:190], "test": rows[190:]}, FAST)
    assert result["mlp"]["macro_f1"] > 95
    assert result["linear_svm"]["macro_f1"] > 95
    assert result["coverage"]["test"] == {"papers": 50, "with_embedding": 50}
    assert not result["val_carved_from_train"]


def test_noise_gives_chance_level_f1() -> None:
    embeddings, rows = labelled()
    noise = EmbeddingSet(
        embeddings.ids, np.random.default_rng(5).normal(size=embeddings.vectors.shape).astype(np.float32)
    )
    result = compare_heads(noise, {"train": rows[:160], "test": rows[160:]}, FAST, svm=False)
    assert result["mlp"]["macro_f1"] < 60
    assert "linear_svm" not in result
    assert result["val_carved_from_train"]


def test_same_seed_same_result_and_missing_embeddings_counted() -> None:
    embeddings, rows = labelled(spread=3.0)
    splits = {"train": rows[:160], "test": rows[160:] + [("absent", "c0")]}
    first = compare_heads(embeddings, splits, FAST, svm=False)
    assert first == compare_heads(embeddings, splits, FAST, svm=False)
    assert first["coverage"]["test"] == {"papers": 81, "with_embedding": 80}


def test_compare_heads_on_task_reads_the_scidocs_layout(tmp_path) -> None:
    embeddings, rows = labelled()
    task_dir = tmp_path / "mag"
    task_dir.mkdir()
    for split, part in (("train", rows[:160]), ("val", rows[160:190]), ("test", rows[190:])):
        (task_dir / f"{split}.csv").write_text("pid,class_label\n" + "".join(f"{p},{c}\n" for p, c in part))
    results = compare_heads_on_task(tmp_path, {"model": embeddings}, config=FAST)
    assert results["model"]["mlp"]["macro_f1"] > 95
    assert "| model | MLP head |" in heads_table(results)
    with pytest.raises(FileNotFoundError):
        compare_heads_on_task(tmp_path, {"model": embeddings}, task="mesh", config=FAST)
