"""Executed notebooks without logs or machine paths (the notebooks show what a reader wants through ``display``:
tables, figures, Markdown, never through streams), and the machine they ran on."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from specter_utils.io import atomic_write
from specter_utils.paths import REPO_ROOT, WORK_ROOT, is_checkout

LOG_SUFFIX = ".log"  # <run_dir>/<notebook>/<notebook>.log: the streams of the executed notebook
CPU_FLAGS_SHOWN = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile")  # the CPU's fast paths
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # bf16 matrix instructions: train --dtype auto picks bf16 on them


# ---------------------------------------------------------------- paths
def relative_paths(text: str, root: Path) -> str:
    """``text`` with ``root`` (a checkout) written relative to it, its siblings (such as the data folder
    ``../shared``) as ``../``, and the home folder as ``~``."""
    root_text = str(root).rstrip("/")
    text = text.replace(root_text + "/", "").replace(root_text, ".")
    parent = str(Path(root_text).parent).rstrip("/")
    home = str(Path.home()).rstrip("/")
    if len(parent) > 1 and parent != home:  # not at the top (every path would read ../), and ~ says more
        text = text.replace(parent + "/", "../")
    return text.replace(home + "/", "~/") if len(home) > 1 else text


def checkout_root(run_dir: Path) -> Path:
    """The checkout a run folder belongs to: the parent of its ``results/`` folder, else this repository."""
    run_dir = run_dir.resolve()
    for parent in run_dir.parents:
        if (parent / "pyproject.toml").exists() and (parent / "specter_utils").is_dir():
            return parent
    return WORK_ROOT


# ---------------------------------------------------------------- executed notebooks
def clean_executed_notebook(path: str | Path, root: Path = WORK_ROOT, log_path: str | Path | None = None) -> Path:
    """Move every stream output of an executed notebook to ``log_path`` (default: its name with ``.log``; each
    stream under a ``## cell N`` header, progress-bar redraws collapsed to their last state) and make its paths
    relative to ``root``; return the log's path. Idempotent: a notebook without streams keeps its log."""
    path = Path(path)
    log_path = Path(log_path) if log_path else path.with_suffix(LOG_SUFFIX)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    log_lines: list[str] = []
    for index, cell in enumerate(notebook.get("cells", [])):
        outputs = cell.get("outputs") or []
        streams = [o for o in outputs if o.get("output_type") == "stream"]
        if not streams:
            continue
        text = "".join("".join(o.get("text", "")) for o in streams)
        lines = [line.rsplit("\r", 1)[-1] for line in text.replace("\r\n", "\n").split("\n")]
        log_lines += [f"## cell {index}", *(line for line in lines if line.strip())]
        cell["outputs"] = [o for o in outputs if o.get("output_type") != "stream"]
    cleaned = relative_paths(json.dumps(notebook, ensure_ascii=False, indent=1), root)
    if log_lines:
        with atomic_write(log_path) as handle:
            handle.write("\n".join(log_lines) + "\n")
    with atomic_write(path) as handle:
        handle.write(cleaned + "\n")
    return log_path


# ---------------------------------------------------------------- the machine
def _cpuinfo() -> tuple[str | None, set[str]]:
    """The CPU's model name and every flag of its first core in /proc/cpuinfo (None and none elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, set()
    model = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            model = value.strip()
        if key.strip() == "flags":
            return model, set(value.split())
    return model, set()


def cpu_flags() -> list[str]:
    """The CPU's vector-instruction flags that decide the fast paths (AVX2, the AVX-512 kinds, AMX, AVX-VNNI)."""
    return sorted(flag for flag in _cpuinfo()[1] if re.fullmatch(r"avx2|avx512[a-z_0-9]*|amx[a-z_0-9]*|avx_vnni", flag))


def native_bf16_cpu() -> bool:
    """Whether the CPU computes in bf16 natively (``avx512_bf16`` or ``amx_bf16``): where bf16 training pays."""
    return bool(_cpuinfo()[1] & set(NATIVE_BF16_FLAGS))


def machine_info() -> dict[str, Any]:
    """Cores, CPU model and the CPU flags that decide the fast paths (a speed figure names them)."""
    model, present = _cpuinfo()
    return {
        "cores": os.cpu_count(),
        "cpu": model or platform.processor() or platform.machine(),
        "flags": [flag for flag in CPU_FLAGS_SHOWN if flag in present],
    }


def machine_label(machine: Mapping[str, Any]) -> str:
    """``machine_info()``'s record as one line: "2 cores, AMD EPYC, avx2, avx512f"."""
    parts = [f"{machine['cores']} cores"] if machine.get("cores") is not None else []
    parts += [str(machine[k]) for k in machine if k not in ("cores", "flags") and machine[k] not in (None, "")]
    flags = machine.get("flags")
    if flags:
        parts.append(", ".join(map(str, flags)) if isinstance(flags, (list, tuple)) else str(flags))
    return ", ".join(parts)


class PeakMemory:
    """The peak resident memory of this process's descendants (a notebook's kernel and what it starts):
    ``with PeakMemory() as peak: ...`` then ``peak.mb``, the largest sum of their RSS seen, in MiB, sampled every
    ``interval`` seconds on a background thread (a peak shorter than that can be missed)."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while True:
            total = 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            if self._stop.wait(self.interval):
                return

    @property
    def mb(self) -> float:
        return round(self.peak_bytes / 2**20, 1)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


RUN_OUTPUTS = (":(exclude)figures", ":(exclude)reports")  # tracked folders that runs rewrite: not the source


def source_commit() -> str | None:
    """The package's git commit (short hash, ``+dirty`` with uncommitted changes to the source, not counting the
    figures and reports that runs rewrite); None outside a git checkout (a wheel's install)."""
    if not is_checkout(REPO_ROOT):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(  # what a run writes itself (its figures, reports) does not make the source dirty
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no", "--", ".", *RUN_OUTPUTS],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
