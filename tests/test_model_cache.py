"""A cached model folder built once: concurrent runs build it once, a killed build leaves nothing half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from specter_utils.embedding.model_cache import build_once, lock_path


def _write(folder: Path) -> None:
    (folder / "model.bin").write_bytes(b"weights")
    (folder / "model.xml").write_text("<net/>")


def test_built_once_then_read(tmp_path: Path) -> None:
    target = tmp_path / "int8" / "key"
    assert build_once(target, _write)
    assert (target / "model.xml").read_text() == "<net/>"
    assert not build_once(target, lambda folder: pytest.fail("built again"))
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".key.tmp")] == []


def test_concurrent_builds_build_once(tmp_path: Path) -> None:
    target = tmp_path / "key"
    calls = []

    def slow(folder: Path) -> None:
        calls.append(folder)
        time.sleep(0.3)
        _write(folder)

    with ThreadPoolExecutor(4) as pool:
        built = list(pool.map(lambda _: build_once(target, slow), range(4)))
    assert built.count(True) == 1 and len(calls) == 1
    assert (target / "model.bin").read_bytes() == b"weights"


def test_a_failed_build_leaves_no_folder(tmp_path: Path) -> None:
    target = tmp_path / "key"

    def broken(folder: Path) -> None:
        (folder / "model.bin").write_bytes(b"half")
        raise RuntimeError("calibration failed")

    with pytest.raises(RuntimeError, match="calibration failed"):
        build_once(target, broken)
    assert not target.exists() and not list(tmp_path.glob(".key.tmp-*"))
    assert build_once(target, _write)


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 is POSIX")
def test_kill_9_mid_build_leaves_nothing_half_written(tmp_path: Path) -> None:
    target = tmp_path / "key"
    started = tmp_path / "started"
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from specter_utils.embedding.model_cache import build_once

        def hang(folder):
            (folder / "model.bin").write_bytes(b"half")
            Path({str(started)!r}).touch()
            time.sleep(60)

        build_once(Path({str(target)!r}), hang)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        deadline = time.time() + 60
        while not started.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert started.exists()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    assert not target.exists() and list(tmp_path.glob(".key.tmp-*"))  # only the temporary folder is left
    assert build_once(target, _write)  # the lock died with the process; the leftover is cleared
    assert (target / "model.bin").read_bytes() == b"weights" and not list(tmp_path.glob(".key.tmp-*"))
    assert lock_path(target).parent == tmp_path
