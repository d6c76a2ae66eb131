"""The embedding backends, declared: one :class:`BackendSpec` each, what every list of backends is read from.

A declaration is plain data: the name ``--backend`` takes, a label for ``--help``, when the backend applies to a
:class:`~specter_utils.embedding.backends.BackendChoice` and its encoder factory, both as ``"module:function"``,
imported only when papers are embedded. ``backends.backend_name`` takes the first declared backend that applies
(``auto`` is a choice, not a backend: the others' rules pick). A new backend is one module with its factory and
rule, and one ``BackendSpec`` line below (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specter_utils.registry import Registry, load


@dataclass(frozen=True)
class BackendSpec:
    """One backend: its name and label, when it applies and how it builds its encoder."""

    name: str
    label: str  # what --help says of it
    applies: str | Callable[..., bool] | None  # (choice, devices) -> bool; None: never by itself (auto)
    build: str | Callable[..., Any] | None  # (choice, papers=, devices=, log=, say=) -> (encoder, meta)
    selectable: bool = True  # --backend takes it by name (int8 and the probe come from --dtype instead)

    def picks(self, choice: Any, devices: list[str] | None) -> bool:
        """Whether this backend embeds for ``choice`` on these devices."""
        return self.applies is not None and bool(load(self.applies)(choice, devices))

    def builder(self) -> Callable[..., Any]:
        """The encoder factory (imported now)."""
        return load(self.build)  # type: ignore[arg-type]


BACKEND_REGISTRY: Registry[BackendSpec] = Registry("backend")
BACKENDS = BACKEND_REGISTRY.names(lambda spec: spec.selectable)  # what --backend may ask for (a live view)


def register_backend(spec: BackendSpec) -> BackendSpec:
    """Add a backend to :data:`BACKEND_REGISTRY` (earlier ones are asked first whether they apply)."""
    return BACKEND_REGISTRY.register(spec.name, spec)


def backend_help() -> str:
    """The ``--backend`` help: each selectable backend's label."""
    return "; ".join(f"{spec.name}: {spec.label}" for spec in map(BACKEND_REGISTRY.get, BACKENDS))


_IMPL = "specter_utils.embedding.backends"
register_backend(
    BackendSpec("auto", "openvino for a float32 run on the CPU when it is installed, else torch", None, None)
)
register_backend(BackendSpec("int8", "OpenVINO int8 (--dtype int8)", f"{_IMPL}:wants_int8", f"{_IMPL}:_int8", False))
register_backend(BackendSpec("probe", "--dtype auto's timed probe", f"{_IMPL}:wants_probe", f"{_IMPL}:_probe", False))
register_backend(BackendSpec("torch", "the model as loaded by torch", f"{_IMPL}:wants_torch", f"{_IMPL}:_torch"))
register_backend(
    BackendSpec(
        "openvino",
        "the transformer converted to OpenVINO, CPU only (pip install 'specter-utils[openvino]')",
        f"{_IMPL}:wants_openvino",
        f"{_IMPL}:_openvino",
    )
)
