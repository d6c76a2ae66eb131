"""Shared fixtures: the real data folder (tests skip with a reason where it is absent) and a tiny random model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specter_utils.paths import REPO_ROOT, shared_data_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    # pytest-xdist workers share the cores: torch's default of one thread per core in each would oversubscribe them
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$SPECTER_SHARED_DATA``); skips where it is absent."""
    root = shared_data_dir()
    if root is None:
        pytest.skip("real data folder ../shared/data not found (set SPECTER_SHARED_DATA to point at it)")
    return root


@pytest.fixture(scope="session")
def hepth_src(shared_data: Path) -> Path:
    src = shared_data / "hepth"
    if not (src / "cit-HepTh.txt").exists():
        pytest.skip(f"hep-th files not found under {src}")
    return src


@pytest.fixture(scope="session")
def hepth_corpus(hepth_src: Path):
    """The whole hep-th corpus, read once per test session (about 5 s)."""
    from specter_utils.data.hepth import read_hepth

    return read_hepth(hepth_src)


@pytest.fixture(scope="session")
def random_tiny_model(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT of width 32 with MiniLM's tokenizer: a Trainer step takes milliseconds.

    Built once per session and only read: a test that changes it works on a copy."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from specter_utils.models import resolve_model

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("random_bert")
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    BertModel(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(resolve_model("minilm")).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> tuple[str, Path]:
    """The project's wheel, built once for every xdist worker (a file lock), installed without its dependencies
    into a fresh environment that sees this one's packages: ``(that environment's python, the wheel)``."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every worker of this run
    with FileLock(str(shared / "wheel.lock")):
        wheels = sorted((shared / "wheel").glob("specter_utils-*.whl"))
        if not wheels:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    str(REPO_ROOT),
                    "--no-deps",
                    "--no-build-isolation",
                    "-q",
                    "-w",
                    str(shared / "wheel"),
                ],
                check=True,
            )
            wheels = sorted((shared / "wheel").glob("specter_utils-*.whl"))
        venv = shared / "wheel-venv"
        python = venv / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheels[-1])], check=True
            )
    return str(python), wheels[-1]
