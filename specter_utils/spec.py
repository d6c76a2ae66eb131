"""The run specification: every setting of a run, once, in ``params/<preset>.yaml``.

A specification is a nested mapping of sections (``data``, ``mining``, ``training``, ``embedding``,
``evaluation``, ``analysis``, ``ablations``, ``heads``) plus the run's ``seed``. Each preset file holds
every key, with a comment saying why it has its value; the four presets hold the same keys, with
values of the same type. Overrides are dotted keys (``{"training.epochs": 1.0}``): from
``specter-utils run --set KEY=VALUE``, from a notebook's ``overrides`` parameter, or from an ablation
variant. An override must name an existing key and keep its type, so a typo fails at once::

    spec = load_spec("hepth", {"embedding.max_seq_length": 128})
    spec["embedding.max_seq_length"], spec.section("training")

Every notebook of a run loads the same specification with the same overrides, so two notebooks can
never read different values of one setting (``tests/test_spec.py`` and the smoke run check this).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from specter_utils.paths import PARAMS_DIR

PRESETS = ("smoke", "demo", "hepth", "scidocs")
SECTIONS = ("data", "mining", "training", "embedding", "evaluation", "analysis", "ablations", "heads")


def spec_file(preset: str, params_dir: Path = PARAMS_DIR) -> Path:
    return Path(params_dir) / f"{preset}.yaml"


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _same_type(old: Any, new: Any) -> bool:
    """An override keeps the key's type (an int may stand for a float; any list for a list)."""
    if isinstance(old, bool) or isinstance(new, bool):
        return isinstance(old, bool) and isinstance(new, bool)
    if isinstance(old, float):
        return isinstance(new, (int, float))
    return isinstance(new, type(old))


class RunSpec(Mapping[str, Any]):
    """A resolved specification: read-only, indexed by dotted key (``spec["training.epochs"]``)."""

    def __init__(self, tree: Mapping[str, Any], preset: str = "", overrides: Mapping[str, Any] | None = None):
        self._tree = copy.deepcopy(dict(tree))
        self._flat = _flatten(self._tree)
        self.preset = preset
        self.overrides = dict(overrides or {})

    # Mapping interface over the dotted keys
    def __getitem__(self, key: str) -> Any:
        if key not in self._flat:
            raise KeyError(f"no setting {key!r} in the run specification; known: {', '.join(self._flat)}")
        return copy.deepcopy(self._flat[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._flat)

    def __len__(self) -> int:
        return len(self._flat)

    @property
    def seed(self) -> int:
        return int(self._flat["seed"])

    def section(self, name: str) -> dict[str, Any]:
        """One section as a plain dict (a copy): ``spec.section("training")``."""
        if name not in self._tree or not isinstance(self._tree[name], Mapping):
            raise KeyError(f"no section {name!r} in the run specification; sections: {', '.join(SECTIONS)}")
        return copy.deepcopy(dict(self._tree[name]))

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._tree)

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> RunSpec:
        """A new specification with ``overrides`` (dotted keys) applied; unknown keys and type changes are errors."""
        if not overrides:
            return self
        tree = copy.deepcopy(self._tree)
        for key, value in overrides.items():
            if key not in self._flat:
                raise KeyError(f"cannot override {key!r}: no such setting; known: {', '.join(self._flat)}")
            if not _same_type(self._flat[key], value):
                raise TypeError(
                    f"override {key}={value!r}: expected {type(self._flat[key]).__name__} like {self._flat[key]!r}"
                )
            *parents, leaf = key.split(".")
            node = tree
            for part in parents:
                node = node[part]
            node[leaf] = float(value) if isinstance(self._flat[key], float) else copy.deepcopy(value)
        return RunSpec(tree, self.preset, {**self.overrides, **overrides})

    def frame(self, *sections: str):
        """A two-column table (setting, value) of the given sections, for a notebook to show what it read."""
        import pandas as pd

        keys = [k for k in self._flat if k == "seed" or k.split(".")[0] in sections] if sections else list(self._flat)
        rows = [(k, repr(self._flat[k]) if isinstance(self._flat[k], (list, str)) else self._flat[k]) for k in keys]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self._tree, sort_keys=False, default_flow_style=None)

    def __repr__(self) -> str:
        return f"RunSpec(preset={self.preset!r}, overrides={self.overrides!r})"


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping of one preset file."""
    import yaml

    path = Path(path)
    tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(tree, dict):
        raise ValueError(f"{path}: expected a mapping of sections")
    missing = [s for s in SECTIONS if not isinstance(tree.get(s), dict)]
    if missing or not isinstance(tree.get("seed"), int):
        raise ValueError(f"{path}: needs 'seed' and the sections {', '.join(SECTIONS)} (missing: {missing or 'seed'})")
    return tree


def load_spec(preset: str, overrides: Mapping[str, Any] | None = None, params_dir: str | Path = PARAMS_DIR) -> RunSpec:
    """The specification of ``preset`` (``params/<preset>.yaml``) with ``overrides`` applied."""
    path = spec_file(preset, Path(params_dir))
    if not path.exists():
        available = sorted(p.stem for p in Path(params_dir).glob("*.yaml"))
        raise FileNotFoundError(f"no run specification {path} (presets: {', '.join(available) or 'none'})")
    return RunSpec(read_spec_file(path), preset).with_overrides(overrides)


def parse_override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` from the command line; the value is read as YAML (``2``, ``0.5``, ``[a, b]``, ``true``)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE (e.g. training.epochs=1.0), got {text!r}")
    return key.strip(), yaml.safe_load(value) if value.strip() else ""


def differing_keys(presets: tuple[str, ...] = PRESETS, params_dir: str | Path = PARAMS_DIR) -> dict[str, list[str]]:
    """Keys (or value types) that differ between preset files: ``{preset: [problems]}``; empty when consistent."""
    flats = {p: _flatten(read_spec_file(spec_file(p, Path(params_dir)))) for p in presets}
    reference_name = presets[0]
    reference = flats[reference_name]
    problems: dict[str, list[str]] = {}
    for preset, flat in flats.items():
        issues = [f"missing {k}" for k in reference if k not in flat]
        issues += [f"extra {k} (not in {reference_name})" for k in flat if k not in reference]
        issues += [
            f"{k}: {type(v).__name__} here, {type(reference[k]).__name__} in {reference_name}"
            for k, v in flat.items()
            if k in reference and not (_same_type(reference[k], v) and _same_type(v, reference[k]))
        ]
        if issues:
            problems[preset] = issues
    return problems
