"""The run specification: one file per preset, every setting once, the same keys in every preset."""

from __future__ import annotations

import dataclasses

import pytest

from specter_utils.spec import PRESETS, differing_keys, load_spec, parse_override
from specter_utils.stages import ABLATIONS, REFERENCE, ablation_spec


def test_every_preset_holds_the_same_keys_with_the_same_types() -> None:
    assert differing_keys() == {}


def test_every_line_of_a_specification_says_why() -> None:
    from specter_utils.spec import spec_file

    for preset in PRESETS:
        for line in spec_file(preset).read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                assert "  # " in line, f"{preset}.yaml: a setting without its reason: {line!r}"


def test_training_and_mining_sections_are_the_configs_fields() -> None:
    from specter_utils.training.config import TrainConfig
    from specter_utils.triplets.sampler import SamplerConfig

    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    mine_fields = {f.name for f in dataclasses.fields(SamplerConfig)}
    for preset in PRESETS:
        spec = load_spec(preset)
        assert set(spec.section("training")) <= train_fields, preset
        assert set(spec.section("mining")) <= mine_fields - {"seed"}, preset  # the run's seed is spec.seed


def test_one_evaluation_length_and_one_seed_per_run() -> None:
    """The drift issue 12 fixed: hepth had seed 42 in 03 and 0 in 07, and lengths 256 in 04 and 128 in 07."""
    for preset in PRESETS:
        spec = load_spec(preset)
        assert [k for k in spec if k.endswith("seed")] == ["seed", "data.seed"], preset
        assert [k for k in spec if k.endswith("max_seq_length")] == [
            "training.max_seq_length",
            "embedding.max_seq_length",
        ]
    assert load_spec("hepth")["embedding.max_seq_length"] == 256


def test_overrides_name_an_existing_key_and_keep_its_type() -> None:
    spec = load_spec("smoke")
    changed = spec.with_overrides({"training.epochs": 2, "embedding.baselines": ["random"]})
    assert changed["training.epochs"] == 2.0 and isinstance(changed["training.epochs"], float)
    assert changed["embedding.baselines"] == ["random"] and spec["embedding.baselines"] != ["random"]
    assert changed.overrides == {"training.epochs": 2, "embedding.baselines": ["random"]}
    with pytest.raises(KeyError, match="training.epochz"):
        spec.with_overrides({"training.epochz": 1.0})
    with pytest.raises(TypeError, match="expected float"):
        spec.with_overrides({"training.epochs": "two"})
    with pytest.raises(TypeError):
        spec.with_overrides({"mining.spectroid": 1})  # a bool stays a bool


def test_parse_override_reads_yaml_values() -> None:
    assert parse_override("training.epochs=1.5") == ("training.epochs", 1.5)
    assert parse_override("ablations.variants=[no_hard_negatives, spectroid]") == (
        "ablations.variants",
        ["no_hard_negatives", "spectroid"],
    )
    assert parse_override("mining.spectroid=true") == ("mining.spectroid", True)
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_override("training.epochs")


def test_an_ablation_variant_is_the_spec_plus_its_overrides() -> None:
    spec = load_spec("hepth")
    for name, changes in ABLATIONS.items():
        variant = ablation_spec(spec, name)
        differing = {key for key in spec if variant[key] != spec[key]}
        assert differing == set(changes), name
    assert set(load_spec("hepth")["ablations.variants"]) <= set(ABLATIONS)
    with pytest.raises(ValueError, match=REFERENCE):
        ablation_spec(spec, REFERENCE)  # the reference row is the main run's model, never retrained
