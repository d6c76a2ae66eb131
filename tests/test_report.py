"""Reports a reader can trust: logs out of the executed notebooks, relative paths, one commit per report."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from specter_utils.errors import DataError
from specter_utils.executed import clean_executed_notebook, machine_info, relative_paths
from specter_utils.pipeline import NOTEBOOKS, PIPELINE_FILE
from specter_utils.report import report_commits, write_report


def executed_notebook(path: Path, root: Path) -> None:
    """An executed notebook as papermill leaves it: streams with progress-bar redraws, a table, an absolute path."""
    cell = new_code_cell("train()")
    cell.outputs = [
        new_output("stream", name="stderr", text="\rLoading:   0%|   | 0/3\rLoading: 100%|###| 3/3\n"),
        new_output("stream", name="stdout", text="{'loss': '4.1', 'epoch': 1}\n"),
        new_output("display_data", data={"text/markdown": f"model saved in `{root}/results/r/model`"}),
    ]
    table = new_code_cell("show()")
    table.outputs = [new_output("execute_result", data={"text/plain": "| a |\n|---|"}, execution_count=2)]
    nbformat.write(new_notebook(cells=[cell, table]), path)


def test_clean_moves_streams_to_the_log_and_makes_paths_relative(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    path = tmp_path / "nb.ipynb"
    executed_notebook(path, root)
    log = clean_executed_notebook(path, root)
    cleaned = nbformat.read(path, as_version=4)
    kinds = [o.output_type for c in cleaned.cells for o in c.outputs]
    assert kinds == ["display_data", "execute_result"]  # what a reader wants stays, in order
    assert cleaned.cells[0].outputs[0].data["text/markdown"] == "model saved in `results/r/model`"
    text = log.read_text()
    assert text.splitlines() == ["## cell 0", "Loading: 100%|###| 3/3", "{'loss': '4.1', 'epoch': 1}"]
    clean_executed_notebook(path, root)  # idempotent: nothing left to move, the log is kept
    assert log.read_text() == text and nbformat.read(path, as_version=4) == cleaned


def test_relative_paths() -> None:
    home = str(Path.home())
    assert relative_paths("/srv/repo/results/x and /srv/repo", Path("/srv/repo")) == "results/x and ."
    assert relative_paths(f"{home}/.cache/m", Path("/srv/repo")) == "~/.cache/m"
    assert relative_paths("/srv/shared/data/arxiv2023", Path("/srv/repo")) == "../shared/data/arxiv2023"
    assert relative_paths("/srv/x", Path("/repo")) == "/srv/x"  # a checkout at the top: other paths stay


def test_machine_info_names_cores_and_flags() -> None:
    info = machine_info()
    assert info["cores"] >= 1 and isinstance(info["flags"], list) and info["cpu"]


@pytest.mark.parametrize(
    ("commits", "problem"),
    [
        ({nb: "abc1234" for nb in NOTEBOOKS}, None),
        ({**{nb: "abc1234" for nb in NOTEBOOKS}, NOTEBOOKS[6]: "def5678"}, "ran at 2 commits"),
        ({**{nb: "abc1234" for nb in NOTEBOOKS}, NOTEBOOKS[0]: "abc1234+dirty"}, "uncommitted changes"),
        ({nb: "abc1234" for nb in NOTEBOOKS[:7]}, "notebooks not run: 08_classification_heads"),
        ({**{nb: "abc1234" for nb in NOTEBOOKS}, NOTEBOOKS[1]: None}, "without a recorded commit"),
    ],
)
def test_one_report_means_one_clean_commit(commits: dict, problem: str | None) -> None:
    entries = {nb: {"commit": c} for nb, c in commits.items()}
    problems = report_commits(entries, [nb for nb in NOTEBOOKS if nb in commits])
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


def fake_run(run_dir: Path, commits: dict[str, str]) -> None:
    for nb in NOTEBOOKS:
        (run_dir / nb).mkdir(parents=True, exist_ok=True)
        executed_notebook(run_dir / nb / f"{nb}.ipynb", run_dir.parent.parent)
        (run_dir / nb / "metrics.json").write_text(json.dumps({"path": f"{run_dir}/x"}))
    entries = {
        nb: {"seconds": 61.0, "peak_rss_mb": 300.0 + i, "commit": commits[nb], "finished": "2026-11-24 15:00 UTC"}
        for i, nb in enumerate(NOTEBOOKS)
    }
    (run_dir / PIPELINE_FILE).write_text(json.dumps({"preset": "demo", "notebooks": entries}))


def test_write_report_at_one_commit(tmp_path: Path) -> None:
    run_dir = tmp_path / "results" / "demo"
    fake_run(run_dir, {nb: "abc1234" for nb in NOTEBOOKS})
    out = write_report(run_dir, tmp_path / "reports" / "demo")
    index = (out / "README.md").read_text()
    assert "- Commit: `abc1234`" in index and "| [01_prepare_data](01_prepare_data.ipynb) | 1 min 01 s |" in index
    assert "**8 min 08 s**" in index  # the total of the eight notebooks
    assert "| 1 min 01 s | 300 MiB |" in index and "**307 MiB** (largest)" in index
    record = json.loads((out / PIPELINE_FILE).read_text())
    assert record["commit"] == "abc1234" and record["command"] == "specter-utils run --preset demo --report"
    assert sorted(p.stem for p in (out / "metrics").iterdir()) == sorted(NOTEBOOKS)
    assert (run_dir / "01_prepare_data" / "01_prepare_data.log").exists()  # the streams went to the run's log
    for notebook in out.glob("*.ipynb"):
        assert not [o for c in nbformat.read(notebook, as_version=4).cells for o in c.outputs if "name" in o]


def test_a_mixed_run_is_refused_and_the_old_report_stays(tmp_path: Path) -> None:
    run_dir = tmp_path / "results" / "demo"
    out = tmp_path / "reports" / "demo"
    fake_run(run_dir, {nb: "abc1234" for nb in NOTEBOOKS})
    write_report(run_dir, out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    fake_run(run_dir, {**{nb: "abc1234" for nb in NOTEBOOKS}, NOTEBOOKS[6]: "def5678+dirty"})
    with pytest.raises(DataError, match="not one report at one commit"):
        write_report(run_dir, out)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    mixed = write_report(run_dir, out, allow_mixed=True)
    assert "**Not one commit**" in (mixed / "README.md").read_text()
    assert not list(tmp_path.glob("reports/.*"))  # no staging folder left behind


def test_a_runs_own_figures_do_not_make_the_source_dirty(tmp_path: Path, monkeypatch) -> None:
    import subprocess

    from specter_utils import executed

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "table2_demo.png").write_bytes(b"old")
    (tmp_path / "code.py").write_text("x = 1\n")
    for folder in ("notebooks", "params"):  # a checkout's shape (paths.is_checkout)
        (tmp_path / folder).mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    monkeypatch.setattr(executed, "REPO_ROOT", tmp_path)
    clean = executed.source_commit()
    assert clean and not clean.endswith("+dirty")
    (tmp_path / "figures" / "table2_demo.png").write_bytes(b"redrawn by a run")
    assert executed.source_commit() == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert executed.source_commit() == clean + "+dirty"


def test_peak_memory_sees_a_child_process() -> None:
    import subprocess
    import sys

    from specter_utils.executed import PeakMemory

    hold = "import time; block = bytearray(200 * 2**20); block[::4096] = b'x' * len(block[::4096]); time.sleep(1.5)"
    with PeakMemory(interval=0.05) as peak:
        subprocess.run([sys.executable, "-c", hold], check=True)
    assert peak.mb >= 190  # the 200 MiB the child touched, seen by sampling
