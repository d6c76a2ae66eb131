"""A registry: named entries of one kind (losses, embedding backends, evaluation kinds), each registered once.

Every list of names a user sees (a setting's choices, a flag's ``--help``, a table's labels) is read from the
registry, so a new entry is one registration. :meth:`Registry.names` is a live view: an entry registered after
import shows up in it too. It imports nothing but the project's errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from specter_utils.errors import DataError

T = TypeVar("T")


class Names(Sequence[str]):
    """The names of a registry's entries (those ``keep`` accepts) in registration order, read when used."""

    def __init__(self, registry: Registry[Any], keep: Callable[[Any], bool] | None = None) -> None:
        self._registry, self._keep = registry, keep

    def _names(self) -> tuple[str, ...]:
        return tuple(n for n, e in self._registry.items() if self._keep is None or self._keep(e))

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence | set | frozenset) and (
            set(self) == set(other) if isinstance(other, set | frozenset) else self._names() == tuple(other)
        )

    def __hash__(self) -> int:
        return hash(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


class Registry(Generic[T]):
    """Entries of one kind by name: ``register`` adds one (as a call or a decorator), ``get`` finds one."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T | None = None) -> Any:
        """Add ``entry`` under ``name`` and return it; without ``entry``, a decorator that adds what it decorates."""
        if entry is None:
            return lambda decorated: self.register(name, decorated)
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry (a test's toy one)."""
        self._entries.pop(name, None)

    def get(self, name: str) -> T:
        """The entry named ``name``; an unknown name is a one-line error listing the known ones."""
        if name not in self._entries:
            known = ", ".join(self._entries)
            raise DataError(f"unknown {self.kind} {name!r} (known: {known})", record_id=self.kind)
        return self._entries[name]

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def names(self, keep: Callable[[T], bool] | None = None) -> Names:
        """A live view of the names (those whose entry ``keep`` accepts), in registration order."""
        return Names(self, keep)

    def __contains__(self, name: object) -> bool:
        return name in self._entries


def load(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """A callable given as itself or as ``"module:attribute"`` (imported now: an implementation loaded lazily)."""
    if callable(target):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
