"""Memory a finished stage left behind, handed back before the next one starts in the same process; and the cyclic
collector held off while a stage builds many objects that it keeps.

A sweep (notebook 07, the lever study) trains and embeds one model per row in one kernel. Each row's model sits in
reference cycles that only Python's cyclic collector frees (sentence-transformers' model card points back at its
model; the loss and the trainer hold it too), and once freed its buffers stay in glibc's heaps unless trimmed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Iterator


@functools.cache
def _libc_malloc_trim():
    """glibc's ``malloc_trim``, or None on another C library (macOS, musl): there is nothing to trim then."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def release_memory() -> dict[str, int | bool]:
    """Collect unreachable reference cycles, then return the heap's free pages to the OS (``malloc_trim(0)``, every
    arena). Returns ``collected`` (objects freed by the collector) and ``trimmed`` (whether glibc gave pages back)."""
    collected = gc.collect()
    trim = _libc_malloc_trim()
    return {"collected": collected, "trimmed": bool(trim(0)) if trim is not None else False}


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside (as a ``with`` block or a decorator), back on after, also on an
    error. For a stage that builds many objects and keeps them (a benchmark's dicts of papers): each full collection
    walks every object built so far, and on hep-th that was a third of building the benchmark. Garbage in a reference
    cycle made inside waits for the next collection after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
