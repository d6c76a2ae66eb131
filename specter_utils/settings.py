"""A setting, declared once: ``setting()`` makes a dataclass field that carries its default, its help, its allowed
values and its numeric range; the functions below read those declarations back (the command-line flags, ``spec
show`` and the run specification's checks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import field
from typing import Any, Literal


def setting(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    factory: Callable[[], Any] | Any = dataclasses.MISSING,
    choices: Iterable[Any] | Callable[[], Iterable[Any]] | None = None,
    low: float | None = None,
    high: float | None = None,
    open_ends: Literal["", "low", "high", "both"] = "",
    aliases: Mapping[str, str] | None = None,
) -> Any:
    """A config field that declares, once, what the flags, ``spec show`` and the specification's checks read:
    ``help`` (what it does, why its default), ``choices`` (or a function returning them; each element of a list),
    its range ``low``/``high`` (``open_ends``: which ends are open) and ``aliases`` of a choice. A field's own default
    is always allowed ("" for none).
    """
    metadata = {
        "help": help,
        "choices": choices,
        "low": low,
        "high": high,
        "low_open": open_ends in ("low", "both"),
        "high_open": open_ends in ("high", "both"),
        "aliases": dict(aliases or {}),
    }
    return field(default=default, default_factory=factory, metadata=metadata)


def setting_choices(f: dataclasses.Field) -> tuple[Any, ...] | None:
    """The values field ``f`` allows (its aliases not included); None where any value of its type goes."""
    choices = f.metadata.get("choices")
    return None if choices is None else tuple(choices() if callable(choices) else choices)


def _number(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def setting_range(f: dataclasses.Field) -> str:
    """Field ``f``'s range in words (``at least 1``, ``more than 0``, ``in [0, 1)``); "" without one."""
    low, high = f.metadata.get("low"), f.metadata.get("high")
    low_open, high_open = f.metadata.get("low_open"), f.metadata.get("high_open")
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{_number(low)}, {_number(high)}{')' if high_open else ']'}"
    if low is not None:
        return f"{'more than' if low_open else 'at least'} {_number(low)}"
    if high is not None:
        return f"{'less than' if high_open else 'at most'} {_number(high)}"
    return ""


def setting_allowed(f: dataclasses.Field) -> str:
    """What field ``f`` allows, in words (``one of a, b``, ``at least 1``); "" where any value of its type goes."""
    choices = setting_choices(f)
    return f"one of {', '.join(map(str, choices))}" if choices else setting_range(f)


def canonical_value(f: dataclasses.Field, value: Any) -> Any:
    """``value`` with an alias of one of field ``f``'s choices replaced by the choice (``float32`` -> ``fp32``)."""
    aliases = f.metadata.get("aliases") or {}
    return aliases.get(value, value) if isinstance(value, str) else value


def _out_of_range(f: dataclasses.Field, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # a wrong type is the type check's to report
    low, high = f.metadata.get("low"), f.metadata.get("high")
    if value != value:  # NaN
        return True
    if low is not None and (value <= low if f.metadata.get("low_open") else value < low):
        return True
    return high is not None and (value >= high if f.metadata.get("high_open") else value > high)


def setting_problem(f: dataclasses.Field, value: Any) -> str | None:
    """What is wrong with ``value`` for field ``f`` (``must be one of a, b``, ``must be at least 1``); None if
    nothing. The field's own default, and None, always pass."""
    if value is None or (
        f.default is not dataclasses.MISSING and value == f.default and type(value) is type(f.default)
    ):
        return None
    choices = setting_choices(f)
    if choices is not None:
        allowed = ", ".join(map(str, choices))
        if isinstance(value, (list, tuple)):
            unknown = [item for item in value if item not in choices]
            if unknown:
                return f"must hold only {allowed}; {', '.join(map(repr, unknown))} is not one"
        elif canonical_value(f, value) not in choices:
            return f"must be one of {allowed}"
    return f"must be {setting_range(f)}" if _out_of_range(f, value) else None


def setting_problems(config: Any) -> Iterator[tuple[str, str]]:
    """``(field, problem)`` for each field of a config instance whose value its declaration does not allow."""
    for f in dataclasses.fields(config):
        problem = setting_problem(f, getattr(config, f.name))
        if problem:
            yield f.name, problem
