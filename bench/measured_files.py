"""What a measured file under bench/measured/ records beside its figures, and how it is written.

Each benchmark script writes NAME.json (its figures with their provenance) and NAME.md (the table a reader sees),
both atomically, so an interrupted run leaves the previous files whole.
"""

from __future__ import annotations

import datetime as dt
import shlex
from pathlib import Path
from typing import Any

from specter_utils.executed import machine_info, source_commit
from specter_utils.io import atomic_write, write_json


def provenance(command: str, args: list[str], machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """The machine (its CPU flags), the UTC date, the commit and the command line that made a measurement."""
    return {
        "machine": machine or machine_info(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": source_commit(),
        "argv": " ".join([command, shlex.join(args)]).strip(),
    }


def write_measured(out: Path, record: dict[str, Any], markdown: str) -> None:
    """``out`` (JSON) and its ``.md`` table, each written atomically."""
    write_json(out, record)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write(markdown if markdown.endswith("\n") else markdown + "\n")
