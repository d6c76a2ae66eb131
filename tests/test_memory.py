"""``specter_utils.memory``: the collector held off inside ``collector_paused`` and put back as it was, and
``release_memory`` freeing a reference cycle that only the cyclic collector can free."""

from __future__ import annotations

import gc
import weakref

import pytest

from specter_utils.memory import collector_paused, release_memory


class Node:
    """An object that can sit in a reference cycle and be watched through a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


def _cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_the_collector_is_off_inside_and_back_on_after_even_on_an_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("a failed stage")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_as_a_decorator_no_collection_runs_inside_and_release_memory_frees_the_cycle_after() -> None:
    @collector_paused()
    def build() -> tuple[bool, weakref.ref]:
        watched = _cycle()
        kept = [[] for _ in range(50 * gc.get_threshold()[0])]  # allocations that would trigger collections
        assert watched() is not None and len(kept) > 0  # a cycle: reference counting alone cannot free it
        return gc.isenabled(), watched

    enabled_inside, watched = build()
    assert not enabled_inside and gc.isenabled()
    release_memory()
    assert watched() is None
