"""The run specification: every setting of a run, resolved from layers, each value knowing where it came from.

The layers, lowest first:

1. ``default``: the config classes of :mod:`specter_utils.config`, the only place a default lives;
2. ``profile NAME``: the training profile (``training.profile``: ``cpu`` or ``gpu``), which fits a run to a machine;
3. ``recipe NAME``: the training recipe (``training.recipe``), the scientific choices;
4. ``preset NAME``: ``params/<NAME>.yaml``, which states only what it changes, and why;
5. ``file PATH``: your own specification (``--spec my_run.yaml``), which starts from the preset it names with
   ``extends: hepth``, or from ``demo`` when it names none;
6. ``override``: ``--set KEY=VALUE`` on the command line, a notebook's ``overrides``, an ablation variant, the
   flags of ``specter-utils train``.

``specter-utils train`` resolves its TrainConfig through the same layers (:func:`train_config`); without a
profile in any layer it starts from the machine's (a ``device`` layer below the preset: cpu, or gpu with CUDA).

A recipe is applied at the layer that names it: choosing ``training.recipe=paper`` in an override gives exactly
the paper's recipe, whatever the preset says for the same keys; only keys set in that same layer win over it.
An unknown key is an error naming the closest valid one; a value must keep its setting's type and be one of its
choices, in its range (both declared with the setting in :mod:`specter_utils.config`)::

    spec = load_spec("hepth", {"embedding.max_length": 128})
    spec["embedding.max_length"], spec.training.learning_rate, spec.source("training.loss")
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePath
from typing import Any

import pandas as pd
import yaml

from specter_utils.config import (
    DEFAULT_PRESET,
    DEPRECATED_KEYS,
    SECTION_CLASSES,
    WORKFLOW_FIELDS,
    EndToEndConfig,
    defaults_tree,
    renamed_fields,
)
from specter_utils.errors import DataError
from specter_utils.paths import PARAMS_DIR, presets
from specter_utils.recipes import DEFAULT_RECIPE, PROFILES, RECIPES
from specter_utils.settings import canonical_value, setting_allowed, setting_problem
from specter_utils.train_config import TRAIN_RUN_FIELDS, SamplerConfig, TrainConfig

SECTIONS = tuple(SECTION_CLASSES)
EXTENDS = "extends"  # a file's key naming the preset (or file) it starts from


PRESETS = presets()


def spec_file(preset: str, params_dir: Path = PARAMS_DIR) -> Path:
    return Path(params_dir) / f"{preset}.yaml"


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"training": {"seed": 0}}`` as ``{"training.seed": 0}``."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = copy.deepcopy(value)
    return tree


DEFAULTS = flatten(defaults_tree())


def _fields(cls: type, prefix: str) -> dict[str, dataclasses.Field]:
    out: dict[str, dataclasses.Field] = {}
    for f in dataclasses.fields(cls):
        if isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):  # heads.end_to_end
            out.update(_fields(f.default_factory, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = f
    return out


# Each setting's declaration (its choices and range), by dotted key
FIELDS = {key: f for section, cls in SECTION_CLASSES.items() for key, f in _fields(cls, f"{section}.").items()}


def _did_you_mean(key: str, options: list[str], cutoff: float = 0.5) -> str:
    close = difflib.get_close_matches(key, options, n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


def _same_type(old: Any, new: Any) -> bool:
    """A value keeps its setting's type (an int may stand for a float; any list for a list)."""
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool)
    if isinstance(old, float):
        return isinstance(new, (int, float))
    return isinstance(new, type(old))


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def canonical(key: str, value: Any, where: str) -> tuple[str, Any]:
    """The setting's current name and value for ``key``; an old spelling warns once and is renamed."""
    if key in DEPRECATED_KEYS:
        new = DEPRECATED_KEYS[key]
        _warn(f"{where}: {key} is deprecated, use {new}")
        if key == "mining.spectroid":
            return new, "spectroid" if value else SamplerConfig().strategy
        return new, value
    return key, value


def check_value(key: str, value: Any, where: str) -> Any:
    """``value`` for setting ``key``, checked: an unknown key names the closest one, a wrong type is an error."""
    if key not in DEFAULTS:
        raise KeyError(f"{where}: no setting {key!r}{_did_you_mean(key, list(DEFAULTS))}")
    default = DEFAULTS[key]
    if key in FIELDS:
        value = canonical_value(FIELDS[key], value)  # an alias of a choice (dtype float32) is the choice (fp32)
    if not _same_type(default, value):
        raise TypeError(f"{where}: {key}={value!r}: expected {type(default).__name__} like {default!r}")
    return float(value) if isinstance(default, float) else copy.deepcopy(value)


def check_settings(values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    """Every value against its setting's choices and range: a DataError naming the first bad one, where it came from,
    and what is allowed."""
    for key, value in values.items():
        problem = setting_problem(FIELDS[key], value) if key in FIELDS else None
        if problem:
            raise DataError(f"{key}={value!r} {problem}", sources.get(key, "default"))


def _layer(flat: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One layer's settings, renamed from old spellings and checked."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        key, value = canonical(key, value, where)
        out[key] = check_value(key, value, where)
    return out


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping of one specification file (a preset or your own)."""
    path = Path(path)
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:  # one line: the file, the line and what yaml could not read there
        mark = getattr(exc, "problem_mark", None)
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise DataError(f"not valid YAML: {problem}", path, line=mark.line + 1 if mark else None) from None
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: expected a mapping of sections")
    for key, value in tree.items():
        if key not in (*SECTIONS, "seed", EXTENDS):
            hint = _did_you_mean(str(key), [*SECTIONS, "seed", EXTENDS], cutoff=0.6)
            raise KeyError(f"{path}: no section {key!r}{hint}")
        if key in SECTIONS and not isinstance(value, dict):
            raise ValueError(f"{path}: section {key!r} must be a mapping of settings")
    return tree


def _find_spec(name: str, params_dir: Path, relative_to: Path | None = None) -> tuple[Path, str]:
    """The file a name points at, with its source label: a preset name, or a path to a .yaml file."""
    if name.endswith((".yaml", ".yml")) or "/" in name:
        path = Path(name).expanduser()
        if not path.is_absolute() and relative_to is not None and not path.exists():
            path = relative_to / path
        if not path.is_file():
            raise FileNotFoundError(f"no specification file {path}")
        return path, f"file {name}"
    path = spec_file(name, params_dir)
    if not path.is_file():
        raise FileNotFoundError(f"no preset {name!r} ({path}); presets: {', '.join(presets(params_dir)) or 'none'}")
    return path, f"preset {name}"


def file_layers(name: str, params_dir: Path = PARAMS_DIR, seen: tuple[Path, ...] = ()) -> list[tuple[str, dict]]:
    """``[(source, flat settings)]`` of a preset or file and every file it extends, lowest first."""
    path, label = _find_spec(name, Path(params_dir), seen[-1].parent if seen else None)
    if path.resolve() in seen:
        raise ValueError(f"{path}: 'extends' makes a circle")
    tree = read_spec_file(path)
    parent = tree.pop(EXTENDS, None)
    if parent is None and label.startswith("file"):  # your own file starts from the default preset's data
        parent = DEFAULT_PRESET
    layers = file_layers(str(parent), params_dir, (*seen, path.resolve())) if parent else []
    return [*layers, (label, _layer(flatten(tree), str(path)))]


def _training(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A profile's or recipe's TrainConfig fields as keys of the specification's ``training`` section."""
    return {f"training.{key}": value for key, value in settings.items()}


def _apply(values: dict, sources: dict, settings: Mapping[str, Any], source: str) -> None:
    for key, value in settings.items():
        values[key] = copy.deepcopy(value)
        sources[key] = source


def resolve_layers(layers: list[tuple[str, dict]]) -> tuple[dict[str, Any], dict[str, str]]:
    """Flat values and their sources from ``[(source, settings)]`` above the defaults (lowest first): the training
    profile first, then the recipe at the layer that names it (the profile's own recipe when none does). A layer that
    sets ``training.epochs`` without ``training.max_steps`` replaces a step budget from below with its passes."""
    values, sources = dict(DEFAULTS), dict.fromkeys(DEFAULTS, "default")
    profile = next((s["training.profile"] for _, s in reversed(layers) if "training.profile" in s), "")
    if profile:
        if profile not in PROFILES:
            raise ValueError(f"unknown training.profile {profile!r}; expected one of {', '.join(PROFILES)}")
        _apply(values, sources, _training(PROFILES[profile]), f"profile {profile}")
    named = [i for i, (_, s) in enumerate(layers) if s.get("training.recipe")]
    recipe_at = named[-1] if named else -1
    recipe = layers[recipe_at][1]["training.recipe"] if named else DEFAULT_RECIPE.get(profile, "")
    if recipe and recipe not in RECIPES:
        raise ValueError(f"unknown training.recipe {recipe!r}; expected one of {', '.join(RECIPES)}")
    if recipe and recipe_at < 0:
        _apply(values, sources, _training({**RECIPES[recipe], "recipe": recipe}), f"recipe {recipe}")
    for i, (source, settings) in enumerate(layers):
        if i == recipe_at:
            _apply(values, sources, _training(RECIPES[recipe]), f"recipe {recipe}")
        if "training.epochs" in settings and "training.max_steps" not in settings:
            settings = {**settings, "training.max_steps": -1}  # a layer that names passes sets the budget in passes
        _apply(values, sources, settings, source)
    return values, sources


class RunSpec(Mapping[str, Any]):
    """A resolved specification: read-only, indexed by dotted key (``spec["training.epochs"]``), typed by section
    (``spec.training`` is a TrainConfig), and each value with its source (``spec.source("training.loss")``)."""

    def __init__(self, layers: list[tuple[str, dict]], name: str = "", overrides: Mapping[str, Any] | None = None):
        self._layers = [(source, dict(settings)) for source, settings in layers]
        self._flat, self._sources = resolve_layers(self._layers)
        check_settings(self._flat, self._sources)  # every value one of its choices, in its range
        self.preset = name
        self.overrides = dict(overrides or {})
        for section in SECTIONS:
            self.config(section)  # every section must make a valid config (e.g. mining.positives is known)

    # Mapping interface over the dotted keys
    def __getitem__(self, key: str) -> Any:
        if key not in self._flat:
            raise KeyError(f"no setting {key!r} in the run specification{_did_you_mean(key, list(self._flat))}")
        return copy.deepcopy(self._flat[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._flat)

    def __len__(self) -> int:
        return len(self._flat)

    @property
    def seed(self) -> int:
        return int(self._flat["seed"])

    def source(self, key: str) -> str:
        """Where the value of ``key`` came from: default, profile, recipe, preset, file or override."""
        self[key]
        return self._sources[key]

    def section(self, name: str) -> dict[str, Any]:
        """One section as a plain nested dict (a copy): ``spec.section("training")``."""
        if name not in SECTIONS:
            raise KeyError(f"no section {name!r} in the run specification; sections: {', '.join(SECTIONS)}")
        return _unflatten({k[len(name) + 1 :]: v for k, v in self._flat.items() if k.startswith(f"{name}.")})

    def config(self, name: str) -> Any:
        """One section as its config class (``config.SECTION_CLASSES``); the workflow fills in paths and seeds."""
        values = self.section(name)
        if name == "heads":
            values["end_to_end"] = EndToEndConfig(**values["end_to_end"])
        if name == "mining":
            values["seed"] = self.seed
        return SECTION_CLASSES[name](**values)

    data = property(lambda self: self.config("data"), doc="section ``data`` as a CorpusConfig")
    mining = property(lambda self: self.config("mining"), doc="section ``mining`` as a SamplerConfig")
    training = property(lambda self: self.config("training"), doc="section ``training`` as a TrainConfig")
    embedding = property(lambda self: self.config("embedding"), doc="section ``embedding`` as an EmbedConfig")
    evaluation = property(lambda self: self.config("evaluation"), doc="section ``evaluation`` as an EvalConfig")
    analysis = property(lambda self: self.config("analysis"), doc="section ``analysis`` as an AnalysisConfig")
    ablations = property(lambda self: self.config("ablations"), doc="section ``ablations`` as an AblationConfig")
    heads = property(lambda self: self.config("heads"), doc="section ``heads`` as a HeadsConfig")

    def to_dict(self) -> dict[str, Any]:
        return _unflatten(self._flat)

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> RunSpec:
        """A new specification with one more override layer (dotted keys); unknown keys and type changes are errors."""
        if not overrides:
            return self
        layer = _layer(dict(overrides), "override")
        return RunSpec([*self._layers, ("override", layer)], self.preset, {**self.overrides, **layer})

    def frame(self, *sections: str) -> pd.DataFrame:
        """A table (setting, value, source) of the given sections, for a notebook to show what it read."""
        keys = [k for k in self._flat if k == "seed" or k.split(".")[0] in sections] if sections else list(self._flat)
        rows = [
            (k, repr(self._flat[k]) if isinstance(self._flat[k], (list, str)) else self._flat[k], self._sources[k])
            for k in keys
        ]
        return pd.DataFrame(rows, columns=["setting", "value", "source"]).set_index("setting")

    def to_yaml(self, sources: bool = False, explain: bool = False) -> str:
        """The resolved specification as YAML; with ``sources``, each value commented with where it came from; with
        ``explain``, each setting preceded by a comment with its help and what it allows (its declaration)."""
        if not sources and not explain:
            return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)
        lines: list[str] = []
        self._yaml_lines(self.to_dict(), "", 0, lines, explain)
        return "\n".join(lines) + "\n"

    def _yaml_lines(
        self, tree: Mapping[str, Any], prefix: str, depth: int, lines: list[str], explain: bool = False
    ) -> None:
        indent = "  " * depth
        for key, value in tree.items():
            name = f"{prefix}{key}"
            if isinstance(value, Mapping):
                lines.append(f"{indent}{key}:")
                self._yaml_lines(value, f"{name}.", depth + 1, lines, explain)
            else:
                if explain and name in FIELDS:
                    declared = FIELDS[name]
                    allowed = setting_allowed(declared)
                    help_text = declared.metadata.get("help", "")
                    default = list(DEFAULTS[name]) if isinstance(DEFAULTS[name], tuple) else DEFAULTS[name]
                    # the help gives the default's reason: say so where this run holds another value
                    differs = (
                        ""
                        if value == default
                        else f" [that is the default, {default!r}; here {self._sources[name]} sets {value!r}]"
                    )
                    lines.append(f"{indent}# {help_text}" + (f" ({allowed})" if allowed else "") + differs)
                text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
                text = text.removesuffix("\n...").removesuffix("...").strip()
                lines.append(f"{indent}{key}: {text}  # {self._sources[name]}")

    def __repr__(self) -> str:
        return f"RunSpec({self.preset!r}, overrides={self.overrides!r})"


def load_spec(preset: str, overrides: Mapping[str, Any] | None = None, params_dir: str | Path = PARAMS_DIR) -> RunSpec:
    """The specification of ``preset`` (a name in ``params/``, or a path to your own .yaml) plus ``overrides``."""
    return RunSpec(file_layers(preset, Path(params_dir)), preset).with_overrides(overrides)


def train_config(
    profile: str | None = None,
    recipe: str | None = None,
    file: str | Path | None = None,
    *,
    device: str = "",
    params_dir: str | Path = PARAMS_DIR,
    **fields: Any,
) -> TrainConfig:
    """A TrainConfig resolved through the specification's layers, as a run resolves its ``training`` section:

    ``device`` (the profile that fits the machine, used when no other layer names one), the specification
    ``file`` (and the preset it extends), then ``profile``, ``recipe`` and ``fields`` as the override layer (a
    field given as None is not given). Defaults, profile and recipe come below as in every run (``resolve_layers``).
    The fields a workflow sets (``triplets``, ``metadata``, ``out``, ``seed``, ...) are set on the result::

        train_config("cpu", triplets="runs/mine", metadata="data/metadata.json", out="runs/train")
    """
    fields = renamed_fields({k: v for k, v in fields.items() if v is not None})
    unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(TrainConfig)})
    if unknown:
        raise DataError(f"unknown setting(s) {unknown}", "TrainConfig", record_id=unknown[0])
    for kind, table, name in (("profile", PROFILES, profile), ("recipe", RECIPES, recipe)):
        if name and name not in table:
            raise DataError(f"unknown {kind} {name!r} (expected one of {sorted(table)})", "TrainConfig", record_id=kind)
    run_fields = {k: fields.pop(k) for k in TRAIN_RUN_FIELDS if k in fields}
    override = {f"training.{k}": v for k, v in fields.items()}
    override.update({f"training.{k}": v for k, v in (("profile", profile), ("recipe", recipe)) if v})
    layers = [("device", {"training.profile": device})] if device else []
    if file is not None:
        layers += file_layers(str(file), Path(params_dir))
    layers.append(("override", _layer(override, "override")))
    return dataclasses.replace(RunSpec(layers, str(file or ""), override).training, **run_fields)


def section_config(section: str, file: str | Path | None = None, *, params_dir: str | Path = PARAMS_DIR, **fields: Any):
    """One section's config class resolved through the specification's layers (``resolve_layers``: defaults, the
    specification ``file`` and the preset it extends, then ``fields`` as the override layer), as ``train_config``
    resolves ``training`` for ``train``: what ``mine`` (``mining``), ``build-benchmark`` (``data``) and ``embed``
    (``embedding``) build their settings with. A field given as None is not given; the fields a workflow sets
    (``WORKFLOW_FIELDS``: ``mining.seed``, ``embedding.model``, ...) are set on the result::

        section_config("mining", strategy="spectroid", seed=1)
    """
    fields = {k: str(v) if isinstance(v, PurePath) else v for k, v in fields.items() if v is not None}  # a path flag
    workflow = {k: fields.pop(k) for k in WORKFLOW_FIELDS.get(section, ()) if k in fields}
    layers = file_layers(str(file), Path(params_dir)) if file is not None else []
    override = {f"{section}.{k}": v for k, v in fields.items()}
    layers.append(("override", _layer(override, "override")))
    return dataclasses.replace(RunSpec(layers, str(file or ""), override).config(section), **workflow)


def parse_override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` from the command line; the value is read as YAML (``2``, ``0.5``, ``[a, b]``, ``true``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE (e.g. training.epochs=1.0), got {text!r}")
    return key.strip(), yaml.safe_load(value) if value.strip() else ""
