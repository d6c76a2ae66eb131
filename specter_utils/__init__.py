"""specter_utils: a reproduction of SPECTER (Cohan et al., 2020) and its SCIDOCS benchmark.

Modules are layered, and imports flow one way:
``data`` -> ``triplets`` -> ``training`` / ``embedding`` -> ``evaluation`` / ``analysis`` / ``heads``.

From Python, ``specter_utils.api`` holds what a user does most (``load_model``, ``embed``, ``build_index``,
``search``, ``score``); its names are also reachable here (``specter_utils.embed``), imported on first use so
that ``import specter_utils`` stays light.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

_API = ("load_model", "paper_text", "embed", "build_index", "load_index", "search", "score")


def __getattr__(name: str) -> Any:
    if name in _API:
        from specter_utils import api

        return getattr(api, name)
    raise AttributeError(f"module 'specter_utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
