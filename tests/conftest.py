"""Shared fixtures: the real data folder (tests skip with a reason where it is absent) and a tiny random model."""

from __future__ import annotations

import gc
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TypeVar

import pytest

from specter_utils.paths import REPO_ROOT, shared_data_dir

T = TypeVar("T")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    # pytest-xdist workers share the cores: torch's default of one thread per core in each would oversubscribe them
    # (the processes a test starts inherit the same number, so a run and its resumed copy add up alike)
    threads = max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)


# The two workers (pyproject: -n 2 --dist loadgroup --no-loadscope-reorder) take whole groups in this order: these
# groups (a file, or a name of SHARED_FIXTURE_GROUPS) first, longest first (pytest --durations; the per-worker line at
# the end of a run shows the balance), so that neither worker starts a long group while the other is nearly done;
# the rest follow in collection order. A group missing here costs time, never a test.
LONGEST_FIRST = (
    "tests/test_notebooks.py",
    "tests/test_ray_engine.py",
    "hepth",
    "tests/test_colab.py",
    "tests/test_distributed.py",
    "tests/test_recipe_levers.py",
    "tests/test_training_run.py",
    "tests/test_preset_corpora.py",
    "tests/test_embed.py",
    "tests/test_wheel.py",
)
# tests reading the same costly session fixture share a worker, so it is built once
SHARED_FIXTURE_GROUPS = {"hepth_corpus": "hepth"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test file is one xdist group (what --dist loadfile did: its module fixtures are built once), except the
    tests of ``SHARED_FIXTURE_GROUPS`` and those naming a group themselves; the groups of ``LONGEST_FIRST`` go first.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            shared = [group for name, group in SHARED_FIXTURE_GROUPS.items() if name in item.fixturenames]
            item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.nodeid.split("::")[0]))

    def rank(item: pytest.Item) -> int:
        marker = item.get_closest_marker("xdist_group")
        group = marker.args[0] if marker.args else marker.kwargs.get("name")
        return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file's tests keep their order


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything imported and built by collection lives until the session ends: ``gc.freeze()`` keeps the cyclic
    collector from walking it again at every full collection (Python's own, and ``memory.release_memory`` after each
    sweep row), which on a heap holding torch, transformers and every test module costs a third of a second each."""
    gc.freeze()


# per xdist worker, on the controller: [seconds its tests took (setup, call, teardown), seconds from the session's
# start to its last report], printed at the end so that the balance of LONGEST_FIRST can be read off any run
WORKER_TIMES: dict[str, list[float]] = {}
SESSION_START = [time.monotonic()]


def pytest_sessionstart(session: pytest.Session) -> None:
    SESSION_START[0] = time.monotonic()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # the worker, set by xdist on the controller's copy of a report
    if node is not None:
        times = WORKER_TIMES.setdefault(node.gateway.id, [0.0, 0.0])
        times[0] += report.duration
        times[1] = time.monotonic() - SESSION_START[0]


def pytest_terminal_summary(terminalreporter) -> None:
    if WORKER_TIMES:
        terminalreporter.write_line(
            "per worker: "
            + "; ".join(
                f"{w} {busy:.0f} s of tests, done at {end:.0f} s" for w, (busy, end) in sorted(WORKER_TIMES.items())
            )
        )


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (for a skip decided at collection)."""
    return importlib.util.find_spec(module) is not None


def kept_for_the_session(value: T) -> T:
    """``value`` (a session fixture's, alive until the end) and everything else alive now, frozen after a collection
    (``gc.freeze``): the cyclic collector stops walking its objects (hep-th's papers: hundreds of thousands) at every
    later full collection."""
    gc.collect()
    gc.freeze()
    return value


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

    return kept_for_the_session(read_hepth(hepth_src))


@pytest.fixture(scope="session")
def hepth_benchmark(hepth_corpus, tmp_path_factory) -> tuple[dict, Path]:
    """The hep-th benchmark of seed 0 (what ``build_benchmark`` returned, and its folder), built once per session
    (about 20 s) and only read: a test that writes puts its files elsewhere."""
    from specter_utils.benchmark.build import build_benchmark

    out = tmp_path_factory.mktemp("hepth_benchmark")
    return kept_for_the_session((build_benchmark(hepth_corpus, out, seed=0), out))


@pytest.fixture(scope="session")
def minilm_two_layers(tmp_path_factory) -> Path:
    """all-MiniLM-L6-v2 with its first 2 of 6 layers only (pretrained weights), saved as a plain transformers model:
    a real model where a test needs one that has learned something, at a third of the compute. Built once per
    session and only read."""
    from transformers import AutoModel, AutoTokenizer

    from specter_utils.models import resolve_model

    source = resolve_model("minilm")
    out = tmp_path_factory.mktemp("minilm_two_layers")
    model = AutoModel.from_pretrained(source)
    model.encoder.layer = model.encoder.layer[:2]
    model.config.num_hidden_layers = 2
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def random_tiny_model(tmp_path_factory) -> Path:
    """A randomly initialised 2-layer BERT of width 32 with MiniLM's tokenizer: a Trainer step takes milliseconds.

    Built once per session and only read: a test that changes it works on a copy."""
    return save_random_bert(tmp_path_factory.mktemp("random_bert"), seed=0)


def save_random_bert(out: Path, seed: int) -> Path:
    """A randomly initialised 2-layer BERT of width 32 (weights drawn with ``seed``) and MiniLM's tokenizer, saved
    in ``out``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from specter_utils.models import resolve_model

    torch.manual_seed(seed)
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    BertModel(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(resolve_model("minilm")).save_pretrained(out)
    return out


def clean_env() -> dict[str, str]:
    """This process's environment without PYTHONPATH: a fresh environment must not see a checkout put on the path."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


@pytest.fixture(scope="session")
def fresh_env() -> dict[str, str]:
    """The environment for a command of the wheel's fresh environment (:func:`clean_env`)."""
    return clean_env()


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> tuple[str, Path]:
    """The project's wheel, built once for every xdist worker (a file lock), installed without its dependencies
    into a fresh environment that sees this one's packages: ``(that environment's python, the wheel)``."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every worker of this run
    env = clean_env()
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
                env=env,
            )
            wheels = sorted((shared / "wheel").glob("specter_utils-*.whl"))
        venv = shared / "wheel-venv"
        python = venv / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheels[-1])],
                check=True,
                env=env,
            )
    return str(python), wheels[-1]
