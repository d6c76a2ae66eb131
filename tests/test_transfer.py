"""The transfer study (``studies.transfer``): models scored on a benchmark none of them trained on, each paired
against the target run's base model, on the smoke preset's tiny data with tiny random models."""

from __future__ import annotations

import shutil

import pytest
from conftest import save_random_bert

from specter_utils.errors import DataError
from specter_utils.io import write_json
from specter_utils.runs import RunPaths
from specter_utils.spec import load_spec
from specter_utils.studies.transfer import transfer_rows, transfer_table, write_transfer
from specter_utils.workflow.prepare import prepare


@pytest.fixture(scope="module")
def target(tmp_path_factory, random_tiny_model):
    """A smoke run folder as notebook 01 leaves it, whose base model is the tiny random one."""
    run = tmp_path_factory.mktemp("transfer") / "target"
    overrides = {"training.base_model": str(random_tiny_model)}
    prepare(load_spec("smoke", overrides), RunPaths.of(run).benchmark_dir)
    write_json(run / "pipeline.json", {"preset": "smoke", "overrides": overrides})
    return run


@pytest.fixture(scope="module")
def other_model(tmp_path_factory):
    """Another tiny random model: different weights, the same tokenizer."""
    return save_random_bert(tmp_path_factory.mktemp("other_bert"), seed=1)


def test_rows_are_paired_against_the_targets_base_and_read_by_one_holm_family(
    target, random_tiny_model, other_model, tmp_path
):
    work = tmp_path / "work"
    models = {"same": [random_tiny_model, random_tiny_model], "other": [other_model]}
    result = transfer_rows(target, models, work, split="test", n_resamples=500)
    assert list(result["maps"]) == ["base", "same", "other"]
    assert result["max_length"] == load_spec("smoke")["embedding.max_length"]  # the target's evaluation length
    assert set(result["tests"]) == {"same/cite", "same/cocite", "other/cite", "other/cocite"}
    for task in ("cite", "cocite"):
        same = result["tests"][f"same/{task}"]
        assert (
            same["diff"] == pytest.approx(0, abs=1e-9) and same["seeds"] == 2 and same["reference_seeds"] == 1
        )  # the base's own vectors
        assert result["maps"]["same"][task] == pytest.approx(result["maps"]["base"][task] * 2)
        assert same["units"] == result["queries"][task] > 0
        other = result["tests"][f"other/{task}"]
        assert other["diff"] != 0 and other["p_adjusted"] >= other["p"]  # Holm over the table's four comparisons
    table = transfer_table(result)
    assert "| model | seeds | cite MAP | co-cite MAP | cite: minus base | co-cite: minus base |" in table
    assert "Holm over the table's 4 comparisons" in table and "test split" in table
    assert "no difference detected" in table  # the identical row, by the one reading rule
    assert "Screens, not findings (fewer than 3 seeds): `same` (2 seeds), `other` (1 seed)." in table
    assert result["train_seconds"] == {"same": [None, None], "other": [None]}  # random models record no training
    timed = transfer_table({**result, "train_seconds": {"same": [None, None], "other": [3941.8]}})
    assert "- `other` trained in 66 min per seed (each model's `specter_training.json`)." in timed
    assert "`same` trained" not in timed
    other_power = result["detectable"]["other"]["cite"]
    assert other_power["queries"] == result["queries"]["cite"] and other_power["detectable"] > 0
    assert f"cite: {other_power['detectable']:.1f} MAP with its {other_power['queries']} queries" in table

    # a second call embeds nothing again: the files in work are read
    stamps = {p: p.stat().st_mtime_ns for p in work.glob("*.npy")}
    assert len(stamps) == 4  # one embeddings file per model and seed: base, same x 2, other
    again = transfer_rows(target, models, work, split="test", n_resamples=500)
    assert {p: p.stat().st_mtime_ns for p in work.glob("*.npy")} == stamps and again["maps"] == result["maps"]

    out = tmp_path / "measured" / "transfer.json"
    out.parent.mkdir()
    write_transfer(result, out)
    assert out.is_file() and out.with_suffix(".md").read_text() == table


def test_a_target_that_is_not_a_run_folder_is_one_clear_error(target, random_tiny_model, tmp_path):
    folder = tmp_path / "not-a-run"
    shutil.copytree(RunPaths.of(target).benchmark_dir, RunPaths.of(folder).benchmark_dir)
    with pytest.raises(DataError, match="no pipeline.json"):
        transfer_rows(folder, {"m": [random_tiny_model]}, tmp_path / "work")
    with pytest.raises(DataError, match="has no model"):
        transfer_rows(target, {"m": []}, tmp_path / "work")
