"""Training configuration, presets, CLI flags, triplet data, sampler and model card (no training here)."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from specter_utils.data.records import Paper
from specter_utils.errors import DataError, OfflineError
from specter_utils.io import write_json
from specter_utils.recipes import PROFILES
from specter_utils.spec import train_config
from specter_utils.train_config import TrainConfig
from specter_utils.training.data import load_training_data, triplet_texts
from specter_utils.training.model_card import END, START, update_model_card, write_model_card
from specter_utils.training.run_folder import differing_fields
from specter_utils.triplets.io import Triplet, write_triplets

PATHS = {"triplets": "t", "metadata": "m.json", "out": "o"}


# --- config and presets ---


def test_defaults_are_the_papers_settings():
    config = TrainConfig(**PATHS).validate()
    assert (config.learning_rate, config.weight_decay, config.max_grad_norm) == (2e-5, 0.01, 1.0)
    assert (config.warmup_ratio, config.epochs, config.triplet_margin) == (0.1, 2.0, 1.0)
    # auto = [CLS] for a plain transformers base (SciBERT, the paper), the model's own pooling for MiniLM
    assert (config.pooling, config.max_length, config.base_model) == ("auto", 512, "minilm")
    assert (config.loss, config.merge_with_base) == ("triplet", 1.0)
    assert config.accumulation_steps() * config.batch_size == 32


def test_presets_then_overrides():
    cpu = train_config("cpu", **PATHS)
    assert (cpu.max_length, cpu.base_model, cpu.profile, cpu.recipe) == (64, "minilm", "cpu", "citation-mnrl")
    assert (cpu.loss, cpu.pooling, cpu.batch_size, cpu.accumulation_steps()) == (
        "mnrl-citation",
        "auto",
        64,
        1,
    )
    paper = train_config("cpu", "paper", **PATHS)  # the paper's recipe is one argument away
    assert (paper.loss, paper.pooling, paper.recipe) == ("triplet", "cls", "paper")
    assert paper.accumulation_steps() * paper.batch_size == 32
    gpu = train_config("gpu", **PATHS)
    assert (gpu.base_model, gpu.max_length, gpu.max_triplets) == ("allenai/scibert_scivocab_uncased", 512, 0)
    assert (gpu.accumulation_steps(), gpu.recipe, gpu.loss) == (1, "paper", "triplet")
    assert train_config("cpu", max_length=64, learning_rate=None, **PATHS).max_length == 64
    assert (
        train_config("cpu", learning_rate=None, **PATHS).learning_rate == 5e-5
    )  # None = not overridden (the recipe's)
    assert set(PROFILES) == {"cpu", "gpu"}


def test_the_cpu_budget_is_in_steps_unless_passes_are_named():
    """The cpu profile trains 375 optimiser steps (a small corpus makes more passes); naming epochs names the budget
    in passes, unless the same layer names the steps too."""
    assert (train_config("cpu", **PATHS).max_steps, train_config("cpu", **PATHS).epochs) == (375, 1.0)
    assert train_config("cpu", epochs=3.0, **PATHS).max_steps == -1
    assert train_config("cpu", epochs=3.0, max_steps=100, **PATHS).max_steps == 100
    from specter_utils.commands.train import config_from_args

    argv = ["--triplets", "T", "--metadata", "M", "--profile", "cpu"]
    assert config_from_args(_parse(argv)).max_steps == 375
    assert config_from_args(_parse([*argv, "--epochs", "2"])).max_steps == -1
    from specter_utils.training.train import describe_budget

    steps = describe_budget(train_config("cpu", **PATHS), 1775, 64)  # CiteSeer's 1,775 triplets: 28 steps a pass
    assert steps == "375 optimiser steps of 64, 13.4 passes over 1,775 training triplets"
    passes = describe_budget(train_config("cpu", epochs=3.0, **PATHS), 1775, 64)
    assert passes == "84 optimiser steps of 64, 3.0 passes over 1,775 training triplets"


def test_bad_settings_name_the_field():
    with pytest.raises(DataError, match="unknown setting"):
        train_config(learning_rat=1e-4)
    with pytest.raises(DataError, match="unknown profile"):
        train_config("tpu")
    with pytest.raises(DataError, match="unknown recipe"):
        train_config("cpu", "magic", **PATHS)
    with pytest.raises(DataError, match="loss"):
        TrainConfig(loss="contrastive", **PATHS).validate()
    with pytest.raises(DataError, match="at least 2 triplets"):
        TrainConfig(loss="mnrl", batch_size=1, effective_batch_size=1, **PATHS).validate()
    with pytest.raises(DataError, match="merge_with_base"):
        TrainConfig(merge_with_base=0.0, **PATHS).validate()
    with pytest.raises(DataError, match="pooling"):
        TrainConfig(pooling="max", **PATHS).validate()
    with pytest.raises(DataError, match="warmup_ratio"):
        TrainConfig(warmup_ratio=1.5, **PATHS).validate()
    with pytest.raises(DataError, match="triplets"):
        TrainConfig(metadata="m", out="o").validate()


def test_accumulation_follows_processes():
    config = TrainConfig(batch_size=4, **PATHS)
    assert [config.accumulation_steps(n) for n in (1, 2, 4, 8)] == [8, 4, 2, 1]
    with pytest.raises(DataError, match="not a multiple"):
        config.accumulation_steps(3)
    assert TrainConfig(gradient_accumulation_steps=5, **PATHS).accumulation_steps(3) == 5


def test_every_field_has_a_help():
    helps = {f.name: f.metadata["help"] for f in dataclasses.fields(TrainConfig) if f.metadata["help"]}
    assert {f.name for f in dataclasses.fields(TrainConfig)} <= set(helps)
    assert "wordpieces" in helps["max_length"]


def test_resume_check_ignores_run_only_fields():
    config = TrainConfig(**PATHS)
    saved = {**config.to_dict(), "out": "elsewhere", "progress_bar": False, "learning_rate": 1e-4}
    assert differing_fields(saved, config) == {"learning_rate": (1e-4, 2e-5)}


# --- CLI ---


def _parse(argv: list[str]) -> argparse.Namespace:
    from specter_utils.cli import build_parser

    return build_parser().parse_args(["train", *argv])


def test_cli_flags_override_the_preset():
    from specter_utils.commands.train import config_from_args
    from specter_utils.recipes import PROFILES

    args = _parse(
        ["--triplets", "T", "--metadata", "M", "--base-model", "minilm", "--out", "O", "--preset", "cpu"]
        + ["--learning-rate", "1e-4", "--no-resume", "--pooling", "mean", "--max-length", "64"]
    )
    config = config_from_args(args)
    assert (config.triplets, config.metadata, config.out, config.profile) == ("T", "M", "O", "cpu")
    assert (config.learning_rate, config.resume, config.pooling, config.max_length) == (1e-4, False, "mean", 64)
    assert config.max_triplets == PROFILES["cpu"]["max_triplets"]  # from the profile, not overridden
    assert (
        config_from_args(_parse(["--triplets", "T", "--metadata", "M", "--preset", "cpu", "--recipe", "paper"])).loss
        == "triplet"
    )
    with pytest.raises(SystemExit):
        _parse(["--pooling", "max"])


def test_train_without_a_profile_follows_the_machine(monkeypatch):
    """No --profile: the profile of the machine (cpu without CUDA, gpu with it) and that profile's recipe, resolved
    through the same layers as a run; the flags are the top layer."""
    import torch

    from specter_utils.commands.train import config_from_args

    argv = ["--triplets", "T", "--metadata", "M", "--out", "O"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = config_from_args(_parse(argv))
    assert (cpu.profile, cpu.recipe, cpu.loss, cpu.max_length) == ("cpu", "citation-mnrl", "mnrl-citation", 64)
    assert cpu.to_dict() == train_config("cpu", **PATHS | {"triplets": "T", "metadata": "M", "out": "O"}).to_dict()
    assert config_from_args(_parse([*argv, "--learning-rate", "1e-4"])).learning_rate == 1e-4  # a flag wins
    from specter_utils import devices

    monkeypatch.setattr(devices, "gpu_possible", lambda: True)  # a CUDA build of torch on a machine with a driver
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    gpu = config_from_args(_parse(argv))
    assert (gpu.profile, gpu.recipe, gpu.loss) == ("gpu", "paper", "triplet")
    assert config_from_args(_parse([*argv, "--profile", "cpu"])).profile == "cpu"  # a named profile wins


def test_train_reads_a_specification_file(tmp_path, monkeypatch, capsys):
    """--spec FILE: the flags start from its training section (a file without 'extends' starts from demo)."""
    import torch

    from specter_utils.cli import main
    from specter_utils.commands.train import config_from_args
    from specter_utils.spec import load_spec

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the file's profile wins over the machine's
    mine = tmp_path / "mine.yaml"
    mine.write_text("training:\n  epochs: 3.0  # three passes\n")
    config = config_from_args(_parse(["--triplets", "T", "--metadata", "M", "--spec", str(mine), "--seed", "5"]))
    demo = load_spec("demo").training
    assert (config.epochs, config.profile, config.max_triplets) == (3.0, "cpu", demo.max_triplets)
    assert config.max_steps == -1  # the file names passes: the profile's step budget gives way to them
    assert (config.triplets, config.seed) == ("T", 5)
    bad = tmp_path / "bad.yaml"
    bad.write_text("training:\n  loss: foo\n")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "train.jsonl").write_text("")
    (tmp_path / "m.json").write_text("{}")
    argv = ["train", "--triplets", str(tmp_path / "t"), "--metadata", str(tmp_path / "m.json"), "--spec", str(bad)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "training.loss='foo' must be one of" in err and str(bad) in err


def test_the_train_command_goes_through_the_workflow():
    """commands.train builds its config and hands it to workflow.train, the stage's one front door."""
    import ast
    import inspect

    import specter_utils.commands.train as command

    tree = ast.parse(inspect.getsource(command))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "specter_utils.workflow.train" in imported
    assert not any(name.startswith("specter_utils.training") for name in imported)


def test_cli_reports_bad_input_without_traceback(tmp_path, capsys):
    from specter_utils.cli import main

    code = main(["train", "--triplets", str(tmp_path / "none"), "--metadata", "m.json", "--out", str(tmp_path / "o")])
    assert code == 2
    assert "--triplets: folder not found" in capsys.readouterr().err


# --- data ---


@pytest.fixture
def papers() -> dict[str, Paper]:
    return {pid: Paper(pid, f"Title {pid}", f"Abstract {pid}.") for pid in ("a", "b", "c", "d")}


def test_texts_are_title_sep_abstract(tmp_path, papers):
    write_triplets(tmp_path / "train.jsonl", [Triplet("a", "b", "c", "hard"), Triplet("a", "b", "d", "easy")])
    texts = triplet_texts(tmp_path / "train.jsonl", papers, "[SEP]")
    assert texts.anchor[0] == "Title a[SEP]Abstract a."
    assert (texts.positive[0], texts.negative[1]) == ("Title b[SEP]Abstract b.", "Title d[SEP]Abstract d.")
    assert (texts.read, texts.used, texts.without_metadata, texts.kinds) == (2, 2, 0, {"hard": 1, "easy": 1})


def test_a_triplet_naming_an_unknown_paper_is_an_error_naming_file_line_and_id(tmp_path, papers):
    rows = [Triplet("a", "b", "c", "easy"), Triplet("a", "x", "c", "easy"), Triplet("y", "b", "x", "hard")]
    write_triplets(tmp_path / "train.jsonl", rows)
    with pytest.raises(DataError, match=r"train\.jsonl:2 \(id 'x'\): paper 'x' is not in the metadata.*--drop-unknown"):
        triplet_texts(tmp_path / "train.jsonl", papers, " ")


def test_drop_unknown_counts_and_drops_those_triplets(tmp_path, papers):
    rows = [Triplet("a", "b", "c", "easy"), Triplet("a", "x", "c", "easy"), Triplet("y", "b", "x", "hard")]
    write_triplets(tmp_path / "train.jsonl", rows)
    texts = triplet_texts(tmp_path / "train.jsonl", papers, " ", drop_unknown=True)
    counts = texts.counts()
    assert (counts["read"], counts["used"], counts["without_metadata"], counts["missing_paper_ids"]) == (3, 1, 2, 2)
    assert set(counts["missing_examples"]) == {"x", "y"}


def test_no_usable_triplet_is_an_error_naming_the_file(tmp_path, papers):
    write_triplets(tmp_path / "train.jsonl", [Triplet("q1", "b", "c", "easy")])
    with pytest.raises(DataError, match=r"train\.jsonl.*no usable triplets.*q1"):
        triplet_texts(tmp_path / "train.jsonl", papers, " ", drop_unknown=True)


def test_cap_is_a_seeded_sample(tmp_path, papers):
    rows = [Triplet("a", "b", "c", "easy"), Triplet("a", "b", "d", "easy"), Triplet("b", "a", "c", "easy")] * 3
    write_triplets(tmp_path / "train.jsonl", rows)
    first = triplet_texts(tmp_path / "train.jsonl", papers, " ", limit=4, seed=1)
    again = triplet_texts(tmp_path / "train.jsonl", papers, " ", limit=4, seed=1)
    assert (first.used, first.capped) == (4, 5)
    assert first.anchor == again.anchor and first.negative == again.negative


def test_training_data_needs_train_jsonl(tmp_path, papers):
    write_json(tmp_path / "metadata.json", {pid: p.to_specter_metadata() for pid, p in papers.items()})
    with pytest.raises(DataError, match="no train.jsonl"):
        load_training_data(tmp_path, tmp_path / "metadata.json", " ")
    write_triplets(tmp_path / "train.jsonl", [Triplet("a", "b", "c", "easy")])
    data = load_training_data(tmp_path, tmp_path / "metadata.json", " ")
    assert data.val is None and data.train.used == 1 and data.counts()["metadata_papers"] == 4


# --- sampler ---


def test_batch_order_depends_only_on_seed_and_epoch():
    from datasets import Dataset

    from specter_utils.training.sampler import EpochSeededBatchSampler

    texts = ["x" * n for n in range(1, 24)]
    dataset = Dataset.from_dict({"anchor": texts, "positive": texts, "negative": texts})
    sampler = EpochSeededBatchSampler(dataset, batch_size=4, drop_last=False, seed=3)
    epoch0 = list(sampler)
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    fresh = EpochSeededBatchSampler(dataset, batch_size=4, drop_last=False, seed=3)
    fresh.set_epoch(1)
    assert list(fresh) == epoch1 != epoch0
    assert sorted(i for b in epoch1 for i in b) == list(range(23)) and len(sampler) == len(epoch1) == 6
    grouped = EpochSeededBatchSampler(dataset, batch_size=4, drop_last=True, seed=3, group_by_length=True)
    flat = [i for b in grouped for i in b]
    # One mega-batch (50 batches) covers all 23 rows: longest first, the 3 shortest dropped with the last batch.
    assert len(grouped) == 5 and flat == list(range(22, 2, -1))


# --- model card ---


def _summary() -> dict:
    counts = {"file": "t/train.jsonl", "read": 10, "used": 8, "without_metadata": 2, "capped": 0}
    counts |= {"kinds": {"hard": 3, "easy": 5}, "missing_paper_ids": 1, "missing_examples": ["p9"]}
    return {
        "config": TrainConfig(**PATHS).to_dict(),
        "base_model_id": "sentence-transformers/all-MiniLM-L6-v2",
        "sep_token": "[SEP]",
        "data": {"metadata": "m.json", "metadata_papers": 12, "train": counts, "val": None},
        "derived": {"world_size": 1, "precision": "fp32", "total_steps": 4},
        "results": {"val_loss_final": 0.5},
        "finished_at": "2025-01-01 00:00 UTC",
        "device": "CPU",
        "runtime_s": 1.0,
    }


def test_model_card_states_data_and_hyperparameters_and_takes_results_later(tmp_path):
    (tmp_path / "README.md").write_text("---\ntags:\n- x\n---\n\n# Title\n\nAbout.\n\n## Usage\n\ncode\n")
    write_model_card(tmp_path, _summary())
    card = (tmp_path / "README.md").read_text()
    assert card.startswith("---\ntags:") and card.index("# Title") < card.index(START) < card.index("## Usage")
    assert "| train | `t/train.jsonl` | 10 | 8 | 2 (1 ids, e.g. p9) | 0 | easy 5, hard 3 |" in card
    assert "| learning_rate | 2e-05 |" in card and "| val_loss_final | 0.5 |" in card
    assert "Not evaluated yet" in card
    update_model_card(tmp_path, {"cite_map": 81.25, "avg": 70.0})
    update_model_card(tmp_path, {"cite_map": 82.5}, benchmark="hep-th")
    card = (tmp_path / "README.md").read_text()
    assert card.count(START) == card.count(END) == 1 and "Not evaluated yet" not in card
    assert "**SCIDOCS**" in card and "| cite_map | 81.25 |" in card and "| cite_map | 82.5 |" in card
    stored = json.loads((tmp_path / "specter_training.json").read_text())
    assert stored["evaluation"] == {"SCIDOCS": {"cite_map": 81.25, "avg": 70.0}, "hep-th": {"cite_map": 82.5}}


# --- device and model resolution ---


def test_precision_on_cpu(monkeypatch):
    import torch

    from specter_utils.training import train

    if torch.cuda.is_available():
        pytest.skip("CPU-only behaviour")
    monkeypatch.setattr(train, "native_bf16_cpu", lambda: False)
    assert train.resolve_precision("auto") == "fp32"
    with pytest.raises(DataError, match="needs a GPU or a CPU with native bf16"):
        train.resolve_precision("bf16")
    monkeypatch.setattr(train, "native_bf16_cpu", lambda: True)  # avx512_bf16 or amx_bf16
    assert train.resolve_precision("auto") == "bf16"
    assert train.resolve_precision("bf16") == "bf16"
    assert train.resolve_precision("fp32") == "fp32"
    with pytest.raises(DataError, match="needs a GPU"):
        train.resolve_precision("fp16")


def test_native_bf16_cpu_reads_the_flags(monkeypatch):
    from specter_utils import executed

    monkeypatch.setattr(executed, "_cpuinfo", lambda: ("Xeon", {"avx2", "avx512f", "avx512_bf16"}))
    assert executed.native_bf16_cpu()
    assert "avx512_bf16" in executed.machine_info()["flags"]
    monkeypatch.setattr(executed, "_cpuinfo", lambda: ("EPYC", {"avx2", "avx512f"}))
    assert not executed.native_bf16_cpu()
    monkeypatch.setattr(executed, "_cpuinfo", lambda: (None, set()))  # no /proc/cpuinfo (macOS, Windows)
    assert not executed.native_bf16_cpu()


def test_offline_hub_model_fails_fast(tmp_path, monkeypatch):
    from specter_utils.models import _in_hub_cache
    from specter_utils.training.train import train_specter

    if _in_hub_cache("allenai/scibert_scivocab_uncased"):
        pytest.skip("SciBERT is in the local hub cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = train_config("gpu", triplets=str(tmp_path), metadata=str(tmp_path / "m.json"), out=str(tmp_path / "o"))
    with pytest.raises(OfflineError, match="scibert"):
        train_specter(config)
