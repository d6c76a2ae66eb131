"""Executed notebooks a reader can trust: logs out of the notebook, paths relative, one commit per report.

A report (``reports/<preset>/``) holds the cleaned notebooks, each notebook's ``metrics.json``
(``metrics/<notebook>.json``), the run's record (``pipeline.json``: commit, machine, per-notebook wall time), the
resolved ``spec.yaml``, the results tables and a ``README.md`` index.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from specter_utils.errors import DataError
from specter_utils.executed import (
    CPU_FLAGS_SHOWN,
    LOG_SUFFIX,
    checkout_root,
    clean_executed_notebook,
    machine_info,
    relative_paths,
)
from specter_utils.io import atomic_write, read_json, write_json
from specter_utils.layout import METRICS_FILE, PIPELINE_FILE
from specter_utils.paths import REPORTS_DIR
from specter_utils.pipeline import NOTEBOOKS, SPEC_FILE
from specter_utils.runs import resolve

REPORT_FILES = ("05_scidocs_eval/results.md", "07_ablations/ablations.md")  # tables worth a direct link


# ---------------------------------------------------------------- one commit
def report_commits(entries: dict[str, dict[str, Any]], notebooks: list[str]) -> list[str]:
    """Why these notebooks are not one report at one commit (empty: they are)."""
    problems = []
    missing = [nb for nb in NOTEBOOKS if nb not in notebooks]
    if missing:
        problems.append(f"notebooks not run: {', '.join(missing)}")
    commits = {entries.get(nb, {}).get("commit") for nb in notebooks}
    if None in commits:
        problems.append("a notebook without a recorded commit (run outside a git checkout)")
    dirty = sorted(c for c in commits if c and c.endswith("+dirty"))
    if dirty:
        problems.append(f"run with uncommitted changes ({', '.join(dirty)})")
    clean = {c.removesuffix("+dirty") for c in commits if c}
    if len(clean) > 1:
        problems.append(f"notebooks ran at {len(clean)} commits ({', '.join(sorted(clean))})")
    return problems


def _format_memory(mb: float | None) -> str:
    return "" if mb is None else f"{mb / 1024:.1f} GiB" if mb >= 1024 else f"{mb:.0f} MiB"


def _format_seconds(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


# ---------------------------------------------------------------- the report
def write_report(
    run_dir: str | Path, out_dir: str | Path | None = None, preset: str | None = None, allow_mixed: bool = False
) -> Path:
    """Copy a finished run to ``out_dir`` (default ``reports/<preset>/``) as one report at one commit: a DataError
    when the run is not every notebook at one clean commit, unless ``allow_mixed`` (the README then says so)."""
    run_dir = resolve(run_dir)
    root = checkout_root(run_dir)
    info = read_json(run_dir / PIPELINE_FILE) if (run_dir / PIPELINE_FILE).exists() else {}
    preset = preset or info.get("preset") or run_dir.name
    preset = Path(preset).stem
    out = resolve(out_dir) if out_dir else REPORTS_DIR / preset
    executed = [nb for nb in NOTEBOOKS if (run_dir / nb / f"{nb}.ipynb").exists()]
    if not executed:
        raise FileNotFoundError(f"no executed notebooks under {run_dir}; run 'specter-utils run' first")
    entries = info.get("notebooks", {})
    problems = report_commits(entries, executed)
    if problems and not allow_mixed:
        raise DataError(
            "not one report at one commit: " + "; ".join(problems) + " (re-run 'specter-utils run --preset "
            f"{preset} --report' from a clean checkout, or pass --allow-mixed)",
            run_dir / PIPELINE_FILE,
        )
    staging = out.with_name(f".{out.name}.partial")  # built aside, then swapped in: a crash leaves the old report
    if staging.exists():
        shutil.rmtree(staging)
    (staging / "metrics").mkdir(parents=True)
    for nb in executed:
        source = run_dir / nb / f"{nb}.ipynb"
        target = staging / source.name
        shutil.copyfile(source, target)
        clean_executed_notebook(target, root, log_path=run_dir / nb / f"{nb}{LOG_SUFFIX}")
    copies = {run_dir / nb / METRICS_FILE: staging / "metrics" / f"{nb}.json" for nb in executed}
    copies.update({run_dir / relative: staging / Path(relative).name for relative in (SPEC_FILE, *REPORT_FILES)})
    for source, target in copies.items():
        if source.exists():
            with atomic_write(target) as handle:
                handle.write(relative_paths(source.read_text(encoding="utf-8"), root))
    commits = sorted({entries.get(nb, {}).get("commit") or "?" for nb in executed})
    record = {
        "preset": preset,
        "commit": commits[0] if len(commits) == 1 else commits,
        "command": f"specter-utils run --preset {preset} --report",
        "machine": info.get("machine") or machine_info(),
        "overrides": info.get("overrides") or {},
        "notebooks": {
            nb: {k: entries.get(nb, {}).get(k) for k in ("seconds", "peak_rss_mb", "commit", "finished", "overrides")}
            for nb in executed
        },
    }
    write_json(staging / PIPELINE_FILE, json.loads(relative_paths(json.dumps(record), root)))
    with atomic_write(staging / "README.md") as handle:
        handle.write(report_readme(record, [Path(r).name for r in REPORT_FILES if (staging / Path(r).name).exists()]))
    _swap_in(staging, out)
    return out


def report_readme(record: dict[str, Any], tables: list[str]) -> str:
    """The report's index: command, commit, machine, and each notebook's wall time."""
    preset, machine = record["preset"], record["machine"]
    commit = record["commit"]
    one_commit = isinstance(commit, str) and not commit.endswith("+dirty") and commit != "?"
    flags = ", ".join(machine.get("flags") or []) or "none of " + ", ".join(CPU_FLAGS_SHOWN)
    lines = [
        f"# Report of the `{preset}` run",
        "",
        f"The executed notebooks of `{record['command']}`, with their outputs (every table and figure). "
        "Logs and progress bars went to each notebook's `.log` file in the run folder, not into the notebook; "
        "each notebook's `metrics.json` is in [`metrics/`](metrics), the run's record in "
        "[`pipeline.json`](pipeline.json) and its resolved specification in [`spec.yaml`](spec.yaml).",
        "",
        f"- Commit: `{commit}`" if one_commit else f"- **Not one commit**: {commit}; see each notebook's commit below",
        f"- Machine: {machine.get('cores')} cores, {machine.get('cpu')} (CPU flags: {flags})",
    ]
    if record.get("overrides"):
        lines.append("- Overrides: " + ", ".join(f"`{k}={v}`" for k, v in record["overrides"].items()))
    header = ["notebook", "wall time", "peak memory", "finished"] + ([] if one_commit else ["commit"])
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    total, peak = 0.0, 0.0
    for nb, entry in record["notebooks"].items():
        seconds, memory = entry.get("seconds"), entry.get("peak_rss_mb")
        total += seconds or 0.0
        peak = max(peak, memory or 0.0)
        cells = [
            f"[{nb}]({nb}.ipynb)",
            _format_seconds(seconds) if seconds is not None else "",
            _format_memory(memory),
            entry.get("finished") or "",
        ]
        lines.append("| " + " | ".join(cells + ([] if one_commit else [f"`{entry.get('commit')}`"])) + " |")
    cells = ["**total**", f"**{_format_seconds(total)}**", f"**{_format_memory(peak or None)}** (largest)", ""]
    lines.append("| " + " | ".join(cells + ([] if one_commit else [""])) + " |")
    lines += [
        "",
        "Peak memory: the largest resident memory of the notebook's kernel and the processes it started, sampled "
        "every 0.25 s.",
    ]
    if tables:
        lines += ["", "Tables: " + ", ".join(f"[{name}]({name})" for name in tables) + "."]
    return "\n".join(lines) + "\n"


def _swap_in(staging: Path, out: Path) -> None:
    """Replace ``out`` by ``staging`` with two renames: at every moment one whole report exists."""
    old = out.with_name(f".{out.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        out.rename(old)
    staging.rename(out)
    if old.exists():
        shutil.rmtree(old)
