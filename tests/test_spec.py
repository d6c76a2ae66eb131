"""The run specification: layered defaults, recipes that mean what they say, sources, your own file."""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from specter_utils import config, settings, vocabularies
from specter_utils.cli import main
from specter_utils.config import SECTION_CLASSES, EmbedConfig
from specter_utils.recipes import DEFAULT_RECIPE, PROFILES, RECIPES
from specter_utils.spec import DEFAULTS, PRESETS, load_spec, parse_override, resolve_layers, spec_file
from specter_utils.train_config import SamplerConfig, TrainConfig
from specter_utils.workflow.ablations import ABLATIONS, REFERENCE, ablation_spec, reuses_main_model


def test_every_line_of_a_preset_says_why() -> None:
    for preset in PRESETS:
        for line in spec_file(preset).read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                assert "  # " in line, f"{preset}.yaml: a setting without its reason: {line!r}"


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_choosing_a_recipe_gives_exactly_that_recipe(preset: str, recipe: str) -> None:
    spec = load_spec(preset, {"training.recipe": recipe})
    for key, value in RECIPES[recipe].items():
        assert spec[f"training.{key}"] == value, (preset, recipe, key)
        assert spec.source(f"training.{key}") == f"recipe {recipe}", (preset, recipe, key)
    assert spec.source("training.recipe") == "override"


def test_the_paper_recipe_on_hepth_prints_the_papers_values(capsys) -> None:
    assert main(["spec", "show", "--preset", "hepth", "--set", "training.recipe=paper"]) == 0
    shown = capsys.readouterr().out
    for line in (
        "loss: triplet  # recipe paper",
        "pooling: cls  # recipe paper",
        "triplet_margin: 1.0  # recipe paper",
        "learning_rate: 2.0e-05  # recipe paper",
        "effective_batch_size: 32  # recipe paper",
    ):
        assert line in shown


def test_the_released_recipe_prints_every_value(capsys) -> None:
    assert main(["spec", "show", "--preset", "hepth", "--set", "training.recipe=released"]) == 0
    shown = capsys.readouterr().out
    for key in RECIPES["released"]:
        assert re.search(rf"^  {key}: .*# recipe released$", shown, re.M), key
    assert "best_by_val_loss: true  # recipe released" in shown


def test_a_preset_recipe_applies_below_the_presets_own_changes() -> None:
    """A preset's own value for a recipe key wins over the recipe it names (smoke trains in batches of 32)."""
    spec = load_spec("smoke")
    assert spec["training.recipe"] == DEFAULT_RECIPE["cpu"] and spec.source("training.loss") == "recipe citation-mnrl"
    assert (spec["training.batch_size"], spec.source("training.batch_size")) == (32, "preset smoke")


def test_every_value_has_a_source() -> None:
    spec = load_spec("hepth", {"training.epochs": 2.0})
    assert spec.source("data.corpus") == "preset hepth"
    assert spec.source("training.max_length") == "profile cpu"
    assert spec.source("training.epochs") == "override"
    assert spec.source("heads.end_to_end.patience") == "default"
    assert set(spec.frame("training")["source"]) >= {"default", "profile cpu", "recipe citation-mnrl", "override"}


# ---------------------------------------------------------------- defaults live in one place
def _restatements(settings: dict, lower: dict) -> list[str]:
    return [key for key, value in settings.items() if key in lower and lower[key] == value]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_preset_states_only_what_it_changes(preset: str) -> None:
    """Every value of a preset file differs from what the layers below it give (defaults, the preset it extends,
    profile, recipe)."""
    from specter_utils.spec import file_layers

    *parents, (label, settings) = file_layers(preset)
    profile = settings.get("training.profile") or load_spec(preset)["training.profile"]
    below, _ = resolve_layers([*parents, ("profile", {"training.profile": profile})])
    restated = _restatements({k: v for k, v in settings.items() if k != "training.profile"}, below)
    assert restated == [], f"{preset}.yaml restates {restated}"


def test_profiles_and_recipes_state_only_what_they_change() -> None:
    defaults = TrainConfig().to_dict()
    for name, values in {**PROFILES, **RECIPES}.items():
        unknown = set(values) - set(defaults)
        assert not unknown, (name, unknown)
    for name, values in PROFILES.items():
        assert _restatements(values, defaults) == [], f"profile {name} restates a default"


def _flag_defaults(command: str) -> dict[str, object]:
    """Every flag's default of one subcommand (dest -> default), from the real parser."""
    from specter_utils.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    defaults: dict[str, object] = {}
    for action in sub._actions:
        if action.option_strings and action.help != argparse.SUPPRESS:  # a hidden old spelling shares the dest
            defaults.setdefault(action.dest, action.default)
    return defaults


@pytest.mark.parametrize(("command", "cls"), [("train", TrainConfig), ("mine", SamplerConfig)])
def test_a_config_flag_has_no_default_of_its_own(command: str, cls: type) -> None:
    """Flags made from a config class default to None: the value comes from the class (and the layers above)."""
    defaults = _flag_defaults(command)
    for field in dataclasses.fields(cls):
        if field.name in defaults:
            assert defaults[field.name] is None, f"{command} --{field.name} restates a default"


def test_embed_flags_take_their_defaults_from_the_embedding_config() -> None:
    defaults = _flag_defaults("embed")
    assert defaults["max_length"] == EmbedConfig().max_length
    assert defaults["batch_size"] == EmbedConfig().batch_size


def test_the_specification_is_the_config_classes() -> None:
    """Every key of a resolved specification is a field of its section's class, and every field is there."""
    spec = load_spec("hepth")
    for section, cls in SECTION_CLASSES.items():
        assert isinstance(spec.config(section), cls)
        names = {f.name for f in dataclasses.fields(cls)} - set(config.WORKFLOW_FIELDS.get(section, ()))
        assert set(spec.section(section)) == names, section
    assert set(DEFAULTS) == set(spec)


# ---------------------------------------------------------------- errors and old spellings
def test_an_unknown_key_names_the_closest_one() -> None:
    with pytest.raises(KeyError, match="did you mean 'training.epochs'"):
        load_spec("smoke", {"training.epochz": 1.0})
    with pytest.raises(TypeError, match="expected float"):
        load_spec("smoke", {"training.epochs": "two"})
    with pytest.raises(TypeError):
        load_spec("smoke", {"mining.no_hard_negatives": 1})  # a bool stays a bool


def test_old_spellings_still_work_and_warn(capsys) -> None:
    spec = load_spec("smoke", {"training.max_seq_length": 48, "embedding.max_seq_length": 96, "mining.spectroid": True})
    assert (spec["training.max_length"], spec["embedding.max_length"]) == (48, 96)
    assert spec["mining.strategy"] == "spectroid"
    assert "training.max_seq_length is deprecated, use training.max_length" in capsys.readouterr().err


def test_one_evaluation_length_and_one_seed_per_run() -> None:
    for preset in PRESETS:
        spec = load_spec(preset)
        assert [k for k in spec if k.endswith("seed")] == ["seed", "data.seed"], preset
        assert [k for k in spec if k.endswith("max_length")] == [
            "training.max_length",
            "embedding.max_length",
            "heads.end_to_end.max_length",
        ]
    assert load_spec("hepth")["embedding.max_length"] == 256


def test_parse_override_reads_yaml_values() -> None:
    assert parse_override("training.epochs=1.5") == ("training.epochs", 1.5)
    assert parse_override("ablations.variants=[no_hard_negatives, spectroid]") == (
        "ablations.variants",
        ["no_hard_negatives", "spectroid"],
    )
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_override("training.epochs")


# ---------------------------------------------------------------- your own file
def test_your_own_file_extends_a_preset(tmp_path, capsys) -> None:
    mine = tmp_path / "my_run.yaml"
    mine.write_text("extends: hepth\ntraining:\n  recipe: paper  # the paper's recipe\n  epochs: 2.0  # two passes\n")
    spec = load_spec(str(mine))
    assert spec["data.corpus"] == "hepth" and spec.source("data.corpus") == "preset hepth"
    assert (spec["training.loss"], spec.source("training.loss")) == ("triplet", "recipe paper")
    assert spec.source("training.epochs") == f"file {mine}"
    assert main(["spec", "show", "--spec", str(mine)]) == 0
    assert f"epochs: 2.0  # file {mine}" in capsys.readouterr().out


def test_a_bad_file_is_a_one_line_error(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("extends: hepth\ntrainig:\n  epochs: 2.0\n")
    assert main(["spec", "show", "--spec", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "did you mean 'training'" in err
    loop = tmp_path / "loop.yaml"
    loop.write_text(f"extends: {loop}\n")
    assert main(["spec", "show", "--spec", str(loop)]) == 2
    assert "circle" in capsys.readouterr().err


# ---------------------------------------------------------------- ablation variants
def test_an_ablation_variant_is_the_spec_plus_its_overrides() -> None:
    spec = load_spec("hepth")
    for name, changes in ABLATIONS.items():
        variant = ablation_spec(spec, name)
        # a recipe is a whole set of values: the variant is the run under that recipe, plus its other changes
        start = (
            load_spec("hepth", {"training.recipe": changes["training.recipe"]})
            if "training.recipe" in changes
            else spec
        )
        differing = {key for key in start if variant[key] != start[key]}
        budget = {"training.max_triplets"} if not reuses_main_model(spec) else set()  # Table 2's own budget, if any
        assert differing == set(changes) - {"training.recipe"} | budget, name
    assert set(load_spec("hepth")["ablations.variants"]) <= set(ABLATIONS)


def test_a_table_2_budget_in_triplets_is_one_pass_whatever_the_main_run_steps() -> None:
    """The cpu profile's budget is 375 optimiser steps; Table 2's own budget (ablations.max_triplets) is one pass."""
    steps = PROFILES["cpu"]["max_steps"]
    spec = load_spec("hepth", {"training.max_steps": steps})  # the main run on the profile's step budget
    assert steps == 375 and spec["ablations.max_triplets"] == 3000
    for name in ABLATIONS:
        variant = ablation_spec(spec, name)
        assert (variant["training.max_steps"], variant["training.max_triplets"]) == (-1, 3000), name
    with pytest.raises(ValueError, match=REFERENCE):
        ablation_spec(spec, REFERENCE)  # the reference row is the main run's model, never retrained


# ---------------------------------------------------------------- values checked against their declaration
@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ("training.loss=foo", ("training.loss", "triplet, mnrl, mnrl-citation, gist")),
        ("training.batch_size=0", ("training.batch_size", "at least 1")),
        ("data.corpus=foo", ("data.corpus", "hepth, citeseer")),
        ("ablations.variants=[nonexistent]", ("ablations.variants", "'nonexistent'", "no_abstract")),
        ("evaluation.tasks=[citex]", ("evaluation.tasks", "'citex'", "co-cite")),
        ("ablations.tasks=[cite, citex]", ("ablations.tasks", "'citex'", "cocite")),
        ("embedding.baselines=[bm99]", ("embedding.baselines", "'bm99'", "tfidf-svd")),
    ],
)
@pytest.mark.parametrize("command", ["spec show", "run"])
def test_a_value_outside_its_choices_or_range_is_one_line(command: str, setting: str, words, capsys) -> None:
    """``spec show`` and ``run`` (before any notebook) refuse a value its setting does not allow: one line naming
    the key and what is allowed, exit 2."""
    assert main([*command.split(), "--preset", "demo", "--set", setting]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and captured.out == ""
    assert err.startswith(f"specter-utils {command.split()[0]}: error: --set: ")
    for word in words:
        assert word in err, (word, err)


def test_every_preset_profile_and_recipe_keeps_to_the_declarations() -> None:
    for preset in PRESETS:
        for recipe in RECIPES:
            load_spec(preset, {"training.recipe": recipe})  # raises on a value outside its choices or range
    for name, values in {**PROFILES, **RECIPES}.items():
        settings.setting_problems(TrainConfig(**values))  # every value of a profile or recipe is allowed
        assert list(settings.setting_problems(TrainConfig(**values))) == [], name


def test_flags_and_specification_share_one_declaration() -> None:
    """A field's choices and range are the flag's choices and range, and the specification's check."""
    from specter_utils.cli import build_parser

    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    assert settings.setting_choices(fields["loss"]) == vocabularies.LOSSES
    assert settings.setting_range(fields["warmup_ratio"]) == "in [0, 1)"
    parser = build_parser()
    train = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    loss = next(a for a in train._actions if a.dest == "loss")
    assert tuple(loss.choices) == vocabularies.LOSSES and loss.help.startswith(fields["loss"].metadata["help"])
    with pytest.raises(ValueError, match="warmup_ratio=1.0 must be in"):
        load_spec("demo", {"training.warmup_ratio": 1.0})
    with pytest.raises(ValueError, match="text_fields"):
        load_spec("demo", {"ablations.text_fields": ["title", "body"]})
    with pytest.raises(ValueError, match="analysis.methods"):
        load_spec("demo", {"analysis.methods": ["pca"]})
    # one dtype vocabulary: the torch spelling of a precision is its short name, in a specification as in a flag
    assert load_spec("demo", {"training.dtype": "bfloat16"})["training.dtype"] == "bf16"
    assert vocabularies.canonical_dtype("float32") == "fp32" and set(vocabularies.TRAIN_DTYPES) <= set(
        vocabularies.DTYPES
    )


def test_a_file_that_is_not_yaml_names_its_line(tmp_path, capsys) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("extends: hepth\ntraining: {loss: [\n")
    for command in (["spec", "show"], ["run"]):
        assert main([*command, "--spec", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert f"{bad}:3: not valid YAML" in err, err


def test_a_file_without_extends_starts_from_the_demo_preset(tmp_path, capsys, monkeypatch) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("training:\n  epochs: 3.0  # three passes\n")
    spec = load_spec(str(mine))
    demo = load_spec("demo")
    assert spec["training.epochs"] == 3.0 and spec.source("training.epochs") == f"file {mine}"
    assert {k for k in spec if spec[k] != demo[k]} == {"training.epochs"}
    assert spec.source("data.corpus") == "preset demo"
    assert main(["spec", "show", "--spec", str(mine)]) == 0
    assert "corpus: citeseer  # preset demo" in capsys.readouterr().out
    # run hands the same file to the pipeline (whose notebooks resolve it the same way)
    seen = {}

    def fake_run_pipeline(**kwargs):
        seen.update(kwargs)
        raise KeyError("stop here")

    monkeypatch.setattr("specter_utils.pipeline.run_pipeline", fake_run_pipeline)
    assert main(["run", "--spec", str(mine)]) == 2 and "stop here" in capsys.readouterr().err
    assert seen["preset"] == str(mine) and load_spec(seen["preset"])["data.corpus"] == "citeseer"


def test_spec_show_explain_prints_each_settings_declaration(capsys) -> None:
    """``spec show --explain`` reads the same declaration as the flags: help and what a setting allows."""
    assert main(["spec", "show", "--preset", "demo", "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    loss = next(i for i, line in enumerate(lines) if line.strip().startswith("loss:"))
    declared = {f.name: f for f in dataclasses.fields(TrainConfig)}["loss"]
    assert lines[loss - 1].strip() == (
        f"# {declared.metadata['help']} (one of {', '.join(vocabularies.LOSSES)}) "
        "[that is the default, 'triplet'; here recipe citation-mnrl sets 'mnrl-citation']"
    )
    assert lines[loss].endswith("# recipe citation-mnrl")


def test_one_precision_vocabulary_for_train_and_embed() -> None:
    """Short names are the vocabulary; torch's spellings are aliases of them, both ways from one table."""
    assert vocabularies.canonical_dtype("bfloat16") == "bf16" and vocabularies.torch_dtype_name("bf16") == "bfloat16"
    assert vocabularies.torch_dtype_name("int8") == "int8" and vocabularies.torch_dtype_name("auto") == "auto"
    assert set(vocabularies.EMBED_DTYPES) <= set(vocabularies.DTYPES) and set(vocabularies.TRAIN_DTYPES) <= set(
        vocabularies.DTYPES
    )
