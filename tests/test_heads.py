"""Classification heads: separable data gives a high macro-F1; runs are seeded; BatchNorm and dropout apply;
bad tasks are DataErrors; end-to-end training (a tiny random BERT, a few Trainer steps) saves a loadable encoder;
the one model builder refuses a length beyond the model's positions."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn as nn
from transformers import TrainerCallback

from specter_utils.config import EmbedConfig, EndToEndConfig, HeadsConfig
from specter_utils.data.records import Paper
from specter_utils.embedding.embed import embed_papers
from specter_utils.embedding.io import EmbeddingSet
from specter_utils.errors import DataError
from specter_utils.heads import (
    EndToEndRun,
    architecture_name,
    build_head,
    cap_splits,
    check_classification_splits,
    classification_scores,
    compare_heads,
    compare_heads_on_task,
    frozen_heads,
    head_seeds,
    parse_architecture,
    read_task_splits,
    stratified_cap,
    train_end_to_end,
    train_mlp_head,
)
from specter_utils.models import build_model, position_limit
from specter_utils.presentation.tables import frame_markdown, heads_frame


def labelled(n: int = 240, n_classes: int = 3, dim: int = 16, spread: float = 1.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, dim)) * 4
    classes = rng.integers(0, n_classes, size=n)
    vectors = centres[classes] + rng.normal(scale=spread, size=(n, dim))
    ids = [f"p{i}" for i in range(n)]
    rows = [(pid, f"c{k}") for pid, k in zip(ids, classes, strict=True)]
    return EmbeddingSet(ids, vectors.astype(np.float32)), rows


FAST = HeadsConfig(batch_norm=False, max_epochs=40, patience=5)  # with hidden_dims=(32,), seed 0


def test_scores_are_percent_with_two_decimals() -> None:
    assert classification_scores(["a", "b", "b"], ["a", "b", "a"]) == {"macro_f1": 66.67, "accuracy": 66.67}


def test_separable_classes_give_high_f1_for_both_classifiers() -> None:
    embeddings, rows = labelled()
    result = compare_heads(embeddings, {"train": rows[:160], "val": rows[160:190], "test": rows[190:]}, FAST, (32,), 0)
    assert result["mlp"]["macro_f1"] > 95
    assert result["linear_svm"]["macro_f1"] > 95
    assert result["coverage"]["test"] == {"papers": 50, "with_embedding": 50}
    assert not result["val_carved_from_train"]


def test_noise_gives_chance_level_f1() -> None:
    embeddings, rows = labelled()
    noise = EmbeddingSet(
        embeddings.ids, np.random.default_rng(5).normal(size=embeddings.vectors.shape).astype(np.float32)
    )
    result = compare_heads(noise, {"train": rows[:160], "test": rows[160:]}, replace(FAST, svm=False), (32,), 0)
    assert result["mlp"]["macro_f1"] < 60
    assert "linear_svm" not in result
    assert result["val_carved_from_train"]


def test_same_seed_same_result_and_missing_embeddings_counted() -> None:
    embeddings, rows = labelled(spread=3.0)
    splits = {"train": rows[:160], "test": rows[160:] + [("absent", "c0")]}
    first = compare_heads(embeddings, splits, replace(FAST, svm=False), (32,), 0)
    assert first == compare_heads(embeddings, splits, replace(FAST, svm=False), (32,), 0)
    assert first["config"]["seed"] == 0 and first["config"]["hidden_dims"] == [32]
    assert first["coverage"]["test"] == {"papers": 81, "with_embedding": 80}


def test_compare_heads_on_task_reads_the_scidocs_layout(tmp_path) -> None:
    embeddings, rows = labelled()
    task_dir = tmp_path / "mag"
    task_dir.mkdir()
    for split, part in (("train", rows[:160]), ("val", rows[160:190]), ("test", rows[190:])):
        (task_dir / f"{split}.csv").write_text("pid,class_label\n" + "".join(f"{p},{c}\n" for p, c in part))
    results = compare_heads_on_task(tmp_path, {"model": embeddings}, FAST, (32,), 0)
    assert results["model"]["mlp"]["macro_f1"] > 95
    with pytest.raises(FileNotFoundError):
        compare_heads_on_task(tmp_path, {"model": embeddings}, replace(FAST, task="mesh"), (32,), 0)


def write_task(root, task: str, parts: dict) -> None:
    (root / task).mkdir(parents=True, exist_ok=True)
    for split, part in parts.items():
        (root / task / f"{split}.csv").write_text("pid,class_label\n" + "".join(f"{p},{c}\n" for p, c in part))


def test_the_reports_architectures_parse() -> None:
    assert [parse_architecture(a) for a in ("linear", "1x64", "3x64", "5x64")] == [(), (64,), (64,) * 3, (64,) * 5]
    assert parse_architecture("512,64") == (512, 64)
    assert [architecture_name(parse_architecture(a)) for a in ("linear", "3x64", "512,64")] == [
        "linear",
        "3x64",
        "512,64",
    ]
    for bad in ("deep", "0x64", "3x0", ""):
        with pytest.raises(ValueError):
            parse_architecture(bad)


def test_batch_norm_and_dropout_are_in_the_head_and_act_in_train_mode() -> None:
    head = build_head(16, 3, (8, 8), batch_norm=True, dropout=0.5)
    kinds = [type(m) for m in head]
    assert kinds.count(nn.BatchNorm1d) == 2 and kinds.count(nn.Dropout) == 2
    assert not any(isinstance(m, (nn.BatchNorm1d, nn.Dropout)) for m in build_head(16, 3, (), True, 0.5))
    x = torch.randn(32, 16)
    head.train()
    torch.manual_seed(0)
    first = head(x)
    torch.manual_seed(1)
    assert not torch.allclose(first, head(x))  # dropout draws a new mask
    head.eval()
    assert torch.allclose(head(x), head(x))  # eval: deterministic, running statistics
    assert not torch.allclose(first, head(x))


def test_frozen_training_runs_the_head_in_train_mode() -> None:
    """The original's loops never switched modes: here BatchNorm's running statistics move during training."""
    embeddings, rows = labelled(n=120)
    x, y = embeddings.vectors, [c for _, c in rows]
    config = HeadsConfig(batch_norm=True, dropout=0.2, max_epochs=3, patience=3, batch_size=33)
    head = train_mlp_head(x[:90], y[:90], x[90:], y[90:], config, (8,), 0)
    norm = next(m for m in head.network if type(m).__name__ == "BatchNorm1d")
    assert int(norm.num_batches_tracked) > 0 and float(norm.running_mean.abs().sum()) > 0
    assert not head.network.training  # returned in eval mode


def test_frozen_heads_table_has_every_head_and_seed_and_the_svm() -> None:
    embeddings, rows = labelled()
    splits = {"train": rows[:160], "val": rows[160:190], "test": rows[190:]}
    # few steps: a larger rate
    config = HeadsConfig(architectures=["linear", "3x64"], n_seeds=2, learning_rate=1e-2, max_epochs=30, patience=10)
    assert head_seeds(config, 0) == [0, 1]
    result = frozen_heads(embeddings, splits, config, 0, labels={"encoder": "m", "max_length": 8})
    assert [(r["head"], r["seed"]) for r in result["rows"]] == [
        ("linear SVM (SCIDOCS)", None),
        ("linear", 0),
        ("linear", 1),
        ("3x64", 0),
        ("3x64", 1),
    ]
    assert all(r["macro_f1"] > 90 for r in result["rows"])
    again = frozen_heads(embeddings, splits, config, 0, labels={"encoder": "m", "max_length": 8})
    assert again["rows"] == result["rows"]  # seeded
    assert "end_to_end" not in result["config"] and result["config"]["learning_rate"] == 1e-2
    shifted = frozen_heads(embeddings, splits, replace(config, svm=False), 5, architectures=["linear"])
    assert [(r["head"], r["seed"]) for r in shifted["rows"]] == [("linear", 5), ("linear", 6)]
    table = heads_frame(result["rows"])
    assert list(table.columns) == ["seed 0", "seed 1", "mean", "std"] and len(table) == 3
    assert "| m | 8 |" in frame_markdown(table)
    svm_line = next(line for line in frame_markdown(table).splitlines() if "SVM" in line)
    assert svm_line.endswith("|  |") and "nan" not in svm_line  # one value: no spread shown, never 0.00


def test_one_class_or_a_class_missing_from_train_is_a_data_error_naming_the_file(tmp_path) -> None:
    write_task(tmp_path, "mag", {"train": [("a", "x"), ("b", "x")], "test": [("c", "x")]})
    with pytest.raises(DataError, match=r"mag/train\.csv.*one class"):
        read_task_splits(tmp_path, "mag")
    write_task(tmp_path, "mesh", {"train": [("a", "x"), ("b", "y")], "val": [("d", "x")], "test": [("c", "z")]})
    with pytest.raises(DataError, match=r"mesh/test\.csv \(id 'c'\).*missing from train.*'z'"):
        read_task_splits(tmp_path, "mesh")
    embeddings, _ = labelled(n=4)
    with pytest.raises(DataError, match="one class"):
        compare_heads_on_task(tmp_path, {"model": embeddings}, replace(FAST, task="mag"), (32,), 0)
    with pytest.raises(DataError, match="val split"):
        check_classification_splits({"train": [("a", "x"), ("b", "y")], "val": [("c", "w")], "test": []})


# ---------------------------------------------------------------- end to end
TOPICS = {
    "physics": "quantum string gauge brane black hole field",
    "biology": "cell protein gene enzyme tissue membrane",
    "finance": "market stock price trading risk bond",
}


def topic_papers(n: int = 48):
    rng = np.random.default_rng(0)
    papers, rows = {}, []
    for i in range(n):
        topic = list(TOPICS)[i % 3]
        words = rng.choice(TOPICS[topic].split(), size=10).tolist()
        papers[f"p{i}"] = Paper(f"p{i}", " ".join(words[:4]), " ".join(words), [], None, None, {})
        rows.append((f"p{i}", topic))
    return papers, {"train": rows[:30], "val": rows[30:39], "test": rows[39:]}


def test_end_to_end_trains_encoder_and_head_with_the_trainer(random_tiny_model, tmp_path) -> None:
    papers, splits = topic_papers()
    modes: list[bool] = []

    class Watch(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            model.head.register_forward_pre_hook(lambda module, inputs: modes.append(module.training))

    config = EndToEndConfig(
        max_length=16,
        epochs=2.0,
        head_learning_rate=1e-2,
        learning_rate=1e-3,
        batch_size=8,
        eval_steps=2,
        patience=2,
    )
    run = EndToEndRun(
        encoder=str(random_tiny_model),
        out=str(tmp_path / "run"),
        hidden_dims=(8,),
        batch_norm=True,
        dropout=0.2,
        seed=0,
    )
    capped = cap_splits(splits, HeadsConfig(end_to_end=config), seed=0)
    assert capped["train"] == splits["train"] and capped["val"] == splits["val"]  # under the caps: untouched
    result = train_end_to_end(config, run, papers, capped, callbacks=[Watch()])
    metrics = result.metrics
    assert True in modes and False in modes  # train mode for the steps, eval mode for validation and test
    assert 1 <= metrics["best_step"] <= metrics["global_step"] <= metrics["max_steps"] == 8
    y_test = [c for _, c in splits["test"]]
    assert len(result.predictions) == len(y_test) == metrics["test_papers"]
    assert {k: metrics[k] for k in ("macro_f1", "accuracy")} == classification_scores(y_test, result.predictions)
    log = (tmp_path / "run" / "log_history.json").read_text()
    assert "eval_macro_f1" in log and not (tmp_path / "run" / "checkpoints").exists()
    # the encoder moved, and the saved one is a sentence-transformers model that embeds like any other
    encoder = embed_papers(
        EmbedConfig(model=metrics["model_dir"], max_length=16),
        {pid: papers[pid] for pid, _ in splits["test"]},
        progress=False,
    )
    assert np.allclose(encoder.lookup(result.test_embeddings.ids)[0], result.test_embeddings.vectors, atol=1e-4)
    untouched = embed_papers(
        EmbedConfig(model=str(random_tiny_model), max_length=16),
        {pid: papers[pid] for pid, _ in splits["test"]},
        progress=False,
    )
    assert not np.allclose(untouched.vectors, encoder.vectors, atol=1e-3)
    assert (tmp_path / "run" / "head" / "head.pt").exists()
    # seeded: the same run again gives the same scores
    again = train_end_to_end(config, replace(run, out=str(tmp_path / "again")), papers, capped)
    assert again.metrics["macro_f1"] == metrics["macro_f1"] and again.predictions == result.predictions


def test_end_to_end_refuses_a_length_beyond_the_models_positions(random_tiny_model, tmp_path) -> None:
    papers, splits = topic_papers()
    limit = build_model(str(random_tiny_model), max_length=16)[0].auto_model.config.max_position_embeddings
    run = EndToEndRun(str(random_tiny_model), str(tmp_path / "run"), (), False, 0.0, 0)
    with pytest.raises(DataError, match=rf"max_length={limit + 1} exceeds the {limit} positions of model "):
        train_end_to_end(EndToEndConfig(max_length=limit + 1), run, papers, splits)
    assert not (tmp_path / "run").exists()


def test_cap_splits_is_stratified_and_carves_val() -> None:
    rows = [(f"p{i}", "big" if i % 4 else "small") for i in range(100)]
    capped = stratified_cap(rows, 20, seed=0)
    assert len(capped) == 20 and sum(c == "small" for _, c in capped) == 5
    assert stratified_cap(rows, 0, seed=0) == rows
    caps = HeadsConfig(end_to_end=EndToEndConfig(max_train_papers=30, max_val_papers=4))
    splits = cap_splits({"train": rows, "test": rows[:10]}, caps, seed=0)
    assert len(splits["train"]) == 30 and len(splits["val"]) == 4
    assert not {p for p, _ in splits["train"]} & {p for p, _ in splits["val"]}


# ---------------------------------------------------------------- the one model builder
def test_build_model_names_both_numbers_beyond_the_position_limit(random_tiny_model) -> None:
    """The one rule: a length beyond the position embeddings is a DataError naming the length, the limit and the
    model (a plain transformers folder gets [CLS] pooling; a sentence-transformers folder keeps its modules)."""
    model = build_model(str(random_tiny_model), max_length=16)
    limit = model[0].auto_model.config.max_position_embeddings
    assert model.max_seq_length == 16 and model[1].get_config_dict()["pooling_mode"] == "cls"
    assert build_model(str(random_tiny_model), max_length=limit).max_seq_length == limit  # the limit itself is fine
    with pytest.raises(DataError, match=rf"{random_tiny_model}: max_length={limit + 1} exceeds the {limit} positions"):
        build_model(str(random_tiny_model), "mean", max_length=limit + 1)
    with pytest.raises(DataError, match=r"max_length=100000 exceeds the 512 positions of model minilm"):
        build_model("minilm", max_length=100_000)


def test_position_limit_leaves_roberta_s_padding_offset_out() -> None:
    def transformer(model_type: str, positions: int) -> SimpleNamespace:
        config = SimpleNamespace(model_type=model_type, max_position_embeddings=positions)
        return SimpleNamespace(auto_model=SimpleNamespace(config=config))

    assert position_limit(transformer("roberta", 514)) == 512
    assert position_limit(transformer("bert", 512)) == 512
    assert position_limit(transformer("bert", 0)) is None
